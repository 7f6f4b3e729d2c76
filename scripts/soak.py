#!/usr/bin/env python3
"""The chaos soak's orchestrator (issue 17). Run it through scripts/soak.sh, which builds the
binaries and gives it a private mount namespace for the small tmpfs state directory.

One agent (`osh-edge-sim run`: every output on, the spool on) against the development node in
another process (`osh-edge-dev node --ledger --control-stdin`), on loopback only. A seeded
scheduler injects one fault at a time; the agent is restarted after it dies, as systemd would.
At the end every datastream is accounted for from two independent books: the agent's counters
file (cumulative per process, written every second, so a kill -9 leaves the last second's) and
the node's ledger (one line per stored observation, across node restarts).

Per datastream (output name):
  produced  P = sum over the agent's lifetimes of `produced` (a killed lifetime: its last snapshot)
  delivered D = distinct phenomenon times at the node, leaving out a killed lifetime's "tail"
                (observations produced after its last snapshot: not in P either)
  dropped   X = the agent's counted drops, by reason
  spooled   S = what is left in the spool after the final, graceful stop
  in RAM at kill -9  K = P - D - X - S, which must lie within the `pending` (ring + in flight)
                of the snapshots taken before the kills: anything else is lost silently
  duplicates U = stored observations beyond the first with the same time: at most the agent's
                `unknown_outcome` count (sent again after a request whose fate it could not know)
                plus one batch per kill -9 (a spool batch the node stored just before the kill)
"""
import argparse
import collections
import errno
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import tty
import urllib.error
import urllib.request

FAULTS = [
    "node_down", "node_frozen", "burst_5xx", "auth_401", "redirect_302", "slow_responses",
    "reset_mid_body", "datastream_deleted", "node_restart_empty", "serial_unplug", "i2c_fail",
    "sighup_changed", "sighup_broken", "kill9", "disk_full", "command_storm",
]
# The simulated board's chips (DemoSimulation): MPU-9250 with its AK8963, BMP280.
I2C_ADDRESSES = {"imu": "0x68", "barometer": "0x76"}
BATCH_MAX = 50
RESTART_SEC = 5.0          # deploy/osh-edge.service: Restart=on-failure, RestartSec=5


def epoch():
    return time.time()


class Report:
    def __init__(self, path):
        self.t0 = time.monotonic()
        self.f = open(path, "a", buffering=1)

    def __call__(self, msg):
        line = "[soak %7.1f s] %s" % (time.monotonic() - self.t0, msg)
        self.f.write(line + "\n")
        print(line, flush=True)


# --- The GPS: an NMEA log replayed through a pseudo-terminal, unpluggable --------------------

def nmea_cycles(path):
    """The log's receiver cycles (a new one starts when GGA/RMC carry a new time of day)."""
    cycles, cur, tod = [], [], None
    with open(path, "rb") as f:
        for raw in f:
            line = raw.strip()
            if not line.startswith(b"$"):
                continue
            fields = line.split(b",")
            if fields[0][3:6] in (b"GGA", b"RMC") and len(fields) > 1 and fields[1] and fields[1] != tod:
                if cur and tod is not None:
                    cycles.append(cur)
                cur, tod = [], fields[1]
            cur.append(line)
    if cur:
        cycles.append(cur)
    return cycles


def restamp(line, t):
    """The sentence with its time (and RMC date) set to t, checksum recomputed: a live receiver."""
    body = line[1:].split(b"*")[0]
    fields = body.split(b",")
    kind = fields[0][2:5]
    g = time.gmtime(t)
    hms = b"%02d%02d%02d.00" % (g.tm_hour, g.tm_min, g.tm_sec)
    if kind in (b"GGA", b"RMC") and len(fields) > 1:
        fields[1] = hms
    if kind == b"GLL" and len(fields) > 5:
        fields[5] = hms
    if kind == b"RMC" and len(fields) > 9:
        fields[9] = b"%02d%02d%02d" % (g.tm_mday, g.tm_mon, g.tm_year % 100)
    if kind == b"ZDA" and len(fields) > 4:
        fields[1], fields[2], fields[3], fields[4] = hms, b"%02d" % g.tm_mday, b"%02d" % g.tm_mon, b"%04d" % g.tm_year
    body = b",".join(fields)
    cs = 0
    for c in body:
        cs ^= c
    return b"$" + body + b"*%02X\r\n" % cs


