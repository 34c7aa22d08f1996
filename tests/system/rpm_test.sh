#!/usr/bin/env bash
# rpm_test.sh: builds gearbox's RPM on this (Debian) machine and takes it through a
# whole life: lint, install, upgrade, erase, in scratch roots. Run as root (rpm
# installs files owned by root into the scratch roots).
#
#   1. build-rpm.sh --prebuilt: release 1, release 2 (same files), and release 3 from
#      a copy of the tree whose packaged gearbox.toml differs (to see .rpmnew);
#   2. rpmlint the RPM and the spec with packaging/rpm/rpmlint.toml: only the
#      findings explained in packaging/rpm/RPMLINT.md may appear (printed either way);
#   3. the payload: exact file list, modes, owners, %config(noreplace), scriptlets
#      fully expanded (no literal %systemd_post left by a missing macro);
#   4. an empty scratch root (rpm --root DIR --initdb), --noscripts (it has no
#      /bin/sh for scriptlets): install, `rpm -V`, edit /etc/gearbox/gearbox.toml,
#      upgrade to release 2 (edit kept, no .rpmnew), upgrade to release 3 (edit
#      kept, new default as .rpmnew), erase (edit saved as .rpmsave, every other
#      file gone);
#   5. the same life with scriptlets, in a throwaway overlay of this machine's root
#      (private mount namespace: the host is not touched): %pre creates the gearbox
#      user and group, every scriptlet exits 0 on install, upgrade and erase. Without
#      overlayfs or a private mount namespace the test fails (it never skips this);
#   6. gearbox-devel: its payload, then, installed with gearbox in a scratch root, an
#      example module built from the installed sources against the installed header
#      and gearbox.pc only, put in the module directory and served by the installed
#      gearboxd.
#
# Environment: GEARBOXD=PATH (else Bazel builds it; BAZEL, BAZEL_STARTUP_OPTS as in
# nginx_test.sh), RPM_TEST_FROM_SOURCE=1 builds release 1 from source with Bazel
# inside rpmbuild instead (minutes), RPM_TEST_TIMEOUT=S bounds the run (default 600).
# shellcheck disable=SC2001,SC2012  # sed for indenting; ls of a known directory
set -euo pipefail

if [[ -z "${_RPM_TEST_BOUNDED:-}" ]]; then
  export _RPM_TEST_BOUNDED=1
  exec timeout -k 10 "${RPM_TEST_TIMEOUT:-600}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
