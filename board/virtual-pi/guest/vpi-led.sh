#!/bin/bash
# vpi-led.sh: the status LED as an observer sees it: gpio-sim's side of line 17, sampled every
# 10 ms from before osh-edge starts; one "EPOCH VALUE" line per change, in /run/vpi-led.txt.
set -u
LED=$(cat /run/vpi-led-value)
# read -t on a FIFO nobody writes is a 10 ms sleep without a fork (a fork a sample would cost
# the emulated guest more than the agent does)
mkfifo /run/vpi-tick 2>/dev/null
exec 7<>/run/vpi-tick
last=x
while :; do
  read -r v <"$LED" || v="?"
  if [[ $v != "$last" ]]; then printf '%s %s\n' "$EPOCHREALTIME" "$v"; last=$v; fi
  read -r -t 0.01 -u 7 _ || true
done >>/run/vpi-led.txt
