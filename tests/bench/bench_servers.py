"""bench_servers.py: the pieces bench.py drives, under the one name the tools import:
gearboxd and nginx started and stopped by PID, /proc figures (CPU time, RSS, other
jobs' CPU), and the wrk/httperf output parsers. Each lives in a module of its own:
bench_common.py (paths, log, sh, HTTP GET, the processes we start), bench_proc.py
(/proc figures), bench_gearbox.py (gearboxd, Fronted), bench_nginx.py,
bench_postgres.py (the throwaway cluster) and bench_parse.py. Standard library only."""
from bench_common import (HERE, ROOT, STARTED, T0, free_port, http_get, http_get_ok, log, sh,
                          stop_all, stop_proc, wait_until)
from bench_gearbox import PATHS, ROUTES, Fronted, Gearbox, build_timerwait
from bench_nginx import SNIPPETS, Nginx
from bench_parse import parse_httperf, parse_wrk
from bench_postgres import Postgres, pg_routes
from bench_proc import (CLK_TCK, Noise, children_cpu_seconds, cpu_seconds, host_busy_seconds,
                        proc_tree, rss_kib, slab_kib)

__all__ = [
    "HERE", "ROOT", "STARTED", "T0", "free_port", "http_get", "http_get_ok", "log", "sh",
    "stop_all", "stop_proc", "wait_until",
    "PATHS", "ROUTES", "Fronted", "Gearbox", "build_timerwait",
    "SNIPPETS", "Nginx",
    "parse_httperf", "parse_wrk",
    "Postgres", "pg_routes",
    "CLK_TCK", "Noise", "children_cpu_seconds", "cpu_seconds", "host_busy_seconds", "proc_tree",
    "rss_kib", "slab_kib",
]
