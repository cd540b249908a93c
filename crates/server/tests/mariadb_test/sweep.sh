#!/usr/bin/env bash
# Re-runs every file of skip.txt against a fresh release server, to find
# files that pass now (then move them to pass.txt; tests/mariadb_test.rs
# runs those). Usage, from the repository root, after
# `cargo build --release -p fractaldb-cli`:
#   bash crates/server/tests/mariadb_test/sweep.sh [WORKDIR]
# Prints one line per file to WORKDIR/results.txt: PASS, or FAIL with
# mariadb-test's exit code (62: the test skipped itself; 124: timed out).
set -u
repo=$(pwd)
bin=${FRACTALDB_BIN:-$repo/target/release/fractaldb}
work=${1:-/tmp/mariadb-test-sweep}
suite=/usr/share/mysql/mysql-test
port=${SWEEP_PORT:-3430}
rm -rf "$work" && mkdir -p "$work/dir/main" "$work/dir/tmp" "$work/dir/log"
# mariadb-test writes NAME.reject beside the result: a folder of symlinks.
for e in "$suite"/*; do [ "$(basename "$e")" != main ] && ln -s "$e" "$work/dir/"; done
for e in "$suite"/main/*; do ln -s "$e" "$work/dir/main/"; done
start() {
    "$bin" server --datadir "$work/data" --port "$port" --socket "$work/data/s.sock" --cache-mb 64 \
        > "$work/server.log" 2>&1 &
    echo $! > "$work/server.pid"
    sleep 2
}
start
# SWEEP_NAMES: a file of names to run instead of skip.txt's.
grep -v '^#' "${SWEEP_NAMES:-$repo/crates/server/tests/mariadb_test/skip.txt}" | cut -d'|' -f1 | sed 's/ *$//' \
    | grep -v '^$' > "$work/names.txt.new"
mv "$work/names.txt.new" "$work/names.txt"
: > "$work/results.txt"
while read -r n; do
    if ! kill -0 "$(cat "$work/server.pid")" 2>/dev/null; then
        echo "SERVER DIED before $n" >> "$work/results.txt"
        start
    fi
    mariadb -h127.0.0.1 -P"$port" -uroot -e "DROP DATABASE IF EXISTS test; CREATE DATABASE test" 2>/dev/null
    (cd "$work/dir" && timeout 60 mariadb-test --host=127.0.0.1 --user=root --database=test --silent \
        --port="$port" --socket="$work/data/s.sock" --basedir="$work/dir/" --tmpdir="$work/dir/tmp" \
        --logdir="$work/dir/log" --test-file="main/$n.test" --result-file="main/$n.result" \
        > "$work/out-$n.txt" 2>&1)
    rc=$?
    if [ $rc = 0 ]; then echo "PASS $n" >> "$work/results.txt"; else echo "FAIL $n $rc" >> "$work/results.txt"; fi
done < "$work/names.txt"
kill "$(cat "$work/server.pid")"
grep -c PASS "$work/results.txt"
