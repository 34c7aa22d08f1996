#!/usr/bin/env bash
# packaging_test.sh: static checks of packaging/ that need no nginx and no RPM: the
# files are valid for the tools that read them, and they agree with each other.
#
#   1. gearboxd -t accepts packaging/config/gearbox.toml; it serves /hello and
#      /status only, and its commented demo routes, uncommented as its comment
#      says, pass gearboxd -t too;
#   2. `systemd-analyze verify` is clean for gearbox.service, gearbox.socket and
#      gearbox-fastcgi.socket (with the binary at /usr/sbin/gearboxd and the man page
#      findable: both provided inside a private mount namespace, the host's /usr/sbin
#      is not touched);
#   3. systemd-sysusers creates the gearbox user and group from gearbox.sysusers in an
#      empty root, with the same GECOS and home as the spec's %pre;
#   4. cross-file consistency: socket FileDescriptorName= == [[listen]] name and
#      ListenStream= == its unix: address; TimeoutStopSec exceeds graceful_timeout;
#      gearboxd's idle_timeout exceeds nginx's upstream keepalive_timeout; the
#      service's command lines use the config path the spec installs;
#   5. the man page renders without groff warnings and documents exactly the
#      options `gearboxd --help` lists; --help names the embedded config's routes;
#   6. packaging/prometheus/: `promtool check config` and `promtool check rules`
#      are clean, and `promtool test rules` evaluates the recording rules on
#      synthetic series (tests/system/prometheus_rules_test.yml).
#   7. `systemd-analyze security` rates gearbox.service's sandbox 2.0 or better
#      (systemd 252, EL9's; the lower the less exposed).
#
# Environment: GEARBOXD=PATH (else Bazel builds it; BAZEL, BAZEL_STARTUP_OPTS as in
# nginx_test.sh). Needs root (a private mount namespace for step 2), systemd
# (systemd-analyze, systemd-sysusers), man-db (man: verify resolves the units'
# Documentation=man:gearboxd(8)), groff-base, mount, mawk, promtool (prometheus).
set -euo pipefail

if [[ -z "${_PACKAGING_TEST_BOUNDED:-}" ]]; then
  export _PACKAGING_TEST_BOUNDED=1
  exec timeout -k 10 "${PACKAGING_TEST_TIMEOUT:-300}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pkg=$root/packaging
say() { echo "packaging_test: $*"; }
fail() { echo "packaging_test: FAIL: $*" >&2; exit 1; }

# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
need systemd-analyze:systemd systemd-sysusers:systemd man:man-db groff:groff-base \
  mount:mount awk:mawk promtool:prometheus
[[ $(id -u) -eq 0 ]] || fail "run as root: step 2 bind-mounts /usr/sbin in a private mount namespace"

work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-pkgtest.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 124' TERM INT

find_gearboxd

conf=$pkg/config/gearbox.toml
# The path = of each [[route]] table in `gearboxd -p` output, one per line
# (other tables have path keys too: [lua] path).
route_paths() { awk '/^\[\[route\]\]$/ { r = 1; next } /^\[/ { r = 0 } r && sub(/^path = "/, "") { sub(/"$/, ""); print }'; }
service=$pkg/systemd/gearbox.service

# --- 1 -------------------------------------------------------------------------------
say "gearboxd -t -c packaging/config/gearbox.toml"
"$GEARBOXD" -t -c "$conf" || fail "the packaged config is invalid"
routes=$("$GEARBOXD" -p -c "$conf" | route_paths | tr '\n' ' ')
say "  routes: $routes"
[[ "$routes" == "/hello /status " ]] || fail "the packaged config serves $routes(want /hello /status only)"
# The recipe in the file's comment: every demo route, uncommented.
sed 's/^#\([^ #]\)/\1/' "$conf" > "$work/demo.toml"
"$GEARBOXD" -t -c "$work/demo.toml" > /dev/null || fail "the commented demo routes do not parse once uncommented"
routes=$("$GEARBOXD" -p -c "$work/demo.toml" | route_paths | tr '\n' ' ')
[[ "$routes" == "/hello /status /sleep /echo /burn " ]] || fail "uncommented, the demo routes are $routes"
say "  uncommented as documented: $routes"

