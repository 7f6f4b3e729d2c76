#!/usr/bin/env python3
"""Reads alloc-count.c's counters out of /proc/PID/mem: read-counts.py PID ADDR_FILE.
Prints one line: malloc calloc realloc free posix_memalign aligned_alloc memalign valloc pvalloc bytes."""
import struct, sys

pid, addr_file = sys.argv[1], sys.argv[2]
addr_hex, slots = open(addr_file).read().split()
addr, slots = int(addr_hex, 16), int(slots)
with open(f"/proc/{pid}/mem", "rb", buffering=0) as m:
    m.seek(addr)
    raw = m.read(8 * slots)
values = struct.unpack(f"<{slots}Q", raw)
if values[0] != 0x414C4C4F43434E54:
    sys.exit(f"read-counts: no counter block at {addr_hex} in {pid}")
print(" ".join(str(v) for v in values[1:]))
