#!/usr/bin/env bash
# The client's address over FastCGI, end to end under the model given as $1: the
# real gearboxd with two FastCGI listeners, a unix socket (a trusted peer: the
# packaged nginx) and 127.0.0.1 on port 0 (an untrusted peer here:
# trusted_proxies = ["unix"]), serving the contract test module, whose
# ?do=request answer shows the client address the module reads, and a Lua
# script answering req.client. cgi-fcgi sends REMOTE_ADDR and REMOTE_PORT as
# nginx's fastcgi_params does.
#   from the trusted peer: REMOTE_ADDR is the client (IPv4, IPv6), REMOTE_PORT
#     and the client's own X-Forwarded-For change nothing; a REMOTE_ADDR that is
#     not an address is ignored (a unix peer has no address of its own: "");
#   from the untrusted peer: REMOTE_ADDR is only a claim; the peer is the client.
# Bounded: the socket wait, every cgi-fcgi call (timeout 10), the stop.
set -euo pipefail

MODEL="${1:?usage: client_address_test.sh MODEL}"
lib="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}/tests/support/lib.sh"
[[ -f "$lib" ]] || lib="$(dirname "${BASH_SOURCE[0]}")/../../support/lib.sh"
# shellcheck source=tests/support/lib.sh
source "$lib"
GEARBOXD="$(gearboxd_path)"
MODULE="$(runfile tests/modules/libcontract.so)"
SCRIPT="$(realpath "$(dirname "$0")/client.lua")"
LOG_TAIL=30
set -E
trap 'fail "line $LINENO: a command failed"' ERR

command -v cgi-fcgi >/dev/null || fail "cgi-fcgi not found: apt-get install libfcgi-bin"
[[ -f "$MODULE" ]] || fail "libcontract.so not found in the runfiles"

make_work fcgi-client
SOCK="$WORK/fcgi.sock"
CONF="$WORK/gearbox.toml"
LOG="$WORK/gearboxd.log"
rm -f "$SOCK"

cat >"$CONF" <<EOF
[server]
model = "$MODEL"
graceful_timeout = "5s"
trusted_proxies = ["unix"]

[[listen]]
address = "unix:$SOCK"
protocol = "fastcgi"
name = "fcgi-unix"

[[listen]]
address = "127.0.0.1:0"
protocol = "fastcgi"
name = "fcgi-tcp"

[threadpool]
threads = 2

[prefork]
workers = 2

[async]
loops = 1

[[module]]
name = "contract"
path = "$MODULE"

[[route]]
path = "/c"
handler = "contract"
label = "client"

[[route]]
path = "/l"
handler = "lua"
script = "$SCRIPT"
EOF

start_gearboxd "$CONF"

# The TCP listener's port, from its `event=listening ... bound=127.0.0.1:N` line.
tcp_bound() {
  sed -n 's/.*event=listening name=fcgi-tcp .*bound=\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$LOG" | head -n 1
}
listening() { [[ -S "$SOCK" && -n "$(tcp_bound)" ]]; }
wait_listening 10 listening
TCP="$(tcp_bound)"

# The body of GET `uri` through `where` (a socket path or host:port), with the
# extra VAR=VALUE params given.
ask_uri() {
  local uri="$1" where="$2" out
  shift 2
  out="$(env -i REQUEST_METHOD=GET REQUEST_URI="$uri" \
    QUERY_STRING="${uri#*\?}" SERVER_PROTOCOL=HTTP/1.1 "$@" \
    timeout 10 cgi-fcgi -bind -connect "$where")" || true
  sed '1,/^\r$/d' <<<"$out"
}
ask() { ask_uri "/c?do=request" "$@"; }
# The module's and the Lua handler's view of the client must both be `want`
# ("" when unknown: the module's empty client_address, Lua's nil req.client).
expect_client() {  # what, where, expected client, VAR=VALUE...
  local what="$1" where="$2" want="$3" body
  shift 3
  body="$(ask "$where" "$@")"
  [[ "$body" == *" client=$want captures="* ]] ||
    fail "$what: expected client=$want, got [$body]"
  [[ "$body" == *"protocol=fastcgi"* ]] || fail "$what: not over FastCGI: [$body]"
  body="$(ask_uri /l "$where" "$@")"
  [[ "$body" == "client=${want:-nil}" ]] ||
    fail "$what (lua): expected client=${want:-nil}, got [$body]"
}

expect_client "trusted peer, IPv4" "$SOCK" "203.0.113.20" \
  REMOTE_ADDR=203.0.113.20 REMOTE_PORT=51234
expect_client "trusted peer, IPv6" "$SOCK" "2001:db8::7" \
  REMOTE_ADDR=2001:db8::7 REMOTE_PORT=443
expect_client "the client's own X-Forwarded-For is not used" "$SOCK" \
  "203.0.113.20" REMOTE_ADDR=203.0.113.20 REMOTE_PORT=51234 \
  HTTP_X_FORWARDED_FOR=198.51.100.9 HTTP_X_REAL_IP=198.51.100.10
expect_client "a REMOTE_ADDR that is not an address" "$SOCK" "" \
  REMOTE_ADDR=not-an-address REMOTE_PORT=1
expect_client "no REMOTE_ADDR" "$SOCK" ""
[[ "$(ask "$SOCK" REMOTE_ADDR=203.0.113.20)" == *"listener=fcgi-unix "* ]] ||
  fail "the unix listener's name"

expect_client "untrusted peer: REMOTE_ADDR is only a claim" "$TCP" "127.0.0.1" \
  REMOTE_ADDR=203.0.113.20 REMOTE_PORT=51234
[[ "$(ask "$TCP" REMOTE_ADDR=203.0.113.20)" == *"listener=fcgi-tcp "* ]] ||
  fail "the TCP listener's name"

kill -0 "$PID" 2>/dev/null || fail "gearboxd died"
echo "PASS [$MODEL]: the FastCGI client address reaches the module and Lua"
