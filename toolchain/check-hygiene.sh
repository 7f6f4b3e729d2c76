#!/usr/bin/env bash
# check-hygiene.sh: the binary the .deb ships links no development code (issue 15): no
# libmicrohttpd (nor GnuTLS, nettle, p11-kit, which come with it) among its NEEDED libraries,
# and no simulator — no `Simulated` in its symbols or, when stripped, in its Swift metadata
# strings (type names survive stripping there). With the static Swift stdlib (no libswiftCore.so
# among NEEDED, as shipped) also no Regex runtime: `_StringProcessing`/`_RegexParser` module names
# in mangled metadata mean a `String.contains(String)` or a Regex pulled ≈1 MB in (issue 16).
# Usage: toolchain/check-hygiene.sh BINARY   Prints one line; exit 0 clean, 1 not, 2 usage.
set -euo pipefail
BIN=${1:?usage: check-hygiene.sh BINARY}
[[ -r $BIN ]] || { printf 'check-hygiene.sh: %s: no such file\n' "$BIN" >&2; exit 2; }
command -v readelf >/dev/null || { printf 'check-hygiene.sh: needs readelf (apt-get install binutils)\n' >&2; exit 2; }
needed=$(readelf -d -- "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
dev_libs=$(printf '%s\n' $needed | grep -E '^lib(microhttpd|gnutls|nettle|hogweed|p11-kit)' | tr '\n' ' ' || true)
# grep -c counts lines; -a reads the binary as text: symbol names and metadata strings alike.
simulated=$({ grep -a -o 'Simulated' -- "$BIN" || true; } | wc -l)  # no match is grep's exit 1
regex=0
if ! grep -q 'libswiftCore' <<<"$needed"; then
  regex=$({ grep -a -o '17_StringProcessing\|12_RegexParser' -- "$BIN" || true; } | wc -l)
fi
printf 'NEEDED: %s; Simulated: %s; Regex runtime: %s\n' "${needed% }" "$simulated" "$regex"
if ((regex > 0)); then
  printf 'check-hygiene.sh: %s links the Regex runtime (%s mangled names): use OSHCore'"'"'s hasSubstring instead of String.contains(String), no Regex\n' "$BIN" "$regex" >&2
  exit 1
fi
if [[ -n $dev_libs ]] || ((simulated > 0)); then
  printf 'check-hygiene.sh: %s links development code:%s%s\n' "$BIN" \
    "${dev_libs:+ libraries ${dev_libs% };}" "$( ((simulated > 0)) && printf ' %s Simulated strings (a simulator is linked: check the dependencies of OSHAgent, OSHEdgeCommands and osh-edge in Package.swift)' "$simulated")" >&2
  exit 1
fi
