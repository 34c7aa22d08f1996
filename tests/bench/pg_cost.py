#!/usr/bin/env python3
"""pg_cost.py: what a postgres lookup costs gearboxd against /hello, in one run.

  tests/bench/pg_cost.py [--gearboxd PATH[,PATH2]] [--rounds N] [--secs S]
                         [--conns C] [--pool P] [--pipeline N]
                         [--model M --size N]

Starts a throwaway PostgreSQL cluster (bench_servers.Postgres: 100,000 rows,
unix socket) and one gearboxd per binary (async, 1 loop) serving /hello and
/pglookup?id=54321 (pool = P, default 16; one daemon per pipeline depth too). Then, in alternating rounds on the
same daemon, runs profile.sh (wrk -t1 -cC direct, perf stat on gearboxd) on
/hello and on the lookup, and prints per request: gearboxd CPU (us), system
calls, context switches, PostgreSQL's CPU (us, over the whole wrk run: the
database is half of a lookup's cost on a shared host), req/s, and the
lookup/hello CPU ratio (the median over the rounds). With two binaries
(before,after) the rounds alternate between them too. Each daemon is warmed up
first (1 s of the lookup at c=256), so the pools' connections (threadpool-64
with pool = 1: 64) open before any measured round. Loopback only; every load
bounded in time.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_servers as bs  # noqa: E402
from bench_proc import cpu_seconds  # noqa: E402

PROFILE = os.path.join(bs.HERE, "profile.sh")


def config(port, pg_dir, pool, pipeline=None, model="async", size=1):
    dsn = f"host={pg_dir} dbname=postgres user=postgres"
    key = {"async": "loops", "threadpool": "threads", "prefork": "workers"}[model]
    return f"""[server]
model = "{model}"
[{model}]
{key} = {size}
[[listen]]
address = "127.0.0.1:{port}"
protocol = "http"
[[route]]
path = "/hello"
handler = "text"
body = "hello\\n"
[[route]]
path = "/status"
handler = "status"
[[route]]
path = "/pglookup"
handler = "postgres"
dsn = "{dsn}"
query = "SELECT id, v FROM bench_rows WHERE id = $1::int"
params = ["id"]
pool = {pool}
""" + (f"pipeline = {pipeline}\n" if pipeline else "")


def status_requests(port):
    m = re.search(rb'"requests":(\d+)', bs.http_get("127.0.0.1", port, "/status") or b"")
    return int(m.group(1)) if m else 0


def profile(pid, port, target, conns, secs, pg):
    url = f"http://127.0.0.1:{port}{target}"
    served, pg_cpu = status_requests(port), cpu_seconds(pg.pids())
    out = bs.sh(["bash", PROFILE, str(pid), url, str(conns), str(secs)],
                timeout=secs + 30).stdout
    served, pg_cpu = status_requests(port) - served, cpu_seconds(pg.pids()) - pg_cpu
    m = re.search(r"requests in window: (\d+)", out)
    n = int(m.group(1)) if m else 0
    fig = {"requests": n, "rps": n / secs,
           "pg_us": pg_cpu * 1e6 / served if served else float("nan")}
    for key, name in (("raw_syscalls:sys_enter", "syscalls"),
                      ("context-switches", "switches"), ("task-clock", "cpu_us")):
        m = re.search(re.escape(key) + r"\s+\S+ total\s+([\d.]+)", out)
        fig[name] = float(m.group(1)) if m else float("nan")
    return fig


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gearboxd", default=os.path.join(bs.ROOT, "bazel-bin/daemon/gearboxd"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--pool", type=int, default=16)
    ap.add_argument("--model", default="async", help="async, threadpool or prefork")
    ap.add_argument("--size", type=int, default=1, help="loops, threads or workers")
    ap.add_argument("--pipeline", default=None,
                    help="the route's pipeline key (default: the binary's default); "
                    "several, comma-separated: one daemon per binary and depth")
    return ap.parse_args()


def start_daemons(a, sides, multi_depth, work, pg_dir, daemons):
    """Starts one gearboxd per (binary, pipeline depth) side, appending each to
    `daemons` as (name, process, port) as soon as it serves /hello."""
    for i, (binary, depth) in enumerate(sides):
        port = bs.free_port()
        path = os.path.join(work, f"g{i}.toml")
        with open(path, "w") as f:
            f.write(config(port, pg_dir, a.pool, depth, a.model, a.size))
        logf = open(os.path.join(work, f"g{i}.log"), "w")
        p = subprocess.Popen([binary, "-c", path], stdout=logf, stderr=subprocess.STDOUT)
        bs.STARTED.append(p)
        if not bs.wait_until(lambda: bs.http_get_ok("127.0.0.1", port, "/hello"), 10, every=0.1):
            bs.stop_proc(p)
            raise RuntimeError(f"{binary} did not start; see {work}")
        daemons.append((f"{binary} pipeline={depth}" if multi_depth else binary, p, port))


def warm_up(daemons):
    """1 s of the lookup at c=256 on each daemon, unmeasured: its workers open
    their pools' connections here (PostgreSQL forks a backend for each)."""
    for _, _, port in daemons:
        bs.sh(["wrk", "-t1", "-c256", "-d1s", f"http://127.0.0.1:{port}/pglookup?id=54321"],
              timeout=30)


