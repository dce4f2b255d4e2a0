#!/usr/bin/env bash
# Runs every test: the JVM-free unit and replay tests, the CLI tests, and the end-to-end tests
# that start real JVMs (JDK 17 and every Temurin JDK under /usr/lib/jvm) with the agent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release -p hpm-agent -p hpm-cli
cargo test --workspace --no-fail-fast 2>&1 | tee target/test-output.txt
