#!/usr/bin/env python3
"""idle_clients.py: open many keep-alive HTTP connections and hold them idle.

Each connection sends one `GET PATH HTTP/1.1` (keep-alive), reads the whole
response, then stays open and silent: an idle keep-alive client, the kind nginx
or a browser keeps around. With --slow, each connection is a slowloris client
instead: it sends only the start of a request head, then one more header byte
every --trickle-ms, never the end (the server should cut it off at its
header_timeout; "answered" then counts connections whose head was started). At most --window connections are "in flight"
(connecting or waiting for their response) at once, so the server's listen
backlog never overflows (an overflow costs a 1 s SYN retransmit per connection).

Protocol on stdout/stdin (used by bench_runner.py):
  prints   "ready opened=N answered=A closed=C failed=F secs=T"  once all are set up
  reads    "check\n"  -> prints "open=K closed=C" (connections the peer has not closed)
  EOF on stdin (or SIGTERM) -> closes everything and exits 0.
Everything is bounded by --setup-timeout and --hold-timeout. Loopback use only.
Standard library only.
"""
import argparse
import errno
import os
import resource
import selectors
import signal
import socket
import sys
import time


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(want, hard) if hard != resource.RLIM_INFINITY else want
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Conn:
    __slots__ = ("sock", "state", "buf")

    def __init__(self, sock):
        self.sock = sock
        self.state = "connecting"  # -> "waiting" -> "idle" | "closed"
        self.buf = b""


