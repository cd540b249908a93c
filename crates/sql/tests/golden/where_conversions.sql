-- A bad conversion in a WHERE warns (DELETE, UPDATE IGNORE, an UPDATE
-- with ORDER BY, any UPDATE outside strict mode); no rows, nothing said;
-- a NULL on a comparison's left converts nothing.
CREATE TABLE u (id INT PRIMARY KEY, n INT, f DOUBLE, s VARCHAR(10));
INSERT INTO u VALUES (1, 1, 1.5, 'a'), (2, 2, 2.5, 'abc');
UPDATE u SET n = 5 WHERE n = 'abc' ORDER BY id;
UPDATE IGNORE u SET n = 5 WHERE n = 'abc';
DELETE FROM u WHERE n = 'abc';
DELETE FROM u WHERE s = 1;
CREATE TABLE e (n INT);
UPDATE e SET n = 1 WHERE n = 'abc';
SET sql_mode = '';
UPDATE u SET n = 5 WHERE n = 'abc';
UPDATE u SET n = 5 WHERE f = 'x';
SELECT * FROM u;
SET sql_mode = DEFAULT;
CREATE TABLE n (c1 BIGINT, c2 DOUBLE, INDEX (c1));
INSERT INTO n (c2) VALUES (3), (-1.25);
SELECT n.c1 = 'zz' AS a FROM n LIMIT 1;
