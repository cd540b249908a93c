#!/bin/bash
# alternate fractaldb-only maintenance runs: bin-cc (compact carry) vs bin-rk (+ keyless rows)
# run from any folder; binaries: bin-cc = 0fd2794 (compact carried values), bin-rk = the keyless rows on top
for i in 1 2; do
  for b in cc rk; do
    /work/bin-$b/fractaldb bench-sql maintenance --servers fractaldb --maintenance-rows 1250k --out /work/runs/alt-$b-$i > /work/runs/alt-$b-$i.log 2>&1
  done
done
echo done > /work/runs/alt.done
