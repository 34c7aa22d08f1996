#!/usr/bin/env python3
"""instr_cost.py: gearboxd's own instructions per request, counted, not timed.

  tests/bench/instr_cost.py --gearboxd A[,B...] [--model async|threadpool --size N] [--pool P]
                            [--targets hello,pglookup,pgsleep] [--conns C] [--secs S]
                            [--cache-sim]

Runs each binary under valgrind's callgrind (Debian `valgrind`) against a
throwaway PostgreSQL cluster (bench_servers.Postgres), with pg_cost.py's routes
plus /pgsleep (`SELECT pg_sleep(0.001)`). Per target: wrk warms it for S
seconds, the counters are zeroed (callgrind_control -z), wrk runs again, the
counters are dumped (-d), and the instructions every gearboxd process executed
in user space are divided by wrk's request count.

Why: on this shared 2-core host a timed A/B moves by 3-9% between two runs of
one binary, while an instruction count moves by under 2%. It sees user
space only: system calls are counted with profile.sh / pg_cost.py (perf stat),
and time spent in the kernel not at all. Under callgrind threads run one at a
time and 50-100 times slower, so only the counts mean anything, not req/s.
The dumps stay in the printed directory for callgrind_annotate. Loopback only;
every load is bounded in time.

--cache-sim adds callgrind's cache simulation (the host's L1 sizes, one cache
for all threads, as they run one at a time): L1 and last-level misses per
request, and KCachegrind's cycle estimate, Ir + 10 x L1 misses + 100 x LL
misses. Fewer instructions that touch more cold code or memory can cost as
much: a count of instructions alone overstates such a saving.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_servers as bs  # noqa: E402
import pg_cost  # noqa: E402

TARGETS = {"hello": "/hello", "pglookup": "/pglookup?id=54321", "pgsleep": "/pgsleep"}


def config(port, pg_dir, pool, model, size):
    return pg_cost.config(port, pg_dir, pool, None, model, size) + f"""[[route]]
path = "/pgsleep"
handler = "postgres"
dsn = "host={pg_dir} dbname=postgres user=postgres"
query = "SELECT pg_sleep(0.001)"
pool = {pool}
"""


def start(binary, index, work, pg_dir, a):
    port = bs.free_port()
    path = os.path.join(work, f"g{index}.toml")
    with open(path, "w") as f:
        f.write(config(port, pg_dir, a.pool, a.model, a.size))
    out = os.path.join(work, f"callgrind.{index}.%p")
    logf = open(os.path.join(work, f"g{index}.log"), "w")
    sim = ["--cache-sim=yes"] if a.cache_sim else []
    p = subprocess.Popen(["valgrind", "--tool=callgrind", *sim, f"--callgrind-out-file={out}",
                          binary, "-c", path], stdout=logf, stderr=subprocess.STDOUT)
    bs.STARTED.append(p)
    if not bs.wait_until(lambda: bs.http_get_ok("127.0.0.1", port, "/hello", 5), 120, every=0.5):
        raise RuntimeError(f"{binary} did not start under valgrind; see {work}")
    return p, port


def wrk(url, conns, secs):
    out = bs.sh(["wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--timeout", "10s", url],
                timeout=secs + 60).stdout
    m = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if not m or bad:
        raise RuntimeError(f"wrk on {url}: no count or non-2xx answers:\n{out}")
    return int(m.group(1))


def dumped_events(work, index, before):
    """Each event (Ir, and with --cache-sim I1mr, D1mr, ...) summed over the dump
    files the last callgrind_control -d wrote."""
    totals = {}
    for f in set(glob.glob(os.path.join(work, f"callgrind.{index}.*"))) - before:
        with open(f, errors="replace") as fh:
            text = fh.read()
        names = re.search(r"^events: (.+)$", text, re.M)
        values = re.search(r"^summary: (.+)$", text, re.M)
        if not names or not values:
            continue
        for name, value in zip(names.group(1).split(), values.group(1).split()):
            totals[name] = totals.get(name, 0) + int(value)
    return totals


def cycle_estimate(ev):
    """KCachegrind's CEst for cache events: Ir + 10 per L1 miss + 100 per LL miss."""
    l1 = ev.get("I1mr", 0) + ev.get("D1mr", 0) + ev.get("D1mw", 0)
    ll = ev.get("ILmr", 0) + ev.get("DLmr", 0) + ev.get("DLmw", 0)
    return ev.get("Ir", 0) + 10 * l1 + 100 * ll


