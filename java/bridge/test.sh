#!/usr/bin/env bash
# The Java bridge's suite, a step of scripts/test.sh (which builds the release agent first):
# the JUnit 5 tests run by Maven (surefire: one JVM per test class, plus one started with
# -agentpath), then the Gradle build of the same sources with its smoke check (gradle/). Ends
# with `record java-bridge PASSED FAILED SKIPPED` summed from surefire's reports (+1 for Gradle).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/steplib.sh
require_agent java-bridge

reports=java/bridge/target/surefire-reports
rm -rf "$reports"
mvn -q -B -f java/bridge/pom.xml verify
mvn_status=$?
read -r tests failures errors skipped < <(
  cat "$reports"/TEST-*.xml 2>/dev/null | grep -o '<testsuite [^>]*>' |
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); gsub(/[">]/, "", kv[2]);
             if (kv[1] == "tests") t += kv[2]; if (kv[1] == "failures") f += kv[2];
             if (kv[1] == "errors") e += kv[2]; if (kv[1] == "skipped") s += kv[2] } }
         END { print t + 0, f + 0, e + 0, s + 0 }')
failed=$((failures + errors))
passed=$((tests - failed - skipped))
if [ "$mvn_status" != 0 ] && [ "$failed" = 0 ]; then
  echo "java-bridge: Maven failed outside the tests (see above)"
  failed=$((failed + 1))
fi

if command -v gradle >/dev/null 2>&1; then
  if gradle -q --no-daemon --offline -p gradle build; then
    passed=$((passed + 1))
  else
    echo "java-bridge: the Gradle build (gradle -p gradle build --offline) failed"
    failed=$((failed + 1))
  fi
else
  echo "java-bridge: gradle is not installed (scripts/setup.sh installs it); Gradle check skipped"
  skipped=$((skipped + 1))
fi
record java-bridge "$passed" "$failed" "$skipped"
[ "$failed" = 0 ]
