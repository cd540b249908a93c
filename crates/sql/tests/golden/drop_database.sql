-- DROP DATABASE takes the database's views with it: the same view can be
-- made again in a new database of the same name.
CREATE DATABASE gdrop_db;
CREATE TABLE gdrop_db.t (a INT);
INSERT INTO gdrop_db.t VALUES (1), (2);
CREATE VIEW gdrop_db.v AS SELECT a FROM gdrop_db.t;
SELECT * FROM gdrop_db.v ORDER BY a;
DROP DATABASE gdrop_db;
CREATE DATABASE gdrop_db;
SELECT * FROM gdrop_db.v;
CREATE VIEW gdrop_db.v AS SELECT 3 AS b;
SELECT * FROM gdrop_db.v;
SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'gdrop_db';
DROP DATABASE gdrop_db;
SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'gdrop_db';
