#!/usr/bin/env bash
# Step of scripts/test.sh: the benchmark harness's unit tests (scripts/bench/test_*.py: the
# statistics behind the published tables), under unittest; under a second, no JVM. Also runs
# on its own from the repository root.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/steplib.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
python3 -m unittest discover -s scripts/bench -t scripts -p 'test_*.py' >"$log" 2>&1
status=$?
sed 's/^/  /' "$log"
ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$log")
# "FAILED (failures=1, errors=2)": every failure and error counts once.
failed=$(grep -o -E '(failures|errors)=[0-9]+' "$log" | awk -F= '{ s += $2 } END { print s + 0 }')
skipped=$(grep -o -E 'skipped=[0-9]+' "$log" | awk -F= '{ s += $2 } END { print s + 0 }')
if [ "$status" != 0 ] && [ "$failed" = 0 ]; then failed=1; fi
record bench-unit $(( ${ran:-0} - failed - skipped )) "$failed" "$skipped"
[ "$status" = 0 ]
