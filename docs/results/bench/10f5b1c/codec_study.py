#!/usr/bin/env python3
"""How far zstd can take the codec workload's log-like rows (issue 5, ninth pass).

Input: /tmp/logs.bin, the first 1M rows of `bench codec` (seed 1) laid out as a
basement stores them (key_len varint | key | le_len varint | 0x01 | line). Made by
this test, pasted for the moment at the end of crates/cli/src/bench/workloads/logs.rs
and run with `cargo test --release -p fractaldb-cli dump_rows -- --ignored`:

    #[cfg(test)]
    mod dump {
        use super::*;
        #[test]
        #[ignore]
        fn dump_rows() {
            let (gen, mut line, mut out) = (RowGen::new(1), Vec::new(), Vec::new());
            for i in 0..1_000_000u64 {
                let key = row(&gen, i, &mut line);
                out.push(12u8);
                out.extend_from_slice(&key);
                let n = line.len() + 1; // all lines are 128..16383 bytes long
                out.extend_from_slice(&[(n as u8 & 0x7f) | 0x80, (n >> 7) as u8, 1]);
                out.extend_from_slice(&line);
            }
            std::fs::write("/tmp/logs.bin", &out).unwrap();
        }
    }

Uses the first 400k rows, cut into chunks of whole rows of about 64, 128 or 256 KiB
raw (as basements are cut), each compressed alone with python-zstandard. Prints
raw/compressed and compression speed on one core for each encoding and level.
"""
import re, time
import zstandard as zs

def varint(x):
    o = bytearray()
    while True:
        b, x = x & 0x7F, x >> 7
        if x:
            o.append(b | 0x80)
        else:
            o.append(b)
            return bytes(o)

data = open('/tmp/logs.bin', 'rb').read()
rows, i = [], 0
while i < len(data):
    kl = data[i]; k = data[i + 1:i + 1 + kl]; i += 1 + kl
    b = data[i]; i += 1
    n = (b & 0x7F) | (data[i] << 7) if b & 0x80 else b
    if b & 0x80:
        i += 1
    rows.append((k, data[i + 1:i + n])); i += n
rows = rows[:400_000]
RAW = sum(len(k) + len(v) for k, v in rows)

def chunks(limit):
    cur, size = [], 0
    for r in rows:
        s = len(r[1]) + 16
        if size + s > limit and cur:
            yield cur; cur, size = [], 0
        cur.append(r); size += s
    if cur:
        yield cur

def as_stored(c):
    return [b''.join(bytes([12]) + k + bytes([(len(v) + 1) & 0x7F | 0x80, (len(v) + 1) >> 7, 1]) + v for k, v in c)]

def keys_apart(c):
    ks, vs, pt, pr = bytearray(), bytearray(), 0, 0
    for k, v in c:
        t, r = int.from_bytes(k[:8], 'big'), int.from_bytes(k[8:], 'big')
        ks += varint(t - pt) + varint(r - pr); pt, pr = t, r
        vs += varint(len(v)) + v
    return [bytes(ks) + bytes(vs)]

HEXRUN, DIGITS = re.compile(rb'[0-9a-f]+'), re.compile(rb'[0-9]+')
def tokenized(c):
    """Keys prefix-coded; in each line, runs of 8+ hex digits with a letter become
    bytes and runs of decimal digits varints, in a stream apart from the text."""
    ks, tm, nm, prev = bytearray(), bytearray(), bytearray(), b''
    for k, v in c:
        sh = 0
        while sh < min(len(k), len(prev)) and k[sh] == prev[sh]:
            sh += 1
        ks += bytes([sh, len(k) - sh]) + k[sh:]; prev = k
        pos = 0
        for m in HEXRUN.finditer(v):
            s, e = m.span(); run = m.group()
            if e - s >= 8 and (e - s) % 2 == 0 and re.search(rb'[a-f]', run):
                tm += v[pos:s] + b'\x02' + bytes([e - s]); nm += bytes.fromhex(run.decode()); pos = e
                continue
            for d in DIGITS.finditer(run):
                ds, de = d.start() + s, d.end() + s
                if de - ds <= 19:
                    tm += v[pos:ds] + b'\x01' + bytes([de - ds]); nm += varint(int(v[ds:de])); pos = de
        tm += v[pos:] + b'\x00'
    return [bytes(ks), bytes(tm), bytes(nm)]

def measure(name, encode, limit, levels, dictionary=False):
    parts = [encode(c) for c in chunks(limit)]
    raw = RAW
    if dictionary:  # trained on the first 200 chunks, measured on the rest
        d = zs.train_dictionary(16384, [b''.join(p) for p in parts[:200]])
        raw = RAW - sum(len(k) + len(v) for c in list(chunks(limit))[:200] for k, v in c)
        parts = parts[200:]
    for level in levels:
        cz = zs.ZstdCompressor(level=level, dict_data=d) if dictionary else zs.ZstdCompressor(level=level)
        t = time.time(); out = sum(len(cz.compress(x)) for p in parts for x in p); dt = time.time() - t
        print(f'{name:<44} {limit >> 10:>4} KiB  level {level:>2}: {raw / out:5.2f}x  {raw / dt / 1e6:6.0f} MB/s')

for lvl_set, limit in [((1, 3, 6, 9, 19), 64 << 10), ((1, 5), 128 << 10), ((1, 5), 256 << 10)]:
    measure('as stored', as_stored, limit, lvl_set)
    measure('keys delta-coded apart from lines', keys_apart, limit, lvl_set)
    measure('keys prefix-coded, numbers as binary', tokenized, limit, lvl_set + ((9,) if limit > 64 << 10 else ()))
measure('as stored, 16 KiB trained dictionary', as_stored, 64 << 10, (1, 9), dictionary=True)
measure('keys apart, 16 KiB trained dictionary', keys_apart, 64 << 10, (1, 9), dictionary=True)
