#!/usr/bin/env bash
# node-trial.sh URL [--user NAME] [--seconds N]: the agent against a node you run (an OSH node,
# or `osh-edge-dev node`), as a field engineer would try it. The password comes from
# OSH_EDGE_PASSWORD. It runs `osh-edge-sim run` with every output on simulated chips, sends every
# device_control command with `osh-edge command` and prints what each came to, reads the node back
# (`systems`, `datastreams`, `check`), restarts with the other observation format on the same state
# directory and then with an empty one (a re-flashed card: the node already holds the board), and
# runs the demo, which drives its pan-tilt unit and an upload through the node. The board's UID is
# urn:osh:edge:node-trial. Binaries from BIN_DIR (default .build/debug, built if missing).
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
URL=${1:?usage: node-trial.sh URL [--user NAME] [--seconds N]}
shift
USER_NAME="" SECS=30
while (($#)); do
    case $1 in
        --user) USER_NAME=$2; shift 2 ;;
        --seconds) SECS=$2; shift 2 ;;
        *) echo "node-trial: unknown option $1" >&2; exit 2 ;;
    esac
done
BIN=${BIN_DIR:-$ROOT/.build/debug}
[[ -x $BIN/osh-edge-sim && -x $BIN/osh-edge && -x $BIN/osh-edge-dev ]] || (cd "$ROOT" && swift build >&2) || exit 2
WORK=$(mktemp -d /tmp/osh-node-trial.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT
UID_="urn:osh:edge:node-trial"
AUTH=()
[[ -n $USER_NAME ]] && AUTH=(--user "$USER_NAME")
python3 - "$WORK/mic.wav" <<'PY'
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(48000)
    w.writeframes(b"".join(struct.pack("<h", int(3000 * math.sin(i / 7))) for i in range(48000 * 2)))
PY
[[ -n $USER_NAME ]] && printf '[server.main]\npassword = "%s"\n' "${OSH_EDGE_PASSWORD:-}" > "$WORK/secrets" && chmod 600 "$WORK/secrets"

config() { # FORMAT STATE
    printf '[server.main]\nurl = "%s"\n' "$URL"
    [[ -n $USER_NAME ]] && printf 'user = "%s"\n' "$USER_NAME"
    printf '[publisher]\nformat = "%s"\n[system]\nuid = "%s"\n[time]\nrequire_sync = false\n' "$1" "$UID_"
    for o in quat_orientation_data euler_orientation_data accelerometer gyroscope magnetometer barometer gps_data audio_level; do
        printf '[outputs.%s]\nenabled = true\nsource = "simulated"\n' "$o"
    done
    printf '[audio]\ndevice = "%s"\n[outputs.camera0_H264]\nenabled = true\nsource = "simulated"\nrate = 2\n' "$WORK/mic.wav"
    printf '[camera]\nthreads = 1\n[outputs.device_health]\nenabled = true\n[record]\nenabled = true\n'
    printf '[paths]\nstate_directory = "%s"\ncounters_file = "%s/counters"\n' "$2" "$2"
}

start_agent() { # NAME FORMAT STATE
    config "$2" "$3" > "$WORK/$1.conf"
    local s=()
    [[ -n $USER_NAME ]] && s=(--secrets "$WORK/secrets")
    "$BIN/osh-edge-sim" run --config "$WORK/$1.conf" "${s[@]}" > "$WORK/$1.log" 2>&1 &
    AGENT=$!
}

stop_agent() { # NAME
    kill -TERM "$AGENT" 2>/dev/null
    wait "$AGENT" 2>/dev/null
    echo "  log: $(grep -c . "$WORK/$1.log") lines; stop: $(grep -E 'stopped|dropped' "$WORK/$1.log" | tail -1 | sed 's/^<[0-9]>//')"
}

# Per output: produced, sent and dropped from the counters file (Sources/OSHAgent/Runtime/CountersFile.swift).
sent_table() { # STATE
    [[ -f $1/counters ]] && awk 'NR > 1 { out = "  " sprintf("%-28s", $1)
        for (i = 2; i <= NF; i++) if ($i ~ /^(produced|sent|dropped)=/) out = out " " $i
        print out }' "$1/counters"
}

echo "== 1. every output, om+json, $SECS s, and every command"
start_agent run1 om+json "$WORK/state"
for _ in $(seq 1 40); do grep -q "listening on control stream .* (device_control)" "$WORK/run1.log" && break; sleep 0.5; done
grep -E "registered|error" "$WORK/run1.log" | sed 's/^<[0-9]>/  /' | cut -c1-200
CS=$(grep -o "listening on control stream [^ ]* (device_control)" "$WORK/run1.log" | awk '{print $5}' | head -1)
if [[ -n $CS ]]; then
    for p in '{"setRate":{"outputName":"barometer","rate":2}}' '{"setRate":{"outputName":"barometer","rate":500}}' \
             '{"identify":{"duration":2}}' '{"enableOutput":{"outputName":"audio_level","enabled":false}}' \
             '{"enableOutput":{"outputName":"audio_level","enabled":true}}' \
             '{"reregister":{"reason":"node-trial"}}' upload; do
        if [[ $p == upload ]]; then
            sleep "$SECS"
            # Ten seconds of the recording, from 15 s ago.
            p="{\"uploadTimeRange\":{\"start\":\"$(date -u -d '-15 sec' +%Y-%m-%dT%H:%M:%SZ)\",\"stop\":\"$(date -u -d '-5 sec' +%Y-%m-%dT%H:%M:%SZ)\",\"outputs\":\"\"}}"
        fi
        echo "  command $p"
        "$BIN/osh-edge" command "$CS" "$p" --node "$URL" "${AUTH[@]}" --wait 30 2>&1 | sed 's/^/    /' | grep -E "status:|kept no|refused|error" | cut -c1-200
    done
else
    echo "  no command channel (see $WORK/run1.log)"
    sleep "$SECS"
fi
"$BIN/osh-edge" datastreams "$UID_" --node "$URL" "${AUTH[@]}" 2>&1 | sed 's/^/  /'
"$BIN/osh-edge" check --config "$WORK/run1.conf" ${USER_NAME:+--secrets "$WORK/secrets"} 2>&1 | sed 's/^/  /'
stop_agent run1

echo "== 2. the same state directory, swe+json: every datastream's description changes"
start_agent run2 swe+json "$WORK/state"
sleep 15
grep -E "would not update|registered|error" "$WORK/run2.log" | sed 's/^<[0-9]>/  /' | cut -c1-220
sent_table "$WORK/state"
stop_agent run2

echo "== 3. an empty state directory (a re-flashed card) against the node that holds the board"
start_agent run3 om+json "$WORK/state-empty"
sleep 15
echo "  refusals logged: $(grep -c 'would not update' "$WORK/run3.log")"
grep -E "registered|error" "$WORK/run3.log" | sed 's/^<[0-9]>/  /' | cut -c1-200
sent_table "$WORK/state-empty"
stop_agent run3

echo "== 4. the demo through the node (identify, pan-tilt, setRate, uploadTimeRange)"
OSH_EDGE_PASSWORD=${OSH_EDGE_PASSWORD:-} timeout 90 "$BIN/osh-edge-dev" demo --node "$URL" "${AUTH[@]}" --duration 40 \
    --state-dir "$WORK/demo" > "$WORK/demo.log" 2>&1
grep -E "^(commands|upload)" "$WORK/demo.log" | sort | uniq -c | sort -rn | head -6 | cut -c1-200
echo "work directory: $WORK"
