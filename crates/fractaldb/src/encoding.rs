//! Little helpers for the byte formats: LEB128 varints and a bounds-checked
//! reader whose every failure is a value, so a corrupt block can never make
//! the engine panic or read out of bounds.

/// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-prefixed byte string.
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Number of bytes `put_varint(v)` writes.
pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// A cursor over a byte slice whose reads fail with a short reason instead of
/// panicking when the bytes run out or make no sense.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

pub(crate) type DecodeResult<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn take(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(format!(
                "needs {n} bytes at offset {}, only {} left",
                self.pos,
                self.buf.len() - self.pos
            )),
        }
    }

    pub(crate) fn u8(&mut self) -> DecodeResult<u8> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }

    pub(crate) fn u32(&mut self) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    pub(crate) fn u64(&mut self) -> DecodeResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    pub(crate) fn varint(&mut self) -> DecodeResult<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("varint longer than 10 bytes at offset {}", self.pos))
    }

    /// A varint that is a length of something still inside the buffer.
    pub(crate) fn len(&mut self) -> DecodeResult<usize> {
        let v = self.varint()?;
        if v > (self.buf.len() - self.pos) as u64 {
            return Err(format!("length {v} at offset {} runs past the end", self.pos));
        }
        Ok(v as usize)
    }

    pub(crate) fn bytes(&mut self) -> DecodeResult<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_report_their_length() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            assert_eq!(Reader::new(&out).varint().unwrap(), v);
        }
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut out = Vec::new();
        put_bytes(&mut out, b"hello");
        for cut in 0..out.len() {
            assert!(Reader::new(&out[..cut]).bytes().is_err());
        }
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
    }
}
