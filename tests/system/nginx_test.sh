#!/usr/bin/env bash
# nginx_test.sh: real nginx in front of a real gearboxd, through the snippets the
# package ships (packaging/nginx/), for every model.
#
# For each model (prefork, threadpool, async) it
#   1. writes a gearbox config with an HTTP and a FastCGI listener on unix sockets in
#      a temporary directory, checks it with `gearboxd -t` and starts gearboxd;
#   2. writes an nginx config that includes the shipped gearbox-upstream.conf (socket
#      paths rewritten to the temporary ones; nothing else changed),
#      gearbox-http.conf (server A) and gearbox-fastcgi.conf (server B); `nginx -t`
#      must pass without a single warning; the example gearbox-multihost.conf gets
#      its own `nginx -t`;
#   3. sends real traffic with curl through both servers: GET /hello,
#      GET /sleep?ms=5, POST /echo (body comes back), GET /status (the right model)
#      and, from source address 127.0.0.2, 403 for /status (gearbox-status.conf)
#      but 200 for /hello, a 404; gearboxd's access log shows nginx's $request_id, not the client's; then 200 requests on one client connection and checks, from gearboxd's
#      /status ("connections":{"accepted":N), that nginx reused its upstream
#      connections (far fewer accepted than requests); then wrk, 8 concurrent clients
#      for 2 seconds, GET /sleep?ms=1 and POST /echo: no errors, no non-2xx;
#   4. prefork only: kill -9 of one worker child during wrk through nginx (at most
#      its in-flight request fails, a replacement within 100 ms); then the same
#      snippets without the upstream keepalive lines are checked too (one
#      connection per request), strictly;
#   5. stops gearboxd with SIGTERM (exit 0, socket files removed).
# When run as root, nginx's workers run as nobody and reach the 0660 sockets through
# their group, as in production (gearbox.socket: root:gearbox 0660).
#
# Environment:
#   GEARBOXD=PATH            use this binary instead of building //daemon:gearboxd
#   BAZEL=bazel              the Bazel command; BAZEL_STARTUP_OPTS its startup options
#                            (e.g. --output_base=...)
#   MODELS="prefork ..."     the models to test (default: all three)
#   PROTOCOLS="http fastcgi" the nginx paths to test (default: both)
#   NGINX_TEST_TIMEOUT=S     bound on the whole run (default 300)
# Needs: nginx (Debian nginx-light), curl, wrk, python3. Loopback only.
#
# The checks live in files of their own, sourced here: nginx_server.sh (nginx's
# configs from the snippets, nginx -t, start/stop), nginx_gearboxd.sh (gearboxd's
# config, start, request-id log check, stop), nginx_requests.sh (step 3's
# requests and keep-alive), nginx_load.sh (wrk, and step 4's kill -9).
set -euo pipefail

# Bound the whole run: re-run under timeout(1); the EXIT trap still cleans up.
if [[ -z "${_NGINX_TEST_BOUNDED:-}" ]]; then
  export _NGINX_TEST_BOUNDED=1
  exec timeout -k 10 "${NGINX_TEST_TIMEOUT:-300}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC2034  # used by nginx_server.sh
snippets=$root/packaging/nginx
MODELS=${MODELS:-prefork threadpool async}
PROTOCOLS=${PROTOCOLS:-http fastcgi}

say() { echo "nginx_test: $*"; }
fail() { echo "nginx_test: FAIL: $*" >&2; exit 1; }

# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
# shellcheck source=tests/system/nginx_server.sh
source "$root/tests/system/nginx_server.sh"
# shellcheck source=tests/system/nginx_gearboxd.sh
source "$root/tests/system/nginx_gearboxd.sh"
# shellcheck source=tests/system/nginx_requests.sh
source "$root/tests/system/nginx_requests.sh"
# shellcheck source=tests/system/nginx_load.sh
source "$root/tests/system/nginx_load.sh"
need nginx:nginx-light curl:curl wrk:wrk python3:python3

