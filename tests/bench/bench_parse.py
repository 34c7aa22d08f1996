"""bench_parse.py: the load generators' output parsers: wrk --latency and httperf.
Standard library only."""
import re


def _ms(value, unit):
    v = float(value)
    return {"us": v / 1000, "ms": v, "s": v * 1000, "m": v * 60000}[unit]


def parse_wrk(out):
    r = {"requests": 0, "rps": 0.0, "p50_ms": None, "p75_ms": None, "p90_ms": None,
         "p99_ms": None, "err_connect": 0, "err_read": 0, "err_write": 0, "err_timeout": 0,
         "non2xx": 0}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", out)
    if m:
        r["requests"] = int(m.group(1))
        r["elapsed_s"] = _ms(m.group(2), m.group(3)) / 1000
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    for pct in ("50", "75", "90", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
        if m:
            r[f"p{pct}_ms"] = _ms(m.group(1), m.group(2))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        r["err_connect"], r["err_read"], r["err_write"], r["err_timeout"] = map(int, m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    r["errors"] = r["err_connect"] + r["err_read"] + r["err_write"] + r["err_timeout"]
    return r


def parse_httperf(out):
    r = {}

    def grab(key, pattern, conv=float):
        m = re.search(pattern, out)
        r[key] = conv(m.group(1)) if m else None

    grab("connections", r"Total: connections (\d+)", int)
    grab("requests", r"Total: connections \d+ requests (\d+)", int)
    grab("replies", r"replies (\d+) test-duration", int)
    grab("duration_s", r"test-duration ([\d.]+) s")
    grab("request_rate", r"Request rate: ([\d.]+) req/s")
    grab("reply_rate_avg", r"Reply rate \[replies/s\]: min [\d.]+ avg ([\d.]+)")
    grab("reply_rate_min", r"Reply rate \[replies/s\]: min ([\d.]+)")
    grab("response_ms", r"Reply time \[ms\]: response ([\d.]+)")
    grab("conn_time_median_ms", r"Connection time \[ms\]: min [\d.]+ avg [\d.]+ max [\d.]+ median ([\d.]+)")
    grab("conn_time_max_ms", r"Connection time \[ms\]: min [\d.]+ avg [\d.]+ max ([\d.]+)")
    m = re.search(r"Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)", out)
    for i, k in enumerate(("s1xx", "s2xx", "s3xx", "s4xx", "s5xx")):
        r[k] = int(m.group(i + 1)) if m else None
    m = re.search(r"Errors: total (\d+) client-timo (\d+) socket-timo (\d+) connrefused (\d+) connreset (\d+)", out)
    if m:
        r["errors"], r["client_timo"], r["socket_timo"], r["connrefused"], r["connreset"] = map(int, m.groups())
    m = re.search(r"Errors: fd-unavail (\d+) addrunavail (\d+) ftab-full (\d+) other (\d+)", out)
    if m:
        r["fd_unavail"], r["addrunavail"], r["ftab_full"], r["err_other"] = map(int, m.groups())
    if r.get("s2xx") is not None and r.get("duration_s"):
        r["rps"] = r["s2xx"] / r["duration_s"]  # successful replies per second
    else:
        r["rps"] = 0.0
    return r
