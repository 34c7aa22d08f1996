# shellcheck shell=bash
# postgres_limits.sh: sourced by postgres_test.sh (its helpers and $work,
# $gpid in scope). The limits an application can meet, under every model:
#   b. max_rows and max_bytes: at the limit 200, one past it 502 "result too
#      large" (logged), a huge result cut off quickly with its query gone from
#      the server, and the route serves again after;
#   c. int8 = "string": int8 and numeric as exact JSON strings;
#   e. RLIMIT_NOFILE lowered (prlimit) on the running worker processes to
#      what they hold: a route that must open a connection answers 503 "server
#      out of resources", logged, the daemon alive; limits restored: served
#      again; under async a request that queues for a busy connection at the
#      limit is served (its wake is the loop's, no fd).
# (a, d, f: postgres_errors.sh, whose expect these use.)
# shellcheck disable=SC2154  # $gpid is postgres_test.sh's

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
# Server ends of connections to PORT still open (ESTABLISHED, CLOSE_WAIT):
# after a curl exits, the daemon closes its end only once it reads the FIN.
held_ends() {
  python3 -c '
import sys
port = ":%04X" % int(sys.argv[1])
print(sum(1 for t in ("/proc/net/tcp", "/proc/net/tcp6")
          for line in open(t).readlines()[1:]
          if line.split()[1].endswith(port) and line.split()[3] in ("01", "08")))' "$1"
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
  # The limit is set from the fds held now: an earlier request's end that
  # closed after it would leave room for the connect that must fail.
  wait_for "[[ \$(held_ends ${1##*:}) == 0 ]]" 5 ||
    fail "gearboxd still holds earlier connections"
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
