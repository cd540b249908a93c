//! Authentication: the scramble, `mysql_native_password` and the fast path
//! of `caching_sha2_password`.
//!
//! Accounts are not built yet (issue 23's users and privileges): the only
//! account is `root` with an empty password. Its stored hashes are absent,
//! and an empty password's correct response under either plugin is an
//! empty response; the verification below is the general one, so accounts
//! with passwords only need a place to keep their hashes.

use sha1::{Digest as _, Sha1};
use sha2::Sha256;

pub const NATIVE: &str = "mysql_native_password";
pub const CACHING_SHA2: &str = "caching_sha2_password";

/// An account's stored credentials.
pub struct Account {
    /// SHA1(SHA1(password)), or `None` for an empty password.
    pub native_hash: Option<[u8; 20]>,
    /// SHA256(SHA256(password)) (what caching_sha2_password's cache
    /// holds), or `None` for an empty password.
    pub sha2_hash: Option<[u8; 32]>,
}

/// The accounts there are.
pub fn find_account(user: &[u8]) -> Option<Account> {
    (user == b"root").then_some(Account { native_hash: None, sha2_hash: None })
}

/// 20 random printable bytes (no NUL: clients read part 2 up to a NUL).
pub fn new_scramble() -> [u8; 20] {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    let mut s = [0u8; 20];
    for b in &mut s {
        *b = rng.gen_range(0x21u8..0x7f);
    }
    s
}

/// Whether `response`, sent for `plugin` after `scramble`, proves the
/// account's password. An unknown plugin never does.
pub fn verify(acct: &Account, plugin: &str, scramble: &[u8; 20], response: &[u8]) -> bool {
    match plugin {
        NATIVE => match &acct.native_hash {
            None => response.is_empty(),
            Some(h) => verify_native(h, scramble, response),
        },
        CACHING_SHA2 => match &acct.sha2_hash {
            // Some clients send a lone NUL for an empty password.
            None => response.is_empty() || response == [0],
            Some(h) => verify_sha2(h, scramble, response),
        },
        _ => false,
    }
}

/// response = SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))).
fn verify_native(stage2: &[u8; 20], scramble: &[u8; 20], response: &[u8]) -> bool {
    if response.len() != 20 {
        return false;
    }
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(stage2);
    let mask = h.finalize();
    let stage1: Vec<u8> = response.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
    Sha1::digest(&stage1).as_slice() == stage2
}

/// response = SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + scramble).
fn verify_sha2(stage2: &[u8; 32], scramble: &[u8; 20], response: &[u8]) -> bool {
    if response.len() != 32 {
        return false;
    }
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(scramble);
    let mask = h.finalize();
    let stage1: Vec<u8> = response.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
    Sha256::digest(&stage1).as_slice() == stage2
}

/// Whether `user` may run SHUTDOWN (MySQL's SHUTDOWN privilege). The one
/// place the accounts code decides it; until accounts exist only root may.
pub(crate) fn may_shutdown(user: &str) -> bool {
    user == "root"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native_response(pw: &[u8], scramble: &[u8; 20]) -> Vec<u8> {
        let s1 = Sha1::digest(pw);
        let s2 = Sha1::digest(s1);
        let mut h = Sha1::new();
        h.update(scramble);
        h.update(s2);
        s1.iter().zip(h.finalize().iter()).map(|(a, b)| a ^ b).collect()
    }

    fn sha2_response(pw: &[u8], scramble: &[u8; 20]) -> Vec<u8> {
        let s1 = Sha256::digest(pw);
        let s2 = Sha256::digest(s1);
        let mut h = Sha256::new();
        h.update(s2);
        h.update(scramble);
        s1.iter().zip(h.finalize().iter()).map(|(a, b)| a ^ b).collect()
    }

    #[test]
    fn passwords_verify_under_both_plugins() {
        let scramble = new_scramble();
        let acct = Account {
            native_hash: Some(Sha1::digest(Sha1::digest(b"secret")).into()),
            sha2_hash: Some(Sha256::digest(Sha256::digest(b"secret")).into()),
        };
        assert!(verify(&acct, NATIVE, &scramble, &native_response(b"secret", &scramble)));
        assert!(!verify(&acct, NATIVE, &scramble, &native_response(b"wrong", &scramble)));
        assert!(!verify(&acct, NATIVE, &scramble, b""));
        assert!(verify(&acct, CACHING_SHA2, &scramble, &sha2_response(b"secret", &scramble)));
        assert!(!verify(&acct, CACHING_SHA2, &scramble, &sha2_response(b"wrong", &scramble)));
        assert!(!verify(&acct, "client_ed25519", &scramble, b""));
    }

    #[test]
    fn root_has_an_empty_password() {
        let scramble = new_scramble();
        let root = find_account(b"root").unwrap();
        assert!(verify(&root, NATIVE, &scramble, b""));
        assert!(!verify(&root, NATIVE, &scramble, &native_response(b"x", &scramble)));
        assert!(verify(&root, CACHING_SHA2, &scramble, b""));
        assert!(find_account(b"bob").is_none());
        assert!(scramble.iter().all(|&b| b != 0));
    }
}
