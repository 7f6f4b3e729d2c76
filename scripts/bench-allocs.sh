#!/usr/bin/env bash
# Heap allocations per observation in steady state, measured from outside:
# valgrind counts every malloc of `osh-edge-dev bench encode` at N and at 2N
# observations; the difference divided by N is what each extra observation
# costs (start-up allocations cancel out). Target: 0.
#
#   scripts/bench-allocs.sh [N]        (default N=20000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}
swift build -c release --product osh-edge-dev >/dev/null
bin=$(swift build -c release --show-bin-path)/osh-edge-dev

allocs() { # output format batch count
  valgrind --tool=memcheck "$bin" bench encode --quiet --output "$1" --format "$2" --batch "$3" --count "$4" 2>&1 \
    | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
}

printf '%-28s %-9s %5s %12s %12s %10s\n' output format batch "allocs@N" "allocs@2N" "per obs"
for output in $("$bin" schema --list | awk '$2 != "application/swe+binary" {print $1}'); do
  for fb in "om+json 1" "om+json 50" "swe+json 1"; do
    set -- $fb
    a1=$(allocs "$output" "$1" "$2" "$n")
    a2=$(allocs "$output" "$1" "$2" $((2 * n)))
    printf '%-28s %-9s %5s %12s %12s %10s\n' "$output" "$1" "$2" "$a1" "$a2" \
      "$(awk -v a="$a1" -v b="$a2" -v n="$n" 'BEGIN { printf "%.4f", (b - a) / n }')"
  done
done
