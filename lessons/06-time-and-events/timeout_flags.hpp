// timeout_flags.hpp — lesson 6: --idle-timeout and --write-timeout, as the echo and chat servers
// take them.
//
//   TimeoutFlags timeouts;
//   parse_server_flags(argc, argv, {"chat_server", kUsage, backends, timeout_flags(timeouts)});
//   options.idle_timeout = timeouts.idle();
#pragma once

#include <chrono>

#include "../04-echo-server/server_program.hpp"
#include "fib/timer_heap.hpp"

struct TimeoutFlags {
    int idle_seconds = 0;    // --idle-timeout S; 0: never
    int write_seconds = 30;  // --write-timeout S

    fib::Clock::duration idle() const {
        return idle_seconds ? fib::Clock::duration(std::chrono::seconds(idle_seconds))
                            : fib::Clock::duration::max();
    }
    fib::Clock::duration write() const { return std::chrono::seconds(write_seconds); }
};

// Takes --idle-timeout S and --write-timeout S (1 to 86400 each) into
// `flags`; any other flag goes to `more`, if given.
ExtraFlags timeout_flags(TimeoutFlags& flags, ExtraFlags more = nullptr);

// The usage lines for the two flags: a string literal, to be joined into a
// program's usage text at compile time.
#define TIMEOUT_FLAGS_USAGE                                                               \
    "  --idle-timeout S   close a client that sends nothing for S seconds (1 to 86400;\n" \
    "                     default: never)\n"                                              \
    "  --write-timeout S  close a client that does not take what it is sent within S\n"   \
    "                     seconds: it stopped reading (1 to 86400; default 30)\n"
