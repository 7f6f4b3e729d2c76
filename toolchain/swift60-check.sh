#!/usr/bin/env bash
# swift60-check.sh: check that a Swift package compiles with Debian's Swift 6.0.3
# (the compiler of the aarch64 cross toolchain). It runs on an x86_64 Debian host as root.
#
# Usage: toolchain/swift60-check.sh [PACKAGE_DIR] [extra `swift build` args...]
#   PACKAGE_DIR defaults to the repo root (the parent of this script's directory).
# Environment:
#   OSH_SWIFT60_ROOT   chroot location (default /var/cache/osh-edge/swift60-trixie)
#   OSH_DEBIAN_MIRROR  Debian mirror URL (default: taken from the host's apt sources)
#   OSH_SWIFT60_SETUP_ONLY  non-empty: create the chroot if needed, then exit (no build)
#
# Why a chroot: Debian's amd64 `swiftlang` 6.0.3 exists only in trixie and needs
# glibc >= 2.38, so it cannot run on a bookworm host directly.
set -euo pipefail

LOG_TAG=swift60-check
# ROOT, log/die, the mount stack (MOUNTS, unmount_all), in_builder, lock_builder: shared with
# make-sdk.sh and cross-build.sh.
# shellcheck source=toolchain/lib-chroot.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib-chroot.sh"
SUITE=trixie
# Compiler + what SwiftPM needs to link (libc6-dev: Scrt1.o for the manifest), plus the
# -dev packages for the project's system-library targets.
# COpenSSL's libssl-dev is not named: libcurl4-openssl-dev depends on it.
PACKAGES=(swiftlang libswiftlang libc6-dev libstdc++-14-dev pkg-config
  libcurl4-openssl-dev libgpiod-dev libi2c-dev libasound2-dev libv4l-dev
  libx264-dev libmicrohttpd-dev libmosquitto-dev)
STAMP_BASE="$ROOT/.osh-debootstrap-done"
STAMP_READY="$ROOT/.osh-swift60-ready"   # holds the package list that was installed
PARTIAL="$ROOT/.osh-swift60-partial"     # marks a directory this script may wipe

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
PKG=$(realpath -e -- "${1:-$SCRIPT_DIR/..}")
shift || true
EXTRA_ARGS=("$@")


[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot and mount need it)"
[[ -f "$PKG/Package.swift" ]] || die "no Package.swift in $PKG"

# --- mounts, always undone on exit (reverse order) --------------------------------------
trap unmount_all EXIT
trap 'exit 130' INT TERM   # run the EXIT trap on Ctrl-C too

mount_chroot_fs() {
  # /proc: swift and apt maintainer scripts read it; /dev: /dev/null, /dev/urandom;
  # /dev/pts: dpkg's terminal log. Plain (non-recursive) binds, so unmounting them can
  # never propagate to the host's own mounts.
  mkdir -p "$ROOT/proc" "$ROOT/dev"
  mount -t proc proc "$ROOT/proc" && MOUNTS+=("$ROOT/proc")
  mount --bind /dev "$ROOT/dev" && MOUNTS+=("$ROOT/dev")
  if [[ -d /dev/pts ]] && mountpoint -q /dev/pts; then
    mount --bind /dev/pts "$ROOT/dev/pts" && MOUNTS+=("$ROOT/dev/pts")
  fi
}

mounts_below() { findmnt -rn -o TARGET | awk -v r="$ROOT" '$0 == r || index($0, r "/") == 1'; }

