#!/usr/bin/env bash
# The broker down for a while under one agent, with the programs a user runs: mosquitto (its
# persistence on, as a broker that keeps sessions is), the development node reading it, and
# `osh-edge-sim run` with transport = "mqtt" and the spool on. Prints the agent's counters and
# what the node stored. A check to run by hand, not a timed test.
#   scripts/broker-outage.sh [DOWN_SECONDS=30]     (debug binaries; BIN=DIR for others)
set -euo pipefail
cd "$(dirname "$0")/.."
DOWN=${1:-30}
[[ $DOWN =~ ^[0-9]+$ ]] || { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
command -v mosquitto >/dev/null || { echo "broker-outage: mosquitto is not installed (apt install mosquitto)" >&2; exit 2; }
BIN=${BIN:-$(swift build --show-bin-path)}
[[ -x $BIN/osh-edge-sim && -x $BIN/osh-edge-dev ]] || { echo "broker-outage: build first (swift build)" >&2; exit 2; }
W=$(mktemp -d /tmp/osh-broker-outage.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
BROKER=$(free_port)
NODE=$(free_port)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; pkill -f "mosquitto -c $W/broker.conf" 2>/dev/null || true; }
trap cleanup EXIT
cat >"$W/broker.conf" <<EOF
listener $BROKER 127.0.0.1
allow_anonymous true
persistence true
persistence_location $W/
autosave_interval 1
log_dest file $W/broker.log
user $(id -un)
EOF
cat >"$W/agent.conf" <<EOF
[server.main]
url = "http://127.0.0.1:$NODE/sensorhub/api"
transport = "mqtt"
broker = "mqtt://127.0.0.1:$BROKER"
[system]
uid = "urn:osh:rpi:broker-outage"
[time]
require_sync = false
[paths]
state_directory = "$W/state"
counters_file = "$W/counters"
[publisher]
spool = true
[outputs.barometer]
enabled = true
rate = 10
source = "simulated"
EOF
mkdir -p "$W/state"
broker() { mosquitto -c "$W/broker.conf" -d; sleep 0.5; }
broker
mkfifo "$W/control"
sleep 100000 >"$W/control" &
PIDS+=($!)
"$BIN/osh-edge-dev" node --port "$NODE" --mqtt-broker "mqtt://127.0.0.1:$BROKER" --control-stdin <"$W/control" >"$W/node.log" 2>&1 &
PIDS+=($!)
sleep 1
"$BIN/osh-edge-sim" run --config "$W/agent.conf" >"$W/agent.log" 2>&1 &
AGENT=$!
PIDS+=($AGENT)
sleep 10
echo "broker down for $DOWN s"
pkill -f "mosquitto -c $W/broker.conf"
sleep "$DOWN"
broker
echo "broker back; the agent reconnects within its backoff (at most 30 s) and sends the backlog"
sleep 40
kill -INT "$AGENT"
wait "$AGENT" || true
echo stats >"$W/control"
sleep 1
echo "--- the agent's log"
grep -E "warning|notice: MQTT|reachable|spool|stopped" "$W/agent.log" | cut -c1-200
echo "--- the agent's counters, all outputs (unknown_outcome: PUBLISHes the broker may have taken twice)"
awk '$1 != "counters" { for (i = 2; i <= NF; i++) { split($i, kv, "="); t[kv[1]] += kv[2] } }
  END { printf "produced=%d sent=%d dropped=%d unknown_outcome=%d pending=%d\n", t["produced"], t["sent"], t["dropped"], t["unknown_outcome"], t["pending"] }' "$W/counters"
echo "--- the node (observations stored)"
grep '^stats' "$W/node.log" | tail -1
echo "(files in $W)"