# --- the binary ------------------------------------------------------------------
find_gearboxd
say "gearboxd: $GEARBOXD ($("$GEARBOXD" -v))"

# --- scratch space and cleanup ---------------------------------------------------
# Short paths: a unix socket path has at most 107 bytes.
work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-nginx.XXXXXX")
# nginx's workers (nobody, when we are root) must reach the sockets inside.
chmod 0755 "$work"
pids=()
# Every process this script started, by PID: TERM, 5 seconds, then KILL.
cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do stop_pid "$pid" TERM 5; done
  if ((rc != 0)); then
    say "logs of the failed run are in $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT

# nginx_server.sh puts user_line in its configs.
# shellcheck disable=SC2034
if [[ $(id -u) -eq 0 ]]; then
  worker_user=nobody
  worker_group=$(id -gn nobody)
  user_line="user $worker_user $worker_group;"
else
  worker_group=""
  user_line=""
fi

# --- one model -------------------------------------------------------------------
# Requests, keep-alive and load through each protocol's server (prefork: a
# worker child killed under load too).
traffic_checks() {  # MODEL GEARBOXD_PID
  local model=$1 proto
  for proto in $PROTOCOLS; do
    functional_checks "$model/$proto" "$proto" "$model"
    keepalive_check "$model/$proto" "$proto"
    load_check "$model/$proto" "$proto" GET
    # prefork too: a child gives up a kept-alive connection only in ways nginx
    # cannot race (see gearbox-upstream.conf), so POSTs must not fail.
    load_check "$model/$proto" "$proto" POST
    if [[ $model == prefork ]]; then
      kill_child_check "$model/$proto" "$proto" "$2"
    fi
  done
}

# The documented prefork recipe: no upstream keep-alive (delete the keepalive*
# lines), so gearboxd never closes a connection nginx might reuse.
nokeepalive_checks() {  # MODEL DIR
  local model=$1 prefix=$2/nginx conf=$2/nginx/conf proto
  say "[$model] nginx without upstream keep-alive (the prefork recipe)"
  sed '/^ *keepalive/d' "$conf/gearbox-upstream.conf" > "$conf/gearbox-upstream-nokeepalive.conf"
  write_nginx_conf "$prefix" "$conf/nginx-nokeepalive.conf" \
    "$conf/gearbox-upstream-nokeepalive.conf" http fastcgi
  nginx_clean_t "$conf/nginx-nokeepalive.conf" "the prefork recipe" "$prefix"
  start_nginx "$prefix" "$conf/nginx-nokeepalive.conf"
  for proto in $PROTOCOLS; do
    functional_checks "$model-nokeepalive/$proto" "$proto" "$model"
    load_check "$model-nokeepalive/$proto" "$proto" GET
    load_check "$model-nokeepalive/$proto" "$proto" POST
  done
  stop_nginx
}

run_model() {
  local model=$1 dir=$work/$1 gpid
  mkdir -p "$dir/nginx/conf" "$dir/nginx/logs" "$dir/nginx/tmp"
  chmod 0755 "$dir"
  say "=== model $model ==="
  write_gearbox_conf "$model" "$dir"
  start_gearboxd "$model" "$dir"  # sets gpid

  # nginx: the shipped snippets; only the socket directory differs.
  shipped_nginx_confs "$model" "$dir"
  start_nginx "$dir/nginx" "$dir/nginx/conf/nginx.conf"
  traffic_checks "$model" "$gpid"
  nginx_errors "$dir/nginx" "$model"
  stop_nginx
  if [[ $model == prefork ]]; then
    nokeepalive_checks "$model" "$dir"
  fi

  check_request_ids "$model" "$dir"
  stop_gearboxd "$model" "$dir" "$gpid"
  say "[$model] ok"
}

for m in $MODELS; do
  run_model "$m"
done
say "PASS (models: $MODELS; protocols: $PROTOCOLS)"
