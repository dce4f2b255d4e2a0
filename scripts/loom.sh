#!/usr/bin/env bash
# The loom models of the agent's lock-free parts (hpm_capture::claim: a handler never uses a
# retired slot; hpm_capture::batch: every batch has one owner, every item is seen once or counted
# dropped; hpm_capture::blob_cache: a reader finds whole entries only), explored over all
# interleavings (the blob cache's up to two preemptions). A step of scripts/test.sh; runs on its own too.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/steplib.sh
out=$(RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p hpm-capture --release --lib -- loom 2>&1)
rc=$?
echo "$out" | grep -E '^test |panicked|error' || true
read -r passed failed < <(echo "$out" | awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i == "passed;") p = $(i-1); if ($i == "failed;") f = $(i-1) } } END { print p + 0, f + 0 }')
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then failed=1; fi
[ "$passed" -ge 5 ] || { echo "loom: expected at least 5 models, ran $passed"; failed=$((failed + 1)); }
record loom "$passed" "$failed" 0
[ "$failed" = 0 ]
