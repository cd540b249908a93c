#!/usr/bin/env python3
"""Compression per table, measured: the 2017 report's log table loaded under
every ROW_FORMAT into fractaldb, and into MariaDB's InnoDB (default and
ROW_FORMAT=COMPRESSED) and MyRocks (zstd). Prints bytes on disk and load time
per run as a Markdown table.

  rowformat.py --fractaldb target/release/fractaldb --rows 200000 --work /tmp/rf

The rows come from a seeded generator (the same rows every run): an INT
AUTO_INCREMENT key, an indexed BIGINT (the event's time in milliseconds),
host, method, URL, status, bytes, referrer, user agent, the client's IP and
a TEXT message with a timestamp, as web servers' logs have them. They are
written once as a SQL file of 1,000-row INSERTs and loaded by each engine's
client from that file. Bytes are the blocks allocated to the table's files
(st_blocks): fractaldb's dictionary files after close (a checkpoint), the
InnoDB table's .ibd, MyRocks' .sst files after a memtable flush and a full
compaction; logs are not counted for any engine.
"""
import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import time

TABLE = """CREATE TABLE log (
  id INT NOT NULL AUTO_INCREMENT,
  ts_ms BIGINT NOT NULL,
  host VARCHAR(64) NOT NULL,
  method VARCHAR(8) NOT NULL,
  url VARCHAR(255) NOT NULL,
  status INT NOT NULL,
  bytes INT NOT NULL,
  referrer VARCHAR(255),
  user_agent VARCHAR(255),
  client_ip VARCHAR(45) NOT NULL,
  message TEXT,
  PRIMARY KEY (id),
  KEY ts_ms (ts_ms)
)"""

AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/58.0.3029.110 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_12_5) AppleWebKit/603.2.4 (KHTML, like Gecko) Version/10.1.1 Safari/603.2.4",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:54.0) Gecko/20100101 Firefox/54.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 10_3_2 like Mac OS X) AppleWebKit/603.2.4 (KHTML, like Gecko) Version/10.0 Mobile/14F89 Safari/602.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/7.52.1",
    "python-requests/2.18.1",
    "Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko",
]
PATHS = ["/", "/index.html", "/api/v1/orders", "/api/v1/users", "/api/v1/items", "/search", "/static/js/app.js",
         "/static/css/site.css", "/img/logo.png", "/checkout", "/cart", "/login", "/logout", "/product"]
WORDS = ["user", "session", "cache", "miss", "hit", "upstream", "timeout", "retry", "order", "payment", "token",
         "expired", "queued", "worker", "db", "query", "slow", "ok", "redirect", "auth", "failed", "served"]
REFERRERS = ["-", "https://www.google.com/", "https://www.bing.com/", "https://news.ycombinator.com/",
             "https://example.com/", "https://t.co/x1y2z3"]


