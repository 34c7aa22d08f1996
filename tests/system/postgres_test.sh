#!/usr/bin/env bash
# postgres_test.sh: the `postgres` handler against a real PostgreSQL (Debian's
# postgresql package), under every model.
#
# It creates a throwaway cluster with initdb in a temporary directory, owned by
# and run as the `postgres` user (the server refuses to run as root), listening
# on a unix socket in that directory only (listen_addresses = ''), with
# max_connections raised to what the test's pools need. The cluster is stopped
# by its postmaster's PID at exit.
#
# For each model (prefork, threadpool, async with one loop) gearboxd runs on a
# free loopback port and the test checks:
#   1. rows and types: int2/int4/int8/float4/float8/numeric are JSON numbers
#      (NaN/Infinity strings), bool true/false, NULL null, text and dates
#      strings, escaped (quotes, backslash, control characters, UTF-8);
#      $1 bound from the query string, form-decoded (a %00 ends a value, as
#      libpq sends it up to its first NUL); or from a path
#      capture (/items/{id}: check_captures in postgres_routes.sh);
#   2. a role that needs a password (scram) is served with it from
#      PGPASSFILE and from passfile= in the dsn, and refused (502) without;
#      the connection budget (workers x pool) is logged at start, and a
#      warning when it exceeds the server's max_connections (read after the
#      first connect); a missing parameter gets 400; a statement that cannot be
#      prepared gets 500 whose body names the SQLSTATE (42P01) and not the
#      query; -p and the log redact the password of a dsn;
#   2b. SQLSTATE mappings, connect_timeout (postgres_errors.sh); max_rows/
#      max_bytes, int8 as strings, RLIMIT_NOFILE exhaustion (postgres_limits.sh);
#   3. a query longer than the route's timeout gets 504 within it, and
#      pg_stat_activity shows the query gone (cancelled) within 2 s;
#   4. a client that closes mid-query gets its query cancelled likewise;
#   4b. idle connections the server ended are replaced: no request fails;
#   5. the server stopped under load (fast shutdown): the requests after the
#      stop get 502 quickly (each within 1 s), nothing else than 200/502, the
#      daemon stays up; the server started again: served again within 10 s;
# and under async only (one loop):
#   6. 100 concurrent `SELECT pg_sleep(0.05)` with pool = 16 finish in < 1 s;
#   7. pool exhaustion waits: 6 concurrent 0.2 s queries on a route with
#      pool = 1 all get 200 (no 5xx), taking at least 6 x 0.2 s (they queued
#      for the one connection) and within the route's timeout; 3 concurrent
#      3 s queries there (timeout 5 s): one 200, two 504 (one cancelled
#      running, one given up in the queue), and the pool serves at once after;
#   8. (async, pipelined) the checks of postgres_pipeline.sh.
#
# Environment:
#   GEARBOXD=PATH   use this binary instead of building //daemon:gearboxd
#   MODELS="..."    the models to test (default: prefork threadpool async
#                   async-unpipelined, which is async with pipeline = 1)
#   POSTGRES_TEST_TIMEOUT=S  bound on the whole run (default 300)
# Needs: postgresql, curl, python3, runuser; root (runs the server as postgres).
set -euo pipefail

if [[ -z "${_POSTGRES_TEST_BOUNDED:-}" ]]; then
  export _POSTGRES_TEST_BOUNDED=1
  exec timeout -k 10 "${POSTGRES_TEST_TIMEOUT:-300}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MODELS=${MODELS:-prefork threadpool async async-unpipelined}
load=$root/tests/system/postgres_load.py

say() { echo "postgres_test: $*"; }
fail() { echo "postgres_test: FAIL: $*" >&2; exit 1; }

# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
# shellcheck source=tests/system/postgres_routes.sh
source "$root/tests/system/postgres_routes.sh"
# shellcheck source=tests/system/postgres_errors.sh
source "$root/tests/system/postgres_errors.sh"
# shellcheck source=tests/system/postgres_limits.sh
source "$root/tests/system/postgres_limits.sh"
# shellcheck source=tests/system/postgres_pipeline.sh
source "$root/tests/system/postgres_pipeline.sh"
# shellcheck source=tests/system/pg_cluster.sh
source "$root/tests/system/pg_cluster.sh"
need curl:curl python3:python3 psql:postgresql runuser:util-linux
pg_find
find_gearboxd
say "gearboxd: $GEARBOXD; PostgreSQL: $("$pgbin/postgres" --version)"

