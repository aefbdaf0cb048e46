// stop_signals.cpp — lesson 6: a signalfd for SIGINT and SIGTERM.
#include "stop_signals.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int stop_signal_fd() {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    // Blocked, a signal is not delivered: it waits, pending, for the signalfd.
    if (::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr) != 0) {
        std::fprintf(stderr, "blocking SIGINT and SIGTERM failed\n");
        std::exit(1);
    }
    const int fd = ::signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        std::perror("signalfd for SIGINT and SIGTERM");
        std::exit(1);
    }
    return fd;
}

const char* stop_signal_fd_name(int stop_fd) {
    signalfd_siginfo info{};
    if (::read(stop_fd, &info, sizeof info) != sizeof info) return "stop";
    return info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
}
