#!/usr/bin/env bash
# cross-build.sh: build the `osh-edge` release binary for aarch64 Raspberry Pi OS with the
# SDK from make-sdk.sh (made first if missing), in the trixie builder chroot; with --dev also
# `osh-edge-dev` (the demo, the development node, the simulators; never in the .deb).
# Static Swift stdlib (Pi OS has no Swift runtime), stripped at link time (the builder
# has no llvm-strip). The binary still links the C libraries dynamically: libcurl4,
# libgpiod3 (trixie) / libgpiod2 (bookworm), libi2c0, libasound2, libv4l-0, libx264-164, libmosquitto1
# (osh-edge-dev also libmicrohttpd12); libstdc++ comes from its archive (SHIP_FLAGS below).
# toolchain/check-hygiene.sh then checks that osh-edge links neither libmicrohttpd nor any simulator.
#
# Usage: toolchain/cross-build.sh [trixie|bookworm] [--out FILE] [--dev] [--check]   (as root)
#   --out FILE  where to put the binary (default: .build/cross/<release>/osh-edge)
#   --dev       also build osh-edge-dev, put beside it (DIR-of-FILE/osh-edge-dev)
#   --check     run `osh-edge version` under qemu-aarch64-static with the SDK's sysroot
# OSH_EXTRA_SWIFT_FLAGS (environment): more `swift build` arguments for both products, split at
# spaces, to measure an option before adopting it (e.g. "-Xswiftc -Osize").
# Prints the binary's path (with --dev, then osh-edge-dev's).
set -euo pipefail
LOG_TAG=cross-build
# shellcheck source=toolchain/lib-chroot.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib-chroot.sh"

REL=trixie
OUT=
CHECK=0
DEV=0
while (($#)); do
  case $1 in
    trixie | bookworm) REL=$1 ;;
    --out) OUT=${2:?--out needs a file}; shift ;;
    --check) CHECK=1 ;;
    --dev) DEV=1 ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
PKG=$(realpath -e -- "$TOOLCHAIN_DIR/..")
OUT=${OUT:-$PKG/.build/cross/$REL/osh-edge}
NAME=osh-edge-aarch64-$REL
read -ra EXTRA_FLAGS <<<"${OSH_EXTRA_SWIFT_FLAGS:-}"

require_root "$@"
"$TOOLCHAIN_DIR/make-sdk.sh" "$REL" >/dev/null
lock_builder
SYSROOT_IN=$SDK_DIR/$NAME.artifactbundle/$NAME/sysroot

case "$PKG" in
  / | /proc* | /dev* | /sys* | /usr* | /etc* | /bin* | /sbin* | /lib* | /opt* | /var*)
    die "package path $PKG would shadow builder directories; copy the repo elsewhere" ;;
esac
trap unmount_all EXIT
trap 'exit 130' INT TERM
mount_builder_fs
# The repo, read-only at the same path, so compiler messages name host paths.
TARGET=$ROOT$PKG
if [[ -e $TARGET ]] && { [[ ! -d $TARGET ]] || [[ -n "$(ls -A -- "$TARGET")" ]]; }; then
  die "$TARGET exists in the builder and is not an empty directory (stale mount?)"
fi
mkdir -p "$TARGET"
mount --bind "$PKG" "$TARGET" && MOUNTS+=("$TARGET")
mount -o remount,bind,ro "$TARGET"

