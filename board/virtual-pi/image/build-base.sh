#!/usr/bin/env bash
# build-base.sh RELEASE OUTDIR: the virtual Pi's base root filesystem, without osh-edge:
# Debian arm64 (minbase + systemd), its kernel and initrd, the tools the scenario uses, and the
# libraries osh-edge's package depends on (so installing the .deb later needs no download).
# Runs mmdebstrap through qemu-user: about 4-5 minutes on 2 cores. Called by `vpi build`,
# which caches OUTDIR by the hash of this file.
set -euo pipefail
# shellcheck source=board/virtual-pi/image/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
REL=${1:?release}
OUT=${2:?outdir}
debian_mirrors

# The Camera Module path, proved with the kernel's vimc: libcamera, its IPA modules (vimc's
# pipeline will not match without ipa_vimc.so, and the package is only a Recommends) and its V4L2
# compatibility layer. Trixie only: bookworm's libcamera 0.0.3 predates the layer's path used here.
CAMERA=libcamera0.4,libcamera-ipa,libcamera-v4l2
case $REL in
  trixie) LIBS=libcurl4t64,libgpiod3,libi2c0,libasound2t64,libv4l-0t64,libx264-164,libmicrohttpd12t64,libmosquitto1,libstdc++6,$CAMERA ;;
  bookworm) LIBS=libcurl4,libgpiod2,libi2c0,libasound2,libv4l-0,libx264-164,libmicrohttpd12,libmosquitto1,libstdc++6 ;;
  *) vdie "release must be trixie or bookworm" ;;
esac
# systemd and udev: the Pi's init; kmod: the stand-in modules; i2c-tools, gpiod, v4l-utils,
# alsa-utils: loading and watching the stand-ins; curl: reading the node's answers back;
# initramfs-tools: an initrd with the virtio disk driver.
PKGS=systemd-sysv,udev,kmod,procps,adduser,i2c-tools,gpiod,v4l-utils,alsa-utils,curl,linux-image-arm64,initramfs-tools,$LIBS

rm -rf --one-file-system -- "$OUT"
mkdir -p "$OUT"
SOURCES=("deb $MIRROR $REL main" "deb $MIRROR $REL-updates main")
[[ -n ${SECURITY_MIRROR:-} ]] && SOURCES+=("deb $SECURITY_MIRROR $REL-security main")

vlog "mmdebstrap $REL arm64 into $OUT/rootfs (a few minutes)"
# merged-usr hook: bookworm's mmdebstrap 1.3 does not lay trixie's /bin -> usr/bin links itself.
nice -n 10 mmdebstrap --mode=root --variant=minbase --architectures=arm64 \
  --hook-dir=/usr/share/mmdebstrap/hooks/maybe-merged-usr \
  --aptopt='Apt::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --include="$PKGS" \
  --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/initramfs-tools"; printf "MODULES=list\nCOMPRESS=gzip\n" >"$1/etc/initramfs-tools/conf.d/vpi"; printf "virtio_mmio\nvirtio_pci\nvirtio_blk\next4\n" >"$1/etc/initramfs-tools/modules"' \
  --customize-hook='chroot "$1" passwd -d root' \
  --customize-hook='echo vpi >"$1/etc/hostname"; printf "127.0.1.1 vpi\n" >>"$1/etc/hosts"' \
  --customize-hook='printf "/dev/vda / ext4 rw,noatime 0 1\n" >"$1/etc/fstab"' \
  --customize-hook='mkdir -p "$1/etc/systemd/system/serial-getty@ttyAMA0.service.d"; printf "[Service]\nExecStart=\nExecStart=-/sbin/agetty --autologin root --keep-baud 115200 %%I \$TERM\n" >"$1/etc/systemd/system/serial-getty@ttyAMA0.service.d/autologin.conf"' \
  --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service e2scrub_all.timer fstrim.timer >/dev/null 2>&1 || true' \
  "$REL" "$OUT/rootfs" "${SOURCES[@]}"

cp -L "$OUT/rootfs/vmlinuz" "$OUT/vmlinuz"
cp -L "$OUT/rootfs/initrd.img" "$OUT/initrd.img"
ls "$OUT/rootfs/lib/modules" >"$OUT/kver"
vlog "base ready: kernel $(cat "$OUT/kver"), rootfs $(du -sh "$OUT/rootfs" | cut -f1)"
