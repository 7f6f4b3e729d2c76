#!/usr/bin/env python3
"""The table scripts/footprint.sh prints, from what it gathered in its scratch directory.

footprint-report.py WORK_DIR [--vpi-summary FILE]   the table (+ an arm64 column from the summary)
footprint-report.py --vpi-only FILE                 the arm64 column alone (footprint.sh --dry-run)

WORK_DIR holds: meta (key=value), agents ("name pid core label" lines), NAME.s0/.s1/.s2 (/proc
samples at the window's start, middle and end), obs.0/obs.2 and obs.w0/obs.w1 (the node's count
per datastream, "system-uid outputName count", around the window and the wire window),
NAME.strace-c (strace -c), NAME.wire/t.TID (strace -ff -yy of the writing calls), notes.
"""
import glob
import json
import os
import re
import sys

NA = "n/a"


def kv_file(path):
    out = {}
    try:
        text = open(path).read()
    except OSError:
        return out
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def sample(path):
    """One /proc sample line of key=value pairs."""
    try:
        words = open(path).read().split()
    except OSError:
        return {}
    return dict(w.split("=", 1) for w in words if "=" in w)


def num(d, k):
    try:
        return float(d[k])
    except (KeyError, ValueError):
        return None


def observations(path):
    """({(agent, outputName): count}, the snapshot's midpoint time); the peer's system has
    'python-peer' in its uid, osh-edge's is the other."""
    out, t = {}, None
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out, t
    for line in lines:
        parts = line.split()
        if line.startswith("# t=") and len(parts) == 3:
            t = (float(parts[1][2:]) + float(parts[2])) / 2
            continue
        if len(parts) != 3 or not parts[2].isdigit():
            continue
        agent = "peer" if "python-peer" in parts[0] else "osh-edge"
        out[(agent, parts[1])] = out.get((agent, parts[1]), 0) + int(parts[2])
    return out, t


def strace_counts(path):
    """(total calls, [(calls, name)] by calls) from strace -c output."""
    total, rows = None, []
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None, []
    for line in lines:
        f = line.split()
        if len(f) < 5 or not re.match(r"^[0-9.]+$", f[0]):
            continue
        calls = int(f[3])
        if f[-1] == "total":
            total = calls
        else:
            rows.append((calls, f[-1]))
    return total, sorted(rows, reverse=True)


WIRE = re.compile(r"^(sendto|sendmsg|write|writev)\(\d+<TCP:\[[^\]]*->([0-9.:\[\]a-f]+)\]>.*\)\s+=\s+(\d+)")


def wire_bytes(dir_path, port):
    """Bytes the writing calls returned on TCP sockets connected to the node's port."""
    total, calls = 0, 0
    for path in glob.glob(os.path.join(dir_path, "t*")):
        for line in open(path, errors="replace"):
            m = WIRE.match(line)
            if m and m.group(2).endswith(":%s" % port):
                total += int(m.group(3))
                calls += 1
    return total, calls


def fmt(v, digits=1):
    if v is None:
        return NA
    if isinstance(v, str):
        return v
    if abs(v) >= 1000 or digits == 0:
        return "{:,.0f}".format(v)
    return "{:.{}f}".format(v, digits)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return NA
    return "%.1f×" % (a / b)


def vpi_column(path):
    """The arm64 figures a virtual Pi run measured (board/virtual-pi/host/checks.py, summary['measured'])."""
    try:
        s = json.load(open(path))
    except (OSError, ValueError) as e:
        return {"error": "%s: %s" % (path, e)}
    m = s.get("measured") or {}
    if not m:
        return {"error": "%s has no 'measured' section (a vpi run that reached the measurement)" % path}
    col = {
        "cpu_pct": m["cpu_s_per_min"] / 60 * 100 if "cpu_s_per_min" in m else None,
        "cpu_s": m["cpu_s_per_min"] / 60 * m["window_s"] if "cpu_s_per_min" in m and "window_s" in m else None,
        "window": m.get("window_s"),
        "rss": m.get("rss_kb"), "pss": m.get("pss_kb"),
        "anon": m.get("rss_anon_kb"), "file": m.get("rss_file_kb"),
        "threads": m.get("threads"), "wakeups": m.get("ctx_switches_per_s"),
        "invol": m.get("invol_ctx_switches_per_s"),
        "obs_s": m.get("observations_per_s"),
    }
    pkg = s.get("package") or []
    col["label"] = "arm64 (vpi)"
    col["about"] = "%s; %s; the production service with its own config (real drivers, camera, audio), " \
        "not peer.conf's job" % (", ".join(pkg[1:3]) or "virtual Pi", m.get("note", "QEMU TCG"))
    return col


