#!/usr/bin/env python3
"""lua_ratios.py: the Lua handler's benchmark rows (docs/lua.md), c=64, each row's
two sides in alternating rounds of one run: medians of requests/s and of CPU
microseconds per request, the per-round ratio's median and spread (the CPU figure
holds on a busy host, where throughput does not):

  Lua /hello (sdk/examples/lua/hello.lua) vs the built-in text handler, per model
  Lua gearbox.sleep(0.001) vs the built-in wait handler (ms = 1), per model
  async-1 Lua /hello vs nginx + Debian's libnginx-mod-http-lua answering
      content_by_lua_block { ngx.say("hello world") } from one worker
  async-1 Lua PostgreSQL point lookup (sdk/examples/lua/items.lua) vs the
      built-in postgres handler on the same query, both through nginx (unix
      socket, the shipped snippets), pool 4, on a throwaway cluster

The first three are direct (wrk to gearboxd or to nginx). That module links
OpenResty's libluajit2, whose packages conflict with libluajit-5.1-dev
(gearbox's build): they are never installed. `apt-get download` fetches the
module, its NDK, OpenResty's LuaJIT and lua-resty-core; `dpkg -x` unpacks them
into the work directory, and nginx loads the module from there with
LD_LIBRARY_PATH at OpenResty's libluajit. The results name each side's LuaJIT.

  python3 tests/bench/lua_ratios.py [--rounds 5] [--duration 3] [--out FILE.md]
  GEARBOXD=/path/to/gearboxd python3 tests/bench/lua_ratios.py --only models
  python3 tests/bench/lua_ratios.py --ab OLD_GEARBOXD   # /lua and /text, OLD vs NEW

--ab compares two builds instead: per model, a fresh OLD and a fresh NEW daemon
in turn each round, /lua and /text on each: the Lua route's CPU per request
before and after a change, with the text route as the host's yardstick.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_servers as bs  # noqa: E402
from bench import CONFIG_BY_LABEL  # noqa: E402

MODELS = [("async-1", "async", "[async]\nloops = 1\n"),
          ("threadpool-4", "threadpool", "[threadpool]\nthreads = 4\n"),
          ("prefork-2", "prefork", "[prefork]\nworkers = 2\n")]
NGINX_DEBS = ["libnginx-mod-http-lua", "libnginx-mod-http-ndk", "libluajit2-5.1-2",
              "libluajit2-5.1-common", "lua-resty-core", "lua-resty-lrucache"]
HELLO = os.path.join(bs.ROOT, "sdk", "examples", "lua", "hello.lua")
ITEMS = os.path.join(bs.ROOT, "sdk", "examples", "lua", "items.lua")
ITEMS_SQL = "SELECT id, name, price, note FROM items WHERE id = $1"
PARTS = ("models", "nginx", "postgres")


def gearbox_config(model, section, port, work):
    sleep = os.path.join(work, "sleep.lua")
    with open(sleep, "w") as f:
        f.write('return function() gearbox.sleep(0.001) return 200, "waited 1 ms\\n" end\n')
    return (f'[server]\nmodel = "{model}"\n{section}[[listen]]\naddress = "127.0.0.1:{port}"\n'
            '[log]\nlevel = "warn"\n'
            '[[route]]\npath = "/text"\nhandler = "text"\nbody = "hello world\\n"\n'
            f'[[route]]\npath = "/lua"\nhandler = "lua"\nscript = "{HELLO}"\n'
            '[[route]]\npath = "/wait"\nhandler = "wait"\nms = 1\n'
            f'[[route]]\npath = "/luasleep"\nhandler = "lua"\nscript = "{sleep}"\n')


def wait_serving(port, path):
    if bs.wait_until(lambda: bs.http_get_ok("127.0.0.1", port, path), 10):
        return
    raise SystemExit(f"nothing serves 127.0.0.1:{port}{path}")


def measure(pids, url, duration):
    """One wrk run: (req/s, CPU us per request of the processes pids() lists, bad
    answers: non-2xx plus socket errors)."""
    before = bs.cpu_seconds(pids())
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{duration}s", url],
                         capture_output=True, text=True, timeout=duration + 30).stdout
    used = bs.cpu_seconds(pids()) - before
    r = bs.parse_wrk(out)
    cpu = used * 1e6 / r["requests"] if r["requests"] else float("nan")
    return r["rps"], cpu, r["non2xx"] + r["errors"]


def rounds(sides, n, duration):
    """sides: [(label, pids, url)], measured in turn, n rounds: label -> [runs]."""
    runs = {label: [] for label, _, _ in sides}
    for i in range(n):
        for label, pids, url in sides:
            runs[label].append(measure(pids, url, duration))
        print(f"  round {i + 1}: " + ", ".join(
            f"{label} {runs[label][-1][0]:.0f} req/s {runs[label][-1][1]:.2f} us"
            for label, _, _ in sides), flush=True)
    return runs


def row(name, model, a, b, target):
    """A table row: side a (Lua) against side b, from their paired rounds."""
    ratios = sorted(x[0] / y[0] for x, y in zip(a, b) if y[0])
    med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
    bad = sum(r[2] for r in a + b)
    return (f"| {name} | {model} | {med(a, 0):.0f} vs {med(b, 0):.0f} | "
            f"**{statistics.median(ratios):.2f}** ({ratios[0]:.2f}-{ratios[-1]:.2f}) | "
            f"{med(a, 1):.2f} vs {med(b, 1):.2f} | {med(b, 1) / med(a, 1):.2f} | "
            f"{target} |" + (f" {bad} bad answers |" if bad else " |"))


def start_gearbox(gearboxd, model, section, work):
    port = bs.free_port()
    path = os.path.join(work, f"{model}.toml")
    with open(path, "w") as f:
        f.write(gearbox_config(model, section, port, work))
    p = subprocess.Popen([gearboxd, "-c", path], stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(work, f"{model}.log"), "w"))
    wait_serving(port, "/lua")
    return p, port


def part_models(gearboxd, a, work):
    lines = []
    for label, model, section in MODELS:
        print(f"{label}: /lua, /text, /luasleep, /wait", flush=True)
        p, port = start_gearbox(gearboxd, model, section, work)
        try:
            base = f"http://127.0.0.1:{port}"
            pids = lambda: bs.proc_tree(p.pid)  # noqa: E731
            m = rounds([(k, pids, f"{base}/{k}") for k in ("lua", "text", "luasleep", "wait")],
                       a.rounds, a.duration)
        finally:
            bs.stop_proc(p)
        lines.append(row("Lua /hello vs text", label, m["lua"], m["text"], ">= 0.8"))
        lines.append(row("Lua sleep(0.001) vs wait ms=1", label, m["luasleep"], m["wait"],
                         ">= 0.8"))
    return lines


def part_ab(old, new, a, work):
    runs = {}
    for label, model, section in MODELS:
        print(f"{label}: OLD and NEW, /lua and /text", flush=True)
        for _ in range(a.rounds):
            for side, binary in (("OLD", old), ("NEW", new)):
                p, port = start_gearbox(binary, model, section, work)
                try:
                    for path in ("lua", "text"):
                        runs.setdefault((label, side, path), []).append(
                            measure(lambda: bs.proc_tree(p.pid),
                                    f"http://127.0.0.1:{port}/{path}", a.duration))
                finally:
                    bs.stop_proc(p)
    lines = ["| model | side | /lua req/s | /lua CPU us/req (min-max) | /text CPU us/req | "
             "Lua/text CPU |", "|---|---|---|---|---|---|"]
    for label, _, _ in MODELS:
        for side in ("OLD", "NEW"):
            lua, text = runs[(label, side, "lua")], runs[(label, side, "text")]
            cpu = sorted(r[1] for r in lua)
            t = statistics.median(r[1] for r in text)
            lines.append(f"| {label} | {side} | {statistics.median(r[0] for r in lua):.0f} | "
                         f"{statistics.median(cpu):.2f} ({cpu[0]:.2f}-{cpu[-1]:.2f}) | "
                         f"{t:.2f} | {statistics.median(cpu) / t:.2f} |")
    return lines


def unpack_nginx_lua(work):
    """The nginx Lua module and OpenResty's LuaJIT, downloaded and unpacked into
    work (never installed): the unpacked root and the libluajit2 version."""
    root, debs = os.path.join(work, "ngxlua"), os.path.join(work, "debs")
    os.makedirs(debs, exist_ok=True)
    r = subprocess.run(["apt-get", "download", *NGINX_DEBS], cwd=debs, capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"apt-get download {' '.join(NGINX_DEBS)} failed: {r.stderr}")
    version = "?"
    for deb in sorted(os.listdir(debs)):
        subprocess.run(["dpkg", "-x", os.path.join(debs, deb), root], check=True)
        if deb.startswith("libluajit2-5.1-2_"):
            version = deb.split("_")[1]
    return root, version


def start_nginx_lua(root, work):
    port = bs.free_port()
    conf = os.path.join(work, "nginx-lua.conf")
    mods = os.path.join(root, "usr/lib/nginx/modules")
    with open(conf, "w") as f:
        f.write(f"load_module {mods}/ndk_http_module.so;\n"
                f"load_module {mods}/ngx_http_lua_module.so;\n"
                f"worker_processes 1;\ndaemon off;\npid {work}/nginx-lua.pid;\n"
                f"error_log {work}/nginx-lua-error.log warn;\n"
                "events { worker_connections 4096; }\n"
                "http {\n  access_log off;\n"
                f'  lua_package_path "{root}/usr/share/lua/5.1/?.lua;;";\n'
                f"  server {{\n    listen 127.0.0.1:{port};\n"
                '    location /hello { default_type text/plain;'
                ' content_by_lua_block { ngx.say("hello world") } }\n  }\n}\n')
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, "usr/lib/x86_64-linux-gnu"))
    p = subprocess.Popen(["nginx", "-c", conf, "-p", work], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_serving(port, "/hello")
    return p, port


def luajit_mapped(pid):
    """The libluajit file a running process mapped (what it really runs)."""
    for p in bs.proc_tree(pid):
        try:
            with open(f"/proc/{p}/maps") as f:
                for line in f:
                    if "libluajit" in line:
                        return os.path.realpath(line.split()[-1])
        except OSError:
            pass
    return "?"


def part_nginx(gearboxd, a, work, facts):
    print("async-1 Lua /hello vs nginx + lua module, 1 worker", flush=True)
    root, version = unpack_nginx_lua(work)
    n, nport = start_nginx_lua(root, work)
    p, port = start_gearbox(gearboxd, "async", "[async]\nloops = 1\n", work)
    try:
        m = rounds([("gearbox", lambda: bs.proc_tree(p.pid), f"http://127.0.0.1:{port}/lua"),
                    ("nginx", lambda: bs.proc_tree(n.pid), f"http://127.0.0.1:{nport}/hello")],
                   a.rounds, a.duration)
        facts.append(f"gearboxd runs {luajit_mapped(p.pid)} (Debian's libluajit-5.1-2 "
                     f"{deb_version('libluajit-5.1-2')}); nginx "
                     f"{nginx_version()}'s lua module (libnginx-mod-http-lua "
                     f"{deb_version('libnginx-mod-http-lua', candidate=True)}) runs "
                     f"{luajit_mapped(n.pid).replace(work, '$WORK')} (OpenResty's "
                     f"libluajit2 {version}, unpacked, not installed).")
    finally:
        bs.stop_proc(p)
        bs.stop_proc(n)
    return [row("Lua /hello vs nginx lua (ngx.say), 1 worker", "async-1", m["gearbox"],
                m["nginx"], ">= 1.0")]


def part_postgres(gearboxd, a, work, facts):
    print("async-1 items.lua vs the postgres handler, through nginx", flush=True)
    pg = bs.Postgres(work, work)
    front = None
    try:
        pg.start()
        r = pg.sql("CREATE TABLE items (id int PRIMARY KEY, name text, price numeric, "
                   "note text); INSERT INTO items SELECT i, 'item ' || i, i * 0.25, "
                   "CASE WHEN i % 2 = 0 THEN 'even' END FROM generate_series(1, 100000) i; "
                   "ANALYZE items;")
        if r.returncode != 0:
            raise SystemExit(f"creating items failed: {r.stderr}")
        dsn = f"host={pg.dir} dbname=postgres user=postgres"
        os.environ["GEARBOX_ITEMS_DSN"] = dsn  # items.lua reads it when it loads
        extra = (f'[[route]]\npath = "/items"\nhandler = "lua"\nscript = "{ITEMS}"\n'
                 f'[[route]]\npath = "/pgitems"\nhandler = "postgres"\ndsn = "{dsn}"\n'
                 f'query = "{ITEMS_SQL}"\nparams = ["id"]\npool = 4\n')
        gb = bs.Gearbox(gearboxd, CONFIG_BY_LABEL["async-1"], work, work, work, tag="luapg",
                        extra=extra, pg=pg.dir, sock_name="luapg.sock")
        front = bs.Fronted(gb, work, work, work, "luapg", ["nginx-unix"])
        front.start()
        url = f"http://127.0.0.1:{front.nginx['nginx-unix'].proxy}"
        m = rounds([("lua", gb.pids, f"{url}/items?id=54321"),
                    ("builtin", gb.pids, f"{url}/pgitems?id=54321")], a.rounds, a.duration)
        facts.append(f"PostgreSQL: {pg.version()}; both routes pool 4, the same SQL "
                     f"({ITEMS_SQL}); CPU is gearboxd's (nginx and the cluster are shared).")
    finally:
        if front:
            front.stop([], "luapg")
        pg.stop()
    return [row("Lua items.lua vs postgres handler, via nginx", "async-1", m["lua"],
                m["builtin"], ">= 0.8")]


def deb_version(package, candidate=False):
    if candidate:
        out = subprocess.run(["apt-cache", "policy", package], capture_output=True,
                             text=True).stdout
        return next((ln.split()[-1] for ln in out.splitlines() if "Candidate:" in ln), "?")
    return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                          capture_output=True, text=True).stdout or "?"


def nginx_version():
    r = subprocess.run(["nginx", "-v"], capture_output=True, text=True)
    return r.stderr.strip().split("/")[-1] or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--only", default=",".join(PARTS), help="comma list of " + ", ".join(PARTS))
    ap.add_argument("--ab", metavar="OLD_GEARBOXD")
    ap.add_argument("--out")
    a = ap.parse_args()
    gearboxd = os.environ.get("GEARBOXD") or os.path.join(bs.ROOT, "bazel-bin/daemon/gearboxd")
    work = tempfile.mkdtemp(prefix="gearbox-luabench.")
    os.chmod(work, 0o755)  # the postgres user and nginx's worker reach in
    try:
        run(a, gearboxd, work)
    finally:
        bs.stop_all()
        shutil.rmtree(work, ignore_errors=True)


def run(a, gearboxd, work):
    parts = [p for p in a.only.split(",") if p]
    load0, t0 = os.getloadavg(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    facts, rows = [], []
    if a.ab:
        rows = part_ab(a.ab, gearboxd, a, work)
        text = (f"# Lua /hello, OLD {a.ab} vs NEW {gearboxd}, {t0}, load "
                f"{load0[0]:.1f} -> {os.getloadavg()[0]:.1f}; wrk -t2 -c64 direct, "
                f"{a.rounds} rounds x {a.duration} s, medians\n\n" + "\n".join(rows) + "\n")
        print(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        return
    if "models" in parts:
        rows += part_models(gearboxd, a, work)
    if "nginx" in parts:
        rows += part_nginx(gearboxd, a, work, facts)
    if "postgres" in parts:
        rows += part_postgres(gearboxd, a, work, facts)
    load1 = os.getloadavg()
    commit = subprocess.run(["git", "-C", bs.ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [f"# Lua rows, {t0}", "",
             f"gearboxd {gearboxd} (tree at {commit}); {os.cpu_count()} cores; load average "
             f"{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} (1/5/15 min) at the start, "
             f"{load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f} at the end. wrk -t2 -c64, "
             f"{a.rounds} alternating rounds x {a.duration} s: medians; the ratio is each "
             "round's Lua/other req/s, median (min-max); CPU ratio = other's CPU per "
             "request / Lua's (above 1: Lua costs less).", "",
             "| row | model | req/s (Lua vs other) | req/s ratio | CPU us/req (Lua vs other) "
             "| CPU ratio | target | |",
             "|-----|-------|-----|-----|-----|-----|-----|---|"] + rows + [""] + facts
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
