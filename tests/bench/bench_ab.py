#!/usr/bin/env python3
"""bench_ab.py: A/B comparison of two gearboxd binaries (tests/bench/run.sh --ab OLD NEW).

For each server configuration, N rounds (default 3). A round starts both sides afresh
on ports chosen fresh, from identical configs (bench.py's generator, plus an optional
TOML snippet per side), warms both up, then runs every cell (workload x path x
concurrency) with wrk on both sides, A first in odd rounds and B first in even ones,
and stops both: each cell sees A B B A A B, so neither side always runs second.
Per cell the median req/s of each side gives the ratio B/A (NEW/OLD); CPU per
request and p99 come the same way.
Writes ab.md and ab.json to --out and prints the table. The same binary on both
sides measures the noise floor. The figures and ab.md's text are in bench_ab_report.py.
Standard library only; every process it starts is stopped by PID.
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report  # noqa: E402
import bench_toml  # noqa: E402
from bench import CONFIG_BY_LABEL, PG_WORKLOADS, WORKLOADS, Bench  # noqa: E402
from bench_ab_report import _f, cells, markdown, noise_line, summary, table  # noqa: E402
from bench_servers import (HERE, PATHS, T0, Fronted, Gearbox, Postgres, build_timerwait, log, sh,  # noqa: E402
                           stop_all)

# A model name means the model at bench_plan.py's 2-core size (CONFIGS explains them).
MODEL_SIZE = {"async": "async-2", "threadpool": "threadpool-64", "prefork": "prefork-8"}


class Side:
    """One side of the comparison: a binary, a name and an optional TOML snippet."""

    def __init__(self, key, name, binary, extra_file):
        self.key, self.name = key, name
        self.binary = os.path.abspath(binary)
        if not os.access(self.binary, os.X_OK):
            sys.exit(f"bench_ab: {binary}: not an executable file")
        self.extra_file = extra_file
        self.extra = None
        if extra_file:
            with open(extra_file) as f:
                self.extra = f.read()
        with open(self.binary, "rb") as f:
            self.sha256 = hashlib.sha256(f.read()).hexdigest()
        self.version = sh([self.binary, "-v"]).stdout.strip()

    def facts(self):
        return {"name": self.name, "binary": self.binary, "sha256": self.sha256,
                "version": self.version, "extra_file": self.extra_file, "extra": self.extra}


def _list(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="run.sh --ab", description="A/B: two gearboxd binaries, "
                                 "alternating rounds, median per side, ratio NEW/OLD (tests/bench/README.md)")
    ap.add_argument("--ab", nargs=2, metavar=("OLD", "NEW"),
                    help="the two gearboxd binaries (the same one twice: the noise floor)")
    ap.add_argument("--names", default="old,new", help="what to call the two sides (default old,new)")
    ap.add_argument("--workloads", help="comma-separated: " + ", ".join(WORKLOADS) +
                    ", or NAME=/path?query (default hello,wait1ms)")
    ap.add_argument("--models", help="comma-separated model names (async = async-2, threadpool = "
                    "threadpool-64, prefork = prefork-8) or bench labels (async-1, ...); default all three")
    ap.add_argument("--conns", help="comma-separated wrk concurrencies (default 64,256; quick 64)")
    ap.add_argument("--paths", default="direct", help="comma-separated: " + ", ".join(PATHS) +
                    " (default direct)")
    ap.add_argument("--rounds", type=int, help="rounds per side (default 3; quick 1)")
    ap.add_argument("--duration", type=int, help="seconds per wrk run (default 3; quick 1)")
    ap.add_argument("--extra", metavar="FILE", help="TOML merged into both sides' configs")
    ap.add_argument("--extra-old", metavar="FILE", help="TOML merged into the OLD side's config only")
    ap.add_argument("--extra-new", metavar="FILE", help="TOML merged into the NEW side's config only")
    ap.add_argument("--min-ratio", type=float, default=0.95,
                    help="mark cells whose NEW/OLD req/s ratio is below this (default 0.95)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a ratio is below --min-ratio")
    ap.add_argument("--quick", action="store_true",
                    help="sanity pass (< 1 minute): 1 round, 1 s, c=64; exit 1 if a run is not sane")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "ab"))
    ap.add_argument("--no-plots", action="store_true", help="accepted for run.sh symmetry (no plots)")
    ap.add_argument("--rerender", metavar="DIR", help="only rewrite DIR/ab.md from its ab.json")
    args = ap.parse_args(argv)
    if not args.ab and not args.rerender:
        ap.error("--ab OLD NEW is required")
    return args


def rerender(args):
    with open(os.path.join(args.rerender, "ab.json")) as f:
        j = json.load(f)
    meta, pl = j["meta"], j["plan"]
    cs = cells(j["runs"], pl)
    meta.update(summary=summary(cs, meta["names"], meta["min_ratio"]), noise=noise_line(j["runs"]))
    with open(os.path.join(args.rerender, "ab.md"), "w") as f:
        f.write(markdown(meta, pl, cs, j["checks"]))
    log(f"bench_ab: rewrote {args.rerender}/ab.md from ab.json")
    return 0


def make_plan(args):
    """The cells and rounds, after --quick's defaults and validation."""
    workloads = {}
    for w in _list(args.workloads or "hello,wait1ms"):
        name, eq, path = w.partition("=")
        if eq:
            if not path.startswith("/"):
                sys.exit(f"bench_ab: workload {w}: the path must start with /")
            workloads[name] = path
        elif w in WORKLOADS:
            workloads[w] = WORKLOADS[w]
        else:
            sys.exit(f"bench_ab: unknown workload {w} (valid: {', '.join(WORKLOADS)}, or NAME=/path)")
    models = [MODEL_SIZE.get(m, m) for m in _list(args.models or "async,threadpool,prefork")]
    for m in models:
        if m not in CONFIG_BY_LABEL:
            sys.exit(f"bench_ab: unknown model {m} (valid: {', '.join(MODEL_SIZE)}, "
                     f"{', '.join(CONFIG_BY_LABEL)})")
    paths = _list(args.paths)
    for p in paths:
        if p not in PATHS:
            sys.exit(f"bench_ab: unknown path {p} (valid: {', '.join(PATHS)})")
    conns = [int(c) for c in _list(args.conns or ("64" if args.quick else "64,256"))]
    rounds = args.rounds or (1 if args.quick else 3)
    duration = args.duration or (1 if args.quick else 3)
    if rounds < 1 or duration < 1 or not conns or min(conns) < 1:
        sys.exit("bench_ab: --rounds, --duration and --conns must be >= 1")
    return {"workloads": workloads, "models": models, "paths": paths, "conns": conns,
            "rounds": rounds, "duration": duration, "warm_pg": True, "order": "alternating"}


