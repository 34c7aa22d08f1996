#!/usr/bin/env python3
"""Load for postgres_test.sh (bounded in count and time; loopback only).

  postgres_load.py burst PORT PATH N
      N requests at once (one connection each, released together by a
      barrier). Prints one JSON line: {"codes": {status: count}, "wall": s,
      "max": s}, wall from release to the last response.
  postgres_load.py steady PORT PATH SECONDS CONCURRENCY OUT
      CONCURRENCY clients sending PATH one after another for SECONDS; writes
      one "start_offset status latency" line per request to OUT (offset from
      the run's start). Each request times out after 5 s (status 0).
"""
import http.client
import json
import os
import sys
import threading
import time


def get(port, path, timeout):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def burst(port, path, n):
    results = [None] * n
    barrier = threading.Barrier(n + 1)

    def one(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.connect()
        barrier.wait()
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            results[i] = (response.status, time.monotonic())
        except OSError:
            results[i] = (0, time.monotonic())
        conn.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    released = time.monotonic()
    for t in threads:
        t.join(30)
    codes = {}
    for status, _ in results:
        codes[str(status)] = codes.get(str(status), 0) + 1
    wall = max(done for _, done in results) - released
    print(json.dumps({"codes": codes, "wall": round(wall, 3)}))


def steady(port, path, seconds, concurrency, out):
    start = time.monotonic()
    lines = []
    lock = threading.Lock()
    first_written = False

    def client():
        nonlocal first_written
        while time.monotonic() - start < seconds:
            t0 = time.monotonic()
            status = get(port, path, 5)
            with lock:
                if status == 200 and not first_written:
                    # The first answer served: the caller may stop the
                    # database now. Holds this run's start on the system's
                    # monotonic clock. Under the lock: one writer.
                    with open(out + ".first.tmp", "w") as f:
                        f.write("%.6f\n" % start)
                    os.replace(out + ".first.tmp", out + ".first")
                    first_written = True
                lines.append("%.3f %d %.4f" % (t0 - start, status,
                                               time.monotonic() - t0))

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 10)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "burst":
        burst(port, path, int(sys.argv[4]))
    elif mode == "steady":
        steady(port, path, float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        sys.exit("usage: see the docstring")


if __name__ == "__main__":
    main()
