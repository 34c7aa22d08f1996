#!/usr/bin/env bash
# fleet_test.sh: more than one host. Three gearboxd "hosts" on loopback addresses
# 127.0.0.2, 127.0.0.3 and 127.0.0.4 (never any other address) behind one real
# nginx that uses the shipped packaging/nginx/gearbox-multihost.conf upstream
# (its server lines replaced by the three hosts, with the shipped max_fails and
# fail_timeout), gearbox-http.conf and gearbox-status.conf; and a real Prometheus
# scraping every host's /status?format=openmetrics with the shipped
# packaging/prometheus/gearbox.yml and gearbox-rules.yml.
#
# Load goes through nginx at a fixed rate (tests/system/fleet_load.py: open loop,
# the client never retries, so every retry counted is nginx's). Phases:
#   status    /status through nginx: 403 from 127.0.0.2, served from 127.0.0.1;
#   steady    100 req/s for 20 s; through Prometheus's query API: targets up, the
#             request rate matches what was sent, the 5xx ratio matches the
#             share of /fail (500) sent, p99 from the histogram buckets lies
#             between the /sleep time and the bucket above the client's p99, the
#             busy ratio is in (0, 1]: raw PromQL and the shipped recording rules;
#   rolling   each host reloaded (SIGHUP) into another model, one after the
#             other, under GET+POST load: 0 failed GETs and 0 failed POSTs
#             (FLEET_XFAIL_DRAIN_POST=1 reports POST 502s as XFAIL); Prometheus saw no counter reset, one series per host, no
#             gap and no dip or spike in the rate;
#   kill      kill -9 of one host under GET load: 0 failed, nginx marks it down
#             (error.log) and sends it nothing more; it is restarted;
#   back      the restarted host gets traffic again, 0 failed;
#   stop      SIGSTOP of one host for 6 s under GET+POST load: its kernel still
#             accepts connections, so nginx waits proxy_read_timeout. GETs are
#             retried on another host (0 failed, some delayed); POSTs are not
#             (504, reported: a failed POST may still have run once the host
#             continues);
#   post      a POST in flight on a host that is killed: the client gets 502 and
#             the POST ran nowhere else (the other hosts' slow-request counters
#             from /status and their access logs; a control POST first shows the
#             counter sees a POST that completes).
# The figures (requests, failed, retried per phase) are printed at the end: they
# are the ones in docs/operations.md "More than one host".
#
# Timeouts the test shortens (everything else as shipped): proxy_read_timeout
# 60s -> 2s and proxy_connect_timeout 5s -> 1s in gearbox-http.conf (the stop
# phase would otherwise wait 60 s per stuck request); Prometheus scrapes and
# evaluates every 1 s instead of 15 s (scrape_timeout 1 s), and the recording
# rules' 1m windows become 10s.
#
# Environment: GEARBOXD=PATH (else Bazel builds it; BAZEL, BAZEL_STARTUP_OPTS as
# in nginx_test.sh), FLEET_TEST_TIMEOUT=S bounds the run (default 480),
# FLEET_XFAIL_DRAIN_POST=1 reports a POST 502 across the reloads as XFAIL
# instead of failing (see the rolling phase). Needs nginx, prometheus (Debian prometheus: the server and promtool),
# curl, python3.
# Run it under `flock /tmp/gearbox-heavy.lock` next to other heavy suites.
#
# This file runs the phases; it sources fleet_servers.sh (the hosts, nginx,
# Prometheus: configs, start, kill -9, a host's figures) and fleet_load.sh (the
# load through nginx and reading its results).
set -euo pipefail

if [[ -z "${_FLEET_TEST_BOUNDED:-}" ]]; then
  export _FLEET_TEST_BOUNDED=1
  exec timeout -k 10 "${FLEET_TEST_TIMEOUT:-480}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/tests/system
snippets=$root/packaging/nginx
say() { echo "fleet_test: $*"; }
fail() { echo "fleet_test: FAIL: $*" >&2; exit 1; }

# shellcheck source=tests/system/lib.sh
source "$here/lib.sh"
# shellcheck source=tests/system/fleet_servers.sh
source "$here/fleet_servers.sh"
# shellcheck source=tests/system/fleet_load.sh
source "$here/fleet_load.sh"
need nginx:nginx-light prometheus:prometheus promtool:prometheus curl:curl python3:python3 \
  setsid:util-linux ps:procps awk:mawk