# --- scratch space and cleanup -------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-pg.XXXXXX")
chmod 0755 "$work"
gpid=""
mute_pid=""
cleanup() {
  local rc=$?
  [[ -n "$gpid" ]] && stop_pid "$gpid" TERM
  [[ -n "$mute_pid" ]] && stop_pid "$mute_pid" TERM
  pg_stop
  if ((rc != 0)); then
    say "logs of the failed run are in $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT

# --- the cluster -----------------------------------------------------------------
pg_init
# Enough connections for every pool below (async: 16 + 4 x 5 routes; threadpool
# 4 threads x ...; see the configs).
start_pg() { pg_start -c max_connections=200 -c shared_buffers=16MB; }
start_pg
say "postgres running (pid $(pg_pid)) on $work/.s.PGSQL.5432"
# A role that must give a password (scram), for the passfile checks: its
# pg_hba line comes first, so trust does not apply to it.
sql "CREATE ROLE app LOGIN PASSWORD 'app-pw'"
{ echo "local all app scram-sha-256"; cat "$data/pg_hba.conf"; } >"$work/pg_hba.new"
as_postgres cp "$work/pg_hba.new" "$data/pg_hba.conf"
sql "SELECT pg_reload_conf()" >/dev/null
# libpq wants a passfile no one else can read, owned by whoever runs gearboxd.
echo "*:*:*:app:app-pw" >"$work/pgpass.env"
echo "*:*:*:app:app-pw" >"$work/pgpass.dsn"
chmod 0600 "$work/pgpass.env" "$work/pgpass.dsn"
sql "CREATE TABLE t (id int PRIMARY KEY, i2 int2, i8 int8, f4 float4,
       f8 float8, n numeric, b bool, s text, nul text, d date);
     INSERT INTO t VALUES
       (1, 2, 9007199254740993, 1.5, 2.25, 12345678901234567890.5, true,
        'plain', NULL, '2024-02-29'),
       (2, -3, -4, 'NaN', '-Infinity', 'NaN', false,
        E'q\" b\\\\ nl\\n tab\\t \\u00e9 \\u2713 \\x01', NULL, '2000-01-01');"
answers_setup

# --- one model -------------------------------------------------------------------
write_config() {  # MODEL PORT FILE
  local dsn="host=$work user=postgres dbname=postgres"
  cat >"$3" <<EOF
[server]
model = "${1%%-*}"
[threadpool]
threads = 4
[prefork]
workers = 3
[async]
loops = 1
[[listen]]
address = "127.0.0.1:$2"
protocol = "http"
name = "http"
[[route]]
path = "/hello"
handler = "text"
body = "hello\n"
[[route]]
path = "/rows"
handler = "postgres"
dsn = "$dsn password=SeCrEt-pw"
query = "SELECT * FROM t WHERE id <= \$1::int ORDER BY id"
params = ["upto"]
[[route]]
path = "/add"
handler = "postgres"
dsn = "$dsn"
query = "SELECT \$1::int + 1 AS n, \$2::text AS s"
params = ["n", "s"]
[[route]]
path = "/bad"
handler = "postgres"
dsn = "$dsn"
query = "SELECT * FROM no_such_table"
[[route]]
path = "/slow"
handler = "postgres"
dsn = "$dsn"
query = "SELECT pg_sleep(\$1::float8) AS slow_query"
params = ["s"]
timeout = "500ms"
[[route]]
path = "/sleep"
handler = "postgres"
dsn = "$dsn"
query = "SELECT pg_sleep(\$1::float8) AS sleep_query"
params = ["s"]
pool = 16
timeout = "10s"
[[route]]
path = "/one"
handler = "postgres"
dsn = "$dsn"
query = "SELECT pg_sleep(\$1::float8) AS one_query"
params = ["s"]
pool = 1
timeout = "5s"
[[route]]
path = "/big"
handler = "postgres"
dsn = "$dsn"
query = "SELECT 1 AS one"
pool = 1000
[[route]]
path = "/pw-env"
handler = "postgres"
dsn = "host=$work user=app dbname=postgres"
query = "SELECT current_user AS who"
[[route]]
path = "/pw-dsn"
handler = "postgres"
dsn = "host=$work user=app dbname=postgres passfile=$work/pgpass.dsn"
query = "SELECT current_user AS who"
[[route]]
path = "/pw-none"
handler = "postgres"
dsn = "host=$work user=app dbname=postgres passfile=$work/no-such-file"
query = "SELECT current_user AS who"
EOF
  answers_routes >>"$3"
  if [[ $1 == async ]]; then pipeline_routes >>"$3"; fi
  # async-unpipelined: every route one query per connection, no pipeline
  # mode, the path EL8/EL9's libpq 13 takes under async.
  if [[ $1 == async-unpipelined ]]; then
    sed -i '/^handler = "postgres"$/a pipeline = 1' "$3"
  fi
}

