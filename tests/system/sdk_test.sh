#!/usr/bin/env bash
# sdk_test.sh: the module SDK as a module author meets it, outside the source
# tree and outside Bazel:
#   1. sdk/install.sh into a scratch root (what gearbox-devel installs);
#   2. the examples, copied from that root, built with nothing but the
#      installed header, exactly as documented:
#        cc -shared -fPIC -I<include dir> timerwait.c -o libtimerwait.so
#      and again with `pkg-config --cflags gearbox`, strict C99/C11, and a C++
#      module (tests/modules/probe.cc) through gearbox/module.hpp;
#   3. docs/modules.md's example ("Writing a module"), extracted from it as
#      written (greet.c, its build line, its TOML), built and loaded;
#   4. the built modules loaded by gearboxd under every model (-t, then a run
#      with real requests).
# Environment: GEARBOXD=PATH (else Bazel builds it), SDK_TEST_TIMEOUT=S
# bounds the run (default 300).
set -euo pipefail

if [[ -z "${_SDK_TEST_BOUNDED:-}" ]]; then
  export _SDK_TEST_BOUNDED=1
  exec timeout -k 10 "${SDK_TEST_TIMEOUT:-300}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
say() { echo "sdk_test: $*"; }
fail() { echo "sdk_test: FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
need cc:gcc c++:g++ pkg-config:pkgconf nm:binutils curl:curl awk:mawk
find_gearboxd

work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-sdktest.XXXXXX")
pids=()
cleanup() {
  local rc=$? p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if ((rc != 0)); then say "left $work for inspection"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT

# --- 1. install ---------------------------------------------------------------------
dest=$work/root
version=$(sed -n 's/.*kVersion = "\([^"]*\)".*/\1/p' "$root/daemon/main.cc")
"$root/sdk/install.sh" --destdir "$dest" --includedir /usr/include \
  --libdir /usr/lib64 --datadir /usr/share --version "$version"
inc=$dest/usr/include
export PKG_CONFIG_PATH=$dest/usr/lib64/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
say "installed: $(cd "$dest" && find . -type f | sort | tr '\n' ' ')"
[[ "$(pkg-config --modversion gearbox)" == "$version" ]] || fail "gearbox.pc: wrong version"
[[ "$(pkg-config --cflags gearbox | xargs)" == "-I$inc" ]] ||
  fail "gearbox.pc: cflags $(pkg-config --cflags gearbox), expected -I$inc"
[[ "$(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=moduledir gearbox)" == /usr/lib64/gearbox/modules ]] ||
  fail "gearbox.pc: moduledir"

# --- 2. the examples, out of tree ------------------------------------------------------
build=$work/build
mkdir -p "$build"
cp "$dest"/usr/share/gearbox/examples/*.c "$build/"
cd "$build"
for m in hello timerwait; do
  say "cc -shared -fPIC -I$inc $m.c -o lib$m.so"
  cc -shared -fPIC -I"$inc" "$m.c" -o "lib$m.so"
  for std in c99 c11; do
    cc -std=$std -Wall -Wextra -pedantic -Werror -shared -fPIC $(pkg-config --cflags gearbox) \
      "$m.c" -o "lib$m-$std.so" || fail "$m.c does not build with -std=$std -pedantic -Werror"
  done
  nm -D --defined-only "lib$m.so" | grep -q ' T gearbox_module_init$' ||
    fail "lib$m.so does not export gearbox_module_init"
done
cp "$root/tests/modules/probe.cc" "$build/"
say "c++ -std=c++17 ... probe.cc (gearbox/module.hpp)"
c++ -std=c++17 -Wall -Wextra -Werror -shared -fPIC $(pkg-config --cflags gearbox) probe.cc \
  -o libprobe.so

# --- 3. docs/modules.md's example, as written ---------------------------------------------------
# The fenced block right after "<!-- sdk_test: NAME -->".
extract() {
  awk -v tag="<!-- sdk_test: $1 -->" '
    $0 == tag { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$root/docs/modules.md"
}
extract greet.c > greet.c
extract build > build.sh
extract greet.toml > greet.toml
[[ -s greet.c && -s build.sh && -s greet.toml ]] || fail "docs/modules.md's sdk_test blocks not found"
say "docs/modules.md: $(cat build.sh)"
bash -euo pipefail build.sh || fail "docs/modules.md's build line failed"
[[ -f libgreet.so ]] || fail "docs/modules.md's build line made no libgreet.so"
cc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$inc" greet.c ||
  fail "docs/modules.md's greet.c is not warning-free C11"
# From a source tree without the RPM: the doc's install.sh + pkg-config block,
# run as written (in the tree, HOME pointed at scratch), then its build line.
extract install > install-sdk.sh
[[ -s install-sdk.sh ]] || fail "docs/modules.md's sdk_test install block not found"
grep -q -- "--version $version\$" install-sdk.sh ||
  fail "docs/modules.md's install block names another version than $version"
mkdir -p "$work/home" "$build/doc"
cp greet.c "$build/doc/"
say "docs/modules.md: sdk/install.sh + pkg-config from the source tree"
(cd "$root" && HOME=$work/home PKG_CONFIG_PATH='' PKG_CONFIG_SYSROOT_DIR='' \
  bash -euo pipefail -c "$(cat "$build/install-sdk.sh")
cd '$build/doc'
$(cat "$build/build.sh")") >/dev/null || fail "docs/modules.md's install block and build line failed"
[[ -f "$build/doc/libgreet.so" ]] || fail "docs/modules.md's install block made no libgreet.so"

# --- 4. load them -----------------------------------------------------------------------
# config MODEL: docs/modules.md's TOML with its path pointed at the build, the
# examples, and one worker (so the greet counter is deterministic).
config() {
  {
    printf '[server]\nmodel = "%s"\n[threadpool]\nthreads = 1\n[prefork]\nworkers = 1\n' "$1"
    printf '[[listen]]\naddress = "127.0.0.1:0"\n\n'
    sed "s|^path = \"/usr/lib64/gearbox/modules/libgreet.so\"|path = \"$build/libgreet.so\"|" greet.toml
    printf '\n[[module]]\nname = "timerwait"\npath = "libtimerwait.so"\n'
    printf '[[module]]\nname = "hello"\npath = "libhello.so"\n'
    printf '[[module]]\nname = "probe"\npath = "libprobe.so"\n'
    printf '[[route]]\npath = "/tw"\nhandler = "timerwait"\n'
    printf '[[route]]\npath = "/hi"\nhandler = "hello"\n'
    printf '[[route]]\npath = "/probe"\nhandler = "probe"\n'
  } > "$build/$1.toml"
}
expect() {  # URL EXPECTED-BODY
  local got
  got=$(curl -s --max-time 5 "$1") || fail "curl $1 failed"
  [[ "$got" == "$2" ]] || fail "$1: got '$got', expected '$2'"
}
for model in prefork threadpool async; do
  config "$model"
  grep -q "path = \"$build/libgreet.so\"" "$model.toml" || fail "docs/modules.md's TOML has no module path to point at the build"
  "$GEARBOXD" -t -c "$model.toml" || fail "gearboxd -t rejects the built modules ($model)"
  : > "$model.log"  # exists before the background job opens it
  "$GEARBOXD" -c "$model.toml" >> "$model.log" 2>&1 &
  pids+=($!)
  wait_for "[[ -n \$(bound_port '$model.log') ]]" 5 || true
  port=$(bound_port "$model.log")
  [[ -n "$port" ]] || { cat "$model.log" >&2; fail "gearboxd ($model) did not listen"; }
  base=http://127.0.0.1:$port
  expect "$base/greet?who=you" "hello, you (request 1 of this worker)"
  expect "$base/greet" "hello, world (request 2 of this worker)"
  expect "$base/tw?ms=20" "waited 20 ms"
  expect "$base/hi" "hello from a module"
  curl -s --max-time 5 "$base/probe?wait=readable" | grep -q '^wakes=start,ready+1r$' ||
    fail "the C++ module's fd wait ($model)"
  grep -q 'event=greet_ready module=greet worker=0 gen=1 msg="worker 0"' "$model.log" ||
    fail "docs/modules.md's module did not log through gearboxd ($model)"
  kill -TERM "${pids[-1]}"
  wait "${pids[-1]}" || fail "gearboxd ($model) did not stop cleanly"
  unset 'pids[-1]'
  say "$model: docs/modules.md's greet, hello, timerwait and probe built out of tree: served"
done
say "PASS"