# Print the host's Debian archive URL: the first enabled `deb` URI ending in /debian
# (this skips debian-security and third-party repos) from sources.list(.d).
host_debian_mirror() {
  local f files=()
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] && files+=("$f")
  done
  ((${#files[@]})) || return 0
  awk '
    function pick(u) { sub(/\/+$/, "", u); if (u ~ /^https?:\/\/.*\/debian$/) { print u; found = 1; exit } }
    FNR == 1 && prev ~ /\.sources$/ { flush() }
    { prev = FILENAME }
    FILENAME ~ /\.sources$/ {
      # deb822: collect a stanza, decide at the blank line / end of file.
      if ($0 ~ /^[ \t]*$/) { flush(); next }
      if ($0 ~ /^#/) next
      k = tolower($1); sub(/:$/, "", k); $1 = ""; v = $0
      if (k == "types") types = v; else if (k == "uris") uris = v; else if (k == "enabled") en = tolower(v)
      next
    }
    function flush(   n, i, a) {
      if (types ~ /(^|[ \t])deb([ \t]|$)/ && en !~ /no/) { n = split(uris, a, /[ \t]+/); for (i = 1; i <= n; i++) if (a[i] != "") pick(a[i]) }
      types = uris = en = ""
    }
    /^[ \t]*deb[ \t]/ {
      line = $0; sub(/\[[^]]*\]/, "", line); split(line, a, /[ \t]+/)
      for (i = 1; i <= length(a); i++) if (a[i] == "deb") { pick(a[i + 1]); break }
    }
    END { if (!found && prev ~ /\.sources$/) flush() }
  ' "${files[@]}"
}

# --- 1. the trixie chroot (created once, then reused) -------------------------------------
setup_chroot() {
  local want mirror
  want=$(printf '%s\n' "${PACKAGES[@]}")
  if [[ -f $STAMP_READY && "$(cat "$STAMP_READY")" == "$want" ]]; then
    return 0
  fi

  mirror=${OSH_DEBIAN_MIRROR:-$(host_debian_mirror)}
  [[ -n $mirror ]] || die "no Debian mirror found in /etc/apt/sources.list(.d); set OSH_DEBIAN_MIRROR"
  log "using Debian mirror $mirror"

  if [[ ! -f $STAMP_BASE ]]; then
    # A half-made chroot from an interrupted run: wipe it, but only if we created it
    # and nothing is mounted inside it.
    if [[ -d $ROOT && -n "$(ls -A -- "$ROOT")" ]]; then
      [[ -f $PARTIAL ]] || die "$ROOT exists, is not empty and was not made by this script"
      [[ -z "$(mounts_below)" ]] || die "something is still mounted below $ROOT: $(mounts_below | tr '\n' ' ')"
      log "removing incomplete chroot $ROOT"
      rm -rf --one-file-system -- "$ROOT"
    fi
    mkdir -p "$ROOT"
    touch "$PARTIAL"

    if ! command -v debootstrap >/dev/null; then
      log "installing debootstrap on the host"
      apt-get install -y --no-install-recommends debootstrap ||
        { apt-get update && apt-get install -y --no-install-recommends debootstrap; }
    fi
    local include=()
    [[ $mirror == https:* ]] && include=(--include=ca-certificates)
    log "debootstrap $SUITE amd64 minbase into $ROOT"
    # The host's debian-archive-keyring (bookworm) already verifies trixie's Release file.
    debootstrap --variant=minbase --arch=amd64 "${include[@]}" "$SUITE" "$ROOT" "$mirror"
    touch "$STAMP_BASE"
  fi

  # apt inside the chroot: same mirror, trixie + trixie-updates; no recommends keeps it small.
  printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$SUITE" "$mirror" "$SUITE" \
    >"$ROOT/etc/apt/sources.list"
  cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
  # Never start services from maintainer scripts inside the chroot.
  printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
  chmod 755 "$ROOT/usr/sbin/policy-rc.d"

  mount_chroot_fs
  log "installing ${PACKAGES[*]}"
  in_builder apt-get update
  in_builder apt-get install -y --no-install-recommends "${PACKAGES[@]}"
  # The .debs and package lists are not needed after install (lists are refetched on change).
  in_builder apt-get clean
  rm -rf "$ROOT"/var/lib/apt/lists/*
  unmount_all
  printf '%s\n' "$want" >"$STAMP_READY"
  rm -f "$PARTIAL"
  log "chroot ready"
}

# One run at a time per chroot: setup and the bind mounts must not interleave.
lock_builder

setup_chroot
# make-sdk.sh / cross-build.sh only need the builder to exist.
if [[ -n ${OSH_SWIFT60_SETUP_ONLY:-} ]]; then exit 0; fi

# --- 2. build the package inside the chroot ----------------------------------------------
# Mount the package read-only at the same absolute path as on the host, so compiler
# messages show host paths. Only an absent or empty directory in the chroot is used.
TARGET="$ROOT$PKG"
case "$PKG" in
  / | /proc | /proc/* | /dev | /dev/* | /sys | /sys/* | /usr | /usr/* | /etc | /etc/* | /bin* | /sbin* | /lib*)
    die "package path $PKG would shadow chroot system directories; copy it elsewhere" ;;
esac
mount_chroot_fs
# Fresh /tmp per run: SwiftPM leaves TemporaryDirectory.* behind, and a package under
# the host's /tmp gets its mount point here instead of in the cached chroot.
mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp" && MOUNTS+=("$ROOT/tmp")
if [[ -e $TARGET ]] && { [[ ! -d $TARGET ]] || [[ -n "$(ls -A -- "$TARGET")" ]]; }; then
  die "$TARGET exists in the chroot and is not an empty directory (stale mount?)"
fi
mkdir -p "$TARGET"
mount --bind "$PKG" "$TARGET" && MOUNTS+=("$TARGET")
mount -o remount,bind,ro "$TARGET"

# Scratch build dir inside the chroot, one per package path: the host's .build is never
# touched, and repeated checks build incrementally.
SCRATCH=/var/tmp/osh-swift60-build/$(printf '%s' "$PKG" | sha256sum | cut -c1-16)
mkdir -p "$ROOT$SCRATCH"
BUILD_LOG="$ROOT$SCRATCH/last-build.log"

log "compiler:"
in_builder /usr/bin/swift --version

log "swift build --build-tests (debug) of $PKG, scratch path $SCRATCH (inside $ROOT)"
set +e
in_builder sh -c 'cd "$1" && shift && exec /usr/bin/swift build "$@"' sh "$PKG" \
  --scratch-path "$SCRATCH" --build-tests "${EXTRA_ARGS[@]}" 2>&1 | tee "$BUILD_LOG"
rc=${PIPESTATUS[0]}
set -e

if ((rc != 0)); then
  log "BUILD FAILED with Swift 6.0.3 (exit $rc). Errors:"
  # Compiler and linker error lines, once each, in order (skip the source-excerpt lines).
  grep -E 'error:|error adding symbols|undefined (reference|symbol)' "$BUILD_LOG" |
    grep -vE '^ *[0-9]* *\|' | awk '!seen[$0]++' >&2 || log "(no error lines; see the full log above)"
  log "full log: $BUILD_LOG"
  exit 1
fi
log "OK: $PKG builds (with tests) with Swift 6.0.3"
