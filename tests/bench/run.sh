#!/usr/bin/env bash
# run.sh: gearbox's benchmark harness (the PHP-vs-Tornado experiment, three models).
#
#   tests/bench/run.sh [--quick] [--out DIR] [--duration S] [--only LABEL,...]
#                      [--idle-count N] [--no-plots]
#   tests/bench/run.sh --ab OLD_BIN NEW_BIN [--quick] [--workloads hello,wait1ms]
#                      [--models async,threadpool,prefork] [--conns 64,256] [--rounds 3]
#                      [--paths direct,nginx-unix,nginx-tcp] [--extra-old F] [--extra-new F]
#                      [--names old,new] [--min-ratio 0.95] [--strict] [--out DIR]
#
#   --quick       smoke pass (< 2 minutes): checks the harness works and the figures
#                 are sane; exits non-zero if not. For CI.
#   --out DIR     where results.md, results.json and the PNGs go
#                 (default tests/bench/results/, where the committed full run lives)
#   --ab OLD NEW  A/B mode (bench_ab.py): two binaries, alternating rounds, median per
#                 side, NEW/OLD ratios in DIR/ab.md + ab.json (default tests/bench/out/ab/);
#                 with --quick one round of 1 s runs (< 1 minute). See README.md.
# Environment:
#   GEARBOXD=PATH         use this binary instead of building //daemon:gearboxd
#   BAZEL=bazel           the Bazel command; BAZEL_STARTUP_OPTS its startup options
#                         (e.g. --output_base=...); BENCH_BAZEL_FLAGS extra build flags
#   BENCH_TIMEOUT=S       bound on the whole run (default 2700, quick 300, --ab 3600)
# Needs: nginx (nginx-light), wrk, httperf, python3, gnuplot (gnuplot-nox) for the
# plots. Loopback only. See tests/bench/README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

quick=0
script=bench.py
for a in "$@"; do
  [[ $a == --quick ]] && quick=1
  [[ $a == --ab ]] && script=bench_ab.py
done

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
  if ((quick)); then
    limit=${BENCH_TIMEOUT:-300}
  elif [[ $script == bench_ab.py ]]; then
    limit=${BENCH_TIMEOUT:-3600}
  else
    limit=${BENCH_TIMEOUT:-2700}
  fi
  # timeout(1) sends TERM; bench.py then stops everything it started, by PID.
  exec timeout -k 15 "$limit" python3 "$here/$script" "$@"
fi
exec python3 "$here/$script" "$@"