find_gearboxd
say "gearboxd: $GEARBOXD ($("$GEARBOXD" -v))"

work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-fleet.XXXXXX")
chmod 0755 "$work"
pids=()      # nginx, prometheus, background loads
hostpid=()   # per host: gearboxd's pid, which is also its process group
cleanup() {
  local rc=$?
  for pg in "${hostpid[@]}"; do [[ -n "$pg" ]] && stop_group "$pg" 10; done
  for pid in "${pids[@]}"; do stop_pid "$pid" TERM 5; done
  if ((rc != 0)); then say "logs of the failed run are in $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT

now() { date +%s.%N; }

# --- the hosts ---------------------------------------------------------------------
addr=(127.0.0.2 127.0.0.3 127.0.0.4)
model=(threadpool async prefork)   # the rolling phase moves each to next_model
next_model=(async prefork threadpool)
port=()
for i in 0 1 2; do port[i]=$(free_port "${addr[i]}"); done
host() { echo "${addr[$1]}:${port[$1]}"; }

for i in 0 1 2; do
  write_host_conf "$i" "${model[i]}"
  start_host "$i"
  say "host $i: $(host "$i") ${model[i]} (pid ${hostpid[i]})"
done

# --- nginx and Prometheus --------------------------------------------------------------
start_nginx
start_prometheus

# --- load: the figures table, a line per phase (fleet_load.sh's figure) -------------------
figures=$work/figures.txt
: > "$figures"

# --- status: off the public path --------------------------------------------------------
say "=== status: /status through nginx from 127.0.0.1 and 127.0.0.2 ==="
code() { curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$@"; }
[[ $(code "$base/status") == 200 ]] || fail "/status from 127.0.0.1"
[[ $(code "$base/status?format=openmetrics") == 200 ]] || fail "/status?format=openmetrics from 127.0.0.1"
for q in "" "?format=openmetrics" "?full"; do
  c=$(code --interface 127.0.0.2 "$base/status$q")
  [[ "$c" == 403 ]] || fail "/status$q from 127.0.0.2 answered $c, want 403"
done
[[ $(code --interface 127.0.0.2 "$base/hello") == 200 ]] || fail "/hello from 127.0.0.2"
say "  from 127.0.0.1: 200; from 127.0.0.2: 403 (/status, ?format=openmetrics, ?full), /hello 200"

# --- steady: Prometheus against a known load ----------------------------------------------
say "=== steady: 100 req/s for 20 s (GET /sleep?ms=5 x9, GET /fail x1) ==="
t0=$(now)
load steady 100 20 'GET /sleep?ms=5 9' 'GET /fail 1'
r=$work/load-steady.json
# The /fail answers are the only failures: 500, as sent.
[[ $(json "$r" "sum(1 for f in d['failures'] if f['path'] != '/fail' or f['status'] != 500)") == 0 ]] ||
  fail "steady: requests other than /fail failed: $(json "$r" "[f for f in d['failures'] if f['path'] != '/fail'][:5]")"
[[ $(json "$r" 'd["statuses"].get("500", 0)') == 200 ]] || fail "steady: want 200 x 500 from /fail: $(json "$r" 'd["statuses"]')"
client_p99=$(json "$r" 'd["latency_p99_s"]')
t_query=$(python3 -c "print($t0 + 19)")
prom_after "$(now)"
python3 "$here/fleet_prom.py" "$purl" steady "$t_query" 100 3 0.1 5 "$client_p99" ||
  fail "steady: Prometheus's figures do not match the load"
printf '%-8s %8s %7s %8s  %s\n' phase requests failed retried notes > "$figures"
figure steady "the 200 failed are the /fail 500s sent on purpose"

# --- rolling: reload every host into another model under load -------------------------
say "=== rolling: each host reloaded into another model, 100 req/s for 30 s (GET x4, POST /echo x1) ==="
t0=$(now)
load rolling 100 30 'GET /sleep?ms=5 4' 'POST /echo 1' &
lpid=$!
pids+=("$lpid")
at=10
for i in 0 1 2; do
  load_at rolling "$at"
  at=$((at + 4))
  before=$(om "$i" "gearbox_requests_total ")
  sed -i "s/^model = \"[a-z]*\"/model = \"${next_model[i]}\"/" "$work/h$i/gearbox.toml"
  kill -HUP "${hostpid[i]}"
  wait_for "[[ \$(status_json $i generation) == 2 && \$(status_json $i model) == ${next_model[i]} ]]" 10 ||
    fail "host $i did not reload into ${next_model[i]}"
  after=$(om "$i" "gearbox_requests_total ")
  say "  host $i: ${model[i]} -> ${next_model[i]}; gearbox_requests_total $before before the reload, $after after"
  ((after > before)) || fail "host $i: the counter went from $before to $after across the reload"
  model[i]=${next_model[i]}
done
wait "$lpid" || fail "rolling: the load failed"
r=$work/load-rolling.json
get_failed=$(json "$r" "sum(1 for f in d['failures'] if f['method'] == 'GET')")
post_failed=$(json "$r" "sum(1 for f in d['failures'] if f['method'] == 'POST')")
((get_failed == 0)) || fail "rolling: GETs failed: $(json "$r" "[f for f in d['failures'] if f['method'] == 'GET'][:5]")"
[[ $(json "$r" "[f for f in d['failures'] if f['status'] != 502][:5]") == "[]" ]] ||
  fail "rolling: failures other than 502: $(json "$r" 'd["failures"][:5]')"
# A generation that starts draining keeps its idle kept-alive connections for
# [limits] drain_idle_timeout (1s) and answers a request that comes on one
# with Connection: close. When it closed them at once, nginx could be sending a
# request on one just then ("recv() failed (104: Connection reset by peer)"):
# nginx retried a GET, and a POST got 502 (5 and 7 of 4,000 in two runs).
if ((post_failed > 0)); then
  [[ "${FLEET_XFAIL_DRAIN_POST:-0}" == 1 ]] ||
    fail "rolling: $post_failed POSTs got 502 across the reloads: $(json "$r" 'd["failures"][:5]')"
  say "  XFAIL: $post_failed POSTs got 502 across the reloads (FLEET_XFAIL_DRAIN_POST=1)"
fi
prom_after "$(now)"
python3 "$here/fleet_prom.py" "$purl" reload-window "$(python3 -c "print($t0 + 0.5)")" \
  "$(python3 -c "print($t0 + 29.5)")" 100 3 || fail "rolling: Prometheus saw the reloads"
figure rolling "3 reloads, each into another model; $get_failed GETs and $post_failed POSTs failed"

# --- kill: one host dies ------------------------------------------------------------------
say "=== kill: kill -9 of host 1 ($(host 1)) 3 s into 100 req/s for 12 s (GET) ==="
load kill 100 12 'GET /sleep?ms=5' &
lpid=$!
pids+=("$lpid")
load_at kill 3
t_kill=$(now)
kill_host 1
wait "$lpid" || fail "kill: the load failed"
r=$work/load-kill.json
[[ $(json "$r" 'd["failed"]') == 0 ]] || fail "kill: GETs failed: $(json "$r" 'd["failures"][:5]')"
((  $(json "$r" 'd["retried"]') >= 1 )) || fail "kill: nginx retried nothing: was the host ever tried?"
disabled=$(errors_for "upstream server temporarily disabled" "$(host 1)")
((disabled >= 1)) || fail "kill: nginx never marked $(host 1) down (error.log: $(tail -3 "$ngx/logs/error.log"))"
# Seconds into the load: the kill, and the end of the host's rest (fail_timeout
# after it was marked down, at the kill or just after).
kill_at=$(json "$r" "round($t_kill - d['start_unix'], 2)")
rest=$(sed -n 's/.*fail_timeout=\([0-9]*\)s.*/\1/p' <<<"$params")
tried=$(tried_host kill "$(host 1)" 0)
late=$(json "$r" "len({x['i'] for x in d['retries'] + d['failures'] if '$(host 1)' in x['upstream'] and $kill_at + 1 <= x['t'] < $kill_at + $rest - 0.5})")
((late == 0)) || fail "kill: nginx tried the dead host $late times during its ${rest}s rest"
say "  killed ${kill_at} s into the load; nginx tried the dead host for $tried requests (each then"
say "  went to another host), none from 1 s after the kill to the end of its ${rest}s rest (fail_timeout);"
say "  error.log: 'upstream server temporarily disabled' x$disabled for $(host 1)"
figure kill "0 failed GETs; nginx retried them on the others, marked the host down"
start_host 1
say "  host 1 restarted (${model[1]}, pid ${hostpid[1]})"

# --- back: the restarted host gets traffic again -------------------------------------------
say "=== back: 100 req/s for 16 s (GET) after the restart ==="
load back 100 16 'GET /sleep?ms=5'
r=$work/load-back.json
[[ $(json "$r" 'd["failed"]') == 0 ]] || fail "back: requests failed: $(json "$r" 'd["failures"][:5]')"
share=$(json "$r" "round($(served_by back "$(host 1)" 11) / max(1, sum(sum(c.values()) for s, c in d['timeline'].items() if int(s) >= 11)), 3)")
say "  host 1 served $(served_by back "$(host 1)" 0) requests, a share of $share in the last 5 s"
python3 -c "import sys; sys.exit(0 if $share >= 0.1 else 1)" || fail "back: the restarted host gets no traffic ($share)"
figure back "the restarted host served a share of $share in the last 5 s"

# --- stop: a host that stops answering -------------------------------------------------------
say "=== stop: SIGSTOP of host 2 ($(host 2)) for 6 s, 100 req/s for 14 s (GET, POST /echo) ==="
load stop 100 14 'GET /sleep?ms=5' 'POST /echo' &
lpid=$!
pids+=("$lpid")
load_at stop 3
kill -STOP -- "-${hostpid[2]}"
load_at stop 9
kill -CONT -- "-${hostpid[2]}"
wait "$lpid" || fail "stop: the load failed"
r=$work/load-stop.json
get_failed=$(json "$r" "sum(1 for f in d['failures'] if f['method'] == 'GET')")
post_failed=$(json "$r" "sum(1 for f in d['failures'] if f['method'] == 'POST')")
odd=$(json "$r" "[f for f in d['failures'] if (f['method'], f['status'], f['upstream']) != ('POST', 504, '$(host 2)')][:5]")
delayed=$(json "$r" "sum(1 for f in d['retries'] if f['latency'] >= 2)")
timeouts=$(errors_for "upstream timed out" "$(host 2)")
disabled=$(errors_for "upstream server temporarily disabled" "$(host 2)")
say "  $get_failed GETs failed; $post_failed POSTs failed; $delayed requests retried after waiting >= 2 s"
say "  nginx: 'upstream timed out' x$timeouts, 'temporarily disabled' x$disabled for $(host 2)"
((get_failed == 0)) || fail "stop: GETs failed: $(json "$r" "[f for f in d['failures'] if f['method'] == 'GET'][:5]")"
[[ "$odd" == "[]" ]] || fail "stop: failures other than a 504 for a POST to the stopped host: $odd"
((timeouts >= 1)) || fail "stop: nginx never timed out on the stopped host: was it tried?"
# Did the POSTs that got 504 run anyway, once the host continued? Its access log
# has their nginx request ids if so.
ran=0
for id in $(json "$r" "' '.join(f['request_id'] for f in d['failures'])"); do
  grep -q "request_id=\"\?$id" "$work/h2/gearboxd.log" && ran=$((ran + 1))
done
say "  of the $post_failed POSTs answered 504, $ran ran on host 2 after SIGCONT (its access log)"
figure stop "GETs retried after proxy_read_timeout (2s): $delayed; $post_failed POSTs -> 504, $ran of them ran anyway"

# --- post: a POST in flight on a host that dies --------------------------------------------
# 1.5 s: above the le="1" bucket, below the test's proxy_read_timeout (2s).
say "=== post: POST /sleep?ms=1500 through nginx; its host is killed while it runs ==="
wait_for "python3 $here/fleet_prom.py $purl wait-up 3 1" 20 || fail "post: not every host is up again"
slow_before=()
for i in 0 1 2; do slow_before[i]=$(slow_count "$i"); done
# Control: a POST that completes is counted by exactly one host.
c=$(code -X POST --data-binary control --max-time 10 "$base/sleep?ms=1500")
[[ "$c" == 200 ]] || fail "post: the control POST answered $c"
grown=0
for i in 0 1 2; do
  s=$(slow_count "$i")
  grown=$((grown + s - slow_before[i]))
  slow_before[i]=$s
done
((grown == 1)) || fail "post: the control POST counted $grown times, want 1"
say "  control: a POST that completes is counted by exactly one host's slow-request counter"
curl -sS -o /dev/null -D "$work/post.headers" -w '%{http_code}' --max-time 10 -X POST \
  --data-binary "in flight" "$base/sleep?ms=1500" > "$work/post.code" 2> "$work/post.err" &
cpid=$!
# The host running it: "inflight" counts the /status request itself, so 2 means
# one more; twice in a row, so that a scrape arriving at that moment is not it.
# One Python process polls all three (a process per poll would be too slow).
victim=$(PYTHONPATH="$root/tests/support" python3 - "$(host 0)" "$(host 1)" "$(host 2)" <<'PY'
import json, sys, urllib.request
from waiting import wait_until
hosts = sys.argv[1:]
seen = [0] * len(hosts)
def running_it():
    for i, h in enumerate(hosts):
        try:
            with urllib.request.urlopen(f"http://{h}/status", timeout=1) as r:
                inflight = json.load(r)["inflight"]
        except OSError:
            inflight = 0
        seen[i] = seen[i] + 1 if inflight >= 2 else 0
        if seen[i] >= 2:
            return str(i)
found = wait_until(running_it, timeout=1.4, every=0.02)
if found:
    print(found)
PY
)
[[ -n "$victim" ]] || fail "post: no host shows the POST in flight"
kill_host "$victim"
wait "$cpid" || true
c=$(cat "$work/post.code")
upstream=$(sed -n 's/^X-Upstream: *\([^\r]*\).*/\1/ip' "$work/post.headers")
id=$(sed -n 's/^X-Request-Id: *\([0-9a-f]*\).*/\1/ip' "$work/post.headers")
say "  host $victim ($(host "$victim")) was running it and was killed; the client got $c, X-Upstream: $upstream"
[[ "$c" == 502 ]] || fail "post: the client got $c, want 502 (the failure visible, not retried)"
[[ "$upstream" == "$(host "$victim")" ]] || fail "post: nginx tried '$upstream', want only $(host "$victim")"
# A duplicate sent elsewhere would have been sent before the client's 502:
# a POST of the same length sent to each other host now, once answered,
# proves that such a duplicate would have completed and been counted there.
probes=()
for i in 0 1 2; do
  ((i == victim)) && continue
  curl -sS -o /dev/null --max-time 10 -X POST --data-binary probe \
    "http://$(host "$i")/sleep?ms=1500" > /dev/null 2>&1 &
  probes+=($!)
done
for p in "${probes[@]}"; do wait "$p" || fail "post: a probe POST failed"; done
for i in 0 1 2; do
  ((i == victim)) && continue
  s=$(slow_count "$i")
  ((s == slow_before[i] + 1)) || fail "post: host $i's slow-request count went ${slow_before[i]} -> $s with 1 probe: the POST ran there"
  grep -q "request_id=\"\?$id" "$work/h$i/gearboxd.log" && fail "post: host $i logged request $id"
done
say "  no other host ran it: slow-request counters grew by the probe alone, request id $id in no access log"
printf '%-8s %8s %7s %8s  %s\n' post 1 1 0 "502 to the client; run on no other host" >> "$figures"
start_host "$victim"
python3 "$here/fleet_prom.py" "$purl" wait-up 3 20 || fail "post: the restarted host is not scraped"

nerr=$(grep -c '\[error\]' "$ngx/logs/error.log" || true)
say "nginx error.log: $nerr [error] lines, by message:"
grep -E '\[(error|warn)\]' "$ngx/logs/error.log" |
  sed -E 's/^.*\] [0-9]+#[0-9]+: (\*[0-9]+ )?//; s/ while .*//; s/, client: .*//' | sort | uniq -c | sed 's/^/    /'
say "figures (requests through nginx at a fixed rate; failed = answered non-2xx or not at all; retried = nginx tried more than one host):"
sed 's/^/    /' "$figures"
say "PASS ($SECONDS s)"
