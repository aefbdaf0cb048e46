# check_gdb_server.py — lesson 2: gdb's fiber commands on the course's echo_server while it idles,
# attached and from a core file, where frame 0 is libc's epoll_wait, a C function.
#
# That is where a user needs them (a server or a test binary that hangs), and where gdb
# parses expressions as C unless fib_gdb.py says otherwise. The server (the last stage's,
# make check-gdb) starts on a free port of 127.0.0.1; two clients each send a line, read
# it back and stay connected, so each has a fiber parked in a read. Once the server's
# thread blocks in epoll_wait, `gdb -p` attaches and runs the commands twice, in gdb's
# default language ("auto", the frame's: C where libc has debug info) and after `set
# language c`: `info fibers` must list the manager, main and the acceptor and both
# clients parked in Waiter::wait (read); `fiber bt` of a client must run from switch_to
# to context_trampoline; `fiber ID` and `fiber off` must select its frames and the
# thread's; `show language` must say afterwards what it said before. Then SIGABRT makes
# the kernel write a core file of the idle server, and the same checks run on it.
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

from check_gdb_session import Checker, allow_core_files, gdb_arguments, run_gdb

LINE = b"hello, fibers\n"
CLIENTS = 2
# Fiber ids in the order the server spawns them: main 0, the acceptor 1, the Waiter's
# fiber 2 (at the acceptor's first wait), then one per client in the order they connect.
FIRST_CLIENT_ID = 3
WAIT_SITE = r"Waiter::wait \(read\)"
# A fiber's stack in `info fibers`: where it is, and how much of it was written.
STACK_USED = r"0x[0-9a-f]+-0x[0-9a-f]+, \d+\.\d/64 KiB used"
# The two languages the commands run in: gdb's default, then one set by hand.
LANGUAGES = [("language auto", None), ("language c", "c")]


def start_server(server, scratch):
    """The server on a free port, in SCRATCH (where its core file goes): (process, port)."""
    process = subprocess.Popen([server, "--port", "0", "--bind", "127.0.0.1", "--backend", "epoll",
                                "--quiet"], cwd=scratch, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, preexec_fn=allow_core_files)
    # The server writes the line, and flushes it, before it serves.
    ready, _, _ = select.select([process.stdout], [], [], 10)
    line = process.stdout.readline() if ready else ""
    match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    if not match:
        process.kill()
        process.wait()
        raise RuntimeError(f"{server} printed no 'listening on' line: {line!r}")
    return process, int(match.group(1))


def connect_client(port):
    """A client whose line came back, so that its fiber exists and has served it:
    (socket, the client's address, which is the name the server gives its fiber)."""
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    client.sendall(LINE)
    reply = b""
    while len(reply) < len(LINE):
        chunk = client.recv(len(LINE) - len(reply))
        if not chunk:
            break
        reply += chunk
    if reply != LINE:
        raise RuntimeError(f"the server echoed {reply!r}, not {LINE!r}")
    host, client_port = client.getsockname()
    return client, f"{host}:{client_port}"


def wait_until_idle(pid, seconds=10.0):
    """Until the server's thread blocks in epoll_wait with no timeout, which the Waiter
    does only when every other fiber is parked: so each client's fiber has gone back to
    its read. No event says so; the kernel's /proc/PID/syscall (number, then arguments)
    does, and is read until it does, for at most SECONDS."""
    epoll_waits = {"232", "281"}  # epoll_wait, epoll_pwait on x86-64
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        fields = system_call(pid).split()
        # The timeout, an int, is -1: the register's low 32 bits are all ones.
        if fields[0] in epoll_waits and int(fields[4], 16) & 0xffffffff == 0xffffffff:
            return True
        time.sleep(0.01)
    return False


def system_call(pid):
    with open(f"/proc/{pid}/syscall", encoding="ascii") as syscall:
        return syscall.read().strip()


def sections_to_run():
    """The gdb sections: the frame gdb stopped in, then for each language each command;
    `fiber bt` unwinds the second client, `fiber ID` selects the first."""
    first, second = FIRST_CLIENT_ID, FIRST_CLIENT_ID + 1
    sections = [("frame 0", "frame")]
    for tag, language in LANGUAGES:
        sections += [(f"{tag}: before", (f"set language {language}\n" if language else "")
                      + "show language"),
                     (f"{tag}: info fibers", "info fibers"),
                     (f"{tag}: fiber bt {second}", f"fiber bt {second}"),
                     (f"{tag}: fiber {first}, bt", f"fiber {first}\nbt"),
                     (f"{tag}: fiber off, bt", "fiber off\nbt"),
                     (f"{tag}: after", "show language")]
    return sections


