-- Multi-table UPDATE and DELETE: the join finds the rows, each target row
-- changes once, "Rows matched" counts distinct target rows.
CREATE TABLE t1 (a INT PRIMARY KEY, b INT);
CREATE TABLE t2 (a INT PRIMARY KEY, c INT);
INSERT INTO t1 VALUES (1, 1), (2, 2), (3, 3);
INSERT INTO t2 VALUES (1, 10), (2, 20), (4, 40);
-- Both tables; t1.b takes t2.c as joined (before t2's own change).
UPDATE t1, t2 SET t1.b = t2.c, t2.c = t2.c + 1 WHERE t1.a = t2.a;
SELECT * FROM t1 ORDER BY a;
SELECT * FROM t2 ORDER BY a;
-- A row joined three times is updated once.
UPDATE t1 JOIN t2 SET t1.b = t1.b + 100 WHERE t1.a = 1;
-- LEFT JOIN: the unmatched row is updated too, with NULL for t2.
UPDATE t1 LEFT JOIN t2 ON t1.a = t2.a SET t1.b = COALESCE(t2.c, -1);
SELECT * FROM t1 ORDER BY a;
-- Aliases, USING, an unchanged row counts as matched.
UPDATE t1 AS x JOIN t2 AS y USING (a) SET x.b = y.c WHERE y.c > 0;
-- Values come from the joined rows as read (a table's own earlier
-- assignments excepted).
UPDATE t1 x, t2 y SET y.c = x.b, x.b = y.c * 2 WHERE x.a = y.a AND x.a > 1;
SELECT * FROM t1 ORDER BY a;
SELECT * FROM t2 ORDER BY a;
-- ORDER BY and LIMIT apply to the joined rows. (MariaDB computes values
-- over the target's columns from the wrong row when it sorts: constants here.)
UPDATE t1, t2 SET t1.b = 5 ORDER BY t1.a DESC, t2.a LIMIT 4;
UPDATE t1 JOIN t2 ON t1.a = t2.a SET t1.b = 7 ORDER BY t2.c DESC LIMIT 1;
SELECT * FROM t1 ORDER BY a;
-- A derived table and a view are read, not written.
CREATE VIEW v2 AS SELECT a, c FROM t2;
UPDATE t1, (SELECT a, c FROM t2) d SET t1.b = d.c + 1000 WHERE d.a = t1.a;
UPDATE t1 JOIN v2 ON v2.a = t1.a SET t1.b = -v2.c;
SELECT * FROM t1 ORDER BY a;
UPDATE t1, (SELECT a, c FROM t2) d SET d.c = 1 WHERE d.a = t1.a;
-- A subquery may read a target of an UPDATE.
UPDATE t1, t2 SET t2.c = (SELECT MAX(b) FROM t1) WHERE t2.a = t1.a AND t1.a IN (SELECT a FROM t1);
SELECT * FROM t2 ORDER BY a;
-- Errors.
UPDATE t1, t2 SET a = 1;
UPDATE t1, t2 SET t3.b = 1;
UPDATE t1, t2 SET t1.zz = 1;
UPDATE t1, t2 SET t1.b = 1 WHERE zz = 1;
UPDATE t1, t1 SET t1.b = 1;
-- A duplicate key fails the statement, which changes nothing.
UPDATE t1, t2 SET t1.a = 9, t2.c = 0 WHERE t1.a = t2.a;
SELECT * FROM t1 ORDER BY a;
-- DELETE: targets before FROM (also as t.*), or FROM ... USING.
DELETE t1, t2 FROM t1 JOIN t2 ON t1.a = t2.a WHERE t1.a = 1;
DELETE t2.* FROM t2 LEFT JOIN t1 ON t1.a = t2.a WHERE t1.a IS NULL;
DELETE FROM t1 USING t1, t2 WHERE t1.a = t2.a;
SELECT * FROM t1 ORDER BY a;
SELECT * FROM t2 ORDER BY a;
DELETE x FROM t1 AS x, (SELECT a FROM t1) d WHERE d.a = x.a;
SELECT COUNT(*) FROM t1;
INSERT INTO t1 VALUES (1, 1), (2, 2);
DELETE t1 FROM t1, t2 WHERE t1.a IN (SELECT a FROM t1);
DELETE x FROM t1 AS x, t2 WHERE x.a IN (SELECT a FROM t2 WHERE t2.a IN (SELECT a FROM t1));
DELETE t1 FROM t1, t2 LIMIT 1;
DELETE t1 FROM t1, t2 ORDER BY t1.a;
DELETE t3 FROM t1;
DELETE t1 FROM t1 AS x;
DELETE d FROM t1, (SELECT 1 AS a) d;
-- A table without a primary key, joined to itself.
CREATE TABLE h (k INT, v INT);
INSERT INTO h VALUES (1, 1), (1, 2), (2, 3);
UPDATE h AS p JOIN h AS q ON p.k = q.k AND p.v < q.v SET p.v = p.v + 10;
SELECT * FROM h ORDER BY k, v;
DELETE p, q FROM h AS p JOIN h AS q ON p.k = q.k WHERE p.k = 1;
SELECT * FROM h ORDER BY k, v;
-- Foreign keys: the parent's delete cascades; a child's new value needs a parent.
CREATE TABLE par (id INT PRIMARY KEY);
CREATE TABLE ch (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES par (id) ON DELETE CASCADE);
INSERT INTO par VALUES (1), (2);
INSERT INTO ch VALUES (10, 1), (11, 1), (12, 2);
UPDATE ch JOIN par ON ch.pid = par.id SET ch.pid = 3 WHERE par.id = 2;
DELETE par FROM par JOIN ch ON ch.pid = par.id WHERE ch.id = 10;
SELECT * FROM ch ORDER BY id;
-- Conversions name the table's column; NOT NULL and CHECK.
CREATE TABLE w (id INT PRIMARY KEY, n TINYINT NOT NULL, CHECK (n <> 5));
INSERT INTO w VALUES (1, 1), (2, 2);
UPDATE w, par SET w.n = 1000 WHERE par.id = 2;
UPDATE w, par SET w.n = NULL WHERE par.id = 2;
UPDATE w, par SET w.n = 5 WHERE par.id = 2;
SET sql_mode = '';
UPDATE w, par SET w.n = 1000 WHERE par.id = 2 AND w.id = 1;
UPDATE w, par SET w.n = NULL WHERE par.id = 2 AND w.id = 2;
SHOW WARNINGS;
SELECT * FROM w ORDER BY id;
-- Forms MariaDB's grammar refuses.
DELETE FROM t1, t2 WHERE t1.a = 1;
DELETE FROM t1 JOIN t2 ON t1.a = t2.a;
UPDATE t1 SET b = 1 FROM t2;
