"""What a virtual-Pi run proves: reads the guest's results (share/out) and compares them with
what the inputs mean, computed here independently of osh-edge (sox, gpsdecode, ffprobe, the
datasheet compensation in board/virtual-pi/i2c/registers.py). Builds the JSON summary."""

import glob
import json
import math
import os
import re
import struct
import subprocess
import tempfile
from datetime import datetime

# ---------------------------------------------------------------- small parsers


def soxi_field(info, name):
    for line in info.splitlines():
        if line.split(":")[0].strip() == name:
            return line.split(":", 1)[1].strip().split()[0]
    raise ValueError("soxi: no %s" % name)


NMEA_TIME_FIELD = {"GGA": 1, "RMC": 1, "GLL": 5, "ZDA": 1, "GNS": 1, "GST": 1, "GBS": 1}


def nmea_checksum(body):
    c = 0
    for ch in body.encode("ascii", "replace"):
        c ^= ch
    return "%02X" % c


def nmea_restamp(line, when):
    """The sentence with its UTC time (and RMC's/ZDA's date) set to `when` (a time.struct_time)
    and its checksum recomputed (a wrong one stays wrong, a missing one missing); positions and
    everything else unchanged. A replayed log then
    reads like a receiver working now: time never goes backwards when the log loops, and the
    agent's GPS-time gate and its observations' times line up with the board's clock."""
    if not line.startswith("$") or "*" not in line:
        return line  # no checksum: it stays without one
    body = line[1:line.rindex("*")]
    # A sentence a tester corrupted on purpose keeps a wrong checksum: the agent must still drop it.
    given = line[line.rindex("*") + 1:].strip().upper()
    valid = given == nmea_checksum(body)
    f = body.split(",")
    kind = f[0][2:5] if len(f[0]) >= 5 else ""
    k = NMEA_TIME_FIELD.get(kind)
    if k is not None and len(f) > k and f[k]:
        frac = f[k][6:] if len(f[k]) > 6 else ""
        f[k] = "%02d%02d%02d%s" % (when.tm_hour, when.tm_min, when.tm_sec, frac)
    if kind == "RMC" and len(f) > 9 and f[9]:
        f[9] = "%02d%02d%02d" % (when.tm_mday, when.tm_mon, when.tm_year % 100)
    if kind == "ZDA" and len(f) > 4 and f[2]:
        f[2], f[3], f[4] = "%02d" % when.tm_mday, "%02d" % when.tm_mon, "%04d" % when.tm_year
    body = ",".join(f)
    checksum = nmea_checksum(body)
    if not valid:
        checksum = "%02X" % (int(checksum, 16) ^ 0x5A)
    return "$%s*%s\r\n" % (body, checksum)


def nmea_epochs(text):
    """The log's sentences grouped by fix time: one group is what a receiver sends in a second."""
    groups, current, current_t = [], [], None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(("$", "!")):
            continue
        fields = line.split(",")
        kind = fields[0][3:6] if len(fields[0]) >= 6 else ""
        t = None
        k = NMEA_TIME_FIELD.get(kind)
        if k is not None and len(fields) > k and fields[k]:
            t = fields[k].split("*")[0]
        if t is not None and current_t is not None and t != current_t and current:
            groups.append(current)
            current = []
        if t is not None:
            current_t = t
        current.append(line + "\r\n")
    if current:
        groups.append(current)
    return groups


def iso_seconds(s):
    s = s.replace("Z", "+00:00")
    return datetime.fromisoformat(s).timestamp()


def read_kv(path):
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        for part in line.split():
            if "=" in part:
                k, v = part.split("=", 1)
                out[k] = v
        if line.count("=") == 1 and " " in line.split("=", 1)[1]:
            k, v = line.rstrip("\n").split("=", 1)
            out[k] = v
    return out


def load_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


# ---------------------------------------------------------------- the node's answers

def datastream_names(ds_json):
    """id -> outputName from a GET /datastreams answer."""
    out = {}
    for d in (ds_json or {}).get("items", []):
        out[d.get("id")] = d.get("outputName") or d.get("name", "?")
    return out


def read_dump(dump_dir):
    """{outputName: [(phenomenonTime seconds, result dict)]} from a dump's O&M pages, and
    {outputName: bytes} of the swe+binary answers of the video datastreams (O&M JSON shows no
    frame: "Compressed binary result not shown in JSON")."""
    names = datastream_names(load_json(os.path.join(dump_dir, "datastreams.json")))
    obs, binary = {}, {}
    for ds_id, name in names.items():
        rows = []
        for page in sorted(glob.glob(os.path.join(dump_dir, "%s.*.json" % ds_id))):
            doc = load_json(page, {})
            for item in doc.get("items", []) if isinstance(doc, dict) else []:
                try:
                    rows.append((iso_seconds(item["phenomenonTime"]), item.get("result", {})))
                except (KeyError, ValueError):
                    pass
        obs[name] = rows
        b = os.path.join(dump_dir, "%s.bin" % ds_id)
        if os.path.exists(b) and name.endswith("_H264"):
            binary[name] = open(b, "rb").read()
    return names, obs, binary