# Running queries whose text contains $1 (other than the asking one).
running() {
  sql "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'
         AND query LIKE '%$1%' AND pid <> pg_backend_pid()"
}

check_rows() {  # BASE
  local body
  body=$(curl -sf "$1/rows?upto=2") || fail "/rows did not answer 200"
  python3 - "$body" <<'EOF' || fail "/rows: wrong rows or types: $body"
import json, sys
rows = json.loads(sys.argv[1])
want = [
    {"id": 1, "i2": 2, "i8": 9007199254740993, "f4": 1.5, "f8": 2.25,
     "n": 12345678901234567890.5, "b": True, "s": "plain", "nul": None,
     "d": "2024-02-29"},
    {"id": 2, "i2": -3, "i8": -4, "f4": "NaN", "f8": "-Infinity", "n": "NaN",
     "b": False, "s": 'q" b\\ nl\n tab\t \u00e9 \u2713 \x01', "nul": None,
     "d": "2000-01-01"},
]
assert rows == want, rows
# exact integer text (no float rounding of int8) and bool/null literals
raw = sys.argv[1]
assert '"i8":9007199254740993' in raw and '"b":true' in raw, raw
assert '"nul":null' in raw, raw
for row in rows:
    for key in ("id", "i2", "i8"):
        assert type(row[key]) is int, (key, row[key])
EOF
  local out
  out=$(curl -s "$1/add?n=41&s=a+b%26c%3D")
  [[ $out == '[{"n":42,"s":"a b&c="}]' ]] || fail "/add: got $out"
  # libpq sends a text value up to its first NUL: %00 ends a value there,
  # and the value after it still binds as its own.
  out=$(curl -s "$1/add?n=41%00junk&s=a%00b")
  [[ $out == '[{"n":42,"s":"a"}]' ]] || fail "/add with NULs: got $out"
  check_captures "$1"
}

check_failures() {  # BASE CONFIG LOG
  local code body
  code=$(curl -s -o "$work/body" -w '%{http_code}' "$1/add?s=x")
  body=$(cat "$work/body")
  [[ $code == 400 && $body == '{"error":"missing parameter","parameter":"n"}' ]] ||
    fail "missing parameter: got $code $body, want 400 and its name"
  code=$(curl -s -o "$work/body" -w '%{http_code}' "$1/bad")
  body=$(cat "$work/body")
  [[ $code == 500 ]] || fail "statement that cannot be prepared: got $code, want 500"
  grep -q '"sqlstate":"42P01"' <<<"$body" || fail "query error body lacks the SQLSTATE: $body"
  grep -q 'no_such_table' <<<"$body" && fail "query error body names the query: $body"
  grep -q 'event=postgres_prepare_failed.*sqlstate=42P01' "$3" ||
    fail "the query error is not logged with its SQLSTATE"
  local printed
  printed=$("$GEARBOXD" -p -c "$2")
  grep -q 'SeCrEt-pw' <<<"$printed" && fail "gearboxd -p shows the dsn's password"
  grep -q 'password=\*\*\*\*\*\*\*\*' <<<"$printed" ||
    fail "gearboxd -p does not show the redacted password"
  if grep -q 'SeCrEt-pw' "$3"; then fail "a log line shows the dsn's password"; fi
}

