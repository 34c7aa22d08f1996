#!/usr/bin/env python3
"""A real nginx as a second opinion on the HTTP/1.1 conformance cases.

Sends every case of tests/conformance/cases.toml, whole, to a real gearboxd and
to a real nginx acting as the origin server (nginx parses the request itself:
`return` for /hello and the other paths, the echo module for /echo), and
records both verdicts side by side in a Markdown report. The verdict is what a
client sees: the final statuses, then whether the connection served a
follow-up request ("open") or ended ("close").

Fails when
  - gearbox's verdict is not the case's expectation;
  - nginx's verdict differs from gearbox's and the case has no `nginx` entry
    (the clause that allows gearbox's answer), or has one but they agree;
  - with --check, the report differs from the committed one
    (tests/conformance/nginx_verdicts.md).

  tests/conformance/nginx_verdicts.py [--check] [--out FILE] [--model M]

Needs $GEARBOXD (the binary), nginx (Debian nginx-light 1.22, with its echo
module) and Python 3.11. Loopback only, ports picked by the kernel.
"""

import argparse
import difflib
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from waiting import wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases.toml")
REPORT = os.path.join(HERE, "nginx_verdicts.md")
ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"
FOLLOW_UP = (b"POST /echo HTTP/1.1\r\nHost: follow-up\r\nContent-Length: 9\r\n\r\n"
             b"follow-up")
FOLLOW_UP_BODY = b"follow-up"
IO_TIMEOUT = 3.0


def decode(text):
    """The escapes of cases.toml (the same rules as conformance_cases.cc)."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode("latin-1")
            i += 1
            continue
        if text.startswith("\\(", i):
            close = text.index(")", i)
            n = int(text[i + 2:close])
            rest = text[close + 1:]
            if rest.startswith("{"):
                end = text.index("}", close)
                unit = decode(text[close + 2:end])
                i = end + 1
            elif rest.startswith("\\"):
                unit, used = decode_one(text, close + 1)
                i = close + 1 + used
            else:
                unit = rest[0].encode("latin-1")
                i = close + 2
            out += unit * n
            continue
        unit, used = decode_one(text, i)
        out += unit
        i += used
    return bytes(out)


def decode_one(text, i):
    e = text[i + 1]
    simple = {"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\0", "\\": b"\\"}
    if e in simple:
        return simple[e], 2
    if e == "x":
        return bytes([int(text[i + 2:i + 4], 16)]), 4
    raise ValueError(f"bad escape at {i}: {text[i:i + 4]!r}")


def load_cases():
    with open(CASES, "rb") as f:
        table = tomllib.load(f)
    for case in table["case"]:
        case["bytes"] = decode(case["send"])
    return table["limits"], table["case"]


# --- a client that reads responses the way the servers frame them -----------


class Peer:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def fill(self, deadline):
        """More bytes before the deadline; False on EOF, reset or timeout."""
        left = deadline - time.monotonic()
        if left <= 0 or self.eof:
            return False
        ready, _, _ = select.select([self.sock], [], [], left)
        if not ready:
            return False
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def response(self, head, deadline):
        """(status, body) of the next response; ("0.9", body) for bytes that are
        no HTTP/1.x status line; None on timeout or EOF first."""
        while True:
            if self.buf and not self.buf.startswith(b"HTTP/"[:len(self.buf)]):
                while self.fill(deadline):
                    pass
                body, self.buf = self.buf, b""
                return "0.9", body
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if not self.fill(deadline):
                return None
        lines = self.buf[:end].split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip()
        rest = self.buf[end + 4:]
        self.buf = rest
        if head or status < 200 or status in (204, 304):
            return status, b""
        if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            return status, self.chunked_body(deadline)
        if b"content-length" in fields:
            n = int(fields[b"content-length"])
            while len(self.buf) < n and self.fill(deadline):
                pass
            body, self.buf = self.buf[:n], self.buf[n:]
            return status, body
        while self.fill(deadline):  # delimited by the close
            pass
        body, self.buf = self.buf, b""
        return status, body

    def chunked_body(self, deadline):
        body = b""
        while True:
            while b"\r\n" not in self.buf and self.fill(deadline):
                pass
            line, _, self.buf = self.buf.partition(b"\r\n")
            size = int(line.split(b";")[0] or b"0", 16)
            if size == 0:
                while b"\r\n\r\n" not in b"\r\n" + self.buf and self.fill(deadline):
                    pass
                self.buf = (b"\r\n" + self.buf).split(b"\r\n\r\n", 1)[1]
                return body
            while len(self.buf) < size + 2 and self.fill(deadline):
                pass
            body += self.buf[:size]
            self.buf = self.buf[size + 2:]

    def close(self):
        self.sock.close()


def verdict(port, case):
    """What a client sees: final statuses, then open/close (or wait)."""
    peer = Peer(port)
    try:
        peer.send(case["bytes"])
        deadline = time.monotonic() + IO_TIMEOUT
        statuses = []
        while len(statuses) < len(case["expect"]):
            r = peer.response(case.get("head", False), deadline)
            if r is None:
                break
            if r[0] == "0.9" or r[0] >= 200:
                statuses.append(str(r[0]))
            if r[0] == "0.9":
                break
        if len(statuses) < len(case["expect"]) and not peer.eof:
            return " ".join(statuses + ["wait"])
        # The follow-up tells "open" from "close"; responses before its own are
        # extra ones the server produced from the case's bytes.
        end = "close"
        if not peer.eof and peer.send(FOLLOW_UP):
            deadline = time.monotonic() + IO_TIMEOUT
            while True:
                r = peer.response(False, deadline)
                if r is None:
                    break
                if r == (200, FOLLOW_UP_BODY):
                    end = "open"
                    break
                if r[0] == "0.9" or r[0] >= 200:
                    statuses.append(str(r[0]))
        return " ".join(statuses + [end])
    finally:
        peer.close()


def expected(case):
    return " ".join([str(s) for s in case["expect"]] + [case["after"]])


# --- the two servers -----------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, log, timeout=10.0):
    def listening():
        if proc.poll() is not None:
            return True
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    ok = wait_until(listening, timeout)
    if proc.poll() is not None:
        sys.exit(f"server exited ({proc.returncode}):\n{open(log).read()}")
    if ok:
        return
    sys.exit(f"server not listening on {port}:\n{open(log).read()}")


def start_nginx(work, limits):
    if not os.path.exists(ECHO_MODULE):
        sys.exit(f"no {ECHO_MODULE} (Debian's nginx-light brings it; see .ci/setup)")
    port = free_port()
    conf = os.path.join(work, "nginx.conf")
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(work, d), exist_ok=True)
    with open(conf, "w") as f:
        f.write(f"""# Written by tests/conformance/nginx_verdicts.py
