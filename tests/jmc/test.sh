#!/usr/bin/env bash
# JDK Mission Control's parser on hpm's .jfr files, a step of scripts/test.sh (which builds the
# release agent first). For JDK 17 and every Temurin JDK under /usr/lib/jvm: profile
# tests/workloads/Shares.java with counters, load the .jfr with JMC's JfrLoaderToolkit
# (org.openjdk.jmc:flightrecorder, tests/jmc/pom.xml) and check, per file:
#   parses      JMC loads it without error
#   counts      per event type, JMC's event counts equal the JDK's reader's (`jfr summary`)
#   hpm-events  hpm.Sample (with its counter fields), hpm.Config and hpm.Drops are visible
#   jvm-events  tests/workloads/AllocLocks.java recorded with event=cpu,alloc,lock (all three
#               modes in one file): JMC reads jdk.ObjectAllocationSample, jdk.JavaMonitorEnter
#               and jdk.ThreadPark, as many of each as the JDK's reader
# Ends with `record jmc-parser PASSED FAILED SKIPPED`. Files go to target/jmc-check/.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/steplib.sh
require_agent jmc-parser
out=$PWD/target/jmc-check
run=$out/run
rm -rf "$run"
mkdir -p "$run/classes"
passed=0 failed=0 skipped=0
pass() { echo "jmc-parser: ok    $1"; passed=$((passed + 1)); }
fail() { echo "jmc-parser: FAIL  $1"; failed=$((failed + 1)); }

if ! mvn -q -B -f tests/jmc/pom.xml compile dependency:build-classpath -Dmdep.outputFile="$out/classpath.txt"; then
  echo "jmc-parser: building the JMC checker failed (mvn -f tests/jmc/pom.xml compile)"
  record jmc-parser 0 1 0
  exit 1
fi
cp="$out/classes:$(cat "$out/classpath.txt")"
jdk17=/usr/lib/jvm/java-17-openjdk-amd64
"$jdk17/bin/javac" --release 17 -d "$run/classes" tests/workloads/Shares.java tests/workloads/CpuClock.java tests/workloads/AllocLocks.java ||
  { record jmc-parser 0 1 0; exit 1; }

# Per type with events: "TYPE COUNT" by the JDK's reader ($1: java home, $2: file) and by JMC
# ($2's JmcCheck output in $3).
jdk_counts() {
  "$1/bin/jfr" summary "$2" |
    awk '$1 ~ /^[a-z]+\.[A-Za-z]/ && $2 ~ /^[0-9]+$/ && $2 > 0 && tolower($1) != "jdk.metadata" && tolower($1) != "jdk.checkpoint" { print $1, $2 }' |
    sort
}
jmc_counts() { awk -F'\t' 'NF == 3 && $3 > 0 { print $2, $3 }' "$1" | sort; }

