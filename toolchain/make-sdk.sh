#!/usr/bin/env bash
# make-sdk.sh: build a Swift SDK bundle for aarch64-unknown-linux-gnu (Raspberry Pi OS,
# 64-bit) from Debian packages, for cross-build.sh. Recipe A of
# /work/shared/research/cross-compile.md: Debian's amd64 swiftlang 6.0.3 in the trixie
# builder chroot compiles; the target's headers and libraries are arm64 -dev packages
# unpacked with `dpkg -x` into a sysroot; the arm64 Swift runtime comes from the arm64
# swiftlang .deb (it is not in libswiftlang).
#
# Usage: toolchain/make-sdk.sh [trixie|bookworm]        (default trixie; run as root)
#   trixie   → binaries for Pi OS trixie (they need glibc 2.38 and libgpiod3)
#   bookworm → a bookworm sysroot with the trixie Swift runtime and a small glibc
#              compat archive (7 functions); binaries for Pi OS bookworm (libgpiod2).
# Prints the bundle path on success. Idempotent: a complete bundle for the same package
# list is kept; the downloaded .debs stay cached in the builder for the next run.
# Environment: OSH_SWIFT60_ROOT (builder chroot), OSH_DEBIAN_MIRROR.
set -euo pipefail
LOG_TAG=make-sdk
# shellcheck source=toolchain/lib-chroot.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib-chroot.sh"

REL=${1:-trixie}
case $REL in
  trixie) GCCV=14 ;;
  bookworm) GCCV=12 ;;
  -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
  *) die "unknown release '$REL'; use trixie or bookworm" ;;
esac
SWIFT_VERSION=6.0.3
NAME=osh-edge-aarch64-$REL
# The -dev closure for every system-library target in Package.swift (+ the C/C++ runtime).
# COpenSSL's libssl-dev is not named: libcurl4-openssl-dev depends on it.
SYSROOT_PACKAGES=(libc6-dev "libgcc-$GCCV-dev" "libstdc++-$GCCV-dev" libgpiod-dev libi2c-dev
  libasound2-dev libv4l-dev libx264-dev libcurl4-openssl-dev libmicrohttpd-dev libmosquitto-dev zlib1g-dev)
# Parts of the arm64 runtime that cross builds read (≈280 MB of the 2.1 GB package).
RUNTIME_DIRS=(linux shims _FoundationCShims Block CoreFoundation dispatch os _foundation_unicode)

require_root "$@"
ensure_builder
lock_builder
require_space "$ROOT/opt" 3

BUNDLE_IN=$SDK_DIR/$NAME.artifactbundle         # path inside the builder
BUNDLE=$ROOT$BUNDLE_IN                           # same, seen from the host
STAMP=$BUNDLE/.osh-complete
WANT=$(printf '%s\n' "$SWIFT_VERSION" "${SYSROOT_PACKAGES[@]}")
if [[ -f $STAMP && "$(cat "$STAMP")" == "$WANT" ]]; then
  log "up to date: $BUNDLE"
  printf '%s\n' "$BUNDLE"
  exit 0
fi

trap unmount_all EXIT
trap 'exit 130' INT TERM
mount_builder_fs
MIRROR=$(debian_mirror)
[[ -n $MIRROR ]] || die "no Debian mirror in $ROOT/etc/apt/sources.list; set OSH_DEBIAN_MIRROR"
log "mirror $MIRROR"

# --- a private apt for arm64 (its own lists, status and cache; the builder's own apt is untouched)
APTBASE=/var/cache/osh-edge-sdk-apt
apt_conf() { # apt_conf SUITE → path (inside the builder) of an apt.conf for arm64 SUITE
  local suite=$1 d=$APTBASE/$1
  mkdir -p "$ROOT$d/state/lists/partial" "$ROOT$d/cache/archives/partial" "$ROOT$d/parts"
  : >"$ROOT$d/state/status"   # empty: apt must fetch the whole closure
  printf 'deb %s %s main\ndeb %s %s-updates main\n' "$MIRROR" "$suite" "$MIRROR" "$suite" >"$ROOT$d/sources.list"
  cat >"$ROOT$d/apt.conf" <<EOF
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
Dir::State "$d/state";
Dir::State::status "$d/state/status";
Dir::Cache "$d/cache";
Dir::Etc::SourceList "$d/sources.list";
Dir::Etc::SourceParts "$d/parts";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "$d/parts";
APT::Sandbox::User "root";
EOF
  printf '%s\n' "$d/apt.conf"
}

