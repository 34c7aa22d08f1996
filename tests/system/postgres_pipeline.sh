# shellcheck shell=bash
# postgres_pipeline.sh: sourced by postgres_test.sh (its helpers and $work,
# $root in scope). Async's pipelined routes (one connection, 8 deep) and their
# checks: a failing query among good ones fails only its own exchange; a
# query past the route's timeout gets 504 and the ones behind it are
# answered; a stuck query is reset after the stall bound (the ones behind it
# 502, a later one served); a PREPARE orphaned by its client leaves the
# statement cache. Uses expect (postgres_errors.sh).
# shellcheck disable=SC2154  # $root and $work are postgres_test.sh's

pipeline_routes() {  # async's pipelined routes (one connection, 8 deep)
  local dsn="host=$work user=postgres dbname=postgres"
  cat <<EOT
[[route]]
path = "/pipe"
handler = "postgres"
dsn = "$dsn"
query = "SELECT 100 / \$1::int AS q, pg_sleep(\$2::float8)::text AS pipe_query"
params = ["d", "s"]
pool = 1
pipeline = 8
[[route]]
path = "/pipeslow"
handler = "postgres"
dsn = "$dsn"
query = "SELECT \$1::int AS n, pg_sleep(\$2::float8)::text AS pipeslow_query"
params = ["n", "s"]
pool = 1
pipeline = 8
timeout = "2s"
[[route]]
path = "/orphan"
handler = "postgres"
dsn = "$dsn options='-c lock_timeout=400'"
query = "SELECT \$1::int AS n, count(*)::int AS orphan_query FROM orphan_t"
params = ["n"]
pool = 1
pipeline = 8
EOT
}

# Running queries whose text contains $1 that started at least $2 ago.
running_for() {
  sql "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'
         AND query LIKE '%$1%' AND now() - query_start >= interval '$2'
         AND pid <> pg_backend_pid()"
}

