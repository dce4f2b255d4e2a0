#!/usr/bin/env bash
# Builds hpm and profiles the bundled multi-threaded demo (java/demo/Demo.java, compiled on the
# fly): prints the agent's summary and the report, and writes profile.jfr and profile.html.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release -p hpm-agent -p hpm-cli
bash scripts/phases-jar.sh target/release >/dev/null  # hpm-phases.jar beside libhpm.so (phases=)
mkdir -p target/demo
javac -d target/demo java/demo/Demo.java
./target/release/hpm run event=cpu-clock,interval=1ms,counters=task-clock+page-faults,file=profile.jfr,file=profile.html \
  -- java -cp target/demo Demo "${DEMO_SECONDS:-8}"
./target/release/hpm report profile.jfr --top 15
echo "open profile.html in a browser, or profile.jfr in JDK Mission Control"