class GPSFeeder(threading.Thread):
    def __init__(self, log_path, link):
        super().__init__(daemon=True)
        self.cycles = nmea_cycles(log_path)
        self.link = link
        self.lock = threading.Lock()
        self.master = None
        self.plugged = False
        self.stopping = False
        self.written = 0

    def plug(self):
        with self.lock:
            if self.plugged:
                return
            m, s = os.openpty()
            tty.setraw(s)
            os.set_blocking(m, False)
            name = os.ttyname(s)
            # Not held open here: the agent refuses a serial device another process has open.
            os.close(s)
            try:
                os.unlink(self.link)
            except FileNotFoundError:
                pass
            os.symlink(name, self.link)
            self.master, self.plugged = m, True

    def unplug(self):
        with self.lock:
            if not self.plugged:
                return
            try:
                os.unlink(self.link)
            except FileNotFoundError:
                pass
            os.close(self.master)
            self.master = None
            self.plugged = False

    def run(self):
        i = 0
        nxt = int(epoch()) + 1
        while not self.stopping:
            time.sleep(max(0.0, nxt - epoch()))
            with self.lock:
                if self.plugged:
                    data = b"".join(restamp(l, nxt) for l in self.cycles[i % len(self.cycles)])
                    try:
                        os.write(self.master, data)
                        self.written += 1
                    except OSError:
                        pass  # nobody reading: the pty's buffer is full; a receiver drops too
            i += 1
            nxt += 1


# --- The node: another process, its mode set through its stdin -------------------------------

class Node:
    def __init__(self, dev_bin, port, ledger, log_path, report):
        self.dev_bin, self.port, self.ledger, self.log_path, self.report = dev_bin, port, ledger, log_path, report
        self.p = None
        self.expect_exit = False
        self.frozen = False
        self.incarnations = 0
        self.crashes = 0

    @property
    def api(self):
        return "http://127.0.0.1:%d/sensorhub/api" % self.port

    def start(self):
        log = open(self.log_path, "ab")
        self.p = subprocess.Popen([self.dev_bin, "node", "--port", str(self.port), "--ledger", self.ledger,
                                   "--control-stdin"], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.expect_exit = False
        self.frozen = False
        self.incarnations += 1
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.api, timeout=1).read()
                return
            except Exception:
                time.sleep(0.1)
        raise SystemExit("soak: the development node did not answer on port %d within 15 s (log: %s)"
                         % (self.port, self.log_path))

    def control(self, line):
        try:
            self.p.stdin.write((line + "\n").encode())
            self.p.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.report("node control '%s' failed: %s" % (line, e))

    def signal(self, sig):
        if self.p and self.p.poll() is None:
            self.p.send_signal(sig)

    def kill(self):
        self.expect_exit = True
        if self.frozen:
            self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        self.p.wait()

    def check(self):
        """Restarts a node that died on its own (a crash: counted, the soak fails)."""
        if self.p.poll() is not None and not self.expect_exit:
            self.crashes += 1
            self.report("NODE CRASHED (exit %s): restarting it" % self.p.returncode)
            self.start()

    def get_json(self, path):
        with urllib.request.urlopen(self.api + path, timeout=5) as r:
            return json.loads(r.read())


# --- The agent: osh-edge-sim run, restarted like systemd would --------------------------------

