#!/usr/bin/env bash
# profile.sh: syscalls, context switches and CPU per request of a running gearboxd.
#
#   tests/bench/profile.sh PID URL [CONNECTIONS] [SECONDS]
#   e.g. tests/bench/profile.sh 1234 'http://127.0.0.1:8080/sleep?ms=1' 64 3
#
# Runs `wrk -t1 -cCONNECTIONS` against URL (loopback only) and, in the middle of it,
# `perf stat` on PID and its children (prefork) for SECONDS: raw syscalls, context
# switches and CPU time; the requests served in that window come from gearboxd's
# /status counter (same host:port as URL). Prints the totals per request. Falls
# back to `strace -c -f` (much slower, distorts timing) when perf is missing.
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"
pid=${1:?PID}
url=${2:?URL}
conns=${3:-16}
secs=${4:-3}
[[ $url =~ ^http://(127\.0\.0\.1|localhost)(:[0-9]+)?/ ]] || { echo "profile.sh: loopback URLs only" >&2; exit 2; }
hostport=${url#http://}
hostport=${hostport%%/*}
requests() {
  curl -s --max-time 2 "http://$hostport/status" | sed -n 's/^{[^}]*"requests":\([0-9]*\).*/\1/p'
}
pids=$pid
# Each task's children file is one line without a newline: read them as words.
for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do pids+=",$c"; done

wrk -t1 -c"$conns" -d"$((secs + 3))"s "$url" >/dev/null 2>&1 &
wrk_pid=$!
trap 'kill "$wrk_pid" 2>/dev/null || true' EXIT
# The window starts once wrk's load flows: every connection served twice.
start=$(requests)
wait_for "(( \$(requests) >= ${start:-0} + 2 * $conns ))" 10 ||
  { echo "profile.sh: wrk's requests do not reach $url" >&2; exit 1; }
before=$(requests)
if command -v perf >/dev/null; then
  out=$(timeout -s INT "$secs" perf stat -x, -e raw_syscalls:sys_enter,context-switches,task-clock \
    -p "$pids" 2>&1 || true)
  after=$(requests)
  n=$((after - before))
  echo "requests in window: $n (pids $pids, wrk -t1 -c$conns $url)"
  awk -F, -v n="$n" '$3 ~ /sys_enter|context-switches|task-clock/ && n > 0 {
      unit = ($3 == "task-clock") ? " us CPU" : ""
      v = ($3 == "task-clock") ? $1 * 1000 / n : $1 / n
      printf "  %-28s %12s total  %8.2f%s per request\n", $3, $1, v, unit }' <<<"$out"
else
  timeout -s INT "$secs" strace -c -f -p "$pid" -o /tmp/profile-strace.$$ 2>/dev/null || true
  after=$(requests)
  echo "requests in window: $((after - before)) (strace slows the server: counts only)"
  head -25 /tmp/profile-strace.$$
  rm -f /tmp/profile-strace.$$
fi
wait "$wrk_pid" 2>/dev/null || true
trap - EXIT
