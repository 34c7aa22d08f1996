#!/usr/bin/env python3
"""lua_ratios.py: the Lua handler's benchmark rows (docs/lua.md), direct, c=64,
alternating rounds in one run, medians of requests/s and of CPU microseconds per
request (gearboxd's, or nginx's whole tree: the CPU figure holds on a busy host,
where throughput does not):

  Lua /hello (sdk/examples/lua/hello.lua) vs the built-in text handler, per model
  Lua gearbox.sleep(0.001) vs the built-in wait handler (ms = 1), per model
  async-1 Lua /hello vs nginx + Debian's libnginx-mod-http-lua answering
      content_by_lua_block { ngx.say("hello world") } from one worker

That module links OpenResty's libluajit2, whose packages conflict with
libluajit-5.1-dev (gearbox's build): they are never installed. `apt-get
download` fetches the module, its NDK and OpenResty's runtime libraries, and
`dpkg -x` unpacks them into the work directory; nginx loads the module from there
with LD_LIBRARY_PATH at OpenResty's libluajit (each side's LuaJIT is printed).

  python3 tests/bench/lua_ratios.py [--rounds 3] [--duration 3] [--out FILE.md]
  GEARBOXD=/path/to/gearboxd python3 tests/bench/lua_ratios.py --no-nginx
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_servers import (ROOT, cpu_seconds, free_port, http_get_ok, parse_wrk,  # noqa: E402
                           proc_tree, stop_proc)

MODELS = [("async-1", "async", "[async]\nloops = 1\n"),
          ("threadpool-4", "threadpool", "[threadpool]\nthreads = 4\n"),
          ("prefork-2", "prefork", "[prefork]\nworkers = 2\n")]
NGINX_DEBS = ["libnginx-mod-http-lua", "libnginx-mod-http-ndk", "libluajit2-5.1-2",
              "libluajit2-5.1-common", "lua-resty-core", "lua-resty-lrucache"]


def gearbox_config(model, section, port, work):
    sleep = os.path.join(work, "sleep.lua")
    with open(sleep, "w") as f:
        f.write('return function() gearbox.sleep(0.001) return 200, "waited 1 ms\\n" end\n')
    hello = os.path.join(ROOT, "sdk", "examples", "lua", "hello.lua")
    return (f'[server]\nmodel = "{model}"\n{section}[[listen]]\naddress = "127.0.0.1:{port}"\n'
            '[log]\nlevel = "warn"\n'
            '[[route]]\npath = "/text"\nhandler = "text"\nbody = "hello world\\n"\n'
            f'[[route]]\npath = "/lua"\nhandler = "lua"\nscript = "{hello}"\n'
            '[[route]]\npath = "/wait"\nhandler = "wait"\nms = 1\n'
            f'[[route]]\npath = "/luasleep"\nhandler = "lua"\nscript = "{sleep}"\n')


def wait_serving(port, path):
    for _ in range(100):
        if http_get_ok("127.0.0.1", port, path):
            return
        time.sleep(0.05)
    raise SystemExit(f"nothing serves 127.0.0.1:{port}{path}")


def measure(pid, url, duration):
    """One wrk run: requests/s and CPU us per request of pid's tree."""
    tree = proc_tree(pid)
    before = cpu_seconds(tree)
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{duration}s", url],
                         capture_output=True, text=True, timeout=duration + 30).stdout
    used = cpu_seconds(proc_tree(pid)) - before
    r = parse_wrk(out)
    return r["rps"], (used * 1e6 / r["requests"]) if r["requests"] else float("nan")


def rounds(pairs, n, duration):
    """pairs: [(label, pid, url)]; alternating rounds; label -> (rps, cpu_us) medians."""
    runs = {label: [] for label, _, _ in pairs}
    for _ in range(n):
        for label, pid, url in pairs:
            runs[label].append(measure(pid, url, duration))
    return {label: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
            for label, rs in runs.items()}


