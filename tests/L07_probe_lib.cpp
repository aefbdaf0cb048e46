// L07_probe_lib.cpp — lesson 7 tests: a shared library with thread_locals of its own.
//
// Built as build/lesson7/libL07_probe_lib.so and linked into the stage-7 tests.
// Compiled -fPIC, its code reaches its thread_locals with __tls_get_addr through
// the DTV of whatever block %fs points at: the tests check that a fiber with a
// TLS block of its own (and so a DTV of its own) gets copies of its own. A copy
// of this file dlopen'ed by a test is a second module, whose TLS is allocated
// on demand (L07_dlopen_test.cpp).
#include <string>

extern "C" {

thread_local int probe_counter = 1000;

int* l06_probe_counter() { return &probe_counter; }

}

namespace {

int constructed = 0;
int destroyed = 0;

// Non-trivial: constructed at a thread's (or fiber's) first use, destroyed at its exit.
struct Tracked {
    std::string text = "fresh";
    Tracked() { ++constructed; }
    ~Tracked() {
        text = "destroyed";
        ++destroyed;
    }
};

thread_local Tracked tracked;

}  // namespace

extern "C" {

// Whether this thread's (or fiber's) object was fresh when it came here, then marks it used.
bool l07_probe_tracked_was_fresh() {
    const bool fresh = tracked.text == "fresh";
    tracked.text = "used, and long enough not to fit in a std::string's own bytes";
    return fresh;
}

int l07_probe_constructed() { return constructed; }
int l07_probe_destroyed() { return destroyed; }

}
