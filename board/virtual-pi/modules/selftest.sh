#!/usr/bin/env bash
# selftest.sh: check build-modules.sh's modules in Debian's real arm64 kernel (trixie's or
# bookworm's), booted under qemu-system-aarch64 (-M virt -cpu cortex-a72, TCG) with a tiny
# busybox initramfs. Runs on an x86-64 Debian host as root; about 1-2 minutes once the caches
# are warm.
#
# Usage: selftest.sh [--release trixie|bookworm] [--kver KVER]
#        (default trixie; KVER: build-modules.sh --print-kver --release RELEASE)
#
# 1. unpacks linux-image-KVER (arm64) of RELEASE into $CACHE/selftest/KVER/rootfs with a dpkg
#    record, like a rootfs, and runs build-modules.sh --into it (which tells the release by KVER);
# 2. builds vpi-probe.c (static arm64; I2C_RDWR, GPIO chip info and edge events) in the
#    release's builder chroot;
# 3. packs busybox-static, vpi-probe, our modules and their in-kernel dependencies (from the
#    rootfs's modules.dep) into an initramfs whose /init loads them and runs the checks;
# 4. boots it and reports the guest's VPI-TEST lines. Exit 0 only if every check passed.
# Environment: OSH_VPI_MODULES_CACHE as for build-modules.sh. Console log: $W/console.log.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../../../toolchain/lib-chroot.sh
source "$HERE/../../../toolchain/lib-chroot.sh"
# shellcheck disable=SC2034  # read by log() in lib-chroot.sh
LOG_TAG=vpi-selftest
CACHE=$(realpath -m -- "${OSH_VPI_MODULES_CACHE:-/var/cache/osh-edge/virtual-pi/modules}")

KVER='' RELEASE=trixie
while (($#)); do
  case $1 in
    --release) RELEASE=${2:?--release needs trixie or bookworm}; shift 2 ;;
    --kver) KVER=${2:?--kver needs a value}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
require_root "$@"
# build-modules.sh's names: trixie's builder and apt are unsuffixed, bookworm's end in -bookworm.
case $RELEASE in
  trixie) SUFFIX='' ;;
  bookworm) SUFFIX=-$RELEASE ;;
  *) die "--release $RELEASE: only trixie and bookworm" ;;
esac
ROOT=$CACHE/builder$SUFFIX
APTDIR=$CACHE/apt$SUFFIX
# Host tools: qemu-system-aarch64 and cpio (the host's own apt).
command -v qemu-system-aarch64 >/dev/null ||
  apt-get install -y --no-install-recommends qemu-system-arm || die "qemu-system-aarch64 is missing"
command -v cpio >/dev/null || apt-get install -y --no-install-recommends cpio || die "cpio is missing"

[[ -n $KVER ]] || KVER=$("$HERE/build-modules.sh" --print-kver --release "$RELEASE")
export APT_CONFIG=$APTDIR/apt.conf   # written by build-modules.sh
[[ -f $APT_CONFIG ]] || "$HERE/build-modules.sh" --print-kver --release "$RELEASE" >/dev/null
VERSION=$(apt-cache show "linux-image-$KVER:arm64" 2>/dev/null | awk '$1 == "Version:" { print $2 }' | sort -V | tail -n1)
[[ -n $VERSION ]] || die "linux-image-$KVER (arm64) is not in the private $RELEASE indexes"
W=$CACHE/selftest/$KVER
R=$W/rootfs
mkdir -p "$W"

