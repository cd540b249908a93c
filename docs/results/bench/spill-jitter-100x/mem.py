#!/usr/bin/env python3
# mem.py RUNDIR...: (engine-counters.csv, or .csv.gz) each run's summary figures, and its memory at the interval where resident memory peaked.
import csv, sys, re, os, gzip
for d in sys.argv[1:]:
    s = open(os.path.join(d, 'summary.md')).read()
    def f(label):
        m = re.search(r'\| \**' + re.escape(label) + r'\** \| ([^|]+) \|', s)
        return m.group(1).strip() if m else '?'
    rows = {}
    path = os.path.join(d, 'engine-counters.csv')
    fh = open(path) if os.path.exists(path) else gzip.open(path + '.gz', 'rt')
    for r in csv.DictReader(fh):
        if r['engine'] != 'fractaldb': continue
        rows.setdefault(float(r['interval_end_s']), {})[r['counter']] = int(r['value'])
    ts = sorted(rows)
    peak_t = max(ts, key=lambda t: rows[t].get('process_rss_bytes', 0))
    m = rows[peak_t]
    M = lambda k: m.get(k, 0) / 2**20
    hwm = max(rows[t].get('process_rss_peak_bytes', 0) for t in ts) / 2**20
    print(f"{os.path.basename(d)}: rows/s {f('rows/s overall')} window {f('lowest / median 10 s window')} last/first {f('last 10% / first 10% of rows')} peak {f('peak resident memory')} (HWM {hwm:.1f})")
    print(f"   at {peak_t:.0f}s rss {M('process_rss_bytes'):.1f} MiB: jemalloc resident {M('heap_resident_bytes'):.1f}, allocated {M('heap_allocated_bytes'):.1f}, cache used {M('cache_used_bytes'):.1f}, ckpt copies {M('checkpoint_copy_bytes'):.1f}")
    al = max(rows[t].get('heap_allocated_bytes', 0) for t in ts) / 2**20
    cu = max(rows[t].get('cache_used_bytes', 0) for t in ts) / 2**20
    print(f"   max over intervals: allocated {al:.1f} MiB, cache used {cu:.1f} MiB")
