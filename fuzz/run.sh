#!/usr/bin/env bash
# run.sh: a libFuzzer run of one target (fuzz/TARGET/FuzzTARGET.swift). Not part of `swift test`.
#
# Usage: fuzz/run.sh TARGET [SECONDS] [--runs N] [--update-corpus] [--no-asan] [--jobs N] [--seed]
#   TARGET           nmea, config, websocket, swe, om, spool or http
#   SECONDS          how long to fuzz (default 120); with --runs, whichever ends first
#   --runs N         stop after N executions
#   --update-corpus  replace fuzz/TARGET/corpus with the minimised (-merge=1 -use_counters=0) union of
#                    it, the seeds and the run's new inputs
#   --no-asan        without AddressSanitizer (2-3x faster; finds only traps and crashes)
#   --jobs N         N processes (libFuzzer -fork=N); the counts are then the sum over them
#   --seed           also start from the target's extra seeds (the NMEA golden logs in pieces;
#                    config's example files are always used)
# Environment: OSH_FUZZ_WORK (scratch, default /tmp/osh-fuzz; binaries cached in its bin/, the run's
# files in TARGET/), SWIFTC, OSH_FUZZ_OPT (default -O).
#
# Prints executions, executions per second and coverage; exit 1 on findings (crash, timeout or
# out-of-memory files, left in $OSH_FUZZ_WORK/TARGET/; replay one with: BINARY FILE).
set -euo pipefail

usage() { echo "usage: $0 TARGET [SECONDS] [--runs N] [--update-corpus] [--no-asan] [--jobs N] [--seed]" >&2; exit 2; }
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/.." && pwd)
WORK=${OSH_FUZZ_WORK:-/tmp/osh-fuzz}
SWIFTC=${SWIFTC:-swiftc}
# shellcheck source=fuzz/targets.sh
. "$HERE/targets.sh"

[[ $# -ge 1 ]] || usage
TARGET=$1
shift
SECONDS_TO_RUN=120
RUNS=
UPDATE=0
SEED=0
JOBS=
SANITIZE=fuzzer,address
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) RUNS=${2:?}; shift ;;
        --jobs) JOBS=${2:?}; shift ;;
        --update-corpus) UPDATE=1 ;;
        --no-asan) SANITIZE=fuzzer ;;
        --seed) SEED=1 ;;
        '' | *[!0-9]*) usage ;;
        *) SECONDS_TO_RUN=$1 ;;
    esac
    shift
done
target_spec "$TARGET" || { echo "fuzz: no target '$TARGET' (${FUZZ_TARGETS[*]})" >&2; exit 2; }
log() { printf '[fuzz-%s] %s\n' "$TARGET" "$*" >&2; }

fuzz_toolchain_check
BIN=$(build_target "$TARGET" "$SANITIZE" "${OSH_FUZZ_OPT:--O}")
RUN=$WORK/$TARGET
CORPUS=$HERE/$TARGET/corpus
mkdir -p "$RUN/new" "$CORPUS"
rm -f "$RUN"/crash-* "$RUN"/timeout-* "$RUN"/oom-* "$RUN"/leak-*

DIRS=("$RUN/new" "$CORPUS")
if [[ $SEED == 1 || $TARGET == config || -z $(ls -A "$CORPUS") ]]; then
    S=$(seed_dirs "$TARGET" "$RUN/seeds")
    [[ -n $S ]] && DIRS+=("$S")
fi
FLAGS=(-max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" -timeout=10 -print_final_stats=1 -artifact_prefix="$RUN/")
[[ -n $DICT ]] && FLAGS+=(-dict="$DICT")
[[ -n $RUNS ]] && FLAGS+=(-runs="$RUNS")
[[ -n $JOBS ]] && FLAGS+=(-fork="$JOBS" -ignore_crashes=0)

# The Swift runtime's backtracer does not mix with ASan's reports.
export SWIFT_BACKTRACE=enable=no
export LSAN_OPTIONS=suppressions=$HERE/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}
# No allocation stacks (a fifth to a quarter of the time went to recording them); a finding's
# report still has the access stack, and replaying it (BINARY FILE, without this) gives the rest.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}
log "fuzzing $BIN for ${RUNS:+at most $RUNS executions or }$SECONDS_TO_RUN s"
set +e
"$BIN" "${FLAGS[@]}" "${DIRS[@]}" 2>"$RUN/fuzz.log"
STATUS=$?
set -e
fuzz_stats "$RUN/fuzz.log"
log "executions: $EXECS in ${TIME_S:-?} s = ${RATE:-?}/s, cov: $COV"
CRASHES=$(findings "$RUN")
if [[ $STATUS != 0 || -n $CRASHES ]]; then
    log "FINDINGS (exit $STATUS): ${CRASHES:-see $RUN/fuzz.log}"
    exit 1
fi
log "no findings"

if [[ $UPDATE == 1 ]]; then
    # The smallest set with the same edge coverage (hit counts not kept apart keeps it small).
    rm -rf "$RUN/min"
    mkdir -p "$RUN/min"
    "$BIN" -merge=1 -use_counters=0 -max_len="$MAX_LEN" "$RUN/min" "${DIRS[@]}" 2>"$RUN/merge.log"
    log "minimised corpus: $(find "$RUN/min" -type f | wc -l) files (committed: $(find "$CORPUS" -type f | wc -l))"
    find "$CORPUS" -type f -delete
    cp "$RUN/min"/* "$CORPUS"/
    log "fuzz/$TARGET/corpus updated"
fi
