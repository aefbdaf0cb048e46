// L07_ex2_tls_image_test.cpp — lesson 7, exercise 2: the executable's PT_TLS segment and a block made from it
// (lessons/07-fiber-local-storage/exercises/ex2_tls_image/tls_image.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "fib/glibc_tls.hpp"
#include "fib/tls_segments.hpp"
#include "tls_image.hpp"

namespace {

// One thread_local in .tdata (a non-zero initial value) and one in .tbss.
constexpr std::uint64_t marker_initial = 0x1122334455667788;
thread_local std::uint64_t marker = marker_initial;
thread_local std::uint64_t zeroed[4];

// Where a thread_local of the executable lies in its block: the same place in
// every thread's block, and in the image.
std::size_t index_in_block(const void* variable, const ModuleTls& segment) {
    const char* block = reinterpret_cast<const char*>(fib::thread_pointer()) - segment.offset;
    return static_cast<std::size_t>(static_cast<const char*>(variable) - block);
}

TEST(L07_Ex2TlsImage, TheSegmentIsTheOneTheLibraryFindsForTheExecutable) {
    const ModuleTls segment = executable_tls();
    const fib::TlsSegment& library = fib::tls_segments().front();  // the executable's, first
    ASSERT_STREQ(library.module, "");
    EXPECT_EQ(segment.image, library.image);
    EXPECT_EQ(segment.image_size, library.image_size);
    EXPECT_EQ(segment.size, library.size);
    EXPECT_EQ(segment.align, library.align);
    EXPECT_EQ(segment.offset, library.offset);
}

TEST(L07_Ex2TlsImage, TheImageHoldsAnInitialisedThreadLocalsValueAtItsPlace) {
    const ModuleTls segment = executable_tls();
    ASSERT_NE(segment.image, nullptr);
    marker = 0;  // this thread's copy changes; the image does not
    const std::size_t at = index_in_block(&marker, segment);
    ASSERT_LE(at + sizeof marker, segment.image_size);
    std::uint64_t in_image;
    std::memcpy(&in_image, static_cast<const char*>(segment.image) + at, sizeof in_image);
    EXPECT_EQ(in_image, marker_initial);
    marker = marker_initial;
}

TEST(L07_Ex2TlsImage, AZeroInitialisedThreadLocalLiesAfterTheImageInsideTheBlock) {
    const ModuleTls segment = executable_tls();
    const std::size_t at = index_in_block(&zeroed, segment);
    EXPECT_GE(at, segment.image_size);
    EXPECT_LE(at + sizeof zeroed, segment.size);
    ASSERT_NE(segment.align, 0u);
    EXPECT_EQ(segment.offset % segment.align, 0u);
}

TEST(L07_Ex2TlsImage, AnInitialisedBlockHoldsTheImageThenZeros) {
    const ModuleTls segment = executable_tls();
    ASSERT_GT(segment.size, 0u);
    std::vector<char> block(segment.size, '\xAA');  // what a reused block might hold
    initialise_block(block.data(), segment);
    EXPECT_EQ(std::memcmp(block.data(), segment.image, segment.image_size), 0);
    std::size_t nonzero_after_image = 0;
    for (std::size_t i = segment.image_size; i < segment.size; ++i) nonzero_after_image += block[i] != 0;
    EXPECT_EQ(nonzero_after_image, 0u);
    std::uint64_t marker_in_block;
    std::memcpy(&marker_in_block, block.data() + index_in_block(&marker, segment), sizeof marker_in_block);
    EXPECT_EQ(marker_in_block, marker_initial);
}

}  // namespace
