#!/bin/bash
# vpi-board.sh: runs at boot, before osh-edge.service, and makes the QEMU "virt" machine look
# like a Raspberry Pi with its sensors attached, using the kernel's own stand-in drivers:
#   I²C   i2c-stub-rdwr (i2c-stub + plain I2C transfers) with a BMP280 at 0x76, an MPU-9250 at
#         0x68 and its AK8963 at 0x0C, an SHT4x at 0x44 (hidden at first boot: the late chip),
#         their registers loaded from the run's inputs;
#   GPIO  a decoy gpio-sim chip, then a bank labelled like the Pi 4's header chip, line 17 named LED;
#   video the camera: vivid as /dev/video0 (a plain V4L2 camera), or with CAMERA=vimc in the
#         run's scenario.env vimc (a camera sensor behind a media controller, which the agent
#         reaches through libcamera, with [camera] device = "auto"); then vicodec (a mem2mem
#         codec that is not H.264);
#   audio snd-aloop, with the run's WAV played into its playback side;
#   GPS   QEMU's usb-serial (an FTDI adapter, ftdi_sio) as /dev/ttyUSB0, fed from the host.
# The host's inputs and the results share one 9p folder, mounted at /vpi.
set -u
log() { echo "vpi-board: $*"; }
fail() { log "FAILED: $*"; echo "$*" >>/vpi/out/board-failures.txt; }

mkdir -p /vpi
mountpoint -q /vpi || mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vpi /vpi || { log "no 9p share"; exit 1; }
mkdir -p /vpi/out
IN=/vpi/in

# --- I²C: one stub adapter, four chips (i2c-stub answers only at the addresses it is given)
modprobe i2c-dev
modprobe i2c-stub-rdwr chip_addr=0x0c,0x44,0x68,0x76 || fail "modprobe i2c-stub-rdwr"
BUS=$(for a in /sys/bus/i2c/devices/i2c-*; do grep -q 'SMBus stub' "$a/name" 2>/dev/null && basename "$a" | cut -d- -f2; done | head -1)
if [[ -n $BUS ]]; then
  /opt/vpi/i2c-load.sh "$BUS" "$IN/i2c-load.txt" || fail "loading the chips' registers on i2c-$BUS"
  echo "$BUS" >/run/vpi-i2c-bus
  log "i2c-$BUS: BMP280 0x76, MPU-9250 0x68, AK8963 0x0c, SHT4x 0x44 loaded"
  # The late chip: on the first boot the SHT4x does not answer (NACK) until vpi-scenario.sh
  # lets it, 20 s after the agent started. The scenario counts boots in /var/lib/vpi-boot.
  if [[ ! -e /var/lib/vpi-boot ]]; then
    echo 0x44 >/sys/module/i2c_stub_rdwr/parameters/absent_addr || fail "hiding the SHT4x (absent_addr)"
    log "i2c-$BUS: SHT4x 0x44 hidden until the scenario lets it answer"
  fi
else
  fail "no i2c-stub adapter"
fi

# --- GPIO: a bank that carries the Pi 4 header chip's label, 28 lines, line 17 = the LED
modprobe gpio-sim || fail "modprobe gpio-sim"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
# First a decoy (an I/O expander's chip) so the header chip is not gpiochip0: [led] chip =
# "auto" must find the header chip by its label, as on a Pi 5 whose RP1 was gpiochip4.
D=/sys/kernel/config/gpio-sim/decoy
if [[ ! -d $D ]]; then
  mkdir -p "$D/bank0" && echo 8 >"$D/bank0/num_lines" && echo mcp23008 >"$D/bank0/label" && echo 1 >"$D/live" ||
    fail "gpio-sim decoy bank"
fi
G=/sys/kernel/config/gpio-sim/vpi
if [[ ! -d $G ]]; then
  mkdir -p "$G/bank0" && echo 28 >"$G/bank0/num_lines" && echo pinctrl-bcm2711 >"$G/bank0/label" &&
    mkdir -p "$G/bank0/line17" && echo LED >"$G/bank0/line17/name" && echo 1 >"$G/live" ||
    fail "gpio-sim bank"
fi
CHIP=$(cat "$G/bank0/chip_name" 2>/dev/null)
DEV=$(cat "$G/dev_name" 2>/dev/null)
echo "/sys/devices/platform/$DEV/$CHIP/sim_gpio17/value" >/run/vpi-led-value
log "gpio-sim: $CHIP (label pinctrl-bcm2711), LED on line 17; decoy $(cat "$D/bank0/chip_name" 2>/dev/null) (mcp23008)"

# --- Video: the camera first, so that it is /dev/video0; then vicodec
CAMERA=$(sed -n 's/^CAMERA=//p' "$IN/scenario.env" 2>/dev/null)
if [[ $CAMERA == vimc ]]; then
  # Sensor B → debayer → scaler → RGB/YUV capture: libcamera's vimc pipeline (and its IPA).
  modprobe vimc || fail "modprobe vimc"
  sed -i 's|^device = "/dev/video0".*|device = "auto"               # vimc, found through libcamera (vpi test --camera vimc)|' \
    /etc/osh-edge/osh-edge.conf
else
  modprobe vivid n_devs=1 node_types=0x1 input_types=0x0 || fail "modprobe vivid"
fi
udevadm settle -t 10
modprobe vicodec || fail "modprobe vicodec"

# --- Audio: the loopback card; vpi-audio.service plays the input into hw:Loopback,0,0
modprobe snd-aloop || fail "modprobe snd-aloop"

# --- GPS: the USB serial adapter appears through udev; raw, no echo (QEMU's serial backend
# stalls the guest if what it writes back is not read, and the host drains it anyway)
udevadm settle -t 10
for _ in $(seq 50); do [[ -e /dev/ttyUSB0 ]] && break; sleep 0.2; done
[[ -e /dev/ttyUSB0 ]] && stty -F /dev/ttyUSB0 raw -echo clocal 9600 || fail "/dev/ttyUSB0 missing"

udevadm settle -t 10
ls -l /dev/i2c-* /dev/gpiochip* /dev/video* /dev/media* /dev/snd/ /dev/ttyUSB* >/vpi/out/devices.txt 2>&1
log "ready"
