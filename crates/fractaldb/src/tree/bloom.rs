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
        let (h1, h2) = hashes(k);
        for i in 0..PROBES {
            let bit = (u64::from(h1) + u64::from(i) * u64::from(h2)) % m;
            bits[(bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    bits.into_boxed_slice()
}

/// False only if `key` is certainly not among the keys `filter` was built
/// over. An empty filter (none built) may hold anything.
pub(crate) fn may_contain(filter: &[u8], key: &[u8]) -> bool {
    if filter.is_empty() {
        return true;
    }
    let m = (filter.len() * 8) as u64;
    let (h1, h2) = hashes(key);
    (0..PROBES).all(|i| {
        let bit = (u64::from(h1) + u64::from(i) * u64::from(h2)) % m;
        filter[(bit / 8) as usize] & (1 << (bit % 8)) != 0
    })
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
}
