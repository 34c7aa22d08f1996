"""bench_postgres.py: the real-database workloads: the throwaway PostgreSQL cluster
(Postgres, stopped by its postmaster's PID) and the gearboxd routes that query it
(pg_routes). Standard library only."""
import os
import shutil
import signal
import subprocess

from bench_common import STARTED, sh, stop_proc, wait_until
from bench_proc import proc_tree


def pg_routes(socket_dir, model):
    """The real-database workloads' routes (the postgres handler) on the bench's
    cluster. pool: an async loop keeps up to 64 queries in flight; a blocking
    worker uses one connection at a time, so 1 (README: connection sizing)."""
    dsn = f"host={socket_dir} dbname=postgres user=postgres"
    pool = 64 if model == "async" else 1
    return f"""
[[route]]
path = "/pgsleep"
handler = "postgres"
dsn = "{dsn}"
query = "SELECT pg_sleep(0.001)"
pool = {pool}

[[route]]
path = "/pglookup"
handler = "postgres"
dsn = "{dsn}"
query = "SELECT id, v FROM bench_rows WHERE id = $1::int"
params = ["id"]
pool = {pool}
"""


class Postgres:
    """A throwaway PostgreSQL cluster for the real-database workloads: initdb in
    `work`, listening on a unix socket there only, run as the postgres user (the
    server refuses root); bench_rows holds ROWS rows with a primary key (the
    indexed point lookup). Stopped by its postmaster's PID."""

    ROWS = 100000

    def __init__(self, work, logdir):
        self.dir = os.path.join(work, "pg")
        self.data = os.path.join(self.dir, "data")
        self.logfile = os.path.join(logdir, "postgres.log")
        self.proc = None
        bins = sorted((d for d in os.listdir("/usr/lib/postgresql") if d.isdigit()), key=int) \
            if os.path.isdir("/usr/lib/postgresql") else []
        if not bins:
            raise RuntimeError("no PostgreSQL server under /usr/lib/postgresql/*/bin: "
                               "apt-get install postgresql (.ci/setup installs it)")
        self.bin = os.path.join("/usr/lib/postgresql", bins[-1], "bin")
        self.user = {} if os.geteuid() != 0 else {"user": "postgres", "group": "postgres",
                                                  "extra_groups": []}

    def sql(self, statement):
        return sh(["psql", "-X", "-q", "-At", "-h", self.dir, "-U", "postgres", "-d", "postgres",
                   "-c", statement], timeout=120)

    def start(self):
        os.makedirs(self.dir)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        r = subprocess.run([os.path.join(self.bin, "initdb"), "-D", self.data, "-A", "trust", "-U",
                            "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                           capture_output=True, text=True, timeout=120, **self.user)
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stdout}{r.stderr}")
        out = open(self.logfile, "w")
        # max_connections: async-2 x 64 x 2 routes = 256 at most, plus psql.
        self.proc = subprocess.Popen(
            [os.path.join(self.bin, "postgres"), "-D", self.data, "-c", "listen_addresses=",
             "-c", f"unix_socket_directories={self.dir}", "-c", "max_connections=300",
             "-c", "fsync=off", "-c", "shared_buffers=64MB",
             # No autovacuum: its workers come and go, and the CPU of an exited
             # process drops out of the live sum (cpu_seconds); bench_rows is
             # analyzed once and never written.
             "-c", "autovacuum=off"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **self.user)
        STARTED.append(self.proc)
        if not wait_until(lambda: self.proc.poll() is not None or
                          self.sql("SELECT 1").returncode == 0, 30, every=0.1) or \
                self.proc.poll() is not None:
            raise RuntimeError(f"postgres did not start; see {self.logfile}")
        r = self.sql(f"CREATE TABLE bench_rows (id int PRIMARY KEY, v text); "
                     f"INSERT INTO bench_rows SELECT i, md5(i::text) FROM generate_series(1, {self.ROWS}) i; "
                     f"ANALYZE bench_rows;")
        if r.returncode != 0:
            raise RuntimeError(f"creating bench_rows failed: {r.stderr}")

    def pids(self):
        return proc_tree(self.proc.pid) if self.proc else []

    def version(self):
        return sh([os.path.join(self.bin, "postgres"), "--version"]).stdout.strip()

    def stop(self):
        # SIGINT: fast shutdown (SIGTERM would wait for gearboxd's connections).
        if self.proc and self.proc.poll() is None:
            stop_proc(self.proc, signal.SIGINT, 10)
