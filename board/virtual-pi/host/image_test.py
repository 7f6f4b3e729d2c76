#!/usr/bin/env python3
"""`vpi test --image IMG --boot-files DIR`: boots the SD-card image itself (its root partition,
the kernel, initrd and cmdline.txt from its FAT partition) under QEMU, as a user would: DIR's
files are copied onto the FAT partition first (mtools, no mount), the disk is grown as a bigger
card would be, and the first boot runs. A guest-side observer from the 9p share
(board/virtual-pi/guest/image/: not part of the image; its one unit is written into the test's
copy of the root with debugfs) runs the development node and records what happened; after the
guest powers off, the FAT partition is read back. Prints a table, writes the JSON summary.

What differs from a Pi: QEMU's virt machine boots the kernel directly (no GPU firmware, no
config.txt), with its own device tree (no Pi overlays, no I2C or UART of the header), the disk
is virtio (not the SD controller), and the console is the PL011 that QEMU provides.

Python 3 standard library only."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vpi_host  # noqa: E402  (the QEMU boot and the GPS feed)

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST = os.path.join(os.path.dirname(HERE), "guest", "image")
SECTOR = 512
STREAM_S = 20      # seconds of streaming observed after the first observation
DEADLINE_S = 420   # guest uptime at which the observer reports whatever it has
GROW_BYTES = 1 << 30  # the "card" is this much bigger than the image


log = vpi_host.log


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def mtools_env():
    return dict(os.environ, MTOOLS_SKIP_CHECK="1", TZ="UTC")


class Card:
    """The test's copy of the image, its two partitions addressed by byte offset."""

    def __init__(self, path):
        self.path = path
        table = json.loads(run(["sfdisk", "-J", path]))["partitiontable"]["partitions"]
        if len(table) != 2:
            raise SystemExit("%s: expected 2 partitions (FAT, root), found %d" % (path, len(table)))
        self.fat = "%s@@%d" % (path, table[0]["start"] * SECTOR)
        self.root = "%s?offset=%d" % (path, table[1]["start"] * SECTOR)

    def fat_names(self):
        out = run(["mdir", "-b", "-i", self.fat, "::/"], env=mtools_env())
        return sorted(line.strip()[3:] for line in out.splitlines() if line.strip().startswith("::/"))

    def fat_read(self, name):
        r = subprocess.run(["mtype", "-i", self.fat, "::/" + name], capture_output=True, env=mtools_env())
        return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None

    def fat_put(self, src, name):
        run(["mcopy", "-o", "-i", self.fat, src, "::/" + name], env=mtools_env())

    def fat_get(self, name, dest):
        run(["mcopy", "-o", "-i", self.fat, "::/" + name, dest], env=mtools_env())

    def root_add_unit(self, src, wanted_by):
        """Writes SRC as /etc/systemd/system/NAME in the root partition (debugfs: no mount) and
        links it from WANTED_BY.wants, as `systemctl enable` would; reads it back."""
        name = os.path.basename(src)
        path = "/etc/systemd/system/" + name
        cmds = "write %s %s\nsymlink /etc/systemd/system/%s.wants/%s %s\n" % (src, path, wanted_by, name, path)
        r = subprocess.run(["debugfs", "-w", "-f", "-", self.root], input=cmds, capture_output=True, text=True)
        back = subprocess.run(["debugfs", "-R", "cat " + path, self.root], capture_output=True, text=True).stdout
        if back != open(src).read():
            raise SystemExit("debugfs could not write %s into the image's root: %s" % (path, r.stderr.strip()))


def boot_files_of(config_txt):
    """kernel= and initramfs lines of the card's config.txt (raspi-firmware writes them)."""
    kernel = initrd = None
    for line in config_txt.splitlines():
        line = line.strip()
        if line.startswith("kernel="):
            kernel = line.split("=", 1)[1].strip()
        elif line.startswith("initramfs "):
            initrd = line.split()[1]
    return kernel, initrd


def qemu_append(cmdline):
    """The card's cmdline.txt for QEMU: its console on QEMU's PL011 instead of the screen."""
    args = [a for a in cmdline.split() if not a.startswith("console=")]
    return " ".join(args + ["console=ttyAMA0", "panic=-1", "systemd.show_status=1"])


def read_env(path):
    out = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8", errors="replace"):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                out[k] = v
    return out


def seconds(us):
    try:
        return round(int(us) / 1e6, 1) if int(us) > 0 else None
    except ValueError:
        return None


def per_datastream(out):
    """Observations at the node per datastream name, from the observer's two dumps."""
    try:
        ds = json.load(open(os.path.join(out, "datastreams.json")))["items"]
        obs = json.load(open(os.path.join(out, "observations.json")))["items"]
    except (OSError, ValueError, KeyError):
        return {}
    names = {d.get("id"): d.get("name", d.get("id")) for d in ds}
    counts = {}
    for o in obs:
        n = names.get(o.get("datastream@id"), o.get("datastream@id"))
        counts[n] = counts.get(n, 0) + 1
    return counts


