//! A party's identity for the encrypted channel ([`crate::tls`]): its key pair, the public
//! fingerprint the other party pins, and the pre-shared-secret alternative.
//!
//! - **Identity key**: an Ed25519 key pair, stored as PKCS#8 PEM (file mode 0600) at
//!   `$XDG_CONFIG_HOME/pgc/identity.pem` or `~/.config/pgc/identity.pem` unless told
//!   otherwise. `pgc keygen` writes it.
//! - **Fingerprint**: `pgc1-` followed by the 64 lowercase hex digits of SHA-256 over the
//!   public key's DER SubjectPublicKeyInfo. It is public: the parties exchange fingerprints
//!   over any channel where they recognise each other (phone, signed mail) and each pins
//!   the other's. Hex keeps it copy-paste safe in every shell and font.
//! - **Pre-shared secret**: both parties hold the same high-entropy secret file. From it
//!   both derive the same Ed25519 key pair: seed = BLAKE3 `derive_key` with the context
//!   [`PSK_CONTEXT`] over the secret's bytes. Each presents that key and pins its
//!   fingerprint. The secret never crosses the wire; only the public key and TLS handshake
//!   signatures do. This is sound because a man in the middle without the secret cannot
//!   sign the handshake transcript with the derived key, so TLS refuses it exactly as it
//!   refuses a wrong pinned key. Its limit: a recorded handshake lets an attacker test
//!   guesses of the secret offline (derive, compare the public key), so a weak secret (a
//!   password) could be brute-forced; hence secrets below [`MIN_SECRET_BITS`] bits of
//!   material are refused and `pgc keygen --secret` writes 256 random bits.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Prefix of every fingerprint (the version of the format).
pub const FINGERPRINT_PREFIX: &str = "pgc1-";
/// Prefix of a secret file written by `pgc keygen --secret`.
pub const SECRET_PREFIX: &str = "pgc-secret1-";
/// Fewest bits of secret material accepted for a pre-shared secret.
pub const MIN_SECRET_BITS: usize = 128;
/// BLAKE3 key-derivation context for the pre-shared-secret identity (never change it:
/// both parties must derive the same key).
pub const PSK_CONTEXT: &str = "pgc 2026-11 pre-shared secret -> Ed25519 identity seed v1";
/// Largest key or secret file read (they are a few hundred bytes).
const MAX_KEY_FILE_BYTES: u64 = 64 << 10;
/// PKCS#8 v1 header of an Ed25519 private key (RFC 8410): the 32-byte seed follows.
const ED25519_PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// What can go wrong with keys, fingerprints and secrets. No message contains key or
/// secret material.
#[derive(Debug, Error)]
pub enum KeyError {
    #[error("no identity key at {path}: run `pgc keygen` to make one (or give another with --key)")]
    Missing { path: PathBuf },
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} already exists; add --force to replace it (what it holds is then lost)")]
    Exists { path: PathBuf },
    #[error("{path} is not a pgc identity key (a PKCS#8 PEM private key): {reason}")]
    BadKey { path: PathBuf, reason: String },
    #[error("{path} is larger than a key or secret file can be")]
    TooLarge { path: PathBuf },
    #[error(
        "{0:?} is not a pgc key fingerprint (expected pgc1- and 64 hex digits, as printed by `pgc keygen`) nor a file holding one"
    )]
    BadFingerprint(String),
    /// A fingerprint file whose first line is not a fingerprint. Its content is not
    /// shown: the file may be a secret or a key given in the wrong place.
    #[error(
        "{path} does not hold a pgc key fingerprint on its first non-empty line (expected \
         pgc1- and 64 hex digits, as printed by `pgc keygen`; the file's content is not shown \
         in case it is a secret or key)"
    )]
    BadFingerprintFile { path: PathBuf },
    #[error(
        "the secret in {path} has about {bits} bits of material; at least {min} are needed, \
         since a weak secret could be guessed offline from a recorded handshake \
         (`pgc keygen --secret FILE` writes a good one)"
    )]
    WeakSecret {
        path: PathBuf,
        bits: usize,
        min: usize,
    },
    #[error("no home directory: give the key file's path with --key/--out")]
    NoHome,
    #[error("could not make a key: {0}")]
    Generate(String),
    #[error("the operating system's random generator failed: {0}")]
    Random(String),
}

