#!/usr/bin/env bash
# bench-slow.sh — lesson 8: what one client's blocking work does to every other client.
#
# Usage: bench-slow.sh [STAGE_DIR]   (default build/lesson8; SECONDS_EACH=N a run, default 3;
#                                     ROUNDS=N, default 5, but 1 when SECONDS_EACH is below 3:
#                                     a short run, as CI's, is a smoke test, not a measurement)
#
# Each round runs STAGE_DIR/slow_server three times: with no slow client (the baseline),
# with the blocking work inline (--inline), and on a pool, the three taking turns at
# going first. One client asks for "SLOW 20" (20 ms of blocking work) over and over,
# while STAGE_DIR/echo_load's 100 connections make 64-byte round trips and report their
# rate and p99. The server runs on CPU 0, the clients on the last CPU, as in
# bench-echo.sh. Prints a line per run, then a table of medians with min-max over the
# rounds, each mode's rps over the baseline's of the same round (the median and
# min-max of those per-round ratios: this VM's rate drifts between runs, twice over at
# times, and a ratio within a round travels better), and a RESULT line per mode;
# fails if echo_load saw a wrong byte.
set -euo pipefail
export LC_ALL=C  # a "." in numbers, whatever the locale
stage=${1:-build/lesson8}
seconds=${SECONDS_EACH:-3}
default_rounds=5
[ "$seconds" -ge 3 ] || default_rounds=1
rounds=${ROUNDS:-$default_rounds}
last_cpu=$(($(nproc) - 1))
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

modes=(no-slow inline offload)
declare -A flags=([no-slow]="" [inline]="--inline" [offload]="")
declare -A rps p50 p99 slow_done

# One run of mode $1: the server, a slow client unless the mode is no-slow, echo_load.
run() {
    local mode=$1
    # Emptied first: the background shell may open the file only after server_port's
    # first look, which must not find the previous run's port.
    : >"$work/server.out"
    taskset -c 0 "$stage/slow_server" --port 0 ${flags[$mode]} >"$work/server.out" &
    local server=$!
    local port
    port=$(server_port "$work/server.out")
    # The slow client: "SLOW 20", wait for its echo, again, until killed.
    local slow=""
    if [ "$mode" != no-slow ]; then
        taskset -c "$last_cpu" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port
            while printf 'SLOW 20\n' >&3 && read -r -u 3 _; do :; done" &
        slow=$!
    fi
    taskset -c "$last_cpu" "$stage/echo_load" --port "$port" --conns 100 --size 64 \
        --seconds "$seconds" >"$work/load.out"
    [ -n "$slow" ] && kill "$slow" 2>/dev/null || true
    kill -INT "$server"
    wait "$server" || true
    local result finished
    result=$(grep '^RESULT name=echo ' "$work/load.out")
    if [ "$(field "$result" mismatches)" != 0 ] || [ "$(field "$result" errors)" != 0 ]; then
        echo "bench-slow: echo_load saw a wrong byte or a failure with $mode" >&2
        exit 1
    fi
    finished=$(sed -n 's/.*, \([0-9]*\) slow requests.*/\1/p' "$work/server.out")
    rps[$mode]+=" $(field "$result" rps)"
    p50[$mode]+=" $(field "$result" p50_us)"
    p99[$mode]+=" $(field "$result" p99_us)"
    slow_done[$mode]+=" ${finished:-0}"
    printf '  round %d  %-8s %10s rps  p50 %8s us  p99 %8s us  %4s slow done\n' $((round + 1)) "$mode" \
        "$(field "$result" rps)" "$(field "$result" p50_us)" "$(field "$result" p99_us)" "${finished:-0}"
}

echo "bench-slow: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores, $(uname -r)"
echo "100 clients' 64-byte round trips while one client asks for 20 ms of blocking work," \
    "$rounds rounds of ${seconds} s a mode"
for ((round = 0; round < rounds; round++)); do
    # Round r starts with mode r (mod 3): the order rotates.
    for ((turn = 0; turn < ${#modes[@]}; turn++)); do run "${modes[(round + turn) % ${#modes[@]}]}"; done
done

echo
printf '%-8s %-26s %9s %-22s %9s %-20s\n' "work" "rps median (min-max)" "p50 us" "p99 us median (min-max)" \
    "slow done" "rps / no-slow"
for mode in "${modes[@]}"; do
    read -r rps_median rps_min rps_max <<<"$(summarize ${rps[$mode]})"
    read -r p50_median _ <<<"$(summarize ${p50[$mode]})"
    read -r p99_median p99_min p99_max <<<"$(summarize ${p99[$mode]})"
    read -r done_median _ <<<"$(summarize ${slow_done[$mode]})"
    read -r ratio ratio_min ratio_max <<<"$(summarize $(round_ratios "${rps[$mode]}" "${rps[no-slow]}"))"
    printf '%-8s %-26s %9.0f %-22s %9.0f %-20s\n' "$mode" "$(median_range '%.0f' ${rps[$mode]})" "$p50_median" \
        "$(median_range '%.0f' ${p99[$mode]})" "$done_median" "$(printf '%.3f (%.3f-%.3f)' "$ratio" "$ratio_min" "$ratio_max")"
    # The keys CI and scripts read come first, as before rounds: rps, p50_us, p99_us, slow_requests.
    printf 'RESULT name=slow_request mode=%s rps=%.0f p50_us=%.0f p99_us=%.0f slow_requests=%.0f' \
        "$mode" "$rps_median" "$p50_median" "$p99_median" "$done_median" >>"$work/results"
    printf ' rps_min=%.0f rps_max=%.0f p99_min=%.0f p99_max=%.0f over_no_slow=%.3f over_no_slow_min=%.3f over_no_slow_max=%.3f runs=%d\n' \
        "$rps_min" "$rps_max" "$p99_min" "$p99_max" "$ratio" "$ratio_min" "$ratio_max" "$rounds" >>"$work/results"
done
echo
cat "$work/results"
