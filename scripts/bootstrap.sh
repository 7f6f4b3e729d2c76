#!/usr/bin/env bash
# Installs the Debian packages the build needs (C libraries behind the
# system-library targets, and the tools the tests and benchmarks use).
# Safe to run again: apt skips what is already there.
set -euo pipefail

packages=(
  pkg-config
  libcurl4-openssl-dev   # HTTP/TLS to the node (CCurl)
  libgpiod-dev           # status LED (CGPIOD)
  libi2c-dev             # I²C SMBus helpers (CI2C)
  libasound2-dev         # audio capture (CALSA)
  libv4l-dev             # camera capture (CV4L2)
  libx264-dev            # software H.264 (CX264)
  libmicrohttpd-dev      # the development node (CMicroHTTPD)
  libmosquitto-dev       # observations over MQTT (CMosquitto)
  libssl-dev             # the MQTT broker's key pin (COpenSSL; libcurl4-openssl-dev pulls it in too)
  mosquitto              # the broker the MQTT tests run against on 127.0.0.1
  valgrind               # scripts/bench-allocs.sh
  openssl                # self-signed certificates for the TLS tests
  curl                   # the development node's HTTPS tests
  python3                # throwaway HTTP servers in the libcurl transport tests
  python3-jsonschema     # scripts/validate-swe.py: our schemas against the OGC SWE Common 3 JSON schemas
  ffmpeg                 # ffprobe/ffmpeg check the H.264 the video tests encode
  alsa-utils             # aplay -L in probe tests; arecord for checking the file plugin by hand
  shellcheck             # DeployTests lint deploy/ and toolchain/ scripts
  systemd                # systemd-analyze security/verify of deploy/osh-edge.service (DaemonTests, CI)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
