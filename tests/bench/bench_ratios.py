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
import statistics

from bench_servers import Gearbox, Nginx, log

TAG = "ratio"
PATHS = ("direct", "nginx-unix", "nginx-tcp")


class _Running:
    """One configuration's gearboxd and its two nginx (unix socket, TCP)."""

    def __init__(self, bench, cfg):
        self.label = cfg[0]
        self.gb = Gearbox(bench.binary, cfg, bench.work, bench.logdir, bench.confdir, tag=TAG,
                          sock_name=f"{TAG}-{self.label}.sock")
        self.nginx = {}
        self.bench = bench

    def start(self):
        self.gb.start()
        for path in PATHS[1:]:
            n = Nginx(self.bench.work, self.bench.confdir, self.bench.logdir, f"{TAG}-{self.label}",
                      transport=path.split("-", 1)[1])
            self.nginx[path] = n  # before start(): stop() must find it if start fails
            n.start(self.gb)
        self.bench.warmup(self.label, "direct", f"http://127.0.0.1:{self.gb.port}/hello",
                          {"gearboxd": self.gb.pids})

    def run(self, path, conc, duration, rnd):
        n = self.nginx.get(path)
        cpu = {"gearboxd": self.gb.pids}
        if n:
            cpu["nginx"] = n.workers
        port = n.proxy if n else self.gb.port
        r = self.bench.wrk(self.label, "nginx" if n else "direct", "hello",
                           f"http://127.0.0.1:{port}/hello", conc, duration, cpu, self.gb.pids,
                           tag=TAG, gearbox=self.gb, nginx=n)
        r["round"] = rnd

    def stop(self):
        for n in self.nginx.values():
            if n.proc is not None:
                n.stop()
        if self.gb.proc is not None:
            rc = self.gb.stop()
            if rc != 0:
                self.bench.notes.append(f"{self.label} ({TAG} rounds): gearboxd exited {rc} after SIGTERM")


def points(pl):
    r = pl.get("ratios")
    return len(r["configs"]) * len(PATHS) * r["rounds"] if r else 0


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
