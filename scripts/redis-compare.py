#!/usr/bin/env python3
# redis-compare.py — lesson 13: kv_server and redis-server side by side, one session, every reply compared.
#
# Usage: scripts/redis-compare.py SERVER [--session FILE] [--server-args "ARGS"] [--run-with "COMMAND"]
#
# SERVER is the program under test (build/lesson13/kv_server), started as
# `SERVER --port Q --bind 127.0.0.1 --quiet`; the reference is redis-server, started beside it
# as `redis-server --port P --save '' --appendonly no --daemonize no --databases 1` in a
# temporary folder. Both ports are free ones the script finds. "--databases 1" makes Redis
# the server kv_server says it is (one database, so SELECT 1 is refused by both). To try the
# harness on Redis itself, give /usr/bin/redis-server as SERVER: a program of that name gets
# the reference's arguments instead of --quiet (--server-args overrides either).
#
# The session (lessons/13-redis/compare_session.txt) is played four ways, each compared:
# - through redis-cli, as one process reading the whole session on its stdin, with --no-raw.
#   Without a terminal redis-cli prints raw replies, where the integer 1, the string "1" and
#   an error's text all look alike; --no-raw prints `(integer) 1`, `"1"`, `(error) ...`,
#   `(nil)` and numbered array items, so a reply of the wrong type shows. One process keeps
#   one connection, so CLIENT SETNAME and HELLO act on the commands after them. Each command
#   is followed by an `ECHO <mark>` whose reply cuts the output into one piece per command.
# - as RESP over a socket, each command's reply read whole (reply_end below) and compared
#   byte for byte: the "same bytes" half.
# - pub/sub: `redis-cli subscribe ch` in the background, PUBLISH ch hello from a socket once
#   the subscription is confirmed; the subscriber's output compared.
# - BLPOP: `redis-cli blpop q 5` in the background, RPUSH q x from a socket once the server
#   has read the BLPOP (`ss` shows the bytes received and none left to read); the blocked
#   client's output compared.
# A difference fails the run unless DIFFERENCES (below) lists the command and says why; a
# listed difference that no longer differs is reported, so that the list stays honest. Both
# servers are stopped with SIGTERM whatever happens, and must exit with status 0 (under
# make SAN=1, an AddressSanitizer report at exit fails the run this way).
import argparse
import os
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from redis_tools import ensure_redis_tools  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SESSION = os.path.join(ROOT, "lessons", "13-redis", "compare_session.txt")
REFERENCE_ARGS = ["--save", "", "--appendonly", "no", "--daemonize", "no", "--databases", "1"]
# Every wait is bounded: a server's start (an ASan build starts slower), a reply, a client.
START_SECONDS = 10
REPLY_SECONDS = 10
# A server that died early makes every later reply differ: the first few say enough.
SHOWN_FAILURES = 20


class CompareError(Exception):
    pass


# ---- What may differ, and why ---------------------------------------------------------------
# A rule's pattern is matched (whole, ignoring case) against the session's line. A rule with no
# `same` function accepts any two replies; one with a `same` function accepts the two replies it
# finds alike (a tolerance). Replies are bytes: RESP from the socket, or redis-cli's text.
def numbers_within(tolerance):
    def same(reference, ours):
        numbers = re.compile(rb"-?\d+")
        if numbers.sub(b"N", reference) != numbers.sub(b"N", ours):
            return False
        pairs = zip(numbers.findall(reference), numbers.findall(ours))
        return all(abs(int(a) - int(b)) <= tolerance for a, b in pairs)
    return same


# HELLO's "id" is the connection's number: each server counts its own connections.
def same_but_hello_id(reference, ours):
    id_field = re.compile(rb'(\$2\r\nid\r\n:|"id"\n *\d+\) \(integer\) )\d+')
    return id_field.sub(rb"\1ID", reference) == id_field.sub(rb"\1ID", ours)


