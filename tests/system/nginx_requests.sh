# shellcheck shell=bash
# nginx_requests.sh: the request checks of nginx_test.sh (sourced, not run),
# through one nginx server (http or fastcgi) to gearboxd: GET /hello,
# /sleep?ms=5, POST /echo (small and 200 kB), a ~58 KB request head, a 404,
# /status (the right model; 403 from 127.0.0.2, where /hello is 200); and
# keep-alive: 200 requests on one client connection, far fewer connections
# accepted by gearboxd (its /status).
#
# Expects say/fail, base_url (nginx_server.sh) and the driver's $work.
# shellcheck disable=SC2154  # $work is the driver's

# The value of "connections":{"accepted":N in a /status body.
accepted() {
  sed -n 's/.*"connections":{"accepted":\([0-9]*\).*/\1/p' <<<"$1"
}

functional_checks() {  # LABEL PROTOCOL MODEL
  local label=$1 base body code payload
  base=$(base_url "$2")
  say "[$label] GET /hello (with a client X-Request-Id nginx must replace)"
  body=$(curl -sS --max-time 5 -f -H 'X-Request-Id: from-client' "$base/hello") ||
    fail "[$label] GET /hello"
  [[ "$body" == "hello world" ]] || fail "[$label] /hello said '$body'"

  say "[$label] GET /sleep?ms=5"
  code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$base/sleep?ms=5")
  [[ "$code" == 200 ]] || fail "[$label] /sleep?ms=5 answered $code"

  say "[$label] POST /echo"
  payload="gearbox via nginx $label $(date +%s%N)"
  body=$(curl -sS --max-time 5 -f -H 'Content-Type: text/plain' \
    --data-binary "$payload" "$base/echo") || fail "[$label] POST /echo"
  [[ "$body" == "$payload" ]] || fail "[$label] /echo returned '$body'"

  say "[$label] POST /echo with a 200 kB body"
  # ~200 kB of text, without a truncating pipe (under pipefail the writer's
  # SIGPIPE would fail the test at random).
  head -c 150000 /dev/urandom > "$work/random-150k"
  base64 -w 76 "$work/random-150k" > "$work/body-200k"
  curl -sS --max-time 10 -f -H 'Content-Type: application/octet-stream' \
    --data-binary "@$work/body-200k" -o "$work/echo-200k" "$base/echo" ||
    fail "[$label] POST /echo 200 kB"
  cmp -s "$work/body-200k" "$work/echo-200k" || fail "[$label] 200 kB echo differs"

  # Nine 6.4 KB headers: a ~58 KB head, which nginx turns into FastCGI params
  # just under the 64 KB record limit (and sends as-is over proxy_pass).
  say "[$label] GET /hello with a ~58 KB request head"
  local big=() i
  for i in 1 2 3 4 5 6 7 8 9; do
    big+=(-H "X-Big-$i: $(head -c 6400 /dev/zero | tr '\0' 'a')")
  done
  body=$(curl -sS --max-time 5 -f "${big[@]}" "$base/hello") ||
    fail "[$label] GET /hello with a large head"
  [[ "$body" == "hello world" ]] || fail "[$label] large head: /hello said '$body'"

  say "[$label] GET /no-such-route -> 404"
  code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$base/no-such-route")
  [[ "$code" == 404 ]] || fail "[$label] /no-such-route answered $code"

  say "[$label] GET /status"
  body=$(curl -sS --max-time 5 -f "$base/status") || fail "[$label] GET /status"
  grep -q "\"model\":\"$3\"" <<<"$body" || fail "[$label] /status: $body"

  # gearbox-status.conf allows loopback 127.0.0.1 and ::1 only: another
  # address (127.0.0.2, also loopback) stands for a stranger.
  say "[$label] GET /status from 127.0.0.2 -> 403, /hello from there -> 200"
  for q in "" "?format=openmetrics" "?full"; do
    code=$(curl -sS --max-time 5 --interface 127.0.0.2 -o /dev/null -w '%{http_code}' "$base/status$q")
    [[ "$code" == 403 ]] || fail "[$label] /status$q from 127.0.0.2 answered $code, want 403"
  done
  code=$(curl -sS --max-time 5 --interface 127.0.0.2 -o /dev/null -w '%{http_code}' "$base/hello")
  [[ "$code" == 200 ]] || fail "[$label] /hello from 127.0.0.2 answered $code"
}

# 200 requests on one client connection; gearboxd must accept far fewer connections
# (read from its /status, through nginx).
keepalive_check() {  # LABEL PROTOCOL
  local label=$1 base body before after codes requests=200
  base=$(base_url "$2")
  body=$(curl -sS --max-time 5 -f "$base/status") || fail "[$label] GET /status"
  before=$(accepted "$body")
  [[ -n "$before" ]] || fail "[$label] no connections.accepted in /status: $body"
  # nginx's own connection at least: the counter works (a 0 would prove nothing).
  ((before >= 1)) || fail "[$label] /status counts $before accepted connections"
  say "[$label] keep-alive: $requests requests through nginx"
  codes=$(curl -sS --max-time 60 -o /dev/null -w '%{http_code}\n' \
    "$base/hello?i=[1-$requests]" | sort | uniq -c | tr -s ' ')
  [[ "$codes" == " $requests 200" ]] || fail "[$label] statuses: $codes"
  body=$(curl -sS --max-time 5 -f "$base/status")
  after=$(accepted "$body")
  say "[$label] gearboxd accepted $((after - before)) connection(s) for $((requests + 1)) requests"
  # One upstream connection serves them all; a few new ones are tolerated.
  ((after - before <= 10)) ||
    fail "[$label] $((after - before)) connections for $requests requests: no keep-alive to gearboxd"
}
