#!/bin/bash
# prof.sh BIN PORT: load, double twice, wait 30 s, then perf the GROUP BY (3 runs timed, 1 profiled).
B=$1; P=$2; D=/tmp/pf-$P; rm -rf $D; mkdir -p $D
DUMP=/work/runs/bench-sql-data/inputs/maintenance-1250000-42.sql
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
M="mariadb -h127.0.0.1 -P$P -uroot"
$M -e "CREATE DATABASE m"
$M m < $DUMP
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 1250000, hashcode, dt, amount FROM maint"
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 2500000, hashcode, dt, amount FROM maint"
sleep 30
Q="SELECT hashcode, COUNT(*) FROM maint GROUP BY hashcode HAVING COUNT(*) > 12"
for i in 1 2; do /usr/bin/time -f "group-by %e s" $M -N m -e "$Q" | wc -l; done
$M m -e "EXPLAIN $Q"
perf record -F 999 -g -p $S -o /work/s26/gb.perf -- sleep 4 > /dev/null 2>&1 &
PP=$!; /usr/bin/time -f "group-by (perf) %e s" $M -N m -e "$Q" | wc -l; wait $PP
kill $S; wait $S
