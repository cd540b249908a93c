//! SHOW statements and INFORMATION_SCHEMA: the text and rows MariaDB 10.11
//! gives for the same DDL (engine-specific values aside), since clients,
//! dump tools and ORMs parse them.

use fractaldb_sql::{Database, Outcome, Session};

mod support;
use support::embedded::{err, ok, test_opts as opts};

fn result(s: &mut Session, sql: &str) -> (Vec<String>, Vec<Vec<String>>) {
    match s.execute(sql.as_bytes()).unwrap_or_else(|e| panic!("{sql}: {e}")) {
        Outcome::Rows(rs) => (
            rs.columns.iter().map(|c| c.name.clone()).collect(),
            rs.rows
                .iter()
                .map(|r| r.iter().map(|v| if v.is_null() { "NULL".into() } else { v.render() }).collect())
                .collect(),
        ),
        other => panic!("{sql}: expected rows, got {other:?}"),
    }
}

/// Rows as MariaDB's batch mode prints them: tab-separated, NULL as NULL.
fn tsv(s: &mut Session, sql: &str) -> String {
    let (cols, rows) = result(s, sql);
    let mut out = cols.join("\t") + "\n";
    for r in rows {
        out += &(r.join("\t") + "\n");
    }
    out
}

const DDL: &str = "CREATE TABLE t (
  id INT NOT NULL AUTO_INCREMENT,
  name VARCHAR(20),
  code CHAR(4) NOT NULL DEFAULT 'x',
  b VARCHAR(30) CHARACTER SET latin1,
  c VARCHAR(40) COLLATE utf8mb4_bin NOT NULL COMMENT 'a comment',
  price DECIMAL(10,2) UNSIGNED DEFAULT 1.50,
  f FLOAT, dd DOUBLE NOT NULL DEFAULT 0,
  bits BIT(3) DEFAULT b'101',
  tx TEXT, bl BLOB, vb VARBINARY(8),
  e ENUM('a','b') DEFAULT 'a', s SET('x','y'),
  dt DATE, tm TIME(3), dtm DATETIME(6), y YEAR,
  ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  ts2 TIMESTAMP NULL DEFAULT NULL,
  j JSON,
  big BIGINT UNSIGNED, tiny TINYINT,
  PRIMARY KEY (id),
  UNIQUE KEY u (b),
  KEY k (c(10)),
  KEY m (name, code DESC)
)";

/// A table whose only unique key is over NOT NULL columns: MariaDB shows
/// its columns as PRI (it serves as the primary key).
const DDL3: &str = "CREATE TABLE t3 (a INT NOT NULL, b VARCHAR(5) NOT NULL, \
    c DATETIME DEFAULT '2020-01-02 03:04:05', d DECIMAL(5,2) DEFAULT 1.5, KEY (a), UNIQUE (b,a))";

fn setup() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    {
        let mut s = db.session();
        ok(&mut s, "CREATE DATABASE d CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci");
        ok(&mut s, "USE d");
        ok(&mut s, DDL);
        ok(&mut s, "INSERT INTO t (c) VALUES ('a'),('b')");
        ok(&mut s, DDL3);
    }
    (dir, db)
}

fn session(db: &Database) -> Session {
    let mut s = db.session();
    ok(&mut s, "USE d");
    s
}

// Expected texts below are MariaDB 10.11's output for the same statements
// (`mariadb -B`), with ENGINE=InnoDB read as ENGINE=FractalDB.