download() {   # PKG VERSION ARCH -> path of the .deb in the apt cache
  local deb=$APTDIR/archives/${1%:*}_${2//:/%3a}_$3.deb
  [[ -s $deb ]] || (cd "$APTDIR/archives" && apt-get download -q "$1=$2" >&2) || die "could not download $1=$2"
  printf '%s\n' "$deb"
}

# --- 1. kernel "rootfs" + build-modules.sh -------------------------------------------------------
if [[ "$(cat "$R/.osh-vpi-kernel" 2>/dev/null)" != "$VERSION" ]]; then
  log "unpacking linux-image-$KVER $VERSION"
  rm -rf --one-file-system -- "$R"; mkdir -p "$R/var/lib/dpkg" "$R/usr/lib"
  ln -s usr/lib "$R/lib"   # merged /usr: bookworm's package has /lib/modules, trixie's /usr/lib/modules
  dpkg-deb --fsys-tarfile "$(download "linux-image-$KVER:arm64" "$VERSION" arm64)" |
    tar -x --keep-directory-symlink -C "$R"
  printf 'Package: linux-image-%s\nStatus: install ok installed\nArchitecture: arm64\nVersion: %s\nMaintainer: n/a\nDescription: unpacked by selftest.sh\n' \
    "$KVER" "$VERSION" >"$R/var/lib/dpkg/status"
  printf '%s\n' "$VERSION" >"$R/.osh-vpi-kernel"
fi
log "build-modules.sh --into $R"
t0=$(date +%s%N)
"$HERE/build-modules.sh" --into "$R"
t1=$(date +%s%N)
log "build-modules.sh took $(((t1 - t0) / 1000000)) ms"

# --- 2. vpi-probe --------------------------------------------------------------------------------
lock_builder
trap unmount_all EXIT
mkdir -p "$ROOT/build/selftest"
cp "$HERE/vpi-probe.c" "$ROOT/build/selftest/"
mount_builder_fs
in_builder aarch64-linux-gnu-gcc -static -O2 -Wall -Wextra -Werror \
  -o /build/selftest/vpi-probe /build/selftest/vpi-probe.c || die "vpi-probe.c does not build"
unmount_all
exec 9>&-   # release the builder lock

# --- 3. initramfs --------------------------------------------------------------------------------
I=$W/initramfs
rm -rf --one-file-system -- "$I"; mkdir -p "$I"/{bin,dev,proc,sys,modules}
bb=$(download busybox-static:arm64 "$(apt-cache policy busybox-static:arm64 | awk '$1 == "Candidate:" { print $2 }')" arm64)
bb_path=$(dpkg-deb -c "$bb" | awk '$NF ~ /^\.\/(usr\/)?bin\/busybox$/ { print $NF; exit }')   # bookworm: /bin
[[ -n $bb_path ]] || die "no busybox in $bb"
dpkg-deb --fsys-tarfile "$bb" | tar -xO "$bb_path" >"$I/bin/busybox"
chmod 755 "$I/bin/busybox"
cp "$ROOT/build/selftest/vpi-probe" "$I/bin/vpi-probe"

MD=$R/lib/modules/$KVER
# Load order: for each module, its modules.dep dependencies (listed last-needed first), then itself.
want=("i2c-dev" "i2c-stub-rdwr chip_addr=0x76" "i2c-stub chip_addr=0x77" "gpio-sim" "vicodec")
: >"$I/modules/load.list"
for w in "${want[@]}"; do
  read -r name params <<<"$w"
  paths=$(awk -v m="${name//-/_}" '{ n = $1; sub(/:$/, "", n); sub(/.*\//, "", n); sub(/\.ko(\.xz|\.zst|\.gz)?$/, "", n); gsub(/-/, "_", n) }
    n == m { for (i = NF; i >= 2; i--) print $i; f = $1; sub(/:$/, "", f); print f }' "$MD/modules.dep")
  [[ -n $paths ]] || die "$name is not in $MD/modules.dep"
  while read -r p; do
    ko=$(basename "${p%.xz}"); ko=${ko%.zst}
    awk -v k="$ko" '$1 == k { f = 1 } END { exit !f }' "$I/modules/load.list" && continue
    case $p in
      *.xz) xz -dc "$MD/$p" >"$I/modules/$ko" ;;
      *.zst) zstd -qdc "$MD/$p" >"$I/modules/$ko" ;;
      *) cp "$MD/$p" "$I/modules/$ko" ;;
    esac
    if [[ $(basename "$p") == "$name.ko"* ]]; then echo "$ko $params"; else echo "$ko"; fi >>"$I/modules/load.list"
  done <<<"$paths"
done

cat >"$I/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
pass() { echo "VPI-TEST PASS: $*"; }
fail() { echo "VPI-TEST FAIL: $*"; }
expect() { if [ "$2" = "$3" ]; then pass "$1: '$3'"; else fail "$1: '$3', expected '$2'"; fi; }
while read -r ko args; do insmod "/modules/$ko" $args || fail "insmod $ko $args"; done </modules/load.list
echo "VPI-TEST loaded: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"

