#!/usr/bin/env bash
# build-rpm.sh: builds gearbox's binary RPM (and optionally the SRPM) from this
# working tree, on EL8/EL9 or on Debian.
#
#   packaging/rpm/build-rpm.sh [options] [-- extra rpmbuild arguments]
#     --prebuilt PATH   package this gearboxd instead of building it (fast; CI)
#     --release N       the RPM Release number (default 1)
#     --outdir DIR      where the .rpm files go (default: a new temporary directory)
#     --srpm            also build the source RPM (rpmbuild -ba instead of -bb)
#     --srpm-only       only the source RPM (rpmbuild -bs): make it anywhere, then
#                       `rpmbuild --rebuild` it on EL8/EL9 (it carries llhttp)
#     --llhttp-src DIR  llhttp sources to bundle (default /usr/share/llhttp, Debian's
#                       node-llhttp; on EL unpack an llhttp 8.1.0 release there)
#     --without-check   skip %check (bazel test //...) in a source build
#   It prints the paths of the packages it built, one per line, last.
#
# Why a script and not `rpmbuild -ta`: Source0 is made from the *working tree*
# (tracked and untracked files, minus .gitignore'd ones), so uncommitted changes are
# packaged as you see them; and the tarball carries llhttp's sources, so the SRPM
# builds on EL, which has no llhttp package.
#
# On Debian (rpm 4.18 without systemd macros, an RPM database that knows none of the
# BuildRequires) it loads macros.systemd-el9 and macros.debian-host and passes
# --nodeps. None of that happens on EL/Fedora. Everything goes to a private
# _topdir: ~/rpmbuild is not touched.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

prebuilt="" release=1 outdir="" mode=-bb llhttp_src=/usr/share/llhttp check=1
extra=()
while (($#)); do
  case "$1" in
    --prebuilt) prebuilt=$(realpath "$2"); shift 2 ;;
    --release) release=$2; shift 2 ;;
    --outdir) outdir=$2; shift 2 ;;
    --srpm) mode=-ba; shift ;;
    --srpm-only) mode=-bs; shift ;;
    --llhttp-src) llhttp_src=$2; shift 2 ;;
    --without-check) check=0; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-rpm.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

spec=$here/gearbox.spec
version=$(awk '/^Version:/ {print $2; exit}' "$spec")
# The spec's Version and gearboxd's own must agree: `gearboxd -v` is what operators
# compare with `rpm -q gearbox`.
code_version=$(sed -n 's/.*kVersion = "\([^"]*\)".*/\1/p' "$root/daemon/main.cc")
if [[ -n "$code_version" && "$code_version" != "$version" ]]; then
  echo "build-rpm.sh: spec Version $version != daemon/main.cc kVersion $code_version" >&2
  exit 1
fi
[[ -n "$prebuilt" && ! -x "$prebuilt" ]] && { echo "build-rpm.sh: $prebuilt is not an executable" >&2; exit 1; }

topdir=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-rpm.XXXXXX")
[[ -z "$outdir" ]] && outdir=$topdir/out
mkdir -p "$topdir"/{SOURCES,SPECS,BUILD,BUILDROOT,RPMS,SRPMS} "$outdir"
echo "build-rpm.sh: version $version-$release, _topdir $topdir"
trap 'echo "build-rpm.sh: failed; its files are in $topdir" >&2' ERR

# --- Source0: the working tree -------------------------------------------------
stage=$topdir/stage/gearbox-$version
mkdir -p "$stage"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked and untracked files, without ignored ones (bazel-* symlinks) and
  # without tracked files deleted in the working tree.
  git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done) \
    > "$topdir/files"
else
  (cd "$root" && find . -path './bazel-*' -prune -o -path './.git' -prune -o \
    -type f -print0) > "$topdir/files"
fi
# --ignore-failed-read: a file deleted since `git ls-files` (an editor temp file) is skipped.
tar -C "$root" --ignore-failed-read --null -T "$topdir/files" -cf - | tar -C "$stage" -xf -

# llhttp: its three C files and header, plus its license (MIT). Accepts Debian's
# layout (DIR/*.c + DIR/../include/llhttp/llhttp.h) and a release tree
# (DIR/src/*.c + DIR/include/llhttp.h).
mkdir -p "$stage/llhttp"
c_dir=""
for d in "$llhttp_src" "$llhttp_src/src"; do
  [[ -f "$d/llhttp.c" && -f "$d/api.c" && -f "$d/http.c" ]] && { c_dir=$d; break; }
