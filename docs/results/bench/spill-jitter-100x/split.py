#!/usr/bin/env python3
# split.py RUNDIR...: memory over each run (MiB), from engine-counters.csv (or .csv.gz).
# First table: the largest of each figure over the run's intervals: resident (VmRSS),
# jemalloc resident, live heap (jemalloc allocated), cache used, what jemalloc keeps beyond
# the live heap (resident - allocated), and what is outside jemalloc (VmRSS - jemalloc resident).
# Second table (runs that sampled stats.active and stats.metadata): jemalloc's resident memory
# split at the interval where it was largest, and as the mean over the run's second half:
# live, room inside active pages (active - allocated), metadata, freed pages awaiting purge.
import csv, sys, os, gzip

def load(d):
    path = os.path.join(d, 'engine-counters.csv')
    fh = open(path) if os.path.exists(path) else gzip.open(path + '.gz', 'rt')
    rows = {}
    for r in csv.DictReader(fh):
        if r['engine'] == 'fractaldb':
            rows.setdefault(float(r['interval_end_s']), {})[r['counter']] = int(r['value']) / 2**20
    return rows

runs = [(os.path.basename(d.rstrip('/')), load(d)) for d in sys.argv[1:]]
print("run | VmHWM | max VmRSS | max jemalloc resident | max live heap | max cache used | max kept by jemalloc | max outside jemalloc")
for name, rows in runs:
    g = lambda k: max(v.get(k, 0) for v in rows.values())
    kept = max(v['heap_resident_bytes'] - v['heap_allocated_bytes'] for v in rows.values())
    out = max(v['process_rss_bytes'] - v['heap_resident_bytes'] for v in rows.values())
    print(f"{name} | {g('process_rss_peak_bytes'):.1f} | {g('process_rss_bytes'):.1f} | {g('heap_resident_bytes'):.1f} | {g('heap_allocated_bytes'):.1f} | {g('cache_used_bytes'):.1f} | {kept:.1f} | {out:.1f}")

parts = [
    ('VmRSS', lambda v: v['process_rss_bytes']),
    ('jemalloc resident', lambda v: v['heap_resident_bytes']),
    ('live', lambda v: v['heap_allocated_bytes']),
    ('room in active pages', lambda v: v['heap_active_bytes'] - v['heap_allocated_bytes']),
    ('metadata', lambda v: v['heap_metadata_bytes']),
    ('freed, awaiting purge', lambda v: v['heap_resident_bytes'] - v['heap_active_bytes'] - v['heap_metadata_bytes']),
]
split = [(n, r) for n, r in runs if all('heap_active_bytes' in v for v in r.values())]
if split:
    print("\nrun | at s | " + " | ".join(p for p, _ in parts))
for name, rows in split:
    t = max(rows, key=lambda t: rows[t]['heap_resident_bytes'])
    print(f"{name} | {t:.0f} | " + " | ".join(f"{f(rows[t]):.1f}" for _, f in parts))
    half = sorted(rows)[len(rows) // 2:]
    print(f"  second half, mean | | " + " | ".join(f"{sum(f(rows[x]) for x in half) / len(half):.1f}" for _, f in parts))
