# lib-chroot.sh: shared by make-sdk.sh and cross-build.sh (sourced, not run).
# The builder is the trixie amd64 chroot that swift60-check.sh creates and keeps
# (Debian's swiftlang 6.0.3 needs glibc >= 2.38, which a bookworm host lacks).
# shellcheck shell=bash

ROOT=${OSH_SWIFT60_ROOT:-/var/cache/osh-edge/swift60-trixie}
ROOT=$(realpath -m -- "$ROOT")
TOOLCHAIN_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# Inside the builder: bundles live here, so the paths SwiftPM sees and the host's view
# ($ROOT$SDK_DIR) are the same files without any extra bind mount.
# shellcheck disable=SC2034  # used by the scripts that source this file
SDK_DIR=/opt/osh-edge-sdk

log() { printf '[%s] %s\n' "${LOG_TAG:-toolchain}" "$*" >&2; }
die() { log "error: $*"; exit 2; }

require_root() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (chroot and mount need it); try: sudo $0 $*"
}

# require_space DIR GIB: refuse early instead of failing halfway through an extract.
require_space() {
  local dir=$1 need=$2 have
  mkdir -p "$dir"
  have=$(df -Pk -- "$dir" | awk 'NR == 2 { print int($4 / 1048576) }')
  ((have >= need)) || die "need about $need GiB free on the filesystem of $dir, only $have GiB left"
}

# The builder chroot, created (debootstrap + swiftlang) by swift60-check.sh on first use.
ensure_builder() {
  if [[ ! -f $ROOT/.osh-swift60-ready ]]; then
    log "builder chroot $ROOT not ready; creating it with swift60-check.sh (a few minutes, ~2.7 GB)"
    OSH_SWIFT60_SETUP_ONLY=1 "$TOOLCHAIN_DIR/swift60-check.sh"
  fi
}

MOUNTS=()
unmount_all() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount -- "${MOUNTS[i]}" 2>/dev/null || umount -l -- "${MOUNTS[i]}" ||
      log "warning: could not unmount ${MOUNTS[i]}"
  done
  MOUNTS=()
}

# /proc for swift and apt, /dev for /dev/null; non-recursive binds so unmounting never
# reaches the host's own mounts. A fresh tmpfs /tmp per run.
mount_builder_fs() {
  mkdir -p "$ROOT/proc" "$ROOT/dev" "$ROOT/tmp"
  mount -t proc proc "$ROOT/proc" && MOUNTS+=("$ROOT/proc")
  mount --bind /dev "$ROOT/dev" && MOUNTS+=("$ROOT/dev")
  mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp" && MOUNTS+=("$ROOT/tmp")
}

# A clean environment so the host's PATH (/opt/swift…) never leaks into the builder.
in_builder() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
}

# One user of the builder at a time (swift60-check.sh takes the same lock).
lock_builder() {
  mkdir -p "$(dirname "$ROOT")"
  exec 9>"$ROOT.lock"
  flock 9
}

debian_mirror() {
  if [[ -n ${OSH_DEBIAN_MIRROR:-} ]]; then printf '%s\n' "$OSH_DEBIAN_MIRROR"; return; fi
  awk '$1 == "deb" { print $2; exit }' "$ROOT/etc/apt/sources.list"
}
