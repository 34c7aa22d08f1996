# postgres_answers.sh: sourced by postgres_test.sh (its helpers and $work,
# $gpid in scope). The checks of answers an application can act on, under
# every model:
#   a. each SQLSTATE mapping, from real server errors where one is easy to
#      cause (22P02 from ?n=abc, 23505 from a duplicate key, 57014 from
#      statement_timeout, 42P01 failing the prepare: 500, logged once per
#      connection with the SQL) and for the rest (40001, 40P01) from a
#      function that raises that SQLSTATE;
#   b. max_rows and max_bytes: at the limit 200, one past it 502 "result too
#      large" (logged), a huge result cut off quickly with its query gone from
#      the server, and the route serves again after;
#   c. int8 = "string": int8 and numeric as exact JSON strings;
#   d. connect_timeout against a listener that never accepts: 502 within the
#      connect_timeout (not the route's timeout, nor the dsn's), logged;
#   e. RLIMIT_NOFILE lowered (prlimit) on the running worker processes to
#      what they hold: a route that must open a connection answers 503 "server
#      out of resources", logged, the daemon alive; limits restored: served
#      again; under async a request that queues for a busy connection at the
#      limit is served (its wake is the loop's, no fd);
#   f. (check_timeout, item 3 of postgres_test.sh) a query past the route's
#      timeout: the connection state machine's 504, counted in
#      request_timeouts, the query cancelled.

answers_setup() {  # once, after the cluster is up
  sql "CREATE TABLE u (id int PRIMARY KEY); CREATE TABLE orphan_t (id int);
       CREATE FUNCTION fail_with(code text) RETURNS int LANGUAGE plpgsql AS
         \$\$ BEGIN RAISE EXCEPTION 'failing with %', code USING ERRCODE = code;
         END \$\$;"
  # A listener that never accepts: the kernel completes handshakes into its
  # backlog, nobody ever answers libpq's startup packet.
  python3 -c '
import signal, socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
signal.pause()  # until the cleanup stops it' >"$work/mute.port" &
  mute_pid=$!
  wait_for "[[ -s '$work/mute.port' ]]" 5 || fail "the mute listener did not start"
  mute_port=$(cat "$work/mute.port")
}

answers_routes() {  # the routes these checks use, appended to a config
  local dsn="host=$work user=postgres dbname=postgres"
  cat <<EOF
[[route]]
path = "/items/{id}"
handler = "postgres"
dsn = "$dsn"
query = "SELECT id FROM t WHERE id = \$1::int"
params = ["id"]
[[route]]
path = "/words/{w}"
handler = "postgres"
dsn = "$dsn"
query = "SELECT \$1::text AS w"
params = ["w"]
[[route]]
path = "/insert"
handler = "postgres"
dsn = "$dsn"
query = "INSERT INTO u VALUES (\$1::int) RETURNING id"
params = ["id"]
[[route]]
path = "/raise"
handler = "postgres"
dsn = "$dsn"
query = "SELECT fail_with(\$1)"
params = ["code"]
[[route]]
path = "/stmt-timeout"
handler = "postgres"
dsn = "$dsn options='-c statement_timeout=100'"
query = "SELECT pg_sleep(2)"
[[route]]
path = "/rowcap"
handler = "postgres"
dsn = "$dsn"
query = "SELECT generate_series(1, \$1::int) AS g"
params = ["n"]
max_rows = 100
pool = 1
[[route]]
path = "/bytecap"
handler = "postgres"
dsn = "$dsn"
query = "SELECT repeat('x', 90) AS x FROM generate_series(1, \$1::int) g"
params = ["n"]
max_bytes = 900
pool = 1
[[route]]
path = "/int8s"
handler = "postgres"
dsn = "$dsn"
query = "SELECT 9007199254740993::int8 AS i8, 12345678901234567890.5::numeric AS n, 7 AS i4"
int8 = "string"
[[route]]
path = "/mute"
handler = "postgres"
dsn = "host=127.0.0.1 port=$mute_port user=postgres dbname=postgres connect_timeout=30"
query = "SELECT 1"
connect_timeout = "300ms"
timeout = "10s"
[[route]]
path = "/fresh"
handler = "postgres"
dsn = "$dsn"
query = "SELECT 'fresh' AS f"
[[route]]
path = "/status"
handler = "status"
[[route]]
path = "/fd1"
handler = "postgres"
dsn = "$dsn"
query = "SELECT pg_sleep(\$1::float8) AS fd1_query"
params = ["s"]
pool = 1
EOF
}