CONF=$(apt_conf "$REL")
log "apt update ($REL arm64)"
in_builder apt-get -q -c "$CONF" update >/dev/null
log "downloading the arm64 -dev closure: ${SYSROOT_PACKAGES[*]}"
in_builder apt-get -q -y -c "$CONF" install --download-only "${SYSROOT_PACKAGES[@]}" >/dev/null
RTCONF=$CONF
if [[ $REL != trixie ]]; then
  RTCONF=$(apt_conf trixie)
  in_builder apt-get -q -c "$RTCONF" update >/dev/null
fi
RTDIR=$APTBASE/swift-runtime
mkdir -p "$ROOT$RTDIR"
if ! compgen -G "$ROOT$RTDIR/swiftlang_${SWIFT_VERSION}-*_arm64.deb" >/dev/null; then
  log "downloading the arm64 swiftlang $SWIFT_VERSION (≈400 MB)"
  in_builder sh -c 'cd "$1" && apt-get -q -c "$2" download "swiftlang=$3*"' sh "$RTDIR" "$RTCONF" "$SWIFT_VERSION"
fi
RTDEB=$(compgen -G "$ROOT$RTDIR/swiftlang_${SWIFT_VERSION}-*_arm64.deb" | sort -V | tail -1)
[[ -f $RTDEB ]] || die "arm64 swiftlang $SWIFT_VERSION not found in the trixie archive"

# --- the bundle, assembled beside the old one and swapped in at the end
WORK=$BUNDLE.partial
rm -rf --one-file-system -- "$WORK"
VARIANT=$WORK/$NAME
SYSROOT=$VARIANT/sysroot
mkdir -p "$SYSROOT"

debs=("$ROOT$APTBASE/$REL/cache/archives/"*_arm64.deb "$ROOT$APTBASE/$REL/cache/archives/"*_all.deb)
n=0
for deb in "${debs[@]}"; do
  [[ -f $deb ]] || continue
  dpkg-deb -x "$deb" "$SYSROOT"
  n=$((n + 1))
done
log "unpacked $n packages into the sysroot"

# Merged /usr: the loader path /lib/ld-linux-aarch64.so.1 and libc.so's linker script
# must resolve inside the sysroot (and under qemu -L).
for d in lib bin sbin; do
  [[ -e $SYSROOT/$d || -L $SYSROOT/$d ]] || ln -s "usr/$d" "$SYSROOT/$d"