def measure(p, port, index, work, target, a):
    url = f"http://127.0.0.1:{port}{TARGETS[target]}"
    wrk(url, a.conns, a.secs)
    pids = [str(x) for x in bs.proc_tree(p.pid)]
    bs.sh(["callgrind_control", "-z"] + pids, timeout=60)
    n = wrk(url, a.conns, a.secs)
    before = set(glob.glob(os.path.join(work, f"callgrind.{index}.*")))
    bs.sh(["callgrind_control", "-d"] + pids, timeout=60)
    ev = dumped_events(work, index, before)
    if not ev.get("Ir"):
        raise RuntimeError(f"callgrind_control -d wrote no counts for {pids}; see {work}")
    return n, ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gearboxd", default=os.path.join(bs.ROOT, "bazel-bin/daemon/gearboxd"))
    # prefork's workers are forked children, which callgrind_control cannot
    # reach: their counters are neither zeroed nor dumped.
    ap.add_argument("--model", default="threadpool", choices=("async", "threadpool"))
    ap.add_argument("--size", type=int, default=8, help="loops, threads or workers")
    ap.add_argument("--pool", type=int, default=1, help="connections per worker")
    ap.add_argument("--targets", default="hello,pglookup,pgsleep")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--secs", type=int, default=8)
    ap.add_argument("--cache-sim", action="store_true",
                    help="also L1/LL misses and the cycle estimate per request")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gearbox-instr.")
    os.chmod(work, 0o755)  # the postgres user reaches the socket directory
    pg = bs.Postgres(work, work)
    rows = []
    try:
        pg.start()
        for i, binary in enumerate(a.gearboxd.split(",")):
            p, port = start(binary, i, work, pg.dir, a)
            try:
                for target in a.targets.split(","):
                    n, ev = measure(p, port, i, work, target, a)
                    per = {k: v / n for k, v in ev.items()}
                    rows.append((target, binary, n, per))
                    print(f"{binary} {target}: {n} requests, {per['Ir']:,.0f} Ir/request", flush=True)
            finally:
                bs.stop_proc(p, wait=60)
    finally:
        pg.stop()
    print(f"\n{a.model}-{a.size}, pool = {a.pool}, c={a.conns}, {a.secs} s under callgrind"
          f"{' with --cache-sim' if a.cache_sim else ''}; dumps in {work}")
    report(rows, a.cache_sim)


def report(rows, cache_sim):
    """Per request, and against the first binary's row for the same target."""
    head = "| target | binary | requests | instructions per request | vs first |"
    if cache_sim:
        head += " I1 misses | D1 read misses | D1 write misses | LL misses | cycle estimate | vs first |"
    print(head)
    print("|---" * head.count(" | ") + "|---|")
    first = {}
    for target, binary, n, per in sorted(rows, key=lambda r: r[0]):
        cest = cycle_estimate(per)
        base = first.setdefault(target, (per["Ir"], cest))
        line = f"| {target} | {binary} | {n} | {per['Ir']:,.0f} | {per['Ir'] / base[0]:.3f} |"
        if cache_sim:
            ll = per.get("ILmr", 0) + per.get("DLmr", 0) + per.get("DLmw", 0)
            line += (f" {per.get('I1mr', 0):.0f} | {per.get('D1mr', 0):.0f} | {per.get('D1mw', 0):.0f} |"
                     f" {ll:.1f} | {cest:,.0f} | {cest / base[1]:.3f} |")
        print(line)


if __name__ == "__main__":
    main()