SCRATCH=/var/tmp/osh-cross-build/$REL-$(printf '%s' "$PKG" | sha256sum | cut -c1-16)
mkdir -p "$ROOT$SCRATCH"
# -gnone: the binary is stripped anyway, and Debian's 6.0.3 asserts in its debug-info IRGen
# on V4L2M2MEncoder.submitImported (-O -g, "piece covers entire var").
# One product per build (the second reuses the first's modules in the same scratch path).
# Size and memory (measurements/footprint/memory.txt; stripped osh-edge 8.94 → 7.28 MB):
# - --no-export-dynamic: the static-stdlib link exports every public Swift symbol (11k names,
#   0.85 MB of .dynsym/.dynstr/.gnu.hash); nothing resolves them at run time.
# - -z pack-relative-relocs: DT_RELR instead of 0.5 MB of RELA (lld; glibc >= 2.36, bookworm and trixie).
# - -internalize-at-link -function-sections: Swift keeps every public function as a GC root
#   (SHF_GNU_RETAIN); without that, SwiftPM's --gc-sections drops unused code (0.38 MB).
# - libstdc++ from its archive (only the Swift runtime uses it): the directory holding just
#   libstdc++.a is searched before the compiler's; 1 MB less mapped and resident at run time.
STATIC_CXX=$SCRATCH/static-libstdcxx
CXX_ARCHIVE=$(cd "$ROOT$SYSROOT_IN" && compgen -G "usr/lib/gcc/aarch64-linux-gnu/*/libstdc++.a" | sort -V | tail -1) \
  || die "no libstdc++.a in the SDK sysroot (make-sdk.sh installs libstdc++-N-dev): remove $SDK_DIR/$NAME.artifactbundle and rerun"
mkdir -p "$ROOT$STATIC_CXX"
ln -sfn "$SYSROOT_IN/$CXX_ARCHIVE" "$ROOT$STATIC_CXX/libstdc++.a"
SHIP_FLAGS=(-Xlinker --no-export-dynamic -Xlinker -z -Xlinker pack-relative-relocs
  -Xswiftc -Xfrontend -Xswiftc -internalize-at-link -Xswiftc -Xfrontend -Xswiftc -function-sections
  -Xswiftc -L"$STATIC_CXX")
build_product() {
  log "swift build -c release --product $1 ${EXTRA_FLAGS[*]} for aarch64 ($NAME), scratch $ROOT$SCRATCH"
  local start
  start=$(date +%s)
  in_builder /usr/bin/env \
    PKG_CONFIG_SYSROOT_DIR="$SYSROOT_IN" \
    PKG_CONFIG_PATH="$SYSROOT_IN/usr/lib/aarch64-linux-gnu/pkgconfig:$SYSROOT_IN/usr/share/pkgconfig" \
    PKG_CONFIG_LIBDIR="$SYSROOT_IN/usr/lib/aarch64-linux-gnu/pkgconfig:$SYSROOT_IN/usr/share/pkgconfig" \
    sh -c 'cd "$1" && shift && exec /usr/bin/swift build "$@"' sh "$PKG" \
    --scratch-path "$SCRATCH" --swift-sdks-path "$SDK_DIR" --swift-sdk "$NAME" \
    -c release --static-swift-stdlib -Xswiftc -gnone -Xlinker --strip-all "${SHIP_FLAGS[@]}" "${EXTRA_FLAGS[@]}" \
    --product "$1"
  log "built in $(($(date +%s) - start)) s"
}
build_product osh-edge

mkdir -p "$(dirname -- "$OUT")"
install -m 755 "$ROOT$SCRATCH/aarch64-unknown-linux-gnu/release/osh-edge" "$OUT"
log "$OUT: $(stat -c %s "$OUT") bytes; $(file -b "$OUT" | cut -d, -f1-2)"
# The binary the .deb ships: no libmicrohttpd, no simulator.
if hygiene=$("$TOOLCHAIN_DIR/check-hygiene.sh" "$OUT"); then log "$hygiene"; else log "error: $hygiene"; exit 1; fi
DEV_OUT=$(dirname -- "$OUT")/osh-edge-dev
if ((DEV)); then
  build_product osh-edge-dev
  install -m 755 "$ROOT$SCRATCH/aarch64-unknown-linux-gnu/release/osh-edge-dev" "$DEV_OUT"
  log "$DEV_OUT: $(stat -c %s "$DEV_OUT") bytes; $(file -b "$DEV_OUT" | cut -d, -f1-2)"
fi
if ((CHECK)); then
  command -v qemu-aarch64-static >/dev/null || die "--check needs qemu-aarch64-static (apt-get install qemu-user-static)"
  qemu-aarch64-static -L "$ROOT$SYSROOT_IN" "$OUT" version
fi
printf '%s\n' "$OUT"
if ((DEV)); then printf '%s\n' "$DEV_OUT"; fi
