#!/usr/bin/env bash
# Where four profilers put the time of an inlined loop (tests/workloads/InlinedLoop.java, whose
# truth is ~99% in InlinedLoop.mix): hpm started with the JVM, hpm attached once the code is
# compiled, async-profiler 4.6 (from the local Maven repository, fetched by
# python3 scripts/bench paired --versus-async-profiler) and JFR with and without
# -XX:+DebugNonSafepoints. Prints each one's two methods with the most self samples.
# docs/design.md, "Inlined loops and C2's debug information between safepoints".
#   scripts/inlined-attribution.sh [SECONDS]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
secs="${1:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
target="${CARGO_TARGET_DIR:-$here/target}"
lib="$target/release/libhpm.so"
hpm="$target/release/hpm"
javac -d "$out" "$here/tests/workloads/InlinedLoop.java"
top2() { "$hpm" report "$1" 2>/dev/null | sed -n '/^== Top/,/^$/p' | sed -n '3,4p'; }

echo "hpm, loaded at the JVM's start (interval=1ms):"
java -agentpath:"$lib"=interval=1ms,quiet,file="$out/start.jfr" -cp "$out" InlinedLoop "$secs" > /dev/null
top2 "$out/start.jfr"

echo "hpm, attached after 3 s (the code compiled before it came):"
java -cp "$out" InlinedLoop $((secs + 3)) > /dev/null 2>&1 &
pid=$!
sleep 3
"$hpm" attach "$pid" "interval=1ms,quiet,file=$out/late.jfr" > /dev/null
wait "$pid"
top2 "$out/late.jfr"

echo "JFR (settings=profile, 10 ms), without DebugNonSafepoints:"
java -XX:StartFlightRecording=filename="$out/jfr.jfr",settings=profile -cp "$out" InlinedLoop "$secs" > /dev/null 2>&1
top2 "$out/jfr.jfr"

echo "JFR with -XX:+DebugNonSafepoints:"
java -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints \
    -XX:StartFlightRecording=filename="$out/jfr-dns.jfr",settings=profile -cp "$out" InlinedLoop "$secs" > /dev/null 2>&1
top2 "$out/jfr-dns.jfr"

ap="$(ls ~/.m2/repository/tools/profiler/async-profiler/4.6/async-profiler-4.6.jar 2>/dev/null || true)"
if [ -n "$ap" ]; then
    (cd "$out" && unzip -q -o "$ap" 'linux-x64/*')
    echo "async-profiler 4.6 (event=cpu, interval=1ms):"
    java -agentpath:"$out/linux-x64/libasyncProfiler.so"=start,event=cpu,interval=1ms,file="$out/ap.jfr",jfr \
        -cp "$out" InlinedLoop "$secs" > /dev/null 2>&1
    top2 "$out/ap.jfr"
else
    echo "async-profiler 4.6: not in ~/.m2 (python3 scripts/bench paired --versus-async-profiler fetches it)"
fi