def read_counters(path):
    """The counters file: {output: {key: number}} and its header, or (None, None)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None, None
    if not lines or not lines[0].startswith("counters "):
        return None, None
    header = dict(kv.split("=", 1) for kv in lines[0].split()[1:])
    out = {}
    for line in lines[1:]:
        parts = line.split()
        if not parts:
            continue
        out[parts[0]] = {k: float(v) for k, v in (kv.split("=", 1) for kv in parts[1:])}
    return header, out


class Agent:
    def __init__(self, sim_bin, config, counters, log_path, env, report):
        self.sim_bin, self.config, self.counters, self.log_path, self.env, self.report = \
            sim_bin, config, counters, log_path, env, report
        self.p = None
        self.lifetimes = []          # dicts: start, end, how, counters, header
        self.expect = None           # "kill9" | "term" while we are the cause of an exit
        self.config_broken = False   # a sighup_broken fault has written a file run must refuse
        self.restart_at = None
        self.crashes = 0
        self.stopping = False

    def start(self):
        try:
            os.unlink(self.counters)
        except FileNotFoundError:
            pass
        log = open(self.log_path, "ab")
        started = epoch()
        log.write(b"\n=== soak: agent start %.3f ===\n" % started)
        log.flush()
        self.p = subprocess.Popen([self.sim_bin, "run", "--config", self.config], stdout=log,
                                  stderr=subprocess.STDOUT, env=self.env)
        log.close()
        # Started while a sighup_broken fault has the file broken: refusing it (exit 2) is right.
        self.lifetimes.append({"start": started, "pid": self.p.pid, "config_broken": self.config_broken})
        self.expect = None
        self.restart_at = None

    @property
    def alive(self):
        return self.p is not None and self.p.poll() is None

    def signal(self, sig):
        if self.alive:
            self.p.send_signal(sig)
            return True
        return False

    def kill9(self):
        if not self.alive:
            return False
        self.expect = "kill9"
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        self.check()
        return True

    def check(self):
        """Books a lifetime that ended (its last counters), and restarts the agent RestartSec later."""
        if self.p is not None and self.p.poll() is not None and "end" not in self.lifetimes[-1]:
            rc = self.p.returncode
            life = self.lifetimes[-1]
            life["end"] = epoch()
            life["exit"] = rc
            life["header"], life["counters"] = read_counters(self.counters)
            if life["header"] is not None and life["header"].get("pid") != str(life["pid"]):
                # Another lifetime's file (this one ended before writing its own): none of it is ours.
                life["header"], life["counters"] = None, {}
            if self.expect == "kill9":
                life["how"] = "kill9"
            elif self.expect == "term" and rc == 0:
                life["how"] = "term"
            elif rc == 2 and life.get("config_broken"):
                # The harness restarted it (after a kill9) into a broken file: a refusal at start,
                # as systemd would see it; any other exit, or 2 with a good file, is a crash.
                life["how"] = "refused-broken-config"
            else:
                life["how"] = "crash(%s)" % rc
                self.crashes += 1
                self.report("AGENT CRASHED (exit %s); see %s" % (rc, self.log_path))
            if not self.stopping:
                self.restart_at = time.monotonic() + RESTART_SEC
        if not self.alive and self.restart_at is not None and time.monotonic() >= self.restart_at and not self.stopping:
            self.start()

    def stop(self, timeout=20):
        self.stopping = True
        if not self.alive:
            self.check()
            return
        self.expect = "term"
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.report("the agent did not stop within %d s of SIGTERM: killing it" % timeout)
            self.expect = "kill9"
            self.p.kill()
            self.p.wait()
        self.check()


# --- Configuration ---------------------------------------------------------------------------

def config_text(a, audio_rate=10, baro_rate=1, broken=False):
    if broken:
        return "[server.main]\nurl = \"http://127.0.0.1:%d/sensorhub/api\"\n[publisher]\nbatch_max = many\n" % a.port
    return f"""# written by scripts/soak.py