load_module {ECHO_MODULE};
daemon off;
master_process off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log info;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  # The same body limit as gearbox; nginx limits header lines one by one
  # (large_client_header_buffers), not the head as a whole.
  client_max_body_size {limits["max_body_bytes"]};
  client_header_buffer_size 1k;
  large_client_header_buffers 4 {limits["max_header_bytes"] // 1024}k;
  keepalive_timeout 30s;
  server {{
    listen 127.0.0.1:{port};
    default_type text/plain;
    location = /hello {{ return 200 "hello world\\n"; }}
    location = /echo {{ echo_read_request_body; echo_request_body; }}
    location / {{ return 404 "not found\\n"; }}
  }}
}}
""")
    log = os.path.join(work, "nginx.out")
    proc = subprocess.Popen(
        ["nginx", "-p", work, "-c", conf, "-e", f"{work}/nginx-error.log"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_port(port, proc, log)
    version = subprocess.run(["nginx", "-v"], capture_output=True,
                             text=True).stderr.strip().split("/")[-1]
    return proc, port, version


def start_gearbox(work, limits, model):
    binary = os.environ.get("GEARBOXD")
    if not binary or not os.access(binary, os.X_OK):
        sys.exit("set GEARBOXD to the gearboxd binary (bazel build //daemon:gearboxd)")
    conf = os.path.join(work, "gearbox.toml")
    with open(conf, "w") as f:
        f.write(f"""# Written by tests/conformance/nginx_verdicts.py
[server]
model = "{model}"

[[listen]]
address = "127.0.0.1:0"

[limits]
header_timeout = "30s"
body_timeout = "30s"
max_header_bytes = {limits["max_header_bytes"]}
max_body_bytes = {limits["max_body_bytes"]}

[[route]]
path = "/hello"
handler = "text"
body = "hello world\\n"

