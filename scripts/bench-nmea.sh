#!/usr/bin/env bash
# bench-nmea.sh: NMEA decoding speed of osh-edge against gpsd's gpsdecode on the same input,
# and heap allocations per sentence.
#
# Usage: scripts/bench-nmea.sh [REPEAT]
#   The input is the 18 golden logs (Tests/OSHCoreTests/Fixtures/nmea/gpsd-3.22/*.log)
#   concatenated, REPEAT times (default 200, ~60 MB, ~1 M sentences).
# Decoder: `osh-edge nmea -` from a release build when that command exists, otherwise
# fuzz/nmea/BenchNMEA.swift (the same NMEADecode.run core behind read(2)/write(2)) built with
# swiftc -O. gpsdecode comes from Debian's gpsd-clients; valgrind from Debian's valgrind.
# Environment: OSH_BENCH_WORK (scratch directory, default /tmp/osh-bench-nmea).
set -euo pipefail

REPEAT=${1:-200}
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${OSH_BENCH_WORK:-/tmp/osh-bench-nmea}
CORE=$ROOT/Sources/OSHCore
mkdir -p "$WORK"

log() { printf '[bench-nmea] %s\n' "$*" >&2; }

cat "$ROOT"/Tests/OSHCoreTests/Fixtures/nmea/gpsd-3.22/*.log > "$WORK/one.nmea"
cat "$WORK/one.nmea" "$WORK/one.nmea" > "$WORK/two.nmea"
: > "$WORK/input.nmea"
for _ in $(seq "$REPEAT"); do cat "$WORK/one.nmea" >> "$WORK/input.nmea"; done
BYTES=$(wc -c < "$WORK/input.nmea")

# The decoder.
(cd "$ROOT" && swift build -c release --product osh-edge >&2)
OSH=$(cd "$ROOT" && swift build -c release --show-bin-path)/osh-edge
if "$OSH" nmea - < "$WORK/one.nmea" 2>/dev/null | tail -n 1 | grep -q '"counts"'; then
    DECODE=("$OSH" nmea -)
    log "decoder: $OSH nmea"
else
    swiftc -O -parse-as-library -module-name BenchNMEA -o "$WORK/bench-nmea" "$ROOT/fuzz/nmea/BenchNMEA.swift" \
        "$CORE"/GPS/*.swift "$CORE/Util/ISOTime.swift" "$CORE/JSON/ByteBuffer.swift" "$CORE/JSON/JSONWriter.swift"
    DECODE=("$WORK/bench-nmea" -)
    log "decoder: fuzz/nmea/BenchNMEA.swift (osh-edge has no nmea command yet)"
fi

COUNTS=$("${DECODE[@]}" < "$WORK/input.nmea" | tail -n 1)
SENTENCES=$(printf '%s' "$COUNTS" | sed -n 's/.*"sentences":\([0-9]*\).*/\1/p')
FIXES=$(printf '%s' "$COUNTS" | sed -n 's/.*"fixes":\([0-9]*\).*/\1/p')
log "input: $REPEAT x 18 logs = $BYTES bytes, $SENTENCES sentences, $FIXES fixes"

# Best wall time of 3 runs, stdin from the file, stdout to /dev/null.
best_time() {
    local best=""
    for _ in 1 2 3; do
        local s e t
        s=$(date +%s.%N)
        "$@" < "$WORK/input.nmea" > /dev/null
        e=$(date +%s.%N)
        t=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f", e - s }')
        if [[ -z $best ]] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
    done
    echo "$best"
}

T_OSH=$(best_time "${DECODE[@]}")
RATE_OSH=$(awk -v n="$SENTENCES" -v t="$T_OSH" 'BEGIN { printf "%.0f", n / t }')
echo "osh-edge nmea: $T_OSH s, $RATE_OSH sentences/s, $(awk -v b="$BYTES" -v t="$T_OSH" 'BEGIN { printf "%.1f", b / t / 1e6 }') MB/s"

if command -v gpsdecode >/dev/null 2>&1; then
    T_GPSD=$(best_time gpsdecode)
    RATE_GPSD=$(awk -v n="$SENTENCES" -v t="$T_GPSD" 'BEGIN { printf "%.0f", n / t }')
    echo "gpsdecode ($(gpsdecode -V 2>&1 | head -n 1)): $T_GPSD s, $RATE_GPSD sentences/s"
    echo "ratio osh-edge / gpsdecode: $(awk -v a="$RATE_OSH" -v b="$RATE_GPSD" 'BEGIN { printf "%.2f", a / b }')"
else
    log "gpsdecode not installed (Debian: apt-get install gpsd-clients); skipped"
fi

# Heap allocations: the same count for one and two copies of the logs means none per sentence.
if command -v valgrind >/dev/null 2>&1; then
    allocs() {
        valgrind --tool=memcheck "${DECODE[@]}" < "$1" 2>&1 >/dev/null \
            | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
    }
    A1=$(allocs "$WORK/one.nmea")
    A2=$(allocs "$WORK/two.nmea")
    S1=$("${DECODE[@]}" < "$WORK/one.nmea" | tail -n 1 | sed -n 's/.*"sentences":\([0-9]*\).*/\1/p')
    echo "heap allocations: $A1 for $S1 sentences, $A2 for $((2 * S1)); per sentence: $(awk -v a="$A1" -v b="$A2" -v s="$S1" 'BEGIN { printf "%.4f", (b - a) / s }')"
else
    log "valgrind not installed (Debian: apt-get install valgrind); allocation count skipped"
fi
