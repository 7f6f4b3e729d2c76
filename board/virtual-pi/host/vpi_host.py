#!/usr/bin/env python3
"""The host side of `vpi test`: prepares the run's inputs, boots the virtual Pi under QEMU
(twice: the second boot is the power cycle), feeds the GPS, answers the guest's requests on
the QEMU monitor, then checks what the guest wrote back (board/virtual-pi/guest/vpi-scenario.sh)
against what the inputs mean, prints a table and writes the JSON summary.

Python 3 standard library only; sox, gpsdecode and ffprobe from Debian compute the expected
values independently of osh-edge."""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (the comparisons, kept apart from the QEMU plumbing)

HERE = os.path.dirname(os.path.abspath(__file__))
VPI = os.path.dirname(HERE)

# Scenario timing (guest seconds). The measurement window is the 60 s.
# NODE_DOWN_S: boot 2 starts with the node down this long (past systemd's 90 s start timeout,
# which a board that waited for its node before READY=1 used to hit); --node-down-at-boot.
SCENARIO = {"MEASURE_S": 60, "FAULT_S": 20, "RECOVER_S": 20, "NODE_DOWN_S": 100}
BOOT_TIMEOUT_S = 1500  # a hung guest ends here; a busy 2-core host boots and runs boot 1 in 7-9 min


def log(msg):
    print("[vpi] " + msg, file=sys.stderr, flush=True)


def fixture(repo, *parts):
    return os.path.join(repo, "Tests", "OSHCoreTests", "Fixtures", *parts)


def default_gps(repo):
    """The NMEA log fed to the GPS when a tester gives none: a u-blox NEO-M9N's, from gpsd."""
    return fixture(repo, "nmea", "gpsd-3.22", "ublox-neo-m9n-nmea.log")


# ---------------------------------------------------------------- inputs

def prepare_inputs(repo, inputs_dir, share):
    """Fills share/in: i2c-load.txt (+ i2c-steps.txt), audio.raw + audio.params, scenario.env.
    Returns the description of the inputs used, and the host-side files behind them."""
    indir = os.path.join(share, "in")
    os.makedirs(indir, exist_ok=True)
    os.makedirs(os.path.join(share, "out"), exist_ok=True)
    used = {}

    def pick(name, default):
        if inputs_dir and os.path.exists(os.path.join(inputs_dir, name)):
            return os.path.join(inputs_dir, name), "given"
        return default, "fixture"

    gps, how = pick("gps.nmea", default_gps(repo))
    used["gps.nmea"] = {"path": gps, "source": how}
    wav, how = pick("audio.wav", fixture(repo, "audio", "sine_1k_-20dBFS.wav"))
    used["audio.wav"] = {"path": wav, "source": how}
    bmp, how = pick("bmp280.json", None)
    used["bmp280.json"] = {"path": bmp, "source": how if bmp else "fixture (bmp280_vectors.csv, raw values stepped)"}

    # The chips' registers (board/virtual-pi/i2c/registers.py).
    cmd = [sys.executable, os.path.join(VPI, "i2c", "registers.py"), "plan", "--out", indir]
    if bmp:
        cmd += ["--bmp280", bmp]
    subprocess.run(cmd, check=True)

    # The microphone's sound as raw samples, and its format for aplay.
    info = subprocess.run(["soxi", wav], capture_output=True, text=True, check=True).stdout
    rate = int(checks.soxi_field(info, "Sample Rate"))
    channels = int(checks.soxi_field(info, "Channels"))
    bits = int(checks.soxi_field(info, "Precision").split("-")[0])
    if bits not in (16, 24, 32):
        raise SystemExit("audio.wav: %d-bit samples; give 16, 24 or 32-bit PCM" % bits)
    fmt = {16: "S16_LE", 24: "S32_LE", 32: "S32_LE"}[bits]
    sbits = 16 if bits == 16 else 32
    subprocess.run(["sox", wav, "-t", "raw", "-e", "signed-integer", "-b", str(sbits), "-L",
                    os.path.join(indir, "audio.raw")], check=True)
    with open(os.path.join(indir, "audio.params"), "w") as f:
        f.write("FORMAT=%s\nRATE=%d\nCHANNELS=%d\n" % (fmt, rate, channels))
    with open(os.path.join(indir, "scenario.env"), "w") as f:
        for k, v in SCENARIO.items():
            f.write("%s=%s\n" % (k, v))
    used["audio.wav"].update({"rate": rate, "channels": channels, "format": fmt})
    return used


