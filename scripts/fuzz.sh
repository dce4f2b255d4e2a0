#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo-fuzz, nightly) for SECONDS each (default 20), starting
# from the committed seeds (fuzz/corpus/TARGET, with the hostile shapes of
# hpm_profile::adversarial) and the regressions, into a working corpus under target/fuzz-corpus
# (never committed). A crash, leak, timeout or out-of-memory fails the step (libFuzzer exits
# non-zero) and leaves the input in fuzz/artifacts/TARGET/. The limits are tight for inputs of
# at most 64 KiB, whose reading takes milliseconds and a few MB: an input that takes seconds
# (-timeout=2; libFuzzer looks every 2 s, so 2 to 4 s) or hundreds of MB (-rss_limit_mb,
# -malloc_limit_mb for one allocation) is a reader out of proportion to its input, as the
# hostile shapes were. A step of scripts/test.sh; runs alone too:
#   bash scripts/fuzz.sh 300      # the longer run of docs/design.md ("Fuzzing")
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/steplib.sh
seconds=${1:-20}
if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: cargo-fuzz or the nightly toolchain is missing (scripts/setup.sh installs both); NOT RUN"
  record fuzz 0 1 0
  exit 1
fi
cd fuzz
# ASan keeps 256 MB of freed memory by default (to catch a use after free), which alone is over
# -rss_limit_mb below; 16 MB keeps the run's memory the targets' own.
export ASAN_OPTIONS="quarantine_size_mb=16:detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
if ! cargo +nightly fuzz build -O >../target/fuzz-build.log 2>&1; then
  echo "fuzz: the targets did not build:"; tail -n 30 ../target/fuzz-build.log
  record fuzz 0 1 0
  exit 1
fi
targets=$(cargo +nightly fuzz list)
passed=0 failed=0
for t in $targets; do
  work=../target/fuzz-corpus/$t
  mkdir -p "$work" "corpus/$t" "regressions/$t"
  log=../target/fuzz-$t.log
  cargo +nightly fuzz run -O "$t" "$work" "corpus/$t" "regressions/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=256 -malloc_limit_mb=64 -max_len=65536 -timeout=2 \
    -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  if [ "$rc" = 0 ]; then
    echo "fuzz: ok    $t: ${runs:-?} inputs in ${seconds}s"
    passed=$((passed + 1))
  else
    echo "fuzz: FAIL  $t (see target/fuzz-$t.log):"
    grep -E 'ERROR|panicked|SUMMARY|Test unit written' "$log" | head -n 8
    failed=$((failed + 1))
  fi
done
record fuzz "$passed" "$failed" 0
[ "$failed" = 0 ]
