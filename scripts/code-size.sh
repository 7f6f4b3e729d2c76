#!/usr/bin/env bash
# Files and lines per target (Sources/<target>, Tests/<target>; .swift .c .h), the files over
# 500 lines, and with --clones the code-clone pairs — for issue 15's closing note, before and
# after. It measures a commit's tree (git archive into a scratch directory), so untracked
# files in the checkout do not count and before/after are measured the same way.
#
#   scripts/code-size.sh [REV]                 default REV = HEAD (the "before" is d369aaa)
#   scripts/code-size.sh --clones [REV]        + duplicates over Sources, and over Sources+Tests
#   scripts/code-size.sh --worktree [--clones] the working tree as it is (tracked + untracked, not ignored)
#   SECONDS_LIMIT=300 MOST=200 KEEP=1 …        duplicates' --seconds and --most; KEEP keeps the
#                                              scratch directory with duplicates' full listings
#
# Lines are physical lines (wc -l); "code" leaves out blank lines and lines that are only a
# // comment or part of a /* */ or /// doc block start ("//", "/*", "*", "*/").
set -euo pipefail
cd "$(dirname "$0")/.."
clones=0 worktree=0 rev=HEAD
for a in "$@"; do
  case $a in
    --clones) clones=1 ;;
    --worktree) worktree=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) rev=$a ;;
  esac
done
MOST=${MOST:-200}
SECONDS_LIMIT=${SECONDS_LIMIT:-300}

work=$(mktemp -d /tmp/code-size.XXXXXX)
trap '[ "${KEEP:-0}" = 1 ] && echo "scratch kept: $work" >&2 || rm -rf "$work"' EXIT
tree=$work/tree
mkdir -p "$tree"
if [ "$worktree" = 1 ]; then
  label="working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes')"
  git ls-files -z --cached --others --exclude-standard -- Sources Tests Package.swift \
    | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf - | tar -xf - -C "$tree"
else
  label="$(git rev-parse --short "$rev") ($(git log -1 --format=%cs "$rev"))"
  git archive "$rev" Sources Tests Package.swift | tar -xf - -C "$tree"
fi

# "files lines code" of the .swift/.c/.h files below $1
measure() {
  find "$@" -type f \( -name '*.swift' -o -name '*.c' -o -name '*.h' \) -print0 \
    | xargs -0r awk '
        FNR == 1 { files++ }
        { lines++; t = $0; gsub(/^[ \t]+|[ \t]+$/, "", t)
          if (t != "" && t !~ /^(\/\/|\/\*|\*)/) code++ }
        END { printf "%d %d %d\n", files, lines, code }'
}

echo "# code size: $label"
printf '%-28s %6s %8s %8s\n' target files lines code
for top in Sources Tests; do
  tf=0 tl=0 tc=0
  for d in "$tree/$top"/*/; do
    [ -d "$d" ] || continue
    name=$top/$(basename "$d")
    read -r f l c < <(measure "$d")
    [ "${f:-0}" -gt 0 ] || continue
    printf '%-28s %6d %8d %8d\n' "$name" "$f" "$l" "$c"
    tf=$((tf + f)) tl=$((tl + l)) tc=$((tc + c))
  done
  printf '%-28s %6d %8d %8d\n' "$top (total)" "$tf" "$tl" "$tc"
done
read -r f l c < <(measure "$tree/Sources" "$tree/Tests")
printf '%-28s %6d %8d %8d\n' "Sources+Tests" "$f" "$l" "$c"

echo
echo "# files over 500 lines"
find "$tree/Sources" "$tree/Tests" -type f \( -name '*.swift' -o -name '*.c' -o -name '*.h' \) -print0 \
  | xargs -0r wc -l | awk '$2 != "total" && $1 > 500' | sort -rn \
  | sed "s#$tree/##" | awk '{ printf "%6d  %s\n", $1, $2 }'

if [ "$clones" = 1 ]; then
  echo
  echo "# code-clone pairs (duplicates --most $MOST --seconds $SECONDS_LIMIT; count line, then rows in $work when KEEP=1)"
  # Sources alone, then Sources+Tests (the tree holds only those and Package.swift).
  (cd "$tree" && nice duplicates --repo Sources --most "$MOST" --seconds "$SECONDS_LIMIT") >"$work/dup-sources.txt" 2>&1 || true
  (cd "$tree" && nice duplicates --repo . --most "$MOST" --seconds "$SECONDS_LIMIT") >"$work/dup-all.txt" 2>&1 || true
  printf '%-16s %s\n' "Sources:" "$(head -n 1 "$work/dup-sources.txt")"
  grep -E '^(incomplete|left out):' "$work/dup-sources.txt" | sed 's/^/                 /' || true
  printf '%-16s %s\n' "Sources+Tests:" "$(head -n 1 "$work/dup-all.txt")"
  grep -E '^(incomplete|left out):' "$work/dup-all.txt" | sed 's/^/                 /' || true
fi
