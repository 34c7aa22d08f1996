# Shared by the tests/system scripts (sourced, not run). Expects $root (the
# repository) and the functions say/fail to exist. The shell tests' common
# functions (wait_until, wait_for, alive, stop_pid, stop_group, free_port) come
# from tests/support/lib.sh.

# shellcheck source=tests/support/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"

# Sets GEARBOXD to the binary under test: $GEARBOXD if given, else a Bazel build
# of //daemon:gearboxd (BAZEL, BAZEL_STARTUP_OPTS: the command and its startup
# options; --symlink_prefix=/ leaves the workspace's bazel-* links alone).
find_gearboxd() {
  if [[ -z "${GEARBOXD:-}" ]]; then
    say "building //daemon:gearboxd"
    # shellcheck disable=SC2086  # BAZEL_STARTUP_OPTS is a word list
    (cd "$root" && ${BAZEL:-bazel} ${BAZEL_STARTUP_OPTS:-} build --symlink_prefix=/ //daemon:gearboxd)
    # shellcheck disable=SC2086
    GEARBOXD=$(cd "$root" && ${BAZEL:-bazel} ${BAZEL_STARTUP_OPTS:-} info bazel-bin 2>/dev/null)/daemon/gearboxd
  fi
  [[ -x "$GEARBOXD" ]] || fail "no gearboxd at $GEARBOXD"
  export GEARBOXD
}

# need TOOL:PACKAGE...: fails unless every TOOL is on PATH, naming the Debian package
# that ships it (.ci/setup installs them all). A missing tool is a failure, never a
# reason to skip a check.
need() {
  local pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null ||
      fail "${pair%%:*} not found: apt-get install ${pair#*:} (Debian bookworm; .ci/setup installs it)"
  done
}
