//! The protocol's constants and payload codecs: length-encoded integers and
//! strings, OK / ERR / EOF packets, column definitions, text and binary
//! result rows. Everything here builds or reads one packet's payload; the
//! framing (length, sequence id, 16 MiB chunks) is `packet.rs`'s.

// The protocol's whole table of constants is kept, used or not.
#![allow(dead_code)]

use fractaldb_sql::{ColumnMeta, SqlType, StrKind, Temporal, TemporalKind, Value};

// Capability flags (the handshake's and the client's reply).
pub const CLIENT_LONG_PASSWORD: u32 = 1;
pub const CLIENT_FOUND_ROWS: u32 = 1 << 1;
pub const CLIENT_LONG_FLAG: u32 = 1 << 2;
pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
pub const CLIENT_LOCAL_FILES: u32 = 1 << 7;
pub const CLIENT_IGNORE_SPACE: u32 = 1 << 8;
pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
pub const CLIENT_INTERACTIVE: u32 = 1 << 10;
pub const CLIENT_SSL: u32 = 1 << 11;
pub const CLIENT_IGNORE_SIGPIPE: u32 = 1 << 12;
pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
pub const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
/// MariaDB's name for bit 0: a server that leaves it out of its greeting
/// (as MariaDB does) sends MariaDB's extended capabilities in the last 4
/// bytes of the greeting's filler, and a client that leaves it out of its
/// response sends its own in the last 4 bytes of the response's filler.
pub const CLIENT_MYSQL: u32 = CLIENT_LONG_PASSWORD;

/// What this server offers (SSL and LOCAL_FILES are added by
/// configuration). Not offered, because not built: the compressed
/// protocol; and FOUND_ROWS, because UPDATE reports changed rows, never
/// matched ones. Not CLIENT_MYSQL: the greeting carries MariaDB's
/// extended capabilities instead.
pub const SERVER_CAPABILITIES: u32 = CLIENT_LONG_FLAG
    | CLIENT_CONNECT_WITH_DB
    | CLIENT_IGNORE_SPACE
    | CLIENT_PROTOCOL_41
    | CLIENT_INTERACTIVE
    | CLIENT_IGNORE_SIGPIPE
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_CONNECT_ATTRS
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | CLIENT_SESSION_TRACK
    | CLIENT_DEPRECATE_EOF;

// MariaDB's extended capabilities (the high 32 bits of its 64-bit flags).
pub const MARIADB_CLIENT_STMT_BULK_OPERATIONS: u32 = 1 << 2;
/// The extended capabilities this server offers: bulk execute only
/// (not PROGRESS, EXTENDED_METADATA or CACHE_METADATA).
pub const MARIADB_SERVER_EXT_CAPABILITIES: u32 = MARIADB_CLIENT_STMT_BULK_OPERATIONS;

/// COM_STMT_BULK_EXECUTE's flags: the parameter types come first.
pub const STMT_BULK_FLAG_CLIENT_SEND_TYPES: u16 = 128;
// Bulk execute's per-value indicators.
pub const STMT_INDICATOR_NONE: u8 = 0;
pub const STMT_INDICATOR_NULL: u8 = 1;
pub const STMT_INDICATOR_DEFAULT: u8 = 2;
pub const STMT_INDICATOR_IGNORE: u8 = 3;

// Session state information in OK packets (CLIENT_SESSION_TRACK).
pub const SESSION_TRACK_SYSTEM_VARIABLES: u8 = 0;
pub const SESSION_TRACK_SCHEMA: u8 = 1;
pub const SESSION_TRACK_STATE_CHANGE: u8 = 2;

// Status flags (OK and EOF packets).
/// An SSLRequest: capabilities, max packet, charset, 23 bytes of filler.
pub const SSL_REQUEST_LEN: usize = 32;

