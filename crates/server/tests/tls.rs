//! TLS: the handshake's SSLRequest and the switch to TLS, through real
//! clients (the `mariadb` CLI, PyMySQL, the Rust mysql crate with rustls):
//! the generated certificate verifies against the generated CA, the
//! session reports its cipher, a configured certificate is used, clear
//! connections still work, and require_secure_transport refuses clear TCP.

mod support;

use std::process::Command;

use mysql::prelude::Queryable;
use support::TestServer;

fn ca(srv: &TestServer) -> std::path::PathBuf {
    srv.dir.path().join("ca.pem")
}

fn tls_opts(srv: &TestServer) -> mysql::OptsBuilder {
    srv.opts().ssl_opts(Some(mysql::SslOpts::default().with_root_cert_path(Some(ca(srv)))))
}

fn status(c: &mut mysql::Conn, name: &str) -> String {
    let r: Option<(String, String)> = c.query_first(format!("SHOW STATUS LIKE '{name}'")).unwrap();
    r.expect("a status row").1
}

#[test]
fn rust_client_over_tls_and_clear() {
    let srv = TestServer::start();
    let mut c = mysql::Conn::new(tls_opts(&srv)).expect("a TLS connection verified by the generated CA");
    let cipher = status(&mut c, "Ssl_cipher");
    let version = status(&mut c, "Ssl_version");
    assert!(!cipher.is_empty(), "Ssl_cipher is empty over TLS");
    assert!(version == "TLSv1.3" || version == "TLSv1.2", "{version}");
    // Queries and large results go through TLS records.
    let n: Option<i64> = c
        .query_first(
            "SELECT COUNT(*) FROM (SELECT REPEAT('x', 100000) AS a UNION ALL SELECT REPEAT('y', 200000)) t",
        )
        .unwrap();
    assert_eq!(n, Some(2));
    let big: Option<String> = c.query_first("SELECT REPEAT('abc', 1000000)").unwrap();
    assert_eq!(big.unwrap().len(), 3_000_000);
    let have: Option<String> = c.query_first("SELECT @@have_ssl").unwrap();
    assert_eq!(have.as_deref(), Some("YES"));
    let cert: Option<String> = c.query_first("SELECT @@ssl_cert").unwrap();
    assert_eq!(cert.unwrap(), srv.dir.path().join("server-cert.pem").display().to_string());
    // Prepared statements too.
    let v: Option<i64> = c.exec_first("SELECT ? + 1", (41,)).unwrap();
    assert_eq!(v, Some(42));
    drop(c);

    let mut clear = srv.conn();
    assert_eq!(status(&mut clear, "Ssl_cipher"), "");
    let one: Option<i64> = clear.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn configured_certificate_and_restart_reuse() {
    // A certificate made by one server's first start, given to another.
    let first = TestServer::start();
    let cert = first.dir.path().join("server-cert.pem");
    let key = first.dir.path().join("server-key.pem");
    let srv = TestServer::start_with(|o| {
        o.ssl_cert = Some(cert.clone());
        o.ssl_key = Some(key.clone());
    });
    // Verified by the first server's CA: the configured certificate is used.
    let opts = srv.opts().ssl_opts(Some(mysql::SslOpts::default().with_root_cert_path(Some(ca(&first)))));
    let mut c = mysql::Conn::new(opts).expect("verified by the configured certificate's CA");
    let k: Option<String> = c.query_first("SELECT @@ssl_key").unwrap();
    assert_eq!(k.unwrap(), key.display().to_string());
    // Its own CA does not verify it.
    let own = srv.opts().ssl_opts(Some(mysql::SslOpts::default().with_root_cert_path(Some(ca(&srv)))));
    assert!(mysql::Conn::new(own).is_err());
}

#[test]
fn generated_certificate_survives_restart() {
    let dir = tempfile::Builder::new().prefix("fdbtls").tempdir_in("/tmp").unwrap();
    let start = || {
        let mut opts = fractaldb_server::ServerOptions::new(dir.path());
        opts.port = 0;
        opts.log_stderr = false;
        opts.db.commit_sync = false;
        fractaldb_server::Server::start(opts).expect("start")
    };
    let s = start();
    let cert = std::fs::read(dir.path().join("server-cert.pem")).unwrap();
    let key = dir.path().join("server-key.pem");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&key).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    s.shutdown().unwrap();
    let s = start();
    assert_eq!(std::fs::read(dir.path().join("server-cert.pem")).unwrap(), cert, "regenerated");
    s.shutdown().unwrap();
}