# $1 bound from a path capture (/items/{id}, params = ["id"]): the capture
# wins over ?id=, and is percent-decoded once (%31 is "1"; %2F stays in the
# one segment; '+' is not a space there, unlike in a query argument).
check_captures() {  # BASE
  local out
  out=$(curl -s "$1/items/2?id=1")
  [[ $out == '[{"id":2}]' ]] || fail "/items/2?id=1: got $out"
  out=$(curl -s "$1/items/%31")
  [[ $out == '[{"id":1}]' ]] || fail "/items/%31: got $out"
  out=$(curl -s "$1/words/a%20b%2Fc+d%2541")
  [[ $out == '[{"w":"a b/c+d%41"}]' ]] || fail "/words/...: got $out"
}

request_timeouts() {  # BASE: the daemon's count of 504s it timed
  curl -s "$1/status" | python3 -c 'import json, sys; print(json.load(sys.stdin)["request_timeouts"])'
}

check_timeout() {  # BASE LOG
  local out code t before
  before=$(request_timeouts "$1")
  out=$(curl -s -o "$work/body" -w '%{http_code} %{time_total}' "$1/slow?s=30")
  read -r code t <<<"$out"
  [[ $code == 504 ]] || fail "query past timeout: got $code, want 504"
  # The connection state machine times the request (the exchange keeps no
  # deadline of its own): its answer, counted in request_timeouts.
  [[ $(cat "$work/body") == "request timeout" ]] ||
    fail "504 body: $(cat "$work/body")"
  (($(request_timeouts "$1") == before + 1)) ||
    fail "the 504 is not counted in request_timeouts"
  python3 -c "import sys; sys.exit(0 if float('$t') < 2.0 else 1)" ||
    fail "504 took ${t}s for a 500ms timeout"
  # It timed out running (not connecting), so there was a query to cancel.
  wait_for "grep -q 'event=postgres_cancelled route=/slow phase=execute' '$2'" 2 ||
    fail "no cancel logged for the timed-out query"
  wait_for "[[ \$(running slow_query) == 0 ]]" 2 ||
    fail "the timed-out query still runs: $(sql "SELECT pid, state, query FROM pg_stat_activity WHERE query LIKE '%slow_query%'")"
}

twenty_ok() {  # URL: 20 requests in a row get 200
  local code
  for _ in $(seq 20); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$1")
    [[ $code == 200 ]] || return 1
  done
}

expect() {  # URL STATUS BODY: the answer is exactly that
  local code body
  code=$(curl -s -o "$work/body" -w '%{http_code}' "$1")
  body=$(cat "$work/body")
  [[ $code == "$2" && $body == "$3" ]] ||
    fail "$1: got $code $body, want $2 $3"
}

check_sqlstates() {  # BASE LOG WORKERS
  expect "$1/add?n=abc&s=x" 400 '{"error":"invalid parameter","sqlstate":"22P02"}'
  sql "DELETE FROM u" >/dev/null
  expect "$1/insert?id=7" 200 '[{"id":7}]'
  expect "$1/insert?id=7" 409 '{"error":"constraint violation","sqlstate":"23505"}'
  expect "$1/raise?code=40001" 409 '{"error":"serialization failure","sqlstate":"40001","retry":true}'
  expect "$1/raise?code=40P01" 409 '{"error":"deadlock detected","sqlstate":"40P01","retry":true}'
  expect "$1/raise?code=57014" 502 '{"error":"query cancelled","sqlstate":"57014"}'
  expect "$1/raise?code=XX000" 502 '{"error":"query failed","sqlstate":"XX000"}'
  expect "$1/stmt-timeout" 502 '{"error":"query cancelled","sqlstate":"57014"}'
  grep -q 'event=postgres_query_failed route=/insert .*sqlstate=23505 status=409' "$2" ||
    fail "the constraint violation is not logged"
  # The route's SQL cannot be prepared: 500, the SQL logged once per
  # connection (at most one per worker), not once per request.
  local i
  for i in 1 2 3 4 5 6 7 8; do
    expect "$1/bad" 500 '{"error":"statement cannot be prepared","sqlstate":"42P01"}'
  done
  local logged
  logged=$(grep -c 'event=postgres_prepare_failed route=/bad sqlstate=42P01 .*sql="SELECT \* FROM no_such_table"' "$2" || true)
  ((logged >= 1 && logged <= $3)) ||
    fail "prepare failure logged $logged times for 8 requests ($3 workers)"
}

