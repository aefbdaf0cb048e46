#!/usr/bin/env python3
"""without-io-uring.py — lesson 11: run a command where the kernel refuses io_uring.

Usage: scripts/without-io-uring.py [--errno EPERM|ENOSYS] COMMAND [ARG...]

Installs a seccomp filter (as a container's default profile does) that makes
io_uring_setup, io_uring_enter and io_uring_register fail with EPERM (or
ENOSYS, as a kernel without io_uring does), then runs COMMAND in its place.
The filter is inherited by every child and thread and cannot be lifted. The
course's programs then fall back to epoll and say so in one line: make
test-lesson11 runs lesson 4-6's and 11's suites a second time this way.
"""
import ctypes
import errno
import os
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# The filter judges the calls of this machine's own ABI: x86-64's, or AArch64's (whose
# io_uring calls have the same numbers). Under qemu-user the calls it sees are the
# emulator's own, x86-64's, and the emulator gives its guest no io_uring anyway.
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[os.uname().machine]
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
BPF_LD_W_ABS = 0x20   # load a 32-bit word of struct seccomp_data
BPF_JEQ_K = 0x15      # jump if equal to k
BPF_RET_K = 0x06      # return k
IO_URING_CALLS = (425, 426, 427)  # io_uring_setup, io_uring_enter, io_uring_register


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def instruction(code, k, jump_true=0, jump_false=0):
    return struct.pack("HBBI", code, jump_true, jump_false, k)


def filter_program(error):
    # seccomp_data: nr at offset 0, arch at offset 4.
    program = [
        instruction(BPF_LD_W_ABS, 4),
        instruction(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
        instruction(BPF_RET_K, SECCOMP_RET_ALLOW),  # another ABI: not ours to judge
        instruction(BPF_LD_W_ABS, 0),
    ]
    for left, number in zip(range(len(IO_URING_CALLS), 0, -1), IO_URING_CALLS):
        program.append(instruction(BPF_JEQ_K, number, left, 0))
    program.append(instruction(BPF_RET_K, SECCOMP_RET_ALLOW))
    program.append(instruction(BPF_RET_K, SECCOMP_RET_ERRNO | error))
    return b"".join(program)


def main(argv):
    error = errno.EPERM
    if len(argv) > 2 and argv[1] == "--errno":
        error = getattr(errno, argv[2], None)
        if error not in (errno.EPERM, errno.ENOSYS):
            sys.exit("without-io-uring.py: --errno wants EPERM or ENOSYS")
        argv = argv[2:]
    if len(argv) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    libc = ctypes.CDLL(None, use_errno=True)
    code = filter_program(error)
    buffer = ctypes.create_string_buffer(code, len(code))
    program = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        sys.exit("without-io-uring.py: cannot install the seccomp filter: " + os.strerror(ctypes.get_errno()))
    try:
        os.execvp(argv[1], argv[1:])
    except OSError as failure:
        sys.exit(f"without-io-uring.py: {argv[1]}: {failure.strerror}")


if __name__ == "__main__":
    main(sys.argv)