pub const SERVER_STATUS_IN_TRANS: u16 = 1;
pub const SERVER_STATUS_AUTOCOMMIT: u16 = 2;
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 8;
/// An EXECUTE opened a cursor, or a FETCH left rows in it.
pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 64;
/// A FETCH sent the cursor's last row (the cursor is closed).
pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 128;
/// sql_mode has NO_BACKSLASH_ESCAPES: clients escape strings by doubling
/// quotes only.
pub const SERVER_STATUS_NO_BACKSLASH_ESCAPES: u16 = 0x0200;
/// sql_mode has ANSI_QUOTES (MariaDB's flag): `"` quotes identifiers.
pub const SERVER_STATUS_ANSI_QUOTES: u16 = 0x8000;
/// The OK packet carries session state changes (CLIENT_SESSION_TRACK).
pub const SERVER_SESSION_STATE_CHANGED: u16 = 1 << 14;

/// COM_STMT_EXECUTE's flags: open a read-only cursor.
pub const CURSOR_TYPE_READ_ONLY: u8 = 1;

// Commands.
pub const COM_SLEEP: u8 = 0;
pub const COM_QUIT: u8 = 1;
pub const COM_INIT_DB: u8 = 2;
pub const COM_QUERY: u8 = 3;
pub const COM_FIELD_LIST: u8 = 4;
pub const COM_STATISTICS: u8 = 9;
pub const COM_SHUTDOWN: u8 = 8;
pub const COM_PROCESS_INFO: u8 = 10;
pub const COM_PROCESS_KILL: u8 = 12;
pub const COM_PING: u8 = 14;
pub const COM_CHANGE_USER: u8 = 17;
pub const COM_STMT_PREPARE: u8 = 22;
pub const COM_STMT_EXECUTE: u8 = 23;
pub const COM_STMT_SEND_LONG_DATA: u8 = 24;
pub const COM_STMT_CLOSE: u8 = 25;
pub const COM_STMT_RESET: u8 = 26;
pub const COM_SET_OPTION: u8 = 27;
pub const COM_STMT_FETCH: u8 = 28;
pub const COM_RESET_CONNECTION: u8 = 31;
/// MariaDB's: one prepared statement, many rows of parameters.
pub const COM_STMT_BULK_EXECUTE: u8 = 250;

// Column types.
pub const T_DECIMAL: u8 = 0;
pub const T_TINY: u8 = 1;
pub const T_SHORT: u8 = 2;
pub const T_LONG: u8 = 3;
pub const T_FLOAT: u8 = 4;
pub const T_DOUBLE: u8 = 5;
pub const T_NULL: u8 = 6;
pub const T_TIMESTAMP: u8 = 7;
pub const T_LONGLONG: u8 = 8;
pub const T_INT24: u8 = 9;
pub const T_DATE: u8 = 10;
pub const T_TIME: u8 = 11;
pub const T_DATETIME: u8 = 12;
pub const T_YEAR: u8 = 13;
pub const T_NEWDATE: u8 = 14;
pub const T_VARCHAR: u8 = 15;
pub const T_BIT: u8 = 16;
pub const T_JSON: u8 = 245;
pub const T_NEWDECIMAL: u8 = 246;
pub const T_ENUM: u8 = 247;
pub const T_SET: u8 = 248;
pub const T_TINY_BLOB: u8 = 249;
pub const T_MEDIUM_BLOB: u8 = 250;
pub const T_LONG_BLOB: u8 = 251;
pub const T_BLOB: u8 = 252;
pub const T_VAR_STRING: u8 = 253;
pub const T_STRING: u8 = 254;
pub const T_GEOMETRY: u8 = 255;

// Column flags.
pub const NOT_NULL_FLAG: u16 = 1;
pub const BLOB_FLAG: u16 = 16;
pub const UNSIGNED_FLAG: u16 = 32;
pub const ZEROFILL_FLAG: u16 = 64;
pub const BINARY_FLAG: u16 = 128;
pub const ENUM_FLAG: u16 = 256;
pub const TIMESTAMP_FLAG: u16 = 1024;
pub const SET_FLAG: u16 = 2048;
pub const NUM_FLAG: u16 = 32768;

