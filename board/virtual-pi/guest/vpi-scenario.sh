#!/bin/bash
# vpi-scenario.sh: the virtual Pi's observer. systemd starts it at boot after multi-user;
# osh-edge was started by systemd on its own (the package enabled it). This script only
# watches, injects the planned faults and writes what it saw to /vpi/out for the host,
# which does the comparing (board/virtual-pi/host/vpi_host.py). Then it powers the board off.
#   boot 1: wait for READY=1, measure for MEASURE_S, the faults, `systemctl restart`, dump,
#           power off (the host boots the same disk again);
#   boot 2: the node is held back for NODE_DOWN_S (down before the board booted): READY=1 without
#           it, no restart, the backlog spooled; then the node starts and the spool drains; check
#           the node's ids survived the power cycle, dump, power off.
set -u
OUT=/vpi/out
API=http://127.0.0.1:8181/sensorhub/api
# shellcheck source=/dev/null
. /vpi/in/scenario.env   # MEASURE_S, FAULT_S, RECOVER_S, NODE_DOWN_S, CAMERA (vivid or vimc)
BOOT=$(($(cat /var/lib/vpi-boot 2>/dev/null || echo 0) + 1))
echo "$BOOT" >/var/lib/vpi-boot
B=$OUT/boot$BOOT
mkdir -p "$B"
exec > >(tee -a "$B/scenario.log") 2>&1
now() { echo "$EPOCHREALTIME"; }
say() { echo "vpi-scenario[$BOOT] $(cut -d' ' -f1 /proc/uptime): $*"; }
# A request to the host (QEMU monitor), on the console it reads line by line.
ask_host() { echo "VPI-REQ $*" >/dev/ttyAMA0; say "asked the host: $*"; }
event() { printf '%s %s\n' "$(now)" "$*" >>"$B/events.txt"; say "$*"; }
wait_for() { # wait_for SECONDS CMD…: until CMD succeeds
  local end=$((SECONDS + $1)); shift
  until "$@"; do ((SECONDS < end)) || return 1; sleep 0.5; done
}
svc() { systemctl show osh-edge.service -p "$1" --value; }

# --- READY=1: the unit is active only once the agent said so (Type=notify)
event "boot $BOOT: waiting for osh-edge.service"
if wait_for 240 sh -c '[ "$(systemctl is-active osh-edge.service)" = active ]'; then
  event "osh-edge active"
else
  event "osh-edge NOT active: $(systemctl is-active osh-edge.service)"
fi
{
  for p in Type ActiveState SubState Result NRestarts MainPID WatchdogUSec ExecMainStartTimestampMonotonic \
    ActiveEnterTimestampMonotonic InactiveExitTimestampMonotonic StatusText User; do
    echo "$p=$(svc "$p")"
  done
  echo "KernelBootUSec=$(cut -d' ' -f1 /proc/uptime)"
} >"$B/service-ready.txt"
systemctl status osh-edge.service --no-pager -l >"$B/systemctl-status.txt" 2>&1

# /proc figures of the agent: VmRSS (and its anonymous / file-mapped parts), PSS, CPU ticks (all
# threads), voluntary and involuntary switches (all threads)
proc_sample() {
  local pid=$1 t
  t=$(cut -d' ' -f1 /proc/uptime)
  local rss anon file pss ticks vcs ics
  rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
  anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status")
  file=$(awk '/^RssFile:/ { print $2 }' "/proc/$pid/status")
  pss=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup")
  ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  vcs=$(cat /proc/"$pid"/task/*/status | awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s }')
  ics=$(cat /proc/"$pid"/task/*/status | awk '/^nonvoluntary_ctxt_switches/ { s += $2 } END { print s }')
  echo "uptime=$t rss_kb=$rss rss_anon_kb=$anon rss_file_kb=$file pss_kb=$pss cpu_ticks=$ticks vol_ctxt=$vcs invol_ctxt=$ics threads=$(ls /proc/"$pid"/task | wc -l)"
}

snapshot() { # snapshot TAG: the node's systems, datastreams and control streams now
  curl -s "$API/systems?limit=1000" >"$B/systems-$1.json"
  curl -s "$API/datastreams?limit=1000" >"$B/datastreams-$1.json"
  curl -s "$API/controlstreams?limit=1000" >"$B/controlstreams-$1.json"
  event "snapshot $1"
}

# dump TAG: every observation the node holds, per datastream: O&M JSON pages (the node's
# limit is 10000 a page) and the swe+binary records (the camera's only format). The host counts
# and checks them by phenomenon time; the development node keeps observations in memory only, so
# there is a dump before anything restarts it.
dump() {
  local d=$B/obs-$1 id off
  mkdir -p "$d"
  curl -s "$API/datastreams?limit=1000" >"$d/datastreams.json"
  for id in $(grep -o '"id" *: *"[^"]*"' "$d/datastreams.json" | sed 's/.*: *"\(.*\)"/\1/'); do
    off=0
    while :; do
      curl -s "$API/datastreams/$id/observations?limit=10000&offset=$off" >"$d/$id.$off.json"
      (($(grep -o '"phenomenonTime"' "$d/$id.$off.json" | wc -l) == 10000)) || break
      off=$((off + 10000))
    done
    curl -s "$API/datastreams/$id/observations?limit=10000&f=application%2Fswe%2Bbinary" >"$d/$id.bin"
  done
  event "dump $1"
}

