// L10_fails_event_move.cpp — lesson 10: must not compile. co::Event cannot be moved either: a
// move would leave a suspended task's registration naming the old object (co_event.hpp).
// expect-error: use of deleted function .*Event\(fib::co::Event&&\)
#include <utility>

#include "fib/co_event.hpp"

void move_an_event() {
    fib::co::Event original;
    fib::co::Event moved(std::move(original));
}
