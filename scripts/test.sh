#!/usr/bin/env bash
# Runs every test: the JVM-free unit and replay tests, the CLI tests, and the end-to-end tests
# that start real JVMs (JDK 17, every Temurin JDK under /usr/lib/jvm, and the patched JDK of
# jvm-patches/) with the agent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
mkdir -p target

# The patched JDK: built once per patch set and cached (jvm-patches/build.sh prints its home on
# its last line). About 8 minutes on an idle 2-core machine, nothing when the patch set is unchanged.
if [ "${HPM_SKIP_PATCHED_JDK:-0}" = 1 ]; then
  echo "test: NOT building the patched JDK (HPM_SKIP_PATCHED_JDK=1): its tests will print NOT RUN"
elif home=$(bash jvm-patches/build.sh 2>target/jvm-patches-build.log | tail -n 1) && [ -x "$home/bin/java" ]; then
  export HPM_SPS_JDK="$home"
  echo "test: patched JDK at $HPM_SPS_JDK ($("$HPM_SPS_JDK/bin/java" -version 2>&1 | head -1))"
  # The extension functions called from a small C agent (jvm-patches/test/spstest.c).
  bash jvm-patches/test/smoke.sh "$HPM_SPS_JDK" 2>&1 | tail -n 3
else
  echo "test: THE PATCHED JDK DID NOT BUILD; its tests will print NOT RUN and the run fails. Last lines of target/jvm-patches-build.log:"
  tail -n 20 target/jvm-patches-build.log || true
  jdk_failed=1
fi

status=${jdk_failed:-0}
# async-profiler, for the test of two profilers in one JVM (tests/tests/agent_signals.rs), from
# Maven Central into ~/.m2 (the test unpacks its library); without it that test prints NOT RUN,
# and the run fails.
ap_version=4.6
if [ -f ~/.m2/repository/tools/profiler/async-profiler/$ap_version/async-profiler-$ap_version.jar ] ||
   mvn -q dependency:get -Dartifact=tools.profiler:async-profiler:$ap_version >target/async-profiler-fetch.log 2>&1; then
  echo "test: async-profiler $ap_version in ~/.m2"
else
  echo "test: ASYNC-PROFILER $ap_version COULD NOT BE FETCHED; its test will print NOT RUN and the run fails. Last lines of target/async-profiler-fetch.log:"
  tail -n 20 target/async-profiler-fetch.log || true
  status=1
fi
# The OpenTelemetry Collector the push tests send profiles to (tests/tests/push_collector.rs),
# built from Go modules by its own builder and cached by its manifest's hash: ~10 minutes once,
# nothing after. Without it those tests print NOT RUN, and the run fails.
if col=$(bash scripts/otelcol/build.sh 2>target/otelcol-build.log | tail -n 1) && [ -x "$col" ]; then
  export HPM_OTELCOL="$col"
  echo "test: OpenTelemetry Collector at $HPM_OTELCOL"
else
  echo "test: THE OPENTELEMETRY COLLECTOR DID NOT BUILD; its tests will print NOT RUN and the run fails. Last lines of target/otelcol-build.log:"
  tail -n 20 target/otelcol-build.log || true
  status=1
fi
# Guardrails (principle 2): formatting and lints, over every target (tests and benches too).
# `clippy::undocumented_unsafe_blocks` is denied in Cargo.toml's [workspace.lints].
echo "test: == lint (cargo fmt --check; cargo clippy --workspace --all-targets -- -D warnings)"
if ! cargo fmt --check >target/lint.log 2>&1; then
  echo "test: cargo fmt --check FAILED (run cargo fmt):"; head -n 40 target/lint.log; status=1
fi
if ! cargo clippy --workspace --all-targets --quiet -- -D warnings >target/lint.log 2>&1; then
  echo "test: cargo clippy FAILED:"; head -n 60 target/lint.log; status=1
fi

cargo build --release -p hpm-agent -p hpm-cli
# hpm-phases.jar beside libhpm.so, where phases= finds it (java/phases, Maven).
bash scripts/phases-jar.sh target/release >/dev/null || status=1
cargo test --workspace --no-fail-fast 2>&1 | tee target/test-output.txt || status=$?

# Suites outside cargo (Maven, Go, the benchmark harness). Each step script prints its own
# lines and ends with `record NAME PASSED FAILED SKIPPED`, which adds a cargo-style result
# line so the closing total counts it; a step that exits non-zero fails the run.
source scripts/steplib.sh
export HPM_TEST_OUTPUT=$PWD/target/test-output.txt
step() {
  local name=$1; shift
  echo "test: == $name"
  if ! "$@"; then
    echo "test: $name FAILED"
    status=1
  fi
}
# (steps are added below this line, one per suite)
step loom bash scripts/loom.sh  # the claim and batch-pool models over every interleaving (hpm-capture, --cfg loom)
step fuzz bash scripts/fuzz.sh 20  # every reader under libFuzzer, 20 s per target from the committed seeds (docs/design.md, "Fuzzing")
step bench-unit bash scripts/bench/test.sh  # the benchmark harness's statistics (unittest, under a second)
step bench-quick bash bench/ci-quick.sh  # the benchmark harness end to end (python3 scripts/bench suite --quick); never judged on timings
step java-bridge java/bridge/test.sh
step java-phases java/phases/test.sh  # the phases rewriter's JUnit tests under -Xverify:all, JDK 17 and Temurin
step jmc-parser tests/jmc/test.sh
# One closing line over every test binary (cargo's own last lines are the empty doc-test runs).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i == "passed;") p += $(i-1); if ($i == "failed;") f += $(i-1); if ($i == "ignored;") s += $(i-1) } }
     END { printf "total: %d passed, %d failed, %d skipped\n", p, f, s }' target/test-output.txt
exit "$status"
