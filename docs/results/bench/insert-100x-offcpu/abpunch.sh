#!/bin/bash
O=$1; mkdir -p $O
for r in 1; do for P in punch nopunch; do
  D=/work/p100/data-$P; rm -rf $D
  if [ $P = nopunch ]; then export FDB_NOPUNCH=1; else unset FDB_NOPUNCH; fi
  /work/bin-n bench insert --engines fractaldb --rows 62500000 --cache 64MiB --dir $D --out $O/$P-$r > $O/$P-$r.log 2>&1
  rm -rf $D
done; done
echo done > $O/DONE
