-- EXPLAIN of UPDATE, DELETE and INSERT: MariaDB's rows for our access paths.
CREATE TABLE e (id INT PRIMARY KEY, k INT, s VARCHAR(10), KEY (k));
INSERT INTO e VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c');
CREATE TABLE np (a INT NOT NULL, b INT);
INSERT INTO np VALUES (1, 1), (2, 2);
EXPLAIN UPDATE e SET s = 'x' WHERE id = 2;
EXPLAIN UPDATE e AS q SET q.s = 'x' WHERE q.id = 3;
EXPLAIN UPDATE e SET s = 'x';
EXPLAIN UPDATE e SET s = 'x' WHERE s = 'a';
EXPLAIN UPDATE np SET b = 1;
EXPLAIN UPDATE np SET b = 1 WHERE a = 1;
EXPLAIN DELETE FROM e WHERE id = 2;
EXPLAIN DELETE FROM e;
EXPLAIN DELETE FROM e WHERE s = 'a';
EXPLAIN DELETE FROM e LIMIT 1;
EXPLAIN INSERT INTO e VALUES (4, 4, 'd');
EXPLAIN INSERT INTO e SELECT a, b, 'n' FROM np;
EXPLAIN REPLACE INTO e (id, k) SELECT a, b FROM np;
-- A multi-table statement is its join's plan (where ours is MariaDB's).
EXPLAIN UPDATE np JOIN e ON e.id = np.a SET np.b = e.k;
EXPLAIN DELETE np FROM np WHERE b = 1;
-- Explaining changes nothing.
SELECT * FROM e ORDER BY id;
SELECT COUNT(*) FROM np;
EXPLAIN UPDATE e SET zz = 1;
EXPLAIN DELETE FROM nope;
EXPLAIN INSERT INTO nope VALUES (1);