# GETs PATHS at once after FIRST has run on the server for AGE; prints one
# "path status body" line per request, FIRST's first.
pipeline_burst() {  # PORT FIRST MARKER AGE PATHS...
  PYTHONPATH="$root/tests/support" python3 - "$@" <<'EOT'
import http.client, subprocess, sys, threading
from waiting import wait_until
port, first, marker, age, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
out = {}
def get(path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    out[path] = (r.status, r.read().decode().strip())
t0 = threading.Thread(target=get, args=(first,)); t0.start()
def first_running():  # FIRST holds the one connection: the rest ride behind it
    n = subprocess.run(["bash", "-c", f"running_for {marker} '{age}'"], capture_output=True, text=True).stdout
    return n.strip() == "1"
if not wait_until(first_running, timeout=10, every=0.02):
    sys.exit(f"{first} did not start running")
ts = [threading.Thread(target=get, args=(p,)) for p in paths]
for t in ts: t.start()
for t in [t0] + ts: t.join()
for p in [first] + paths: print(p, *out[p])
EOT
}

check_pipeline() {  # PORT LOG
  export -f running_for sql
  export work
  local out
  # One failing query (division by zero: 22012) among good ones on one
  # pipelined connection fails only its own exchange.
  out=$(pipeline_burst "$1" "/pipe?d=1&s=0.5" pipe_query 0 \
    "/pipe?d=2&s=0" "/pipe?d=4&s=0" "/pipe?d=0&s=0" "/pipe?d=5&s=0" "/pipe?d=10&s=0")
  say "  pipeline with a failing query: $(tr '\n' ';' <<<"$out")"
  python3 - "$out" <<'EOT' || fail "pipeline with a failing query: $out"
import json, sys
got = {l.split(" ", 2)[0]: (int(l.split(" ", 2)[1]), l.split(" ", 2)[2]) for l in sys.argv[1].splitlines()}
for d in (1, 2, 4, 5, 10):
    path = [p for p in got if p.startswith(f"/pipe?d={d}&")][0]
    status, body = got[path]
    assert status == 200 and json.loads(body)[0]["q"] == 100 // d, (path, status, body)
assert got["/pipe?d=0&s=0"] == (400, '{"error":"invalid parameter","sqlstate":"22012"}'), got
EOT
  # A query past the route's timeout (2 s) with others behind it: it gets
  # 504 and its result is dropped when it comes (no cancel: that would hit
  # whichever query runs then); the ones behind, sent once it has run 1 s
  # (so within their own 2 s), are answered.
  out=$(pipeline_burst "$1" "/pipeslow?n=0&s=2.3" pipeslow_query "1 second" \
    "/pipeslow?n=1&s=0" "/pipeslow?n=2&s=0" "/pipeslow?n=3&s=0")
  say "  pipeline behind a timed-out query: $(tr '\n' ';' <<<"$out")"
  python3 - "$out" <<'EOT' || fail "pipeline behind a timed-out query: $out"
import sys
got = [l.split(" ", 2) for l in sys.argv[1].splitlines()]
assert got[0][1] == "504", got
for path, status, body in got[1:]:
    n = path.split("n=")[1].split("&")[0]
    assert status == "200" and body == f'[{{"n":{n},"pipeslow_query":""}}]', got
EOT
  if grep -q 'event=postgres_cancelled route=/pipeslow' "$2"; then
    fail "a timed-out query with others behind it was cancelled"
  fi
  expect "http://127.0.0.1:$1/pipeslow?n=7&s=0" 200 '[{"n":7,"pipeslow_query":""}]'
}

# A query that outlives its exchange's timeout by far, with others behind it
# on the one pipelined connection (pool 1, timeout 2 s): once its exchange is
# gone (504 at 2 s) no new request joins the connection, and 1 s later
# (kStallBound) the query is cancelled and the connection reset. The two
# behind it (sent at 1.5 s, deadline 3.5 s) get 502 before their own
# deadline; one that came at 2.5 s waited for a connection of its own and is
# served. Without the bound the late one rides behind the stuck query too
# and all three get 504.
check_pipeline_stall() {  # PORT LOG
  local out
  out=$(python3 - "$1" <<'EOT'
import http.client, json, sys, threading, time
port = int(sys.argv[1])
start = time.monotonic()
out = {}
def get(name, path, at):
    # The timeline under test: each request at its set point of the stuck
    # query's 2 s timeout and the 1 s stall bound after it.
    time.sleep(max(0.0, start + at - time.monotonic()))
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    out[name] = [r.status, round(time.monotonic() - start, 2)]
plan = [("stuck", "/pipeslow?n=0&s=30", 0), ("behind1", "/pipeslow?n=1&s=0", 1.5),
        ("behind2", "/pipeslow?n=2&s=0", 1.5), ("late", "/pipeslow?n=3&s=0", 2.5)]
ts = [threading.Thread(target=get, args=p) for p in plan]
for t in ts: t.start()
for t in ts: t.join()
print(json.dumps(out, sort_keys=True))
EOT
)
  say "  pipeline behind a stuck query: $out"
  python3 - "$out" <<'EOT' || fail "pipeline behind a stuck query: $out"
import json, sys
got = json.loads(sys.argv[1])
assert got["stuck"][0] == 504, got
for name in ("behind1", "behind2"):
    assert got[name][0] == 502 and got[name][1] < 3.45, got   # before their 3.5 s deadline
assert got["late"][0] == 200 and got["late"][1] < 4.0, got
EOT
  wait_for "grep -q 'event=postgres_pipeline_reset route=/pipeslow' '$2'" 5 ||
    fail "no postgres_pipeline_reset logged"
  wait_for "[[ \$(running_for pipeslow_query '0 seconds') == 0 ]]" 3 ||
    fail "the stuck query still runs after the reset"
}

# A PREPARE that fails after its client hung up, with another segment riding
# behind it on the connection: the statement leaves the connection's cache,
# so the next request prepares it again (without that it would execute a
# name the server does not have: 26000). The PREPARE waits for a lock held
# by another session and fails on the dsn's lock_timeout (55P03).
check_orphan_prepare() {  # PORT
  psql -X -q -At -h "$work" -U postgres -d postgres -c \
    "BEGIN; LOCK TABLE orphan_t IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(1.5); COMMIT;" \
    >/dev/null &
  local locker=$! out
  wait_for "[[ \$(sql \"SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    WHERE c.relname = 'orphan_t' AND l.mode = 'AccessExclusiveLock' AND l.granted\") == 1 ]]" 5 ||
    fail "the lock on orphan_t was not taken"
  out=$(python3 - "$1" <<'EOT'
import http.client, socket, sys, threading, time
port = int(sys.argv[1])
a = socket.create_connection(("127.0.0.1", port))
a.sendall(b"GET /orphan?n=1 HTTP/1.1\r\nHost: x\r\n\r\n")  # prepares, waits
# A timeline inside the PREPARE's lock_timeout (400 ms): the rider joins at
# 0.1 s, the client leaves at 0.2 s, the PREPARE fails at 0.4 s. A poll of
# pg_locks (a psql each look) can outlast the whole window on a busy host.
time.sleep(0.1)
got = {}
def rider():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/orphan?n=2")
    got["rider"] = c.getresponse().status
t = threading.Thread(target=rider); t.start()
# The rider's request reaches the connection behind the PREPARE: nothing
# outside gearboxd shows a segment joining a pipelined connection.
time.sleep(0.1)
a.close()  # the preparing exchange goes away; the rider stays on the wire
t.join()
print(got["rider"])
EOT
)
  wait "$locker"
  say "  orphaned prepare: the rider got $out"
  expect "http://127.0.0.1:$1/orphan?n=3" 200 '[{"n":3,"orphan_query":0}]'
}
