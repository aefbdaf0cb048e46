#!/usr/bin/env bash
# bench-rounds.sh — make bench-lessonN in rounds: ROUNDS=3 make bench-lesson10.
#
# Usage: bench-rounds.sh ROUNDS BENCH_PROGRAM [SECTION...]
#
# Runs a stage's bench program ROUNDS times, one after another, and prints each
# figure's medians over the rounds (their median and min-max) and each ratio the
# program computed within a run (the median and min-max of the rounds' ratios). One
# run's medians of 7 repetitions are steady within that run, but this VM drifts by
# tens of percent between runs, and a ratio with it: the range over rounds is the
# figure to state, not one run's number. Prints a RESULT line per figure.
set -euo pipefail
export LC_ALL=C  # a "." in numbers, whatever the locale
rounds=${1:?usage: bench-rounds.sh ROUNDS BENCH_PROGRAM [SECTION...]}
program=${2:?usage: bench-rounds.sh ROUNDS BENCH_PROGRAM [SECTION...]}
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for ((round = 1; round <= rounds; round++)); do
    echo "bench-rounds: round $round of $rounds: $program $*"
    "$program" "$@" >"$work/round$round.out"
    # Each round's own table, for a look at one run.
    sed -n '/^figure /,/^$/p' "$work/round$round.out"
    grep '^RESULT ' "$work/round$round.out" | sed "s/^RESULT /ROUND $round /" >>"$work/all"
done

# Per figure and key (the unit's median and each ratio key), the values of the rounds.
awk -v rounds="$rounds" '
    {
        name = ""; unit = ""
        for (i = 3; i <= NF; i++) {
            split($i, kv, "=")
            if (kv[1] == "name") { name = kv[2]; continue }
            if (kv[1] == "min" || kv[1] == "max" || kv[1] == "reps") continue
            if (unit == "") unit = kv[1]
            if (!((name, kv[1]) in seen)) { seen[name, kv[1]] = 1; keys[name] = keys[name] " " kv[1] }
            values[name, kv[1]] = values[name, kv[1]] " " kv[2]
        }
        if (!(name in order)) { order[name] = ++count; names[count] = name }
    }
    function stats(list,    v, n, i, j, t) {
        n = split(list, v, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        median = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        low = v[1]; high = v[n]
    }
    END {
        printf "\nover %d rounds: each figure'"'"'s median of the rounds'"'"' medians (their min-max), and each ratio of a run (min-max over the rounds)\n", rounds
        for (c = 1; c <= count; c++) {
            name = names[c]; n = split(keys[name], k, " ")
            line = ""; result = "RESULT name=" name
            for (i = 1; i <= n; i++) {
                stats(values[name, k[i]])
                line = line sprintf("  %s %.2f (%.2f-%.2f)", k[i], median, low, high)
                result = result sprintf(" %s=%.2f %s_min=%.2f %s_max=%.2f", k[i], median, k[i], low, k[i], high)
            }
            printf "%-26s%s\n", name, line
            results[c] = result " rounds=" rounds
        }
        print ""
        for (c = 1; c <= count; c++) print results[c]
    }' "$work/all"
