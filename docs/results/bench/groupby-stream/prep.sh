#!/bin/bash
# prep.sh BIN PORT DIR: load the 1.25M-row dump, double twice, wait 40 s, stop the server (the settled table stays in DIR).
B=$1; P=$2; D=$3; rm -rf $D; mkdir -p $D
DUMP=/tmp/bm/data/inputs/maintenance-1250000-42.sql
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
M="mariadb -h127.0.0.1 -P$P -uroot"
$M -e "CREATE DATABASE m"
$M m < $DUMP
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 1250000, hashcode, dt, amount FROM maint"
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 2500000, hashcode, dt, amount FROM maint"
sleep 40
kill $S; wait $S
