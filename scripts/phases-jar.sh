#!/usr/bin/env bash
# Builds hpm-phases.jar (java/phases: the method-phase rewriter, ASM shaded inside) with Maven
# and copies it to DIR (default: the release directory beside libhpm.so,
# ${CARGO_TARGET_DIR:-target}/release), where the agent's phases= option finds it. Prints the
# jar's path. The module's tests are not run here: `mvn -f java/phases/pom.xml verify` runs them.
# Usage: scripts/phases-jar.sh [DIR]
set -euo pipefail
dir="${1:-${CARGO_TARGET_DIR:-$(dirname "$0")/../target}/release}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
cd "$(dirname "$0")/.."
command -v mvn >/dev/null 2>&1 || { echo "phases-jar: Maven is missing; run scripts/setup.sh" >&2; exit 1; }
if ! log=$(mvn -q -B -Dstyle.color=never -f java/phases/pom.xml package -DskipTests 2>&1); then
  echo "$log" >&2
  echo "phases-jar: the Maven build failed (above); retry with: mvn -f java/phases/pom.xml package" >&2
  exit 1
fi
mkdir -p "$dir"
cp java/phases/target/hpm-phases.jar "$dir/hpm-phases.jar"
echo "$(cd "$dir" && pwd)/hpm-phases.jar"
