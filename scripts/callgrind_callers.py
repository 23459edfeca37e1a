#!/usr/bin/env python3
"""Who calls a function, and how often per request, in a callgrind dump (docs/performance.md).

    scripts/callgrind_callers.py CALLGRIND_OUT REQUESTS REGEX [TOP]

REGEX matches the callee's mangled name in full (e.g. swift_retain, "swift_bridgeObjectRe(tain|lease)").
"""
import sys, re, collections, subprocess
path, req, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names={}; cnt=collections.Counter(); cur=None; pending=None
def idname(rest):
    m=re.match(r"\((\d+)\)(?: (.*))?", rest)
    if m:
        if m.group(2): names[m.group(1)]=m.group(2)
        return m.group(1)
    names[rest]=rest; return rest
for line in open(path, errors='replace'):
    if line.startswith('fn='): cur=idname(line[3:].rstrip('\n'))
    elif line.startswith('cfn='): pending=idname(line[4:].rstrip('\n'))
    elif line.startswith('calls=') and pending and re.fullmatch(target, names[pending]):
        cnt[cur]+=int(line[6:].split()[0])
ids=[i for i,_ in cnt.most_common(int(sys.argv[4]) if len(sys.argv)>4 else 30)]
dem=subprocess.run(['swift','demangle','--simplified'],input="\n".join(names[i] for i in ids),capture_output=True,text=True).stdout.split('\n')
for i,d in zip(ids,dem): print(f"{cnt[i]/req:7.2f}  {d[:160]}")
