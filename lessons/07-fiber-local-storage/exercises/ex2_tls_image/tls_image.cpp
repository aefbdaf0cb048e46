// tls_image.cpp — lesson 7, exercise 2 (part two): reading a PT_TLS header, and a block initialised from it.
#include "tls_image.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

#include "fib/glibc_tls.hpp"

// For each program header of the executable (info->dlpi_phdr[0..dlpi_phnum)),
// look for p_type == PT_TLS. Its image is at dlpi_addr + p_vaddr (dlpi_addr is
// where the module was loaded); dlpi_tls_data is this thread's copy of the
// block, so fib::thread_pointer() minus it is the offset below tp.
ModuleTls executable_tls() {
    return ModuleTls{};
}

void initialise_block(char* block, const ModuleTls& segment) {
    (void)block;
    (void)segment;
}
