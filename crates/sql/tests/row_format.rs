//! Compression per table: ROW_FORMAT in CREATE / ALTER TABLE and the
//! `tokudb_row_format` variable. MySQL's row formats are compared with
//! MariaDB 10.11 statement by statement; the codecs are checked through the
//! engine (each dictionary's codec, and the bytes a checkpoint writes).

mod support;
use support::embedded::{err, ok, one, rows, run, test_opts as opts};

use fractaldb::Codec;
use fractaldb_sql::{Database, Outcome, Session};
use support::script::compare;

/// The codec of every dictionary of `d`.`t` (main, status, each index).
fn codecs(db: &Database, t: &str) -> Vec<Codec> {
    db.table_dictionaries("d", t).unwrap().iter().map(|n| db.dictionary_codec(n).unwrap()).collect()
}

fn status(s: &mut Session, t: &str) -> Vec<String> {
    rows(s, &format!("SHOW TABLE STATUS LIKE '{t}'")).remove(0)
}

#[test]
fn mysql_row_formats_like_mariadb() {
    compare(
        "mysql_row_formats_like_mariadb",
        &[
            "CREATE TABLE t1 (a INT PRIMARY KEY, b VARCHAR(20), KEY (b)) ROW_FORMAT=COMPRESSED",
            "CREATE TABLE t2 (a INT) row_format=dynamic",
            "CREATE TABLE t3 (a INT) ROW_FORMAT COMPACT COMMENT='c'",
            "CREATE TABLE t4 (a INT) ROW_FORMAT=REDUNDANT",
            "CREATE TABLE t5 (a INT) ROW_FORMAT=DEFAULT",
            "CREATE TABLE t6 (a INT) ROW_FORMAT=bogus",
            "CREATE TABLE t6 (a INT) ROW_FORMAT='compressed'",
            "CREATE TABLE t6 (a INT) ROW_FORMAT=tokudb bogus COMMENT='x'",
            "INSERT INTO t1 VALUES (1,'a'),(2,'b'),(3,'c')",
            "SELECT * FROM t1 ORDER BY a",
            "SHOW CREATE TABLE t1",
            "SHOW CREATE TABLE t2",
            "SHOW CREATE TABLE t3",
            "SHOW CREATE TABLE t4",
            "SHOW CREATE TABLE t5",
            "SELECT TABLE_NAME, CREATE_OPTIONS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME",
            "ALTER TABLE t1 ROW_FORMAT=DYNAMIC",
            "SHOW CREATE TABLE t1",
            "SELECT b FROM t1 WHERE b = 'b'",
            "ALTER TABLE t1 ADD COLUMN c INT, ROW_FORMAT=DEFAULT",
            "SHOW CREATE TABLE t1",
            "SELECT * FROM t1 ORDER BY a",
            "ALTER TABLE t3 ROW_FORMAT=bogus",
            "ALTER TABLE t3 ROW_FORMAT='dynamic', ADD COLUMN d INT",
            "ALTER TABLE t2 COMMENT='z'",
            "SHOW CREATE TABLE t2",
            "CREATE TABLE t7 LIKE t3",
            "SHOW CREATE TABLE t7",
        ],
        false,
    );
}

