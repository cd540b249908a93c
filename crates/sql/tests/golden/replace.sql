-- REPLACE's affected rows and Duplicates: the same row again, a changed row,
-- several rows at once, a second unique key, and a table a foreign key references.
CREATE TABLE r (a INT PRIMARY KEY, b VARCHAR(5));
INSERT INTO r VALUES (1, 'x'), (2, 'z');
REPLACE INTO r VALUES (1, 'x');
REPLACE INTO r VALUES (1, 'y');
REPLACE INTO r VALUES (1, 'x'), (1, 'y'), (2, 'z');
REPLACE INTO r VALUES (3, 'n');
SELECT * FROM r ORDER BY a;
CREATE TABLE u (a INT PRIMARY KEY, b INT, UNIQUE KEY (b));
INSERT INTO u VALUES (1, 10), (2, 20);
REPLACE INTO u VALUES (1, 10);
REPLACE INTO u VALUES (1, 20);
REPLACE INTO u VALUES (3, 10), (3, 10);
SELECT * FROM u ORDER BY a;
CREATE TABLE p (a INT PRIMARY KEY, b INT) ENGINE=InnoDB;
CREATE TABLE c (x INT, FOREIGN KEY (x) REFERENCES p (a) ON DELETE CASCADE) ENGINE=InnoDB;
INSERT INTO p VALUES (1, 1);
REPLACE INTO p VALUES (1, 1);
SELECT * FROM p;
