#!/usr/bin/env bash
# deploy.sh: put osh-edge on a Pi from a workstation with one command: cross-build the
# release binary (static Swift stdlib, stripped), copy it with the unit, the example
# config, the udev rules and install.sh, install and restart over ssh, print the status.
#
# Usage: deploy/deploy.sh [options] USER@HOST
#        deploy/deploy.sh [options] --stage DIR      (install into DIR instead of a host)
#   --release trixie|bookworm  Pi OS release of the target (default trixie)
#   --binary FILE              use this aarch64 binary instead of cross-building (no root needed)
#   --dry-run                  print what would run; build, copy and contact nothing
#   --no-start                 install and enable, but do not (re)start the service
# Needs: root for the cross build (toolchain/cross-build.sh); ssh access with sudo on the Pi
# (ports, keys and jump hosts come from ~/.ssh/config).
set -euo pipefail

die() { printf 'deploy.sh: error: %s\n' "$*" >&2; exit 2; }
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd -- "$HERE/.." && pwd)
REL=trixie
BINARY=
DRY=0
STAGE=
HOST=
INSTALL_ARGS=()
while (($#)); do
  case $1 in
    --release) REL=${2:?}; shift ;;
    --binary) BINARY=${2:?}; shift ;;
    --dry-run) DRY=1 ;;
    --no-start) INSTALL_ARGS+=(--no-start) ;;
    --stage) STAGE=${2:?}; shift ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) [[ -z $HOST ]] || die "one host at a time"; HOST=$1 ;;
  esac
  shift
done
[[ -n $HOST || -n $STAGE ]] || die "usage: deploy/deploy.sh [options] USER@HOST | --stage DIR"
[[ -z $HOST || -z $STAGE ]] || die "give a host or --stage, not both"
[[ $REL == trixie || $REL == bookworm ]] || die "--release must be trixie or bookworm"
# A host is a destination for ssh, never an option or a path.
[[ -z $HOST || $HOST =~ ^([A-Za-z0-9._-]+@)?[A-Za-z0-9.:_-]+$ ]] || die "'$HOST' does not look like USER@HOST"

# run CMD…: print, and run unless --dry-run.
run() {
  printf '+ %s\n' "$*"
  ((DRY)) || "$@"
}

# 1. the binary
if [[ -z $BINARY ]]; then
  BINARY=$REPO/.build/cross/$REL/osh-edge
  run "$REPO/toolchain/cross-build.sh" "$REL" --out "$BINARY"
fi
((DRY)) || [[ -f $BINARY ]] || die "no binary at $BINARY"

# 2. the bundle: exactly what install.sh expects beside itself
BUNDLE=$(mktemp -d)
trap 'rm -rf -- "$BUNDLE"' EXIT
mkdir -p "$BUNDLE/osh-edge-deploy/udev"
B=$BUNDLE/osh-edge-deploy
((DRY)) || install -m 0755 "$BINARY" "$B/osh-edge"
install -m 0644 "$HERE/osh-edge.service" "$HERE/osh-edge.conf.example" "$B/"
install -m 0644 "$HERE/udev/99-osh-edge.rules" "$B/udev/"
install -m 0644 "$HERE/osh-edge.1" "$B/"
install -m 0755 "$HERE/install.sh" "$B/"

# 3. install
if [[ -n $STAGE ]]; then
  if ((DRY)); then
    : >"$B/osh-edge"   # install.sh checks the bundle is complete
    INSTALL_ARGS+=(--dry-run)
  fi
  run mkdir -p "$STAGE"
  "$B/install.sh" --destdir "$STAGE" "${INSTALL_ARGS[@]}"
  exit 0
fi
REMOTE=/tmp/osh-edge-deploy
run ssh "$HOST" "rm -rf $REMOTE"
run scp -r "$B" "$HOST:$REMOTE"
run ssh "$HOST" "sudo sh $REMOTE/install.sh ${INSTALL_ARGS[*]} && rm -rf $REMOTE"
run ssh "$HOST" "systemctl status --no-pager --lines=15 osh-edge.service || true"
