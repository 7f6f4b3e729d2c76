#!/usr/bin/env bash
# campaign.sh: long runs, one target after another (one core), each to RUNS executions with ASan.
# Meant for nohup in the background:
#   nohup nice -n 19 fuzz/campaign.sh LOGDIR [RUNS] [TARGET...] > LOGDIR/campaign.log 2>&1 &
# Each target's output goes to LOGDIR/TARGET.log; LOGDIR/summary.txt gets one line per target:
#   TARGET exit E: [fuzz-TARGET] executions: N in S s = R/s, cov: C   (exit 1: findings, see its log)
# Default RUNS 10000000; default targets, fastest first: spool om websocket swe nmea http config.
set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
LOGS=${1:?usage: $0 LOGDIR [RUNS] [TARGET...]}
RUNS=${2:-10000000}
shift $(($# >= 2 ? 2 : 1))
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(spool om websocket swe nmea http config)
mkdir -p "$LOGS"
for t in "${TARGETS[@]}"; do
    echo "$(date -u +%FT%TZ) $t started" >> "$LOGS/summary.txt"
    "$HERE/run.sh" "$t" 1000000 --runs "$RUNS" > "$LOGS/$t.log" 2>&1
    status=$?
    echo "$(date -u +%FT%TZ) $t exit $status: $(grep -E 'executions:' "$LOGS/$t.log" | tail -1)" >> "$LOGS/summary.txt"
done
echo "$(date -u +%FT%TZ) all done" >> "$LOGS/summary.txt"
