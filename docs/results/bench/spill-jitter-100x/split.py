#!/usr/bin/env python3
# split.py RUNDIR...: per run, the largest of each memory figure over its intervals (MiB):
# resident (VmRSS), jemalloc resident, jemalloc allocated (live heap), cache used, and
# what jemalloc keeps beyond the live heap (resident - allocated) and what is outside jemalloc (VmRSS - jemalloc resident).
import csv, sys, os, gzip
print("run | VmHWM | max VmRSS | max jemalloc resident | max live heap | max cache used | max kept by jemalloc | max outside jemalloc")
for d in sys.argv[1:]:
    path = os.path.join(d, 'engine-counters.csv')
    fh = open(path) if os.path.exists(path) else gzip.open(path + '.gz', 'rt')
    rows = {}
    for r in csv.DictReader(fh):
        if r['engine'] == 'fractaldb':
            rows.setdefault(float(r['interval_end_s']), {})[r['counter']] = int(r['value']) / 2**20
    g = lambda k: max(v.get(k, 0) for v in rows.values())
    kept = max(v['heap_resident_bytes'] - v['heap_allocated_bytes'] for v in rows.values())
    out = max(v['process_rss_bytes'] - v['heap_resident_bytes'] for v in rows.values())
    print(f"{os.path.basename(d.rstrip('/'))} | {g('process_rss_peak_bytes'):.1f} | {g('process_rss_bytes'):.1f} | {g('heap_resident_bytes'):.1f} | {g('heap_allocated_bytes'):.1f} | {g('cache_used_bytes'):.1f} | {kept:.1f} | {out:.1f}")
