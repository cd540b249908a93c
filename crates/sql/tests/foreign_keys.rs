//! FOREIGN KEY constraints as InnoDB enforces them: definitions, SHOW
//! CREATE TABLE and INFORMATION_SCHEMA, 1452 / 1451, CASCADE and SET NULL,
//! `foreign_key_checks`, compared with MariaDB 10.11; and the same without
//! MariaDB, with exact results.

mod support;
use support::embedded::{err, ok, rows};

use fractaldb_sql::{Database, DbOptions};
use support::script::{compare, compare_with};

#[test]
fn foreign_keys_like_mariadb() {
    compare(
        "foreign_keys_like_mariadb",
        &[
            "CREATE TABLE p (id INT PRIMARY KEY, k INT, UNIQUE KEY uk (k))",
            "CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p(id))",
            "SHOW CREATE TABLE c",
            "CREATE TABLE c2 (id INT PRIMARY KEY, pid INT, pk2 INT, CONSTRAINT fk_x FOREIGN KEY (pid) REFERENCES p(id) \
             ON DELETE CASCADE ON UPDATE SET NULL, FOREIGN KEY (pk2) REFERENCES p(k) ON DELETE SET NULL)",
            "SHOW CREATE TABLE c2",
            "CREATE TABLE c3 (id INT PRIMARY KEY, pid INT, KEY idx (pid), CONSTRAINT FOREIGN KEY fkname (pid) REFERENCES p(id))",
            "SHOW CREATE TABLE c3",
            "CREATE TABLE c4 (id INT, pid INT REFERENCES p(id))",
            "SHOW CREATE TABLE c4",
            "CREATE TABLE c5 (id INT, pid INT, FOREIGN KEY (pid) REFERENCES nope(id))",
            "CREATE TABLE c6 (id INT, pid INT, FOREIGN KEY (pid) REFERENCES p(nope))",
            "CREATE TABLE c7 (id INT, pid VARCHAR(10), FOREIGN KEY (pid) REFERENCES p(id))",
            "CREATE TABLE c8 (id INT, pid BIGINT, FOREIGN KEY (pid) REFERENCES p(id))",
            "CREATE TABLE c9 (id INT, pid INT NOT NULL, FOREIGN KEY (pid) REFERENCES p(id) ON DELETE SET NULL)",
            "CREATE TABLE c10 (id INT, pid INT, FOREIGN KEY (pid) REFERENCES c10(id))",
            "INSERT INTO p VALUES (1, 10), (2, 20), (3, 30)",
            "INSERT INTO c VALUES (1, 1)",
            "INSERT INTO c VALUES (2, 4)",
            "INSERT INTO c VALUES (3, NULL)",
            "INSERT INTO c VALUES (4, 2), (5, 9)",
            "SELECT * FROM c ORDER BY id",
            "UPDATE c SET pid = 5 WHERE id = 1",
            "UPDATE c SET pid = 3 WHERE id = 1",
            "DELETE FROM p WHERE id = 3",
            "UPDATE p SET id = 7 WHERE id = 3",
            "UPDATE p SET k = 31 WHERE id = 3",
            "INSERT INTO c2 VALUES (1, 2, 20), (2, 2, NULL), (3, 1, 10)",
            "DELETE FROM p WHERE id = 2",
            "SELECT * FROM c2 ORDER BY id",
            "UPDATE p SET id = 8 WHERE id = 1",
            "SELECT * FROM c2 ORDER BY id",
            "DELETE FROM c WHERE pid = 1",
            "UPDATE p SET id = 8 WHERE id = 1",
            "UPDATE p SET k = 11 WHERE id = 1",
            "SELECT * FROM c2 ORDER BY id",
            "DROP TABLE p",
            "SELECT * FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY TABLE_NAME, CONSTRAINT_NAME",
            "SELECT * FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, CONSTRAINT_NAME",
            "SELECT CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, CONSTRAINT_NAME",
            "ALTER TABLE c DROP FOREIGN KEY nope",
            "ALTER TABLE c DROP FOREIGN KEY c_ibfk_1",
            "SHOW CREATE TABLE c",
            "ALTER TABLE c ADD CONSTRAINT fk9 FOREIGN KEY (pid) REFERENCES p(id) ON DELETE CASCADE",
            "ALTER TABLE c2 DROP COLUMN pid",
            "ALTER TABLE p DROP COLUMN k",
            "ALTER TABLE c2 RENAME COLUMN pid TO parent",
            "SHOW CREATE TABLE c2",
            "ALTER TABLE c2 MODIFY parent BIGINT",
            "ALTER TABLE p MODIFY k BIGINT",
            "ALTER TABLE c2 MODIFY parent INT NOT NULL COMMENT 'x'",
            "ALTER TABLE p CHANGE id pid INT",
            "SHOW CREATE TABLE c2",
            "SHOW CREATE TABLE c3",
            "INSERT INTO c3 VALUES (50, 1)",
            "INSERT INTO c3 VALUES (51, 77)",
            "ALTER TABLE p RENAME COLUMN pid TO id",
            "SET foreign_key_checks = 0",
            "INSERT INTO c3 VALUES (100, 100)",
            "CREATE TABLE c11 (id INT, pid INT, FOREIGN KEY (pid) REFERENCES later(id))",
            "SHOW CREATE TABLE c11",
            "DELETE FROM p WHERE id = 1",
            "SET foreign_key_checks = 1",
            "SELECT COUNT(*) FROM c",
            "DROP TABLE c, c2, c3, c4, p",
            "SHOW TABLES",
        ],
        true,
    );
}

