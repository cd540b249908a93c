"""PyMySQL against fractaldb: connect, create, insert with parameters,
select, commit and rollback, error numbers. Run by tests/pymysql.rs with
the server's port as the argument; prints OK at the end."""
import sys

import pymysql

port = int(sys.argv[1])
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="")
cur = c.cursor()
cur.execute("CREATE DATABASE py")
cur.execute("USE py")
cur.execute(
    "CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40), "
    "b BLOB, d DATETIME, x DOUBLE, m DECIMAL(8,2))"
)
n = cur.execute(
    "INSERT INTO t (name, b, d, x, m) VALUES (%s, %s, %s, %s, %s)",
    ("o'neil \\ é", b"\x00\xff'", "2024-01-02 03:04:05", 1.25, "3.10"),
)
assert n == 1, n
assert cur.lastrowid == 1, cur.lastrowid
cur.executemany("INSERT INTO t (name) VALUES (%s)", [("a",), ("b",), (None,)])
c.commit()

cur.execute("SELECT id, name, b, d, x, m FROM t ORDER BY id")
rows = cur.fetchall()
assert len(rows) == 4, rows
r = rows[0]
assert r[1] == "o'neil \\ é", r
assert r[2] == b"\x00\xff'", r
assert str(r[3]) == "2024-01-02 03:04:05", r
assert r[4] == 1.25, r
assert str(r[5]) == "3.10", r
assert rows[3][1] is None
names = [d[0] for d in cur.description]
assert names == ["id", "name", "b", "d", "x", "m"], names

# Autocommit is off in PyMySQL: rollback undoes.
cur.execute("DELETE FROM t")
c.rollback()
cur.execute("SELECT COUNT(*) FROM t")
assert cur.fetchone()[0] == 4

# Errors carry MySQL's numbers.
try:
    cur.execute("SELECT * FROM nope")
    raise AssertionError("no error")
except pymysql.err.ProgrammingError as e:
    assert e.args[0] == 1146, e.args
try:
    cur.execute("INSERT INTO t (id) VALUES (1)")
    raise AssertionError("no error")
except pymysql.err.IntegrityError as e:
    assert e.args[0] == 1062, e.args
try:
    pymysql.connect(host="127.0.0.1", port=port, user="root", password="x")
    raise AssertionError("no error")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1045, e.args

# A dictionary cursor, and the server's version.
d = c.cursor(pymysql.cursors.DictCursor)
d.execute("SELECT id, name FROM t WHERE id = %s", (2,))
assert d.fetchone() == {"id": 2, "name": "a"}
assert c.get_server_info().startswith("10.11"), c.get_server_info()
c.ping()
c.close()
print("OK")