def camera_frames(blob):
    """Records of the camera's swe+binary (big-endian): time as a double, then the H.264 access
    unit as a block (4-byte length, bytes). Returns [(time, bytes)]; stops at the first record
    that does not parse."""
    frames, i = [], 0
    while i + 12 <= len(blob):
        t = struct.unpack(">d", blob[i:i + 8])[0]
        n = struct.unpack(">I", blob[i + 8:i + 12])[0]
        if n > len(blob) - i - 12 or not (1e9 < t < 1e10):
            break
        frames.append((t, blob[i + 12:i + 12 + n]))
        i += 12 + n
    return frames


def nal_types(data):
    types, i = [], 0
    while True:
        j = data.find(b"\x00\x00\x01", i)
        if j < 0 or j + 3 >= len(data):
            return types
        types.append(data[j + 3] & 0x1F)
        i = j + 3


def flatten(result):
    """A result's numbers by member name (nested records flattened: location.lat → lat)."""
    out = {}
    for k, v in (result or {}).items():
        if isinstance(v, dict):
            out.update(flatten(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = float(v)
    return out


# ---------------------------------------------------------------- the LED

PATTERNS = {
    # name: (on seconds, off seconds) of the repeating element, from board/README.md's table
    "starting": (0.5, 0.5),
    "nodeUnreachable": (0.1, 0.1),
}


def led_segments(path):
    rows = []
    if not os.path.exists(path):
        return rows
    for line in open(path):
        p = line.split()
        if len(p) == 2 and p[1] in ("0", "1"):
            rows.append((float(p[0]), int(p[1])))
    return rows


def led_pattern(rows, t0, t1):
    """Names what the LED showed between t0 and t1 from its edges: steady on with short dark
    blips = streaming; 0.1/0.1 = nodeUnreachable; 0.5/0.5 = starting; else the measured figures."""
    if not rows:
        return {"pattern": "no samples"}
    level = rows[0][1]
    for t, v in rows:
        if t <= t0:
            level = v
    edges = [(t, v) for t, v in rows if t0 < t < t1]
    span = t1 - t0
    on = 0.0
    last_t, last_v = t0, level
    runs = {0: [], 1: []}
    for t, v in edges:
        d = t - last_t
        if last_v == 1:
            on += d
        if last_t != t0:
            runs[last_v].append(d)
        last_t, last_v = t, v
    if last_v == 1:
        on += t1 - last_t
    duty = on / span if span > 0 else 0
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else None  # noqa: E731
    on_med, off_med = med(runs[1]), med(runs[0])
    res = {"duty_on": round(duty, 3), "edges": len(edges), "on_median_s": on_med and round(on_med, 3),
           "off_median_s": off_med and round(off_med, 3)}
    if len(edges) == 0:
        res["pattern"] = "on" if level == 1 else "dark"
    elif duty > 0.8 and off_med is not None and off_med <= 0.2:
        res["pattern"] = "streaming"
    elif on_med and off_med and abs(on_med - 0.1) < 0.06 and abs(off_med - 0.1) < 0.06:
        res["pattern"] = "nodeUnreachable"
    elif on_med and off_med and abs(on_med - 0.5) < 0.1 and abs(off_med - 0.5) < 0.1:
        res["pattern"] = "starting"
    else:
        res["pattern"] = "other"
    return res


# ---------------------------------------------------------------- the analysis

class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, ok, detail):
        self.items.append({"check": name, "ok": bool(ok), "detail": detail})
        return ok


def events_of(boot_dir):
    ev = []
    path = os.path.join(boot_dir, "events.txt")
    if os.path.exists(path):
        for line in open(path):
            p = line.rstrip("\n").split(" ", 1)
            if len(p) == 2:
                try:
                    ev.append((float(p[0]), p[1]))
                except ValueError:
                    pass
    return ev


def event_time(ev, text):
    for t, e in ev:
        if e == text:
            return t
    return None


def merge_obs(dumps):
    """Observations of several dumps, one per (output, phenomenon time)."""
    merged = {}
    for obs in dumps:
        for name, rows in obs.items():
            seen = merged.setdefault(name, {})
            for t, r in rows:
                seen.setdefault(round(t, 6), r)
    return {n: sorted(d.items()) for n, d in merged.items()}


def merge_frames(blobs):
    merged = {}
    for blob in blobs:
        for t, data in camera_frames(blob):
            merged.setdefault(round(t, 6), data)
    return sorted(merged.items())


def count_between(rows, t0, t1):
    return sum(1 for t, _ in rows if t0 <= t < t1)


def analyse(share, used, boots, host_events, image_dir):
    out = os.path.join(share, "out")
    indir = os.path.join(share, "in")
    b1 = os.path.join(out, "boot1")
    b2 = os.path.join(out, "boot2")
    c = Checks()
    summary = {"inputs": {k: {kk: vv for kk, vv in v.items()} for k, v in used.items()},
               "boots": boots, "host_requests": host_events}
    deb = os.path.join(image_dir, "deb.txt")
    summary["package"] = open(deb).read().strip().splitlines() if os.path.exists(deb) else None

    failures = os.path.join(out, "board-failures.txt")
    c.add("board setup", not os.path.exists(failures),
          open(failures).read().strip() if os.path.exists(failures) else "every stand-in loaded")

    # --- the service
    ready = read_kv(os.path.join(b1, "service-ready.txt"))
    active = ready.get("ActiveState") == "active"
    start_us = int(ready.get("ExecMainStartTimestampMonotonic", "0") or 0)
    active_us = int(ready.get("ActiveEnterTimestampMonotonic", "0") or 0)
    service = {
        "ready": active and ready.get("Type") == "notify",
        "type": ready.get("Type"), "state": "%s (%s)" % (ready.get("ActiveState"), ready.get("SubState")),
        "boot_to_ready_s": round(active_us / 1e6, 2) if active_us else None,
        "unit_start_to_ready_s": round((active_us - start_us) / 1e6, 2) if active_us and start_us else None,
        "watchdog_usec": ready.get("WatchdogUSec"), "user": ready.get("User"),
    }
    show = read_kv(os.path.join(b1, "systemctl-show.txt"))
    service["restarts_boot1"] = show.get("NRestarts")
    service["result_boot1"] = show.get("Result")
    jpath = os.path.join(b1, "journal-osh-edge.txt")
    jl = open(jpath, errors="replace").read().splitlines() if os.path.exists(jpath) else []
    service["journal_head"] = jl[:12]
    service["journal_lines"] = len(jl)
    service["watchdog_kills"] = sum(1 for line in jl if "Watchdog timeout" in line)
    summary["service"] = service
    c.add("service ready via READY=1", service["ready"],
          "Type=%s, %s, boot to READY %.1f s, unit start to READY %s s" % (
              ready.get("Type"), service["state"], (active_us or 0) / 1e6, service["unit_start_to_ready_s"]))
    c.add("watchdog kept it running", service["watchdog_kills"] == 0 and show.get("NRestarts") in ("0", None),
          "WatchdogUSec=%s, NRestarts=%s, watchdog timeouts in the journal: %d" % (
              ready.get("WatchdogUSec"), show.get("NRestarts"), service["watchdog_kills"]))

    # --- observations: every dump of both boots merged (the node forgets observations when it restarts)
    dumps, blobs = [], []
    names_final = {}
    for d in sorted(glob.glob(os.path.join(out, "boot*", "obs-*"))):
        names, obs, binary = read_dump(d)
        names_final.update(names)
        dumps.append(obs)
        blobs.extend(binary.values())
    obs = merge_obs(dumps)
    frames = merge_frames(blobs)
    if frames:
        obs["camera0_H264"] = [(t, {}) for t, _ in frames]
    enabled = ["gps_data", "quat_orientation_data", "euler_orientation_data", "barometer", "audio_level",
               "camera0_H264", "accelerometer", "gyroscope", "magnetometer", "temperature", "humidity",
               "device_health"]
    datastreams = {}
    for name in sorted(set(list(obs.keys()) + list(names_final.values()))):
        rows = obs.get(name, [])
        datastreams[name] = {"count": len(rows)}
    summary["datastreams"] = datastreams
    for want in enabled:
        # raw inertial outputs are published as <chip>_Accelerometer_data and so on
        got = [n for n in datastreams if n == want or n.lower().endswith("_" + want + "_data")]
        n = sum(datastreams[g]["count"] for g in got)
        c.add("datastream %s" % want, got and n > 0, "%s: %d observations" % (", ".join(got) or "not registered", n))

    # --- expected values from the inputs
    expected = load_json(os.path.join(indir, "expected.json"), {}) or {}
    received = {}
    # barometer
    baro = obs.get("barometer", [])
    pressures = [flatten(r).get("pressure") for _, r in baro]
    pressures = [p for p in pressures if p is not None]
    received["barometer_hPa"] = pressures
    eb = expected.get("barometer", {})
    exp_p = [e["pressure_hPa"] for e in eb.get("samples", [])]
    # The agent computes the datasheet's double formula as registers.py does; the tolerance
    # absorbs JSON printing only.
    tol = max(eb.get("tolerance", {}).get("pressure_hPa", 1e-6), 1e-6)
    bad = [p for p in pressures if not any(abs(p - e) <= tol for e in exp_p)]
    c.add("barometer = datasheet compensation of the loaded registers", pressures and exp_p and not bad,
          "%d values, expected one of %s hPa (±%g); %d differ%s" % (
              len(pressures), sorted(set(round(e, 3) for e in exp_p)), tol, len(bad),
              ": e.g. %s" % bad[:3] if bad else ""))
    late_chip(c, summary, b1, expected.get("hygrometer", {}), obs, received)
    # orientation
    eo = expected.get("imu", {}).get("orientation", {})
    otol = eo.get("tolerance", {})
    for name, keys in (("quat_orientation_data", ("qx", "qy", "qz", "q0")),
                       ("euler_orientation_data", ("heading", "pitch", "roll"))):
        rows = obs.get(name, [])
        want = eo.get(name)
        if not rows or not want:
            c.add("%s from the loaded IMU registers" % name, False, "no observations or no expectation")
            continue
        last = [flatten(r) for _, r in rows[-10:]]
        # float32 on the wire: the registers' attitude to a few hundredths of a degree
        tolerance = otol.get("quaternion_component", 5e-4) if name.startswith("quat") else otol.get("angle_deg", 0.05)

        def dist(v):
            if name.startswith("quat"):
                dot = sum(v.get(k, 0) * want[k] for k in keys)
                sign = 1 if dot >= 0 else -1  # q and -q are the same attitude
                return max(abs(v.get(k, 0) - sign * want[k]) for k in keys)
            d = 0
            for k in keys:
                e = abs(v.get(k, 0) - want[k]) % 360
                d = max(d, min(e, 360 - e))
            return d
        worst = max(dist(v) for v in last)
        received[name] = {k: round(last[-1].get(k, float("nan")), 4) for k in keys}
        c.add("%s from the loaded IMU registers" % name, worst <= tolerance,
              "last: %s; expected %s; worst of the last 10 off by %.3g (tolerance %g)" % (
                  received[name], {k: round(want[k], 4) for k in keys}, worst, tolerance))
    # gps: every received position is one the log fed (gpsdecode), in the log's order
    gps_rows = obs.get("gps_data", [])
    got_pos = [(flatten(r).get("lat"), flatten(r).get("lon")) for _, r in gps_rows]
    got_pos = [p for p in got_pos if p[0] is not None]
    received["gps"] = [[round(a, 9), round(b, 9)] for a, b in got_pos]
    fed = gpsdecode_positions(used["gps.nmea"]["path"])
    unmatched = [p for p in got_pos if not any(abs(p[0] - f[0]) < 1e-8 and abs(p[1] - f[1]) < 1e-8 for f in fed)]
    c.add("gps_data = the fed NMEA (gpsdecode)", got_pos and fed and not unmatched,
          "%d positions received, %d distinct fed by the log; %d not among them%s" % (
              len(got_pos), len(set(fed)), len(unmatched), ": e.g. %s" % unmatched[:2] if unmatched else ""))
    # audio: SoX's RMS level of the played WAV
    levels = [flatten(r).get("rmsdB") for _, r in obs.get("audio_level", [])]
    levels = [x for x in levels if x is not None]
    received["audio_rmsdB"] = levels
    want_db = sox_rms_db(used["audio.wav"]["path"])
    # The WAV loops without a gap and the agent's 0.1 s windows tile it, so the power mean of all
    # windows is the file's RMS level whatever the signal (a tester's speech or noise varies from
    # window to window; a steady tone is also within 0.1 dB window by window).
    steady = [x for x in levels if x > -150]
    mean_db = 10 * math.log10(sum(10 ** (x / 10) for x in steady) / len(steady)) if steady else float("nan")
    near = [x for x in steady if abs(x - want_db) <= 0.1]
    ok = bool(steady) and abs(mean_db - want_db) <= 0.1
    if want_db == float("-inf"):  # a silent WAV: the agent's floor (-160 dB) every window
        ok = bool(levels) and not steady
    c.add("audio_level within 0.1 dB of SoX's level of the WAV", ok,
          "SoX RMS lev %.2f dB; %d windows, power mean %.2f dB; %d windows within 0.1 dB on their own (median %s)" % (
              want_db, len(levels), mean_db, len(near), round(sorted(steady)[len(steady) // 2], 2) if steady else None))
    # camera: the frames decode, with SPS/PPS/IDR
    cam = check_camera(frames)
    received["camera0_H264"] = cam
    c.add("camera0_H264 decodable H.264 (NAL 7/8/5)", cam.get("frames", 0) > 0 and cam.get("decoded") == cam.get("frames")
          and {7, 8, 5} <= set(cam.get("nal_types", [])),
          "%s frames, ffprobe decoded %s, NAL types %s, %s" % (cam.get("frames"), cam.get("decoded"),
                                                              cam.get("nal_types"), cam.get("codec")))
    summary["received"] = received
    # Which camera, and which path the agent took to it (its log line "video: camera … through …").
    source = read_kv(os.path.join(indir, "scenario.env")).get("CAMERA", "vivid")
    via = [line for line in jl if "video: camera" in line and " through " in line]
    path = None
    if via:
        path = "libcamera" if "through libcamera" in via[0] else "v4l2"
    def text(name):
        p = os.path.join(b2, name)
        return open(p, errors="replace").read() if os.path.exists(p) else ""

    def sensor_lines(name):
        lines = text(name).splitlines()
        if "Camera sensors (libcamera)" not in lines:
            return []
        k = lines.index("Camera sensors (libcamera)")
        return lines[k:k + 1 + next((i for i, l in enumerate(lines[k + 1:]) if not l.startswith("  ")), 0)]
    plines = sensor_lines("probe.txt")
    stopped = sensor_lines("probe-agent-stopped.txt")
    if source == "vimc":
        c.add("probe lists the vimc sensor by its libcamera id (agent stopped)",
              any("libcamera camera 'platform/vimc.0 Sensor B'" in l for l in stopped), " / ".join(stopped) or "no probe output")
    # probe beside the running agent (it announces its I²C bus with a shared flock) sends no
    # command: the SHT4x's would take the agent's measurement. With the agent stopped it is found.
    beside, alone = text("probe.txt"), text("probe-agent-stopped.txt")
    said = [l.strip() for l in beside.splitlines() if "the running agent reads chips on this bus" in l]
    sht = [l.strip() for l in alone.splitlines() if "SHT4x" in l and "hygrometer" in l]
    summary["probe_beside_agent"] = {"said": said[:1], "sht4x_when_stopped": sht[:1],
                                     "sht4x_listed_beside_agent": "SHT4x     hygrometer" in beside}
    c.add("probe beside the running agent sends no command (SHT4x left alone); stopped, it lists the SHT4x",
          bool(said) and bool(sht) and "SHT4x     hygrometer" not in beside,
          json.dumps(summary["probe_beside_agent"]))
    cal = text("calibrate-beside-agent.txt").splitlines()
    summary["calibrate_beside_agent"] = cal[:3]
    c.add("calibrate mag beside the running agent is refused, saying how to stop it",
          any("the running agent reads the IMU on /dev/i2c-" in l and "sudo systemctl stop osh-edge" in l for l in cal)
          and "exit 1" in cal, " / ".join(cal) or "no calibrate-beside-agent.txt")
    # [led] chip = "auto" on the Pi 5's and the Pi 3's header chip labels (after boot 2).
    ltxt = text("led-auto.txt")
    found = [l for l in ltxt.splitlines() if " line 17 (libgpiod " in l]
    summary["led_auto"] = ltxt.splitlines()
    c.add("LED chip = auto finds pinctrl-rp1 (before pinctrl-bcm2711), then pinctrl-bcm2835, by label",
          len(found) == 2 and found[0].startswith("pinctrl-rp1 (") and found[1].startswith("pinctrl-bcm2835 ("),
          " / ".join(ltxt.splitlines()) or "no led-auto.txt")
    summary["camera"] = {"source": source, "path": path, "log": via[:1], "probe": plines[:8], "probe_agent_stopped": stopped[:8],
                         "frames": datastreams.get("camera0_H264", {}).get("count", 0)}
    want = "libcamera" if source == "vimc" else "v4l2"
    c.add("camera %s reached through %s" % (source, want), path == want,
          via[0] if via else "no 'video: camera … through …' line in the journal")

    # --- the M2M encoder met vicodec and said so
    jtext = "\n".join(jl)
    m2m = [line for line in jl if "vicodec" in line or "FWHT" in line]
    c.add("M2M: vicodec enumerated, not H.264, libx264 used", bool(m2m) and "libx264" in jtext,
          m2m[0] if m2m else "no log line names vicodec")

    # --- the LED
    ev1 = events_of(b1)
    led = led_segments(os.path.join(b1, "led.txt"))
    ledres = {}
    t_active = event_time(ev1, "osh-edge active")
    t_measure = event_time(ev1, "measuring for %ss" % "60") or t_active
    t_meas_end = event_time(ev1, "snapshot measured")
    # The late SHT4x is a failing sensor until it answers (double blink): streaming from its first
    # reading on.
    t_sht = min((t for t, _ in obs.get("temperature", [])), default=None)
    if led and t_measure and t_meas_end:
        t_from = max(t_measure + 20, t_sht + 3 if t_sht else 0)
        ledres["streaming"] = led_pattern(led, t_from, t_meas_end)
        ledres["streaming"]["from_s_after_measuring"] = round(t_from - t_measure, 1)
    # From when the node is really down (after the dump that precedes it) to its restart.
    t_ns = event_time(ev1, "fault node-stopped node down") or event_time(ev1, "fault node-stopped start")
    t_ne = event_time(ev1, "fault node-stopped end")
    if led and t_ns and t_ne:
        ledres["node_stopped"] = led_pattern(led, t_ns + 8, t_ne)
    # The agent's first pattern: "starting" (0.5 s on, 0.5 s off) until it is registered. The LED
    # opens once the devices are open, and registering takes about a second here, so the boot shows
    # one slow blink or less: the first lit stretch is the blink's 0.5 s (no other pattern has a
    # lit stretch of 0.4-0.75 s: blinks are 0.1-0.15 s, streaming's are 0.9 s and more), and the
    # dark part after it is cut short when registration ends first. A busy emulated start may
    # stretch the lit part (0.74-1.11 s seen when the LED opened before the devices); then the
    # full 0.5 s dark part tells it apart, where streaming's blips and unreachable's gaps are 0.1 s;
    # when registration also ends early the dark part is cut short (0.24 s seen after 0.80 s lit),
    # still twice any blip or gap of the other patterns. A sensor still missing (the late SHT4x)
    # turns it into the double blink at once, whose dark part is 1.7 s (1.27 s and 1.54 s seen).
    for label, after in (("boot", 0.0), ("restart", event_time(ev1, "restart start"))):
        if not led or after is None:
            continue
        ups = [i for i, (t, v) in enumerate(led) if v == 1 and t > after]
        if ups and ups[0] + 2 < len(led):
            k = ups[0]
            first_on = led[k + 1][0] - led[k][0]
            first_off = led[k + 2][0] - led[k + 1][0]
            slow = 0.4 <= first_on <= 0.75 or (0.4 <= first_on <= 2.0 and 0.2 <= first_off <= 2.0)
            # The failing-sensor double blink outranks "starting": when the late SHT4x's first
            # look fails before the LED opens, the board shows it from the first edge (0.28 s lit,
            # 0.07 s dark, a blip, then 1.6 s dark seen). Blips under 0.4 s, then a long dark part.
            double = (k + 4 < len(led) and first_on < 0.4 and first_off < 0.3
                      and led[k + 3][0] - led[k + 2][0] < 0.4 and led[k + 4][0] - led[k + 3][0] >= 1.0)
            # A loop late under load may miss one blip of a pair: then the first seconds show only
            # blips (under 0.4 s lit) and long dark parts (1 s and more) — 0.18 lit, 1.83 dark,
            # 0.16, 0.15, 0.15, 1.86 seen — which no other pattern has.
            window = [e for e in led[k:] if e[0] < led[k][0] + 6]
            runs = [(window[i + 1][0] - window[i][0], window[i][1]) for i in range(len(window) - 1)]
            lit = [d for d, v in runs if v == 1]
            double = double or (len(lit) >= 3 and all(d < 0.4 for d in lit)
                                and any(d >= 1.0 for d, v in runs if v == 0))
            # With vimc the agent starts itself again with libcamera's layer early on, so the slow
            # blink may come after a blip (0.22 lit, 0.10 dark, 0.66 lit, 3.09 dark seen): a lit
            # stretch of 0.4-2 s followed by 0.2 s dark or more within the first 6 s is "starting".
            slow = slow or any(v == 1 and 0.4 <= d <= 2.0 and i + 1 < len(runs) and runs[i + 1][0] >= 0.2
                               for i, (d, v) in enumerate(runs))
            ledres["starting_" + label] = {"first_on_s": round(first_on, 3), "first_off_s": round(first_off, 3),
                                          "pattern": "starting" if slow else "sensorFault" if double else "other"}
    summary["led"] = ledres
    # At boot the SHT4x is missing (the late chip), so either is right: "starting" until its first
    # look fails, the double blink after.
    c.add("LED starting (or sensor fault: the late chip) at boot",
          ledres.get("starting_boot", {}).get("pattern") in ("starting", "sensorFault"),
          json.dumps(ledres.get("starting_boot")))
    c.add("LED streaming while the node answers", ledres.get("streaming", {}).get("pattern") == "streaming",
          json.dumps(ledres.get("streaming")))
    c.add("LED unreachable while the node is stopped", ledres.get("node_stopped", {}).get("pattern") == "nodeUnreachable",
          json.dumps(ledres.get("node_stopped")))

    # --- faults: the faulted output stops, the others flow, the log names it, it comes back
    faults = []
    recover = 20
    for fault, output, words in (("i2c-barometer", "barometer", ("0x76", "BMP280", "barometer")),
                                 ("usb-gps", "gps_data", ("ttyUSB0", "GPS", "gps")),
                                 ("camera", "camera0_H264", ("video0", "camera")),
                                 ("node-stopped", None, ("refused", "unreachable", "connect"))):
        t0 = event_time(ev1, "fault %s start" % fault)
        t1 = event_time(ev1, "fault %s end" % fault)
        if t0 is None or t1 is None:
            faults.append({"fault": fault, "ran": False})
            c.add("fault %s" % fault, False, "not run")
            continue
        jf = os.path.join(b1, "journal-%s.txt" % fault.split("-")[0].replace("usb", "gps"))
        jtxt = open(jf, errors="replace").read() if os.path.exists(jf) else ""
        named = [line for line in jtxt.splitlines() if any(w in line for w in words)]
        others = {}
        for name in ("quat_orientation_data", "audio_level", "barometer", "gps_data", "camera0_H264"):
            if name == output or name not in obs:
                continue
            others[name] = count_between(obs[name], t0 + 3, t1)
        f = {"fault": fault, "window_s": round(t1 - t0, 1), "others_during": others,
             "log": named[:3]}
        ok = bool(named) and all(v > 0 for v in others.values()) if fault != "node-stopped" else bool(named)
        if output:
            # During: from 5 s into the fault (what was already on its way may still land) to its end.
            # The GPS's fixes carry the host's time (the feed stamps each sentence as it sends it)
            # and the feed resumes at the host's device_add: fixes sent while the guest enumerates the
            # adapter again arrive after, stamped before the guest's "end". Its window ends at the plug.
            end = t1
            if fault == "usb-gps":
                plug = [e.get("host_time") for e in host_events if e.get("boot") == 1 and e.get("request") == "usb-plug"]
                if plug and plug[0]:
                    end = min(t1, plug[0])
                f["during_until"] = "the host's usb-plug" if end < t1 else "the fault's end"
            f["during"] = count_between(obs.get(output, []), t0 + 5, end)
            f["after"] = count_between(obs.get(output, []), t1, t1 + recover + 30)
            ok = ok and f["after"] > 0 and f["during"] <= 2
            detail = "%s: %d during, %d after; others during: %s; log: %s" % (
                output, f["during"], f["after"], others, named[0] if named else "nothing names it")
        else:
            f["after"] = {n: count_between(obs.get(n, []), t1 + 5, t1 + recover + 30) for n in ("quat_orientation_data", "barometer")}
            ok = ok and all(v > 0 for v in f["after"].values())
            detail = "after: %s; log: %s" % (f["after"], named[0] if named else "nothing names it")
        f["recovered"] = ok
        faults.append(f)
        c.add("fault %s: others flow, log names it, it comes back" % fault, ok, detail)
    summary["faults"] = faults

    # --- ids: the same system and datastreams after `systemctl restart` and after the power cycle
    def ids(path):
        doc = load_json(path, {}) or {}
        return sorted((d.get("id"), d.get("outputName") or d.get("name")) for d in doc.get("items", []))
    sys_before = ids(os.path.join(b1, "systems-restart-before.json"))
    sys_after = ids(os.path.join(b1, "systems-restart-after.json"))
    ds_before = ids(os.path.join(b1, "datastreams-restart-before.json"))
    ds_after = ids(os.path.join(b1, "datastreams-restart-after.json"))
    c.add("systemctl restart reuses the node's ids", len(sys_after) == 1 and sys_before == sys_after and ds_before == ds_after and ds_before,
          "systems %d → %d, datastreams %d → %d, same ids: %s" % (len(sys_before), len(sys_after), len(ds_before),
                                                                  len(ds_after), ds_before == ds_after))
    sys_pc = ids(os.path.join(b2, "systems-powercycle-after.json"))
    ds_pc = ids(os.path.join(b2, "datastreams-powercycle-after.json"))
    c.add("power cycle reuses the node's ids", len(sys_pc) == 1 and sys_pc == sys_after and ds_pc == ds_after and ds_pc,
          "after the power cycle: systems %d, datastreams %d, same ids as before: %s" % (
              len(sys_pc), len(ds_pc), sys_pc == sys_after and ds_pc == ds_after))
    ready2 = read_kv(os.path.join(b2, "service-ready.txt"))
    if ready2:
        service["boot2_to_ready_s"] = round(int(ready2.get("ActiveEnterTimestampMonotonic", "0") or 0) / 1e6, 2)
    node_down_at_boot(c, summary, b2, ready2, obs)

    # --- measured on arm64
    p0 = read_kv(os.path.join(b1, "proc-start.txt"))
    p1 = read_kv(os.path.join(b1, "proc-end.txt"))
    measured = {}
    try:
        dt = float(p1["uptime"]) - float(p0["uptime"])
        measured = {
            "window_s": round(dt, 1),
            "rss_kb": int(p1["rss_kb"]), "pss_kb": int(p1["pss_kb"]),
            "cpu_s_per_min": round((int(p1["cpu_ticks"]) - int(p0["cpu_ticks"])) / 100.0 / dt * 60, 2),
            "ctx_switches_per_s": round((int(p1["vol_ctxt"]) - int(p0["vol_ctxt"])) / dt, 1),
            "threads": int(p1["threads"]),
        }
        # Newer guests also sample these (footprint.sh's arm64 column); older summaries lack them.
        for key in ("rss_anon_kb", "rss_file_kb"):
            if p1.get(key, "").isdigit():
                measured[key] = int(p1[key])
        if p0.get("invol_ctxt", "").isdigit() and p1.get("invol_ctxt", "").isdigit():
            measured["invol_ctx_switches_per_s"] = round((int(p1["invol_ctxt"]) - int(p0["invol_ctxt"])) / dt, 1)
        measured.update({
            "note": "QEMU TCG (cortex-a72 emulated on a shared 2-core x86-64 host): CPU figures are "
                    "emulated time, several times a real Pi 4's",
        })
    except (KeyError, ValueError):
        pass
    summary["measured"] = measured
    c.add("measured on arm64", bool(measured), json.dumps(measured))
    summary["checks"] = c.items
    return summary


def late_chip(c, summary, b1, eh, obs, received):
    """The SHT4x: its values are the datasheet's conversion of the loaded words, and it came late
    (hidden by vpi-board.sh, let answer 20 s after the agent started): nothing from it before, it
    was found on the backoff, said once that it was missing and once that it was back."""
    tol = eh.get("tolerance", {})
    for name, field, key in (("temperature", "temperature", "temperature_C"),
                             ("humidity", "relativeHumidity", "humidity_percent")):
        values = [flatten(r).get(field) for _, r in obs.get(name, [])]
        values = [v for v in values if v is not None]
        received["%s_%s" % (name, key.split("_")[-1])] = sorted(set(round(v, 4) for v in values))
        want = eh.get(key)
        bad = [v for v in values if want is None or abs(v - want) > tol.get(key, 1e-4)]
        c.add("%s = SHT4x datasheet conversion of the loaded words" % name, bool(values) and not bad,
              "%d values, expected %s (±%g); %d differ%s" % (
                  len(values), want, tol.get(key, 1e-4), len(bad), ": e.g. %s" % bad[:3] if bad else ""))
    ev1 = events_of(b1)
    t_appear = event_time(ev1, "sht4x appears")
    ready = read_kv(os.path.join(b1, "service-ready.txt"))
    jpath = os.path.join(b1, "journal-osh-edge.txt")
    jl = open(jpath, errors="replace").read().splitlines() if os.path.exists(jpath) else []
    missing = [line for line in jl if "SHT4x" in line and "retrying" in line]
    back = [line for line in jl if "SHT4x" in line and ": back;" in line]
    times = sorted(t for t, _ in obs.get("temperature", []))
    r = {"appeared": t_appear is not None, "missing_lines": len(missing), "back_lines": len(back),
         "observations": len(times)}
    ok = t_appear is not None and bool(times)
    if ok:
        early = [t for t in times if t < t_appear - 1.0]
        r["before_it_answered"] = len(early)
        r["first_after_appearing_s"] = round(times[0] - t_appear, 1)
        ok = not early and times[0] - t_appear <= 35 and len(missing) == 1 and len(back) == 1
    summary["late_chip"] = r
    c.add("late chip: the SHT4x hidden for the agent's first 20 s is found and streamed", ok,
          "%s; log: %s / %s" % (json.dumps(r), missing[0].split(": ", 1)[-1][:120] if missing else "no 'retrying' line",
                                back[0].split(": ", 1)[-1][:80] if back else "no 'back' line"))


def node_down_at_boot(c, summary, b2, ready2, obs):
    """Boot 2 began with the node down (vpi-scenario.sh): the unit is ready without it and does not
    restart; what the IMU produced meanwhile was kept (ring, then spool) and reached the node."""
    ev2 = events_of(b2)
    t0 = event_time(ev2, "node-down-at-boot start")
    t1 = event_time(ev2, "node-down-at-boot node started")
    if t0 is None:
        summary["node_down_at_boot"] = {"ran": False}
        return
    down = read_kv(os.path.join(b2, "node-down.txt"))
    drained = event_time(ev2, "node-down-at-boot drained")
    r = {"ran": True, "down_s": round((t1 or t0) - t0, 1), "state_while_down": down.get("ActiveState"),
         "restarts_while_down": down.get("NRestarts"), "status_text": down.get("StatusText"),
         "drained_after_s": round(drained - t1, 1) if drained and t1 else None}
    c.add("node down at boot: ready without it, no restart", ready2.get("ActiveState") == "active"
          and down.get("ActiveState") == "active" and down.get("NRestarts") == "0",
          "READY %s s after boot with no node; after %s s without it: %s, NRestarts=%s, STATUS=%s" % (
              round(int(ready2.get("ActiveEnterTimestampMonotonic", "0") or 0) / 1e6, 1), r["down_s"],
              down.get("ActiveState"), down.get("NRestarts"), down.get("StatusText")))
    # The IMU's quaternions are produced at a steady rate from the agent's start: while the node was
    # down they went to the ring and the spool. Every second of the window must be at the node.
    times = sorted(t for t, _ in obs.get("quat_orientation_data", []) if t0 + 5 <= t < (t1 or t0) - 2)
    gaps = [b - a for a, b in zip(times, times[1:])]
    r["quat_in_window"] = len(times)
    r["largest_gap_s"] = round(max(gaps), 2) if gaps else None
    window = (t1 or t0) - 2 - (t0 + 5)
    rate = len(times) / window if window > 0 else 0
    r["quat_rate_hz"] = round(rate, 2)
    c.add("node down at boot: the backlog spooled and delivered", bool(drained) and times and max(gaps or [99]) <= 1.0
          and rate >= 8.0,
          "spool drained %s s after the node started; %d quaternions sampled while it was down (%.2f Hz), largest gap %s s" % (
              r["drained_after_s"], len(times), rate, r["largest_gap_s"]))
    summary["node_down_at_boot"] = r


def gpsdecode_positions(path):
    text = open(path, "rb").read()
    try:
        r = subprocess.run(["gpsdecode"], input=text + text, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    out = []
    for line in r.stdout.decode(errors="replace").splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("class") == "TPV" and "lat" in d and "lon" in d:
            out.append((d["lat"], d["lon"]))
    return out


def sox_rms_db(path):
    r = subprocess.run(["sox", path, "-n", "stats"], capture_output=True, text=True)
    for line in r.stderr.splitlines():
        if line.startswith("RMS lev dB"):
            return float(line.split()[3])
    return float("nan")


def check_camera(frames):
    if not frames:
        return {"frames": 0}
    types = set()
    with tempfile.NamedTemporaryFile(suffix=".h264", delete=False) as f:
        for _, data in frames:
            f.write(data)
            types.update(nal_types(data))
        path = f.name
    try:
        r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                            "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "json", path],
                           capture_output=True, text=True, timeout=120)
        st = (json.loads(r.stdout or "{}").get("streams") or [{}])[0]
        errors = r.stderr.strip().splitlines()
    finally:
        os.unlink(path)
    return {"frames": len(frames), "decoded": int(st.get("nb_read_frames", 0) or 0),
            "codec": "%s %sx%s" % (st.get("codec_name"), st.get("width"), st.get("height")),
            "nal_types": sorted(types), "ffprobe_errors": errors[:5]}


def table(s):
    lines = []
    sv = s.get("service", {})
    lines.append("virtual Pi (%s)" % ", ".join((s.get("package") or ["?"])[:2]))
    lines.append("service  ready=%s  boot→READY %s s  unit start→READY %s s  watchdog %s  restarts %s" % (
        sv.get("ready"), sv.get("boot_to_ready_s"), sv.get("unit_start_to_ready_s"), sv.get("watchdog_usec"),
        sv.get("restarts_boot1")))
    lines.append("%-32s %8s" % ("datastream", "count"))
    for n, d in sorted(s.get("datastreams", {}).items()):
        lines.append("%-32s %8d" % (n, d["count"]))
    m = s.get("measured", {})
    if m:
        lines.append("arm64 (TCG): VmRSS %s kB, PSS %s kB, CPU %s s/min, %s voluntary switches/s, %s threads" % (
            m.get("rss_kb"), m.get("pss_kb"), m.get("cpu_s_per_min"), m.get("ctx_switches_per_s"), m.get("threads")))
    for name, r in s.get("led", {}).items():
        lines.append("LED %-14s %s" % (name, r.get("pattern")))
    lines.append("")
    for ch in s.get("checks", []):
        lines.append("%-4s %s — %s" % ("ok" if ch["ok"] else "FAIL", ch["check"], ch["detail"]))
    return "\n".join(lines)