check_passfiles() {  # BASE LOG
  local out
  out=$(curl -s "$1/pw-env")
  [[ $out == '[{"who":"app"}]' ]] || fail "PGPASSFILE: got $out"
  out=$(curl -s "$1/pw-dsn")
  [[ $out == '[{"who":"app"}]' ]] || fail "passfile= in the dsn: got $out"
  # The control: without the password the server refuses (so the two above
  # really authenticated), a 502 at once, logged with libpq's message.
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$1/pw-none") == 502 ]] ||
    fail "no password: want 502"
  grep -q 'event=postgres_connect_failed route=/pw-none .*password' "$2" ||
    fail "the refused connection is not logged with libpq's message"
}

check_client_close() {  # BASE
  curl -s -o /dev/null --max-time 30 "$1/sleep?s=30" &
  local cpid=$!
  # The query runs (the close is mid-query); the client goes; it is cancelled.
  wait_for "[[ \$(running sleep_query) == 1 ]]" 5 || fail "the query did not start"
  kill "$cpid"
  wait "$cpid" || true
  wait_for "[[ \$(running sleep_query) == 0 ]]" 3 ||
    fail "the query of a closed client still runs: $(sql "SELECT pid, state, query FROM pg_stat_activity WHERE query LIKE '%sleep_query%'")"
}

check_server_stop() {  # BASE PORT
  rm -f "$work/steady.txt.first"
  python3 "$load" steady "$2" "/add?n=1&s=x" 4 4 "$work/steady.txt" &
  local lpid=$!
  # The database stops once the load has been served at least once.
  wait_for "[[ -s '$work/steady.txt.first' ]]" 10 || fail "no 200 under load before the stop"
  local stopped_at pid
  pid=$(pg_pid)
  stopped_at=$(python3 -c 'import time; print(time.monotonic())')
  kill -INT "$pid"
  wait_for "! alive $pid" 10 || fail "postgres did not stop"
  wait "$lpid" || fail "the load generator failed"
  alive "$gpid" || fail "gearboxd died when the database stopped"
  [[ $(curl -s "$1/hello") == hello ]] || fail "gearboxd does not serve /hello with the database down"
  python3 - "$work/steady.txt" "$stopped_at" <<'EOF' || fail "wrong answers while the database stopped (see $work/steady.txt)"
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
load_start = float(open(sys.argv[1] + ".first").read())
stop = float(sys.argv[2]) - load_start  # on the load's own time line
codes = {}
for _, status, _ in rows:
    codes[status] = codes.get(status, 0) + 1
print("postgres_test:   under load, database stopped after %.1f s:" % stop, codes)
assert set(codes) <= {"200", "502"}, codes
assert codes.get("200", 0) > 0 and codes.get("502", 0) > 0, codes
late = [float(lat) for start, status, lat in rows
        if status == "502" and float(start) > stop + 0.5]
assert late, "no 502 well after the stop"
assert max(late) < 1.0, max(late)
print("postgres_test:   502s after the stop: %d, slowest %.3f s" % (len(late), max(late)))
EOF
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1/add?n=1&s=x")
  [[ $code == 502 ]] || fail "database down: got $code, want 502 at once"
  start_pg
  wait_for "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$1/add?n=1&s=x') == 200 ]]" 10 ||
    fail "not served again within 10 s of the database's restart"
  # Every worker's pool recovers: a worker still backing off (up to 2 s)
  # answers 502 until its next attempt, then 200 like the others.
  wait_for "twenty_ok '$1/add?n=1&s=x'" 10 ||
    fail "not every worker served again within 10 s of the restart"
}

