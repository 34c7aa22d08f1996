#!/usr/bin/env python3
"""Fixed-rate HTTP load through nginx, for tests/system/fleet_test.sh.

Request i is due at start + i / rate, whatever happened to the ones before (an
open loop: a stuck request delays no other, as with real clients), and is sent
by one of --threads workers, each holding one keep-alive connection to nginx.
The client never retries: a request that failed is counted as failed, so every
retry in the figures is nginx's (seen in its $upstream_addr, which the test's
nginx returns as X-Upstream: "a:1, b:2" = tried a, then b).

  fleet_load.py --port P --rate 100 --duration 10 --request 'GET /sleep?ms=5 9' \
      --request 'POST /echo 1' --out result.json

--progress FILE keeps in FILE how far the load has got (seconds of requests
sent, every tenth of a second), so that a test acts at a point of the load's
own timeline. --request METHOD PATH [WEIGHT] may repeat: requests cycle through the kinds by
weight. A POST sends a unique body and only counts as ok if it comes back
(/echo) or the status is 2xx (other routes). Bounded: at most rate * duration
requests, and the run ends by duration + timeout + 5 s at the latest (requests
still unanswered then count as failed, "unfinished").

The JSON result has the totals (requests, ok, failed, retried), statuses, the
final upstream of every request per second of the run (timeline), and every
failed or retried request with its time, status, upstream and nginx request id.
"""
import argparse
import collections
import http.client
import json
import os
import queue
import sys
import threading
import time


def parse_kinds(specs):
    kinds = []
    for spec in specs:
        parts = spec.split()
        if len(parts) not in (2, 3):
            sys.exit(f"fleet_load: bad --request {spec!r} (METHOD PATH [WEIGHT])")
        weight = int(parts[2]) if len(parts) == 3 else 1
        kinds += [(parts[0], parts[1])] * weight
    return kinds or [("GET", "/hello")]


def percentile(values, q):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Run:
    def __init__(self, args):
        self.args = args
        self.kinds = parse_kinds(args.request)
        self.total = int(args.rate * args.duration)
        self.rows = [None] * self.total
        self.work = queue.Queue()
        self.start = 0.0
        self.start_unix = 0.0
        self.max_lag = 0.0

    def dispatch(self):
        self.start = time.monotonic()
        self.start_unix = time.time()
        for i in range(self.total):
            due = self.start + i / self.args.rate
            delay = due - time.monotonic()
            if delay > 0:
                # The load's rate, the thing offered: request i is due at
                # start + i / rate, whatever happened to the ones before.
                time.sleep(delay)
            self.max_lag = max(self.max_lag, time.monotonic() - due)
            self.work.put((i, due))
            if self.args.progress and i % max(1, int(self.args.rate / 10)) == 0:
                self.report(i / self.args.rate)
        if self.args.progress:
            self.report(self.args.duration)
        for _ in range(self.args.threads):
            self.work.put(None)

    def report(self, seconds):
        """Writes how far into its timeline the load has got (seconds of
        requests sent), for a test that acts at a point of the load."""
        tmp = self.args.progress + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{seconds:.2f}\n")
        os.replace(tmp, self.args.progress)

    def worker(self):
        conn = None
        while True:
            item = self.work.get()
            if item is None:
                break
            i, due = item
            method, path = self.kinds[i % len(self.kinds)]
            body = f"{self.args.label}-{i}".encode() if method == "POST" else None
            row = {"i": i, "t": round(due - self.start, 3), "method": method,
                   "path": path, "status": 0, "error": "", "upstream": "",
                   "request_id": ""}
            t0 = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(
                        self.args.host, self.args.port, timeout=self.args.timeout)
                headers = {"Content-Type": "text/plain"} if body else {}
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                row["status"] = resp.status
                row["upstream"] = resp.getheader("X-Upstream", "")
                row["request_id"] = resp.getheader("X-Request-Id", "")
                ok = 200 <= resp.status < 300
                if ok and body is not None and path.startswith("/echo"):
                    ok = data == body
                    if not ok:
                        row["error"] = f"echo returned {data[:40]!r}"
                row["ok"] = ok
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                row["error"] = f"{type(e).__name__}: {e}"
                row["ok"] = False
                if conn is not None:
                    conn.close()
                conn = None
            row["latency"] = round(time.monotonic() - t0, 4)
            self.rows[i] = row

    def run(self):
        workers = [threading.Thread(target=self.worker, daemon=True)
                   for _ in range(self.args.threads)]
        for w in workers:
            w.start()
        self.dispatch()
        deadline = time.monotonic() + self.args.timeout + 5
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()))
        return self.summary()

    def summary(self):
        a = self.args
        statuses = collections.Counter()
        timeline = collections.defaultdict(collections.Counter)
        failed, retried, latencies = [], [], []
        by_method = collections.defaultdict(collections.Counter)
        for i, row in enumerate(self.rows):
            if row is None:
                method, path = self.kinds[i % len(self.kinds)]
                row = self.rows[i] = {"i": i, "t": round(i / a.rate, 3),
                                      "method": method, "path": path, "status": 0,
                                      "error": "unfinished", "upstream": "",
                                      "request_id": "", "ok": False, "latency": None}
            statuses[str(row["status"])] += 1
            ups = [u.strip() for u in row["upstream"].split(",") if u.strip()]
            final = ups[-1] if ups else "-"
            timeline[int(row["t"])][final] += 1
            by_method[row["method"]]["requests"] += 1
            if not row["ok"]:
                failed.append(row)
                by_method[row["method"]]["failed"] += 1
            else:
                latencies.append(row["latency"])
            if len(ups) > 1:
                retried.append(row)
                by_method[row["method"]]["retried"] += 1
        return {
            "label": a.label, "rate": a.rate, "duration": a.duration,
            "start_unix": self.start_unix,
            "requests": self.total, "ok": self.total - len(failed),
            "failed": len(failed), "retried": len(retried),
            "statuses": dict(statuses), "by_method": by_method,
            "max_lag_s": round(self.max_lag, 3),
            "latency_p50_s": percentile(latencies, 0.50),
            "latency_p99_s": percentile(latencies, 0.99),
            "latency_max_s": max(latencies, default=0.0),
            "timeline": {str(s): dict(c) for s, c in sorted(timeline.items())},
            "failures": failed, "retries": retried,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rate", type=float, required=True, help="requests per second")
    ap.add_argument("--duration", type=float, required=True, help="seconds")
    ap.add_argument("--request", action="append", default=[])
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--timeout", type=float, default=15, help="per request, seconds")
    ap.add_argument("--label", default="load")
    ap.add_argument("--out", required=True)
    ap.add_argument("--progress", default="",
                    help="file to keep the seconds of the load sent so far in")
    a = ap.parse_args()
    if not (0 < a.rate <= 2000 and 0 < a.duration <= 120 and 1 <= a.threads <= 256):
        sys.exit("fleet_load: rate (0, 2000], duration (0, 120] s, threads [1, 256]")
    result = Run(a).run()
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"fleet_load [{a.label}]: {result['requests']} requests at {a.rate:g}/s, "
          f"{result['failed']} failed, {result['retried']} retried by nginx, "
          f"statuses {result['statuses']}, p99 {result['latency_p99_s'] * 1000:.1f} ms, "
          f"max {result['latency_max_s'] * 1000:.0f} ms, client lag max "
          f"{result['max_lag_s'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
