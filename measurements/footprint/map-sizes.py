#!/usr/bin/env python3
# map-sizes.py MAP: bytes of allocated input sections per archive/object group in a gold or lld map.
import sys, re, collections
sizes = collections.Counter()
text = open(sys.argv[1], errors='replace').read().splitlines()
start = next(i for i, l in enumerate(text) if l.startswith('Memory map'))
pending = None
def group(path):
    m = re.search(r'lib([\w+.-]+)\.a\(', path)
    if m: return 'lib' + m.group(1) + '.a'
    m = re.search(r'/([\w.-]+)\.build/', path)
    if m: return m.group(1) + ' (ours)'
    return path.rsplit('/', 1)[-1]
for l in text[start:]:
    m = re.match(r'^ (\.\S+|swift5_\S+)\s*$', l)
    if m: pending = m.group(1); continue
    m = re.match(r'^ (\.\S+|swift5_\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$', l)
    if m:
        sec = m.group(1) or pending
        pending = None
        if sec and (sec.startswith('.debug') or sec.startswith('.comment') or sec.startswith('.note')): continue
        if int(m.group(2), 16) == 0: continue
        sizes[group(m.group(4))] += int(m.group(3), 16)
for k, v in sizes.most_common(25): print(f'{v:>10} {k}')
print(f'{sum(sizes.values()):>10} total')
