#!/usr/bin/env bash
# build-deb.sh: make osh-edge_<version>_<arch>.deb from a built binary, with dpkg-deb
# from a staged tree (no debhelper needed).
#
# Usage: deploy/build-deb.sh ARCH BINARY [--out DIR] [--libs-from DIR]
#   ARCH         arm64 or amd64 (the binary's architecture; checked)
#   BINARY       the release binary (toolchain/cross-build.sh, or .build/release/osh-edge)
#   --out DIR    where the .deb goes (default: the current directory)
#   --libs-from DIR  a directory of the target release's .debs (the SDK's apt cache) used to
#                map the binary's shared libraries to package names; default: this host's
#                dpkg database (right for a binary built on this host)
# Depends: one package per shared library the binary needs (libgpiod3 on trixie, libgpiod2
# on bookworm, …), libc6 at least the newest GLIBC_ version it references, and adduser.
set -euo pipefail
# Outputs are read whole (a variable, a here-string), never piped into `head`, `grep -q` or
# `awk '… exit'`: under pipefail a producer killed by SIGPIPE — its default action outside a
# test runner — failed the script with status 141 and no word.

die() { printf 'build-deb.sh: error: %s\n' "$*" >&2; exit 2; }
# Whatever else fails says which line and command, and its status.
failed() { printf 'build-deb.sh: error: line %s: `%s` failed (exit %s)\n' "$2" "$3" "$1" >&2; exit "$1"; }
trap 'failed $? "$LINENO" "$BASH_COMMAND"' ERR
(($# >= 2)) || die "usage: deploy/build-deb.sh ARCH BINARY [--out DIR] [--libs-from DIR]"
ARCH=$1
BINARY=$2
shift 2
OUT=.
LIBS_FROM=
while (($#)); do
  case $1 in
    --out) OUT=${2:?}; shift ;;
    --libs-from) LIBS_FROM=${2:?}; shift ;;
    *) die "unknown argument '$1'" ;;
  esac
  shift
done
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd -- "$HERE/.." && pwd)
[[ -f $BINARY ]] || die "no binary at $BINARY"
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (apt-get install dpkg)"
command -v readelf >/dev/null || die "readelf is missing (apt-get install binutils)"

case $ARCH in
  arm64) MACHINE=AArch64 ;;
  amd64) MACHINE='Advanced Micro Devices X86-64' ;;
  *) die "ARCH must be arm64 or amd64, not '$ARCH'" ;;
esac
HEADER=$(readelf -h "$BINARY") || die "readelf cannot read $BINARY (is it an ELF binary?)"
grep -q "Machine: *$MACHINE" <<<"$HEADER" || die "$BINARY is not an $ARCH binary ($(sed -n 's/ *Machine: *//p' <<<"$HEADER"))"

# The project's address (a mail host lintian accepts); whoever publishes their own build may name
# themselves with OSH_DEB_MAINTAINER.
MAINTAINER=${OSH_DEB_MAINTAINER:-osh-edge maintainers <osh-edge@users.noreply.github.com>}
VERSION=$(sed -n 's/.*static let version = "\([^"]*\)".*/\1/p' "$REPO/Sources/OSHAgent/Agent.swift")
VERSION=${VERSION%%$'\n'*}
[[ -n $VERSION ]] || die "cannot read the version from Sources/OSHAgent/Agent.swift"