journal_since() { journalctl -u osh-edge.service --no-pager -o short-monotonic --since "@${1%.*}" 2>/dev/null; }

# ===== boot 1 =====
if ((BOOT == 1)); then
  if [[ -s /vpi/in/i2c-steps.txt ]]; then
    /opt/vpi/i2c-steps.sh "$(cat /run/vpi-i2c-bus)" /vpi/in/i2c-steps.txt >"$B/i2c-steps.log" 2>&1 &
  fi
  # The late chip: the SHT4x answers from 20 s after the agent's start (vpi-board.sh hid it).
  (
    start_us=$(svc ExecMainStartTimestampMonotonic)
    up_us=$(awk '{ printf "%d", $1 * 1000000 }' /proc/uptime)
    wait_us=$((start_us + 20000000 - up_us))
    ((wait_us > 0)) && sleep "$((wait_us / 1000000)).$(printf '%06d' $((wait_us % 1000000)))"
    echo 0 >/sys/module/i2c_stub_rdwr/parameters/absent_addr
    event "sht4x appears"
  ) &
  PID=$(svc MainPID)
  proc_sample "$PID" >"$B/proc-start.txt"
  event "measuring for ${MEASURE_S}s"
  sleep "$MEASURE_S"
  proc_sample "$PID" >"$B/proc-end.txt"
  snapshot measured

  # Fault 1: the I²C barometer stops answering (i2c-stub NACKs its address), then returns.
  event "fault i2c-barometer start"
  T=$(now)
  echo 0x76 >/sys/module/i2c_stub_rdwr/parameters/absent_addr
  sleep "$FAULT_S"
  echo 0 >/sys/module/i2c_stub_rdwr/parameters/absent_addr
  event "fault i2c-barometer end"
  sleep "$RECOVER_S"
  journal_since "$T" >"$B/journal-i2c.txt"

  # Fault 2: the USB GPS unplugged (QEMU monitor device_del), then plugged in again.
  event "fault usb-gps start"
  T=$(now)
  ask_host usb-unplug
  wait_for 30 sh -c '[ ! -e /dev/ttyUSB0 ]' && event "ttyUSB0 gone" || event "ttyUSB0 did not go"
  sleep "$FAULT_S"
  ask_host usb-plug
  wait_for 30 test -e /dev/ttyUSB0 && event "ttyUSB0 back" || event "ttyUSB0 did not come back"
  stty -F /dev/ttyUSB0 raw -echo clocal 9600 2>/dev/null
  event "fault usb-gps end"
  sleep "$RECOVER_S"
  journal_since "$T" >"$B/journal-gps.txt"

  # Fault 3: the camera is unplugged.
  event "fault camera start"
  T=$(now)
  if [[ ${CAMERA:-vivid} == vimc ]]; then
    # vimc: its platform device unbound (every node and the media device go), then bound again.
    echo vimc.0 >/sys/bus/platform/drivers/vimc/unbind 2>"$B/camera-disconnect.txt" || event "vimc unbind failed"
    sleep "$FAULT_S"
    echo vimc.0 >/sys/bus/platform/drivers/vimc/bind 2>>"$B/camera-disconnect.txt" || event "vimc bind failed"
  else
    # vivid's Disconnect control makes every call answer ENODEV until the last open handle is
    # closed. This script holds one, so the camera stays away for FAULT_S (the agent alone
    # would close, reopen and be back within a second), then lets go.
    exec 8</dev/video0
    v4l2-ctl -d /dev/video0 -c disconnect=1 >"$B/camera-disconnect.txt" 2>&1 || event "vivid disconnect failed"
    sleep "$FAULT_S"
    exec 8<&-
  fi
  event "fault camera end"
  sleep "$RECOVER_S"
  journal_since "$T" >"$B/journal-camera.txt"

  # Fault 4: the node stops (the LED must say "unreachable"), then comes back.
  event "fault node-stopped start"
  T=$(now)
  dump before-node-stop
  systemctl stop vpi-node.service
  # The dump above takes a while on a busy host: the outage starts here, not at the fault's start.
  event "fault node-stopped node down"
  sleep "$FAULT_S"
  systemctl start vpi-node.service
  event "fault node-stopped end"
  sleep "$RECOVER_S"
  journal_since "$T" >"$B/journal-node.txt"

  # systemctl restart: the same system and datastreams at the node afterwards
  event "restart start"
  snapshot restart-before
  systemctl restart osh-edge.service
  wait_for 120 sh -c '[ "$(systemctl is-active osh-edge.service)" = active ]' && event "restart active" || event "restart NOT active"
  sleep "$RECOVER_S"
  snapshot restart-after
