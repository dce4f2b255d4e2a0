#!/usr/bin/env bash
# Builds the OpenTelemetry Collector hpm's push tests send profiles to, from Go modules (the
# collector's own builder, v0.161.0, and the components in manifest.yaml), and prints the
# binary's path on its last line.
#
#   bash scripts/otelcol/build.sh          # build, or reuse the cached build of this manifest
#   HPM_OTELCOL_CACHE=/some/dir bash scripts/otelcol/build.sh
#
# The binary lands in $HPM_OTELCOL_CACHE/otelcol-<hash>/otelcol-hpm, <hash> being that of this
# script and the manifest: a changed manifest builds anew, an unchanged one only prints the path.
# About 10 minutes on 2 cores from an empty Go module cache (~0.5 GB modules, ~0.8 GB build
# cache). Needs Go (scripts/setup.sh installs it). Environment:
#   HPM_OTELCOL_CACHE   cache root (default /var/cache/hpm)
set -euo pipefail

BUILDER=go.opentelemetry.io/collector/cmd/builder
BUILDER_VERSION=v0.161.0

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${HPM_OTELCOL_CACHE:-/var/cache/hpm}
HASH=$( (cd "$HERE" && sha256sum build.sh manifest.yaml) | sha256sum | cut -c1-16)
OUT=$CACHE/otelcol-$HASH
BIN=$OUT/otelcol-hpm

say() { echo "hpm-otelcol: $*" >&2; }
die() { say "error: $*"; exit 1; }

if [ -x "$BIN" ] && [ -f "$OUT/.complete" ]; then
  say "cached build of this manifest ($HASH)"
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || die "Go is not installed: run scripts/setup.sh"
export PATH=$PATH:/usr/local/go/bin
# The builder's module names a newer Go than Debian's: Go 1.21 and later fetch it themselves
# (GOTOOLCHAIN, from the module proxy); older ones cannot.
gov=$(go env GOVERSION | sed 's/^go//')
case $gov in 1.1[0-9]*|1.20*|1.[0-9]) die "Go $gov is too old to build the collector (1.21 or later fetches the Go it needs): install a newer Go";; esac
T0=$(date +%s)
mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/otelcol-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

say "== builder $BUILDER_VERSION"
GOBIN=$WORK/bin go install "$BUILDER@$BUILDER_VERSION"
say "== collector (components: $HERE/manifest.yaml)"
sed "s|output_path: ./otelcol-hpm|output_path: $WORK/dist|" "$HERE/manifest.yaml" > "$WORK/manifest.yaml"
(cd "$WORK" && ./bin/builder --config manifest.yaml) >&2
[ -x "$WORK/dist/otelcol-hpm" ] || die "the builder made no binary (see above)"
"$WORK/dist/otelcol-hpm" --version >&2

rm -rf "$OUT"
mkdir -p "$OUT"
cp "$WORK/dist/otelcol-hpm" "$BIN"
touch "$OUT/.complete"
say "built in $(( $(date +%s) - T0 ))s"
echo "$BIN"