def estimate_s(pl):
    cells = len(pl["workloads"]) * len(pl["paths"]) * len(pl["conns"])
    warm_pg = sum(w in PG_WORKLOADS for w in pl["workloads"])  # 1 s each
    per_start = 3.0 + warm_pg + cells * (pl["duration"] + 0.5)  # start, warmup, stop + the runs
    return 2 * pl["rounds"] * len(pl["models"]) * per_start


def check_configs(sides, pl, work, pg):
    """gearboxd -t on every side x model before any load (a bad snippet fails in seconds)."""
    for side in sides:
        for label in pl["models"]:
            Gearbox(side.binary, CONFIG_BY_LABEL[label], work, work, work, tag=f"check-{side.key}",
                    extra=side.extra, pg=pg).write_config()


def start_postgres(bench, pl, meta):
    """The bench's throwaway cluster, when a database workload is compared: both
    sides' /pg* routes use it (bench_servers.pg_routes: the full run's pool sizes)."""
    if not any(w in PG_WORKLOADS for w in pl["workloads"]):
        return None
    bench.pg = Postgres(bench.work, bench.logdir)
    bench.pg.start()
    meta["notes"].append(f"postgres ({bench.pg.version()}) on a unix socket, bench_rows: "
                         f"{Postgres.ROWS} rows; the /pg* routes as the full run writes them")
    return bench.pg.dir


