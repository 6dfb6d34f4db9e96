//! The channel-security flags of `pgc run` (and `pgc.run` in Python): TLS 1.3 with the peer's key
//! pinned (`--peer-key`), a pre-shared secret (`--psk`), or, only when asked for by name,
//! plaintext (`--insecure-plaintext`). See `pgc_net::tls` and `pgc_net::keys`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use pgc_net::keys::default_identity_path;
use pgc_net::{
    ChannelSecurity, Fingerprint, Identity, KeyError, RefusalNotes, Secret, TlsSettings,
};

/// What the encrypted channel guarantees, for the help texts.
pub const GUARANTEE: &str = "The connection is TLS 1.3 (AES-128-GCM) with mutual \
authentication: everything sent is kept confidential and protected against tampering, and \
each party talks only to the holder of the key it pinned. It does not hide how much is sent \
or when.";

/// How `pgc run` protects its connection.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Security")]
pub struct SecurityArgs {
    /// The other party's key fingerprint (pgc1-..., as its `pgc keygen` printed it), or a
    /// file holding it. The connection is refused unless the peer proves it holds that key.
    #[arg(long, value_name = "FINGERPRINT_OR_FILE",
        conflicts_with_all = ["psk", "insecure_plaintext"],
        long_help = format!("The other party's key fingerprint (pgc1-..., as its `pgc keygen` \
        printed it), or a file holding it. This party presents its own key (see --key). \
        {GUARANTEE}"))]
    pub peer_key: Option<String>,
    /// This party's key [default: $XDG_CONFIG_HOME/pgc/identity.pem or
    /// ~/.config/pgc/identity.pem, as written by `pgc keygen`].
    #[arg(long, value_name = "PATH", requires = "peer_key")]
    pub key: Option<PathBuf>,
    /// A shared secret file both parties hold, made by `pgc keygen --secret FILE`: both
    /// derive the same key pair from it and pin it. The secret itself is never sent.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure_plaintext",
        long_help = format!("A shared secret file both parties hold, made by `pgc keygen \
        --secret FILE` and copied over a safe channel: both derive the same key pair from it \
        and pin it, so the secret itself is never sent. Only what keygen writes is taken (one \
        line: pgc-secret1- and 64 hex digits, 256 random bits): a password or any other file \
        is refused, since a recorded handshake would let an attacker test guesses offline. \
        {GUARANTEE}"))]
    pub psk: Option<PathBuf>,
    /// Run without encryption or authentication: anyone on the network path can read the
    /// garbled tables and protocol messages, or take the peer's place.
    #[arg(long)]
    pub insecure_plaintext: bool,
}

/// The security `pgc run` uses, decided before anything connects.
pub fn resolve(args: &SecurityArgs) -> Result<ChannelSecurity> {
    if args.insecure_plaintext {
        return Ok(ChannelSecurity::Plaintext);
    }
    if let Some(path) = &args.psk {
        let secret = Secret::load(path)?;
        let identity = Identity::from_secret(&secret)?;
        let settings = TlsSettings::new(&identity, identity.fingerprint())?;
        return Ok(ChannelSecurity::Tls(settings));
    }
    let key_path = match &args.key {
        Some(p) => p.clone(),
        None => default_identity_path()?,
    };
    let Some(peer) = &args.peer_key else {
        return Err(missing_flag(&key_path));
    };
    let peer = Fingerprint::from_arg(peer).context("--peer-key")?;
    let identity = Identity::load(&key_path)?;
    if identity.fingerprint() == peer {
        bail!(
            "--peer-key is this party's own fingerprint ({peer}); give the other party's \
             (from its `pgc keygen`)"
        );
    }
    Ok(ChannelSecurity::Tls(TlsSettings::new(&identity, peer)?))
}

/// A note for each secret file this run reads (the `--psk` file, or this party's key) that
/// other users of the machine may read or change: whoever reads it can take a party's place.
/// A note and not an error, as ssh would make it: a secret typed into an editor is saved
/// with the umask's mode, and refusing it would stop runs that worked before.
pub fn loose_permission_notes(args: &SecurityArgs) -> Vec<String> {
    let (path, whose) = if args.insecure_plaintext {
        return Vec::new();
    } else if let Some(psk) = &args.psk {
        (psk.clone(), "either party's")
    } else if args.peer_key.is_none() {
        return Vec::new();
    } else if let Some(key) = &args.key {
        (key.clone(), "this party's")
    } else {
        match default_identity_path() {
            Ok(p) => (p, "this party's"),
            Err(_) => return Vec::new(),
        }
    };
    loose_mode(&path)
        .map(|mode| {
            format!(
                "{} can be read or changed by other users of this machine (mode {mode:o}): \
                 whoever reads it can take {whose} place in a run; make it private with \
                 chmod 600 {}",
                path.display(),
                path.display()
            )
        })
        .into_iter()
        .collect()
}

/// The permission bits of `path` if group or others have any access to it.
#[cfg(unix)]
fn loose_mode(path: &std::path::Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(not(unix))]
fn loose_mode(_path: &std::path::Path) -> Option<u32> {
    None
}

/// The error for `pgc run` without a security flag: the exact flag to add, and this
/// party's fingerprint (or how to make a key).
fn missing_flag(key_path: &std::path::Path) -> anyhow::Error {
    match Identity::load(key_path) {
        Ok(identity) => anyhow::anyhow!(
            "the connection is encrypted and authenticated by default; add --peer-key <the \
             other party's fingerprint from `pgc keygen`> (yours is {}), or --psk FILE, or \
             --insecure-plaintext to run unprotected",
            identity.fingerprint()
        ),
        Err(KeyError::Missing { .. }) => anyhow::anyhow!(
            "the connection is encrypted and authenticated by default, and this party has no \
             key yet: run `pgc keygen` (it prints your fingerprint for the other party), then \
             add --peer-key <the other party's fingerprint from `pgc keygen`>; or use --psk \
             FILE, or --insecure-plaintext to run unprotected"
        ),
        Err(e) => anyhow::anyhow!(
            "the connection is encrypted and authenticated by default; add --peer-key <the \
             other party's fingerprint from `pgc keygen`>, or --psk FILE, or \
             --insecure-plaintext to run unprotected (and this party's key could not be \
             read: {e})"
        ),
    }
}

/// One line per connection the listening party turned away (no secrets: fingerprints are
/// public).
pub fn stderr_notes(party: char, show: bool) -> RefusalNotes {
    Arc::new(move |note: &str| {
        if show {
            eprintln!("party {party}: note: {note}");
        }
    })
}

/// A line saying how the connection is protected.
pub fn describe(security: &ChannelSecurity) -> String {
    match security {
        ChannelSecurity::Tls(s) => format!(
            "TLS 1.3, this party's key {}, peer's key {}",
            s.own_fingerprint(),
            s.peer_fingerprint()
        ),
        ChannelSecurity::Plaintext => {
            "UNPROTECTED plaintext (--insecure-plaintext): anyone on the path can read or \
             change what is sent"
                .into()
        }
    }
}
