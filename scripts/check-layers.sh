#!/usr/bin/env bash
# check-layers.sh — fails if stage N includes a library header that lessons 1..N do not own.
#
# Usage: check-layers.sh N "ALLOWED HEADERS..." DEPFILES...
# The dependency files come from the compiler (-MMD), so this checks what was
# really included, not what the Makefile believes.
set -euo pipefail
stage=$1
allowed=" $2 "
shift 2
status=0
for header in $(cat "$@" | tr ' \\' '\n\n' | sed 's/:$//' | grep -E '^include/fib/' | sort -u); do
    if [[ "$allowed" != *" $header "* ]]; then
        echo "stage $stage includes $header, which belongs to a later lesson" >&2
        status=1
    fi
done
exit $status
