#!/usr/bin/env python3
"""Checks through a live Prometheus's HTTP query API, for tests/system/fleet_test.sh.

  fleet_prom.py URL wait-up N TIMEOUT
      waits until N targets are up; prints them.
  fleet_prom.py URL wait-after T TIMEOUT
      waits until every target was scraped and every rule group evaluated
      after time T (seconds since the epoch).
  fleet_prom.py URL steady T OFFERED HOSTS FAIL_SHARE SLEEP_MS CLIENT_P99_S
      at time T, after a steady load of OFFERED req/s through nginx to HOSTS
      hosts, each scraped once a second (one /status request a second each):
      the request rate (raw and recorded), the 5xx ratio, p99 from the
      histogram buckets (raw and recorded) and the busy ratio, in their bands.
  fleet_prom.py URL reload-window START END OFFERED HOSTS
      over [START, END], while every host was reloaded into another model: no
      counter reset, one series per host, two gearbox_info label sets per host,
      the fleet's request rate present and in its band at every second.

Every failed check prints "fleet_prom: FAIL: ..." and exits 1.
"""
import datetime
import json
import os
import re
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from waiting import wait_until  # noqa: E402

# The bounds of gearbox's OpenMetrics histogram (daemon/handlers/status_handler.cc).
BOUNDS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
            0.1, 0.25, 0.5, 1, 2.5, 10]
failures = []


def api(url, path, **params):
    q = urllib.parse.urlencode(params)
    with urllib.request.urlopen(f"{url}/api/v1/{path}?{q}", timeout=10) as r:
        doc = json.load(r)
    if doc.get("status") != "success":
        sys.exit(f"fleet_prom: FAIL: {path} {params}: {doc}")
    return doc["data"]


def query(url, expr, t):
    return [(r["metric"], float(r["value"][1]))
            for r in api(url, "query", query=expr, time=f"{t:.3f}")["result"]]


def query_range(url, expr, start, end, step=1):
    data = api(url, "query_range", query=expr, start=f"{start:.3f}",
               end=f"{end:.3f}", step=step)
    return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]])
            for r in data["result"]]


