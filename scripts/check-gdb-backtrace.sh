#!/usr/bin/env bash
# check-gdb-backtrace.sh — checks that gdb's `bt` inside a fiber ends cleanly at the trampoline.
#
# Usage: check-gdb-backtrace.sh [DEMO]   (default: build/lesson2/demo)
# Stops the lesson-2 demo inside the producer fiber and prints gdb's backtrace.
# Its last frame must be context_trampoline (whose `.cfi_undefined rip` says
# "outermost"), with no "Backtrace stopped" or "corrupt stack" complaint.
set -euo pipefail
demo=${1:-build/lesson2/demo}
if ! command -v gdb >/dev/null; then
    echo "check-gdb-backtrace: gdb is not installed (apt-get install -y gdb); skipped"
    exit 0
fi
trace=$(gdb -q -batch -nx -ex 'break produce' -ex run -ex bt "$demo" 2>&1 | grep -E '^#|Backtrace|corrupt' || true)
echo "$trace"
last=$(echo "$trace" | grep -E '^#' | tail -n 1)
if [[ "$last" != *context_trampoline* ]] || echo "$trace" | grep -qE 'Backtrace stopped|corrupt'; then
    echo "check-gdb-backtrace: the backtrace does not end cleanly at context_trampoline" >&2
    exit 1
fi
echo "check-gdb-backtrace: the backtrace ends at context_trampoline"
