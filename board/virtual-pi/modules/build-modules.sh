#!/usr/bin/env bash
# build-modules.sh: build the stand-in drivers that Debian's arm64 kernel lacks (trixie's 6.12 or
# bookworm's 6.1), as out-of-tree modules for one exact kernel, and install them into an arm64
# root filesystem. Runs on an x86-64 Debian host as root.
#
#   i2c-stub       stock SMBus chip emulator (drivers/i2c/i2c-stub.c)
#   i2c-stub-rdwr  i2c-stub plus plain I2C transfers (I2C_RDWR): i2c-stub-rdwr.patch (on 6.1 also
#                  i2c-stub-rdwr-6.1.patch: its struct i2c_algorithm calls the hook master_xfer)
#   gpio-sim       configfs GPIO simulator, with kernel/irq/irq_sim.c built in: irq_sim-in-module.patch
#   vicodec        V4L2 mem2mem FWHT codec
#   vimc           virtual media-controller camera (sensor, debayer, scaler), for libcamera
# (vivid and snd-aloop are in Debian's kernel already.)
#
# Usage:
#   build-modules.sh --into ROOTFS [--release RELEASE] [--kver KVER] [--pkg-version VERSION]
#       Build for the kernel installed in ROOTFS, install the modules into
#       ROOTFS/lib/modules/KVER/updates/vpi/ and run `depmod -b ROOTFS KVER`.
#       KVER (e.g. 6.12.118+deb13-arm64, 6.1.0-41-arm64) defaults to ROOTFS's only
#       lib/modules/* directory; VERSION (e.g. 6.12.118-1) to dpkg's record of linux-image-KVER in
#       ROOTFS, else to the newest linux-headers-KVER in the archive. The headers must be that
#       exact version. RELEASE (trixie or bookworm) defaults to the one KVER's name belongs to
#       (+deb13: trixie, 6.1.0-N: bookworm), else to ROOTFS's os-release VERSION_CODENAME.
#   build-modules.sh --print-kver [--release RELEASE]
#       Print the KVER that RELEASE's (default trixie) linux-image-arm64 installs now (suites
#       RELEASE, RELEASE-updates, RELEASE-security; the package version goes to stderr) and exit.
#
# Environment:
#   OSH_VPI_MODULES_CACHE  this script's own cache (default /var/cache/osh-edge/virtual-pi/modules;
#                       nothing outside it is written, except ROOTFS)
#   OSH_DEBIAN_MIRROR   Debian mirror (default: the host's, from its apt sources)
#   OSH_DEBIAN_SECURITY_MIRROR  (default: the host's security mirror)
#
# How: the modules are built with the release's own toolchain (trixie: gcc-14, and its kbuild
# tools need glibc >= 2.38; bookworm: gcc-12), in a small amd64 chroot of that release
# ($CACHE/builder for trixie, $CACHE/builder-bookworm: debootstrap minbase, aarch64 cross gcc,
# make, kmod, for trixie pahole; ~0.6 GB each, made once in about a minute). They are kept
# apart from toolchain/'s Swift chroot so neither changes the other or waits on its lock.
# Downloads use a private apt configuration per release ($CACHE/apt, $CACHE/apt-bookworm); the
# host's apt sources are not touched. Cached per version: the headers (unpacked into the
# builder), the few source files taken from linux-source-6.12 or -6.1 ($CACHE/src/VERSION) and
# the built modules ($CACHE/out/KVER).
# Measured on 2 busy cores (trixie): first run ~2 min (debootstrap ~1 min, linux-source extract
# ~20 s, build ~15 s, depmod ~6 s); a new rootfs with everything cached ~7 s (depmod); the same
# rootfs again <1 s. Bookworm: first run ~80 s (debootstrap ~52 s, extract ~15 s, build ~7 s),
# a new rootfs ~1 s. selftest.sh boots the kernel with these modules and checks them.
set -euo pipefail

