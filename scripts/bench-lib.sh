# bench-lib.sh — what bench-slow.sh and bench-cluster.sh share; sourced, not run.

# The value of key $2 in RESULT line $1.
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

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
