#!/usr/bin/env python3
"""bench.py: the PHP-vs-Tornado experiment, redone with gearbox's three models.

Run it through tests/bench/run.sh (which raises the descriptor limit). It
  1. builds //daemon:gearboxd (or takes $GEARBOXD);
  2. for each server configuration (model x size) starts gearboxd with a TCP
     listener (direct) and a unix-socket listener, and nginx (temp prefix, 1 worker)
     with the shipped packaging/nginx/gearbox-upstream.conf + gearbox-http.conf in
     front of the socket, plus a `return 200` reference server;
  3. drives load: wrk --latency (closed loop, several concurrencies), httperf (the
     seed profile: --rate 100 --num-conn 1000 --num-call 10, with --timeout), and
     idle keep-alive connections (idle_clients.py) under a small wrk load;
  4. measures req/s, p50/p99, errors/5xx, CPU time of gearboxd (master + children,
     all threads) and of the nginx workers, daemon RSS;
  5. writes results.md, results.json and gnuplot PNGs (bench_report.py).
Loopback only; every process it starts is stopped by PID; every run is bounded.
Standard library only.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SNIPPETS = os.path.join(ROOT, "packaging", "nginx")
CLK_TCK = os.sysconf("SC_CLK_TCK")
T0 = time.monotonic()

# Server configurations: (label, model, TOML section, size key, size, why).
# The 2-core sizes (nproc = 2 on the reference machine):
#   async loops=2     one loop per core: a loop is one thread that never blocks,
#                     more loops than cores only adds context switches.
#   threadpool 64     the shipped default. A thread costs ~8 MiB of *virtual* stack
#                     and nothing while parked; 64 threads cover 64 concurrent 1 ms
#                     waits (64,000 req/s, above what 2 cores can serve) and
#                     3,200 req/s of 20 ms waits.
#   prefork 8         a child serves one request at a time, so capacity for waiting
#                     work is workers / wait: 8 children x 1 ms = 8,000 req/s, 8x the
#                     seed's 1,000 req/s; for CPU work 2 would do, and more than ~4
#                     per core only adds memory and context switches (php-fpm's
#                     usual "a few per core" sizing).
CONFIGS = [
    ("async-1", "async", "async", "loops", 1, "smallest: one event loop"),
    ("async-2", "async", "async", "loops", 2, "2-core size: one loop per core"),
    ("threadpool-1", "threadpool", "threadpool", "threads", 1, "smallest: one worker thread"),
    ("threadpool-64", "threadpool", "threadpool", "threads", 64,
     "2-core size: the shipped default; covers 64 concurrent waits"),
    ("prefork-1", "prefork", "prefork", "workers", 1, "smallest: one child (the seed's one PHP process)"),
    ("prefork-8", "prefork", "prefork", "workers", 8,
     "2-core size: 8 children = 8,000 req/s of 1 ms waits, 4 per core"),
]
CONFIG_BY_LABEL = {c[0]: c for c in CONFIGS}

# A run during which other processes used more CPU than this (in cores) is flagged.
NOISY_CORES = bench_report.NOISY_CORES

WORKLOADS = {
    "hello": "/hello",
    "wait1ms": "/sleep?ms=1",
    "wait20ms": "/sleep?ms=20",
    "burn": "/burn?us=200",
}


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- /proc helpers ---------------------------------------------------------------

def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    return data[data.rindex(")") + 2:].split()  # fields from "state" (field 3) on


def proc_tree(pid):
    """pid and all its descendants (prefork children), by scanning /proc for ppid."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parents[int(name)] = int(_stat_fields(name)[1])
            except (OSError, ValueError, IndexError):
                pass
    tree, frontier = [pid], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        tree += kids
        frontier += kids
    return tree


