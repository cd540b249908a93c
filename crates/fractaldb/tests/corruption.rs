//! Corruption: flipped bits and truncated files are reported as errors that
//! name the file (and block), never panicked on, never returned as data.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use fractaldb::{Codec, DictOptions, Env, EnvOptions, Error};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn opts() -> EnvOptions {
    EnvOptions { cache_size_bytes: 1 << 20, ..Default::default() }
}

/// Builds an environment with one dictionary of small nodes; returns the
/// model of its contents and the path of its data file.
fn build(dir: &Path) -> (BTreeMap<Vec<u8>, Vec<u8>>, PathBuf) {
    let env = Env::open(dir, opts()).unwrap();
    let d = env
        .create_dictionary(
            "t",
            DictOptions {
                node_size_bytes: 8192,
                basement_size_bytes: 1024,
                fanout: 4,
                codec: Codec::Zstd,
                comparator: None,
            },
        )
        .unwrap();
    let mut model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(1);
    for i in 0..3000u32 {
        let k = format!("key{:06}", rng.gen_range(0..100_000)).into_bytes();
        let v = format!("value-{i}-{}", "x".repeat(i as usize % 50)).into_bytes();
        d.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    env.close().unwrap();
    let file = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "fdb"))
        .unwrap();
    (model, file)
}

/// Reads everything back. Every value returned must be the right one; any
/// failure must be an error of the corruption kind (or I/O for a short file).
fn read_all(dir: &Path, model: &BTreeMap<Vec<u8>, Vec<u8>>) -> Result<(), Error> {
    let env = Env::open(dir, opts())?;
    let d = env.open_dictionary("t")?;
    let mut c = d.cursor();
    let mut ok = c.first()?;
    let mut expect = model.iter();
    while ok {
        let (k, v) = expect.next().expect("scan returned more keys than were written");
        assert_eq!((c.key(), c.value()), (Some(&k[..]), Some(&v[..])), "corrupt data returned as a value");
        ok = c.next()?;
    }
    assert!(expect.next().is_none(), "scan lost keys without reporting an error");
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(d.get(k)?.as_deref(), Some(&v[..]), "corrupt data returned by get");
    }
    d.check()?;
    drop(d);
    // Reads dirty nothing, so closing writes no node over the damaged file.
    env.close()
}

fn assert_reported(err: &Error, file: &Path) {
    let msg = err.to_string();
    assert!(
        err.is_corruption() || matches!(err, Error::Io { .. }),
        "expected a corruption or I/O error, got {err:?}"
    );
    assert!(msg.contains(&*file.to_string_lossy()), "error does not name the file: {msg}");
}

#[test]
fn flipped_bits_are_reported_never_returned() {
    let dir = tempfile::tempdir().unwrap();
    let (model, file) = build(dir.path());
    let pristine = fs::read(&file).unwrap();
    let mut rng = SmallRng::seed_from_u64(2);
    let (mut detected, mut harmless) = (0, 0);
    for _ in 0..150 {
        let mut bytes = pristine.clone();
        let at = rng.gen_range(0..bytes.len());
        bytes[at] ^= 1 << rng.gen_range(0..8);
        fs::write(&file, &bytes).unwrap();
        match read_all(dir.path(), &model) {
            Ok(()) => harmless += 1, // the bit was in padding or free space
            Err(e) => {
                assert_reported(&e, &file);
                detected += 1;
            }
        }
    }
    fs::write(&file, &pristine).unwrap();
    read_all(dir.path(), &model).unwrap();
    assert!(detected > 10, "only {detected} of {} flips detected", detected + harmless);
}

#[test]
fn truncated_files_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (model, file) = build(dir.path());
    let pristine = fs::read(&file).unwrap();
    for cut in [0, 100, 4096, 8192, 8200, pristine.len() / 3, pristine.len() / 2, pristine.len() - 4096] {
        fs::write(&file, &pristine[..cut]).unwrap();
        let err = read_all(dir.path(), &model).expect_err("a truncated file read back fine");
        assert_reported(&err, &file);
    }
}

#[test]
fn a_newer_format_version_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (_model, file) = build(dir.path());
    let mut bytes = fs::read(&file).unwrap();
    // Rewrite every header copy as version 3 with valid checksums.
    for slot in [0usize, 4096, 8192, 12288] {
        let h = &mut bytes[slot..slot + 4096];
        if &h[..8] != b"FDBHEADR" {
            continue;
        }
        h[8..12].copy_from_slice(&3u32.to_le_bytes());
        let c = u32::from_le_bytes(h[12..16].try_into().unwrap()) as usize;
        let crc = crc32c::crc32c(&h[..c]);
        h[c..c + 4].copy_from_slice(&crc.to_le_bytes());
    }
    fs::write(&file, &bytes).unwrap();
    let env = Env::open(dir.path(), opts()).unwrap();
    match env.open_dictionary("t") {
        Err(Error::UnsupportedVersion { found: 3, .. }) => {}
        other => panic!("expected UnsupportedVersion, got {:?}", other.err()),
    }
}

/// Damage to the header of the newest checkpoint after it was durable (a
/// flipped bit, a zeroed range; each header is written twice, at offsets
/// 8192 apart) must not make the dictionary open an older checkpoint,
/// whose rows are stale and whose writes the log no longer holds: the
/// other copy is read.
#[test]
fn a_damaged_newest_header_does_not_fall_back_to_stale_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (model, file) = build(dir.path());
    let pristine = fs::read(&file).unwrap();
    let mut flipped = pristine.clone();
    flipped[0] ^= 4;
    let mut damaged = vec![flipped];
    for (at, len) in
        [(0, 1296), (0, 4096), (4096, 4096), (0, 8192), (1850, 2974), (8192, 4096), (12288, 4096)]
    {
        let mut b = pristine.clone();
        b[at..at + len].fill(0);
        damaged.push(b);
    }
    for (i, bytes) in damaged.iter().enumerate() {
        fs::write(&file, bytes).unwrap();
        if let Err(e) = read_all(dir.path(), &model) {
            panic!("damage {i}: {e}");
        }
    }
}

#[test]
fn missing_dictionaries_and_damaged_catalogs_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_model, _file) = build(dir.path());
    let env = Env::open(dir.path(), opts()).unwrap();
    assert!(matches!(env.open_dictionary("nope"), Err(Error::NoSuchDictionary(_))));
    assert!(matches!(env.create_dictionary("t", DictOptions::default()), Err(Error::DictionaryExists(_))));
    assert!(matches!(Env::open(dir.path(), opts()), Err(Error::Locked(_))));
    env.close().unwrap();
    let cat = dir.path().join("catalog");
    let mut bytes = fs::read(&cat).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x40;
    fs::write(&cat, &bytes).unwrap();
    let err = Env::open(dir.path(), opts()).err().expect("a damaged catalog opened");
    assert!(err.is_corruption(), "{err:?}");
}