done
h_file=""
for h in "$llhttp_src/llhttp.h" "$llhttp_src/include/llhttp.h" \
         "$llhttp_src/include/llhttp/llhttp.h" "$llhttp_src/../include/llhttp/llhttp.h"; do
  [[ -f "$h" ]] && { h_file=$h; break; }
done
if [[ -z "$c_dir" || -z "$h_file" ]]; then
  echo "build-rpm.sh: no llhttp sources in $llhttp_src (use --llhttp-src DIR)" >&2
  exit 1
fi
cp -p "$c_dir"/{api.c,http.c,llhttp.c} "$h_file" "$stage/llhttp/"
if [[ -f "$llhttp_src/LICENSE-MIT" ]]; then
  cp -p "$llhttp_src/LICENSE-MIT" "$stage/llhttp/COPYING"
else
  # Debian's node-llhttp does not install llhttp's LICENSE-MIT; this is its text.
  cat > "$stage/llhttp/COPYING" <<'EOF'
llhttp (https://github.com/nodejs/llhttp), compiled into gearboxd.

This software is licensed under the MIT License.

Copyright Fedor Indutny, 2018.

Permission is hereby granted, free of charge, to any person obtaining a
copy of this software and associated documentation files (the
"Software"), to deal in the Software without restriction, including
without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to permit
persons to whom the Software is furnished to do so, subject to the
following conditions:

The above copyright notice and this permission notice shall be included
in all copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
USE OR OTHER DEALINGS IN THE SOFTWARE.
EOF
fi

# Reproducible tarball: sorted, fixed owner and mtime.
epoch=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)
tar -C "$topdir/stage" --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime="@$epoch" -czf "$topdir/SOURCES/gearbox-$version.tar.gz" "gearbox-$version"
cp "$spec" "$topdir/SPECS/"

# --- rpmbuild ------------------------------------------------------------------
args=(--define "_topdir $topdir" --define "gearbox_release $release")
if [[ "$(rpm --eval '%{_unitdir}')" == "%{_unitdir}" ]]; then
  # Debian: no systemd macros, and no RPM-packaged build dependencies to check.
  # macros.debian-host: EL's docdir, compressed man pages, stripped binaries.
  echo "build-rpm.sh: rpm has no systemd macros (Debian): loading macros.systemd-el9" \
       "and macros.debian-host, --nodeps"
  args+=(--load "$here/macros.systemd-el9" --load "$here/macros.debian-host" --nodeps)
  # macros.debian-host strips with these; without them gearboxd would ship unstripped.
  for tool in file:file strip:binutils; do
    command -v "${tool%%:*}" >/dev/null ||
      { echo "build-rpm.sh: ${tool%%:*} not found: apt-get install ${tool#*:}" >&2; exit 1; }
  done
fi
[[ -n "$prebuilt" ]] && args+=(--define "prebuilt_gearboxd $prebuilt")
((check)) || args+=(--without check)
if [[ $mode == -bs ]]; then
  :  # nothing is compiled
elif [[ -z "$prebuilt" && -z "${BAZEL_OUTPUT_BASE:-}" ]]; then
  # A throwaway output base: the build tree lives in $topdir and goes away with it.
  args+=(--define "bazel_output_base $topdir/bazel")
elif [[ -n "${BAZEL_OUTPUT_BASE:-}" ]]; then
  args+=(--define "bazel_output_base $BAZEL_OUTPUT_BASE")
fi

echo "build-rpm.sh: rpmbuild $mode ${args[*]} ${extra[*]} $topdir/SPECS/gearbox.spec"
rpmbuild "$mode" "${args[@]}" "${extra[@]}" "$topdir/SPECS/gearbox.spec"

find "$topdir/RPMS" "$topdir/SRPMS" -name '*.rpm' -exec cp {} "$outdir/" \;
# Keep only the packages (a failed build leaves everything in $topdir to look at).
chmod -R u+w "$topdir/bazel" 2>/dev/null || true  # Bazel's output base is read-only
if [[ "$(realpath "$outdir")" == "$topdir"/* ]]; then
  find "$topdir" -mindepth 1 -maxdepth 1 ! -name out -exec rm -rf {} +
else
  rm -rf "$topdir"
fi
find "$outdir" -name '*.rpm' | sort
