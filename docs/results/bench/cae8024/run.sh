#!/bin/bash
# Addendum to issue 5, fifth pass: the engine at cae8024 (a transaction's batch sorted once, flushes
# applying borrowed values), on the three loads the aims name, against RocksDB and SQLite in the same
# run. fractaldb's insert now ends in under 10 s, so progress is reported every second
# (--interval-secs 1): with 10 s intervals its first and last 10% of rows fall in one interval and
# cannot be timed. Build first:
#   cargo build --release -p fractaldb-cli --features rocksdb
# (built without ROCKSDB_LIB_DIR: RocksDB 7.9.2, bundled).
B=${B:-target/release/fractaldb}
D=${D:-data/bench}
O=${O:-bench-out}
mkdir -p $O
uptime > $O/load-start.txt
rm -rf $D/insert; $B bench insert --engines fractaldb,rocksdb,sqlite --cache 64MiB --interval-secs 1 --dir $D/insert --out $O/insert > $O/insert.log 2>&1
uptime > $O/load-after-insert.txt
rm -rf $D/loads; $B bench iibench rollup-random --engines fractaldb,rocksdb,sqlite --rows 8600k --cache 64MiB --interval-secs 1 --dir $D/loads --out $O/loads > $O/loads.log 2>&1
uptime > $O/load-end.txt
rm -rf $D/insert $D/loads
echo done > $O/DONE
