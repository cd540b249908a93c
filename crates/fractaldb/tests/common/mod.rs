//! What the engine's simulated-disk tests start from. Each test binary
//! includes this module (`mod common;`) and changes what it tests.
#![allow(dead_code)]

use fractaldb::{Codec, DictOptions, EnvOptions, SimVfs};

/// An environment on `sim`'s disk (booted anew: the state after the last
/// crash), small enough that a few thousand keys leave the cache: a 256
/// KiB cache, 64 KiB log files, no O_DIRECT, no reserved space, no
/// background threads, checkpoints only when asked, every commit synced.
pub fn sim_opts(sim: &SimVfs) -> EnvOptions {
    EnvOptions {
        cache_size_bytes: 256 << 10,
        direct_io: false,
        background_threads: false,
        vfs: sim.boot(),
        commit_sync: true,
        checkpoint_period: None,
        log_file_size_bytes: 64 << 10,
        reserve_free_bytes: 0,
        ..Default::default()
    }
}

/// Tiny nodes (2 KiB, 256-byte basements, fanout 4, lz4): a few hundred
/// keys make a tree of several levels.
pub fn small_dict() -> DictOptions {
    DictOptions {
        node_size_bytes: 2048,
        basement_size_bytes: 256,
        fanout: 4,
        codec: Codec::Lz4,
        comparator: None,
    }
}

/// This test binary run again as a child for test `test` alone, with
/// `vars` set (the child sees them and does the test's child side),
/// stderr shared, and the lines it prints to read as they come.
pub fn spawn_self(
    test: &str,
    vars: &[(&str, String)],
) -> (std::process::Child, std::io::Lines<std::io::BufReader<std::process::ChildStdout>>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture"])
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}
