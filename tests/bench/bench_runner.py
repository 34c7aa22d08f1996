"""bench_runner.py: Bench, which measures and records one run: a wrk point (or the
rounds of one), the httperf seed profile, and idle or slowloris connections held
(idle_clients.py) under a small load; with the helpers around a run: waiting for the
servers to settle, gearboxd's /status deltas, the log line's figures. Standard
library only."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import bench_report
from bench_servers import (HERE, STARTED, Noise, cpu_seconds, log, parse_httperf, parse_wrk, rss_kib, sh,
                           slab_kib, wait_until)


# A run during which other processes used more CPU than this (in cores) is flagged.
NOISY_CORES = bench_report.NOISY_CORES


def taken_all(gb, st0, opened, kind):
    """True when gearboxd has accepted `opened` more connections than at st0
    and, for slowloris clients under prefork, parked them all with its head
    guard: what the figures of a held set assume."""
    st, st0 = gb.status() or {}, st0 or {}
    if st.get("accepted", 0) < st0.get("accepted", 0) + opened:
        return False
    return kind != "slow" or gb.model != "prefork" or \
        st.get("parked", 0) - st0.get("parked", 0) >= opened

SETTLE_BOUND_S = 5.0


def settle(cpu, window=0.2, quiet_s=0.02):
    """Waits until the servers just measured are idle again: under `quiet_s` of CPU
    (the processes of every group in `cpu`) in a `window`, at most SETTLE_BOUND_S.
    What wrk left queued when it stopped (under prefork at c=256, a few hundred
    requests: about 100 ms of pg_sleep queries) otherwise runs into the next run,
    and that run's first requests wait twice as long: A then B read 0.954 with the
    same binary on both sides. Returns the seconds waited (None: never quiet)."""
    last = [None]

    def quiet():
        used = sum(cpu_seconds(f()) for f in cpu.values())
        ok = last[0] is not None and used - last[0] < quiet_s
        last[0] = used
        return ok

    t = time.monotonic()
    return round(time.monotonic() - t, 2) if wait_until(quiet, SETTLE_BOUND_S, every=window) else None


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
        self.timerwait = None  # libtimerwait.so for /tw (main() builds it)
        self.pg = None  # the Postgres cluster of the pg* workloads (main() starts it)

    # One wrk point. `cpu` maps a name to a callable returning the pids to measure.
    def wrk(self, server, path, workload, url, conc, duration, cpu, rss_of=None, tag=None,
            gearbox=None, nginx=None):
        """One wrk point; through `nginx`, the run records nginx's transport."""
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
                 duration=duration, wall_s=wall, command=" ".join(cmd), tag=tag,
                 settle_s=settle(cpu))
        if nginx and path == "nginx":
            r["transport"] = nginx.transport
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
        log(f"{server:<13} {bench_report.route(r):<10} {workload:<8} c={conc:<4} {r['rps']:>9.0f} req/s  "
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

    def wrk_rounds(self, rounds, server, path, workload, url, conc, duration, cpu, rss_of=None,
                   gearbox=None):
        """One point measured `rounds` times, kept as one record: the round with the median
        req/s, with the median p50 and p99 of all rounds (a 3 s run's sub-millisecond p99
        swings with one disturbance) and the failures of every round summed. The rounds'
        own figures are kept in "rounds"."""
        if rounds <= 1:
            return self.wrk(server, path, workload, url, conc, duration, cpu, rss_of, gearbox=gearbox)
        got = [self.wrk(server, path, workload, url, conc, duration, cpu, rss_of, gearbox=gearbox)
               for _ in range(rounds)]
        del self.runs[-rounds:]
        self.done -= rounds - 1
        by_rps = sorted(got, key=lambda r: r["rps"])
        r = dict(by_rps[len(by_rps) // 2])
        for k in ("p50_ms", "p99_ms"):
            vals = [g[k] for g in got if g.get(k) is not None]
            r[k] = statistics.median(vals) if len(vals) == len(got) else None
        for k in ("errors", "err_connect", "err_read", "err_write", "err_timeout", "non2xx"):
            r[k] = sum(g.get(k) or 0 for g in got)
        errs = [g["tool_error"] for g in got if g.get("tool_error")]
        if errs:
            r["tool_error"] = errs[0]
        r["rounds"] = [{k: g.get(k) for k in ("rps", "p50_ms", "p99_ms", "foreign_cpu_cores")}
                       for g in got]
        self.runs.append(r)
        log(f"{server:<13} {bench_report.route(r):<10} {workload:<8} c={conc:<4} {r['rps']:>9.0f} req/s  "
            f"p50 {fmt_ms(r['p50_ms'])}  p99 {fmt_ms(r['p99_ms'])}  [median of {rounds} rounds]")
        return r

    def warmup(self, server, path, url, cpu, workload="hello", conns=16):
        self.wrk(server, path, workload, url, conns, 1, cpu, tag="warmup")
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
        if nginx and path == "nginx":
            r["transport"] = nginx.transport
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
        log(f"{server:<13} {bench_report.route(r):<10} {workload:<8} httperf seed: {r['rps']:>7.1f} req/s served "
            f"(2xx {r.get('s2xx')}/{num_conn * 10}, 5xx {r.get('s5xx')}, errors {r.get('errors')}, "
            f"client-timo {r.get('client_timo')}, response {r.get('response_ms')} ms)"
            + (f"  NOISY: other jobs used {r['foreign_cpu_cores']:.2f} cores"
               if (r.get("foreign_cpu_cores") or 0) > NOISY_CORES else ""))
        return r

    def idle_run(self, gb, count, duration, kind="idle"):
        """Idle keep-alive connections (kind "idle") or slowloris clients (kind "slow":
        request heads that never end) held open while wrk puts a small load on /hello."""
        base_url = f"http://127.0.0.1:{gb.port}/hello"
        cpu = {"gearboxd": gb.pids}
        conc = 8
        base = self.wrk(gb.label, "direct", kind, base_url, conc, duration, cpu, gb.pids,
                        tag=f"{kind}-baseline", gearbox=gb)
        gb.wait_quiet()
        rss0, slab0 = rss_kib(gb.pids()), slab_kib()
        st0 = gb.status()
        cmd = idle_clients_command(gb.port, count, kind)
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        STARTED.append(p)
        res = {"kind": kind, "server": gb.label, "count": count, "command": " ".join(cmd),
               "rss0_kib": rss0}
        try:
            st_held, slab1 = wait_held(p, gb, st0, res, count, kind)
            r = self.wrk(gb.label, "direct", kind, base_url, conc, duration, cpu, gb.pids,
                         tag=f"{kind}-loaded", gearbox=gb)
            res["rss2_kib"] = rss_kib(gb.pids())
            res["held_after"] = still_open(p)
            memory_figures(res, count, rss0, slab0, slab1)
            load_figures(res, r, base, conc)
            parked_figures(res, st0, st_held, gb.status())
        finally:
            end_idle_clients(p)
        self.idle.append(res)
        bpc = res.get("bytes_per_conn")
        log(f"{gb.label:<13} {kind}: {res.get('answered')}/{count} answered, held {res.get('held_before')}"
            f" -> {res.get('held_after')}, RSS {rss0} -> {res.get('rss1_kib')} KiB "
            f"({'n/a' if bpc is None else f'{bpc:.0f} B/conn'}), /hello p99 {fmt_ms(res.get('p99_ms'))}")
        return res


def idle_clients_command(port, count, kind):
    """The idle_clients.py command line for `count` connections of `kind` to `port`."""
    cmd = [sys.executable, os.path.join(HERE, "idle_clients.py"), "--port", str(port),
           "--count", str(count), "--setup-timeout", "60", "--hold-timeout", "120"]
    if kind == "slow":
        cmd.append("--slow")
    return cmd


def still_open(p):
    """Asks idle_clients.py `p` how many of its connections the server has not closed."""
    p.stdin.write("check\n")
    p.stdin.flush()
    return parse_kv(read_line(p, 10)).get("open")


def wait_held(p, gb, st0, res, count, kind):
    """Reads idle_clients.py's "ready" line into `res`, waits for gearboxd to take
    every held connection, and records RSS and the connections held then. Returns
    gearboxd's /status and the kernel's slab KiB with the connections held."""
    line = read_line(p, 90)
    res.update(parse_kv(line))
    # The figures are read once the server has taken every held
    # connection: accepted, and under prefork a slow head handed to
    # the head guard (a child gives it up after its park grace).
    opened = int(res.get("opened") or count)
    res["all_taken"] = bool(wait_until(lambda: taken_all(gb, st0, opened, kind), 10))
    res["rss1_kib"] = rss_kib(gb.pids())
    slab1 = slab_kib()
    res["held_before"] = still_open(p)
    return gb.status(), slab1


def memory_figures(res, count, rss0, slab0, slab1):
    """What the held connections cost: gearboxd's RSS and the kernel's slab per connection."""
    held = res["held_before"] or 0
    res["rss_delta_kib"] = res["rss1_kib"] - rss0
    # Only meaningful when the server kept (most of) them: prefork gives idle
    # keep-alive connections up as soon as another client waits.
    res["bytes_per_conn"] = res["rss_delta_kib"] * 1024 / held if held >= count / 2 else None
    if slab0 is not None and slab1 is not None and held:
        # Both ends of each connection, and whatever else the host did meanwhile.
        res["kernel_slab_bytes_per_conn"] = (slab1 - slab0) * 1024 / held


def load_figures(res, r, base, conc):
    """The loaded wrk run `r`'s figures (`base`: the baseline run before the clients)."""
    res["p50_ms"], res["p99_ms"] = r["p50_ms"], r["p99_ms"]
    res["rps"], res["errors"], res["non2xx"] = r["rps"], r["errors"], r["non2xx"]
    res["wrk_conc"] = conc
    # Other jobs' CPU during either wrk run: the rate ratio is unreliable then.
    res["foreign_cpu_cores"] = max(r.get("foreign_cpu_cores") or 0,
                                   base.get("foreign_cpu_cores") or 0)


def parked_figures(res, st0, st_held, st1):
    """Connections gearboxd's head guard parked, from /status before the clients
    (st0), with them held (st_held) and after the load (st1)."""
    if st0 and st_held and st1:
        # prefork: slow heads its head guard took over, counted before the load
        # starts (only the held clients connected meanwhile). On a loaded host a
        # wrk connection whose head is late can be parked too: counted apart.
        res["parked"] = st_held.get("parked", 0) - st0.get("parked", 0)
        res["parked_under_load"] = st1.get("parked", 0) - st_held.get("parked", 0)


def end_idle_clients(p):
    """Closes idle_clients.py's stdin (it closes its connections and exits) and
    waits for it, killing it after 20 s."""
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
