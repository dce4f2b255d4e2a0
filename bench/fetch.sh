#!/usr/bin/env bash
# Fetches the third-party programs of the benchmark suite as Debian packages, without
# installing them: `apt-get download` of each package and of the Java libraries it depends on,
# then `dpkg -x` into a cache directory. Idempotent: packages already unpacked are skipped.
#
#   bench/fetch.sh [CACHE_DIR] PACKAGE...      (default CACHE_DIR: target/bench-cache)
#
# Prints the unpacked root on its last line; jars are under ROOT/usr/share/java.
set -euo pipefail
cache=${1:?usage: bench/fetch.sh CACHE_DIR PACKAGE...}
shift
[ $# -gt 0 ] || { echo "usage: bench/fetch.sh CACHE_DIR PACKAGE..." >&2; exit 2; }
mkdir -p "$cache/debs" "$cache/root" "$cache/done"
cache=$(cd "$cache" && pwd)

# The packages plus every Java library they pull in (Depends and PreDepends, recursively).
# Runtimes, shells and system packages are left out: the suite runs each JDK itself.
deps=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
         --no-replaces --no-enhances "$@" 2>/dev/null | awk '/^[a-z0-9]/ { print $1 }' | sort -u) || true
want=()
for p in "$@" $deps; do
  case "$p" in
    *-java|*-java-*) ;;          # Java libraries
    default-jre*|openjdk-*|java-common|ca-certificates-java|*-jre|*-jre-headless) continue ;;
    *) printf '%s\n' "$@" | grep -qx "$p" || continue ;;   # named packages (sunflow, fop, ...)
  esac
  [ -e "$cache/done/$p" ] || want+=("$p")
done
want=($(printf '%s\n' "${want[@]}" | sort -u))
if [ ${#want[@]} -gt 0 ]; then
  echo "bench/fetch.sh: downloading ${#want[@]} packages into $cache/debs" >&2
  download() { (cd "$cache/debs" && apt-get download "${want[@]}" >"$cache/apt.log" 2>&1); }
  # A fresh machine may have no package lists yet: refresh them once when we may.
  if ! download && ! { [ "$(id -u)" = 0 ] && apt-get update -qq >"$cache/apt-update.log" 2>&1 && download; }; then
    echo "bench/fetch.sh: apt-get download failed (log: $cache/apt.log):" >&2
    tail -n 5 "$cache/apt.log" >&2
    echo "bench/fetch.sh: check that Debian's package lists are reachable (sudo apt-get update) and that the packages exist: apt-cache policy ${want[*]}" >&2
    exit 1
  fi
  for p in "${want[@]}"; do
    deb=$(ls "$cache/debs/${p}_"*.deb 2>/dev/null | head -n 1)
    [ -n "$deb" ] || { echo "bench/fetch.sh: apt-get download gave no .deb for $p" >&2; exit 1; }
    dpkg -x "$deb" "$cache/root"
    touch "$cache/done/$p"
  done
fi
echo "$cache/root"