# shellcheck disable=SC2034  # read by log() in lib-chroot.sh
LOG_TAG=vpi-modules
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# log/die, require_root/require_space, the mount stack (MOUNTS, mount_builder_fs,
# unmount_all), in_builder and lock_builder; ROOT is set to our own chroot below.
# shellcheck source=SCRIPTDIR/../../../toolchain/lib-chroot.sh
source "$HERE/../../../toolchain/lib-chroot.sh"

CACHE=$(realpath -m -- "${OSH_VPI_MODULES_CACHE:-/var/cache/osh-edge/virtual-pi/modules}")
# shellcheck source=board/virtual-pi/image/lib.sh
source "$HERE/../image/lib.sh"
debian_mirrors   # MIRROR, SECURITY_MIRROR
MODULES=(i2c-stub i2c-stub-rdwr gpio-sim vicodec vimc)

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit "${1:-0}"; }

INTO='' KVER='' VERSION='' PRINT_KVER='' RELEASE=''
while (($#)); do
  case $1 in
    --into) INTO=${2:?--into needs a directory}; shift 2 ;;
    --release) RELEASE=${2:?--release needs bookworm or trixie}; shift 2 ;;
    --kver) KVER=${2:?--kver needs a value}; shift 2 ;;
    --pkg-version) VERSION=${2:?--pkg-version needs a value}; shift 2 ;;
    --print-kver) PRINT_KVER=1; shift ;;
    -h | --help) usage 0 ;;
    *) log "unknown argument: $1"; usage 2 >&2 ;;
  esac
done
[[ -n $PRINT_KVER || -n $INTO ]] || { log "give --into ROOTFS or --print-kver"; usage 2 >&2; }
case $RELEASE in
  '' | bookworm | trixie) ;;
  *) die "--release $RELEASE: only bookworm and trixie are served" ;;
esac
require_root "$@"

# --- which kernel and which release: from the root filesystem -----------------------------------
# The release a Debian arm64 kernel's name belongs to (nothing for other names).
release_of_kver() {
  case $1 in
    *+deb13-arm64) echo trixie ;;     # 6.12.118+deb13-arm64
    6.1.0-*-arm64) echo bookworm ;;   # 6.1.0-41-arm64
  esac
}
if [[ -n $INTO ]]; then
  [[ -d $INTO ]] || die "--into $INTO: no such directory"
  INTO=$(realpath -e -- "$INTO")
  [[ $INTO != / ]] || die "--into / would install into the host; give the arm64 root filesystem"
  if [[ -z $KVER ]]; then
    kvers=()
    for d in "$INTO"/lib/modules/*/kernel; do [[ -d $d ]] && kvers+=("$(basename "$(dirname "$d")")"); done
    ((${#kvers[@]} == 1)) ||
      die "found ${#kvers[@]} kernels in $INTO/lib/modules (${kvers[*]:-none}); give --kver"
    KVER=${kvers[0]}
  fi
  [[ $KVER == *-arm64 ]] ||
    die "kernel $KVER is not a Debian arm64 kernel (expected e.g. 6.12.118+deb13-arm64 or 6.1.0-41-arm64)"
  [[ -d $INTO/lib/modules/$KVER/kernel ]] ||
    die "$INTO/lib/modules/$KVER/kernel is missing: install linux-image-$KVER in the rootfs first"
  kver_release=$(release_of_kver "$KVER")
  # os-release read inside ROOTFS (etc/os-release is a symlink that may be absolute).
  os_release=''
  for f in "$INTO/usr/lib/os-release" "$INTO/etc/os-release"; do
    [[ -f $f && ! -L $f ]] || continue
    os_release=$(sed -n 's/^VERSION_CODENAME=["'\'']\{0,1\}\([a-z]*\).*/\1/p' "$f"); break
  done
  if [[ -n $RELEASE ]]; then
    [[ -z $kver_release || $kver_release == "$RELEASE" ]] ||
      die "--release $RELEASE, but kernel $KVER is $kver_release's"
  elif [[ -n $kver_release ]]; then
    RELEASE=$kver_release
  elif [[ $os_release == bookworm || $os_release == trixie ]]; then
    RELEASE=$os_release
  else
    die "cannot tell the release of kernel $KVER (os-release: ${os_release:-none}); give --release bookworm|trixie"
  fi
  [[ -z $os_release || $os_release == "$RELEASE" ]] ||
    log "note: $INTO is $os_release, its kernel $KVER is $RELEASE's: building for $RELEASE"