#[test]
fn show_create_table_is_mariadbs_text() {
    let (_d, db) = setup();
    let mut s = session(&db);
    let (cols, rows) = result(&mut s, "SHOW CREATE TABLE t");
    assert_eq!(cols, ["Table", "Create Table"]);
    assert_eq!(rows[0][0], "t");
    assert_eq!(
        rows[0][1],
        "CREATE TABLE `t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `name` varchar(20) DEFAULT NULL,\n  `code` char(4) NOT NULL DEFAULT 'x',\n  `b` varchar(30) CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL,\n  `c` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'a comment',\n  `price` decimal(10,2) unsigned DEFAULT 1.50,\n  `f` float DEFAULT NULL,\n  `dd` double NOT NULL DEFAULT 0,\n  `bits` bit(3) DEFAULT b'101',\n  `tx` text DEFAULT NULL,\n  `bl` blob DEFAULT NULL,\n  `vb` varbinary(8) DEFAULT NULL,\n  `e` enum('a','b') DEFAULT 'a',\n  `s` set('x','y') DEFAULT NULL,\n  `dt` date DEFAULT NULL,\n  `tm` time(3) DEFAULT NULL,\n  `dtm` datetime(6) DEFAULT NULL,\n  `y` year(4) DEFAULT NULL,\n  `ts` timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),\n  `ts2` timestamp NULL DEFAULT NULL,\n  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),\n  `big` bigint(20) unsigned DEFAULT NULL,\n  `tiny` tinyint(4) DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  UNIQUE KEY `u` (`b`),\n  KEY `k` (`c`(10)),\n  KEY `m` (`name`,`code` DESC)\n) ENGINE=FractalDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    );
    assert_eq!(
        result(&mut s, "SHOW CREATE TABLE d.t3").1[0][1],
        "CREATE TABLE `t3` (\n  `a` int(11) NOT NULL,\n  `b` varchar(5) NOT NULL,\n  `c` datetime DEFAULT '2020-01-02 03:04:05',\n  `d` decimal(5,2) DEFAULT 1.50,\n  UNIQUE KEY `b` (`b`,`a`),\n  KEY `a` (`a`)\n) ENGINE=FractalDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    );
    assert_eq!(err(&mut s, "SHOW CREATE TABLE nope"), 1146);
    assert_eq!(err(&mut s, "SHOW CREATE TABLE nodb.t"), 1049);
    assert_eq!(
        tsv(&mut s, "SHOW CREATE DATABASE d"),
        "Database\tCreate Database\nd\tCREATE DATABASE `d` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */\n"
    );
    assert_eq!(
        result(&mut s, "SHOW CREATE SCHEMA IF NOT EXISTS d").1[0][1],
        "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `d` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */"
    );
}

// A dump copies CHECK constraints from SHOW CREATE TABLE: a column's on
// its line, a table's as CONSTRAINT after the keys. MariaDB 10.11's text
// for the same CREATE TABLE (its expressions are written with quoted names
// here, so the parser's text is MariaDB's).
#[test]
fn show_create_table_writes_check_constraints() {
    let (_d, db) = setup();
    let mut s = session(&db);
    ok(&mut s, "CREATE TABLE ck (a INT CHECK (`a` > 0), c INT, PRIMARY KEY (c), CONSTRAINT `named` CHECK (`c` < 100))");
    assert_eq!(
        result(&mut s, "SHOW CREATE TABLE ck").1[0][1],
        "CREATE TABLE `ck` (\n  `a` int(11) DEFAULT NULL CHECK (`a` > 0),\n  `c` int(11) NOT NULL,\n  PRIMARY KEY (`c`),\n  CONSTRAINT `named` CHECK (`c` < 100)\n) ENGINE=FractalDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    );
    assert_eq!(err(&mut s, "INSERT INTO ck VALUES (1, 100)"), 4025);
}

#[test]
fn show_columns_and_index() {
    let (_d, db) = setup();
    let mut s = session(&db);
    assert_eq!(
        tsv(&mut s, "SHOW FULL COLUMNS FROM t"),
        "Field\tType\tCollation\tNull\tKey\tDefault\tExtra\tPrivileges\tComment
id\tint(11)\tNULL\tNO\tPRI\tNULL\tauto_increment\tselect,insert,update,references\t
name\tvarchar(20)\tutf8mb4_general_ci\tYES\tMUL\tNULL\t\tselect,insert,update,references\t
code\tchar(4)\tutf8mb4_general_ci\tNO\t\tx\t\tselect,insert,update,references\t
b\tvarchar(30)\tlatin1_swedish_ci\tYES\tUNI\tNULL\t\tselect,insert,update,references\t
c\tvarchar(40)\tutf8mb4_bin\tNO\tMUL\tNULL\t\tselect,insert,update,references\ta comment
price\tdecimal(10,2) unsigned\tNULL\tYES\t\t1.50\t\tselect,insert,update,references\t
f\tfloat\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
dd\tdouble\tNULL\tNO\t\t0\t\tselect,insert,update,references\t
bits\tbit(3)\tNULL\tYES\t\tb'101'\t\tselect,insert,update,references\t
tx\ttext\tutf8mb4_general_ci\tYES\t\tNULL\t\tselect,insert,update,references\t
bl\tblob\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
vb\tvarbinary(8)\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
e\tenum('a','b')\tutf8mb4_general_ci\tYES\t\ta\t\tselect,insert,update,references\t
s\tset('x','y')\tutf8mb4_general_ci\tYES\t\tNULL\t\tselect,insert,update,references\t
dt\tdate\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
tm\ttime(3)\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
dtm\tdatetime(6)\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
y\tyear(4)\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
ts\ttimestamp\tNULL\tNO\t\tcurrent_timestamp()\ton update current_timestamp()\tselect,insert,update,references\t
ts2\ttimestamp\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
j\tlongtext\tutf8mb4_bin\tYES\t\tNULL\t\tselect,insert,update,references\t
big\tbigint(20) unsigned\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
tiny\ttinyint(4)\tNULL\tYES\t\tNULL\t\tselect,insert,update,references\t
"
    );
    assert_eq!(
        tsv(&mut s, "SHOW COLUMNS FROM t3"),
        "Field\tType\tNull\tKey\tDefault\tExtra
a\tint(11)\tNO\tPRI\tNULL\t
b\tvarchar(5)\tNO\tPRI\tNULL\t
c\tdatetime\tYES\t\t2020-01-02 03:04:05\t
d\tdecimal(5,2)\tYES\t\t1.50\t
"
    );
    assert_eq!(
        tsv(&mut s, "SHOW COLUMNS FROM t LIKE 't%'"),
        "Field\tType\tNull\tKey\tDefault\tExtra
tx\ttext\tYES\t\tNULL\t
tm\ttime(3)\tYES\t\tNULL\t
ts\ttimestamp\tNO\t\tcurrent_timestamp()\ton update current_timestamp()
ts2\ttimestamp\tYES\t\tNULL\t
tiny\ttinyint(4)\tYES\t\tNULL\t
"
    );
    assert_eq!(
        tsv(&mut s, "SHOW FIELDS FROM t WHERE `Key` <> ''"),
        "Field\tType\tNull\tKey\tDefault\tExtra
id\tint(11)\tNO\tPRI\tNULL\tauto_increment
name\tvarchar(20)\tYES\tMUL\tNULL\t
b\tvarchar(30)\tYES\tUNI\tNULL\t
c\tvarchar(40)\tNO\tMUL\tNULL\t
"
    );
    assert_eq!(
        tsv(&mut s, "SHOW INDEX FROM t"),
        "Table\tNon_unique\tKey_name\tSeq_in_index\tColumn_name\tCollation\tCardinality\tSub_part\tPacked\tNull\tIndex_type\tComment\tIndex_comment\tIgnored
t\t0\tPRIMARY\t1\tid\tA\t2\tNULL\tNULL\t\tBTREE\t\t\tNO
t\t0\tu\t1\tb\tA\t2\tNULL\tNULL\tYES\tBTREE\t\t\tNO
t\t1\tk\t1\tc\tA\t2\t10\tNULL\t\tBTREE\t\t\tNO
t\t1\tm\t1\tname\tA\t2\tNULL\tNULL\tYES\tBTREE\t\t\tNO
t\t1\tm\t2\tcode\tD\t2\tNULL\tNULL\t\tBTREE\t\t\tNO
"
    );
    assert_eq!(
        tsv(&mut s, "SHOW KEYS FROM t3 FROM d"),
        "Table\tNon_unique\tKey_name\tSeq_in_index\tColumn_name\tCollation\tCardinality\tSub_part\tPacked\tNull\tIndex_type\tComment\tIndex_comment\tIgnored
t3\t0\tb\t1\tb\tA\t0\tNULL\tNULL\t\tBTREE\t\t\tNO
t3\t0\tb\t2\ta\tA\t0\tNULL\tNULL\t\tBTREE\t\t\tNO
t3\t1\ta\t1\ta\tA\t0\tNULL\tNULL\t\tBTREE\t\t\tNO
"
    );
    assert_eq!(err(&mut s, "SHOW COLUMNS FROM nope"), 1146);
    assert_eq!(err(&mut s, "SHOW INDEX FROM t FROM nodb"), 1146);
}

#[test]
fn information_schema_queries_tools_send() {
    let (_d, db) = setup();
    let mut s = session(&db);
    assert_eq!(
        tsv(
            &mut s,
            "SELECT TABLE_NAME, TABLE_ROWS, ENGINE IS NOT NULL, TABLE_COLLATION FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = 'd' ORDER BY TABLE_NAME"
        ),
        "TABLE_NAME\tTABLE_ROWS\tENGINE IS NOT NULL\tTABLE_COLLATION\nt\t2\t1\tutf8mb4_general_ci\nt3\t0\t1\tutf8mb4_general_ci\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_DEFAULT, COLUMN_TYPE, EXTRA \
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='d' AND TABLE_NAME='t' ORDER BY ORDINAL_POSITION"
        ),
        "COLUMN_NAME\tDATA_TYPE\tIS_NULLABLE\tCOLUMN_KEY\tCOLUMN_DEFAULT\tCOLUMN_TYPE\tEXTRA
id\tint\tNO\tPRI\tNULL\tint(11)\tauto_increment
name\tvarchar\tYES\tMUL\tNULL\tvarchar(20)\t
code\tchar\tNO\t\t'x'\tchar(4)\t
b\tvarchar\tYES\tUNI\tNULL\tvarchar(30)\t
c\tvarchar\tNO\tMUL\tNULL\tvarchar(40)\t
price\tdecimal\tYES\t\t1.50\tdecimal(10,2) unsigned\t
f\tfloat\tYES\t\tNULL\tfloat\t
dd\tdouble\tNO\t\t0\tdouble\t
bits\tbit\tYES\t\tb'101'\tbit(3)\t
tx\ttext\tYES\t\tNULL\ttext\t
bl\tblob\tYES\t\tNULL\tblob\t
vb\tvarbinary\tYES\t\tNULL\tvarbinary(8)\t
e\tenum\tYES\t\t'a'\tenum('a','b')\t
s\tset\tYES\t\tNULL\tset('x','y')\t
dt\tdate\tYES\t\tNULL\tdate\t
tm\ttime\tYES\t\tNULL\ttime(3)\t
dtm\tdatetime\tYES\t\tNULL\tdatetime(6)\t
y\tyear\tYES\t\tNULL\tyear(4)\t
ts\ttimestamp\tNO\t\tcurrent_timestamp()\ttimestamp\ton update current_timestamp()
ts2\ttimestamp\tYES\t\tNULL\ttimestamp\t
j\tlongtext\tYES\t\tNULL\tlongtext\t
big\tbigint\tYES\t\tNULL\tbigint(20) unsigned\t
tiny\ttinyint\tYES\t\tNULL\ttinyint(4)\t
"
    );
    // The default of `id` is SQL NULL (no default); of `name`, the text NULL.
    assert_eq!(
        tsv(
            &mut s,
            "SELECT COLUMN_NAME, COLUMN_DEFAULT IS NULL FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA='d' AND TABLE_NAME='t' AND ORDINAL_POSITION < 4"
        ),
        "COLUMN_NAME\tCOLUMN_DEFAULT IS NULL\nid\t1\nname\t0\ncode\t0\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT INDEX_NAME, COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='d' \
             GROUP BY INDEX_NAME ORDER BY INDEX_NAME"
        ),
        "INDEX_NAME\tCOUNT(*)\na\t1\nb\t2\nk\t1\nm\t2\nPRIMARY\t1\nu\t1\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT CONSTRAINT_NAME, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION FROM information_schema.KEY_COLUMN_USAGE \
             WHERE TABLE_SCHEMA='d' ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION"
        ),
        "CONSTRAINT_NAME\tTABLE_NAME\tCOLUMN_NAME\tORDINAL_POSITION\nPRIMARY\tt\tid\t1\nu\tt\tb\t1\nb\tt3\tb\t1\nb\tt3\ta\t2\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS \
             WHERE TABLE_SCHEMA='d' ORDER BY TABLE_NAME, CONSTRAINT_NAME"
        ),
        "CONSTRAINT_NAME\tTABLE_NAME\tCONSTRAINT_TYPE\nj\tt\tCHECK\nPRIMARY\tt\tPRIMARY KEY\nu\tt\tUNIQUE\nb\tt3\tUNIQUE\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA \
             WHERE SCHEMA_NAME IN ('d','information_schema') ORDER BY SCHEMA_NAME"
        ),
        "SCHEMA_NAME\tDEFAULT_CHARACTER_SET_NAME\tDEFAULT_COLLATION_NAME\nd\tutf8mb4\tutf8mb4_general_ci\ninformation_schema\tutf8mb3\tutf8mb3_general_ci\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA='d'"
        ),
        "COUNT(*)\n0\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT CHARACTER_SET_NAME, DEFAULT_COLLATE_NAME, DESCRIPTION, MAXLEN FROM information_schema.CHARACTER_SETS \
             WHERE CHARACTER_SET_NAME='utf8mb4'"
        ),
        "CHARACTER_SET_NAME\tDEFAULT_COLLATE_NAME\tDESCRIPTION\tMAXLEN\nutf8mb4\tutf8mb4_general_ci\tUTF-8 Unicode\t4\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT TABLE_NAME, PARTITION_NAME, TABLE_ROWS FROM information_schema.PARTITIONS \
             WHERE TABLE_SCHEMA='d' ORDER BY TABLE_NAME"
        ),
        "TABLE_NAME\tPARTITION_NAME\tTABLE_ROWS\nt\tNULL\t2\nt3\tNULL\t0\n"
    );
    // Lower-case names, an alias, a join with an engine table.
    assert_eq!(
        tsv(&mut s, "SELECT x.table_name FROM INFORMATION_SCHEMA.tables x WHERE x.table_schema = 'd' AND x.table_name LIKE 't_'"),
        "table_name\nt3\n"
    );
    assert_eq!(err(&mut s, "SELECT * FROM information_schema.nope"), 1109);
    assert_eq!(err(&mut s, "DELETE FROM information_schema.TABLES"), 1044);
}

