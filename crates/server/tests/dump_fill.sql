-- The database tests/dump_roundtrip.rs dumps: every column type fractaldb
-- supports, NULLs, binary data with zero bytes and quotes, unicode, indexes,
-- a view, an AUTO_INCREMENT, a foreign key, a quoted name, an empty table
-- and a table of 2048 rows. Run in database dumpsrc.
CREATE TABLE parent (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(40) NOT NULL,
  UNIQUE KEY uk_name (name)
) ENGINE=InnoDB;
CREATE TABLE alltypes (
  id BIGINT NOT NULL AUTO_INCREMENT,
  parent_id INT NULL,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED, b1 BOOLEAN, bt BIT(10),
  dec1 DECIMAL(20,6), dec2 DECIMAL(5,0) UNSIGNED, f FLOAT, d DOUBLE,
  c CHAR(10), vc VARCHAR(100), vcl VARCHAR(20) CHARACTER SET latin1,
  tt TINYTEXT, t TEXT, mt MEDIUMTEXT, lt LONGTEXT,
  bn BINARY(8), vb VARBINARY(64), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  dt DATE, tm TIME(3), dtm DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL,
  e ENUM('red','green','blue'), st SET('a','b','c'),
  PRIMARY KEY (id),
  KEY k_vc (vc),
  KEY k_multi (i, dt),
  CONSTRAINT fk_parent FOREIGN KEY (parent_id) REFERENCES parent (id)
) ENGINE=InnoDB AUTO_INCREMENT=100;
INSERT INTO parent (name) VALUES ('one'), ('two'), ('trois ünïcødé ☃');
INSERT INTO alltypes (parent_id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, b1, bt, dec1, dec2, f, d,
  c, vc, vcl, tt, t, mt, lt, bn, vb, tb, bl, mb, lb, dt, tm, dtm, ts, e, st) VALUES
 (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
  -9223372036854775808, 18446744073709551615, TRUE, b'1010101010',
  -12345678901234.123456, 99999, 3.5, -1.25e300,
  'abc', 'it''s a "quote" \\ backslash', 'café', 'tiny', 'text', 'medium', 'long',
  X'00010203FF270022', X'00275C22000A0D1A', X'00', X'DEADBEEF00', X'00FF', REPEAT(X'00FF27', 1000),
  '2024-02-29', '-838:59:59.000', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07', 'green', 'a,c'),
 (2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0, FALSE, b'0',
  0.000001, 0, -0.0, 1e-300,
  '', '', '', '', '', '', '', X'', X'', X'', X'', X'', X'',
  '1000-01-01', '00:00:00', '1000-01-01 00:00:00', '1970-01-01 00:00:01', 'red', ''),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (NULL, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 1, b'1', 1.5, 1, 0.1, 0.1,
  'ñ', '日本語テキスト 🎉', 'x', 'ß', 'Ελληνικά', 'русский', 'עברית',
  'bin', 'line1\nline2\ttab\r', 'x', 'y', 'z', 'w', '2000-01-01', '12:34:56.789', '2000-01-01 12:00:00.5', NULL, 'blue', 'a,b,c');
CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(50), n INT, KEY (n));
INSERT INTO big VALUES (1, 'row 1', 1);
INSERT INTO big SELECT id + 1, CONCAT('row ', id + 1), (id + 1) % 7 FROM big;
INSERT INTO big SELECT id + 2, CONCAT('row ', id + 2), (id + 2) % 7 FROM big;
INSERT INTO big SELECT id + 4, CONCAT('row ', id + 4), (id + 4) % 7 FROM big;
INSERT INTO big SELECT id + 8, CONCAT('row ', id + 8), (id + 8) % 7 FROM big;
INSERT INTO big SELECT id + 16, CONCAT('row ', id + 16), (id + 16) % 7 FROM big;
INSERT INTO big SELECT id + 32, CONCAT('row ', id + 32), (id + 32) % 7 FROM big;
INSERT INTO big SELECT id + 64, CONCAT('row ', id + 64), (id + 64) % 7 FROM big;
INSERT INTO big SELECT id + 128, CONCAT('row ', id + 128), (id + 128) % 7 FROM big;
INSERT INTO big SELECT id + 256, CONCAT('row ', id + 256), (id + 256) % 7 FROM big;
INSERT INTO big SELECT id + 512, CONCAT('row ', id + 512), (id + 512) % 7 FROM big;
INSERT INTO big SELECT id + 1024, CONCAT('row ', id + 1024), (id + 1024) % 7 FROM big;
CREATE TABLE `we``ird name` (`col ``x`` 1` INT PRIMARY KEY, `select` VARCHAR(10));
INSERT INTO `we``ird name` VALUES (1, 'from');
CREATE TABLE empty_t (a INT);
CREATE VIEW v_parent AS SELECT p.id, p.name, COUNT(a.id) AS n FROM parent p LEFT JOIN alltypes a ON a.parent_id = p.id GROUP BY p.id, p.name;
CREATE TABLE extras (
  id INT PRIMARY KEY,
  j JSON,
  n INT NOT NULL DEFAULT 7 COMMENT 'a comment',
  u VARCHAR(5) DEFAULT 'x''y',
  CHECK (n >= 0)
);
INSERT INTO extras (id, j) VALUES (1, '{"a": [1, 2], "b": "\\u00e9"}'), (2, NULL);
INSERT INTO extras VALUES (3, '[]', 0, NULL);
-- TIMESTAMPs written in another zone than the server's: stored as instants
-- (UTC), dumped under SET TIME_ZONE='+00:00', reloaded as the same instants.
SET time_zone = '+05:00';
CREATE TABLE zoned (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL, KEY (ts));
INSERT INTO zoned VALUES (1, '2024-01-01 05:00:00.250'), (2, '1970-01-01 05:00:01'), (3, '2038-01-19 08:14:07'), (4, NULL);
SET time_zone = DEFAULT;