/// Each name stores its rows with its codec, in every dictionary of the
/// table, and the codec is the one the engine reads back after a restart.
#[test]
fn every_row_format_stores_rows_with_its_codec() {
    let cases = [
        ("TOKUDB_UNCOMPRESSED", Codec::None),
        ("TOKUDB_ZLIB", Codec::Zlib),
        ("TOKUDB_SNAPPY", Codec::Snappy),
        ("TOKUDB_QUICKLZ", Codec::Lz4),
        ("TOKUDB_LZMA", Codec::Lzma),
        ("TOKUDB_FAST", Codec::Lz4),
        ("TOKUDB_SMALL", Codec::Lzma),
        ("TOKUDB_DEFAULT", Codec::Zstd),
        ("TOKUDB_ZSTD", Codec::Zstd),
        ("TOKUDB_LZ4", Codec::Lz4),
        ("COMPRESSED", Codec::Zstd),
        ("DYNAMIC", Codec::Zstd),
        ("FIXED", Codec::Zstd),
        ("PAGE", Codec::Zstd),
    ];
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    for (i, (name, codec)) in cases.iter().enumerate() {
        let t = format!("t{i}");
        ok(
            &mut s,
            &format!("CREATE TABLE {t} (a INT PRIMARY KEY, b VARCHAR(40), KEY (b)) ROW_FORMAT={name}"),
        );
        ok(&mut s, &format!("INSERT INTO {t} VALUES (1, 'one {name}'), (2, 'two {name}'), (3, NULL)"));
        assert_eq!(codecs(&db, &t), vec![*codec; 3], "{name}");
        let st = status(&mut s, &t);
        let shown = format!("tokudb_{}", if *codec == Codec::None { "uncompressed" } else { codec.name() });
        assert_eq!(
            (st[3].as_str(), st[16].as_str()),
            (shown.as_str(), format!("row_format={name}").as_str())
        );
        assert_eq!(
            one(
                &mut s,
                &format!("SELECT ROW_FORMAT FROM information_schema.TABLES WHERE TABLE_NAME = '{t}'")
            ),
            shown
        );
        assert!(
            rows(&mut s, &format!("SHOW CREATE TABLE {t}"))[0][1].ends_with(&format!(" ROW_FORMAT={name}"))
        );
    }
    drop(s);
    db.close().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    for (i, (name, codec)) in cases.iter().enumerate() {
        let t = format!("t{i}");
        assert_eq!(codecs(&db, &t), vec![*codec; 3], "{name} after a restart");
        assert_eq!(
            rows(&mut s, &format!("SELECT a, b FROM {t} WHERE b LIKE 't%' ORDER BY a")),
            vec![vec!["2".to_string(), format!("two {name}")]]
        );
        assert_eq!(one(&mut s, &format!("SELECT COUNT(*) FROM {t}")), "3");
    }
}

/// `tokudb_row_format` picks the codec of a table that names none (or a
/// MySQL format that leaves it open); a rebuild keeps the table's codec.
#[test]
fn tokudb_row_format_picks_the_codec_of_new_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    assert_eq!(one(&mut s, "SELECT @@tokudb_row_format"), "tokudb_zstd");
    ok(&mut s, "CREATE TABLE z (a INT)");
    assert_eq!(codecs(&db, "z"), vec![Codec::Zstd; 2]);
    assert!(!rows(&mut s, "SHOW CREATE TABLE z")[0][1].contains("ROW_FORMAT"));
    ok(&mut s, "SET tokudb_row_format = TOKUDB_LZMA");
    assert_eq!(one(&mut s, "SELECT @@session.tokudb_row_format"), "tokudb_lzma");
    assert_eq!(one(&mut s, "SELECT @@global.tokudb_row_format"), "tokudb_zstd");
    ok(&mut s, "CREATE TABLE l (a INT PRIMARY KEY, b INT, KEY (b))");
    ok(&mut s, "CREATE TABLE dy (a INT) ROW_FORMAT=DYNAMIC");
    ok(&mut s, "CREATE TABLE zl (a INT) ROW_FORMAT=TOKUDB_ZLIB");
    assert_eq!(codecs(&db, "l"), vec![Codec::Lzma; 3]);
    assert_eq!(codecs(&db, "dy"), vec![Codec::Lzma; 2]);
    assert_eq!(codecs(&db, "zl"), vec![Codec::Zlib; 2]);
    // A rebuild (a column added), TRUNCATE and a new index keep the codec
    // whatever the session's default is now.
    ok(&mut s, "SET tokudb_row_format = 1");
    assert_eq!(one(&mut s, "SELECT @@tokudb_row_format"), "tokudb_zlib");
    ok(&mut s, "INSERT INTO l VALUES (1, 1), (2, 2)");
    ok(&mut s, "ALTER TABLE l ADD COLUMN c INT FIRST");
    ok(&mut s, "CREATE INDEX c ON l (c)");
    assert_eq!(codecs(&db, "l"), vec![Codec::Lzma; 4]);
    ok(&mut s, "TRUNCATE TABLE l");
    assert_eq!(codecs(&db, "l"), vec![Codec::Lzma; 4]);
    // ROW_FORMAT=DEFAULT takes the session's default and is not shown.
    ok(&mut s, "ALTER TABLE dy ROW_FORMAT=DEFAULT");
    assert_eq!(codecs(&db, "dy"), vec![Codec::Zlib; 2]);
    assert!(!rows(&mut s, "SHOW CREATE TABLE dy")[0][1].contains("ROW_FORMAT"));
    // MariaDB's checks of an ENUM variable.
    assert_eq!(err(&mut s, "SET tokudb_row_format = 'zstd'"), 1231);
    assert_eq!(err(&mut s, "SET tokudb_row_format = 10"), 1231);
    assert_eq!(err(&mut s, "SET tokudb_row_format = NULL"), 1231);
    assert_eq!(err(&mut s, "SET tokudb_row_format = 1.5"), 1232);
    assert_eq!(one(&mut s, "SELECT @@tokudb_row_format"), "tokudb_zlib");
    // SET GLOBAL is the default of later sessions; DEFAULT goes back.
    ok(&mut s, "SET GLOBAL tokudb_row_format = 'tokudb_snappy'");
    let mut s2 = db.session();
    assert_eq!(one(&mut s2, "SELECT @@tokudb_row_format"), "tokudb_snappy");
    ok(&mut s2, "CREATE TABLE d.sn (a INT)");
    assert_eq!(codecs(&db, "sn"), vec![Codec::Snappy; 2]);
    ok(&mut s2, "SET GLOBAL tokudb_row_format = DEFAULT");
    assert_eq!(one(&mut s2, "SELECT @@global.tokudb_row_format"), "tokudb_zstd");
    assert_eq!(
        rows(&mut s2, "SHOW VARIABLES LIKE 'tokudb_row_format'"),
        vec![vec!["tokudb_row_format".to_string(), "tokudb_snappy".to_string()]]
    );
    // The configuration's value is checked as SET's is.
    assert_eq!(db.set_global("tokudb_row_format", "bogus").unwrap_err().code, 1231);
    db.set_global("tokudb_row_format", "TOKUDB_UNCOMPRESSED").unwrap();
    assert_eq!(db.global_var("tokudb_row_format").unwrap().render(), "tokudb_uncompressed");
}

