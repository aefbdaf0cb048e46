// L07_stack_protector.cpp — lesson 7 tests: a function built with -fstack-protector-strong, for tests/L07_libc_test.cpp.
//
// The Makefile compiles this one file with -fstack-protector-strong (Debian's
// g++ does not turn it on by default). A function with a local array then
// copies the canary from %fs:0x28 into its frame on entry and compares it on
// the way out, calling __stack_chk_fail ("*** stack smashing detected ***")
// when they differ. Run on a fiber, %fs:0x28 is its own block's canary, so the
// block must carry the thread's value, on entry and again after a yield. To see
// the check in the binary:
//
//   objdump -dr --no-show-raw-insn build/lesson6/obj/tests/L07_stack_protector.o
//
// shows `mov %fs:0x28,%rax` near the top of l06_protected_sum and a
// `sub %fs:0x28,...` followed by a call to __stack_chk_fail near its end.

// Fills the first n bytes (at most 64) of a local buffer with 1, 2, ..., calls
// `between` (which may yield), then returns their sum: n(n+1)/2.
int l06_protected_sum(int n, void (*between)());

int l06_protected_sum(int n, void (*between)()) {
    char buffer[64];
    const int count = n < 0 ? 0 : (n > 64 ? 64 : n);
    for (int i = 0; i < count; ++i) buffer[i] = static_cast<char>(i + 1);
    // The buffer's address escapes, so it lives in the frame the canary guards.
    asm volatile("" : : "r"(buffer) : "memory");
    between();
    int sum = 0;
    for (int i = 0; i < count; ++i) sum += buffer[i];
    return sum;
}
