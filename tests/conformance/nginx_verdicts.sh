#!/usr/bin/env bash
# nginx_verdicts.sh: the .ci/test step "conformance". Runs
# tests/conformance/nginx_verdicts.py --check: every conformance case to a real
# gearboxd and a real nginx, gearbox's verdicts as the table expects, each
# difference from nginx cited, and tests/conformance/nginx_verdicts.md current.
#
#   tests/conformance/nginx_verdicts.sh            # check
#   tests/conformance/nginx_verdicts.sh --out tests/conformance/nginx_verdicts.md
#                                                  # regenerate the report
# GEARBOXD=PATH uses that binary instead of building //daemon:gearboxd.
# Needs nginx (Debian nginx-light, with its echo module) and python3.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
say() { echo "nginx_verdicts: $*"; }
fail() { echo "nginx_verdicts: FAIL: $*" >&2; exit 1; }
for tool in nginx python3; do
  command -v "$tool" >/dev/null || fail "$tool not installed (see .ci/setup)"
done
# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
find_gearboxd
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--check)
exec timeout -k 10 300 python3 "$root/tests/conformance/nginx_verdicts.py" "${args[@]}"