fi
RELEASE=${RELEASE:-trixie}   # --print-kver alone: trixie, as before there was a choice

# Per release: the builder chroot and the private apt (trixie, the first release served, keeps
# the unsuffixed names), the cross compiler the kernel was built with, the builder's packages.
case $RELEASE in
  trixie)   # the headers set CROSS_COMPILE themselves; they ship vmlinux, so pahole adds BTF
    SUFFIX='' GCC=gcc-14 MAKE_VARS=()
    BUILDER_PACKAGES=(make gcc-aarch64-linux-gnu libc6-dev-arm64-cross pahole kmod
      libelf1t64 libssl3t64 zlib1g) ;;
  bookworm)   # the headers set CROSS_COMPILE only under dpkg-buildpackage: give it; they ship
              # no vmlinux, so there is no module BTF and no pahole
    SUFFIX=-bookworm GCC=gcc-12 MAKE_VARS=(CROSS_COMPILE=aarch64-linux-gnu-)
    BUILDER_PACKAGES=(make gcc-aarch64-linux-gnu libc6-dev-arm64-cross kmod libelf1 libssl3 zlib1g) ;;
esac
ROOT=$CACHE/builder$SUFFIX
APTDIR=$CACHE/apt$SUFFIX

# --- private apt: RELEASE, amd64 + arm64 indexes under $APTDIR -------------------------------
APT_STAMP=$APTDIR/.osh-updated
apt_setup() {
  mkdir -p "$APTDIR"/{lists/partial,archives/partial,cache,etc/apt.conf.d,etc/preferences.d}
  touch "$APTDIR/status"
  printf '%s\n' "deb $MIRROR $RELEASE main" "deb $MIRROR $RELEASE-updates main" \
    "deb $SECURITY_MIRROR $RELEASE-security main" >"$APTDIR/etc/sources.list.new"
  if ! cmp -s "$APTDIR/etc/sources.list.new" "$APTDIR/etc/sources.list"; then
    mv "$APTDIR/etc/sources.list.new" "$APTDIR/etc/sources.list"
    rm -f "$APT_STAMP"
  else
    rm -f "$APTDIR/etc/sources.list.new"
  fi
  # The host's debian-archive-keyring (bookworm) holds trixie's archive keys too.
  cat >"$APTDIR/apt.conf" <<EOF
Dir::Etc "$APTDIR/etc";
Dir::Etc::TrustedParts "/usr/share/keyrings";
Dir::State "$APTDIR";
Dir::State::Lists "$APTDIR/lists";
Dir::State::status "$APTDIR/status";
Dir::Cache "$APTDIR/cache";
Dir::Cache::archives "$APTDIR/archives";
APT::Architecture "amd64";
APT::Architectures { "amd64"; "arm64"; };
APT::Sandbox::User "root";
EOF
  export APT_CONFIG=$APTDIR/apt.conf
}

