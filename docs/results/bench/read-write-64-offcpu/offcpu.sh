#!/bin/bash
# offcpu.sh fractal|innodb PORT THREADS SECS [offcpu|oncpu|stat]: oltp_read_write (1 table, 10,000 rows, uniform)
# against a fresh server; prints tps, server CPU per txn, context switches per txn (perf stat on the server pid);
# with offcpu/oncpu records sched_switch / cycles call graphs for 4 s into $D/perf.data.
KIND=$1; PORT=$2; TH=$3; SECS=$4; MODE=${5:-stat}; D=/work/rw/d$PORT; rm -rf $D; mkdir -p $D
. /work/main/docs/results/bench/insert-grid-58023ac/scripts/server.sh
start_server $KIND $PORT $D
SB="sysbench oltp_read_write --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=bench --tables=1 --table-size=10000 --rand-type=uniform"
$SB prepare > /dev/null
c0=$(awk '{print $14+$15}' /proc/$SPID/stat)
PP=
case $MODE in
  offcpu) (sleep 5; timeout -s INT 4 perf record -e sched:sched_switch --call-graph dwarf,16384 -p $SPID -o $D/perf.data >/dev/null 2>&1) & PP=$! ;;
  oncpu) (sleep 5; timeout -s INT 6 perf record -F 499 --call-graph dwarf,16384 -p $SPID -o $D/perf.data >/dev/null 2>&1) & PP=$! ;;
esac
(sleep 3; perf stat -e context-switches,task-clock -x, -p $SPID -o $D/stat.txt -- sleep 10 >/dev/null 2>&1) &
ST=$!
out=$($SB --threads=$TH --time=$SECS --report-interval=1 run)
c1=$(awk '{print $14+$15}' /proc/$SPID/stat)
wait $ST $PP
tps=$(echo "$out" | grep "^\[" | sed -n 4,13p | awk '{s+=$7} END {print s/NR}')
n=$(echo "$out" | grep "transactions:" | awk '{print $2}')
cs=$(grep context-switches $D/stat.txt | cut -d, -f1)
echo "$KIND threads $TH tps_window $tps total $(echo "$out" | grep 'transactions:') cpu_us_per_txn $(( (c1-c0)*10000 / n )) cs_per_txn $(echo "$cs / ($tps*10)" | bc -l | cut -c1-5)"
kill $SPID; wait $SPID 2>/dev/null
