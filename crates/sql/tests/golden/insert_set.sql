-- INSERT ... SET and REPLACE ... SET: the VALUES form with the named
-- columns, defaults for the rest, and ON DUPLICATE KEY UPDATE.
CREATE TABLE t (a INT PRIMARY KEY, b INT DEFAULT 5, c VARCHAR(5) NOT NULL);
INSERT INTO t SET a = 1, c = 'x';
INSERT t SET c = 'y', a = 2, b = 7;
INSERT INTO t SET a = 2, b = 8, c = 'z' ON DUPLICATE KEY UPDATE b = VALUES(b) + 100;
INSERT INTO t SET a = 3;
INSERT INTO t SET a = 3, zz = 1;
INSERT INTO t SET a = 3, a = 4, c = 'q';
INSERT IGNORE INTO t SET a = 1, c = 'dup';
REPLACE INTO t SET a = 1, c = 'r';
REPLACE t SET a = 5, b = NULL, c = 's';
SELECT * FROM t ORDER BY a;
CREATE VIEW v AS SELECT a, c FROM t;
INSERT INTO v SET a = 6, c = 'v';
SELECT * FROM t WHERE a = 6;
