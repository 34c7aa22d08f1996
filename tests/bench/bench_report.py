"""bench_report.py: results.md, results.json, gnuplot PNGs, targets and quick checks
for bench.py. Standard library only (plots need gnuplot; without it they are skipped
and results.md says so)."""
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess

import bench_ratios

# A run during which other processes used more CPU than this (in cores) is flagged.
NOISY_CORES = 0.15


def _first_line(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"
    text = (p.stdout + p.stderr).strip().splitlines()
    lines = [ln for ln in text if "warning" not in ln.lower()]
    return lines[0].strip() if lines else "?"


def machine_facts():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem = f.readline().split()[1]
    except OSError:
        mem = "?"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "cpu": cpu,
        "mem_total_kib": mem,
        "gcc": _first_line(["gcc", "--version"]),
        "nginx": _first_line(["nginx", "-v"]),
        "wrk": _first_line(["wrk", "-v"]),
        "httperf": _first_line(["httperf", "-V"]),
        "gnuplot": _first_line(["gnuplot", "--version"]),
        "python": platform.python_version(),
    }


def _f(v, digits=0, unit=""):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}{unit}"


def _ratio(a, b):
    return a / b if a is not None and b else None


def route(r):
    """How the load reached the server: "direct", "ref" (nginx `return 200`),
    "nginx unix" or "nginx tcp" (runs from before the TCP transport: unix)."""
    if r.get("path") == "nginx":
        return f"nginx {r.get('transport') or 'unix'}"
    return r.get("path")


# Plots and their titles per route; "nginx unix" keeps the file name it had
# before the TCP transport existed.
PLOT_ROUTES = (("direct", "direct", "direct to gearboxd"),
               ("nginx unix", "nginx", "through nginx (1 worker) over the unix socket"),
               ("nginx tcp", "nginx-tcp", "through nginx (1 worker) over TCP"))


def _parked(held):
    """The slow table's parked cell: heads the head guard took while only the slow
    clients were connected, plus any wrk connection parked under load."""
    if not held["server"].startswith("prefork"):
        return "–"
    extra = held.get("parked_under_load")
    return f"{held.get('parked', '–')}" + (f" (+{extra} under load)" if extra else "")


def _baseline(runs, held):
    """The wrk run on the same server without the held (idle or slow) connections."""
    return next((r for r in runs if r.get("tag") == f"{held['kind']}-baseline"
                 and r["server"] == held["server"]), None)


# --- quick checks ------------------------------------------------------------------

def quick_checks(runs, idle):
    checks = []

    def check(what, ok, detail, fatal=True):
        checks.append({"what": what, "ok": bool(ok) or not fatal, "warning": not ok and not fatal,
                       "detail": detail})

    wrk = [r for r in runs if r["kind"] == "wrk"]
    for r in wrk:
        name = f"{r['server']} {route(r)} {r['workload']} c={r['conc']}" + (f" ({r['tag']})" if r.get("tag") else "")
        check(f"{name}: served requests", r["rps"] > 0 and r["requests"] > 0 and not r.get("tool_error"),
              f"{r['rps']:.0f} req/s, {r['requests']} requests" + (f"; {r['tool_error']}" if r.get("tool_error") else ""))
        strict = not (r["server"].startswith("prefork") and r["path"] == "direct")
        if strict:
            check(f"{name}: no errors, no non-2xx", r["errors"] == 0 and r["non2xx"] == 0,
                  f"errors {r['errors']}, non-2xx {r['non2xx']}")
        else:
            # A prefork child gives up its keep-alive connection when another client
            # waits. It announces that with "Connection: close"; a connection dropped
            # under a request in flight shows as a wrk read/write error (nginx would
            # retry it): a warning. Refusals, timeouts and non-2xx fail.
            check(f"{name}: no refused/timed-out requests, no non-2xx",
                  r["err_connect"] == 0 and r["err_timeout"] == 0 and r["non2xx"] == 0,
                  f"connect {r['err_connect']}, timeout {r['err_timeout']}, non-2xx {r['non2xx']}")
            check(f"{name}: no keep-alive connection dropped under a request",
                  r["err_read"] == 0 and r["err_write"] == 0,
                  f"read {r['err_read']}, write {r['err_write']}", fatal=False)
        if r["workload"] in ("wait1ms", "timerwait1ms") and r["p50_ms"] is not None:
            check(f"{name}: p50 reflects the 1 ms wait", 0.9 <= r["p50_ms"] <= 50, f"p50 {r['p50_ms']:.2f} ms")
        if r["workload"] == "pgsleep1ms" and r["p50_ms"] is not None:
            check(f"{name}: p50 reflects pg_sleep(0.001)", 1.0 <= r["p50_ms"] <= 100,
                  f"p50 {r['p50_ms']:.2f} ms")
        if r["workload"] in ("pgsleep1ms", "pglookup") and r["requests"] > 1000:
            check(f"{name}: postgres CPU time measured", (r.get("postgres_cpu_s") or 0) > 0,
                  f"{r.get('postgres_cpu_s') or 0:.2f} s")
        if r["workload"] in ("wait20ms", "timerwait20ms") and r["p50_ms"] is not None:
            check(f"{name}: p50 reflects the 20 ms wait", 19 <= r["p50_ms"] <= 200, f"p50 {r['p50_ms']:.2f} ms")
        if r.get("gearboxd_cpu_s") is not None and r["requests"] > 1000:
            check(f"{name}: gearboxd CPU time measured", r["gearboxd_cpu_s"] > 0, f"{r['gearboxd_cpu_s']:.2f} s")
    for r in runs:
        if r["kind"] != "httperf" or r["server"] == "nginx":
            continue
        want = r["num_conn"] * 10
        name = f"{r['server']} {route(r)} {r['workload']} httperf seed"
        if r["server"].startswith(("async", "threadpool")) or r["server"] == "prefork-8":
            check(f"{name}: all {want} replies 2xx, no errors, ~1,000 req/s",
                  r.get("s2xx") == want and r.get("errors") == 0 and (r.get("rps") or 0) >= 900,
                  f"2xx {r.get('s2xx')}, 5xx {r.get('s5xx')}, errors {r.get('errors')}, {r.get('rps', 0):.0f} req/s")
    for i in idle:
        if i["kind"] == "slow":
            n = i["count"]
            base = _baseline(runs, i)
            ratio = _ratio(i.get("rps"), base["rps"] if base else None)
            check(f"{i['server']} slow: {n} slowloris heads started and all held (none cut before "
                  f"header_timeout)", i.get("answered") == n and i.get("held_before") == n
                  and i.get("held_after") == n,
                  f"started {i.get('answered')}, held {i.get('held_before')} -> {i.get('held_after')}")
            check(f"{i['server']} slow: /hello answered without errors while they trickle",
                  i.get("errors") == 0 and i.get("non2xx") == 0,
                  f"errors {i.get('errors')}, non-2xx {i.get('non2xx')}")
            # A rate measured beside other jobs' load is a figure, not a verdict:
            # the two runs compared are seconds apart.
            noisy = (i.get("foreign_cpu_cores") or 0) > NOISY_CORES
            check(f"{i['server']} slow: /hello keeps >= 30% of its rate while they trickle",
                  ratio is not None and ratio >= 0.3,
                  f"{_f(i.get('rps'))} vs {_f(base['rps'] if base else None)} req/s without "
                  f"({_f(ratio, 2)}x)"
                  + (f"; NOISY (other jobs used {i['foreign_cpu_cores']:.2f} cores): reported, "
                     "not asserted" if noisy else ""), fatal=not noisy)
            if i["server"].startswith("prefork"):
                check(f"{i['server']} slow: the head guard took every slow head", i.get("parked") == n,
                      f"parked {i.get('parked')} of {n}")
            continue
        n = i["count"]
        check(f"{i['server']} idle: {n} connections opened and answered",
              i.get("answered") == n and i.get("failed") == 0,
              f"answered {i.get('answered')}, failed {i.get('failed')}")
        if not i["server"].startswith("prefork"):
            check(f"{i['server']} idle: all {n} held open", i.get("held_before") == n and i.get("held_after") == n,
                  f"held {i.get('held_before')} -> {i.get('held_after')}")
            check(f"{i['server']} idle: RSS per connection measured, /hello answered meanwhile",
                  i.get("bytes_per_conn") is not None and (i.get("rps") or 0) > 0 and i.get("errors") == 0,
                  f"{_f(i.get('bytes_per_conn'))} B/conn, {_f(i.get('rps'))} req/s, errors {i.get('errors')}")
    return checks


