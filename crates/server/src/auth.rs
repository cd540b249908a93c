//! Authentication: the scramble, `mysql_native_password` and
//! `caching_sha2_password` (its fast path, and its full authentication:
//! the password in clear over TLS or the Unix socket, or RSA-encrypted
//! with the server's key pair).
//!
//! The accounts live in the SQL layer (`fractaldb_sql`'s accounts, stored
//! in the data folder); the server asks the `Database` for the account a
//! (user, client host) logs in as and gets its plugin and stored hashes:
//! SHA1(SHA1(pw)) and SHA256(SHA256(pw)). Those verify a scramble response
//! without the cleartext password (and so are password-equivalent for these
//! challenge protocols). An empty password's correct response under either
//! plugin is an empty response.

use std::path::{Path, PathBuf};

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

impl From<&fractaldb_sql::Credentials> for Account {
    fn from(c: &fractaldb_sql::Credentials) -> Account {
        Account { native_hash: c.native, sha2_hash: c.sha2 }
    }
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
        // A missing hash means no password only when the other is missing
        // too (an account made from a native hash has no SHA-256 one).
        NATIVE => match &acct.native_hash {
            None => acct.sha2_hash.is_none() && response.is_empty(),
            Some(h) => verify_native(h, scramble, response),
        },
        CACHING_SHA2 => match &acct.sha2_hash {
            // Some clients send a lone NUL for an empty password.
            None => acct.native_hash.is_none() && (response.is_empty() || response == [0]),
            Some(h) => verify_sha2(h, scramble, response),
        },
        _ => false,
    }
}

/// Whether a password sent whole (caching_sha2_password's full
/// authentication) is the account's: SHA256(SHA256(pw)) against the stored
/// hash, or SHA1(SHA1(pw)) for an account that has only a native hash.
pub fn verify_cleartext(acct: &Account, pw: &[u8]) -> bool {
    match (&acct.sha2_hash, &acct.native_hash) {
        (Some(h), _) => Sha256::digest(Sha256::digest(pw)).as_slice() == h,
        (None, Some(h)) => Sha1::digest(Sha1::digest(pw)).as_slice() == h,
        (None, None) => pw.is_empty(),
    }
}

// caching_sha2_password's protocol bytes (after a 0x01 "more data" header
// from the server; the key request is the client's whole packet).
pub const FAST_AUTH_SUCCESS: u8 = 3;
pub const PERFORM_FULL_AUTHENTICATION: u8 = 4;
pub const REQUEST_PUBLIC_KEY: u8 = 2;

/// The key pair's files in the data folder (MySQL's default names for
/// caching_sha2_password_private_key_path / _public_key_path).
pub const PRIVATE_KEY: &str = "private_key.pem";
pub const PUBLIC_KEY: &str = "public_key.pem";

/// The server's RSA key pair: clients without TLS encrypt the password
/// with its public key (RSA-OAEP with SHA-1, as MySQL's clients do).
pub struct RsaKeys {
    key: rsa::PrivateKey,
    /// The public key, PEM (SubjectPublicKeyInfo), as sent to clients.
    pub public_pem: String,
    pub private_path: PathBuf,
}