#[test]
fn information_schema_column_sets_are_mariadbs() {
    let (_d, db) = setup();
    let mut s = session(&db);
    let names = |s: &mut Session, v: &str| {
        result(s, &format!("SELECT * FROM information_schema.{v} LIMIT 0")).0.join(",")
    };
    assert_eq!(
        names(&mut s, "TABLES"),
        "TABLE_CATALOG,TABLE_SCHEMA,TABLE_NAME,TABLE_TYPE,ENGINE,VERSION,ROW_FORMAT,TABLE_ROWS,AVG_ROW_LENGTH,DATA_LENGTH,MAX_DATA_LENGTH,INDEX_LENGTH,DATA_FREE,AUTO_INCREMENT,CREATE_TIME,UPDATE_TIME,CHECK_TIME,TABLE_COLLATION,CHECKSUM,CREATE_OPTIONS,TABLE_COMMENT,MAX_INDEX_LENGTH,TEMPORARY"
    );
    assert_eq!(
        names(&mut s, "COLUMNS"),
        "TABLE_CATALOG,TABLE_SCHEMA,TABLE_NAME,COLUMN_NAME,ORDINAL_POSITION,COLUMN_DEFAULT,IS_NULLABLE,DATA_TYPE,CHARACTER_MAXIMUM_LENGTH,CHARACTER_OCTET_LENGTH,NUMERIC_PRECISION,NUMERIC_SCALE,DATETIME_PRECISION,CHARACTER_SET_NAME,COLLATION_NAME,COLUMN_TYPE,COLUMN_KEY,EXTRA,PRIVILEGES,COLUMN_COMMENT,IS_GENERATED,GENERATION_EXPRESSION"
    );
    assert_eq!(
        names(&mut s, "STATISTICS"),
        "TABLE_CATALOG,TABLE_SCHEMA,TABLE_NAME,NON_UNIQUE,INDEX_SCHEMA,INDEX_NAME,SEQ_IN_INDEX,COLUMN_NAME,COLLATION,CARDINALITY,SUB_PART,PACKED,NULLABLE,INDEX_TYPE,COMMENT,INDEX_COMMENT,IGNORED"
    );
    assert_eq!(
        names(&mut s, "PROCESSLIST"),
        "ID,USER,HOST,DB,COMMAND,TIME,STATE,INFO,TIME_MS,STAGE,MAX_STAGE,PROGRESS,MEMORY_USED,MAX_MEMORY_USED,EXAMINED_ROWS,QUERY_ID,INFO_BINARY,TID"
    );
    // Full rows of the numeric columns of COLUMNS, as MariaDB gives them.
    assert_eq!(
        tsv(
            &mut s,
            "SELECT COLUMN_NAME, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, \
             DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS \
             WHERE TABLE_NAME = 't' AND COLUMN_NAME IN ('id','name','b','price','f','dd','bits','tx','e','s','tm','ts','big','tiny')"
        ),
        "COLUMN_NAME\tCHARACTER_MAXIMUM_LENGTH\tCHARACTER_OCTET_LENGTH\tNUMERIC_PRECISION\tNUMERIC_SCALE\tDATETIME_PRECISION\tCHARACTER_SET_NAME\tCOLLATION_NAME
id\tNULL\tNULL\t10\t0\tNULL\tNULL\tNULL
name\t20\t80\tNULL\tNULL\tNULL\tutf8mb4\tutf8mb4_general_ci
b\t30\t30\tNULL\tNULL\tNULL\tlatin1\tlatin1_swedish_ci
price\tNULL\tNULL\t10\t2\tNULL\tNULL\tNULL
f\tNULL\tNULL\t12\tNULL\tNULL\tNULL\tNULL
dd\tNULL\tNULL\t22\tNULL\tNULL\tNULL\tNULL
bits\tNULL\tNULL\t3\tNULL\tNULL\tNULL\tNULL
tx\t65535\t65535\tNULL\tNULL\tNULL\tutf8mb4\tutf8mb4_general_ci
e\t1\t4\tNULL\tNULL\tNULL\tutf8mb4\tutf8mb4_general_ci
s\t3\t12\tNULL\tNULL\tNULL\tutf8mb4\tutf8mb4_general_ci
tm\tNULL\tNULL\tNULL\tNULL\t3\tNULL\tNULL
ts\tNULL\tNULL\tNULL\tNULL\t0\tNULL\tNULL
big\tNULL\tNULL\t20\t0\tNULL\tNULL\tNULL
tiny\tNULL\tNULL\t3\t0\tNULL\tNULL\tNULL
"
    );
}

