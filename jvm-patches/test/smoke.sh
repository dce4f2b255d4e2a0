#!/usr/bin/env bash
# Smoke test of the patched JDK: java -version, the extension functions, sampling a busy
# multi-threaded program with self-sampling in partial safepoints (with and without waiting
# threads), and a stress program under G1 and ZGC.
# Usage: bash jvm-patches/test/smoke.sh [JDK_HOME]   (default: $HPM_SPS_JDK, else the output of
# build.sh). Prints "smoke: N passed, M failed" and exits non-zero on a failure.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JDK=${1:-${HPM_SPS_JDK:-}}
[ -n "$JDK" ] || JDK=$(bash "$HERE/../build.sh" | tail -1)
OUT=${TMPDIR:-/tmp}/hpm-spstest.$$
mkdir -p "$OUT"
trap 'rm -rf "$OUT"' EXIT
passed=0 failed=0
check() {  # name, command...
  local name=$1; shift
  if "$@" > "$OUT/$name.log" 2>&1 && grep -q "spstest: PASS" "$OUT/$name.log"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"; sed 's/^/     /' "$OUT/$name.log" | tail -40
  fi
  grep -E '^spstest: (mode|call|requested)|^(busy|stress):' "$OUT/$name.log" | sed 's/^/     /'
}

"$JDK/bin/java" -version 2>&1 | tee "$OUT/version.log" | sed 's/^/     /'
if grep -q 'hpm-sps' "$OUT/version.log"; then passed=$((passed + 1)); echo "ok   java -version (hpm-sps VM)"
else failed=$((failed + 1)); echo "FAIL java -version does not name the hpm-sps VM"; fi

gcc -shared -fPIC -O2 -Wall -I"$JDK/include" -I"$JDK/include/linux" -o "$OUT/libspstest.so" "$HERE/spstest.c" ||
  { echo "smoke: 0 passed, 1 failed"; exit 1; }
"$JDK/bin/javac" -d "$OUT" "$HERE/Busy.java" "$HERE/Stress.java" || { echo "smoke: 0 passed, 1 failed"; exit 1; }
run() { "$JDK/bin/java" -agentpath:"$OUT/libspstest.so=$1" -cp "$OUT" Busy "${@:2}"; }
# Stress: threads starting and ending, GCs (G1; ZGC with its concurrent stack processing),
# exceptions, contention, deep stacks; sampled every 1 ms with waiting threads.
stress() { timeout 300 "$JDK/bin/java" $1 -agentpath:"$OUT/libspstest.so=mode=sps,interval=1,samples=2500,waiting=1,frames=128" -cp "$OUT" Stress 3; }

check extensions run mode=none,samples=0 1 1
check sps-running run mode=sps,interval=10,samples=150 4 3
check sps-waiting run mode=sps,interval=10,samples=150,waiting=1 4 3
check sps-1ms run mode=sps,interval=1,samples=1500,frames=8 4 3
check jvmti-baseline run mode=jvmti,interval=10,samples=150 4 3
check stress-g1 stress -XX:+UseG1GC
check stress-zgc stress -XX:+UseZGC
echo "smoke: $passed passed, $failed failed"
[ "$failed" = 0 ]
