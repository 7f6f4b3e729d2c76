#!/usr/bin/env bash
# The footprint benchmark (issue 16): osh-edge against the agents a Pi owner would run instead,
# side by side in one run, against one development node in another process.
#
#   osh-edge   osh-edge-sim run with bench/peer.conf: simulated IMU (100 Hz + fusion), barometer,
#              GPS, health — eight datastreams at default rates (the static-stdlib build, as shipped)
#   peer       bench/python_peer.py: the same job in Python (numpy + ahrs Madgwick + requests)
#   collectd   cpu, memory, load, thermal at 10 Hz, write_http to the node (bench/collectd.conf)
#
# Each agent is pinned to a core (taskset) and runs under the LD_PRELOAD allocation counter
# (scripts/measure/alloc-count.c). After WARMUP seconds, over WINDOW seconds, read from /proc:
# CPU seconds (utime+stime), VmRSS and PSS (smaps_rollup), voluntary context switches of all
# threads, allocations (at WINDOW/2 and WINDOW: two durations), and the node's observation count
# per datastream. After the window, so that tracing does not disturb it: `strace -c -f` for
# STRACE_S seconds (syscalls/s), then STRACE_S seconds of sendto/sendmsg/write/writev with -yy
# (bytes written to TCP sockets connected to the node's port, i.e. HTTP headers + bodies without
# TCP/IP framing, over the observations the node received meanwhile). Prints one table, one
# column per agent, ratios peer / osh-edge, and the arm64 column from a virtual Pi summary.
#
#   scripts/footprint.sh                       builds, warm-up 20 s, window 60 s, strace 10 s + 10 s
#   QUICK=1 scripts/footprint.sh               warm-up 10 s, window 20 s, strace 5 s + 5 s
#   scripts/footprint.sh --vpi-summary .build/vpi/summary.json   + the arm64 column (vpi test --json)
#   scripts/footprint.sh --dry-run [--vpi-summary FILE]          the plan (and the arm64 column), no run
#   PORT=18190 BUILD=0 KEEP=1 PEER=0 COLLECTD=0 SHIP=0 CORES="0 1 0" …
#
# BUILD=1 (default) builds osh-edge-sim with the static Swift stdlib into .build/static (its own
# scratch path, so .build/release keeps its builds) and osh-edge-dev (the node) in release.
# SIM_BIN / NODE_BIN override the binaries. The Python peer runs in the venv VENV (default
# /var/cache/osh-edge/bench-venv), made with PYTHON -m venv and `pip install ahrs numpy requests`
# when missing; PEER=0, or no venv, skips it with a note; COLLECTD=0, or no collectd installed,
# skips collectd.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
DRY=0
VPI_SUMMARY=""
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --dry-run) DRY=1 ;;
    --vpi-summary) VPI_SUMMARY=${2:?--vpi-summary needs a file (board/virtual-pi/vpi test --json FILE)}; shift ;;
    *) echo "footprint: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$VPI_SUMMARY" ] && [ ! -r "$VPI_SUMMARY" ]; then
  echo "footprint: $VPI_SUMMARY: cannot read it (board/virtual-pi/vpi test --json FILE writes it)" >&2; exit 2
fi

if [ "${QUICK:-0}" = 1 ]; then d_warm=10 d_win=20 d_strace=5; else d_warm=20 d_win=60 d_strace=10; fi
WARMUP=${WARMUP:-$d_warm}
WINDOW=${WINDOW:-$d_win}
STRACE_S=${STRACE_S:-$d_strace}
PORT=${PORT:-18190}
BUILD=${BUILD:-1}
PEER=${PEER:-1}
COLLECTD=${COLLECTD:-1}
VENV=${VENV:-/var/cache/osh-edge/bench-venv}
PYTHON=${PYTHON:-python3}
NCORES=$(nproc)
read -r -a CORES <<<"${CORES:-$(seq -s ' ' 0 $((NCORES - 1)))}"
SIM_BIN=${SIM_BIN:-.build/static/release/osh-edge-sim}
NODE_BIN=${NODE_BIN:-.build/release/osh-edge-dev}
REPORT=scripts/measure/footprint-report.py
api="http://127.0.0.1:$PORT/sensorhub/api"

if [ "$DRY" = 1 ]; then
  echo "plan: node $NODE_BIN node --port $PORT (not pinned); osh-edge $SIM_BIN run --config bench/peer.conf (core ${CORES[0]});"
  echo "      peer $VENV/bin/python bench/python_peer.py (core ${CORES[1 % ${#CORES[@]}]}); collectd -f -C bench/collectd.conf (core ${CORES[2 % ${#CORES[@]}]})"
  echo "      warm-up ${WARMUP} s, window ${WINDOW} s (allocations also at $((WINDOW / 2)) s), strace -c ${STRACE_S} s, wire bytes ${STRACE_S} s, BUILD=$BUILD"
  [ -z "$VPI_SUMMARY" ] || python3 "$REPORT" --vpi-only "$VPI_SUMMARY"
  exit 0
