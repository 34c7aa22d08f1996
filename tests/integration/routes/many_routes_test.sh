#!/usr/bin/env bash
# Every route of a config with many routes counts on its own, under the model
# given as $1: 100 routes (exact, template and prefix in turn), route i asked
# i % 4 + 1 times, then each must show exactly that many requests in /status
# (JSON, text and OpenMetrics), and the misses under "(other)". More routes
# than the old fixed 31 counted slots, and spread over the workers (prefork:
# several children; their counts meet in the shared region).
# Bounded: the socket wait, every client call (timeout 30), the stop.
set -euo pipefail

MODEL="${1:?usage: many_routes_test.sh MODEL}"
lib="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}/tests/support/lib.sh"
[[ -f "$lib" ]] || lib="$(dirname "${BASH_SOURCE[0]}")/../../support/lib.sh"
# shellcheck source=tests/support/lib.sh
source "$lib"
GEARBOXD="$(gearboxd_path)"
ROUTES=100
LOG_TAIL=30
set -E
trap 'fail "line $LINENO: a command failed"' ERR

command -v curl >/dev/null || fail "curl not found: apt-get install curl"
command -v python3 >/dev/null || fail "python3 not found"

make_work many
SOCK="$WORK/http.sock"
CONF="$WORK/gearbox.toml"
LOG="$WORK/gearboxd.log"
rm -f "$SOCK"

# Route i's pattern and a path that it (and only it) serves.
pattern() {
  case $(($1 % 3)) in
    0) echo "/e$1" ;;
    1) echo "/t$1/{id}" ;;
    2) echo "/p$1/" ;;
  esac
}
target() {
  case $(($1 % 3)) in
    0) echo "/e$1" ;;
    1) echo "/t$1/42" ;;
    2) echo "/p$1/a/b.css" ;;
  esac
}
{
  cat <<EOF
[server]
model = "$MODEL"
graceful_timeout = "5s"

[[listen]]
address = "unix:$SOCK"
protocol = "http"

[threadpool]
threads = 4

[prefork]
workers = 3

[async]
loops = 2

[[route]]
path = "/status"
handler = "status"
EOF
  for ((i = 0; i < ROUTES; i++)); do
    printf '\n[[route]]\npath = "%s"\nhandler = "text"\nbody = "r%d\\n"\n' \
      "$(pattern $i)" "$i"
  done
} >"$CONF"

start_gearboxd "$CONF"
wait_listening 10 test -S "$SOCK"

# Each route's answer is its own (the routes are all there), then the load:
# route i asked i % 4 + 1 times in all, over several connections (curl
# keeps one alive per invocation), so more than one worker serves.
urls=()
for ((i = 0; i < ROUTES; i++)); do
  body="$(timeout 30 curl -sf --unix-socket "$SOCK" "http://gearbox$(target $i)")" ||
    fail "GET $(target $i) failed"
  [[ "$body" == "r$i" ]] || fail "GET $(target $i): expected r$i, got [$body]"
  for ((k = 1; k < i % 4 + 1; k++)); do urls+=("http://gearbox$(target $i)"); done
done
for ((part = 0; part < ${#urls[@]}; part += 25)); do
  timeout 30 curl -sf --unix-socket "$SOCK" "${urls[@]:part:25}" >/dev/null ||
    fail "curl batch at $part failed"
done
# Three misses: "(other)".
for miss in /nope /e0/x /t1/; do
  timeout 30 curl -s --unix-socket "$SOCK" -o /dev/null "http://gearbox$miss"
done

for format in json text openmetrics; do
  timeout 30 curl -sf --unix-socket "$SOCK" \
    "http://gearbox/status?format=$format" >"$WORK/status.$format" ||
    fail "GET /status?format=$format failed"
done
python3 - "$WORK" "$ROUTES" <<'EOF' || fail "per-route counts in /status"
import json, re, sys
work, n = sys.argv[1], int(sys.argv[2])
def pattern(i):
    return ["/e%d", "/t%d/{id}", "/p%d/"][i % 3] % i
want = {pattern(i): i % 4 + 1 for i in range(n)}
want["(other)"] = 3
bad = []
doc = json.load(open(work + "/status.json"))
got = {r["route"]: r["requests"] for r in doc["routes"]}
text = {}
for line in open(work + "/status.text"):
    m = re.match(r'route: name=("[^"]*"|\S+) requests=(\d+)', line)
    if m:
        text[m.group(1).strip('"')] = int(m.group(2))
om = {}
for line in open(work + "/status.openmetrics"):
    m = re.match(r'gearbox_route_requests_total\{route="([^"]*)"\} (\S+)', line)
    if m:
        om[m.group(1)] = int(float(m.group(2)))
for name, count in want.items():
    for fmt, figures in (("json", got), ("text", text), ("openmetrics", om)):
        if figures.get(name) != count:
            bad.append("%s %s: want %d, got %s" % (fmt, name, count,
                                                     figures.get(name)))
if len(got) != n + 2:  # the routes, /status, "(other)"
    bad.append("json: %d routes listed, want %d" % (len(got), n + 2))
if bad:
    print("\n".join(bad[:20]), file=sys.stderr)
    sys.exit(1)
EOF
kill -0 "$PID" 2>/dev/null || fail "gearboxd died"
echo "PASS [$MODEL]: $ROUTES routes, each counted on its own"
