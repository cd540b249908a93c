#!/bin/bash
# conf.sh OUT ROUNDS CONF...: the 100x insert under jemalloc settings CONF (environment override of alloc_conf.rs; "-" = none), in turn.
O=$1; R=$2; shift 2; mkdir -p $O; B=${BIN:-/work/bin-base/fractaldb}
for r in $(seq 1 $R); do for C in "$@"; do
  n=$(echo "$C" | tr ':,' '-_')-$r; D=/work/p100/data-$n; rm -rf $D
  uptime > $O/$n.load-start
  if [ "$C" = "-" ]; then E=""; else E="$C"; fi
  _RJEM_MALLOC_CONF=$E $B bench ${WORK:-insert} --engines fractaldb --rows ${ROWS:-62500000} --cache 64MiB --dir $D --out $O/$n > $O/$n.log 2>&1
  uptime > $O/$n.load-end
  rm -rf $D
done; done
echo done > $O/DONE
