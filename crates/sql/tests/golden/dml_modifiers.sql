-- UPDATE and DELETE modifiers: LOW_PRIORITY and QUICK are accepted and
-- change nothing (before, the first one was read as the table's name).
CREATE TABLE t (a INT PRIMARY KEY, b INT);
INSERT INTO t VALUES (1, 1), (2, 2), (3, 3);
UPDATE LOW_PRIORITY t SET b = 10 WHERE a = 1;
DELETE LOW_PRIORITY FROM t WHERE a = 2;
DELETE QUICK FROM t WHERE a = 9;
DELETE LOW_PRIORITY QUICK FROM t WHERE a = 8;
SELECT * FROM t ORDER BY a;
CREATE TABLE quick (q INT);
INSERT INTO quick VALUES (1);
DELETE quick FROM quick WHERE q = 1;
SELECT COUNT(*) FROM quick;
