#!/bin/sh
# run-tests.sh — make test runs a test binary through this: one line when it passes, and its
# failures (GoogleTest's brief output: each failure in full) when it does not. V=1 runs the
# binary directly instead, every test's line shown.
#
#   run-tests.sh "LINE SO FAR" LOG COMMAND...
#   e.g. run-tests.sh "TEST  lesson6 " build/lesson6/tests.log timeout 1800 build/lesson6/tests
line=$1
log=$2
shift 2
start=$(date +%s)
if "$@" --gtest_brief=1 >"$log" 2>&1; then
    passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$log" | tail -n 1)
    skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}[.,].*/\1/p' "$log" | tail -n 1)
    echo "$line${passed:-0} passed${skipped:+, $skipped skipped} ($(($(date +%s) - start)) s)"
else
    status=$?
    echo "${line}FAILED (exit status $status); its output, also in $log:"
    cat "$log"
    exit "$status"
fi
