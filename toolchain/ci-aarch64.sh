#!/usr/bin/env bash
# ci-aarch64.sh: the CI checks of what goes onto a Pi (issue 7). .ci/run calls it after
# toolchain/swift60-check.sh has made the builder chroot; it also works on its own (as root).
#   1. the unit: `systemd-analyze security --offline=true` scores <= 2.0;
#   2. the aarch64 SDK (make-sdk.sh trixie) and the release binaries (cross-build.sh trixie --dev);
#      osh-edge links no libmicrohttpd and no simulator (check-hygiene.sh); `osh-edge --version`
#      and `osh-edge-dev demo --duration 5` under qemu-aarch64-static;
#   3. `systemd-analyze verify` of the unit where it is really installed, in two staged roots:
#      deploy.sh --stage (what install.sh puts on a Pi; with the image's first-boot unit) and the unpacked .deb;
#   4. the .deb (deploy/build-deb.sh): dpkg-deb --info/--contents checked, and lintian.
# Ends with a summary block; every step's full output is in .build/ci-aarch64/*.log.
#
# Exit: 0 all passed; 1 a genuine failure (build error, a qemu run fails, a lintian error or
# warning, verify complains, score > 2.0); 2 the environment could not run the checks (not
# root, the Debian mirror unreachable): .ci/run then warns and goes on.
# Usage: toolchain/ci-aarch64.sh [--binary FILE]   (as root; --binary: check FILE, skip the cross build;
#   the demo runs FILE's sibling osh-edge-dev when there is one)
# Environment: OSH_SWIFT60_ROOT, OSH_DEBIAN_MIRROR (as the other toolchain scripts);
#   OSH_DEB_MAINTAINER (default: build-deb.sh's, so lintian checks the package users get).
set -uo pipefail
LOG_TAG=ci-aarch64
# shellcheck source=toolchain/lib-chroot.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib-chroot.sh"

GIVEN_BIN=
while (($#)); do
  case $1 in
    --binary) GIVEN_BIN=$(realpath -e -- "${2:?--binary needs a file}") || exit 1; shift ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    *) printf 'ci-aarch64.sh: unknown argument %s (see --help)\n' "$1" >&2; exit 1 ;;
  esac
  shift
done
REL=trixie
NAME=osh-edge-aarch64-$REL
REPO=$(cd -- "$TOOLCHAIN_DIR/.." && pwd)
UNIT=$REPO/deploy/osh-edge.service
OUT=$REPO/.build/ci-aarch64
BIN=$REPO/.build/cross/$REL/osh-edge
DEV_BIN=$REPO/.build/cross/$REL/osh-edge-dev
SYSROOT=$ROOT$SDK_DIR/$NAME.artifactbundle/$NAME/sysroot
# The SDK's apt cache: the trixie arm64 .debs, which map the binary's libraries to packages.
DEBCACHE=$ROOT/var/cache/osh-edge-sdk-apt/$REL/cache/archives
export OSH_DEB_MAINTAINER=${OSH_DEB_MAINTAINER:-osh-edge maintainers <osh-edge@users.noreply.github.com>}
# apt's and debootstrap's words for "the network or the mirror is not there".
NET_RE='Could not resolve|Temporary failure resolving|Temporary failure in name resolution|Failed to fetch|Unable to connect|Could not connect|Connection timed out|Network is unreachable|No route to host|Connection refused|Failed getting release file|Some index files failed to download'

rm -rf --one-file-system -- "$OUT"
mkdir -p "$OUT"
START=$SECONDS
FAILS=()
ENVS=()
SUMMARY=()
say() { printf '[ci-aarch64] %s\n' "$*"; }
note() { SUMMARY+=("$(printf '%-16s %s' "$1" "$2")"); }
fail_step() { FAILS+=("$1"); say "FAIL: $1"; }
env_step() { ENVS+=("$1"); say "WARNING: $1"; }
tail_of() { say "--- last ${2:-30} lines of $1"; tail -n "${2:-30}" -- "$1" | sed 's/^/    /'; }
net_trouble() { grep -qE "$NET_RE" -- "$1"; }
mmss() { printf '%d m %02d s' $(($1 / 60)) $(($1 % 60)); }

