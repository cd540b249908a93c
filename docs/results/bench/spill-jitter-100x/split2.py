#!/usr/bin/env python3
# split2.py RUNDIR...: jemalloc's resident memory split at the interval where it was largest (MiB):
# live (allocated), room inside active pages (active - allocated), metadata, and freed pages awaiting purge (resident - active - metadata).
import csv, sys, os, gzip
print("run | at s | VmRSS | jemalloc resident | live | room in active pages | metadata | freed, awaiting purge")
for d in sys.argv[1:]:
    path = os.path.join(d, 'engine-counters.csv')
    fh = open(path) if os.path.exists(path) else gzip.open(path + '.gz', 'rt')
    rows = {}
    for r in csv.DictReader(fh):
        if r['engine'] == 'fractaldb':
            rows.setdefault(float(r['interval_end_s']), {})[r['counter']] = int(r['value']) / 2**20
    t = max(rows, key=lambda t: rows[t]['heap_resident_bytes'])
    v = rows[t]
    print(f"{os.path.basename(d.rstrip('/'))} | {t:.0f} | {v['process_rss_bytes']:.1f} | {v['heap_resident_bytes']:.1f} | {v['heap_allocated_bytes']:.1f} | {v['heap_active_bytes'] - v['heap_allocated_bytes']:.1f} | {v['heap_metadata_bytes']:.1f} | {v['heap_resident_bytes'] - v['heap_active_bytes'] - v['heap_metadata_bytes']:.1f}")
    # and the averages over the run's second half
    ts = sorted(rows)[len(rows)//2:]
    avg = lambda f: sum(f(rows[x]) for x in ts) / len(ts)
    print(f"  second half, mean | | {avg(lambda v: v['process_rss_bytes']):.1f} | {avg(lambda v: v['heap_resident_bytes']):.1f} | {avg(lambda v: v['heap_allocated_bytes']):.1f} | {avg(lambda v: v['heap_active_bytes'] - v['heap_allocated_bytes']):.1f} | {avg(lambda v: v['heap_metadata_bytes']):.1f} | {avg(lambda v: v['heap_resident_bytes'] - v['heap_active_bytes'] - v['heap_metadata_bytes']):.1f}")
