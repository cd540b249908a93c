-- Result column names: an unaliased item is named by its text as written,
-- a column by its name, a literal by its value.
CREATE TABLE t (a INT, b VARCHAR(10));
INSERT INTO t VALUES (1, 'x');
SELECT a+1, a + 1, CONCAT( 'x' ,b), a  *  2 FROM t;
SELECT 'abc', ' lead', 'trail ', 'it''s', 'a' 'b', _utf8'u', N'n', _binary'w', '' FROM t;
SELECT -1, - 1, 1.50, -1.50, +1, + 2, .5, 1e3, 00012, 0x41, x'41', b'1' FROM t;
SELECT NULL, null, TRUE, false, (NULL), ('p'), (1), (-1), - -1, -(1), +(a+1), -a FROM t;
SELECT (a), ( a ), ((a)), t.a, (t.a), `t`.`a`, colnames.t.a, A, `A`, +a FROM t;
SELECT a /* c */ + 1, /* lead */ a+2 /* trail */, a+3 /*!+5 */ FROM t;
SELECT a -- c
 + 2, a#z
+3 FROM t;
SELECT
  a
  +
  1
FROM t;
SELECT 'é', 'ééé' + 0, concat('é' ,'ü') FROM t;
SELECT COUNT( * ), sum(a), group_concat(a order by a separator ','), (SELECT a+1 FROM t LIMIT 1), CASE a WHEN 1 THEN 'x' END FROM t;
SELECT DATE '2020-01-01', {d '2020-01-01'}, INTERVAL 1 DAY + '2020-01-01', CAST(a AS CHAR), a IS NULL, NOT a, a DIV 2, a MOD 2, a%2 FROM t;
SELECT DISTINCT a+1, b FROM t;
SELECT SQL_CALC_FOUND_ROWS a+1 FROM t;
SELECT a + 1 x, a+1 AS `y`, t.* FROM t;
SELECT concat('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx');
SELECT 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy';
SELECT concat('xxxxxxxxéééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé');
-- UNION: the first SELECT's names.
SELECT a+1 FROM t UNION SELECT b FROM t;
-- Derived tables and CTEs: the inner names, usable from outside.
SELECT * FROM (SELECT a+1, a + 2, 'lit', -1 FROM t) d;
SELECT d.`a+1`, `CONCAT(b,'!')` FROM (SELECT a+1, CONCAT(b,'!') FROM t) d;
WITH c AS (SELECT a*2, a + 3 FROM t) SELECT * FROM c;
WITH c AS (SELECT a*2 FROM t) SELECT `a*2` + 1 FROM c;
SELECT a+1 FROM t ORDER BY `a+1`;
SELECT a+1 FROM t WHERE a IN (SELECT a FROM (SELECT a+0 AS a FROM t) q);
-- Views: the names are stored with the view.
CREATE VIEW v AS SELECT a+1, 'x', a, concat( a ,'y') FROM t;
SELECT * FROM v;
SELECT `a+1`, `concat( a ,'y')` FROM v;
-- CREATE TABLE ... SELECT takes the names.
CREATE TABLE t2 AS SELECT a+1, b FROM t;
SELECT column_name FROM information_schema.columns WHERE table_schema = 'colnames' AND table_name = 't2' ORDER BY ordinal_position;
DO 1 + 1;
