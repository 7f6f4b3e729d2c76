#!/usr/bin/env bash
# Heap allocations per observation on the store-and-forward path, measured from outside:
# valgrind counts every malloc of `osh-edge-dev bench spool` (an outage's ring overflow into the
# spool, then the drain: read, CRC, encode, post) at N and 2N observations; the difference
# divided by N is what each observation costs (start-up allocations cancel out). Target: 0.
#
#   scripts/bench-spool-allocs.sh [N]        (default N=20000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}
swift build -c release --product osh-edge-dev >/dev/null
bin=$(swift build -c release --show-bin-path)/osh-edge-dev

allocs() { # count
  valgrind --tool=memcheck "$bin" bench spool --quiet --sync never --count "$1" 2>&1 \
    | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
}

a1=$(allocs "$n")
a2=$(allocs $((2 * n)))
printf '%12s %12s %16s\n' "allocs@N" "allocs@2N" "per observation"
printf '%12s %12s %16s\n' "$a1" "$a2" "$(awk -v a="$a1" -v b="$a2" -v n="$n" 'BEGIN { printf "%.4f", (b - a) / n }')"