#[test]
fn cascades_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut s = db.session();
    ok(&mut s, "CREATE DATABASE d");
    ok(&mut s, "USE d");
    ok(&mut s, "CREATE TABLE a (id INT PRIMARY KEY)");
    ok(&mut s, "CREATE TABLE b (id INT PRIMARY KEY, a_id INT, FOREIGN KEY (a_id) REFERENCES a(id) ON DELETE CASCADE ON UPDATE CASCADE)");
    ok(&mut s, "CREATE TABLE c (id INT PRIMARY KEY, b_id INT, FOREIGN KEY (b_id) REFERENCES b(id) ON DELETE CASCADE)");
    ok(&mut s, "CREATE TABLE n (id INT PRIMARY KEY, a_id INT, FOREIGN KEY (a_id) REFERENCES a(id) ON DELETE SET NULL)");
    ok(&mut s, "INSERT INTO a VALUES (1), (2)");
    ok(&mut s, "INSERT INTO b VALUES (10, 1), (11, 1), (12, 2)");
    ok(&mut s, "INSERT INTO c VALUES (100, 10), (101, 11), (102, 12)");
    ok(&mut s, "INSERT INTO n VALUES (1, 1), (2, NULL)");
    assert_eq!(err(&mut s, "INSERT INTO c VALUES (103, 13)"), 1452);
    // ON UPDATE CASCADE carries the new key to b; c keeps pointing at b's ids.
    ok(&mut s, "UPDATE a SET id = 5 WHERE id = 2");
    assert_eq!(rows(&mut s, "SELECT id, a_id FROM b ORDER BY id"), [["10", "1"], ["11", "1"], ["12", "5"]]);
    // n's SET NULL has no ON UPDATE rule: RESTRICT.
    assert_eq!(err(&mut s, "UPDATE a SET id = 6 WHERE id = 1"), 1451);
    // A cascade over two levels, and SET NULL beside it.
    ok(&mut s, "DELETE FROM a WHERE id = 1");
    assert_eq!(rows(&mut s, "SELECT id FROM b ORDER BY id"), [["12"]]);
    assert_eq!(rows(&mut s, "SELECT id FROM c ORDER BY id"), [["102"]]);
    assert_eq!(rows(&mut s, "SELECT id, a_id FROM n ORDER BY id"), [["1", "NULL"], ["2", "NULL"]]);
    // Row counts follow the cascaded deletes.
    for (t, n) in [("a", "1"), ("b", "1"), ("c", "1"), ("n", "2")] {
        assert_eq!(rows(&mut s, &format!("SELECT COUNT(*) FROM {t}")), [[n]], "{t}");
    }
    // A failed cascade undoes the whole statement.
    ok(&mut s, "CREATE TABLE r (id INT PRIMARY KEY, c_id INT, FOREIGN KEY (c_id) REFERENCES c(id))");
    ok(&mut s, "INSERT INTO r VALUES (1, 102)");
    assert_eq!(err(&mut s, "DELETE FROM a WHERE id = 5"), 1451);
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM b"), [["1"]]);
    assert_eq!(rows(&mut s, "SELECT COUNT(*) FROM c"), [["1"]]);
    // The definitions survive a restart.
    drop(s);
    db.close().unwrap();
    let db = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut s = db.session();
    ok(&mut s, "USE d");
    assert_eq!(err(&mut s, "INSERT INTO b VALUES (20, 42)"), 1452);
    assert_eq!(err(&mut s, "DROP TABLE a"), 1451);
    assert_eq!(err(&mut s, "TRUNCATE TABLE a"), 1701);
    // ALTER TABLE ADD FOREIGN KEY checks the rows there (MariaDB names its
    // temporary copy `#sql-alter-...` in the message; fractaldb the table).
    ok(&mut s, "CREATE TABLE e (id INT PRIMARY KEY, a_id INT)");
    ok(&mut s, "INSERT INTO e VALUES (1, 5), (2, 77)");
    let e = s.execute(b"ALTER TABLE e ADD FOREIGN KEY (a_id) REFERENCES a(id)").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            1452,
            "Cannot add or update a child row: a foreign key constraint fails (`d`.`e`, CONSTRAINT `e_ibfk_1` \
             FOREIGN KEY (`a_id`) REFERENCES `a` (`id`))"
        )
    );
    ok(&mut s, "DELETE FROM e WHERE id = 2");
    ok(&mut s, "ALTER TABLE e ADD FOREIGN KEY (a_id) REFERENCES a(id)");
    assert_eq!(err(&mut s, "INSERT INTO e VALUES (3, 77)"), 1452);
    assert_eq!(err(&mut s, "ALTER TABLE e DROP INDEX a_id"), 1553);
    // Another database's table referencing this one keeps it from DROP
    // DATABASE; CREATE TABLE ... SELECT rows are checked too.
    ok(&mut s, "CREATE DATABASE d2");
    ok(&mut s, "CREATE TABLE d2.k (id INT, a_id INT, FOREIGN KEY (a_id) REFERENCES d.a(id))");
    let e = s
        .execute(b"CREATE TABLE d2.k2 (a_id INT, FOREIGN KEY (a_id) REFERENCES d.a(id)) SELECT 77 AS a_id")
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            1452,
            "Cannot add or update a child row: a foreign key constraint fails (`d2`.`k2`, CONSTRAINT `k2_ibfk_1` \
             FOREIGN KEY (`a_id`) REFERENCES `d`.`a` (`id`))"
        )
    );
    assert_eq!(err(&mut s, "DROP DATABASE d"), 1451);
    ok(&mut s, "DROP DATABASE d2");
    // A renamed parent keeps its children.
    ok(&mut s, "RENAME TABLE a TO a2");
    assert!(rows(&mut s, "SHOW CREATE TABLE b")[0][1].contains("REFERENCES `a2` (`id`)"));
    assert_eq!(err(&mut s, "INSERT INTO b VALUES (20, 42)"), 1452);
    ok(&mut s, "INSERT INTO b VALUES (20, 5)");
    // So does one renamed by ALTER TABLE with other changes (one transaction).
    ok(&mut s, "ALTER TABLE a2 COMMENT 'parent', RENAME TO a3");
    assert!(rows(&mut s, "SHOW CREATE TABLE b")[0][1].contains("REFERENCES `a3` (`id`)"));
    assert_eq!(err(&mut s, "SELECT * FROM a2"), 1146);
    assert_eq!(err(&mut s, "DELETE FROM a3 WHERE id = 5"), 1451);
    ok(&mut s, "SET foreign_key_checks = OFF");
    ok(&mut s, "INSERT INTO b VALUES (21, 42)");
}