def check(checker, sections, pid, names):
    frame = sections.get("frame 0", "")
    checker.expect("frame 0 is libc's epoll_wait, where the idle server waits",
                   re.search(r"^#0 .* in epoll_wait \(", frame, re.M), frame)
    for tag, _ in LANGUAGES:
        before = sections.get(f"{tag}: before", "")
        language = re.search(r'The current source language is "([^"]*)"', before)
        where = f'language "{language.group(1)}"' if language else tag
        listing = sections.get(f"{tag}: info fibers", "")
        checker.expect(f"{where}: info fibers lists the manager of LWP {pid} with {3 + CLIENTS} fibers, "
                       "main and the acceptor parked in Waiter::wait (read), the Waiter's fiber running",
                       re.search(rf"^manager 0x[0-9a-f]+ on thread \d+ \(LWP {pid}\), {3 + CLIENTS} "
                                 r"fibers:$", listing, re.M)
                       and re.search(rf"^\s+0\s+main\s+parked\s+{WAIT_SITE}\s+the thread's own$", listing, re.M)
                       and re.search(rf"^\s+1\s+acceptor\s+parked\s+{WAIT_SITE}\s+{STACK_USED}$", listing, re.M)
                       and re.search(r"^\s+\*\s+2\s+waiter\s+running\s", listing, re.M), listing)
        checker.expect(f"{where}: info fibers lists each client, by its address, parked in "
                       "Waiter::wait (read)",
                       all(re.search(rf"^\s+{FIRST_CLIENT_ID + n}\s+{re.escape(name)}\s+parked\s+"
                                     rf"{WAIT_SITE}\s+{STACK_USED}$", listing, re.M)
                           for n, name in enumerate(names)), listing)
        second = FIRST_CLIENT_ID + 1
        checker.clean_backtrace(f"{where}: fiber bt {second}: the client, from switch_to through "
                                "Waiter::wait and EchoConnection::run to the trampoline",
                                sections.get(f"{tag}: fiber bt {second}", ""),
                                "FiberManager::switch_to", ["Waiter::wait", "EchoConnection::run"],
                                "context_trampoline",
                                heading=f"fiber {second} ({names[1]}), parked: Waiter::wait (read):")
        selected = sections.get(f"{tag}: fiber {FIRST_CLIENT_ID}, bt", "")
        checker.clean_backtrace(f"{where}: fiber {FIRST_CLIENT_ID}, then bt: the client's frames",
                                selected, "FiberManager::switch_to",
                                ["Waiter::wait", "EchoConnection::run"], "context_trampoline")
        back = sections.get(f"{tag}: fiber off, bt", "")
        checker.clean_backtrace(f"{where}: fiber off, then bt: the running Waiter's fiber, from "
                                "epoll_wait to the trampoline", back, "epoll_wait", ["Waiter::run"],
                                "context_trampoline")
        after = sections.get(f"{tag}: after", "")
        checker.expect(f"{where}: the language is as it was before the commands",
                       language and language.group(0) in after, f"{before}\n...\n{after}")


def check_idle_server(server):
    """The idle server attached, then its core file: the number of failed checks."""
    with tempfile.TemporaryDirectory(prefix="check-gdb-server-") as scratch:
        process, port = start_server(server, scratch)
        clients = []
        try:
            for _ in range(CLIENTS):
                clients.append(connect_client(port))
            names = [name for _, name in clients]
            if not wait_until_idle(process.pid):
                print("check-gdb: the echo_server did not come to wait in epoll_wait with no timeout; "
                      f"/proc/{process.pid}/syscall: {system_call(process.pid)}", file=sys.stderr)
                return 1
            sections, output = run_gdb([server, "-p", str(process.pid)],
                                       gdb_arguments([], sections_to_run()), scratch)
            attached = Checker("idle echo_server, attached")
            if "ptrace: Operation not permitted" in output:
                print("check-gdb: idle echo_server, attached: gdb may not attach here (ptrace: "
                      "Operation not permitted; see /proc/sys/kernel/yama/ptrace_scope); skipped")
            else:
                check(attached, sections, process.pid, names)

            core = Checker("idle echo_server, core file")
            if not wait_until_idle(process.pid):
                print("check-gdb: after gdb, the echo_server did not come back to epoll_wait; "
                      f"/proc/{process.pid}/syscall: {system_call(process.pid)}", file=sys.stderr)
                return attached.failures + 1
            process.send_signal(signal.SIGABRT)
            status = process.wait(timeout=60)
            core_file = core.core_file(scratch, f"the server's exit status {status}")
            if core_file:
                core_sections, _ = run_gdb([server, core_file],
                                           gdb_arguments([], sections_to_run()), scratch)
                check(core, core_sections, process.pid, names)
            return attached.failures + core.failures
        finally:
            for client, _ in clients:
                client.close()
            if process.poll() is None:
                process.kill()
            process.wait()