impl RsaKeys {
    /// Reads `private_key.pem` from the data folder (PKCS#1 or PKCS#8), or
    /// first generates the pair (3072 bits) and writes both files, the
    /// private one with mode 0600, each written whole before it gets its
    /// name.
    pub fn load_or_generate(datadir: &Path) -> Result<RsaKeys, String> {
        use rsa::pkcs1::{DecodeRsaPrivateKey as _, EncodeRsaPrivateKey as _};
        use rsa::pkcs8::{DecodePrivateKey as _, EncodePublicKey as _, LineEnding};
        let private_path = datadir.join(PRIVATE_KEY);
        let public_path = datadir.join(PUBLIC_KEY);
        let key = if private_path.exists() {
            let pem = std::fs::read_to_string(&private_path)
                .map_err(|e| format!("cannot read {}: {e}", private_path.display()))?;
            rsa::PrivateKey::from_pkcs1_pem(&pem)
                .or_else(|_| rsa::PrivateKey::from_pkcs8_pem(&pem))
                .map_err(|e| format!("{}: not an RSA private key: {e}", private_path.display()))?
        } else {
            use rsa::Generate as _;
            let key = rsa::PrivateKey::try_generate().map_err(|e| format!("generating an RSA key: {e}"))?;
            let pem = key.to_pkcs1_pem(LineEnding::LF).map_err(|e| format!("encoding the RSA key: {e}"))?;
            let public = key
                .to_public_key()
                .to_public_key_pem(LineEnding::LF)
                .map_err(|e| format!("encoding the RSA key: {e}"))?;
            crate::tls::write_file(&private_path, pem.as_bytes(), 0o600)?;
            crate::tls::write_file(&public_path, public.as_bytes(), 0o644)?;
            key
        };
        let public_pem = key
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| format!("encoding the RSA key: {e}"))?;
        Ok(RsaKeys { key, public_pem, private_path })
    }

    /// The password a client sent RSA-encrypted: decrypted (OAEP, SHA-1),
    /// unmasked (XOR with the scramble, repeated) and without its closing
    /// NUL. `None` when it does not decrypt.
    pub fn decrypt_password(&self, cipher: &[u8], scramble: &[u8; 20]) -> Option<Vec<u8>> {
        let mut pw = self.key.oaep_decrypt::<Sha1>(cipher).ok()?;
        for (i, b) in pw.iter_mut().enumerate() {
            *b ^= scramble[i % scramble.len()];
        }
        if pw.last() == Some(&0) {
            pw.pop();
        }
        Some(pw)
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
    fn cleartext_passwords_verify() {
        let acct = Account {
            native_hash: Some(Sha1::digest(Sha1::digest(b"secret")).into()),
            sha2_hash: Some(Sha256::digest(Sha256::digest(b"secret")).into()),
        };
        assert!(verify_cleartext(&acct, b"secret"));
        assert!(!verify_cleartext(&acct, b"secreT"));
        let native_only = Account { native_hash: acct.native_hash, sha2_hash: None };
        assert!(verify_cleartext(&native_only, b"secret"));
        assert!(!verify_cleartext(&native_only, b""));
    }

    /// A key in the data folder is read (PKCS#1, as MySQL writes it); a
    /// password encrypted as clients do it decrypts.
    #[test]
    fn rsa_password_round_trip() {
        use rsa::pkcs1::EncodeRsaPrivateKey as _;
        let dir = tempfile::tempdir().unwrap();
        // 1024 bits: quick to make; the server makes 3072-bit keys.
        let mut rng = TestRng(rand::thread_rng());
        let key = rsa::PrivateKey::new(&mut rng, 1024).unwrap();
        let pem = key.to_pkcs1_pem(rsa::pkcs8::LineEnding::LF).unwrap();
        std::fs::write(dir.path().join(PRIVATE_KEY), pem.as_bytes()).unwrap();
        let keys = RsaKeys::load_or_generate(dir.path()).unwrap();
        assert!(keys.public_pem.starts_with("-----BEGIN PUBLIC KEY-----"));
        let scramble = new_scramble();
        let mut masked = b"pa55word\0".to_vec();
        for (i, b) in masked.iter_mut().enumerate() {
            *b ^= scramble[i % 20];
        }
        let cipher = key.to_public_key().oaep_encrypt_with_rng::<Sha1, _>(&mut rng, &masked).unwrap();
        assert_eq!(keys.decrypt_password(&cipher, &scramble).as_deref(), Some(&b"pa55word"[..]));
        assert_eq!(keys.decrypt_password(b"garbage", &scramble), None);
        assert!(!dir.path().join(PUBLIC_KEY).exists(), "an existing key is used as it is");
    }

    /// rand 0.8's generator as the rand_core 0.10 RNG the rsa crate takes.
    struct TestRng(rand::rngs::ThreadRng);

    impl rsa::rand_core::TryRng for TestRng {
        type Error = std::convert::Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
            Ok(rand::RngCore::next_u32(&mut self.0))
        }
        fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
            Ok(rand::RngCore::next_u64(&mut self.0))
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
            rand::RngCore::fill_bytes(&mut self.0, dst);
            Ok(())
        }
    }

    impl rsa::rand_core::TryCryptoRng for TestRng {}

    #[test]
    fn an_empty_password_is_an_empty_response() {
        let scramble = new_scramble();
        let root = Account { native_hash: None, sha2_hash: None };
        assert!(verify(&root, NATIVE, &scramble, b""));
        assert!(!verify(&root, NATIVE, &scramble, &native_response(b"x", &scramble)));
        assert!(verify(&root, CACHING_SHA2, &scramble, b""));
        assert!(scramble.iter().all(|&b| b != 0));
    }
}
