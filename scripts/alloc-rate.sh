#!/usr/bin/env bash
# Allocations per second of a whole running `osh-edge run` at default rates, measured from
# outside (issue 15's closing note, before and after).
#
# Starts the development node on 127.0.0.1:PORT, then `run` with a generated config whose
# scalar outputs are all enabled with source = "simulated" at their default rates (no rate
# keys), and an LD_PRELOAD counter (scripts/measure/alloc-count.c, built here with cc into
# .build/) on the agent only. At T1 and T2 seconds after the agent's "running:" log line it
# samples, from outside: every malloc/calloc/realloc/free/posix_memalign/aligned_alloc/memalign
# call of every thread (read from /proc/PID/mem), CPU (utime+stime, /proc/PID/stat), RSS,
# context switches of all the process's threads (/proc/PID/task/*/status), and the node's
# observation count per datastream (GET …/datastreams/{id}/stats). Prints the rates over
# [T1, T2]: start-up costs cancel out.
#
#   scripts/alloc-rate.sh                      release build, T1=20 T2=80, scalar outputs
#   T1=20 T2=80 PORT=18181 CAMERA=1 scripts/alloc-rate.sh   + camera0_H264 (test pattern, libx264)
#   BUILD=0 scripts/alloc-rate.sh              use what .build/release holds
#   BIN_DIR=DIR RUN_BIN=osh-edge-dev NODE_BIN=osh-edge-dev scripts/alloc-rate.sh
#   CONF=FILE scripts/alloc-rate.sh            your own config (its [server.*] url must be
#                                              http://127.0.0.1:$PORT/sensorhub/api)
#   KEEP=1 …                                   keep the scratch directory (logs, config)
#
# RUN_BIN / NODE_BIN: by default the first of osh-edge-dev, osh-edge in BIN_DIR whose `help`
# lists the `run` / `node` command (after issue 15 the simulated sources and the node live in
# the development executable).
set -euo pipefail
cd "$(dirname "$0")/.."
T1=${T1:-20}
T2=${T2:-80}
PORT=${PORT:-18181}
CAMERA=${CAMERA:-0}
BUILD=${BUILD:-1}

if [ "$BUILD" = 1 ]; then nice swift build -c release >&2; fi
BIN_DIR=${BIN_DIR:-$(swift build -c release --show-bin-path)}

# The first executable in BIN_DIR whose usage lists COMMAND (a line "  COMMAND  …").
pick() {
  local cmd=$1 b usage
  for b in osh-edge-dev osh-edge; do
    [ -x "$BIN_DIR/$b" ] || continue
    usage=$("$BIN_DIR/$b" help 2>&1 || true)
    if grep -Eq "^  $cmd( |$)" <<<"$usage"; then echo "$BIN_DIR/$b"; return 0; fi
  done
  echo "alloc-rate: no executable in $BIN_DIR lists the '$cmd' command" >&2
  return 1
}
RUN_BIN=${RUN_BIN:+$( [[ $RUN_BIN == */* ]] && echo "$RUN_BIN" || echo "$BIN_DIR/$RUN_BIN")}
NODE_BIN=${NODE_BIN:+$( [[ $NODE_BIN == */* ]] && echo "$NODE_BIN" || echo "$BIN_DIR/$NODE_BIN")}
RUN_BIN=${RUN_BIN:-$(pick run)}
NODE_BIN=${NODE_BIN:-$(pick node)}

mkdir -p .build/measure
LIB=.build/measure/alloc-count.so
if [ ! -f "$LIB" ] || [ scripts/measure/alloc-count.c -nt "$LIB" ]; then
  cc -O2 -shared -fPIC -Wall -Wextra -o "$LIB" scripts/measure/alloc-count.c
fi
LIB=$(realpath "$LIB")

