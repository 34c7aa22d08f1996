"""bench_servers.py: the pieces bench.py drives: gearboxd and nginx started and
stopped by PID, /proc figures (CPU time, RSS, other jobs' CPU), and the wrk/httperf
output parsers. Standard library only."""
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

from bench_toml import merge_toml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from waiting import wait_until  # noqa: E402  (the tools' one poll loop)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SNIPPETS = os.path.join(ROOT, "packaging", "nginx")
CLK_TCK = os.sysconf("SC_CLK_TCK")
T0 = time.monotonic()

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
    """utime + stime of the processes (all their threads, live and exited), plus
    cutime + cstime: the children they reaped. A process that exits during a run
    (a postgres backend whose client left) moves from the live sum into its
    parent's (the postmaster's) reaped sum instead of dropping out."""
    total = 0
    for pid in pids:
        try:
            f = _stat_fields(pid)
            total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
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


# The embedded default's routes (config/default.toml), written out because a file
# with a [[route]] of its own gets no defaults, plus /tw: the timerwait example
# module (sdk/examples/timerwait.c), the same wait as /sleep but through a timerfd
# and the handler fd wait instead of a timer.
ROUTES = """
[[route]]
path = "/hello"
handler = "text"
body = "hello world\\n"

[[route]]
path = "/sleep"
handler = "wait"
ms = 1
max_ms = 10000

[[route]]
path = "/echo"
handler = "echo"

[[route]]
path = "/burn"
handler = "burn"
us = 200

[[route]]
path = "/status"
handler = "status"
"""


def pg_routes(socket_dir, model):
    """The real-database workloads' routes (the postgres handler) on the bench's
    cluster. pool: an async loop keeps up to 64 queries in flight; a blocking
    worker uses one connection at a time, so 1 (README: connection sizing)."""
    dsn = f"host={socket_dir} dbname=postgres user=postgres"
    pool = 64 if model == "async" else 1
    return f"""
[[route]]
path = "/pgsleep"
handler = "postgres"
dsn = "{dsn}"
query = "SELECT pg_sleep(0.001)"
pool = {pool}

[[route]]
path = "/pglookup"
handler = "postgres"
dsn = "{dsn}"
query = "SELECT id, v FROM bench_rows WHERE id = $1::int"
params = ["id"]
pool = {pool}
"""