# --- targets -----------------------------------------------------------------------

def _find(runs, **kw):
    out = []
    for r in runs:
        if all(r.get(k) == v for k, v in kw.items()):
            out.append(r)
    return out


def _one(runs, **kw):
    found = [r for r in _find(runs, **kw) if not r.get("tag")]
    return found[-1] if found else None


def compute_targets(runs, idle, plan):
    T = []

    def target(group, what, met, numbers):
        T.append({"group": group, "what": what,
                  "status": "not measured" if met is None else ("met" if met else "missed"),
                  "numbers": numbers})

    # (1) hello direct: async 1 loop vs nginx return 200 (1 worker), alternating.
    g = [r for r in runs if r.get("tag") == "alternation" and r["server"] == "async-1"]
    n = [r for r in runs if r.get("tag") == "alternation" and r["server"] == "nginx"]
    if g and n:
        gr = statistics.median(r["rps"] for r in g)
        nr = statistics.median(r["rps"] for r in n)
        gc = sum(r["gearboxd_cpu_s"] for r in g) * 1e6 / max(1, sum(r["requests"] for r in g))
        nc = sum(r["nginx_cpu_s"] for r in n) * 1e6 / max(1, sum(r["requests"] for r in n))
        conc = g[0]["conc"]
        target("1", f"hello direct, async 1 loop >= 0.95x nginx `return 200` (1 worker) throughput "
               f"(wrk -t1 -c{conc}, {len(g)} alternating rounds, medians)",
               gr >= 0.95 * nr, f"{gr:,.0f} vs {nr:,.0f} req/s = {gr / nr:.2f}x")
        target("1", "hello direct, async 1 loop server CPU per request <= 1.0x nginx's",
               gc <= nc, f"{gc:.1f} vs {nc:.1f} µs/req = {gc / nc:.2f}x")
    else:
        target("1", "hello direct, async 1 loop vs nginx return 200", None, "not run")
    c64 = 64
    hello64 = _Hello64(runs, c64)
    base = hello64.get("async-2", "direct")
    base1 = _one(runs, server="async-1", path="direct", workload="hello", conc=c64)
    for label in ("threadpool-64", "prefork-8"):
        r = hello64.get(label, "direct")
        if r and base:
            extra = f"; sweep's async-1 ({base1['rps']:,.0f}): {r['rps'] / base1['rps']:.2f}x" if base1 else ""
            target("1", f"hello direct c={c64}, {label} >= 0.7x async (2-core size, loops=2){hello64.how}",
                   r["rps"] >= 0.7 * base["rps"],
                   f"{r['rps']:,.0f} vs {base['rps']:,.0f} req/s = {r['rps'] / base['rps']:.2f}x{extra}")
        else:
            target("1", f"hello direct c={c64}, {label} >= 0.7x async", None, "not run")

    # (2) wait1ms at the highest concurrency.
    cmax = max(plan["direct"].get("wait1ms", [0]) or [0])
    note = "" if cmax == 256 else f" (quick: c={cmax}, not 256)"
    w = _one(runs, server="async-1", path="direct", workload="wait1ms", conc=cmax)
    h = _one(runs, server="async-1", path="direct", workload="hello", conc=cmax)
    if w and h:
        target("2", f"wait1ms direct c={cmax}, async 1 loop >= 0.9x its own hello rate{note}",
               w["rps"] >= 0.9 * h["rps"], f"{w['rps']:,.0f} vs {h['rps']:,.0f} req/s = {w['rps'] / h['rps']:.2f}x")
    for label in ("prefork-1", "prefork-8"):
        r = _one(runs, server=label, path="direct", workload="wait1ms", conc=cmax)
        if r:
            N = int(label.split("-")[1])
            want = 0.9 * N * 1000
            target("2", f"wait1ms direct c={cmax}, {label} >= 0.9 x {N} x 1000 = {want:,.0f} req/s{note}",
                   r["rps"] >= want, f"{r['rps']:,.0f} req/s = {r['rps'] / (N * 1000):.2f}x of {N * 1000:,}")
    for label in ("threadpool-1", "threadpool-64"):
        r = _one(runs, server=label, path="direct", workload="wait1ms", conc=cmax)
        hh = _one(runs, server=label, path="direct", workload="hello", conc=cmax)
        if r and hh:
            T_ = int(label.split("-")[1])
            cap = min(T_ * 1000, hh["rps"])
            target("2", f"wait1ms direct c={cmax}, {label} >= 0.9 x min({T_} x 1000, its hello rate)"
                   f" = {0.9 * cap:,.0f} req/s{note}",
                   r["rps"] >= 0.9 * cap, f"{r['rps']:,.0f} req/s (hello {hh['rps']:,.0f}) = {r['rps'] / cap:.2f}x")

    # (3) the seed profile through nginx with the 1 ms wait.
    for r in [x for x in runs if x["kind"] == "httperf" and x["workload"] == "wait1ms" and x["path"] == "nginx"]:
        want = r["num_conn"] * 10
        holds = (r.get("s2xx") == want and r.get("errors") == 0 and (r.get("s5xx") or 0) == 0
                 and (r.get("rps") or 0) >= 980)
        nums = (f"{r.get('rps', 0):,.0f} req/s served, 2xx {r.get('s2xx')}/{want}, 5xx {r.get('s5xx')}, "
                f"errors {r.get('errors')} (client-timo {r.get('client_timo')}), "
                f"avg response {r.get('response_ms')} ms")
        if r["server"] in ("prefork-1", "threadpool-1"):
            # One worker cannot do 1,000 x (1 ms + overhead) per second: the seed's one
            # PHP process. (threadpool with 1 thread is the same situation.)
            what = "prefork 1 child" if r["server"] == "prefork-1" else "threadpool 1 thread (like prefork-1)"
            target("3", f"seed wait1ms via nginx: {what} shows the collapse (< 1,000 req/s or errors)",
                   not holds, nums)
        elif r["server"].startswith("prefork"):
            target("3", f"seed wait1ms via nginx: {r['server']} recovers (full 1,000 req/s, 0 errors)", holds, nums)
        else:
            target("3", f"seed wait1ms via nginx: {r['server']} serves the full 1,000 req/s with 0 errors",
                   holds, nums)

    # (4) idle keep-alive connections, async.
    for i in idle:
        if i["kind"] == "idle" and i["server"].startswith("async"):
            bpc = i.get("bytes_per_conn")
            ok = bpc is not None and bpc <= 1024 and (i.get("p99_ms") or 1e9) < 5
            note = "" if i["count"] >= 10000 else f" (only {i['count']} connections)"
            target("4", f"idle: {i['count']:,} idle keep-alive connections cost {i['server']} <= 1 KiB each "
                   f"in RSS, /hello p99 < 5 ms{note}", ok,
                   f"{_f(bpc)} B/conn (RSS {i['rss0_kib']:,} -> {i.get('rss1_kib', 0):,} KiB, held "
                   f"{i.get('held_before')}), p99 {_f(i.get('p99_ms'), 2)} ms at {_f(i.get('rps'))} req/s")
    _nginx_targets(hello64, target)
    _blocking_targets(runs, target, hello64)
    return T