def start_gearbox(gearboxd, model, section, work):
    port = free_port()
    path = os.path.join(work, f"{model}.toml")
    with open(path, "w") as f:
        f.write(gearbox_config(model, section, port, work))
    p = subprocess.Popen([gearboxd, "-c", path], stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(work, f"{model}.log"), "w"))
    wait_serving(port, "/lua")
    return p, port


def start_nginx_lua(work):
    root = os.path.join(work, "ngxlua")
    if not os.path.isdir(root):
        debs = os.path.join(work, "debs")
        os.makedirs(debs, exist_ok=True)
        subprocess.run(["apt-get", "download", *NGINX_DEBS], cwd=debs, check=True,
                       capture_output=True)
        for deb in os.listdir(debs):
            subprocess.run(["dpkg", "-x", os.path.join(debs, deb), root], check=True)
    port = free_port()
    conf = os.path.join(work, "nginx-lua.conf")
    mods = os.path.join(root, "usr/lib/nginx/modules")
    with open(conf, "w") as f:
        f.write(f"load_module {mods}/ndk_http_module.so;\n"
                f"load_module {mods}/ngx_http_lua_module.so;\n"
                f"worker_processes 1;\ndaemon off;\npid {work}/nginx.pid;\n"
                f"error_log {work}/nginx-error.log warn;\n"
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
    return p, port, os.path.realpath(os.path.join(
        root, "usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--no-nginx", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    gearboxd = os.environ.get("GEARBOXD") or os.path.join(ROOT, "bazel-bin/daemon/gearboxd")
    work = tempfile.mkdtemp(prefix="gearbox-luabench.")
    try:
        run(a, gearboxd, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(a, gearboxd, work):
    lines = [f"# Lua rows ({time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}, "
             f"c=64 direct, {a.rounds} alternating rounds x {a.duration} s, medians)", "",
             "| row | model | rps | rps ratio | CPU us/req | CPU ratio (B/A) | target |",
             "|-----|-------|-----|-----------|------------|-----------------|--------|"]
    for label, model, section in MODELS:
        p, port = start_gearbox(gearboxd, model, section, work)
        try:
            base = f"http://127.0.0.1:{port}"
            m = rounds([(k, p.pid, base + "/" + k) for k in ("text", "lua", "wait", "luasleep")],
                       a.rounds, a.duration)
        finally:
            stop_proc(p)
        for lua, builtin in (("lua", "text"), ("luasleep", "wait")):
            lines.append(f"| Lua /{lua} vs {builtin} | {label} | {m[lua][0]:.0f} vs "
                         f"{m[builtin][0]:.0f} | {m[lua][0] / m[builtin][0]:.2f} | "
                         f"{m[lua][1]:.2f} vs {m[builtin][1]:.2f} | "
                         f"{m[builtin][1] / m[lua][1]:.2f} | >= 0.8 |")
    if not a.no_nginx:
        n, nport, nlib = start_nginx_lua(work)
        p, port = start_gearbox(gearboxd, "async", "[async]\nloops = 1\n", work)
        try:
            m = rounds([("gearbox", p.pid, f"http://127.0.0.1:{port}/lua"),
                        ("nginx", n.pid, f"http://127.0.0.1:{nport}/hello")],
                       a.rounds, a.duration)
        finally:
            stop_proc(p)
            stop_proc(n)
        glib = subprocess.run(["ldd", gearboxd], capture_output=True, text=True).stdout
        glib = next((l.split("=>")[1].split()[0] for l in glib.splitlines()
                     if "luajit" in l), "?")
        lines.append(f"| async-1 Lua /hello vs nginx lua, 1 worker | async-1 | "
                     f"{m['gearbox'][0]:.0f} vs {m['nginx'][0]:.0f} | "
                     f"{m['gearbox'][0] / m['nginx'][0]:.2f} | {m['gearbox'][1]:.2f} vs "
                     f"{m['nginx'][1]:.2f} | {m['nginx'][1] / m['gearbox'][1]:.2f} | >= 1.0 |")
        lines += ["", f"gearboxd's LuaJIT: {os.path.realpath(glib)} (Debian libluajit-5.1-2); "
                      f"nginx's: {nlib} (OpenResty's libluajit2, unpacked, not installed)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