# --- 2 -------------------------------------------------------------------------------
say "systemd-analyze verify (gearbox.service, gearbox.socket, gearbox-fastcgi.socket)"
mkdir -p "$work/sbin" "$work/man/man8"
cp "$GEARBOXD" "$work/sbin/gearboxd"
cp "$pkg/man/gearboxd.8" "$work/man/man8/"
units=("$service" "$pkg/systemd/gearbox.socket" "$pkg/systemd/gearbox-fastcgi.socket")
# verify checks that ExecStart= binaries exist and that man: documentation resolves
# (it runs `man gearboxd.8`), as on an EL host with the package installed.
unshare -m --propagation private true ||
  fail "unshare -m failed: step 2 needs a private mount namespace (root, CAP_SYS_ADMIN)"
# shellcheck disable=SC2016  # expanded by the inner sh
out=$(unshare -m --propagation private sh -c \
  'mount --bind "$0" /usr/sbin && m=$1 && shift && MANPATH=$m exec systemd-analyze verify "$@"' \
  "$work/sbin" "$work/man" "${units[@]}" 2>&1) || { echo "$out" >&2; fail "systemd-analyze verify"; }
[[ -z "$out" ]] || { echo "$out" >&2; fail "systemd-analyze verify is not clean"; }

# --- 3 -------------------------------------------------------------------------------
say "systemd-sysusers --root=EMPTY gearbox.sysusers"
mkdir -p "$work/sysroot/etc"
systemd-sysusers --root="$work/sysroot" "$pkg/systemd/gearbox.sysusers" >/dev/null 2>&1 ||
  fail "systemd-sysusers rejected gearbox.sysusers"
pw=$(grep '^gearbox:' "$work/sysroot/etc/passwd") || fail "no user gearbox created"
grep -q '^gearbox:' "$work/sysroot/etc/group" || fail "no group gearbox created"
say "  $pw"
[[ "$pw" == "gearbox:x:"*":"*":gearbox application server:/:"*"nologin" ]] ||
  fail "unexpected user entry: $pw"
grep -q 'useradd -r -g gearbox -d / -s /sbin/nologin -c "gearbox application server" gearbox' \
  "$pkg/rpm/gearbox.spec" || fail "the spec's %pre useradd differs from gearbox.sysusers"

# --- 4 -------------------------------------------------------------------------------
say "consistency between the units, the config and the nginx snippets"
# [[listen]] name/address pairs of the packaged config, from gearboxd itself.
effective=$("$GEARBOXD" -p -c "$conf")
for sock in gearbox.socket gearbox-fastcgi.socket; do
  f=$pkg/systemd/$sock
  name=$(sed -n 's/^FileDescriptorName=//p' "$f")
  path=$(sed -n 's/^ListenStream=//p' "$f")
  [[ $(grep -c '^ListenStream=' "$f") == 1 ]] || fail "$sock: one ListenStream= per unit"
  grep -q "^Service=gearbox.service$" "$f" || fail "$sock does not activate gearbox.service"
  # The effective config lists each [[listen]] as address, protocol, name, ...
  grep -q "address = \"unix:$path\"" <<<"$effective" ||
    fail "$sock: no [[listen]] address unix:$path in the packaged config"
  awk -v a="address = \"unix:$path\"" -v n="name = \"$name\"" '
    $0 == a { inside = 1; next } /^\[/ { inside = 0 } inside && $0 == n { ok = 1 }
    END { exit !ok }' <<<"$effective" ||
    fail "$sock: FileDescriptorName=$name does not name the [[listen]] on unix:$path"
  say "  $sock: $name on $path matches its [[listen]]"
done
seconds() {  # "30s" / "2m" -> seconds
  case $1 in *ms) echo 0 ;; *s) echo "${1%s}" ;; *m) echo $((${1%m} * 60)) ;; *h) echo $((${1%h} * 3600)) ;; esac
}
graceful=$(seconds "$(sed -n 's/^graceful_timeout = "\(.*\)"/\1/p' <<<"$effective")")
stop=$(seconds "$(sed -n 's/^TimeoutStopSec=//p' "$service")")
((stop >= graceful + 5)) ||
  fail "TimeoutStopSec=${stop}s leaves no margin over graceful_timeout ${graceful}s"