#[test]
fn use_information_schema() {
    let (_d, db) = setup();
    let mut s = session(&db);
    ok(&mut s, "USE INFORMATION_SCHEMA");
    assert_eq!(tsv(&mut s, "SELECT DATABASE()"), "DATABASE()\ninformation_schema\n");
    assert_eq!(tsv(&mut s, "SELECT COUNT(*) FROM tables WHERE table_schema = 'd'"), "COUNT(*)\n2\n");
    assert_eq!(
        tsv(&mut s, "SHOW FULL TABLES FROM information_schema LIKE 'COLUMNS'"),
        "Tables_in_information_schema (COLUMNS)\tTable_type\nCOLUMNS\tSYSTEM VIEW\n"
    );
    assert_eq!(err(&mut s, "SELECT * FROM nope"), 1109);
}

#[test]
fn listings_with_like_and_where() {
    let (_d, db) = setup();
    let mut s = session(&db);
    assert_eq!(tsv(&mut s, "SHOW FULL TABLES"), "Tables_in_d\tTable_type\nt\tBASE TABLE\nt3\tBASE TABLE\n");
    assert_eq!(tsv(&mut s, "SHOW TABLES LIKE 't_'"), "Tables_in_d (t_)\nt3\n");
    assert_eq!(tsv(&mut s, "SHOW TABLES WHERE Tables_in_d = 't3'"), "Tables_in_d\nt3\n");
    assert_eq!(tsv(&mut s, "SHOW DATABASES"), "Database\nd\ninformation_schema\n");
    // Database and table names are case-sensitive to LIKE; column names are not.
    assert_eq!(tsv(&mut s, "SHOW DATABASES LIKE 'd'"), "Database (d)\nd\n");
    assert_eq!(tsv(&mut s, "SHOW DATABASES LIKE 'D'"), "Database (D)\n");
    assert_eq!(tsv(&mut s, "SHOW TABLES LIKE 'T3'"), "Tables_in_d (T3)\n");
    assert_eq!(result(&mut s, "SHOW COLUMNS FROM t LIKE 'ID'").1.len(), 1);
    assert_eq!(err(&mut s, "SHOW TABLES FROM nodb"), 1049);
    assert_eq!(
        tsv(&mut s, "SHOW COLLATION LIKE 'latin1%'"),
        "Collation\tCharset\tId\tDefault\tCompiled\tSortlen\nlatin1_swedish_ci\tlatin1\t8\tYes\tYes\t1\nlatin1_bin\tlatin1\t47\t\tYes\t1\n"
    );
    assert_eq!(
        tsv(&mut s, "SHOW COLLATION WHERE Collation = 'utf8mb4_unicode_ci'"),
        "Collation\tCharset\tId\tDefault\tCompiled\tSortlen\nutf8mb4_unicode_ci\tutf8mb4\t224\t\tYes\t8\n"
    );
    assert_eq!(
        tsv(&mut s, "SHOW CHARACTER SET LIKE 'latin1'"),
        "Charset\tDescription\tDefault collation\tMaxlen\nlatin1\tcp1252 West European\tlatin1_swedish_ci\t1\n"
    );
    assert_eq!(tsv(&mut s, "SHOW VARIABLES LIKE 'autocommit'"), "Variable_name\tValue\nautocommit\tON\n");
    assert_eq!(
        tsv(&mut s, "SHOW SESSION VARIABLES WHERE Variable_name = 'sql_quote_show_create'"),
        "Variable_name\tValue\nsql_quote_show_create\tON\n"
    );
    ok(&mut s, "SET autocommit = 0");
    assert_eq!(tsv(&mut s, "SHOW VARIABLES LIKE 'AUTOCOMMIT'"), "Variable_name\tValue\nautocommit\tOFF\n");
    assert_eq!(
        tsv(&mut s, "SHOW ENGINES"),
        "Engine\tSupport\tComment\tTransactions\tXA\tSavepoints\nFractalDB\tDEFAULT\tFractal-tree (B-epsilon) storage: transactions, MVCC, compression\tYES\tYES\tYES\nSEQUENCE\tYES\tGenerated tables filled with sequential values\tYES\tNO\tYES\n"
    );
    let (cols, rows) = result(&mut s, "SHOW STATUS LIKE 'Threads_connected'");
    assert_eq!(cols, ["Variable_name", "Value"]);
    assert_eq!(rows, [["Threads_connected", "1"]]);
    assert_eq!(result(&mut s, "SHOW GLOBAL STATUS LIKE 'Uptime'").1.len(), 1);
}