fi

# ===== boot 2: after the power cycle =====
spool_drained() { # the service's spool holds nothing (osh-edge spool status --json: pendingBytes 0)
  osh-edge spool status --config /etc/osh-edge/osh-edge.conf --json 2>/dev/null | grep -q '"pendingBytes":0[,}]'
}
if ((BOOT == 2)); then
  if ((${NODE_DOWN_S:-0} > 0)); then
    # The node has been down since boot (vpi-node.service's condition): the agent is ready without
    # it, and stays so; what it produces waits in the ring and the spool.
    event "node-down-at-boot start"
    T=$(now)
    sleep "$NODE_DOWN_S"
    { for p in ActiveState SubState NRestarts StatusText; do echo "$p=$(svc "$p")"; done; } >"$B/node-down.txt"
    osh-edge status >"$B/status-node-down.txt" 2>&1
    osh-edge spool status --config /etc/osh-edge/osh-edge.conf >"$B/spool-node-down.txt" 2>&1
    rm -f /var/lib/vpi-node-hold
    systemctl start vpi-node.service
    event "node-down-at-boot node started"
    # The backlog grows with the outage; under TCG the guest's node takes ~100 observations/s in
    # all, live ones included (a 5-minute outage: ~18 000 spooled, drained in ~7 minutes).
    if wait_for $((400 + NODE_DOWN_S * 2)) spool_drained; then event "node-down-at-boot drained"; else event "node-down-at-boot NOT drained"; fi
    osh-edge status >"$B/status-node-back.txt" 2>&1
    journal_since "$T" >"$B/journal-node-down.txt"
    sleep 5 # the drain above was the recovery (registration comes before any spooled batch)
  else
    sleep "$RECOVER_S"
  fi
  snapshot powercycle-after
  # What a user runs first: the board's devices as the agent sees them (with vimc, libcamera's
  # layer is loaded by probe itself; the agent holds the camera, so its formats may not list).
  osh-edge probe >"$B/probe.txt" 2>&1
  # A magnetometer calibration beside the running agent is refused (it resets the IMU the agent reads).
  if osh-edge calibrate mag --seconds 2 >"$B/calibrate-beside-agent.txt" 2>&1; then r=0; else r=$?; fi
  echo "exit $r" >>"$B/calibrate-beside-agent.txt"
fi

# The next boot starts with the node down.
((BOOT == 1)) && ((${NODE_DOWN_S:-0} > 0)) && touch /var/lib/vpi-node-hold
cp /run/vpi-led.txt "$B/led.txt"
snapshot final
dump final
systemctl show osh-edge.service >"$B/systemctl-show.txt"
journalctl -b --no-pager -o short-monotonic >"$B/journal-all.txt" 2>&1
journalctl -u osh-edge.service -b --no-pager -o short-monotonic >"$B/journal-osh-edge.txt" 2>&1
cp /etc/osh-edge/osh-edge.conf "$B/osh-edge.conf"
dpkg -s osh-edge >"$B/dpkg-status.txt" 2>&1
ls -l /var/lib/osh-edge /var/lib/vpi-node >"$B/state-files.txt" 2>&1
if ((BOOT == 2)); then
  # The LED's chip = "auto" on each board's header chip label, on this kernel's gpio-sim, after
  # everything else (the agent stops; the Pi 4's bank is taken away): the Pi 5's RP1 is preferred
  # to the Pi 4's chip; without the Pi 4's, the Pi 3's is found. `osh-edge led` names the chip.
  systemctl stop osh-edge.service
  # probe again with the camera free: libcamera now lists it, by its id.
  osh-edge probe >"$B/probe-agent-stopped.txt" 2>&1
  C=/sys/kernel/config/gpio-sim
  sim_bank() { mkdir -p "$C/$1/bank0" && echo 54 >"$C/$1/bank0/num_lines" && echo "$1" >"$C/$1/bank0/label" && echo 1 >"$C/$1/live"; }
  sim_gone() { echo 0 >"$C/$1/live" && rmdir "$C/$1/bank0" "$C/$1"; }
  {
    sim_bank pinctrl-rp1 && echo "with pinctrl-rp1 as $(cat "$C/pinctrl-rp1/bank0/chip_name") beside pinctrl-bcm2711:" &&
      osh-edge led --chip auto --line 17 --seconds 0.5 --show streaming 2>&1
    sim_gone pinctrl-rp1
    echo 0 >"$C/vpi/live"
    sim_bank pinctrl-bcm2835 && echo "with pinctrl-bcm2835 as $(cat "$C/pinctrl-bcm2835/bank0/chip_name") alone:" &&
      osh-edge led --chip auto --line 17 --seconds 0.5 --show streaming 2>&1
  } >"$B/led-auto.txt" 2>&1
fi
event "done"
touch "$B/done"
sync
systemctl poweroff
