#!/bin/bash
# Issue 22's restated aims at 100x the 64 MiB cache: insert (62.5M rows) settled, and the random roll-up (43M rows),
# fractaldb against the tuned RocksDB (Debian's 7.8.3), one command each. Build:
#   ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu cargo build --release -p fractaldb-cli --features rocksdb
B=${B:-target/release/fractaldb}
D=${D:-data/bench}
O=${O:-bench-out}
mkdir -p $O
uptime > $O/load-start.txt
rm -rf $D/i100; $B bench insert settle --engines fractaldb,rocksdb-tuned --rows 62500000 --cache 64MiB --dir $D/i100 --out $O/insert-62M > $O/insert-62M.log 2>&1
rm -rf $D/i100
uptime > $O/load-mid.txt
rm -rf $D/r100; $B bench rollup-random --engines fractaldb,rocksdb-tuned --rows 43M --cache 64MiB --dir $D/r100 --out $O/rollup-random-43M > $O/rollup-random-43M.log 2>&1
rm -rf $D/r100
uptime > $O/load-end.txt
echo done > $O/DONE
