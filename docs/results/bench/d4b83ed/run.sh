#!/bin/bash
# Addendum to issue 5, sixth pass: the engine at d4b83ed (6ab0ddd's spills, plus a pre-sized arena for
# gathered spills and slot comparisons that read the arena only on a prefix tie), on the three loads
# the aims name, against RocksDB in the same run (SQLite's figures are in the 6ab0ddd record), then three
# more runs of fractaldb alone for the spread of last/first. Progress every second (the default).
# Build first:
#   cargo build --release -p fractaldb-cli --features rocksdb
# (built without ROCKSDB_LIB_DIR: RocksDB 7.9.2, bundled).
B=${B:-target/release/fractaldb}
D=${D:-data/bench}
O=${O:-bench-out}
mkdir -p $O
uptime > $O/load-start.txt
rm -rf $D/insert; $B bench insert --engines fractaldb,rocksdb --cache 64MiB --dir $D/insert --out $O/insert > $O/insert.log 2>&1
rm -rf $D/loads; $B bench iibench rollup-random --engines fractaldb,rocksdb --rows 8600k --cache 64MiB --dir $D/loads --out $O/loads > $O/loads.log 2>&1
for i in 1 2 3; do
  mkdir -p $O/repeat-$i
  rm -rf $D/insert; $B bench insert --engines fractaldb --cache 64MiB --dir $D/insert --out $O/repeat-$i/insert > $O/repeat-$i/insert.log 2>&1
  rm -rf $D/loads; $B bench iibench rollup-random --engines fractaldb --rows 8600k --cache 64MiB --dir $D/loads --out $O/repeat-$i/loads > $O/repeat-$i/loads.log 2>&1
done
rm -rf $D/insert $D/loads
uptime > $O/load-end.txt
echo done > $O/DONE
