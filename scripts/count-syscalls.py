#!/usr/bin/env python3
"""count-syscalls.py — lesson 6: the chat server's system calls per delivered line, counted by strace.

Usage: scripts/count-syscalls.py build/lesson6/chat_server [--clients 10] [--lines 200]
                                 [--backend epoll] [--server-flag FLAG ...]

Starts the chat server, connects the clients (user 1 to user N) and reads
their welcomes. Then, with strace attached to the server (strace -c: a
count per system call, nothing printed per call), user 1 says each line and
the script waits until every other client has it before saying the next: each
line is N - 1 deliveries, and none is batched with another. strace is
detached before the clients leave, so joining and leaving are not counted.
Prints the system calls per delivered line, in all and by name.

--server-flag passes a flag on to the server, e.g. --server-flag=--eventfd-mail
to send every member's mail through its eventfd, as another thread would.
Needs strace (apt-get install strace) and the right to attach to the server
(root, or kernel.yama.ptrace_scope = 0). Exits 1 if a line goes missing.
"""
import argparse
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time


def fail(message):
    print(f"count-syscalls: {message}", file=sys.stderr)
    sys.exit(1)


def start_server(program, backend, flags):
    command = [program, "--port", "0", "--quiet", "--backend", backend, *flags]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r"listening on [^ ]*:(\d+)", line)
    if not match:
        server.kill()
        fail(f"{' '.join(command)} did not say where it listens: {line!r} {server.stderr.read()!r}")
    return server, int(match.group(1))


class Client:
    def __init__(self, port):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.buffered = b""

    def read_line(self):
        while b"\n" not in self.buffered:
            chunk = self.socket.recv(65536)
            if not chunk:
                fail("the server closed a client")
            self.buffered += chunk
        line, _, self.buffered = self.buffered.partition(b"\n")
        return line.decode()


def attach_strace(pid, output):
    strace = subprocess.Popen(["strace", "-f", "-c", "-o", output, "-p", str(pid)],
                              stderr=subprocess.PIPE, text=True)
    attached = strace.stderr.readline()
    if "attached" not in attached:
        strace.kill()
        fail(f"strace could not attach to the server: {attached.strip()}")
    return strace


# strace -c's table: "% time  seconds  usecs/call  calls  [errors]  syscall".
def parse_counts(path):
    counts = {}
    for line in open(path):
        fields = line.split()
        if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
            counts[fields[-1]] = int(fields[3])
    return counts


def main():
    parser = argparse.ArgumentParser(description="System calls per delivered chat line.")
    parser.add_argument("program")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--backend", default="epoll")
    parser.add_argument("--server-flag", action="append", default=[])
    args = parser.parse_args()
    if args.clients < 2:
        fail("--clients wants at least 2: one to speak, one to hear")

    server, port = start_server(args.program, args.backend, args.server_flag)
    try:
        clients = []
        for user in range(1, args.clients + 1):
            clients.append(Client(port))
            if clients[-1].read_line() != f"*** you are user {user}; {user} in the room":
                fail(f"user {user} got no welcome")
        for user, client in enumerate(clients, start=1):
            for later in range(user + 1, args.clients + 1):
                client.read_line()  # "*** user N joined"
        with tempfile.NamedTemporaryFile(suffix=".strace") as output:
            strace = attach_strace(server.pid, output.name)
            for number in range(args.lines):
                clients[0].socket.sendall(f"line {number}\n".encode())
                for client in clients[1:]:
                    if client.read_line() != f"user 1: line {number}":
                        fail(f"line {number} did not arrive whole")
            time.sleep(0.1)  # the server's last calls of the last line
            strace.send_signal(signal.SIGINT)
            strace.wait()
            counts = parse_counts(output.name)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()

    deliveries = args.lines * (args.clients - 1)
    flags = " ".join(args.server_flag)
    print(f"chat_server --backend {args.backend}{' ' + flags if flags else ''}: {args.clients} clients, "
          f"{args.lines} lines, each to {args.clients - 1} others: {deliveries} deliveries")
    print(f"system calls per delivered line: {sum(counts.values()) / deliveries:.2f}")
    for name, calls in sorted(counts.items(), key=lambda item: -item[1]):
        print(f"  {name:<14} {calls / deliveries:6.2f}   ({calls} calls)")


if __name__ == "__main__":
    main()
