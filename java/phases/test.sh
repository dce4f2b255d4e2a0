#!/usr/bin/env bash
# The phases rewriter's suite, a step of scripts/test.sh: its JUnit 5 tests run by Maven on the
# default JDK and on every Temurin JDK under /usr/lib/jvm (each rewritten class checked by ASM's
# CheckClassAdapter and loaded under -Xverify:all). Ends with `record java-phases PASSED FAILED
# SKIPPED` summed from surefire's reports.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/steplib.sh
reports=java/phases/target/surefire-reports
passed=0 failed=0 skipped=0
for home in "" /usr/lib/jvm/temurin-*; do
  [ -z "$home" ] || [ -x "$home/bin/java" ] || continue
  rm -rf "$reports"
  if [ -n "$home" ]; then JAVA_HOME=$home mvn -q -B -f java/phases/pom.xml verify; else mvn -q -B -f java/phases/pom.xml verify; fi
  status=$?
  read -r t f e s < <(cat "$reports"/TEST-*.xml 2>/dev/null | grep -o '<testsuite [^>]*>' |
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); gsub(/[">]/, "", kv[2]);
             if (kv[1] == "tests") t += kv[2]; if (kv[1] == "failures") f += kv[2];
             if (kv[1] == "errors") e += kv[2]; if (kv[1] == "skipped") s += kv[2] } }
         END { print t + 0, f + 0, e + 0, s + 0 }')
  bad=$((f + e))
  if [ "$status" != 0 ] && [ "$bad" = 0 ]; then
    echo "java-phases: Maven failed outside the tests on ${home:-the default JDK} (see above)"
    bad=1
  fi
  passed=$((passed + t - f - e - s)) failed=$((failed + bad)) skipped=$((skipped + s))
done
record java-phases "$passed" "$failed" "$skipped"
[ "$failed" = 0 ]