class _Hello64:
    """/hello at c=64 by (configuration, route): the medians of the alternating ratio
    rounds (bench_ratios.py) where the run has them, else the sweep's point."""

    def __init__(self, runs, conc):
        self.runs, self.conc = runs, conc
        self.rounds = bench_ratios.medians(runs, route)
        n = max((m["rounds"] for m in self.rounds.values()), default=0)
        self.how = (f" ({n} alternating rounds with all three running, medians)" if self.rounds
                    else " (sweep points)")

    def get(self, label, route_name):
        m = self.rounds.get((label, route_name))
        if m:
            return m
        if self.rounds:
            return None  # measured in rounds: no mixing with sweep points
        return next((r for r in self.runs if r["kind"] == "wrk" and r["server"] == label
                     and route(r) == route_name and r["workload"] == "hello"
                     and r["conc"] == self.conc and not r.get("tag")), None)


def _blocking_targets(runs, target, hello64, c256=256):
    """(6) the blocking models' throughput issue: direct /hello c=64 against async-2
    (threadpool-64 >= 0.8x, prefork-8 >= 0.5x), and fairness through nginx at c=256
    (p99 <= 3x p50 for every model, each workload and transport measured there)."""
    base = hello64.get("async-2", "direct")
    for label, want in (("threadpool-64", 0.8), ("prefork-8", 0.5)):
        r = hello64.get(label, "direct")
        what = f"hello direct c={hello64.conc}, {label} >= {want}x async-2{hello64.how}"
        if r and base and base["rps"]:
            target("6", what, r["rps"] >= want * base["rps"],
                   f"{r['rps']:,.0f} vs {base['rps']:,.0f} req/s = {r['rps'] / base['rps']:.2f}x")
        else:
            target("6", what, None, "not run")
    fair = [r for r in runs if r["kind"] == "wrk" and route(r).startswith("nginx")
            and r["conc"] == c256 and not r.get("tag") and r.get("p50_ms")]
    if not fair:
        target("6", f"fairness through nginx c={c256}: p99 <= 3x p50, every model", None, "not run")
    for r in fair:
        ratio = r["p99_ms"] / r["p50_ms"]
        target("6", f"fairness {route(r)} {r['workload']} c={c256}, {r['server']}: p99 <= 3x p50",
               ratio <= 3.0, f"p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms = {ratio:.1f}x")


