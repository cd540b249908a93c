-- DEFAULT as a value (UPDATE's SET, ON DUPLICATE KEY UPDATE, VALUES) and
-- DEFAULT(col): the column's default converted to its type, 0 for
-- AUTO_INCREMENT, 1364 for a column without one (in any sql_mode).
CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, a INT NOT NULL, b INT DEFAULT 5, c VARCHAR(5) DEFAULT 'xy', e INT, ts TIMESTAMP(3) NULL DEFAULT '2020-01-01 00:00:00.5', f DECIMAL(5,2) DEFAULT 1.5);
INSERT INTO t (a, b, c, e, f) VALUES (1, 2, 'q', 7, 9.25);
UPDATE t SET b = DEFAULT, c = DEFAULT, e = DEFAULT, f = DEFAULT;
SELECT * FROM t;
UPDATE t SET b = DEFAULT(b) + 1, e = DEFAULT(f) * 2;
SELECT a, b, e FROM t;
UPDATE t SET b = DEFAULT;
UPDATE t SET a = DEFAULT;
SET sql_mode = '';
UPDATE t SET a = DEFAULT;
SET sql_mode = DEFAULT;
SELECT DEFAULT(id) AS i, DEFAULT(b) AS b, DEFAULT(c) AS c, DEFAULT(e) AS e, DEFAULT(ts) AS ts, DEFAULT(t.f) AS f FROM t;
SELECT DEFAULT(a) FROM t;
SELECT DEFAULT(zz) FROM t;
INSERT INTO t (a, b, c) VALUES (2, DEFAULT, DEFAULT(c)), (3, DEFAULT(b) * 2, 'w');
INSERT INTO t (a, b) VALUES (4, DEFAULT(zz));
INSERT INTO t (id, a, b) VALUES (1, 9, 9) ON DUPLICATE KEY UPDATE b = DEFAULT, c = DEFAULT(c);
SELECT id, a, b, c FROM t ORDER BY id;
UPDATE t AS x, t AS y SET x.b = DEFAULT WHERE x.id = y.id AND x.id = 2;
SELECT id, b FROM t ORDER BY id;
