//! TLS: the server's certificate and rustls configuration, and the names
//! MySQL gives the negotiated protocol and cipher (`Ssl_version`,
//! `Ssl_cipher`).
//!
//! The certificate comes from `--ssl-cert` / `--ssl-key` when both are
//! given; otherwise, as MySQL's auto_generate_certs, from the data folder:
//! `server-cert.pem` / `server-key.pem`, generated at the first start (a
//! CA, `ca.pem` and `ca-key.pem`, signs the server certificate) and reused
//! on every later start. Key files are created with mode 0600 and written
//! whole before they get their name (a crash leaves no half key).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The names auto_generate_certs gives the files in the data folder.
pub const CA_CERT: &str = "ca.pem";
pub const CA_KEY: &str = "ca-key.pem";
pub const SERVER_CERT: &str = "server-cert.pem";
pub const SERVER_KEY: &str = "server-key.pem";

/// The server's TLS setup, shared by every connection.
pub(crate) struct Tls {
    pub config: Arc<rustls::ServerConfig>,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Loads (or first generates) the certificate and builds the configuration.
pub(crate) fn setup(datadir: &Path, cert: Option<&Path>, key: Option<&Path>) -> Result<Tls, String> {
    let (cert, key) = match (cert, key) {
        (Some(c), Some(k)) => (c.to_path_buf(), k.to_path_buf()),
        (None, None) => {
            let (c, k) = (datadir.join(SERVER_CERT), datadir.join(SERVER_KEY));
            if !c.exists() || !k.exists() {
                generate(datadir)?;
            }
            (c, k)
        }
        _ => return Err("--ssl-cert and --ssl-key go together: give both or neither".into()),
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read the certificate {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert.display()));
    }
    let pkey = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| format!("cannot read the private key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, pkey)
        .map_err(|e| format!("TLS: the certificate {} and key {}: {e}", cert.display(), key.display()))?;
    Ok(Tls { config: Arc::new(config), cert, key })
}

/// Writes ca.pem, ca-key.pem, server-cert.pem and server-key.pem.
fn generate(datadir: &Path) -> Result<(), String> {
    let e = |e: rcgen::Error| format!("generating a certificate: {e}");
    let ca_key = rcgen::KeyPair::generate().map_err(e)?;
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca.distinguished_name = rcgen::DistinguishedName::new();
    ca.distinguished_name.push(rcgen::DnType::CommonName, "fractaldb Auto Generated CA Certificate");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(e)?;
    let key = rcgen::KeyPair::generate().map_err(e)?;
    let mut p = rcgen::CertificateParams::new(vec!["localhost".to_string()]).map_err(e)?;
    p.subject_alt_names.push(rcgen::SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(rcgen::DnType::CommonName, "fractaldb Auto Generated Server Certificate");
    let cert = p.signed_by(&key, &ca_cert, &ca_key).map_err(e)?;
    // Keys first: a certificate is never left without its key.
    write_file(&datadir.join(CA_KEY), ca_key.serialize_pem().as_bytes(), 0o600)?;
    write_file(&datadir.join(SERVER_KEY), key.serialize_pem().as_bytes(), 0o600)?;
    write_file(&datadir.join(CA_CERT), ca_cert.pem().as_bytes(), 0o644)?;
    write_file(&datadir.join(SERVER_CERT), cert.pem().as_bytes(), 0o644)?;
    Ok(())
}

/// Writes a file whole (temporary name, fsync, rename, fsync of the folder).
pub(crate) fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let err = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let _ = std::fs::remove_file(&tmp);
    let mut f =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp).map_err(err)?;
    f.write_all(data).map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(err)?;
    }
    Ok(())
}

/// `Ssl_version` as OpenSSL names it: TLSv1.2, TLSv1.3.
pub(crate) fn version_name(v: rustls::ProtocolVersion) -> String {
    match v {
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".into(),
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".into(),
        other => format!("{other:?}"),
    }
}

/// `Ssl_cipher` as OpenSSL names it (what MySQL shows and clients print):
/// TLS 1.3 suites keep their IANA name, TLS 1.2 ones have OpenSSL's.
pub(crate) fn cipher_name(s: rustls::CipherSuite) -> String {
    use rustls::CipherSuite as C;
    match s {
        C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        other => return format!("{other:?}"),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = setup(dir.path(), None, None).unwrap();
        let key = std::fs::read(dir.path().join(SERVER_KEY)).unwrap();
        let mode = std::fs::metadata(dir.path().join(SERVER_KEY)).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
        for f in [CA_CERT, CA_KEY, SERVER_CERT] {
            assert!(dir.path().join(f).exists(), "{f}");
        }
        let b = setup(dir.path(), None, None).unwrap();
        assert_eq!(a.cert, b.cert);
        assert_eq!(std::fs::read(dir.path().join(SERVER_KEY)).unwrap(), key, "reused, not regenerated");
        assert!(setup(dir.path(), Some(&a.cert), None).is_err());
        let bad = dir.path().join("bad.pem");
        std::fs::write(&bad, b"not a pem").unwrap();
        assert!(setup(dir.path(), Some(&bad), Some(&a.key)).is_err());
    }
}
