-- An explicit COLLATE decides a comparison's collation, on either side.
SELECT 'a' COLLATE utf8mb4_bin = 'A' AS l, 'a' = 'A' COLLATE utf8mb4_bin AS r, ('a' COLLATE utf8mb4_bin) = 'A' AS nested;
SELECT 'a' COLLATE utf8mb4_general_ci = 'A' AS ci, _binary'a' = 'A' COLLATE utf8mb4_general_ci AS over_binary;
SELECT 'a' LIKE 'A' COLLATE utf8mb4_bin AS lk, 'a' IN ('A' COLLATE utf8mb4_bin) AS inl, 'b' BETWEEN 'A' COLLATE utf8mb4_bin AND 'C' AS btw;
SELECT 'a' COLLATE utf8mb4_bin = 'A' COLLATE utf8mb4_general_ci;
CREATE TABLE t (a INT, b INT, c VARCHAR(10));
INSERT INTO t VALUES (1, 1, 'x'), (1, 2, 'X'), (2, 5, 'y');
SELECT a, c FROM t WHERE c = 'x' COLLATE utf8mb4_bin;
SELECT COUNT(*) FROM t WHERE c COLLATE utf8mb4_bin = 'X';
-- CEIL and FLOOR of a decimal have no fraction digits.
SELECT CEIL(1.5) AS a, CEILING(-1.5) AS b, FLOOR(2.5) AS c, FLOOR(-2.25) AS d, CEIL(1.23456789012345678901234) AS e, CEIL(1.5e0) AS f, FLOOR(7) AS g;
-- HAVING sees the select list, GROUP BY columns and aggregates only.
SELECT a FROM t GROUP BY a HAVING b > 1;
SELECT a FROM t HAVING b > 1;
SELECT a FROM t GROUP BY a HAVING a > 1;
SELECT a AS z FROM t GROUP BY a HAVING z > 1;
SELECT a, COUNT(*) FROM t GROUP BY a HAVING MAX(b) > 1 ORDER BY a;
SELECT a FROM t GROUP BY a, b HAVING b > 1 ORDER BY a;
SELECT * FROM t HAVING b > 1 ORDER BY a, b;
SELECT a FROM t GROUP BY a HAVING zz > 1;