/// SHA-256 of a public key's SubjectPublicKeyInfo: what a party pins.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER SubjectPublicKeyInfo.
    pub fn of_spki(spki_der: &[u8]) -> Fingerprint {
        let digest = ring::digest::digest(&ring::digest::SHA256, spki_der);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest.as_ref());
        Fingerprint(bytes)
    }

    /// Parses `pgc1-<64 hex>` (surrounding whitespace and upper-case hex accepted).
    pub fn parse(text: &str) -> Result<Fingerprint, KeyError> {
        let bad = || KeyError::BadFingerprint(shorten(text));
        let trimmed = text.trim();
        let hex = trimmed
            .get(..FINGERPRINT_PREFIX.len())
            .filter(|p| p.eq_ignore_ascii_case(FINGERPRINT_PREFIX))
            .map(|_| &trimmed[FINGERPRINT_PREFIX.len()..])
            .ok_or_else(bad)?;
        let bytes = decode_hex(hex).ok_or_else(bad)?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| bad())?;
        Ok(Fingerprint(bytes))
    }

    /// A fingerprint given on the command line: the text itself, or a file whose first
    /// non-empty line holds one (as `pgc keygen` prints it).
    pub fn from_arg(arg: &str) -> Result<Fingerprint, KeyError> {
        if let Ok(f) = Fingerprint::parse(arg) {
            return Ok(f);
        }
        let path = Path::new(arg);
        if !path.is_file() {
            return Err(KeyError::BadFingerprint(shorten(arg)));
        }
        let text = read_small(path)?;
        let text = String::from_utf8_lossy(&text);
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or("");
        // Not `parse`'s error, which quotes the text: this file may be a PSK or a private
        // key given to --peer by mistake, and its first line must not reach the terminal.
        Fingerprint::parse(line).map_err(|_| KeyError::BadFingerprintFile {
            path: path.to_path_buf(),
        })
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(FINGERPRINT_PREFIX)?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A party's key pair (Ed25519). Debug output shows only the fingerprint.
#[derive(Clone)]
pub struct Identity {
    /// PKCS#8 DER of the private key.
    pkcs8: Vec<u8>,
    fingerprint: Fingerprint,
}

impl Identity {
    /// A fresh key pair from the operating system's randomness.
    pub fn generate() -> Result<Identity, KeyError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
        let identity = Identity::from_seed(&seed);
        seed.fill(0);
        identity
    }

    /// The key pair both holders of `secret` derive (see the module docs).
    pub fn from_secret(secret: &Secret) -> Result<Identity, KeyError> {
        let mut seed = blake3::derive_key(PSK_CONTEXT, &secret.0);
        let identity = Identity::from_seed(&seed);
        seed.fill(0);
        identity
    }

    fn from_seed(seed: &[u8; 32]) -> Result<Identity, KeyError> {
        let mut pkcs8 = Vec::with_capacity(48);
        pkcs8.extend_from_slice(&ED25519_PKCS8_V1_PREFIX);
        pkcs8.extend_from_slice(seed);
        Identity::from_pkcs8(pkcs8).map_err(KeyError::Generate)
    }

    fn from_pkcs8(pkcs8: Vec<u8>) -> Result<Identity, String> {
        let pair = rcgen::KeyPair::try_from(pkcs8.as_slice()).map_err(|e| e.to_string())?;
        use rcgen::PublicKeyData;
        let fingerprint = Fingerprint::of_spki(&pair.subject_public_key_info());
        Ok(Identity { pkcs8, fingerprint })
    }

    /// This key's public fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The key pair for certificate signing.
    pub(crate) fn key_pair(&self) -> Result<rcgen::KeyPair, String> {
        rcgen::KeyPair::try_from(self.pkcs8.as_slice()).map_err(|e| e.to_string())
    }

    /// The private key's PKCS#8 DER, for the TLS configuration.
    pub(crate) fn pkcs8_der(&self) -> &[u8] {
        &self.pkcs8
    }

    /// Reads a key written by [`save`](Identity::save).
    pub fn load(path: &Path) -> Result<Identity, KeyError> {
        if !path.exists() {
            return Err(KeyError::Missing {
                path: path.to_path_buf(),
            });
        }
        let bytes = read_small(path)?;
        let bad = |reason: String| KeyError::BadKey {
            path: path.to_path_buf(),
            reason,
        };
        let text = std::str::from_utf8(&bytes).map_err(|_| bad("not text".into()))?;
        let pair = rcgen::KeyPair::from_pem(text).map_err(|e| bad(e.to_string()))?;
        Identity::from_pkcs8(pair.serialize_der()).map_err(bad)
    }

    /// Writes the key as PKCS#8 PEM, readable by the owner only (mode 0600 on Unix).
    /// Refuses to replace an existing file unless `force`.
    pub fn save(&self, path: &Path, force: bool) -> Result<(), KeyError> {
        let pair = self.key_pair().map_err(KeyError::Generate)?;
        write_private(path, pair.serialize_pem().as_bytes(), force)
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

/// A pre-shared secret's material. Debug output hides it.
pub struct Secret(Vec<u8>);

impl Secret {
    /// 256 fresh random bits.
    pub fn generate() -> Result<Secret, KeyError> {
        let mut bytes = vec![0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Secret(bytes))
    }

    /// Reads a secret file: the `pgc-secret1-<hex>` text `pgc keygen --secret` writes, or
    /// any other content, taken as it is (trailing newline removed). Refuses material below
    /// [`MIN_SECRET_BITS`] bits, counted generously (hex digits 4 bits, other letters and
    /// digits 6, other bytes 8), so the floor catches short secrets, not weak long ones.
    pub fn load(path: &Path) -> Result<Secret, KeyError> {
        let bytes = read_small(path)?;
        let text = String::from_utf8_lossy(&bytes);
        let trimmed = text.trim();
        if let Some(hex) = trimmed.strip_prefix(SECRET_PREFIX)
            && let Some(material) = decode_hex(hex)
        {
            return Secret::checked(material, hex.len() * 4, path);
        }
        let material: Vec<u8> = match std::str::from_utf8(&bytes) {
            Ok(_) => trimmed.as_bytes().to_vec(),
            Err(_) => bytes.clone(),
        };
        let bits = estimated_bits(&material);
        Secret::checked(material, bits, path)
    }

    fn checked(material: Vec<u8>, bits: usize, path: &Path) -> Result<Secret, KeyError> {
        if bits < MIN_SECRET_BITS {
            return Err(KeyError::WeakSecret {
                path: path.to_path_buf(),
                bits,
                min: MIN_SECRET_BITS,
            });
        }
        Ok(Secret(material))
    }

    /// Writes the secret as `pgc-secret1-<hex>` (mode 0600 on Unix).
    pub fn save(&self, path: &Path, force: bool) -> Result<(), KeyError> {
        let mut text = String::from(SECRET_PREFIX);
        for b in &self.0 {
            text.push_str(&format!("{b:02x}"));
        }
        text.push('\n');
        write_private(path, text.as_bytes(), force)
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.fill(0);
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Where a party's identity key lives unless `--key` says otherwise.
pub fn default_identity_path() -> Result<PathBuf, KeyError> {
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").ok_or(KeyError::NoHome)?).join(".config"),
    };
    Ok(config.join("pgc").join("identity.pem"))
}

/// Upper bound on the bits of entropy in `material`, by the smallest alphabet it fits.
fn estimated_bits(material: &[u8]) -> usize {
    let per_byte = if material.iter().all(u8::is_ascii_hexdigit) {
        4
    } else if material
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || b"+/=-_".contains(b))
    {
        6
    } else {
        8
    };
    material.len() * per_byte
}

fn read_small(path: &Path) -> Result<Vec<u8>, KeyError> {
    let read_error = |source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Read through a bound, not by the metadata's length: a device such as /dev/zero has
    // length 0 and never ends.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_KEY_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(KeyError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// Creates `path` (and its directory) readable by the owner only and writes `bytes`.
fn write_private(path: &Path, bytes: &[u8], force: bool) -> Result<(), KeyError> {
    let write_error = |source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    };
    if path.exists() && !force {
        return Err(KeyError::Exists {
            path: path.to_path_buf(),
        });
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    // Written to a private temporary file and renamed into place, so the key is never
    // readable by others, not even for a moment, and a crash leaves no half-written key.
    let tmp = path.with_extension("tmp-pgc-key");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        #[cfg(unix)]
        {
            // A stale temporary file keeps its old mode when reopened.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(write_error)
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// At most 80 characters of user input, for error messages.
fn shorten(text: &str) -> String {
    let mut s: String = text.chars().take(80).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pgc-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn fingerprint_text_round_trips_and_bad_text_is_refused() {
        let id = Identity::generate().unwrap();
        let text = id.fingerprint().to_string();
        assert!(text.starts_with("pgc1-") && text.len() == 5 + 64, "{text}");
        assert_eq!(Fingerprint::parse(&text).unwrap(), id.fingerprint());
        assert_eq!(
            Fingerprint::parse(&format!(
                "  {}\n",
                text.to_uppercase().replace("PGC1-", "pgc1-")
            ))
            .unwrap(),
            id.fingerprint()
        );
        for bad in [
            "",
            "pgc1-",
            &text[..text.len() - 1],
            &format!("{text}00"),
            &text.replace("pgc1-", "pgc2-"),
            &format!("pgc1-{}", "zz".repeat(32)),
            "pgc1-é",
        ] {
            let err = Fingerprint::parse(bad).unwrap_err();
            assert!(matches!(err, KeyError::BadFingerprint(_)), "{bad}: {err:?}");
        }
    }

    #[test]
    fn fingerprint_from_a_file_or_the_argument() {
        let dir = temp_dir("fp");
        let id = Identity::generate().unwrap();
        let file = dir.join("peer.txt");
        std::fs::write(&file, format!("# party A\n\n{}\n", id.fingerprint())).unwrap();
        let arg = file.to_str().unwrap();
        assert_eq!(Fingerprint::from_arg(arg).unwrap(), id.fingerprint());
        assert_eq!(
            Fingerprint::from_arg(&id.fingerprint().to_string()).unwrap(),
            id.fingerprint()
        );
        std::fs::write(&file, "not a fingerprint\n").unwrap();
        assert!(matches!(
            Fingerprint::from_arg(arg),
            Err(KeyError::BadFingerprintFile { .. })
        ));
        // A PSK file given where a fingerprint belongs: the error names the file and shows
        // none of the secret.
        let secret = Secret::generate().unwrap();
        secret.save(&file, true).unwrap();
        let err = Fingerprint::from_arg(arg).unwrap_err().to_string();
        let hex: String = secret.0.iter().map(|b| format!("{b:02x}")).collect();
        assert!(err.contains("peer.txt"), "{err}");
        for piece in hex.as_bytes().chunks(8) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(!err.contains(piece), "the secret leaks into: {err}");
        }
        assert!(!err.contains(SECRET_PREFIX), "{err}");
        let missing = dir.join("missing").to_str().unwrap().to_string();
        let err = Fingerprint::from_arg(&missing).unwrap_err();
        assert!(
            err.to_string().contains("not a pgc key fingerprint"),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn saved_key_is_private_loads_back_and_is_not_overwritten() {
        let dir = temp_dir("save");
        let path = dir.join("sub").join("identity.pem");
        let id = Identity::generate().unwrap();
        id.save(&path, false).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("-----BEGIN PRIVATE KEY-----"), "{text}");
        assert_eq!(
            Identity::load(&path).unwrap().fingerprint(),
            id.fingerprint()
        );
        let other = Identity::generate().unwrap();
        assert!(matches!(
            other.save(&path, false),
            Err(KeyError::Exists { .. })
        ));
        other.save(&path, true).unwrap();
        assert_eq!(
            Identity::load(&path).unwrap().fingerprint(),
            other.fingerprint()
        );
        std::fs::write(&path, "garbage").unwrap();
        assert!(matches!(
            Identity::load(&path),
            Err(KeyError::BadKey { .. })
        ));
        let missing = dir.join("none.pem");
        let err = Identity::load(&missing).unwrap_err();
        assert!(err.to_string().contains("pgc keygen"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn secrets_derive_one_identity_and_short_ones_are_refused() {
        let dir = temp_dir("secret");
        let path = dir.join("secret");
        let secret = Secret::generate().unwrap();
        secret.save(&path, false).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        let a = Identity::from_secret(&Secret::load(&path).unwrap()).unwrap();
        let b = Identity::from_secret(&Secret::load(&path).unwrap()).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        let other = Identity::from_secret(&Secret::generate().unwrap()).unwrap();
        assert_ne!(a.fingerprint(), other.fingerprint());
        // A fixed secret derives a fixed key: the derivation must never change silently.
        let fixed = dir.join("fixed");
        std::fs::write(&fixed, format!("{SECRET_PREFIX}{}\n", "ab".repeat(32))).unwrap();
        let fixed_id = Identity::from_secret(&Secret::load(&fixed).unwrap()).unwrap();
        assert_eq!(
            fixed_id.fingerprint(),
            Identity::from_secret(&Secret(vec![0xab; 32]))
                .unwrap()
                .fingerprint()
        );
        for (content, bits) in [
            ("0123456789abcdef0123456789abcde\n", 124),
            ("short pass", 80),
            ("", 0),
        ] {
            std::fs::write(&path, content).unwrap();
            let err = Secret::load(&path).unwrap_err();
            assert!(
                matches!(err, KeyError::WeakSecret { bits: b, .. } if b == bits),
                "{content:?}: {err:?}"
            );
            assert!(!err.to_string().contains(content.trim()) || content.is_empty());
        }
        std::fs::write(&path, "0123456789abcdef0123456789abcdef").unwrap();
        assert!(Secret::load(&path).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn default_path_follows_xdg() {
        let path = default_identity_path().unwrap();
        assert!(path.ends_with("pgc/identity.pem"), "{}", path.display());
    }
}
