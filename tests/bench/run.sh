#!/usr/bin/env bash
# run.sh: gearbox's benchmark harness (the PHP-vs-Tornado experiment, three models).
#
#   tests/bench/run.sh [--quick] [--out DIR] [--duration S] [--only LABEL,...]
#                      [--idle-count N] [--no-plots]
#
#   --quick       smoke pass (< 2 minutes): checks the harness works and the figures
#                 are sane; exits non-zero if not. For CI.
#   --out DIR     where results.md, results.json and the PNGs go
#                 (default tests/bench/results/, not committed)
# Environment:
#   GEARBOXD=PATH         use this binary instead of building //daemon:gearboxd
#   BAZEL=bazel           the Bazel command; BAZEL_STARTUP_OPTS its startup options
#                         (e.g. --output_base=...); BENCH_BAZEL_FLAGS extra build flags
#   BENCH_TIMEOUT=S       bound on the whole run (default 1200, quick 300)
# Needs: nginx (nginx-light), wrk, httperf, python3, gnuplot (gnuplot-nox) for the
# plots. Loopback only. See tests/bench/README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

quick=0
for a in "$@"; do [[ $a == --quick ]] && quick=1; done

# 10,000 idle connections need 10,000+ descriptors in the client and in gearboxd
# (both inherit this limit). Without the privilege to raise the hard limit, take
# the hard limit and say so.
if ! ulimit -n 65536 2>/dev/null; then
  hard=$(ulimit -Hn)
  ulimit -n "$hard"
  echo "run.sh: could not raise the open-file limit to 65536; using the hard limit $hard" >&2
fi

if [[ -z "${_BENCH_BOUNDED:-}" ]]; then
  export _BENCH_BOUNDED=1
  if ((quick)); then limit=${BENCH_TIMEOUT:-300}; else limit=${BENCH_TIMEOUT:-1200}; fi
  # timeout(1) sends TERM; bench.py then stops everything it started, by PID.
  exec timeout -k 15 "$limit" python3 "$here/bench.py" "$@"
fi
exec python3 "$here/bench.py" "$@"