say "  TimeoutStopSec ${stop}s > graceful_timeout ${graceful}s"
idle=$(seconds "$(sed -n 's/^idle_timeout = "\(.*\)"/\1/p' <<<"$effective")")
while read -r ka; do
  ka=$(seconds "$ka")
  ((idle > ka)) || fail "idle_timeout ${idle}s must exceed nginx keepalive_timeout ${ka}s"
done < <(sed -n 's/^ *keepalive_timeout \([0-9]*[smh]\);.*/\1/p' "$pkg/nginx/gearbox-upstream.conf" \
           "$pkg/nginx/gearbox-multihost.conf")
say "  idle_timeout ${idle}s > nginx upstream keepalive_timeout (gearbox-upstream.conf, gearbox-multihost.conf)"
# shellcheck disable=SC2016  # $MAINPID is literal in the unit
for line in 'ExecStartPre=/usr/sbin/gearboxd -t -c /etc/gearbox/gearbox.toml' \
            'ExecStart=/usr/sbin/gearboxd -c /etc/gearbox/gearbox.toml' \
            'ExecReload=/bin/kill -HUP $MAINPID'; do
  grep -qxF "$line" "$service" || fail "gearbox.service lacks: $line"
done
grep -q '%config(noreplace) %{_sysconfdir}/gearbox/gearbox.toml' "$pkg/rpm/gearbox.spec" ||
  fail "the spec does not install /etc/gearbox/gearbox.toml as %config(noreplace)"
grep -q '^RuntimeDirectory=' "$service" &&
  fail "RuntimeDirectory= would delete the socket units' /run/gearbox on stop"

# --- 5 -------------------------------------------------------------------------------
say "man page: groff warnings, options == gearboxd --help"
warn=$(LC_ALL=C.UTF-8 groff -man -ww -z "$pkg/man/gearboxd.8" 2>&1) || true
[[ -z "$warn" ]] || { echo "$warn" >&2; fail "groff warns about gearboxd.8"; }
# "-c, --config" pairs: from --help, and from the man page's ".BR \-c ", " \-\-config" lines.
help_opts=$("$GEARBOXD" --help | sed -n 's/^ *\(-[a-zA-Z]\), \(--[a-z-]*\).*/\1 \2/p' | sort)
man_opts=$(sed -n 's/^\.BR \\-\([a-zA-Z]\) ", " \\-\\-\([a-z\\-]*\).*/-\1 --\2/p' "$pkg/man/gearboxd.8" |
  sed 's/\\-/-/g' | sort)
if [[ "$help_opts" != "$man_opts" ]]; then
  diff <(echo "$help_opts") <(echo "$man_opts") >&2 || true
  fail "gearboxd.8 OPTIONS differ from gearboxd --help (< --help, > man page)"
fi
say "  options: ${help_opts//$'\n'/ }"
# --help names the embedded config's routes: exactly those `gearboxd -p` prints.
embedded=$("$GEARBOXD" -p | route_paths | sort | tr '\n' ' ')
help_routes=$("$GEARBOXD" --help | sed -n '/-c, --config/,/-t, --test/p' | grep -o '/[a-z]*' | sort |
  tr '\n' ' ')
[[ "$help_routes" == "$embedded" ]] ||
  fail "gearboxd --help names the embedded routes $help_routes; the embedded config has $embedded"
say "  --help names the embedded config's routes: $embedded"

# --- 6 -------------------------------------------------------------------------------
say "promtool: packaging/prometheus/gearbox.yml, gearbox-rules.yml"
promtool check config "$pkg/prometheus/gearbox.yml" || fail "promtool check config gearbox.yml"
promtool check rules "$pkg/prometheus/gearbox-rules.yml" || fail "promtool check rules gearbox-rules.yml"
(cd "$root/tests/system" && promtool test rules prometheus_rules_test.yml) ||
  fail "promtool test rules: the recording rules compute something else"
# --- 7 -------------------------------------------------------------------------------
say "systemd-analyze security --offline=true gearbox.service (want <= 2.0)"
# A copy named gearbox.service: the offline check names the unit after its file.
cp "$service" "$work/gearbox.service"
score=$(systemd-analyze security --offline=true --no-pager "$work/gearbox.service" 2>&1 |
  sed -n 's/.*Overall exposure level for gearbox.service: \([0-9.]*\).*/\1/p')
[[ -n "$score" ]] || fail "systemd-analyze security printed no exposure level"
say "  exposure $score"
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "gearbox.service exposure $score > 2.0"

say "PASS"
