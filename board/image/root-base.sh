#!/usr/bin/env bash
# root-base.sh RELEASE OUTDIR: the SD-card image's root filesystem before osh-edge: Debian arm64
# (minbase + systemd) with Debian's Raspberry Pi boot files (raspi-firmware + linux-image-arm64,
# written to /boot/firmware by raspi-firmware's kernel hook), the network, ssh (off), time sync,
# growpart for the first boot, and the libraries osh-edge's package depends on.
# mmdebstrap through qemu-user: several minutes on 2 cores. build-image.sh caches OUTDIR by the
# hash of this file, rootfs/, the release and SOURCE_DATE_EPOCH (mmdebstrap uses it for every
# timestamp it writes, so the same mirror state gives the same tree).
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=board/virtual-pi/image/lib.sh
source "$HERE/../virtual-pi/image/lib.sh"
REL=${1:?release}
OUT=${2:?outdir}
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set (build-image.sh sets it)}"
debian_mirrors

case $REL in
  trixie) LIBS=libcurl4t64,libgpiod3,libi2c0,libasound2t64,libv4l-0t64,libx264-164,libmosquitto1,libstdc++6 ;;
  bookworm) LIBS=libcurl4,libgpiod2,libi2c0,libasound2,libv4l-0,libx264-164,libmosquitto1,libstdc++6 ;;
  *) vdie "release must be trixie or bookworm" ;;
esac
# Boot: raspi-firmware (GPU firmware, config.txt, cmdline.txt), the generic arm64 kernel (its
# bcm2837/bcm2711 device trees), initramfs-tools. Network: ifupdown + isc-dhcp-client, as
# Debian's raspi images; wpasupplicant and the Broadcom Wi-Fi firmware for wlan0. The rest:
# sshd (disabled below), timesyncd (the clock before the GPS has a fix), growpart + resize2fs
# (first boot), dosfstools (the FAT partition), i2c-tools/gpiod for checking the wiring.
PKGS=systemd-sysv,udev,kmod,procps,adduser,ca-certificates,netbase,iproute2,ifupdown,isc-dhcp-client
PKGS+=,wpasupplicant,wireless-regdb,firmware-brcm80211,openssh-server,systemd-timesyncd
PKGS+=,linux-image-arm64,initramfs-tools,raspi-firmware,dosfstools,e2fsprogs,fdisk,cloud-guest-utils
PKGS+=,i2c-tools,gpiod,$LIBS

rm -rf --one-file-system -- "$OUT"
mkdir -p "$OUT"
SOURCES=("deb $MIRROR $REL main non-free-firmware" "deb $MIRROR $REL-updates main non-free-firmware")
[[ -n ${SECURITY_MIRROR:-} ]] && SOURCES+=("deb $SECURITY_MIRROR $REL-security main non-free-firmware")

vlog "mmdebstrap $REL arm64 into $OUT/rootfs (several minutes)"
# rootfs/ (fstab, network, /etc/default/raspi-firmware*, the ssh drop-in, udev and module
# lines) goes in before raspi-firmware's hook is run again, so config.txt and cmdline.txt
# follow it. The hook runs at install too, but before those files are there.
nice -n 10 mmdebstrap --mode=root --variant=minbase --architectures=arm64 \
  --hook-dir=/usr/share/mmdebstrap/hooks/maybe-merged-usr \
  --aptopt='Apt::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --include="$PKGS" \
  --customize-hook="sync-in '$HERE/rootfs' /" \
  --customize-hook='chroot "$1" systemctl disable ssh.service >/dev/null 2>&1 || true' \
  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
  --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer >/dev/null 2>&1 || true' \
  --customize-hook='chroot "$1" passwd -l root >/dev/null' \
  --customize-hook='chroot "$1" env DEB_MAINT_PARAMS=configure /etc/kernel/postinst.d/z50-raspi-firmware' \
  "$REL" "$OUT/rootfs" "${SOURCES[@]}"

ls "$OUT/rootfs/lib/modules" >"$OUT/kver"
vlog "root base ready: kernel $(cat "$OUT/kver"), $(du -sh "$OUT/rootfs" | cut -f1)"