def analyse(expect, given, before, after, fat_after, error_text, status, boot, image, raw_bytes, card_bytes, out):
    def check(name, ok, detail=""):
        checks.append({"name": name, "ok": bool(ok), "detail": detail})

    checks = []
    fb_state = status.get("osh-edge-firstboot.ActiveState")
    svc_state = status.get("osh-edge.ActiveState")
    streams = per_datastream(out)
    secrets_given = "osh-edge-secrets" in given
    summary = {
        "image": image,
        "image_file_bytes": os.path.getsize(image),
        "image_bytes": raw_bytes,
        "card_bytes": card_bytes,
        "expect": expect,
        "boot_files": given,
        "boot": boot,
        "fat_before": before,
        "fat_after": fat_after,
        "firstboot": {
            "secrets_removed": secrets_given and "osh-edge-secrets" not in fat_after,
            "error_file": error_text,
            "unit": fb_state,
            "config_applied": status.get("config_installed") == "yes",
            "secrets_installed": status.get("secrets") or None,
            "hostname": status.get("hostname"),
            "root_partition_bytes": int(status.get("root_partition_bytes") or 0),
            "root_fs_bytes": int(status.get("root_fs_bytes") or 0),
            # Its script's end (a failed unit never becomes active).
            "started_s": seconds(status.get("osh-edge-firstboot.InactiveExitTimestampMonotonic", "0")),
            "done_s": seconds(status.get("osh-edge-firstboot.ExecMainExitTimestampMonotonic", "0")),
        },
        "service": {
            "ready": svc_state == "active",
            "state": svc_state,
            "ready_s": seconds(status.get("osh-edge.ActiveEnterTimestampMonotonic", "0")),
            "first_observation_s": float(status["first_observation_s"]) if status.get("first_observation_s") else None,
            "observations": streams,
        },
        "guest": {k: status.get(k) for k in ("kernel", "cmdline", "ssh_enabled", "serial0", "i2c_dev_loaded")},
    }
    config_txt = after.get("config.txt") or ""
    cmdline = after.get("cmdline.txt") or ""
    check("the guest observer reported", status.get("collected_s"), "out/status.env")
    check("config.txt: I2C on, UART on", "dtparam=i2c_arm=on" in config_txt and "enable_uart=1" in config_txt,
          "dtparam=i2c_arm=on, enable_uart=1")
    check("cmdline.txt: no serial console (the UART is the GPS's)",
          "root=LABEL=RASPIROOT" in cmdline and not any(a.startswith(("console=ttyS", "console=ttyAMA", "console=serial"))
                                                       for a in cmdline.split()), cmdline.strip())
    check("ssh is off without the ssh file", status.get("ssh_enabled") == "disabled", status.get("ssh_enabled", ""))
    check("root grown to the card", summary["firstboot"]["root_partition_bytes"] > card_bytes - raw_bytes // 2
          and summary["firstboot"]["root_fs_bytes"] > 0,
          "partition %s of a %d-byte card (the image: %d)" % (status.get("root_partition_bytes"), card_bytes, raw_bytes))
    if expect == "ready":
        check("firstboot.unit active", fb_state == "active", fb_state or "")
        check("config installed (= osh-edge.conf.applied)", summary["firstboot"]["config_applied"])
        check("firstboot.secrets_removed", summary["firstboot"]["secrets_removed"],
              "osh-edge-secrets %s on the card" % ("gone" if summary["firstboot"]["secrets_removed"] else "still"))
        check("secrets installed 0600 for the service", status.get("secrets") == "600 osh-edge:osh-edge",
              status.get("secrets", ""))
        check("no firstboot.error_file", error_text is None, (error_text or "").strip()[:200])
        check("service.ready", summary["service"]["ready"], svc_state or "")
        check("streaming: observations at the node", sum(streams.values()) > 0, json.dumps(streams))
        m = re.search(r'^\s*hostname\s*=\s*"([^"]*)"', given.get("osh-edge.conf", ""), re.M)
        check("hostname from [system] hostname", not m or status.get("hostname") == m.group(1),
              status.get("hostname", ""))
    else:
        check("firstboot.error_file written", error_text is not None, "osh-edge-error.txt")
        check("the error names file:line", error_text is not None and "osh-edge.conf:" in error_text,
              (error_text or "").strip().splitlines()[0][:200] if error_text else "")
        check("firstboot.unit failed", fb_state == "failed", fb_state or "")
        check("service not started", svc_state in ("inactive", "failed") and not streams, svc_state or "")
        check("secrets kept on the card for the retry", not secrets_given or "osh-edge-secrets" in fat_after)
    summary["checks"] = checks
    return summary