# ---------------------------------------------------------------- the GPS feed

class NMEAFeeder(threading.Thread):
    """Writes the log to QEMU's usb-serial chardev one fix (epoch) a second, in a loop, and
    reads back whatever the guest writes (QEMU's serial backends stall the guest when the
    host does not drain them). While the device is unplugged, QEMU stops reading and the
    lines are dropped here rather than queued."""

    def __init__(self, path, nmea_file, sent_log):
        super().__init__(daemon=True)
        self.path = path
        self.groups = checks.nmea_epochs(open(nmea_file, "rb").read().decode("ascii", "replace"))
        self.sent_log = sent_log
        self.stop = threading.Event()
        # Set while the adapter is unplugged: a real receiver's lines are lost then, while
        # QEMU's unattached chardev would queue them and deliver a burst of stale fixes on replug.
        self.unplugged = threading.Event()

    def run(self):
        sock = None
        deadline = time.time() + 120
        while not self.stop.is_set() and sock is None:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.path)
                s.setblocking(False)
                sock = s
            except OSError:
                if time.time() > deadline:
                    log("GPS feed: cannot connect to %s" % self.path)
                    return
                time.sleep(0.2)
        i = 0
        with open(self.sent_log, "a") as out:
            while not self.stop.is_set() and self.groups:
                now = time.gmtime()
                group = [checks.nmea_restamp(line, now) for line in self.groups[i % len(self.groups)]]
                data = "".join(group).encode()
                try:
                    if not self.unplugged.is_set():
                        sock.send(data)
                        out.write("%.3f %s" % (time.time(), "".join(group)))
                        out.flush()
                except BlockingIOError:
                    pass
                except OSError:
                    return
                i += 1
                end = time.time() + 1.0
                while time.time() < end and not self.stop.is_set():
                    try:
                        if not sock.recv(65536):
                            time.sleep(0.1)
                    except BlockingIOError:
                        time.sleep(0.05)
                    except OSError:
                        return


# ---------------------------------------------------------------- QEMU

