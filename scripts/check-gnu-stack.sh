#!/usr/bin/env bash
# check-gnu-stack.sh — fails if any given binary asks for an executable stack.
#
# Every .S file ends with a .note.GNU-stack section; if one forgot, the linker
# would mark the whole binary's stack executable (RWE). This reads each
# binary's GNU_STACK program header and wants RW.
set -euo pipefail
status=0
for binary in "$@"; do
    flags=$(readelf -lW "$binary" | awk '$1 == "GNU_STACK" { print $(NF-1) }')
    if [[ "$flags" != "RW" ]]; then
        echo "$binary: GNU_STACK is '${flags:-missing}', expected RW (non-executable)" >&2
        status=1
    fi
done
[[ $status -eq 0 ]] && echo "check-stack: $# binaries, every GNU_STACK is RW (non-executable)"
exit $status
