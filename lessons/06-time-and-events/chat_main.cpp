// chat_main.cpp — lesson 6: the chat_server program: flags, signals, a summary at the end.
//
//   build/lessonN/chat_server [--port N] [--bind ADDR] [--backend NAME] [--idle-timeout S]
//                             [--write-timeout S] [--eventfd-mail] [--quiet]
//
// Talk to it with two terminals running `nc 127.0.0.1 8002`: each line typed in
// one appears in the other. SIGINT and SIGTERM arrive through a signalfd
// (stop_signals.hpp) that serve() waits on like any other fd.
#include <cstdio>
#include <exception>
#include <optional>
#include <string_view>

#include "../04-echo-server/server_program.hpp"
#include "chat_server.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/poller.hpp"
#include "fib/waiter.hpp"
#include "stop_signals.hpp"
#include "timeout_flags.hpp"

namespace {

constexpr const char* kUsage =
    "usage: chat_server [--port N] [--bind ADDR] [--backend NAME] [--idle-timeout S]\n"
    "                   [--write-timeout S] [--eventfd-mail] [--quiet] [--help]\n"
    "\n"
    "A line-based TCP chat room: one thread, one fiber per client. Each line a client sends\n"
    "goes to every other client as 'user N: line'. A client that reads too slowly misses\n"
    "lines (it is told how many) instead of holding the others up.\n"
    "\n"
    "  --port N           port to listen on (default 8002; 0 lets the kernel pick one, and the\n"
    "                     'listening on' line says which)\n"
    "  --bind ADDR        numeric IPv4/IPv6 address to listen on (default 127.0.0.1, this\n"
    "                     machine only; 0.0.0.0 opens it to the network)\n"
    "  --backend NAME     how the Waiter asks the kernel which fds are ready: epoll or poll;\n"
    "                     the list below says what this build has\n" TIMEOUT_FLAGS_USAGE
    "  --eventfd-mail     wake each member's fiber through its Event's eventfd, as another\n"
    "                     thread would, not directly (for scripts/count-syscalls.py)\n"
    "  --quiet            do not log each client's join and leave on stderr\n"
    "  --help             print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop accepting, close every client, print a summary, exit 0.\n";

}  // namespace

int main(int argc, char** argv) {
    // First, before any thread exists: every thread must block the signals.
    const int stop_fd = stop_signal_fd();
    // Port 8002 by default, so that the chat and echo servers can run at once.
    TimeoutFlags timeouts;
    bool eventfd_mail = false;
    const ExtraFlags mail_flag = [&eventfd_mail](const char* flag, const auto&) -> FlagResult {
        eventfd_mail = std::string_view(flag) == "--eventfd-mail";
        return {eventfd_mail};
    };
    const ServerFlags flags =
        parse_server_flags(argc, argv,
                           {"chat_server", kUsage, fib::poller_names(),
                            timeout_flags(timeouts, mail_flag), ChatOptions{}.port});
    raise_fd_limit();

    fib::FiberManager manager;
    fib::Waiter waiter(flags.backend);
    std::optional<ChatServer> server;
    try {
        server.emplace(ChatOptions{.bind = flags.bind,
                                   .port = flags.port,
                                   .quiet = flags.quiet,
                                   .idle_timeout = timeouts.idle(),
                                   .write_timeout = timeouts.write(),
                                   .eventfd_mail = eventfd_mail});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "chat_server: %s\n", error.what());
        return 1;
    }
    std::printf("chat_server: listening on %s:%u (backend %s); Ctrl-C stops it\n", flags.bind,
                server->port(), waiter.poller().name());
    std::fflush(stdout);

    server->serve(stop_fd);

    std::printf(
        "chat_server: %s: served %llu clients, relayed %llu lines (%llu dropped for slow "
        "readers); closed %llu idle, %llu stalled\n",
        stop_signal_fd_name(stop_fd), static_cast<unsigned long long>(server->clients_served()),
        static_cast<unsigned long long>(server->lines_relayed()),
        static_cast<unsigned long long>(server->lines_dropped()),
        static_cast<unsigned long long>(server->idle_closed()),
        static_cast<unsigned long long>(server->slow_closed()));
    return 0;
}
