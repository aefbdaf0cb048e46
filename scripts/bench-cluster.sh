#!/usr/bin/env bash
# bench-cluster.sh — lesson 9: echo throughput with 1..N fiber managers, one per thread.
#
# Usage: bench-cluster.sh [STAGE_DIR]   (default build/lesson9; SECONDS_EACH=N a run, default 3;
#                                        WORK_US="0 50 200", THREADS="1 2" by default;
#                                        ROUNDS=N, default 5, but 1 when SECONDS_EACH is below
#                                        3: a short run, as CI's, is a smoke test)
#
# For each per-read CPU cost (cluster_echo --work-us), each round runs STAGE_DIR/cluster_echo
# with each thread count, the counts taking turns at going first, against
# STAGE_DIR/echo_load (100 connections, 64-byte round trips) on the same machine, unpinned.
# Prints a line per run, then a table: requests per second (median, min-max over the rounds),
# p99, the speed-up over one thread at that cost (the median and min-max of the per-round
# ratios: this VM drifts between runs, and a ratio within a round travels better), how the
# kernel spread the connections over the threads in each round, and the CPU time the server
# and the client each spent per request (from /proc and bash's `time`). Fails if echo_load
# saw a wrong byte.
set -euo pipefail
export LC_ALL=C  # a "." in numbers, whatever the locale
stage=${1:-build/lesson9}
seconds=${SECONDS_EACH:-3}
work_list=${WORK_US:-0 50 200}
thread_list=${THREADS:-1 2}
default_rounds=5
[ "$seconds" -ge 3 ] || default_rounds=1
rounds=${ROUNDS:-$default_rounds}
ticks=$(getconf CLK_TCK)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
cpu_seconds() { awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat"; }

declare -A rps p99 spread server_us client_us

# One run: cost $1 per read, $2 threads.
run() {
    local work_us=$1 threads=$2 key=$1/$2
    # Emptied first: the background shell may open the file only after server_port's
    # first look, which must not find the previous run's port.
    : >"$work/server.out"
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
    local rate split
    rate=$(field "$result" rps)
    split=$(sed -n 's/.*connections per thread: \([0-9 ]*\);.*/\1/p' "$work/server.out" | tr ' ' '/')
    rps[$key]+=" $rate"
    p99[$key]+=" $(field "$result" p99_us)"
    spread[$key]+="${spread[$key]:+,}$split"
    server_us[$key]+=" $(awk -v c="$server_cpu" -v r="$rate" -v s="$seconds" 'BEGIN { printf "%.1f", c * 1e6 / (r * s) }')"
    client_us[$key]+=" $(awk -v c="$client_cpu" -v r="$rate" -v s="$seconds" 'BEGIN { printf "%.1f", c * 1e6 / (r * s) }')"
    printf '  work_us=%-4s round %d  threads=%-3s %8s rps  p99 %8s us  spread %s\n' "$work_us" $((round + 1)) \
        "$threads" "$rate" "$(field "$result" p99_us)" "$split"
}

read -r -a threads_each <<<"$thread_list"
echo "bench-cluster: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores, $(uname -r)"
echo "cluster_echo, 100 connections of 64-byte round trips, $rounds rounds of ${seconds} s a run"
for work_us in $work_list; do
    for ((round = 0; round < rounds; round++)); do
        # Round r starts with thread count r (mod their number): the order rotates.
        for ((turn = 0; turn < ${#threads_each[@]}; turn++)); do
            run "$work_us" "${threads_each[(round + turn) % ${#threads_each[@]}]}"
        done
    done
done

echo
printf '%8s %8s %-26s %9s %-20s %12s %12s  %s\n' "work us" "threads" "rps median (min-max)" "p99 us" \
    "speed-up (min-max)" "server us/r" "client us/r" "spread, each round"
for work_us in $work_list; do
    for threads in $thread_list; do
        key=$work_us/$threads
        read -r rps_median rps_min rps_max <<<"$(summarize ${rps[$key]})"
        read -r p99_median _ <<<"$(summarize ${p99[$key]})"
        read -r server_median _ <<<"$(summarize ${server_us[$key]})"
        read -r client_median _ <<<"$(summarize ${client_us[$key]})"
        # The speed-up over the first thread count's rps in the same round.
        read -r speedup speedup_min speedup_max <<<"$(summarize $(round_ratios "${rps[$key]}" \
            "${rps[$work_us/${threads_each[0]}]}"))"
        printf '%8s %8s %-26s %9.0f %-20s %12.1f %12.1f  %s\n' "$work_us" "$threads" \
            "$(median_range '%.0f' ${rps[$key]})" "$p99_median" \
            "$(printf '%.2fx (%.2f-%.2f)' "$speedup" "$speedup_min" "$speedup_max")" \
            "$server_median" "$client_median" "${spread[$key]}"
        # The keys CI and scripts read come first, as before rounds.
        printf 'RESULT name=cluster_echo work_us=%s threads=%s rps=%.0f p99_us=%.0f speedup=%.2f spread=%s' \
            "$work_us" "$threads" "$rps_median" "$p99_median" "$speedup" "${spread[$key]}" >>"$work/results"
        printf ' server_cpu_us=%.1f client_cpu_us=%.1f rps_min=%.0f rps_max=%.0f speedup_min=%.2f speedup_max=%.2f runs=%d\n' \
            "$server_median" "$client_median" "$rps_min" "$rps_max" "$speedup_min" "$speedup_max" "$rounds" >>"$work/results"
    done
done
echo
cat "$work/results"
