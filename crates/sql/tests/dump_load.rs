//! A mysqldump file made by MariaDB's own `mariadb-dump`, from a table
//! holding every column type, loads through the SQL layer and reads back
//! byte for byte as MariaDB returns it.

mod support;

use fractaldb_sql::{Database, DbOptions};
use support::mariadb::{self, run};

const SETUP: &str = r#"
CREATE TABLE alltypes (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT UNSIGNED,
  de DECIMAL(30,10), fl FLOAT, db DOUBLE, bt BIT(10),
  ch CHAR(5), vc VARCHAR(100) COLLATE utf8mb4_bin, bn BINARY(4), vb VARBINARY(20),
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
  tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  en ENUM('a','b','c'), st SET('x','y','z'),
  d DATE, t TIME(3), dt DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL, y YEAR,
  js JSON, l1 VARCHAR(10) CHARACTER SET latin1,
  KEY k_vc (vc(10)), UNIQUE KEY u_bi (bi)
) DEFAULT CHARSET=utf8mb4;
INSERT INTO alltypes VALUES
 (NULL, -128, 65535, -8388608, 18446744073709551615, 12345678901234567890.0123456789, 1.5, 2.25e100, b'1010101010',
  'abc', 'Hello ☃ 😀', 0x00FF1020, 0x00, 'tiny', 'text', 'medium', 'long',
  0x00010203, 0xFFFEFD00, 'mb', 'lb', 'b', 'x,z', '2024-02-29', '-838:59:59.000', '2024-01-31 10:00:00.123456',
  '2024-01-31 10:00:00', 2024, '{"a": [1, 2]}', 'café');
INSERT INTO alltypes VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO alltypes VALUES
 (NULL, 127, 0, 0, 0, -0.5, -0, -1e-300, b'0', '', '', X'', '', '', 'it''s "quoted" \\ back', '', '',
  '', 0x27225C0A0D1A, '', '', 'a', '', '0000-00-00', '00:00:00', '1000-01-01 00:00:00', NULL, 1901, '[]', '');
INSERT INTO alltypes (lb, bl) VALUES (REPEAT(0xFF00, 40000), UNHEX('80818283'));
"#;

#[test]
fn a_mariadb_dump_of_every_type_loads_and_reads_back_identical() {
    if !mariadb::available("a_mariadb_dump_of_every_type_loads_and_reads_back_identical") {
        return;
    }
    let server = mariadb::MariaDb::shared().expect("a shared MariaDB");
    let (mut c, db) = server.fresh_db("dumpload");
    for stmt in SETUP.split(";\n").filter(|s| !s.trim().is_empty()) {
        run(&mut c, stmt).unwrap_or_else(|e| panic!("{stmt}: {e:?}"));
    }
    // The dump, raw BLOB bytes (no --hex-blob) and MariaDB's own comments included.
    let out = std::process::Command::new("mariadb-dump")
        .args(["-uroot", "-h127.0.0.1", &format!("-P{}", server.port()), "--databases", &db])
        .output()
        .expect("mariadb-dump runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dump = out.stdout;
    assert!(std::str::from_utf8(&dump).is_err(), "the dump holds raw, non-UTF-8 BLOB bytes");

    let dir = tempfile::tempdir().unwrap();
    let fdb = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut s = fdb.session();
    s.execute_script(&dump).unwrap_or_else(|e| panic!("loading the dump: {e}"));

    let query = format!("SELECT * FROM `{db}`.alltypes ORDER BY id");
    let expected = run(&mut c, &query).unwrap();
    let got = support::run_fractal(&mut s, &query).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(got.columns, expected.columns);
    assert_eq!(got.rows.len(), expected.rows.len());
    for (g, e) in got.rows.iter().zip(&expected.rows) {
        for (i, (gv, ev)) in g.iter().zip(e).enumerate() {
            assert_eq!(
                gv.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
                ev.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
                "column {} of row {:?}",
                expected.columns[i],
                e[0]
            );
            assert_eq!(gv, ev, "bytes of column {}", expected.columns[i]);
        }
    }
    // The AUTO_INCREMENT counter carries on past the loaded rows.
    s.execute(format!("INSERT INTO `{db}`.alltypes (ti) VALUES (1)").as_bytes()).unwrap();
    let r = support::run_fractal(&mut s, &format!("SELECT MAX(id), COUNT(*) FROM `{db}`.alltypes")).unwrap();
    assert_eq!(r.rows[0], [Some(b"5".to_vec()), Some(b"5".to_vec())]);
}