/// `tokudb_block_size`, `tokudb_read_block_size` and `tokudb_fanout` as
/// the session has them at CREATE TABLE are the table's: every dictionary
/// it gets later (a rebuild, TRUNCATE, a new index, CREATE TABLE LIKE) has
/// them too, whatever the session says then. Out-of-range values are
/// clamped with warning 1292, as MariaDB clamps any integer variable.
#[test]
fn block_size_variables_are_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    let sizes = |db: &Database, t: &str| -> Vec<(usize, usize, usize)> {
        db.table_dictionaries("d", t)
            .unwrap()
            .iter()
            .map(|n| {
                let o = db.dictionary_options(n).unwrap();
                (o.node_size_bytes, o.basement_size_bytes, o.fanout)
            })
            .collect()
    };
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    let d = fractaldb::DictOptions::default();
    let engine = (d.node_size_bytes, d.basement_size_bytes, d.fanout);
    assert_eq!(
        rows(&mut s, "SELECT @@tokudb_block_size, @@tokudb_read_block_size, @@tokudb_fanout"),
        [[engine.0.to_string(), engine.1.to_string(), engine.2.to_string()]]
    );
    ok(&mut s, "CREATE TABLE plain (a INT PRIMARY KEY, b INT, KEY (b))");
    assert_eq!(sizes(&db, "plain"), vec![engine; 3]);

    ok(&mut s, "SET tokudb_block_size = 4194304, tokudb_read_block_size = 65536, tokudb_fanout = 8");
    assert_eq!(one(&mut s, "SELECT @@global.tokudb_read_block_size"), engine.1.to_string());
    ok(&mut s, "CREATE TABLE big (a INT PRIMARY KEY, b INT, KEY (b))");
    let big = (4 << 20, 64 << 10, 8);
    assert_eq!(sizes(&db, "big"), vec![big; 3]);
    ok(&mut s, "INSERT INTO big VALUES (1, 1), (2, 2)");
    ok(&mut s, "SET tokudb_block_size = DEFAULT, tokudb_read_block_size = DEFAULT, tokudb_fanout = DEFAULT");
    ok(&mut s, "ALTER TABLE big ADD COLUMN c INT FIRST");
    ok(&mut s, "CREATE INDEX c ON big (c)");
    assert_eq!(sizes(&db, "big"), vec![big; 4]);
    ok(&mut s, "TRUNCATE TABLE big");
    assert_eq!(sizes(&db, "big"), vec![big; 4]);
    ok(&mut s, "CREATE TABLE big2 LIKE big");
    assert_eq!(sizes(&db, "big2"), vec![big; 4]);
    // The table's sizes survive a restart with their catalog record.
    drop(s);
    drop(db);
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    ok(&mut s, "ALTER TABLE big DROP COLUMN c");
    assert_eq!(sizes(&db, "big"), vec![big; 3]);
    assert_eq!(sizes(&db, "plain"), vec![engine; 3]);

    // Clamped to the engine's bounds with 1292; a basement larger than
    // the node is the node.
    ok(&mut s, "SET tokudb_fanout = 5000");
    assert_eq!(rows(&mut s, "SHOW WARNINGS")[0][1], "1292");
    assert_eq!(one(&mut s, "SELECT @@tokudb_fanout"), "1024");
    ok(&mut s, "SET tokudb_block_size = 1");
    assert_eq!(one(&mut s, "SELECT @@tokudb_block_size"), "4096");
    ok(&mut s, "SET tokudb_read_block_size = 1048576");
    ok(&mut s, "CREATE TABLE tiny (a INT)");
    assert_eq!(sizes(&db, "tiny"), vec![(4096, 4096, 1024); 2]);
    assert_eq!(err(&mut s, "SET tokudb_fanout = 'x'"), 1232);
    ok(&mut s, "INSERT INTO tiny VALUES (1), (2), (3)");
    assert_eq!(one(&mut s, "SELECT SUM(a) FROM tiny"), "6");
}