[[route]]
path = "/echo"
handler = "echo"
""")
    log = os.path.join(work, "gearbox.log")
    proc = subprocess.Popen([binary, "-c", conf], stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)
    def bound():
        m = re.search(r"event=listening .*bound=127\.0\.0\.1:(\d+)", open(log).read())
        return m or proc.poll() is not None
    m = wait_until(bound, 10)
    if m and m is not True:
        return proc, int(m.group(1))
    sys.exit(f"gearboxd did not start:\n{open(log).read()}")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- the report ---------------------------------------------------------------


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def report(cases, rows, nginx_version, model, limits):
    differ = [r for r in rows if r["gearbox"] != r["nginx"]]
    out = [
        f"# nginx {nginx_version} beside gearbox on the HTTP/1.1 conformance cases",
        "",
        "Generated by `tests/conformance/nginx_verdicts.py` from "
        "`tests/conformance/cases.toml`",
        "(`.ci/test` regenerates it and fails when it is not current). Every "
        "case is sent whole to",
        f"gearboxd (model `{model}`) and to nginx as an origin server "
        "(`return` for `/hello` and other",
        "paths, the echo module for `/echo`, `client_max_body_size "
        f"{limits['max_body_bytes']}`; nginx limits each header line",
        f"to {limits['max_header_bytes']} bytes where gearbox limits the "
        "whole head).",
        "",
        "A verdict is the final statuses, then `open` (the connection then "
        "served a follow-up",
        "request), `close`, or `wait` (neither an answer nor a close within "
        f"{IO_TIMEOUT:.0f} s). `0.9` is an",
        "HTTP/0.9 answer (a body without a status line).",
        "",
        f"{len(rows)} cases: nginx agrees on {len(rows) - len(differ)}, differs "
        f"on {len(differ)}; each difference cites the clause",
        "that allows gearbox's answer.",
        "",
        "| case | section | gearbox | nginx | why gearbox's answer is allowed |",
        "|------|---------|---------|-------|---------------------------------|",
    ]
    for r in rows:
        why = r["why"] if r["gearbox"] != r["nginx"] else ""
        out.append(f"| `{r['id']}` | {r['section']} | {r['gearbox']} | "
                   f"{r['nginx']} | {cell(why)} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="fail when the committed report is not current")
    ap.add_argument("--out", default=None, help="write the report here")
    ap.add_argument("--model", default="async", help="gearbox's model")
    args = ap.parse_args()
    if shutil.which("nginx") is None:
        sys.exit("nginx not found: apt-get install nginx-light (.ci/setup installs it)")

    limits, cases = load_cases()
    work = tempfile.mkdtemp(prefix="gearbox-conformance-")
    problems = []
    rows = []
    nginx = gearbox = None
    try:
        nginx, nginx_port, nginx_version = start_nginx(work, limits)
        gearbox, gearbox_port = start_gearbox(work, limits, args.model)
        for case in cases:
            g = verdict(gearbox_port, case)
            n = verdict(nginx_port, case)
            why = case.get("nginx", "")
            if g != expected(case):
                problems.append(f"{case['id']}: gearbox {g}, the table expects "
                                f"{expected(case)}")
            if g != n and not why:
                problems.append(f"{case['id']}: nginx says {n}, gearbox {g}: "
                                "add `nginx = \"...\"` citing the clause that "
                                "allows gearbox's answer")
            if g == n and why:
                problems.append(f"{case['id']}: nginx agrees ({n}) but the case "
                                "has an `nginx` entry: remove it")
            rows.append({"id": case["id"], "section": case["section"],
                         "gearbox": g, "nginx": n, "why": why})
    finally:
        for p in (gearbox, nginx):
            if p:
                stop(p)
    text = report(cases, rows, nginx_version, args.model, limits)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.check:
        with open(REPORT) as f:
            committed = f.read()
        if committed != text:
            diff = "".join(difflib.unified_diff(
                committed.splitlines(True), text.splitlines(True),
                "nginx_verdicts.md (committed)", "nginx_verdicts.md (now)"))
            problems.append("the committed report is not current "
                            "(regenerate with --out " + REPORT + "):\n" + diff)
    shutil.rmtree(work, ignore_errors=True)
    differ = sum(1 for r in rows if r["gearbox"] != r["nginx"])
    print(f"nginx_verdicts: {len(rows)} cases, nginx differs on {differ}, "
          f"{len(problems)} problems")
    for p in problems:
        print("nginx_verdicts: FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
