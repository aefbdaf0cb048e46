#!/bin/sh
# run-tests.sh — make test runs a test binary through this: one line when it passes, and its
# failures (GoogleTest's brief output: each failure in full) when it does not. V=1 runs the
# binary directly instead, every test's line shown.
#
#   run-tests.sh "LINE SO FAR" LOG COMMAND...
#   e.g. run-tests.sh "TEST  lesson6 " build/lesson6/tests.log timeout 1800 build/lesson6/tests
#
# FIB_TEST_SHARDS=K (the Makefile's TEST_SHARDS) runs the binary as K processes at once, each
# with its share of the tests (GoogleTest's GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX: test i
# goes to shard i mod K), so that one stage's run alone does not leave the other cores idle.
# A test may then not lean on another having run before it in the same process. LOG holds
# every shard's output, one after the other; the line counts the tests of all.
line=$1
log=$2
shift 2
shards=${FIB_TEST_SHARDS:-1}
start=$(date +%s)
status=0
if [ "$shards" -le 1 ]; then
    "$@" --gtest_brief=1 >"$log" 2>&1 || status=$?
else
    i=0
    pids=""
    while [ "$i" -lt "$shards" ]; do
        GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$@" --gtest_brief=1 >"$log.$i" 2>&1 &
        pids="$pids $!"
        i=$((i + 1))
    done
    for pid in $pids; do
        wait "$pid" || status=$?
    done
fi
# A shard's counts are its log's last summary lines (a test that runs the binary again in a
# child writes the child's summary into the same log, before them).
count() { sed -n "s/^\[  $1 *\] \([0-9]*\) tests\{0,1\}[.,].*/\1/p" "$2" | tail -n 1; }
passed=0
skipped=0
if [ "$shards" -gt 1 ]; then
    i=0
    : >"$log"
    while [ "$i" -lt "$shards" ]; do
        passed=$((passed + $(count PASSED "$log.$i") + 0))
        skipped=$((skipped + $(count SKIPPED "$log.$i") + 0))
        echo "== shard $i of $shards" >>"$log"
        cat "$log.$i" >>"$log" && rm -f "$log.$i"
        i=$((i + 1))
    done
else
    passed=$(($(count PASSED "$log") + 0))
    skipped=$(($(count SKIPPED "$log") + 0))
fi
[ "$skipped" -eq 0 ] && skipped=""
if [ "$status" -eq 0 ]; then
    echo "$line${passed:-0} passed${skipped:+, $skipped skipped} ($(($(date +%s) - start)) s)"
else
    echo "${line}FAILED (exit status $status); its output, also in $log:"
    cat "$log"
    exit "$status"
fi