def read_some(sock):
    """What a readable socket has: bytes, b"" once the peer closed (or reset),
    None when nothing after all."""
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def response_complete(buf):
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return False
    length = 0
    for line in buf[:head_end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return len(buf) >= head_end + 4 + length


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--path", default="/hello")
    ap.add_argument("--window", type=int, default=200)
    ap.add_argument("--setup-timeout", type=float, default=60.0)
    ap.add_argument("--hold-timeout", type=float, default=300.0)
    ap.add_argument("--slow", action="store_true", help="slowloris clients: a head that never ends")
    ap.add_argument("--trickle-ms", type=float, default=1000.0)
    return ap.parse_args()


def request_for(args):
    """What each connection sends: a whole GET, or with --slow the start of a head."""
    if args.slow:
        return (f"GET {args.path} HTTP/1.1\r\nHost: {args.host}\r\n"
                "User-Agent: gearbox-bench-slow\r\nX-Slow: ").encode()
    return (f"GET {args.path} HTTP/1.1\r\nHost: {args.host}\r\n"
            "User-Agent: gearbox-bench-idle\r\n\r\n").encode()


class Clients:
    """The connections, the selector they are registered with, and their counts."""

    def __init__(self, args):
        self.args = args
        self.request = request_for(args)
        self.sel = selectors.DefaultSelector()
        self.conns = []
        self.opened = self.answered = self.failed = self.closed = 0
        self.inflight = 0
        self.stop = False
        self.pending = b""

    def close_conn(self, c, counted_as):
        if c.state in ("connecting", "waiting"):
            self.inflight -= 1
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        if counted_as == "failed":
            self.failed += 1
        else:
            self.closed += 1
        c.state = "closed"

    def open_more(self):
        """Starts connecting until --count are opened or --window are in flight."""
        args = self.args
        while self.opened < args.count and self.inflight < args.window:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            err = s.connect_ex((args.host, args.port))
            c = Conn(s)
            self.conns.append(c)
            self.opened += 1
            self.inflight += 1
            if err not in (0, errno.EINPROGRESS):
                self.close_conn(c, "failed")
                continue
            self.sel.register(s, selectors.EVENT_WRITE, c)

    def on_connected(self, c):
        """A connecting socket turned writable: send the request (or the head's start)."""
        err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self.close_conn(c, "failed")
            return
        try:
            c.sock.send(self.request)
        except OSError:
            self.close_conn(c, "failed")
            return
        if self.args.slow:
            # Nothing to wait for: the head has started and never ends.
            c.state = "idle"
            self.answered += 1
            self.inflight -= 1
        else:
            c.state = "waiting"
        self.sel.modify(c.sock, selectors.EVENT_READ, c)

    def on_readable(self, c):
        """A waiting or idle connection turned readable: its response, or a close."""
        data = read_some(c.sock)
        if data is None:
            return
        if not data:
            self.close_conn(c, "failed" if c.state == "waiting" else "closed")
            return
        if c.state == "waiting":
            c.buf += data
            if response_complete(c.buf):
                c.buf = b""
                c.state = "idle"
                self.answered += 1
                self.inflight -= 1

    def set_up(self):
        """Opens --count connections, at most --window in flight, until all are
        answered or --setup-timeout; prints the "ready" line."""
        args = self.args
        start = time.monotonic()
        deadline = start + args.setup_timeout
        while (self.opened < args.count or self.inflight > 0) and time.monotonic() < deadline:
            self.open_more()
            for key, _ in self.sel.select(timeout=0.5):
                c = key.data
                if c.state == "connecting":
                    self.on_connected(c)
                elif c.state in ("waiting", "idle"):
                    self.on_readable(c)
        setup_secs = time.monotonic() - start
        # Whatever is still unanswered at the deadline counts as failed.
        for c in self.conns:
            if c.state in ("connecting", "waiting"):
                self.close_conn(c, "failed")
        print(f"ready opened={self.opened} answered={self.answered} closed={self.closed} "
              f"failed={self.failed} secs={setup_secs:.2f}", flush=True)

    def on_term(self, *_):
        self.stop = True

    def trickle(self):
        """--slow: one more header byte on every idle connection."""
        for c in self.conns:
            if c.state == "idle":
                try:
                    c.sock.send(b"a")
                except OSError:
                    self.close_conn(c, "closed")

    def read_commands(self):
        """Answers the "check" lines stdin has; False at EOF."""
        chunk = os.read(sys.stdin.fileno(), 4096)
        if not chunk:
            return False
        self.pending += chunk
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            if line.strip() == b"check":
                still = sum(1 for c in self.conns if c.state == "idle")
                print(f"open={still} closed={self.closed}", flush=True)
        return True

    def hold(self):
        """Holds the connections until EOF on stdin, SIGTERM or --hold-timeout,
        answering "check" lines; then closes them all."""
        # Idle connections stay registered for reading: a read of 0 bytes means
        # the server closed it (prefork gives idle keep-alive connections up).
        args = self.args
        signal.signal(signal.SIGTERM, self.on_term)
        os.set_blocking(sys.stdin.fileno(), False)
        self.sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
        hold_deadline = time.monotonic() + args.hold_timeout
        next_trickle = time.monotonic() + args.trickle_ms / 1000.0
        while not self.stop and time.monotonic() < hold_deadline:
            now = time.monotonic()
            if args.slow and now >= next_trickle:
                self.trickle()
                next_trickle = now + args.trickle_ms / 1000.0
            wait = min(0.5, max(0.0, next_trickle - now)) if args.slow else 0.5
            for key, _ in self.sel.select(timeout=wait):
                if key.data == "stdin":
                    if not self.read_commands():
                        self.stop = True
                        break
                    continue
                c = key.data
                if read_some(c.sock) == b"":
                    self.close_conn(c, "closed")
        for c in self.conns:
            if c.state != "closed":
                c.sock.close()


def main():
    args = parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("idle_clients: loopback only")

    limit = raise_nofile(args.count + 64)
    if limit < args.count + 16:
        sys.exit(f"idle_clients: RLIMIT_NOFILE {limit} is too low for {args.count} connections")

    clients = Clients(args)
    clients.set_up()
    clients.hold()
    return 0


if __name__ == "__main__":
    sys.exit(main())
