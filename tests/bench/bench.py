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
This file holds the command line, the build and the order of the runs; the plan
(configurations, workloads) is in bench_plan.py, one measured run (Bench) in
bench_runner.py, the servers in bench_servers.py.
Standard library only.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_advisor  # noqa: E402
import bench_ratios  # noqa: E402
import bench_report  # noqa: E402
from bench_plan import (  # noqa: E402
    CONFIG_BY_LABEL, CONFIGS, PG_WORKLOADS, WORKLOADS, count_points, estimate, plan)
from bench_runner import Bench  # noqa: E402
from bench_servers import (  # noqa: E402
    HERE, ROOT, T0, Gearbox, Nginx, Postgres, log, build_timerwait, sh, stop_all)


def run_config(bench, label, pl):
    """Every point of one server configuration: direct, through nginx over the unix
    socket and over TCP, the seed profile, the alternation, idle and slow clients."""
    d = pl["duration"]
    gb = Gearbox(bench.binary, CONFIG_BY_LABEL[label], bench.work, bench.logdir, bench.confdir,
                 timerwait=bench.timerwait, pg=bench.pg.dir)
    gb.start()
    ngx = Nginx(bench.work, bench.confdir, bench.logdir, label)
    ngx.start(gb)
    ngx_tcp = Nginx(bench.work, bench.confdir, bench.logdir, label, transport="tcp")
    ngx_tcp.start(gb)
    log(f"=== {label}: gearboxd pid {gb.proc.pid} ({len(gb.pids())} processes) on :{gb.port} "
        f"and {gb.sock}; nginx :{ngx.proxy} -> socket, nginx :{ngx_tcp.proxy} -> :{gb.port}, "
        f":{ngx.ref} return 200 ===")
    gcpu = {"gearboxd": gb.pids}
    direct = f"http://127.0.0.1:{gb.port}"
    bench.warmup(label, "direct", direct + "/hello", gcpu)
    # The database's CPU is measured apart (its backends are processes of their own).
    with_pg = {"postgres": bench.pg.pids}
    for w, concs in pl["direct"].items():
        cpu = {**gcpu, **with_pg} if w in PG_WORKLOADS else gcpu
        for c in concs:
            bench.wrk_rounds(pl.get("sweep_rounds", {}).get(w, 1), label, "direct", w,
                             direct + WORKLOADS[w], c, d, cpu, gb.pids, gearbox=gb)
    for n, points in ((ngx, pl["nginx"]), (ngx_tcp, pl.get("nginx_tcp", {}))):
        both = {"gearboxd": gb.pids, "nginx": n.workers}
        for w, concs in points.items():
            cpu = {**both, **with_pg} if w in PG_WORKLOADS else both
            for c in concs:
                bench.wrk(label, "nginx", w, f"http://127.0.0.1:{n.proxy}{WORKLOADS[w]}", c, d, cpu,
                          gb.pids, gearbox=gb, nginx=n)
    both = {"gearboxd": gb.pids, "nginx": ngx.workers}
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
    if label in pl["slow"]["configs"]:
        bench.idle_run(gb, pl["slow"]["count"], d, kind="slow")
    for n in (ngx, ngx_tcp):
        errs = n.stop()
        if errs:
            bench.notes.append(f"{label}: nginx ({n.transport}) error.log has {len(errs)} error lines, "
                               f"e.g. `{errs[0].strip()[:200]}`")
    rc = gb.stop()
    if rc != 0:
        bench.notes.append(f"{label}: gearboxd exited {rc} after SIGTERM")


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


def parse_args():
    ap = argparse.ArgumentParser(description="gearbox benchmark (see tests/bench/README.md)")
    ap.add_argument("--quick", action="store_true", help="smoke pass (< 2 minutes), exit 1 if not sane")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--duration", type=int, help="seconds per wrk point (default 3, quick 1)")
    ap.add_argument("--only", help="comma-separated config labels to run (default: the plan's)")
    ap.add_argument("--idle-count", type=int, help="idle connections (default 10000, quick 1000)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--rerender", metavar="DIR",
                    help="only rewrite results.md and the plots of DIR from its results.json")
    return ap.parse_args()


