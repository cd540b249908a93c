//! The lexical layer: statement splitting, the rewrite in front of
//! sqlparser, the statements parsed by hand, and errors.

use fractaldb_sql::lex::{
    parse, split_script, Flags, LockTarget, MaintenanceOp, Parsed, ShowKind, ShowStmt, Special, Splitter,
    TableName,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement, Value};

fn split(s: &str) -> Vec<String> {
    split_script(s.as_bytes()).into_iter().map(|v| String::from_utf8(v).unwrap()).collect()
}

fn std(sql: &[u8]) -> (Statement, Flags) {
    match parse(sql) {
        Ok(Parsed::Std(s, f)) => (*s, f),
        Ok(other) => panic!("{}: not std: {other:?}", String::from_utf8_lossy(sql)),
        Err(e) => panic!("{}: {e}", String::from_utf8_lossy(sql)),
    }
}

fn special(sql: &str) -> Special {
    match parse(sql.as_bytes()) {
        Ok(Parsed::Special(s)) => s,
        Ok(other) => panic!("{sql}: not special: {other:?}"),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn special_bytes(sql: &[u8]) -> Special {
    match parse(sql) {
        Ok(Parsed::Special(s)) => s,
        Ok(other) => panic!("not special: {other:?}"),
        Err(e) => panic!("{e}"),
    }
}

fn show(sql: &str) -> ShowStmt {
    match special(sql) {
        Special::Show(s) => s,
        other => panic!("{sql}: not SHOW: {other:?}"),
    }
}

fn syntax_err(sql: &[u8]) -> String {
    match parse(sql) {
        Err(e) => {
            assert_eq!(e.code, 1064, "{e}");
            e.message
        }
        Ok(p) => panic!("{} parsed: {p:?}", String::from_utf8_lossy(sql)),
    }
}

fn select_exprs(st: &Statement) -> Vec<Expr> {
    let Statement::Query(q) = st else { panic!("not a query: {st}") };
    let SetExpr::Select(sel) = &*q.body else { panic!("not a select: {st}") };
    sel.projection
        .iter()
        .map(|i| match i {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// The literal values of `SELECT v1, v2, ...`.
fn values(sql: &[u8]) -> Vec<Value> {
    let (st, _) = std(sql);
    select_exprs(&st)
        .into_iter()
        .map(|e| match e {
            Expr::Value(v) => v.value,
            other => panic!("not a literal: {other:?}"),
        })
        .collect()
}

/// The bytes a string or hex literal stands for.
fn lit_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::SingleQuotedString(s) => s.as_bytes().to_vec(),
        Value::HexStringLiteral(h) => {
            (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()
        }
        other => panic!("not a string literal: {other:?}"),
    }
}

fn one_lit(sql: &[u8]) -> Vec<u8> {
    let v = values(sql);
    assert_eq!(v.len(), 1, "{v:?}");
    lit_bytes(&v[0])
}

// ---------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------

#[test]
fn split_basic() {
    assert_eq!(split("SELECT 1; SELECT 2;\n\nSELECT 3"), ["SELECT 1", "SELECT 2", "SELECT 3"]);
    assert_eq!(split(";;; ;\n"), Vec::<String>::new());
    assert_eq!(split("SELECT 'a;b', \"c;d\", `e;f`; x"), ["SELECT 'a;b', \"c;d\", `e;f`", "x"]);
    assert_eq!(split(r"SELECT 'a\';b'; x"), [r"SELECT 'a\';b'", "x"]);
    assert_eq!(split("SELECT 'a'';b'; x"), ["SELECT 'a'';b'", "x"]);
    assert_eq!(split("SELECT `a``;b`; x"), ["SELECT `a``;b`", "x"]);
    // Backslash does not escape in backticks.
    assert_eq!(split(r"SELECT `a\`; x"), [r"SELECT `a\`", "x"]);
}

#[test]
fn split_comments() {
    assert_eq!(split("SELECT 1 -- c;\n, 2; x"), ["SELECT 1 -- c;\n, 2", "x"]);
    assert_eq!(split("SELECT 1 # c;\n, 2; x"), ["SELECT 1 # c;\n, 2", "x"]);
    assert_eq!(split("SELECT 1 /* c; */ , 2; x"), ["SELECT 1 /* c; */ , 2", "x"]);
    // `--` without a space is two minus signs.
    assert_eq!(split("SELECT 1--1; x"), ["SELECT 1--1", "x"]);
    // Comment-only statements are dropped, leading comments cut off.
    assert_eq!(split("-- hello\n/* x */;\n-- a\nSELECT 1;\n-- end\n"), ["SELECT 1"]);
    // A version comment is content and no delimiter ends inside it.
    assert_eq!(
        split("/*!50003 CREATE TRIGGER t BEGIN x; y; END */; z"),
        ["/*!50003 CREATE TRIGGER t BEGIN x; y; END */", "z"]
    );
}

#[test]
fn split_delimiter_command() {
    let script = "DELIMITER ;;\nCREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; SET NEW.b = 2; END ;;\nDELIMITER ;\nSELECT 1;\ndelimiter $$\nSELECT 2$$ SELECT 3 $$\nDELIMITER ;\n";
    assert_eq!(
        split(script),
        [
            "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; SET NEW.b = 2; END",
            "SELECT 1",
            "SELECT 2",
            "SELECT 3",
        ]
    );
    // DELIMITER inside a statement is not the command.
    assert_eq!(split("SELECT delimiter ;"), ["SELECT delimiter"]);
}

#[test]
fn split_backslash_g() {
    // `\G` stays on its statement (the shell prints that one vertically);
    // parse() ignores it.
    assert_eq!(split("SELECT 1\\G SELECT 2\\g SELECT '\\G'"), ["SELECT 1\\G", "SELECT 2", "SELECT '\\G'"]);
    assert!(matches!(parse(b"SELECT 1\\G").unwrap(), Parsed::Std(..)));
}

#[test]
fn split_non_utf8() {
    let mut script = b"INSERT INTO t VALUES ('".to_vec();
    script.extend_from_slice(&[0xff, 0xfe, b';', 0x00, b'\\', b'\'', 0x80]);
    script.extend_from_slice(b"');\nSELECT 1;");
    let v = split_script(&script);
    assert_eq!(v.len(), 2);
    assert_eq!(v[0], script[..script.len() - 11].to_vec());
    assert_eq!(v[1], b"SELECT 1");
}

#[test]
fn splitter_incremental_any_cut() {
    let script = "/*!40101 SET NAMES utf8 */;\n-- c;\nSELECT 'a;\\'b' /* ; */, \"x\" # ;\n; DELIMITER ;;\nSELECT 1;2;;\nDELIMITER ;\nSELECT `q;`\\G SELECT 3 -- end";
    let whole = split(script);
    assert_eq!(whole.len(), 5, "{whole:?}");
    let bytes = script.as_bytes();
    for cut in 0..=bytes.len() {
        for cut2 in cut..=bytes.len().min(cut + 3) {
            let mut s = Splitter::new();
            let mut got = s.push(&bytes[..cut]);
            got.extend(s.push(&bytes[cut..cut2]));
            got.extend(s.push(&bytes[cut2..]));
            got.extend(s.finish());
            let got: Vec<String> = got.into_iter().map(|v| String::from_utf8(v).unwrap()).collect();
            assert_eq!(got, whole, "cut at {cut}/{cut2}");
        }
    }
    // Byte by byte.
    let mut s = Splitter::new();
    let mut got = Vec::new();
    for b in bytes {
        got.extend(s.push(std::slice::from_ref(b)));
    }
    got.extend(s.finish());
    assert_eq!(got.len(), 5);
}

#[test]
fn splitter_pending() {
    let mut s = Splitter::new();
    assert!(!s.pending());
    assert!(s.push(b"SELECT 1\n").is_empty());
    assert!(s.pending());
    assert_eq!(s.open_quote(), Some(b'-'));
    assert_eq!(s.push(b"FROM t;\n"), vec![b"SELECT 1\nFROM t".to_vec()]);
    assert!(!s.pending());
    s.push(b"-- just a comment\n");
    assert!(!s.pending());
    s.push(b"SELECT 'abc\n");
    assert!(s.pending());
    assert_eq!(s.open_quote(), Some(b'\''));
    assert_eq!(s.push(b"def';"), vec![b"SELECT 'abc\ndef'".to_vec()]);
    s.push(b"/* open\n");
    assert!(s.pending());
    assert_eq!(s.open_quote(), Some(b'*'));
    s.push(b"*/\n");
    assert!(!s.pending());
    s.push(b"SELECT 2");
    assert_eq!(s.finish(), Some(b"SELECT 2".to_vec()));
    assert!(!s.pending());
    assert_eq!(s.finish(), None);
    s.push(b"DELIMITER //\n");
    assert_eq!(s.delimiter(), b"//");
    assert_eq!(s.push(b"SELECT 1; SELECT 2//"), vec![b"SELECT 1; SELECT 2".to_vec()]);
}

// ---------------------------------------------------------------------------
// Literals
// ---------------------------------------------------------------------------

#[test]
fn escapes_give_mysql_bytes() {
    assert_eq!(one_lit(br"SELECT 'a\0b'"), b"a\0b");
    assert_eq!(one_lit(br"SELECT 'a\'b'"), b"a'b");
    assert_eq!(one_lit(br#"SELECT 'a\"b'"#), b"a\"b");
    assert_eq!(one_lit(br"SELECT 'a\bb'"), b"a\x08b");
    assert_eq!(one_lit(br"SELECT 'a\nb'"), b"a\nb");
    assert_eq!(one_lit(br"SELECT 'a\rb'"), b"a\rb");
    assert_eq!(one_lit(br"SELECT 'a\tb'"), b"a\tb");
    assert_eq!(one_lit(br"SELECT 'a\Zb'"), b"a\x1ab");
    assert_eq!(one_lit(br"SELECT 'a\\b'"), b"a\\b");
    assert_eq!(one_lit(br"SELECT 'a\%b'"), b"a\\%b");
    assert_eq!(one_lit(br"SELECT 'a\_b'"), b"a\\_b");
    // Unknown escapes are the character itself (sqlparser would give BEL
    // and FF for \a and \f).
    assert_eq!(one_lit(br"SELECT 'a\ab\fc\qd'"), b"aabfcqd");
    assert_eq!(one_lit(br"SELECT 'a''b'"), b"a'b");
    assert_eq!(one_lit(br#"SELECT "a""b""#), b"a\"b");
    assert_eq!(one_lit(br#"SELECT "a'b""#), b"a'b");
    assert_eq!(one_lit(br#"SELECT 'a"b'"#), b"a\"b");
    assert_eq!(one_lit(br"SELECT '\\\\%'"), b"\\\\%");
    assert_eq!(one_lit(br"SELECT '\\'"), b"\\");
    assert_eq!(one_lit("SELECT 'é\\é'".as_bytes()), "éé".as_bytes());
    assert_eq!(one_lit(b"SELECT 'raw\x01\ttab\nnl\x00nul'"), b"raw\x01\ttab\nnl\x00nul");
    // Adjacent literals are one.
    assert_eq!(one_lit(b"SELECT 'a' \"b\"\n'c'"), b"abc");
    assert_eq!(one_lit(b"SELECT ''"), b"");
}

#[test]
fn every_byte_round_trips() {
    // Each byte value, escaped and raw, inside a string.
    for b in 0u8..=255 {
        let mut sql = b"SELECT '".to_vec();
        sql.push(b'\\');
        sql.push(b);
        sql.push(b'\'');
        let want: Vec<u8> = match b {
            b'0' => vec![0],
            b'b' => vec![8],
            b'n' => vec![b'\n'],
            b'r' => vec![b'\r'],
            b't' => vec![b'\t'],
            b'Z' => vec![26],
            b'%' | b'_' => vec![b'\\', b],
            other => vec![other],
        };
        assert_eq!(one_lit(&sql), want, "escaped byte {b}");
        if b != b'\'' && b != b'\\' {
            let sql = [b"SELECT 'x".as_slice(), &[b], b"y'"].concat();
            assert_eq!(one_lit(&sql), [b"x".as_slice(), &[b], b"y"].concat(), "raw byte {b}");
        }
    }
}

#[test]
fn double_quotes_are_strings() {
    let v = values(br#"SELECT "abc""#);
    assert_eq!(v, vec![Value::SingleQuotedString("abc".into())]);
}

#[test]
fn non_utf8_literal_is_hex() {
    // (The comment sends it down the general path: plain literal rows take
    // the INSERT fast path, which keeps the same bytes.)
    let sql = b"INSERT INTO t VALUES (1, '\xff\x00\\'\\\\x\x80') /* general */";
    let (st, _) = std(sql);
    let Statement::Insert(ins) = st else { panic!() };
    let SetExpr::Values(vals) = &*ins.source.unwrap().body else { panic!() };
    let Expr::Value(v) = &vals.rows[0][1] else { panic!() };
    assert_eq!(v.value, Value::HexStringLiteral("FF00275C7880".into()));
    assert_eq!(one_lit(b"SELECT 'a\xc3'"), b"a\xc3");
    let Special::FastInsert(fi) = special_bytes(b"INSERT INTO t VALUES (1, '\xff\x00\\'\\\\x\x80')") else {
        panic!("not the fast path")
    };
    assert_eq!(
        format!("{:?}", fi.rows[0][1]),
        format!("{:?}", fractaldb_sql::Value::Str(b"\xff\x00'\\x\x80".to_vec()))
    );
}

#[test]
fn hex_bit_and_introducers() {
    assert_eq!(
        values(b"SELECT 0x41, X'4142', x'', 0x0141")[..],
        [
            Value::HexStringLiteral("41".into()),
            Value::HexStringLiteral("4142".into()),
            Value::HexStringLiteral("".into()),
            Value::HexStringLiteral("0141".into()),
        ]
    );
    assert_eq!(one_lit(b"SELECT 0x141"), b"\x01\x41");
    assert_eq!(one_lit(b"SELECT b'0101'"), b"\x05");
    assert_eq!(one_lit(b"SELECT B'1111111111'"), b"\x03\xff");
    assert_eq!(one_lit(b"SELECT 0b1000001"), b"A");
    assert_eq!(one_lit(b"SELECT b''"), b"");
    assert_eq!(values(b"SELECT _binary'abc'"), vec![Value::HexStringLiteral("616263".into())]);
    assert_eq!(values(b"SELECT _binary 'a\\'c'"), vec![Value::HexStringLiteral("612763".into())]);
    assert_eq!(values(b"SELECT _utf8mb4'abc'"), vec![Value::SingleQuotedString("abc".into())]);
    assert_eq!(values(b"SELECT _latin1 'abc'"), vec![Value::SingleQuotedString("abc".into())]);
    assert_eq!(values(b"SELECT N'abc'"), vec![Value::SingleQuotedString("abc".into())]);
    assert_eq!(values(b"SELECT n'a\\nb'"), vec![Value::SingleQuotedString("a\nb".into())]);
    assert_eq!(values(b"SELECT _binary 0x41"), vec![Value::HexStringLiteral("41".into())]);
    // Not a character set: left to sqlparser as written.
    std(b"SELECT _foo 'x' FROM t");
    syntax_err(b"SELECT X'414'");
    syntax_err(b"SELECT X'4G'");
    syntax_err(b"SELECT b'012'");
    // `0x` and `0b` alone are identifiers, as in MySQL.
    let (st, _) = std(b"SELECT 0x FROM t");
    assert!(matches!(select_exprs(&st)[0], Expr::Identifier(_)));
}

#[test]
fn collate_after_literal() {
    let (st, _) = std(b"SELECT _utf8mb4'a' COLLATE utf8mb4_bin");
    assert!(matches!(select_exprs(&st)[0], Expr::Collate { .. }));
}

// ---------------------------------------------------------------------------
// Comments
// ---------------------------------------------------------------------------

#[test]
fn version_comments() {
    assert_eq!(
        values(b"SELECT 1 /*!40101 , 2 */"),
        vec![Value::Number("1".into(), false), Value::Number("2".into(), false)]
    );
    assert_eq!(values(b"SELECT 1 /*!101199 , 2 */").len(), 2);
    assert_eq!(values(b"SELECT 1 /*!101200 , 2 */").len(), 1);
    assert_eq!(values(b"SELECT 1 /*!999999 , 2 */").len(), 1);
    // MySQL 5.7's and later versions (50700 to 99999) are not run, as
    // on MariaDB 10.11; earlier ones and MariaDB's six-digit ones are.
    assert_eq!(values(b"SELECT 1 /*!50699 , 2 */").len(), 2);
    assert_eq!(values(b"SELECT 1 /*!50700 , 2 */").len(), 1);
    assert_eq!(values(b"SELECT 1 /*!80000 , 2 */").len(), 1);
    assert_eq!(values(b"SELECT 1 /*!99999 , 2 */").len(), 1);
    assert_eq!(values(b"SELECT 1 /*!100000 , 2 */").len(), 2);
    assert_eq!(values(b"SELECT 1 /*! , 2 */").len(), 2);
    // MariaDB's own: dropped whatever the version.
    assert_eq!(values(b"SELECT 1 /*M!100100 , 2 */").len(), 1);
    assert_eq!(values(b"SELECT 1 /*M! , 2 */").len(), 1);
    // Ordinary comments and hints.
    assert_eq!(values(b"SELECT /*+ hint */ 1 /* , 2 */ -- , 3\n # , 4\n").len(), 1);
    assert_eq!(values(b"SELECT/**/1").len(), 1);
    assert_eq!(values(b"SELECT 1 /*!40101, 2*/, 3").len(), 3);
    // A comment separates tokens.
    // The item keeps its name as written (comments included).
    assert_eq!(std(b"SELECT 1/**/-/**/1").0.to_string(), "SELECT 1 - 1 AS `1/**/-/**/1`");
    assert_eq!(std(b"SELECT-- c\n1").0.to_string(), "SELECT 1 AS `1`");
}

#[test]
fn empty_statements() {
    for s in [
        "",
        "   \n",
        "-- x",
        "/* y */",
        "# z\n",
        "/*M!999999\\- enable the sandbox mode */",
        ";",
        "/*!999999 SELECT 1 */",
    ] {
        assert_eq!(parse(s.as_bytes()).unwrap(), Parsed::Empty, "{s:?}");
    }
}

// ---------------------------------------------------------------------------
// Rewrites of what MySqlDialect rejects
// ---------------------------------------------------------------------------

#[test]
fn mod_operator() {
    let (a, _) = std(b"SELECT a MOD b, MOD(a, b), 10 mod 3 FROM t");
    assert_eq!(
        a.to_string(),
        "SELECT a % b AS `a MOD b`, MOD(a, b) AS `MOD(a, b)`, 10 % 3 AS `10 mod 3` FROM t"
    );
}

#[test]
fn lock_in_share_mode() {
    let (st, f) = std(b"SELECT * FROM t WHERE id = 1 LOCK IN SHARE MODE");
    assert!(f.lock_in_share_mode);
    assert_eq!(st.to_string(), "SELECT * FROM t WHERE id = 1");
    let (_, f) = std(b"SELECT * FROM t FOR UPDATE");
    assert!(!f.lock_in_share_mode);
}

#[test]
fn start_transaction() {
    assert_eq!(
        special("START TRANSACTION WITH CONSISTENT SNAPSHOT"),
        Special::Begin { consistent_snapshot: true, read_only: false }
    );
    assert_eq!(
        special("START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */"),
        Special::Begin { consistent_snapshot: true, read_only: false }
    );
    assert_eq!(
        special("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"),
        Special::Begin { consistent_snapshot: true, read_only: true }
    );
    assert!(matches!(std(b"START TRANSACTION").0, Statement::StartTransaction { .. }));
    assert!(matches!(std(b"START TRANSACTION READ ONLY").0, Statement::StartTransaction { .. }));
    assert!(matches!(std(b"BEGIN").0, Statement::StartTransaction { .. }));
    syntax_err(b"START TRANSACTION WITH CONSISTENT");
}

#[test]
fn alter_keys_and_options() {
    assert_eq!(
        special("ALTER TABLE `t` DISABLE KEYS"),
        Special::AlterKeys { db: None, table: "t".into(), enable: false }
    );
    assert_eq!(
        special("/*!40000 ALTER TABLE `d`.`t` ENABLE KEYS */"),
        Special::AlterKeys { db: Some("d".into()), table: "t".into(), enable: true }
    );
    assert_eq!(
        special("ALTER TABLE t ENGINE=InnoDB"),
        Special::AlterTableOptions {
            db: None,
            table: "t".into(),
            options: vec![("ENGINE".into(), "InnoDB".into())]
        }
    );
    assert_eq!(
        special("ALTER TABLE t ENGINE = TokuDB COMMENT 'hi', DEFAULT CHARSET=utf8mb4"),
        Special::AlterTableOptions {
            db: None,
            table: "t".into(),
            options: vec![
                ("ENGINE".into(), "TokuDB".into()),
                ("COMMENT".into(), "hi".into()),
                ("CHARSET".into(), "utf8mb4".into())
            ]
        }
    );
    assert_eq!(
        special("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
        Special::AlterTableOptions {
            db: None,
            table: "t".into(),
            options: vec![("CONVERT".into(), "utf8mb4 COLLATE utf8mb4_bin".into())]
        }
    );
    let (st, f) = std(b"ALTER TABLE t ENGINE = TokuDB, ADD COLUMN x INT");
    assert_eq!(st.to_string(), "ALTER TABLE t ADD COLUMN x INT");
    assert_eq!(f.table_options, vec![("ENGINE".to_string(), "TokuDB".to_string())]);
    let (st, f) = std(b"ALTER TABLE t ADD COLUMN x INT, ENGINE = TokuDB");
    assert_eq!(st.to_string(), "ALTER TABLE t ADD COLUMN x INT");
    assert_eq!(f.table_options.len(), 1);
    // What sqlparser handles stays with it.
    let (st, f) = std(b"ALTER TABLE t AUTO_INCREMENT = 100");
    assert!(f.table_options.is_empty());
    assert!(matches!(st, Statement::AlterTable { .. }));
}

#[test]
fn maintenance() {
    let t = |n: &str| TableName { db: None, name: n.into() };
    assert_eq!(
        special("OPTIMIZE TABLE t1, `d`.t2"),
        Special::Maintenance {
            op: MaintenanceOp::Optimize,
            tables: vec![t("t1"), TableName { db: Some("d".into()), name: "t2".into() }],
            persistent: false,
        }
    );
    assert_eq!(
        special("CHECK TABLE t1 EXTENDED"),
        Special::Maintenance { op: MaintenanceOp::Check, tables: vec![t("t1")], persistent: false }
    );
    assert_eq!(
        special("ANALYZE NO_WRITE_TO_BINLOG TABLE t1, t2"),
        Special::Maintenance {
            op: MaintenanceOp::Analyze,
            tables: vec![t("t1"), t("t2")],
            persistent: false
        }
    );
    assert_eq!(
        special("REPAIR LOCAL TABLE t1 QUICK"),
        Special::Maintenance { op: MaintenanceOp::Repair, tables: vec![t("t1")], persistent: false }
    );
    assert_eq!(
        special("CHECKSUM TABLE t1"),
        Special::Maintenance { op: MaintenanceOp::Checksum, tables: vec![t("t1")], persistent: false }
    );
    assert_eq!(
        special("ANALYZE TABLE t1 PERSISTENT FOR ALL"),
        Special::Maintenance { op: MaintenanceOp::Analyze, tables: vec![t("t1")], persistent: true }
    );
    syntax_err(b"OPTIMIZE t1");
    syntax_err(b"CHECK TABLE");
}

#[test]
fn lock_tables() {
    assert_eq!(
        special("LOCK TABLES `t` WRITE, d.u AS x READ LOCAL, v LOW_PRIORITY WRITE, w y READ"),
        Special::LockTables(vec![
            LockTarget {
                table: TableName { db: None, name: "t".into() },
                alias: None,
                write: true,
                local: false,
                low_priority: false
            },
            LockTarget {
                table: TableName { db: Some("d".into()), name: "u".into() },
                alias: Some("x".into()),
                write: false,
                local: true,
                low_priority: false
            },
            LockTarget {
                table: TableName { db: None, name: "v".into() },
                alias: None,
                write: true,
                local: false,
                low_priority: true
            },
            LockTarget {
                table: TableName { db: None, name: "w".into() },
                alias: Some("y".into()),
                write: false,
                local: false,
                low_priority: false
            },
        ])
    );
    assert_eq!(special("UNLOCK TABLES"), Special::UnlockTables);
    assert_eq!(special("unlock table"), Special::UnlockTables);
    syntax_err(b"LOCK TABLES t");
    syntax_err(b"LOCK TABLES t READ,");
}

#[test]
fn accounts() {
    for s in [
        "CREATE USER 'u'@'%' IDENTIFIED BY 'p'",
        "CREATE USER IF NOT EXISTS u@localhost",
        "DROP USER 'u'@'%'",
        "ALTER USER 'u'@'%' IDENTIFIED BY 'x'",
        "RENAME USER a TO b",
        "GRANT ALL PRIVILEGES ON *.* TO 'u'@'%' WITH GRANT OPTION",
        "REVOKE ALL ON *.* FROM 'u'@'%'",
        "SET PASSWORD FOR 'u'@'%' = PASSWORD('x')",
        "FLUSH PRIVILEGES",
        "CREATE ROLE r",
        "SET ROLE r",
        "SET DEFAULT ROLE r FOR u",
    ] {
        assert!(matches!(special(s), Special::Account(_)), "{s}");
    }
    assert_eq!(
        special("GRANT SELECT ON d.* TO 'u'@'%' /* c */"),
        Special::Account("GRANT SELECT ON d.* TO 'u'@'%'".into())
    );
    // Other FLUSH forms are sqlparser's.
    assert!(matches!(std(b"FLUSH TABLES").0, Statement::Flush { .. }));
}

#[test]
fn load_data() {
    use fractaldb_sql::lex::TableName;
    use fractaldb_sql::loaddata::{LoadData, OnDup, Target};
    let Special::LoadData(ld) = special("LOAD DATA INFILE 'x' INTO TABLE t") else { panic!() };
    assert_eq!(*ld, LoadData::new(false, b"x".to_vec(), TableName { db: None, name: "t".into() }));
    let Special::LoadData(ld) = special(
        "LOAD DATA LOW_PRIORITY LOCAL INFILE '/a b.csv' REPLACE INTO TABLE d.t CHARACTER SET utf8mb4 \
         COLUMNS ESCAPED BY '' TERMINATED BY ',\\t' OPTIONALLY ENCLOSED BY '\"' \
         LINES STARTING BY '>' TERMINATED BY '\\r\\n' IGNORE 2 ROWS (a, @V, `c`) SET b = CONCAT(@v, ','), c = 1",
    ) else {
        panic!()
    };
    assert!(ld.local);
    assert_eq!(ld.file, b"/a b.csv");
    assert_eq!(ld.dup, OnDup::Replace);
    assert_eq!(ld.table, TableName { db: Some("d".into()), name: "t".into() });
    assert_eq!(ld.charset.as_deref(), Some("utf8mb4"));
    assert_eq!(ld.escaped, None);
    assert_eq!(ld.fields_terminated, b",\t");
    assert_eq!((ld.enclosed, ld.optionally), (Some(b'"'), true));
    assert_eq!(ld.lines_starting, b">");
    assert_eq!(ld.lines_terminated, b"\r\n");
    assert_eq!(ld.ignore_lines, 2);
    assert_eq!(
        ld.targets,
        Some(vec![Target::Column("a".into()), Target::Var("v".into()), Target::Column("c".into())])
    );
    assert_eq!(
        ld.set,
        vec![("b".to_string(), "CONCAT(@v, ',')".to_string()), ("c".to_string(), "1".to_string())]
    );
    for bad in [
        "LOAD DATA INFILE x INTO TABLE t",
        "LOAD DATA INFILE 'x' TABLE t",
        "LOAD DATA INFILE 'x' INTO TABLE t FIELDS",
        "LOAD DATA INFILE 'x' INTO TABLE t IGNORE LINES",
        "LOAD DATA INFILE 'x' INTO TABLE t (a",
        "LOAD DATA INFILE 'x' INTO TABLE t SET a =",
        "LOAD DATA INFILE 'x' INTO TABLE t junk",
    ] {
        assert_eq!(fractaldb_sql::lex::parse(bad.as_bytes()).err().map(|e| e.code), Some(1064), "{bad}");
    }
}

#[test]
fn unsupported() {
    assert!(matches!(special("XA START 'x'"), Special::Xa(_)));
    assert_eq!(special("LOAD XML INFILE 'x' INTO TABLE t"), Special::Unsupported("LOAD XML"));
    assert_eq!(
        special("CREATE TABLE t (a INT) PARTITION BY HASH(a) PARTITIONS 4"),
        Special::Unsupported("partitioning")
    );
    assert_eq!(
        special("CREATE TABLE t (a INT) ENGINE=InnoDB /*!50100 PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10)) */"),
        Special::Unsupported("partitioning")
    );
    assert_eq!(special("ALTER TABLE t PARTITION BY KEY(a)"), Special::Unsupported("partitioning"));
    assert_eq!(
        special("CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1"),
        Special::Unsupported("CREATE TRIGGER")
    );
    assert_eq!(
        special("/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; SET NEW.b = 2; END */"),
        Special::Unsupported("CREATE TRIGGER")
    );
    assert_eq!(special("CREATE PROCEDURE p() BEGIN SELECT 1; END"), Special::Unsupported("CREATE PROCEDURE"));
    assert_eq!(
        special("CREATE DEFINER=`root`@`%` PROCEDURE `p`(IN a INT) SELECT a"),
        Special::Unsupported("CREATE PROCEDURE")
    );
    assert_eq!(special("CREATE FUNCTION f() RETURNS INT RETURN 1"), Special::Unsupported("CREATE FUNCTION"));
    assert_eq!(
        special("CREATE OR REPLACE AGGREGATE FUNCTION f() RETURNS INT RETURN 1"),
        Special::Unsupported("CREATE FUNCTION")
    );
    assert_eq!(
        special("CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO SELECT 1"),
        Special::Unsupported("CREATE EVENT")
    );
    assert_eq!(
        special("CREATE DEFINER=CURRENT_USER() EVENT e ON SCHEDULE EVERY 1 HOUR DO SELECT 1"),
        Special::Unsupported("CREATE EVENT")
    );
    // A window's PARTITION BY is not partitioning.
    assert!(matches!(parse(b"SELECT ROW_NUMBER() OVER (PARTITION BY a) FROM t").unwrap(), Parsed::Std(..)));
}

#[test]
fn do_statement() {
    let Special::Do(e) = special("DO 1, SLEEP(0), @a := 2") else { panic!() };
    assert_eq!(e.len(), 3);
    assert_eq!(e[1].to_string(), "SLEEP(0)");
    syntax_err(b"DO");
    syntax_err(b"DO 1 FROM t");
    syntax_err(b"DO 1 AS x");
}

#[test]
fn clustering() {
    let (st, f) = std(b"CREATE CLUSTERING INDEX ci ON t (a, b)");
    assert_eq!(st.to_string(), "CREATE INDEX ci ON t(a, b)");
    assert_eq!(f.clustering_indexes, ["ci"]);
    let (st, f) = std(b"CREATE UNIQUE CLUSTERING INDEX ci ON t (a)");
    assert_eq!(st.to_string(), "CREATE UNIQUE INDEX ci ON t(a)");
    assert_eq!(f.clustering_indexes, ["ci"]);
    let (st, f) = std(b"CREATE TABLE t (a INT, b INT, CLUSTERING KEY ck (b), PRIMARY KEY (a), CLUSTERING INDEX (`a`, b), KEY a (a), clustering unique key (b))");
    assert_eq!(f.clustering_indexes, ["ck", "a_2", "b"]);
    assert_eq!(
        st.to_string(),
        "CREATE TABLE t (a INT, b INT, KEY ck (b), PRIMARY KEY (a), INDEX `a_2` (`a`, b), KEY a (a), UNIQUE KEY `b` (b))"
    );
    let (st, f) = std(b"ALTER TABLE t ADD CLUSTERING INDEX ci (b), ADD CLUSTERING KEY (c)");
    assert_eq!(f.clustering_indexes, ["ci", "c"]);
    assert_eq!(st.to_string(), "ALTER TABLE t ADD INDEX ci (b), ADD KEY `c` (c)");
    // A column called clustering is left alone.
    let (_, f) = std(b"CREATE TABLE t (clustering INT, KEY (clustering))");
    assert!(f.clustering_indexes.is_empty());
}

// ---------------------------------------------------------------------------
// SHOW
// ---------------------------------------------------------------------------

#[test]
fn show_statements() {
    use ShowKind as S;
    let s = show("SHOW DATABASES");
    assert_eq!(s.kind, S::Databases);
    assert_eq!(show("show schemas like 'a%'").like, Some(b"a%".to_vec()));

    let s = show("SHOW FULL TABLES FROM `db` LIKE 't\\_%'");
    assert_eq!((s.kind, s.full, s.db.as_deref()), (S::Tables, true, Some("db")));
    assert_eq!(s.like, Some(b"t\\_%".to_vec()));
    let s = show("SHOW TABLES IN db WHERE Tables_in_db = 'x'");
    assert_eq!(s.filter.unwrap().to_string(), "Tables_in_db = 'x'");

    let s = show("SHOW CREATE TABLE `d`.`t`");
    assert_eq!((s.kind, s.db.as_deref(), s.table.as_deref()), (S::CreateTable, Some("d"), Some("t")));
    let s = show("SHOW CREATE DATABASE IF NOT EXISTS `d`");
    assert_eq!((s.kind, s.db.as_deref(), s.if_not_exists), (S::CreateDatabase, Some("d"), true));
    assert_eq!(show("SHOW CREATE SCHEMA d").kind, S::CreateDatabase);
    assert_eq!(show("SHOW CREATE VIEW v").kind, S::CreateView);
    assert_eq!(show("SHOW CREATE TRIGGER tr").kind, S::CreateTrigger);
    assert_eq!(show("SHOW CREATE PROCEDURE p").kind, S::CreateProcedure);
    assert_eq!(show("SHOW CREATE FUNCTION f").kind, S::CreateFunction);
    assert_eq!(show("SHOW CREATE EVENT e").kind, S::CreateEvent);
    let s = show("SHOW CREATE USER 'u'@'%'");
    assert_eq!((s.kind, s.name.as_deref()), (S::CreateUser, Some("'u'@'%'")));

    let s = show("SHOW FULL COLUMNS FROM t FROM d LIKE 'a%'");
    assert_eq!(
        (s.kind, s.full, s.db.as_deref(), s.table.as_deref()),
        (S::Columns, true, Some("d"), Some("t"))
    );
    assert_eq!(s.like, Some(b"a%".to_vec()));
    let s = show("SHOW FIELDS IN d.t");
    assert_eq!((s.kind, s.db.as_deref(), s.table.as_deref()), (S::Columns, Some("d"), Some("t")));
    for q in ["SHOW INDEX FROM t", "SHOW INDEXES IN t", "SHOW KEYS FROM t FROM d WHERE Key_name = 'PRIMARY'"]
    {
        let s = show(q);
        assert_eq!((s.kind, s.table.as_deref()), (S::Index, Some("t")), "{q}");
    }
    assert!(show("SHOW KEYS FROM t FROM d WHERE Key_name = 'PRIMARY'").filter.is_some());

    assert_eq!(show("SHOW ENGINES").kind, S::Engines);
    assert_eq!(show("SHOW STORAGE ENGINES").kind, S::Engines);
    assert_eq!(show("SHOW COLLATION LIKE 'utf8%'").kind, S::Collation);
    assert_eq!(show("SHOW CHARACTER SET").kind, S::Charset);
    assert_eq!(show("SHOW CHARSET WHERE Charset = 'utf8mb4'").kind, S::Charset);

    let s = show("SHOW GLOBAL VARIABLES LIKE 'max%'");
    assert_eq!((s.kind, s.global), (S::Variables, true));
    let s = show("SHOW SESSION VARIABLES WHERE Variable_name IN ('a', 'b')");
    assert_eq!((s.kind, s.global), (S::Variables, false));
    assert!(s.filter.is_some());
    let s = show("SHOW VARIABLES");
    assert_eq!((s.kind, s.global, &s.like), (S::Variables, false, &None));
    assert_eq!(show("SHOW GLOBAL STATUS").kind, S::Status);
    assert_eq!(show("SHOW LOCAL STATUS LIKE 'Com%'").like, Some(b"Com%".to_vec()));

    assert_eq!(show("SHOW WARNINGS").kind, S::Warnings);
    assert_eq!(show("SHOW WARNINGS LIMIT 5").limit, Some((0, 5)));
    assert_eq!(show("SHOW ERRORS LIMIT 2, 5").limit, Some((2, 5)));
    assert_eq!(show("SHOW COUNT(*) WARNINGS").kind, S::WarningCount);
    assert_eq!(show("SHOW COUNT(*) ERRORS").kind, S::ErrorCount);

    let s = show("SHOW TABLE STATUS FROM d LIKE 'x\\_%'");
    assert_eq!((s.kind, s.db.as_deref()), (S::TableStatus, Some("d")));
    assert_eq!(s.like, Some(b"x\\_%".to_vec()));
    assert!(show("SHOW TABLE STATUS WHERE Name = 't'").filter.is_some());

    let s = show("SHOW FULL PROCESSLIST");
    assert_eq!((s.kind, s.full), (S::ProcessList, true));
    assert_eq!(show("SHOW GRANTS").kind, S::Grants);
    let s = show("SHOW GRANTS FOR 'u'@'localhost'");
    assert_eq!(s.name.as_deref(), Some("'u'@'localhost'"));
    assert_eq!(show("SHOW GRANTS FOR CURRENT_USER()").name.as_deref(), Some("CURRENT_USER()"));
    let s = show("SHOW ENGINE InnoDB STATUS");
    assert_eq!((s.kind, s.name.as_deref()), (S::EngineStatus, Some("InnoDB")));
    assert_eq!(show("SHOW ENGINE tokudb MUTEX").kind, S::EngineMutex);
    assert_eq!(show("SHOW MASTER STATUS").kind, S::MasterStatus);
    assert_eq!(show("SHOW BINLOG STATUS").kind, S::MasterStatus);
    assert_eq!(show("SHOW SLAVE STATUS").kind, S::SlaveStatus);
    assert_eq!(show("SHOW BINARY LOGS").kind, S::BinaryLogs);
    assert_eq!(show("SHOW MASTER LOGS").kind, S::BinaryLogs);
    assert_eq!(show("SHOW TRIGGERS FROM d LIKE 't'").kind, S::Triggers);
    assert_eq!(show("SHOW PROCEDURE STATUS WHERE Db = 'd'").kind, S::ProcedureStatus);
    assert_eq!(show("SHOW PACKAGE STATUS WHERE Db = 'd'").kind, S::ProcedureStatus);
    assert_eq!(show("SHOW PACKAGE BODY STATUS WHERE Db = 'd'").kind, S::ProcedureStatus);
    assert_eq!(show("SHOW FUNCTION STATUS LIKE 'f'").kind, S::FunctionStatus);
    assert_eq!(show("SHOW EVENTS").kind, S::Events);
    assert_eq!(show("SHOW PLUGINS").kind, S::Plugins);
    assert_eq!(show("SHOW OPEN TABLES FROM d").kind, S::OpenTables);
    assert_eq!(show("SHOW PRIVILEGES").kind, S::Privileges);
    assert_eq!(show("SHOW PROFILES").kind, S::Profiles);

    for bad in [
        "SHOW",
        "SHOW NONSENSE",
        "SHOW FULL DATABASES",
        "SHOW GLOBAL TABLES",
        "SHOW COLUMNS t",
        "SHOW TABLES LIKE",
        "SHOW TABLES WHERE",
        "SHOW TABLES extra",
        "SHOW CREATE TABLE",
        "SHOW WARNINGS LIMIT x",
        "SHOW TABLES WHERE a = 1 ORDER BY a",
    ] {
        syntax_err(bad.as_bytes());
    }
}

#[test]
fn show_like_non_utf8() {
    let s = show_bytes(b"SHOW TABLES LIKE '\xff%'");
    assert_eq!(s.like, Some(b"\xff%".to_vec()));
}

fn show_bytes(sql: &[u8]) -> ShowStmt {
    match parse(sql) {
        Ok(Parsed::Special(Special::Show(s))) => s,
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[test]
fn errors_quote_from_the_failing_token() {
    let m = syntax_err(b"SELECT * FORM t");
    assert!(m.ends_with("near 't' at line 1") || m.ends_with("near 'FORM t' at line 1"), "{m}");
    let m = syntax_err(b"SELECT 1 +");
    assert!(m.ends_with("near '' at line 1"), "{m}");
    let m = syntax_err(b"SELECT 1,\n  2 3 4");
    assert!(m.ends_with("near '3 4' at line 2"), "{m}");
    let m = syntax_err(b"SELECT 'abc");
    assert!(m.ends_with("near ''abc' at line 1"), "{m}");
    let m = syntax_err(b"SELECT `abc");
    assert!(m.ends_with("near '`abc' at line 1"), "{m}");
    let m = syntax_err(b"SELECT 1 /* open");
    assert!(m.ends_with("near '/* open' at line 1"), "{m}");
    // The quoted text is the original, not the rewrite.
    let m = syntax_err(b"SELECT 'a\\tb' \"c\" FROM WHERE");
    assert!(m.contains("near 'WHERE' at line 1"), "{m}");
    let long = format!("SELECT 1 1 {}", "x".repeat(200));
    let m = syntax_err(long.as_bytes());
    assert!(m.ends_with(&format!("near '1 {}' at line 1", "x".repeat(78))), "{m}");
    // Non-UTF-8 outside a literal.
    syntax_err(b"SELECT \xff");
    syntax_err(b"SELECT `\xff`");
}

#[test]
fn multiple_statements_rejected() {
    let m = syntax_err(b"SELECT 1; SELECT 2");
    assert!(m.ends_with("near 'SELECT 2' at line 1"), "{m}");
    // A trailing delimiter is fine.
    assert!(matches!(parse(b"SELECT 1;").unwrap(), Parsed::Std(..)));
    assert!(matches!(parse(b"SELECT 1 ; ; ").unwrap(), Parsed::Std(..)));
}

// ---------------------------------------------------------------------------
// A dump
// ---------------------------------------------------------------------------

const DUMP_HEAD: &str = r"/*M!999999\- enable the sandbox mode */ 
-- MariaDB dump 10.19-11.4.2-MariaDB, for Linux (x86_64)
--
-- Host: localhost    Database: shop
-- ------------------------------------------------------
-- Server version	11.4.2-MariaDB

/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;
/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;
/*!40101 SET NAMES utf8mb4 */;
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;
/*!40103 SET TIME_ZONE='+00:00' */;
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;
/*M!100616 SET @OLD_NOTE_VERBOSITY=@@NOTE_VERBOSITY, NOTE_VERBOSITY=0 */;
/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;

--
-- Table structure for table `t`
--

DROP TABLE IF EXISTS `t`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8 */;
CREATE TABLE `t` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `name` varchar(20) DEFAULT NULL,
  `data` blob DEFAULT NULL,
  PRIMARY KEY (`id`),
  CLUSTERING KEY `name` (`name`)
) ENGINE=TokuDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `t`
--

LOCK TABLES `t` WRITE;
/*!40000 ALTER TABLE `t` DISABLE KEYS */;
";

const DUMP_TAIL: &str = r"/*!40000 ALTER TABLE `t` ENABLE KEYS */;
UNLOCK TABLES;
/*!50003 SET @saved_cs_client      = @@character_set_client */ ;
DELIMITER ;;
/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER `tr` BEFORE INSERT ON `t` FOR EACH ROW BEGIN
  SET NEW.name = 'x;y';
  SET NEW.id = NEW.id + 1;
END */;;
DELIMITER ;
/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;

/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;
/*M!100616 SET NOTE_VERBOSITY=@OLD_NOTE_VERBOSITY */;

-- Dump completed on 2024-06-01 12:00:00
";

#[test]
fn mysqldump_file() {
    let mut dump = DUMP_HEAD.as_bytes().to_vec();
    dump.extend_from_slice(
        b"INSERT INTO `t` VALUES (1,'a\\'b',_binary '\xff\x00\\0\\\\'),(2,'\xc3\xa9',NULL);\n",
    );
    dump.extend_from_slice(DUMP_TAIL.as_bytes());
    let stmts = split_script(&dump);
    let mut kinds = Vec::new();
    for s in &stmts {
        let p = parse(s).unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(s)));
        kinds.push(match p {
            Parsed::Std(st, f) => {
                if let Statement::Insert(ins) = &*st {
                    let SetExpr::Values(v) = &*ins.source.as_ref().unwrap().body else { panic!() };
                    let Expr::Value(b) = &v.rows[0][2] else { panic!() };
                    assert_eq!(lit_bytes(&b.value), b"\xff\x00\x00\\");
                    let Expr::Value(b) = &v.rows[0][1] else { panic!() };
                    assert_eq!(lit_bytes(&b.value), b"a'b");
                    let Expr::Value(b) = &v.rows[1][1] else { panic!() };
                    assert_eq!(b.value, Value::SingleQuotedString("é".into()));
                }
                if matches!(&*st, Statement::CreateTable(_)) {
                    assert_eq!(f.clustering_indexes, ["name"]);
                }
                st.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ")
            }
            Parsed::Special(Special::AlterKeys { enable, .. }) => format!("keys {enable}"),
            Parsed::Special(Special::LockTables(t)) => format!("lock {}", t[0].table.name),
            Parsed::Special(Special::UnlockTables) => "unlock".into(),
            Parsed::Special(Special::SetNames { charset, .. }) => format!("names {}", charset.unwrap()),
            Parsed::Special(Special::Unsupported(w)) => w.to_string(),
            Parsed::Special(other) => panic!("{other:?}"),
            Parsed::Empty => "empty".into(),
        });
    }
    assert_eq!(
        kinds,
        [
            "SET @OLD_CHARACTER_SET_CLIENT",
            "SET @OLD_CHARACTER_SET_RESULTS",
            "SET @OLD_COLLATION_CONNECTION",
            "names utf8mb4",
            "SET @OLD_TIME_ZONE",
            "SET TIME_ZONE",
            "SET @OLD_UNIQUE_CHECKS",
            "SET @OLD_FOREIGN_KEY_CHECKS",
            "SET @OLD_SQL_MODE",
            "empty",
            "SET @OLD_SQL_NOTES",
            "DROP TABLE",
            "SET @saved_cs_client",
            "SET character_set_client",
            "CREATE TABLE",
            "SET character_set_client",
            "lock t",
            "keys false",
            "INSERT INTO",
            "keys true",
            "unlock",
            "SET @saved_cs_client",
            "CREATE TRIGGER",
            "SET TIME_ZONE",
            "SET SQL_MODE",
            "empty",
        ]
    );
}

// ---------------------------------------------------------------------------
// Never panic
// ---------------------------------------------------------------------------

const CORPUS: &[&str] = &[
    "SELECT a MOD b, 'x\\'y', \"q\", 0x41, b'01', _binary'z' FROM t WHERE a LIKE 'a\\_%' LOCK IN SHARE MODE",
    "CREATE TABLE t (a INT, CLUSTERING KEY (a), KEY k (a)) ENGINE=TokuDB /*!50100 PARTITION BY HASH(a) */",
    "ALTER TABLE t ENGINE=InnoDB, ADD CLUSTERING INDEX (b)",
    "SHOW FULL COLUMNS FROM `t` FROM d WHERE Field = 'a'",
    "SHOW TABLE STATUS LIKE 'x%'",
    "LOCK TABLES a READ LOCAL, b AS c LOW_PRIORITY WRITE",
    "START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */",
    "DO SLEEP(1), 2",
    "DELIMITER ;;\nCREATE PROCEDURE p() BEGIN SELECT 1; END;;\nDELIMITER ;\n",
    "/*M!999999\\- enable the sandbox mode */\n/*!40101 SET NAMES utf8 */;",
    "INSERT INTO t VALUES (1,'\\0\\Z\\b'),(2,_binary 'abc') -- tail",
    "OPTIMIZE TABLE a, b; CHECK TABLE c; GRANT ALL ON *.* TO 'u'@'%'",
    "SHOW GRANTS FOR 'u'@'%'; SHOW CREATE DATABASE IF NOT EXISTS d; SHOW COUNT(*) WARNINGS",
];

#[test]
fn no_panics_on_garbage() {
    let seed: u64 = std::env::var("LEX_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("LEX_SEED={seed}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let alphabet: &[u8] = b"'\"`\\/*!M-#;\n ()0x1b_aXNSELECTSHOWLOCKDELIMITER,.=@%\xff\xc3";
    for round in 0..3000 {
        let input: Vec<u8> =
            if round % 3 == 0 {
                let n = rng.gen_range(0..60);
                (0..n)
                    .map(|_| {
                        if rng.gen_bool(0.8) {
                            alphabet[rng.gen_range(0..alphabet.len())]
                        } else {
                            rng.gen()
                        }
                    })
                    .collect()
            } else {
                let base = CORPUS[rng.gen_range(0..CORPUS.len())].as_bytes();
                let mut v = base[..rng.gen_range(0..=base.len())].to_vec();
                for _ in 0..rng.gen_range(0..3) {
                    if !v.is_empty() {
                        let i = rng.gen_range(0..v.len());
                        v[i] = alphabet[rng.gen_range(0..alphabet.len())];
                    }
                }
                v
            };
        for stmt in split_script(&input) {
            let _ = parse(&stmt);
        }
        let _ = parse(&input);
        let mut s = Splitter::new();
        let cut = rng.gen_range(0..=input.len());
        let mut a = s.push(&input[..cut]);
        a.extend(s.push(&input[cut..]));
        a.extend(s.finish());
        assert_eq!(a, split_script(&input), "seed {seed} input {input:?}");
    }
}

#[test]
fn truncations_of_the_corpus() {
    for base in CORPUS {
        let b = base.as_bytes();
        for n in 0..=b.len() {
            for stmt in split_script(&b[..n]) {
                if let Err(e) = parse(&stmt) {
                    assert!(e.code == 1064 && e.message.contains("near '"), "{e}");
                }
            }
        }
    }
}

#[test]
fn large_binary_insert() {
    // A dumped BLOB of every byte value, a few MB: the rewrite is linear.
    let blob: Vec<u8> = (0..4 << 20).map(|i| (i * 7 % 256) as u8).collect();
    let mut sql = b"INSERT INTO t VALUES (_binary '".to_vec();
    for &b in &blob {
        match b {
            0 => sql.extend_from_slice(b"\\0"),
            b'\'' => sql.extend_from_slice(b"\\'"),
            b'\\' => sql.extend_from_slice(b"\\\\"),
            _ => sql.push(b),
        }
    }
    sql.extend_from_slice(b"')");
    let (st, _) = std(&sql);
    let Statement::Insert(ins) = st else { panic!() };
    let SetExpr::Values(v) = &*ins.source.unwrap().body else { panic!() };
    let Expr::Value(b) = &v.rows[0][0] else { panic!() };
    assert_eq!(lit_bytes(&b.value), blob);
}

/// Prepared statements number `?` outside strings, quoted names and
/// comments (inside `/*!NNNNN ... */`, which is code, they count).
#[test]
fn placeholders_are_numbered_outside_strings_and_comments() {
    let sql =
        b"SELECT ?, '?', \"a\\\"?\", `?``?`, 'it''s?' -- ?\n, ? # ?\n /* ? */ /*!40101 ? */ FROM t WHERE a=?";
    let (text, n) = fractaldb_sql::lex::number_placeholders(sql).unwrap();
    assert_eq!(n, 4, "{}", String::from_utf8_lossy(&text));
    let text = String::from_utf8(text).unwrap();
    for i in 1..=4 {
        assert!(text.contains(&format!("?{i}")), "{text}");
    }
    assert_eq!(fractaldb_sql::lex::number_placeholders(b"SELECT 1--?").unwrap().1, 1, "--? is not a comment");
}

#[test]
fn dml_ignore_and_multi_table_forms() {
    // IGNORE of UPDATE / DELETE becomes a flag (it was read as a table).
    for sql in [
        "UPDATE IGNORE t SET a = 1",
        "UPDATE LOW_PRIORITY IGNORE t SET a = 1",
        "DELETE QUICK IGNORE FROM t",
        "DELETE IGNORE t1 FROM t1 JOIN t2",
        "EXPLAIN UPDATE IGNORE t SET a = 1",
    ] {
        assert!(std(sql.as_bytes()).1.ignore, "{sql}");
    }
    assert!(!std(b"UPDATE LOW_PRIORITY t SET a = 1").1.ignore);
    // `DELETE quick, t FROM`: quick is a table there.
    let (st, f) = std(b"DELETE quick, t FROM quick, t");
    assert!(!f.ignore);
    let Statement::Delete(d) = st else { panic!("not a DELETE") };
    assert_eq!(d.tables.len(), 2);
    // UPDATE's comma list: an item with joins is one operand.
    let (st, _) = std(b"UPDATE t1, t2 LEFT JOIN t3 ON t2.a = t3.a SET t1.a = 1");
    let Statement::Update(u) = st else { panic!("not an UPDATE") };
    assert_eq!(u.table.joins.len(), 1);
    assert!(u.table.to_string().contains("CROSS JOIN (t2 LEFT JOIN t3"), "{}", u.table);
    // Targets written `t.*`.
    let (st, _) = std(b"DELETE t1.*, t2.* FROM t1, t2");
    let Statement::Delete(d) = st else { panic!("not a DELETE") };
    assert_eq!(d.tables.iter().map(|t| t.to_string()).collect::<Vec<_>>(), ["t1", "t2"]);
    // ORDER BY / LIMIT in a multi-table DELETE: MariaDB's 1064.
    for sql in [
        "DELETE t1 FROM t1, t2 LIMIT 1",
        "DELETE FROM t1 USING t1, t2 ORDER BY t1.a",
        "DELETE FROM t1, t2 WHERE t1.a = 1",
        "DELETE FROM t1 JOIN t2 ON t1.a = t2.a",
        "UPDATE t1 SET b = 1 FROM t2",
    ] {
        assert_eq!(parse(sql.as_bytes()).err().map(|e| e.code), Some(1064), "{sql}");
    }
}
