#!/bin/bash
# vpi test --image, in the guest: watches the first boot until it has an outcome, writes what it
# saw to the share's out/ (status.env, the journal, the node's datastreams and observations), and
# powers the board off. in/expect: "ready" (wait for osh-edge's observations at the node, then
# STREAM_S more seconds of streaming) or "error" (wait for osh-edge-firstboot to finish).
set -u
V=/run/vpi
O=$V/out
mkdir -p "$O"
EXPECT=$(cat "$V/in/expect")
DEADLINE=$(cat "$V/in/deadline")   # guest uptime, s: give up and report what is there
STREAM_S=$(cat "$V/in/stream-seconds")
AUTH=$(tr -d '\n' <"$V/in/node-user" | base64 -w0)

up() { cut -d' ' -f1 /proc/uptime; }
after() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
prop() { systemctl show -p "$2" --value "$1"; }

# GET PATH from the node (bash's /dev/tcp: the image has no curl); the body on stdout.
get() {
  local reply
  exec 3<>/dev/tcp/127.0.0.1/8181 || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nAuthorization: Basic %s\r\n\r\n' "$1" "$AUTH" >&3
  reply=$(timeout 20 cat <&3)
  exec 3<&-
  printf '%s' "${reply#*$'\r\n\r\n'}"
}
observations() { get '/sensorhub/api/observations?limit=10000' | grep -o '"resultTime"' | wc -l; }

first=
stream_end=
while :; do
  now=$(up)
  fb=$(prop osh-edge-firstboot.service ActiveState)
  if [[ $EXPECT == ready ]]; then
    # A failed first boot means no service this boot: report it now.
    if [[ $fb == failed ]]; then break; fi
    if [[ -z $first ]] && (($(observations) > 0)); then
      first=$now
      stream_end=$(awk -v f="$first" -v s="$STREAM_S" 'BEGIN { print f + s }')
      echo "vpi-image: first observation at the node at $first s"
    fi
    if [[ -n $first ]] && after "$now" "$stream_end"; then break; fi
  else
    case $fb in active | failed) break ;; esac
  fi
  if after "$now" "$DEADLINE"; then
    echo "vpi-image: deadline ($DEADLINE s) reached"
    break
  fi
  sleep 0.5
done

root=$(findmnt -no SOURCE /)
{
  echo "expect=$EXPECT"
  echo "first_observation_s=$first"
  echo "collected_s=$(up)"
  for u in osh-edge-firstboot osh-edge; do
    for p in ActiveState SubState Result ExecMainStatus ActiveEnterTimestampMonotonic InactiveExitTimestampMonotonic ExecMainExitTimestampMonotonic NRestarts; do
      echo "$u.$p=$(prop "$u.service" "$p")"
    done
  done
  echo "ssh_enabled=$(systemctl is-enabled ssh.service 2>&1)"
  echo "hostname=$(hostname)"
  echo "root_device=$root"
  echo "root_partition_bytes=$(lsblk -bno SIZE "$root")"
  echo "root_disk_bytes=$(lsblk -bdno SIZE "/dev/$(lsblk -no PKNAME "$root")")"
  echo "root_fs_bytes=$(df -B1 --output=size / | tail -1 | tr -d ' ')"
  echo "secrets=$(stat -c '%a %U:%G' /etc/osh-edge/secrets 2>/dev/null)"
  echo "config_installed=$(cmp -s /etc/osh-edge/osh-edge.conf /boot/firmware/osh-edge.conf.applied && echo yes || echo no)"
  echo "serial0=$(readlink /dev/serial0 2>/dev/null)"
  echo "i2c_dev_loaded=$(test -d /sys/module/i2c_dev && echo yes || echo no)"
  echo "kernel=$(uname -r)"
  echo "cmdline=$(cat /proc/cmdline)"
} >"$O/status.env"
get '/sensorhub/api/datastreams?limit=1000' >"$O/datastreams.json"
get '/sensorhub/api/observations?limit=10000' >"$O/observations.json"
journalctl -b --no-pager -o short-monotonic -u osh-edge-firstboot -u osh-edge >"$O/journal-osh-edge.txt" 2>&1
journalctl -b --no-pager -o short-monotonic >"$O/journal.txt" 2>&1
systemd-analyze >"$O/systemd-analyze.txt" 2>&1
ls -la /boot/firmware >"$O/fat-listing.txt" 2>&1
touch "$O/done"
sync
systemctl poweroff
