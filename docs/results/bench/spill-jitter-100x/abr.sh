#!/bin/bash
# abr.sh OUT ROUNDS BIN...: fractaldb insert at ~100x the 64 MiB cache, binaries alternated, ROUNDS rounds.
O=$1; R=$2; shift 2; mkdir -p $O
for r in $(seq 1 $R); do for B in "$@"; do
  n=$(basename $(dirname $B))-$r; D=/work/p100/data-$n; rm -rf $D
  uptime > $O/$n.load-start
  $B bench insert --engines fractaldb --rows ${ROWS:-62500000} --cache 64MiB --dir $D --out $O/$n > $O/$n.log 2>&1
  uptime > $O/$n.load-end
  rm -rf $D
done; done
echo done > $O/DONE
