#!/bin/bash
# The measurements of issue 5, ninth pass (engine at 10f5b1c: a checkpoint rolls the log before its begin record, so its
# trim deletes every record it made unnecessary, and runs early once 1 GiB of log has piled up), one run after another:
# reads, mixed at 1, 8 and 64 threads, codec, loads, `fractaldb check` on the loads' datasets, insert at 25M rows (40x the
# cache) and the random roll-up at 17.2M rows (40x) against RocksDB for the lowest 10 s window, then insert at 62M rows
# (about 100x the cache) against RocksDB for how the ratios move with size. Progress is reported every second. Build first:
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
rm -rf $D/ru; $B bench rollup-random --engines fractaldb,rocksdb --rows 17200k --cache 64MiB --dir $D/ru --out $O/rollup-random-17M > $O/rollup-random-17M.log 2>&1
rm -rf $D/ru
rm -rf $D/insert62; $B bench insert --engines fractaldb,rocksdb --rows 62M --cache 64MiB --dir $D/insert62 --out $O/insert-62M > $O/insert-62M.log 2>&1
rm -rf $D/insert62
uptime > $O/load-end.txt
echo done > $O/DONE
