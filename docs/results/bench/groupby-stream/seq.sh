#!/bin/bash
# seq.sh BIN PORT DIR [PERF]: load, double twice, then right away the GROUP BY (profiled into PERF) and the DELETE, as the benchmark runs them.
B=$1; P=$2; D=$3; PF=$4; rm -rf $D; mkdir -p $D
DUMP=/tmp/bm/data/inputs/maintenance-1250000-42.sql
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
M="mariadb -h127.0.0.1 -P$P -uroot"
$M -e "CREATE DATABASE m"
$M m < $DUMP
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 1250000, hashcode, dt, amount FROM maint"
/usr/bin/time -f "double-2 %e s" $M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 2500000, hashcode, dt, amount FROM maint"
Q="SELECT COUNT(*), hashcode FROM maint GROUP BY hashcode HAVING COUNT(*) > 12"
if [ -n "$PF" ]; then perf record -F 499 --call-graph dwarf,16384 -p $S -o $PF > /dev/null 2>&1 & PP=$!; sleep 0.2; fi
/usr/bin/time -f "group-by %e s" $M -N m -e "$Q" | sort | head -1000 | awk '{print "\x27"$2"\x27"}' | paste -sd, > $D.codes
[ -n "$PF" ] && kill -INT $PP && wait $PP
/usr/bin/time -f "delete %e s" $M m -e "DELETE FROM maint WHERE hashcode IN ($(cat $D.codes))"
grep -E "^(VmHWM)" /proc/$S/status
kill $S; wait $S