fi

for tool in strace taskset curl jq cc python3 readelf; do
  command -v "$tool" >/dev/null || { echo "footprint: needs $tool (apt-get install strace util-linux curl jq gcc python3 binutils)" >&2; exit 2; }
done

# As shipped: the static stdlib and cross-build.sh's link options (SHIP_FLAGS there: no exported
# symbols, packed relative relocations, unused Swift code dropped, libstdc++ from its archive),
# with the toolchain's lld (the host's gold has no packed relocations). SHIP=0: the static stdlib only.
SHIP=${SHIP:-1}
ship_flags=()
if [ "$SHIP" = 1 ]; then
  cxx=$(g++ -print-file-name=libstdc++.a 2>/dev/null || true)
  if [ -f "$cxx" ] && swiftc -use-ld=lld -print-target-info >/dev/null 2>&1 && command -v "$(dirname "$(command -v swiftc)")/ld.lld" >/dev/null; then
    mkdir -p .build/static-libstdcxx && ln -sfn "$cxx" .build/static-libstdcxx/libstdc++.a
    ship_flags=(-Xswiftc -use-ld=lld -Xlinker --no-export-dynamic -Xlinker -z -Xlinker pack-relative-relocs
      -Xswiftc -Xfrontend -Xswiftc -internalize-at-link -Xswiftc -Xfrontend -Xswiftc -function-sections
      -Xswiftc -L"$PWD/.build/static-libstdcxx")
  else
    echo "footprint: no lld beside swiftc or no libstdc++.a (g++): osh-edge-sim gets the static stdlib only (SHIP=0)" >&2
    SHIP=0
  fi
fi
if [ "$BUILD" = 1 ]; then
  nice swift build -c release --static-swift-stdlib "${ship_flags[@]}" --product osh-edge-sim --scratch-path .build/static >&2
  nice swift build -c release --product osh-edge-dev >&2
fi
for b in "$SIM_BIN" "$NODE_BIN"; do
  [ -x "$b" ] || { echo "footprint: $b is not built (run without BUILD=0, or set SIM_BIN / NODE_BIN)" >&2; exit 2; }
done
SIM_BIN=$(realpath "$SIM_BIN")
NODE_BIN=$(realpath "$NODE_BIN")

mkdir -p .build/measure
LIB=.build/measure/alloc-count.so
if [ ! -f "$LIB" ] || [ scripts/measure/alloc-count.c -nt "$LIB" ]; then
  cc -O2 -shared -fPIC -Wall -Wextra -o "$LIB" scripts/measure/alloc-count.c
fi
LIB=$(realpath "$LIB")

work=$(mktemp -d /tmp/footprint.XXXXXX)
mkdir -p "$work/counts" "$work/collectd"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "scratch kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
note() { echo "$*" >>"$work/notes"; echo "footprint: $*" >&2; }
: >"$work/notes"
: >"$work/agents"

if curl -s -o /dev/null --max-time 1 "$api/systems"; then
  echo "footprint: something already answers on 127.0.0.1:$PORT (set PORT)" >&2; exit 1
fi