work=$(mktemp -d /tmp/alloc-rate.XXXXXX)
node_pid=""
agent_pid=""
cleanup() {
  if [ -n "$agent_pid" ] && kill -0 "$agent_pid" 2>/dev/null; then kill -TERM "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; fi
  if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then kill -TERM "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true; fi
  if [ "${KEEP:-0}" = 1 ]; then echo "scratch kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

api="http://127.0.0.1:$PORT/sensorhub/api"
if curl -s -o /dev/null --max-time 1 "$api/systems"; then
  echo "alloc-rate: something already answers on 127.0.0.1:$PORT (set PORT)" >&2; exit 1
fi

# --- the development node ---------------------------------------------------------------
"$NODE_BIN" node --port "$PORT" >"$work/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null --max-time 1 "$api/systems" && break
  kill -0 "$node_pid" 2>/dev/null || { echo "alloc-rate: the node exited:" >&2; cat "$work/node.log" >&2; exit 1; }
  sleep 0.1
done

# --- the configuration: every scalar output, simulated, default rates --------------------
outputs="gps_data quat_orientation_data euler_orientation_data barometer audio_level accelerometer gyroscope magnetometer"
[ "$CAMERA" = 1 ] && outputs="$outputs camera0_H264"
if [ -n "${CONF:-}" ]; then
  conf=$CONF
else
  conf=$work/osh-edge.conf
  {
    printf '[server.dev]\nurl = "%s"\n\n[system]\nuid = "urn:osh:rpi:10000000a110c001"\n\n' "$api"
    printf '[time]\nrequire_sync = false\n\n[paths]\nstate_directory = "%s/state"\n\n' "$work"
    for o in $outputs; do printf '[outputs.%s]\nenabled = true\nsource = "simulated"\n\n' "$o"; done
    printf '[outputs.device_health]\nenabled = true\n'
  } >"$conf"
fi

# --- the agent, counted ------------------------------------------------------------------
mkdir -p "$work/counts"
ALLOC_COUNT_DIR="$work/counts" LD_PRELOAD="$LIB" \
  install -m 600 /dev/null "$work/no-secrets"
  "$RUN_BIN" run --config "$conf" --secrets "$work/no-secrets" >"$work/agent.out" 2>"$work/agent.log" &
agent_pid=$!
t0=""
for _ in $(seq 1 600); do
  if grep -q "running:" "$work/agent.log"; then t0=$(date +%s.%N); break; fi
  kill -0 "$agent_pid" 2>/dev/null || { echo "alloc-rate: the agent exited:" >&2; cat "$work/agent.log" >&2; exit 1; }
  sleep 0.05
done
[ -n "$t0" ] || { echo "alloc-rate: no 'running:' line in 30 s:" >&2; cat "$work/agent.log" >&2; exit 1; }
addr=$work/counts/addr.$agent_pid
[ -f "$addr" ] || { echo "alloc-rate: the counter did not load into $agent_pid (LD_PRELOAD=$LIB)" >&2; exit 1; }
hz=$(getconf CLK_TCK)

# One sample: "time allocs frees bytes cpu_ticks rss_kB vol_cs invol_cs threads observations"
# (allocs = every allocating call; the node's count summed over the system's datastreams).
datastreams() { curl -s --max-time 5 "$api/datastreams?limit=1000" | jq -r '.items[] | "\(.id) \(.outputName)"'; }
observations() { # per datastream "outputName count", sorted
  local id name
  datastreams | while read -r id name; do
    echo "$name $(curl -s --max-time 5 "$api/datastreams/$id/stats" | jq -r .count)"
  done | LC_ALL=C sort
}
sample() { # $1 = file for the per-datastream counts
  local t c st rss vol inv thr obs
  t=$(date +%s.%N)
  c=$(python3 scripts/measure/read-counts.py "$agent_pid" "$addr")
  st=$(cut -d')' -f2- "/proc/$agent_pid/stat")
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$agent_pid/status")
  vol=$(cat /proc/"$agent_pid"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches:/ {s += $2} END {print s + 0}')
  inv=$(cat /proc/"$agent_pid"/task/*/status 2>/dev/null | awk '/^nonvoluntary_ctxt_switches:/ {s += $2} END {print s + 0}')
  thr=$(awk '/^Threads:/ {print $2}' "/proc/$agent_pid/status")
  observations >"$1"
  obs=$(awk '{s += $2} END {print s + 0}' "$1")
  # counts: malloc calloc realloc free posix_memalign aligned_alloc memalign valloc pvalloc bytes
  # stat after ")": state=$1 … utime=$12 stime=$13
  awk -v t="$t" -v c="$c" -v st="$st" -v rss="$rss" -v vol="$vol" -v inv="$inv" -v thr="$thr" -v obs="$obs" 'BEGIN {
    split(c, a, " "); split(st, s, " ")
    allocs = a[1] + a[2] + a[3] + a[5] + a[6] + a[7] + a[8] + a[9]
    printf "%s %d %d %d %d %d %d %d %d %d %s\n", t, allocs, a[4], a[10], s[12] + s[13], rss, vol, inv, thr, obs, c }'
}

sleep_until() { local now; now=$(date +%s.%N); sleep "$(awk -v a="$t0" -v d="$1" -v n="$now" 'BEGIN { x = a + d - n; print (x > 0 ? x : 0) }')"; }
sleep_until "$T1"
s1=$(sample "$work/obs1")
sleep_until "$T2"
s2=$(sample "$work/obs2")
kill -0 "$agent_pid" 2>/dev/null || { echo "alloc-rate: the agent died during the window" >&2; cat "$work/agent.log" >&2; exit 1; }

echo "# osh-edge alloc-rate: HEAD $(git rev-parse --short HEAD), Sources as of $(git log -1 --format=%h -- Sources Package.swift)$(git diff --quiet HEAD -- Sources Package.swift || echo '+dirty') $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "# run: $RUN_BIN   node: $NODE_BIN   window: t=$T1 s → t=$T2 s after 'running:'"
echo "# outputs configured (simulated, default rates): $outputs device_health"
awk -v s1="$s1" -v s2="$s2" -v hz="$hz" 'BEGIN {
  split(s1, a, " "); split(s2, b, " "); dt = b[1] - a[1]
  printf "window                    %10.2f s\n", dt
  printf "allocations/s             %10.1f   (%d → %d)\n", (b[2] - a[2]) / dt, a[2], b[2]
  printf "frees/s                   %10.1f\n", (b[3] - a[3]) / dt
  printf "bytes allocated/s         %10.0f\n", (b[4] - a[4]) / dt
  printf "CPU                       %10.2f %% of one core (%.2f s in the window)\n", 100 * (b[5] - a[5]) / hz / dt, (b[5] - a[5]) / hz
  printf "RSS                       %10d kB at t1, %d kB at t2\n", a[6], b[6]
  printf "voluntary ctx switches/s  %10.1f   (all threads)\n", (b[7] - a[7]) / dt
  printf "involuntary ctx sw./s     %10.1f\n", (b[8] - a[8]) / dt
  printf "threads                   %10d\n", b[9]
  printf "observations/s (node)     %10.1f   (%d in the window)\n", (b[10] - a[10]) / dt, b[10] - a[10]
  if (b[10] > a[10]) printf "allocations/observation   %10.2f\n", (b[2] - a[2]) / (b[10] - a[10])
  split("malloc calloc realloc free posix_memalign aligned_alloc memalign valloc pvalloc", k, " ")
  printf "by call, /s               "
  for (i = 1; i <= 9; i++) if (b[10 + i] > a[10 + i]) printf " %s %.1f", k[i], (b[10 + i] - a[10 + i]) / dt
  printf "\n"
}'
echo "# per datastream, observations the node received in the window:"
dt=$(awk -v s1="$s1" -v s2="$s2" 'BEGIN { split(s1, a, " "); split(s2, b, " "); print b[1] - a[1] }')
LC_ALL=C join -a2 -e0 -o 0,1.2,2.2 "$work/obs1" "$work/obs2" \
  | awk -v dt="$dt" '{ printf "  %-40s %6d  %7.2f/s\n", $1, $3 - $2, ($3 - $2) / dt }'
echo "# agent log (warnings and notes):"
grep -Ev '^\s*$' "$work/agent.log" | sed -n '1,40p' | sed 's/^/  /'