#[test]
fn missing_certificate_file_is_a_start_error() {
    let dir = tempfile::Builder::new().prefix("fdbtls").tempdir_in("/tmp").unwrap();
    let mut opts = fractaldb_server::ServerOptions::new(dir.path());
    opts.port = 0;
    opts.log_stderr = false;
    opts.ssl_cert = Some(dir.path().join("nope.pem"));
    opts.ssl_key = Some(dir.path().join("nope-key.pem"));
    let e = fractaldb_server::Server::start(opts).err().expect("an error");
    assert!(e.contains("nope.pem"), "{e}");
}

#[test]
fn require_secure_transport() {
    let srv = TestServer::start_with(|o| o.require_secure_transport = true);
    let Err(e) = mysql::Conn::new(srv.opts()) else { panic!("clear TCP is refused") };
    match e {
        mysql::Error::MySqlError(e) => {
            assert_eq!(e.code, 3159, "{e}");
            assert!(e.message.contains("insecure transport"), "{e}");
        }
        other => panic!("{other}"),
    }
    let mut c = mysql::Conn::new(tls_opts(&srv)).expect("TLS is allowed");
    let v: Option<String> = c.query_first("SELECT @@require_secure_transport").unwrap();
    assert_eq!(v.as_deref(), Some("ON"));
    // The Unix socket counts as secure.
    let sock = mysql::OptsBuilder::new()
        .socket(Some(srv.socket.to_str().unwrap()))
        .prefer_socket(false)
        .user(Some("root"));
    let mut s = mysql::Conn::new(sock).expect("the socket is allowed");
    let one: Option<i64> = s.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn ssl_off_does_not_offer_it() {
    let srv = TestServer::start_with(|o| o.ssl = false);
    assert!(mysql::Conn::new(tls_opts(&srv)).is_err(), "TLS asked of a server without it");
    let mut c = srv.conn();
    let have: Option<String> = c.query_first("SELECT @@have_ssl").unwrap();
    assert_eq!(have.as_deref(), Some("DISABLED"));
    assert!(!srv.dir.path().join("server-key.pem").exists());
}

#[test]
fn mariadb_cli_over_tls() {
    let Some(mariadb) =
        support::need_program("mariadb_cli_over_tls", "mariadb", "apt-get install mariadb-client")
    else {
        return;
    };
    let srv = TestServer::start();
    let run = |extra: &[&str], sql: &str| {
        let o = Command::new(&mariadb)
            .args(["--no-defaults", "-h127.0.0.1", "-uroot", "--batch", "--skip-column-names"])
            .arg(format!("-P{}", srv.port))
            .args(extra)
            .args(["-e", sql])
            .output()
            .expect("running mariadb");
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "mariadb {extra:?}: {}{out}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let ca = ca(&srv).display().to_string();
    // Verified against the generated CA (the certificate names 127.0.0.1).
    let out = run(
        &["--ssl", &format!("--ssl-ca={ca}"), "--ssl-verify-server-cert"],
        "SHOW STATUS LIKE 'Ssl_cipher'",
    );
    let cipher = out.trim().strip_prefix("Ssl_cipher\t").expect("a row").to_string();
    assert!(!cipher.is_empty(), "{out}");
    // \s reads the cipher from the client's own TLS session.
    let out = run(&["--ssl"], "status");
    assert!(out.contains(&format!("Cipher in use is {cipher}")), "{out}");
    let out = run(&["--skip-ssl"], "status");
    assert!(out.contains("Not in use"), "{out}");
}

#[test]
fn pymysql_over_tls() {
    let Some(py) = support::need_pymysql("pymysql_over_tls") else { return };
    let srv = TestServer::start();
    let script = r#"
import sys, pymysql
port, ca = int(sys.argv[1]), sys.argv[2]
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", ssl={"ca": ca})
cur = c.cursor()
cur.execute("SHOW STATUS LIKE 'Ssl_version'")
print(cur.fetchone()[1])
cur.execute("SELECT REPEAT('z', 70000)")
assert len(cur.fetchone()[0]) == 70000
print(c._sock.version())
"#;
    let o = Command::new(py)
        .args(["-c", script, &srv.port.to_string(), &ca(&srv).display().to_string()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}{out}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    // The server's Ssl_version is what the client negotiated.
    assert_eq!(lines[0], lines[1], "{out}");
    assert!(lines[0].starts_with("TLSv1."), "{out}");
}
