#!/usr/bin/env bash
# run-config.sh: libFuzzer run of the configuration reader (fuzz/config/FuzzConfig.swift:
# ConfigParser, AgentSettings.parse, Secrets.parse). Not part of `swift test`.
#
# Usage: fuzz/run-config.sh [SECONDS] [--update-corpus] [--no-asan]
#   SECONDS          how long to fuzz (default 120)
#   --update-corpus  replace fuzz/config/corpus with the minimised union of it and the new inputs
#   --no-asan        without AddressSanitizer (faster; finds only traps and crashes)
# Seeds: deploy/osh-edge.conf.example and board/profiles/*.conf, besides the committed corpus.
# Environment: OSH_FUZZ_WORK (default /tmp/osh-fuzz-config), SWIFTC.
set -euo pipefail

SECONDS_TO_RUN=120
UPDATE=0
SANITIZE=fuzzer,address
for a in "$@"; do
  case "$a" in
    --update-corpus) UPDATE=1 ;;
    --no-asan) SANITIZE=fuzzer ;;
    '' | *[!0-9]*) echo "usage: $0 [SECONDS] [--update-corpus] [--no-asan]" >&2; exit 2 ;;
    *) SECONDS_TO_RUN=$a ;;
  esac
done

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/.." && pwd)
WORK=${OSH_FUZZ_WORK:-/tmp/osh-fuzz-config}
SWIFTC=${SWIFTC:-swiftc}
CORPUS=$HERE/config/corpus
log() { printf '[fuzz-config] %s\n' "$*" >&2; }

TOOLCHAIN_BIN=$(dirname -- "$(readlink -f -- "$(command -v "$SWIFTC")")")
if ! compgen -G "$TOOLCHAIN_BIN/../lib/clang/*/lib/linux/libclang_rt.fuzzer-$(uname -m).a" >/dev/null; then
  log "this toolchain has no libFuzzer runtime (libclang_rt.fuzzer-$(uname -m).a); it cannot -sanitize=fuzzer"
  exit 2
fi

mkdir -p "$WORK/new" "$WORK/seeds" "$CORPUS"
cp "$ROOT/deploy/osh-edge.conf.example" "$ROOT"/board/profiles/*.conf "$WORK/seeds/"
BIN=$WORK/fuzz-config
log "building $BIN (-sanitize=$SANITIZE -O, all of OSHCore)"
mapfile -t CORE < <(find "$ROOT/Sources/OSHCore" -name '*.swift' | sort)
LINKER=()
if command -v ld.lld >/dev/null 2>&1 || [[ -x $TOOLCHAIN_BIN/ld.lld ]]; then LINKER=(-use-ld=lld); fi
"$SWIFTC" -sanitize="$SANITIZE" -parse-as-library -O -g "${LINKER[@]}" -module-name FuzzConfig -o "$BIN" \
  "$HERE/config/FuzzConfig.swift" "${CORE[@]}"

export SWIFT_BACKTRACE=enable=no
log "fuzzing for $SECONDS_TO_RUN s"
set +e
"$BIN" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 -dict="$HERE/config/config.dict" \
  -print_final_stats=1 -artifact_prefix="$WORK/" "$WORK/new" "$CORPUS" "$WORK/seeds" 2>"$WORK/fuzz.log"
STATUS=$?
set -e
EXECS=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/fuzz.log")
TIME=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$WORK/fuzz.log")
COV=$(grep -o 'cov: [0-9]*' "$WORK/fuzz.log" | tail -1 || true)
[[ -n $EXECS && -n $TIME && $TIME -gt 0 ]] && log "executions: $EXECS in $TIME s = $((EXECS / TIME))/s, $COV"
CRASHES=$(ls "$WORK"/crash-* "$WORK"/timeout-* "$WORK"/oom-* 2>/dev/null || true)
if [[ $STATUS != 0 || -n $CRASHES ]]; then
  log "FINDINGS (exit $STATUS): ${CRASHES:-see $WORK/fuzz.log}"
  exit 1
fi
log "no findings"

rm -rf "$WORK/min"
mkdir -p "$WORK/min"
"$BIN" -merge=1 -use_counters=0 -max_len=4096 "$WORK/min" "$WORK/new" "$CORPUS" "$WORK/seeds" 2>"$WORK/merge.log"
log "minimised corpus: $(find "$WORK/min" -type f | wc -l) files, $(cat "$WORK/min"/* | wc -c) bytes"
if [[ $UPDATE == 1 ]]; then
  find "$CORPUS" -type f -delete
  cp "$WORK/min"/* "$CORPUS"/
  log "fuzz/config/corpus updated"
fi
