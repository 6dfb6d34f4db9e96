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
//!   password) could be brute-forced. Hence a secret file must be what `pgc keygen
//!   --secret` writes: the line `pgc-secret1-` and 64 hex digits (256 random bits).
//!   Anything else is refused, naming the command that makes one: pgc cannot tell a
//!   random file from a guessable one (a password list, a copy of a public file, the pgc
//!   executable itself all look like "high-entropy" bytes), and a fixed format also
//!   catches the wrong file given by mistake.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Prefix of every fingerprint (the version of the format).
pub const FINGERPRINT_PREFIX: &str = "pgc1-";
/// Prefix of a secret file written by `pgc keygen --secret`.
pub const SECRET_PREFIX: &str = "pgc-secret1-";
/// Bytes of a shared secret: `pgc keygen --secret` writes them as 64 hex digits.
pub const SECRET_BYTES: usize = 32;
/// BLAKE3 key-derivation context for the pre-shared-secret identity (never change it:
/// both parties must derive the same key).
pub const PSK_CONTEXT: &str = "pgc 2026-11 pre-shared secret -> Ed25519 identity seed v1";
/// Largest key or fingerprint file read (a key is a few hundred bytes; other PEM keys that
/// are refused later can be a few KiB).
const MAX_KEY_FILE_BYTES: u64 = 64 << 10;
/// Largest secret file read: its one line is 77 bytes; room for stray blank lines.
const MAX_SECRET_FILE_BYTES: u64 = 1 << 10;
/// What the small files are, for messages.
const KEY_FILE: &str = "key file";
const SECRET_FILE: &str = "shared secret file";
const FINGERPRINT_FILE: &str = "fingerprint file";
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
    #[error("{path} is larger than a {what} can be (at most {max} bytes){hint}")]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        max: u64,
        /// How to make the right file, if pgc makes it.
        hint: &'static str,
    },
    /// The directory a key or secret is to be written in does not exist. Not created: a
    /// typo in the path would otherwise make a directory tree and hide the key there.
    #[error(
        "cannot write {path}: the directory {dir} does not exist (check the path for a typo, \
         or create it first: mkdir -p {dir})"
    )]
    NoDirectory { path: PathBuf, dir: PathBuf },
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
    /// A `--psk` file that is not what `pgc keygen --secret` writes. `problem` describes
    /// its shape only (lengths, which part is wrong), never its content.
    #[error(
        "{path} is not a pgc shared secret: {problem}. A secret file is one line, \
         pgc-secret1- and 64 hex digits (256 random bits); make one with `pgc keygen \
         --secret FILE` and copy it to the other party over a safe channel"
    )]
    NotASecret { path: PathBuf, problem: String },
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
        let text = read_small(path, FINGERPRINT_FILE, MAX_KEY_FILE_BYTES)?;
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
        let bytes = read_small(path, KEY_FILE, MAX_KEY_FILE_BYTES)?;
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

    /// Reads a secret file as `pgc keygen --secret` writes it: `pgc-secret1-` and 64 hex
    /// digits (either case) on one line; whitespace around it (a trailing newline, `\r\n`
    /// from another system's editor) is ignored. Anything else is refused with an error that
    /// says how to make a secret file and describes what is wrong without quoting it.
    pub fn load(path: &Path) -> Result<Secret, KeyError> {
        let bytes = read_small(path, SECRET_FILE, MAX_SECRET_FILE_BYTES)?;
        let refuse = |problem: String| KeyError::NotASecret {
            path: path.to_path_buf(),
            problem,
        };
        let text = bytes.trim_ascii();
        if text.is_empty() {
            return Err(refuse("it is empty".into()));
        }
        let Some(hex) = text.strip_prefix(SECRET_PREFIX.as_bytes()) else {
            return Err(refuse(format!(
                "it does not start with {SECRET_PREFIX} ({} bytes of something else)",
                text.len()
            )));
        };
        if hex.iter().any(|b| b.is_ascii_whitespace()) {
            return Err(refuse(format!(
                "it holds more than the one line {SECRET_PREFIX}<hex>"
            )));
        }
        if hex.len() != 2 * SECRET_BYTES {
            return Err(refuse(format!(
                "{SECRET_PREFIX} is followed by {} characters, not {}",
                hex.len(),
                2 * SECRET_BYTES
            )));
        }
        let material = std::str::from_utf8(hex)
            .ok()
            .and_then(decode_hex)
            .ok_or_else(|| {
                refuse(format!(
                    "what follows {SECRET_PREFIX} is not all hex digits (0-9, a-f)"
                ))
            })?;
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

/// The bytes of a small file (a key, a secret, a fingerprint), at most `max` of them. A
/// regular file's size is checked before anything is read; anything else (a device such as
/// /dev/zero, a pipe) is read through the bound, since its metadata says 0 bytes and it may
/// never end.
fn read_small(path: &Path, what: &'static str, max: u64) -> Result<Vec<u8>, KeyError> {
    let hint = match what {
        SECRET_FILE => "; make one with `pgc keygen --secret FILE`",
        KEY_FILE => "; `pgc keygen` makes one",
        _ => "",
    };
    let read_error = |source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_large = || KeyError::TooLarge {
        path: path.to_path_buf(),
        what,
        max,
        hint,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    if meta.is_file() && meta.len() > max {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Writes `bytes` to a new file at `path` that only the owner can read, replacing an existing
/// file only if `force`. The directory must exist: it is not created, so that a typo in the
/// path is an error instead of a new directory tree with the key hidden in it.
///
/// The bytes go to a fresh temporary file beside `path`, created exclusively (`O_EXCL`: never
/// an existing file or a symbolic link planted there) with mode 0600 from the start, so the
/// secret is never readable by others, not even for a moment; it is then moved into place in
/// one step: renamed over `path` with `force`, else hard-linked, which fails if `path` exists,
/// so a file that appears meanwhile is not overwritten either (on a file system without
/// hard links: Linux's `renameat2` with `RENAME_NOREPLACE`, which refuses an existing `path`
/// in the same step). A crash leaves no half-written key at `path`.
fn write_private(path: &Path, bytes: &[u8], force: bool) -> Result<(), KeyError> {
    let write_error = |source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    };
    let exists = || KeyError::Exists {
        path: path.to_path_buf(),
    };
    if path.is_dir() {
        return Err(write_error(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory; give the file's path",
        )));
    }
    if !force && path.symlink_metadata().is_ok() {
        return Err(exists());
    }
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(KeyError::NoDirectory {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        });
    }
    let (tmp, mut file) = create_private_temp(dir, path).map_err(write_error)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(write_error);
    drop(file);
    let placed = written.and_then(|()| {
        if force {
            std::fs::rename(&tmp, path).map_err(write_error)
        } else {
            match std::fs::hard_link(&tmp, path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(exists()),
                // A file system without hard links: a rename that refuses an existing file.
                Err(_) => match rename_no_replace(&tmp, path) {
                    Ok(true) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(exists()),
                    Err(e) => Err(write_error(e)),
                    // Nor that (not Linux, or a file system without the flag): check, then
                    // rename; a file appearing in between would be replaced, only there.
                    Ok(false) if path.symlink_metadata().is_ok() => Err(exists()),
                    Ok(false) => std::fs::rename(&tmp, path).map_err(write_error),
                },
            }
        }
    });
    // After a rename there is nothing left to remove; after a link, the temporary name.
    let _ = std::fs::remove_file(&tmp);
    placed?;
    // The new directory entry is durable once the directory is synced.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Renames `from` to `to` unless `to` exists, in one step: `Ok(true)` when done, an
/// `AlreadyExists` error when `to` exists, `Ok(false)` when this system or file system
/// cannot rename that way (the caller then needs another way).
#[cfg(target_os = "linux")]
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path with a NUL byte")
        })
    };
    let (from, to) = (c_path(from)?, c_path(to)?);
    // SAFETY: both paths are NUL-terminated C strings that outlive the call; with AT_FDCWD
    // they resolve as rename(2)'s do.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // The flag or the call unknown here (old kernel, file system without it).
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => Ok(false),
        _ => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn rename_no_replace(_from: &Path, _to: &Path) -> std::io::Result<bool> {
    Ok(false)
}

