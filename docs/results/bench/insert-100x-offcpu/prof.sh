#!/bin/bash
# prof.sh BIN OUT [ROWS]: fractaldb insert at ~100x the 64 MiB cache alone; at 50 s records
# off-CPU (sched_switch, 5 s) then on-CPU (6 s) call graphs of the engine's child process.
BIN=$1; O=$2; ROWS=${3:-62500000}; mkdir -p $O; D=/work/p100/data; rm -rf $D
uptime > $O/load-start.txt
$BIN bench insert --engines fractaldb --rows $ROWS --cache 64MiB --dir $D --out $O/bench > $O/bench.log 2>&1 &
BP=$!
sleep 50
CP=$(pgrep -f "bench-child.*fractaldb" | head -1)
echo "child $CP" > $O/pid.txt
timeout -s INT 5 perf record -e sched:sched_switch --call-graph dwarf,16384 -p $CP -o $O/off.data >/dev/null 2>&1
timeout -s INT 6 perf record -F 499 --call-graph dwarf,16384 -p $CP -o $O/on.data >/dev/null 2>&1
wait $BP
uptime > $O/load-end.txt
rm -rf $D
echo done > $O/DONE
