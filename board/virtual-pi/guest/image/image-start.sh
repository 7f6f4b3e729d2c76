#!/bin/bash
# vpi test --image, in the guest (from the 9p share, not the image): starts the development node
# on 127.0.0.1:8181 with the user and password the card's osh-edge-secrets should carry, waits
# until it listens (osh-edge.service is ordered after this), then starts the observer.
set -u
V=/run/vpi
mkdir -p /run/vpi-node
systemd-run --quiet --unit=vpi-node --property=Restart=on-failure \
  "$V/bin/osh-edge-dev" node --port 8181 --user "$(cat "$V/in/node-user")" --journal /run/vpi-node/journal
for _ in $(seq 600); do
  if (exec 3<>/dev/tcp/127.0.0.1/8181) 2>/dev/null; then break; fi
  sleep 0.1
done
echo "vpi-image: node listening at $(cut -d' ' -f1 /proc/uptime) s"
systemd-run --quiet --no-block --unit=vpi-observe /bin/bash "$V/image-observe.sh"