def main(argv):
    if len(argv) == 3 and argv[1] == "--vpi-only":
        col = vpi_column(argv[2])
        if "error" in col:
            print("arm64: " + col["error"])
            return 1
        print("arm64 column (%s): CPU %s %% of a core, VmRSS %s kB, PSS %s kB, RssAnon %s kB, RssFile %s kB, "
              "%s voluntary switches/s, %s threads" % (argv[2], fmt(col["cpu_pct"], 2), fmt(col["rss"], 0),
                                                         fmt(col["pss"], 0), fmt(col["anon"], 0), fmt(col["file"], 0),
                                                         fmt(col["wakeups"]), fmt(col["threads"], 0)))
        print("  " + col["about"])
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    work = argv[1]
    vpi = argv[argv.index("--vpi-summary") + 1] if "--vpi-summary" in argv else None
    meta = kv_file(os.path.join(work, "meta"))
    hz = float(meta.get("hz", "100"))
    agents = [l.split(None, 3) for l in open(os.path.join(work, "agents")).read().splitlines() if l.strip()]
    (obs0, t0), (obs2, t2) = observations(os.path.join(work, "obs.0")), observations(os.path.join(work, "obs.2"))
    (w0, tw0), (w1, tw1) = observations(os.path.join(work, "obs.w0")), observations(os.path.join(work, "obs.w1"))
    obs_dt = t2 - t0 if t0 is not None and t2 is not None else None
    wire_dt = tw1 - tw0 if tw0 is not None and tw1 is not None else None
    strace_s = float(meta.get("strace_s", "10"))

    cols = []
    for name, pid, core, label in agents:
        s0, s1, s2 = (sample(os.path.join(work, "%s.%s" % (name, k))) for k in ("s0", "s1", "s2"))
        c = {"name": name, "label": label, "pid": pid, "core": core}
        ok = s0 and s2 and "gone" not in s0 and "gone" not in s2
        dt = num(s2, "t") - num(s0, "t") if ok else None
        c["window"] = dt
        if ok:
            c["cpu_s"] = (num(s2, "ticks") - num(s0, "ticks")) / hz
            c["cpu_pct"] = 100 * c["cpu_s"] / dt
            c["rss"], c["pss"] = num(s2, "rss_kb"), num(s2, "pss_kb")
            c["anon"], c["file"] = num(s2, "rss_anon_kb"), num(s2, "rss_file_kb")
            c["threads"] = num(s2, "threads")
            c["wakeups"] = (num(s2, "vol") - num(s0, "vol")) / dt
            c["invol"] = (num(s2, "invol") - num(s0, "invol")) / dt
            a0, a1, a2 = num(s0, "allocs"), num(s1, "allocs"), num(s2, "allocs")
            if a0 is not None and a1 is not None and a2 is not None:
                c["alloc_half"] = (a1 - a0) / (num(s1, "t") - num(s0, "t"))
                c["alloc_full"] = (a2 - a0) / dt
        per = {k[1]: obs2.get(k, 0) - obs0.get(k, 0) for k in obs2 if k[0] == name}
        c["per_ds"] = per
        if per and obs_dt:
            c["obs_s"] = sum(per.values()) / obs_dt
            if c.get("alloc_full") is not None and c["obs_s"] > 0:
                c["alloc_obs"] = c["alloc_full"] / c["obs_s"]
        total, rows = strace_counts(os.path.join(work, name + ".strace-c"))
        if total is not None:
            c["syscalls"] = total / strace_s
            c["top"] = ", ".join("%s %.0f" % (n, k / strace_s) for k, n in rows[:7])
        b, calls = wire_bytes(os.path.join(work, name + ".wire"), meta.get("port", ""))
        if glob.glob(os.path.join(work, name + ".wire", "t*")):
            c["wire_s"] = b / strace_s
            c["wire_calls_s"] = calls / strace_s
            # Bytes/s over the trace, over observations/s the node counted around it (steady rates).
            n = sum(w1.get(k, 0) - w0.get(k, 0) for k in w1 if k[0] == name)
            if n > 0 and wire_dt:
                c["wire_obs"] = c["wire_s"] / (n / wire_dt)
        cols.append(c)
    if vpi:
        v = vpi_column(vpi)
        cols.append(v if "error" not in v else {"label": "arm64 (vpi)", "about": v["error"]})

    edge = next((c for c in cols if c.get("name") == "osh-edge"), {})
    print("# footprint: %s, git %s" % (meta.get("date", "?"), meta.get("rev", "?")))
    print("# osh-edge binary: %s (%s bytes); static Swift stdlib: %s" % (
        meta.get("binary"), fmt(num(meta, "binary_bytes"), 0), meta.get("static_stdlib")))
    print("#   NEEDED: %s" % meta.get("needed", ""))
    print("# node: %s node --port %s (another process, not pinned)" % (meta.get("node"), meta.get("port")))
    print("# host: %s; warm-up %s s, window %s s, strace -c %s s, wire %s s" % (
        meta.get("host"), meta.get("warmup"), meta.get("window"), meta.get("strace_s"), meta.get("strace_s")))
    width = 16
    head = "%-34s" % "" + "".join("%*s" % (width, c["label"][:width - 1]) for c in cols)
    print(head)

    def row(title, key, digits=1):
        print("%-34s" % title + "".join("%*s" % (width, fmt(c.get(key), digits)) for c in cols))

    print("%-34s" % "pid / core" + "".join("%*s" % (width, ("%s / %s" % (c["pid"], c["core"])) if "pid" in c else "")
                                             for c in cols))
    row("CPU seconds in the window", "cpu_s", 2)
    row("CPU, % of one core", "cpu_pct", 2)
    row("VmRSS, kB (end of window)", "rss", 0)
    row("  RssAnon, kB", "anon", 0)
    row("  RssFile, kB (mapped files)", "file", 0)
    row("PSS, kB", "pss", 0)
    row("threads", "threads", 0)
    row("voluntary ctx switches/s (all)", "wakeups")
    row("involuntary ctx switches/s", "invol")
    row("syscalls/s (strace -c -f)", "syscalls")
    row("allocations/s, first half", "alloc_half")
    row("allocations/s, whole window", "alloc_full")
    row("observations/s (node)", "obs_s", 2)
    row("allocations/observation", "alloc_obs", 2)
    row("bytes to the node/s (wire)", "wire_s", 0)
    row("write calls to the node/s", "wire_calls_s")
    row("bytes/observation (wire)", "wire_obs", 0)
    for other in [c for c in cols if c.get("name") in ("peer", "collectd")]:
        for title, key in (("CPU", "cpu_s"), ("VmRSS", "rss"), ("PSS", "pss"), ("wakeups", "wakeups"),
                           ("syscalls", "syscalls")):
            print("%-34s%*s" % ("%s / osh-edge: %s" % (other["name"], title), width * (cols.index(other) + 1),
                                ratio(other.get(key), edge.get(key))))
    print("# observations the node received in the window, per datastream (/s):")
    names = sorted({n for c in cols for n in c.get("per_ds", {})})
    for n in names:
        print("  %-32s" % n + "".join("%*s" % (width, fmt(c["per_ds"][n] / obs_dt, 2)
                                               if n in c.get("per_ds", {}) and obs_dt else "")
                                      for c in cols))
    print("# syscalls/s by call (strace -c -f, %s s after the window):" % meta.get("strace_s"))
    for c in cols:
        if c.get("top"):
            print("  %-9s %s" % (c["name"], c["top"]))
    print("# notes:")
    print("  allocations: every malloc/calloc/realloc/posix_memalign/aligned_alloc/memalign/valloc call of every "
          "thread (LD_PRELOAD scripts/measure/alloc-count.c);")
    print("  Python's small objects come from pymalloc's arenas, so its count is what reaches malloc, not every object.")
    print("  bytes on the wire: what sendto/sendmsg/write/writev returned on TCP sockets to the node's port during the "
          "wire window (strace -yy): HTTP headers + bodies, no TCP/IP framing; per observation the node counted meanwhile.")
    print("  collectd posts its own JSON, which the node refuses (no observations); its bytes are what it sends.")
    for c in cols:
        if c.get("about"):
            print("  %s: %s" % (c["label"], c["about"]))
    try:
        for line in open(os.path.join(work, "notes")).read().splitlines():
            print("  " + line)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