# KEYS lists a hash table's keys in its own order: compared as a multiset. A RESP array of
# bulk strings is its header and ($len, key) pairs; redis-cli's text is numbered lines.
def same_in_any_order(reference, ours):
    def elements(reply):
        if reply.startswith(b"*"):
            header, *rest = reply.split(b"\r\n")
            return [header] + sorted(zip(rest[0::2], rest[1::2]))
        return sorted(re.sub(rb"^ *\d+\) ", b"", line) for line in reply.split(b"\n"))
    return elements(reference) == elements(ours)


DIFFERENCES = [
    ("COMMAND COUNT", "kv_server counts its own command table, Redis its ~240 commands", None),
    ("COMMAND DOCS.*", "kv_server sends an empty array (no documentation), Redis every command's", None),
    ("INFO.*", "kv_server reports the few fields it has (its version, loading:0, the keyspace), Redis ~150", None),
    ("HELLO 3", "RESP3 is not spoken: kv_server refuses it (NOPROTO), as Redis refuses HELLO 4", None),
    ("HELLO( 2)?", "tolerance: the id field numbers connections, which each server counts its own way",
     same_but_hello_id),
    ("TTL .*", "tolerance: a second boundary may pass between EXPIRE and TTL (1 s)", numbers_within(1)),
    ("PTTL .*", "tolerance: milliseconds pass between PEXPIRE and PTTL (1000 ms)", numbers_within(1000)),
    ("KEYS .*", "tolerance: each server's hash table lists the keys in its own order", same_in_any_order),
]


def rule_for(line):
    for pattern, reason, same in DIFFERENCES:
        if re.fullmatch(pattern, line, re.IGNORECASE):
            return pattern, reason, same
    return None


class Tally:
    """The verdicts of one pass: identical, listed, tolerated, failed, and listed-but-same."""

    def __init__(self, name):
        self.name = name
        self.count = self.identical = 0
        self.listed, self.tolerated, self.failures, self.now_same = [], [], [], []

    def judge(self, line, reference, ours):
        self.count += 1
        rule = rule_for(line)
        if reference == ours:
            self.identical += 1
            if rule and rule[2] is None:
                self.now_same.append(f"{line} ({rule[1]})")
        elif rule and rule[2] is None:
            self.listed.append(line)
        elif rule and rule[2](reference, ours):
            self.tolerated.append(line)
        else:
            self.failures.append((f"{line} (outside the {rule[1]})" if rule else line, reference, ours))

    def report(self):
        def named(lines):
            return f" ({', '.join(lines)})" if lines else ""
        print(f"redis-compare: {self.name}: {self.count} commands, {self.identical} identical, "
              f"{len(self.listed)} listed differences{named(self.listed)}, "
              f"{len(self.tolerated)} within tolerance{named(self.tolerated)}")
        for line in self.now_same:
            print(f"redis-compare: {self.name}: listed difference no longer differs: {line}")
        for line, reference, ours in self.failures[:SHOWN_FAILURES]:
            print(f"redis-compare: {self.name}: DIFFERS: {line}\n    redis-server: {shown(reference)}\n"
                  f"    ours:         {shown(ours)}")
        if len(self.failures) > SHOWN_FAILURES:
            print(f"redis-compare: {self.name}: and {len(self.failures) - SHOWN_FAILURES} more commands differ")


def shown(reply, most=300):
    text = repr(reply)[2:-1]
    return text if len(text) <= most else text[:most] + "..."


# ---- The session ----------------------------------------------------------------------------
# redis-cli's own splitting (sdssplitargs): "..." with \xHH \n \r \t \b \a escapes, '...' with
# \' only; a closing quote must end the argument.
def split_args(line):
    escapes = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "a": "\a"}
    args, at = [], 0
    while True:
        while at < len(line) and line[at].isspace():
            at += 1
        if at == len(line):
            return [arg.encode("latin-1") for arg in args]
        current, quote = "", None
        while True:
            c = line[at] if at < len(line) else None
            if quote is None and (c is None or c.isspace()):
                break
            if quote and c is None:
                raise CompareError(f"unbalanced quotes in session line: {line}")
            if quote is None and c in "\"'":
                quote = c
            elif c == quote:
                if at + 1 < len(line) and not line[at + 1].isspace():
                    raise CompareError(f"a closing quote must end its argument: {line}")
                at += 1
                break
            elif quote == '"' and c == "\\" and re.match(r"x[0-9a-fA-F]{2}", line[at + 1:at + 4]):
                current += chr(int(line[at + 2:at + 4], 16))
                at += 3
            elif quote == '"' and c == "\\" and at + 1 < len(line):
                at += 1
                current += escapes.get(line[at], line[at])
            elif quote == "'" and c == "\\" and line[at + 1:at + 2] == "'":
                at += 1
                current += "'"
            else:
                current += c
            at += 1
        args.append(current)