# --- the Python peer's venv (before anything runs: pip is not part of the measurement) -------
peer_py=""
if [ "$PEER" = 1 ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    echo "footprint: making the venv $VENV (ahrs numpy requests)" >&2
    { "$PYTHON" -m venv "$VENV" && "$VENV/bin/pip" install -q ahrs numpy requests; } >&2 || true
  fi
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import ahrs, numpy, requests' 2>/dev/null; then
    peer_py=$VENV/bin/python
    echo "peer: $("$peer_py" -c 'import sys, ahrs, numpy, requests; print("Python %s, numpy %s, ahrs %s, requests %s" % (sys.version.split()[0], numpy.__version__, ahrs.__version__, requests.__version__))')" >>"$work/notes"
  else
    note "peer skipped: no venv at $VENV with ahrs, numpy and requests (make one: $PYTHON -m venv $VENV && $VENV/bin/pip install ahrs numpy requests)"
  fi
else
  note "peer skipped: PEER=0"
fi
collectd_bin=""
if [ "$COLLECTD" = 1 ]; then
  collectd_bin=$(command -v collectd || ls /usr/sbin/collectd 2>/dev/null || true)
  [ -n "$collectd_bin" ] || note "collectd skipped: not installed (apt-get install collectd-core libyajl2)"
else
  note "collectd skipped: COLLECTD=0"
fi

# --- the development node -------------------------------------------------------------------
"$NODE_BIN" node --port "$PORT" >"$work/node.log" 2>&1 &
pids+=($!)
node_pid=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null --max-time 1 "$api/systems" && break
  kill -0 "$node_pid" 2>/dev/null || { echo "footprint: the node exited:" >&2; cat "$work/node.log" >&2; exit 1; }
  sleep 0.1
done

# --- the agents, each on its core, each counted ---------------------------------------------
core_of() { echo "${CORES[$1 % ${#CORES[@]}]}"; }
started() { # name pid core label
  pids+=("$2")
  echo "$1 $2 $3 $4" >>"$work/agents"
}
sed -e "s|127.0.0.1:8181|127.0.0.1:$PORT|" -e "s|^state_directory = .*|state_directory = \"$work/state\"|" \
  bench/peer.conf >"$work/osh-edge.conf"
grep -q "127.0.0.1:$PORT/" "$work/osh-edge.conf" || { echo "footprint: bench/peer.conf has no node URL on 127.0.0.1:8181 to point at port $PORT" >&2; exit 1; }
c=$(core_of 0)
ALLOC_COUNT_DIR="$work/counts" LD_PRELOAD="$LIB" taskset -c "$c" \
  install -m 600 /dev/null "$work/no-secrets"
  "$SIM_BIN" run --config "$work/osh-edge.conf" --secrets "$work/no-secrets" >"$work/osh-edge.out" 2>"$work/osh-edge.log" &
started osh-edge $! "$c" "osh-edge-sim"
edge_pid=$!

peer_secs=$((WARMUP + WINDOW + 2 * STRACE_S + 60))
if [ -n "$peer_py" ]; then
  c=$(core_of 1)
  ALLOC_COUNT_DIR="$work/counts" LD_PRELOAD="$LIB" taskset -c "$c" \
    "$peer_py" bench/python_peer.py "$api" "$SIM_BIN" "$peer_secs" >"$work/peer.out" 2>"$work/peer.log" &
  started peer $! "$c" "python_peer.py"
  peer_pid=$!
fi
if [ -n "$collectd_bin" ]; then
  sed -e "s|@WORK@|$work|g" -e "s|@URL@|$api/datastreams/collectd/observations|" bench/collectd.conf >"$work/collectd.conf"
  c=$(core_of 2)
  ALLOC_COUNT_DIR="$work/counts" LD_PRELOAD="$LIB" taskset -c "$c" \
    "$collectd_bin" -f -C "$work/collectd.conf" >"$work/collectd.log" 2>&1 &
  started collectd $! "$c" "collectd $("$collectd_bin" -h 2>/dev/null | sed -n 's/^collectd \([0-9.]*\).*/\1/p' | head -1)"
fi

# Ready: osh-edge logged "running:", the peer's system is on the node (or the peer is gone).
for _ in $(seq 1 600); do
  grep -q "running:" "$work/osh-edge.log" && break
  kill -0 "$edge_pid" 2>/dev/null || { echo "footprint: osh-edge exited:" >&2; cat "$work/osh-edge.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "running:" "$work/osh-edge.log" || { echo "footprint: no 'running:' line from osh-edge in 60 s:" >&2; cat "$work/osh-edge.log" >&2; exit 1; }
if [ -n "$peer_py" ]; then
  for _ in $(seq 1 600); do
    curl -s --max-time 2 "$api/systems?limit=1000" | grep -q "python-peer" && break
    kill -0 "$peer_pid" 2>/dev/null || break
    sleep 0.1
  done
fi
echo "footprint: all running; warm-up ${WARMUP} s, window ${WINDOW} s, then strace 2 × ${STRACE_S} s" >&2

# One /proc sample of PID as key=value pairs (allocations: every allocating call, if counted).
sample() {
  local pid=$1 t ticks rss anon file pss vol inv thr allocs=na
  t=$(date +%s.%N)
  [ -r "/proc/$pid/stat" ] || { echo "t=$t gone=1"; return; }
  ticks=$(cut -d')' -f2- "/proc/$pid/stat" | awk '{ print $12 + $13 }')
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
  anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status")
  file=$(awk '/^RssFile:/ { print $2 }' "/proc/$pid/status")
  pss=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo na)
  vol=$(cat /proc/"$pid"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }')
  inv=$(cat /proc/"$pid"/task/*/status 2>/dev/null | awk '/^nonvoluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }')
  thr=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status")
  if [ -f "$work/counts/addr.$pid" ]; then
    allocs=$(python3 scripts/measure/read-counts.py "$pid" "$work/counts/addr.$pid" \
      | awk '{ print $1 + $2 + $3 + $5 + $6 + $7 + $8 + $9 }') || allocs=na
  fi
  echo "t=$t ticks=$ticks rss_kb=$rss rss_anon_kb=$anon rss_file_kb=$file pss_kb=$pss vol=$vol invol=$inv threads=$thr allocs=$allocs"
}
sample_all() { local name pid rest; while read -r name pid rest; do sample "$pid" >"$work/$name.$1"; done <"$work/agents"; }
# The node's count per datastream: "system-uid outputName count" lines, then "# t=START END" (the
# snapshot takes a while; the report uses its midpoint).
observations() {
  local t0 systems
  t0=$(date +%s.%N)
  systems=$(curl -s --max-time 5 "$api/systems?limit=1000")
  curl -s --max-time 5 "$api/datastreams?limit=1000" \
    | jq -r --argjson sys "$systems" '.items[] | . as $d | ($sys.items[] | select(.id == $d."system@id")
        | (.uid // .properties.uid // .id)) as $uid | "\(.id) \($uid) \(.outputName)"' \
    | while read -r id uid name; do
        printf '%s %s %s\n' "$uid" "$name" "$(curl -s --max-time 5 "$api/datastreams/$id/stats" | jq -r .count)"
      done
  echo "# t=$t0 $(date +%s.%N)"
}

sleep "$WARMUP"
start_t=$(date +%s.%N)
at() { sleep "$(awk -v a="$start_t" -v d="$1" -v n="$(date +%s.%N)" 'BEGIN { x = a + d - n; print (x > 0 ? x : 0) }')"; }
observations >"$work/obs.0"
sample_all s0
at "$(awk -v w="$WINDOW" 'BEGIN { print w / 2 }')"
sample_all s1
at "$WINDOW"
sample_all s2
observations >"$work/obs.2"

# --- after the window: syscalls, then bytes on the wire -------------------------------------
tracers=()
wait_tracers() { local j; for j in "${tracers[@]}"; do wait "$j" || true; done; tracers=(); }
while read -r name pid rest; do
  timeout -s INT "$STRACE_S" strace -c -f -p "$pid" -o "$work/$name.strace-c" 2>>"$work/strace.log" &
  tracers+=($!)
done <"$work/agents"
wait_tracers
observations >"$work/obs.w0"
while read -r name pid rest; do
  mkdir -p "$work/$name.wire"
  timeout -s INT "$STRACE_S" strace -f -ff -qq -yy -s 0 -e trace=sendto,sendmsg,write,writev \
    -p "$pid" -o "$work/$name.wire/t" 2>>"$work/strace.log" &
  tracers+=($!)
done <"$work/agents"
wait_tracers
observations >"$work/obs.w1"
while read -r name pid rest; do
  kill -0 "$pid" 2>/dev/null || note "$name exited before the end of the run (see its log below)"
done <"$work/agents"

# --- the report -------------------------------------------------------------------------------
needed=$(readelf -d "$SIM_BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
if grep -q libswiftCore <<<"$needed"; then stdlib="no: libswiftCore.so is loaded (build with --static-swift-stdlib)"; else stdlib="yes (no libswift*.so among NEEDED)"; fi
# cross-build.sh's link options leave packed relocations (.relr.dyn) and no libstdc++.so behind.
if readelf -S "$SIM_BIN" | grep -q relr && ! grep -q libstdc++ <<<"$needed"; then stdlib="$stdlib; shipped link options: yes"
else stdlib="$stdlib; shipped link options: no (SHIP=0, or no lld)"; fi
dirty=$(git diff --quiet HEAD -- Sources Package.swift || echo '+dirty')
{
  echo "rev=$(git rev-parse --short HEAD)$dirty"
  echo "binary=$SIM_BIN"
  echo "binary_bytes=$(stat -c %s "$SIM_BIN")"
  echo "static_stdlib=$stdlib"
  echo "needed=$needed"
  echo "node=$NODE_BIN"
  echo "port=$PORT"
  echo "warmup=$WARMUP"
  echo "window=$WINDOW"
  echo "strace_s=$STRACE_S"
  echo "date=$(date -u +%FT%TZ)"
  echo "host=$(uname -m), $NCORES cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "hz=$(getconf CLK_TCK)"
} >"$work/meta"
python3 "$REPORT" "$work" ${VPI_SUMMARY:+--vpi-summary "$VPI_SUMMARY"}
for f in osh-edge.log peer.log collectd.log; do
  [ -s "$work/$f" ] || continue
  echo "# $f (first lines):"
  grep -Ev '^\s*$' "$work/$f" | sed -n '1,12p' | sed 's/^/  /'
done