/// A `mariadb-dump` of tables with foreign keys (the child dumped before
/// its parent, as dumps order tables by name, under FOREIGN_KEY_CHECKS=0)
/// loads; SHOW CREATE TABLE reads back as MariaDB's and the constraints
/// are enforced afterwards.
#[test]
fn a_dump_with_foreign_keys_loads_and_enforces_them() {
    use support::mariadb::{self, run};
    if !mariadb::available("a_dump_with_foreign_keys_loads_and_enforces_them") {
        return;
    }
    let server = mariadb::MariaDb::shared().expect("a shared MariaDB");
    let (mut c, db) = server.fresh_db("fkdump");
    for stmt in [
        "CREATE TABLE z_parent (id INT PRIMARY KEY, code VARCHAR(10), UNIQUE KEY (code))",
        "CREATE TABLE a_child (id INT PRIMARY KEY, pid INT, pcode VARCHAR(10), \
         CONSTRAINT fk_p FOREIGN KEY (pid) REFERENCES z_parent (id) ON DELETE CASCADE, \
         FOREIGN KEY (pcode) REFERENCES z_parent (code) ON UPDATE CASCADE ON DELETE SET NULL)",
        "INSERT INTO z_parent VALUES (1, 'one'), (2, 'two')",
        "INSERT INTO a_child VALUES (10, 1, 'one'), (11, 2, 'two'), (12, NULL, NULL)",
    ] {
        run(&mut c, stmt).unwrap_or_else(|e| panic!("{stmt}: {e:?}"));
    }
    let out = std::process::Command::new("mariadb-dump")
        .args(["-uroot", "-h127.0.0.1", &format!("-P{}", server.port()), "--databases", &db])
        .output()
        .expect("mariadb-dump runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = tempfile::tempdir().unwrap();
    let fdb = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut s = fdb.session();
    s.execute_script(&out.stdout).unwrap_or_else(|e| panic!("loading the dump: {e}"));
    for t in ["a_child", "z_parent"] {
        let q = format!("SHOW CREATE TABLE `{db}`.{t}");
        let m = run(&mut c, &q).unwrap().rows[0][1].clone().unwrap();
        let f = support::run_fractal(&mut s, &q).unwrap().rows[0][1].clone().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&f),
            String::from_utf8_lossy(&m).replace("ENGINE=InnoDB", "ENGINE=FractalDB"),
            "{t}"
        );
    }
    ok(&mut s, &format!("USE `{db}`"));
    assert_eq!(err(&mut s, "INSERT INTO a_child VALUES (13, 3, NULL)"), 1452);
    ok(&mut s, "UPDATE z_parent SET code = 'uno' WHERE id = 1");
    ok(&mut s, "DELETE FROM z_parent WHERE id = 2");
    assert_eq!(
        rows(&mut s, "SELECT id, pid, pcode FROM a_child ORDER BY id"),
        [["10", "1", "uno"], ["12", "NULL", "NULL"]]
    );
}

