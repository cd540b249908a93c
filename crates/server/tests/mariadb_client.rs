//! The real `mariadb` command-line client against the server: `-e`, a
//! script on stdin, errors printed as MySQL prints them, the Unix socket,
//! `use db` (COM_INIT_DB), `status` (COM_STATISTICS) and the interactive
//! start-up queries. Skipped without the client, except under CI=true.

mod support;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use support::{need_program, TestServer};

fn run(bin: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(bin)
        .args(["--no-defaults"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting mariadb");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn mariadb_client_works() {
    let Some(bin) = need_program("mariadb_client_works", "mariadb", "apt-get install mariadb-client") else {
        return;
    };
    let s = TestServer::start();
    let port = s.port.to_string();
    let tcp = ["-h", "127.0.0.1", "-P", &port, "-u", "root"];

    let o = run(&bin, &[&tcp[..], &["-e", "CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, name VARCHAR(10)); INSERT INTO shop.t VALUES (1, 'a'), (2, NULL); SELECT * FROM shop.t ORDER BY id"]].concat(), None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "id\tname\n1\ta\n2\tNULL\n");

    // A script on stdin, with `use` (COM_INIT_DB) and an error at line 3.
    let script = "use shop\nSELECT COUNT(*) AS n FROM t;\nSELECT * FROM nope;\nSELECT 'not reached';\n";
    let o = run(&bin, &tcp, Some(script));
    assert!(!o.status.success());
    assert_eq!(text(&o.stdout), "n\n2\n");
    assert!(
        text(&o.stderr).contains("ERROR 1146 (42S02) at line 3: Table 'shop.nope' doesn't exist"),
        "stderr: {}",
        text(&o.stderr)
    );

    // -e with an error: MySQL's message format, exit status 1.
    let o = run(&bin, &[&tcp[..], &["-e", "SELECT * FROM shop.y"]].concat(), None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("ERROR 1146 (42S02) at line 1: Table 'shop.y' doesn't exist"),
        "{}",
        text(&o.stderr)
    );

    // The Unix socket, a database on the command line, and `status`.
    let sock = s.socket.to_str().unwrap().to_string();
    let o = run(&bin, &["-S", &sock, "-u", "root", "shop"], Some("SELECT DATABASE();\nstatus\n"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("DATABASE()\nshop\n"), "{out}");
    assert!(out.contains("Connection:\t\tLocalhost via UNIX socket"), "{out}");
    assert!(out.contains("Uptime:"), "{out}");
    assert!(out.contains("Threads: 1  Questions:"), "{out}");

    // Table output (-t) of a query with several types.
    let o =
        run(&bin, &[&tcp[..], &["-t", "-e", "SELECT 1 AS i, 2.50 AS d, 'x' AS s, NULL AS n"]].concat(), None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let row = out.lines().find(|l| l.contains("2.50")).unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells, ["", "1", "2.50", "x", "NULL", ""], "{out}");

    // Wrong user: access denied, as MySQL words it.
    let o = run(&bin, &["-h", "127.0.0.1", "-P", &port, "-u", "bob", "-e", "SELECT 1"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr)
            .contains("ERROR 1045 (28000): Access denied for user 'bob'@'localhost' (using password: NO)"),
        "{}",
        text(&o.stderr)
    );
}
