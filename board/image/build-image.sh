#!/usr/bin/env bash
# build-image.sh [--release trixie|bookworm] --out DIR [--deb FILE] [--raw]
#   Builds DIR/osh-edge-<version>-<release>-arm64.img.xz, the SD-card image for a Raspberry Pi
#   3/3+/4/400/CM4/Zero 2 W: a FAT partition (label RASPIFIRM) with the Pi firmware, config.txt,
#   cmdline.txt, the kernel, initrd and device trees; an ext4 root (label RASPIROOT) with a minimal
#   Debian arm64 and osh-edge installed from its .deb by apt, and the first-boot unit (firstboot/).
#   Also writes the image's .sha256 and its manifest (package versions, inputs).
#   --deb FILE   the arm64 package (default: the newest .build/ci-aarch64/deb/osh-edge_*_arm64.deb,
#                else cross-built for the release)
#   --raw        write the uncompressed .img instead (CI boots it: xz takes minutes on 2 cores)
#   Cached in /var/cache/osh-edge/image/<release>/ (IMAGE_CACHE): the Debian root by its recipe
#   (root-base.sh, rootfs/), the image by that and the package's bytes; a second run with the same
#   inputs copies the cached image. SOURCE_DATE_EPOCH (default: the time of the last commit of
#   the Debian root's recipe, root-base.sh and rootfs/) stamps every file, the filesystems' ids
#   and times: the same inputs and the same mirror state give the same bytes.
# Needs root (mmdebstrap, binfmt, chroot); no loop devices or mounts of the image.
set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=board/virtual-pi/image/lib.sh
source "$HERE/../virtual-pi/image/lib.sh"
vlog() { printf '[image] %s\n' "$*" >&2; }

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
REL=trixie
OUT=
DEB=
RAW=0
while (($#)); do
  case $1 in
    --release) REL=${2:?}; shift ;;
    --out) OUT=$(realpath -m -- "${2:?}"); shift ;;
    --deb) DEB=$(realpath -e -- "${2:?}"); shift ;;
    --raw) RAW=1 ;;
    -h | --help) usage 0 ;;
    *) vdie "unknown argument '$1' (build-image.sh --help)" ;;
  esac
  shift
done
[[ -n $OUT ]] || vdie "--out DIR is required (build-image.sh --help)"
[[ $REL == trixie || $REL == bookworm ]] || vdie "--release must be trixie or bookworm"
[[ $(id -u) -eq 0 ]] || vdie "build-image.sh needs root (mmdebstrap, binfmt, chroot)" 2
require_host_tools mmdebstrap qemu-user-static binfmt-support arch-test e2fsprogs dosfstools mtools fdisk xz-utils

if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git -C "$REPO" log -1 --format=%ct -- board/image/root-base.sh board/image/rootfs 2>/dev/null || true)
  [[ -n $SOURCE_DATE_EPOCH ]] || vdie "cannot date the root recipe from git (not a checkout, or root-base.sh and rootfs/ not committed): set SOURCE_DATE_EPOCH (seconds since 1970)"
fi
export SOURCE_DATE_EPOCH
[[ -n $DEB ]] || DEB=$(find_or_build_deb "$REL")
VERSION=$(dpkg-deb -f "$DEB" Version)
NAME=osh-edge-$VERSION-$REL-arm64.img
CACHE=${IMAGE_CACHE:-/var/cache/osh-edge/image}/$REL

# The card's layout: the FAT partition from 4 MiB (the usual erase-block alignment), 512 MiB as
# Debian's raspi images (the kernel hook keeps two kernels and initrds there during an upgrade);
# the root after it, grown to the card at first boot.
FAT_START_MB=4
FAT_MB=512

# Everything derived from SOURCE_DATE_EPOCH: the same inputs, the same bytes.
seed=$(printf 'osh-edge-image %s %s' "$REL" "$SOURCE_DATE_EPOCH" | sha256sum)
ROOT_UUID=${seed:0:8}-${seed:8:4}-4${seed:13:3}-8${seed:17:3}-${seed:20:12}
FAT_ID=${seed:32:8}
DISK_ID=${seed:40:8}

