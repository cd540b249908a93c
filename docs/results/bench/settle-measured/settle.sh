#!/bin/bash
# settle.sh BIN PORT SECS [OPT]: load the maintenance dump, double twice, then sample the
# server's threads' CPU and io every 5 s for SECS s with no statement running.
# With OPT=1 run OPTIMIZE TABLE right after double-2 instead of idling, and time it.
B=$1; P=$2; W=$3; OPT=$4; D=/tmp/st-$P; rm -rf $D; mkdir -p $D
DUMP=/work/runs/bench-sql-data/inputs/maintenance-1250000-42.sql
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
M="mariadb -h127.0.0.1 -P$P -uroot"
$M -e "CREATE DATABASE m"
t0=$(date +%s.%N); $M m < $DUMP; t1=$(date +%s.%N); echo "load $(echo "$t1-$t0"|bc)"
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 1250000, hashcode, dt, amount FROM maint"
t2=$(date +%s.%N); echo "double1 $(echo "$t2-$t1"|bc)"
$M m -e "INSERT INTO maint (id, hashcode, dt, amount) SELECT id + 2500000, hashcode, dt, amount FROM maint"
t3=$(date +%s.%N); echo "double2 $(echo "$t3-$t2"|bc)"
snap() { for t in /proc/$S/task/*; do n=$(cat $t/comm); s=($(cut -d' ' -f14,15 $t/stat)); echo "$n $((s[0]+s[1]))"; done | awk '{a[$1]+=$2} END {for (k in a) printf "%s=%d ", k, a[k]}'; grep -E "read_bytes|^write_bytes" /proc/$S/io | awk '{printf "%s=%dM ", $1, $2/1048576}'; echo; }
if [ "$OPT" = 1 ]; then
  /usr/bin/time -f "optimize %e s" $M m -e "OPTIMIZE TABLE maint" >/dev/null
fi
for i in $(seq 0 5 $W); do echo "t=$i $(snap)"; sleep 5; done
/usr/bin/time -f "group-by %e s" $M -N m -e "SELECT hashcode FROM maint GROUP BY hashcode HAVING COUNT(*) > 12" | sort | head -1000 | sed "s/.*/'&'/" | paste -sd, > $D.codes
/usr/bin/time -f "delete %e s" $M m -e "DELETE FROM maint WHERE hashcode IN ($(cat $D.codes))"
echo "end $(snap)"
kill $S; wait $S
