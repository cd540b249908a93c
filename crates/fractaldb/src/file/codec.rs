//! Compression codecs for node partitions.

use std::io::{Read, Write};

/// A compression algorithm, chosen per dictionary and recorded (as its `u8`) in
/// every compressed partition so a reader never has to guess.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Codec {
    None = 0,
    #[default]
    Zstd = 1,
    Lz4 = 2,
    Snappy = 3,
    Zlib = 4,
    Lzma = 5,
}

impl Codec {
    pub(crate) const ALL: [Codec; 6] =
        [Codec::None, Codec::Zstd, Codec::Lz4, Codec::Snappy, Codec::Zlib, Codec::Lzma];

    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
            Codec::Snappy => "snappy",
            Codec::Zlib => "zlib",
            Codec::Lzma => "lzma",
        }
    }

    /// Parses a codec name, or a TokuDB row format so that old `ROW_FORMAT=...`
    /// clauses keep working. Case-insensitive.
    pub fn from_name(name: &str) -> Option<Codec> {
        let codec = match name.to_ascii_lowercase().as_str() {
            "none" | "tokudb_uncompressed" => Codec::None,
            "zstd" | "tokudb_default" => Codec::Zstd,
            // QuickLZ is gone; lz4 fills the same "fast, light" role.
            "lz4" | "tokudb_quicklz" | "tokudb_fast" => Codec::Lz4,
            "snappy" | "tokudb_snappy" => Codec::Snappy,
            "zlib" | "tokudb_zlib" => Codec::Zlib,
            "lzma" | "tokudb_lzma" | "tokudb_small" => Codec::Lzma,
            _ => return None,
        };
        Some(codec)
    }

    pub(crate) fn from_u8(v: u8) -> Option<Codec> {
        Codec::ALL.get(usize::from(v)).copied()
    }

    /// The codec for an internal node's message buffers in a dictionary
    /// whose leaves use `self`: lz4 in place of the slow, strong codecs.
    /// Buffers live briefly (every flush rewrites them) and are a small part
    /// of the file, but compressing them was a large part of a load's CPU.
    pub(crate) fn for_buffers(self) -> Codec {
        match self {
            Codec::Zstd | Codec::Zlib | Codec::Lzma => Codec::Lz4,
            fast => fast,
        }
    }

    /// Appends the compressed form of `raw` to `out`.
    pub(crate) fn compress(self, raw: &[u8], out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail, so the encoders' io::Results are infallible here.
        let infallible = "compressing into a Vec cannot fail";
        match self {
            Codec::None => out.extend_from_slice(raw),
            Codec::Zstd => ZSTD_CCTX.with(|c| {
                // One context per thread: creating one costs more than
                // compressing a basement.
                let mut c = c.borrow_mut();
                let c =
                    c.get_or_insert_with(|| zstd::bulk::Compressor::new(ZSTD_LEVEL).expect("zstd context"));
                // Straight into `out`: `compress` returned a new vector of the
                // bound's size (a large allocation, often fresh pages) to copy from.
                let start = out.len();
                out.resize(start + zstd::zstd_safe::compress_bound(raw.len()), 0);
                let n = c.compress_to_buffer(raw, &mut out[start..]).expect(infallible);
                out.truncate(start + n);
            }),
            Codec::Lz4 => out.extend_from_slice(&lz4_flex::block::compress(raw)),
            Codec::Snappy => {
                out.extend_from_slice(&snap::raw::Encoder::new().compress_vec(raw).expect(infallible))
            }
            Codec::Zlib => {
                let mut enc = flate2::write::ZlibEncoder::new(out, flate2::Compression::new(3));
                enc.write_all(raw).and_then(|_| enc.finish().map(drop)).expect(infallible)
            }
            Codec::Lzma => {
                let mut enc = xz2::write::XzEncoder::new(out, 2);
                enc.write_all(raw).and_then(|_| enc.finish().map(drop)).expect(infallible)
            }
        }
    }

    /// Decompresses `data`, which must expand to exactly `raw_len` bytes. Garbage
    /// gives `Err` (a reason for the caller's corruption error), never a panic, and
    /// no codec is allowed to produce more than `raw_len` bytes on the way.
    pub(crate) fn decompress(self, data: &[u8], raw_len: usize) -> std::result::Result<Vec<u8>, String> {
        let out = match self {
            Codec::None => data.to_vec(),
            Codec::Zstd => ZSTD_DCTX.with(|d| {
                let mut d = d.borrow_mut();
                let d = match d.as_mut() {
                    Some(d) => d,
                    None => d.insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
                };
                d.decompress(data, raw_len).map_err(|e| e.to_string())
            })?,
            Codec::Lz4 => lz4_flex::block::decompress(data, raw_len).map_err(|e| e.to_string())?,
            Codec::Snappy => {
                let n = snap::raw::decompress_len(data).map_err(|e| e.to_string())?;
                if n != raw_len {
                    return Err(format!("snappy: stream claims {n} bytes, expected {raw_len}"));
                }
                snap::raw::Decoder::new().decompress_vec(data).map_err(|e| e.to_string())?
            }
            Codec::Zlib => read_bounded(flate2::read::ZlibDecoder::new(data), raw_len)?,
            Codec::Lzma => read_bounded(xz2::read::XzDecoder::new(data), raw_len)?,
        };
        if out.len() != raw_len {
            return Err(format!("{}: decompressed to {} bytes, expected {raw_len}", self.name(), out.len()));
        }
        Ok(out)
    }
}