say() { echo "rpm_test: $*"; }
fail() { echo "rpm_test: FAIL: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "run as root: rpm sets file ownership in the scratch roots"
# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
need rpm:rpm rpmbuild:rpm rpm2cpio:rpm2cpio rpmlint:rpmlint cpio:cpio git:git \
  useradd:passwd mount:mount awk:mawk promtool:prometheus pkg-config:pkgconf cc:gcc curl:curl

# --- 4./5. life cycle ----------------------------------------------------------------
# lifecycle ROOT LABEL RPMFLAGS...: install 1, edit the config, upgrade to 2 and 3,
# erase; checks files at each step. ROOT is what rpm sees as / (--root).
lifecycle() {
  local r=$1 label=$2
  shift 2
  # q: queries; i: install, upgrade, erase (Debian's rpm wants --force-debian).
  local q=(--root "$r" --dbpath /var/lib/rpm) i=(--root "$r" --dbpath /var/lib/rpm --force-debian "$@")
  local conf=$r/etc/gearbox/gearbox.toml
  say "[$label] rpm --initdb"
  rpm --root "$r" --dbpath /var/lib/rpm --initdb
  say "[$label] rpm -i release 1"
  rpm "${i[@]}" -i --nodeps "$rpm1" > "$work/$label-i.log" 2>&1 ||
    { cat "$work/$label-i.log" >&2; fail "[$label] rpm -i failed"; }
  cat "$work/$label-i.log"
  grep -qi 'scriptlet failed\|warning' "$work/$label-i.log" && fail "[$label] install: see above"
  [[ $(rpm "${q[@]}" -q gearbox) == gearbox-*-1.* ]] || fail "[$label] not installed"
  if [[ " $* " != *" --noscripts "* ]]; then
    # %pre ran in the root: the system user and group exist there.
    local pw
    pw=$(chroot "$r" getent passwd gearbox) || fail "[$label] %pre created no user gearbox"
    say "[$label] %pre created: $pw ($(chroot "$r" getent group gearbox))"
    [[ "$pw" == gearbox:x:*:*:"gearbox application server":/:/sbin/nologin ]] ||
      fail "[$label] unexpected passwd entry: $pw"
  fi
  say "[$label] rpm -V (files as packaged)"
  rpm "${q[@]}" -V --nodeps gearbox || fail "[$label] rpm -V found differences"
  local f
  for f in usr/sbin/gearboxd etc/gearbox/gearbox.toml usr/lib/systemd/system/gearbox.service \
           usr/lib/systemd/system/gearbox.socket usr/lib/systemd/system/gearbox-fastcgi.socket \
           usr/lib/sysusers.d/gearbox.conf usr/share/gearbox/nginx/gearbox-http.conf \
           usr/share/man/man8/gearboxd.8.gz; do
    [[ -e "$r/$f" ]] || fail "[$label] /$f not installed"
  done
  [[ $(stat -c '%a %U:%G' "$r/usr/sbin/gearboxd") == "755 root:root" ]] ||
    fail "[$label] gearboxd: $(stat -c '%a %U:%G' "$r/usr/sbin/gearboxd")"
  [[ $(stat -c '%a %U:%G' "$conf") == "644 root:root" ]] ||
    fail "[$label] gearbox.toml: $(stat -c '%a %U:%G' "$conf")"

  say "[$label] edit /etc/gearbox/gearbox.toml, rpm -U release 2 (same packaged config)"
  sed -i 's/^model = "threadpool"/model = "async"  # edited by rpm_test/' "$conf"
  grep -q 'edited by rpm_test' "$conf" || fail "[$label] could not edit the config"
  cp "$conf" "$work/edited.toml"
  rpm "${i[@]}" -U --nodeps "$rpm2" > "$work/$label-u2.log" 2>&1 ||
    { cat "$work/$label-u2.log" >&2; fail "[$label] rpm -U release 2 failed"; }
  cat "$work/$label-u2.log"
  grep -qi 'scriptlet failed' "$work/$label-u2.log" && fail "[$label] upgrade to 2: see above"
  [[ $(rpm "${q[@]}" -q gearbox) == gearbox-*-2.* ]] || fail "[$label] not upgraded to 2"
  cmp -s "$conf" "$work/edited.toml" || fail "[$label] upgrade to 2 replaced the edited config"
  [[ ! -e "$conf.rpmnew" ]] || fail "[$label] .rpmnew although the packaged config did not change"

  say "[$label] rpm -U release 3 (packaged config changed): edit kept, new one as .rpmnew"
  rpm "${i[@]}" -U --nodeps "$rpm3" > "$work/$label-u3.log" 2>&1 ||
    { cat "$work/$label-u3.log" >&2; fail "[$label] rpm -U release 3 failed"; }
  cat "$work/$label-u3.log"
  grep -qi 'scriptlet failed' "$work/$label-u3.log" && fail "[$label] upgrade to 3: see above"
  cmp -s "$conf" "$work/edited.toml" || fail "[$label] upgrade to 3 replaced the edited config"
  [[ -f "$conf.rpmnew" ]] || fail "[$label] no gearbox.toml.rpmnew after upgrade to 3"
  grep -q 'release 3 changed this file' "$conf.rpmnew" || fail "[$label] .rpmnew is not release 3's"

  say "[$label] rpm -e: files gone, edited config saved as .rpmsave"
  rpm "${i[@]}" -e --nodeps gearbox > "$work/$label-e.log" 2>&1 ||
    { cat "$work/$label-e.log" >&2; fail "[$label] rpm -e failed"; }
  cat "$work/$label-e.log"
  grep -qi 'scriptlet failed' "$work/$label-e.log" && fail "[$label] erase: see above"
  rpm "${q[@]}" -q gearbox >/dev/null 2>&1 && fail "[$label] still installed"
  cmp -s "$conf.rpmsave" "$work/edited.toml" || fail "[$label] no .rpmsave with the edited config"
  [[ ! -e "$conf" ]] || fail "[$label] /etc/gearbox/gearbox.toml left behind"
  for f in usr/sbin/gearboxd usr/lib/systemd/system/gearbox.service usr/lib/systemd/system/gearbox.socket \
           usr/lib/systemd/system/gearbox-fastcgi.socket usr/lib/sysusers.d/gearbox.conf \
           usr/share/gearbox usr/share/doc/gearbox usr/share/licenses/gearbox usr/lib64/gearbox \
           usr/share/man/man8/gearboxd.8.gz; do
    [[ ! -e "$r/$f" ]] || fail "[$label] /$f left behind after erase"
  done
  say "[$label] left in /etc/gearbox: $(ls "$r/etc/gearbox" | tr '\n' ' ')"
}


# --- 5., inside the private mount namespace (the script runs itself under unshare) --
if [[ "${1:-}" == "--in-namespace" ]]; then
  work=$RPM_TEST_WORK rpm1=$RPM_TEST_RPM1 rpm2=$RPM_TEST_RPM2 rpm3=$RPM_TEST_RPM3
  m=$work/ovl/root
  mount -t overlay overlay -o "lowerdir=/,upperdir=$work/ovl/upper,workdir=$work/ovl/work" "$m"
  # Scriptlets run chrooted into $m: give them /dev and /proc.
  mount --rbind /dev "$m/dev"
  mount --rbind /proc "$m/proc"
  lifecycle "$m" overlay
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-rpmtest.XXXXXX")
cleanup() {
  local rc=$?
  if ((rc != 0)); then say "left $work for inspection"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT

# --- 1. build ----------------------------------------------------------------------
find_gearboxd
say "gearboxd: $GEARBOXD"

build() {  # OUTDIR TREE RELEASE [build-rpm.sh args]
  local out=$1 tree=$2 rel=$3
  shift 3
  say "build-rpm.sh --release $rel $* (tree $tree)" >&2
  "$tree/packaging/rpm/build-rpm.sh" --release "$rel" --outdir "$out" "$@" \
    > "$out.log" 2>&1 || { tail -40 "$out.log" >&2; fail "build-rpm.sh failed (log: $out.log)"; }
  find "$out" -name "gearbox-[0-9]*-$rel.*.rpm" ! -name '*.src.rpm' | head -1
}

if [[ "${RPM_TEST_FROM_SOURCE:-0}" == 1 ]]; then
  rpm1=$(build "$work/r1" "$root" 1 --without-check)
else
  rpm1=$(build "$work/r1" "$root" 1 --prebuilt "$GEARBOXD")
fi
rpm2=$(build "$work/r2" "$root" 2 --prebuilt "$GEARBOXD")
# Release 3: the same tree, but the default config it ships has changed.
mkdir -p "$work/tree3"
git -C "$root" ls-files -z --cached --others --exclude-standard |
  (cd "$root" && while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done) |
  tar -C "$root" --ignore-failed-read --null -T - -cf - | tar -C "$work/tree3" -xf -
echo "# release 3 changed this file" >> "$work/tree3/packaging/config/gearbox.toml"
rpm3=$(build "$work/r3" "$work/tree3" 3 --prebuilt "$GEARBOXD")
devel1=$(find "$work/r1" -name "gearbox-devel-[0-9]*-1.*.rpm" | head -1)
for r in "$rpm1" "$rpm2" "$rpm3" "$devel1"; do [[ -f "$r" ]] || fail "missing package ($r)"; done
say "built: $(basename "$rpm1") $(basename "$rpm2") $(basename "$rpm3")"

# --- 2. rpmlint --------------------------------------------------------------------
# Allowed findings, each explained in packaging/rpm/RPMLINT.md.
allowed='^gearbox(-devel)?\.[a-z0-9_]+: (E: no-signature|E: no-packager-tag|W: no-url-tag)$|^gearbox\.[a-z0-9_]+: W: no-manual-page-for-binary gearboxd$|^gearbox-devel\.[a-z0-9_]+: (W: no-documentation|W: requires-on-release gearbox\([a-z0-9_-]+\) = [0-9.]+-1)$|^gearbox\.spec: W: invalid-url Source0: gearbox-[0-9.]+\.tar\.gz$'
lint() {  # FILE
  local out
  out=$(rpmlint -c "$root/packaging/rpm/rpmlint.toml" "$1" 2>&1) || true
  say "rpmlint $(basename "$1"):"
  grep -E ': [EW]: ' <<<"$out" | sed 's/^/    /' || echo "    (nothing)"
  local unexpected
  unexpected=$(grep -E ': [EW]: ' <<<"$out" | grep -Ev "$allowed" || true)
  [[ -z "$unexpected" ]] || fail "rpmlint findings not in RPMLINT.md:"$'\n'"$unexpected"
}
lint "$rpm1"
lint "$devel1"
lint "$root/packaging/rpm/gearbox.spec"

# --- 3. payload --------------------------------------------------------------------
say "payload: file list, modes, owners, flags"
# mode owner group flags path (flags: c = %config, n = noreplace, d = %doc, l = %license)
actual=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm1" |
  grep -v '^[^ ]* [^ ]* [^ ]* */usr/lib/\.build-id' | awk '{ if (NF == 3) print $1, $2, "-", $3; else print }')
expected="drwxr-xr-x root:root - /etc/gearbox
-rw-r--r-- root:root cn /etc/gearbox/gearbox.toml
-rw-r--r-- root:root - /usr/lib/systemd/system/gearbox-fastcgi.socket
-rw-r--r-- root:root - /usr/lib/systemd/system/gearbox.service
-rw-r--r-- root:root - /usr/lib/systemd/system/gearbox.socket
-rw-r--r-- root:root - /usr/lib/sysusers.d/gearbox.conf
drwxr-xr-x root:root - /usr/lib64/gearbox
drwxr-xr-x root:root - /usr/lib64/gearbox/modules
-rwxr-xr-x root:root - /usr/sbin/gearboxd
drwxr-xr-x root:root - /usr/share/doc/gearbox
-rw-r--r-- root:root d /usr/share/doc/gearbox/README.md
-rw-r--r-- root:root d /usr/share/doc/gearbox/gearbox.toml
drwxr-xr-x root:root - /usr/share/gearbox
drwxr-xr-x root:root - /usr/share/gearbox/nginx
-rw-r--r-- root:root - /usr/share/gearbox/nginx/gearbox-fastcgi.conf
-rw-r--r-- root:root - /usr/share/gearbox/nginx/gearbox-http.conf
-rw-r--r-- root:root - /usr/share/gearbox/nginx/gearbox-multihost.conf
-rw-r--r-- root:root - /usr/share/gearbox/nginx/gearbox-status.conf
-rw-r--r-- root:root - /usr/share/gearbox/nginx/gearbox-upstream.conf
drwxr-xr-x root:root - /usr/share/gearbox/prometheus
-rw-r--r-- root:root - /usr/share/gearbox/prometheus/gearbox-rules.yml
-rw-r--r-- root:root - /usr/share/gearbox/prometheus/gearbox.yml
drwxr-xr-x root:root - /usr/share/licenses/gearbox
-rw-r--r-- root:root l /usr/share/licenses/gearbox/COPYING
-rw-r--r-- root:root l /usr/share/licenses/gearbox/LICENSE
-rw-r--r-- root:root d /usr/share/man/man8/gearboxd.8.gz"
# The docs/ pages are %doc files, one per file in the tree's docs/.
for page in "$root"/docs/*.md; do
  expected+=$'\n'"-rw-r--r-- root:root d /usr/share/doc/gearbox/$(basename "$page")"
done
# The Lua examples (docs/lua.md), one per file in the tree's sdk/examples/lua.
expected+=$'\n'"drwxr-xr-x root:root - /usr/share/gearbox/examples"
expected+=$'\n'"drwxr-xr-x root:root - /usr/share/gearbox/examples/lua"
for example in "$root"/sdk/examples/lua/*.lua; do
  expected+=$'\n'"-rw-r--r-- root:root - /usr/share/gearbox/examples/lua/$(basename "$example")"
done
# Compared as sets of lines (sorted by path): rpm's listing order is not the point.
expected=$(sort -k4 <<<"$expected")
actual=$(sort -k4 <<<"$actual")
if [[ "$actual" != "$expected" ]]; then
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  fail "payload differs from the expected list (< expected, > actual)"
fi
echo "$actual" | sed 's/^/    /'

say "payload: contents match the tree"
extract=$work/extract
mkdir -p "$extract"
(cd "$extract" && rpm2cpio "$rpm1" | cpio -idm --quiet)
for pair in packaging/config/gearbox.toml:etc/gearbox/gearbox.toml \
            packaging/systemd/gearbox.service:usr/lib/systemd/system/gearbox.service \
            packaging/systemd/gearbox.socket:usr/lib/systemd/system/gearbox.socket \
            packaging/systemd/gearbox-fastcgi.socket:usr/lib/systemd/system/gearbox-fastcgi.socket \
            packaging/systemd/gearbox.sysusers:usr/lib/sysusers.d/gearbox.conf \
            packaging/nginx/gearbox-upstream.conf:usr/share/gearbox/nginx/gearbox-upstream.conf \
            packaging/nginx/gearbox-status.conf:usr/share/gearbox/nginx/gearbox-status.conf \
            packaging/prometheus/gearbox.yml:usr/share/gearbox/prometheus/gearbox.yml \
            packaging/prometheus/gearbox-rules.yml:usr/share/gearbox/prometheus/gearbox-rules.yml; do
  cmp -s "$root/${pair%%:*}" "$extract/${pair#*:}" || fail "/${pair#*:} differs from ${pair%%:*}"
done
"$extract/usr/sbin/gearboxd" -v >/dev/null || fail "the packaged gearboxd does not run"
"$extract/usr/sbin/gearboxd" -t -c "$extract/etc/gearbox/gearbox.toml" ||
  fail "the packaged gearbox.toml does not pass gearboxd -t"
# As installed: gearbox.yml finds gearbox-rules.yml next to it.
promtool check config "$extract/usr/share/gearbox/prometheus/gearbox.yml" > /dev/null ||
  fail "the packaged gearbox.yml does not pass promtool check config"
zcat "$extract/usr/share/man/man8/gearboxd.8.gz" | sed -n 1,3p | grep -q '^\.TH GEARBOXD 8' ||
  fail "gearboxd.8.gz is not the man page"

say "payload: scriptlets and dependencies"
scripts=$(rpm -qp --scripts "$rpm1")
echo "$scripts" | sed 's/^/    /'
grep -Eq '%[{?a-z_]' <<<"$scripts" && fail "a macro was left unexpanded in the scriptlets"
grep -q 'useradd -r -g gearbox' <<<"$scripts" || fail "%pre does not create the user"
grep -q 'install-system-units gearbox.socket gearbox-fastcgi.socket gearbox.service' <<<"$scripts" ||
  fail "%post does not preset the units"
grep -q 'remove-system-units gearbox.service gearbox.socket gearbox-fastcgi.socket' <<<"$scripts" ||
  fail "%preun does not stop the units"
grep -q 'mark-restart-system-units gearbox.service' <<<"$scripts" ||
  fail "%postun does not restart the service"
reqs=$(rpm -qp --requires "$rpm1")
for r in 'shadow-utils' 'systemd' 'luajit'; do
  grep -q "^$r" <<<"$reqs" || fail "no Requires on $r"
done
rpm -qp --provides "$rpm1" | grep -q '^bundled(llhttp) = 8.1.0$' || fail "no bundled(llhttp) Provides"

say "=== empty scratch root, --noscripts ==="
mkdir -p "$work/root"
lifecycle "$work/root" empty --noscripts
# Only the operator's files remain: rpm never deletes what it did not install.
[[ $(ls "$work/root/etc/gearbox" | sort | tr '\n' ' ') == "gearbox.toml.rpmnew gearbox.toml.rpmsave " ]] ||
  fail "unexpected files in /etc/gearbox: $(ls "$work/root/etc/gearbox")"

# With scriptlets: in an overlay of the host's root, inside a private mount
# namespace, so useradd and friends write to the overlay only.
mkdir -p "$work/ovl/upper" "$work/ovl/work" "$work/ovl/root"
if ! err=$(unshare -m --propagation private sh -c \
     "mount -t overlay overlay -o lowerdir=/,upperdir=$work/ovl/upper,workdir=$work/ovl/work $work/ovl/root" \
     2>&1); then
  fail "cannot mount an overlay of / in a private mount namespace, which the scriptlet" \
    "life cycle needs (root, overlayfs, unshare -m): $err"
fi
say "=== overlay of / with scriptlets (private mount namespace) ==="
host_ids=$(cat /etc/passwd /etc/group | sha256sum)
RPM_TEST_RPM1=$rpm1 RPM_TEST_RPM2=$rpm2 RPM_TEST_RPM3=$rpm3 RPM_TEST_WORK=$work \
  unshare -m --propagation private bash "$0" --in-namespace ||
  fail "life cycle with scriptlets failed"
[[ $(cat /etc/passwd /etc/group | sha256sum) == "$host_ids" ]] ||
  fail "the host's /etc/passwd or /etc/group changed"
# --- 6. gearbox-devel ---------------------------------------------------------------
say "gearbox-devel payload"
actual=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILEFLAGS:fflags} %{FILENAMES}\n]' "$devel1" |
  awk '{ if (NF == 3) print $1, $2, "-", $3; else print }')
expected="drwxr-xr-x root:root - /usr/include/gearbox
-rw-r--r-- root:root - /usr/include/gearbox/module.h
-rw-r--r-- root:root - /usr/include/gearbox/module.hpp
-rw-r--r-- root:root - /usr/lib64/pkgconfig/gearbox.pc
drwxr-xr-x root:root - /usr/share/gearbox/examples
-rw-r--r-- root:root - /usr/share/gearbox/examples/hello.c
-rw-r--r-- root:root - /usr/share/gearbox/examples/timerwait.c
drwxr-xr-x root:root - /usr/share/licenses/gearbox-devel
-rw-r--r-- root:root l /usr/share/licenses/gearbox-devel/LICENSE"
if [[ "$actual" != "$expected" ]]; then
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  fail "gearbox-devel payload differs from the expected list (< expected, > actual)"
fi
rpm -qp --requires "$devel1" | grep -q '^gearbox(x86-64) = ' || fail "gearbox-devel does not require gearbox"
rpm -qp --qf '%{LICENSE}\n' "$rpm1" | grep -qx 'Apache-2.0 AND MIT' || fail "License: is not Apache-2.0 AND MIT"

say "=== gearbox + gearbox-devel in a scratch root: build an example, load it ==="
dr=$work/devroot
mkdir -p "$dr"
rpm --root "$dr" --dbpath /var/lib/rpm --initdb
rpm --root "$dr" --dbpath /var/lib/rpm --force-debian -i --nodeps --noscripts "$rpm1" "$devel1" ||
  fail "installing gearbox and gearbox-devel failed"
# pkg-config as on the installed system, with the scratch root as the sysroot.
pc() { PKG_CONFIG_LIBDIR=$dr/usr/lib64/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dr pkg-config "$@"; }
moduledir=$(PKG_CONFIG_LIBDIR=$dr/usr/lib64/pkgconfig pkg-config --variable=moduledir gearbox)
[[ "$moduledir" == /usr/lib64/gearbox/modules && -d "$dr$moduledir" ]] ||
  fail "gearbox.pc moduledir $moduledir is not the packaged module directory"
mkdir -p "$work/devbuild"
cp "$dr/usr/share/gearbox/examples/timerwait.c" "$work/devbuild/"
say "cc -shared -fPIC $(pc --cflags gearbox) timerwait.c -o libtimerwait.so"
(cd "$work/devbuild" && cc -shared -fPIC $(pc --cflags gearbox) timerwait.c -o libtimerwait.so) ||
  fail "the example does not build against the installed devel files"
install -m 0755 "$work/devbuild/libtimerwait.so" "$dr$moduledir/"
cat > "$work/devbuild/tw.toml" <<EOT
[server]
model = "async"
[[listen]]
address = "127.0.0.1:0"
[[module]]
name = "timerwait"
path = "$dr$moduledir/libtimerwait.so"
[[route]]
path = "/tw"
handler = "timerwait"
EOT
"$dr/usr/sbin/gearboxd" -t -c "$work/devbuild/tw.toml" || fail "the installed gearboxd rejects the module"
: > "$work/devbuild/gearboxd.log"  # exists before the background job opens it
"$dr/usr/sbin/gearboxd" -c "$work/devbuild/tw.toml" >> "$work/devbuild/gearboxd.log" 2>&1 &
gpid=$!
wait_for "[[ -n \$(bound_port '$work/devbuild/gearboxd.log') ]]" 5 || true
port=$(bound_port "$work/devbuild/gearboxd.log")
body=$(curl -s --max-time 5 "http://127.0.0.1:$port/tw?ms=20" || true)
kill -TERM "$gpid"
wait "$gpid" || fail "gearboxd did not stop cleanly"
[[ "$body" == "waited 20 ms" ]] || { cat "$work/devbuild/gearboxd.log" >&2; fail "/tw?ms=20 answered '$body'"; }
say "the module built from gearbox-devel answers: $body"
rpm --root "$dr" --dbpath /var/lib/rpm --force-debian -e --nodeps --noscripts gearbox-devel ||
  fail "rpm -e gearbox-devel failed"
# /usr/share/gearbox/examples stays: gearbox owns it too, for the Lua examples.
for f in usr/include/gearbox usr/lib64/pkgconfig/gearbox.pc \
         usr/share/gearbox/examples/hello.c usr/share/gearbox/examples/timerwait.c; do
  [[ ! -e "$dr/$f" ]] || fail "/$f left behind after erasing gearbox-devel"
done
[[ -e "$dr/usr/share/gearbox/examples/lua/hello.lua" ]] ||
  fail "erasing gearbox-devel took gearbox's Lua examples"
say "PASS"
