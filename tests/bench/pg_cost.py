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
calls, context switches, req/s, and the lookup/hello CPU ratio (the median
over the rounds). With two binaries (before,after) the rounds alternate
between them too. Loopback only; every load bounded in time.
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


def profile(pid, url, conns, secs):
    out = bs.sh(["bash", PROFILE, str(pid), url, str(conns), str(secs)],
                timeout=secs + 30).stdout
    m = re.search(r"requests in window: (\d+)", out)
    n = int(m.group(1)) if m else 0
    fig = {"requests": n, "rps": n / secs}
    for key, name in (("raw_syscalls:sys_enter", "syscalls"),
                      ("context-switches", "switches"), ("task-clock", "cpu_us")):
        m = re.search(re.escape(key) + r"\s+\S+ total\s+([\d.]+)", out)
        fig[name] = float(m.group(1)) if m else float("nan")
    return fig


def main():
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
    a = ap.parse_args()
    depths = [int(d) for d in a.pipeline.split(",")] if a.pipeline else [None]
    sides = [(b, d) for b in a.gearboxd.split(",") for d in depths]
    work = tempfile.mkdtemp(prefix="gearbox-pgcost.")
    os.chmod(work, 0o755)  # the postgres user and nginx's worker reach in
    pg = bs.Postgres(work, work)
    daemons = []
    try:
        pg.start()
        for i, (binary, depth) in enumerate(sides):
            port = bs.free_port()
            path = os.path.join(work, f"g{i}.toml")
            with open(path, "w") as f:
                f.write(config(port, pg.dir, a.pool, depth, a.model, a.size))
            logf = open(os.path.join(work, f"g{i}.log"), "w")
            p = subprocess.Popen([binary, "-c", path], stdout=logf, stderr=subprocess.STDOUT)
            bs.STARTED.append(p)
            if not bs.wait_until(lambda: bs.http_get_ok("127.0.0.1", port, "/hello"), 10, every=0.1):
                raise RuntimeError(f"{binary} did not start; see {work}")
            daemons.append((binary if len(depths) == 1 else f"{binary} pipeline={depth}", p, port))
        rows = {}
        for r in range(a.rounds):
            for binary, p, port in daemons:
                for name, target in (("hello", "/hello"), ("lookup", "/pglookup?id=54321")):
                    fig = profile(p.pid, f"http://127.0.0.1:{port}{target}", a.conns, a.secs)
                    rows.setdefault((binary, name), []).append(fig)
                    print(f"round {r + 1} {binary} {name}: {fig}", flush=True)
        print(f"\ndirect, {a.model}-{a.size}, c={a.conns}, pool={a.pool}, {a.rounds} alternating rounds "
              f"of {a.secs} s (medians); host load {os.getloadavg()[0]:.1f}")
        print("| binary | path | gearboxd CPU us/req | syscalls/req | switches/req | req/s |")
        print("|---|---|---|---|---|---|")
        for binary, _, _ in daemons:
            med = {}
            for name in ("hello", "lookup"):
                figs = rows[(binary, name)]
                med[name] = {k: statistics.median(f[k] for f in figs)
                             for k in ("cpu_us", "syscalls", "switches", "rps")}
                m = med[name]
                print(f"| {binary} | {name} | {m['cpu_us']:.1f} | {m['syscalls']:.2f} | "
                      f"{m['switches']:.2f} | {m['rps']:.0f} |")
            ratios = [lk["cpu_us"] / h["cpu_us"] for h, lk in
                      zip(rows[(binary, "hello")], rows[(binary, "lookup")])]
            print(f"| {binary} | lookup/hello CPU | {statistics.median(ratios):.2f}x "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}) | | | |")
    finally:
        for _, p, _ in daemons:
            bs.stop_proc(p)
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
