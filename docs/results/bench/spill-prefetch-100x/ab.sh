#!/bin/bash
# ab.sh OUT BIN...: fractaldb insert at ~100x the 64 MiB cache with each binary in turn.
O=$1; shift; mkdir -p $O
for B in "$@"; do
  n=$(basename $B); D=/work/p100/data-$n; rm -rf $D
  uptime > $O/$n.load-start
  $B bench insert --engines fractaldb --rows ${ROWS:-62500000} --cache 64MiB --dir $D --out $O/$n > $O/$n.log 2>&1
  uptime > $O/$n.load-end
  rm -rf $D
done
echo done > $O/DONE
