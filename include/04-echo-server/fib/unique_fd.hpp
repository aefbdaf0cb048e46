// unique_fd.hpp — lesson 4: UniqueFd, an owned file descriptor, closed when the owner goes.
#pragma once

#include <utility>

#include "fib/io.hpp"

namespace fib {

class UniqueFd {
public:
    UniqueFd() noexcept = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    ~UniqueFd() { reset(); }
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept { return std::exchange(fd_, -1); }
    // Closes the fd held (if any, through io::close, so the thread's Waiter
    // forgets it) and holds `fd` instead.
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) io::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

}  // namespace fib