def run_rounds(a, daemons, pg):
    """profile.sh on /hello and on the lookup of every daemon, --rounds times,
    alternating. Returns {(daemon, "hello" or "lookup"): [figures of each round]}."""
    rows = {}
    for r in range(a.rounds):
        for binary, p, port in daemons:
            for name, target in (("hello", "/hello"), ("lookup", "/pglookup?id=54321")):
                fig = profile(p.pid, port, target, a.conns, a.secs, pg)
                rows.setdefault((binary, name), []).append(fig)
                print(f"round {r + 1} {binary} {name}: {fig}", flush=True)
    return rows


def print_table(a, daemons, rows):
    """The medians per daemon and path, and each daemon's lookup/hello CPU ratio."""
    print(f"\ndirect, {a.model}-{a.size}, c={a.conns}, pool={a.pool}, {a.rounds} alternating rounds "
          f"of {a.secs} s (medians); host load {os.getloadavg()[0]:.1f}")
    print("| binary | path | gearboxd CPU us/req | syscalls/req | switches/req | postgres CPU us/req "
          "| req/s |")
    print("|---|---|---|---|---|---|---|")
    for binary, _, _ in daemons:
        for name in ("hello", "lookup"):
            figs = rows[(binary, name)]
            m = {k: statistics.median(f[k] for f in figs)
                 for k in ("cpu_us", "syscalls", "switches", "pg_us", "rps")}
            print(f"| {binary} | {name} | {m['cpu_us']:.1f} | {m['syscalls']:.2f} | "
                  f"{m['switches']:.2f} | {m['pg_us']:.1f} | {m['rps']:.0f} |")
        ratios = [lk["cpu_us"] / h["cpu_us"] for h, lk in
                  zip(rows[(binary, "hello")], rows[(binary, "lookup")])]
        print(f"| {binary} | lookup/hello CPU | {statistics.median(ratios):.2f}x "
              f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}) | | | | |")


def main():
    a = parse_args()
    depths = [int(d) for d in a.pipeline.split(",")] if a.pipeline else [None]
    sides = [(b, d) for b in a.gearboxd.split(",") for d in depths]
    work = tempfile.mkdtemp(prefix="gearbox-pgcost.")
    os.chmod(work, 0o755)  # the postgres user and nginx's worker reach in
    pg = bs.Postgres(work, work)
    daemons = []
    try:
        pg.start()
        start_daemons(a, sides, len(depths) != 1, work, pg.dir, daemons)
        warm_up(daemons)
        rows = run_rounds(a, daemons, pg)
        print_table(a, daemons, rows)
    finally:
        for _, p, _ in daemons:
            bs.stop_proc(p)
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