finish() {
  printf '\n===== aarch64 / unit / package summary (%s) =====\n' "$(mmss $((SECONDS - START)))"
  printf '%s\n' "${SUMMARY[@]}"
  local f
  for f in "${FAILS[@]}"; do printf 'FAILED           %s\n' "$f"; done
  for f in "${ENVS[@]}"; do printf 'NOT RUN          %s\n' "$f"; done
  printf 'logs             %s\n' "$OUT"
  printf '=====\n'
  if ((${#FAILS[@]})); then exit 1; fi
  if ((${#ENVS[@]})); then exit 2; fi
  exit 0
}

# --- 1. the unit's exposure score (no root, no network, no binary needed)
if ! command -v systemd-analyze >/dev/null; then
  fail_step "systemd-analyze is missing (scripts/bootstrap.sh installs systemd)"
else
  systemd-analyze security --offline=true --no-pager "$UNIT" >"$OUT/security.log" 2>&1
  score=$(sed -n 's/.*Overall exposure level for osh-edge\.service: \([0-9.]*\).*/\1/p' "$OUT/security.log")
  if [[ -z $score ]]; then
    fail_step "systemd-analyze security printed no exposure level"
    tail_of "$OUT/security.log"
  elif awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
    note "unit security" "$score (limit 2.0) OK"
  else
    fail_step "systemd-analyze security: exposure $score > 2.0"
    grep '✗' "$OUT/security.log" | head -20
  fi
fi

# --- 2. root and the host tools of this step
if [[ $(id -u) -ne 0 ]]; then
  env_step "not root: the builder chroot, mounts and apt need root"
  finish
fi
# qemu-aarch64-static runs the binary; lintian checks the package; procps: /bin/kill for the
# staged roots (the unit's ExecReload); file and binutils (readelf) for cross-build/build-deb.
tools=(qemu-user-static lintian procps file binutils)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$OUT/apt.log" 2>&1; then
    if net_trouble "$OUT/apt.log"; then env_step "apt-get install ${missing[*]}: the Debian mirror cannot be reached"
    else fail_step "apt-get install ${missing[*]} failed"; fi
    tail_of "$OUT/apt.log"
    finish
  fi
fi

# run_step NAME LOG CMD…: run CMD with its output in LOG; on failure classify it (the
# mirror unreachable → environment, anything else → a genuine failure) and show the tail.
run_step() {
  local name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1 && return 0
  local rc=$?
  if net_trouble "$log"; then env_step "$name: the Debian mirror cannot be reached (exit $rc)"
  else fail_step "$name failed (exit $rc)"; fi
  grep -E 'error:|error adding symbols|undefined (reference|symbol)' "$log" | grep -vE '^ *[0-9]* *\|' | awk '!seen[$0]++' | head -40
  tail_of "$log"
  return 1
}

# --- 3. the SDK and the cross build
say "make-sdk.sh $REL (log: $OUT/make-sdk.log)"
t=$SECONDS
run_step "make-sdk.sh $REL" "$OUT/make-sdk.log" "$TOOLCHAIN_DIR/make-sdk.sh" "$REL" || finish
note "SDK" "$(mmss $((SECONDS - t))) ($(grep -o 'SDK ready: .*' "$OUT/make-sdk.log" || echo 'already up to date'))"

if [[ -n $GIVEN_BIN ]]; then
  BIN=$GIVEN_BIN
  DEV_BIN=$(dirname -- "$BIN")/osh-edge-dev
  note "cross build" "skipped: --binary $BIN"
else
  say "cross-build.sh $REL (log: $OUT/cross-build.log)"
  t=$SECONDS
  run_step "cross-build.sh $REL" "$OUT/cross-build.log" "$TOOLCHAIN_DIR/cross-build.sh" "$REL" --dev --out "$BIN" || finish
  note "cross build" "$(mmss $((SECONDS - t)))"
fi
size=$(stat -c %s -- "$BIN")
note "binary" "$size bytes = $(awk -v b="$size" 'BEGIN { printf "%.2f MB (%.2f MiB)", b / 1e6, b / 1048576 }'); $(file -b "$BIN" | cut -d, -f1-2), $(file -b "$BIN" | grep -o 'not stripped\|stripped')"

# What the .deb ships links no development code (cross-build.sh checks it too; --binary skips that).
if hygiene=$("$TOOLCHAIN_DIR/check-hygiene.sh" "$BIN" 2>"$OUT/hygiene.err"); then
  note "hygiene" "$hygiene"
else
  fail_step "osh-edge links development code: $hygiene"
  tail_of "$OUT/hygiene.err"
fi

# --- 4. the binary under qemu-user (no binfmt registration: qemu runs it directly)
note "qemu" "$(qemu-aarch64-static --version | head -1)"
if qemu-aarch64-static -L "$SYSROOT" "$BIN" --version >"$OUT/qemu-version.log" 2>&1 &&
  head -1 "$OUT/qemu-version.log" | grep -q '^osh-edge [0-9]'; then
  note "--version" "$(head -1 "$OUT/qemu-version.log"); $(sed -n 's/^ *libgpiod /libgpiod /p' "$OUT/qemu-version.log")"
else
  fail_step "osh-edge --version under qemu"
  tail_of "$OUT/qemu-version.log"
fi
# The demo (osh-edge-dev: the .deb's binary has none): its own development node on 127.0.0.1
# (a free port), the simulated board, generated pink noise. A state dir of its own: as root
# the default is /var/lib/osh-edge. The camera's libx264 encoder is the slowest part under
# emulation: 1 fps.
say "osh-edge-dev demo --duration 5 under qemu (log: $OUT/demo.log)"
t=$SECONDS
rc=127
if [[ -x $DEV_BIN ]]; then
  (cd "$REPO" && exec timeout -k 10 300 qemu-aarch64-static -L "$SYSROOT" "$DEV_BIN" demo --duration 5 \
    --camera-fps 1 --no-record --state-dir "$OUT/demo-state") >"$OUT/demo.log" 2>"$OUT/demo.err"
  rc=$?
else
  printf 'no osh-edge-dev at %s (cross-build.sh --dev builds it)\n' "$DEV_BIN" >"$OUT/demo.err"
fi
# The last table: from its last header line to the end.
last_table=$(awk '/^datastream / { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$OUT/demo.log")
sent=$(printf '%s\n' "$last_table" | awk 'NR > 1 && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }')
if ((rc == 0)) && ((sent > 0)); then
  note "demo" "exit 0 in $(mmss $((SECONDS - t))), $sent observations sent; the last table:"
  while IFS= read -r line; do SUMMARY+=("    $line"); done <<<"$last_table"
else
  fail_step "osh-edge-dev demo under qemu (exit $rc, $sent observations sent)"
  tail_of "$OUT/demo.log"
  tail_of "$OUT/demo.err"
fi

# --- 5. the package
say "build-deb.sh arm64 (log: $OUT/build-deb.log)"
DEB=
if run_step "build-deb.sh arm64" "$OUT/build-deb.log" "$REPO/deploy/build-deb.sh" arm64 "$BIN" \
  --out "$OUT/deb" --libs-from "$DEBCACHE"; then
  DEB=$(tail -1 "$OUT/build-deb.log")
  dpkg-deb --info "$DEB" >"$OUT/deb-info.log" 2>&1
  dpkg-deb --contents "$DEB" >"$OUT/deb-contents.log" 2>&1
  bad=()
  # Trixie's names: libgpiod3, the t64 renames, glibc 2.38.
  for want in 'Package: osh-edge' 'Architecture: arm64' 'Depends: libc6 (>= 2.38)' 'libgpiod3' \
    'libcurl4t64' 'libasound2t64' 'libmosquitto1' 'adduser' 'Maintainer: '"$OSH_DEB_MAINTAINER" \
    ' postinst' ' prerm' ' postrm' ' conffiles' ' md5sums'; do
    grep -qF -- "$want" "$OUT/deb-info.log" || bad+=("info lacks '$want'")
  done
  grep -q 'libgpiod2' "$OUT/deb-info.log" && bad+=("Depends names bookworm's libgpiod2")
  grep -q 'libmicrohttpd' "$OUT/deb-info.log" && bad+=("Depends names libmicrohttpd (the development node is osh-edge-dev's)")
  grep -q 'osh-edge-dev' "$OUT/deb-contents.log" && bad+=("the package carries osh-edge-dev")
  for want in ./usr/bin/osh-edge ./lib/systemd/system/osh-edge.service ./etc/osh-edge/osh-edge.conf \
    ./usr/share/doc/osh-edge/examples/osh-edge.conf.example ./lib/udev/rules.d/99-osh-edge.rules \
    ./usr/share/man/man1/osh-edge.1.gz ./usr/share/doc/osh-edge/README.md ./usr/share/doc/osh-edge/copyright ./usr/share/lintian/overrides/osh-edge; do
    grep -qE -- " $want\$" "$OUT/deb-contents.log" || bad+=("contents lack $want")
  done
  grep -qE '^-rwxr-xr-x root/root .* \./usr/bin/osh-edge$' "$OUT/deb-contents.log" || bad+=("/usr/bin/osh-edge is not root-owned 0755")
  [[ $(dpkg-deb -I "$DEB" conffiles 2>/dev/null) == /etc/osh-edge/osh-edge.conf ]] || bad+=("conffiles is not exactly /etc/osh-edge/osh-edge.conf")
  # The package carries this binary and this unit, byte for byte.
  PKGROOT=$OUT/root-deb
  mkdir -p "$PKGROOT"
  dpkg-deb -x "$DEB" "$PKGROOT"
  cmp -s "$BIN" "$PKGROOT/usr/bin/osh-edge" || bad+=("the packaged binary differs from the cross build")
  cmp -s "$UNIT" "$PKGROOT/lib/systemd/system/osh-edge.service" || bad+=("the packaged unit differs from deploy/osh-edge.service")
  cmp -s "$REPO/deploy/osh-edge.conf.example" "$PKGROOT/etc/osh-edge/osh-edge.conf" || bad+=("the packaged config is not the example")
  if ((${#bad[@]})); then
    for b in "${bad[@]}"; do fail_step "dpkg-deb: $b"; done
    tail_of "$OUT/deb-info.log" 40
  else
    note "deb" "$(basename "$DEB"): $(stat -c %s "$DEB") bytes; $(sed -n 's/^ *Installed-Size: /Installed-Size /p' "$OUT/deb-info.log") KiB"
    note "" "$(sed -n 's/^ *\(Depends: .*\)/\1/p' "$OUT/deb-info.log")"
  fi
fi

# --- 6. verify, in staged roots. A root stands for the Pi: besides what we install, it holds
# systemd's own units (the targets After=/WantedBy= name) and procps' /bin/kill
# (ExecReload=), copied from this host — Pi OS has both.
stage_root_extras() {
  local r=$1
  mkdir -p "$r/usr/lib/systemd/system" "$r/usr/bin"
  cp -a /usr/lib/systemd/system/. "$r/usr/lib/systemd/system/"
  install -m 0755 "$(type -P kill)" "$r/usr/bin/kill"
  [[ -e $r/bin ]] || ln -s usr/bin "$r/bin"
}
# verify_in ROOT UNIT_IN_ROOT LABEL: systemd-analyze verify --root; it exits 0 even on unknown
# keys (a warning), so any output at all is a failure.
verify_in() {
  local r=$1 u=$2 label=$3 log=$OUT/verify-$3.log
  systemd-analyze verify --root="$r" "$r$u" >"$log" 2>&1
  local rc=$?
  if ((rc == 0)) && [[ ! -s $log ]]; then
    note "verify ($label)" "silent, exit 0: $u with ExecStart's binary in $r"
    return 0
  fi
  fail_step "systemd-analyze verify ($label): exit $rc"
  sed 's/^/    /' "$log"
  return 1
}
if [[ -f $BIN ]] && command -v systemd-analyze >/dev/null; then
  STAGED=$OUT/root-deploy
  if "$REPO/deploy/deploy.sh" --binary "$BIN" --stage "$STAGED" >"$OUT/deploy-stage.log" 2>&1; then
    stage_root_extras "$STAGED"
    if verify_in "$STAGED" /etc/systemd/system/osh-edge.service deploy; then
      # The check is live: without the binary it must complain.
      mv "$STAGED/usr/bin/osh-edge" "$OUT/osh-edge.moved"
      if systemd-analyze verify --root="$STAGED" "$STAGED/etc/systemd/system/osh-edge.service" >"$OUT/verify-control.log" 2>&1 ||
        ! grep -q 'is not executable' "$OUT/verify-control.log"; then
        fail_step "systemd-analyze verify did not notice a missing ExecStart binary (the check is not live)"
      fi
      mv "$OUT/osh-edge.moved" "$STAGED/usr/bin/osh-edge"
    fi
    # The SD-card image's first-boot unit and osh-edge.service's drop-in, where the image puts them.
    FB=$REPO/board/image/firstboot
    install -D -m 0755 "$FB/osh-edge-firstboot" "$STAGED/usr/libexec/osh-edge/osh-edge-firstboot"
    install -D -m 0644 "$FB/osh-edge-firstboot.service" "$STAGED/etc/systemd/system/osh-edge-firstboot.service"
    install -D -m 0644 "$FB/osh-edge.service.d/firstboot.conf" "$STAGED/etc/systemd/system/osh-edge.service.d/firstboot.conf"
    verify_in "$STAGED" /etc/systemd/system/osh-edge-firstboot.service firstboot
    verify_in "$STAGED" /etc/systemd/system/osh-edge.service deploy-with-firstboot
  else
    fail_step "deploy.sh --stage"
    tail_of "$OUT/deploy-stage.log"
  fi
  if [[ -n $DEB && -d $OUT/root-deb ]]; then
    stage_root_extras "$OUT/root-deb"
    verify_in "$OUT/root-deb" /lib/systemd/system/osh-edge.service deb
  fi
fi

# --- 7. lintian: errors and warnings fail; overrides (with their reasons) are listed
if [[ -n $DEB ]]; then
  say "lintian (log: $OUT/lintian.log)"
  lintian --allow-root --display-info --show-overrides "$DEB" >"$OUT/lintian.log" 2>&1
  rc=$?
  counts=$(awk '/^[EWIO]: / { n[substr($0, 1, 1)]++ } END { printf "%d errors, %d warnings, %d info, %d overridden", n["E"], n["W"], n["I"], n["O"] }' "$OUT/lintian.log")
  if ((rc == 0)) && ! grep -qE '^[EW]: ' "$OUT/lintian.log"; then
    note "lintian" "$(lintian --version): $counts"
    while IFS= read -r line; do SUMMARY+=("    $line"); done < <(grep -E '^O: ' "$OUT/lintian.log" | awk '!seen[$0]++')
  else
    fail_step "lintian (exit $rc): $counts"
    grep -E '^[EW]: ' "$OUT/lintian.log"
    tail_of "$OUT/lintian.log"
  fi
fi

finish