def monitor(path, command):
    """One HMP command on the QEMU monitor socket; returns its answer."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    buf = b""
    try:
        while b"(qemu)" not in buf:
            buf += s.recv(4096)
        s.sendall((command + "\n").encode())
        buf = b""
        while b"(qemu)" not in buf:
            buf += s.recv(4096)
    finally:
        s.close()
    # HMP echoes the command with line-editing escapes; the answer is what follows that line.
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", buf.decode(errors="replace")).replace("\r", "")
    return text.split("\n", 1)[1].replace("(qemu)", "").strip() if "\n" in text else ""


# The virtual Pi's own disk: a bare ext4 root, the kernel and initrd beside it.
VPI_APPEND = "root=/dev/vda rw console=ttyAMA0 panic=-1 systemd.show_status=1"


def boot(kernel, initrd, append, disk, share, run_dir, boot_no, gps_file, events, timeout=BOOT_TIMEOUT_S):
    """One QEMU boot of DISK with KERNEL/INITRD/APPEND until the guest powers off; the GPS fed
    on a usb-serial adapter, the 9p share at mount tag "vpi", the console in
    share/out/console-bootN.log. Returns (QEMU's exit code, wall seconds)."""
    mon = os.path.join(run_dir, "monitor.sock")
    gps = os.path.join(run_dir, "gps.sock")
    for p in (mon, gps):
        if os.path.exists(p):
            os.unlink(p)
    cmd = [
        "qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72", "-smp", "2", "-m", "1024",
        "-accel", "tcg,thread=multi", "-display", "none", "-no-reboot", "-nic", "none",
        "-serial", "stdio", "-monitor", "unix:%s,server=on,wait=off" % mon,
        "-kernel", kernel, "-initrd", initrd, "-append", append,
        "-drive", "file=%s,if=none,format=raw,id=hd0,cache=unsafe" % disk,
        "-device", "virtio-blk-pci,drive=hd0",
        "-virtfs", "local,path=%s,mount_tag=vpi,security_model=none,id=vpi" % share,
        "-device", "qemu-xhci,id=xhci",
        "-chardev", "socket,id=gps,path=%s,server=on,wait=off" % gps,
        "-device", "usb-serial,chardev=gps,id=gpsusb,bus=xhci.0",
    ]
    with open(os.path.join(run_dir, "qemu-cmdline.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    console = open(os.path.join(share, "out", "console-boot%d.log" % boot_no), "w")
    t0 = time.monotonic()
    q = subprocess.Popen(["nice", "-n", "5"] + cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    feeder = NMEAFeeder(gps, gps_file, os.path.join(share, "out", "gps-sent.txt"))
    feeder.start()
    killer = threading.Timer(timeout, q.kill)
    killer.start()
    try:
        for raw in q.stdout:
            line = raw.decode("utf-8", "replace").replace("\r", "")
            console.write("[%7.2f] %s" % (time.monotonic() - t0, line))
            console.flush()
            if "VPI-REQ " in line:
                req = line.split("VPI-REQ ", 1)[1].strip()
                if req == "usb-unplug":
                    feeder.unplugged.set()
                    ans = monitor(mon, "device_del gpsusb")
                elif req == "usb-plug":
                    ans = monitor(mon, "device_add usb-serial,chardev=gps,id=gpsusb,bus=xhci.0")
                    feeder.unplugged.clear()
                else:
                    ans = "unknown request"
                events.append({"boot": boot_no, "host_time": time.time(), "request": req, "monitor": ans or "ok"})
                log("guest asked: %s -> QEMU monitor: %s" % (req, ans or "ok"))
        q.wait()
    finally:
        killer.cancel()
        feeder.stop.set()
        console.close()
    return q.returncode, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--inputs")
    ap.add_argument("--keep")
    ap.add_argument("--node-down-at-boot", type=int, default=SCENARIO["NODE_DOWN_S"])
    ap.add_argument("--camera", choices=("vivid", "vimc"), default="vivid")
    a = ap.parse_args()
    SCENARIO["NODE_DOWN_S"] = max(0, a.node_down_at_boot)
    SCENARIO["CAMERA"] = a.camera

    run_dir = tempfile.mkdtemp(prefix="vpi-run-", dir="/var/tmp")
    share = os.path.join(run_dir, "share")
    os.makedirs(share)
    used = prepare_inputs(a.repo, a.inputs, share)
    disk = os.path.join(run_dir, "disk.img")
    log("copying the disk image")
    subprocess.run(["cp", "--sparse=always", os.path.join(a.image, "rootfs.img"), disk], check=True)

    events = []
    boots = []
    t_start = time.time()
    for n in (1, 2):
        log("boot %d (QEMU TCG; ~30 s to login, the scenario takes a few minutes)" % n)
        # Boot 2 waits out the node's outage, then up to twice as long for the backlog to drain.
        timeout = BOOT_TIMEOUT_S + (3 * SCENARIO["NODE_DOWN_S"] if n == 2 else 0)
        rc, wall = boot(os.path.join(a.image, "vmlinuz"), os.path.join(a.image, "initrd.img"), VPI_APPEND,
                        disk, share, run_dir, n, used["gps.nmea"]["path"], events, timeout=timeout)
        done = os.path.exists(os.path.join(share, "out", "boot%d" % n, "done"))
        boots.append({"boot": n, "qemu_exit": rc, "wall_s": round(wall, 1), "scenario_done": done})
        log("boot %d: QEMU exit %d after %.0f s; scenario %s" % (n, rc, wall, "done" if done else "NOT done"))
        if not done:
            break

    summary = checks.analyse(share, used, boots, events, a.image)
    summary["wall_s"] = round(time.time() - t_start, 1)
    finish(summary, checks.table(summary), a.json, share, a.keep, run_dir, "vpi")


def finish(summary, table, json_path, share, keep, run_dir, label, ignore=None):
    """Writes the JSON summary, prints the table, keeps the share if asked (without IGNORE's
    patterns), removes the run's directory, and exits 1 when a check failed, else 0."""
    os.makedirs(os.path.dirname(json_path), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(summary, f, indent=2)
    print(table)
    print("summary: %s" % json_path)
    if keep:
        if os.path.exists(keep):
            shutil.rmtree(keep)
        shutil.copytree(share, keep, symlinks=True, ignore=shutil.ignore_patterns(*ignore) if ignore else None)
        print("share kept in %s" % keep)
    shutil.rmtree(run_dir, ignore_errors=True)
    failed = [c for c in summary["checks"] if not c["ok"]]
    print("%s: %d checks, %d failed" % (label, len(summary["checks"]), len(failed)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