# Idle connections the server ended (pg_terminate_backend: FATAL 57P01,
# then EOF) are replaced before a query is sent on them, so no request
# fails: an async loop watches its idle connections, a blocking worker reads
# one idle for longer than 10 ms (kCheckIdleAfter; two psql runs take
# longer) before it is given a query.
check_ended_idle() {  # BASE
  twenty_ok "$1/add?n=1&s=x" || fail "not served before ending idle connections"
  local ended
  ended=$(sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND state = 'idle'
      AND pid <> pg_backend_pid()")
  (( ended > 0 )) || fail "no idle connection of gearboxd's to end"
  wait_for "[[ \$(sql \"SELECT count(*) FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()\") == 0 ]]" 5 ||
    fail "the ended connections did not go"
  twenty_ok "$1/add?n=1&s=x" ||
    fail "a request failed on a connection the server ended while idle"
  say "  $ended idle connections ended by the server: replaced, 20 x 200"
}

check_async_concurrency() {  # PORT
  local out
  out=$(python3 "$load" burst "$1" "/sleep?s=0.05" 100)
  say "  100 x pg_sleep(0.05), pool 16, 1 loop: $out"
  python3 - "$out" <<'EOF' || fail "100 concurrent pg_sleep(0.05): $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["codes"] == {"200": 100}, r
assert r["wall"] < 1.0, r
EOF
  out=$(python3 "$load" burst "$1" "/one?s=0.2" 6)
  say "  6 x pg_sleep(0.2), pool 1: $out"
  python3 - "$out" <<'EOF' || fail "pool exhaustion did not wait: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["codes"] == {"200": 6}, r
assert 1.15 <= r["wall"] < 5.0, r   # queued on the one connection
EOF
  # Past the timeout (5 s) in the queue or in the query: 504, and the pool
  # is whole afterwards (no connection lost to a waiter that gave up).
  out=$(python3 "$load" burst "$1" "/one?s=3" 3)
  say "  3 x pg_sleep(3), pool 1, timeout 5s: $out"
  python3 - "$out" <<'EOF' || fail "pool exhaustion past the timeout: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["codes"] == {"200": 1, "504": 2}, r
assert 4.5 <= r["wall"] < 7.0, r
EOF
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/one?s=0")
  [[ $code == 200 ]] || fail "pool 1 after timeouts: got $code"
}

for model in $MODELS; do
  say "== $model"
  port=$(free_port)
  conf=$work/$model.toml
  log=$work/$model.log
  write_config "$model" "$port" "$conf"
  "$GEARBOXD" -t -c "$conf" >/dev/null || fail "gearboxd -t rejected $conf"
  PGPASSFILE=$work/pgpass.env "$GEARBOXD" -c "$conf" >"$log" 2>&1 &
  gpid=$!
  base=http://127.0.0.1:$port
  wait_for "curl -sf $base/hello" 10 || fail "gearboxd ($model) did not start"
  grep -q 'event=postgres_pool route=/sleep .*pool=16 workers=[0-9]* connections_max=' "$log" ||
    fail "the connection budget is not logged at start"
  check_rows "$base"
  say "  rows and types ok"
  check_failures "$base" "$conf" "$log"
  say "  400 / 500 with SQLSTATE / redaction ok"
  case $model in prefork) workers=3 ;; threadpool) workers=4 ;; *) workers=1 ;; esac
  check_sqlstates "$base" "$log" "$workers"
  say "  SQLSTATE mappings ok"
  check_limits "$base" "$log"
  say "  max_rows / max_bytes / int8 strings ok"
  check_connect_timeout "$base" "$log"
  say "  connect_timeout against a listener that never accepts ok"
  check_rlimit "$base" "$log" "${model%%-*}"
  say "  RLIMIT_NOFILE exhaustion: 503, daemon alive, served after ok"
  check_passfiles "$base" "$log"
  say "  password from PGPASSFILE and from passfile= ok (and refused without)"
  grep -q 'event=postgres_budget .*server_max_connections=200' "$log" ||
    fail "max_connections not read after the first connect"
  [[ $(curl -s "$base/big") == '[{"one":1}]' ]] || fail "/big did not answer"
  grep -q 'level=warning.*event=postgres_budget_exceeded route=/big .*server_max_connections=200' "$log" ||
    fail "no warning for a pool budget beyond max_connections"
  check_timeout "$base" "$log"
  say "  504 past the timeout, query cancelled ok"
  check_client_close "$base"
  say "  client close cancels the query ok"
  check_ended_idle "$base"
  if [[ ${model%%-*} == async ]]; then check_async_concurrency "$port"; fi
  if [[ $model == async ]]; then
    check_pipeline "$port" "$log"
    check_orphan_prepare "$port"
    check_pipeline_stall "$port" "$log"
    say "  pipelines: a failing query, a timed-out one, the others answered, a prepare orphaned by its client, a stuck query reset ok"
  fi
  check_server_stop "$base" "$port"
  say "  database stop: quick 502s, daemon up; restart: served again ok"
  stop_pid "$gpid" TERM
  wait "$gpid" || fail "gearboxd ($model) did not exit 0 on TERM"
  gpid=""
done
say "ok"