const ZSTD_LEVEL: i32 = 1;

thread_local! {
    static ZSTD_CCTX: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> = const { std::cell::RefCell::new(None) };
    static ZSTD_DCTX: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
}

/// Reads at most `raw_len + 1` bytes: enough to notice a stream that is too long
/// without letting a hostile one fill memory.
fn read_bounded(reader: impl Read, raw_len: usize) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(raw_len);
    reader.take(raw_len as u64 + 1).read_to_end(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, RngCore, SeedableRng};

    fn samples() -> Vec<Vec<u8>> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut random = vec![0u8; 70_000];
        rng.fill_bytes(&mut random);
        let text: Vec<u8> = (0..50_000u32).flat_map(|i| format!("key{:06} ", i % 977).into_bytes()).collect();
        vec![Vec::new(), b"x".to_vec(), text, random]
    }

    #[test]
    fn every_codec_round_trips_empty_small_compressible_and_random_input() {
        for codec in Codec::ALL {
            for raw in samples() {
                let mut out = b"prefix".to_vec();
                codec.compress(&raw, &mut out);
                assert_eq!(&out[..6], b"prefix", "{codec:?} must append, not overwrite");
                assert_eq!(codec.decompress(&out[6..], raw.len()).unwrap(), raw, "{codec:?}");
            }
        }
    }

    #[test]
    fn compressible_input_shrinks() {
        let text = &samples()[2];
        for codec in Codec::ALL.into_iter().filter(|&c| c != Codec::None) {
            let mut out = Vec::new();
            codec.compress(text, &mut out);
            assert!(out.len() < text.len() / 4, "{codec:?}: {} of {}", out.len(), text.len());
        }
    }

    #[test]
    fn garbage_wrong_lengths_and_truncation_are_errors_not_panics() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let raw = &samples()[2];
        for codec in Codec::ALL {
            let mut good = Vec::new();
            codec.compress(raw, &mut good);
            assert!(codec.decompress(&good, raw.len() - 1).is_err(), "{codec:?} too long");
            assert!(codec.decompress(&good, raw.len() + 1).is_err(), "{codec:?} too short");
            assert!(codec.decompress(&good[..good.len() / 2], raw.len()).is_err(), "{codec:?} truncated");
            for _ in 0..200 {
                let mut junk = vec![0u8; rng.gen_range(0..300)];
                rng.fill_bytes(&mut junk);
                // The only acceptable outcomes: an error, or exactly raw_len bytes.
                if let Ok(out) = codec.decompress(&junk, 1000) {
                    assert_eq!(out.len(), 1000);
                }
                let mut flipped = good.clone();
                let i = rng.gen_range(0..flipped.len());
                flipped[i] ^= 1 << rng.gen_range(0..8);
                if let Ok(out) = codec.decompress(&flipped, raw.len()) {
                    assert_eq!(out.len(), raw.len());
                }
            }
        }
    }

    #[test]
    fn names_round_trip_and_tokudb_row_formats_map_case_insensitively() {
        for codec in Codec::ALL {
            assert_eq!(Codec::from_name(codec.name()), Some(codec));
            assert_eq!(Codec::from_name(&codec.name().to_uppercase()), Some(codec));
            assert_eq!(Codec::from_u8(codec as u8), Some(codec));
        }
        let toku = [
            ("TOKUDB_ZLIB", Codec::Zlib),
            ("tokudb_quicklz", Codec::Lz4),
            ("TokuDB_LZMA", Codec::Lzma),
            ("tokudb_snappy", Codec::Snappy),
            ("TOKUDB_UNCOMPRESSED", Codec::None),
            ("tokudb_fast", Codec::Lz4),
            ("tokudb_small", Codec::Lzma),
            ("tokudb_default", Codec::Zstd),
        ];
        for (name, codec) in toku {
            assert_eq!(Codec::from_name(name), Some(codec), "{name}");
        }
        assert_eq!(Codec::from_name("brotli"), None);
        assert_eq!(Codec::from_u8(6), None);
        assert_eq!(Codec::default(), Codec::Zstd);
    }
}