/// utf8mb4_general_ci: the connection's collation, and the handshake's.
pub const UTF8MB4_GENERAL_CI: u16 = 45;
pub const BINARY_COLLATION: u16 = 63;

/// MySQL's "not a fixed number of decimals" for FLOAT and DOUBLE results.
const NOT_FIXED_DEC: u8 = 31;

pub fn put_lenenc_int(out: &mut Vec<u8>, n: u64) {
    if n < 251 {
        out.push(n as u8);
    } else if n < 1 << 16 {
        out.push(0xfc);
        out.extend_from_slice(&(n as u16).to_le_bytes());
    } else if n < 1 << 24 {
        out.push(0xfd);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xfe);
        out.extend_from_slice(&n.to_le_bytes());
    }
}

pub fn put_lenenc_str(out: &mut Vec<u8>, s: &[u8]) {
    put_lenenc_int(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A reader over one payload. Every accessor returns `None` past the end:
/// a malformed packet becomes an error reply, never a panic.
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes(2)?.try_into().ok()?))
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    pub fn lenenc_int(&mut self) -> Option<u64> {
        match self.u8()? {
            n @ 0..=250 => Some(n as u64),
            0xfc => self.u16().map(u64::from),
            0xfd => {
                let b = self.bytes(3)?;
                Some(b[0] as u64 | (b[1] as u64) << 8 | (b[2] as u64) << 16)
            }
            0xfe => self.u64(),
            _ => None,
        }
    }

    pub fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.lenenc_int()?).ok()?;
        self.bytes(n)
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub fn nul_str(&mut self) -> Option<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        let n = rest.iter().position(|&b| b == 0)?;
        self.pos += n + 1;
        Some(&rest[..n])
    }

    /// A NUL-terminated string, or the rest when no NUL ends it.
    pub fn nul_str_or_rest(&mut self) -> &'a [u8] {
        match self.nul_str() {
            Some(s) => s,
            None => self.rest(),
        }
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
}

pub fn ok_packet(
    header: u8,
    affected: u64,
    last_insert_id: u64,
    status: u16,
    warnings: u16,
    info: &str,
) -> Vec<u8> {
    ok_packet_with_state(header, affected, last_insert_id, status, warnings, info, &[])
}

/// An OK packet; with `state` (session state changes, already encoded as
/// type + length-encoded data entries) SERVER_SESSION_STATE_CHANGED is set
/// and the info string is sent even when empty, as the state block follows
/// it (the form CLIENT_SESSION_TRACK clients read).
pub fn ok_packet_with_state(
    header: u8,
    affected: u64,
    last_insert_id: u64,
    mut status: u16,
    warnings: u16,
    info: &str,
    state: &[u8],
) -> Vec<u8> {
    let mut p = Vec::with_capacity(16 + info.len() + state.len());
    p.push(header);
    put_lenenc_int(&mut p, affected);
    put_lenenc_int(&mut p, last_insert_id);
    if !state.is_empty() {
        status |= SERVER_SESSION_STATE_CHANGED;
    }
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&warnings.to_le_bytes());
    // Length-encoded, as MySQL and MariaDB servers send it and
    // libmysqlclient / libmariadb read it (not string<EOF>).
    if !info.is_empty() || !state.is_empty() {
        put_lenenc_str(&mut p, info.as_bytes());
    }
    if !state.is_empty() {
        put_lenenc_str(&mut p, state);
    }
    p
}

pub fn eof_packet(warnings: u16, status: u16) -> Vec<u8> {
    let mut p = vec![0xfe];
    p.extend_from_slice(&warnings.to_le_bytes());
    p.extend_from_slice(&status.to_le_bytes());
    p
}

pub fn err_packet(code: u16, state: &str, message: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(9 + message.len());
    p.push(0xff);
    p.extend_from_slice(&code.to_le_bytes());
    p.push(b'#');
    let st = state.as_bytes();
    let mut s5 = [b'H', b'Y', b'0', b'0', b'0'];
    if st.len() == 5 {
        s5.copy_from_slice(st);
    }
    p.extend_from_slice(&s5);
    // MySQL caps messages at 512 bytes (MYSQL_ERRMSG_SIZE).
    let msg = message.as_bytes();
    p.extend_from_slice(&msg[..msg.len().min(512)]);
    p
}

