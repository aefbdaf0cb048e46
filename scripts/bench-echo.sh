#!/usr/bin/env bash
# bench-echo.sh — lessons 4, 5, 10 and 11: the echo servers side by side under echo_load.
#
# Usage: bench-echo.sh BUILD_DIR        (make bench-echo-lessonN runs it on build/lessonN/)
#        SERVERS="fiber" bench-echo.sh build/lesson5   (only some of the servers below)
#        ROUNDS=1 bench-echo.sh build/lesson5          (fewer rounds than the default 5)
#        CONFIGS="1 64,100 16384" bench-echo.sh ...    (only some of the configurations)
#        SECONDS_EACH=1 bench-echo.sh ...              (each run's load lasts 1 s, not 2)
#        PIN=0 bench-echo.sh build/lesson5             (let the kernel place the processes)
#
# How long: 5 rounds of every configuration take about 100 s on stage 4,
# 3.5 min on stages 5 to 9, 5 min on stage 10 and 9 min on stage 11 (nine
# servers); ROUNDS=3 takes three fifths of that. CI runs one round of 1 s.
#
# For each configuration (connections x message size, plus idle connections
# for some), each round runs every server once under a 2-second echo_load, the
# servers taking turns at going first, so that a machine drifting during the
# run hits them all alike. It prints a table of medians (with min-max), each
# server's rps as a ratio to threads' and to epoll_loop's in the same round
# (the median of those per-round ratios), and RESULT lines for scripts, and
# fails if echo_load saw a wrong byte, a failed connection or a failure exit:
# at once if echo_load printed no figures, else after the tables, in which
# each run that went wrong is counted in its row's "bad" column.
#
# Every server runs on the same CPUs, all those this script may use but the
# last, and echo_load on the last one (taskset), so that each server meets the
# load on equal terms. Left to itself, the kernel places a server and its
# client on one CPU in some runs and on two in others, whichever the server,
# and may move them during a run. On a virtual machine that choice decides a
# 1-connection row: there, each round trip wakes the server and then the
# client, and a wake-up on a CPU that was idle costs tens of microseconds, so
# a round trip on one CPU is about four times faster than across two (lesson
# 4's README has the numbers). The row then measured the placement, not the
# server.
#
# A server that prints "N interest changes" when it stops (lesson 6's
# echo_server in its waiter line, echo_epoll in its summary) gets a ctl/msg
# figure: its epoll_ctl calls over the whole run, connecting included, per
# message echo_load counted. "-" for a server that does not say.
#
# Lesson 11's rungs (the uring-* backends of echo_server) run with
# FIB_URING_STATS=1, and their ring prints "fib: ring NAME: N io_uring_enter
# calls, ..." on stderr when it goes: that makes the enter/msg figure, the
# io_uring_enter calls over the whole run per message. "-" for a server with
# no ring (one whose ring the kernel refused falls back to epoll, says so on
# stderr, and gets "-" too).
#
# Every server also gets two costs. CPU s/M: the user plus system time of the
# whole server process (utime + stime of /proc/PID/stat, which sum every
# thread of the process, read just before it is stopped) per million
# messages. io_uring's iou-wrk-* workers, when the kernel starts any, are
# threads of the server process (ps -L -p PID lists them), so their time is
# in it; on the kernels tried, an echo server on sockets started none.
# RSS/conn, in configurations with idle connections: the server's peak
# resident memory during the run (VmHWM) less its VmRSS before echo_load
# connected, over every connection echo_load opened (active and idle).
set -euo pipefail
export LC_ALL=C  # a "." in numbers, whatever the locale
build=${1:?usage: bench-echo.sh BUILD_DIR}
build=${build%/}

