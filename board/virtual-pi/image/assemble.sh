#!/usr/bin/env bash
# assemble.sh BASE_DIR DEB OUT_DIR DEV_BIN: the virtual Pi's disk, as a Pi owner would set it up:
# the base root filesystem, the stand-in kernel modules (modules/build-modules.sh), then
# `apt install ./osh-edge_*.deb` and the owner's /etc/osh-edge/osh-edge.conf — and the
# virtual board's own parts (guest/: the stand-ins' setup, the node, the observer), among them
# DEV_BIN, the arm64 osh-edge-dev whose development node the agent streams to
# (/usr/local/bin: not the package's, which ships only osh-edge).
# Writes OUT_DIR/{rootfs.img,vmlinuz,initrd.img,deb.txt}. Called by `vpi build`.
set -euo pipefail
# shellcheck source=board/virtual-pi/image/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
BASE=${1:?base dir}
DEB=$(realpath -e -- "${2:?deb}")
OUT=${3:?out dir}
DEV_BIN=$(realpath -e -- "${4:?arm64 osh-edge-dev (toolchain/cross-build.sh --dev)}")
KVER=$(cat "$BASE/kver")

WORK=$OUT.tmp
R=$WORK/rootfs
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || true; done
}
trap cleanup EXIT
rm -rf --one-file-system -- "$WORK"
mkdir -p "$WORK"
vlog "copying the base root filesystem"
cp -a "$BASE/rootfs" "$R"

vlog "stand-in modules for $KVER"
"$VPI_DIR/modules/build-modules.sh" --kver "$KVER" --into "$R" >"$WORK/modules.log" 2>&1 ||
  { tail -30 "$WORK/modules.log"; vdie "building the stand-in modules failed (log above)"; }

# apt runs arm64 dpkg and the maintainer scripts through qemu-user (binfmt).
ensure_binfmt
mount -t proc proc "$R/proc" && MOUNTS+=("$R/proc")
mount --bind /dev "$R/dev" && MOUNTS+=("$R/dev")
cp -L /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
apt_install_deb "$R" "$DEB" "$WORK/apt.log"
cleanup
MOUNTS=()

# The owner's configuration (the conffile, edited), with the package's ownership and mode.
install -m 0640 "$VPI_DIR/guest/osh-edge.conf" "$R/etc/osh-edge/osh-edge.conf"
chroot "$R" chown root:osh-edge /etc/osh-edge/osh-edge.conf

# The virtual board's parts.
install -d "$R/opt/vpi"
install -m 0755 "$VPI_DIR/guest/vpi-board.sh" "$VPI_DIR/guest/vpi-scenario.sh" "$VPI_DIR/guest/vpi-led.sh" \
  "$VPI_DIR/i2c/i2c-load.sh" "$VPI_DIR/i2c/i2c-steps.sh" "$R/opt/vpi/"
install -m 0644 "$VPI_DIR"/guest/*.service "$R/etc/systemd/system/"
install -D -m 0755 "$DEV_BIN" "$R/usr/local/bin/osh-edge-dev"
systemctl --root="$R" enable vpi-board.service vpi-audio.service vpi-node.service vpi-led.service vpi-scenario.service >/dev/null 2>&1
[[ -L $R/etc/systemd/system/multi-user.target.wants/osh-edge.service ]] ||
  vlog "warning: the package did not enable osh-edge.service (multi-user.target.wants has no link)"

dpkg-deb -f "$DEB" Package Version Architecture Depends >"$WORK/deb.txt"
sha256sum "$DEB" | cut -d' ' -f1 >>"$WORK/deb.txt"
vlog "ext4 image"
size=$(($(du -sm "$R" | cut -f1) + 400))
rm -f "$WORK/rootfs.img"
truncate -s "${size}M" "$WORK/rootfs.img"
mkfs.ext4 -q -F -L root -d "$R" "$WORK/rootfs.img"
cp "$BASE/vmlinuz" "$BASE/initrd.img" "$WORK/"
rm -rf --one-file-system -- "$R"
rm -rf --one-file-system -- "$OUT"
mv "$WORK" "$OUT"
vlog "image ready: $OUT/rootfs.img (${size} MB)"