/// How a column is described on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireCol {
    pub ty: u8,
    pub flags: u16,
    pub length: u32,
    pub decimals: u8,
    pub charset: u16,
}

/// The wire description of a result column, as MariaDB 10.11 gives it for
/// the same type (compared field by field through PyMySQL against MariaDB:
/// numbers of a table carry no BINARY flag, computed ones do; no NUM flag
/// on the wire; TEXT lengths in bytes of utf8mb4). Text is always sent as UTF-8 (what the SQL layer keeps),
/// so text columns of any character set are described as utf8mb4.
pub fn wire_col(meta: &ColumnMeta) -> WireCol {
    let mut flags = meta.flags | if meta.nullable { 0 } else { NOT_NULL_FLAG };
    let num = if meta.org_table.is_empty() { BINARY_FLAG } else { 0 };
    let uns = |u: bool| if u { UNSIGNED_FLAG } else { 0 };
    let (ty, length, decimals, charset) = match &meta.ty {
        SqlType::Int { bytes, unsigned } => {
            flags |= num | uns(*unsigned);
            let (ty, w) = match bytes {
                1 => (T_TINY, 4),
                2 => (T_SHORT, 6),
                3 => (T_INT24, 9),
                4 => (T_LONG, 11),
                _ => (T_LONGLONG, 20),
            };
            let w = if *unsigned && *bytes != 8 { w - 1 } else { w };
            (ty, w, 0, BINARY_COLLATION)
        }
        SqlType::Decimal { precision, scale, unsigned } => {
            flags |= num | uns(*unsigned);
            let len = *precision as u32 + (*scale > 0) as u32 + (!*unsigned) as u32;
            (T_NEWDECIMAL, len, *scale, BINARY_COLLATION)
        }
        SqlType::Float { unsigned } => {
            flags |= num | uns(*unsigned);
            (T_FLOAT, 12, NOT_FIXED_DEC, BINARY_COLLATION)
        }
        SqlType::Double { unsigned } => {
            flags |= num | uns(*unsigned);
            (T_DOUBLE, 22, NOT_FIXED_DEC, BINARY_COLLATION)
        }
        SqlType::Bit { bits } => {
            flags |= UNSIGNED_FLAG;
            (T_BIT, *bits as u32, 0, BINARY_COLLATION)
        }
        SqlType::Str { kind, len, coll } => {
            let binary = coll.charset() == fractaldb_sql::Charset::Binary;
            let (charset, mb) = if binary { (BINARY_COLLATION, 1) } else { (text_collation(*coll), 4) };
            if binary {
                flags |= BINARY_FLAG;
            }
            let bytes = len.saturating_mul(mb).min(u32::MAX as u64) as u32;
            let ty = match kind {
                StrKind::Fixed => T_STRING,
                StrKind::Var => T_VAR_STRING,
                StrKind::Lob => {
                    flags |= BLOB_FLAG;
                    T_BLOB
                }
            };
            (ty, bytes, 0, charset)
        }
        SqlType::Enum { values, coll } | SqlType::Set { values, coll } => {
            let is_enum = matches!(meta.ty, SqlType::Enum { .. });
            flags |= if is_enum { ENUM_FLAG } else { SET_FLAG };
            let longest = if is_enum {
                values.iter().map(|v| v.chars().count()).max().unwrap_or(0)
            } else {
                values.iter().map(|v| v.chars().count() + 1).sum::<usize>().saturating_sub(1)
            };
            (T_STRING, (longest * 4) as u32, 0, text_collation(*coll))
        }
        SqlType::Json => {
            flags |= BLOB_FLAG | BINARY_FLAG;
            (T_BLOB, u32::MAX, 0, UTF8MB4_GENERAL_CI)
        }
        SqlType::Date => {
            flags |= BINARY_FLAG;
            (T_DATE, 10, 0, BINARY_COLLATION)
        }
        SqlType::Time { fsp } => {
            flags |= BINARY_FLAG;
            (T_TIME, 10 + fsp_len(*fsp), *fsp, BINARY_COLLATION)
        }
        SqlType::DateTime { fsp } => {
            flags |= BINARY_FLAG;
            (T_DATETIME, 19 + fsp_len(*fsp), *fsp, BINARY_COLLATION)
        }
        SqlType::Timestamp { fsp } => {
            flags |= BINARY_FLAG | UNSIGNED_FLAG;
            (T_TIMESTAMP, 19 + fsp_len(*fsp), *fsp, BINARY_COLLATION)
        }
        SqlType::Year => {
            flags |= UNSIGNED_FLAG | ZEROFILL_FLAG;
            (T_YEAR, 4, 0, BINARY_COLLATION)
        }
    };
    WireCol { ty, flags, length, decimals, charset }
}

