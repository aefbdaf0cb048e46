// echo_load.cpp — lesson 4: the load client of make bench-echo-lessonN: many echo connections, one thread.
//
//   build/lessonN/echo_load --port N [--conns N] [--size BYTES] [--seconds S] [--pipeline K]
//                   [--idle N]
//
// Phase 1 opens every connection (non-blocking connects, at most 64 under way
// at once). Phase 2 lasts S seconds: each connection sends a message, waits for
// its whole echo and sends the next (with --pipeline K, up to K in flight).
// With --idle N, N more connections are opened in phase 1 and stay silent in
// phase 2: they cost the server only what waiting on an idle socket costs it.
// Every echoed byte is checked and every round trip timed. One epoll loop
// drives it all; it uses no fibers, so it loads echo_server and echo_threads
// alike, and it allocates nothing per message. This file holds the flags and
// the report; the connections and the epoll loop are in load_connections.cpp.
#include <sys/resource.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "load_connections.hpp"

namespace {

constexpr const char* kUsage =
    "usage: echo_load --port N [--host ADDR] [--conns N] [--size BYTES] [--seconds S]\n"
    "                 [--pipeline K] [--idle N] [--help]\n"
    "\n"
    "Opens N connections to an echo server (default 100), then for S seconds (default 2,\n"
    "up to 60) each sends BYTES random bytes (default 64, up to 1 MiB) and waits for their\n"
    "echo, checking every byte; with --pipeline K (1 to 64), K messages may be in flight.\n"
    "--idle N (0 to 20000, default 0) opens N more connections that send nothing and do\n"
    "not count in the figures; at the end each must still be open and silent.\n"
    "--host is 127.0.0.1 (default) or ::1: this tool loads this machine only.\n"
    "Every connection is an fd here and another in the server: --conns plus --idle must\n"
    "stay below the hard limit on open fds (ulimit -Hn), in both processes.\n"
    "Prints a line for people and a 'RESULT name=echo ...' line for scripts.\n"
    "Exit status: 0 ok, 1 an echoed byte differed, 2 usage, 3 no round trip completed.\n";

[[noreturn]] __attribute__((format(printf, 1, 2))) void usage_error(const char* format, ...) {
    std::va_list arguments;
    va_start(arguments, format);
    std::fprintf(stderr, "echo_load: ");
    std::vfprintf(stderr, format, arguments);
    va_end(arguments);
    std::fprintf(stderr, "\n\n%s", kUsage);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const char* flag = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage_error("%s needs a value", flag);
            return argv[++i];
        };
        auto number = [&](std::uint64_t low, std::uint64_t high) -> std::uint64_t {
            const char* text = value();
            char* end = nullptr;
            const unsigned long long number = std::strtoull(text, &end, 10);
            if (*text < '0' || *text > '9' || *end != '\0' || number < low || number > high)
                usage_error("%s wants a whole number from %lu to %lu, not '%s'", flag, low, high,
                            text);
            return number;
        };
        const std::string_view name = flag;
        if (name == "--help") {
            rlimit limit{};
            ::getrlimit(RLIMIT_NOFILE, &limit);
            std::printf("%sHere the hard limit is %lu fds.\n", kUsage, limit.rlim_max);
            std::exit(0);
        } else if (name == "--host") {
            options.host = value();
        } else if (name == "--port") {
            options.port = number(1, 65535);
        } else if (name == "--conns") {
            options.conns = number(1, 1'000'000);
        } else if (name == "--size") {
            options.size = number(1, 1 << 20);
        } else if (name == "--idle") {
            options.idle = number(0, 20'000);
        } else if (name == "--pipeline") {
            options.pipeline = number(1, 64);
        } else if (name == "--seconds") {
            const char* text = value();
            char* end = nullptr;
            options.seconds = std::strtod(text, &end);
            if (*end != '\0' || !(options.seconds > 0 && options.seconds <= 60))
                usage_error("--seconds wants a number above 0 and up to 60, not '%s'", text);
        } else {
            usage_error("unknown option '%s'", flag);
        }
    }
    const std::string_view host = options.host;
    if (host != "127.0.0.1" && host != "::1")
        usage_error("refusing --host %s: only 127.0.0.1 or ::1 (loopback)", options.host);
    return options;
}

// Each connection, active or idle, is an fd: raise the soft limit to the hard
// one, or say why not.
void raise_fd_limit(std::uint64_t connections) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    if (connections + 16 > limit.rlim_max) {
        std::fprintf(stderr, "echo_load: %lu connections need %lu fds; the hard limit is %lu\n",
                     connections, connections + 16, limit.rlim_max);
        std::exit(2);
    }
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
}

// The round trip below which `fraction` of them took, in microseconds.
double percentile_us(std::vector<std::uint64_t>& round_trips, double fraction) {
    if (round_trips.empty()) return 0;
    const auto rank =
        round_trips.begin() +
        static_cast<std::ptrdiff_t>(fraction * static_cast<double>(round_trips.size() - 1));
    std::nth_element(round_trips.begin(), rank, round_trips.end());
    return static_cast<double>(*rank) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    raise_fd_limit(options.conns + options.idle);
    Totals totals = run_load(options);
    const std::uint64_t messages = totals.round_trip_ns.size();
    const double rps = static_cast<double>(messages) / totals.elapsed_seconds;
    const double p50_us = percentile_us(totals.round_trip_ns, 0.50);
    const double p99_us = percentile_us(totals.round_trip_ns, 0.99);
    const double max_us = percentile_us(totals.round_trip_ns, 1.0);
    std::printf(
        "echo_load: %lu connections x %lu bytes, pipeline %lu: %lu round trips in %.2f s = "
        "%.0f/s; p50 %.1f us, p99 %.1f us, max %.1f us",
        options.conns, options.size, options.pipeline, messages, totals.elapsed_seconds, rps,
        p50_us, p99_us, max_us);
    if (options.idle > 0)
        std::printf("; %lu of %lu idle connections held open", totals.idle_held, options.idle);
    std::printf("\n");
    std::printf(
        "RESULT name=echo conns=%lu size=%lu pipeline=%lu seconds=%g idle=%lu messages=%lu "
        "rps=%.0f p50_us=%.1f p99_us=%.1f max_us=%.1f connect_errors=%lu errors=%lu "
        "mismatches=%lu\n",
        options.conns, options.size, options.pipeline, options.seconds, options.idle, messages, rps,
        p50_us, p99_us, max_us, totals.connect_errors, totals.failures, totals.mismatches);
    if (totals.mismatches > 0) return 1;
    return messages == 0 ? 3 : 0;
}
