#!/bin/bash
O=$1; shift; mkdir -p $O
for r in 1 2; do for B in "$@"; do
  n=$(basename $B)-$r; D=/work/p100/data-$n; rm -rf $D
  $B bench insert mixed --engines fractaldb --rows 12500000 --cache 64MiB --threads 64 --seconds ${SECS:-60} --dir $D --out $O/$n > $O/$n.log 2>&1
  rm -rf $D
done; done
echo done > $O/DONE
