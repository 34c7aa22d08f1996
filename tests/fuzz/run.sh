#!/usr/bin/env bash
# Builds the fuzz targets and runs each for a bounded time; fails on any crash,
# sanitizer report, leak, timeout or out-of-memory.
#
#   tests/fuzz/run.sh [SECONDS]      # default 60 s of fuzzing per target
#   tests/fuzz/run.sh 0              # regressions and seeds only (deterministic)
#   FUZZ_TARGETS="http config" tests/fuzz/run.sh 10
#
# For each target (http, fastcgi, config):
#  1. every file in tests/fuzz/regressions/<target>/ is run once as a plain
#     input (inputs that once crashed: they must keep passing);
#  2. libFuzzer mutates from the seeds in tests/fuzz/corpus/<target>/ plus the
#     corpus it grew on earlier runs ($FUZZ_OUT/corpus/<target>/).
# A crashing input is saved as $FUZZ_OUT/artifacts/<target>/crash-* (copy it to
# tests/fuzz/regressions/<target>/ once understood); logs are in
# $FUZZ_OUT/logs/. Ends with "N passed, N failed" (one per target and step).
set -uo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_TARGET=${1:-60}
if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi
OUT=${FUZZ_OUT:-tests/fuzz/out}
export FUZZ_OUT=$OUT
TARGETS=(${FUZZ_TARGETS:-http fastcgi config})
# Inputs much longer than a request head or a config file add time, not
# coverage.
MAX_LEN=${FUZZ_MAX_LEN:-4096}
LIBFUZZER_FLAGS=(-timeout=5 -rss_limit_mb=2048 -detect_leaks=1
                 -max_len="$MAX_LEN" -print_final_stats=1)
# UBSan findings abort (the binaries are built with
# -fno-sanitize-recover=undefined); make ASan/UBSan reports carry stacks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

binary_of() {
  case "$1" in
    http) echo http_codec_fuzzer ;;
    fastcgi) echo fastcgi_codec_fuzzer ;;
    config) echo config_loader_fuzzer ;;
    *) echo "run.sh: unknown target $1 (http, fastcgi, config)" >&2; return 1 ;;
  esac
}

binaries=()
for t in "${TARGETS[@]}"; do binaries+=("$(binary_of "$t")") || exit 2; done
echo "==> building: ${binaries[*]}"
if ! tests/fuzz/build.sh "${binaries[@]}"; then
  echo "run.sh: build failed" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
OUT=$(cd "$OUT" && pwd)

passed=0
failed=0
summary=()
note() { summary+=("$(printf '%-8s %-11s %s' "$1" "$2" "$3")"); }

for t in "${TARGETS[@]}"; do
  bin="$OUT/$(binary_of "$t")"
  if [[ ! -x "$bin" ]]; then
    failed=$((failed + 1))
    note "$t" "build" "FAIL: build.sh made no $bin"
    continue
  fi
  mkdir -p "$OUT/logs" "$OUT/corpus/$t" "$OUT/artifacts/$t"

  # 1. Regressions, as plain inputs.
  regressions=()
  if [[ -d "tests/fuzz/regressions/$t" ]]; then
    while IFS= read -r -d '' f; do regressions+=("$f"); done < <(
      find "tests/fuzz/regressions/$t" -type f ! -name '*.md' -print0 | sort -z)
  fi
  if ((${#regressions[@]})); then
    log="$OUT/logs/$t-regressions.log"
    echo "==> $t: ${#regressions[@]} regression inputs"
    bad=()
    # One process per input: a crash must not hide the inputs after it.
    for f in "${regressions[@]}"; do
      if ! timeout 60 "$bin" -timeout=5 -rss_limit_mb=2048 -detect_leaks=1 \
          "$f" >> "$log" 2>&1; then
        bad+=("$f")
        echo "    FAIL $f (log: $log)"
      fi
    done
    if ((${#bad[@]})); then
      failed=$((failed + 1))
      note "$t" "regressions" "FAIL ${#bad[@]} of ${#regressions[@]}: ${bad[*]}"
      grep -E 'ERROR: |invariant broken|runtime error' "$log" | sort | uniq -c | head -5
    else
      passed=$((passed + 1))
      note "$t" "regressions" "ok (${#regressions[@]} inputs)"
    fi
  fi

  # 2. Fuzzing, bounded. With SECONDS=0: only replay the seeds once (no
  #    mutation, deterministic).
  if ((SECONDS_PER_TARGET == 0)); then
    log="$OUT/logs/$t-seeds.log"
    echo "==> $t: replaying seeds"
    if timeout 300 "$bin" -runs=0 "${LIBFUZZER_FLAGS[@]}" \
        -artifact_prefix="$OUT/artifacts/$t/" "tests/fuzz/corpus/$t" > "$log" 2>&1; then
      passed=$((passed + 1))
      note "$t" "seeds" "ok ($(ls "tests/fuzz/corpus/$t" | wc -l) inputs)"
    else
      failed=$((failed + 1))
      what=$(grep -m1 -oE 'ERROR: [A-Za-z]+: [^ ]+( [^ ]+)?|invariant broken: .*|runtime error: .*' "$log")
      note "$t" "seeds" "FAIL: ${what:-see $log}"
    fi
    continue
  fi
  log="$OUT/logs/$t-fuzz.log"
  echo "==> $t: fuzzing for ${SECONDS_PER_TARGET}s (log: $log)"
  before=$(find "$OUT/artifacts/$t" -type f | wc -l)
  start=$(date +%s)
  timeout $((SECONDS_PER_TARGET + 120)) "$bin" "${LIBFUZZER_FLAGS[@]}" \
    -max_total_time="$SECONDS_PER_TARGET" \
    -artifact_prefix="$OUT/artifacts/$t/" \
    "$OUT/corpus/$t" "tests/fuzz/corpus/$t" > "$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  after=$(find "$OUT/artifacts/$t" -type f | wc -l)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
  if ((rc != 0 || after > before)); then
    failed=$((failed + 1))
    artifact=$(ls -t "$OUT/artifacts/$t" 2>/dev/null | head -1)
    what=$(grep -m1 -oE 'ERROR: [A-Za-z]+: [^ ]+( [^ ]+)?|invariant broken: .*|runtime error: .*' "$log")
    note "$t" "fuzz" "FAIL rc=$rc after ${elapsed}s: ${what:-see log} artifact=$OUT/artifacts/$t/$artifact"
    echo "    FAIL: ${what:-rc=$rc}"
    grep -A12 -m1 -E '^==[0-9]+==ERROR|invariant broken|runtime error' "$log" | head -30
  else
    passed=$((passed + 1))
    note "$t" "fuzz" "ok ${elapsed}s, ${execs:-?} execs, ${cov:-cov: ?}, corpus $(ls "$OUT/corpus/$t" | wc -l) files"
  fi
done

echo
echo "==> fuzz summary"
for line in "${summary[@]}"; do echo "  $line"; done
echo "$passed passed, $failed failed"
((failed == 0))
