#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (Bazel's toolchain is gcc, which has no
# libFuzzer): ASan + UBSan + libFuzzer, -O1 -g. Incremental: an object is rebuilt
# only when its source or a header it includes changed.
#
#   tests/fuzz/build.sh [TARGET...]     # default: every target
#
# Targets: http_codec_fuzzer, fastcgi_codec_fuzzer, config_loader_fuzzer.
# Output: $FUZZ_OUT (default tests/fuzz/out, ignored by git).
# Needs: clang (clang++-14) and libclang-rt-14-dev (.ci/setup installs both).
set -euo pipefail
shopt -s inherit_errexit
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/../.."

OUT=${FUZZ_OUT:-tests/fuzz/out}
mkdir -p "$OUT/obj" "$OUT/gen/config"
OUT=$(cd "$OUT" && pwd)

FUZZ_CXX=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
FUZZ_CC=${FUZZ_CC:-$(command -v clang || command -v clang-14 || true)}
if [[ -z "$FUZZ_CXX" || -z "$FUZZ_CC" ]]; then
  echo "build.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
# -fsanitize=fuzzer links this runtime; without it the link fails obscurely.
fuzzer_rt=$("$FUZZ_CC" -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a
if [[ ! -f "$fuzzer_rt" ]]; then
  echo "build.sh: $fuzzer_rt not found (apt-get install libclang-rt-14-dev)" >&2
  exit 1
fi
LLHTTP_SRC=${LLHTTP_SRC:-/usr/share/llhttp}
LLHTTP_INC=${LLHTTP_INC:-/usr/share/include/llhttp}

SAN=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
     -fno-omit-frame-pointer)
CXXFLAGS=(-std=c++20 -O1 -g "${SAN[@]}" -I. -I"$LLHTTP_INC" -Wall -Wextra
          -Wno-missing-field-initializers)
CFLAGS=(-O1 -g "${SAN[@]}" -I"$LLHTTP_INC" -w)
EXTRA_CXXFLAGS=()
LDLIBS=()

# config/BUILD's genrule, verbatim: default.toml as a raw string literal.
gen_default_config() {
  local src=config/default.toml out="$OUT/gen/config/default_config.cc"
  if [[ -f "$out" && "$out" -nt "$src" ]]; then return; fi
  if grep -q ')gearbox_toml_' "$src"; then
    echo "$src: contains the raw string delimiter )gearbox_toml_" >&2
    exit 1
  fi
  {
    echo '// Generated from config/default.toml by tests/fuzz/build.sh.'
    echo '#include "config/loader.h"'
    echo 'namespace gearbox {'
    echo 'std::string_view EmbeddedDefaultConfig() {'
    printf '%s' '  static constexpr char kText[] = R"gearbox_toml_('
    cat "$src"
    echo ')gearbox_toml_";'
    echo '  return std::string_view(kText, sizeof kText - 1);'
    echo '}'
    echo '}  // namespace gearbox'
  } > "$out.tmp"
  mv "$out.tmp" "$out"
}

# True when $1 (an object) is missing or older than anything in its .d file.
stale() {
  local obj=$1 dep=${1%.o}.d f
  [[ -f "$obj" && -f "$dep" ]] || return 0
  [[ "$SELF" -nt "$obj" ]] && return 0
  for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$dep"); do
    [[ ! -e "$f" || "$f" -nt "$obj" ]] && return 0
  done
  return 1
}

# compile SRC -> prints the object path
compile() {
  local src=$1 name obj
  name=$(echo "$src" | sed -e "s|^$OUT/||" -e 's|^/||' -e 's|[/.]|_|g')
  obj="$OUT/obj/$name.o"
  if stale "$obj"; then
    echo "  CC  $src" >&2
    if [[ "$src" == *.c ]]; then
      "$FUZZ_CC" "${CFLAGS[@]}" -MMD -MF "${obj%.o}.d" -c "$src" -o "$obj"
    else
      "$FUZZ_CXX" "${EXTRA_CXXFLAGS[@]}" "${CXXFLAGS[@]}" -MMD -MF "${obj%.o}.d" -c "$src" -o "$obj"
    fi
  fi
  echo "$obj"
}

link() {
  local target=$1; shift
  local objs=() src
  for src in "$@"; do objs+=("$(compile "$src")"); done
  local bin="$OUT/$target" newest=0
  for src in "${objs[@]}" tests/fuzz/build.sh; do
    [[ -f "$bin" && ! "$src" -nt "$bin" ]] || newest=1
  done
  if ((newest)); then
    echo "  LD  $target" >&2
    "$FUZZ_CXX" "${SAN[@]}" "${objs[@]}" "${LDLIBS[@]}" -o "$bin"
  fi
  echo "build.sh: $bin"
}

# //daemon:http_syntax's sources.
http_syntax_sources() {
  echo daemon/http/http_syntax.cc daemon/http/request_target.cc \
    daemon/http/field_values.cc
}

# //daemon:request's sources (the config fuzzer links the handlers, which
# reach all of them).
request_sources() {
  echo daemon/client_address.cc daemon/handler.cc daemon/request.cc \
    daemon/response.cc daemon/worker_home.cc
}