#[test]
fn table_status() {
    let (_d, db) = setup();
    let mut s = session(&db);
    let (cols, rows) = result(&mut s, "SHOW TABLE STATUS LIKE 't3'");
    assert_eq!(
        cols.join(","),
        "Name,Engine,Version,Row_format,Rows,Avg_row_length,Data_length,Max_data_length,Index_length,Data_free,Auto_increment,Create_time,Update_time,Check_time,Collation,Checksum,Create_options,Comment,Max_index_length,Temporary"
    );
    let r = &rows[0];
    assert_eq!(
        (r[0].as_str(), r[1].as_str(), r[2].as_str(), r[3].as_str(), r[4].as_str()),
        ("t3", "FractalDB", "10", "tokudb_zstd", "0")
    );
    assert_eq!(&r[10..], ["NULL", &r[11], "NULL", "NULL", "utf8mb4_general_ci", "NULL", "", "", "0", "N"]);
    assert_eq!(r[11].len(), "2020-01-02 03:04:05".len());
    let rows = result(&mut s, "SHOW TABLE STATUS FROM d WHERE Name = 't'").1;
    assert_eq!((rows[0][4].as_str(), rows[0][10].as_str()), ("2", "3"));
}

#[test]
fn show_warnings_after_a_non_strict_insert() {
    let (_d, db) = setup();
    let mut s = session(&db);
    ok(&mut s, "SET sql_mode=''");
    ok(&mut s, "INSERT INTO t (c, price, tiny) VALUES ('z', -1, 300)");
    let expected = "Level\tCode\tMessage\nWarning\t1264\tOut of range value for column 'price' at row 1\nWarning\t1264\tOut of range value for column 'tiny' at row 1\n";
    assert_eq!(tsv(&mut s, "SHOW WARNINGS"), expected);
    assert_eq!(tsv(&mut s, "SHOW COUNT(*) WARNINGS"), "@@session.warning_count\n2\n");
    assert_eq!(
        tsv(&mut s, "SHOW WARNINGS LIMIT 1,1"),
        "Level\tCode\tMessage\nWarning\t1264\tOut of range value for column 'tiny' at row 1\n"
    );
    assert_eq!(tsv(&mut s, "SHOW ERRORS"), "Level\tCode\tMessage\n");
    assert_eq!(tsv(&mut s, "SHOW COUNT(*) ERRORS"), "@@session.error_count\n0\n");
    // Another statement clears them.
    ok(&mut s, "SELECT 1");
    assert_eq!(tsv(&mut s, "SHOW WARNINGS"), "Level\tCode\tMessage\n");
}

