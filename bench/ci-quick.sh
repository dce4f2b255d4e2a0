#!/usr/bin/env bash
# CI step of scripts/test.sh: `python3 scripts/bench suite --quick` end to end (packages fetched,
# drivers compiled, every profiler cell run, a profile produced, agreement computed, tables and
# plots rendered) into a temporary directory. Passes or fails on the harness only: the suite's
# checks are "ran, produced, rendered", never a timing. Then `python3 scripts/bench paired --quick`.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/steplib.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 scripts/bench suite --quick --out "$out" 2>&1 | sed -u 's/^/  /'
status=${PIPESTATUS[0]}
passed=$(grep -c '^ok ' "$out/checks.txt" 2>/dev/null || true)
failed=$(grep -c '^FAILED ' "$out/checks.txt" 2>/dev/null || true)
skipped=$(grep -c '^SKIPPED ' "$out/checks.txt" 2>/dev/null || true)
grep '^FAILED ' "$out/checks.txt" 2>/dev/null | sed 's/^/bench-quick: /'
# No checks file at all means the suite stopped before its end: one failure.
if [ ! -s "$out/checks.txt" ] || [ ! -s "$out/tables.md" ]; then
  failed=$((failed + 1))
  echo "bench-quick: the suite stopped before writing its results (exit $status)"
elif [ "$status" != 0 ] && [ "$failed" = 0 ]; then
  failed=1
fi
grep '^SKIPPED ' "$out/checks.txt" 2>/dev/null | sed 's/^/bench-quick: /'
# The paired harness (sessions toggled through the Java bridge): one short run; it fails if a
# JVM fails or a session yields no measured iteration, never on a timing.
if python3 scripts/bench paired --quick --out "$out/paired" 2>&1 | sed -u 's/^/  /'; [ "${PIPESTATUS[0]}" = 0 ]; then
  passed=$((${passed:-0} + 1))
else
  failed=$((${failed:-0} + 1))
  echo "bench-quick: python3 scripts/bench paired --quick failed"
fi
# The same with every cell taking turns in one JVM (two hpm samplers and async-profiler).
if python3 scripts/bench paired --quick --versus-async-profiler --hpm-variants 'sampler=chain;sampler=asgct' \
    --same-jvm --out "$out/same-jvm" 2>&1 | sed -u 's/^/  /'; [ "${PIPESTATUS[0]}" = 0 ]; then
  passed=$((${passed:-0} + 1))
else
  failed=$((${failed:-0} + 1))
  echo "bench-quick: python3 scripts/bench paired --quick --same-jvm failed"
fi
record bench-quick "${passed:-0}" "${failed:-0}" "${skipped:-0}"
[ "$failed" = 0 ]