class Running:
    """One side's gearboxd, and its nginx per nginx path, for one round."""

    def __init__(self, bench, side, label, rnd, pl):
        self.bench, self.side, self.label, self.rnd, self.pl = bench, side, label, rnd, pl
        self.tag = f"{side.key}-r{rnd}"
        gb = Gearbox(side.binary, CONFIG_BY_LABEL[label], bench.work, bench.logdir, bench.confdir,
                     tag=self.tag, extra=side.extra, sock_name=f"{side.key}.sock",
                     pg=bench.pg.dir if bench.pg else None, timerwait=bench.timerwait)
        self.servers = Fronted(gb, bench.work, bench.confdir, bench.logdir, f"{self.tag}-{label}",
                               pl["paths"])
        self.gb = gb

    def start(self):
        self.servers.start()
        log(f"=== {self.side.name} ({self.side.key}) round {self.rnd}: {self.label}, gearboxd pid "
            f"{self.gb.proc.pid} on :{self.gb.port}"
            + "".join(f", {p} :{n.proxy}" for p, n in self.servers.nginx.items()) + " ===")

    def warmup(self):
        """/hello, then each database route at the plan's largest concurrency: a model
        opens its pools' server connections here (threadpool-64 with pool = 1: 64 at
        once), not inside the first measured run of the route."""
        base = f"http://127.0.0.1:{self.gb.port}"
        self.bench.warmup(self.label, "direct", base + "/hello", {"gearboxd": self.gb.pids})
        for w, uri in self.pl["workloads"].items():
            if w in PG_WORKLOADS:
                self.bench.warmup(self.label, "direct", base + uri, {"gearboxd": self.gb.pids},
                                  workload=w, conns=max(self.pl["conns"]))

    def run(self, workload, uri, path, conc):
        how, port, cpu, n = self.servers.via(path)
        if workload in PG_WORKLOADS:  # the database's backends are processes of their own
            cpu = {**cpu, "postgres": self.bench.pg.pids}
        r = self.bench.wrk(self.label, how, workload, f"http://127.0.0.1:{port}{uri}",
                           conc, self.pl["duration"], cpu, self.gb.pids, tag=f"{self.side.name} r{self.rnd}",
                           gearbox=self.gb, nginx=n)
        r.update(side=self.side.key, round=self.rnd, ab_path=path)

    def stop(self):
        self.servers.stop(self.bench.notes, f"{self.side.name} {self.label} round {self.rnd}")


def run_round(bench, sides, label, rnd, pl):
    """One round on one configuration: both sides started afresh (fresh ports, one
    socket each), both warmed up, then every cell run on both, so the two runs of a
    pair are seconds apart and a burst of other load hits both alike. A goes first
    in odd rounds, B in even ones: whatever the first run of a pair leaves behind
    (the database's caches, the scheduler's state) falls on each side alike."""
    running = []
    try:
        for side in sides:
            running.append(Running(bench, side, label, rnd, pl))
            running[-1].start()
        order = running if rnd % 2 else running[::-1]
        for r in order:
            r.warmup()
        for w, uri in pl["workloads"].items():
            for p in pl["paths"]:
                for c in pl["conns"]:
                    for r in order:
                        r.run(w, uri, p, c)
    finally:
        for r in reversed(running):
            r.stop()