#[test]
fn server_listings() {
    let (_d, db) = setup();
    let mut s = session(&db);
    let (cols, rows) = result(&mut s, "SHOW PROCESSLIST");
    assert_eq!(cols.join(","), "Id,User,Host,db,Command,Time,State,Info,Progress");
    assert_eq!(
        &rows[0][1..],
        ["root", "localhost", "d", "Query", "0", "starting", "SHOW PROCESSLIST", "0.000"]
    );
    assert_eq!(
        tsv(&mut s, "SHOW GRANTS"),
        "Grants for root@localhost\nGRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION\n"
    );
    assert_eq!(err(&mut s, "SHOW GRANTS FOR foo"), 1141);
    assert_eq!(tsv(&mut s, "SHOW MASTER STATUS"), "File\tPosition\tBinlog_Do_DB\tBinlog_Ignore_DB\n");
    assert_eq!(err(&mut s, "SHOW BINARY LOGS"), 1381);
    assert_eq!(
        tsv(&mut s, "SHOW TRIGGERS"),
        "Trigger\tEvent\tTable\tStatement\tTiming\tCreated\tsql_mode\tDefiner\tcharacter_set_client\tcollation_connection\tDatabase Collation\n"
    );
    assert_eq!(
        tsv(&mut s, "SHOW PROCEDURE STATUS WHERE Db = 'd'"),
        "Db\tName\tType\tDefiner\tModified\tCreated\tSecurity_type\tComment\tcharacter_set_client\tcollation_connection\tDatabase Collation\n"
    );
    assert_eq!(
        tsv(&mut s, "SHOW EVENTS"),
        "Db\tName\tDefiner\tTime zone\tType\tExecute at\tInterval value\tInterval field\tStarts\tEnds\tStatus\tOriginator\tcharacter_set_client\tcollation_connection\tDatabase Collation\n"
    );
    assert_eq!(
        tsv(&mut s, "SHOW OPEN TABLES FROM d"),
        "Database\tTable\tIn_use\tName_locked\nd\tt\t0\t0\nd\tt3\t0\t0\n"
    );
    assert_eq!(tsv(&mut s, "SHOW PROFILES"), "Query_ID\tDuration\tQuery\n");
    assert_eq!(result(&mut s, "SHOW PRIVILEGES").1[0], ["Alter", "Tables", "To alter the table"]);
    assert_eq!(result(&mut s, "SHOW ENGINE FractalDB STATUS").0, ["Type", "Name", "Status"]);
    assert_eq!(err(&mut s, "SHOW ENGINE foo STATUS"), 1286);
    assert_eq!(err(&mut s, "SHOW CREATE VIEW t"), 1347);
    assert_eq!(err(&mut s, "SHOW CREATE VIEW nope"), 1146);
    assert_eq!(err(&mut s, "SHOW CREATE TRIGGER nope"), 1360);
    assert_eq!(err(&mut s, "SHOW CREATE PROCEDURE nope"), 1305);
    assert_eq!(err(&mut s, "SHOW CREATE EVENT nope"), 1539);
}

