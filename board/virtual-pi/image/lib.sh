# lib.sh: shared by the virtual Pi's scripts (sourced, not run).
# shellcheck shell=bash
# shellcheck disable=SC2034  # REPO, VPI_CACHE, MIRROR, SECURITY_MIRROR: for the scripts that source this

VPI_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(cd -- "$VPI_DIR/../.." && pwd)
# Everything big lives here, kept across runs and CI runs (like the Swift 6.0.3 builder).
VPI_CACHE=${VPI_CACHE:-/var/cache/osh-edge/virtual-pi}

vlog() { printf '[vpi] %s\n' "$*" >&2; }
vdie() { vlog "error: $*"; exit "${2:-1}"; }

# The host's Debian mirror and security mirror (deb822 or one-line sources), unless
# OSH_DEBIAN_MIRROR / OSH_DEBIAN_SECURITY_MIRROR say otherwise.
debian_mirrors() {
  local all
  all=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '$1 == "deb" { print $2 } $1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }' || true)
  MIRROR=${OSH_DEBIAN_MIRROR:-$(grep -v -- '-security' <<<"$all" | head -1)}
  SECURITY_MIRROR=${OSH_DEBIAN_SECURITY_MIRROR:-$(grep -- '-security' <<<"$all" | head -1)}
  [[ -n $MIRROR ]] || vdie "no Debian mirror in the host's apt sources; set OSH_DEBIAN_MIRROR" 2
}

# hash_of FILE|DIR…: a short content hash (names and bytes), the cache key of a stage.
hash_of() {
  local p
  for p in "$@"; do
    if [[ -d $p ]]; then
      (cd -- "$p" && find . -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    elif [[ -e $p ]]; then
      sha256sum -- "$p" | sed "s#  .*/#  #"
    else
      printf '%s\n' "$p"
    fi
  done | sha256sum | cut -c1-16
}

require_host_tools() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  vlog "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
      --no-install-recommends "${missing[@]}" >/dev/null ||
    vdie "apt-get install ${missing[*]} failed (is the Debian mirror reachable?)" 2
}

# mmdebstrap of a foreign architecture runs the arm64 maintainer scripts through qemu-user.
ensure_binfmt() {
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    vdie "cannot mount binfmt_misc (needed to run arm64 programs in the image chroot)" 2
  [[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] || update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
  arch-test arm64 >/dev/null 2>&1 || vdie "this host cannot run arm64 binaries through binfmt (qemu-user-static, binfmt-support)" 2
}

# find_or_build_deb RELEASE: prints the arm64 package to install: the newest one ci-aarch64.sh
# left (trixie), else cross-built for RELEASE (toolchain/cross-build.sh, several minutes) and
# packaged (deploy/build-deb.sh). Used by `vpi build` and board/image/build-image.sh.
find_or_build_deb() {
  local rel=$1 newest bin libs
  newest=$(ls -t "$REPO"/.build/ci-aarch64/deb/osh-edge_*_arm64.deb 2>/dev/null | head -1 || true)
  if [[ $rel == trixie && -n $newest ]]; then printf '%s\n' "$newest"; return; fi
  vlog "no package given: cross-building osh-edge for $rel (toolchain/cross-build.sh, several minutes)"
  bin=$REPO/.build/cross/$rel/osh-edge
  "$REPO/toolchain/cross-build.sh" "$rel" --dev --out "$bin" >&2 || vdie "cross-build.sh $rel failed"
  libs=/var/cache/osh-edge/swift60-trixie/var/cache/osh-edge-sdk-apt/$rel/cache/archives
  "$REPO/deploy/build-deb.sh" arm64 "$bin" --out "$REPO/.build/vpi/deb-$rel" --libs-from "$libs" | tail -1
}

# apt_install_deb ROOT DEB LOG: `apt install ./DEB` inside ROOT, as a Pi owner would (its
# dependencies come from ROOT's apt, its maintainer scripts run through qemu-user). The caller
# has mounted /proc and /dev in ROOT. Used by assemble.sh and board/image/build-image.sh.
apt_install_deb() {
  local root=$1 deb=$2 log=$3 name
  name=$(basename "$deb")
  install -m 0644 "$deb" "$root/tmp/"
  vlog "apt install ./$name"
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    apt-get install -y --no-install-recommends "./tmp/$name" >"$log" 2>&1 ||
    { tail -30 "$log"; vdie "apt install of the package failed in the image (log above)"; }
  rm -f "$root/tmp/$name"
}