/// ALTER TABLE ... ROW_FORMAT= writes every row again with the new codec:
/// new dictionaries, the same rows, index entries and count, and fewer
/// bytes on disk for compressible rows.
#[test]
fn alter_row_format_recompresses_and_keeps_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(
        &mut s,
        "CREATE TABLE log (id INT AUTO_INCREMENT PRIMARY KEY, host VARCHAR(40), msg TEXT, KEY (host)) \
         ROW_FORMAT=TOKUDB_UNCOMPRESSED",
    );
    let mut values = Vec::new();
    for i in 0..2000 {
        values.push(format!(
            "('web{:02}.example.com', 'GET /api/v1/items/{i} HTTP/1.1 200 served from cache in {} ms')",
            i % 16,
            i % 7
        ));
    }
    ok(&mut s, &format!("INSERT INTO log (host, msg) VALUES {}", values.join(",")));
    let sum = "SELECT COUNT(*), SUM(id), SUM(LENGTH(msg)), COUNT(DISTINCT host) FROM log";
    let before = rows(&mut s, sum);
    let old = db.table_dictionaries("d", "log").unwrap();
    db.checkpoint().unwrap();
    let data = |s: &mut Session| status(s, "log")[6].parse::<u64>().unwrap();
    let raw = data(&mut s);
    match run(&mut s, "ALTER TABLE log ROW_FORMAT=TOKUDB_ZSTD") {
        Outcome::Done { affected, info, .. } => {
            assert_eq!((affected, info.as_deref()), (0, Some("Records: 0  Duplicates: 0  Warnings: 0")))
        }
        other => panic!("{other:?}"),
    }
    let new = db.table_dictionaries("d", "log").unwrap();
    assert!(new.iter().all(|n| !old.contains(n)), "{old:?} -> {new:?}");
    assert!(old.iter().all(|n| !db.dictionaries().contains(n)), "the old dictionaries are dropped");
    assert_eq!(codecs(&db, "log"), vec![Codec::Zstd; 3]);
    assert_eq!(rows(&mut s, sum), before);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM log WHERE host = 'web03.example.com'"), "125");
    ok(&mut s, "INSERT INTO log (host, msg) VALUES ('new', 'after')");
    assert_eq!(one(&mut s, "SELECT MAX(id) FROM log"), "2001");
    db.checkpoint().unwrap();
    let zstd = data(&mut s);
    assert!(zstd * 4 < raw, "zstd {zstd} bytes against {raw} uncompressed");
    // The same codec again changes nothing: no rebuild.
    ok(&mut s, "ALTER TABLE log ROW_FORMAT=TOKUDB_DEFAULT");
    assert_eq!(db.table_dictionaries("d", "log").unwrap(), new);
    assert!(rows(&mut s, "SHOW CREATE TABLE log")[0][1].ends_with(" ROW_FORMAT=TOKUDB_DEFAULT"));
}
