#!/bin/bash
# sizes.sh BIN PORT: loads the maintenance dump into a fresh server, OPTIMIZE, and prints each dictionary's bytes.
# The dump is the one `fractaldb bench-sql maintenance --maintenance-rows 1250k` writes into its data folder (inputs/); DUMP=path names it.
B=$1; P=$2; D=${TMPDIR:-/tmp}/sz-$P; rm -rf $D; mkdir -p $D
$B server --datadir $D --port $P --socket $D/sock --cache-mb 64 > $D.log 2>&1 &
S=$!; sleep 2
mariadb -h127.0.0.1 -P$P -uroot -e "CREATE DATABASE m"
mariadb -h127.0.0.1 -P$P -uroot m < ${DUMP:-maintenance-1250000-42.sql}
mariadb -h127.0.0.1 -P$P -uroot m -e "OPTIMIZE TABLE maint" > /dev/null
mariadb -h127.0.0.1 -P$P -uroot -e "SELECT * FROM INFORMATION_SCHEMA.TokuDB_fractal_tree_info WHERE table_schema='m'\G" | grep -E "dictionary_name|bt_num_blocks|bt_size_allocated|bt_size_in_use"
kill $S; wait $S