LLHTTP=("$LLHTTP_SRC/api.c" "$LLHTTP_SRC/http.c" "$LLHTTP_SRC/llhttp.c")

build_http() {
  # daemon/http/ holds exactly //daemon:http_codec and //daemon:http_syntax.
  link http_codec_fuzzer tests/fuzz/http_codec_fuzzer.cc daemon/http/*.cc \
    daemon/request.cc daemon/response.cc "${LLHTTP[@]}"
}

build_fastcgi() {
  link fastcgi_codec_fuzzer tests/fuzz/fastcgi_codec_fuzzer.cc \
    daemon/fastcgi/*.cc $(http_syntax_sources) daemon/request.cc \
    daemon/response.cc
}

# clang 14 cannot capture a structured binding in a lambda (P1091, clang 16+);
# gcc can, and config/loader.cc did. Until that line changes, compile a copy
# with an init-capture instead (same meaning).
config_sources() {
  local f pattern='[&](auto& f) { return f.name == key->str(); }'
  for f in config/*.cc; do
    if [[ "$f" == config/loader.cc ]] && grep -qF "$pattern" "$f"; then
      echo "build.sh: note: compiling a copy of $f with [&, key = key] (clang 14)" >&2
      sed 's/\[&\](auto& f) { return f.name == key->str(); }/[\&, key = key](auto\& f) { return f.name == key->str(); }/' \
        "$f" > "$OUT/gen/config/loader.cc.tmp"
      if ! cmp -s "$OUT/gen/config/loader.cc.tmp" "$OUT/gen/config/loader.cc"; then
        mv "$OUT/gen/config/loader.cc.tmp" "$OUT/gen/config/loader.cc"
      fi
      echo "$OUT/gen/config/loader.cc"
    else
      echo "$f"
    fi
  done
}

# toml++ 3.3.0 (Debian bookworm) reaches __builtin_unreachable() in
# is_non_ascii_horizontal_whitespace() for most non-ASCII characters where a key
# or whitespace may start (upstream issues #190 and #295, fixed by PR #305).
# UBSan stops at once on it, so the config fuzzer would never get past its
# first non-ASCII input. The fuzz build uses a copy of the headers where that
# default case returns false (what the fix does, and what gcc -O2 happens to
# do). Reported separately; gearboxd itself still uses the system headers.
toml_overlay() {
  local src=${TOMLPP_INC:-/usr/include/toml++} dst="$OUT/gen/include/toml++"
  local header=impl/unicode_autogenerated.h
  if ! sed -n '/is_non_ascii_horizontal_whitespace(char32_t c)/,/^[[:space:]]*}$/p' \
      "$src/$header" | grep -q 'default: TOML_UNREACHABLE;'; then
    rm -rf "$OUT/gen/include"
    return  # a fixed toml++: use it as it is
  fi
  if [[ ! -f "$dst/$header" || "$src/$header" -nt "$dst/$header" || "$SELF" -nt "$dst/$header" ]]; then
    echo "build.sh: note: toml++ overlay with the #305 fix in $dst" >&2
    rm -rf "$dst"
    mkdir -p "$(dirname "$dst")"
    cp -r "$src" "$dst"
    sed -i '/is_non_ascii_horizontal_whitespace(char32_t c)/,/^[[:space:]]*}$/ s/default: TOML_UNREACHABLE;/default: return false;/' \
      "$dst/$header"
  fi
  TOML_OVERLAY=(-I"$OUT/gen/include")
}

build_config() {
  gen_default_config
  LDLIBS=(-lspdlog -lfmt -lpq -lluajit-5.1 -pthread)
  TOML_OVERLAY=()
  toml_overlay
  # As third_party/system/spdlog.BUILD: Debian's shared spdlog, external fmt.
  EXTRA_CXXFLAGS=("${TOML_OVERLAY[@]}" -DSPDLOG_SHARED_LIB -DSPDLOG_COMPILED_LIB
                  -DSPDLOG_FMT_EXTERNAL)
  # The real handler table hands the loader its schemas; its rows point at
  # the handlers' factories, so the handlers and what they use link in too.
  link config_loader_fuzzer tests/fuzz/config_loader_fuzzer.cc \
    $(config_sources) "$OUT/gen/config/default_config.cc" \
    daemon/handlers/*.cc daemon/handlers/postgres/*.cc \
    daemon/handlers/lua/*.cc $(request_sources) $(http_syntax_sources) \
    daemon/metrics/worker_stats.cc daemon/metrics/lifetime_stats.cc \
    daemon/metrics/route_reporter.cc daemon/metrics/route_history.cc \
    daemon/advisor/advisor.cc \
    daemon/advisor/machine.cc \
    daemon/logging.cc
  EXTRA_CXXFLAGS=()
  LDLIBS=()
}

targets=("$@")
((${#targets[@]})) || targets=(http_codec_fuzzer fastcgi_codec_fuzzer config_loader_fuzzer)
for t in "${targets[@]}"; do
  case "$t" in
    http_codec_fuzzer) build_http ;;
    fastcgi_codec_fuzzer) build_fastcgi ;;
    config_loader_fuzzer) build_config ;;
    *) echo "build.sh: unknown target $t" >&2; exit 2 ;;
  esac
done