/// A child row written in an open transaction locks its parent row: a
/// concurrent DELETE of the parent waits (and times out), and after the
/// child commits the DELETE is refused.
#[test]
fn a_child_row_locks_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut a = db.session();
    let mut b = db.session();
    ok(&mut a, "CREATE DATABASE d");
    ok(&mut a, "USE d");
    ok(&mut b, "USE d");
    ok(&mut a, "CREATE TABLE p (id INT PRIMARY KEY)");
    ok(&mut a, "CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p(id))");
    ok(&mut a, "INSERT INTO p VALUES (1), (2)");
    ok(&mut b, "SET innodb_lock_wait_timeout = 1");
    ok(&mut a, "BEGIN");
    ok(&mut a, "INSERT INTO c VALUES (1, 1)");
    assert_eq!(err(&mut b, "DELETE FROM p WHERE id = 1"), 1205);
    ok(&mut b, "DELETE FROM p WHERE id = 2");
    ok(&mut a, "COMMIT");
    assert_eq!(err(&mut b, "DELETE FROM p WHERE id = 1"), 1451);
    assert_eq!(rows(&mut b, "SELECT id FROM p"), [["1"]]);
}

/// Random DML over a parent and children with every action, compared with
/// MariaDB after each statement (`FRACTALDB_SEED`, default 3 seeds).
#[test]
fn random_dml_under_foreign_keys_like_mariadb() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    let seeds: Vec<u64> = match std::env::var("FRACTALDB_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(s) => vec![s],
        None => vec![1, 2, 3],
    };
    for seed in seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut script: Vec<String> = vec![
            "CREATE TABLE p (id INT PRIMARY KEY, k INT, UNIQUE KEY (k))".into(),
            "CREATE TABLE cr (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p(id))".into(),
            "CREATE TABLE cc (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p(id) ON DELETE CASCADE ON UPDATE CASCADE)".into(),
            "CREATE TABLE cn (id INT PRIMARY KEY, pk INT, FOREIGN KEY (pk) REFERENCES p(k) ON DELETE SET NULL ON UPDATE SET NULL)".into(),
            "CREATE TABLE gc (id INT PRIMARY KEY, cid INT, FOREIGN KEY (cid) REFERENCES cc(id) ON DELETE CASCADE)".into(),
            "INSERT INTO p VALUES (1,10),(2,20),(3,30),(4,40)".into(),
        ];
        let tables = ["cr", "cc", "cn"];
        for _ in 0..40 {
            let n = rng.gen_range(1..7);
            let m = rng.gen_range(1..7);
            let t = tables[rng.gen_range(0..3)];
            let col = if t == "cn" { "pk" } else { "pid" };
            let v = if t == "cn" { n * 10 } else { n };
            script.push(match rng.gen_range(0..11) {
                9 => format!("DELETE FROM p WHERE id > {n}"),
                10 => format!("UPDATE p SET k = k + {m} WHERE id >= {n}"),
                0 | 1 => format!("INSERT INTO {t} VALUES ({}, {v})", rng.gen_range(1..20)),
                2 => format!("INSERT INTO p VALUES ({n}, {})", m * 10),
                3 => format!("DELETE FROM p WHERE id = {n}"),
                4 => format!("UPDATE p SET id = {m} WHERE id = {n}"),
                5 => format!("UPDATE p SET k = {} WHERE id = {n}", m * 10),
                6 => format!("UPDATE {t} SET {col} = {v} WHERE id % 3 = {}", m % 3),
                7 => format!("INSERT INTO gc VALUES ({}, {})", rng.gen_range(1..20), rng.gen_range(1..20)),
                _ => format!("DELETE FROM {t} WHERE id = {}", rng.gen_range(1..20)),
            });
            for q in [
                "SELECT * FROM p",
                "SELECT * FROM cr",
                "SELECT * FROM cc",
                "SELECT * FROM cn",
                "SELECT * FROM gc",
            ] {
                script.push(q.into());
            }
        }
        for q in ["p", "cr", "cc", "cn", "gc"] {
            script.push(format!("SELECT COUNT(*) FROM {q}"));
        }
        let refs: Vec<&str> = script.iter().map(|s| s.as_str()).collect();
        compare_with(&format!("random_dml_under_foreign_keys_{seed}"), &refs, false, true);
    }
}
