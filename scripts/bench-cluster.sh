#!/usr/bin/env bash
# bench-cluster.sh — lesson 9: echo throughput with 1..N fiber managers, one per thread.
#
# Usage: bench-cluster.sh [STAGE_DIR]   (default build/lesson9; SECONDS_EACH=N, default 3;
#                                        WORK_US="0 50 200", THREADS="1 2" by default)
#
# For each per-read CPU cost (cluster_echo --work-us) and each thread count, runs
# STAGE_DIR/cluster_echo and STAGE_DIR/echo_load (100 connections, 64-byte round trips) on
# the same machine, unpinned, and prints: requests per second, p99, the speed-up over one
# thread at that cost, how the kernel spread the connections over the threads, and the CPU
# time the server and the client each spent per request (from /proc and bash's `time`).
# Fails if echo_load saw a wrong byte.
set -euo pipefail
stage=${1:-build/lesson9}
seconds=${SECONDS_EACH:-3}
work_list=${WORK_US:-0 50 200}
thread_list=${THREADS:-1 2}
ticks=$(getconf CLK_TCK)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
cpu_seconds() { awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat"; }

run() {
    local work_us=$1 threads=$2
    "$stage/cluster_echo" --port 0 --threads "$threads" --work-us "$work_us" >"$work/server.out" &
    local server=$!
    local port
    port=$(server_port "$work/server.out")
    local client_cpu
    client_cpu=$( { TIMEFORMAT='%3U %3S'; time "$stage/echo_load" --port "$port" --conns 100 --size 64 \
        --seconds "$seconds" >"$work/load.out"; } 2>&1 | awk '{ printf "%.3f", $1 + $2 }')
    local server_cpu
    server_cpu=$(cpu_seconds "$server")
    kill -INT "$server"
    wait "$server" || true
    local result
    result=$(grep '^RESULT name=echo ' "$work/load.out")
    if [ "$(field "$result" mismatches)" != 0 ] || [ "$(field "$result" errors)" != 0 ]; then
        echo "bench-cluster: echo_load saw a wrong byte or a failure" >&2
        exit 1
    fi
    local rps spread
    rps=$(field "$result" rps)
    [ "$threads" = 1 ] && base=$rps
    spread=$(sed -n 's/.*connections per thread: \([0-9 ]*\);.*/\1/p' "$work/server.out" | tr ' ' '/')
    local speedup server_us client_us
    speedup=$(awk -v r="$rps" -v b="$base" 'BEGIN { printf "%.2f", r / b }')
    server_us=$(awk -v c="$server_cpu" -v r="$rps" -v s="$seconds" 'BEGIN { printf "%.1f", c * 1e6 / (r * s) }')
    client_us=$(awk -v c="$client_cpu" -v r="$rps" -v s="$seconds" 'BEGIN { printf "%.1f", c * 1e6 / (r * s) }')
    printf '%8s %8s %10s %9s %8s %10s %12s %12s\n' "$work_us" "$threads" "$rps" "$(field "$result" p99_us)" \
        "${speedup}x" "$spread" "$server_us" "$client_us"
    echo "RESULT name=cluster_echo work_us=$work_us threads=$threads rps=$rps p99_us=$(field "$result" p99_us)" \
        "speedup=$speedup spread=$spread server_cpu_us=$server_us client_cpu_us=$client_us" >>"$work/results"
}

echo "cluster_echo, 100 connections of 64-byte round trips, ${seconds} s each, on $(nproc) CPUs"
printf '%8s %8s %10s %9s %8s %10s %12s %12s\n' "work us" "threads" "rps" "p99 us" "speedup" "spread" \
    "server us/r" "client us/r"
base=1
for work_us in $work_list; do
    for threads in $thread_list; do run "$work_us" "$threads"; done
done
cat "$work/results"
