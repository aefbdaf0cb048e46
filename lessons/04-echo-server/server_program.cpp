// server_program.cpp — lesson 4: flags, the fd limit and the signal pipe of the server programs.
#include "server_program.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int signal_pipe[2] = {-1, -1};

void on_stop_signal(int signal) {
    const int saved_errno = errno;
    const unsigned char number = static_cast<unsigned char>(signal);
    [[maybe_unused]] ssize_t ignored = ::write(signal_pipe[1], &number, 1);
    errno = saved_errno;
}

void print_usage(const ServerProgram& program, std::FILE* out) {
    std::fputs(program.usage, out);
    if (program.backends.empty()) return;
    std::fprintf(out, "\nBackends in this build:");
    for (const char* backend : program.backends)
        std::fprintf(out, " %s%s", backend, backend == program.backends.front() ? " (default)" : "");
    std::fprintf(out, "\n");
}

[[noreturn]] void usage_error(const ServerProgram& program, const char* format,
                              const char* argument) {
    std::fprintf(stderr, "%s: ", program.name);
    std::fprintf(stderr, format, argument);
    std::fprintf(stderr, "\n\n");
    print_usage(program, stderr);
    std::exit(2);
}

std::uint16_t parse_port(const ServerProgram& program, const char* text) {
    char* end = nullptr;
    const long port = std::strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || port < 0 || port > 65535)
        usage_error(program, "--port wants a number from 0 to 65535, not '%s'", text);
    return static_cast<std::uint16_t>(port);
}

const char* parse_backend(const ServerProgram& program, const char* name) {
    for (const char* known : program.backends)
        if (std::strcmp(name, known) == 0) return known;
    usage_error(program, "unknown backend '%s'", name);
}

}  // namespace

ServerFlags parse_server_flags(int argc, char** argv, const ServerProgram& program) {
    ServerFlags flags;
    flags.port = program.default_port;
    if (!program.backends.empty()) flags.backend = program.backends.front();
    // FIB_BACKEND, which every Waiter reads (pollers.hpp), is the default here
    // too; --backend overrides it.
    if (const char* named = std::getenv("FIB_BACKEND"); named && !program.backends.empty()) {
        bool known = false;
        for (const char* backend : program.backends) known = known || std::strcmp(named, backend) == 0;
        if (!known) usage_error(program, "FIB_BACKEND=%s: no backend of that name in this build", named);
        flags.backend = parse_backend(program, named);
    }
    for (int i = 1; i < argc; ++i) {
        const char* flag = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage_error(program, "%s needs a value", flag);
            return argv[++i];
        };
        if (std::strcmp(flag, "--help") == 0) {
            print_usage(program, stdout);
            std::exit(0);
        } else if (std::strcmp(flag, "--port") == 0) {
            flags.port = parse_port(program, value());
        } else if (std::strcmp(flag, "--bind") == 0) {
            flags.bind = value();
        } else if (std::strcmp(flag, "--quiet") == 0) {
            flags.quiet = true;
        } else if (std::strcmp(flag, "--backend") == 0 && !program.backends.empty()) {
            flags.backend = parse_backend(program, value());
        } else {
            const FlagResult extra =
                program.extra_flags ? program.extra_flags(flag, value) : FlagResult{false};
            if (!extra.known) usage_error(program, "unknown option '%s'", flag);
            if (extra.error) usage_error(program, "%s", extra.error);
        }
    }
    return flags;
}

void raise_fd_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

int stop_signal_pipe() {
    if (::pipe2(signal_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
        std::perror("pipe2 for the stop signals");
        std::exit(1);
    }
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    return signal_pipe[0];
}

const char* stop_signal_name(int stop_fd) {
    unsigned char signal = 0;
    if (::read(stop_fd, &signal, 1) != 1) return "stop";
    return signal == SIGINT ? "SIGINT" : "SIGTERM";
}
