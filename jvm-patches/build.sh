#!/usr/bin/env bash
# Builds hpm's patched OpenJDK 17 (self-sampling in partial safepoints, see README.md) from
# Debian's openjdk-17 source package and prints the JDK home on its last line.
#
#   bash jvm-patches/build.sh            # build, or reuse the cached build of this patch set
#   HPM_JDK_CACHE=/some/dir bash jvm-patches/build.sh
#
# Steps: build dependencies (apt) -> deb-src -> apt-get source (pinned version, checksums) ->
# the matching Debian JDK runtime (.debs, pinned) -> patches -> configure -> make hotspot ->
# JDK = Debian runtime + patched libjvm.so (+ a CDS archive dumped by it).
# The result lands in $HPM_JDK_CACHE/jdk-sps-<hash>, <hash> being that of this script and the
# patches, and $HPM_JDK_CACHE/jdk-sps-latest points at it. When that directory is complete the
# script only prints it. Needs root (or sudo) for apt. Environment:
#   HPM_JDK_CACHE   cache root (default /var/cache/hpm)
#   HPM_BUILD_JOBS  make jobs (default: number of CPUs)
set -euo pipefail

DEB_SRC_PKG=openjdk-17
DEB_VERSION=17.0.19+10-1~deb12u2
UPSTREAM_VERSION=17.0.19+10
# The files apt-get source fetches for DEB_VERSION, and the runtime packages the patched libjvm.so
# is dropped into. apt checks them against Debian's signed indexes; these pins make the build
# fail loudly if the archive ever serves something else under the same version.
SHA256_PINS="
b438a65db1e920c0fc40e03c58ed0773884b1bcaa2e270faca2175359b32d7cd  openjdk-17_17.0.19+10-1~deb12u2.dsc
5bc3cf6b02faa40780ba26a4a553120d749a579919e669bcf8a28d98d135a183  openjdk-17_17.0.19+10-1~deb12u2.debian.tar.xz
6e6699c442cd6bc008140d159b43a7a39bb811d1ecd380cf3b707cc535e04393  openjdk-17_17.0.19+10.orig-googletest.tar.xz
7a61915b168dfb9b45413140d78e38dc5b5250d99d1d99fef7136bf9fd45a07c  openjdk-17_17.0.19+10.orig.tar.xz
587784e0d7efa5256b2224c2f177850a2408485b19ab7e5cb206ceba6a6e9bd4  openjdk-17-jre-headless_17.0.19+10-1~deb12u2_amd64.deb
390eff9273f019e2839a0faaef7a7326d11c32c7db8320316dc6feac48ed2598  openjdk-17-jdk-headless_17.0.19+10-1~deb12u2_amd64.deb
"
BUILD_DEPS="build-essential autoconf zip unzip file patch pkg-config dpkg-dev xz-utils
  libasound2-dev libcups2-dev libfontconfig1-dev libfreetype-dev libx11-dev libxext-dev
  libxrender-dev libxrandr-dev libxtst-dev libxt-dev libpcsclite-dev"
