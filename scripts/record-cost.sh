#!/usr/bin/env bash
# record-cost.sh: what the on-board recording writes to the card, for the whole running agent.
#
# Usage: scripts/record-cost.sh [SECONDS] [defaults|example|off]...   (default: 60 defaults example)
#   defaults  [record] enabled, no [record.NAME]: every output at its live rate (the outputs'
#             default rates, the camera 640x480 at 10 fps, every frame a key frame, 2000 kbit/s)
#   example   issue 18's: camera recorded at 25 fps while it streams 2 fps, the orientation at
#             100 Hz while it streams 10 Hz
#   off       no recording (what the agent writes anyway)
# Runs `osh-edge-sim run` (release; BIN_DIR= to use other binaries) with every simulated source
# against `osh-edge-dev node` on 127.0.0.1:${PORT:-18700}, traces the write-family syscalls and
# fdatasync under strace for SECONDS, and counts those on files under STATE/record: writes/s,
# bytes/s, fdatasync/s, and the recording's size at the end.
set -euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_TO_RUN=${1:-60}
shift || true
MODES=("$@")
[[ ${#MODES[@]} -gt 0 ]] || MODES=(defaults example)
PORT=${PORT:-18700}
if [[ -z ${BIN_DIR:-} ]]; then
    (cd "$ROOT" && nice swift build -c release --product osh-edge-sim >&2 && nice swift build -c release --product osh-edge-dev >&2)
    BIN_DIR=$ROOT/.build/release
fi
WORK=$(mktemp -d /tmp/osh-record-cost.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
python3 - "$WORK/mic.wav" <<'PY'
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(48000)
    w.writeframes(b"".join(struct.pack("<h", int(3000 * math.sin(i / 7))) for i in range(48000 * 2)))
PY

config() {
    local mode=$1 state=$2
    cat <<EOF
[server.main]
url = "http://127.0.0.1:$PORT/sensorhub/api"
[system]
uid = "urn:osh:edge:record-cost"
[time]
require_sync = false
EOF
    for o in quat_orientation_data euler_orientation_data accelerometer gyroscope magnetometer barometer gps_data audio_level; do
        printf '[outputs.%s]\nenabled = true\nsource = "simulated"\n' "$o"
    done
    printf '[audio]\ndevice = "%s"\n' "$WORK/mic.wav"
    printf '[outputs.camera0_H264]\nenabled = true\nsource = "simulated"\n'
    [[ $mode == example ]] && printf 'rate = 2\n'
    printf '[camera]\nthreads = 1\n[outputs.device_health]\nenabled = true\n'
    case $mode in
        defaults) printf '[record]\nenabled = true\n' ;;
        example) printf '[record]\nenabled = true\n[record.camera0_H264]\nrate = 25\n[record.quat_orientation_data]\nrate = 100\n' ;;
    esac
    printf '[paths]\nstate_directory = "%s"\ncounters_file = ""\n' "$state"
}

"$BIN_DIR/osh-edge-dev" node --port "$PORT" > "$WORK/node.log" 2>&1 &
sleep 1
for mode in "${MODES[@]}"; do
    state=$WORK/$mode
    mkdir -p "$state"
    config "$mode" "$state" > "$WORK/$mode.conf"
    strace -f -qq -y -e trace=write,writev,pwrite64,pwritev,fdatasync,fsync -o "$WORK/$mode.trace" \
        timeout -s INT "$SECONDS_TO_RUN" "$BIN_DIR/osh-edge-sim" run --config "$WORK/$mode.conf" > "$WORK/$mode.log" 2>&1 || true
    awk -v mode="$mode" -v secs="$SECONDS_TO_RUN" '
        /\/record\// {
            if ($0 ~ /fdatasync|fsync/) { syncs++; next }
            n = $NF; if (n ~ /^[0-9]+$/) { writes++; bytes += n }
        }
        END { printf "%-9s record: %.1f writes/s, %.0f bytes/s (%.1f kB/s, %.2f GB/day), %.2f fdatasync/s\n",
                     mode, writes / secs, bytes / secs, bytes / secs / 1000, bytes / secs * 86400 / 1e9, syncs / secs }' "$WORK/$mode.trace"
    [[ -d $state/record ]] && du -sb "$state/record" | awk -v m="$mode" '{ printf "%-9s record directory after the run: %d bytes\n", m, $1 }'
    grep -E "recording|error" "$WORK/$mode.log" | head -3 || true
done
