# Shared by the step scripts of scripts/test.sh (java/bridge/test.sh, tests/jmc/test.sh,
# bench/ci-quick.sh), which also run on their own: source it from the repository root.

# record NAME PASSED FAILED SKIPPED: a cargo-style result line, so test.sh's closing total
# counts the step (test.sh appends it to its output file; on their own, steps just print it).
record() {
  local line
  line="test result: $( [ "$3" = 0 ] && echo ok || echo FAILED ). $2 passed; $3 failed; $4 ignored ($1)"
  if [ -n "${HPM_TEST_OUTPUT:-}" ]; then echo "$line" | tee -a "$HPM_TEST_OUTPUT"; else echo "$line"; fi
}

# require_agent NAME: the release libhpm.so that test.sh builds first, in $lib; records a
# failure of step NAME and exits when it is missing.
require_agent() {
  lib="${CARGO_TARGET_DIR:-$PWD/target}/release/libhpm.so"
  if [ ! -f "$lib" ]; then
    echo "$1: $lib is missing; build it with: cargo build --release -p hpm-agent"
    record "$1" 0 1 0
    exit 1
  fi
}
