#!/usr/bin/env bash
# FastCGI end to end: the real gearboxd with a `protocol = "fastcgi"` listener on a
# unix socket, under the model given as $1, and cgi-fcgi (Debian libfcgi-bin: the
# FastCGI reference library's client) as a real client.
#
#   bazel test //tests/integration/fastcgi:fastcgi          # every model
#   bazel test //tests/integration/fastcgi:fastcgi_async
#
# Everything is bounded: the socket wait, every cgi-fcgi call (timeout 10), and the
# stop (SIGTERM, then SIGKILL). The daemon is stopped by its PID.
set -euo pipefail

MODEL="${1:?usage: fastcgi_test.sh MODEL}"
lib="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}/tests/support/lib.sh"
[[ -f "$lib" ]] || lib="$(dirname "${BASH_SOURCE[0]}")/../../support/lib.sh"
# shellcheck source=tests/support/lib.sh
source "$lib"
GEARBOXD="$(gearboxd_path)"
SLOW_CLIENT="$(dirname "$0")/slow_fcgi_client.py"
FCGI_GET="$(dirname "$0")/fcgi_get.py"
LATE_STDIN="$(dirname "$0")/late_stdin_fcgi.py"
LOG_TAIL=+1  # all of it

set -E
trap 'fail "line $LINENO: a command failed"' ERR

command -v cgi-fcgi >/dev/null || fail "cgi-fcgi not found: apt-get install libfcgi-bin"
command -v python3 >/dev/null || fail "python3 not found: apt-get install python3"
[[ -x "$GEARBOXD" ]] || fail "gearboxd not found in the runfiles"

make_work fcgi
SOCK="$WORK/fcgi.sock"
CONF="$WORK/gearbox.toml"
LOG="$WORK/gearboxd.log"
rm -f "$SOCK"

# The embedded default's routes, and /stuck: a CPU burn far past its
# deadline, which prefork cuts off by killing the child.
cat >"$CONF" <<EOF
[server]
model = "$MODEL"
graceful_timeout = "5s"

[[listen]]
address = "unix:$SOCK"
protocol = "fastcgi"
name = "fastcgi"

[threadpool]
threads = 8
queue = 64

[prefork]
workers = 4

[async]
loops = 2

[limits]
max_header_bytes = 65536
max_body_bytes = 1048576

[[route]]
path = "/hello"
handler = "text"
body = "hello world\n"

[[route]]
path = "/sleep"
handler = "wait"
ms = 1
max_ms = 10000

[[route]]
path = "/echo"
handler = "echo"

[[route]]
path = "/burn"
handler = "burn"
us = 200

[[route]]
path = "/status"
handler = "status"

[[route]]
path = "/stuck"
handler = "burn"
us = 5000000
max_us = 5000000
timeout = "300ms"
EOF

start_gearboxd "$CONF"
wait_listening 10 test -S "$SOCK"

# fcgi VAR=VALUE... : one request; the environment is exactly the CGI params.
fcgi() {
  env -i "$@" timeout 10 cgi-fcgi -bind -connect "$SOCK"
}
# The response body: everything after the first empty (CRLF) line.
body_of() { sed '1,/^\r$/d'; }
# The value of header $1 in the response head.
header_of() { sed -n "s/^$1: \\(.*\\)\\r\$/\\1/p" | head -n 1; }

expect_eq() {  # what, expected, actual
  [[ "$2" == "$3" ]] || fail "$1: expected [$2], got [$3]"
}

# GET /hello
out="$(fcgi REQUEST_METHOD=GET REQUEST_URI=/hello SERVER_PROTOCOL=HTTP/1.1)" ||
  fail "cgi-fcgi /hello failed"
expect_eq "/hello status" "200 OK" "$(header_of Status <<<"$out")"
expect_eq "/hello type" "text/plain" "$(header_of Content-Type <<<"$out")"
expect_eq "/hello length" "12" "$(header_of Content-Length <<<"$out")"
expect_eq "/hello body" "hello world" "$(body_of <<<"$out")"

# GET /sleep?ms=5: a handler that waits (a timer under async, a sleep otherwise).
out="$(fcgi REQUEST_METHOD=GET 'REQUEST_URI=/sleep?ms=5' QUERY_STRING=ms=5)" ||
  fail "cgi-fcgi /sleep failed"
expect_eq "/sleep status" "200 OK" "$(header_of Status <<<"$out")"
expect_eq "/sleep body" "waited 5 ms" "$(body_of <<<"$out")"

# POST /echo with a body on STDIN.
out="$(printf 'hello, fastcgi' |
  fcgi REQUEST_METHOD=POST REQUEST_URI=/echo CONTENT_LENGTH=14 \
    CONTENT_TYPE=text/x-greeting)" || fail "cgi-fcgi POST /echo failed"
