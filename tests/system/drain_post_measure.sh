#!/usr/bin/env bash
# drain_post_measure.sh: a measurement, not a pass/fail test. How many POSTs get
# 502 through nginx (upstream keepalive, the shipped gearbox-upstream.conf and
# gearbox-http.conf) while gearboxd is reloaded (SIGHUP) again and again, with
# a given [limits] drain_idle_timeout.
#
#   drain_post_measure.sh DRAIN_IDLE_TIMEOUT LABEL OUT.json
#       e.g. drain_post_measure.sh 0s A-1 /tmp/a1.json   (old: close at once)
#            drain_post_measure.sh 1s B-1 /tmp/b1.json   (the default)
#
# One gearboxd on a free 127.0.0.1 port (its own process group), one nginx on
# another; POST /echo at RATE req/s (default 200) for DURATION s (default 25)
# with a unique body each (fleet_load.py: open loop, the client never retries),
# GET /hello at GET_RATE (default 20) alongside; meanwhile RELOADS (default 36)
# SIGHUPs every INTERVAL s (default 0.7), the config's model rotated
# prefork -> threadpool -> async before each. Prints one line and writes OUT.json:
# requests, 502s, other non-2xx, echo mismatches, 404s, nginx error.log resets
# and premature closes, the reload sequence's wall time.
# Environment: GEARBOXD=PATH (else Bazel builds it, tests/system/lib.sh).
# Bounded by timeout 180 s. Run it under `flock /tmp/gearbox-heavy.lock`.
set -euo pipefail

if [[ -z "${_DRAIN_MEASURE_BOUNDED:-}" ]]; then
  export _DRAIN_MEASURE_BOUNDED=1
  exec timeout -k 10 180 bash "$0" "$@"
fi

drain=${1:?drain_idle_timeout, e.g. 0s or 1s}
label=${2:?label}
out=${3:?output json}
rate=${RATE:-200}
duration=${DURATION:-25}
get_rate=${GET_RATE:-20}
reloads=${RELOADS:-36}
interval=${INTERVAL:-0.7}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/tests/system
snippets=$root/packaging/nginx
say() { echo "drain_measure[$label]: $*"; }
fail() { echo "drain_measure[$label]: FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/system/lib.sh
source "$here/lib.sh"
need nginx:nginx-light curl:curl python3:python3 setsid:util-linux
find_gearboxd

work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-drain.XXXXXX")
chmod 0755 "$work"
gpid="" npid="" pids=()
cleanup() {
  local rc=$?
  # gearboxd's own process group (prefork children), then the rest by PID.
  [[ -n "$gpid" ]] && stop_group "$gpid" 10
  for pid in "${pids[@]}" $npid; do stop_pid "$pid" TERM 5; done
  if ((rc != 0)); then say "logs in $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT

# --- gearboxd ------------------------------------------------------------------------
gport=$(free_port)
conf=$work/gearbox.toml
cat > "$conf" <<EOF
# drain_post_measure.sh ($label)
[server]
model = "prefork"
graceful_timeout = "10s"

[[listen]]
name = "http"
protocol = "http"
address = "127.0.0.1:$gport"

[threadpool]
threads = 16
queue = 256

[prefork]
workers = 8

[async]
loops = 1

[limits]
idle_timeout = "75s"
drain_idle_timeout = "$drain"

[[route]]
path = "/hello"
handler = "text"
body = "hello world\n"

[[route]]
path = "/echo"
handler = "echo"

[[route]]
path = "/status"
handler = "status"
EOF
check=$("$GEARBOXD" -t -c "$conf" 2>&1) || { echo "$check" >&2; fail "gearboxd -t rejected the config"; }
setsid "$GEARBOXD" -c "$conf" > "$work/gearboxd.log" 2>&1 &
gpid=$!
gbase=http://127.0.0.1:$gport
wait_for "curl -sf --max-time 1 $gbase/hello" 15 || { tail -20 "$work/gearboxd.log" >&2; fail "gearboxd did not start"; }
generation() {
  curl -sS --max-time 2 "$gbase/status" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["generation"])'
}

# --- nginx: the shipped snippets, the server line pointed at the TCP port -----------
ngx=$work/nginx
mkdir -p "$ngx/conf" "$ngx/logs" "$ngx/tmp"
sed "s|^ *server unix:/run/gearbox/http.sock |    server 127.0.0.1:$gport |" \
  "$snippets/gearbox-upstream.conf" > "$ngx/conf/upstream.conf"
grep -q "server 127.0.0.1:$gport max_fails=0;" "$ngx/conf/upstream.conf" || fail "server line not replaced"
nport=$(free_port)
cat > "$ngx/conf/nginx.conf" <<EOF
worker_processes 2;
pid $ngx/nginx.pid;
error_log $ngx/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $ngx/tmp/client_body;
  proxy_temp_path $ngx/tmp/proxy;
  fastcgi_temp_path $ngx/tmp/fastcgi;
  uwsgi_temp_path $ngx/tmp/uwsgi;
  scgi_temp_path $ngx/tmp/scgi;
  include $ngx/conf/upstream.conf;
  server {
    listen 127.0.0.1:$nport;
    location / {
      include $snippets/gearbox-http.conf;
    }
  }
}
EOF
nginx -p "$ngx" -e "$ngx/logs/error.log" -c "$ngx/conf/nginx.conf" -t > "$ngx/t.log" 2>&1 ||
  { cat "$ngx/t.log" >&2; fail "nginx -t"; }
