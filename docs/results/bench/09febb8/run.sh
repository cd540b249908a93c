#!/bin/bash
# Issue 5, fourth pass, addendum: the engine at 09febb8 (lz4 without
# safe-encode) against RocksDB only (no SQLite: its loads take minutes and
# its ratios only grow as fractaldb gets faster). Same cache and durability
# as a8d4e89/run.sh. Build first: cargo build --release -p fractaldb-cli --features rocksdb
B=${B:-target/release/fractaldb}
D=${D:-data/bench}
O=${O:-bench-out}
mkdir -p $O
rm -rf $D/reads; $B bench insert --engines fractaldb,rocksdb --cache 64MiB --dir $D/reads --out $O/insert > $O/insert.log 2>&1
rm -rf $D/loads; $B bench iibench rollup-random --engines fractaldb,rocksdb --rows 8600k --cache 64MiB --dir $D/loads --out $O/loads > $O/loads.log 2>&1
