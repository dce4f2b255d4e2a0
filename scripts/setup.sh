#!/usr/bin/env bash
# Installs what hpm needs on a fresh machine (Debian): a JDK 17 with javac and jfr, Maven, a C
# toolchain for Rust's linker, libc's debug symbols, Chromium (the flame graph page's test),
# Rust itself if missing, and nightly + cargo-fuzz for fuzzing.
# Idempotent: quick when all is there.
set -euo pipefail

need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v jfr >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v gradle >/dev/null 2>&1 || need+=(gradle)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
# tests/tests/tool_outputs.rs: `go tool pprof` reads the .pb.gz output, Python's jsonschema checks
# the JSON against docs/schema/hpm-profile-1.schema.json.
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || need+=(golang-go)
# tests/tests/agent_native_names.rs: libc's internal functions (memset's variants) are named only
# from its debug file, /usr/lib/debug/.build-id/NN/REST.debug.
dpkg-query -W -f='${Status}' libc6-dbg 2>/dev/null | grep -q 'install ok installed' || need+=(libc6-dbg)
# tests/tests/flame_browser.rs: the flame graph page used in a real headless browser, driven
# over the DevTools protocol on a pipe (no WebDriver, so no chromium-driver).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
python3 -c 'import jsonschema' 2>/dev/null || /usr/bin/python3 -c 'import jsonschema' 2>/dev/null || need+=(python3-jsonschema)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing Rust (Debian's cargo)"
    apt-get install -y -qq cargo rustc >/dev/null
  fi
fi
# scripts/fuzz.sh: cargo-fuzz on the nightly toolchain (libFuzzer needs nightly's sanitizers).
if command -v rustup >/dev/null 2>&1; then
  if ! rustup toolchain list | grep -q '^nightly'; then
    echo "setup: installing Rust nightly (for the fuzz targets)"
    rustup toolchain install nightly --profile minimal >/dev/null 2>&1 || echo "setup: nightly did not install; fuzzing will be NOT RUN"
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "setup: installing cargo-fuzz (a few minutes, once)"
    cargo install cargo-fuzz --locked >/dev/null 2>&1 || echo "setup: cargo-fuzz did not install; fuzzing will be NOT RUN"
  fi
fi
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)
if [ "$paranoid" != unknown ] && [ "$paranoid" -gt 2 ] && [ "$(id -u)" != 0 ]; then
  echo "setup: kernel.perf_event_paranoid is $paranoid; hpm needs 2 or lower: sudo sysctl kernel.perf_event_paranoid=2"
fi
echo "setup: $(java -version 2>&1 | head -1); $(cargo --version); $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
