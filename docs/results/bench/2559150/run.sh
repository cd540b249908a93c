#!/bin/bash
# The measurements of issue 5, eighth pass (engine at 2559150: the evictor spills an internal node's larger buffers before writing it back;
# a flush merges a child's spills k ways), one run after another: reads, mixed at 1, 8 and 64
# threads, codec, loads, `fractaldb check` on the loads' datasets, then insert at 25M rows (40x the cache)
# against RocksDB for the lowest 10 s window. Progress is reported every
# second (the default since 95393d8). Build first:
#   cargo build --release -p fractaldb-cli --features rocksdb
# (built without ROCKSDB_LIB_DIR: RocksDB 7.9.2, bundled).
B=${B:-target/release/fractaldb}
D=${D:-data/bench}
O=${O:-bench-out}
mkdir -p $O
uptime > $O/load-start.txt
rm -rf $D/reads; $B bench insert point-get range-scan scan --engines fractaldb,rocksdb,sqlite --cache 64MiB --gets 200k --dir $D/reads --out $O/reads > $O/reads.log 2>&1
rm -rf $D/reads
uptime > $O/load-after-reads.txt
for t in 1 8 64; do
  rm -rf $D/mixed; $B bench insert mixed --engines fractaldb,rocksdb --rows 2M --threads $t --seconds 20 --cache 64MiB --dir $D/mixed --out $O/mixed-$t > $O/mixed-$t.log 2>&1
done
rm -rf $D/mixed
rm -rf $D/codec; $B bench codec --engines fractaldb,rocksdb,sqlite --rows 1M --cache 64MiB --dir $D/codec --out $O/codec > $O/codec.log 2>&1
rm -rf $D/codec
rm -rf $D/loads; $B bench iibench rollup-seq rollup-random --engines fractaldb,rocksdb,sqlite --rows 8600k --cache 64MiB --dir $D/loads --out $O/loads > $O/loads.log 2>&1
for w in iibench rollup-random rollup-seq; do
  { echo "## $w"; du -sb $D/loads/fractaldb/$w $D/loads/rocksdb/$w; $B check $D/loads/fractaldb/$w; } >> $O/loads/check.md 2>&1
done
rm -rf $D/loads
rm -rf $D/insert25; $B bench insert --engines fractaldb,rocksdb --rows 25M --cache 64MiB --dir $D/insert25 --out $O/insert-25M > $O/insert-25M.log 2>&1
rm -rf $D/insert25
uptime > $O/load-end.txt
echo done > $O/DONE
# Run after the script above, by hand: the random roll-up at 17.2M rows (40x the cache) against RocksDB, because
# at 8.6M rows fractaldb's load now ends within about 10 s and has no 10 s window to compare.
# rm -rf $D/ru; $B bench rollup-random --engines fractaldb,rocksdb --rows 17200k --cache 64MiB --dir $D/ru --out $O/rollup-random-17M > $O/rollup-random-17M.log 2>&1