def read_session(path):
    with open(path, encoding="latin-1") as session:
        lines = [line.strip() for line in session]
    return [(line, split_args(line)) for line in lines if line and not line.startswith("#")]


# ---- RESP over a socket ---------------------------------------------------------------------
def encode(args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in args)


# Where the reply that starts at `at` ends, or None while it is incomplete. RESP2, and the RESP3
# types Redis sends after HELLO 3: a line, a bulk ($ = !), or an aggregate of n (* ~ >) or n
# pairs (%) of replies.
def reply_end(data, at=0):
    line_end = data.find(b"\r\n", at)
    if line_end < 0:
        return None
    kind, after_line = data[at:at + 1], line_end + 2
    if kind in b"+-:_,#(":
        return after_line
    count = int(data[at + 1:line_end])
    if kind in b"$=!":
        end = after_line + count + 2 if count >= 0 else after_line
        return end if len(data) >= end else None
    if kind == b"%":
        count *= 2
    elif kind not in b"*~>":
        raise CompareError(f"not a RESP reply: {shown(data[at:])}")
    end = after_line
    for _ in range(max(count, 0)):
        end = reply_end(data, end)
        if end is None:
            return None
    return end


class Connection:
    def __init__(self, port):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=REPLY_SECONDS)
        self.pending = b""

    def call(self, args):
        self.socket.sendall(encode(args))
        while (end := reply_end(self.pending)) is None:
            try:
                data = self.socket.recv(65536)
            except TimeoutError:
                raise CompareError(f"no reply within {REPLY_SECONDS} s to {shown(encode(args))}") from None
            if not data:
                raise CompareError(f"the server closed the connection after {shown(encode(args))}")
            self.pending += data
        reply, self.pending = self.pending[:end], self.pending[end:]
        return reply

    def close(self):
        self.socket.close()


# ---- The servers ----------------------------------------------------------------------------
def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    # run_with: what runs the program, if not this machine (qemu-user, for make ARCH=aarch64).
    def __init__(self, name, command, folder, run_with=()):
        self.name, self.port = name, free_port()
        os.makedirs(folder)
        self.log_path = os.path.join(folder, "server.log")
        command = [*run_with, command[0], "--port", str(self.port), "--bind", "127.0.0.1"] + command[1:]
        if os.path.basename(command[0]) == "redis-server":
            command += ["--dir", folder]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        self.command = " ".join(shlex.quote(part) for part in command)

    # Called once the server is in the list that is stopped whatever happens.
    def wait_for_ping(self):
        command = self.command
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise CompareError(f"{self.name} exited with status {self.process.returncode} at start: "
                                   f"{command}{self.log_tail()}")
            try:
                connection = Connection(self.port)
                try:
                    if connection.call([b"PING"]) == b"+PONG\r\n":
                        return
                finally:
                    connection.close()
            except OSError:
                pass
            time.sleep(0.05)
        raise CompareError(f"{self.name} did not answer PING within {START_SECONDS} s: {command}{self.log_tail()}")

    # The log's last lines, or a sanitizer's report from its first line (its end is a legend).
    def log_tail(self, lines=25):
        with open(self.log_path, "rb") as log:
            text = log.read().decode(errors="replace").splitlines()
        report = [i for i, line in enumerate(text) if re.search(r"ERROR: \w+Sanitizer|runtime error:", line)]
        shown_lines = text[report[0]:report[0] + lines] if report else text[-lines:]
        return "".join("\n    " + line[:200] for line in shown_lines)

    # SIGTERM, then SIGKILL if it has not stopped; a problem is returned, not raised, so that
    # the other server is stopped too. One that never came up was reported already.
    def stop(self, came_up):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                return f"{self.name} did not stop within 5 s of SIGTERM{self.log_tail()}"
        if self.process.returncode != 0 and came_up:
            return f"{self.name} exited with status {self.process.returncode}{self.log_tail()}"
        return None