class Postgres:
    """A throwaway PostgreSQL cluster for the real-database workloads: initdb in
    `work`, listening on a unix socket there only, run as the postgres user (the
    server refuses root); bench_rows holds ROWS rows with a primary key (the
    indexed point lookup). Stopped by its postmaster's PID."""

    ROWS = 100000

    def __init__(self, work, logdir):
        self.dir = os.path.join(work, "pg")
        self.data = os.path.join(self.dir, "data")
        self.logfile = os.path.join(logdir, "postgres.log")
        self.proc = None
        bins = sorted((d for d in os.listdir("/usr/lib/postgresql") if d.isdigit()), key=int) \
            if os.path.isdir("/usr/lib/postgresql") else []
        if not bins:
            raise RuntimeError("no PostgreSQL server under /usr/lib/postgresql/*/bin: "
                               "apt-get install postgresql (.ci/setup installs it)")
        self.bin = os.path.join("/usr/lib/postgresql", bins[-1], "bin")
        self.user = {} if os.geteuid() != 0 else {"user": "postgres", "group": "postgres",
                                                  "extra_groups": []}

    def sql(self, statement):
        return sh(["psql", "-X", "-q", "-At", "-h", self.dir, "-U", "postgres", "-d", "postgres",
                   "-c", statement], timeout=120)

    def start(self):
        os.makedirs(self.dir)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        r = subprocess.run([os.path.join(self.bin, "initdb"), "-D", self.data, "-A", "trust", "-U",
                            "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                           capture_output=True, text=True, timeout=120, **self.user)
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stdout}{r.stderr}")
        out = open(self.logfile, "w")
        # max_connections: async-2 x 64 x 2 routes = 256 at most, plus psql.
        self.proc = subprocess.Popen(
            [os.path.join(self.bin, "postgres"), "-D", self.data, "-c", "listen_addresses=",
             "-c", f"unix_socket_directories={self.dir}", "-c", "max_connections=300",
             "-c", "fsync=off", "-c", "shared_buffers=64MB",
             # No autovacuum: its workers come and go, and the CPU of an exited
             # process drops out of the live sum (cpu_seconds); bench_rows is
             # analyzed once and never written.
             "-c", "autovacuum=off"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **self.user)
        STARTED.append(self.proc)
        if not wait_until(lambda: self.proc.poll() is not None or
                          self.sql("SELECT 1").returncode == 0, 30, every=0.1) or \
                self.proc.poll() is not None:
            raise RuntimeError(f"postgres did not start; see {self.logfile}")
        r = self.sql(f"CREATE TABLE bench_rows (id int PRIMARY KEY, v text); "
                     f"INSERT INTO bench_rows SELECT i, md5(i::text) FROM generate_series(1, {self.ROWS}) i; "
                     f"ANALYZE bench_rows;")
        if r.returncode != 0:
            raise RuntimeError(f"creating bench_rows failed: {r.stderr}")

    def pids(self):
        return proc_tree(self.proc.pid) if self.proc else []

    def version(self):
        return sh([os.path.join(self.bin, "postgres"), "--version"]).stdout.strip()

    def stop(self):
        # SIGINT: fast shutdown (SIGTERM would wait for gearboxd's connections).
        if self.proc and self.proc.poll() is None:
            stop_proc(self.proc, signal.SIGINT, 10)


def build_timerwait(work):
    """sdk/examples/timerwait.c built the way a module author builds it."""
    so = os.path.join(work, "libtimerwait.so")
    cmd = ["cc", "-O2", "-shared", "-fPIC", "-I", os.path.join(ROOT, "sdk", "include"),
           os.path.join(ROOT, "sdk", "examples", "timerwait.c"), "-o", so]
    r = sh(cmd)
    if r.returncode != 0:
        raise RuntimeError(f"building timerwait failed: {' '.join(cmd)}\n{r.stderr}")
    return so, " ".join(cmd)


class Gearbox:
    """One gearboxd: `cfg` is a CONFIGS row; `tag` names its files (A/B sides);
    `extra` is TOML merged into the generated config (merge_toml); `sock_name` its
    unix socket in `work` (two running at once need two); `timerwait` a built
    libtimerwait.so served at /tw (build_timerwait)."""

    def __init__(self, binary, cfg, work, logdir, confdir, tag=None, extra=None, sock_name="http.sock",
                 timerwait=None, pg=None):
        self.label, self.model, self.section, self.key, self.size, _ = cfg
        self.binary = binary
        self.port = free_port()
        self.sock = os.path.join(work, sock_name)
        name = f"{tag}-{self.label}" if tag else self.label
        self.conf = os.path.join(confdir, f"gearbox-{name}.toml")
        self.logfile = os.path.join(logdir, f"gearboxd-{name}.log")
        self.extra = extra
        self.timerwait = timerwait
        self.pg = pg  # a Postgres cluster's socket dir: the /pg* routes
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
        if self.timerwait:
            text += f"""
[[module]]
name = "timerwait"
path = "{self.timerwait}"

[[route]]
path = "/tw"
handler = "timerwait"
max_ms = 10000
""" + ROUTES
        if self.pg:
            text += ("" if self.timerwait else ROUTES) + pg_routes(self.pg, self.model)
        if self.extra:
            text = merge_toml(text, self.extra)
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
        def serving():
            if self.proc.poll() is not None:
                return True
            if not (http_get_ok("127.0.0.1", self.port, "/hello") and os.path.exists(self.sock)):
                return False
            # prefork: every child forked.
            return self.model != "prefork" or len(proc_tree(self.proc.pid)) >= 1 + self.size
        ok = wait_until(serving, 20)
        if self.proc.poll() is not None:
            raise RuntimeError(f"gearboxd {self.label} exited {self.proc.returncode}; see {self.logfile}")
        if not ok:
            raise RuntimeError(f"gearboxd {self.label} did not answer within 20 s; see {self.logfile}")

    def pids(self):
        return proc_tree(self.proc.pid)

    def status(self):
        """gearboxd's /status counters (requests, connections accepted), or None."""
        body = http_get("127.0.0.1", self.port, "/status?full", timeout=10.0)
        try:
            j = json.loads(body.split(b"\r\n\r\n", 1)[1])
            return {"requests": j["requests"], "accepted": j["connections"]["accepted"],
                    "open": j["connections"].get("open", 0),
                    "parked": j["connections"].get("parked", 0),
                    "workers": {w["slot"]: w["requests"] for w in j.get("workers", [])}}
        except (AttributeError, IndexError, ValueError, KeyError, TypeError):
            return None


    def wait_quiet(self, timeout=5.0):
        """Waits until the connections of a run that ended are closed on the
        server's side too (only /status's own is open): what the next figure
        (a memory reading, the next run) starts from. False after timeout."""
        return bool(wait_until(lambda: (self.status() or {}).get("open", 2) <= 1, timeout))
    def stop(self):
        rc = stop_proc(self.proc, signal.SIGTERM, 15)
        STARTED.remove(self.proc)
        return rc


# How load reaches a gearboxd: straight, or through nginx over each transport.
PATHS = ("direct", "nginx-unix", "nginx-tcp")


class Fronted:
    """A gearboxd with its own nginx for each nginx path of `paths` (PATHS): what
    the A/B sides and the ratio rounds run."""

    def __init__(self, gb, work, confdir, logdir, nginx_tag, paths):
        self.gb = gb
        self.nginx = {}
        self._dirs = (work, confdir, logdir)
        self._nginx_tag = nginx_tag
        self._paths = [p for p in paths if p.startswith("nginx-")]

    def start(self):
        self.gb.start()
        for p in self._paths:
            n = Nginx(*self._dirs, self._nginx_tag, transport=p.split("-", 1)[1])
            self.nginx[p] = n  # before start(): stop() must find it if start fails
            n.start(self.gb)

    def via(self, path):
        """(bench.wrk's path, port, CPU sources, nginx or None) of `path`."""
        n = self.nginx.get(path)
        cpu = {"gearboxd": self.gb.pids}
        if n:
            cpu["nginx"] = n.workers
        return ("nginx" if n else "direct"), (n.proxy if n else self.gb.port), cpu, n

    def stop(self, notes, what):
        """Stops the nginx instances, then gearboxd; a gearboxd that exits non-zero
        becomes a line of `notes` naming `what`."""
        for n in self.nginx.values():
            if n.proc is not None:
                n.stop()
        if self.gb.proc is not None:
            rc = self.gb.stop()
            if rc != 0:
                notes.append(f"{what}: gearboxd exited {rc} after SIGTERM")


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
    """nginx, 1 worker, temp prefix: the shipped gearbox snippets in front of
    gearboxd (port `proxy`), and `return 200` by itself (port `ref`). `transport`
    is how nginx reaches gearboxd: "unix" (the shipped socket, path rewritten) or
    "tcp" (the shipped upstream with its server line set to 127.0.0.1:PORT, as a
    multi-host setup runs; keepalive 256 and the rest unchanged)."""

    def __init__(self, work, confdir, logdir, tag, transport="unix"):
        if transport not in ("unix", "tcp"):
            raise ValueError(f"nginx transport {transport!r}: want unix or tcp")
        self.transport = transport
        if transport == "tcp":
            tag = f"{tag}-tcp"
        self.prefix = os.path.join(work, f"nginx-{tag}")
        self.tag = tag
        self.proxy = free_port()
        self.ref = free_port()
        self.conf = os.path.join(self.prefix, "conf", "nginx.conf")
        self.confdir = confdir
        self.logdir = logdir
        self.proc = None
        self.snippets = "shipped"

    def upstream_for(self, gb):
        """The address nginx's upstream gives for gearboxd `gb` (None: the reference
        server alone, the upstream points at a socket nobody listens on)."""
        if gb is None:
            return f"unix:{os.path.dirname(self.prefix)}/http.sock"
        return f"127.0.0.1:{gb.port}" if self.transport == "tcp" else f"unix:{gb.sock}"

    def write_config(self, sock, server):
        for d in ("conf", "logs", "tmp"):
            os.makedirs(os.path.join(self.prefix, d), exist_ok=True)
        upstream_file = os.path.join(SNIPPETS, "gearbox-upstream.conf")
        http_file = os.path.join(SNIPPETS, "gearbox-http.conf")
        sockdir = os.path.dirname(sock)
        if os.path.exists(upstream_file) and os.path.exists(http_file):
            with open(upstream_file) as f:
                up = f.read()
            shipped = "server unix:/run/gearbox/http.sock"
            if shipped not in up:
                raise RuntimeError(f"{upstream_file} has no `{shipped}` line to point at gearboxd")
            up = up.replace(shipped, f"server {server}")
            up = up.replace("unix:/run/gearbox/", f"unix:{sockdir}/")  # the FastCGI upstream
            location = f"include {http_file};"
        else:  # an equivalent inline config, until packaging/nginx ships one
            self.snippets = "inline (packaging/nginx/ snippets missing)"
            up = (f"upstream gearbox_http {{\n  server {server} max_fails=0;\n"
                  "  keepalive 256;\n  keepalive_timeout 60s;\n  keepalive_requests 1000;\n}\n")
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
        shutil.copy(os.path.join(p, "conf", "gearbox-upstream.conf"),
                    os.path.join(self.confdir, f"nginx-{self.tag}-upstream.conf"))
        r = sh(["nginx", "-p", p, "-e", f"{p}/logs/error.log", "-c", self.conf, "-t"])
        if r.returncode != 0:
            raise RuntimeError(f"nginx -t failed: {r.stderr}")

    def start(self, gb=None):
        """Starts nginx in front of gearboxd `gb` (a Gearbox), over self.transport."""
        self.upstream = self.upstream_for(gb)
        sock = gb.sock if gb else self.upstream[len("unix:"):]
        self.write_config(sock, self.upstream)
        p = self.prefix
        self.proc = subprocess.Popen(
            ["nginx", "-p", p, "-e", f"{p}/logs/error.log", "-c", self.conf, "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        STARTED.append(self.proc)
        ok = wait_until(lambda: self.proc.poll() is not None or (
            http_get_ok("127.0.0.1", self.ref, "/") and len(self.workers()) >= 1), 10)
        if self.proc.poll() is not None:
            raise RuntimeError(f"nginx exited {self.proc.returncode}; see {p}/logs/error.log")
        if not ok:
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