def main(argv):
    args = parse_args(argv)
    if args.rerender:
        return rerender(args)
    pl = make_plan(args)
    names = _list(args.names)
    if len(names) != 2 or names[0] == names[1]:
        sys.exit("bench_ab: --names wants two different names, e.g. old,new")
    if any(p.startswith("nginx") for p in pl["paths"]) and not shutil.which("nginx"):
        sys.exit("bench_ab: nginx is not installed (.ci/setup installs it)")
    if not shutil.which("wrk"):
        sys.exit("bench_ab: wrk is not installed (.ci/setup installs it)")
    sides = [Side("a", names[0], args.ab[0], args.extra_old or args.extra),
             Side("b", names[1], args.ab[1], args.extra_new or args.extra)]
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    meta = bench_report.machine_facts()
    meta.update(names=names, sides=[s.facts() for s in sides], min_ratio=args.min_ratio,
                command="tests/bench/run.sh " + " ".join(argv), notes=[],
                loadavg_start=open("/proc/loadavg").read().split()[:3])
    bench = Bench(args, None, out)
    bench.total = 2 * pl["rounds"] * len(pl["models"]) * len(pl["workloads"]) * len(pl["paths"]) * len(pl["conns"])
    log(f"bench_ab: {names[0]} = {sides[0].binary}, {names[1]} = {sides[1].binary}; {bench.total} runs, "
        f"estimated {estimate_s(pl) / 60:.1f} min; load average {' '.join(meta['loadavg_start'])}; out {out}")
    failed = None
    try:
        if any(w.startswith("timerwait") for w in pl["workloads"]):
            bench.timerwait, _ = build_timerwait(bench.work)  # the /tw route's module
        check_configs(sides, pl, bench.work, start_postgres(bench, pl, meta))
        for label in pl["models"]:
            for rnd in range(1, pl["rounds"] + 1):
                run_round(bench, sides, label, rnd, pl)
    except Exception as e:  # noqa: BLE001 - report, keep what was measured
        failed = f"{type(e).__name__}: {e}"
        log(f"bench_ab: ERROR: {failed}")
    finally:
        stop_all()
        shutil.rmtree(bench.work, ignore_errors=True)
    return report(args, pl, meta, bench, failed, out)


def report(args, pl, meta, bench, failed, out):
    cs = cells(bench.runs, pl)
    checks = bench_report.quick_checks(bench.runs, []) if args.quick else []
    if args.quick:
        try:
            bench_toml._self_check()
            checks.append({"what": "bench_toml merges snippets", "ok": True, "warning": False, "detail": ""})
        except (AssertionError, ValueError) as e:
            checks.append({"what": "bench_toml merges snippets", "ok": False, "warning": False,
                           "detail": str(e)[:300]})
        for c in cs:
            name = f"{c['workload']} {c['model']} {c['path']} c={c['conc']}"
            checks.append({"what": f"A/B {name}: both sides measured, ratio computed",
                           "ok": c["ratio"] is not None and c["a"]["runs"] == c["b"]["runs"] == pl["rounds"],
                           "warning": False, "detail": f"ratio {_f(c['ratio'], 3)}"})
    meta.update(loadavg_end=open("/proc/loadavg").read().split()[:3], elapsed_s=round(time.monotonic() - T0, 1),
                error=failed, summary=summary(cs, meta["names"], args.min_ratio),
                noise=noise_line(bench.runs))
    meta["notes"] += bench.notes
    with open(os.path.join(out, "ab.json"), "w") as f:
        json.dump({"meta": meta, "plan": pl, "cells": cs, "runs": bench.runs, "checks": checks}, f, indent=1)
    with open(os.path.join(out, "ab.md"), "w") as f:
        f.write(markdown(meta, pl, cs, checks))
    print()
    for line in table(cs, meta["names"], args.min_ratio):
        print(line)
    print()
    log(f"bench_ab: {meta['summary']}")
    if meta["noise"]:
        log("bench_ab: " + meta["noise"].strip("> \n").replace("**", ""))
    log(f"bench_ab: wrote {out}/ab.md and ab.json ({meta['elapsed_s']} s)")
    bad = [c for c in checks if not c["ok"]]
    for c in bad:
        log(f"check FAILED: {c['what']}: {c['detail']}")
    if failed:
        return 2
    if args.quick:
        log(f"quick: {len(checks) - len(bad)}/{len(checks)} checks passed")
        if bad:
            return 1
    if args.strict and any(c["ratio"] is None or c["ratio"] < args.min_ratio for c in cs):
        return 1
    return 0


if __name__ == "__main__":
    def _term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, _term)
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        stop_all()
        sys.exit(130)
