// load_connections.hpp — lesson 4: echo_load's engine, many echo connections on one epoll loop.
//
// echo_load.cpp parses the flags into Options, calls run_load and reports the
// Totals; load_connections.cpp holds the connections' state machine and the loop.
#pragma once

#include <cstdint>
#include <vector>

// What echo_load's flags set.
struct Options {
    const char* host = "127.0.0.1";
    std::uint64_t port = 8001, conns = 100, size = 64, pipeline = 1;
    std::uint64_t idle = 0;  // connections opened beside the active ones and left silent
    double seconds = 2;
};

// What main reports.
struct Totals {
    std::uint64_t connect_errors = 0, failures = 0, mismatches = 0;
    std::uint64_t idle_held = 0;  // idle connections still open and silent after phase 2
    double elapsed_seconds = 0;
    std::vector<std::uint64_t> round_trip_ns;
};

// Phase 1 opens options.conns + options.idle connections to options.host:options.port,
// at most 64 connects under way at once; phase 2 runs round trips on every open
// active one for options.seconds, checking every echoed byte, while the idle ones
// stay silent; then it checks that the server kept the idle ones, and closes them all.
Totals run_load(const Options& options);