def check(ok, what):
    print(f"fleet_prom:   {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def within(value, lo, hi):
    return lo <= value <= hi


def one(url, expr, t):
    rows = query(url, expr, t)
    if len(rows) != 1:
        check(False, f"{expr} at {t:.0f}: want 1 series, got {rows}")
        return float("nan")
    return rows[0][1]


def wait_up(url, n, timeout):
    targets, up = [], []

    def all_up():
        nonlocal targets, up
        targets = api(url, "targets")["activeTargets"]
        up = [t for t in targets if t["health"] == "up"]
        return len(up) >= n

    wait_until(all_up, timeout, every=0.5)
    for t in targets:
        print(f"fleet_prom:   target {t['scrapeUrl']}: {t['health']} {t['lastError']}")
    check(len(up) == n, f"{len(up)} of {n} targets up")


def unix_time(rfc3339):
    """Seconds since the epoch of Prometheus's RFC 3339 time (nanoseconds)."""
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", rfc3339)
    if not m:
        return 0.0
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    whole = datetime.datetime.fromisoformat(m.group(1) + zone).timestamp()
    return whole + float(m.group(2) or 0)


def wait_after(url, t, timeout):
    """Waits until every target was scraped, and every rule group evaluated,
    after time T: the figures of what happened before T are all in."""
    def all_after():
        targets = api(url, "targets")["activeTargets"]
        groups = api(url, "rules")["groups"]
        return (targets and all(unix_time(x["lastScrape"]) > t for x in targets) and
                all(unix_time(g["lastEvaluation"]) > t for g in groups))

    check(bool(wait_until(all_after, timeout, every=0.1)),
          f"every target scraped and every rule group evaluated after {t:.1f}")


def steady(url, t, offered, hosts, fail_share, sleep_ms, client_p99):
    expected = offered + hosts  # the load plus one scrape a second per host
    for expr in ("sum(rate(gearbox_requests_total[10s]))", "job:gearbox_requests:rate1m"):
        v = one(url, expr, t)
        check(within(v, 0.85 * expected, 1.15 * expected),
              f"{expr} = {v:.1f} req/s; sent {offered:g} + {hosts} scrapes = {expected:g} (+-15%)")
    ups = query(url, "up", t)
    check(len(ups) == hosts and all(v == 1 for _, v in ups),
          f"up: {[(m['instance'], v) for m, v in ups]}")
    share = offered * fail_share / expected
    v = one(url, "job:gearbox_responses_5xx:ratio_rate1m", t)
    check(within(v, share - 0.03, share + 0.03),
          f"job:gearbox_responses_5xx:ratio_rate1m = {v:.3f}; sent {share:.3f} (+-0.03)")
    for m, v in query(url, "instance:gearbox_responses_5xx:ratio_rate1m", t):
        print(f"fleet_prom:        {m['instance']}: 5xx ratio {v:.3f}")
    # Every /sleep request takes at least SLEEP_MS, and they are more than 1% of
    # the load, so p99 is at least that; the server's time is below the
    # client's, so p99 is at most the bound above the client's p99.
    upper = next((b for b in BOUNDS_S if b >= client_p99), float("inf"))
    raw = "histogram_quantile(0.99, sum by (le) (rate(gearbox_request_duration_seconds_bucket[10s])))"
    for expr in (raw, "job:gearbox_request_duration_seconds:p99_rate1m"):
        v = one(url, expr, t)
        check(within(v, sleep_ms / 1000, upper),
              f"{expr} = {v * 1000:.2f} ms; band [{sleep_ms:g} ms, {upper * 1000:g} ms] "
              f"(client p99 {client_p99 * 1000:.1f} ms)")
    for m, v in query(url, "instance:gearbox_request_duration_seconds:p99_rate1m", t):
        print(f"fleet_prom:        {m['instance']}: p99 {v * 1000:.2f} ms")
    busy = query(url, "instance:gearbox_busy_workers:ratio", t)
    check(len(busy) == hosts and all(0 < v <= 1 for _, v in busy),
          "instance:gearbox_busy_workers:ratio in (0, 1]: " +
          ", ".join(f"{m['instance']} {v:.3f}" for m, v in busy))
    v = one(url, "job:gearbox_busy_workers:ratio", t)
    check(0 < v <= 1, f"job:gearbox_busy_workers:ratio = {v:.3f}")


def reload_window(url, start, end, offered, hosts):
    w = int(end - start)
    resets = query(url, f"resets(gearbox_requests_total[{w}s])", end)
    check(len(resets) == hosts and all(v == 0 for _, v in resets),
          f"resets(gearbox_requests_total[{w}s]) = 0 on every host: "
          + ", ".join(f"{m['instance']} {v:g}" for m, v in resets))
    series = query(url, f"count_over_time(gearbox_requests_total[{w}s])", end)
    check(len(series) == hosts,
          f"one gearbox_requests_total series per host across the reloads ({len(series)})")
    check(all(v >= 0.8 * w for _, v in series),
          f"no gap in the scrapes: {[int(v) for _, v in series]} samples in {w} s")
    infos = query(url, f"count by (instance) (count_over_time(gearbox_info[{w}s]))", end)
    check(len(infos) == hosts and all(v == 2 for _, v in infos),
          "gearbox_info changed labels once per host (model, generation): "
          + ", ".join(f"{m['instance']} {v:g}" for m, v in infos))
    for m, _ in query(url, "gearbox_info", end):
        print(f"fleet_prom:        {m['instance']}: model={m['model']} generation={m['generation']}")
    expected = offered + hosts
    rows = query_range(url, "sum(rate(gearbox_requests_total[10s]))", start + 10, end)
    points = rows[0][1] if rows else []
    want = int(end - (start + 10)) + 1
    check(len(points) >= want - 1,
          f"sum(rate(gearbox_requests_total[10s])) has {len(points)} of {want} points (no gap)")
    lo = min((v for _, v in points), default=0)
    hi = max((v for _, v in points), default=0)
    check(bool(points) and 0.7 * expected <= lo and hi <= 1.3 * expected,
          f"fleet rate across the reloads {lo:.1f}..{hi:.1f} req/s; sent {expected:g} "
          f"(+-30%: no dip, no spike)")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    url, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "wait-up":
        wait_up(url, int(args[0]), float(args[1]))
    elif cmd == "wait-after":
        wait_after(url, float(args[0]), float(args[1]))
    elif cmd == "steady":
        steady(url, float(args[0]), float(args[1]), int(args[2]), float(args[3]),
               float(args[4]), float(args[5]))
    elif cmd == "reload-window":
        reload_window(url, float(args[0]), float(args[1]), float(args[2]), int(args[3]))
    else:
        sys.exit(__doc__)
    if failures:
        print(f"fleet_prom: FAIL: {len(failures)} check(s): " + "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