#[test]
fn information_schema_views_of_the_session_and_joins() {
    let (_d, db) = setup();
    let mut s = session(&db);
    assert_eq!(
        tsv(&mut s, "SHOW COLUMNS FROM information_schema.SCHEMATA"),
        "Field\tType\tNull\tKey\tDefault\tExtra
CATALOG_NAME\tvarchar(512)\tNO\t\tNULL\t
SCHEMA_NAME\tvarchar(64)\tNO\t\tNULL\t
DEFAULT_CHARACTER_SET_NAME\tvarchar(32)\tNO\t\tNULL\t
DEFAULT_COLLATION_NAME\tvarchar(64)\tNO\t\tNULL\t
SQL_PATH\tvarchar(512)\tYES\t\tNULL\t
SCHEMA_COMMENT\tvarchar(1024)\tNO\t\tNULL\t
"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME='AUTOCOMMIT'"
        ),
        "VARIABLE_NAME\tVARIABLE_VALUE\nAUTOCOMMIT\tON\n"
    );
    assert_eq!(
        tsv(&mut s, "SELECT USER, DB, COMMAND, INFO FROM information_schema.PROCESSLIST"),
        "USER\tDB\tCOMMAND\tINFO\nroot\td\tQuery\tSELECT USER, DB, COMMAND, INFO FROM information_schema.PROCESSLIST\n"
    );
    assert_eq!(
        tsv(
            &mut s,
            "SELECT t.TABLE_NAME, COUNT(*) FROM information_schema.TABLES t JOIN information_schema.COLUMNS c \
             ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME WHERE t.TABLE_SCHEMA='d' \
             GROUP BY t.TABLE_NAME ORDER BY t.TABLE_NAME"
        ),
        "TABLE_NAME\tCOUNT(*)\nt\t23\nt3\t4\n"
    );
}