for home in "$jdk17" /usr/lib/jvm/temurin-*; do
  [ -x "$home/bin/java" ] || continue
  name=$(basename "$home")
  jfr=$run/$name.jfr
  if ! "$home/bin/java" "-agentpath:$lib=interval=1ms,counters=task-clock+page-faults,data,file=$jfr,quiet" \
       -cp "$run/classes" Shares 2 1 >"$run/$name.log" 2>&1; then
    fail "$name: the profiled run failed (see $run/$name.log)"
    continue
  fi
  # JMC (JMC 9 runs on Java 17+).
  if "$jdk17/bin/java" -cp "$cp" hpm.jmc.JmcCheck "$jfr" >"$run/$name.jmc" 2>"$run/$name.jmc.err"; then
    pass "$name: parses"
  else
    fail "$name: parses: $(cat "$run/$name.jmc.err")"
    continue
  fi
  # The JDK's reader (the producing JDK's jfr tool); its pseudo-types Metadata and CheckPoint
  # (Checkpoint in JDK 25)
  # are not events.
  "$home/bin/jfr" summary "$jfr" |
    awk '$1 ~ /^[a-z]+\.[A-Za-z]/ && $2 ~ /^[0-9]+$/ && $2 > 0 && tolower($1) != "jdk.metadata" && tolower($1) != "jdk.checkpoint" { print $1, $2 }' |
    sort >"$run/$name.jdk-counts"
  awk -F'\t' 'NF == 3 && $3 > 0 { print $2, $3 }' "$run/$name.jmc" | sort >"$run/$name.jmc-counts"
  if [ -s "$run/$name.jdk-counts" ] && cmp -s "$run/$name.jdk-counts" "$run/$name.jmc-counts"; then
    pass "$name: counts ($(tr '\n' ' ' <"$run/$name.jmc-counts"))"
  else
    fail "$name: counts differ: JDK: $(tr '\n' ' ' <"$run/$name.jdk-counts") JMC: $(tr '\n' ' ' <"$run/$name.jmc-counts")"
  fi
  fields() { awk -F'\t' -v t="$1" '$2 == t && $3 == "fields" { print $4 }' "$run/$name.jmc"; }
  samples=$(awk -F'\t' '$2 == "hpm.Sample" && NF == 3 { print $3 }' "$run/$name.jmc")
  configs=$(awk -F'\t' '$2 == "hpm.Config" && NF == 3 { print $3 }' "$run/$name.jmc")
  sf=$(fields hpm.Sample)
  if [ "${samples:-0}" -gt 0 ] && [ "${configs:-0}" = 1 ] && [[ ",$sf," == *",taskClock,"* ]] &&
     [[ ",$sf," == *",pageFaults,"* ]] && [[ ",$sf," == *",stackTrace,"* ]] &&
     [[ ",$sf," == *",dataClass,"* ]] && [[ ",$sf," == *",dataSpace,"* ]] && [[ ",$sf," == *",dataSource,"* ]] &&
     [[ ",$(fields hpm.Drops)," == *",reason,"* ]] && [[ ",$(fields hpm.Config)," == *",counters,"* ]]; then
    pass "$name: hpm-events (hpm.Sample $samples with $sf; hpm.Config; hpm.Drops)"
  else
    fail "$name: hpm-events: hpm.Sample=${samples:-none} [$sf] hpm.Config=${configs:-none} hpm.Drops [$(fields hpm.Drops)]"
  fi
  # The JVM's events, all three modes beside the CPU event in one recording.
  locks=$run/$name-locks.jfr
  if ! "$home/bin/java" "-agentpath:$lib=event=cpu,alloc=64k,lock,file=$locks,quiet" -cp "$run/classes" \
       AllocLocks both 1 >"$run/$name-locks.log" 2>&1 ||
     ! "$jdk17/bin/java" -cp "$cp" hpm.jmc.JmcCheck "$locks" >"$run/$name-locks.jmc" 2>"$run/$name-locks.jmc.err"; then
    fail "$name: jvm-events: recording or parsing failed (see $run/$name-locks.log, .jmc.err)"
    continue
  fi
  jdk=$(jdk_counts "$home" "$locks")
  jmc=$(jmc_counts "$run/$name-locks.jmc")
  if [ "$jdk" = "$jmc" ] && [[ "$jmc" == *jdk.ObjectAllocationSample* ]] && [[ "$jmc" == *jdk.JavaMonitorEnter* ]] &&
     [[ "$jmc" == *jdk.ThreadPark* ]] && [[ "$jmc" == *jdk.ExecutionSample* ]]; then
    pass "$name: jvm-events ($(echo "$jmc" | tr '\n' ' '))"
  else
    fail "$name: jvm-events: JDK: $(echo "$jdk" | tr '\n' ' ') JMC: $(echo "$jmc" | tr '\n' ' ')"
  fi
done
record jmc-parser "$passed" "$failed" "$skipped"
[ "$failed" = 0 ]