/// A new, empty file beside `path` named `.NAME.pgc-tmp-PID-N`, created exclusively and
/// readable by the owner only.
fn create_private_temp(dir: &Path, path: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let name = path
        .file_name()
        .map_or_else(|| "key".into(), |n| n.to_string_lossy().into_owned());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut attempt = 0u32;
    loop {
        let mut salt = [0u8; 8];
        getrandom::fill(&mut salt).map_err(|e| std::io::Error::other(e.to_string()))?;
        let tmp = dir.join(format!(
            ".{name}.pgc-tmp-{}-{:016x}",
            std::process::id(),
            u64::from_le_bytes(salt)
        ));
        match options.open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => {
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
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

    #[cfg(target_os = "linux")]
    #[test]
    fn a_rename_without_replacing_refuses_an_existing_file_and_keeps_it() {
        let dir = temp_dir("noreplace");
        let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
        std::fs::write(&a, b"new").unwrap();
        std::fs::write(&b, b"old").unwrap();
        match rename_no_replace(&a, &b) {
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}"),
            Ok(done) => panic!("expected AlreadyExists, got Ok({done})"),
        }
        assert_eq!(std::fs::read(&b).unwrap(), b"old");
        assert_eq!(std::fs::read(&a).unwrap(), b"new");
        // To a free name it moves the file (this test's temporary directory supports the
        // flag: Linux's tmpfs, ext4, xfs, btrfs and overlayfs all do).
        assert!(rename_no_replace(&a, &c).unwrap());
        assert_eq!(std::fs::read(&c).unwrap(), b"new");
        assert!(!a.exists());
        let _ = std::fs::remove_dir_all(&dir);
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
        // A missing directory is a typo to report, not a tree to create.
        let typo = dir.join("sub").join("identity.pem");
        let err = Identity::generate()
            .unwrap()
            .save(&typo, false)
            .unwrap_err();
        assert!(matches!(err, KeyError::NoDirectory { .. }), "{err:?}");
        assert!(
            err.to_string().contains(&format!(
                "the directory {} does not exist",
                dir.join("sub").display()
            )),
            "{err}"
        );
        assert!(!dir.join("sub").exists(), "no directory is created");
        let path = dir.join("identity.pem");
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
        // Nothing but the key is left in the directory (no temporary file).
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["identity.pem"], "{names:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The key goes in through a temporary file created exclusively: a symbolic link planted
    /// at any name beside it is never followed, and without `force` a file (or a link) at
    /// the key's path is never replaced.
    #[cfg(unix)]
    #[test]
    fn saving_never_follows_or_replaces_what_is_there() {
        let dir = temp_dir("planted");
        let target = dir.join("elsewhere");
        std::fs::write(&target, "someone else's file").unwrap();
        let path = dir.join("identity.pem");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let err = Identity::generate()
            .unwrap()
            .save(&path, false)
            .unwrap_err();
        assert!(matches!(err, KeyError::Exists { .. }), "{err:?}");
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "someone else's file"
        );
        // With force the link itself is replaced by the key; its target is untouched.
        Identity::generate().unwrap().save(&path, true).unwrap();
        assert!(!path.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "someone else's file"
        );
        let err = Identity::generate().unwrap().save(&dir, true).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn secrets_derive_one_identity_and_only_keygens_format_is_accepted() {
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
        // What keygen writes, upper-case hex and a Windows line end read back the same.
        for variant in [
            format!("{SECRET_PREFIX}{}", "AB".repeat(32)),
            format!("{SECRET_PREFIX}{}\r\n", "ab".repeat(32)),
            format!("\n{SECRET_PREFIX}{}\n\n", "ab".repeat(32)),
        ] {
            std::fs::write(&path, variant).unwrap();
            assert_eq!(Secret::load(&path).unwrap().0, vec![0xab; 32]);
        }
        // Anything else is refused, however random it looks, with the command that makes
        // a secret and a description that quotes none of the content.
        let random_hex = "0123456789abcdef".repeat(8);
        let executable = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        for (content, problem) in [
            (
                random_hex.as_bytes().to_vec(),
                "does not start with pgc-secret1-",
            ),
            (b"correct horse battery staple".to_vec(), "does not start"),
            (b"".to_vec(), "it is empty"),
            (
                format!("{SECRET_PREFIX}{}", "ab".repeat(16)).into_bytes(),
                "followed by 32 characters, not 64",
            ),
            (
                format!("{SECRET_PREFIX}{}", "zz".repeat(32)).into_bytes(),
                "not all hex digits",
            ),
            (
                format!(
                    "{SECRET_PREFIX}{}\n{SECRET_PREFIX}{}\n",
                    "ab".repeat(32),
                    "cd".repeat(32)
                )
                .into_bytes(),
                "more than the one line",
            ),
        ] {
            std::fs::write(&path, &content).unwrap();
            let err = Secret::load(&path).unwrap_err();
            assert!(matches!(err, KeyError::NotASecret { .. }), "{err:?}");
            let text = err.to_string();
            assert!(text.contains(problem), "{text}");
            assert!(text.contains("pgc keygen --secret FILE"), "{text}");
            assert!(
                !text.contains("0123456789abcdef") && !text.contains("horse"),
                "{text}"
            );
        }
        // The program itself (high-entropy bytes) is refused before being read whole: it is
        // larger than a secret file can be.
        std::fs::write(&path, &executable).unwrap();
        let err = Secret::load(&path).unwrap_err();
        assert!(matches!(err, KeyError::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains("shared secret file"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn default_path_follows_xdg() {
        let path = default_identity_path().unwrap();
        assert!(path.ends_with("pgc/identity.pem"), "{}", path.display());
    }
}