expect_eq "/echo status" "200 OK" "$(header_of Status <<<"$out")"
expect_eq "/echo type" "text/x-greeting" "$(header_of Content-Type <<<"$out")"
expect_eq "/echo body" "hello, fastcgi" "$(body_of <<<"$out")"

# A 200 kB body: several STDIN records in, several 65535-byte STDOUT records out.
BIG="$WORK/big.txt"
{ yes 'the quick brown fox jumps over the lazy dog' || true; } | head -c 200000 >"$BIG"
fcgi REQUEST_METHOD=POST REQUEST_URI=/echo CONTENT_LENGTH=200000 \
  CONTENT_TYPE=text/plain <"$BIG" >"$WORK/big.out" || fail "cgi-fcgi big POST failed"
expect_eq "big length" "200000" "$(header_of Content-Length <"$WORK/big.out")"
body_of <"$WORK/big.out" | cmp -s - "$BIG" || fail "big body differs"

# HEAD: the length of the body that is not sent.
out="$(fcgi REQUEST_METHOD=HEAD REQUEST_URI=/hello)" || fail "cgi-fcgi HEAD failed"
expect_eq "HEAD length" "12" "$(header_of Content-Length <<<"$out")"
expect_eq "HEAD body" "" "$(body_of <<<"$out")"

# CGI without REQUEST_URI: SCRIPT_NAME + PATH_INFO, QUERY_STRING.
out="$(fcgi REQUEST_METHOD=GET SCRIPT_NAME=/sle PATH_INFO=ep QUERY_STRING=ms=1)" ||
  fail "cgi-fcgi SCRIPT_NAME failed"
expect_eq "SCRIPT_NAME body" "waited 1 ms" "$(body_of <<<"$out")"

# Unknown path.
out="$(fcgi REQUEST_METHOD=GET REQUEST_URI=/nope)" || fail "cgi-fcgi /nope failed"
expect_eq "/nope status" "404 Not Found" "$(header_of Status <<<"$out")"

# The questions an HTTP head raises, asked through PARAMS, get the answers the
# HTTP codec gives (tests/conformance/cases.toml; unit cases in
# tests/unit/fastcgi), each refusal counted in bad_input, the server healthy.
bad_input() {
  fcgi REQUEST_METHOD=GET REQUEST_URI=/status |
    body_of | sed -n 's/.*"bad_input":\([0-9]*\).*/\1/p'
}
before="$(bad_input)"
[[ -n "$before" ]] || fail "no bad_input in /status"
refused=0
expect_status() {  # what, status, VAR=VALUE... (stdin: the body)
  local what=$1 want=$2
  shift 2
  # A refusal may come (and the connection close) before cgi-fcgi has sent all
  # of STDIN, which it then reports as a failure: only the answer counts.
  if ! out="$(fcgi "$@")" && [[ "$want" == 200 ]]; then
    fail "cgi-fcgi $what failed"
  fi
  expect_eq "$what" "$want" "$(header_of Status <<<"$out" | cut -d' ' -f1)"
  [[ "$want" == 200 ]] || refused=$((refused + 1))
  out="$(fcgi REQUEST_METHOD=GET REQUEST_URI=/hello)" || fail "after $what"
  expect_eq "healthy after $what" "hello world" "$(body_of <<<"$out")"
}
expect_status "CONTENT_LENGTH not a number (cl_hex)" 400 \
  REQUEST_METHOD=POST REQUEST_URI=/echo CONTENT_LENGTH=0x5 < <(printf hello)
expect_status "CONTENT_LENGTH with a sign (cl_plus_sign)" 400 \
  REQUEST_METHOD=POST REQUEST_URI=/echo CONTENT_LENGTH=+5 < <(printf hello)
expect_status "CONTENT_LENGTH over 64 bits (cl_overflow)" 400 \
  REQUEST_METHOD=POST REQUEST_URI=/echo CONTENT_LENGTH=99999999999999999999999 < <(printf hello)
expect_status "STDIN longer than CONTENT_LENGTH" 400 \
  REQUEST_METHOD=POST REQUEST_URI=/echo CONTENT_LENGTH=4 < <(printf hello)
expect_status "STDIN shorter than CONTENT_LENGTH" 400 \
  REQUEST_METHOD=POST REQUEST_URI=/echo CONTENT_LENGTH=6 < <(printf hello)
expect_status "CONNECT (method_connect)" 501 \
  REQUEST_METHOD=CONNECT REQUEST_URI=t:443 </dev/null
expect_status "unknown method (method_unknown)" 501 \
  REQUEST_METHOD=FROB REQUEST_URI=/hello </dev/null
expect_status "invalid Host (host_space_inside)" 400 \
  REQUEST_METHOD=GET REQUEST_URI=/hello 'HTTP_HOST=a b' </dev/null
