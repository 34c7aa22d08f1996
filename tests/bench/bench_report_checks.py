"""bench_report_checks.py: the --quick checks: is every figure of a smoke run sane
(served, no errors, waits as long as asked, held connections held). Standard library
only."""
from bench_report_common import NOISY_CORES, _baseline, _f, _ratio, route


def quick_checks(runs, idle):
    """[{what, ok, warning, detail}]: every wrk run's, then every seed run's, then every
    idle and slow measurement's checks; check(fatal=False) records a warning."""
    checks = []

    def check(what, ok, detail, fatal=True):
        checks.append({"what": what, "ok": bool(ok) or not fatal, "warning": not ok and not fatal,
                       "detail": detail})

    wrk = [r for r in runs if r["kind"] == "wrk"]
    for r in wrk:
        name = f"{r['server']} {route(r)} {r['workload']} c={r['conc']}" + (f" ({r['tag']})" if r.get("tag") else "")
        _served_checks(check, name, r)
        _figure_checks(check, name, r)
    for r in runs:
        if r["kind"] == "httperf" and r["server"] != "nginx":
            _seed_checks(check, r)
    for i in idle:
        if i["kind"] == "slow":
            _slow_checks(check, runs, i)
        else:
            _idle_checks(check, i)
    return checks


def _served_checks(check, name, r):
    """A wrk run served requests without errors (prefork direct: without refusals or
    timeouts; a dropped keep-alive connection is a warning)."""
    check(f"{name}: served requests", r["rps"] > 0 and r["requests"] > 0 and not r.get("tool_error"),
          f"{r['rps']:.0f} req/s, {r['requests']} requests" + (f"; {r['tool_error']}" if r.get("tool_error") else ""))
    strict = not (r["server"].startswith("prefork") and r["path"] == "direct")
    if strict:
        check(f"{name}: no errors, no non-2xx", r["errors"] == 0 and r["non2xx"] == 0,
              f"errors {r['errors']}, non-2xx {r['non2xx']}")
    else:
        # A prefork child gives up its keep-alive connection when another client
        # waits. It announces that with "Connection: close"; a connection dropped
        # under a request in flight shows as a wrk read/write error (nginx would
        # retry it): a warning. Refusals, timeouts and non-2xx fail.
        check(f"{name}: no refused/timed-out requests, no non-2xx",
              r["err_connect"] == 0 and r["err_timeout"] == 0 and r["non2xx"] == 0,
              f"connect {r['err_connect']}, timeout {r['err_timeout']}, non-2xx {r['non2xx']}")
        check(f"{name}: no keep-alive connection dropped under a request",
              r["err_read"] == 0 and r["err_write"] == 0,
              f"read {r['err_read']}, write {r['err_write']}", fatal=False)


def _figure_checks(check, name, r):
    """A wrk run's figures are plausible: a wait shows in its p50, and over 1,000
    requests the CPU time of postgres (database workloads) and gearboxd was measured."""
    if r["workload"] in ("wait1ms", "timerwait1ms") and r["p50_ms"] is not None:
        check(f"{name}: p50 reflects the 1 ms wait", 0.9 <= r["p50_ms"] <= 50, f"p50 {r['p50_ms']:.2f} ms")
    if r["workload"] == "pgsleep1ms" and r["p50_ms"] is not None:
        check(f"{name}: p50 reflects pg_sleep(0.001)", 1.0 <= r["p50_ms"] <= 100,
              f"p50 {r['p50_ms']:.2f} ms")
    if r["workload"] in ("pgsleep1ms", "pglookup") and r["requests"] > 1000:
        check(f"{name}: postgres CPU time measured", (r.get("postgres_cpu_s") or 0) > 0,
              f"{r.get('postgres_cpu_s') or 0:.2f} s")
    if r["workload"] in ("wait20ms", "timerwait20ms") and r["p50_ms"] is not None:
        check(f"{name}: p50 reflects the 20 ms wait", 19 <= r["p50_ms"] <= 200, f"p50 {r['p50_ms']:.2f} ms")
    if r.get("gearboxd_cpu_s") is not None and r["requests"] > 1000:
        check(f"{name}: gearboxd CPU time measured", r["gearboxd_cpu_s"] > 0, f"{r['gearboxd_cpu_s']:.2f} s")


def _seed_checks(check, r):
    """The seed profile (httperf): the models that can keep up served every reply."""
    want = r["num_conn"] * 10
    name = f"{r['server']} {route(r)} {r['workload']} httperf seed"
    if r["server"].startswith(("async", "threadpool")) or r["server"] == "prefork-8":
        check(f"{name}: all {want} replies 2xx, no errors, ~1,000 req/s",
              r.get("s2xx") == want and r.get("errors") == 0 and (r.get("rps") or 0) >= 900,
              f"2xx {r.get('s2xx')}, 5xx {r.get('s5xx')}, errors {r.get('errors')}, {r.get('rps', 0):.0f} req/s")


def _slow_checks(check, runs, i):
    """Slowloris heads: all started and held, /hello still answered at >= 30% of its
    rate without them, and (prefork) the head guard parked every one."""
    n = i["count"]
    base = _baseline(runs, i)
    ratio = _ratio(i.get("rps"), base["rps"] if base else None)
    check(f"{i['server']} slow: {n} slowloris heads started and all held (none cut before "
          f"header_timeout)", i.get("answered") == n and i.get("held_before") == n
          and i.get("held_after") == n,
          f"started {i.get('answered')}, held {i.get('held_before')} -> {i.get('held_after')}")
    check(f"{i['server']} slow: /hello answered without errors while they trickle",
          i.get("errors") == 0 and i.get("non2xx") == 0,
          f"errors {i.get('errors')}, non-2xx {i.get('non2xx')}")
    # A rate measured beside other jobs' load is a figure, not a verdict:
    # the two runs compared are seconds apart.
    noisy = (i.get("foreign_cpu_cores") or 0) > NOISY_CORES
    check(f"{i['server']} slow: /hello keeps >= 30% of its rate while they trickle",
          ratio is not None and ratio >= 0.3,
          f"{_f(i.get('rps'))} vs {_f(base['rps'] if base else None)} req/s without "
          f"({_f(ratio, 2)}x)"
          + (f"; NOISY (other jobs used {i['foreign_cpu_cores']:.2f} cores): reported, "
             "not asserted" if noisy else ""), fatal=not noisy)
    if i["server"].startswith("prefork"):
        check(f"{i['server']} slow: the head guard took every slow head", i.get("parked") == n,
              f"parked {i.get('parked')} of {n}")


def _idle_checks(check, i):
    """Idle keep-alive connections: all opened and answered; except under prefork (a
    child holds one connection at a time) all held, with RSS measured and /hello served."""
    n = i["count"]
    check(f"{i['server']} idle: {n} connections opened and answered",
          i.get("answered") == n and i.get("failed") == 0,
          f"answered {i.get('answered')}, failed {i.get('failed')}")
    if not i["server"].startswith("prefork"):
        check(f"{i['server']} idle: all {n} held open", i.get("held_before") == n and i.get("held_after") == n,
              f"held {i.get('held_before')} -> {i.get('held_after')}")
        check(f"{i['server']} idle: RSS per connection measured, /hello answered meanwhile",
              i.get("bytes_per_conn") is not None and (i.get("rps") or 0) > 0 and i.get("errors") == 0,
              f"{_f(i.get('bytes_per_conn'))} B/conn, {_f(i.get('rps'))} req/s, errors {i.get('errors')}")
