//! Bloom filters over the keys of a spill (`flush.rs`, Spills), kept in the
//! parent's header beside the spill's entry, so a point read passing a
//! child with spills reads only the spills that may hold its key.
//!
//! About 10 bits per key and 7 probes: about 1% false positives. Probes are
//! double hashing over two CRC-32C values of the key (hardware CRC, cheap
//! and well mixed enough for this). Keys are hashed as bytes, so a filter
//! is only valid for the bytewise order: under a custom comparator two
//! different byte strings can be the same key. Such dictionaries (and
//! spills holding broadcasts, which apply to every key) get no filter, and
//! every read reads the spill.

/// Bits per key the filter is sized for.
const BITS_PER_KEY: usize = 10;
/// Probes per key.
const PROBES: u32 = 7;
/// Seed of the second hash.
const SEED2: u32 = 0x9e37_79b9;

fn hashes(key: &[u8]) -> (u32, u32) {
    (crc32c::crc32c(key), crc32c::crc32c_append(SEED2, key) | 1)
}

/// Builds a filter over `keys` (`n` of them, duplicates allowed). Empty
/// for no keys.
pub(crate) fn build<'a>(keys: impl Iterator<Item = &'a [u8]>, n: usize) -> Box<[u8]> {
    if n == 0 {
        return Box::new([]);
    }
    let bytes = (n * BITS_PER_KEY).div_ceil(8).max(8);
    let mut bits = vec![0u8; bytes];
    let m = (bytes * 8) as u64;
    for k in keys {
        for bit in probes(k, m) {
            bits[(bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    bits.into_boxed_slice()
}

/// The bits `key` sets in a filter of `m` bits: `(h1 + i * h2) mod m` for
/// `i` in `0..PROBES`, the filter's format. Reduced once and then stepped
/// by addition: two divisions per key instead of one per probe, which
/// were most of building a filter.
fn probes(key: &[u8], m: u64) -> impl Iterator<Item = u64> {
    let (h1, h2) = hashes(key);
    let (mut bit, step) = (u64::from(h1) % m, u64::from(h2) % m);
    (0..PROBES).map(move |_| {
        let b = bit;
        bit += step;
        if bit >= m {
            bit -= m;
        }
        b
    })
}

/// False only if `key` is certainly not among the keys `filter` was built
/// over. An empty filter (none built) may hold anything.
pub(crate) fn may_contain(filter: &[u8], key: &[u8]) -> bool {
    if filter.is_empty() {
        return true;
    }
    let m = (filter.len() * 8) as u64;
    probes(key, m).all(|bit| filter[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys: Vec<Vec<u8>> = (0..1000u32).map(|i| format!("key{i}").into_bytes()).collect();
        let f = build(keys.iter().map(|k| &k[..]), keys.len());
        assert!(keys.iter().all(|k| may_contain(&f, k)));
        let fp = (0..10_000u32).filter(|i| may_contain(&f, format!("other{i}").as_bytes())).count();
        assert!(fp < 300, "{fp} false positives in 10000");
        assert!(may_contain(&[], b"anything"));
        assert!(build(std::iter::empty(), 0).is_empty());
    }

    /// Filters are on disk: the probes must stay `(h1 + i * h2) mod m`.
    #[test]
    fn probes_are_the_formats() {
        for m in [64u64, 80, 1000, 12_345, 1 << 20] {
            for i in 0..200u32 {
                let key = format!("k{i}");
                let (h1, h2) = hashes(key.as_bytes());
                let want: Vec<u64> =
                    (0..PROBES).map(|p| (u64::from(h1) + u64::from(p) * u64::from(h2)) % m).collect();
                assert_eq!(probes(key.as_bytes(), m).collect::<Vec<_>>(), want, "m {m} key {key}");
            }
        }
    }
}
