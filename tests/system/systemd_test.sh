#!/usr/bin/env bash
# systemd_test.sh: the package under a real systemd (PID 1 of a container), with a
# real nginx in front, exactly as an operator sets it up.
#
# The container is systemd-nspawn booting a throwaway overlay of this machine's own
# root (Debian bookworm: systemd 252, nginx), in a private mount namespace and with
# a private network (loopback only); everything it writes is deleted afterwards.
# Inside, tests/system/systemd_driver.sh (with systemd_service.sh, its functions)
# installs the RPM (built here with build-rpm.sh --prebuilt), enables the socket
# units and checks: socket ownership and mode; activation on first connection; the
# packaged config serves /hello and /status only, and its demo routes once
# uncommented (a reload); Type=notify (READY, STATUS=, WATCHDOG=);
# both sockets passed by name; gearboxd runs as gearbox without capabilities under
# the sandbox; nobody cannot connect; nginx (www-data added to group gearbox) serves
# through the shipped snippets over proxy_pass and fastcgi_pass, /status only
# from loopback 127.0.0.1 (403 from 127.0.0.2); reload into each
# model (same PID) under the sandbox; a broken config fails `systemctl reload` and
# keeps the old one; five `systemctl restart`s (into rotating models) under wrk
# GETs and POSTs through nginx lose no request; stop is clean and the next
# connection re-activates. The unit runs with a drop-in that turns its system call
# filter's EPERM into the kill action (proved by a chroot() canary), with a module,
# the postgres handler (a throwaway cluster) and a Lua script (LuaJIT compiling its
# hot loop) served under every model: a system call gearboxd needs beyond
# @system-service fails the test.
#
# It is systemd 252 (EL9's), not EL8's 239, which logs and ignores the unit's
# newer sandbox settings (see the comment in gearbox.service).
#
# Environment: GEARBOXD=PATH (else Bazel builds it; BAZEL, BAZEL_STARTUP_OPTS as in
# nginx_test.sh), SYSTEMD_TEST_TIMEOUT=S (default 480). Needs root, systemd-container
# (systemd-nspawn), overlayfs, and in the host root (the container's image): systemd,
# nginx, curl, wrk, rpm, python3, man (systemd-analyze verify inside), usermod, ps,
# postgresql (initdb, postgres, psql: the postgres handler's server), runuser.
set -euo pipefail

if [[ -z "${_SYSTEMD_TEST_BOUNDED:-}" ]]; then
  export _SYSTEMD_TEST_BOUNDED=1
  exec timeout -k 15 "${SYSTEMD_TEST_TIMEOUT:-480}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
say() { echo "systemd_test: $*"; }
fail() { echo "systemd_test: FAIL: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "run as root (systemd-nspawn, overlay mounts)"
# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
# The container boots this machine's root: what the driver calls must be here.
need systemd-nspawn:systemd-container systemctl:systemd journalctl:systemd \
  systemd-analyze:systemd rpm:rpm rpmbuild:rpm nginx:nginx-light curl:curl wrk:wrk \
  python3:python3 man:man-db usermod:passwd ps:procps mount:mount \
  psql:postgresql runuser:util-linux
[[ -x /lib/systemd/systemd ]] || fail "no /lib/systemd/systemd to boot: apt-get install systemd"

work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-systemd.XXXXXX")
cleanup() {
  local rc=$?
  if ((rc != 0)); then say "left $work for inspection"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT

find_gearboxd

say "building the RPM (prebuilt $GEARBOXD)"
"$root/packaging/rpm/build-rpm.sh" --prebuilt "$GEARBOXD" --outdir "$work/rpm" > "$work/rpm.log" 2>&1 ||
  { tail -30 "$work/rpm.log" >&2; fail "build-rpm.sh"; }
rpmfile=$(find "$work/rpm" -name 'gearbox-[0-9]*.x86_64.rpm' -o -name 'gearbox-[0-9]*.aarch64.rpm' | head -1)
develfile=$(find "$work/rpm" -name 'gearbox-devel-[0-9]*.rpm' | head -1)
[[ -f "$rpmfile" && -f "$develfile" ]] || fail "no RPM built"

# The container image: an overlay of / (changes land in $work/upper), plus the test
# files and a unit that runs the driver and powers the container off.
mkdir -p "$work/upper/gbtest" "$work/upper/etc/systemd/system" "$work/overlay-work" "$work/image" "$work/out"
cp "$rpmfile" "$work/upper/gbtest/gearbox.rpm"
cp "$develfile" "$work/upper/gbtest/gearbox-devel.rpm"
cp "$root/tests/system/systemd_driver.sh" "$work/upper/gbtest/driver.sh"
cp "$root/tests/system/systemd_service.sh" "$work/upper/gbtest/systemd_service.sh"
cp "$root/tests/support/lib.sh" "$work/upper/gbtest/lib.sh"
cat > "$work/upper/etc/systemd/system/gbtest.service" <<'EOF'
[Unit]
Description=gearbox system test driver
[Service]
Type=oneshot
ExecStart=/bin/bash -c '/gbtest/driver.sh > /gbtest-out/log 2>&1; echo $? > /gbtest-out/rc'
ExecStartPost=/bin/systemctl poweroff --no-block
TimeoutStartSec=420
EOF

say "booting the container (systemd.unit=gbtest.service)"
rc=0
# shellcheck disable=SC2016  # expanded by the inner sh
unshare -m --propagation private sh -c '
  mount -t overlay overlay -o "lowerdir=/,upperdir=$1/upper,workdir=$1/overlay-work" "$1/image" &&
  exec systemd-nspawn --quiet --register=no --keep-unit --link-journal=no --private-network \
    --machine=gearbox-test -D "$1/image" --bind="$1/out:/gbtest-out" \
    -b -- systemd.unit=gbtest.service' sh "$work" > "$work/boot.log" 2>&1 || rc=$?
if [[ ! -f "$work/out/rc" ]]; then
  tail -40 "$work/boot.log" >&2
  fail "the driver did not finish (nspawn exit $rc)"
fi
sed 's/^/    /' "$work/out/log"
[[ $(cat "$work/out/rc") == 0 ]] || fail "the driver failed (see above)"
say "PASS"