[server.main]
url = "http://127.0.0.1:{a.port}/sensorhub/api"
request_timeout = 10
connect_timeout = 5
[system]
uid = "urn:osh:edge:soak"
label = "osh-edge soak"
[publisher]
ring_capacity = 400
spool = true
spool_max_mb = 1
spool_fsync = "second"
[time]
require_sync = false
[gps]
device = "{a.work}/gps0"
baud = 9600
[outputs.gps_data]
enabled = true
[outputs.quat_orientation_data]
enabled = true
source = "simulated"
[outputs.euler_orientation_data]
enabled = true
source = "simulated"
[outputs.accelerometer]
enabled = true
source = "simulated"
[outputs.gyroscope]
enabled = true
source = "simulated"
[outputs.magnetometer]
enabled = true
source = "simulated"
[outputs.barometer]
enabled = true
source = "simulated"
rate = {baro_rate}
[outputs.audio_level]
enabled = true
source = "simulated"
rate = {audio_rate}
[audio]
device = "{a.work}/mic.wav"
[outputs.camera0_H264]
enabled = true
rate = 5
[camera]
device = "test-pattern"
width = 320
height = 240
encoder = "x264"
keyframe_interval = 10
bitrate = 300
threads = 1
[outputs.device_health]
enabled = true
rate = 0.2
[log]
level = "info"
[paths]
state_directory = "{a.work}/state"
counters_file = "{a.work}/run/counters"
"""


def write_wav(path, seconds=5, rate=48000):
    import struct
    import wave
    rnd = random.Random(7)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        frames = bytearray()
        for i in range(seconds * rate):
            env = 0.1 + 0.9 * (i // rate % 2)      # louder every other second: the levels move
            frames += struct.pack("<h", int(rnd.gauss(0, 3000) * env))
        w.writeframes(bytes(frames))


def atomic_write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# --- The soak -------------------------------------------------------------------------------

class Soak:
    def __init__(self, a):
        self.a = a
        os.makedirs(a.work, exist_ok=True)
        for d in ("run", "lifetimes"):
            os.makedirs(os.path.join(a.work, d), exist_ok=True)
        os.makedirs(os.path.join(a.work, "state"), exist_ok=True)
        self.report = Report(os.path.join(a.work, "soak.log"))
        self.rng = random.Random(a.seed)
        self.injected = collections.Counter()
        self.skipped = collections.Counter()
        self.samples = []      # (t since start, pid, rss kB, fds)
        self.conf = os.path.join(a.work, "osh-edge.conf")
        self.good = config_text(a)
        self.ledger = os.path.join(a.work, "ledger.txt")
        self.faults_file = os.path.join(a.work, "sim-faults")
        self.storms = []

    # Faults: each returns an undo function (or None when instantaneous).
    def fault(self, kind, duration):
        a, node, agent = self.a, self.node, self.agent
        if kind == "node_down":
            node.control("mode refuse")
            return lambda: node.control("mode normal")
        if kind == "node_frozen":
            node.signal(signal.SIGSTOP)
            node.frozen = True

            def thaw():
                node.signal(signal.SIGCONT)
                node.frozen = False
            return thaw
        if kind == "burst_5xx":
            node.control("mode status %d" % self.rng.choice([500, 502, 503]))
            return lambda: node.control("mode normal")
        if kind == "auth_401":
            node.control("mode status 401")
            return lambda: node.control("mode normal")
        if kind == "redirect_302":
            node.control("mode status 302")
            return lambda: node.control("mode normal")
        if kind == "slow_responses":
            node.control("mode delay %.1f" % self.rng.uniform(1.0, 4.0))
            return lambda: node.control("mode normal")
        if kind == "reset_mid_body":
            node.control("mode reset")
            return lambda: node.control("mode normal")
        if kind == "datastream_deleted":
            names = self.current_outputs()
            if not names:
                self.skipped[kind] += 1
                return None
            name = self.rng.choice(sorted(names))
            node.control("delete " + name)
            self.report("  deleted the datastream of %s" % name)
            return None
        if kind == "node_restart_empty":
            node.kill()
            time.sleep(self.rng.uniform(0.5, 3.0))
            node.start()
            return None
        if kind == "serial_unplug":
            self.gps.unplug()
            return self.gps.plug
        if kind == "i2c_fail":
            which = self.rng.choice(sorted(I2C_ADDRESSES))
            atomic_write(self.faults_file, "i2c fail %s\n" % I2C_ADDRESSES[which])
            self.report("  I2C %s (%s) fails" % (which, I2C_ADDRESSES[which]))
            return lambda: atomic_write(self.faults_file, "")
        if kind == "sighup_changed":
            atomic_write(self.conf, config_text(a, audio_rate=self.rng.choice([5, 10]),
                                                baro_rate=self.rng.choice([1, 2])))
            if not agent.signal(signal.SIGHUP):
                self.skipped[kind] += 1
            return None
        if kind == "sighup_broken":
            atomic_write(self.conf, config_text(a, broken=True))
            agent.config_broken = True
            if not agent.signal(signal.SIGHUP):
                self.skipped[kind] += 1

            # The agent keeps the running configuration; the file is mended for the next start.
            def mend():
                atomic_write(self.conf, self.good)
                agent.config_broken = False
            return mend
        if kind == "kill9":
            if not agent.kill9():
                self.skipped[kind] += 1
            return None
        if kind == "disk_full":
            return self.fill_disk()
        if kind == "command_storm":
            t = threading.Thread(target=self.command_storm, args=(int(20 + 10 * duration),), daemon=True)
            t.start()
            self.storms.append(t)
            return None
        raise ValueError(kind)

    def fill_disk(self):
        path = os.path.join(self.a.work, "state", "filler")
        chunk = b"\0" * 65536
        n = 0
        try:
            with open(path, "wb") as f:
                limit = self.a.filler_limit_mb * 16 or None
                while limit is None or n < limit:
                    f.write(chunk)
                    f.flush()
                    n += 1
        except OSError as e:
            if e.errno != errno.ENOSPC:
                self.report("  filling the state directory: %s" % e)
        self.report("  state directory full (%d KiB of filler)" % (n * 64))

        def free():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        return free

    def command_storm(self, n):
        """n device_control commands through the node's API, 8 at a time; the node forwards
        them over the agent's WebSocket. Answers (201, 202, errors while the node misbehaves)
        are counted, not checked: the agent must only survive them."""
        try:
            items = self.node.get_json("/controlstreams?f=json").get("items", [])
        except Exception as e:
            self.report("  command storm: no control streams (%s)" % e)
            return
        cs = next((c for c in items if c.get("inputName") == "device_control" or c.get("name") == "device_control"), None)
        if cs is None:
            self.report("  command storm: no device_control stream yet")
            return
        url = self.node.api + "/controlstreams/%s/commands" % cs["id"]
        bodies = [
            {"identify": {"duration": 0.5}},
            {"setRate": {"outputName": "device_health", "rate": 0.2}},
            {"setRate": {"outputName": "audio_level", "rate": 10}},
            {"enableOutput": {"outputName": "barometer", "enabled": True}},
            {"setRate": {"outputName": "no_such_output", "rate": 1}},
        ]
        statuses = collections.Counter()
        lock = threading.Lock()
        rnd = random.Random(self.rng.random())
        jobs = [rnd.choice(bodies) for _ in range(n)]

        def worker():
            while True:
                with lock:
                    if not jobs:
                        return
                    body = jobs.pop()
                req = urllib.request.Request(url, data=json.dumps({"parameters": body}).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
                try:
                    with urllib.request.urlopen(req, timeout=8) as r:
                        s = r.status
                except urllib.error.HTTPError as e:
                    s = e.code
                except Exception:
                    s = 0
                with lock:
                    statuses[s] += 1
        ts = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.report("  command storm: %d commands, answers %s" % (n, dict(sorted(statuses.items()))))

    def current_outputs(self):
        names = set()
        try:
            with open(self.ledger) as f:
                for line in f:
                    p = line.split()
                    if p and p[0] == "node-start":
                        names = set()
                    elif p and p[0] == "datastream" and len(p) >= 3:
                        names.add(p[2])
                    elif p and p[0] == "deleted" and len(p) >= 4:
                        names.discard(p[3])
        except FileNotFoundError:
            pass
        return names

    def sample(self, elapsed):
        if not self.agent.alive:
            return
        pid = self.agent.p.pid
        try:
            rss = 0
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1])
            fds = len(os.listdir("/proc/%d/fd" % pid))
        except (FileNotFoundError, ProcessLookupError):
            return
        self.samples.append((elapsed, pid, rss, fds))

    def run(self):
        a, rep = self.a, self.report
        total = a.minutes * 60.0
        quiet = min(300.0, max(30.0, 0.15 * total))
        short = a.minutes < 10
        rep("seed %d, %.0f s of faults then %.0f s quiet, work directory %s" % (a.seed, total - quiet, quiet, a.work))
        write_wav(os.path.join(a.work, "mic.wav"))
        atomic_write(self.conf, self.good)
        atomic_write(self.faults_file, "")
        self.gps = GPSFeeder(a.nmea_log, os.path.join(a.work, "gps0"))
        self.gps.plug()
        self.gps.start()
        self.node = Node(a.dev_bin, a.port, self.ledger, os.path.join(a.work, "node.log"), rep)
        self.node.start()
        env = dict(os.environ, OSH_EDGE_SIM_FAULTS=self.faults_file, SWIFT_BACKTRACE="enable=no")
        self.agent = Agent(a.sim_bin, self.conf, os.path.join(a.work, "run", "counters"),
                           os.path.join(a.work, "agent.log"), env, rep)
        self.agent.start()

        t0 = time.monotonic()
        warmup = 10.0
        plan = []                       # every kind once (shuffled), then at random
        active = None                   # (kind, undo, end time)
        next_fault = t0 + warmup
        next_sample = t0
        while True:
            now = time.monotonic()
            el = now - t0
            self.agent.check()
            self.node.check()
            if now >= next_sample:
                self.sample(el)
                next_sample += 10.0
            if active and now >= active[2]:
                kind, undo, _ = active
                if undo:
                    undo()
                rep("end %s" % kind)
                active = None
                gap = self.rng.uniform(1.5, 3.0) if short else self.rng.uniform(5.0, 20.0)
                next_fault = now + gap
            if active is None and now >= next_fault and el < total - quiet:
                if not plan:
                    plan = FAULTS[:] if not self.injected else [self.rng.choice(FAULTS) for _ in range(len(FAULTS))]
                    self.rng.shuffle(plan)
                kind = plan.pop()
                dur = self.rng.uniform(3.0, 6.0) if short else self.rng.uniform(5.0, 40.0)
                dur = min(dur, max(1.0, total - quiet - el))
                rep("fault %s for %.1f s" % (kind, dur))
                self.injected[kind] += 1
                undo = self.fault(kind, dur)
                active = (kind, undo, time.monotonic() + (dur if undo else 0.5))
            if el >= total and active is None:
                break
            time.sleep(0.1)
        return self.finish(t0)

    def finish(self, t0):
        rep, a = self.report, self.a
        for t in self.storms:
            t.join(timeout=30)
        # Drain: the node is well; wait until nothing is pending in the agent and the spool is empty.
        deadline = time.monotonic() + a.drain_seconds
        drained = False
        while time.monotonic() < deadline:
            self.agent.check()
            _, c = read_counters(self.agent.counters)
            spool = self.spool_status()
            # Live outputs always have a flush's worth pending or in flight; "drained" is an
            # empty spool and no backlog beyond that.
            if c and max(v.get("pending", 0) for v in c.values()) <= 100 and spool is not None \
                    and spool.get("records", 1) == 0:
                drained = True
                break
            time.sleep(1)
        rep("drained: %s" % ("yes" if drained else "no (after %d s)" % a.drain_seconds))
        self.agent.stop()
        spool = self.spool_status() or {}
        self.gps.stopping = True
        summary = self.account(spool, drained, time.monotonic() - t0)
        self.node.kill()
        with open(os.path.join(a.work, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
        return summary

    def spool_status(self):
        try:
            out = subprocess.run([self.a.sim_bin, "spool", "status", "--config", self.conf, "--json"],
                                 capture_output=True, timeout=30).stdout
            return json.loads(out)
        except Exception:
            return None

    # --- The books ---------------------------------------------------------------------------
    def account(self, spool, drained, elapsed):
        rep = self.report
        lives = self.agent.lifetimes
        for i, life in enumerate(lives):
            with open(os.path.join(self.a.work, "lifetimes", "%02d.json" % i), "w") as f:
                json.dump(life, f, indent=1, sort_keys=True)
        # Agent side.
        keys = ["produced", "sent", "spooled", "sent_from_spool", "unknown_outcome", "dropped"]
        agent = collections.defaultdict(collections.Counter)
        in_ram_bound = collections.Counter()
        tails = []                      # (output, after, until): a killed lifetime's unsnapshotted tail
        kills = 0
        for i, life in enumerate(lives):
            c = life.get("counters") or {}
            end = life.get("end", epoch())
            nxt = lives[i + 1]["start"] if i + 1 < len(lives) else end
            for name, v in c.items():
                for k in keys + [k for k in v if k.startswith("dropped_")]:
                    agent[name][k] += int(v.get(k, 0))
                if life.get("how") != "term":
                    in_ram_bound[name] += int(v.get("pending", 0))
                    tails.append((name, v.get("last_produced", 0.0), nxt))
            if life.get("how") != "term":
                kills += 1
                if not c:
                    # Killed before its first snapshot: all of it is tail.
                    tails.append((None, life["start"] - 1.0, nxt))
        # Node side.
        times = collections.defaultdict(list)
        systems_per_node, uids, node_starts = [], set(), 0
        with open(self.ledger) as f:
            for line in f:
                p = line.split()
                if not p:
                    continue
                if p[0] == "node-start":
                    node_starts += 1
                    systems_per_node.append(0)
                elif p[0] == "system" and len(p) >= 3:
                    if not systems_per_node:
                        systems_per_node.append(0)
                    systems_per_node[-1] += 1
                    uids.add(p[2])
                elif p[0] == "obs" and len(p) >= 4:
                    times[p[2]].append(float(p[3]))

        def in_tail(name, t):
            # Times travel in milliseconds (rounded), the counters keep microseconds: half a
            # millisecond of slack (a datastream's observations are at least 10 ms apart).
            for n, after, until in tails:
                if (n is None or n == name) and after + 0.0005 < t <= until:
                    return True
            return False

        rows, failures = [], []
        totals = collections.Counter()
        names = sorted(set(agent) | set(times))
        for name in names:
            ts = times.get(name, [])
            kept = [t for t in ts if not in_tail(name, t)]
            tail = len(ts) - len(kept)
            seen, dup, ooo, hi = set(), 0, 0, float("-inf")
            for t in kept:
                key = round(t, 6)
                if key in seen:
                    dup += 1
                else:
                    seen.add(key)
                if t < hi:
                    ooo += 1
                hi = max(hi, t)
            g = agent[name]
            P = g["produced"]
            D = len(seen)
            X = g["dropped"]
            S = int((spool.get("perOutput") or {}).get(name, 0))
            K = P - D - X - S
            U = dup
            row = dict(output=name, produced=P, delivered=D, dropped=X, spooled_left=S, in_ram_at_kill=K,
                       in_ram_bound=in_ram_bound[name], duplicates=U, unknown_outcome=g["unknown_outcome"],
                       out_of_order=ooo, tail=tail, spooled=g["spooled"], sent_from_spool=g["sent_from_spool"],
                       **{k: g[k] for k in g if k.startswith("dropped_")})
            rows.append(row)
            for k in ("produced", "delivered", "dropped", "spooled_left", "duplicates", "tail", "out_of_order"):
                totals[k] += row[k]
            totals["in_ram_at_kill"] += max(K, 0)
            totals["unknown_outcome"] += g["unknown_outcome"]
            # A video frame whose request got no answer is counted dropped (frames are not sent
            # again), yet the node may hold it: those may appear on both sides.
            if K < -g["dropped_unknown"]:
                failures.append("%s: the node holds %d more observations than the agent produced" % (name, -K))
            elif K > in_ram_bound[name]:
                failures.append("%s: %d observations lost silently (P %d − D %d − X %d − S %d exceeds the %d in RAM at the kills)"
                                % (name, K - in_ram_bound[name], P, D, X, S, in_ram_bound[name]))
            allowed = g["unknown_outcome"] + kills * BATCH_MAX
            if U > allowed:
                failures.append("%s: %d duplicates at the node, more than the %d the agent's unknown outcomes and kills explain"
                                % (name, U, allowed))
        if any(n > 1 for n in systems_per_node):
            failures.append("a node incarnation holds more than one system: %s" % systems_per_node)
        if len(uids) > 1:
            failures.append("systems with different UIDs at the node: %s" % sorted(uids))
        if self.agent.crashes:
            failures.append("the agent crashed %d time(s) (not an injected kill)" % self.agent.crashes)
        if self.node.crashes:
            failures.append("the node crashed %d time(s)" % self.node.crashes)
        if not drained:
            failures.append("the agent did not empty its spool and backlog within %d s of the quiet period"
                            % self.a.drain_seconds)
        for path in (self.agent.log_path, self.node.log_path):
            with open(path, errors="replace") as f:
                for line in f:
                    if "AddressSanitizer" in line or "ThreadSanitizer" in line or "Fatal error" in line:
                        failures.append("%s: %s" % (os.path.basename(path), line.strip()[:200]))
                        break
        lost = sum(max(0, r["in_ram_at_kill"] - r["in_ram_bound"]) for r in rows)

        # Process samples: per minute, the agent's RSS and fds.
        per_min = collections.OrderedDict()
        for el, pid, rss, fds in self.samples:
            m = int(el // 60)
            lo = per_min.setdefault(m, [rss, rss, fds, fds])
            lo[0], lo[1], lo[2], lo[3] = min(lo[0], rss), max(lo[1], rss), min(lo[2], fds), max(lo[3], fds)
        warm = [s for s in self.samples if s[0] >= 60] or self.samples
        rss_range = (min(s[2] for s in warm), max(s[2] for s in warm)) if warm else (0, 0)
        fd_range = (min(s[3] for s in warm), max(s[3] for s in warm)) if warm else (0, 0)

        # Print.
        hdr = "%-32s %9s %9s %7s %6s %6s %6s %5s %5s %5s %6s" % (
            "datastream", "produced", "delivered", "dropped", "spool", "inRAM", "dupl", "unkn", "ooo", "tail", "spooled")
        rep("per datastream (dropped: every counted reason; spool: left in it at the end; inRAM: in the ring or in"
            " flight at a kill -9; unkn: sent with no answer; ooo: arrived older than one before it; tail: delivered"
            " after a killed lifetime's last counters):")
        rep(hdr)
        for r in rows:
            rep("%-32s %9d %9d %7d %6d %6d %6d %5d %5d %5d %6d" % (
                r["output"][:32], r["produced"], r["delivered"], r["dropped"], r["spooled_left"], r["in_ram_at_kill"],
                r["duplicates"], r["unknown_outcome"], r["out_of_order"], r["tail"], r["spooled"]))
            reasons = {k[8:]: r[k] for k in r if k.startswith("dropped_") and r[k]}
            if reasons:
                rep("%-32s   drops by reason: %s" % ("", reasons))
        rep("faults injected: %s (total %d)" % (dict(sorted(self.injected.items())), sum(self.injected.values())))
        if self.skipped:
            rep("faults that found nothing to act on: %s" % dict(self.skipped))
        rep("agent lifetimes: %d (%s); restarts %d; crashes %d; node incarnations %d; node crashes %d" % (
            len(lives), ", ".join(l.get("how", "?") for l in lives), len(lives) - 1, self.agent.crashes,
            self.node.incarnations, self.node.crashes))
        rep("agent VmRSS after the first minute: %d–%d kB; open fds %d–%d" % (rss_range + fd_range))
        for m, (r0, r1, f0, f1) in per_min.items():
            rep("  minute %3d: VmRSS %d–%d kB, fds %d–%d" % (m, r0, r1, f0, f1))
        rep("systems per node incarnation: %s" % systems_per_node)
        for f in failures:
            rep("INVARIANT FAILED: " + f)
        n_faults = sum(self.injected.values())
        final = "soak: %d faults, produced %d, delivered %d, dropped %d (counted), duplicates %d, lost %d" % (
            n_faults, totals["produced"], totals["delivered"], totals["dropped"] + totals["in_ram_at_kill"],
            totals["duplicates"], lost)
        rep("killed in RAM (counted from the kills' last snapshots): %d; left in the spool: %d; tails after the last snapshot: %d"
            % (totals["in_ram_at_kill"], totals["spooled_left"], totals["tail"]))
        print(final, flush=True)
        self.report.f.write(final + "\n")
        return dict(seconds=round(elapsed, 1), seed=self.a.seed, faults=dict(self.injected), skipped=dict(self.skipped),
                    rows=rows, totals=dict(totals), lost=lost, failures=failures, lifetimes=len(lives),
                    crashes=self.agent.crashes, node_crashes=self.node.crashes, rss_kB=rss_range, fds=fd_range,
                    per_minute={str(k): v for k, v in per_min.items()}, systems_per_node=systems_per_node, final=final,
                    drained=drained, spool=spool, samples=self.samples, node_incarnations=self.node.incarnations)


def reaccount(work):
    """The books of a finished soak again, from its work directory (lifetimes/, the ledger,
    summary.json): after a change to the accounting, without running it again."""
    from types import SimpleNamespace as NS
    with open(os.path.join(work, "summary.json")) as f:
        old = json.load(f)
    s = Soak.__new__(Soak)
    s.a = NS(work=work, seed=old.get("seed", 0), drain_seconds=180)
    s.report = Report(os.path.join(work, "reaccount.log"))
    s.ledger = os.path.join(work, "ledger.txt")
    s.injected = collections.Counter(old.get("faults", {}))
    s.skipped = collections.Counter(old.get("skipped", {}))
    lives = []
    for name in sorted(os.listdir(os.path.join(work, "lifetimes"))):
        with open(os.path.join(work, "lifetimes", name)) as f:
            lives.append(json.load(f))
    s.agent = NS(lifetimes=lives, crashes=old.get("crashes", 0), log_path=os.path.join(work, "agent.log"))
    with open(s.ledger) as f:
        starts = sum(1 for line in f if line.startswith("node-start"))
    s.node = NS(crashes=old.get("node_crashes", 0), incarnations=old.get("node_incarnations", starts),
                log_path=os.path.join(work, "node.log"))
    s.samples = [tuple(x) for x in old.get("samples", [])] or [
        (int(m) * 60 + 1, 0, v[i], v[2 + i]) for m, v in old.get("per_minute", {}).items() for i in (0, 1)]
    spool = old.get("spool") or {"perOutput": {r["output"]: r["spooled_left"] for r in old["rows"]}}
    drained = old.get("drained", not any("drain" in x for x in old.get("failures", [])))
    summary = s.account(spool, drained, old.get("seconds", 0))
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    return summary


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--reaccount":
        sys.exit(1 if reaccount(os.path.abspath(sys.argv[2]))["failures"] else 0)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("minutes", type=float)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", required=True)
    ap.add_argument("--sim-bin", required=True)
    ap.add_argument("--dev-bin", required=True)
    ap.add_argument("--port", type=int, default=18600)
    ap.add_argument("--nmea-log", required=True)
    ap.add_argument("--drain-seconds", type=int, default=180)
    ap.add_argument("--filler-limit-mb", type=int, default=0, help="without a tmpfs: fill at most this much")
    a = ap.parse_args()
    a.work = os.path.abspath(a.work)
    s = Soak(a)
    try:
        summary = s.run()
    finally:
        for obj in ("agent", "node"):
            o = getattr(s, obj, None)
            if o and o.p and o.p.poll() is None:
                if obj == "node" and o.frozen:
                    o.signal(signal.SIGCONT)
                o.p.kill()
    sys.exit(1 if summary["failures"] else 0)


if __name__ == "__main__":
    main()
