#!/usr/bin/env bash
# check-hygiene.sh: the binary the .deb ships links no development code (issue 15): no
# libmicrohttpd (nor GnuTLS, nettle, p11-kit, which come with it) among its NEEDED libraries,
# and no simulator — no `Simulated` in its symbols or, when stripped, in its Swift metadata
# strings (type names survive stripping there).
# Usage: toolchain/check-hygiene.sh BINARY   Prints one line; exit 0 clean, 1 not, 2 usage.
set -euo pipefail
BIN=${1:?usage: check-hygiene.sh BINARY}
[[ -r $BIN ]] || { printf 'check-hygiene.sh: %s: no such file\n' "$BIN" >&2; exit 2; }
command -v readelf >/dev/null || { printf 'check-hygiene.sh: needs readelf (apt-get install binutils)\n' >&2; exit 2; }
needed=$(readelf -d -- "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
dev_libs=$(printf '%s\n' $needed | grep -E '^lib(microhttpd|gnutls|nettle|hogweed|p11-kit)' | tr '\n' ' ' || true)
# grep -c counts lines; -a reads the binary as text: symbol names and metadata strings alike.
simulated=$({ grep -a -o 'Simulated' -- "$BIN" || true; } | wc -l)  # no match is grep's exit 1
printf 'NEEDED: %s; Simulated: %s\n' "${needed% }" "$simulated"
if [[ -n $dev_libs ]] || ((simulated > 0)); then
  printf 'check-hygiene.sh: %s links development code:%s%s\n' "$BIN" \
    "${dev_libs:+ libraries ${dev_libs% };}" "$( ((simulated > 0)) && printf ' %s Simulated strings (a simulator is linked: check the dependencies of OSHAgent, OSHEdgeCommands and osh-edge in Package.swift)' "$simulated")" >&2
  exit 1
fi
