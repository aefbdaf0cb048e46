# bench-lib.sh — what bench-echo.sh, bench-slow.sh and bench-cluster.sh share; sourced, not run.

# The value of key $2 in RESULT line $1.
field() { awk -v key="$2" '{ for (i = 1; i <= NF; i++) if (index($i, key "=") == 1) print substr($i, length(key) + 2) }' <<<"$1"; }

# "median min max" of the numbers given.
summarize() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'; }

# The numbers given as "median (min-max)", each printed with format $1 ("%.2f").
median_range() {
    local format=$1 median min max
    shift
    read -r median min max <<<"$(summarize "$@")"
    # shellcheck disable=SC2059  # the format is the caller's
    printf "$format ($format-$format)" "$median" "$min" "$max"
}

# The per-round ratios of the numbers in list $1 over those in list $2 (both in
# round order), one a line. A machine that drifts between rounds moves both
# figures of a round alike, and their ratio stays.
round_ratios() {
    awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " ");
        for (i = 1; i <= n; i++) printf "%.4f\n", (y[i] > 0 ? x[i] / y[i] : 0) }'
}

# The port of the "listening on ADDR:PORT" line a server writes to file $1, once it has
# written it (at most 5 s); empty if it has not.
server_port() {
    local port=""
    for _ in $(seq 100); do
        port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$1")
        [ -n "$port" ] && break
        sleep 0.05
    done
    echo "$port"
}