check_limits() {  # BASE LOG
  local body
  body=$(curl -s "$1/rowcap?n=100")
  python3 -c "import json,sys; assert len(json.loads(sys.argv[1])) == 100" "$body" ||
    fail "/rowcap at max_rows: $body"
  expect "$1/rowcap?n=101" 502 '{"error":"result too large"}'
  grep -q 'event=postgres_result_too_large route=/rowcap .*max_rows=100' "$2" ||
    fail "the cut-off result is not logged"
  # Ten million rows are cut off at the 101st: quickly, and the query does
  # not run on (cancelled, its connection closed).
  local out code t
  out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$1/rowcap?n=10000000")
  read -r code t <<<"$out"
  [[ $code == 502 ]] || fail "/rowcap 10M rows: got $code"
  python3 -c "import sys; sys.exit(0 if float('$t') < 1.0 else 1)" ||
    fail "cutting off 10M rows took ${t}s"
  wait_for "[[ \$(running 'generate_series(1, \$1::int) AS g') == 0 ]]" 3 ||
    fail "the cut-off query still runs"
  expect "$1/rowcap?n=2" 200 '[{"g":1},{"g":2}]'
  # Rows of 90 x's: 9 are 891 bytes of JSON, 10 are 990, past max_bytes = 900.
  curl -s "$1/bytecap?n=9" | grep -q '^\[{"x":"xxx' || fail "/bytecap under max_bytes"
  expect "$1/bytecap?n=10" 502 '{"error":"result too large"}'
  grep -q 'event=postgres_result_too_large route=/bytecap .*max_bytes=900' "$2" ||
    fail "the cut-off result (bytes) is not logged"
  expect "$1/bytecap?n=1" 200 "[{\"x\":\"$(printf 'x%.0s' $(seq 90))\"}]"
  expect "$1/int8s" 200 '[{"i8":"9007199254740993","n":"12345678901234567890.5","i4":7}]'
}

check_connect_timeout() {  # BASE LOG
  local out code t
  out=$(curl -s -o "$work/body" -w '%{http_code} %{time_total}' "$1/mute")
  read -r code t <<<"$out"
  [[ $code == 502 && $(cat "$work/body") == '{"error":"database unreachable"}' ]] ||
    fail "/mute: got $code $(cat "$work/body"), want 502 database unreachable"
  python3 -c "import sys; sys.exit(0 if 0.25 <= float('$t') < 1.5 else 1)" ||
    fail "/mute answered after ${t}s, connect_timeout is 300ms"
  grep -q 'event=postgres_connect_failed route=/mute .*connect_timeout: no connection after 300 ms' "$2" ||
    fail "the connect timeout is not logged"
}

# The processes that serve: the daemon, or its children (prefork).
serving_pids() {
  local kids
  kids=$(cat /proc/"$gpid"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . || true)
  if [[ -n $kids ]]; then echo "$kids"; else echo "$gpid"; fi
}
# The lowest fd number PID has free: the next fd it opens gets it.
lowest_free_fd() {
  python3 -c '
import os, sys
held = {int(n) for n in os.listdir("/proc/%s/fd" % sys.argv[1])}
print(next(n for n in range(len(held) + 1) if n not in held))' "$1"
}
# Lowers each serving process's soft RLIMIT_NOFILE so that it can open one
# more fd (the client's socket) and no other, or restores it (no argument).
limit_fds() {
  local pid
  for pid in $(serving_pids); do
    if [[ ${1:-} == tight ]]; then
      prlimit --pid "$pid" --nofile="$(($(lowest_free_fd "$pid") + 1)):"
    else
      prlimit --pid "$pid" --nofile=1024:
    fi
  done
}

check_rlimit() {  # BASE LOG MODEL
  limit_fds tight
  expect "$1/fresh" 503 '{"error":"server out of resources"}'
  limit_fds
  alive "$gpid" || fail "gearboxd died at its fd limit"
  grep -q 'event=postgres_no_resources route=/fresh call=PQconnectStartParams error=".*Too many open files' "$2" ||
    fail "the fd limit is not logged"
  expect "$1/fresh" 200 '[{"f":"fresh"}]'
  [[ $3 == async ]] || return 0
  # A pool wait takes no fd under async (the worker's home wakes it on the
  # loop): the one connection busy, the next request queues at the limit and
  # is served once the first is done.
  curl -s -o /dev/null "$1/fd1?s=0.5" &
  local bg=$!
  wait_for "[[ \$(running fd1_query) == 1 ]]" 5 || fail "/fd1 did not start"
  limit_fds tight
  expect "$1/fd1?s=0" 200 '[{"fd1_query":""}]'
  limit_fds
  wait "$bg"
}

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