fn fsp_len(fsp: u8) -> u32 {
    if fsp == 0 {
        0
    } else {
        fsp as u32 + 1
    }
}

fn text_collation(c: fractaldb_sql::Collation) -> u16 {
    if c.charset() == fractaldb_sql::Charset::Utf8mb4 {
        c.id()
    } else {
        UTF8MB4_GENERAL_CI
    }
}

/// A column definition packet (Protocol::ColumnDefinition41). With
/// `default`, the COM_FIELD_LIST form: the column's default value follows.
pub fn column_def(meta: &ColumnMeta, default: Option<Option<&[u8]>>) -> Vec<u8> {
    let w = wire_col(meta);
    let mut p = Vec::with_capacity(64);
    put_lenenc_str(&mut p, b"def");
    put_lenenc_str(&mut p, meta.db.as_bytes());
    put_lenenc_str(&mut p, meta.table.as_bytes());
    put_lenenc_str(&mut p, meta.org_table.as_bytes());
    put_lenenc_str(&mut p, meta.name.as_bytes());
    put_lenenc_str(&mut p, meta.org_name.as_bytes());
    p.push(0x0c);
    p.extend_from_slice(&w.charset.to_le_bytes());
    p.extend_from_slice(&w.length.to_le_bytes());
    p.push(w.ty);
    p.extend_from_slice(&w.flags.to_le_bytes());
    p.push(w.decimals);
    p.extend_from_slice(&[0, 0]);
    match default {
        None => {}
        Some(None) => p.push(0xfb),
        Some(Some(d)) => put_lenenc_str(&mut p, d),
    }
    p
}

/// The column definition sent for each parameter at COM_STMT_PREPARE.
pub fn param_def() -> Vec<u8> {
    let meta = ColumnMeta::expr(
        "?",
        SqlType::Str { kind: StrKind::Var, len: 0, coll: fractaldb_sql::Collation::Binary },
    );
    column_def(&meta, None)
}

/// A text-protocol row: each value as the text MySQL prints, NULL as 0xfb.
pub fn text_row(out: &mut Vec<u8>, row: &[Value]) {
    for v in row {
        match v.to_bytes() {
            None => out.push(0xfb),
            Some(b) => put_lenenc_str(out, &b),
        }
    }
}

