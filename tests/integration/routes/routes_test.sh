#!/usr/bin/env bash
# Routing end to end under the model given as $1: one gearboxd with an HTTP and
# a FastCGI listener on unix sockets; every case is asked over both (curl
# --path-as-is sends the target as written; cgi-fcgi sends it as REQUEST_URI, raw,
# as nginx's fastcgi_params does) and must get the same status and body.
# Bounded: the socket wait, every client call (timeout 10), the stop.
set -euo pipefail

MODEL="${1:?usage: routes_test.sh MODEL}"
lib="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}/tests/support/lib.sh"
[[ -f "$lib" ]] || lib="$(dirname "${BASH_SOURCE[0]}")/../../support/lib.sh"
# shellcheck source=tests/support/lib.sh
source "$lib"
GEARBOXD="$(gearboxd_path)"
set -E
trap 'fail "line $LINENO: a command failed"' ERR

command -v cgi-fcgi >/dev/null || fail "cgi-fcgi not found: apt-get install libfcgi-bin"
command -v curl >/dev/null || fail "curl not found: apt-get install curl"

make_work routes
HTTP_SOCK="$WORK/http.sock"
FCGI_SOCK="$WORK/fcgi.sock"
CONF="$WORK/gearbox.toml"
LOG="$WORK/gearboxd.log"
rm -f "$HTTP_SOCK" "$FCGI_SOCK"

route() {  # path, body [, methods]
  printf '\n[[route]]\npath = "%s"\n' "$1"
  [[ -n "${3:-}" ]] && printf 'methods = %s\n' "$3"
  printf 'handler = "text"\nbody = "%s\\n"\n' "$2"
}
{
  cat <<EOF
[server]
model = "$MODEL"
graceful_timeout = "5s"

[[listen]]
address = "unix:$HTTP_SOCK"
protocol = "http"
name = "http"

[[listen]]
address = "unix:$FCGI_SOCK"
protocol = "fastcgi"
name = "fastcgi"

[threadpool]
threads = 4

[prefork]
workers = 2

[async]
loops = 1
EOF
  # In an order where config order alone would pick wrongly: the catch-all
  # and the prefixes first. A GET catch-all conflicts with routes of any
  # method (Go's rule): these are all GET routes but one, so that other
  # methods get 405.
  route "/" "catch-all" '["GET"]'
  route "/static/" "static" '["GET"]'
  route "/files/{rest...}" "files" '["GET"]'
  route "/items/{id}" "item" '["GET"]'
  route "/items/{id}" "deleted" '["DELETE"]'
  route "/items/new" "new item form" '["GET"]'
  route "/static/{\$}" "static index" '["GET"]'
  route "/hello" "hello" '["GET"]'
} >"$CONF"

start_gearboxd "$CONF"
wait_listening 10 test -S "$HTTP_SOCK" -a -S "$FCGI_SOCK"

# "STATUS|ALLOW|BODY" of METHOD TARGET over HTTP.
ask_http() {
  local head="$WORK/head" body="$WORK/body" how=(-X "$1")
  [[ "$1" == HEAD ]] && how=(-I)
  : >"$head"
  : >"$body"
  timeout 10 curl -s --path-as-is --unix-socket "$HTTP_SOCK" "${how[@]}" \
    -D "$head" -o "$body" "http://gearbox$2" || true
  [[ "$1" == HEAD ]] && : >"$body"
  local status allow
  status="$(sed -n '1s/^HTTP\/1.1 \([0-9]*\).*/\1/p' "$head")"
  allow="$(sed -n 's/^Allow: \(.*\)\r$/\1/p' "$head")"
  printf '%s|%s|%s' "$status" "$allow" "$(cat "$body")"
}
# The same over FastCGI.
ask_fcgi() {
  local out status allow
  out="$(env -i REQUEST_METHOD="$1" REQUEST_URI="$2" SERVER_PROTOCOL=HTTP/1.1 \
    timeout 10 cgi-fcgi -bind -connect "$FCGI_SOCK")" || true
  status="$(sed -n 's/^Status: \([0-9]*\).*/\1/p' <<<"$out" | head -n 1)"
  allow="$(sed -n 's/^Allow: \(.*\)\r$/\1/p' <<<"$out" | head -n 1)"
  printf '%s|%s|%s' "$status" "$allow" "$(sed '1,/^\r$/d' <<<"$out")"
}
expect() {  # METHOD TARGET "STATUS|ALLOW|BODY"
  local got
  for proto in http fcgi; do
    got="$(ask_$proto "$1" "$2")"
    [[ "$got" == "$3" ]] || fail "$proto $1 $2: expected [$3], got [$got]"
  done
}

# Exact, templates (a literal beats a wildcard), methods.
expect GET /hello "200||hello"
expect GET /hello/ "200||catch-all"  # exact: not a prefix
expect GET /items/123 "200||item"
expect GET /items/new "200||new item form"
expect DELETE /items/123 "200||deleted"
expect HEAD /items/123 "200||"  # GET implies HEAD
expect GET /items/ "200||catch-all"  # {id} is never empty
expect GET /items/1/2 "200||catch-all"
expect GET /items/a%2Fb "200||item"  # %2F does not split the segment
# 405 with Allow: only routes of other methods match.
expect POST /items/123 "405|DELETE, GET, HEAD|method not allowed"
expect PUT /items/new "405|DELETE, GET, HEAD|method not allowed"
expect POST /nowhere "405|GET, HEAD|method not allowed"
# Prefixes, {$}, {rest...}, the catch-all; no automatic redirect.
expect GET /static/a/b.css "200||static"
expect GET /static/ "200||static index"
expect GET /static "200||catch-all"
expect GET /files/a/b.txt "200||files"
expect GET /files/ "200||files"
expect GET /nowhere/at/all "200||catch-all"
expect GET / "200||catch-all"
# The path rule: dot-segments removed, "//" merged, never above the root.
expect GET /static/../hello "200||hello"
expect GET /static/%2e%2e/hello "200||hello"
expect GET //hello "200||hello"
expect GET /static//a "200||static"
expect GET /.. "400||bad request path"
expect GET /static/../../hello "400||bad request path"
expect GET /files/..%2Fhello "400||bad request path"
# The server is still healthy after the refusals.
expect GET /hello "200||hello"
kill -0 "$PID" 2>/dev/null || fail "gearboxd died"
echo "PASS [$MODEL]: routes over HTTP and FastCGI"