expect_status "CTL in a header value (field_value_ctl)" 400 \
  REQUEST_METHOD=GET REQUEST_URI=/hello "HTTP_X_A=a$(printf '\001')b" </dev/null
expect_status "fragment in REQUEST_URI (target_fragment)" 400 \
  REQUEST_METHOD=GET 'REQUEST_URI=/hello#frag' </dev/null
expect_status "absolute REQUEST_URI (absolute_form)" 200 \
  REQUEST_METHOD=GET REQUEST_URI=http://t/hello HTTP_HOST=t </dev/null
expect_eq "absolute REQUEST_URI routed on its path" "hello world" "$(body_of <<<"$out")"
expect_eq "bad_input counts every refusal" "$refused" "$(( $(bad_input) - before ))"

# A client still sending after its bad request was answered (cgi-fcgi writes
# STDIN after PARAMS, and a 400 can come in between): gearboxd shuts its write
# side and drops the late bytes ([limits] lingering_timeout). A close on them
# fails the late write with EPIPE; a client that writes before it reads (as
# cgi-fcgi may) then loses the 400.
out="$(timeout 20 python3 "$LATE_STDIN" "$SOCK")" ||
  fail "late STDIN after a 400: $(tr '\n' ' ' <<<"$out")"

# Concurrent clients (each cgi-fcgi is one connection, no FCGI_KEEP_CONN).
pids=()
for i in $(seq 12); do
  fcgi REQUEST_METHOD=GET 'REQUEST_URI=/sleep?ms=30' QUERY_STRING=ms=30 \
    >"$WORK/par.$i" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent cgi-fcgi failed"; done
for i in $(seq 12); do
  expect_eq "concurrent $i" "waited 30 ms" "$(body_of <"$WORK/par.$i")"
done

# A slow client: half the PARAMS, a 300 ms pause, the rest. prefork children
# park such a connection with the master's head guard and take it back once
# the params are complete; the FCGI_GET_VALUES sent first is answered once.
out="$(timeout 15 python3 "$SLOW_CLIENT" "$SOCK" 300)" || fail "slow client failed"
expect_eq "slow params: GET_VALUES answers" "1" \
  "$(sed -n 's/^get_values_results=//p' <<<"$out")"
expect_eq "slow params: status" "200" "$(sed -n 's/^status=//p' <<<"$out")"
expect_eq "slow params: body" "hello world" "$(sed -n 's/^body=//p' <<<"$out")"
expect_eq "slow params: END_REQUEST" "1" \
  "$(sed -n 's/^end_requests=//p' <<<"$out")"

# prefork cuts off a request burning CPU past its deadline (300 ms + the
# 1 s grace) by killing its child: the client still gets the state machine's
# 504, framed as FastCGI (STDOUT records, then END_REQUEST) for the request id
# it sent, counted once in request_timeouts. (threadpool and async cannot cut
# a burning handler short: the burn ends with a late 200.)
if [[ "$MODEL" == prefork ]]; then
  request_timeouts() {
    fcgi REQUEST_METHOD=GET REQUEST_URI=/status |
      body_of | sed -n 's/.*"request_timeouts":\([0-9]*\).*/\1/p'
  }
  before="$(request_timeouts)"
  out="$(timeout 20 python3 "$FCGI_GET" "$SOCK" /stuck 7)" ||
    fail "fcgi_get /stuck failed"
  expect_eq "killed: status" "504" "$(sed -n 's/^status=//p' <<<"$out")"
  expect_eq "killed: body" "request timeout" "$(sed -n 's/^body=//p' <<<"$out")"
  expect_eq "killed: STDOUT, end of STDOUT, END_REQUEST" "6,6,3" \
    "$(sed -n 's/^records=//p' <<<"$out")"
  expect_eq "killed: the request id sent" "7" "$(sed -n 's/^ids=//p' <<<"$out")"
  expect_eq "killed: FCGI_REQUEST_COMPLETE" "0" \
    "$(sed -n 's/^end_status=//p' <<<"$out")"
  # The master folds the dead child's counters in.
  wait_for '[[ "$(request_timeouts)" == "$((before + 1))" ]]' 5 || true
  expect_eq "killed: counted once" "$((before + 1))" "$(request_timeouts)"
  grep -q 'event=request_killed' "$LOG" || fail "no event=request_killed"
fi

# The daemon is still up, and stops cleanly.
kill -0 "$PID" 2>/dev/null || fail "gearboxd died"
kill -TERM "$PID"
status=0
wait_until 10 _gearbox_gone "$PID" || fail "gearboxd still running 10s after SIGTERM"
wait "$PID" || status=$?
expect_eq "exit status" "0" "$status"
echo "PASS [$MODEL]: FastCGI over $SOCK"