def table(s):
    rows = ["%-52s %s  %s" % (c["name"], "ok  " if c["ok"] else "FAIL", c["detail"]) for c in s["checks"]]
    fb, sv = s["firstboot"], s["service"]
    rows.append("")
    rows.append("image %s: %d bytes, %d written to the card; card %d" % (
        os.path.basename(s["image"]), s["image_file_bytes"], s["image_bytes"], s["card_bytes"]))
    rows.append("boot: QEMU %s s wall; guest uptime: firstboot %s-%s s, service ready at %s s, first observation "
                "at %s s" % (s["boot"].get("wall_s"), fb["started_s"], fb["done_s"], sv["ready_s"], sv["first_observation_s"]))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True, help="the .img.xz (or .img) build-image.sh wrote")
    ap.add_argument("--boot-files", required=True, help="files to put on the FAT partition before boot")
    ap.add_argument("--expect", choices=("ready", "error"), default="ready")
    ap.add_argument("--dev-bin", required=True, help="arm64 osh-edge-dev")
    ap.add_argument("--microhttpd", required=True, help="arm64 libmicrohttpd.so.12 (the node's; not in the image)")
    ap.add_argument("--node-user", default="osh:vpi-image-secret")
    ap.add_argument("--gps", help="NMEA log fed to the usb-serial GPS (default: the u-blox fixture)")
    ap.add_argument("--json", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--keep")
    a = ap.parse_args()

    run_dir = tempfile.mkdtemp(prefix="vpi-image-", dir="/var/tmp")
    share = os.path.join(run_dir, "share")
    for d in ("in", "out", "bin"):
        os.makedirs(os.path.join(share, d))
    for f in ("image-start.sh", "image-observe.sh"):
        shutil.copy(os.path.join(GUEST, f), share)
    shutil.copy(a.dev_bin, os.path.join(share, "bin", "osh-edge-dev"))
    # RUNPATH $ORIGIN: the node finds its library beside it.
    shutil.copy(a.microhttpd, os.path.join(share, "bin", "libmicrohttpd.so.12"))
    for name, value in (("expect", a.expect), ("deadline", DEADLINE_S), ("stream-seconds", STREAM_S),
                        ("node-user", a.node_user)):
        with open(os.path.join(share, "in", name), "w") as f:
            f.write("%s\n" % value)

    disk = os.path.join(run_dir, "card.img")
    log("writing the image to the test's card (%s)" % os.path.basename(a.image))
    if a.image.endswith(".xz"):
        with open(disk, "wb") as f:
            subprocess.run(["xz", "-dc", a.image], stdout=f, check=True)
    else:
        subprocess.run(["cp", "--sparse=always", a.image, disk], check=True)
    raw_bytes = os.path.getsize(disk)
    card_bytes = raw_bytes + GROW_BYTES
    os.truncate(disk, card_bytes)
    card = Card(disk)

    before = card.fat_names()
    given = {}
    for name in sorted(os.listdir(a.boot_files)):
        p = os.path.join(a.boot_files, name)
        if os.path.isfile(p):
            card.fat_put(p, name)
            given[name] = open(p, encoding="utf-8", errors="replace").read()
    log("boot partition: put %s" % ", ".join(given) if given else "boot partition: nothing put")

    config_txt = card.fat_read("config.txt") or ""
    cmdline = card.fat_read("cmdline.txt") or ""
    kernel, initrd = boot_files_of(config_txt)
    if not kernel or not initrd:
        raise SystemExit("%s: config.txt names no kernel= or initramfs (raspi-firmware's hook did not run?)" % a.image)
    card.fat_get(kernel, os.path.join(run_dir, "vmlinuz"))
    card.fat_get(initrd, os.path.join(run_dir, "initrd.img"))

    # The test's one addition to the root: the unit that mounts the share and starts its part.
    card.root_add_unit(os.path.join(GUEST, "vpi-image-guest.service"), "multi-user.target")

    gps = a.gps or vpi_host.default_gps(a.repo)
    append = qemu_append(cmdline)
    log("first boot (QEMU TCG): %s" % append)
    events = []
    t0 = time.time()
    rc, wall = vpi_host.boot(os.path.join(run_dir, "vmlinuz"), os.path.join(run_dir, "initrd.img"), append,
                             disk, share, run_dir, 1, gps, events, timeout=DEADLINE_S + 600)
    log("QEMU exit %d after %.0f s" % (rc, wall))

    out = os.path.join(share, "out")
    fat_after = card.fat_names()
    after = {"config.txt": config_txt, "cmdline.txt": cmdline}
    error_text = card.fat_read("osh-edge-error.txt") if "osh-edge-error.txt" in fat_after else None
    status = read_env(os.path.join(out, "status.env"))
    boot = {"qemu_exit": rc, "wall_s": round(wall, 1), "observer_done": os.path.exists(os.path.join(out, "done"))}
    summary = analyse(a.expect, given, before, after, fat_after, error_text, status, boot, a.image, raw_bytes,
                      card_bytes, out)
    summary["wall_s"] = round(time.time() - t0, 1)
    # The node's binary is not kept: it is the input, not a result.
    vpi_host.finish(summary, table(summary), a.json, share, a.keep, run_dir, "vpi image", ignore=["bin"])


if __name__ == "__main__":
    main()
