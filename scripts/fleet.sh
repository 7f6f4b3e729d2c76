#!/usr/bin/env bash
# A fleet on one machine: scripts/fleet.sh N [fleet.py options]. N agents over MQTT (edge
# mosquitto bridged to a central one, which the development node's MQTT side reads) and N/10
# over HTTP in the same run; per-agent CPU, RSS, wakeups, bytes per observation, latency
# percentiles and a 60 s bridge cut. A benchmark, not a test: it needs mosquitto, and an idle
# machine. BUILD=0 uses the release binaries already built; WORK=DIR keeps the files there.
#   scripts/fleet.sh 100                          warm-up 20 s, window 60 s, cut 60 s, drain 60 s
#   scripts/fleet.sh 10 --window 20 --cut 10 --drain 20
set -euo pipefail
cd "$(dirname "$0")/.."
[[ ${1:-} =~ ^[0-9]+$ ]] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
command -v mosquitto >/dev/null || { echo "fleet: mosquitto is not installed (apt install mosquitto)" >&2; exit 2; }
if [[ ${BUILD:-1} == 1 ]]; then
  swift build -c release --product osh-edge-sim >&2
  swift build -c release --product osh-edge-dev >&2
fi
BIN=$(swift build -c release --show-bin-path)
WORK=${WORK:-/var/tmp/osh-fleet-$$}
rm -rf "$WORK"
mkdir -p "$WORK"
ulimit -n 65536 2>/dev/null || true
exec python3 scripts/fleet.py "$@" --sim "$BIN/osh-edge-sim" --node "$BIN/osh-edge-dev" --work "$WORK"
