#!/usr/bin/env bash
# smoke.sh: every fuzz target with AddressSanitizer for a short budget, from its committed corpus
# (for CI). Binaries are cached under $OSH_FUZZ_WORK/bin by a hash of their sources: an unchanged
# target is not rebuilt. New inputs go to scratch, never into the committed corpus.
#
# Usage: fuzz/smoke.sh [SECONDS_PER_TARGET]   (default 20)
# Environment: OSH_FUZZ_WORK (default /tmp/osh-fuzz), SWIFTC, OSH_FUZZ_OPT (default -O),
# OSH_FUZZ_TARGETS (default all: nmea config websocket swe om spool http).
# One line per target; exit 1 on findings (or a target that does not build), 2 without libFuzzer.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/.." && pwd)
WORK=${OSH_FUZZ_WORK:-/tmp/osh-fuzz}
SWIFTC=${SWIFTC:-swiftc}
BUDGET=${1:-20}
[[ $BUDGET =~ ^[0-9]+$ && $BUDGET -gt 0 ]] || { echo "usage: $0 [SECONDS_PER_TARGET]" >&2; exit 2; }
# shellcheck source=fuzz/targets.sh
. "$HERE/targets.sh"
fuzz_toolchain_check
read -r -a TARGETS <<<"${OSH_FUZZ_TARGETS:-${FUZZ_TARGETS[*]}}"
export SWIFT_BACKTRACE=enable=no
export LSAN_OPTIONS=suppressions=$HERE/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}
# No allocation stacks (a fifth to a quarter of the time went to recording them); a finding's
# report still has the access stack, and replaying it (BINARY FILE, without this) gives the rest.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}

START=$SECONDS
FAILED=0
for t in "${TARGETS[@]}"; do
    target_spec "$t" || { echo "fuzz smoke: no target '$t'"; FAILED=1; continue; }
    if ! BIN=$(build_target "$t" fuzzer,address "${OSH_FUZZ_OPT:--O}"); then
        echo "fuzz smoke: $t does not build"
        FAILED=1
        continue
    fi
    RUN=$WORK/smoke-$t
    rm -rf "$RUN"
    mkdir -p "$RUN/new"
    FLAGS=(-max_total_time="$BUDGET" -max_len="$MAX_LEN" -timeout=10 -print_final_stats=1 -artifact_prefix="$RUN/")
    [[ -n $DICT ]] && FLAGS+=(-dict="$DICT")
    set +e
    "$BIN" "${FLAGS[@]}" "$RUN/new" "$HERE/$t/corpus" 2>"$RUN/fuzz.log"
    STATUS=$?
    set -e
    fuzz_stats "$RUN/fuzz.log"
    CRASHES=$(findings "$RUN")
    if [[ $STATUS != 0 || -n $CRASHES ]]; then
        echo "fuzz smoke: $t $EXECS execs in ${TIME_S:-?} s, cov $COV, FINDINGS (exit $STATUS): ${CRASHES:-see $RUN/fuzz.log}"
        grep -m 3 -E 'ERROR: AddressSanitizer|Fatal error|precondition|SUMMARY' "$RUN/fuzz.log" | sed 's/^/    /' || true
        FAILED=1
    else
        echo "fuzz smoke: $t $EXECS execs in ${TIME_S:-?} s, cov $COV, no findings"
    fi
done
echo "fuzz smoke: ${#TARGETS[@]} targets in $((SECONDS - START)) s"
exit "$FAILED"
