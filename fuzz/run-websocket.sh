#!/usr/bin/env bash
# run-websocket.sh: libFuzzer run of the WebSocket frame parser and handshake head parser
# (fuzz/websocket/FuzzWebSocket.swift). Not part of `swift test` (WebSocketFrameTests has a
# seeded 20 000-case mutation loop that is). Needs the toolchain's libFuzzer runtime.
#
# Usage: fuzz/run-websocket.sh [SECONDS] [--no-asan]
# Environment: OSH_FUZZ_WORK (scratch directory, default /tmp/osh-fuzz-ws), SWIFTC.
# Crash files stay in the scratch directory; replay one with $OSH_FUZZ_WORK/fuzz-ws CRASH_FILE.
set -euo pipefail

SECONDS_TO_RUN=120
SANITIZE=fuzzer,address
for a in "$@"; do
    case "$a" in
        --no-asan) SANITIZE=fuzzer ;;
        ''|*[!0-9]*) echo "usage: $0 [SECONDS] [--no-asan]" >&2; exit 2 ;;
        *) SECONDS_TO_RUN=$a ;;
    esac
done

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/.." && pwd)
WORK=${OSH_FUZZ_WORK:-/tmp/osh-fuzz-ws}
SWIFTC=${SWIFTC:-swiftc}
CORE=$ROOT/Sources/OSHCore
say() { printf '[fuzz-ws] %s\n' "$*" >&2; }

BIN_DIR=$(dirname -- "$(readlink -f -- "$(command -v "$SWIFTC")")")
if ! ls "$BIN_DIR"/../lib/clang/*/lib/linux/libclang_rt.fuzzer-"$(uname -m)".a >/dev/null 2>&1; then
    say "this toolchain has no libFuzzer runtime (libclang_rt.fuzzer-$(uname -m).a)"
    exit 2
fi
mkdir -p "$WORK/new"
LD=()
{ command -v ld.lld >/dev/null 2>&1 || [[ -x $BIN_DIR/ld.lld ]]; } && LD=(-use-ld=lld)
say "building $WORK/fuzz-ws (-sanitize=$SANITIZE)"
"$SWIFTC" -sanitize="$SANITIZE" -parse-as-library -O -g "${LD[@]}" -module-name FuzzWebSocket -o "$WORK/fuzz-ws" \
    "$HERE/websocket/FuzzWebSocket.swift" "$CORE"/WebSocket/*.swift "$CORE/Util/SHA1.swift" "$CORE/Util/Base64.swift" \
    "$CORE/JSON/ByteBuffer.swift" "$HERE/websocket/Stubs.swift" "$CORE/Util/SHA256.swift" "$CORE/Util/BlockHash.swift"

export SWIFT_BACKTRACE=enable=no
set +e
"$WORK/fuzz-ws" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$WORK/" "$WORK/new" "$HERE/websocket/corpus" 2>"$WORK/fuzz.log"
STATUS=$?
set -e
EXECS=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/fuzz.log")
say "$(grep -o 'cov: [0-9]*' "$WORK/fuzz.log" | tail -1), executions: ${EXECS:-?} in $SECONDS_TO_RUN s"
CRASHES=$(ls "$WORK"/crash-* "$WORK"/timeout-* "$WORK"/oom-* 2>/dev/null || true)
if [[ $STATUS != 0 || -n $CRASHES ]]; then
    say "FINDINGS (exit $STATUS): ${CRASHES:-see $WORK/fuzz.log}"
    exit 1
fi
say "no findings"
