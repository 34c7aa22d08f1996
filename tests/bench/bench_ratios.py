"""bench_ratios.py: the throughput ratios of the blocking models to async, measured
in alternating rounds.

Targets 1, 5 and 6 compare threadpool-64 and prefork-8 with async-2 on /hello at
c=64 (direct, through nginx over the unix socket, through nginx over TCP). The
sweep measures each configuration minutes apart from the others, and on a shared
2-core host one 3 s run swings by 20-40% with what else runs then: two sweep
points of the same code measured 59k and 41k req/s through nginx. So the three
configurations run at once here (each with its own nginx per transport), and each
round measures every path of every configuration back to back, in an order that
rotates from round to round. A ratio is the median of the numerator's rounds over
the median of the denominator's, as target 1 does with nginx `return 200`.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench_servers import PATHS, Fronted, Gearbox, log

TAG = "ratio"
PROFILE_TAG = "ratio-profile"
PERF_EVENTS = ("raw_syscalls:sys_enter", "context-switches")
# Before issue 19's work: the same profile pass run on the code of its filing
# (`python3 bench_ratios.py --profile-binary BIN --commit C --out profile_before.json`).
BEFORE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile_before.json")


class PerfStat:
    """`perf stat` counting syscalls and context switches of some processes (every
    thread) until stop(); None figures where perf is missing or refused."""

    def __init__(self, pids):
        self.proc = None
        if shutil.which("perf") and pids:
            self.proc = subprocess.Popen(
                ["perf", "stat", "-x,", "-e", ",".join(PERF_EVENTS), "-p", ",".join(map(str, pids))],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(self):
        if self.proc is None:
            return {}
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return {}
        counts = {}
        for line in err.splitlines():
            f = line.split(",")
            if len(f) > 2 and f[2] in PERF_EVENTS and f[0].isdigit():
                counts[f[2]] = int(f[0])
        return counts


class _Running:
    """One configuration's gearboxd and its two nginx (unix socket, TCP)."""

    def __init__(self, bench, cfg):
        self.label = cfg[0]
        self.gb = Gearbox(bench.binary, cfg, bench.work, bench.logdir, bench.confdir, tag=TAG,
                          sock_name=f"{TAG}-{self.label}.sock")
        self.servers = Fronted(self.gb, bench.work, bench.confdir, bench.logdir,
                               f"{TAG}-{self.label}", PATHS)
        self.bench = bench

    def start(self):
        self.servers.start()
        self.bench.warmup(self.label, "direct", f"http://127.0.0.1:{self.gb.port}/hello",
                          {"gearboxd": self.gb.pids})

    def run(self, path, conc, duration, rnd=None, tag=TAG):
        how, port, cpu, n = self.servers.via(path)
        r = self.bench.wrk(self.label, how, "hello", f"http://127.0.0.1:{port}/hello", conc,
                           duration, cpu, self.gb.pids, tag=tag, gearbox=self.gb, nginx=n)
        r["round"] = rnd
        return r

    def profile(self, path, conc, duration):
        """One run under perf stat (not in the medians: perf slows what it counts):
        syscalls and context switches per request of gearboxd and of nginx's worker."""
        n = self.servers.nginx.get(path)
        perf = {"gearboxd": PerfStat(self.gb.pids())}
        if n:
            perf["nginx"] = PerfStat(n.workers())
        time.sleep(0.3)  # perf attaches to every thread first
        r = self.run(path, conc, duration, tag=PROFILE_TAG)
        r["profile"] = {}
        for who, p in perf.items():
            counts = p.stop()
            if counts and r["requests"]:
                r["profile"][who] = {e: counts.get(e, 0) / r["requests"] for e in PERF_EVENTS}
        return r

    def stop(self):
        self.servers.stop(self.bench.notes, f"{self.label} ({TAG} rounds)")


def points(pl):
    r = pl.get("ratios")
    return len(r["configs"]) * len(PATHS) * (r["rounds"] + bool(r.get("profile"))) if r else 0


def run(bench, pl, config_by_label):
    """pl["ratios"]: {"configs": [...], "rounds": N, "conc": C}. Records runs tagged
    "ratio" (with their round) in bench.runs."""
    spec = pl.get("ratios")
    if not spec:
        return
    running = [_Running(bench, config_by_label[label]) for label in spec["configs"]]
    try:
        for r in running:
            r.start()
        log(f"=== {TAG} rounds: {', '.join(r.label for r in running)} at once, /hello c={spec['conc']}, "
            f"{spec['rounds']} alternating rounds over {', '.join(PATHS)} ===")
        for rnd in range(spec["rounds"]):
            order = running[rnd % len(running):] + running[:rnd % len(running)]
            for path in PATHS:
                for r in order:
                    r.run(path, spec["conc"], pl["duration"], rnd)
        if spec.get("profile"):
            for path in PATHS:
                for r in running:
                    r.profile(path, spec["conc"], pl["duration"])
    finally:
        for r in running:
            r.stop()


def medians(runs, route):
    """{(server, route(r)): {"rps": median req/s, "rounds": n, "spread": (max-min)/median}}
    of the ratio rounds."""
    by = {}
    for r in runs:
        if r.get("tag") == TAG and r["kind"] == "wrk" and not r.get("tool_error"):
            by.setdefault((r["server"], route(r)), []).append(r["rps"])
    out = {}
    for key, rps in by.items():
        m = statistics.median(rps)
        out[key] = {"rps": m, "rounds": len(rps),
                    "spread": (max(rps) - min(rps)) / m if m else None}
    return out


def profiles(runs, route):
    """{(server, route(r)): {"gearboxd": {event: per request}, "nginx": {...}}}."""
    return {(r["server"], route(r)): r["profile"] for r in runs
            if r.get("tag") == PROFILE_TAG and r.get("profile")}


def before():
    """The committed profile of the code before issue 19 (BEFORE_FILE), or None."""
    try:
        with open(BEFORE_FILE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _profile_main(argv):
    """Runs only the profile pass of the three configurations with another binary and
    writes its figures (the "before" side of results.md's profile table)."""
    import argparse
    import types

    import bench  # the plan's configurations and the Bench runner
    import bench_report
    ap = argparse.ArgumentParser(description=_profile_main.__doc__)
    ap.add_argument("--profile-binary", required=True)
    ap.add_argument("--commit", required=True, help="the commit BIN was built from")
    ap.add_argument("--out", default=BEFORE_FILE)
    ap.add_argument("--duration", type=int, default=3)
    args = ap.parse_args(argv)
    logs = tempfile.mkdtemp(prefix="gearbox-profile.")
    work = bench.Bench(types.SimpleNamespace(quick=False), args.profile_binary, logs)
    spec = dict(bench.plan(types.SimpleNamespace(quick=False, duration=None, idle_count=None))["ratios"])
    spec.update(rounds=0, profile=True)
    try:
        run(work, {"ratios": spec, "duration": args.duration}, bench.CONFIG_BY_LABEL)
    finally:
        bench.stop_all()
        shutil.rmtree(work.work, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)
    got = profiles(work.runs, bench_report.route)
    out = {"commit": args.commit, "date": time.strftime("%Y-%m-%d"),
           "method": f"bench_ratios.py --profile-binary: wrk -t1 -c{spec['conc']} -d{args.duration}s /hello "
                     "under perf stat, per request",
           "profile": {f"{server} {route}": v for (server, route), v in got.items()}}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(_profile_main(sys.argv[1:]))
