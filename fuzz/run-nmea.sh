#!/usr/bin/env bash
# run-nmea.sh: libFuzzer run of the NMEA framer/parser (fuzz/nmea/FuzzNMEA.swift).
# Not part of `swift test`. Needs the toolchain's libFuzzer runtime (swiftc -sanitize=fuzzer).
#
# Usage: fuzz/run-nmea.sh [SECONDS] [--seed] [--update-corpus] [--no-asan]
#   SECONDS          how long to fuzz (default 180)
#   --seed           also start from the golden logs (Tests/OSHCoreTests/Fixtures/nmea/gpsd-3.22/*.log)
#                    cut into 24-line pieces — what the committed corpus was grown from
#   --update-corpus  replace fuzz/nmea/corpus with the minimised (-merge=1 -use_counters=0)
#                    union of it and the run's new inputs
#   --no-asan        without AddressSanitizer (about 3x faster, finds only traps and crashes)
# Environment: OSH_FUZZ_WORK (scratch directory, default /tmp/osh-fuzz-nmea), SWIFTC.
#
# Prints executions per second and any crash files (left in the scratch directory;
# reproduce one with: $OSH_FUZZ_WORK/fuzz-nmea CRASH_FILE).
set -euo pipefail

SECONDS_TO_RUN=180
SEED=0
UPDATE=0
SANITIZE=fuzzer,address
for a in "$@"; do
    case "$a" in
        --seed) SEED=1 ;;
        --update-corpus) UPDATE=1 ;;
        --no-asan) SANITIZE=fuzzer ;;
        ''|*[!0-9]*) echo "usage: $0 [SECONDS] [--seed] [--update-corpus] [--no-asan]" >&2; exit 2 ;;
        *) SECONDS_TO_RUN=$a ;;
    esac
done

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/.." && pwd)
WORK=${OSH_FUZZ_WORK:-/tmp/osh-fuzz-nmea}
SWIFTC=${SWIFTC:-swiftc}
CORPUS=$HERE/nmea/corpus
CORE=$ROOT/Sources/OSHCore

log() { printf '[fuzz-nmea] %s\n' "$*" >&2; }

# The libFuzzer runtime ships with the toolchain's clang resources.
TOOLCHAIN_BIN=$(dirname -- "$(readlink -f -- "$(command -v "$SWIFTC")")")
if ! ls "$TOOLCHAIN_BIN"/../lib/clang/*/lib/linux/libclang_rt.fuzzer-"$(uname -m)".a >/dev/null 2>&1; then
    log "no libclang_rt.fuzzer-$(uname -m).a under $TOOLCHAIN_BIN/../lib/clang: this toolchain cannot -sanitize=fuzzer"
    exit 2
fi

mkdir -p "$WORK/new" "$CORPUS"
BIN=$WORK/fuzz-nmea
log "building $BIN (-sanitize=$SANITIZE -O)"
LINKER=()
command -v ld.lld >/dev/null 2>&1 || [[ -x $TOOLCHAIN_BIN/ld.lld ]] && LINKER=(-use-ld=lld)
"$SWIFTC" -sanitize="$SANITIZE" -parse-as-library -O -g "${LINKER[@]}" -module-name FuzzNMEA -o "$BIN" \
    "$HERE/nmea/FuzzNMEA.swift" "$CORE"/GPS/*.swift "$CORE/Util/ISOTime.swift" \
    "$CORE/JSON/ByteBuffer.swift" "$CORE/JSON/JSONWriter.swift" "$CORE/Decoding/JSONValue.swift"

DIRS=("$WORK/new" "$CORPUS")
if [[ $SEED == 1 || -z $(ls -A "$CORPUS") ]]; then
    rm -rf "$WORK/seeds"
    mkdir -p "$WORK/seeds"
    for f in "$ROOT"/Tests/OSHCoreTests/Fixtures/nmea/gpsd-3.22/*.log; do
        split -l 24 -d -a 3 "$f" "$WORK/seeds/$(basename "$f" .log)-"
    done
    log "seeds: $(ls "$WORK/seeds" | wc -l) pieces of the golden logs"
    DIRS+=("$WORK/seeds")
fi

# The Swift runtime's backtracer does not mix with ASan's reports.
export SWIFT_BACKTRACE=enable=no
log "fuzzing for $SECONDS_TO_RUN s"
set +e
"$BIN" -max_total_time="$SECONDS_TO_RUN" -max_len=2048 -timeout=10 -dict="$HERE/nmea/nmea.dict" \
    -print_final_stats=1 -artifact_prefix="$WORK/" "${DIRS[@]}" 2>"$WORK/fuzz.log"
STATUS=$?
set -e
tail -n 3 "$WORK/fuzz.log" | grep -v '^stat::' >&2 || true
EXECS=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/fuzz.log")
TIME=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$WORK/fuzz.log")
COV=$(grep -o 'cov: [0-9]*' "$WORK/fuzz.log" | tail -1)
if [[ -n $EXECS && -n $TIME && $TIME -gt 0 ]]; then
    log "executions: $EXECS in $TIME s = $((EXECS / TIME))/s, $COV"
fi
CRASHES=$(ls "$WORK"/crash-* "$WORK"/timeout-* "$WORK"/oom-* 2>/dev/null || true)
if [[ $STATUS != 0 || -n $CRASHES ]]; then
    log "FINDINGS (exit $STATUS): ${CRASHES:-see $WORK/fuzz.log}"
    exit 1
fi
log "no findings"

# Minimise: the smallest set of inputs with the same edge coverage (hit counts are not kept
# apart, -use_counters=0, which keeps the committed corpus small: ~150 files instead of ~800).
rm -rf "$WORK/min"
mkdir -p "$WORK/min"
"$BIN" -merge=1 -use_counters=0 -max_len=2048 "$WORK/min" "${DIRS[@]}" 2>"$WORK/merge.log"
log "$(grep -o '[0-9]* new coverage edges' "$WORK/merge.log" | tail -n 1)"
log "minimised corpus: $(ls "$WORK/min" | wc -l) files, $(cat "$WORK/min"/* | wc -c) bytes (committed: $(ls "$CORPUS" | wc -l))"
if [[ $UPDATE == 1 ]]; then
    find "$CORPUS" -type f -delete
    cp "$WORK/min"/* "$CORPUS"/
    log "fuzz/nmea/corpus updated"
fi