def rows(n, seed=1):
    r = random.Random(seed)
    ts = 1496275200000  # 2017-06-01 00:00:00 UTC, in ms
    for _ in range(n):
        ts += r.randint(0, 40)
        host = "web%02d.dc%d.example.com" % (r.randint(1, 24), r.randint(1, 3))
        method = r.choices(["GET", "POST", "PUT", "DELETE"], [80, 15, 3, 2])[0]
        path = r.choice(PATHS)
        if path.startswith("/api") or path == "/product":
            path += "/%d" % r.randint(1, 500000)
        if r.random() < 0.3:
            path += "?q=%s&page=%d" % (r.choice(WORDS), r.randint(1, 20))
        status = r.choices([200, 301, 304, 404, 500, 503], [80, 4, 8, 5, 2, 1])[0]
        nbytes = r.randint(200, 90000)
        ref = r.choice(REFERRERS)
        agent = r.choice(AGENTS)
        ip = "%d.%d.%d.%d" % (r.randint(1, 223), r.randint(0, 255), r.randint(0, 255), r.randint(1, 254))
        t = time.gmtime(ts // 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", t) + ".%03dZ" % (ts % 1000)
        level = r.choices(["INFO", "WARN", "ERROR", "DEBUG"], [70, 15, 5, 10])[0]
        msg = "%s %s [%s] req=%016x %s %s -> %d in %dms: %s" % (
            stamp, level, host.split(".")[0], r.getrandbits(64), method, path, status, r.randint(1, 3000),
            " ".join(r.choice(WORDS) for _ in range(r.randint(3, 12))))
        yield (ts, host, method, path, status, nbytes, ref, agent, ip, msg)


def q(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def write_sql(path, n):
    with open(path, "w") as f:
        batch = []
        for row in rows(n):
            ts, host, method, url, status, nbytes, ref, agent, ip, msg = row
            batch.append("(%d,%s,%s,%s,%d,%d,%s,%s,%s,%s)" % (
                ts, q(host), q(method), q(url), status, nbytes, q(ref), q(agent), q(ip), q(msg)))
            if len(batch) == 1000:
                f.write("INSERT INTO log (ts_ms,host,method,url,status,bytes,referrer,user_agent,client_ip,message)"
                        " VALUES " + ",".join(batch) + ";\n")
                batch = []
        if batch:
            f.write("INSERT INTO log (ts_ms,host,method,url,status,bytes,referrer,user_agent,client_ip,message)"
                    " VALUES " + ",".join(batch) + ";\n")


def allocated(paths):
    return sum(os.stat(p).st_blocks * 512 for p in paths)


def run_fractaldb(binary, work, sql, fmt):
    d = os.path.join(work, "fdb-" + fmt.lower())
    shutil.rmtree(d, ignore_errors=True)
    head = "CREATE DATABASE b; USE b; %s ROW_FORMAT=%s;" % (TABLE, fmt)
    subprocess.run([binary, "sql", "--datadir", d, "-e", head], check=True)
    t0 = time.monotonic()
    with open(sql) as f:
        subprocess.run([binary, "sql", "--datadir", d, "--no-commit-sync", "-D", "b"], stdin=f, check=True)
    secs = time.monotonic() - t0
    out = subprocess.run([binary, "sql", "--datadir", d, "-B", "-e", "SELECT COUNT(*) FROM b.log"],
                         check=True, capture_output=True, text=True).stdout.split()
    files = [os.path.join(d, x) for x in os.listdir(d) if x.endswith(".fdb")]
    return allocated(files), secs, int(out[-1])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Maria:
    def __init__(self, work, extra):
        self.dir = os.path.join(work, "mariadb")
        shutil.rmtree(self.dir, ignore_errors=True)
        subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + self.dir,
                        "--auth-root-authentication-method=normal"], check=True, capture_output=True)
        self.port = free_port()
        self.proc = subprocess.Popen(["mariadbd", "--no-defaults", "--datadir=" + self.dir, "--port=%d" % self.port,
                                      "--bind-address=127.0.0.1", "--socket=" + self.dir + "/sock", "--user=root",
                                      "--log-error=" + self.dir + "/err.log"] + extra)
        for _ in range(120):
            if subprocess.run(self.cmd() + ["-e", "SELECT 1"], capture_output=True).returncode == 0:
                return
            time.sleep(0.5)
        raise SystemExit("mariadbd did not start: see " + self.dir + "/err.log")

    def cmd(self):
        return ["mariadb", "-uroot", "-h127.0.0.1", "-P%d" % self.port]

    def sql(self, text):
        return subprocess.run(self.cmd() + ["-N", "-B", "-e", text], check=True, capture_output=True,
                              text=True).stdout

    def load(self, sql, create):
        self.sql("DROP DATABASE IF EXISTS b; CREATE DATABASE b; USE b; " + create)
        t0 = time.monotonic()
        with open(sql) as f:
            subprocess.run(self.cmd() + ["b"], stdin=f, check=True)
        return time.monotonic() - t0

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fractaldb", required=True)
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--work", required=True)
    ap.add_argument("--no-mariadb", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    sql = os.path.join(a.work, "log.sql")
    write_sql(sql, a.rows)
    results = []
    for fmt, aliases in [("TOKUDB_UNCOMPRESSED", ""), ("TOKUDB_ZSTD", "TOKUDB_DEFAULT, COMPRESSED"),
                         ("TOKUDB_LZ4", "TOKUDB_QUICKLZ, TOKUDB_FAST"), ("TOKUDB_SNAPPY", ""),
                         ("TOKUDB_ZLIB", ""), ("TOKUDB_LZMA", "TOKUDB_SMALL")]:
        b, secs, n = run_fractaldb(a.fractaldb, a.work, sql, fmt)
        assert n == a.rows, (fmt, n)
        label = "fractaldb " + fmt + (" (= %s)" % aliases if aliases else "")
        results.append((label, b, secs))
        print(label, b, "%.1f" % secs, file=sys.stderr)
    if not a.no_mariadb:
        m = Maria(a.work, ["--innodb-file-per-table=1"])
        try:
            for label, opt in [("InnoDB (DYNAMIC)", ""), ("InnoDB ROW_FORMAT=COMPRESSED", " ROW_FORMAT=COMPRESSED")]:
                secs = m.load(sql, TABLE + " ENGINE=InnoDB" + opt)
                m.sql("FLUSH TABLES b.log FOR EXPORT; UNLOCK TABLES")
                b = allocated([os.path.join(m.dir, "b", "log.ibd")])
                results.append((label, b, secs))
                print(label, b, "%.1f" % secs, file=sys.stderr)
        finally:
            m.stop()
        m = Maria(a.work, ["--plugin-load-add=ha_rocksdb",
                           "--rocksdb-default-cf-options=compression=kZSTD;bottommost_compression=kZSTD"])
        try:
            secs = m.load(sql, TABLE + " ENGINE=RocksDB")
            m.sql("SET GLOBAL rocksdb_force_flush_memtable_now=1")
            m.sql("SET GLOBAL rocksdb_compact_cf='default'")
            rd = os.path.join(m.dir, "#rocksdb")
            b = allocated([os.path.join(rd, x) for x in os.listdir(rd) if x.endswith(".sst")])
            results.append(("MyRocks (zstd)", b, secs))
            print("MyRocks (zstd)", b, "%.1f" % secs, file=sys.stderr)
        finally:
            m.stop()
    raw = os.path.getsize(sql)
    print("%d rows, %.1f MB of SQL\n" % (a.rows, raw / 1e6))
    print("| run | bytes on disk | load time (s) | rows/s |")
    print("|---|---:|---:|---:|")
    for label, b, secs in results:
        print("| %s | %s | %.1f | %.0f |" % (label, format(b, ","), secs, a.rows / secs))


if __name__ == "__main__":
    main()
