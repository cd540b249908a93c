#!/bin/bash
# prof-gb.sh BIN PORT WAIT: load, double twice, wait WAIT s, then time the GROUP BY and the DELETE.
B=$1; P=$2; W=$3; D=/tmp/pg-$P; rm -rf $D; mkdir -p $D
DUMP=/work/runs/bench-sql-data/inputs/maintenance-1250000-42.sql
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
M="mariadb -h127.0.0.1 -P$P -uroot"
$M -e "CREATE DATABASE m"
$M m < $DUMP
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 1250000, hashcode, dt, amount FROM maint"
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 2500000, hashcode, dt, amount FROM maint"
sleep $W
/usr/bin/time -f "group-by %e s" $M -N m -e "SELECT hashcode FROM maint GROUP BY hashcode HAVING COUNT(*) > 12" | sort | head -1000 | sed "s/.*/'&'/" | paste -sd, > $D.codes
/usr/bin/time -f "delete %e s" $M m -e "DELETE FROM maint WHERE hashcode IN ($(cat $D.codes))"
kill $S; wait $S
