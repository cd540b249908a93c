//! `fractaldb sql` as a user runs it: the built binary on a temp folder,
//! a script on stdin (batch mode, the mariadb client's output), `-e`,
//! `--force`, and the exit status at an error.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_fractaldb");

fn sql(dir: &std::path::Path, extra: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .arg("sql")
        .arg("--datadir")
        .arg(dir)
        .arg("--no-commit-sync")
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running fractaldb sql");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_lists_the_sql_subcommand() {
    let out = Command::new(BIN).args(["sql", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = text(&out.stdout);
    for opt in ["--datadir", "--cache-size", "--no-commit-sync", "--execute", "--database", "--force"] {
        assert!(help.contains(opt), "{opt} missing from:\n{help}");
    }
}

#[test]
fn script_on_stdin_prints_batch_format_and_stops_at_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = b"CREATE DATABASE s;\nUSE s;\nCREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), b BLOB);\n\
        INSERT INTO t VALUES (1, 'a\\tb', NULL), (2, NULL, 0xFF00);\n\
        SELECT id, v FROM t ORDER BY id;\n\
        SELECT * FROM t WHERE id > 5;\n\
        \n\
        SELECT * FROM missing;\n\
        SELECT 'not reached';\n";
    let out = sql(dir.path(), &[], script);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "id\tv\n1\ta\\tb\n2\tNULL\n");
    assert_eq!(
        text(&out.stderr),
        "--------------\nSELECT * FROM missing\n--------------\n\n\
         ERROR 1146 (42S02) at line 8: Table 's.missing' doesn't exist\n"
    );

    // --force goes on after the error; the data persisted in the folder.
    let out = sql(
        dir.path(),
        &["-D", "s", "--force"],
        b"SELECT nothing FROM missing;\nSELECT COUNT(*) AS n FROM t;\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "n\n2\n");
    assert!(text(&out.stderr).contains("\nERROR 1146 (42S02) at line 1:"), "{}", text(&out.stderr));
}

#[test]
fn execute_option_and_vertical_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = sql(
        dir.path(),
        &["-e", "CREATE DATABASE d; CREATE TABLE d.t (a INT, b VARCHAR(5)); INSERT INTO d.t VALUES (1, 'x')"],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = sql(dir.path(), &["-D", "d", "-e", "SELECT a, b FROM t\\G"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "*************************** 1. row ***************************\na: 1\nb: x\n"
    );
    let out = sql(dir.path(), &["-D", "nope", "-e", "SELECT 1"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("ERROR 1049 (42000)"), "{}", text(&out.stderr));
}

#[test]
fn table_format_with_nulls_and_right_aligned_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = sql(
        dir.path(),
        &["--table"],
        b"CREATE DATABASE d; USE d; CREATE TABLE t (n INT, s VARCHAR(10));\n\
          INSERT INTO t VALUES (5, 'ab'), (123, NULL);\nSELECT n, s FROM t ORDER BY n;",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "+------+------+\n| n    | s    |\n+------+------+\n|    5 | ab   |\n|  123 | NULL |\n+------+------+\n"
    );
}