# apt_update [MAX_AGE_MINUTES]: refresh the indexes when they are missing or older than that.
apt_update() {
  if [[ -f $APT_STAMP ]] && { (($# == 0)) || [[ -n $(find "$APT_STAMP" -mmin -"$1") ]]; }; then
    return 0
  fi
  log "apt-get update (private $RELEASE indexes in $APTDIR)"
  apt-get update -q >"$APTDIR/update.log" 2>&1 ||
    { cat "$APTDIR/update.log" >&2; die "apt-get update failed (mirror $MIRROR)"; }
  touch "$APT_STAMP"
}

# Versions of a package in the indexes, one a line.
apt_versions() { { apt-cache show "$1" 2>/dev/null || true; } | awk '$1 == "Version:" { print $2 }'; }

# apt_download PKG[:ARCH] VERSION ARCH: fetch a .deb into $APTDIR/archives (once); print its path.
apt_download() {
  local pkg=$1 ver=$2 arch=$3 deb
  deb=$APTDIR/archives/${pkg%:*}_${ver//:/%3a}_$arch.deb
  if [[ ! -s $deb ]]; then
    (cd "$APTDIR/archives" && apt-get download -q "$pkg=$ver" >&2) ||
      die "could not download $pkg=$ver"
  fi
  printf '%s\n' "$deb"
}

lock_builder   # one run at a time: apt, the chroot and the caches are shared
apt_setup

if [[ -n $PRINT_KVER ]]; then
  apt_update 15
  meta_ver=$(apt-cache policy linux-image-arm64:arm64 | awk '$1 == "Candidate:" { print $2 }')
  [[ -n $meta_ver && $meta_ver != '(none)' ]] || die "linux-image-arm64:arm64 not found in $RELEASE"
  # Depends: linux-image-6.12.118+deb13-arm64 (= 6.12.118-1)   (bookworm: linux-image-6.1.0-41-arm64)
  read -r kver kver_ver < <(apt-cache show "linux-image-arm64:arm64=$meta_ver" |
    sed -n 's/^Depends:.*linux-image-\([^ ,]*-arm64\) (= \([^)]*\)).*/\1 \2/p' | head -n1) || true
  [[ -n ${kver:-} ]] || die "could not read the kernel of linux-image-arm64 $meta_ver"
  log "linux-image-arm64 $meta_ver -> linux-image-$kver $kver_ver"
  printf '%s\n' "$kver"
  exit 0
fi

# --- the kernel package version: from the root filesystem ----------------------------------------
if [[ -z $VERSION && -f $INTO/var/lib/dpkg/status ]]; then
  for p in "linux-image-$KVER" "linux-image-$KVER-unsigned"; do
    VERSION=$(dpkg-query --admindir="$INTO/var/lib/dpkg" -W -f='${db:Status-Abbrev} ${Version}' "$p" 2>/dev/null |
      awk '$1 == "ii" { print $2 }') || true
    [[ -z $VERSION ]] || break
  done
fi

HDR=linux-headers-$KVER                       # arm64
COMMON=linux-headers-${KVER%-arm64}-common     # all
SERIES=$(printf '%s\n' "$KVER" | grep -oE '^[0-9]+\.[0-9]+')
SOURCE=linux-source-$SERIES                    # all
# amd64 (the build host's tools): trixie names the package after the ABI, bookworm after the series
case $RELEASE in
  trixie) KBUILD=linux-kbuild-${KVER%-arm64} ;;   # linux-kbuild-6.12.118+deb13
  bookworm) KBUILD=linux-kbuild-$SERIES ;;        # linux-kbuild-6.1
esac

apt_update
if [[ -z $VERSION ]]; then
  VERSION=$(apt_versions "$HDR:arm64" | sort -V | tail -n1)
  [[ -n $VERSION ]] || { rm -f "$APT_STAMP"; apt_update; VERSION=$(apt_versions "$HDR:arm64" | sort -V | tail -n1); }
  [[ -n $VERSION ]] || die "$HDR is not in $RELEASE's indexes (too old, or not a $RELEASE kernel?)"
  log "no dpkg record of linux-image-$KVER in $INTO; using the archive's $VERSION"
fi
if ! apt_versions "$HDR:arm64" | grep -qxF -- "$VERSION"; then
  rm -f "$APT_STAMP"; apt_update
  apt_versions "$HDR:arm64" | grep -qxF -- "$VERSION" ||
    die "$HDR $VERSION is not in $RELEASE's indexes (have: $(apt_versions "$HDR:arm64" | tr '\n' ' '))"
fi
log "kernel $KVER ($RELEASE), package version $VERSION"

# --- the builder chroot ----------------------------------------------------------------------
trap unmount_all EXIT
trap 'exit 130' INT TERM

ensure_builder_chroot() {
  local want stamp_base=$ROOT/.osh-vpi-debootstrap-done ready=$ROOT/.osh-vpi-ready partial=$ROOT/.osh-vpi-partial
  want=$(printf '%s\n' "${BUILDER_PACKAGES[@]}")
  [[ -f $ready && "$(cat "$ready")" == "$want" ]] && return 0
  if [[ ! -f $stamp_base ]]; then
    if [[ -d $ROOT && -n "$(ls -A -- "$ROOT")" ]]; then
      [[ -f $partial ]] || die "$ROOT exists, is not empty and was not made by this script"
      findmnt -rn -o TARGET | grep -qF -- "$ROOT/" && die "something is mounted below $ROOT"
      log "removing incomplete builder chroot $ROOT"
      rm -rf --one-file-system -- "$ROOT"
    fi
    require_space "$CACHE" 2
    mkdir -p "$ROOT"; touch "$partial"
    command -v debootstrap >/dev/null || apt-get install -y --no-install-recommends debootstrap ||
      die "debootstrap is missing and could not be installed"
    log "debootstrap $RELEASE amd64 minbase + cross $GCC into $ROOT (about a minute)"
    nice -n 10 debootstrap --variant=minbase --arch=amd64 \
      --include="$(IFS=,; echo "${BUILDER_PACKAGES[*]}")" "$RELEASE" "$ROOT" "$MIRROR" \
      >"$CACHE/debootstrap$SUFFIX.log" 2>&1 ||
      { tail -n 20 "$CACHE/debootstrap$SUFFIX.log" >&2; die "debootstrap failed; log: $CACHE/debootstrap$SUFFIX.log"; }
    touch "$stamp_base"
  else   # the package list changed: add what is missing
    printf 'deb %s %s main\n' "$MIRROR" "$RELEASE" >"$ROOT/etc/apt/sources.list"
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
    mount_builder_fs
    if ! in_builder apt-get update -q ||
      ! in_builder apt-get install -y -q --no-install-recommends "${BUILDER_PACKAGES[@]}"; then
      die "could not install ${BUILDER_PACKAGES[*]} in $ROOT"
    fi
    in_builder apt-get clean
    unmount_all
  fi
  printf '%s\n' "$want" >"$ready"
  rm -f "$partial"
}
ensure_builder_chroot

# --- headers + kbuild, unpacked (not installed) into the builder at their usual paths ---------
# (bookworm's one linux-kbuild-6.1 serves every 6.1.0-N: it carries its own stamp)
HDR_STAMP=$ROOT/usr/src/$HDR/.osh-vpi-unpacked
KBUILD_STAMP=$ROOT/usr/lib/$KBUILD/.osh-vpi-unpacked
if [[ "$(cat "$HDR_STAMP" 2>/dev/null)" != "$VERSION" || "$(cat "$KBUILD_STAMP" 2>/dev/null)" != "$VERSION" ]]; then
  log "unpacking $HDR, $COMMON and $KBUILD $VERSION into the builder"
  kbuild_ver=$(apt_versions "$KBUILD:amd64" | grep -xF -- "$VERSION") ||
    die "$KBUILD $VERSION (amd64) is not in the indexes"
  for deb in "$(apt_download "$HDR:arm64" "$VERSION" arm64)" "$(apt_download "$COMMON" "$VERSION" all)" \
    "$(apt_download "$KBUILD:amd64" "$kbuild_ver" amd64)"; do
    # bookworm's headers carry /lib/modules/KVER/build: keep the builder's lib -> usr/lib
    # symlink (dpkg-deb -x would replace it with a directory and lose the dynamic loader).
    dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$ROOT" ||
      die "could not unpack $deb"
  done
  grep -q '^CONFIG_MODULES=y' "$ROOT/usr/src/$HDR/.config" || die "$HDR: no .config after unpacking"
  printf '%s\n' "$VERSION" >"$HDR_STAMP"
  printf '%s\n' "$VERSION" >"$KBUILD_STAMP"
fi

# --- the sources: a few files from linux-source-SERIES VERSION --------------------------------
SRC=$CACHE/src/$VERSION
SRC_FILES=(drivers/i2c/i2c-stub.c drivers/gpio/gpio-sim.c kernel/irq/irq_sim.c
  'drivers/media/test-drivers/vicodec/*.[ch]' 'drivers/media/test-drivers/vimc/*.[ch]')
# 6.1's gpio-sim looks into gpiolib's private struct gpio_desc (its flags): it includes "gpiolib.h"
[[ $SERIES != 6.1 ]] || SRC_FILES+=(drivers/gpio/gpiolib.h)
# The stamp holds the list extracted: a list that grew extracts again.
if [[ "$(cat "$SRC/.osh-vpi-done" 2>/dev/null)" != "${SRC_FILES[*]}" ]]; then
  deb=$(apt_download "$SOURCE" "$VERSION" all)
  log "extracting ${#SRC_FILES[@]} source paths from $(basename "$deb") (about 20 s)"
  rm -rf --one-file-system -- "$SRC.tmp"; mkdir -p "$SRC.tmp"
  dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$SOURCE.tar.xz" | nice -n 10 xz -dc |
    tar -x -C "$SRC.tmp" --strip-components=1 --wildcards "${SRC_FILES[@]/#/$SOURCE/}" ||
    die "could not extract ${SRC_FILES[*]} from $deb"
  printf '%s\n' "${SRC_FILES[*]}" >"$SRC.tmp/.osh-vpi-done"
  rm -rf --one-file-system -- "$SRC"; mv -- "$SRC.tmp" "$SRC"
  rm -f -- "$deb"   # 150 MB for these few files: keep only the files
fi

# --- build (skipped when the same inputs were built before) ------------------------------------
OUT=$CACHE/out/$KVER
# i2c-stub-rdwr: our patch, then the series' own small one where there is one (6.1's struct
# i2c_algorithm names the plain-I2C hook master_xfer, 6.12's xfer).
RDWR_PATCHES=("$HERE/i2c-stub-rdwr.patch")
[[ ! -f $HERE/i2c-stub-rdwr-$SERIES.patch ]] || RDWR_PATCHES+=("$HERE/i2c-stub-rdwr-$SERIES.patch")
INPUTS=$( {
  printf '%s\n' "$KVER" "$VERSION"
  cat "$HERE/Kbuild" "${RDWR_PATCHES[@]}" "$HERE/irq_sim-in-module.patch" "${BASH_SOURCE[0]}"
} | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$OUT/.osh-vpi-inputs" 2>/dev/null)" != "$INPUTS" ]]; then
  BLD=/build/$KVER   # inside the builder
  B=$ROOT$BLD
  rm -rf --one-file-system -- "$B"; mkdir -p "$B"
  cp "$HERE/Kbuild" "$B/Kbuild"
  cp "$SRC/drivers/i2c/i2c-stub.c" "$B/"
  cp "$SRC/drivers/i2c/i2c-stub.c" "$B/i2c-stub-rdwr.c"
  for p in "${RDWR_PATCHES[@]}"; do
    patch -s --fuzz=0 "$B/i2c-stub-rdwr.c" <"$p" ||
      die "$(basename "$p") does not apply to $VERSION's drivers/i2c/i2c-stub.c"
  done
  cp "$SRC/drivers/gpio/gpio-sim.c" "$B/gpio-sim-main.c"
  [[ ! -f $SRC/drivers/gpio/gpiolib.h ]] || cp "$SRC/drivers/gpio/gpiolib.h" "$B/"
  patch -s --fuzz=0 -o "$B/irq_sim.c" "$SRC/kernel/irq/irq_sim.c" <"$HERE/irq_sim-in-module.patch" ||
    die "irq_sim-in-module.patch does not apply to $VERSION's kernel/irq/irq_sim.c"
  cp "$SRC"/drivers/media/test-drivers/vicodec/*.[ch] "$SRC"/drivers/media/test-drivers/vimc/*.[ch] "$B/"

  log "building ${MODULES[*]} (aarch64-linux-gnu-$GCC, $HDR)"
  mount_builder_fs
  in_builder nice -n 10 make -C "/usr/src/$HDR" M="$BLD" "${MAKE_VARS[@]}" -j"$(nproc)" modules >"$B/build.log" 2>&1 ||
    { tail -n 30 "$B/build.log" >&2; die "module build failed; log: $B/build.log"; }
  # modpost only warns about symbols the kernel does not export: such a module would not load.
  if grep -E 'WARNING: modpost: .*undefined' "$B/build.log" >&2; then
    die "unresolved symbols (above); log: $B/build.log"
  fi
  rm -rf --one-file-system -- "$OUT.tmp"; mkdir -p "$OUT.tmp"
  for m in "${MODULES[@]}"; do
    [[ -f $B/$m.ko ]] || die "$m.ko was not built; log: $B/build.log"
    magic=$(modinfo -F vermagic "$B/$m.ko")
    [[ $magic == "$KVER "* ]] || die "$m.ko has vermagic '$magic', expected $KVER"
    in_builder aarch64-linux-gnu-strip --strip-debug -o "$BLD/$m.stripped.ko" "$BLD/$m.ko"
    mv -- "$B/$m.stripped.ko" "$OUT.tmp/$m.ko"
  done
  unmount_all
  printf '%s\n' "$INPUTS" >"$OUT.tmp/.osh-vpi-inputs"
  rm -rf --one-file-system -- "$OUT"; mv -- "$OUT.tmp" "$OUT"
  log "built into $OUT: ${MODULES[*]}"
else
  log "modules for $KVER already built ($OUT)"
fi

# --- install + depmod --------------------------------------------------------------------------
DEST=$INTO/lib/modules/$KVER/updates/vpi
DEP=$INTO/lib/modules/$KVER/modules.dep
installed() {   # the same files are in place and modules.dep (newer than them) lists them
  local m
  [[ -f $DEP ]] || return 1
  for m in "${MODULES[@]}"; do
    cmp -s "$OUT/$m.ko" "$DEST/$m.ko" && [[ $DEP -nt $DEST/$m.ko ]] &&
      grep -q "^updates/vpi/$m.ko:" "$DEP" || return 1
  done
  [[ $(find "$DEST" -maxdepth 1 -name '*.ko' | wc -l) -eq ${#MODULES[@]} ]]
}
if installed; then
  log "already installed in $DEST (modules.dep up to date)"
  exit 0
fi
mkdir -p "$DEST"
rm -f -- "$DEST"/*.ko
for m in "${MODULES[@]}"; do install -m 0644 "$OUT/$m.ko" "$DEST/$m.ko"; done
# depmod from the builder (the release's kmod), on the root filesystem bound read-write at
# /mnt/rootfs. It reads every module of the kernel: a few seconds.
mount_builder_fs
mkdir -p "$ROOT/mnt/rootfs"
mount --bind "$INTO" "$ROOT/mnt/rootfs" && MOUNTS+=("$ROOT/mnt/rootfs")
in_builder depmod -b /mnt/rootfs "$KVER" || die "depmod -b $INTO $KVER failed"
unmount_all
installed || die "depmod did not list the modules in $DEP"
log "installed into $DEST: ${MODULES[*]}"
