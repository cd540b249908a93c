use fractaldb_sql::{Database, DbOptions, Outcome};

fn rows(o: Outcome) -> Vec<Vec<String>> {
    match o {
        Outcome::Rows(rs) => rs.rows.iter().map(|r| r.iter().map(|v| v.render()).collect()).collect(),
        other => panic!("expected rows, got {other:?}"),
    }
}

#[test]
fn create_insert_select_update_delete() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut s = db.session();
    s.execute(b"CREATE DATABASE d").unwrap();
    s.execute(b"USE d").unwrap();
    s.execute(b"CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), n INT)").unwrap();
    s.execute(b"INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)").unwrap();
    assert_eq!(rows(s.execute(b"SELECT name FROM t WHERE id = 2").unwrap()), vec![vec!["b"]]);
    assert_eq!(rows(s.execute(b"SELECT COUNT(*), SUM(n) FROM t").unwrap()), vec![vec!["3", "60"]]);
    let e = s.execute(b"INSERT INTO t VALUES (1, 'x', 0)").unwrap_err();
    assert_eq!(e.code, 1062, "{e}");
    s.execute(b"UPDATE t SET n = n + 1 WHERE id >= 2").unwrap();
    assert_eq!(
        rows(s.execute(b"SELECT id, n FROM t ORDER BY id DESC").unwrap()),
        vec![vec!["3", "31"], vec!["2", "21"], vec!["1", "10"]]
    );
    s.execute(b"DELETE FROM t WHERE id = 1").unwrap();
    assert_eq!(rows(s.execute(b"SELECT COUNT(*) FROM t").unwrap()), vec![vec!["2"]]);
    drop(s);
    db.close().unwrap();
    let db = Database::open(dir.path(), DbOptions { direct_io: false, ..DbOptions::default() }).unwrap();
    let mut s = db.session();
    assert_eq!(rows(s.execute(b"SELECT id FROM d.t").unwrap()), vec![vec!["2"], vec!["3"]]);
}
