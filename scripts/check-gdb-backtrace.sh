#!/usr/bin/env bash
# check-gdb-backtrace.sh — checks that gdb's `bt` inside a fiber ends cleanly at the trampoline.
#
# Usage: check-gdb-backtrace.sh [DEMO]   (default: build/lesson2/demo)
#        RUN="qemu-aarch64 -L /usr/aarch64-linux-gnu" SYSROOT=/usr/aarch64-linux-gnu \
#            check-gdb-backtrace.sh build/aarch64/lesson2/demo
# Stops the lesson-2 demo inside the producer fiber and prints gdb's backtrace.
# Its last frame must be context_trampoline (whose `.cfi_undefined rip`, x30 on
# AArch64, says "outermost"), with no "Backtrace stopped" or "corrupt stack" complaint.
# With RUN set (make ARCH=aarch64 check-backtrace on x86-64), the demo runs under
# qemu-user's gdb stub (qemu-aarch64 -g PORT) and gdb-multiarch connects to it.
set -euo pipefail
demo=${1:-build/lesson2/demo}
stop_at=(-ex 'break produce')

if [ -z "${RUN:-}" ]; then
    if ! command -v gdb >/dev/null; then
        echo "check-gdb-backtrace: gdb is not installed (apt-get install -y gdb); skipped"
        exit 0
    fi
    trace=$(gdb -q -batch -nx "${stop_at[@]}" -ex run -ex bt "$demo" 2>&1 | grep -E '^#|Backtrace|corrupt' || true)
else
    if ! command -v gdb-multiarch >/dev/null; then
        echo "check-gdb-backtrace: gdb-multiarch is not installed (apt-get install -y gdb-multiarch); skipped"
        exit 0
    fi
    # RUN is "qemu-aarch64 -L SYSROOT": the same, stopped before the first instruction until
    # gdb connects on a free port (the kernel picks one; qemu binds it again at once). gdb
    # reads the libraries' symbols from SYSROOT.
    read -r -a emulator <<<"$RUN"
    sysroot=${SYSROOT:-/}
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${emulator[@]}" -g "$port" "$demo" >/dev/null 2>&1 &
    qemu=$!
    trap 'kill "$qemu" 2>/dev/null || true' EXIT
    # qemu takes one connection, the debugger's, so nothing else may try the port first; gdb
    # tries again until qemu listens (set tcp auto-retry, within tcp connect-timeout).
    trace=$(gdb-multiarch -q -batch -nx -ex "set sysroot $sysroot" -ex "file $demo" \
                -ex "set tcp connect-timeout 30" -ex "target remote 127.0.0.1:$port" \
                "${stop_at[@]}" -ex continue -ex bt -ex kill 2>&1 |
            grep -E '^#|Backtrace|corrupt' || true)
fi
echo "$trace"
last=$(echo "$trace" | grep -E '^#' | tail -n 1)
if [[ "$last" != *context_trampoline* ]] || echo "$trace" | grep -qE 'Backtrace stopped|corrupt'; then
    echo "check-gdb-backtrace: the backtrace does not end cleanly at context_trampoline" >&2
    exit 1
fi
echo "check-gdb-backtrace: the backtrace ends at context_trampoline"
