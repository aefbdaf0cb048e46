// L04_ex2_line_lengths_test.cpp — lesson 4, exercise 2: a connection that answers each line
// with its length (lessons/04-echo-server/exercises/ex2_line_lengths/), over a socketpair.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>

#include "L04_waiter_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/waiter.hpp"
#include "line_lengths.hpp"

namespace {

// Sends `pieces` one write each, with a yield between them so the server reads
// them apart; then closes its side and returns everything the server answered.
std::string converse(const std::vector<std::string>& pieces) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    l04_waiter::Pair pair = l04_waiter::make_fds(true);
    fib::Fiber server([&] { answer_line_lengths(pair.second.get()); });
    std::string answers;
    fib::Fiber client([&] {
        for (const std::string& piece : pieces) {
            EXPECT_EQ(fib::io::write_all(pair.first.get(), piece.data(), piece.size()),
                      static_cast<ssize_t>(piece.size()));
            for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
        }
        ::shutdown(pair.first.get(), SHUT_WR);
        char buffer[256];
        while (ssize_t got = fib::io::read(pair.first.get(), buffer, sizeof buffer)) {
            if (got < 0) break;
            answers.append(buffer, got);
        }
    });
    server.join();
    ::shutdown(pair.second.get(), SHUT_WR);
    client.join();
    return answers;
}

}  // namespace

TEST(L04_Ex2LineLengths, EachLineIsAnsweredWithItsLength) {
    EXPECT_EQ(converse({"hello\nworld!\n\n"}), "5\n6\n0\n");
}

TEST(L04_Ex2LineLengths, ALineSentOneByteAtATimeIsOneLine) {
    std::vector<std::string> bytes;
    for (char c : std::string("hello\nfibers\n")) bytes.push_back(std::string(1, c));
    EXPECT_EQ(converse(bytes), "5\n6\n");
}

TEST(L04_Ex2LineLengths, ALongLineAcrossManyReadsIsCountedWhole) {
    const std::string line(100000, 'x');
    EXPECT_EQ(converse({line.substr(0, 30000), line.substr(30000), "\nab\n"}), "100000\n2\n");
}

TEST(L04_Ex2LineLengths, BytesAfterTheLastNewlineGetNoAnswer) {
    EXPECT_EQ(converse({"one\ntw", "o"}), "3\n");
}
