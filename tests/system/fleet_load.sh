# shellcheck shell=bash
# shellcheck disable=SC2154  # the sourcing script's variables (see "Expects")
# fleet_test.sh's load (sourced, not run): a load through nginx at a fixed rate
# (fleet_load.py, its result in $work/load-LABEL.json), a point of its timeline,
# and what its result and nginx's error.log say: the figures table, requests per
# host, nginx's errors about a host.
#
# Expects say/fail, tests/system/lib.sh sourced, $here, $work, $nport, $purl,
# $ngx (nginx's directory) and $figures (the table's file).

json() {  # FILE EXPRESSION (Python, over d = the document)
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
load() {  # LABEL RATE DURATION REQUEST...
  local label=$1 rate=$2 duration=$3
  shift 3
  local kinds=()
  for k in "$@"; do kinds+=(--request "$k"); done
  python3 "$here/fleet_load.py" --port "$nport" --label "$label" --rate "$rate" \
    --duration "$duration" "${kinds[@]}" --out "$work/load-$label.json" \
    --progress "$work/load-$label.at"
}
# load_at LABEL SECONDS: waits until the load LABEL (in the background) has
# sent SECONDS worth of its requests: the test acts at a point of the load's
# own timeline, however late the load started on a busy host.
load_at() {
  local at=$work/load-$1.at
  wait_for "[[ -s '$at' ]] && (( \$(cut -d. -f1 '$at') >= $2 ))" $(($2 + 20)) ||
    fail "the load $1 did not reach ${2}s"
}
# prom_after T: waits until Prometheus has scraped every host and evaluated the
# rules after T: the figures of a load that ended before T are in.
prom_after() {
  python3 "$here/fleet_prom.py" "$purl" wait-after "$1" 10 || fail "Prometheus did not scrape after $1"
}
figure() {  # LABEL NOTE: one line of the final table, from that load's result
  local f=$work/load-$1.json
  printf '%-8s %8s %7s %8s  %s\n' "$1" "$(json "$f" 'd["requests"]')" "$(json "$f" 'd["failed"]')" \
    "$(json "$f" 'd["retried"]')" "$2" >> "$figures"
}
# Requests of a load whose final upstream (the host that answered) was HOST, from
# second FROM on.
served_by() {  # LABEL HOST FROM
  json "$work/load-$1.json" "sum(c.get('$2', 0) for s, c in d['timeline'].items() if int(s) >= $3)"
}
# Requests of a load that nginx sent to HOST (answered there or not), from second
# FROM on: a request tried on more than one host is in "retries", one that failed
# in "failures"; the rest never met a failing host.
tried_host() {  # LABEL HOST FROM
  json "$work/load-$1.json" "len({r['i'] for r in d['retries'] + d['failures'] if '$2' in r['upstream'] and r['t'] >= $3})"
}
errors_for() {  # PATTERN HOST: nginx error.log lines with PATTERN about HOST
  grep -F "$1" "$ngx/logs/error.log" | grep -cF "upstream: \"http://$2/" || true
}
