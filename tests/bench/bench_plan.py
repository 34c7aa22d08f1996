"""bench_plan.py: what bench.py measures: the server configurations (CONFIGS, and why
each size), the workloads' URLs, the full and --quick plans, and a plan's number of
runs and time estimate. Standard library only."""
import bench_ratios


# Server configurations: (label, model, TOML section, size key, size, why).
# The 2-core sizes (nproc = 2 on the reference machine):
#   async loops=2     one loop per core: a loop is one thread that never blocks,
#                     more loops than cores only adds context switches.
#   threadpool 64     the shipped default. A thread costs ~8 MiB of *virtual* stack
#                     and nothing while parked; 64 threads cover 64 concurrent 1 ms
#                     waits (64,000 req/s, above what 2 cores can serve) and
#                     3,200 req/s of 20 ms waits.
#   prefork 8         a child serves one request at a time, so capacity for waiting
#                     work is workers / wait: 8 children x 1 ms = 8,000 req/s, 8x the
#                     seed's 1,000 req/s; for CPU work 2 would do, and more than ~4
#                     per core only adds memory and context switches (php-fpm's
#                     usual "a few per core" sizing).
CONFIGS = [
    ("async-1", "async", "async", "loops", 1, "smallest: one event loop"),
    ("async-2", "async", "async", "loops", 2, "2-core size: one loop per core"),
    ("threadpool-1", "threadpool", "threadpool", "threads", 1, "smallest: one worker thread"),
    ("threadpool-64", "threadpool", "threadpool", "threads", 64,
     "2-core size: the shipped default; covers 64 concurrent waits"),
    ("prefork-1", "prefork", "prefork", "workers", 1, "smallest: one child (the seed's one PHP process)"),
    ("prefork-8", "prefork", "prefork", "workers", 8,
     "2-core size: 8 children = 8,000 req/s of 1 ms waits, 4 per core"),
]
CONFIG_BY_LABEL = {c[0]: c for c in CONFIGS}


WORKLOADS = {
    "hello": "/hello",
    "wait1ms": "/sleep?ms=1",
    "wait20ms": "/sleep?ms=20",
    # The same waits through a module: a timerfd waited on with the handler fd
    # wait (sdk/examples/timerwait.c), beside wait's timer: the fd path's cost.
    "timerwait1ms": "/tw?ms=1",
    "timerwait20ms": "/tw?ms=20",
    "burn": "/burn?us=200",
    # A real database (the postgres handler on a cluster the bench creates): the
    # seed's 1 ms made real (about 2 ms on one connection: the query's round
    # trips), and an indexed point lookup on a 100,000-row table.
    "pgsleep1ms": "/pgsleep",
    "pglookup": "/pglookup?id=54321",
}
PG_WORKLOADS = ("pgsleep1ms", "pglookup")


def plan(args):
    if args.quick:
        return {
            "configs": ["async-1", "threadpool-64", "prefork-8"],
            "direct": {"hello": [16, 64], "wait1ms": [16, 64], "timerwait1ms": [16, 64],
                       "wait20ms": [16], "burn": [16], "pgsleep1ms": [16], "pglookup": [16]},
            "nginx": {"hello": [16], "wait1ms": [16], "pgsleep1ms": [16], "pglookup": [16]},
            "nginx_tcp": {"hello": [16]},
            "ref_conc": [16, 64],
            "duration": args.duration or 1,
            "seed": {"wait1ms": ["async-1"], "hello": []},
            "seed_conns": 200,
            "alternation": {"rounds": 1, "conc": 64},
            "idle": {"configs": ["async-1"], "count": args.idle_count or 1000},
            "slow": {"configs": ["prefork-8"], "count": 200},
            "advisor": {"mixed_conc": [64]},
        }
    conc = [1, 16, 64, 256]
    # hello also at c=512, directly and for nginx `return 200`: at c <= 256 its p50
    # (0.03-2 ms) is on the scale of the host's scheduling jitter and of wrk's own
    # (one client thread, the busiest on the host), so "p99 within 3x p50" measures the
    # client and the host (nginx itself misses it there); at c=512 the p50 is ~4-17 ms
    # and the tail is the server's. The advisor check's "best" counts every point.
    hello_conc = conc + [512]
    return {
        "configs": [c[0] for c in CONFIGS],
        "direct": {w: hello_conc if w == "hello" else conc for w in WORKLOADS},
        "nginx": {"hello": conc, "wait1ms": conc, "pgsleep1ms": conc, "pglookup": conc},
        # nginx -> gearboxd over TCP (127.0.0.1:PORT, the shipped upstream otherwise),
        # as a multi-host setup runs: ~50 points, ~3 minutes more.
        "nginx_tcp": {"hello": conc, "wait1ms": conc},
        "ref_conc": hello_conc,
        "duration": args.duration or 3,
        "seed": {"wait1ms": [c[0] for c in CONFIGS],
                 "hello": ["async-1", "threadpool-1", "prefork-1"]},
        "seed_conns": 1000,
        "alternation": {"rounds": 3, "conc": 64},
        # hello's direct points, medians of 3 rounds: their sub-millisecond p99 decides
        # the advisor check's "best" (p99 <= 3x p50) and the c=64 ratios of the
        # throughput targets. ~165 s more.
        "sweep_rounds": {"hello": 3},
        "idle": {"configs": ["async-1", "threadpool-64", "prefork-8"],
                 "count": args.idle_count or 10000},
        "slow": {"configs": ["async-1", "threadpool-64", "prefork-8"], "count": 1000},
        # bench_advisor.py: the mixed workload's sweep (the other workloads are swept above).
        "advisor": {"mixed_conc": [16, 64, 256]},
        # bench_ratios.py: targets 1, 5 and 6 (/hello c=64, blocking models vs async-2 on
        # each path) in alternating rounds with the three running at once. ~160 s more.
        "ratios": {"configs": ["async-2", "threadpool-64", "prefork-8"], "rounds": 5, "conc": 64,
                   "profile": True},  # + one run each under perf stat: syscalls, switches
    }


def points_per_config(pl):
    return sum(len(v) for k in ("direct", "nginx", "nginx_tcp") for v in pl.get(k, {}).values())


def extra_rounds_per_config(pl):
    """wrk runs beyond one per point: the direct points measured over several rounds."""
    return sum((n - 1) * len(pl["direct"].get(w, [])) for w, n in pl.get("sweep_rounds", {}).items())


def count_points(pl):
    n = (len(pl["ref_conc"]) + 2 * pl["alternation"]["rounds"] + 2 * len(pl["idle"]["configs"])
         + 2 * len(pl["slow"]["configs"]) + bench_ratios.points(pl))
    return n + len(pl["configs"]) * points_per_config(pl)


def estimate(pl):
    d = pl["duration"] + 0.4
    pts = len(pl["ref_conc"]) * pl.get("sweep_rounds", {}).get("hello", 1) + len(pl["configs"]) * (points_per_config(pl)
                                                       + extra_rounds_per_config(pl))
    pts += 2 * pl["alternation"]["rounds"] + bench_ratios.points(pl)
    seeds = len(pl["seed"]["wait1ms"]) + len(pl["seed"]["hello"]) + 1
    idle = len(pl["idle"]["configs"]) * (2 * d + pl["idle"]["count"] / 1000 + 3)
    idle += len(pl["slow"]["configs"]) * (2 * d + pl["slow"]["count"] / 1000 + 3)
    return pts * d + seeds * (pl["seed_conns"] / 100 + 1) + idle + 2 * len(pl["configs"])
