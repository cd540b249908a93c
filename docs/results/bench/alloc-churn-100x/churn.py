#!/usr/bin/env python3
# churn.py RUNDIR...: per run of the 100x insert: rows/s, lowest/median 10 s window, last/first 10%,
# peak resident (VmHWM), live heap max, freed pages awaiting purge (jemalloc resident - active - metadata)
# max and mean over the run's second half, and the rate jemalloc gave pages back to the kernel (MiB/s).
import csv, sys, os, gzip, re
print("run | rows/s | window | last/first | VmHWM | live max | awaiting purge max | mean 2nd half | purged MiB/s")
for d in sys.argv[1:]:
    path = os.path.join(d, 'engine-counters.csv')
    fh = open(path) if os.path.exists(path) else gzip.open(path + '.gz', 'rt')
    rows = {}
    for r in csv.DictReader(fh):
        if r['engine'] == 'fractaldb':
            rows.setdefault(float(r['interval_end_s']), {})[r['counter']] = int(r['value']) / 2**20
    ts = sorted(rows)
    aw = {t: rows[t]['heap_resident_bytes'] - rows[t].get('heap_active_bytes', 0) - rows[t].get('heap_metadata_bytes', 0) for t in ts}
    half = [aw[t] for t in ts if t >= ts[-1] / 2]
    pr = [t for t in ts if 'heap_purged_bytes' in rows[t]]
    rate = (rows[pr[-1]]['heap_purged_bytes'] - rows[pr[0]]['heap_purged_bytes']) / (pr[-1] - pr[0]) if len(pr) > 1 else float('nan')
    s = open(os.path.join(d, 'summary.md')).read()
    def f(pat):
        m = re.search(pat, s)
        return m.group(1) if m else '?'
    g = lambda k: max(v.get(k, 0) for v in rows.values())
    a = f(r'rows/s overall \|\s*([\d,.]+)')
    w = f(r'lowest / median 10 s window\*\* \|\s*([\d.]+)')
    lf = f(r'last 10% / first 10% of rows\*\* \|\s*([\d.]+)')
    print(f"{os.path.basename(d.rstrip('/'))} | {a} | {w} | {lf} | {g('process_rss_peak_bytes'):.1f} | {g('heap_allocated_bytes'):.1f} | {max(aw.values()):.1f} | {sum(half)/len(half):.1f} | {rate:.1f}")