# The servers: a name, then the command that starts one on a free port. A
# server that prints "listening on ADDR:PORT" and stops on SIGTERM fits here;
# later lessons add theirs as one more line. "fiber" is lesson 4's echo server
# on poll; "epoll" (lesson 5) the same server on epoll, run only when this
# build's echo_server has that backend; "epoll_loop" (lesson 5) the same
# service as one hand-written epoll loop, run only when this build has it;
# "coroutine" (lesson 10) the same server with a C++20 task per client instead
# of a fiber, on the same Waiter and epoll. The last five before epoll_loop
# are lesson 11's ablation, all one program, completion_echo, whose clients
# each own their read buffer (lesson 4's server lends one buffer to all, which
# only a readiness read allows): "own-epoll" on the course's epoll Waiter,
# then one rung each: the ring as a poller only; fib::io's reads as
# operations, one io_uring_enter each; the operations batched into the
# Waiter's one enter per turn; and that with SINGLE_ISSUER and DEFER_TASKRUN
# ("uring"); then "uring-bufs", the same with no buffer per client (receives
# take one of a pool of 256 provided buffers, 16 KiB each, when data comes)
# and the connections taken from one multishot accept.
server_table="
fiber       $build/echo_server --port 0 --quiet --backend poll
epoll       $build/echo_server --port 0 --quiet --backend epoll
own-epoll   $build/completion_echo --port 0 --quiet --backend epoll
uring-poll  $build/completion_echo --port 0 --quiet --backend uring-poll
uring-ops   $build/completion_echo --port 0 --quiet --backend uring-ops
uring-batch $build/completion_echo --port 0 --quiet --backend uring-batch
uring       $build/completion_echo --port 0 --quiet --backend uring
uring-bufs  $build/completion_echo --port 0 --quiet --backend uring --buffers 256 --multishot-accept
coroutine   $build/co_echo_server --port 0 --quiet --backend epoll
epoll_loop  $build/echo_epoll --port 0 --quiet
threads     $build/echo_threads --port 0 --quiet
"
# Active connections, message bytes and, optionally, idle connections held
# open beside them. The idle set shows what each way of waiting pays for fds
# that have nothing to say: poll passes and scans them all on every call.
configs=("1 64" "100 64" "1000 64" "100 16384" "100 64 10000")
[ -z "${CONFIGS:-}" ] || IFS=, read -r -a configs <<<"$CONFIGS"
# Only these run configurations with idle connections: a thread per idle
# connection would be 10,000 threads.
idle_servers=" fiber epoll own-epoll uring-poll uring-ops uring-batch uring uring-bufs coroutine epoll_loop "
rounds=${ROUNDS:-5}
seconds=${SECONDS_EACH:-2}
# The ratio columns divide by these servers' rps, when they run: threads, the
# design fibers replace, and epoll_loop, the same service without fibers; and,
# when lesson 11's rungs run, own-epoll, the rung below them all.
baselines=(threads epoll_loop)

fail() {
    echo "bench-echo: $*" >&2
    exit 1
}

declare -A command
all_servers=()
while read -r name rest; do
    [ -n "$name" ] || continue
    backend=$(sed -n 's/.*--backend \([a-z-]*\).*/\1/p' <<<"$rest")
    if [ -n "$backend" ] && [ -x "$build/echo_server" ] &&
        ! "$build/echo_server" --help | grep -Eq "^Backends in this build:.* $backend( |$)"; then
        continue  # an earlier stage's build: no such backend yet
    fi
    read -r program _ <<<"$rest"
    if [ ! -x "$program" ] && [ -x "$build/echo_server" ]; then
        continue  # the build is there but has no such program yet: an earlier stage's
    fi
    command[$name]=$rest
    all_servers+=("$name")
done <<<"$server_table"
servers_wanted=${SERVERS:-${all_servers[*]}}
read -r -a servers <<<"${servers_wanted//,/ }"  # "fiber threads" or "fiber,threads"
[[ " ${servers[*]} " != *" own-epoll "* ]] || baselines+=(own-epoll)

for name in "${servers[@]}"; do
    [ -n "${command[$name]:-}" ] || fail "unknown server '$name' (known: ${all_servers[*]})"
    read -r program _ <<<"${command[$name]}"
    [ -x "$program" ] || fail "$program is missing: build it first (make bench-echo-lessonN does)"
done
[ -x "$build/echo_load" ] || fail "$build/echo_load is missing: build it first (make bench-echo-lessonN does)"

# Each connection is an fd in echo_load and another in the server: skip a
# configuration that this machine's hard limit on open fds cannot hold.
fd_limit=$(ulimit -Hn)
runnable=()
for config in "${configs[@]}"; do
    read -r conns _ idle <<<"$config"
    if [ "$fd_limit" != unlimited ] && ((conns + ${idle:-0} + 16 > fd_limit)); then
        echo "bench-echo: skipping \"$config\": $((conns + ${idle:-0})) connections, ulimit -Hn is $fd_limit" >&2
        continue
    fi
    runnable+=("$config")
done
configs=("${runnable[@]}")

