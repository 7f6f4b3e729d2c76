#!/usr/bin/env bash
# The chaos soak (issue 17): scripts/soak.sh MINUTES [--seed N] [--work DIR]
#
# osh-edge-sim run (every output: simulated IMU and barometer on the real drivers, GPS from a
# replayed NMEA log through a pseudo-terminal, audio through ALSA's file plugin, the camera's
# test pattern through libx264; the spool on) against the development node in another process,
# loopback only, while a seeded scheduler injects one fault at a time: node down, node frozen
# (SIGSTOP), 5xx bursts, 401, 302, slow responses, resets mid-body, a datastream deleted, the node
# restarted empty, the GPS unplugged and replugged, an I²C chip failing, SIGHUP with a changed and
# with a broken config, kill -9 (restarted 5 s later, as the unit's RestartSec does), the state directory's
# disk full (a 16 MiB tmpfs), a command storm through the node's WebSocket. The last 15 % is quiet.
# It stops by itself, prints per datastream what was produced, delivered, dropped (by reason),
# spooled, duplicated and out of order, the agent's RSS and fds per minute, and ends with
#   soak: F faults, produced P, delivered D, dropped X (counted), duplicates U, lost L
# Exit 1 when an invariant fails (scripts/soak.py says which); 2 when it cannot run here.
#
#   BUILD=1 (default)   swift build -c release --product osh-edge-sim / osh-edge-dev first
#   SANITIZE=address    build both with AddressSanitizer (scratch .build/asan) and run those;
#                       SANITIZE=thread: ThreadSanitizer (.build/tsan)
#   BIN_DIR=DIR         use DIR/osh-edge-sim and DIR/osh-edge-dev as they are (no build)
#   PORT=18600          the node's port on 127.0.0.1
# The work directory (default /tmp/osh-edge-soak) keeps soak.log, summary.json, the node's
# ledger, both processes' logs and each agent lifetime's last counters.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
MINUTES=""
SEED=1
WORK=/tmp/osh-edge-soak
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --seed) SEED=${2:?--seed needs a number}; shift ;;
    --work) WORK=${2:?--work needs a directory}; shift ;;
    *) [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "soak: expected MINUTES, not '$1' (see --help)" >&2; exit 2; }
       MINUTES=$1 ;;
  esac
  shift
done
[ -n "$MINUTES" ] || { usage >&2; exit 2; }
command -v python3 >/dev/null || { echo "soak: needs python3 (scripts/bootstrap.sh installs it)" >&2; exit 2; }

SANITIZE=${SANITIZE:-}
if [ -n "${BIN_DIR:-}" ]; then
  :
elif [ -n "$SANITIZE" ]; then
  case $SANITIZE in address) SCRATCH=.build/asan ;; thread) SCRATCH=.build/tsan ;; *) SCRATCH=.build/$SANITIZE ;; esac
  BIN_DIR=$(swift build --sanitize="$SANITIZE" --scratch-path "$SCRATCH" --show-bin-path)
  if [ "${BUILD:-1}" = 1 ]; then
    for p in osh-edge-sim osh-edge-dev; do
      swift build --sanitize="$SANITIZE" --scratch-path "$SCRATCH" --product "$p" 2>&1 | tail -n 1
    done
  fi
else
  BIN_DIR=$(swift build -c release --show-bin-path)
  if [ "${BUILD:-1}" = 1 ]; then
    for p in osh-edge-sim osh-edge-dev; do swift build -c release --product "$p" 2>&1 | tail -n 1; done
  fi
fi
for p in osh-edge-sim osh-edge-dev; do
  [ -x "$BIN_DIR/$p" ] || { echo "soak: $BIN_DIR/$p is missing (BUILD=1 builds it)" >&2; exit 2; }
done

rm -rf "$WORK"
mkdir -p "$WORK/state"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
ARGS=("$MINUTES" --seed "$SEED" --work "$WORK" --sim-bin "$BIN_DIR/osh-edge-sim" --dev-bin "$BIN_DIR/osh-edge-dev"
      --port "${PORT:-18600}" --nmea-log Tests/OSHCoreTests/Fixtures/nmea/gpsd-3.22/neo-m8n.log)
# The state directory is a small tmpfs (disk full is one of the faults), mounted in a private
# mount namespace so nothing outlives the run. Without the privilege for that: a plain directory,
# and the disk-full fault fills the real disk's quota only up to 16 MiB (the orchestrator's filler stops there).
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
  exec unshare --mount --propagation private sh -c \
    'mount -t tmpfs -o size=16m,mode=0700 osh-edge-soak "$1" && shift && exec python3 scripts/soak.py "$@"' \
    sh "$WORK/state" "${ARGS[@]}"
elif unshare --user --map-root-user --mount true 2>/dev/null; then
  exec unshare --user --map-root-user --mount --propagation private sh -c \
    'mount -t tmpfs -o size=16m,mode=0700 osh-edge-soak "$1" && shift && exec python3 scripts/soak.py "$@"' \
    sh "$WORK/state" "${ARGS[@]}"
else
  echo "soak: cannot mount a tmpfs here (not root, no user namespaces): the disk-full fault uses $WORK/state" >&2
  exec python3 scripts/soak.py "${ARGS[@]}" --filler-limit-mb 16
fi
