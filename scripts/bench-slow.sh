#!/usr/bin/env bash
# bench-slow.sh — lesson 8: what one client's blocking work does to every other client.
#
# Usage: bench-slow.sh [STAGE_DIR]   (default build/lesson8; SECONDS_EACH=N, default 3)
#
# Runs STAGE_DIR/slow_server three times: with no slow client (the baseline), with
# the blocking work inline (--inline), and on a pool. One client asks for "SLOW 20" (20 ms of blocking work)
# over and over, while STAGE_DIR/echo_load's 100 connections make 64-byte round
# trips and report their rate and p99. The server runs on CPU 0, the clients on
# the last CPU, as in bench-echo.sh. Prints a table and a RESULT line per run;
# fails if echo_load saw a wrong byte.
set -euo pipefail
stage=${1:-build/lesson8}
seconds=${SECONDS_EACH:-3}
last_cpu=$(($(nproc) - 1))
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

# One run: the server with flags $2, a slow client unless $3 is "none", echo_load.
run() {
    local mode=$1 flags=$2 slow_client=${3:-}
    taskset -c 0 "$stage/slow_server" --port 0 $flags >"$work/server.out" &
    local server=$!
    local port
    port=$(server_port "$work/server.out")
    # The slow client: "SLOW 20", wait for its echo, again, until killed.
    local slow=""
    if [ "$slow_client" != none ]; then
        taskset -c "$last_cpu" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port
            while printf 'SLOW 20\n' >&3 && read -r -u 3 _; do :; done" &
        slow=$!
    fi
    taskset -c "$last_cpu" "$stage/echo_load" --port "$port" --conns 100 --size 64 \
        --seconds "$seconds" >"$work/load.out"
    [ -n "$slow" ] && kill "$slow" 2>/dev/null || true
    kill -INT "$server"
    wait "$server" || true
    local result
    result=$(grep '^RESULT name=echo ' "$work/load.out")
    if [ "$(field "$result" mismatches)" != 0 ] || [ "$(field "$result" errors)" != 0 ]; then
        echo "bench-slow: echo_load saw a wrong byte or a failure with $mode" >&2
        exit 1
    fi
    local slow_done
    slow_done=$(sed -n 's/.*, \([0-9]*\) slow requests.*/\1/p' "$work/server.out")
    printf '%-8s %12s %12s %12s %10s\n' "$mode" "$(field "$result" rps)" "$(field "$result" p50_us)" \
        "$(field "$result" p99_us)" "$slow_done"
    echo "RESULT name=slow_request mode=$mode rps=$(field "$result" rps) p50_us=$(field "$result" p50_us)" \
        "p99_us=$(field "$result" p99_us) slow_requests=$slow_done" >>"$work/results"
}

echo "100 clients' 64-byte round trips while one client asks for 20 ms of blocking work, ${seconds} s each"
printf '%-8s %12s %12s %12s %10s\n' "work" "rps" "p50 us" "p99 us" "slow done"
run no-slow "" none
run inline --inline
run offload ""
cat "$work/results"
