#!/usr/bin/env bash
# Heap allocations per level window in steady state, measured from outside: valgrind
# counts every malloc of `osh-edge-dev bench audio` at N and at 2N seconds of 48 kHz audio;
# the difference divided by the extra windows (10 per second) is what each window costs
# (start-up allocations cancel out). Target: 0. Both paths: the meter alone, and ALSA
# capture through the file plugin + event loop + meter.
#
#   scripts/bench-audio-allocs.sh [N]        (default N=30)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-30}
swift build -c release --product osh-edge-dev >/dev/null
bin=$(swift build -c release --show-bin-path)/osh-edge-dev

allocs() { # path format seconds
  valgrind --tool=memcheck "$bin" bench audio --quiet --path "$1" --format "$2" --seconds "$3" 2>&1 \
    | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
}

printf '%-6s %-7s %12s %12s %12s\n' path format "allocs@N" "allocs@2N" "per window"
for path in meter alsa; do
  for format in S16_LE S32_LE; do
    a1=$(allocs "$path" "$format" "$n")
    a2=$(allocs "$path" "$format" $((2 * n)))
    printf '%-6s %-7s %12s %12s %12s\n' "$path" "$format" "$a1" "$a2" \
      "$(awk -v a="$a1" -v b="$a2" -v n="$n" 'BEGIN { printf "%.4f", (b - a) / (10 * n) }')"
  done
done
