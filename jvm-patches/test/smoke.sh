#!/usr/bin/env bash
# Smoke test of the patched JDK: java -version, the extension functions, sampling a busy
# multi-threaded program with self-sampling in partial safepoints (with and without waiting
# threads), and a stress program under G1 and ZGC; the same with incremental stack tracing,
# plus deoptimisation storms, forced handshakes/safepoints, class redefinition and GC verification.
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
  grep -E '^spstest: (mode|call|requested|isps)|^(busy|stress):' "$OUT/$name.log" | sed 's/^/     /'
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
# Incremental stack tracing (interface 3): the same runs, then the hard cases: ZGC (its stack
# watermarks beside isps's) with nmethod entry barriers deoptimising at random, forced
# handshakes and safepoints, and class Stress redefined every 100 ms while on sampled stacks.
check isps-running run mode=isps,interval=10,samples=150 4 3
check isps-waiting run mode=isps,interval=10,samples=150,waiting=1 4 3
check isps-1ms run mode=isps,interval=1,samples=1500 4 3
istress() { SPSTEST_STRESS_CLASS="$OUT/Stress.class" timeout 300 "$JDK/bin/java" "${@:2}" \
  -agentpath:"$OUT/libspstest.so=mode=isps,interval=1,samples=2500,waiting=1,redefine=$1" -cp "$OUT" Stress 3; }
check isps-stress-g1-redefine istress 1 -XX:+UseG1GC
check isps-stress-zgc-deopt istress 0 -XX:+UseZGC -XX:+UnlockDiagnosticVMOptions -XX:+DeoptimizeNMethodBarriersALot
check isps-stress-alot istress 1 -XX:+UnlockDiagnosticVMOptions -XX:+HandshakeALot -XX:+SafepointALot
# The heap verified before and after every GC while sampled frames are pending.
check isps-stress-verify-gc istress 1 -Xmx256m -XX:+UnlockDiagnosticVMOptions -XX:+VerifyBeforeGC -XX:+VerifyAfterGC
echo "smoke: $passed passed, $failed failed"
[ "$failed" = 0 ]