nginx -p "$ngx" -e "$ngx/logs/error.log" -c "$ngx/conf/nginx.conf" -g 'daemon off;' > "$ngx/logs/stdout.log" 2>&1 &
npid=$!
wait_for "curl -sf --max-time 1 http://127.0.0.1:$nport/hello" 10 || { cat "$ngx/logs/error.log" >&2; fail "nginx did not start"; }
# Warm nginx's keepalive cache, then start from a clean error.log.
for _ in $(seq 20); do curl -s --max-time 2 -o /dev/null "http://127.0.0.1:$nport/hello"; done
: > "$ngx/logs/error.log"
say "gearboxd $gbase (pgid $gpid), nginx 127.0.0.1:$nport, drain_idle_timeout=$drain"

# --- load and reloads ----------------------------------------------------------------
python3 "$here/fleet_load.py" --port "$nport" --label "$label-post" --rate "$rate" \
  --duration "$duration" --request 'POST /echo 1' --out "$work/post.json" \
  --progress "$work/post.at" > "$work/post.out" &
pids+=($!)
python3 "$here/fleet_load.py" --port "$nport" --label "$label-get" --rate "$get_rate" \
  --threads 8 --duration "$duration" --request 'GET /hello 1' --out "$work/get.json" \
  --progress "$work/get.at" > "$work/get.out" &
pids+=($!)
# The reloads start once both loads send.
wait_for "[[ -s '$work/post.at' && -s '$work/get.at' ]]" 10 || fail "the loads did not start"
models=(threadpool async prefork)
gen0=$(generation)
t_start=$(date +%s.%N)
for ((k = 0; k < reloads; k++)); do
  sed -i "s/^model = \"[a-z]*\"/model = \"${models[k % 3]}\"/" "$conf"
  kill -HUP "$gpid"
  # The reloads' rate is the thing measured (every INTERVAL s under load).
  sleep "$interval"
done
t_sent=$(date +%s.%N)
want=$((gen0 + reloads))
wait_for "[[ \$(generation) -ge $want ]]" 20 || say "generation $(generation || echo ?) after the reloads, want $want"
t_done=$(date +%s.%N)
gen_final=$(generation || echo 0)
for pid in "${pids[@]}"; do wait "$pid" || fail "a load failed: $(cat "$work"/*.out)"; done
pids=()
# The last drains finish and log: every generation before the final one.
wait_for "(( \$(grep -c 'event=generation_drained' '$work/gearboxd.log') >= $gen_final - $gen0 ))" 30 ||
  say "$(grep -c 'event=generation_drained' "$work/gearboxd.log") generations drained, want $((gen_final - gen0))"
errlog=$ngx/logs/error.log
resets=$(grep -c 'Connection reset by peer' "$errlog" || true)
premature=$(grep -c 'upstream prematurely closed' "$errlog" || true)
errlines=$(grep -c '\[error\]' "$errlog" || true)
cp "$errlog" "$out.nginx-error.log"
python3 - "$work/post.json" "$work/get.json" "$out" "$label" "$drain" "$resets" "$premature" \
  "$errlines" "$t_start" "$t_sent" "$t_done" "$gen0" "$gen_final" "$reloads" <<'EOF'
import json, sys
post, get = (json.load(open(p)) for p in sys.argv[1:3])
(out, label, drain, resets, premature, errlines, t0, t_sent, t_done, g0, g1,
 reloads) = sys.argv[3:]
def non2xx(d):
    return sum(n for s, n in d["statuses"].items() if not s.startswith("2"))
r = {
    "label": label, "drain_idle_timeout": drain,
    "post_requests": post["requests"], "post_502": post["statuses"].get("502", 0),
    "post_other_non2xx": non2xx(post) - post["statuses"].get("502", 0),
    "post_404": post["statuses"].get("404", 0),
    "post_echo_mismatch": sum(1 for f in post["failures"] if f["error"].startswith("echo returned")),
    "post_statuses": post["statuses"],
    "get_requests": get["requests"], "get_non2xx": non2xx(get),
    "get_404": get["statuses"].get("404", 0), "get_statuses": get["statuses"],
    "nginx_resets": int(resets), "nginx_premature": int(premature),
    "nginx_error_lines": int(errlines),
    "reloads": int(reloads), "generation_before": int(g0), "generation_after": int(g1),
    "reload_send_s": round(float(t_sent) - float(t0), 2),
    "reload_done_s": round(float(t_done) - float(t0), 2),
    "post_p99_ms": round(post["latency_p99_s"] * 1000, 1),
    "post_max_ms": round(post["latency_max_s"] * 1000),
    "failures": post["failures"][:20] + get["failures"][:20],
}
json.dump(r, open(out, "w"), indent=1)
print(f"{label} drain={drain}: POST {r['post_requests']} 502={r['post_502']} "
      f"other_non2xx={r['post_other_non2xx']} echo_mismatch={r['post_echo_mismatch']} "
      f"404={r['post_404']} | GET {r['get_requests']} non2xx={r['get_non2xx']} "
      f"404={r['get_404']} | nginx resets={r['nginx_resets']} premature={r['nginx_premature']} "
      f"errors={r['nginx_error_lines']} | reloads {r['reloads']} gen {g0}->{g1} "
      f"sent in {r['reload_send_s']}s, done {r['reload_done_s']}s | POST p99 "
      f"{r['post_p99_ms']}ms max {r['post_max_ms']}ms")
EOF
