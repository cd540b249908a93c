-- Sorts past sort_buffer_size: ORDER BY, DISTINCT, window partitions and
-- UNION over 10,000 rows with a 16 KiB budget spill runs and merge them in
-- passes; their results must still be MariaDB's.
CREATE TABLE d (n INT PRIMARY KEY);
INSERT INTO d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
CREATE TABLE t (id INT PRIMARY KEY, k INT, s VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, b VARBINARY(20), x DOUBLE, m DECIMAL(8,2), dt DATETIME);
INSERT INTO t SELECT i, IF(i % 11 = 0, NULL, (i * 37) % 101 - 50), IF(i % 13 = 0, NULL, CONCAT(ELT(i % 4 + 1, 'a', 'B', 'b', 'A'), (i * 7) % 10, REPEAT(' ', i % 3))), CONCAT(ELT(i % 3 + 1, 'x', 'X', ''), i % 7), (i % 17) / 4 - 2, IF(i % 5 = 0, NULL, (i % 23) * 1.25 - 10), CONCAT('2020-01-', LPAD(1 + h DIV 24, 2, '0'), ' ', LPAD(h % 24, 2, '0'), ':00:00') FROM (SELECT i, (i * 13) % 500 AS h FROM (SELECT a.n * 1000 + b.n * 100 + c.n * 10 + e.n AS i FROM d a, d b, d c, d e) p) q;
SET sort_buffer_size = 16384;
SELECT id, k, s FROM t ORDER BY s DESC, k, id LIMIT 4000, 12;
SELECT id, s FROM t ORDER BY s, id DESC LIMIT 9990, 12;
SELECT id, x, m FROM t ORDER BY m, x DESC, id LIMIT 9985, 15;
SELECT id, x, m FROM t ORDER BY x, m DESC, id LIMIT 1990, 12;
SELECT id, dt, b FROM t ORDER BY dt DESC, b, id DESC LIMIT 5000, 10;
SELECT id, b FROM t ORDER BY b DESC, id LIMIT 7000, 10;
SELECT id, k FROM t ORDER BY k DESC, id LIMIT 10;
SELECT id, k * 2 + 1 AS e FROM t WHERE id > 100 ORDER BY e, id LIMIT 3000, 10;
SELECT DISTINCT LOWER(s) FROM t ORDER BY 1;
SELECT DISTINCT k FROM t ORDER BY k DESC LIMIT 20, 10;
SELECT COUNT(*), SUM(k), SUM(LENGTH(b)) FROM (SELECT DISTINCT k, b FROM t) q;
SELECT id, s, k, ROW_NUMBER() OVER (PARTITION BY s ORDER BY k DESC, id) AS rn FROM t ORDER BY id LIMIT 15;
SELECT id, RANK() OVER (ORDER BY m DESC) AS r, SUM(k) OVER (PARTITION BY b ORDER BY id) AS run FROM t ORDER BY id DESC LIMIT 10;
SELECT k FROM t UNION SELECT k + 1000 FROM t ORDER BY 1 DESC LIMIT 5, 10;
SELECT id FROM t WHERE k = 3 UNION ALL SELECT id FROM t WHERE k = 4 ORDER BY id LIMIT 30, 10;
