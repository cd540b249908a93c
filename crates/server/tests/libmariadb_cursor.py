"""libmariadb (MariaDB Connector/C, through ctypes) with a read-only cursor:
mysql_stmt_attr_set(STMT_ATTR_CURSOR_TYPE) and STMT_ATTR_PREFETCH_ROWS = 3,
so rows come by COM_STMT_FETCH in batches of 3. Between the first and the
second fetch the connection runs another statement, which only works when
the rest of the result stays on the server (without a cursor libmariadb says
"Commands out of sync"). Prints, per mode (0 plain, 1 cursor): the mode, the
column count and the rows fetched. Run by tests/cursor.rs."""
import ctypes, sys
lib = ctypes.CDLL("libmariadb.so.3")
lib.mysql_init.restype = ctypes.c_void_p
lib.mysql_init.argtypes = [ctypes.c_void_p]
lib.mysql_real_connect.restype = ctypes.c_void_p
lib.mysql_real_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_ulong]
lib.mysql_error.restype = ctypes.c_char_p
lib.mysql_error.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_init.restype = ctypes.c_void_p
lib.mysql_stmt_init.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_prepare.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong]
lib.mysql_stmt_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
lib.mysql_stmt_execute.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_fetch.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_error.restype = ctypes.c_char_p
lib.mysql_stmt_error.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_close.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_field_count.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_field_count.restype = ctypes.c_uint
lib.mysql_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
port, sql = int(sys.argv[1]), sys.argv[2].encode()
m = lib.mysql_init(None)
if not lib.mysql_real_connect(m, b"127.0.0.1", b"root", b"", None, port, None, 0):
    sys.exit("connect: %s" % lib.mysql_error(m))
for cursor in (0, 1):
    st = lib.mysql_stmt_init(m)
    if lib.mysql_stmt_prepare(st, sql, len(sql)):
        sys.exit("prepare: %s" % lib.mysql_stmt_error(st))
    t = ctypes.c_ulong(cursor)
    lib.mysql_stmt_attr_set(st, 1, ctypes.byref(t))  # STMT_ATTR_CURSOR_TYPE
    pre = ctypes.c_ulong(3)
    lib.mysql_stmt_attr_set(st, 2, ctypes.byref(pre))  # STMT_ATTR_PREFETCH_ROWS
    if lib.mysql_stmt_execute(st):
        sys.exit("execute: %s" % lib.mysql_stmt_error(st))
    n = 0
    while True:
        r = lib.mysql_stmt_fetch(st)
        if r == 100:  # MYSQL_NO_DATA
            break
        if r not in (0, 101):  # 101: MYSQL_DATA_TRUNCATED
            sys.exit("fetch %d: %s" % (r, lib.mysql_stmt_error(st)))
        n += 1
        if cursor and n == 1:
            # With a cursor the rest stays on the server: the connection
            # is free for another statement between fetches.
            if lib.mysql_query(m, b"DO 1"):
                sys.exit("between fetches: %s" % lib.mysql_error(m))
    print(cursor, lib.mysql_stmt_field_count(st), n)
    lib.mysql_stmt_close(st)
if lib.mysql_query(m, b"SELECT 1"):
    sys.exit("after: %s" % lib.mysql_error(m))
