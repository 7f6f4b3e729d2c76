#!/usr/bin/env bash
# ci-image.sh: what CI checks of the SD-card image (issue 19): build-image.sh --raw (no xz: it
# takes minutes on 2 cores; the boot is the same bytes) with the package
# toolchain/ci-aarch64.sh just made (the Debian root cached in /var/cache/osh-edge/image), then
# its first boot in the virtual Pi twice: with board/virtual-pi/image-test/ready on the FAT
# partition (config applied, secrets gone from the card, service ready, streaming) and with
# image-test/broken (the error file, no service). Exit 0: all passed; 1: a check failed;
# 2: could not run here (no root, no mirror). Logs and summaries in .build/image/.
set -uo pipefail
REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$REPO/.build/image
mkdir -p "$OUT"
cd "$REPO" || exit 2
start=$(date +%s)
img=$(board/image/build-image.sh --raw --out "$OUT" 2>"$OUT/build.log" | tail -1)
rc=$?
if ((rc == 1)); then
  # Once more, the first attempt's log kept: CI saw one unexplained stage-2 failure that a clean
  # run on a cold cache did not repeat. Its cause is printed either way.
  tail -n 30 "$OUT/build.log" | sed 's/^/ci-image: first attempt: build.log: /'
  mv "$OUT/build.log" "$OUT/build-first.log"
  echo "ci-image: build-image.sh failed (exit 1); trying once more"
  img=$(board/image/build-image.sh --raw --out "$OUT" 2>"$OUT/build.log" | tail -1)
  rc=$?
fi
tail -n 3 "$OUT/build.log"
if ((rc != 0)) || [[ ! -f $img ]]; then
  # Prefixed so that .ci/run's summary (which keeps only the ci-image lines) shows the cause.
  tail -n 30 "$OUT/build.log" | sed 's/^/ci-image: build.log: /'
  echo "ci-image: build-image.sh failed (exit $rc; $OUT/build.log)"
  exit $((rc == 2 ? 2 : 1))
fi
echo "ci-image: built $(basename "$img") ($(stat -c %s "$img") bytes) in $(($(date +%s) - start)) s"
worst=0
for case in ready broken; do
  expect=ready
  [[ $case == broken ]] && expect=error
  t0=$(date +%s)
  board/virtual-pi/vpi test --image "$img" --boot-files board/virtual-pi/image-test/$case --expect $expect \
    --json "$OUT/summary-$case.json" --keep "$OUT/share-$case" >"$OUT/test-$case.log" 2>&1
  rc=$?
  grep -E '^(image |boot: |vpi image: )' "$OUT/test-$case.log" || tail -n 20 "$OUT/test-$case.log"
  grep -E ' FAIL ' "$OUT/test-$case.log"
  echo "ci-image: $case boot: exit $rc in $(($(date +%s) - t0)) s"
  ((rc > worst)) && worst=$rc
done
exit "$worst"
