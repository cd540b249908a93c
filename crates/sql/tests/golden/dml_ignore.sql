-- UPDATE IGNORE and DELETE IGNORE: a row failing a unique key, a foreign
-- key or a CHECK is skipped; conversions and NULLs warn as outside strict mode.
CREATE TABLE p (id INT PRIMARY KEY);
CREATE TABLE c (id INT PRIMARY KEY, pid INT, u INT, n INT NOT NULL, v TINYINT, UNIQUE KEY (u), FOREIGN KEY (pid) REFERENCES p (id), CHECK (n >= 0));
INSERT INTO p VALUES (1), (2), (3);
INSERT INTO c VALUES (1, 1, 1, 1, 1), (2, 1, 2, 2, 2), (3, 2, 3, 3, 3);
UPDATE c SET u = u + 1;
UPDATE IGNORE c SET u = 1 WHERE id = 2;
UPDATE IGNORE c SET u = u + 1;
UPDATE IGNORE c SET pid = 5 WHERE id = 1;
UPDATE IGNORE c SET n = NULL WHERE id = 1;
UPDATE IGNORE c SET n = -1 WHERE id = 1;
SHOW WARNINGS;
UPDATE IGNORE c SET v = 1000 WHERE id = 1;
UPDATE IGNORE c SET v = 'abc' WHERE id = 2;
SHOW WARNINGS;
SELECT * FROM c ORDER BY id;
DELETE IGNORE FROM p WHERE id = 1;
SHOW WARNINGS;
DELETE IGNORE FROM p;
SELECT * FROM p ORDER BY id;
-- Multi-table (MariaDB's DELETE warns of nothing there).
UPDATE IGNORE c JOIN p ON c.pid = p.id SET c.u = 1;
DELETE IGNORE p FROM p JOIN c ON c.pid = p.id;
SHOW WARNINGS;
DELETE IGNORE c, p FROM c JOIN p ON c.pid = p.id WHERE c.id = 3;
SELECT * FROM c ORDER BY id;
SELECT * FROM p ORDER BY id;
-- A cascade undone when its row is skipped: deleting q's row would
-- cascade to r, whose child s refuses.
CREATE TABLE q (id INT PRIMARY KEY);
CREATE TABLE r (id INT PRIMARY KEY, qid INT, FOREIGN KEY (qid) REFERENCES q (id) ON DELETE CASCADE);
CREATE TABLE s (id INT PRIMARY KEY, rid INT, FOREIGN KEY (rid) REFERENCES r (id));
INSERT INTO q VALUES (1), (2);
INSERT INTO r VALUES (10, 1), (11, 1), (20, 2);
INSERT INTO s VALUES (100, 11);
DELETE IGNORE FROM q;
SELECT * FROM q ORDER BY id;
SELECT * FROM r ORDER BY id;
DELETE FROM q;
