// tls_image.hpp — lesson 7, exercise 2 (part two): the executable's TLS image, and a block made from it.
//
// The two steps of a TLS block that come from the ELF file: find the module's
// PT_TLS program header, then initialise a block from it (copy .tdata, zero
// .tbss). tls_segments.cpp does both for every module loaded; here, for the
// executable alone.
#pragma once

#include <cstddef>

struct ModuleTls {
    const void* image = nullptr;  // .tdata's bytes: the initial values (p_vaddr, in memory)
    std::size_t image_size = 0;   // p_filesz
    std::size_t size = 0;         // p_memsz: .tdata and .tbss
    std::size_t align = 0;        // p_align
    std::size_t offset = 0;       // this thread's block of the module starts at tp - offset
};

// The executable's PT_TLS segment, found with dl_iterate_phdr (<link.h>): the
// executable is the module it visits first, and its name is "".
ModuleTls executable_tls();

// Makes `block` (segment.size bytes) what a new thread's block of the module
// holds before any code runs: the image, then zeros.
void initialise_block(char* block, const ModuleTls& segment);
