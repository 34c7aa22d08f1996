"""bench_report_targets.py: results.md's targets section: the ratios the run set out
to measure (hello against nginx, waits, the seed profile, idle connections, the
blocking models through nginx and direct), each met, missed or not measured.
Standard library only."""
import statistics

import bench_ratios
from bench_report_common import _f, route


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
    """The targets of results.md, in its order: each helper adds one group's through
    target()."""
    T = []

    def target(group, what, met, numbers):
        T.append({"group": group, "what": what,
                  "status": "not measured" if met is None else ("met" if met else "missed"),
                  "numbers": numbers})

    _alternation_targets(runs, target)
    hello64 = _Hello64(runs, 64)
    _hello64_targets(runs, target, hello64)
    _wait_targets(runs, plan, target)
    _seed_targets(runs, target)
    _idle_targets(idle, target)
    _nginx_targets(hello64, target)
    _blocking_targets(runs, target, hello64)
    return T


def _alternation_targets(runs, target):
    """(1) hello direct: async 1 loop vs nginx return 200 (1 worker), alternating."""
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


def _hello64_targets(runs, target, hello64):
    """(1) hello direct at c=64: the blocking models at their 2-core sizes against
    async-2, with the sweep's async-1 beside it when there is one."""
    c64 = hello64.conc
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


def _wait_targets(runs, plan, target):
    """(2) wait1ms direct at the plan's highest concurrency, each >= 0.9x of: async 1
    loop, its own hello rate; prefork-N, N x 1000 req/s; threadpool-T, the lesser of
    T x 1000 req/s and its own hello rate."""
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


def _seed_targets(runs, target):
    """(3) the seed profile through nginx with the 1 ms wait."""
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


def _idle_targets(idle, target):
    """(4) idle keep-alive connections, async."""
    for i in idle:
        if i["kind"] == "idle" and i["server"].startswith("async"):
            bpc = i.get("bytes_per_conn")
            ok = bpc is not None and bpc <= 1024 and (i.get("p99_ms") or 1e9) < 5
            note = "" if i["count"] >= 10000 else f" (only {i['count']} connections)"
            target("4", f"idle: {i['count']:,} idle keep-alive connections cost {i['server']} <= 1 KiB each "
                   f"in RSS, /hello p99 < 5 ms{note}", ok,
                   f"{_f(bpc)} B/conn (RSS {i['rss0_kib']:,} -> {i.get('rss1_kib', 0):,} KiB, held "
                   f"{i.get('held_before')}), p99 {_f(i.get('p99_ms'), 2)} ms at {_f(i.get('rps'))} req/s")


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