# ---- The passes -----------------------------------------------------------------------------
def cli(port, *args, **options):
    return subprocess.Popen(["redis-cli", "-p", str(port), "--no-raw", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, **options)


def redis_cli_output(port, session):
    feed = "".join(f"{line}\nECHO redis-compare-mark-{i}\n" for i, (line, _) in enumerate(session))
    client = cli(port, stdin=subprocess.PIPE)
    output, _ = client.communicate(feed.encode("latin-1"), timeout=60)
    pieces, current = [], []
    for text in output.split(b"\n"):
        if text == b'"redis-compare-mark-%d"' % len(pieces):
            pieces.append(b"\n".join(current))
            current = []
        else:
            current.append(text)
    if len(pieces) < len(session):
        pieces.append(b"\n".join(current))
    return pieces + [b"(no output)"] * (len(session) - len(pieces))


def cli_pass(reference, ours, session):
    tally = Tally("redis-cli pass")
    replies = zip(redis_cli_output(reference.port, session), redis_cli_output(ours.port, session))
    for (line, _), (a, b) in zip(session, replies):
        tally.judge(line, a, b)
    return tally


def resp_pass(reference, ours, session):
    tally = Tally("RESP pass")
    connections = [Connection(reference.port), Connection(ours.port)]
    try:
        for line, args in session:
            tally.judge(line, *(connection.call(args) for connection in connections))
    finally:
        for connection in connections:
            connection.close()
    return tally


# A background client's output, read until `done(output)` says enough, the client exits, or
# the deadline passes.
def read_until(client, done, seconds=REPLY_SECONDS):
    output, deadline = b"", time.monotonic() + seconds
    while not done(output) and (left := deadline - time.monotonic()) > 0:
        if select.select([client.stdout], [], [], left)[0]:
            data = os.read(client.stdout.fileno(), 65536)
            if not data:
                break
            output += data
    return output


def finish(client):
    if client.poll() is None:
        client.terminate()
    rest, _ = client.communicate(timeout=REPLY_SECONDS)
    return rest


def pubsub_output(server):
    subscriber, output = cli(server.port, "subscribe", "ch"), b""
    try:
        output += read_until(subscriber, lambda out: b"(integer) 1\n" in out)
        connection = Connection(server.port)
        published = connection.call([b"PUBLISH", b"ch", b"hello"])
        connection.close()
        output += read_until(subscriber, lambda out: b'"hello"\n' in out)
    finally:
        output += finish(subscriber)
    return published, output


# The established TCP sockets to and from a port, as ss lists them: each one's fields, from
# its line (Recv-Q Send-Q local peer process) and its tab-indented line (name:value counters).
def sockets_of(port):
    listing = subprocess.run(["ss", "-tinpH", "state", "established", f"( sport = :{port} or dport = :{port} )"],
                             capture_output=True, text=True, check=True).stdout
    return [entry.split() for entry in re.split(r"\n(?!\s)", listing.strip()) if entry]


def counter(fields, name):
    return next((int(field.split(":")[1]) for field in fields if field.startswith(name + ":")), 0)


# The server has read what a client of ours sent it: on the client's socket (found by its
# pid) bytes_sent is above 0, and the server's end of that connection has received as many
# and holds none unread (Recv-Q 0). A client that has exited already had its answer.
def wait_until_read(client, port):
    if not shutil.which("ss"):
        raise CompareError("the BLPOP pass needs ss (Debian package iproute2)")
    deadline = time.monotonic() + REPLY_SECONDS
    while time.monotonic() < deadline and client.poll() is None:
        sockets = sockets_of(port)
        for fields in sockets:
            if f"pid={client.pid}," in " ".join(fields) and fields[3].endswith(f":{port}"):
                client_port, sent = fields[2].rsplit(":", 1)[1], counter(fields, "bytes_sent")
                server_end = [peer for peer in sockets
                              if peer[2].endswith(f":{port}") and peer[3].endswith(f":{client_port}")]
                if (sent > 0 and server_end and counter(server_end[0], "bytes_received") == sent
                        and server_end[0][0] == "0"):
                    return
        time.sleep(0.01)
    if client.poll() is None:
        raise CompareError(f"the server on port {port} did not read the BLPOP within {REPLY_SECONDS} s")


def blpop_output(server):
    blocked, output = cli(server.port, "blpop", "q", "5"), b""
    try:
        wait_until_read(blocked, server.port)
        connection = Connection(server.port)
        pushed = connection.call([b"RPUSH", b"q", b"x"])
        output += read_until(blocked, lambda out: b'"x"\n' in out)
        length = connection.call([b"LLEN", b"q"])
        connection.close()
    finally:
        output += finish(blocked)
    return pushed, output, length


def background_pass(name, lines, output, reference, ours):
    tally = Tally(name)
    for line, a, b in zip(lines, output(reference), output(ours)):
        tally.judge(line, a, b)
    return tally


# ---- The run --------------------------------------------------------------------------------
def main():
    parser = argparse.ArgumentParser(description="kv_server and redis-server side by side, one session compared")
    parser.add_argument("server", help="the server under test, e.g. build/lesson13/kv_server")
    parser.add_argument("--session", default=DEFAULT_SESSION, help="one command a line, in redis-cli's syntax")
    parser.add_argument("--server-args", help="the server's arguments after --port Q --bind 127.0.0.1 "
                        "(default --quiet; redis-server's for a program named redis-server)")
    parser.add_argument("--run-with", default="", help="the command that runs the server under test, "
                        "e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu (make ARCH=aarch64 passes it)")
    options = parser.parse_args()
    if not os.access(options.server, os.X_OK):
        sys.exit(f"redis-compare: {options.server} is not an executable program (make lesson13 builds kv_server)")
    ensure_redis_tools("scripts/redis-compare.py")
    session = read_session(options.session)
    if options.server_args is not None:
        server_args = shlex.split(options.server_args)
    elif os.path.basename(options.server) == "redis-server":
        server_args = REFERENCE_ARGS
    else:
        server_args = ["--quiet"]

    servers, problems, tallies, up = [], [], [], 0
    with tempfile.TemporaryDirectory(prefix="redis-compare-") as folder:
        try:
            servers.append(Server("redis-server", ["redis-server"] + REFERENCE_ARGS, os.path.join(folder, "reference")))
            servers.append(Server(os.path.basename(options.server), [os.path.abspath(options.server)] + server_args,
                                  os.path.join(folder, "ours"), shlex.split(options.run_with)))
            for server in servers:
                server.wait_for_ping()
                up += 1
            tallies.append(cli_pass(*servers, session))
            tallies.append(resp_pass(*servers, session))
            tallies.append(background_pass("pub/sub pass", ["PUBLISH ch hello", "redis-cli subscribe ch"],
                                           pubsub_output, *servers))
            tallies.append(background_pass("BLPOP pass", ["RPUSH q x", "redis-cli blpop q 5", "LLEN q"],
                                           blpop_output, *servers))
        except CompareError as error:
            problems.append(str(error))
        except (OSError, subprocess.SubprocessError) as error:
            problems.append(f"{error} (has a server stopped? see below)")
        finally:
            problems += [problem for i, server in enumerate(servers) if (problem := server.stop(i < up))]
    for tally in tallies:
        tally.report()
    for problem in problems:
        print(f"redis-compare: {problem}")
    if problems or any(tally.failures for tally in tallies):
        sys.exit(1)


if __name__ == "__main__":
    main()
