# shellcheck shell=bash
# nginx_gearboxd.sh: the gearboxd behind nginx in nginx_test.sh (sourced, not
# run): its config (an HTTP and a FastCGI listener on unix sockets in the
# model's directory, access log on), checked with `gearboxd -t`; its start
# (sockets in nginx's workers' group when run as root); the check that its
# access log has nginx's request ids, never the client's; its stop by SIGTERM
# (exit 0, socket files removed).
#
# Expects say/fail, tests/system/lib.sh sourced (wait_for), $GEARBOXD, and the
# driver's $worker_group and pids (the gearboxd it starts is added there, for
# the driver's cleanup).
# shellcheck disable=SC2154  # $worker_group is the driver's

write_gearbox_conf() {  # MODEL DIR
  local model=$1 dir=$2
  cat > "$dir/gearbox.toml" <<EOT
[server]
model = "$model"
graceful_timeout = "5s"

[[listen]]
name = "http"
protocol = "http"
address = "unix:$dir/http.sock"

[[listen]]
name = "fastcgi"
protocol = "fastcgi"
address = "unix:$dir/fastcgi.sock"

[prefork]
workers = 4

[threadpool]
threads = 8

[async]
loops = 2

[limits]
idle_timeout = "75s"
max_header_bytes = 131072  # the ~60 KB head check below

[log]
access = true   # one line per request, with request_id= (X-Request-Id)

[metrics]
interval = "1s"
EOT
  say "gearboxd -t -c $dir/gearbox.toml"
  "$GEARBOXD" -t -c "$dir/gearbox.toml" || fail "gearboxd -t rejected the test config"
}

# Starts gearboxd on DIR's config and waits until it answers on its HTTP socket.
# Sets gpid (the caller's, when it has a local one).
start_gearboxd() {  # MODEL DIR
  local model=$1 dir=$2
  say "starting gearboxd ($model)"
  "$GEARBOXD" -c "$dir/gearbox.toml" > "$dir/gearboxd.log" 2>&1 &
  gpid=$!
  pids+=("$gpid")
  if ! wait_for "curl -sf --max-time 1 --unix-socket '$dir/http.sock' http://gearbox/hello" 15; then
    cat "$dir/gearboxd.log" >&2
    fail "gearboxd ($model) did not answer on $dir/http.sock"
  fi
  [[ -S "$dir/fastcgi.sock" ]] || fail "no FastCGI socket at $dir/fastcgi.sock"
  if [[ -n "$worker_group" ]]; then
    # Production: the socket unit makes the sockets root:gearbox 0660 and nginx's
    # user is in group gearbox. Here: nginx's workers run as nobody, sockets get
    # nobody's group, and gearboxd's default unix_mode 0660 must let them in.
    chgrp "$worker_group" "$dir/http.sock" "$dir/fastcgi.sock"
  fi
  say "sockets: $(stat -c '%A %U:%G %n' "$dir/http.sock" "$dir/fastcgi.sock" | tr '\n' ' ')"
}

# The snippets send nginx's $request_id (32 hex digits), over both protocols,
# replacing whatever the client sent.
check_request_ids() {  # MODEL DIR
  local model=$1 dir=$2
  say "[$model] gearboxd logged nginx's request ids, never the client's"
  grep -q 'request_id=from-client' "$dir/gearboxd.log" && fail "[$model] the client's X-Request-Id got through"
  grep -Eq 'event=access request_id=[0-9a-f]{32} ' "$dir/gearboxd.log" ||
    fail "[$model] no nginx request id in gearboxd's access log"
}

stop_gearboxd() {  # MODEL DIR GEARBOXD_PID
  local model=$1 dir=$2 gpid=$3
  say "[$model] stopping gearboxd (SIGTERM)"
  kill -TERM "$gpid"
  local rc=0
  wait "$gpid" || rc=$?
  ((rc == 0)) || { tail -20 "$dir/gearboxd.log" >&2; fail "[$model] gearboxd exited $rc after SIGTERM"; }
  [[ ! -e "$dir/http.sock" && ! -e "$dir/fastcgi.sock" ]] ||
    fail "[$model] gearboxd left its socket files behind"
}
