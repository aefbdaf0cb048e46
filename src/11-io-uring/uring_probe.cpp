// uring_probe.cpp — lesson 11: is io_uring there? If not, say so in one line and use epoll.
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "fib/epoll_poller.hpp"
#include "fib/uring_poller.hpp"

namespace fib {
namespace {

// What this lesson asks of the kernel: the features and the operations.
// EXT_ARG (5.11): enter takes a timeout; NODROP (5.5): a full CQ never loses
// a completion. The operations are in IORING_REGISTER_PROBE's list.
constexpr unsigned kFeatures = IORING_FEAT_EXT_ARG | IORING_FEAT_NODROP;
constexpr std::uint8_t kOperations[] = {IORING_OP_POLL_ADD, IORING_OP_ASYNC_CANCEL, IORING_OP_READ,
                                        IORING_OP_WRITE,    IORING_OP_SEND,         IORING_OP_CONNECT};

// Why a ring cannot be had, in words; empty when it can. Turns the MSG_RING
// rung down to "uring" where the kernel lacks that operation.
std::string refusal(UringPoller& poller) {
    if (!poller.ok()) {
        std::string why = std::string("io_uring_setup: ") + std::strerror(poller.error());
        if (poller.error() == ENOSYS) why += " (a kernel without io_uring, or a seccomp filter)";
        if (poller.error() == EPERM) {
            // kernel.io_uring_disabled (6.6): 1 allows only a group, 2 no one.
            char disabled = '0';
            if (std::FILE* sysctl = std::fopen("/proc/sys/kernel/io_uring_disabled", "r")) {
                if (std::fread(&disabled, 1, 1, sysctl) != 1) disabled = '0';
                std::fclose(sysctl);
            }
            why += disabled != '0' ? " (the sysctl kernel.io_uring_disabled is " + std::string(1, disabled) + ")"
                                   : " (a seccomp filter, such as a container's default profile)";
        }
        return why;
    }
    if ((poller.ring().features() & kFeatures) != kFeatures) return "this kernel's io_uring is older than 5.11";
    std::vector<unsigned char> buffer(sizeof(io_uring_probe) + 256 * sizeof(io_uring_probe_op));
    auto* probe = reinterpret_cast<io_uring_probe*>(buffer.data());
    if (::syscall(__NR_io_uring_register, poller.ring().fd(), IORING_REGISTER_PROBE, probe, 256) < 0)
        return std::string("IORING_REGISTER_PROBE: ") + std::strerror(errno);
    for (std::uint8_t operation : kOperations)
        if (operation > probe->last_op || !(probe->ops[operation].flags & IO_URING_OP_SUPPORTED))
            return "this kernel's io_uring lacks operation " + std::to_string(operation);
    // MSG_RING (5.18) is the uring-msg rung's only: without it, that rung
    // works as "uring" (cross-thread sets write the eventfd), saying so once.
    const unsigned msg = IORING_OP_MSG_RING;
    if (poller.options().msg_ring && (msg > probe->last_op || !(probe->ops[msg].flags & IO_URING_OP_SUPPORTED))) {
        static std::once_flag said;
        std::call_once(said, [] { std::fprintf(stderr, "fib: no IORING_OP_MSG_RING here; uring-msg works as uring\n"); });
        poller.without_messages();
    }
    return {};
}

}  // namespace

std::unique_ptr<Poller> make_uring_poller(const UringOptions& options) {
    auto poller = std::make_unique<UringPoller>(options);
    const std::string why = refusal(*poller);
    if (why.empty()) return poller;
    static std::once_flag said;
    std::call_once(said, [&] {
        std::fprintf(stderr, "fib: no io_uring here (%s); the Waiter uses epoll\n", why.c_str());
    });
    return make_epoll_poller();
}

}  // namespace fib
