#!/usr/bin/env python3
"""A fleet on one machine (scripts/fleet.sh runs it): N agents with transport = "mqtt" publish to
an edge mosquitto, bridged (QoS 1, persistent session, MQTT 5) to a central mosquitto that the
development node's MQTT side reads; M agents with transport = "http" POST to the same node in the
same run. Every agent is `osh-edge-sim run` with its own UID: barometer at 10 Hz, gps_data and
device_health on the demo's simulated chips.

After WARMUP seconds, over WINDOW seconds, per agent from /proc: CPU seconds (utime+stime),
VmRSS and voluntary context switches of all threads (wakeups); then 10 s of `strace -yy` on one
agent of each kind gives the bytes it sends to the broker or the node per observation stored
(TCP payload: MQTT framing or HTTP headers included, TCP/IP not); the node's ledger gives what it
stored and each observation's latency (arrival − phenomenon time). Then the central broker is stopped for CUT
seconds and started again (the edge broker queues for the bridge); after DRAIN seconds every
agent is stopped with SIGTERM and what each produced (its counters file) is compared with what
the node stored for it. Prints one table; a benchmark, not a test."""
import argparse, json, os, signal, socket, statistics, subprocess, sys, time

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("n", type=int, help="agents over MQTT")
ap.add_argument("--http", type=int, default=None, help="agents over HTTP beside them (default N/10, at least 2)")
ap.add_argument("--warmup", type=float, default=20)
ap.add_argument("--window", type=float, default=60)
ap.add_argument("--cut", type=float, default=60, help="seconds the central broker is down (0: no cut)")
ap.add_argument("--drain", type=float, default=60)
ap.add_argument("--work", default="/var/tmp/osh-fleet")
ap.add_argument("--sim", required=True, help="the osh-edge-sim binary")
ap.add_argument("--node", required=True, help="the osh-edge-dev binary")
ap.add_argument("--base-port", type=int, default=18900)
a = ap.parse_args()
m_http = a.http if a.http is not None else max(2, a.n // 10)
os.makedirs(a.work, exist_ok=True)
EDGE, CENTRAL, NODE = a.base_port, a.base_port + 1, a.base_port + 2
procs = []


def log(*x):
    print("[fleet]", *x, flush=True)


def wait_port(port, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def spawn(cmd, logname):
    p = subprocess.Popen(cmd, stdout=open(os.path.join(a.work, logname), "w"), stderr=subprocess.STDOUT)
    procs.append(p)
    return p


user = f"user {os.getenv('USER') or 'root'}\n"


def broker(name, port, extra=""):
    conf = os.path.join(a.work, name + ".conf")
    with open(conf, "w") as f:
        # Unbounded queues: the bridge's backlog during the cut is the point (mosquitto's default
        # drops QoS 1 messages beyond 1000 queued per client).
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\n{user}max_queued_messages 0\n"
                f"persistence true\npersistence_location {a.work}/\npersistence_file {name}.db\nautosave_interval 5\n{extra}")
    p = spawn(["mosquitto", "-c", conf], name + ".log")
    if not wait_port(port):
        sys.exit(f"fleet: mosquitto {name} did not listen on {port}")
    return p


def agent_conf(k, mqtt):
    state = os.path.join(a.work, f"agent-{k}")
    os.makedirs(state, exist_ok=True)
    uid = f"urn:osh:rpi:fleet{'m' if mqtt else 'h'}{k:05d}"
    transport = f'transport = "mqtt"\nbroker = "mqtt://127.0.0.1:{EDGE}"\n' if mqtt else ""
    text = f"""[server.main]
url = "http://127.0.0.1:{NODE}/sensorhub/api"
{transport}[system]
uid = "{uid}"
[time]
require_sync = false
[paths]
state_directory = "{state}"
counters_file = "{state}/counters"
[publisher]
spool = true
[outputs.barometer]
enabled = true
rate = 10
source = "simulated"
[outputs.gps_data]
enabled = true
source = "simulated"
"""
    path = os.path.join(state, "osh-edge.conf")
    with open(path, "w") as f:
        f.write(text)
    return uid, state, path


def proc_sample(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = (int(parts[11]) + int(parts[12])) / tick
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    vol = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol += int(line.split()[1])
        except OSError:
            pass
    return cpu, rss, vol, 0


def ledger():
    systems, streams, obs = {}, {}, []
    with open(os.path.join(a.work, "ledger")) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "system":
                systems[w[3]] = w[2]
            elif w[0] == "datastream":
                streams[w[3]] = w[4]
            elif w[0] == "obs":
                obs.append((float(w[1]), w[2], float(w[3]), w[4]))
    return systems, streams, obs


def counters(state):
    out = {}
    try:
        with open(os.path.join(state, "counters")) as f:
            for line in f:
                w = line.split()
                if len(w) > 1 and "=" in w[1]:
                    kv = dict(x.split("=", 1) for x in w[1:] if "=" in x)
                    out[w[0]] = kv
    except OSError:
        pass
    return out


def wire(pid, port, seconds, tag):
    """Bytes `pid` writes to TCP sockets connected to `port` over `seconds` (strace -yy), and when."""
    out = os.path.join(a.work, f"wire-{tag}")
    t = time.time()
    subprocess.run(["timeout", "-s", "INT", str(seconds), "strace", "-f", "-qq", "-yy", "-s", "0", "-e",
                    "trace=sendto,sendmsg,write,writev", "-p", str(pid), "-o", out], stderr=subprocess.DEVNULL)
    total = 0
    with open(out) as f:
        for line in f:
            if f":{port}]>" in line and "TCP" in line and "= " in line:
                try:
                    total += max(0, int(line.rsplit("= ", 1)[1].split()[0]))
                except ValueError:
                    pass
    return total, t, time.time()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


try:
    central = broker("central", CENTRAL)
    edge = broker("edge", EDGE, f"connection central\naddress 127.0.0.1:{CENTRAL}\nbridge_protocol_version mqttv50\n"
                                f"cleansession false\nlocal_cleansession false\ntopic /api/# out 1\ntopic api/# out 1\n")
    spawn([a.node, "node", "--port", str(NODE), "--mqtt-broker", f"mqtt://127.0.0.1:{CENTRAL}",
           "--ledger", os.path.join(a.work, "ledger")], "node.log")
    if not wait_port(NODE):
        sys.exit("fleet: the development node did not listen")
    agents = []
    for k in range(a.n + m_http):
        mqtt = k < a.n
        uid, state, conf = agent_conf(k, mqtt)
        p = spawn([a.sim, "run", "--config", conf], f"agent-{k}.log")
        agents.append({"uid": uid, "state": state, "mqtt": mqtt, "p": p})
        time.sleep(0.02)
    log(f"{a.n} agents over MQTT (edge :{EDGE} → bridge → central :{CENTRAL}), {m_http} over HTTP, node :{NODE}")
    time.sleep(a.warmup)
    t0 = time.time()
    before = {ag["p"].pid: proc_sample(ag["p"].pid) for ag in agents}
    time.sleep(a.window)
    t1 = time.time()
    after = {ag["p"].pid: proc_sample(ag["p"].pid) for ag in agents}
    # Bytes on the wire per observation: one agent of each kind traced after the window.
    mq = next(ag for ag in agents if ag["mqtt"])
    ht = next((ag for ag in agents if not ag["mqtt"]), None)
    w_mqtt = wire(mq["p"].pid, EDGE, 10, "mqtt")
    w_http = wire(ht["p"].pid, NODE, 10, "http") if ht else None
    systems, streams, obs = ledger()

    def stored_between(uid, t_a, t_b):
        return sum(1 for arr, name, pt, ds in obs if t_a <= arr <= t_b + 0.5 and systems.get(streams.get(ds)) == uid)

    per_obs = {True: w_mqtt[0] / max(1, stored_between(mq["uid"], w_mqtt[1], w_mqtt[2])),
               False: (w_http[0] / max(1, stored_between(ht["uid"], w_http[1], w_http[2]))) if ht else float("nan")}
    cut_at = time.time()
    if a.cut > 0:
        log(f"central broker stopped for {a.cut:.0f} s (the bridge is cut; the edge broker queues)")
        central.send_signal(signal.SIGTERM)
        central.wait()
        time.sleep(a.cut)
        central = broker("central", CENTRAL)
        log("central broker back")
    time.sleep(a.drain)
    for ag in agents:
        ag["p"].send_signal(signal.SIGTERM)
    for ag in agents:
        ag["p"].wait(timeout=30)
    time.sleep(2)
    systems, streams, obs = ledger()
    stored_by = {}
    for arrival, name, pt, ds in obs:
        sys_id = streams.get(ds)
        stored_by.setdefault(systems.get(sys_id, "?"), 0)
        stored_by[systems.get(sys_id, "?")] += 1
    rows = {True: [], False: []}
    for i, ag in enumerate(agents):
        pid = ag["p"].pid
        c0, _, v0, _ = before[pid]
        c1, rss, v1, _ = after[pid]
        c = counters(ag["state"])
        produced = sum(int(v.get("produced", 0)) for v in c.values())
        dropped = sum(int(v.get("dropped", 0)) for v in c.values())
        rows[ag["mqtt"]].append({"cpu": (c1 - c0) / (t1 - t0), "rss": rss, "wake": (v1 - v0) / (t1 - t0),
                                 "produced": produced, "dropped": dropped, "stored": stored_by.get(ag["uid"], 0),
                                 "uid": ag["uid"]})
    win = [(arr - pt) for arr, name, pt, ds in obs if t0 <= arr <= t1]
    win_by = {}
    for arr, name, pt, ds in obs:
        if t0 <= arr <= t1:
            uid = systems.get(streams.get(ds), "?")
            win_by[uid] = win_by.get(uid, 0) + 1
    lat = {True: [], False: []}
    for arr, name, pt, ds in obs:
        if t0 <= arr <= t1:
            uid = systems.get(streams.get(ds), "?")
            lat[":fleetm" in uid].append((arr - pt) * 1000)
    print()
    print(f"fleet: {a.n} agents over MQTT, {m_http} over HTTP, window {t1 - t0:.0f} s after {a.warmup:.0f} s, "
          f"bridge cut {a.cut:.0f} s")
    print(f"{'per agent':34} {'MQTT':>12} {'HTTP':>12} {'HTTP/MQTT':>10}")

    def col(key, f=statistics.mean, rows=rows):
        return f([r[key] for r in rows[True]]) if rows[True] else float("nan"), f([r[key] for r in rows[False]]) if rows[False] else float("nan")

    def obs_rate(m):
        return sum(win_by.get(r["uid"], 0) for r in rows[m]) / max(1, len(rows[m])) / (t1 - t0)

    for label, key, scale, fmt in [("CPU, % of a core", "cpu", 100, "{:.2f}"), ("RSS, MiB", "rss", 1 / 1024, "{:.1f}"),
                                   ("wakeups/s (voluntary switches)", "wake", 1, "{:.1f}")]:
        m, h = col(key)
        print(f"{label:34} {fmt.format(m * scale):>12} {fmt.format(h * scale):>12} {h / m if m else float('nan'):>10.2f}")
    bm, bh = per_obs[True], per_obs[False]
    print(f"{'bytes sent per observation (10 s)':34} {bm:>12.0f} {bh:>12.0f} {bh / bm if bm else float('nan'):>10.2f}")
    print(f"{'observations stored/s':34} {obs_rate(True):>12.1f} {obs_rate(False):>12.1f}")
    for p in (50, 99):
        print(f"{'latency p%d, ms (phenomenon→stored)' % p:34} {pct(lat[True], p):>12.0f} {pct(lat[False], p):>12.0f}")
    lost = {m: sum(max(0, r["produced"] - r["dropped"] - r["stored"]) for r in rows[m]) for m in (True, False)}
    extra = {m: sum(max(0, r["stored"] - r["produced"]) for r in rows[m]) for m in (True, False)}
    print(f"{'after the cut: produced':34} {sum(r['produced'] for r in rows[True]):>12} {sum(r['produced'] for r in rows[False]):>12}")
    print(f"{'  stored at the node':34} {sum(r['stored'] for r in rows[True]):>12} {sum(r['stored'] for r in rows[False]):>12}")
    print(f"{'  dropped (counted by the agents)':34} {sum(r['dropped'] for r in rows[True]):>12} {sum(r['dropped'] for r in rows[False]):>12}")
    print(f"{'  lost (produced − dropped − stored)':34} {lost[True]:>12} {lost[False]:>12}")
    print(f"{'  duplicates (stored − produced)':34} {extra[True]:>12} {extra[False]:>12}")
    json.dump({"n": a.n, "http": m_http, "rows": {("mqtt" if k else "http"): v for k, v in rows.items()}},
              open(os.path.join(a.work, "fleet.json"), "w"), indent=1)
finally:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
