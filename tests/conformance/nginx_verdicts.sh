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
# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
need nginx:nginx-light python3:python3
[[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ]] ||
  fail "no nginx echo module: apt-get install libnginx-mod-http-echo (.ci/setup installs it)"
find_gearboxd
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--check)
exec timeout -k 10 300 python3 "$root/tests/conformance/nginx_verdicts.py" "${args[@]}"
