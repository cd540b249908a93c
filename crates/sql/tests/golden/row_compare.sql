-- Row constructors compared with rows and row subqueries: a row subquery
-- with no rows is a row of NULLs; IN over rows; width and type errors.
CREATE TABLE t1 (x INT, y INT);
SELECT (1,2) = (SELECT x, y FROM t1 WHERE FALSE) AS a, (1,2) <> (SELECT x, y FROM t1) AS b, (1,2) IN (SELECT x, y FROM t1) AS c, (1,2) NOT IN (SELECT x, y FROM t1) AS d, (SELECT x, y FROM t1) = (1,2) AS e, (1,2) <=> (SELECT x, y FROM t1) AS f;
SELECT (1,2) = (SELECT 1, 2) AS a, (1,2) = (SELECT 1, 3) AS b, (1,2) = (SELECT 1, NULL) AS c, (1,2) < (SELECT 1, 3) AS d, (2,NULL) > (1,5) AS e, (1,NULL) < (1,5) AS f, (1,NULL) = (2,NULL) AS g, (1,2,3) >= (1,2,3) AS h;
INSERT INTO t1 VALUES (1,2), (3,NULL);
SELECT (1,2) IN (SELECT x, y FROM t1) AS a, (3,4) IN (SELECT x, y FROM t1) AS b, (5,6) IN (SELECT x, y FROM t1) AS c, (5,6) NOT IN (SELECT x, y FROM t1) AS d, (3,4) NOT IN (SELECT x, y FROM t1) AS e;
SELECT x, y, (x,y) = (1,2) AS a, (x,y) IN ((1,2),(3,NULL)) AS b, (x,y) >= (1,3) AS c, (x,y) <=> (3,NULL) AS d FROM t1 ORDER BY x;
SELECT * FROM t1 WHERE (x,y) = (1,2);
SELECT * FROM t1 WHERE (x,y) > (1,2) OR (x,y) IN ((1,2));
SELECT (1,2) = (SELECT x, y FROM t1);
SELECT (1,2) = (1,2,3);
SELECT (1,2) = 1;
SELECT 'a' < (1,2);
SELECT (1,2);
SELECT (1,2) + 1;
SELECT (1,2) = (SELECT 1);
SELECT (1,2) IN ((1,2),(3));
