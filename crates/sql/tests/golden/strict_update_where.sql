-- Strict mode: a bad conversion (or a division by 0) in an UPDATE's WHERE
-- is an error as MariaDB's row-by-row comparison makes it; DELETE, UPDATE
-- IGNORE and an UPDATE with ORDER BY only warn; no rows, nothing said; a
-- NULL on the left converts nothing.
CREATE TABLE u (id INT PRIMARY KEY, n INT, f DOUBLE, s VARCHAR(10));
INSERT INTO u VALUES (1, 1, 1.5, 'a'), (2, 2, 2.5, 'abc');
UPDATE u SET n = 5 WHERE n = 'abc';
UPDATE u SET n = 5 WHERE n = '1x';
UPDATE u SET n = 5 WHERE s = 1;
UPDATE u SET n = 5 WHERE f = 'x';
UPDATE u SET n = 5 WHERE id = 2 AND s = 1;
UPDATE u SET n = 5 WHERE n / 0 = 1;
UPDATE u SET n = 5 WHERE n = 'abc' LIMIT 1;
UPDATE u SET n = 5 WHERE n = 'abc' ORDER BY id;
UPDATE IGNORE u SET n = 5 WHERE n = 'abc';
DELETE FROM u WHERE n = 'abc';
DELETE FROM u WHERE s = 1;
CREATE TABLE e (n INT);
UPDATE e SET n = 1 WHERE n = 'abc';
SET sql_mode = '';
UPDATE u SET n = 5 WHERE n = 'abc';
SELECT * FROM u;
SET sql_mode = DEFAULT;
CREATE TABLE n (c1 BIGINT, c2 DOUBLE, INDEX (c1));
INSERT INTO n (c2) VALUES (3), (-1.25);
SELECT n.c1 = 'zz' AS a FROM n LIMIT 1;