# --- Depends, from the binary's NEEDED libraries
mapfile -t NEEDED < <(readelf -d "$BINARY" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
declare -A OWNER=()
if [[ -n $LIBS_FROM ]]; then
  for deb in "$LIBS_FROM"/*.deb; do
    pkg=$(dpkg-deb -f "$deb" Package)
    # Column 6 is the path (symlinks such as libv4l2.so.0 -> libv4l2.so.0.0.0 included).
    while read -r so; do OWNER[$so]=$pkg; done < <(dpkg-deb -c "$deb" | awk '{ n = split($6, p, "/"); print p[n] }' | grep '\.so\.[0-9][0-9.]*$')
  done
fi
LDCACHE=
if [[ -z $LIBS_FROM ]]; then
  command -v ldconfig >/dev/null || die "ldconfig is missing (add /sbin to PATH, or give --libs-from the target release's .debs)"
  LDCACHE=$(ldconfig -p) || die "ldconfig -p failed: cannot map the binary's libraries to packages (give --libs-from)"
fi
deps=()
for so in "${NEEDED[@]}"; do
  pkg=${OWNER[$so]:-}
  if [[ -z $pkg && -z $LIBS_FROM ]]; then
    # Exact-path lookups are fast (a `dpkg -S '*/x'` glob scans every list); merged /usr
    # means dpkg may know the file under /lib or /usr/lib.
    path=$(awk -v so="$so" '$1 == so { print $NF; exit }' <<<"$LDCACHE")
    # Not in the cache: no candidates (an empty path made "/usr", which dozens of packages own).
    cands=()
    [[ -z $path ]] || cands=("$path" "$(readlink -f -- "$path")" "${path#/usr}" "/usr$path")
    for cand in "${cands[@]}"; do
      owners=$(dpkg -S "$cand" 2>/dev/null) || continue
      # The first line's package: "libc6:amd64: /lib/…" → libc6.
      pkg=${owners%%:*}
      [[ -n $pkg ]] && break
    done
  fi
  [[ -n $pkg ]] || die "no package provides $so (give --libs-from the target release's .debs)"
  [[ $pkg == libc6 ]] && continue
  deps+=("$pkg")
done
GLIBC=$(readelf -V "$BINARY" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
# Packed relative relocations (cross-build.sh links with -z pack-relative-relocs) need glibc 2.36.
if [[ $(readelf -V "$BINARY") == *GLIBC_ABI_DT_RELR* ]]; then GLIBC=$(printf '%s\n' "$GLIBC" 2.36 | sort -V | tail -1); fi
DEPENDS=$(printf '%s\n' "libc6 (>= $GLIBC)" "${deps[@]}" adduser | awk '!seen[$0]++' | paste -sd, | sed 's/,/, /g')

# --- the staged tree
STAGE=$(mktemp -d)
trap 'rm -rf -- "$STAGE"' EXIT
chmod 0755 "$STAGE"
umask 022
install -D -m 0755 "$BINARY" "$STAGE/usr/bin/osh-edge"
# Debian ships stripped binaries (cross-build.sh strips at link time; a host build does not).
SECTIONS=$(readelf -S "$STAGE/usr/bin/osh-edge")
if grep -q '\.symtab' <<<"$SECTIONS"; then
  case $ARCH in
    amd64) STRIP="strip" ;;
    arm64) STRIP="aarch64-linux-gnu-strip" ;;
  esac
  command -v "$STRIP" >/dev/null || die "$BINARY is not stripped and $STRIP is missing (apt-get install binutils-aarch64-linux-gnu, or build with toolchain/cross-build.sh)"
  "$STRIP" --strip-unneeded --remove-section=.comment --remove-section=.note "$STAGE/usr/bin/osh-edge"