# I2C: i2c-stub-rdwr is i2c-0 (chip 0x76), stock i2c-stub is i2c-1 (chip 0x77).
# (No /sys/class/i2c-adapter: Debian's kernel has CONFIG_I2C_COMPAT off.)
expect "i2c-0 name" "SMBus stub driver" "$(cat /sys/bus/i2c/devices/i2c-0/name)"
expect "i2c-0 functionality: I2C" yes "$(i2cdetect -F 0 | awk '$1 == "I2C" && NF == 2 { print $2 }')"
expect "i2c-0 functionality: SMBus read byte" yes "$(i2cdetect -F 0 | awk '/^SMBus read byte +(yes|no)$/ { print $NF }')"
i2cdetect -F 0 | sed 's/^/VPI-INFO i2c-0 /'
i2cset -y 0 0x76 0xd0 0x58 b
expect "SMBus write 0xd0, SMBus read" 0x58 "$(i2cget -y 0 0x76 0xd0 b)"
expect "SMBus write 0xd0, I2C_RDWR [w 0xd0][r 1]" 58 "$(vpi-probe i2c /dev/i2c-0 0x76 0xd0 1)"
i2ctransfer -y 0 w4@0x76 0x88 0x11 0x22 0x33
expect "I2C write [0x88 11 22 33], I2C_RDWR [w 0x88][r 3]" "11 22 33" "$(vpi-probe i2c /dev/i2c-0 0x76 0x88 3)"
expect "I2C write, SMBus read 0x89" 0x22 "$(i2cget -y 0 0x76 0x89 b)"
expect "i2ctransfer w1@0x76 0x88 r3" "0x11 0x22 0x33" "$(i2ctransfer -y 0 w1@0x76 0x88 r3)"
expect "I2C_RDWR to 0x50 (no chip)" "I2C_RDWR: errno 6 ENXIO" "$(vpi-probe i2c /dev/i2c-0 0x50 0 1)"
# absent_addr: the chip stops answering (NACK) and comes back with its registers.
A=/sys/module/i2c_stub_rdwr/parameters/absent_addr
echo 0x76 >"$A"
expect "absent_addr=0x76: reads back" 118 "$(cat "$A")"
expect "absent_addr=0x76: I2C_RDWR" "I2C_RDWR: errno 6 ENXIO" "$(vpi-probe i2c /dev/i2c-0 0x76 0x88 3)"
expect "absent_addr=0x76: SMBus read" failed "$(i2cget -y 0 0x76 0x89 b 2>/dev/null || echo failed)"
echo 0 >"$A"
expect "absent_addr=0: I2C_RDWR, registers kept" "11 22 33" "$(vpi-probe i2c /dev/i2c-0 0x76 0x88 3)"
expect "absent_addr=0: SMBus read" 0x22 "$(i2cget -y 0 0x76 0x89 b)"
expect "stock i2c-stub: i2c-1 name" "SMBus stub driver" "$(cat /sys/bus/i2c/devices/i2c-1/name)"
expect "stock i2c-stub: functionality: I2C" no "$(i2cdetect -F 1 | awk '$1 == "I2C" && NF == 2 { print $2 }')"
i2cset -y 1 0x77 0x10 0x5a b
expect "stock i2c-stub: SMBus" 0x5a "$(i2cget -y 1 0x77 0x10 b)"
expect "stock i2c-stub: I2C_RDWR" "I2C_RDWR: errno 95 EOPNOTSUPP" "$(vpi-probe i2c /dev/i2c-1 0x77 0x10 1)"

# GPIO: a gpio-sim bank labelled like the Pi 4's header chip
mount -t configfs configfs /sys/kernel/config
G=/sys/kernel/config/gpio-sim/pi
mkdir "$G" "$G/bank0"
echo 28 >"$G/bank0/num_lines"
echo pinctrl-bcm2711 >"$G/bank0/label"
echo 1 >"$G/live"
expect "gpio-sim live" 1 "$(cat "$G/live")"
chip=$(cat "$G/bank0/chip_name"); S=/sys/devices/platform/$(cat "$G/dev_name")/$chip
expect "GPIO chip info" "$chip pinctrl-bcm2711 28" "$(vpi-probe chipinfo "/dev/$chip")"
echo pull-up >"$S/sim_gpio18/pull"
expect "line 18 pulled up" 1 "$(cat "$S/sim_gpio18/value")"
expect "line 17 edge events (irq_sim)" "rising falling" "$(vpi-probe edges "/dev/$chip" 17 "$S/sim_gpio17/pull")"

# vicodec: its video devices
n=$(ls /sys/class/video4linux | wc -l)
names=$(cat /sys/class/video4linux/video*/name 2>/dev/null | tr '\n' ',')
if [ "$n" -ge 1 ] && [ -c /dev/video0 ]; then pass "vicodec: $n video devices ($names)"; else fail "vicodec: no video devices"; fi

if dmesg | grep -iE 'Unknown symbol|disagrees about version|invalid module format'; then
  fail "module symbol errors in dmesg (above)"
else
  pass "no Unknown symbol in dmesg"
fi
dmesg | grep -iE 'i2c-stub|gpio-sim|vicodec|taint' | sed 's/^/VPI-DMESG /'
echo "VPI-TEST tainted=$(cat /proc/sys/kernel/tainted) kernel=$(uname -r)"
echo "VPI-TEST DONE"
poweroff -f
EOF
chmod 755 "$I/init"
(cd "$I" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$W/initrd.gz"
dpkg-deb --fsys-tarfile "$(download "linux-image-$KVER:arm64" "$VERSION" arm64)" |
  tar -xO "./boot/vmlinuz-$KVER" >"$W/vmlinuz"

# --- 4. boot -------------------------------------------------------------------------------------
log "booting $KVER under qemu-system-aarch64 (TCG); console: $W/console.log"
t0=$(date +%s)
set +e
nice -n 10 timeout 600 qemu-system-aarch64 -M virt -cpu cortex-a72 -m 1024 -nographic -nic none \
  -no-reboot -kernel "$W/vmlinuz" -initrd "$W/initrd.gz" -append "console=ttyAMA0 panic=-1 loglevel=4" \
  </dev/null >"$W/console.log" 2>&1
rc=$?
set -e
log "qemu exited with $rc after $(($(date +%s) - t0)) s"
tr -d '\r' <"$W/console.log" | grep -E '^VPI-' || true
grep -q 'VPI-TEST DONE' "$W/console.log" || die "the guest did not finish; see $W/console.log"
if grep -q 'VPI-TEST FAIL' "$W/console.log"; then die "FAILED: $(grep -c 'VPI-TEST FAIL' "$W/console.log") check(s)"; fi
log "OK: $(grep -c 'VPI-TEST PASS' "$W/console.log") checks passed"
