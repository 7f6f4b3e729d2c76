#!/usr/bin/env bash
# Heap allocations per fusion update in steady state, measured from outside: valgrind
# counts every malloc of `osh-edge-dev bench fusion` at N and 2N updates; the difference
# divided by N (per case: 2 inputs per algorithm) is what each extra update costs. Target: 0.
#
#   scripts/bench-fusion-allocs.sh [N]        (default N=20000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}
swift build -c release --product osh-edge-dev >/dev/null
bin=$(swift build -c release --show-bin-path)/osh-edge-dev

allocs() { # algorithm count
  valgrind --tool=memcheck "$bin" bench fusion --quiet --algorithm "$1" --count "$2" 2>&1 \
    | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
}

printf '%-10s %12s %12s %12s\n' algorithm "allocs@N" "allocs@2N" "per update"
for alg in madgwick mahony; do
  a1=$(allocs "$alg" "$n")
  a2=$(allocs "$alg" $((2 * n)))
  # Each run does N updates with the magnetometer and N without.
  printf '%-10s %12s %12s %12s\n' "$alg" "$a1" "$a2" "$(awk -v a="$a1" -v b="$a2" -v n="$n" 'BEGIN { printf "%.4f", (b - a) / (2 * n) }')"
done