fi
install -D -m 0644 "$HERE/osh-edge.service" "$STAGE/lib/systemd/system/osh-edge.service"
install -D -m 0644 "$HERE/osh-edge.conf.example" "$STAGE/etc/osh-edge/osh-edge.conf"
install -D -m 0644 "$HERE/udev/99-osh-edge.rules" "$STAGE/lib/udev/rules.d/99-osh-edge.rules"
# The board profiles `[system] profile = "pi4"` names (BoardProfile.installedDirectory).
for p in "$REPO"/board/profiles/*.conf; do install -D -m 0644 "$p" "$STAGE/usr/share/osh-edge/profiles/$(basename "$p")"; done
DOC=$STAGE/usr/share/doc/osh-edge
install -D -m 0644 "$HERE/osh-edge.conf.example" "$DOC/examples/osh-edge.conf.example"
install -m 0644 "$REPO/board/README.md" "$DOC/board.md"
install -m 0644 "$REPO/README.md" "$DOC/README.md" # the unit's Documentation=
install -D -m 0644 /dev/null "$STAGE/usr/share/man/man1/osh-edge.1.gz"
gzip -9n <"$HERE/osh-edge.1" >"$STAGE/usr/share/man/man1/osh-edge.1.gz"
cat >"$DOC/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: osh-edge

Files: *
Copyright: 2026 the osh-edge authors
License: unspecified
 The project has not chosen a licence yet; see the source repository.
EOF
DATE=$(date -R -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}")
printf 'osh-edge (%s) unstable; urgency=medium\n\n  * Built by deploy/build-deb.sh.\n\n -- %s  %s\n' \
  "$VERSION" "$MAINTAINER" "$DATE" | gzip -9n >"$DOC/changelog.gz"
chmod 0644 "$DOC/changelog.gz"

mkdir -p "$STAGE/DEBIAN"
SIZE=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat >"$STAGE/DEBIAN/control" <<EOF
Package: osh-edge
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $SIZE
Depends: $DEPENDS
Suggests: libcamera-v4l2, libcamera-ipa
Section: net
Priority: optional
Homepage: https://opensensorhub.org
Description: OpenSensorHub sensor agent for Raspberry Pi
 osh-edge streams a board's sensors (GPS, IMU, barometer, microphone level,
 camera, device health) to an OpenSensorHub node through the OGC API -
 Connected Systems. It runs as a systemd service under its own user, shows
 its state on a status LED and holds observations while the node is away.
 A Raspberry Pi Camera Module is reached through libcamera's V4L2 layer
 (libcamera-v4l2), which the agent loads itself when it finds such a camera.
EOF
printf '/etc/osh-edge/osh-edge.conf\n' >"$STAGE/DEBIAN/conffiles"

cat >"$STAGE/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    for g in gpio i2c dialout audio video; do
        getent group "$g" >/dev/null || addgroup --system "$g"
    done
    if ! getent passwd osh-edge >/dev/null; then
        adduser --system --group --home /var/lib/osh-edge --no-create-home \
            --shell /usr/sbin/nologin osh-edge
    fi
    for g in gpio i2c dialout audio video; do
        adduser osh-edge "$g" >/dev/null
    done
    chown root:osh-edge /etc/osh-edge /etc/osh-edge/osh-edge.conf
    chmod 0750 /etc/osh-edge
    chmod 0640 /etc/osh-edge/osh-edge.conf
    if [ ! -e /etc/osh-edge/secrets ]; then
        install -m 0600 -o osh-edge -g osh-edge /dev/null /etc/osh-edge/secrets
    fi
    # Enabled as debhelper's packages are (deb-systemd-helper, init-system-helpers is
    # Essential): on the first installation, an admin's disable kept across upgrades, and also
    # where systemd is not running — an image being built, a chroot.
    if deb-systemd-helper --quiet was-enabled osh-edge.service; then
        deb-systemd-helper enable osh-edge.service >/dev/null || true
    else
        deb-systemd-helper update-state osh-edge.service >/dev/null || true
    fi
    if [ -d /run/systemd/system ]; then
        udevadm control --reload || true
        systemctl daemon-reload
        # Start only with a valid configuration: the shipped one names no real node yet.
        if osh-edge config check /etc/osh-edge/osh-edge.conf >/dev/null 2>&1; then
            systemctl restart osh-edge.service
        else
            echo "osh-edge: edit /etc/osh-edge/osh-edge.conf (osh-edge config check), then: systemctl start osh-edge"
        fi
    fi
fi
exit 0
EOF
cat >"$STAGE/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    systemctl stop osh-edge.service || true
    systemctl disable osh-edge.service || true
fi
exit 0
EOF
cat >"$STAGE/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
    # The secrets and the id cache are ours; the user stays (files may still carry its id).
    rm -f /etc/osh-edge/secrets
    rm -rf /var/lib/osh-edge
    deb-systemd-helper purge osh-edge.service >/dev/null || true
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
exit 0
EOF
chmod 0755 "$STAGE/DEBIAN/postinst" "$STAGE/DEBIAN/prerm" "$STAGE/DEBIAN/postrm"
# Each override carries its justification as a comment (deploy/osh-edge.lintian-overrides).
install -D -m 0644 "$HERE/osh-edge.lintian-overrides" "$STAGE/usr/share/lintian/overrides/osh-edge"
# md5sums: what `dpkg --verify osh-edge` checks the installed files against (the conffile
# is left out, as dh_md5sums does: dpkg records its hash itself).
(cd "$STAGE" && find . \( -path ./DEBIAN -o -path ./etc/osh-edge/osh-edge.conf \) -prune -o -type f -printf '%P\0' |
  LC_ALL=C sort -z | xargs -0 md5sum) >"$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/md5sums"

mkdir -p "$OUT"
DEB=$OUT/osh-edge_${VERSION}_$ARCH.deb
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >/dev/null
printf '%s\n' "$DEB"
