#!/usr/bin/env bash
# systemd_driver.sh: runs INSIDE the container that tests/system/systemd_test.sh
# boots (systemd as PID 1, loopback only, a throwaway overlay of the host's root).
# It does what an operator does with the package and checks what they would see.
# Output goes to stdout (the test prints it); the exit code is the verdict.
set -euo pipefail

say() { echo "systemd_driver: $*"; }
fail() {
  echo "systemd_driver: FAIL: $*"
  echo "--- systemctl status gearbox.service"; systemctl status --no-pager -l gearbox.service || true
  echo "--- journalctl -u gearbox.service"; journalctl --no-pager -u gearbox.service | tail -40 || true
  exit 1
}
show() { systemctl show -P "$2" "$1"; }
wait_for() {  # COMMAND-STRING SECONDS
  local deadline=$((SECONDS + $2))
  until eval "$1" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
# The JSON value of "model" in /status.
status_model() { curl -sS --max-time 5 "$1/status" | sed -n 's/.*"model":"\([a-z]*\)".*/\1/p'; }
status_generation() { curl -sS --max-time 5 "$1/status" | sed -n 's/.*"generation":\([0-9]*\).*/\1/p'; }
# Every generation before the one serving has drained. Until then (at most
# [limits] drain_idle_timeout, 1s, for an idle connection) nginx may send a
# request on a connection it already had open and an old config answers it.
previous_drained() {
  local gen=$1 g drained
  drained=$(journalctl -u gearbox -o cat | sed -n 's/.*event=generation_drained gen=\([0-9]*\)$/\1/p')
  for ((g = 1; g < gen; g++)); do grep -qx "$g" <<<"$drained" || return 1; done
}
wait_previous_drained() {
  local gen
  gen=$(status_generation "$http")
  [[ -n "$gen" ]] || return 1
  wait_for "previous_drained $gen" 10
}

http=http://127.0.0.1:8080      # nginx -> proxy_pass -> /run/gearbox/http.sock
fcgi=http://127.0.0.1:8081      # nginx -> fastcgi_pass -> /run/gearbox/fastcgi.sock

# --- the package ------------------------------------------------------------------
say "rpm -i gearbox (scriptlets run: %pre creates the user)"
rpm -i --force-debian --nodeps /gbtest/gearbox.rpm
getent passwd gearbox || fail "no user gearbox after installing the package"
systemctl daemon-reload
say "systemd-analyze verify on the installed units"
out=$(systemd-analyze verify gearbox.service gearbox.socket gearbox-fastcgi.socket 2>&1) || true
[[ -z "$out" ]] || { echo "$out"; fail "systemd-analyze verify is not clean"; }

# --- sockets --------------------------------------------------------------------
say "systemctl enable --now gearbox.socket gearbox-fastcgi.socket"
systemctl enable --now gearbox.socket gearbox-fastcgi.socket
for s in http fastcgi; do
  perms=$(stat -c '%U:%G %a' "/run/gearbox/$s.sock")
  say "  /run/gearbox/$s.sock: $perms"
  [[ "$perms" == "root:gearbox 660" ]] || fail "$s.sock is $perms, want root:gearbox 660"
done
[[ $(stat -c '%U %a' /run/gearbox) == "root 755" ]] || fail "/run/gearbox: $(stat -c '%U %a' /run/gearbox)"
[[ $(show gearbox.service ActiveState) == inactive ]] || fail "gearbox.service started before any connection"

# --- activation -------------------------------------------------------------------
say "first connection activates gearbox.service"
body=$(curl -sS --max-time 10 --unix-socket /run/gearbox/http.sock http://localhost/hello) ||
  fail "no answer on /run/gearbox/http.sock"
[[ "$body" == "hello world" ]] || fail "/hello said '$body'"
[[ $(show gearbox.service ActiveState) == active ]] || fail "gearbox.service is not active"
[[ $(show gearbox.service SubState) == running ]] || fail "not running (Type=notify READY=1?)"
pid=$(show gearbox.service MainPID)
say "  MainPID $pid, user $(ps -o user= -p "$pid"), status: $(show gearbox.service StatusText)"
[[ $(ps -o user= -p "$pid") == gearbox ]] || fail "gearboxd does not run as gearbox"
journalctl --no-pager -u gearbox.service | grep 'listening.*name=fastcgi.*systemd=true' >/dev/null ||
  fail "gearboxd did not receive the fastcgi socket from systemd"
[[ -n $(show gearbox.service WatchdogTimestamp) ]] || fail "no WATCHDOG=1 received"
say "  both sockets passed by name; watchdog pinged at $(show gearbox.service WatchdogTimestamp)"
grep -q '^CapEff:[[:space:]]*0*$' "/proc/$pid/status" || fail "gearboxd has capabilities"
grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$pid/status" || fail "NoNewPrivs is not set"

# The packaged config is a production config: /hello and /status, no demo
# routes. Enabling them is what its comment says (uncomment), then a reload.
conf=/etc/gearbox/gearbox.toml
say "the packaged config serves /hello and /status only"
unix_code() { curl -sS --max-time 5 -o /dev/null -w '%{http_code}' --unix-socket /run/gearbox/http.sock "http://localhost$1"; }
[[ $(unix_code /status) == 200 ]] || fail "/status is not served by the packaged config"
for path in /sleep /echo /burn; do
  [[ $(unix_code "$path") == 404 ]] || fail "the packaged config serves the demo route $path"
done
say "  /status 200; /sleep /echo /burn 404. Uncommenting the demo routes, systemctl reload"
sed -i 's/^#\([^ #]\)/\1/' "$conf"
systemctl reload gearbox || fail "systemctl reload with the demo routes"
wait_for "[[ \$(unix_code /echo) == 200 ]]" 10 || fail "the uncommented demo routes are not served after reload"
for path in /sleep /burn; do
  [[ $(unix_code "$path") == 200 ]] || fail "$path not served after uncommenting the demo routes"
done

say "who may connect: nobody may not, a member of group gearbox may"
if runuser -u nobody -- curl -sS --max-time 5 --unix-socket /run/gearbox/http.sock http://localhost/hello \
     >/dev/null 2>&1; then
  fail "user nobody could connect to a 0660 root:gearbox socket"
fi

# --- nginx, configured as the documentation says ----------------------------------
say "nginx: usermod -a -G gearbox www-data; snippets from /usr/share/gearbox/nginx"
usermod -a -G gearbox www-data
cp /usr/share/gearbox/nginx/gearbox-upstream.conf /etc/nginx/conf.d/
rm -f /etc/nginx/sites-enabled/*
cat > /etc/nginx/sites-enabled/gearbox <<'EOF'
server {
    listen 127.0.0.1:8080;
    location = /status {
        include /usr/share/gearbox/nginx/gearbox-status.conf;
        include /usr/share/gearbox/nginx/gearbox-http.conf;
    }
    location / { include /usr/share/gearbox/nginx/gearbox-http.conf; }
}
server {
    listen 127.0.0.1:8081;
    location = /status {
        include /usr/share/gearbox/nginx/gearbox-status.conf;
        include /usr/share/gearbox/nginx/gearbox-fastcgi.conf;
    }
    location / { include /usr/share/gearbox/nginx/gearbox-fastcgi.conf; }
}
EOF
nginx -t 2>&1 | sed 's/^/  /'
nginx -t 2>&1 | grep -Eq '\[(warn|emerg|alert|crit|error)\]' && fail "nginx -t is not clean"
systemctl start nginx
for base in "$http" "$fcgi"; do
  body=$(curl -sS --max-time 5 -f "$base/hello") || fail "GET $base/hello through nginx"
  [[ "$body" == "hello world" ]] || fail "$base/hello said '$body'"
  body=$(curl -sS --max-time 5 -f --data-binary 'posted via nginx' "$base/echo") ||
    fail "POST $base/echo through nginx"
  [[ "$body" == "posted via nginx" ]] || fail "$base/echo said '$body'"
done
say "  GET /hello and POST /echo through proxy_pass and fastcgi_pass"
for base in "$http" "$fcgi"; do
  [[ $(status_model "$base") == threadpool ]] || fail "$base/status from 127.0.0.1"
  code=$(curl -sS --max-time 5 --interface 127.0.0.2 -o /dev/null -w '%{http_code}' "$base/status")
  [[ "$code" == 403 ]] || fail "$base/status from 127.0.0.2 answered $code, want 403"
done
say "  /status through nginx: from 127.0.0.1 served, from 127.0.0.2 403 (gearbox-status.conf)"

# --- reload: every model, under the sandbox -------------------------------------
for model in prefork async threadpool; do
  say "model = \"$model\"; systemctl reload gearbox"
  sed -i "s/^model = \"[a-z]*\"/model = \"$model\"/" "$conf"
  systemctl reload gearbox || fail "systemctl reload gearbox ($model)"
  wait_for "[[ \$(status_model $http) == $model ]]" 10 || fail "/status does not show $model after reload"
  [[ $(show gearbox.service MainPID) == "$pid" ]] || fail "reload changed the main PID"
  for base in "$http" "$fcgi"; do
    curl -sS --max-time 5 -f "$base/sleep?ms=2" >/dev/null || fail "[$model] GET $base/sleep"
    body=$(curl -sS --max-time 5 -f --data-binary "$model" "$base/echo") || fail "[$model] POST $base/echo"
    [[ "$body" == "$model" ]] || fail "[$model] $base/echo said '$body'"
  done
  say "  serving as $model (same PID $pid)"
done

say "a broken config: systemctl reload fails, the old config keeps serving"
cp "$conf" /root/gearbox.toml.good
echo 'this is not toml' >> "$conf"
if systemctl reload gearbox 2>/dev/null; then fail "reload accepted a broken config"; fi
[[ $(show gearbox.service ActiveState) == active ]] || fail "a failed reload stopped the service"
[[ $(status_model "$http") == threadpool ]] || fail "a failed reload changed the running config"
cp /root/gearbox.toml.good "$conf"
systemctl reload gearbox || fail "reload after restoring the config"
say "  refused, still active and serving threadpool"

# --- a module under the sandbox (MemoryDenyWriteExecute=, ProtectSystem=strict, ...)
say "a module: gearbox-devel, timerwait built from its example, served in every model"
rpm -i --force-debian --nodeps /gbtest/gearbox-devel.rpm
# EL's pkg-config searches /usr/lib64/pkgconfig; Debian's (this container) does not.
export PKG_CONFIG_PATH=/usr/lib64/pkgconfig
moduledir=$(pkg-config --print-errors --variable=moduledir gearbox) || fail "pkg-config gearbox"
cc -shared -fPIC $(pkg-config --cflags gearbox) /usr/share/gearbox/examples/timerwait.c \
  -o "$moduledir/libtimerwait.so" || fail "building the example against gearbox-devel"
printf '\n[[module]]\nname = "timerwait"\npath = "%s/libtimerwait.so"\n[[route]]\npath = "/tw"\nhandler = "timerwait"\n' \
  "$moduledir" >> "$conf"
for model in prefork async threadpool; do
  sed -i "s/^model = \"[a-z]*\"/model = \"$model\"/" "$conf"
  systemctl reload gearbox || fail "systemctl reload with a module ($model)"
  wait_for "[[ \$(status_model $http) == $model ]]" 10 || fail "/status does not show $model"
  wait_previous_drained || fail "the generation before $model did not drain"
  for base in "$http" "$fcgi"; do
    body=$(curl -sS --max-time 5 -f "$base/tw?ms=20") || fail "[$model] GET $base/tw"
    [[ "$body" == "waited 20 ms" ]] || fail "[$model] $base/tw said '$body'"
  done
done
say "  /tw answers through both sockets under every model (gearbox.service's sandbox)"
cp /root/gearbox.toml.good "$conf"
systemctl reload gearbox || fail "reload without the module"
wait_for "[[ \$(status_model $http) == threadpool ]]" 10 || fail "not back to threadpool"

# --- restart and stop under load ---------------------------------------------------
say "systemctl restart gearbox during wrk -c8 -d6s (socket stays open: no failed request)"
wrk -t2 -c8 -d6s --timeout 10s "$http/sleep?ms=1" > /root/wrk.out 2>&1 &
wrk_pid=$!
sleep 2
systemctl restart gearbox || fail "systemctl restart gearbox"
wait "$wrk_pid" || { cat /root/wrk.out; fail "wrk failed"; }
grep -E 'requests in|Socket errors|Non-2xx' /root/wrk.out | sed 's/^ */  /'
grep -Eq 'Socket errors|Non-2xx' /root/wrk.out && fail "requests failed across systemctl restart"
[[ $(show gearbox.service MainPID) != "$pid" ]] || fail "restart kept the same PID"

say "systemctl reload into each model during wrk -c8 -d6s (no failed request)"
pid=$(show gearbox.service MainPID)
wrk -t2 -c8 -d6s --timeout 10s "$http/sleep?ms=1" > /root/wrk-reload.out 2>&1 &
wrk_pid=$!
for model in async prefork threadpool; do
  sleep 1.5
  sed -i "s/^model = \"[a-z]*\"/model = \"$model\"/" "$conf"
  systemctl reload gearbox || fail "systemctl reload gearbox ($model) under load"
done
wait "$wrk_pid" || { cat /root/wrk-reload.out; fail "wrk failed"; }
grep -E 'requests in|Socket errors|Non-2xx' /root/wrk-reload.out | sed 's/^ */  /'
grep -Eq 'Socket errors|Non-2xx' /root/wrk-reload.out && fail "requests failed across reloads"
[[ $(show gearbox.service MainPID) == "$pid" ]] || fail "reload under load changed the main PID"
[[ $(status_model "$http") == threadpool ]] || fail "/status does not show the last model"
systemctl status --no-pager gearbox.service | grep -E 'Status:' | sed 's/^ */  /' ||
  fail "systemctl status shows no Status: line"

say "metrics: the journal's GEARBOX_* fields, STATUS= and /status agree"
sed -i 's/^interval = "[0-9a-z]*"/interval = "1s"/' "$conf"
systemctl reload gearbox || fail "reload with [metrics] interval = 1s"
for _ in $(seq 40); do
  curl -sS --max-time 5 -f --unix-socket /run/gearbox/http.sock http://localhost/hello >/dev/null ||
    fail "GET /hello for the metrics check"
done
sleep 2.5  # two quiet intervals: the last stats line has every request
journal_requests=$(journalctl --no-pager -u gearbox.service -o json -n 200 |
  python3 -c 'import json,sys
last = None
for line in sys.stdin:
    e = json.loads(line)
    if "GEARBOX_REQUESTS" in e: last = e
print(last["GEARBOX_REQUESTS"] if last else "none", last.get("GEARBOX_RPS") if last else "")')
# STATUS= is read before /status is asked: the /status request is counted too,
# and a stats interval that ends between the two would show one more.
status_text=$(show gearbox.service StatusText)
status_requests=$(curl -sS --max-time 5 --unix-socket /run/gearbox/http.sock http://localhost/status |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
say "  journal GEARBOX_REQUESTS/GEARBOX_RPS: $journal_requests; /status requests: $status_requests; STATUS=$status_text"
[[ "${journal_requests%% *}" == "$status_requests" ]] ||
  fail "journal says ${journal_requests%% *} requests, /status says $status_requests"
grep -q " $status_requests requests" <<< "$status_text" ||
  fail "STATUS= does not show the $status_requests requests"

say "systemctl stop drains: an in-flight /sleep?ms=1500 completes"
curl -sS --max-time 10 -f "$http/sleep?ms=1500" > /root/slow.out 2>&1 &
curl_pid=$!
sleep 0.5
systemctl stop gearbox
wait "$curl_pid" || { cat /root/slow.out; fail "the in-flight request failed across stop"; }
grep -q "waited 1500 ms" /root/slow.out || fail "in-flight request answered: $(cat /root/slow.out)"

say "  stopped after answering it: clean exit, sockets stay, next connection re-activates"
[[ $(show gearbox.service Result) == success ]] || fail "stop result: $(show gearbox.service Result)"
[[ -S /run/gearbox/http.sock ]] || fail "the socket unit lost its socket"
curl -sS --max-time 10 -f "$http/hello" >/dev/null || fail "no re-activation after stop"
[[ $(show gearbox.service ActiveState) == active ]] || fail "not re-activated"

# --- a crashing handler -------------------------------------------------------------
# threadpool and async run every request in one process: a handler that crashes
# takes it down. systemd restarts it (Restart=on-failure) and the socket units keep
# the listening sockets open meanwhile, so nginx's clients see at most the requests
# that were in flight fail; requests that arrive during the restart wait in the
# socket's backlog and are served by the new process.
cp "$conf" /root/gearbox.toml.before-crash
sed -i 's/^\[server\]$/[server]\nenable_crash_handler = true/' "$conf"
printf '\n[[route]]\npath = "/crash"\nhandler = "crash"\n' >> "$conf"
for model in threadpool async; do
  sed -i "s/^model = \"[a-z]*\"/model = \"$model\"/" "$conf"
  systemctl reload gearbox || fail "reload into $model with the crash route"
  wait_for "[[ \$(status_model $http) == $model ]]" 10 || fail "not serving $model"
  pid=$(show gearbox.service MainPID)
  restarts=$(show gearbox.service NRestarts)
  say "[$model] GET /crash during wrk -c8 -d8s: systemd restarts gearboxd, the socket stays open"
  wrk -t2 -c8 -d8s --timeout 10s "$http/sleep?ms=1" > "/root/wrk-crash-$model.out" 2>&1 &
  wrk_pid=$!
  sleep 2
  # Straight to the socket: through nginx, the request that crashed the process
  # on a cached upstream connection is retried on the restarted one, and crashes
  # it a second time (docs/limits.md).
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
    --unix-socket /run/gearbox/http.sock http://localhost/crash) || true
  wait "$wrk_pid" || { cat "/root/wrk-crash-$model.out"; fail "wrk failed"; }
  grep -E 'requests in|Socket errors|Non-2xx' "/root/wrk-crash-$model.out" | sed 's/^ */  /'
  failed=$(sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "/root/wrk-crash-$model.out")
  failed=${failed:-0}
  say "  /crash: curl saw '$code' (000: connection closed); wrk requests that failed: $failed (8 were in flight at most)"
  grep -q 'Socket errors' "/root/wrk-crash-$model.out" && fail "[$model] clients lost connections to nginx"
  ((failed <= 8)) || fail "[$model] $failed requests failed: more than were in flight"
  [[ $(show gearbox.service NRestarts) == $((restarts + 1)) ]] ||
    fail "[$model] NRestarts $(show gearbox.service NRestarts), want $((restarts + 1))"
  [[ $(show gearbox.service MainPID) != "$pid" ]] || fail "[$model] the crashed process still runs"
  [[ $(show gearbox.service ActiveState) == active ]] || fail "[$model] not active after the restart"
  journalctl --no-pager -u gearbox.service | grep 'event=crash_handler' >/dev/null ||
    fail "[$model] the crash was not logged"
  curl -sS --max-time 5 -f "$http/hello" >/dev/null || fail "[$model] /hello after the restart"
  say "  restarted by systemd (NRestarts $(show gearbox.service NRestarts), MainPID $pid -> $(show gearbox.service MainPID))"
done
cp /root/gearbox.toml.before-crash "$conf"
systemctl reload gearbox || fail "reload without the crash route"

say "systemd-analyze security gearbox.service (information only)"
systemd-analyze security --no-pager gearbox.service 2>/dev/null | tail -1 | sed 's/^/  /' || true
say "PASS"