def rerender(args):
    """--rerender: rewrites results.md, the plots and advisor.md of a results
    directory from its results.json (and advisor.json's picks); measures nothing."""
    with open(os.path.join(args.rerender, "results.json")) as f:
        j = json.load(f)
    report = bench_report.Report(j["meta"], j["plan"], CONFIGS, WORKLOADS, j["runs"], j["idle"],
                                 j["notes"], j["checks"], j["error"])
    report.write(os.path.abspath(args.rerender), plots=not args.no_plots)
    log(f"bench: rewrote {args.rerender}/results.md from results.json")
    advice = bench_advisor.reevaluate(os.path.abspath(args.rerender), j["runs"], j["plan"],
                                      CONFIG_BY_LABEL)
    if advice:
        log(f"bench: rewrote {args.rerender}/advisor.md from advisor.json's picks")
        for line in bench_advisor.summary_lines(advice):
            log("advisor: " + line)
    return 0


def require_tools():
    for tool, package in (("nginx", "nginx-light"), ("wrk", "wrk"), ("httperf", "httperf"),
                          ("psql", "postgresql")):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} not found: apt-get install {package} (.ci/setup installs it)")


def plan_for(args):
    """The plan, restricted to --only's configurations (the ratios pass only when
    all of its configurations are still in)."""
    pl = plan(args)
    if args.only:
        pl["configs"] = [c for c in args.only.split(",") if c]
        if "ratios" in pl and not set(pl["ratios"]["configs"]) <= set(pl["configs"]):
            del pl["ratios"]
        for c in pl["configs"]:
            if c not in CONFIG_BY_LABEL:
                sys.exit(f"bench: unknown config {c} (valid: {', '.join(CONFIG_BY_LABEL)})")
    return pl


def start_meta(args, out, pl):
    """The machine's facts at the start, logged (with a warning on a busy machine)."""
    meta = bench_report.machine_facts()
    meta["mode"] = "quick" if args.quick else "full"
    meta["loadavg_start"] = open("/proc/loadavg").read().split()[:3]
    meta["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    log(f"bench: mode {meta['mode']}, out {out}, load average {' '.join(meta['loadavg_start'])}, "
        f"RLIMIT_NOFILE {meta['nofile']}, estimated {estimate(pl) / 60:.1f} min of load")
    if float(meta["loadavg_start"][0]) > 1.0:
        log("bench: WARNING: load average > 1.0: the machine is busy, figures will be noisy")
    return meta


def make_bench(args, out, meta, pl):
    """Builds gearboxd (and libtimerwait.so) and sets up the Bench that runs the plan."""
    binary, build_cmd = build_gearboxd()
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench: no gearboxd at {binary}")
    meta["gearboxd"] = binary
    meta["gearboxd_version"] = sh([binary, "-v"]).stdout.strip()
    meta["build"] = build_cmd
    bench = Bench(args, binary, out)
    bench.timerwait, meta["timerwait_build"] = build_timerwait(bench.work)
    bench.pg = Postgres(bench.work, bench.logdir)
    bench.total = count_points(pl)
    return bench


def run_reference(bench, pl, meta, d):
    """Reference: nginx answering by itself, 1 worker."""
    ngx = Nginx(bench.work, bench.confdir, bench.logdir, "ref")
    ngx.start()
    meta["nginx_snippets"] = ngx.snippets
    log(f"nginx reference (return 200, 1 worker) on :{ngx.ref}; snippets: {ngx.snippets}")
    ncpu = {"nginx": ngx.workers}
    bench.warmup("nginx", "ref", f"http://127.0.0.1:{ngx.ref}/", ncpu)
    for c in pl["ref_conc"]:
        # As many rounds as gearboxd's hello points: the advisor check compares tails.
        bench.wrk_rounds(pl.get("sweep_rounds", {}).get("hello", 1), "nginx", "ref", "hello",
                         f"http://127.0.0.1:{ngx.ref}/", c, d, ncpu)
    if pl["seed"]["hello"]:
        bench.httperf("nginx", "ref", "hello", ngx.ref, "/", pl["seed_conns"], ncpu)
    ngx.stop()


