#!/bin/bash
# gb.sh BIN PORT DIR [PERF]: start on DIR, time the GROUP BY three times; with PERF, profile the third into PERF.
B=$1; P=$2; D=$3; PF=$4
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
M="mariadb -h127.0.0.1 -P$P -uroot"
Q="SELECT COUNT(*), hashcode FROM maint GROUP BY hashcode HAVING COUNT(*) > 12"
for i in 1 2; do /usr/bin/time -f "group-by %e s %U u" $M -N m -e "$Q" | wc -l; done
if [ -n "$PF" ]; then
perf record -F 499 --call-graph dwarf,16384 -p $S -o $PF -- sleep 3 > /dev/null 2>&1 &
PP=$!; sleep 0.3; fi
/usr/bin/time -f "group-by %e s" $M -N m -e "$Q" | wc -l
[ -n "$PF" ] && wait $PP
grep -E "^(Threads|VmHWM)" /proc/$S/status
kill $S; wait $S
