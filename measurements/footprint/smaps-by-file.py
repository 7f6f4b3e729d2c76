#!/usr/bin/env python3
# smaps-by-file.py PID: Size/Rss/Pss (KB) per mapped file (anon, [heap], [stack] separately), largest
# Rss first, then the same summed per group (the binary, Swift runtime, libcurl and what it loads, …).
import sys, re, os, collections
pid = sys.argv[1]
groups = collections.OrderedDict()
cur = None
for line in open(f'/proc/{pid}/smaps'):
    if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
        parts = line.split(None, 5)
        name = parts[5].strip() if len(parts) > 5 else '[anon]'
        name = os.path.basename(name) if name.startswith('/') else name
        cur = groups.setdefault(name, [0, 0, 0, 0])
        cur[3] += 1
    else:
        k, _, v = line.partition(':')
        if k in ('Size', 'Rss', 'Pss'):
            cur[('Size', 'Rss', 'Pss').index(k)] += int(v.split()[0])
tot = [sum(g[i] for g in groups.values()) for i in range(3)]
print(f"{'mapping':34} {'maps':>4} {'Size':>8} {'Rss':>7} {'Pss':>7}   (KB)")
for name, g in sorted(groups.items(), key=lambda kv: -kv[1][1]):
    if g[1] == 0 and g[0] < 1024: continue
    print(f"{name[:34]:34} {g[3]:>4} {g[0]:>8} {g[1]:>7} {g[2]:>7}")
print(f"{'total':34} {'':>4} {tot[0]:>8} {tot[1]:>7} {tot[2]:>7}")
GROUPS = [  # first match wins; anything else is "other"
    ('anon: heap, stacks, anonymous', r'^\[(heap|stack|anon)'),
    ('Swift runtime (dynamic stdlib only)', r'^lib(swift|dispatch|BlocksRuntime)'),
    ('libcrypto + libssl (OpenSSL)', r'^lib(crypto|ssl)\.'),
    ('GnuTLS + nettle/hogweed/gmp/p11-kit/tasn1', r'^lib(gnutls|nettle|hogweed|gmp|p11-kit|tasn1)\.'),
    ('libcurl', r'^libcurl'),
    ('libcurl\'s other deps (krb5, ldap, ssh2, rtmp, idn2, ...)', r'^lib(krb5|k5crypto|gssapi|com_err|keyutils|ldap|lber|sasl2|ssh2|rtmp|idn2|unistring|psl|nghttp|zstd|brotli|z\.|resolv|ffi)'),
    ('libc, libm, ld.so, vdso', r'^(libc\.|libm\.|ld-linux|\[vdso|\[vvar)'),
    ('libstdc++, libgcc_s', r'^lib(stdc\+\+|gcc_s)'),
    ('camera/audio/GPIO/I2C (x264, v4l, jpeg, asound, gpiod, i2c)', r'^lib(x264|v4l|jpeg|asound|gpiod|i2c)'),
]
summary = collections.OrderedDict((g, [0, 0, 0]) for g, _ in [(('binary', None))] + GROUPS + [('other', None)])
for name, g in groups.items():
    key = 'other'
    if name in ('osh-edge', 'osh-edge-dev'): key = 'binary'
    else:
        for label, rx in GROUPS:
            if re.search(rx, name): key = label; break
    for i in range(3): summary[key][i] += g[i]
print()
print(f"{'group':58} {'Size':>8} {'Rss':>7} {'Pss':>7}")
for k, v in summary.items():
    if v[0]: print(f"{k[:58]:58} {v[0]:>8} {v[1]:>7} {v[2]:>7}")
st = dict(l.split(':', 1) for l in open(f'/proc/{pid}/status'))
print('VmRSS', st['VmRSS'].strip(), ' RssAnon', st['RssAnon'].strip(), ' RssFile', st['RssFile'].strip(), ' Threads', st['Threads'].strip())