/// A binary-protocol row (COM_STMT_EXECUTE's result sets): each value in
/// the form its column's wire type says; NULLs in the bitmap (offset 2).
pub fn binary_row(out: &mut Vec<u8>, row: &[Value], cols: &[WireCol]) {
    debug_assert_eq!(row.len(), cols.len(), "a row has one value per column");
    out.push(0x00);
    let start = out.len();
    out.resize(start + (row.len() + 7 + 2) / 8, 0);
    for (i, (v, c)) in row.iter().zip(cols).enumerate() {
        if v.is_null() {
            let bit = i + 2;
            out[start + bit / 8] |= 1 << (bit % 8);
            continue;
        }
        let int = || match v {
            Value::UInt(u) => *u as i64,
            other => other.to_i64().unwrap_or(0),
        };
        match c.ty {
            T_TINY => out.push(int() as u8),
            T_SHORT | T_YEAR => out.extend_from_slice(&(int() as u16).to_le_bytes()),
            T_LONG | T_INT24 => out.extend_from_slice(&(int() as u32).to_le_bytes()),
            T_LONGLONG => out.extend_from_slice(&(int() as u64).to_le_bytes()),
            T_FLOAT => out.extend_from_slice(&(v.to_f64().unwrap_or(0.0) as f32).to_le_bytes()),
            T_DOUBLE => out.extend_from_slice(&v.to_f64().unwrap_or(0.0).to_le_bytes()),
            T_DATE | T_DATETIME | T_TIMESTAMP => {
                let kind = if c.ty == T_DATE { TemporalKind::Date } else { TemporalKind::DateTime };
                put_binary_datetime(out, &temporal_of(v, kind));
            }
            T_TIME => put_binary_time(out, &temporal_of(v, TemporalKind::Time)),
            _ => put_lenenc_str(out, &v.to_bytes().unwrap_or_default()),
        }
    }
}

/// A value of a temporal column as a `Temporal` (zero if it reads as none).
fn temporal_of(v: &Value, kind: TemporalKind) -> Temporal {
    match v {
        Value::Temporal(t) => *t,
        other => other
            .to_bytes()
            .and_then(|b| fractaldb_sql::temporal::parse(&b, kind))
            .unwrap_or_else(|| fractaldb_sql::temporal::zero(kind)),
    }
}

fn put_binary_datetime(out: &mut Vec<u8>, t: &Temporal) {
    let has_time =
        t.kind != TemporalKind::Date && (t.hour != 0 || t.minute != 0 || t.second != 0 || t.micro != 0);
    let len: u8 = if t.micro != 0 && t.kind != TemporalKind::Date {
        11
    } else if has_time {
        7
    } else if t.year == 0 && t.month == 0 && t.day == 0 {
        0
    } else {
        4
    };
    out.push(len);
    if len >= 4 {
        out.extend_from_slice(&t.year.to_le_bytes());
        out.push(t.month);
        out.push(t.day);
    }
    if len >= 7 {
        out.push(t.hour as u8);
        out.push(t.minute);
        out.push(t.second);
    }
    if len == 11 {
        out.extend_from_slice(&t.micro.to_le_bytes());
    }
}

fn put_binary_time(out: &mut Vec<u8>, t: &Temporal) {
    if t.hour == 0 && t.minute == 0 && t.second == 0 && t.micro == 0 {
        out.push(0);
        return;
    }
    out.push(if t.micro != 0 { 12 } else { 8 });
    out.push(t.neg as u8);
    out.extend_from_slice(&(t.hour / 24).to_le_bytes());
    out.push((t.hour % 24) as u8);
    out.push(t.minute);
    out.push(t.second);
    if t.micro != 0 {
        out.extend_from_slice(&t.micro.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips() {
        for n in [0u64, 250, 251, 65535, 65536, (1 << 24) - 1, 1 << 24, u64::MAX] {
            let mut b = Vec::new();
            put_lenenc_int(&mut b, n);
            assert_eq!(Cursor::new(&b).lenenc_int(), Some(n));
        }
        assert_eq!(Cursor::new(&[0xfc, 1]).lenenc_int(), None, "truncated");
        assert_eq!(Cursor::new(&[0xff]).lenenc_int(), None);
    }

    #[test]
    fn binary_row_null_bitmap_has_offset_two() {
        let cols = vec![WireCol { ty: T_LONGLONG, flags: 0, length: 20, decimals: 0, charset: 63 }; 3];
        let mut out = Vec::new();
        binary_row(&mut out, &[Value::Int(7), Value::Null, Value::Int(-1)], &cols);
        assert_eq!(out[0], 0);
        assert_eq!(out[1], 1 << 3);
        assert_eq!(&out[2..10], &7i64.to_le_bytes());
        assert_eq!(&out[10..18], &(-1i64).to_le_bytes());
    }
}