build_image() {
  local base=$1 dir=$2 work=$2.tmp
  local R=$work/rootfs mounts=()
  unmount_all() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || true; done
    mounts=()
  }
  trap unmount_all EXIT
  rm -rf --one-file-system -- "$work"
  mkdir -p "$work"
  vlog "copying the root base"
  cp -a "$base/rootfs" "$R"

  # As a Pi owner would: apt installs the package and its dependencies (already in the base, so
  # nothing is downloaded); maintainer scripts run through qemu-user.
  ensure_binfmt
  mount -t proc proc "$R/proc" && mounts+=("$R/proc")
  mount --bind /dev "$R/dev" && mounts+=("$R/dev")
  apt_install_deb "$R" "$DEB" "$work/apt.log"
  {
    printf 'image: %s.xz\nrelease: %s\nSOURCE_DATE_EPOCH: %s\nkernel: %s\n' "$NAME" "$REL" "$SOURCE_DATE_EPOCH" "$(cat "$base/kver")"
    printf 'package: %s %s\n\n' "$(basename "$DEB")" "$(sha256sum "$DEB" | cut -d' ' -f1)"
    chroot "$R" dpkg-query -W -f '${Package} ${Version} ${Architecture}\n'
  } >"$work/manifest.txt"
  unmount_all

  # The first boot (firstboot/, see README.md here), and this directory's README for the board.
  install -D -m 0755 "$HERE/firstboot/osh-edge-firstboot" "$R/usr/libexec/osh-edge/osh-edge-firstboot"
  install -m 0644 "$HERE/firstboot/osh-edge-firstboot.service" "$R/etc/systemd/system/"
  install -D -m 0644 "$HERE/firstboot/osh-edge.service.d/firstboot.conf" "$R/etc/systemd/system/osh-edge.service.d/firstboot.conf"
  systemctl --root="$R" enable osh-edge-firstboot.service >/dev/null 2>&1
  install -m 0644 "$HERE/README.md" "$R/usr/share/doc/osh-edge/image.md"

  # What a user sees on the FAT partition from their computer: how to configure, and the examples
  # (the full one, and the board profiles' per-model sections: UART, LED chip, camera).
  local ex=$R/boot/firmware/osh-edge-examples p
  install -d "$ex"
  install -m 0644 "$REPO/deploy/osh-edge.conf.example" "$ex/osh-edge.conf.example"
  for p in "$REPO"/board/profiles/*.conf; do install -m 0644 "$p" "$ex/profile-$(basename "$p")"; done
  sed "s/@VERSION@/$VERSION/" "$HERE/osh-edge-README.txt" >"$R/boot/firmware/osh-edge-README.txt"

  # Nothing of the build machine or the build's time: logs, caches, the resolver, ids.
  rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/cache/apt/archives/*.deb \
    "$R"/var/cache/debconf/*-old "$R"/var/lib/dpkg/*-old "$R"/var/cache/ldconfig/aux-cache "$R"/etc/resolv.conf
  find "$R/var/log" -type f -delete
  : >"$R/etc/machine-id"
  rm -f "$R/var/lib/dbus/machine-id"
  find "$R" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0r touch --no-dereference --date="@$SOURCE_DATE_EPOCH"

  # The two filesystems, built from directories (mkfs.ext4 -d, mtools): no loop device, no mount.
  mv "$R/boot/firmware" "$work/fat"
  install -d -m 0755 "$R/boot/firmware"
  touch --date="@$SOURCE_DATE_EPOCH" "$R/boot/firmware" "$R/boot"
  local used root_mb
  used=$(du -sm --apparent-size "$R" | cut -f1)
  root_mb=$(((used * 115 / 100 + 256 + 3) / 4 * 4))
  vlog "ext4 root: ${used} MiB used, ${root_mb} MiB partition"
  E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -F -L RASPIROOT -U "$ROOT_UUID" \
    -E "hash_seed=$ROOT_UUID,root_owner=0:0" -d "$R" "$work/root.img" "${root_mb}M" >/dev/null
  # mkfs.ext4 -d copies each file's ctime and atime from the build tree (the time of the build):
  # set them, and the creation time, to SOURCE_DATE_EPOCH (one debugfs batch, paths sorted; the
  # fake time keeps its superblock write time too).
  (cd "$R" && find . -print0 | LC_ALL=C sort -z | tr '\0' '\n') | sed -e 's|^\.||' -e 's|^$|/|' |
    awk -v t="@$SOURCE_DATE_EPOCH" '{ for (f = 1; f <= 3; f++) printf "sif \"%s\" %s %s\n", $0, (f == 1 ? "ctime" : f == 2 ? "atime" : "crtime"), t }' |
    E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH debugfs -w -f - "$work/root.img" >/dev/null 2>"$work/debugfs.log" ||
    { tail -5 "$work/debugfs.log"; vdie "debugfs could not set the root's timestamps"; }
  vlog "FAT boot partition: $(du -sh "$work/fat" | cut -f1) in ${FAT_MB} MiB"
  mkfs.vfat -F 32 -n RASPIFIRM -i "$FAT_ID" --invariant -C "$work/fat.img" $((FAT_MB * 1024)) >/dev/null
  local f
  (cd "$work/fat" && find . -mindepth 1 -type d | LC_ALL=C sort) | while read -r f; do
    MTOOLS_SKIP_CHECK=1 mmd -i "$work/fat.img" "::/${f#./}"
  done
  (cd "$work/fat" && find . -type f | LC_ALL=C sort) | while read -r f; do
    TZ=UTC MTOOLS_SKIP_CHECK=1 mcopy -m -i "$work/fat.img" "$work/fat/${f#./}" "::/${f#./}"
  done

  # The card: an MBR (the Pi's boot ROM reads the first FAT partition), the FAT, the root.
  local disk=$work/$NAME fat_s=$((FAT_START_MB * 2048)) root_s=$(((FAT_START_MB + FAT_MB) * 2048))
  truncate -s $(((FAT_START_MB + FAT_MB + root_mb) * 1024 * 1024)) "$disk"
  printf 'label: dos\nlabel-id: 0x%s\nunit: sectors\n\nstart=%d, size=%d, type=c, bootable\nstart=%d, type=83\n' \
    "$DISK_ID" "$fat_s" $((FAT_MB * 2048)) "$root_s" | sfdisk -q --no-reread --no-tell-kernel "$disk"
  dd if="$work/fat.img" of="$disk" bs=1M seek="$FAT_START_MB" conv=notrunc,sparse status=none
  dd if="$work/root.img" of="$disk" bs=1M seek=$((FAT_START_MB + FAT_MB)) conv=notrunc,sparse status=none
  rm -rf --one-file-system -- "$R" "$work/fat" "$work/fat.img" "$work/root.img"
  rm -rf --one-file-system -- "$dir"
  mv "$work" "$dir"
  trap - EXIT
}

start=$(date +%s)
base_key=$(hash_of "$HERE/root-base.sh" "$HERE/rootfs" "$REL" "$SOURCE_DATE_EPOCH")
base=$CACHE/base-$base_key
if [[ ! -f $base/.ready ]]; then
  ensure_binfmt
  rm -rf --one-file-system -- "$CACHE"/base-*
  "$HERE/root-base.sh" "$REL" "$base" >&2
  touch "$base/.ready"
else
  vlog "root base from the cache: $base"
fi
img_key=$(hash_of "$base_key" "$HERE/build-image.sh" "$HERE/firstboot" "$HERE/README.md" "$HERE/osh-edge-README.txt" \
  "$REPO/board/profiles" "$REPO/deploy/osh-edge.conf.example" "$DEB")
img=$CACHE/image-$img_key
if [[ ! -f $img/.ready ]]; then
  rm -rf --one-file-system -- "$CACHE"/image-*
  build_image "$base" "$img"
  touch "$img/.ready"
else
  vlog "image from the cache: $img"
fi
# The cache keeps the raw image (sparse) and, once asked for, its xz.
mkdir -p "$OUT"
cp "$img/manifest.txt" "$OUT/$NAME.manifest.txt"
if ((RAW)); then
  out=$OUT/$NAME
  cp --sparse=always "$img/$NAME" "$out"
  (cd "$OUT" && sha256sum "$NAME" >"$NAME.sha256")
else
  if [[ ! -f $img/$NAME.xz.sha256 ]]; then
    vlog "xz ($(du -h --apparent-size "$img/$NAME" | cut -f1) image; a few minutes on 2 cores)"
    nice -n 10 xz -T2 -6 -c "$img/$NAME" >"$img/$NAME.xz.tmp" && mv "$img/$NAME.xz.tmp" "$img/$NAME.xz"
    (cd "$img" && sha256sum "$NAME.xz" >"$NAME.xz.sha256")
  fi
  out=$OUT/$NAME.xz
  cp "$img/$NAME.xz" "$img/$NAME.xz.sha256" "$OUT/"
fi
vlog "$out: $(stat -c %s "$out") bytes, $(cut -d' ' -f1 "$out.sha256"), $(($(date +%s) - start)) s"
printf '%s\n' "$out"
