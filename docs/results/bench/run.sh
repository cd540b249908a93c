#!/bin/bash
# The measurements for issue 5's closing note (engine at 8aa150b), one run after another.
B=/work/runs/final/fractaldb-bin
D=/work/runs/data
O=/work/runs/final
uptime > $O/load-start.txt
$B bench insert point-get range-scan scan --engines fractaldb,rocksdb,sqlite --cache 64MiB --gets 200k --dir $D --out $O/reads > $O/reads.log 2>&1
for t in 1 8 64; do
  $B bench insert mixed --engines fractaldb,rocksdb --rows 2M --threads $t --seconds 20 --cache 64MiB --dir $D --out $O/mixed-$t > $O/mixed-$t.log 2>&1
done
$B bench codec --engines fractaldb,rocksdb,sqlite --rows 1M --cache 64MiB --dir $D --out $O/codec > $O/codec.log 2>&1
$B bench iibench rollup-seq rollup-random --engines fractaldb,rocksdb,sqlite --rows 8600k --cache 64MiB --dir $D --out $O/loads > $O/loads.log 2>&1
uptime > $O/load-end.txt
echo done > $O/DONE
