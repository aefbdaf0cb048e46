// L10_fails_event_copy.cpp — lesson 10: must not compile. co::Event cannot be copied: a task
// suspended on it holds its address and its eventfd (co_event.hpp). scripts/check-compile-fail.sh
// checks that the compiler refuses it for that reason.
// expect-error: use of deleted function .*Event\(const fib::co::Event&\)
#include "fib/co_event.hpp"

void copy_an_event() {
    fib::co::Event original;
    fib::co::Event copy(original);
}
