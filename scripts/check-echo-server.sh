#!/usr/bin/env bash
# check-echo-server.sh — smoke test of the echo_server program as a user runs it.
#
# Usage: check-echo-server.sh [SERVER]   (default: build/lesson4/echo_server)
# Starts the server on a free port, echoes a line through bash's /dev/tcp,
# stops it with SIGINT and checks that it exits 0 with its one-line summary
# (SUMMARY, an extended regex, for a program whose summary reads otherwise).
set -euo pipefail
server=${1:-build/lesson4/echo_server}
out=$(mktemp)
trap 'rm -f "$out"; kill "$pid" 2>/dev/null || true' EXIT

"$server" --port 0 --quiet >"$out" 2>&1 &
pid=$!
# Wait (at most 5 s) for the line that says which port the kernel picked.
for _ in $(seq 50); do
    grep -q 'listening on' "$out" && break
    sleep 0.1
done
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
[ -n "$port" ] || { echo "check-echo-server: no 'listening on' line:" >&2; cat "$out" >&2; exit 1; }

exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'hello, fibers\n' >&3
IFS= read -r -t 5 reply <&3
exec 3>&-
[ "$reply" = "hello, fibers" ] || { echo "check-echo-server: echoed '$reply'" >&2; exit 1; }

kill -INT "$pid"
status=0
wait "$pid" || status=$?
cat "$out"
grep -Eq "${SUMMARY:-SIGINT: served 1 connections, echoed 14 bytes}" "$out" ||
    { echo "check-echo-server: no summary line" >&2; exit 1; }
[ "$status" -eq 0 ] || { echo "check-echo-server: exit status $status" >&2; exit 1; }
echo "check-echo-server: echoed a line on port $port, stopped on SIGINT, exit 0"
