#!/usr/bin/env bash
# The test suite's wall time (issue 15's closing note, before and after): builds the tests
# first (not timed), then times one `swift test --disable-swift-testing` run and lists the
# slowest test cases from XCTest's "Test Case '-[…]' passed (N seconds)" lines.
#
#   scripts/suite-time.sh                 build, then time the whole suite; 10 slowest
#   TOP=20 BUILD=0 scripts/suite-time.sh  no build step; 20 slowest
#   FILTER=DaemonTests scripts/suite-time.sh   (passes --filter)
#   LOG=FILE …                            keep the test output in FILE
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=${TOP:-10}
BUILD=${BUILD:-1}
log=${LOG:-$(mktemp /tmp/suite-time.XXXXXX)}
[ "$BUILD" = 1 ] && nice swift build --build-tests >&2
filter=()
[ -n "${FILTER:-}" ] && filter=(--filter "$FILTER")
start=$(date +%s.%N)
rc=0
nice swift test --disable-swift-testing "${filter[@]}" >"$log" 2>&1 || rc=$?
end=$(date +%s.%N)

echo "# suite time: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Tests Package.swift || echo '+dirty') $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
awk -v s="$start" -v e="$end" -v rc="$rc" 'BEGIN { printf "wall time of `swift test --disable-swift-testing`: %.1f s (exit %d)\n", e - s, rc }'
# XCTest's own summary (the last "Executed" line is the whole run's).
grep -E "Executed [0-9]+ tests?" "$log" | tail -n 1 | sed 's/^[[:space:]]*/XCTest: /'
n_pass=$(grep -cE "^Test Case '.*' passed" "$log" || true)
n_fail=$(grep -cE "^Test Case '.*' failed" "$log" || true)
n_skip=$(grep -cE "^Test Case '.*' skipped" "$log" || true)
echo "test cases: $n_pass passed, $n_fail failed, $n_skip skipped"
echo "sum of the test cases' own times: $(sed -nE "s/^Test Case '.*' (passed|failed|skipped) \(([0-9.]+) seconds\).*/\2/p" "$log" | awk '{s += $1} END {printf "%.1f s", s}')"
# Case lines: "Test Case 'Class.test' passed (N seconds)" (Linux) or "'-[Class test]'" (Darwin).
cases() {
  sed -nE -e "s/^Test Case '-\\[([^]' ]+) ([^]' ]+)]' (passed|failed|skipped) \\(([0-9.]+) seconds\\).*/\\4 \\1 \\2 \\3/p" \
           -e "s/^Test Case '([^]' ]+)\\.([^]' .]+)' (passed|failed|skipped) \\(([0-9.]+) seconds\\).*/\\4 \\1 \\2 \\3/p" "$log"
}
echo "# the $TOP slowest test cases"
cases | sort -rn | awk -v top="$TOP" 'NR <= top { printf "%8.3f s  %s.%s%s\n", $1, $2, $3, ($4 == "passed" ? "" : "  (" $4 ")") }'
echo "# per test class (sum of its cases)"
cases | awk '{ s[$2] += $1 } END { for (k in s) printf "%8.3f s  %s\n", s[k], k }' | sort -rn
if [ "$rc" != 0 ]; then
  echo "# failures"
  grep -E "error: |' failed" "$log" | head -n 40 || true
fi
[ -n "${LOG:-}" ] || rm -f "$log"
