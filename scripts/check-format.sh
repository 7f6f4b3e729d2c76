#!/usr/bin/env bash
# check-format.sh [--fix]: the tree as `swift format` (in the toolchain) writes it, with the
# repository's .swift-format (4-space indents, 140 columns; the rules that would rename or restructure
# code are off: only layout is checked). Exit 1 lists the files that differ; --fix rewrites them.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! swift format --version >/dev/null 2>&1; then
  echo "check-format: this toolchain has no swift format (Swift 6.0+ ships it)" >&2
  exit 2
fi
if [[ ${1:-} == --fix ]]; then
  swift format format --in-place --recursive --parallel Sources Tests fuzz
  exit 0
fi
out=$(swift format lint --strict --recursive --parallel Sources Tests fuzz 2>&1) || true
if [[ -n $out ]]; then
  printf '%s\n' "$out" | head -40
  files=$(printf '%s\n' "$out" | cut -d: -f1 | sort -u | wc -l)
  echo "check-format: $files file(s) are not as swift format writes them; run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: the tree is formatted"