def _nginx_targets(hello64, target):
    """(5) hello through nginx at c=64, over each transport: the blocking models at
    their 2-core sizes against async-2 behind the same nginx."""
    for transport in ("unix", "tcp"):
        base = hello64.get("async-2", f"nginx {transport}")
        for label, want in (("threadpool-64", 0.85), ("prefork-8", 0.7)):
            what = (f"hello through nginx over {transport} c={hello64.conc}, {label} >= {want}x async-2"
                    f"{hello64.how}")
            r = hello64.get(label, f"nginx {transport}")
            if r and base and base["rps"]:
                target("5", what, r["rps"] >= want * base["rps"],
                       f"{r['rps']:,.0f} vs {base['rps']:,.0f} req/s = {r['rps'] / base['rps']:.2f}x")
            else:
                target("5", what, None, "not run")


# --- the report ----------------------------------------------------------------------

class Report:
    def __init__(self, meta, plan, configs, workloads, runs, idle, notes, checks, failed):
        self.meta, self.plan, self.configs, self.workloads = meta, plan, configs, workloads
        self.runs, self.idle, self.notes, self.checks, self.failed = runs, idle, notes, checks, failed
        self.targets = compute_targets(runs, idle, plan)
        self.plots = []

    def target_lines(self):
        return [f"({t['group']}) {t['status'].upper()}: {t['what']}: {t['numbers']}" for t in self.targets]

    def write(self, out, plots=True):
        if plots:
            self.make_plots(out)
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump({"meta": self.meta, "plan": self.plan,
                       "configs": [dict(zip(("label", "model", "section", "key", "size", "why"), c))
                                   for c in self.configs],
                       "runs": self.runs, "idle": self.idle, "targets": self.targets,
                       "checks": self.checks, "notes": self.notes, "error": self.failed}, f, indent=1)
        with open(os.path.join(out, "results.md"), "w") as f:
            f.write(self.markdown())

    # Plots: throughput vs concurrency, one line per server configuration.
    def series(self, workload, path):
        """[(label, [(conc, rps)])] for one workload over one route (see route())."""
        lines = []
        servers = [c[0] for c in self.configs if c[0] in self.plan["configs"]]
        if workload == "hello":
            servers = ["nginx"] + servers
        for s in servers:
            p = "ref" if s == "nginx" else path
            pts = sorted((r["conc"], r["rps"]) for r in self.runs
                         if r["kind"] == "wrk" and r["server"] == s and route(r) == p
                         and r["workload"] == workload and not r.get("tag"))
            if pts:
                lines.append(("nginx return 200 (1 worker)" if s == "nginx" else s, pts))
        return lines

    def make_plots(self, out):
        gp = shutil.which("gnuplot")
        if not gp:
            self.notes.append("gnuplot is not installed (apt-get install gnuplot-nox): no plots")
            return
        terms = subprocess.run([gp, "-e", "set terminal"], capture_output=True, text=True).stdout + \
            subprocess.run([gp, "-e", "set terminal"], capture_output=True, text=True).stderr
        term = "pngcairo size 900,540 font ',10'" if "pngcairo" in terms else "png size 900,540"
        jobs = []
        for w in self.workloads:
            for path, suffix, what in PLOT_ROUTES:
                lines = self.series(w, path)
                if not any(len(p) for _, p in lines) or all(n.startswith("nginx") for n, _ in lines):
                    continue
                name = f"{w}-{suffix}"
                with open(os.path.join(out, name + ".dat"), "w") as f:
                    for label, pts in lines:
                        f.write(f"# {label}\n")
                        for c, rps in pts:
                            f.write(f"{c} {rps:.1f}\n")
                        f.write("\n\n")
                plots = ", ".join(f"'{name}.dat' index {i} with linespoints lw 2 pt 7 title '{label}'"
                                  for i, (label, _) in enumerate(lines))
                # Waits span 50 to 150,000 req/s between models: a log scale shows both ends.
                yscale = ("set logscale y\nset yrange [10:*]\n" if w.startswith("wait")
                          else "set yrange [0:*]\n")
                script = (f"set terminal {term}\nset output '{name}.png'\n"
                          f"set title '{w} ({self.workloads[w]}), {what}: wrk -t1, "
                          f"{self.meta['duration_per_point_s']} s per point'\n"
                          "set logscale x 2\nset xlabel 'concurrent connections (wrk -c)'\n"
                          "set ylabel 'requests/s'\n" + yscale + "set grid\n"
                          "set key outside right top\n"
                          f"plot {plots}\n")
                jobs.append((name, script))
        idle = [i for i in self.idle if i["kind"] == "idle" and i.get("bytes_per_conn") is not None]
        if idle:
            with open(os.path.join(out, "idle.dat"), "w") as f:
                for i in idle:
                    f.write(f"{i['server']} {i['bytes_per_conn']:.1f}\n")
            jobs.append(("idle", f"set terminal {term}\nset output 'idle.png'\n"
                         f"set title 'daemon RSS per idle keep-alive connection ({idle[0]['count']} idle)'\n"
                         f"set style fill solid 0.6\nset boxwidth 0.6\nset xrange [-0.6:{len(idle) - 0.4}]\n"
                         "set yrange [0:*]\nset grid y\n"
                         "set ylabel 'bytes per connection'\nset arrow from graph 0, first 1024 to "
                         "graph 1, first 1024 nohead dt 2\n"
                         "plot 'idle.dat' using 0:2:xtic(1) with boxes notitle\n"))
        seed = [r for r in self.runs if r["kind"] == "httperf" and r["workload"] == "wait1ms"]
        if seed:
            with open(os.path.join(out, "seed.dat"), "w") as f:
                for r in seed:
                    f.write(f"{r['server']} {r.get('rps') or 0:.1f} {r.get('errors') or 0} {r.get('s5xx') or 0}\n")
            jobs.append(("seed", f"set terminal {term}\nset output 'seed.png'\n"
                         "set title 'seed profile through nginx, /sleep?ms=1: httperf --rate 100 "
                         "--num-conn N --num-call 10 (1,000 req/s offered)'\n"
                         f"set style fill solid 0.6\nset boxwidth 0.6\nset xrange [-0.6:{len(seed) - 0.4}]\n"
                         "set yrange [0:1150]\nset grid y\nset ylabel 'successful replies/s'\n"
                         "plot 'seed.dat' using 0:2:xtic(1) with boxes title '2xx/s', "
                         "'' using 0:2:(sprintf('%d errors, %d 5xx', $3, $4)) with labels offset 0,1 notitle\n"))
        for name, script in jobs:
            with open(os.path.join(out, name + ".gp"), "w") as f:
                f.write(script)
            p = subprocess.run([gp, name + ".gp"], cwd=out, capture_output=True, text=True, timeout=60)
            if p.returncode == 0:
                self.plots.append(name + ".png")
            else:
                self.notes.append(f"gnuplot {name}.gp failed: {p.stderr.strip()[:200]}")

    def markdown(self):
        m, pl = self.meta, self.plan
        L = []
        add = L.append
        add(f"# gearbox benchmark ({m['mode']} run)\n")
        add("Generated by `tests/bench/run.sh` (`tests/bench/bench.py`). The PHP-vs-Tornado experiment "
            "(nginx in front, `httperf --rate 100 --num-conn 1000 --num-call 10` against hello world and "
            "against a 1 ms wait) redone with gearbox's three concurrency models, plus closed-loop "
            "`wrk` sweeps, a CPU-bound route and idle keep-alive connections.\n")
        if self.failed:
            add(f"**The run stopped early: {self.failed}.** The figures below are what was measured.\n")
        la = float(m["loadavg_start"][0])
        measured = [r for r in self.runs if r.get("foreign_cpu_cores") is not None]
        noisy = [r for r in measured if r["foreign_cpu_cores"] > NOISY_CORES]
        worst = max((r["foreign_cpu_cores"] for r in measured), default=0)
        if la > 1.0 or len(noisy) > 0.05 * max(1, len(measured)):
            add(f"> **Noisy machine:** load average {' '.join(m['loadavg_start'])} at the start; other jobs "
                f"used more than {NOISY_CORES} cores during {len(noisy)} of {len(measured)} runs (worst "
                f"{worst:.2f} cores; marked ≈). Absolute figures and close ratios are unreliable; redo the run "
                "on a quiet machine.\n")
        else:
            add(f"Quiet machine: load average {' '.join(m['loadavg_start'])} at the start; other jobs used more "
                f"than {NOISY_CORES} cores during {len(noisy)} of {len(measured)} runs (worst {worst:.2f} cores; "
                "marked ≈). (The load average at the end includes the benchmark itself.)\n")
        add("## Machine\n")
        add("| | |\n|---|---|")
        for k, label in (("date", "date"), ("nproc", "nproc"), ("cpu", "CPU"), ("mem_total_kib", "memory (KiB)"),
                         ("kernel", "kernel (`uname -r`)"), ("gcc", "gcc"), ("nginx", "nginx"), ("wrk", "wrk"),
                         ("httperf", "httperf"), ("gnuplot", "gnuplot"), ("python", "python3"),
                         ("gearboxd_version", "gearboxd"), ("build", "build"), ("nginx_snippets", "nginx snippets"),
                         ("nofile", "RLIMIT_NOFILE")):
            add(f"| {label} | `{m.get(k)}` |")
        add(f"| load average | start {' '.join(m['loadavg_start'])}, end {' '.join(m['loadavg_end'])} |")
        add(f"| elapsed | {m['elapsed_s']} s ({m['duration_per_point_s']} s per wrk point) |\n")

        add("## Configurations\n")
        add("| label | model | size | why |\n|---|---|---|---|")
        for c in self.configs:
            if c[0] in pl["configs"]:
                add(f"| {c[0]} | {c[1]} | `[{c[2]}] {c[3]} = {c[4]}` | {c[5]} |")
        add("| nginx | (reference) | `worker_processes 1` | nginx answering by itself: `return 200 \"hello world\\n\"` |\n")
        add("Every gearboxd runs at the shipped defaults except `model`, the size above, two listeners "
            "(TCP `127.0.0.1:PORT` for *direct* and *nginx tcp*, `unix:.../http.sock` for *nginx unix*) and "
            "`[limits] max_connections = 30000` (room for the idle test). nginx: 1 worker, `access_log off` "
            "(for the reference as well), the shipped `gearbox-upstream.conf` (its server line rewritten to "
            "the bench's socket, or to `127.0.0.1:PORT` for TCP; upstream `keepalive 256`, `max_fails=0` and "
            "the rest as shipped) and `gearbox-http.conf`. One nginx per transport. Generated files are in "
            "`configs/` (`nginx-LABEL.conf`: unix, `nginx-LABEL-tcp.conf`: TCP; each with its "
            "`-upstream.conf`, which the nginx.conf includes from PREFIX/conf/).\n")
        add("*direct* = wrk → gearboxd over TCP; *nginx unix* = wrk → nginx → unix socket → gearboxd; "
            "*nginx tcp* = wrk → nginx → TCP 127.0.0.1 → gearboxd (how a multi-host setup runs); "
            "*ref* = wrk → nginx `return 200`. All load is closed-loop `wrk -t1` (one client thread: "
            "on 2 cores the client needs one), `--timeout 2s`. CPU is utime+stime from `/proc/PID/stat` "
            "of gearboxd's master and every child (all threads), and of nginx's worker, before/after each "
            "run, divided by the requests wrk counted. RSS is the sum of VmRSS of gearboxd's processes after "
            "the run.\n")

        add("## Targets\n")
        add("Ratios measured in this run (not pass/fail tests).\n")
        add("| # | target | status | numbers |\n|---|---|---|---|")
        for t in self.targets:
            add(f"| {t['group']} | {t['what']} | **{t['status']}** | {t['numbers']} |")
        add("")
        if self.checks:
            bad = [c for c in self.checks if not c["ok"]]
            add(f"## Quick checks: {len(self.checks) - len(bad)}/{len(self.checks)} passed\n")
            for c in bad:
                add(f"- FAILED: {c['what']}: {c['detail']}")
            for c in self.checks:
                if c.get("warning"):
                    add(f"- warning: {c['what']}: {c['detail']}")
            add("")

        self._ratios(add)
        self._seed(add)
        self._fd_wait(add)
        for w in self.workloads:
            self._workload(add, w)
        self._idle(add)
        self._slow(add)
        add("## Notes\n")
        add("- prefork: a child serves one connection at a time and gives up a keep-alive connection when "
            "another client waits and no sibling is free. With more connections than children that means about "
            "one connection per request (*accepts/req* near 1). A connection dropped under a request in flight "
            "shows as a wrk *read*/*write* error in *direct* rows and, through nginx, as `writev() failed (32: "
            "Broken pipe) while sending request to upstream` (unix) or `upstream prematurely closed connection "
            "while reading response header from upstream` (TCP) in nginx's error log (column *nginx error "
            "lines*; nginx retries the request). Refused (`connect`) and `timeout` errors are requests that failed.")
        add("- *accepts/req*: connections gearboxd accepted per request it served during the run (from its "
            "`/status` counters). Near 0 means keep-alive works (wrk's and nginx's connections are reused); "
            "near 1 means one connection per request.")
        add("- *busiest worker*: the share of the run's requests served by the busiest loop, thread or child "
            "(from `/status?full`). With 2 async loops, 50% is an even split and 100% means one loop did "
            "all the work while the other idled.")
        add("- httperf busy-polls one CPU at 100% (its own design), so during seed runs the server has the "
            "other core only, as in the original experiment. Its figure here is successful (2xx) replies "
            "per second of test duration.")
        for n in self.notes:
            add(f"- {n}")
        add("")
        add("## Commands\n")
        add("```sh")
        add(f"# build\n{m['build']}")
        add("# each server configuration (configs/gearbox-LABEL.toml)\ngearboxd -c configs/gearbox-LABEL.toml")
        add("nginx -p PREFIX -e PREFIX/logs/error.log -c configs/nginx-LABEL.conf -g 'daemon off;'")
        add("# load: see every exact command (with ports) per table below and in results.json")
        add("```\n")
        return "\n".join(L) + "\n"

    def _ratios(self, add):
        """The alternating rounds behind the c=64 ratio targets (bench_ratios.py)."""
        med = bench_ratios.medians(self.runs, route)
        if not med:
            return
        spec = self.plan.get("ratios", {})
        add(f"## /hello c={spec.get('conc', 64)}: blocking models against async-2, alternating rounds\n")
        add(f"{', '.join(spec.get('configs', []))} ran at once, each behind its own nginx per transport; "
            "each round measured every path of every configuration back to back (the order rotates "
            "between rounds). Targets 1, 5 and 6 use these medians: one 3 s sweep point swings by 20-40% "
            "on this host with whatever else runs at that moment.\n")
        routes = [r for r in ("direct", "nginx unix", "nginx tcp") if any(k[1] == r for k in med)]
        add("| server | " + " | ".join(f"{r} req/s (spread)" for r in routes) + " |")
        add("|---|" + "---|" * len(routes))
        for label in spec.get("configs", []):
            cells = []
            for r in routes:
                m = med.get((label, r))
                cells.append(f"{m['rps']:,.0f} ({100 * m['spread']:.0f}%)" if m else "–")
            add(f"| {label} | " + " | ".join(cells) + " |")
        add(f"\n*spread* = (max − min) / median over the {max(m['rounds'] for m in med.values())} rounds.\n")
        self._profiles(add, spec, routes)

    def _profiles(self, add, spec, routes):
        """Syscalls and context switches per request, this run against the committed
        profile of the code before issue 19 (bench_ratios.BEFORE_FILE)."""
        now = bench_ratios.profiles(self.runs, route)
        if not now:
            return
        old = bench_ratios.before() or {}
        was = old.get("profile", {})
        add("Syscalls and context switches per request (`perf stat` on gearboxd's processes, every "
            f"thread, and on nginx's worker, over one more {self.plan.get('duration', 3)} s run of each cell, not in the medians: "
            "perf slows what it counts)"
            + (f"; *before*: the same pass on {old['commit']} ({old['date']}), the code when the "
               "throughput issue was filed" if old else "") + ".\n")
        add("| server | path | gearboxd syscalls | gearboxd switches | nginx syscalls | nginx switches |"
            "\n|---|---|---|---|---|---|")

        def cell(cur, prev, who, event):
            v = cur.get(who, {}).get(event)
            p = prev.get(who, {}).get(event) if prev else None
            if v is None:
                return "–"
            return f"{p:.2f} → {v:.2f}" if p is not None else f"{v:.2f}"

        for label in spec.get("configs", []):
            for r in routes:
                cur = now.get((label, r))
                if not cur:
                    continue
                prev = was.get(f"{label} {r}")
                add(f"| {label} | {r} | " + " | ".join(
                    cell(cur, prev, who, e) for who in ("gearboxd", "nginx")
                    for e in bench_ratios.PERF_EVENTS) + " |")
        add("")

    def _commands(self, add, runs):
        cmds = []
        for r in runs:
            if r["command"] not in cmds:
                cmds.append(r["command"])
        add("<details><summary>exact commands</summary>\n\n```sh")
        for c in cmds:
            add(c)
        add("```\n</details>\n")

    def _seed(self, add):
        seed = [r for r in self.runs if r["kind"] == "httperf"]
        if not seed:
            return
        add("## Seed profile: httperf through nginx\n")
        add(f"`httperf --hog --timeout 2 --rate 100 --num-conn {self.plan['seed_conns']} --num-call 10`: "
            "100 new connections/s, 10 requests each in sequence = 1,000 req/s offered.\n")
        add("| server | path | workload | served 2xx/s | 2xx | 5xx | errors (client-timo) | avg response ms "
            "| max conn ms | gearboxd µs/req | nginx µs/req | gearboxd accepts/req | nginx error lines "
            "| other jobs (cores) |")
        add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in seed:
            add(f"| {r['server']} | {route(r)} | {r['workload']} | {_f(r.get('rps'), 1)} | {r.get('s2xx')} | "
                f"{r.get('s5xx')} | {r.get('errors')} ({r.get('client_timo')}) | {r.get('response_ms')} | "
                f"{r.get('conn_time_max_ms')} | {_f(r.get('gearboxd_cpu_us_per_req'), 1)} | "
                f"{_f(r.get('nginx_cpu_us_per_req'), 1)} | {_f(r.get('accepts_per_req'), 3)} | "
                f"{'' if r.get('nginx_error_lines') is None else r['nginx_error_lines']} | "
                f"{_f(r.get('foreign_cpu_cores'), 2)} |")
        add("")
        if "seed.png" in self.plots:
            add("![seed](seed.png)\n")
        self._commands(add, seed)

    def _workload(self, add, w):
        runs = [r for r in self.runs if r["kind"] == "wrk" and r["workload"] == w and not r.get("tag")]
        if not runs:
            return
        add(f"## {w}: `{self.workloads[w]}`\n")
        concs = sorted({r["conc"] for r in runs})
        add("req/s (p99 ms) by concurrency; errors and CPU below.\n")
        add("| server | path | " + " | ".join(f"c={c}" for c in concs) + " |")
        add("|---|---|" + "---|" * len(concs))
        keys = []
        for r in runs:
            k = (r["server"], route(r))
            if k not in keys:
                keys.append(k)
        for s, p in keys:
            cells = []
            for c in concs:
                r = next((x for x in runs if x["server"] == s and route(x) == p and x["conc"] == c), None)
                if r is None:
                    cells.append("")
                else:
                    flag = " ⚠" if (r["errors"] or r["non2xx"]) else ""
                    if (r.get("foreign_cpu_cores") or 0) > NOISY_CORES:
                        flag += " ≈"
                    cells.append(f"{r['rps']:,.0f} ({_f(r['p99_ms'], 2)}){flag}")
            add(f"| {s} | {p} | " + " | ".join(cells) + " |")
        add(f"\n⚠ = errors or non-2xx in that run (see details). ≈ = other jobs on the host used more than "
            f"{NOISY_CORES} cores during that run: the figure is unreliable.\n")
        for p, suffix, _ in PLOT_ROUTES:
            if f"{w}-{suffix}.png" in self.plots:
                add(f"![{w} {p}]({w}-{suffix}.png)")
        add("")
        add("<details><summary>all figures</summary>\n")
        pg = any(r.get("postgres_cpu_s") is not None for r in runs)
        add("| server | path | c | req/s | p50 ms | p99 ms | errors c/r/w/t | non-2xx | gearboxd µs/req "
            "| nginx µs/req | " + ("postgres µs/req | " if pg else "")
            + "accepts/req | busiest worker | nginx error lines | gearboxd RSS MiB | other jobs (cores) |")
        add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if pg else ""))
        for r in runs:
            pg_cell = f"{_f(r.get('postgres_cpu_us_per_req'), 1)} | " if pg else ""
            add(f"| {r['server']} | {route(r)} | {r['conc']} | {r['rps']:,.0f} | {_f(r['p50_ms'], 2)} | "
                f"{_f(r['p99_ms'], 2)} | {r['err_connect']}/{r['err_read']}/{r['err_write']}/{r['err_timeout']} | "
                f"{r['non2xx']} | {_f(r.get('gearboxd_cpu_us_per_req'), 1)} | "
                f"{_f(r.get('nginx_cpu_us_per_req'), 1)} | {pg_cell}{_f(r.get('accepts_per_req'), 3)} | "
                f"{_f(100 * r['busiest_worker_share'] if r.get('busiest_worker_share') else None, 0, '%')} | "
                f"{'' if r.get('nginx_error_lines') is None else r['nginx_error_lines']} | "
                f"{_f(r['rss_kib'] / 1024 if r.get('rss_kib') else None, 1)} | "
                f"{_f(r.get('foreign_cpu_cores'), 2)} |")
        add("\n</details>\n")
        self._commands(add, runs)

    def _fd_wait(self, add):
        """timerwait beside wait: the same wait as an fd wait through a module."""
        rows = []
        for timer, fd in (("wait1ms", "timerwait1ms"), ("wait20ms", "timerwait20ms")):
            for a in self.runs:
                if a["kind"] != "wrk" or a["workload"] != timer or a.get("tag"):
                    continue
                b = next((x for x in self.runs if x["kind"] == "wrk" and x["workload"] == fd
                          and x["server"] == a["server"] and x["path"] == a["path"]
                          and x["conc"] == a["conc"] and not x.get("tag")), None)
                if b:
                    rows.append((timer, fd, a, b))
        if not rows:
            return
        add("## Waiting on an fd: `timerwait` beside `wait`\n")
        add("`wait` (`/sleep?ms=N`) asks for a timer; `timerwait` (`/tw?ms=N`, the example module "
            "`sdk/examples/timerwait.c`, built with `cc -O2`) arms a timerfd and waits for it to become "
            "readable through the handler fd wait: prefork and threadpool `poll()` it with the client's "
            "socket, async registers a libevent event. The difference is what the fd path and the module "
            "boundary cost.\n")
        add("| server | path | c | wait req/s | timerwait req/s | ratio | wait p50 ms | timerwait p50 ms "
            "| wait µs/req | timerwait µs/req |")
        add("|---|---|---|---|---|---|---|---|---|---|")
        for timer, fd, a, b in rows:
            add(f"| {a['server']} | {a['path']} | {a['conc']} | {a['rps']:,.0f} ({timer}) | {b['rps']:,.0f} | "
                f"{_f(_ratio(b['rps'], a['rps']), 2)} | {_f(a['p50_ms'], 2)} | {_f(b['p50_ms'], 2)} | "
                f"{_f(a.get('gearboxd_cpu_us_per_req'), 1)} | {_f(b.get('gearboxd_cpu_us_per_req'), 1)} |")
        add("")

    def _slow(self, add):
        slow = [i for i in self.idle if i["kind"] == "slow"]
        if not slow:
            return
        add("## slow: slowloris clients\n")
        add("`idle_clients.py --slow` opens N connections to gearboxd (direct) and sends only the start of a "
            "request head on each, then one more header byte a second, never the end (the bench runs finish "
            "well inside `header_timeout`, 10 s). Then `wrk -t1 -c8` runs on `/hello`: does the model still "
            "serve other clients? prefork's children hand slow heads to the head guard process after 5 ms; "
            "threadpool parks them in its poller; async holds them in its loop. RSS covers every gearboxd "
            "process.\n")
        add("| server | slow conns | held (before→after load) | RSS before → after KiB | bytes/conn | "
            "parked (prefork) | /hello req/s | without them | ratio | p99 ms | p99 without ms |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for i in slow:
            base = _baseline(self.runs, i)
            add(f"| {i['server']} | {i['count']:,} | {i.get('held_before')}→{i.get('held_after')} | "
                f"{i['rss0_kib']:,} → {i.get('rss1_kib', 0):,} | {_f(i.get('bytes_per_conn'))} | "
                f"{_parked(i)} | {_f(i.get('rps'))} | "
                f"{_f(base['rps'] if base else None)} | {_f(_ratio(i.get('rps'), base['rps'] if base else None), 2)} | "
                f"{_f(i.get('p99_ms'), 2)} | {_f(base['p99_ms'] if base else None, 2)} |")
        add("")
        self._commands(add, slow)

    def _idle(self, add):
        idle = [i for i in self.idle if i["kind"] == "idle"]
        if not idle:
            return
        add("## idle: keep-alive connections held open\n")
        add("`idle_clients.py` opens N connections to gearboxd (direct), sends one `GET /hello` on each, "
            "reads the response and keeps the connection open and silent. RSS (all gearboxd processes) is "
            "taken before and after; then `wrk -t1 -c8` runs on `/hello` while they are held. "
            "Kernel socket structures are not in RSS: the kernel slab delta (`/proc/meminfo` Slab, both ends "
            "of each connection, host-wide so noisy) is shown for scale.\n")
        add("| server | idle conns | answered | held (before→after load) | RSS before → after KiB | "
            "bytes/conn | kernel slab bytes/conn | /hello req/s | p50 ms | p99 ms | p99 without idle ms |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for i in idle:
            base = _baseline(self.runs, i)
            add(f"| {i['server']} | {i['count']:,} | {i.get('answered')} | {i.get('held_before')}→{i.get('held_after')} | "
                f"{i['rss0_kib']:,} → {i.get('rss1_kib', 0):,} | {_f(i.get('bytes_per_conn'))} | "
                f"{_f(i.get('kernel_slab_bytes_per_conn'))} | {_f(i.get('rps'))} | {_f(i.get('p50_ms'), 2)} | "
                f"{_f(i.get('p99_ms'), 2)} | {_f(base['p99_ms'] if base else None, 2)} |")
        add("")
        if any(i["server"].startswith("prefork") for i in idle):
            add("prefork: each child keeps up to 8 idle kept-alive connections beside the one it serves; the "
                "rest wait in the master's head guard, which gives each to a free child when its next request "
                "arrives. RSS covers the master, the guard and every child.\n")
        if "idle.png" in self.plots:
            add("![idle](idle.png)\n")
        self._commands(add, idle)