# What the Debian runtime needs to start (its own Depends, minus the GUI/sound ones headless needs not).
RUNTIME_DEPS="libnss3 liblcms2-2 libjpeg62-turbo libharfbuzz0b libpcsclite1 libfreetype6 libfontconfig1 zlib1g"
CONFIGURE_ARGS=(
  --with-jvm-variants=server --enable-headless-only --disable-warnings-as-errors
  --with-native-debug-symbols=none --with-debug-level=release
  --with-version-string="$UPSTREAM_VERSION-hpm-sps" --with-vendor-name=hpm
  # Debian's lib-bundled.m4 patch leaves --with-pcsclite without a default.
  --with-pcsclite=system
)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${HPM_JDK_CACHE:-/var/cache/hpm}
JOBS=${HPM_BUILD_JOBS:-$(nproc)}
HASH=$( (cd "$HERE" && sha256sum build.sh patches/*.patch) | sha256sum | cut -c1-16)
OUT=$CACHE/jdk-sps-$HASH
LATEST=$CACHE/jdk-sps-latest
DOWNLOADS=$CACHE/downloads
RUNTIME=$CACHE/debian-jdk-$DEB_VERSION   # the unpatched Debian JDK: boot JDK and runtime template
WORK=$CACHE/work                         # source + build tree of the last build (kept for debugging)

say() { echo "hpm-jdk: $*" >&2; }
die() { say "error: $*"; exit 1; }
T0=$(date +%s)
step_start() { STEP=$1; STEP_T=$(date +%s); say "== $STEP"; }
step_end() { say "   $STEP: $(( $(date +%s) - STEP_T ))s"; }

SUDO=
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "apt needs root: run as root or install sudo"
  SUDO=sudo
fi

complete() { [ -f "$1/.hpm-sps-complete" ] && [ -x "$1/bin/java" ]; }

finish() {
  $SUDO ln -sfn "$(basename "$OUT")" "$LATEST" 2>/dev/null || ln -sfn "$(basename "$OUT")" "$LATEST"
  say "JDK home (also $LATEST):"
  echo "$OUT"
}

if complete "$OUT"; then
  say "cached build of this patch set ($HASH)"
  finish
  exit 0
fi

$SUDO mkdir -p "$CACHE"
[ -w "$CACHE" ] || $SUDO chown "$(id -u):$(id -g)" "$CACHE"
mkdir -p "$DOWNLOADS"
# One build at a time per cache (CI and a developer may share a machine).
exec 9>"$CACHE/.lock"
flock 9
if complete "$OUT"; then
  say "cached build of this patch set ($HASH), made while waiting for the lock"
  finish
  exit 0
fi
say "building patch set $HASH into $OUT"

# ---------------------------------------------------------------------------------------------
step_start "build dependencies"
missing=()
for p in $BUILD_DEPS $RUNTIME_DEPS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
APT_UPDATED=
apt_update() { [ -n "$APT_UPDATED" ] || { $SUDO apt-get update -q >&2; APT_UPDATED=1; }; }
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt_update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
step_end

# ---------------------------------------------------------------------------------------------
step_start "deb-src and downloads"
have_pin() {   # file already downloaded and matching its pin
  local f=$1
  [ -f "$DOWNLOADS/$f" ] && (cd "$DOWNLOADS" && echo "$SHA256_PINS" | grep -F "  $f" | sha256sum -c --status)
}
need_download=
for f in $(echo "$SHA256_PINS" | awk 'NF {print $2}'); do have_pin "$f" || need_download=1; done
if [ -n "$need_download" ]; then
  if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "enabling deb-src (/etc/apt/sources.list.d/hpm-deb-src.sources)"
    $SUDO tee /etc/apt/sources.list.d/hpm-deb-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    APT_UPDATED=
  fi
  apt_update
  versions=$(apt-cache showsrc "$DEB_SRC_PKG" 2>/dev/null | grep '^Version:' || true)
  if ! grep -qFx "Version: $DEB_VERSION" <<<"$versions"; then
    say "source package $DEB_SRC_PKG=$DEB_VERSION is not in the apt indexes; available:"
    echo "${versions:-  (none)}" >&2
    die "update DEB_VERSION, SHA256_PINS and the patches (see README.md, 'Moving to another version')"
  fi
  tmp=$(mktemp -d "$DOWNLOADS/.dl.XXXXXX")
  (cd "$tmp" && $SUDO apt-get source -q --download-only "$DEB_SRC_PKG=$DEB_VERSION" >&2 &&
     $SUDO apt-get download -q "openjdk-17-jre-headless=$DEB_VERSION" "openjdk-17-jdk-headless=$DEB_VERSION" >&2) ||
    die "download failed (see above); available: $(apt-cache policy openjdk-17-jre-headless | tr -s ' \n' ' ')"
  $SUDO chown -R "$(id -u):$(id -g)" "$tmp"
  mv -f "$tmp"/* "$DOWNLOADS"/
  rmdir "$tmp"
fi
(cd "$DOWNLOADS" && echo "$SHA256_PINS" | awk 'NF' | sha256sum -c --quiet) >&2 ||
  die "checksum mismatch in $DOWNLOADS (pins in build.sh): the archive changed under version $DEB_VERSION"
say "sources and runtime packages of $DEB_VERSION verified"
step_end

# ---------------------------------------------------------------------------------------------
# Unpacks Debian's jre/jdk-headless into a self-contained JDK home: the absolute symlinks into
# /etc/java-17-openjdk (conf, jvm.cfg, security) are replaced by the files from the package.
unpack_runtime() {
  local dest=$1 stage
  stage=$(mktemp -d "$CACHE/.stage.XXXXXX")
  dpkg -x "$DOWNLOADS/openjdk-17-jre-headless_${DEB_VERSION}_amd64.deb" "$stage"
  dpkg -x "$DOWNLOADS/openjdk-17-jdk-headless_${DEB_VERSION}_amd64.deb" "$stage"
  local home=$stage/usr/lib/jvm/java-17-openjdk-amd64
  find "$home" -type l -lname '/etc/java-17-openjdk/*' | while read -r link; do
    cp --remove-destination "$stage$(readlink "$link")" "$link"
  done
  rm -rf "$dest"
  mv "$home" "$dest"
  rm -rf "$stage"
}

if ! complete "$RUNTIME"; then
  step_start "Debian JDK $DEB_VERSION (boot JDK and runtime)"
  unpack_runtime "$RUNTIME.tmp"
  "$RUNTIME.tmp/bin/java" -Xshare:off -version >&2 || die "the unpacked Debian JDK does not run"
  touch "$RUNTIME.tmp/.hpm-sps-complete"
  rm -rf "$RUNTIME"
  mv "$RUNTIME.tmp" "$RUNTIME"
  step_end
fi

# ---------------------------------------------------------------------------------------------
step_start "unpack source and apply patches"
rm -rf "$WORK"
mkdir -p "$WORK"
dpkg-source -x "$DOWNLOADS/${DEB_SRC_PKG}_${DEB_VERSION}.dsc" "$WORK/src" >/dev/null
SRC=$WORK/src
for p in "$HERE"/patches/*.patch; do
  say "applying $(basename "$p")"
  patch -d "$SRC" -p1 --batch --forward --quiet < "$p" || die "$(basename "$p") does not apply"
done
step_end

# ---------------------------------------------------------------------------------------------
step_start "configure"
(cd "$SRC" && nice -n 10 bash configure --with-boot-jdk="$RUNTIME" "${CONFIGURE_ARGS[@]}" \
   > "$WORK/configure.log" 2>&1) || { tail -30 "$WORK/configure.log" >&2; die "configure failed ($WORK/configure.log)"; }
step_end

# ---------------------------------------------------------------------------------------------
step_start "make hotspot"
(cd "$SRC" && nice -n 10 make JOBS="$JOBS" hotspot > "$WORK/make.log" 2>&1) ||
  { grep -E 'error|Error' "$WORK/make.log" | head -40 >&2; die "make hotspot failed ($WORK/make.log)"; }
LIBJVM=$(ls "$SRC"/build/*/support/modules_libs/java.base/server/libjvm.so 2>/dev/null | head -1)
[ -n "$LIBJVM" ] || die "no libjvm.so after make hotspot"
step_end

# ---------------------------------------------------------------------------------------------
step_start "assemble the JDK"
rm -rf "$OUT.tmp"
cp -a "$RUNTIME" "$OUT.tmp"
rm -f "$OUT.tmp/.hpm-sps-complete"
cp "$LIBJVM" "$OUT.tmp/lib/server/libjvm.so"
# Debian's CDS archives were dumped by the unpatched libjvm.so and do not match this one.
rm -f "$OUT.tmp"/lib/server/classes*.jsa
"$OUT.tmp/bin/java" -Xshare:dump > "$WORK/cds.log" 2>&1 || say "warning: CDS dump failed ($WORK/cds.log)"
"$OUT.tmp/bin/java" -XX:-UseCompressedOops -Xshare:dump >> "$WORK/cds.log" 2>&1 || say "warning: CDS (no coops) dump failed"
version=$("$OUT.tmp/bin/java" -version 2>&1) || { echo "$version" >&2; die "the patched JDK does not run"; }
echo "$version" >&2
grep -q "hpm-sps" <<<"$version" || die "the patched JDK does not report the hpm-sps VM"
cat > "$OUT.tmp/hpm-sps-build.txt" <<EOF
hpm patched JDK: Debian $DEB_SRC_PKG $DEB_VERSION + $(cd "$HERE" && ls patches | tr '\n' ' ')
patch set hash: $HASH
built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $JOBS jobs, $(( $(date +%s) - T0 ))s
libjvm.so sha256: $(sha256sum "$OUT.tmp/lib/server/libjvm.so" | cut -d' ' -f1)
EOF
touch "$OUT.tmp/.hpm-sps-complete"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
# Keep the two newest patched JDKs.
ls -dt "$CACHE"/jdk-sps-*/ 2>/dev/null | grep -v -- '-latest/$' | tail -n +3 | xargs -r rm -rf
step_end

say "total: $(( $(date +%s) - T0 ))s"
finish
