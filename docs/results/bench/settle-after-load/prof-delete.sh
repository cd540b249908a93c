#!/bin/bash
# prof-delete.sh BIN PORT: the maintenance sequence by hand up to the DELETE, perf-recorded.
B=$1; P=$2; D=/tmp/pd-$P; rm -rf $D; mkdir -p $D
DUMP=${DUMP:-maintenance-1250000-42.sql}
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
M="mariadb -h127.0.0.1 -P$P -uroot"
$M -e "CREATE DATABASE m"
$M m < $DUMP
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 1250000, hashcode, dt, amount FROM maint"
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 2500000, hashcode, dt, amount FROM maint"
$M -N m -e "SELECT hashcode FROM maint GROUP BY hashcode HAVING COUNT(*) > 12" | sort | head -1000 | sed "s/.*/'&'/" | paste -sd, > $D.codes
echo "codes: $(tr ',' '\n' < $D.codes | wc -l)"
perf record -F 999 -g -p $S -o $D.perf.data > /dev/null 2>&1 &
PR=$!; sleep 1
/usr/bin/time -f "delete %e s" $M m -e "DELETE FROM maint WHERE hashcode IN ($(cat $D.codes))"
kill -INT $PR; wait $PR
kill $S; wait $S
perf report -i $D.perf.data --no-children --sort symbol --stdio 2>/dev/null | grep -v "^#" | grep "%" | head -40
