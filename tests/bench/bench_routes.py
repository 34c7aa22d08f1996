#!/usr/bin/env python3
"""bench_routes.py: does matching cost depend on the number of routes? (issue 34)

Two configs of the same binary, A/B in alternating rounds (bench_ab.py): 5 routes
against 1,000 (a mix of exact, template and prefix patterns, the 5 among them),
async-1, direct, c=64, on an exact route (/hello), a template (/items/123) and a
prefix (/static/a/b.css). Target: on each path the 1,000-route req/s >= 0.95x the
5-route one.

    tests/bench/bench_routes.py BIN [--out DIR] [--rounds N] [--duration S]

Writes routes5.toml and routes1000.toml to DIR, then bench_ab's ab.md/ab.json there
(default tests/bench/out/routes). Standard library only.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# The 5-route config, and the first 5 of the 1,000: the three measured patterns,
# plus a wait and /status (the bench reads it).
BASE = [
    ("/hello", 'handler = "text"\nbody = "hello world\\n"'),
    ("/items/{id}", 'handler = "text"\nbody = "item\\n"'),
    ("/static/", 'handler = "text"\nbody = "static\\n"'),
    ("/sleep", 'handler = "wait"\nms = 1\nmax_ms = 10000'),
    ("/status", 'handler = "status"'),
]


def many_routes(total):
    """BASE, neighbours of the measured routes, then app{i} trees of an exact, a
    template and a prefix route each, up to `total`: a root with ~330 literal
    children and /items and /static nodes with more than one child."""
    routes = list(BASE) + [
        ("/items/{id}/details", 'handler = "text"\nbody = "details\\n"'),
        ("/items/new", 'handler = "text"\nbody = "new\\n"'),
        ("/static/img/", 'handler = "text"\nbody = "img\\n"'),
    ]
    i = 0
    while len(routes) < total:
        for path in (f"/app{i}/info", f"/app{i}/items/{{id}}", f"/app{i}/assets/"):
            if len(routes) < total:
                routes.append((path, 'handler = "text"\nbody = "app\\n"'))
        i += 1
    return routes


def toml(routes):
    return "".join(f'\n[[route]]\npath = "{p}"\n{rest}\n' for p, rest in routes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "routes"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    few, many = os.path.join(args.out, "routes5.toml"), os.path.join(args.out, "routes1000.toml")
    with open(few, "w") as f:
        f.write(toml(BASE))
    with open(many, "w") as f:
        f.write(toml(many_routes(1000)))
    cmd = [sys.executable, os.path.join(HERE, "bench_ab.py"), "--ab", args.binary, args.binary,
           "--names", "routes5,routes1000", "--extra-old", few, "--extra-new", many,
           "--workloads", "exact=/hello,template=/items/123,prefix=/static/a/b.css",
           "--models", "async-1", "--conns", "64", "--paths", "direct",
           "--rounds", str(args.rounds), "--duration", str(args.duration), "--out", args.out]
    print(" ".join(cmd), flush=True)
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
