"""bench_report_tables.py: results.md's measurement sections: the ratio rounds and
their perf profile, the seed profile, timerwait beside wait, one table per workload,
idle and slowloris connections, each with its exact commands. Standard library only."""
import bench_ratios
from bench_report_common import NOISY_CORES, PLOT_ROUTES, _baseline, _f, _parked, _ratio, route


class Tables:
    """The sections of bench_report.Report's markdown (a mixin: reads its plan,
    workloads, runs, idle and plots)."""

    def _ratios(self, add):
        """The alternating rounds behind the c=64 ratio targets (bench_ratios.py)."""
        med = bench_ratios.medians(self.runs, route)
        if not med:
            return
        spec = self.plan.get("ratios", {})
        add(f"## /hello c={spec.get('conc', 64)}: blocking models against async-2, alternating rounds\n")
        add(f"{', '.join(spec.get('configs', []))} ran at once, each behind its own nginx per transport; "
            "each round measured every path of every configuration back to back (the order rotates "
            "between rounds). Targets 1, 5 and 6 use these medians: one 3 s sweep point swings by 20-40% "
            "on this host with whatever else runs at that moment.\n")
        routes = [r for r in ("direct", "nginx unix", "nginx tcp") if any(k[1] == r for k in med)]
        add("| server | " + " | ".join(f"{r} req/s (spread)" for r in routes) + " |")
        add("|---|" + "---|" * len(routes))
        for label in spec.get("configs", []):
            cells = []
            for r in routes:
                m = med.get((label, r))
                cells.append(f"{m['rps']:,.0f} ({100 * m['spread']:.0f}%)" if m else "–")
            add(f"| {label} | " + " | ".join(cells) + " |")
        add(f"\n*spread* = (max − min) / median over the {max(m['rounds'] for m in med.values())} rounds.\n")
        self._profiles(add, spec, routes)

    def _profiles(self, add, spec, routes):
        """Syscalls and context switches per request, this run against the committed
        profile of the code before issue 19 (bench_ratios.BEFORE_FILE)."""
        now = bench_ratios.profiles(self.runs, route)
        if not now:
            return
        old = bench_ratios.before() or {}
        was = old.get("profile", {})
        add("Syscalls and context switches per request (`perf stat` on gearboxd's processes, every "
            f"thread, and on nginx's worker, over one more {self.plan.get('duration', 3)} s run of each cell, not in the medians: "
            "perf slows what it counts)"
            + (f"; *before*: the same pass on {old['commit']} ({old['date']}), the code when the "
               "throughput issue was filed" if old else "") + ".\n")
        add("| server | path | gearboxd syscalls | gearboxd switches | nginx syscalls | nginx switches |"
            "\n|---|---|---|---|---|---|")

        def cell(cur, prev, who, event):
            v = cur.get(who, {}).get(event)
            p = prev.get(who, {}).get(event) if prev else None
            if v is None:
                return "–"
            return f"{p:.2f} → {v:.2f}" if p is not None else f"{v:.2f}"

        for label in spec.get("configs", []):
            for r in routes:
                cur = now.get((label, r))
                if not cur:
                    continue
                prev = was.get(f"{label} {r}")
                add(f"| {label} | {r} | " + " | ".join(
                    cell(cur, prev, who, e) for who in ("gearboxd", "nginx")
                    for e in bench_ratios.PERF_EVENTS) + " |")
        add("")

    def _commands(self, add, runs):
        cmds = []
        for r in runs:
            if r["command"] not in cmds:
                cmds.append(r["command"])
        add("<details><summary>exact commands</summary>\n\n```sh")
        for c in cmds:
            add(c)
        add("```\n</details>\n")

    def _seed(self, add):
        seed = [r for r in self.runs if r["kind"] == "httperf"]
        if not seed:
            return
        add("## Seed profile: httperf through nginx\n")
        add(f"`httperf --hog --timeout 2 --rate 100 --num-conn {self.plan['seed_conns']} --num-call 10`: "
            "100 new connections/s, 10 requests each in sequence = 1,000 req/s offered.\n")
        add("| server | path | workload | served 2xx/s | 2xx | 5xx | errors (client-timo) | avg response ms "
            "| max conn ms | gearboxd µs/req | nginx µs/req | gearboxd accepts/req | nginx error lines "
            "| other jobs (cores) |")
        add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in seed:
            add(f"| {r['server']} | {route(r)} | {r['workload']} | {_f(r.get('rps'), 1)} | {r.get('s2xx')} | "
                f"{r.get('s5xx')} | {r.get('errors')} ({r.get('client_timo')}) | {r.get('response_ms')} | "
                f"{r.get('conn_time_max_ms')} | {_f(r.get('gearboxd_cpu_us_per_req'), 1)} | "
                f"{_f(r.get('nginx_cpu_us_per_req'), 1)} | {_f(r.get('accepts_per_req'), 3)} | "
                f"{'' if r.get('nginx_error_lines') is None else r['nginx_error_lines']} | "
                f"{_f(r.get('foreign_cpu_cores'), 2)} |")
        add("")
        if "seed.png" in self.plots:
            add("![seed](seed.png)\n")
        self._commands(add, seed)

    def _workload(self, add, w):
        runs = [r for r in self.runs if r["kind"] == "wrk" and r["workload"] == w and not r.get("tag")]
        if not runs:
            return
        add(f"## {w}: `{self.workloads[w]}`\n")
        concs = sorted({r["conc"] for r in runs})
        add("req/s (p99 ms) by concurrency; errors and CPU below.\n")
        add("| server | path | " + " | ".join(f"c={c}" for c in concs) + " |")
        add("|---|---|" + "---|" * len(concs))
        keys = []
        for r in runs:
            k = (r["server"], route(r))
            if k not in keys:
                keys.append(k)
        for s, p in keys:
            cells = []
            for c in concs:
                r = next((x for x in runs if x["server"] == s and route(x) == p and x["conc"] == c), None)
                if r is None:
                    cells.append("")
                else:
                    flag = " ⚠" if (r["errors"] or r["non2xx"]) else ""
                    if (r.get("foreign_cpu_cores") or 0) > NOISY_CORES:
                        flag += " ≈"
                    cells.append(f"{r['rps']:,.0f} ({_f(r['p99_ms'], 2)}){flag}")
            add(f"| {s} | {p} | " + " | ".join(cells) + " |")
        add(f"\n⚠ = errors or non-2xx in that run (see details). ≈ = other jobs on the host used more than "
            f"{NOISY_CORES} cores during that run: the figure is unreliable.\n")
        for p, suffix, _ in PLOT_ROUTES:
            if f"{w}-{suffix}.png" in self.plots:
                add(f"![{w} {p}]({w}-{suffix}.png)")
        add("")
        add("<details><summary>all figures</summary>\n")
        pg = any(r.get("postgres_cpu_s") is not None for r in runs)
        add("| server | path | c | req/s | p50 ms | p99 ms | errors c/r/w/t | non-2xx | gearboxd µs/req "
            "| nginx µs/req | " + ("postgres µs/req | " if pg else "")
            + "accepts/req | busiest worker | nginx error lines | gearboxd RSS MiB | other jobs (cores) |")
        add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if pg else ""))
        for r in runs:
            pg_cell = f"{_f(r.get('postgres_cpu_us_per_req'), 1)} | " if pg else ""
            add(f"| {r['server']} | {route(r)} | {r['conc']} | {r['rps']:,.0f} | {_f(r['p50_ms'], 2)} | "
                f"{_f(r['p99_ms'], 2)} | {r['err_connect']}/{r['err_read']}/{r['err_write']}/{r['err_timeout']} | "
                f"{r['non2xx']} | {_f(r.get('gearboxd_cpu_us_per_req'), 1)} | "
                f"{_f(r.get('nginx_cpu_us_per_req'), 1)} | {pg_cell}{_f(r.get('accepts_per_req'), 3)} | "
                f"{_f(100 * r['busiest_worker_share'] if r.get('busiest_worker_share') else None, 0, '%')} | "
                f"{'' if r.get('nginx_error_lines') is None else r['nginx_error_lines']} | "
                f"{_f(r['rss_kib'] / 1024 if r.get('rss_kib') else None, 1)} | "
                f"{_f(r.get('foreign_cpu_cores'), 2)} |")
        add("\n</details>\n")
        self._commands(add, runs)

    def _fd_wait(self, add):
        """timerwait beside wait: the same wait as an fd wait through a module."""
        rows = []
        for timer, fd in (("wait1ms", "timerwait1ms"), ("wait20ms", "timerwait20ms")):
            for a in self.runs:
                if a["kind"] != "wrk" or a["workload"] != timer or a.get("tag"):
                    continue
                b = next((x for x in self.runs if x["kind"] == "wrk" and x["workload"] == fd
                          and x["server"] == a["server"] and x["path"] == a["path"]
                          and x["conc"] == a["conc"] and not x.get("tag")), None)
                if b:
                    rows.append((timer, fd, a, b))
        if not rows:
            return
        add("## Waiting on an fd: `timerwait` beside `wait`\n")
        add("`wait` (`/sleep?ms=N`) asks for a timer; `timerwait` (`/tw?ms=N`, the example module "
            "`sdk/examples/timerwait.c`, built with `cc -O2`) arms a timerfd and waits for it to become "
            "readable through the handler fd wait: prefork and threadpool `poll()` it with the client's "
            "socket, async registers a libevent event. The difference is what the fd path and the module "
            "boundary cost.\n")
        add("| server | path | c | wait req/s | timerwait req/s | ratio | wait p50 ms | timerwait p50 ms "
            "| wait µs/req | timerwait µs/req |")
        add("|---|---|---|---|---|---|---|---|---|---|")
        for timer, fd, a, b in rows:
            add(f"| {a['server']} | {a['path']} | {a['conc']} | {a['rps']:,.0f} ({timer}) | {b['rps']:,.0f} | "
                f"{_f(_ratio(b['rps'], a['rps']), 2)} | {_f(a['p50_ms'], 2)} | {_f(b['p50_ms'], 2)} | "
                f"{_f(a.get('gearboxd_cpu_us_per_req'), 1)} | {_f(b.get('gearboxd_cpu_us_per_req'), 1)} |")
        add("")

    def _slow(self, add):
        slow = [i for i in self.idle if i["kind"] == "slow"]
        if not slow:
            return
        add("## slow: slowloris clients\n")
        add("`idle_clients.py --slow` opens N connections to gearboxd (direct) and sends only the start of a "
            "request head on each, then one more header byte a second, never the end (the bench runs finish "
            "well inside `header_timeout`, 10 s). Then `wrk -t1 -c8` runs on `/hello`: does the model still "
            "serve other clients? prefork's children hand slow heads to the head guard process after 5 ms; "
            "threadpool parks them in its poller; async holds them in its loop. RSS covers every gearboxd "
            "process.\n")
        add("| server | slow conns | held (before→after load) | RSS before → after KiB | bytes/conn | "
            "parked (prefork) | /hello req/s | without them | ratio | p99 ms | p99 without ms |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for i in slow:
            base = _baseline(self.runs, i)
            add(f"| {i['server']} | {i['count']:,} | {i.get('held_before')}→{i.get('held_after')} | "
                f"{i['rss0_kib']:,} → {i.get('rss1_kib', 0):,} | {_f(i.get('bytes_per_conn'))} | "
                f"{_parked(i)} | {_f(i.get('rps'))} | "
                f"{_f(base['rps'] if base else None)} | {_f(_ratio(i.get('rps'), base['rps'] if base else None), 2)} | "
                f"{_f(i.get('p99_ms'), 2)} | {_f(base['p99_ms'] if base else None, 2)} |")
        add("")
        self._commands(add, slow)

    def _idle(self, add):
        idle = [i for i in self.idle if i["kind"] == "idle"]
        if not idle:
            return
        add("## idle: keep-alive connections held open\n")
        add("`idle_clients.py` opens N connections to gearboxd (direct), sends one `GET /hello` on each, "
            "reads the response and keeps the connection open and silent. RSS (all gearboxd processes) is "
            "taken before and after; then `wrk -t1 -c8` runs on `/hello` while they are held. "
            "Kernel socket structures are not in RSS: the kernel slab delta (`/proc/meminfo` Slab, both ends "
            "of each connection, host-wide so noisy) is shown for scale.\n")
        add("| server | idle conns | answered | held (before→after load) | RSS before → after KiB | "
            "bytes/conn | kernel slab bytes/conn | /hello req/s | p50 ms | p99 ms | p99 without idle ms |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for i in idle:
            base = _baseline(self.runs, i)
            add(f"| {i['server']} | {i['count']:,} | {i.get('answered')} | {i.get('held_before')}→{i.get('held_after')} | "
                f"{i['rss0_kib']:,} → {i.get('rss1_kib', 0):,} | {_f(i.get('bytes_per_conn'))} | "
                f"{_f(i.get('kernel_slab_bytes_per_conn'))} | {_f(i.get('rps'))} | {_f(i.get('p50_ms'), 2)} | "
                f"{_f(i.get('p99_ms'), 2)} | {_f(base['p99_ms'] if base else None, 2)} |")
        add("")
        if any(i["server"].startswith("prefork") for i in idle):
            add("prefork: each child keeps up to 8 idle kept-alive connections beside the one it serves; the "
                "rest wait in the master's head guard, which gives each to a free child when its next request "
                "arrives. RSS covers the master, the guard and every child.\n")
        if "idle.png" in self.plots:
            add("![idle](idle.png)\n")
        self._commands(add, idle)
