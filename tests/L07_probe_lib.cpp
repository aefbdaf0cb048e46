// L07_probe_lib.cpp — lesson 7 tests: a shared library with a thread_local of its own.
//
// Built as build/lesson6/libL07_probe_lib.so and linked into the stage-6 tests.
// Compiled -fPIC, its code reaches `probe_counter` with __tls_get_addr through
// the DTV of whatever block %fs points at: the test checks that a fiber with a
// TLS block of its own (and so a DTV of its own) gets a copy of its own.
extern "C" {

thread_local int probe_counter = 1000;

int* l06_probe_counter() { return &probe_counter; }

}