def run_plan(bench, pl, meta, d):
    """Every run of the plan. Returns (the error that stopped it or None, the
    advisor's picks); stops every server and removes the work directory."""
    failed = None
    advice_picks = []
    try:
        run_reference(bench, pl, meta, d)
        bench.pg.start()
        meta["postgres"] = bench.pg.version()
        log(f"postgres ({meta['postgres']}) on {bench.pg.dir}, bench_rows: {Postgres.ROWS} rows")
        for label in pl["configs"]:
            run_config(bench, label, pl)
        bench_ratios.run(bench, pl, CONFIG_BY_LABEL)
        # The advisor check: each configuration's pick for each workload.
        advice_picks = bench_advisor.run(bench, pl, CONFIG_BY_LABEL)
    except Exception as e:  # noqa: BLE001 - report, keep what was measured
        failed = f"{type(e).__name__}: {e}"
        log(f"bench: ERROR: {failed}")
    finally:
        stop_all()
        bench.pg.stop()
        shutil.rmtree(bench.work, ignore_errors=True)
    return failed, advice_picks


def write_results(args, out, meta, pl, bench, failed, advice_picks):
    """Writes advisor.md/.json, results.md/.json and the plots. Returns the quick
    checks, the advisor's evaluation and the report."""
    checks = bench_report.quick_checks(bench.runs, bench.idle) if args.quick else []
    advice = bench_advisor.evaluate(bench.runs, advice_picks, pl, CONFIG_BY_LABEL,
                                    asserting=not args.quick)
    bench_advisor.write(out, advice, CONFIG_BY_LABEL)
    bench.notes.append("The advisor check (does the daemon's advice name the model that measured "
                       "best?) is in `advisor.md` / `advisor.json`.")
    report = bench_report.Report(meta, pl, CONFIGS, WORKLOADS, bench.runs, bench.idle,
                                 bench.notes, checks, failed)
    report.write(out, plots=not args.no_plots)
    log(f"bench: wrote {out}/results.md, results.json" + ("" if args.no_plots else " and plots"))
    return checks, advice, report


def log_outcome(args, checks, advice, report, failed):
    """Logs the targets, the checks and the advisor's table; returns the exit
    status: 2 on an error, else 1 if a check that counts failed."""
    for line in report.target_lines():
        log("target: " + line)
    bad = [c for c in checks if not c["ok"]]
    for c in checks:
        if c.get("warning"):
            log(f"check warning: {c['what']}: {c['detail']}")
    for c in bad:
        log(f"check FAILED: {c['what']}: {c['detail']}")
    for line in bench_advisor.summary_lines(advice):
        log("advisor: " + line)
    advice_bad = [c for c in advice["checks"] if not c["ok"]]
    for c in advice_bad:
        log(f"advisor check FAILED: {c['what']}: {c['detail']}")
    if failed:
        return 2
    if args.quick:
        log(f"quick: {len(checks) - len(bad)}/{len(checks)} checks passed (the advisor table is "
            "printed, not asserted)")
        return 1 if bad else 0
    return 1 if advice_bad else 0


def main():
    args = parse_args()
    if args.rerender:
        return rerender(args)

    require_tools()
    pl = plan_for(args)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    meta = start_meta(args, out, pl)
    bench = make_bench(args, out, meta, pl)
    d = pl["duration"]
    failed, advice_picks = run_plan(bench, pl, meta, d)

    meta["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    meta["elapsed_s"] = round(time.monotonic() - T0, 1)
    meta["duration_per_point_s"] = d
    checks, advice, report = write_results(args, out, meta, pl, bench, failed, advice_picks)
    return log_outcome(args, checks, advice, report, failed)


if __name__ == "__main__":
    def _term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, _term)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        stop_all()
        sys.exit(130)
