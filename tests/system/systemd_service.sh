# shellcheck shell=bash
# systemd_driver.sh's view of the running gearbox.service (sourced, not run;
# systemd_test.sh copies it next to the driver in the container): systemctl
# show, /status straight from the socket (figures, model, generation),
# reloading and waiting until the new generation serves and the old ones have
# drained, and what the journal says (a system call killed by the filter, the
# stats line's GEARBOX_* fields).
#
# Expects fail and wait_for (the driver's, and lib.sh's).

show() { systemctl show -P "$2" "$1"; }
# /status of the generation serving new connections: straight to the socket,
# on a new connection (only the serving generation accepts). Through nginx a
# cached connection may reach a generation still draining after a reload.
serving_status() { curl -sS --max-time 5 --unix-socket /run/gearbox/http.sock http://localhost/status; }
# A figure of /status (requests, inflight), straight from the socket.
status_figure() {
  serving_status |
    python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}
# load_flows N: waits until gearboxd (the process serving now) has answered N
# more requests: a load started in the background reaches it.
load_flows() {
  local from
  from=$(status_figure requests) || from=0
  wait_for "(( \$(status_figure requests) >= $from + $1 ))" 10 ||
    fail "the load does not reach gearboxd ($1 requests in 10 s)"
}
# The JSON value of "model" in /status.
status_model() { curl -sS --max-time 5 "$1/status" | sed -n 's/.*"model":"\([a-z]*\)".*/\1/p'; }
# ... of the generation serving new connections.
serving_model() { serving_status | sed -n 's/.*"model":"\([a-z]*\)".*/\1/p'; }
# Every generation before the one serving has drained. Until then (at most
# [limits] drain_idle_timeout, 1s, for an idle connection) nginx may send a
# request on a connection it already had open and an old config answers it.
previous_drained() {
  local gen=$1 g drained
  drained=$(journalctl -u gearbox -o cat | sed -n 's/.*event=generation_drained gen=\([0-9]*\)$/\1/p')
  for ((g = 1; g < gen; g++)); do grep -qx "$g" <<<"$drained" || return 1; done
}
# The number of the generation serving new connections (see serving_model).
serving_generation() { serving_status | sed -n 's/.*"generation":\([0-9]*\).*/\1/p'; }
# reload_gearbox WHAT: systemctl reload, then wait until a newer generation
# serves. ExecReload= ends once SIGHUP is sent; when systemd reaps it before
# the daemon's RELOADING=1 arrives, systemctl returns while the old generation
# still accepts, and the next request reaches the old config.
reload_gearbox() {
  local from
  from=$(serving_generation)
  [[ -n "$from" ]] || fail "no generation in /status before reload ($1)"
  systemctl reload gearbox || fail "systemctl reload gearbox ($1)"
  wait_for "g=\$(serving_generation) && (( \${g:-0} > $from ))" 10 ||
    fail "no generation after $from serves after reload ($1)"
  # The new one can answer before the old one is told to stop accepting:
  # wait for that too (the daemon logs it just before READY=1).
  wait_for "told_to_stop $from" 10 ||
    fail "generation $from was not told to stop accepting ($1)"
}
# Generation $1 of the running service was told to stop accepting (numbers
# start again at 1 after a restart: this invocation's journal only).
told_to_stop() {
  local id
  id=$(systemctl show -p InvocationID --value gearbox)
  journalctl -u gearbox -o cat _SYSTEMD_INVOCATION_ID="$id" |
    grep "event=generation_draining gen=$1 " >/dev/null
}
wait_previous_drained() {
  local gen
  gen=$(serving_generation)
  [[ -n "$gen" ]] || return 1
  wait_for "previous_drained $gen" 10
}

# No gearboxd process (the supervisor: systemd's status=31/SYS; a prefork child:
# the supervisor's signal=Bad system call) was killed by the filter.
check_no_sigsys() {
  local hits
  hits=$(journalctl --no-pager -u gearbox.service | grep -E 'status=31/SYS|Bad system call' || true)
  [[ -z "$hits" ]] || { echo "$hits"; fail "gearboxd made a system call outside its SystemCallFilter= ($1)"; }
}
# The HTTP status of PATH, straight from the socket.
unix_code() { curl -sS --max-time 5 -o /dev/null -w '%{http_code}' --unix-socket /run/gearbox/http.sock "http://localhost$1"; }
# The journal's last GEARBOX_REQUESTS, and its GEARBOX_RPS.
journal_figures() {
  journalctl --no-pager -u gearbox.service -o json -n 200 |
    python3 -c 'import json,sys
last = None
for line in sys.stdin:
    e = json.loads(line)
    if "GEARBOX_REQUESTS" in e: last = e
print(last["GEARBOX_REQUESTS"] if last else "none", last.get("GEARBOX_RPS") if last else "")'
}
