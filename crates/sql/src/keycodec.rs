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
    // Interim (replaced by the real codec): ints and bytes only.
    let _ = (ty, desc, prefix_chars);
    match v {
        Value::Null => out.push(0),
        Value::Int(i) => {
            out.push(1);
            out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::UInt(u) => {
            out.push(1);
            out.extend_from_slice(&u.to_be_bytes());
        }
        other => {
            out.push(1);
            for b in other.to_bytes().unwrap_or_default() {
                if b == 0 {
                    out.extend_from_slice(&[0, 1]);
                } else {
                    out.push(b);
                }
            }
            out.extend_from_slice(&[0, 0]);
        }
    }
    Ok(())
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
