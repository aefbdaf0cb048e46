#!/usr/bin/env bash
# check-compile-fail.sh — code that must not compile, and must fail for the reason it says.
#
# Usage: check-compile-fail.sh "COMPILER AND FLAGS" FILE...
# Each FILE has a line "// expect-error: REGEX" (an extended regex). The compiler must
# refuse FILE (-fsyntax-only) and print an error that the regex matches; a file that
# compiles, or fails for another reason, fails the check.
set -uo pipefail
compiler=${1:?usage: check-compile-fail.sh "COMPILER AND FLAGS" FILE...}
shift
failures=0
for file in "$@"; do
    expected=$(sed -n 's|^// expect-error: ||p' "$file")
    if [ -z "$expected" ]; then
        echo "check-compile-fail: $file has no '// expect-error:' line" >&2
        failures=$((failures + 1))
        continue
    fi
    if output=$($compiler -fsyntax-only "$file" 2>&1); then
        echo "check-compile-fail: $file compiled, and must not" >&2
        failures=$((failures + 1))
    elif ! grep -Eq "error: .*$expected" <<<"$output"; then
        echo "check-compile-fail: $file failed, but not with \"$expected\":" >&2
        grep 'error:' <<<"$output" | head -n 5 >&2
        failures=$((failures + 1))
    fi
done
[ "$failures" -eq 0 ] || exit 1
echo "check-compile-fail: $# files refused by the compiler, each for the reason it names"