done
# Absolute symlinks would point into the build host (bookworm's libm.so → /lib/…): lld
# then silently takes libm.a and fails. Rewrite them relative to the sysroot.
fixed=0
while IFS= read -r -d '' link; do
  target=$(readlink -- "$link")
  [[ $target == /* ]] || continue
  ln -sfn -- "$(realpath -m --relative-to="$(dirname -- "$link")" -- "$SYSROOT$target")" "$link"
  fixed=$((fixed + 1))
done < <(find "$SYSROOT" -type l -print0)
log "rewrote $fixed absolute symlinks"

# --- the arm64 Swift runtime: only the parts a cross build reads
log "extracting the Swift runtime from $(basename "$RTDEB")"
RTX=$WORK/.rt
mkdir -p "$RTX"
dpkg-deb --fsys-tarfile "$RTDEB" | tar -x -C "$RTX" --wildcards \
  './usr/libexec/swift/lib/swift/*' './usr/libexec/swift/lib/swift_static/*' './usr/libexec/swift/lib/clang/*'
SRC=$RTX/usr/libexec/swift/lib
CLANGV=$(basename "$(compgen -G "$SRC/clang/*" | head -1)")
for kind in swift swift_static; do
  mkdir -p "$SYSROOT/usr/lib/$kind"
  for d in "${RUNTIME_DIRS[@]}"; do
    [[ -d $SRC/$kind/$d ]] && cp -a "$SRC/$kind/$d" "$SYSROOT/usr/lib/$kind/"
  done
  ln -sfn "../clang/$CLANGV" "$SYSROOT/usr/lib/$kind/clang"
done
mkdir -p "$SYSROOT/usr/lib/clang"
cp -a "$SRC/clang/$CLANGV" "$SYSROOT/usr/lib/clang/"
rm -rf --one-file-system -- "$RTX"

# --- bookworm: the trixie-built static runtime calls 7 glibc 2.38 functions; forward them
if [[ $REL == bookworm ]]; then
  log "building the glibc 2.36 compat archive"
  mkdir -p "$ROOT/tmp/osh-compat"
  cat >"$ROOT/tmp/osh-compat/compat.c" <<'EOF'
/* glibc 2.38 renamed the C23 strtol family and added strl*; the trixie-built Swift
   runtime references them. Bookworm's glibc 2.36 has the older equivalents. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
long __isoc23_strtol(const char *s, char **e, int b) { return strtol(s, e, b); }
long long __isoc23_strtoll(const char *s, char **e, int b) { return strtoll(s, e, b); }
unsigned long __isoc23_strtoul(const char *s, char **e, int b) { return strtoul(s, e, b); }
unsigned long long __isoc23_strtoull(const char *s, char **e, int b) { return strtoull(s, e, b); }
int __isoc23_sscanf(const char *s, const char *f, ...) {
  va_list ap; va_start(ap, f); int r = vsscanf(s, f, ap); va_end(ap); return r;
}
size_t strlcpy(char *d, const char *s, size_t n) {
  size_t l = strlen(s);
  if (n) { size_t c = l < n - 1 ? l : n - 1; memcpy(d, s, c); d[c] = 0; }
  return l;
}
size_t strlcat(char *d, const char *s, size_t n) {
  size_t dl = strnlen(d, n);
  if (dl == n) return n + strlen(s);
  return dl + strlcpy(d + dl, s, n - dl);
}
EOF
  in_builder /usr/libexec/swift/bin/clang --target=aarch64-linux-gnu --sysroot="${SYSROOT#"$ROOT"}" \
    -O2 -fPIC -c /tmp/osh-compat/compat.c -o /tmp/osh-compat/compat.o
  in_builder /usr/libexec/swift/bin/llvm-ar rcs /tmp/osh-compat/liboshcompat.a /tmp/osh-compat/compat.o
  cp "$ROOT/tmp/osh-compat/liboshcompat.a" "$SYSROOT/usr/lib/swift_static/linux/"
  # The file has no trailing newline: add one before the new line (else "ALL-l…").
  LNK=$SYSROOT/usr/lib/swift_static/linux/static-stdlib-args.lnk
  [[ -z $(tail -c1 "$LNK") ]] || printf '\n' >>"$LNK"
  printf '%s\n' "-L$BUNDLE_IN/$NAME/sysroot/usr/lib/swift_static/linux" "-loshcompat" >>"$LNK"
fi

# --- the bundle's description (paths relative to the json files)
cat >"$WORK/info.json" <<EOF
{
  "schemaVersion": "1.0",
  "artifacts": {
    "$NAME": {
      "type": "swiftSDK",
      "version": "$SWIFT_VERSION",
      "variants": [{ "path": "$NAME", "supportedTriples": ["x86_64-unknown-linux-gnu", "x86_64-pc-linux-gnu"] }]
    }
  }
}
EOF
cat >"$VARIANT/swift-sdk.json" <<'EOF'
{
  "schemaVersion": "4.0",
  "targetTriples": {
    "aarch64-unknown-linux-gnu": {
      "sdkRootPath": "sysroot",
      "swiftResourcesPath": "sysroot/usr/lib/swift",
      "swiftStaticResourcesPath": "sysroot/usr/lib/swift_static",
      "toolsetPaths": ["toolset.json"]
    }
  }
}
EOF
# Debian's clang driver would pick /usr/bin/ld (x86 only): lld links aarch64.
cat >"$VARIANT/toolset.json" <<'EOF'
{ "schemaVersion": "1.0", "swiftCompiler": { "extraCLIOptions": ["-use-ld=lld"] } }
EOF

printf '%s\n' "$WANT" >"$WORK/.osh-complete"
rm -rf --one-file-system -- "$BUNDLE"
mv -- "$WORK" "$BUNDLE"
log "SDK ready: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1))"
printf '%s\n' "$BUNDLE"
