#!/usr/bin/env python3
# alloc_sites.py N: sums `perf script` output of uprobes on jemalloc's malloc/mallocx/realloc/rallocx/calloc (size >= 32 KiB, dwarf call graphs; see README.md) by the first N fractaldb frames; reads alloc.txt, prints MiB/s and calls/s over the 15 s recorded.
import sys, re, collections
cnt=collections.Counter(); byt=collections.Counter()
def flush(size, frames):
    if size is None: return
    fr=[f for f in frames if 'fractaldb::' in f or 'zstd' in f.lower() or 'lz4' in f.lower()]
    key=' <- '.join(fr[:int(sys.argv[1])]) if fr else '?'
    cnt[key]+=1; byt[key]+=size
size=None; frames=[]
for line in open('alloc.txt'):
    if 'probe_fractaldb:' in line:
        flush(size, frames); m=re.search(r'size=(\d+)', line); size=int(m.group(1)); frames=[]
    elif line.strip():
        p=line.strip().split(None,1)
        if len(p)==2:
            s=re.sub(r'\(inlined\)','',p[1]).strip()
            s=re.sub(r'<[^<>]*>','',s)
            if not frames or frames[-1]!=s: frames.append(s)
flush(size, frames)
tot=sum(byt.values())
print('total samples',sum(cnt.values()),'bytes MiB/s',tot/2**20/15)
for k,v in byt.most_common(25):
    print(f'{v/2**20/15:8.1f} MiB/s {cnt[k]/15:7.0f}/s  {k}')
