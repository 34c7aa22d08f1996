#!/usr/bin/env python3
"""pg_nginx.py: the bench's database rows through nginx, for sides that differ
in binary, model, pool or pipeline depth, in alternating rounds of one run.

  tests/bench/pg_nginx.py --side LABEL=BINARY:CONFIG:POOL[:PIPELINE] ...
                          [--rounds N] [--secs S] [--cells WORKLOAD@C,...]

CONFIG is a bench_plan.py CONFIGS label (async-2, threadpool-64, prefork-8, ...);
PIPELINE sets the routes' `pipeline` key (omitted: the binary's default, or
none for a binary that predates it). A throwaway cluster (bench_servers.
Postgres) serves /pgsleep (SELECT pg_sleep(0.001)) and /pglookup (an indexed
point lookup); each side is a gearboxd behind its own nginx (unix socket,
the shipped snippets). Each round runs every cell (default pglookup@64,
pglookup@256, pgsleep1ms@64) on every side, wrk -t2 for SECS; prints the
median req/s, p50, p99 and non-2xx per side and cell, and each side's
lookup c=256 / c=64 ratio. Loopback only, bounded in time.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_servers as bs  # noqa: E402
from bench import CONFIG_BY_LABEL  # noqa: E402

PATHS = {"pglookup": "/pglookup?id=54321", "pgsleep1ms": "/pgsleep"}


class Side(bs.Gearbox):
    def __init__(self, label, binary, cfg, pool, pipeline, work, pg_dir):
        super().__init__(binary, cfg, work, work, work, tag=label,
                         sock_name=f"{label}.sock", pg=pg_dir)
        self.side, self.pool, self.pipeline = label, pool, pipeline

    def write_config(self):
        super().write_config()
        with open(self.conf) as f:
            text = f.read()
        keys = f"pool = {self.pool}\n" + (f"pipeline = {self.pipeline}\n" if self.pipeline else "")
        text = "".join(keys if line.startswith("pool = ") else line + "\n"
                       for line in text.splitlines())
        with open(self.conf, "w") as f:
            f.write(text)
        r = bs.sh([self.binary, "-t", "-c", self.conf])
        if r.returncode != 0:
            raise RuntimeError(f"gearboxd -t rejected {self.conf}: {r.stdout}{r.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--cells", default="pglookup@64,pglookup@256,pgsleep1ms@64")
    a = ap.parse_args()
    cells = [(c.split("@")[0], int(c.split("@")[1])) for c in a.cells.split(",")]
    work = tempfile.mkdtemp(prefix="gearbox-pgnginx.")
    os.chmod(work, 0o755)  # the postgres user and nginx's worker reach in
    pg = bs.Postgres(work, work)
    fronts = []
    try:
        pg.start()
        for spec in a.side:
            label, rest = spec.split("=", 1)
            parts = rest.split(":")
            binary, cfg, pool = parts[0], CONFIG_BY_LABEL[parts[1]], int(parts[2])
            pipeline = int(parts[3]) if len(parts) > 3 else None
            gb = Side(label, binary, cfg, pool, pipeline, work, pg.dir)
            front = bs.Fronted(gb, work, work, work, label, ["nginx-unix"])
            fronts.append(front)
            front.start()
        rows = {}
        for r in range(a.rounds):
            for front in fronts:
                port = front.nginx["nginx-unix"].proxy
                for workload, conc in cells:
                    url = f"http://127.0.0.1:{port}{PATHS[workload]}"
                    out = bs.sh(["wrk", "-t2", f"-c{conc}", f"-d{a.secs}s", "--latency", url],
                                timeout=a.secs + 30).stdout
                    fig = bs.parse_wrk(out)
                    rows.setdefault((front.gb.side, workload, conc), []).append(fig)
                    print(f"round {r + 1} {front.gb.side} {workload} c={conc}: "
                          f"{fig['rps']:.0f} req/s p50 {fig['p50_ms']} p99 {fig['p99_ms']} "
                          f"non2xx {fig['non2xx']} errors {fig['errors']}", flush=True)
        print(f"\nthrough nginx (unix), wrk -t2, {a.rounds} alternating rounds of {a.secs} s "
              f"(medians); host load {os.getloadavg()[0]:.1f}")
        print("| side | config | pool | pipeline | workload | c | req/s | p50 ms | p99 ms | non-2xx |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for front in fronts:
            gb = front.gb
            for workload, conc in cells:
                figs = rows[(gb.side, workload, conc)]
                med = lambda k: statistics.median(f[k] or 0 for f in figs)  # noqa: E731
                print(f"| {gb.side} | {gb.label} | {gb.pool} | {gb.pipeline or '-'} | {workload} | "
                      f"{conc} | {med('rps'):.0f} | {med('p50_ms'):.2f} | {med('p99_ms'):.2f} | "
                      f"{sum(f['non2xx'] + f['errors'] for f in figs)} |")
            lk = {c: statistics.median(f["rps"] for f in rows[(gb.side, "pglookup", c)])
                  for w, c in cells if w == "pglookup"}
            if 64 in lk and 256 in lk:
                print(f"| {gb.side} | lookup c=256 / c=64 | | | | | {lk[256] / lk[64]:.2f}x | | | |")
    finally:
        notes = []
        for front in fronts:
            front.stop(notes, front.gb.side)
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)
        for n in notes:
            print(n)


if __name__ == "__main__":
    main()
