#!/bin/bash
# selmem2.sh BIN PORT: load + double twice, restart the server, then SELECT * of the 5M-row
# table and a mariadb-dump of it; the server's peak RSS (VmHWM) after each.
B=$1; P=$2; D=/tmp/sm-$P; rm -rf $D; mkdir -p $D
DUMP=/work/runs/bench-sql-data/inputs/maintenance-1250000-42.sql
start() { $B server --datadir $D --port $P --socket $D/sock --cache-mb 64 >> $D.log 2>&1 & S=$!; sleep 2; }
start
M="mariadb -h127.0.0.1 -P$P -uroot"
$M -e "CREATE DATABASE m"; $M m < $DUMP
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 1250000, hashcode, dt, amount FROM maint"
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 2500000, hashcode, dt, amount FROM maint"
echo "after load and doublings: $(grep VmHWM /proc/$S/status)"
kill $S; wait $S; start
echo "restarted: $(grep VmHWM /proc/$S/status)"
/usr/bin/time -f "select-all %e s" $M --quick m -e "SELECT * FROM maint" | wc -l
echo "after SELECT *: $(grep VmHWM /proc/$S/status)"
/usr/bin/time -f "select-order %e s" $M --quick m -e "SELECT * FROM maint ORDER BY amount" | wc -l
echo "after SELECT * ORDER BY amount: $(grep VmHWM /proc/$S/status)"
/usr/bin/time -f "mariadb-dump %e s" mariadb-dump -h127.0.0.1 -P$P -uroot m maint | wc -c
echo "after mariadb-dump: $(grep VmHWM /proc/$S/status)"
kill $S; wait $S