def cpu_seconds(pids):
    """utime + stime of the processes (all their threads, live and exited)."""
    total = 0
    for pid in pids:
        try:
            f = _stat_fields(pid)
            total += int(f[11]) + int(f[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / CLK_TCK


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def host_busy_seconds():
    """CPU time the whole host spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / CLK_TCK


def children_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Noise:
    """CPU the host spent on anything but the server under test and our client
    during a run: other jobs on a shared machine. In cores (1.0 = one core)."""

    def __init__(self, cpu):
        self.cpu = cpu
        self.t = time.monotonic()
        self.host = host_busy_seconds()
        self.kids = children_cpu_seconds()
        self.ours = sum(cpu_seconds(f()) for f in cpu.values())

    def done(self, r):
        wall = time.monotonic() - self.t
        ours = sum(cpu_seconds(f()) for f in self.cpu.values()) - self.ours
        client = children_cpu_seconds() - self.kids
        foreign = host_busy_seconds() - self.host - ours - client
        r["client_cpu_s"] = client
        r["foreign_cpu_cores"] = max(0.0, foreign / wall) if wall > 0 else None
        r["loadavg1"] = float(open("/proc/loadavg").read().split()[0])


def slab_kib():
    """Kernel slab memory (socket structures live there, not in any process's RSS)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("Slab:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def alive(pid):
    try:
        return _stat_fields(pid)[0] != "Z"
    except OSError:
        return False


# --- processes we start ---------------------------------------------------------

STARTED = []  # Popen objects, stopped by PID in stop_all()


def stop_proc(p, sig=signal.SIGTERM, wait=15.0):
    if p.poll() is not None:
        return p.returncode
    try:
        p.send_signal(sig)
        return p.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait(timeout=5)


def stop_all():
    for p in reversed(STARTED):
        if p.poll() is None:
            stop_proc(p, signal.SIGTERM, 10)


class Gearbox:
    def __init__(self, binary, cfg, work, logdir, confdir):
        self.label, self.model, self.section, self.key, self.size, _ = cfg
        self.binary = binary
        self.port = free_port()
        self.sock = os.path.join(work, "http.sock")
        self.conf = os.path.join(confdir, f"gearbox-{self.label}.toml")
        self.logfile = os.path.join(logdir, f"gearboxd-{self.label}.log")
        self.proc = None

    def write_config(self):
        # Everything else at the shipped defaults (config/gearbox.toml).
        # max_connections: the default 10,000 would leave no room for the load
        # next to 10,000 idle connections.
        text = f"""# Generated by tests/bench/bench.py for {self.label}.
[server]
model = "{self.model}"
graceful_timeout = "3s"

[[listen]]
name = "http"
protocol = "http"
address = "127.0.0.1:{self.port}"

[[listen]]
name = "nginx"
protocol = "http"
address = "unix:{self.sock}"
unix_mode = 0o666

[{self.section}]
{self.key} = {self.size}

[limits]
max_connections = 30000
"""
        with open(self.conf, "w") as f:
            f.write(text)
        r = sh([self.binary, "-t", "-c", self.conf])
        if r.returncode != 0:
            raise RuntimeError(f"gearboxd -t rejected {self.conf}: {r.stdout}{r.stderr}")

    def start(self):
        self.write_config()
        out = open(self.logfile, "w")
        self.proc = subprocess.Popen([self.binary, "-c", self.conf], stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        STARTED.append(self.proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gearboxd {self.label} exited {self.proc.returncode}; see {self.logfile}")
            if http_get_ok("127.0.0.1", self.port, "/hello") and os.path.exists(self.sock):
                if self.model == "prefork":
                    # Wait for all children to be forked.
                    if len(proc_tree(self.proc.pid)) < 1 + self.size:
                        time.sleep(0.05)
                        continue
                return
            time.sleep(0.05)
        raise RuntimeError(f"gearboxd {self.label} did not answer within 20 s; see {self.logfile}")

    def pids(self):
        return proc_tree(self.proc.pid)

    def status(self):
        """gearboxd's /status counters (requests, connections accepted), or None."""
        body = http_get("127.0.0.1", self.port, "/status?full", timeout=10.0)
        try:
            j = json.loads(body.split(b"\r\n\r\n", 1)[1])
            return {"requests": j["requests"], "accepted": j["connections"]["accepted"],
                    "workers": {w["slot"]: w["requests"] for w in j.get("workers", [])}}
        except (AttributeError, IndexError, ValueError, KeyError, TypeError):
            return None

    def stop(self):
        rc = stop_proc(self.proc, signal.SIGTERM, 15)
        STARTED.remove(self.proc)
        return rc


def http_get(host, port, path, timeout=1.0):
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data
    except OSError:
        return None


def http_get_ok(host, port, path, timeout=1.0):
    data = http_get(host, port, path, timeout)
    return bool(data) and data.startswith(b"HTTP/1.1 200")


class Nginx:
    """nginx, 1 worker, temp prefix: the shipped gearbox snippets in front of the
    gearboxd socket (port `proxy`), and `return 200` by itself (port `ref`)."""

    def __init__(self, work, confdir, logdir, tag):
        self.prefix = os.path.join(work, f"nginx-{tag}")
        self.tag = tag
        self.proxy = free_port()
        self.ref = free_port()
        self.conf = os.path.join(self.prefix, "conf", "nginx.conf")
        self.confdir = confdir
        self.logdir = logdir
        self.proc = None
        self.snippets = "shipped"

    def write_config(self, sock):
        for d in ("conf", "logs", "tmp"):
            os.makedirs(os.path.join(self.prefix, d), exist_ok=True)
        upstream_file = os.path.join(SNIPPETS, "gearbox-upstream.conf")
        http_file = os.path.join(SNIPPETS, "gearbox-http.conf")
        sockdir = os.path.dirname(sock)
        if os.path.exists(upstream_file) and os.path.exists(http_file):
            with open(upstream_file) as f:
                up = f.read().replace("unix:/run/gearbox/", f"unix:{sockdir}/")
            location = f"include {http_file};"
        else:  # an equivalent inline config, until packaging/nginx ships one
            self.snippets = "inline (packaging/nginx/ snippets missing)"
            up = (f"upstream gearbox_http {{\n  server unix:{sock} max_fails=0;\n"
                  "  keepalive 32;\n  keepalive_timeout 60s;\n  keepalive_requests 1000;\n}\n")
            location = ("proxy_pass http://gearbox_http;\n    proxy_http_version 1.1;\n"
                        "    proxy_set_header Connection \"\";\n    proxy_set_header Host $host;\n"
                        "    proxy_next_upstream error timeout http_503;\n"
                        "    proxy_read_timeout 60s;")
        with open(os.path.join(self.prefix, "conf", "gearbox-upstream.conf"), "w") as f:
            f.write(up)
        p = self.prefix
        text = f"""# Generated by tests/bench/bench.py ({self.tag}).
worker_processes 1;
worker_rlimit_nofile 20000;
pid {p}/nginx.pid;
error_log {p}/logs/error.log warn;
events {{ worker_connections 8192; }}
http {{
  # Off for both the proxy and the reference: the benchmark compares serving, and
  # a log line per request would be most of nginx's own cost.
  access_log off;
  client_body_temp_path {p}/tmp/body;
  proxy_temp_path {p}/tmp/proxy;
  fastcgi_temp_path {p}/tmp/fastcgi;
  uwsgi_temp_path {p}/tmp/uwsgi;
  scgi_temp_path {p}/tmp/scgi;
  include {p}/conf/gearbox-upstream.conf;
  server {{
    listen 127.0.0.1:{self.proxy};
    location / {{
      {location}
    }}
  }}
  server {{
    listen 127.0.0.1:{self.ref};
    default_type text/plain;
    location / {{
      return 200 "hello world\\n";
    }}
  }}
}}
"""
        with open(self.conf, "w") as f:
            f.write(text)
        shutil.copy(self.conf, os.path.join(self.confdir, f"nginx-{self.tag}.conf"))
        r = sh(["nginx", "-p", p, "-e", f"{p}/logs/error.log", "-c", self.conf, "-t"])
        if r.returncode != 0:
            raise RuntimeError(f"nginx -t failed: {r.stderr}")

    def start(self, sock):
        self.write_config(sock)
        p = self.prefix
        self.proc = subprocess.Popen(
            ["nginx", "-p", p, "-e", f"{p}/logs/error.log", "-c", self.conf, "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        STARTED.append(self.proc)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited {self.proc.returncode}; see {p}/logs/error.log")
            if http_get_ok("127.0.0.1", self.ref, "/") and len(self.workers()) >= 1:
                return
            time.sleep(0.05)
        raise RuntimeError("nginx did not start")

    def workers(self):
        return [q for q in proc_tree(self.proc.pid) if q != self.proc.pid]

    def error_lines(self):
        try:
            with open(os.path.join(self.prefix, "logs", "error.log")) as f:
                return [ln for ln in f if re.search(r"\[(error|crit|alert|emerg)\]", ln)]
        except OSError:
            return []

    def stop(self):
        stop_proc(self.proc, signal.SIGQUIT, 10)
        STARTED.remove(self.proc)
        errs = self.error_lines()
        try:
            shutil.copy(os.path.join(self.prefix, "logs", "error.log"),
                        os.path.join(self.logdir, f"nginx-{self.tag}-error.log"))
        except OSError:
            pass
        return errs


# --- load generators -------------------------------------------------------------

def _ms(value, unit):
    v = float(value)
    return {"us": v / 1000, "ms": v, "s": v * 1000, "m": v * 60000}[unit]


def parse_wrk(out):
    r = {"requests": 0, "rps": 0.0, "p50_ms": None, "p75_ms": None, "p90_ms": None,
         "p99_ms": None, "err_connect": 0, "err_read": 0, "err_write": 0, "err_timeout": 0,
         "non2xx": 0}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", out)
    if m:
        r["requests"] = int(m.group(1))
        r["elapsed_s"] = _ms(m.group(2), m.group(3)) / 1000
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    for pct in ("50", "75", "90", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
        if m:
            r[f"p{pct}_ms"] = _ms(m.group(1), m.group(2))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        r["err_connect"], r["err_read"], r["err_write"], r["err_timeout"] = map(int, m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    r["errors"] = r["err_connect"] + r["err_read"] + r["err_write"] + r["err_timeout"]
    return r


def parse_httperf(out):
    r = {}

    def grab(key, pattern, conv=float):
        m = re.search(pattern, out)
        r[key] = conv(m.group(1)) if m else None

    grab("connections", r"Total: connections (\d+)", int)
    grab("requests", r"Total: connections \d+ requests (\d+)", int)
    grab("replies", r"replies (\d+) test-duration", int)
    grab("duration_s", r"test-duration ([\d.]+) s")
    grab("request_rate", r"Request rate: ([\d.]+) req/s")
    grab("reply_rate_avg", r"Reply rate \[replies/s\]: min [\d.]+ avg ([\d.]+)")
    grab("reply_rate_min", r"Reply rate \[replies/s\]: min ([\d.]+)")
    grab("response_ms", r"Reply time \[ms\]: response ([\d.]+)")
    grab("conn_time_median_ms", r"Connection time \[ms\]: min [\d.]+ avg [\d.]+ max [\d.]+ median ([\d.]+)")
    grab("conn_time_max_ms", r"Connection time \[ms\]: min [\d.]+ avg [\d.]+ max ([\d.]+)")
    m = re.search(r"Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)", out)
    for i, k in enumerate(("s1xx", "s2xx", "s3xx", "s4xx", "s5xx")):
        r[k] = int(m.group(i + 1)) if m else None
    m = re.search(r"Errors: total (\d+) client-timo (\d+) socket-timo (\d+) connrefused (\d+) connreset (\d+)", out)
    if m:
        r["errors"], r["client_timo"], r["socket_timo"], r["connrefused"], r["connreset"] = map(int, m.groups())
    m = re.search(r"Errors: fd-unavail (\d+) addrunavail (\d+) ftab-full (\d+) other (\d+)", out)
    if m:
        r["fd_unavail"], r["addrunavail"], r["ftab_full"], r["err_other"] = map(int, m.groups())
    if r.get("s2xx") is not None and r.get("duration_s"):
        r["rps"] = r["s2xx"] / r["duration_s"]  # successful replies per second
    else:
        r["rps"] = 0.0
    return r


class Bench:
    def __init__(self, args, binary, out):
        self.args = args
        self.binary = binary
        self.out = out
        self.runs = []
        self.idle = []
        self.notes = []
        self.confdir = os.path.join(out, "configs")
        self.logdir = os.path.join(out, "logs")
        os.makedirs(self.confdir, exist_ok=True)
        os.makedirs(self.logdir, exist_ok=True)
        # Short path: unix socket paths are limited to 107 bytes.
        self.work = tempfile.mkdtemp(prefix="gearbox-bench.")
        os.chmod(self.work, 0o755)  # nginx's workers (nobody) reach the socket in it
        self.nginx_snippets = None
        self.done = 0
        self.total = 0

    # One wrk point. `cpu` maps a name to a callable returning the pids to measure.
    def wrk(self, server, path, workload, url, conc, duration, cpu, rss_of=None, tag=None,
            gearbox=None, nginx=None):
        cmd = ["wrk", "-t1", f"-c{conc}", f"-d{duration}s", "--timeout", "2s", "--latency", url]
        st0 = gearbox.status() if gearbox else None
        ne0 = len(nginx.error_lines()) if nginx else None
        before = {k: cpu_seconds(f()) for k, f in cpu.items()}
        noise = Noise(cpu)
        t = time.monotonic()
        p = sh(cmd, timeout=duration + 30)
        wall = time.monotonic() - t
        after = {k: cpu_seconds(f()) for k, f in cpu.items()}
        r = parse_wrk(p.stdout)
        noise.done(r)
        r.update(kind="wrk", server=server, path=path, workload=workload, conc=conc,
                 duration=duration, wall_s=wall, command=" ".join(cmd), tag=tag)
        if p.returncode != 0 or "requests in" not in p.stdout:
            r["tool_error"] = (p.stdout + p.stderr)[-400:]
        for k in cpu:
            used = after[k] - before[k]
            r[f"{k}_cpu_s"] = used
            r[f"{k}_cpu_us_per_req"] = used * 1e6 / r["requests"] if r["requests"] else None
        if rss_of:
            r["rss_kib"] = rss_kib(rss_of())
        if nginx:
            r["nginx_error_lines"] = len(nginx.error_lines()) - ne0
        status_delta(r, st0, gearbox.status() if gearbox else None)
        self.done += 1
        self.runs.append(r)
        log(f"{server:<13} {path:<6} {workload:<8} c={conc:<4} {r['rps']:>9.0f} req/s  "
            f"p50 {fmt_ms(r['p50_ms'])}  p99 {fmt_ms(r['p99_ms'])}  "
            f"err {r['errors']} (c{r['err_connect']}/r{r['err_read']}/w{r['err_write']}/t{r['err_timeout']}) "
            f"non2xx {r['non2xx']}" + cpu_note(r, cpu)
            + (f"  accepts/req {r['accepts_per_req']:.2f}" if r.get("accepts_per_req") is not None else "")
            + (f"  busiest worker {100 * r['busiest_worker_share']:.0f}%" if r.get("busiest_worker_share") else "")
            + (f"  nginx errors {r['nginx_error_lines']}" if r.get("nginx_error_lines") else "")
            + (f"  NOISY: other jobs used {r['foreign_cpu_cores']:.2f} cores"
               if (r.get("foreign_cpu_cores") or 0) > NOISY_CORES else "")
            + (f"  [{tag}]" if tag else "") + ("" if tag == "warmup" else f"  ({self.done}/{self.total})"))
        return r

    def warmup(self, server, path, url, cpu):
        self.wrk(server, path, "hello", url, 16, 1, cpu, tag="warmup")
        self.runs.pop()
        self.done -= 1

    def httperf(self, server, path, workload, port, uri, num_conn, cpu, gearbox=None, nginx=None):
        cmd = ["httperf", "--hog", "--timeout", "2", "--server", "127.0.0.1", "--port", str(port),
               "--uri", uri, "--rate", "100", "--num-conn", str(num_conn), "--num-call", "10"]
        st0 = gearbox.status() if gearbox else None
        ne0 = len(nginx.error_lines()) if nginx else None
        before = {k: cpu_seconds(f()) for k, f in cpu.items()}
        noise = Noise(cpu)
        p = sh(cmd, timeout=num_conn / 100 + 60)
        after = {k: cpu_seconds(f()) for k, f in cpu.items()}
        r = parse_httperf(p.stdout)
        noise.done(r)
        r.update(kind="httperf", server=server, path=path, workload=workload,
                 offered_rps=1000, num_conn=num_conn, command=" ".join(cmd))
        if p.returncode != 0 or r.get("replies") is None:
            r["tool_error"] = (p.stdout + p.stderr)[-400:]
        for k in cpu:
            used = after[k] - before[k]
            r[f"{k}_cpu_s"] = used
            r[f"{k}_cpu_us_per_req"] = used * 1e6 / r["s2xx"] if r.get("s2xx") else None
        if nginx:
            r["nginx_error_lines"] = len(nginx.error_lines()) - ne0
        status_delta(r, st0, gearbox.status() if gearbox else None)
        self.runs.append(r)
        log(f"{server:<13} {path:<6} {workload:<8} httperf seed: {r['rps']:>7.1f} req/s served "
            f"(2xx {r.get('s2xx')}/{num_conn * 10}, 5xx {r.get('s5xx')}, errors {r.get('errors')}, "
            f"client-timo {r.get('client_timo')}, response {r.get('response_ms')} ms)"
            + (f"  NOISY: other jobs used {r['foreign_cpu_cores']:.2f} cores"
               if (r.get("foreign_cpu_cores") or 0) > NOISY_CORES else ""))
        return r

    def idle_run(self, gb, count, duration):
        """Idle keep-alive connections held open while wrk puts a small load on /hello."""
        base_url = f"http://127.0.0.1:{gb.port}/hello"
        cpu = {"gearboxd": gb.pids}
        conc = 8
        self.wrk(gb.label, "direct", "idle", base_url, conc, duration, cpu, gb.pids, tag="idle-baseline",
                 gearbox=gb)
        time.sleep(0.3)
        rss0, slab0 = rss_kib(gb.pids()), slab_kib()
        cmd = [sys.executable, os.path.join(HERE, "idle_clients.py"), "--port", str(gb.port),
               "--count", str(count), "--setup-timeout", "60", "--hold-timeout", "120"]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        STARTED.append(p)
        res = {"kind": "idle", "server": gb.label, "count": count, "command": " ".join(cmd),
               "rss0_kib": rss0}
        try:
            line = read_line(p, 90)
            res.update(parse_kv(line))
            time.sleep(0.5)
            res["rss1_kib"] = rss_kib(gb.pids())
            slab1 = slab_kib()
            p.stdin.write("check\n")
            p.stdin.flush()
            res["held_before"] = parse_kv(read_line(p, 10)).get("open")
            r = self.wrk(gb.label, "direct", "idle", base_url, conc, duration, cpu, gb.pids,
                         tag="idle-loaded", gearbox=gb)
            res["rss2_kib"] = rss_kib(gb.pids())
            p.stdin.write("check\n")
            p.stdin.flush()
            res["held_after"] = parse_kv(read_line(p, 10)).get("open")
            held = res["held_before"] or 0
            res["rss_delta_kib"] = res["rss1_kib"] - rss0
            # Only meaningful when the server kept (most of) them: prefork gives idle
            # keep-alive connections up as soon as another client waits.
            res["bytes_per_conn"] = res["rss_delta_kib"] * 1024 / held if held >= count / 2 else None
            if slab0 is not None and slab1 is not None and held:
                # Both ends of each connection, and whatever else the host did meanwhile.
                res["kernel_slab_bytes_per_conn"] = (slab1 - slab0) * 1024 / held
            res["p50_ms"], res["p99_ms"] = r["p50_ms"], r["p99_ms"]
            res["rps"], res["errors"], res["non2xx"] = r["rps"], r["errors"], r["non2xx"]
            res["wrk_conc"] = conc
        finally:
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            STARTED.remove(p)
        self.idle.append(res)
        bpc = res.get("bytes_per_conn")
        log(f"{gb.label:<13} idle: {res.get('answered')}/{count} answered, held {res.get('held_before')}"
            f" -> {res.get('held_after')}, RSS {rss0} -> {res.get('rss1_kib')} KiB "
            f"({'n/a' if bpc is None else f'{bpc:.0f} B/conn'}), /hello p99 {fmt_ms(res.get('p99_ms'))}")
        return res


def status_delta(r, st0, st1):
    """Figures from gearboxd's /status taken before and after a run."""
    if not (st0 and st1):
        return
    # Keep-alive at work: connections accepted per request served (the /status
    # requests themselves are one each and subtracted).
    served = st1["requests"] - st0["requests"] - 1
    r["gb_requests"] = served
    r["gb_accepted"] = st1["accepted"] - st0["accepted"] - 1
    r["accepts_per_req"] = r["gb_accepted"] / served if served > 0 else None
    # How evenly the workers (loops, threads, children) shared the requests.
    per = [st1["workers"].get(k, 0) - v for k, v in st0["workers"].items()]
    per = [x for x in per if x > 0]
    if served > 0 and len(st0["workers"]) > 1:
        r["worker_requests"] = per
        r["busiest_worker_share"] = max(per) / sum(per) if per else None


def read_line(p, timeout):
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        raise RuntimeError("idle_clients.py did not answer in time")
    line = p.stdout.readline()
    if not line:
        raise RuntimeError("idle_clients.py exited")
    return line


def parse_kv(line):
    out = {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = float(v) if "." in v else int(v)
            except ValueError:
                out[k] = v
    return out


def fmt_ms(v):
    return "   -   " if v is None else f"{v:6.2f}ms"


def cpu_note(r, cpu):
    parts = []
    for k in cpu:
        v = r.get(f"{k}_cpu_us_per_req")
        if v is not None:
            parts.append(f"{k} {v:.1f}us/req")
    return ("  cpu " + ", ".join(parts)) if parts else ""


# --- the plan ----------------------------------------------------------------------

def plan(args):
    if args.quick:
        return {
            "configs": ["async-1", "threadpool-64", "prefork-8"],
            "direct": {"hello": [16, 64], "wait1ms": [16, 64], "wait20ms": [16], "burn": [16]},
            "nginx": {"hello": [16], "wait1ms": [16]},
            "ref_conc": [16, 64],
            "duration": args.duration or 1,
            "seed": {"wait1ms": ["async-1"], "hello": []},
            "seed_conns": 200,
            "alternation": {"rounds": 1, "conc": 64},
            "idle": {"configs": ["async-1"], "count": args.idle_count or 1000},
        }
    conc = [1, 16, 64, 256]
    return {
        "configs": [c[0] for c in CONFIGS],
        "direct": {w: conc for w in WORKLOADS},
        "nginx": {"hello": conc, "wait1ms": conc},
        "ref_conc": conc,
        "duration": args.duration or 3,
        "seed": {"wait1ms": [c[0] for c in CONFIGS],
                 "hello": ["async-1", "threadpool-1", "prefork-1"]},
        "seed_conns": 1000,
        "alternation": {"rounds": 3, "conc": 64},
        "idle": {"configs": ["async-1", "threadpool-64", "prefork-8"],
                 "count": args.idle_count or 10000},
    }


def count_points(pl):
    n = len(pl["ref_conc"]) + 2 * pl["alternation"]["rounds"] + 2 * len(pl["idle"]["configs"])
    for _ in pl["configs"]:
        n += sum(len(v) for v in pl["direct"].values()) + sum(len(v) for v in pl["nginx"].values())
    return n


def estimate(pl):
    d = pl["duration"] + 0.4
    pts = len(pl["ref_conc"])
    for _ in pl["configs"]:
        pts += sum(len(v) for v in pl["direct"].values()) + sum(len(v) for v in pl["nginx"].values())
    pts += 2 * pl["alternation"]["rounds"]
    seeds = len(pl["seed"]["wait1ms"]) + len(pl["seed"]["hello"]) + 1
    idle = len(pl["idle"]["configs"]) * (2 * d + pl["idle"]["count"] / 1000 + 3)
    return pts * d + seeds * (pl["seed_conns"] / 100 + 1) + idle + 2 * len(pl["configs"])


def build_gearboxd():
    if os.environ.get("GEARBOXD"):
        return os.environ["GEARBOXD"], "from $GEARBOXD"
    bazel = os.environ.get("BAZEL", "bazel").split()
    startup = os.environ.get("BAZEL_STARTUP_OPTS", "").split()
    flags = os.environ.get("BENCH_BAZEL_FLAGS", "").split()
    cmd = bazel + startup + ["build", "--symlink_prefix=/"] + flags + ["//daemon:gearboxd"]
    log("building: " + " ".join(cmd))
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        raise RuntimeError("bazel build //daemon:gearboxd failed")
    p = subprocess.run(bazel + startup + ["info"] + flags + ["bazel-bin"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    binary = os.path.join(p.stdout.strip(), "daemon", "gearboxd")
    return binary, " ".join(cmd)


def main():
    ap = argparse.ArgumentParser(description="gearbox benchmark (see tests/bench/README.md)")
    ap.add_argument("--quick", action="store_true", help="smoke pass (< 2 minutes), exit 1 if not sane")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--duration", type=int, help="seconds per wrk point (default 3, quick 1)")
    ap.add_argument("--only", help="comma-separated config labels to run (default: the plan's)")
    ap.add_argument("--idle-count", type=int, help="idle connections (default 10000, quick 1000)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()

    for tool in ("nginx", "wrk", "httperf"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is not installed (.ci/setup installs it)")
    pl = plan(args)
    if args.only:
        pl["configs"] = [c for c in args.only.split(",") if c]
        for c in pl["configs"]:
            if c not in CONFIG_BY_LABEL:
                sys.exit(f"bench: unknown config {c} (valid: {', '.join(CONFIG_BY_LABEL)})")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    meta = bench_report.machine_facts()
    meta["mode"] = "quick" if args.quick else "full"
    meta["loadavg_start"] = open("/proc/loadavg").read().split()[:3]
    meta["nofile"] = __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE)[0]
    log(f"bench: mode {meta['mode']}, out {out}, load average {' '.join(meta['loadavg_start'])}, "
        f"RLIMIT_NOFILE {meta['nofile']}, estimated {estimate(pl) / 60:.1f} min of load")
    if float(meta["loadavg_start"][0]) > 1.0:
        log("bench: WARNING: load average > 1.0: the machine is busy, figures will be noisy")

    binary, build_cmd = build_gearboxd()
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench: no gearboxd at {binary}")
    meta["gearboxd"] = binary
    meta["gearboxd_version"] = sh([binary, "-v"]).stdout.strip()
    meta["build"] = build_cmd
    bench = Bench(args, binary, out)
    bench.total = count_points(pl)
    d = pl["duration"]
    failed = None
    try:
        # Reference: nginx answering by itself, 1 worker.
        ngx = Nginx(bench.work, bench.confdir, bench.logdir, "ref")
        ngx.start(os.path.join(bench.work, "http.sock"))
        meta["nginx_snippets"] = ngx.snippets
        log(f"nginx reference (return 200, 1 worker) on :{ngx.ref}; snippets: {ngx.snippets}")
        ncpu = {"nginx": ngx.workers}
        bench.warmup("nginx", "ref", f"http://127.0.0.1:{ngx.ref}/", ncpu)
        for c in pl["ref_conc"]:
            bench.wrk("nginx", "ref", "hello", f"http://127.0.0.1:{ngx.ref}/", c, d, ncpu)
        if pl["seed"]["hello"]:
            bench.httperf("nginx", "ref", "hello", ngx.ref, "/", pl["seed_conns"], ncpu)
        ngx.stop()

        for label in pl["configs"]:
            cfg = CONFIG_BY_LABEL[label]
            gb = Gearbox(binary, cfg, bench.work, bench.logdir, bench.confdir)
            gb.start()
            ngx = Nginx(bench.work, bench.confdir, bench.logdir, label)
            ngx.start(gb.sock)
            log(f"=== {label}: gearboxd pid {gb.proc.pid} ({len(gb.pids())} processes) on :{gb.port} "
                f"and {gb.sock}; nginx :{ngx.proxy} -> socket, :{ngx.ref} return 200 ===")
            gcpu = {"gearboxd": gb.pids}
            both = {"gearboxd": gb.pids, "nginx": ngx.workers}
            direct = f"http://127.0.0.1:{gb.port}"
            proxied = f"http://127.0.0.1:{ngx.proxy}"
            bench.warmup(label, "direct", direct + "/hello", gcpu)
            for w, concs in pl["direct"].items():
                for c in concs:
                    bench.wrk(label, "direct", w, direct + WORKLOADS[w], c, d, gcpu, gb.pids, gearbox=gb)
            for w, concs in pl["nginx"].items():
                for c in concs:
                    bench.wrk(label, "nginx", w, proxied + WORKLOADS[w], c, d, both, gb.pids,
                              gearbox=gb, nginx=ngx)
            for w in ("hello", "wait1ms"):
                if label in pl["seed"][w]:
                    bench.httperf(label, "nginx", w, ngx.proxy, WORKLOADS[w], pl["seed_conns"], both,
                                  gearbox=gb, nginx=ngx)
            if label == "async-1":
                # Target 1: the same client, alternating between gearboxd and nginx.
                alt = pl["alternation"]
                for _ in range(alt["rounds"]):
                    bench.wrk(label, "direct", "hello", direct + "/hello", alt["conc"], d, gcpu,
                              gb.pids, tag="alternation", gearbox=gb)
                    bench.wrk("nginx", "ref", "hello", f"http://127.0.0.1:{ngx.ref}/", alt["conc"], d,
                              {"nginx": ngx.workers}, tag="alternation")
            if label in pl["idle"]["configs"]:
                bench.idle_run(gb, pl["idle"]["count"], d)
            errs = ngx.stop()
            if errs:
                bench.notes.append(f"{label}: nginx error.log has {len(errs)} error lines, e.g. "
                                   f"`{errs[0].strip()[:200]}`")
            rc = gb.stop()
            if rc != 0:
                bench.notes.append(f"{label}: gearboxd exited {rc} after SIGTERM")
    except Exception as e:  # noqa: BLE001 - report, keep what was measured
        failed = f"{type(e).__name__}: {e}"
        log(f"bench: ERROR: {failed}")
    finally:
        stop_all()
        shutil.rmtree(bench.work, ignore_errors=True)

    meta["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    meta["elapsed_s"] = round(time.monotonic() - T0, 1)
    meta["duration_per_point_s"] = d
    checks = bench_report.quick_checks(bench.runs, bench.idle) if args.quick else []
    report = bench_report.Report(meta, pl, CONFIGS, WORKLOADS, bench.runs, bench.idle,
                                 bench.notes, checks, failed)
    report.write(out, plots=not args.no_plots)
    log(f"bench: wrote {out}/results.md, results.json" + ("" if args.no_plots else " and plots"))
    for line in report.target_lines():
        log("target: " + line)
    bad = [c for c in checks if not c["ok"]]
    for c in bad:
        log(f"check FAILED: {c['what']}: {c['detail']}")
    if failed:
        return 2
    if args.quick:
        log(f"quick: {len(checks) - len(bad)}/{len(checks)} checks passed")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    def _term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, _term)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        stop_all()
        sys.exit(130)
