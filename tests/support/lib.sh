# shellcheck shell=bash
# Shared by the shell tests (sourced, not run): bounded waits on a condition,
# stopping a process by its PID, a free port, and the boilerplate of a test that
# runs one gearboxd (find it, a work directory short enough for unix sockets,
# start it, wait for its sockets, stop it).
#
# Found the same way under Bazel (a `data` dependency on
# //tests/support:lib.sh, in the runfiles) and from a checkout:
#   lib="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}/tests/support/lib.sh"
#   [[ -f "$lib" ]] || lib="$(dirname "${BASH_SOURCE[0]}")/../../support/lib.sh"
#   source "$lib"

# wait_until SECONDS COMMAND...: runs COMMAND (its output dropped) until it
# succeeds; 1 if SECONDS (a decimal) pass first. COMMAND runs once more at the
# deadline, so a slow host gets its full time.
wait_until() {
  local timeout=$1
  shift
  local deadline now
  deadline=$(_gearbox_now_ms)
  deadline=$((deadline + $(_gearbox_ms "$timeout")))
  for (( ; ; )); do
    "$@" >/dev/null 2>&1 && return 0
    now=$(_gearbox_now_ms)
    ((now < deadline)) || return 1
    # The poll interval: what the shell tests wait on (a file, /proc, a
    # socket, another process's answer) offers nothing to block on.
    sleep "${WAIT_EVERY:-0.1}"
  done
}

# wait_for COMMAND-STRING SECONDS: wait_until for a condition written as one
# string (it may use $(...) and [[ ]]), evaluated each time.
wait_for() {
  wait_until "$2" eval "$1"
}

_gearbox_now_ms() {
  local t=${EPOCHREALTIME/./}
  echo $((10#${t:0:-3}))
}
_gearbox_ms() {  # DECIMAL-SECONDS -> integer milliseconds
  local s=$1 whole frac
  whole=${s%%.*}
  frac=${s#"$whole"}
  frac=${frac#.}000
  echo $((10#${whole:-0} * 1000 + 10#${frac:0:3}))
}

# alive PID: running, as opposed to gone or a zombie waiting to be reaped (kill
# -0 succeeds on a zombie).
alive() {
  [[ -r /proc/$1/stat ]] && ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null
}

# stop_pid PID [SIGNAL [SECONDS]]: SIGNAL (TERM), up to SECONDS (10) for the
# process to go, then KILL. Only ever the PID given.
stop_pid() {
  local pid=$1 sig=${2:-TERM} timeout=${3:-10}
  alive "$pid" || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  wait_until "$timeout" _gearbox_gone "$pid" && return 0
  kill -KILL "$pid" 2>/dev/null || true
}
_gearbox_gone() { ! alive "$1"; }

# stop_group PGID [SECONDS]: a process group (a host: prefork's master, its
# children, its head guard): CONT and TERM to the group, up to SECONDS (10) for
# its leader to go, then KILL to the group.
stop_group() {
  local pg=$1 timeout=${2:-10}
  kill -CONT -- "-$pg" 2>/dev/null || true
  kill -TERM -- "-$pg" 2>/dev/null || true
  wait_until "$timeout" _gearbox_gone "$pg" ||
    kill -KILL -- "-$pg" 2>/dev/null || true
}

# free_port [ADDRESS]: a TCP port free on ADDRESS (127.0.0.1) just now.
free_port() {
  python3 -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' \
    "${1:-127.0.0.1}"
}

# bound_port LOG: the port of the first `event=listening ... bound=127.0.0.1:N`
# line of a gearboxd log ("" until it is there): a listener on port 0.
bound_port() {
  sed -n 's/.*event=listening .*bound=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" | head -n 1
}

# --- one gearboxd under test (the tests/integration shell tests) ----------------
# They set MODEL and LOG; fail names the model and shows the log's last
# ${LOG_TAIL:-50} lines (LOG_TAIL=+1: all of it). A script that defines its own
# fail before sourcing keeps it.
if ! declare -F fail >/dev/null; then
  fail() {
    echo "FAIL [${MODEL:-}]: $*" >&2
    if [[ -n "${LOG:-}" && -f "$LOG" ]]; then
      echo "--- gearboxd log ---" >&2
      tail -n "${LOG_TAIL:-50}" "$LOG" >&2
    fi
    exit 1
  }
fi

# runfile PATH: PATH (relative to the repository) in the Bazel runfiles, else in
# the checkout (the current directory).
runfile() {
  local in_runfiles="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-gearbox}/$1"
  if [[ -e "$in_runfiles" ]]; then echo "$in_runfiles"; else echo "$PWD/$1"; fi
}

# gearboxd_path: the daemon under test: the runfiles', else daemon/gearboxd
# from the current directory (a bazel-bin).
gearboxd_path() {
  local in_runfiles="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-gearbox}/daemon/gearboxd"
  if [[ -x "$in_runfiles" ]]; then echo "$in_runfiles"; else echo "daemon/gearboxd"; fi
}

# make_work NAME: sets WORK to a fresh directory for the test's files, and
# OWN_WORK to it when it had to be made outside $TEST_TMPDIR (removed by
# stop_gearboxd_and_clean): a unix socket's path holds 107 bytes, and Bazel's
# $TEST_TMPDIR can be longer than that.
make_work() {
  WORK="${TEST_TMPDIR:-/tmp}/$1"
  OWN_WORK=""
  if ((${#WORK} > 80)); then
    WORK="$(mktemp -d "/tmp/gearbox-$1.XXXXXX")"
    OWN_WORK="$WORK"
  fi
  mkdir -p "$WORK"
}

# start_gearboxd CONF: checks CONF with -t (the error shown if rejected), then
# starts $GEARBOXD on it in the background, logging to $LOG; sets PID. Stopped
# at exit (stop_gearboxd_and_clean), by that PID.
start_gearboxd() {
  "$GEARBOXD" -t -c "$1" >/dev/null 2>&1 || {
    "$GEARBOXD" -t -c "$1" || true
    fail "config rejected"
  }
  "$GEARBOXD" -c "$1" >"$LOG" 2>&1 &
  PID=$!
  trap stop_gearboxd_and_clean EXIT
}

# stop_gearboxd_and_clean: SIGTERM to $PID (graceful), 10 s, then SIGKILL; the
# log kept among the test's outputs, OWN_WORK removed.
stop_gearboxd_and_clean() {
  [[ -n "${PID:-}" ]] && stop_pid "$PID" TERM 10
  if [[ -n "${OWN_WORK:-}" ]]; then
    [[ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" && -f "${LOG:-}" ]] &&
      cp "$LOG" "$TEST_UNDECLARED_OUTPUTS_DIR/gearboxd-${MODEL:-}.log" 2>/dev/null
    rm -rf "$OWN_WORK"
  fi
  return 0
}

# wait_listening SECONDS CONDITION...: waits until CONDITION (a command, e.g.
# test -S "$SOCK") holds; fails at once if gearboxd exits first, or after
# SECONDS.
wait_listening() {
  local timeout=$1
  shift
  wait_until "$timeout" _gearbox_up_or_dead "$@" || fail "not listening after ${timeout}s"
  alive "$PID" || fail "gearboxd exited before listening"
  "$@" || fail "gearboxd exited before listening"
}
_gearbox_up_or_dead() { "$@" || ! alive "$PID"; }
