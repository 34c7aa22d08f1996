#!/usr/bin/env bash
# Runs the Bazel suite under sanitizers and fails on any report, from the test
# binaries or from the gearboxd processes they spawn.
#
#   tests/sanitizers/run.sh            # asan, then tsan
#   tests/sanitizers/run.sh asan       # one of them
#   BAZEL_STARTUP_OPTS=--output_base=/root/.cache/bazel-fuzz tests/sanitizers/run.sh
#
# asan: --config=asan (gcc -fsanitize=address,undefined) on every unit test and
#       every integration test of every model.
# tsan: --config=tsan on the same tests. threadpool and async are the
#       multi-threaded models; prefork runs too (TSan supports its fork()s,
#       and its parent shares a process with the threads of earlier
#       generations across reloads).
#
# The integration tests spawn the real gearboxd, built in the same
# configuration, so it is sanitized too and inherits the options below through
# the test's environment (--test_env). Its stderr goes to a log file in the
# test's $TEST_TMPDIR, and the harness does not look at its exit status after
# SIGTERM, so a report at exit (a leak, a race found while draining) would go
# unnoticed: every sanitized process therefore writes its reports to
# $SANITIZER_LOG_DIR/<config>/<tool>.<exe>.<pid> (log_path), and this script
# fails when any such file exists, printing them.
#
# Each config builds into its own output directory (--platform_suffix), so
# switching between plain, asan and tsan builds does not rebuild everything.
# Test results are never taken from the cache (a cached pass would hide a
# daemon report). Ends with "N passed, N failed" (bazel runs and report
# checks).
set -uo pipefail
cd "$(dirname "$0")/../.."

CONFIGS=("$@")
((${#CONFIGS[@]})) || CONFIGS=(asan tsan)
read -r -a STARTUP <<< "${BAZEL_STARTUP_OPTS:-}"
BAZEL=${BAZEL:-bazel}
LOG_DIR=${SANITIZER_LOG_DIR:-${TMPDIR:-/tmp}/gearbox-sanitizers}
SUPP_DIR=$(pwd)/tests/sanitizers

# Space-separated target lists; override to narrow a run.
read -r -a ASAN_TARGETS <<< "${SANITIZER_ASAN_TARGETS:-//tests/unit/... //tests/integration/...}"
read -r -a TSAN_TARGETS <<< "${SANITIZER_TSAN_TARGETS:-//tests/unit/... //tests/integration/...}"

passed=0
failed=0
summary=()
total_start=$(date +%s)

run_config() {
  local config=$1 dir="$LOG_DIR/$1" start rc elapsed
  local -a targets env
  rm -rf "$dir"
  mkdir -p "$dir"
  case "$config" in
    asan)
      targets=("${ASAN_TARGETS[@]}")
      # detect_leaks: LeakSanitizer runs at every sanitized process's exit.
      env=(
        --test_env=ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$dir/asan:log_exe_name=1"
        --test_env=UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$dir/ubsan:log_exe_name=1"
        --test_env=LSAN_OPTIONS="suppressions=$SUPP_DIR/lsan.supp:print_suppressions=0"
      )
      ;;
    tsan)
      targets=("${TSAN_TARGETS[@]}")
      env=(
        --test_env=TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$dir/tsan:log_exe_name=1:suppressions=$SUPP_DIR/tsan.supp"
      )
      ;;
    *)
      echo "run.sh: unknown config $config (asan, tsan)" >&2
      return 2
      ;;
  esac
  echo
  echo "==> bazel test --config=$config ${targets[*]}"
  start=$(date +%s)
  "$BAZEL" "${STARTUP[@]}" test --config="$config" --platform_suffix="$config" \
    --nocache_test_results --keep_going --test_output=errors \
    --test_summary=short --sandbox_writable_path="$dir" \
    "${env[@]}" -- "${targets[@]}"
  rc=$?
  elapsed=$(($(date +%s) - start))
  if ((rc == 0)); then
    passed=$((passed + 1))
    summary+=("$config: bazel test ok (${elapsed}s)")
  else
    failed=$((failed + 1))
    summary+=("$config: bazel test FAILED, exit $rc (${elapsed}s)")
  fi

  # Reports from any sanitized process, the spawned daemons included. A report
  # that went to stderr instead of log_path (a daemon's log, printed into its
  # test.log by the harness) counts too: copy those lines next to the others.
  local testlogs
  testlogs=$("$BAZEL" "${STARTUP[@]}" info --config="$config" \
    --platform_suffix="$config" bazel-testlogs 2>/dev/null)
  # A failed test's own assertions, again at the end: its full log (thousands
  # of passing cases first) is cut in the middle by a log viewer.
  if ((rc != 0)) && [[ -d "$testlogs" ]]; then
    grep -rl --include=test.log -E '^\[  FAILED  \]|: Failure$' "$testlogs" \
      2>/dev/null | while read -r log; do
      echo
      echo "==> $config: failures in ${log#"$testlogs"/}"
      grep -E -B1 -A14 ': Failure$' "$log" | head -n 120
      grep -E '^\[  FAILED  \]' "$log" | head -n 20
    done
  fi
  if [[ -d "$testlogs" ]]; then
    grep -rl --include=test.log -E \
      'runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer' \
      "$testlogs" 2>/dev/null | while read -r log; do
      grep -E -A20 'runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer' \
        "$log" >"$dir/from-test-log.$(echo "${log#"$testlogs"/}" | tr / _)"
    done
  fi
  local reports=()
  while IFS= read -r -d '' f; do reports+=("$f"); done < <(
    find "$dir" -type f -size +0 -print0 | sort -z)
  if ((${#reports[@]} == 0)); then
    passed=$((passed + 1))
    summary+=("$config: no sanitizer reports")
  else
    failed=$((failed + 1))
    summary+=("$config: ${#reports[@]} sanitizer report file(s) in $dir")
    echo
    echo "==> $config: sanitizer reports (${#reports[@]} files in $dir)"
    for f in "${reports[@]}"; do
      echo "--- $f"
      head -n 60 "$f"
    done
  fi
}

for config in "${CONFIGS[@]}"; do
  run_config "$config" || exit 2
done

total=$(($(date +%s) - total_start))
echo
echo "==> sanitizer summary (${total}s)"
for line in "${summary[@]}"; do echo "  $line"; done
echo "$passed passed, $failed failed"
((failed == 0))
