#!/bin/bash
# decay.sh OUT ROUNDS MS...: the 100x insert with jemalloc's dirty_decay_ms set to each MS in turn (environment override of alloc_conf.rs).
O=$1; R=$2; shift 2; mkdir -p $O; B=/work/bin-main/fractaldb
for r in $(seq 1 $R); do for MS in "$@"; do
  n=decay$MS-$r; D=/work/p100/data-$n; rm -rf $D
  uptime > $O/$n.load-start
  _RJEM_MALLOC_CONF=dirty_decay_ms:$MS $B bench insert --engines fractaldb --rows ${ROWS:-62500000} --cache 64MiB --dir $D --out $O/$n > $O/$n.log 2>&1
  uptime > $O/$n.load-end
  rm -rf $D
done; done
echo done > $O/DONE
