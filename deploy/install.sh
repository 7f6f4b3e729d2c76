#!/bin/sh
# install.sh: install osh-edge on a Pi (or any systemd Debian) from an unpacked bundle:
# this script beside osh-edge (the binary), osh-edge.service, osh-edge.conf.example and
# udev/99-osh-edge.rules. deploy/deploy.sh copies such a bundle to a Pi and runs it.
#
#   sudo ./install.sh                 install or upgrade, then start if the config is valid
#   ./install.sh --dry-run            print every step, change nothing
#   DESTDIR=/tmp/root ./install.sh    files only, into a directory tree (no users, no systemctl)
#   --destdir DIR, --no-start         the same as a flag / install and enable but do not start
#
# Idempotent: groups and the user are created only if missing; an existing
# /etc/osh-edge/osh-edge.conf and secrets file are kept (the secrets' mode is re-tightened).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
DRY=0
START=1
DESTDIR=${DESTDIR:-}
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) DRY=1 ;;
    --no-start) START=0 ;;
    --destdir) DESTDIR=${2:?--destdir needs a directory}; shift ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$DESTDIR" = / ] && DESTDIR=
D=$DESTDIR

USER_NAME=osh-edge
GROUPS_NEEDED="gpio i2c dialout audio video"
BIN=$D/usr/bin/osh-edge
UNIT=$D/etc/systemd/system/osh-edge.service
RULES=$D/etc/udev/rules.d/99-osh-edge.rules
CONFDIR=$D/etc/osh-edge
CONF=$CONFDIR/osh-edge.conf
SECRETS=$CONFDIR/secrets

say() { printf 'install.sh: %s\n' "$*"; }
# run CMD…: print it; run it unless --dry-run.
run() {
  printf '+ %s\n' "$*"
  [ "$DRY" -eq 1 ] || "$@"
}
# system CMD…: a step on the live system (users, systemd, udev): skipped when staging.
system() {
  if [ -n "$D" ]; then printf '~ skipped in DESTDIR: %s\n' "$*"; return 0; fi
  run "$@"
}

for f in osh-edge osh-edge.service osh-edge.conf.example udev/99-osh-edge.rules; do
  [ -f "$HERE/$f" ] || { echo "install.sh: $HERE/$f is missing; run from an unpacked deploy bundle" >&2; exit 2; }
done
if [ -z "$D" ] && [ "$DRY" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: must run as root (it creates a system user and installs a service); try: sudo $0" >&2
  exit 2
fi

# 1. groups and the service user (system account, no login, no home directory of its own:
#    its state lives in /var/lib/osh-edge, which systemd creates).
for g in $GROUPS_NEEDED; do
  if [ -z "$D" ] && getent group "$g" >/dev/null 2>&1; then continue; fi
  system groupadd --system "$g"
done
if [ -z "$D" ] && id "$USER_NAME" >/dev/null 2>&1; then
  system usermod -a -G "$(echo "$GROUPS_NEEDED" | tr ' ' ,)" "$USER_NAME"
else
  system useradd --system --user-group --home-dir /var/lib/osh-edge --no-create-home \
    --shell /usr/sbin/nologin --groups "$(echo "$GROUPS_NEEDED" | tr ' ' ,)" "$USER_NAME"
fi
# In a DESTDIR the user does not exist: files keep the installing user's ownership.
owner() { if [ -n "$D" ]; then :; else run chown "$1" "$2"; fi; }

# 2. files. The unit goes to /etc/systemd/system (local admin's place; the Debian package
#    uses /lib/systemd/system). The binary goes where the unit's ExecStart points.
run install -d -m 0755 "$D/usr/bin" "$D/etc/systemd/system" "$D/etc/udev/rules.d"
run install -m 0755 "$HERE/osh-edge" "$BIN"
run install -m 0644 "$HERE/osh-edge.service" "$UNIT"
run install -m 0644 "$HERE/udev/99-osh-edge.rules" "$RULES"
# The unit's Documentation= is the man page (optional in a bundle made by hand).
if [ -f "$HERE/osh-edge.1" ]; then
  run install -D -m 0644 "$HERE/osh-edge.1" "$D/usr/share/man/man1/osh-edge.1"
fi
# /etc/osh-edge: root owns it, the service's group may read it (the unit says 0750).
run install -d -m 0750 "$CONFDIR"
owner root:"$USER_NAME" "$CONFDIR"
if [ -e "$CONF" ]; then
  say "kept $CONF"
else
  run install -m 0640 "$HERE/osh-edge.conf.example" "$CONF"
  owner root:"$USER_NAME" "$CONF"
fi
# Secrets: the service must read them, nobody else (the agent refuses a group/world-readable file).
if [ -e "$SECRETS" ]; then
  say "kept $SECRETS"
else
  run install -m 0600 /dev/null "$SECRETS"
fi
run chmod 0600 "$SECRETS"
owner "$USER_NAME":"$USER_NAME" "$SECRETS"

# 3. systemd and udev.
system udevadm control --reload
system udevadm trigger --subsystem-match=gpio --subsystem-match=i2c-dev --subsystem-match=tty
system systemctl daemon-reload
system systemctl enable osh-edge.service
if [ "$START" -eq 0 ] || [ -n "$D" ]; then
  say "not started (--no-start or DESTDIR)"
elif [ "$DRY" -eq 1 ]; then
  printf '+ %s\n' "osh-edge config check $CONF && systemctl restart osh-edge.service"
elif "$BIN" config check "$CONF"; then
  run systemctl restart osh-edge.service
  say "started; follow it with: journalctl -u osh-edge -f"
else
  say "not started: fix $CONF (see the errors above), then: systemctl start osh-edge"
fi
say "done${D:+ (staged in $D)}$([ "$DRY" -eq 1 ] && echo ' (dry run: nothing changed)')"
