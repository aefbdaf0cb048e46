// server_program.hpp — lesson 4: what the server programs share: flags, the fd limit, stop signals.
//
// echo_server and echo_threads take the same flags and stop the same way:
//
//   ServerFlags flags = parse_server_flags(argc, argv, {"echo_server", kUsage, {"poll"}});
//   raise_fd_limit();
//   int stop_fd = stop_signal_pipe();   // readable once SIGINT or SIGTERM arrives
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

struct ServerFlags {
    const char* bind = "127.0.0.1";  // --bind ADDR
    std::uint16_t port = 8001;       // --port N (default: ServerProgram::default_port)
    bool quiet = false;              // --quiet
    const char* backend = nullptr;   // --backend NAME, for programs that have backends
};

// A program's own flags: called with each flag the common parser does not
// know, and a function that returns the flag's value (or stops with a usage
// error if it has none).
// Returns false for a flag it does not know either; returns an error message
// for a bad value.
struct FlagResult {
    bool known = true;
    const char* error = nullptr;  // "--idle-timeout wants ...": printed with the usage, exit 2
};
using ExtraFlags = std::function<FlagResult(const char* flag, const std::function<const char*()>& value)>;

struct ServerProgram {
    const char* name;                           // "echo_server", for messages
    const char* usage;                          // printed by --help and after an error
    std::vector<const char*> backends;  // what --backend accepts, default first; empty: no flag
    ExtraFlags extra_flags = nullptr;   // the program's own flags, if it has any
    std::uint16_t default_port = 8001;  // --port when not given
};

// Parses the flags above, the first backend being the default. --help prints
// the usage (and the backends) and exits 0; a bad flag prints what is wrong
// and exits 2.
ServerFlags parse_server_flags(int argc, char** argv, const ServerProgram& program);

// One fd per client: lifts the soft limit on open fds (often 1024) to the hard
// limit, as servers do, so thousands of clients fit.
void raise_fd_limit();

// SIGINT and SIGTERM reach the program through a pipe (the self-pipe trick):
// the handler only writes the signal's number into it. Returns the read end,
// which turns readable at the first signal. SA_RESTART: other system calls
// carry on as if no signal had come.
int stop_signal_pipe();

// "SIGINT" or "SIGTERM": which signal arrived, read from the pipe's read end.
const char* stop_signal_name(int stop_fd);
