# shellcheck shell=bash
# postgres_errors.sh: sourced by postgres_test.sh (its helpers and $work
# in scope). The failures an application can act on, under every model:
#   a. each SQLSTATE mapping, from real server errors where one is easy to
#      cause (22P02 from ?n=abc, 23505 from a duplicate key, 57014 from
#      statement_timeout, 42P01 failing the prepare: 500, logged once per
#      connection with the SQL) and for the rest (40001, 40P01) from a
#      function that raises that SQLSTATE;
#   d. connect_timeout against a listener that never accepts: 502 within the
#      connect_timeout (not the route's timeout, nor the dsn's), logged;
#   f. (check_timeout, item 3 of postgres_test.sh) a query past the route's
#      timeout: the connection state machine's 504, counted in
#      request_timeouts, the query cancelled.
# (b, c, e: postgres_limits.sh.) Also the request helpers the postgres_*.sh
# checks share: expect (an exact answer) and twenty_ok (20 x 200).
# shellcheck disable=SC2154  # $work is postgres_test.sh's

expect() {  # URL STATUS BODY: the answer is exactly that
  local code body
  code=$(curl -s -o "$work/body" -w '%{http_code}' "$1")
  body=$(cat "$work/body")
  [[ $code == "$2" && $body == "$3" ]] ||
    fail "$1: got $code $body, want $2 $3"
}

twenty_ok() {  # URL: 20 requests in a row get 200
  local code
  for _ in $(seq 20); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$1")
    [[ $code == 200 ]] || return 1
  done
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