# The CPUs this script may use, one number each: "0-2,5" -> "0 1 2 5".
usable_cpus() {
    local list part
    list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
    IFS=, read -r -a parts <<<"$list"
    for part in "${parts[@]}"; do
        if [[ "$part" == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}
server_on=()
load_on=()
placement="wherever the kernel puts them (PIN=0)"
if [ "${PIN:-1}" != 0 ]; then
    mapfile -t cpus < <(usable_cpus)
    if [ "${#cpus[@]}" -lt 2 ] || ! command -v taskset >/dev/null; then
        placement="wherever the kernel puts them (pinning needs 2 CPUs and taskset)"
    else
        server_cpus=$(IFS=,; echo "${cpus[*]:0:${#cpus[@]}-1}")
        load_cpu=${cpus[-1]}
        server_on=(taskset -c "$server_cpus")
        load_on=(taskset -c "$load_cpu")
        placement="servers on CPU $server_cpus, echo_load on CPU $load_cpu"
    fi
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# Starts server $1; sets server_pid and server_port. Waits at most 5 s for its port.
start_server() {
    # Emptied first: the background shell may open the file only after the
    # first look below, which must not find the previous server's port.
    : >"$work/server.out"
    FIB_URING_STATS=1 "${server_on[@]}" ${command[$1]} >"$work/server.out" 2>"$work/server.err" &
    server_pid=$!
    server_port=""
    for _ in $(seq 50); do
        server_port=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$work/server.out")
        [ -n "$server_port" ] && return
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$work/server.out" "$work/server.err" >&2
    fail "$1 did not say which port it listens on"
}

# SIGTERM, then at most 10 s for a clean exit 0.
stop_server() {
    kill -TERM "$server_pid"
    for _ in $(seq 100); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    local status=0
    kill -0 "$server_pid" 2>/dev/null && { kill -KILL "$server_pid"; status=137; }
    wait "$server_pid" || status=$?
    server_pid=""
    [ "$status" -eq 0 ] || { cat "$work/server.out" "$work/server.err" >&2; fail "$1 exited with status $status after SIGTERM"; }
}

# The interest changes the server that just stopped reported, if it did.
interest_changes() { sed -n 's/.*[ ,]\([0-9][0-9]*\) interest changes.*/\1/p' "$work/server.out" | tail -n 1; }
# The io_uring_enter calls its ring reported (FIB_URING_STATS=1), if it had one.
ring_enters() { sed -n 's/^fib: ring [^ ]*: \([0-9][0-9]*\) io_uring_enter calls.*/\1/p' "$work/server.err" | tail -n 1; }

# The running server's CPU time so far, in seconds: utime + stime, fields 14
# and 15 of /proc/PID/stat (counted from the first, after the ")" that ends
# the command name), in clock ticks. They cover every thread of the process,
# those that have ended too, io_uring's iou-wrk-* workers among them.
clock_ticks=$(getconf CLK_TCK)
server_cpu_seconds() {
    local stat
    stat=$(<"/proc/$server_pid/stat")
    awk -v ticks="$clock_ticks" '{ printf "%.2f", ($12 + $13) / ticks }' <<<"${stat##*) }"
}
# A line of /proc/PID/status in KiB: VmRSS (resident now) or VmHWM (its peak).
server_kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$server_pid/status"; }

# field (a RESULT line's value) and summarize ("median min max").
# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

# The median, min and max over the rounds of one server's rps over another's in
# the same round; $1 and $2 list their rps in round order. A machine that drifts
# between rounds (this VM does, by tens of percent) moves both servers of a round
# alike, and their ratio stays; a ratio of the two medians would mix rounds.
paired_ratio() {
    local median min max
    read -r median min max <<<"$(summarize $(round_ratios "$1" "$2"))"
    printf '%.2f %.2f %.2f' "$median" "$min" "$max"
}

# The servers that run configuration $1 (conns size [idle]), in the order wanted.
servers_for() {
    local idle name
    read -r _ _ idle <<<"$1"
    for name in "${servers[@]}"; do
        if [ "${idle:-0}" -eq 0 ] || [[ "$idle_servers" == *" $name "* ]]; then echo "$name"; fi
    done
}

echo "bench-echo: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores, $(uname -r)"
echo "bench-echo: servers: ${servers[*]}; $rounds rounds of ${seconds} s per server and configuration"
echo "bench-echo: $placement"
# $1 (a count over the run) per message of the run that just ended, with format $2.
per_message() { awk -v n="$1" -v m="$messages" -v f="$2" 'BEGIN { printf f, (m > 0 ? n / m : 0) }'; }

started=$(date +%s.%N)
declare -A rps p50 p99 ctl enters cpu rss bad
problems=()
for config in "${configs[@]}"; do
    read -r conns size idle <<<"$config"
    idle=${idle:-0}
    key=$conns/$size/$idle
    mapfile -t config_servers < <(servers_for "$config")
    for ((round = 0; round < rounds; round++)); do
        # Round r starts with server r (mod the number of servers): the order rotates.
        for ((turn = 0; turn < ${#config_servers[@]}; turn++)); do
            name=${config_servers[(round + turn) % ${#config_servers[@]}]}
            start_server "$name"
            rss_before=$(server_kib VmRSS)
            status=0
            "${load_on[@]}" "$build/echo_load" --port "$server_port" --conns "$conns" --size "$size" --idle "$idle" \
                --seconds "$seconds" >"$work/load.out" 2>&1 || status=$?
            result=$(grep '^RESULT name=echo ' "$work/load.out" || true)
            if [ -z "$result" ]; then
                cat "$work/load.out" >&2
                fail "echo_load against $name (conns=$conns size=$size idle=$idle) exited $status and printed" \
                    "no figures (its output is above)"
            fi
            wrong=0
            if [ "$status" -ne 0 ] || [ "$(field "$result" mismatches)" != 0 ] ||
                [ "$(field "$result" errors)" != 0 ] || [ "$(field "$result" connect_errors)" != 0 ]; then
                wrong=1
                sed 's/^/    /' "$work/load.out" >&2
                problems+=("echo_load against $name (conns=$conns size=$size idle=$idle, round $((round + 1))) exited $status with $(field "$result" mismatches) mismatches, $(field "$result" errors) failed connections, $(field "$result" connect_errors) connect errors")
            fi
            # Read while the server still runs: its CPU time, and its peak RSS.
            cpu_seconds=$(server_cpu_seconds)
            rss_peak=$(server_kib VmHWM)
            stop_server "$name"
            messages=$(field "$result" messages)
            changes=$(interest_changes)
            ctl_per_msg=-
            [ -z "$changes" ] || ctl_per_msg=$(per_message "$changes" %.4f)
            ring=$(ring_enters)
            enter_per_msg=-
            [ -z "$ring" ] || enter_per_msg=$(per_message "$ring" %.4f)
            cpu_per_million=$(per_message "$(awk -v c="$cpu_seconds" 'BEGIN { print c * 1e6 }')" %.2f)
            rss_per_conn=-
            [ "$idle" -eq 0 ] || rss_per_conn=$(awk -v a="$rss_before" -v b="$rss_peak" -v n=$((conns + idle)) \
                'BEGIN { printf "%.0f", (b - a) * 1024 / n }')
            rps[$key/$name]+=" $(field "$result" rps)"
            p50[$key/$name]+=" $(field "$result" p50_us)"
            p99[$key/$name]+=" $(field "$result" p99_us)"
            ctl[$key/$name]+=" $ctl_per_msg"
            enters[$key/$name]+=" $enter_per_msg"
            cpu[$key/$name]+=" $cpu_per_million"
            rss[$key/$name]+=" $rss_per_conn"
            bad[$key/$name]=$((${bad[$key/$name]:-0} + wrong))
            printf '  conns=%-5s size=%-6s idle=%-5s round %d  %-11s %8s rps  p99 %8s us  ctl/msg %s  enter/msg %s  CPU s/M %s%s\n' \
                "$conns" "$size" "$idle" $((round + 1)) "$name" "$(field "$result" rps)" \
                "$(field "$result" p99_us)" "$ctl_per_msg" "$enter_per_msg" "$cpu_per_million" \
                "$([ "$rss_per_conn" = - ] || echo "  RSS $rss_per_conn B/conn")$([ "$wrong" -eq 0 ] || echo "  WRONG")"
        done
    done
done

# The median of the figures in $1, printed with format $2, or "-" if any run had none.
median_or_dash() {
    local median
    if [[ " $1 " == *" - "* ]]; then echo -; return; fi
    read -r median _ <<<"$(summarize $1)"
    # shellcheck disable=SC2059  # the format is the caller's
    printf "$2" "$median"
}

ratio_baselines=()
for name in "${baselines[@]}"; do
    [[ " ${servers[*]} " == *" $name "* ]] && ratio_baselines+=("$name")
done
# Two tables with the same rows: what each server sustains, then what it costs.
echo
printf '%-29s %-11s %-26s' "config" "server" "rps median (min-max)"
for base in "${ratio_baselines[@]}"; do printf ' %-18s' "rps / $base"; done
echo
results=()
idle_lines=()
for config in "${configs[@]}"; do
    read -r conns size idle <<<"$config"
    idle=${idle:-0}
    key=$conns/$size/$idle
    label="conns=$conns size=$size"
    [ "$idle" -eq 0 ] || label+=" idle=$idle"
    ratios=""
    kept=""
    kept_text=""
    for name in $(servers_for "$config"); do
        read -r rps_median rps_min rps_max <<<"$(summarize ${rps[$key/$name]})"
        ratio_cells=""
        for base in "${ratio_baselines[@]}"; do
            ratio=-
            if [ -n "${rps[$key/$base]:-}" ]; then
                read -r ratio ratio_min ratio_max <<<"$(paired_ratio "${rps[$key/$name]}" "${rps[$key/$base]}")"
                [ "$name" = "$base" ] ||
                    ratios+=" ${name}_over_$base=$ratio ${name}_over_${base}_min=$ratio_min ${name}_over_${base}_max=$ratio_max"
                ratio="$ratio ($ratio_min-$ratio_max)"
            fi
            ratio_cells+=$(printf ' %-18s' "$ratio")
        done
        # With idle connections: the share of its rps without them that the server keeps.
        if [ "$idle" -ne 0 ] && [ -n "${rps[$conns/$size/0/$name]:-}" ]; then
            read -r busy_rps _ <<<"$(summarize ${rps[$conns/$size/0/$name]})"
            share=$(awk -v a="$rps_median" -v b="$busy_rps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
            kept+=" ${name}_kept=$share"
            kept_text+=" $name $share,"
        fi
        printf '%-29s %-11s %-26s%s\n' "$label" "$name" \
            "$(printf '%.0f (%.0f-%.0f)' "$rps_median" "$rps_min" "$rps_max")" "$ratio_cells"
    done
    [ -z "$ratios" ] || results+=("RESULT name=echo_ratio conns=$conns size=$size idle=$idle${ratios}")
    if [ -n "$kept" ]; then
        results+=("RESULT name=echo_idle conns=$conns size=$size idle=$idle${kept}")
        idle_lines+=("with $idle idle connections, each server's share of its conns=$conns size=$size rps:${kept_text%,}")
    fi
done
echo
printf '%-29s %-11s %-9s %-24s %-9s %-9s %-9s %-10s %s\n' "config" "server" "p50 us" "p99 us median (min-max)" \
    "ctl/msg" "enter/msg" "CPU s/M" "RSS B/conn" "bad runs"
for config in "${configs[@]}"; do
    read -r conns size idle <<<"$config"
    idle=${idle:-0}
    key=$conns/$size/$idle
    label="conns=$conns size=$size"
    [ "$idle" -eq 0 ] || label+=" idle=$idle"
    for name in $(servers_for "$config"); do
        read -r rps_median _ <<<"$(summarize ${rps[$key/$name]})"
        read -r p99_median p99_min p99_max <<<"$(summarize ${p99[$key/$name]})"
        p50_median=$(median_or_dash "${p50[$key/$name]}" %.1f)
        ctl_median=$(median_or_dash "${ctl[$key/$name]}" %.4f)
        enter_median=$(median_or_dash "${enters[$key/$name]}" %.4f)
        cpu_median=$(median_or_dash "${cpu[$key/$name]}" %.2f)
        rss_median=$(median_or_dash "${rss[$key/$name]}" %.0f)
        printf '%-29s %-11s %-9s %-24s %-9s %-9s %-9s %-10s %s\n' "$label" "$name" "$p50_median" \
            "$(printf '%.1f (%.1f-%.1f)' "$p99_median" "$p99_min" "$p99_max")" \
            "$ctl_median" "$enter_median" "$cpu_median" "$rss_median" "${bad[$key/$name]}/$rounds"
        results+=("$(printf 'RESULT name=echo server=%s conns=%s size=%s idle=%s rps=%.0f p50_us=%s p99_us=%.1f ctl_per_msg=%s enters_per_msg=%s cpu_s_per_million=%s rss_bytes_per_conn=%s bad_runs=%s runs=%s' \
            "$name" "$conns" "$size" "$idle" "$rps_median" "$p50_median" "$p99_median" "$ctl_median" "$enter_median" \
            "$cpu_median" "$rss_median" "${bad[$key/$name]}" "$rounds")")
    done
done
echo
echo "ctl/msg: epoll_ctl calls per message; enter/msg: io_uring_enter calls per message; CPU s/M: the server" \
    "process's CPU seconds (user + system, all its threads) per million messages; RSS B/conn: its peak RSS" \
    "less its RSS before echo_load connected, per connection opened (configurations with idle connections)"
echo
[ ${#idle_lines[@]} -eq 0 ] || { printf '%s\n' "${idle_lines[@]}"; echo; }
printf '%s\n' "${results[@]}"
echo "bench-echo: done in $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }') s"
if [ ${#problems[@]} -gt 0 ]; then
    printf 'bench-echo: %s\n' "${problems[@]}" >&2
    fail "${#problems[@]} runs went wrong (above; each is counted in its row's \"bad runs\"): their figures are not to be trusted"
fi
