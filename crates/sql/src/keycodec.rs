//! Order-preserving key encoding. (Stub: helper owns it.)
use crate::error::SqlResult;
use crate::types::SqlType;
use crate::value::Value;

/// Appends `v` (already converted to `ty`'s stored form) as one key part.
pub fn encode_part(
    out: &mut Vec<u8>,
    v: &Value,
    ty: &SqlType,
    desc: bool,
    prefix_chars: Option<u32>,
) -> SqlResult<()> {
    let _ = (out, v, ty, desc, prefix_chars);
    todo!()
}

/// Steps over one key part at the front of `buf`.
pub fn skip_part(buf: &mut &[u8], ty: &SqlType, desc: bool) -> SqlResult<()> {
    let _ = (buf, ty, desc);
    todo!()
}

/// Reads one key part back, or `Ok(None)` (after stepping over it) where the
/// key holds only a sort key (case-insensitive strings, prefixes).
pub fn decode_part(buf: &mut &[u8], ty: &SqlType, desc: bool) -> SqlResult<Option<Value>> {
    let _ = (buf, ty, desc);
    todo!()
}
