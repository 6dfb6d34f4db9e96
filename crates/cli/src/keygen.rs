//! `pgc keygen`: this party's key (and fingerprint for the peer), or a shared secret.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use pgc_net::keys::default_identity_path;
use pgc_net::{Identity, Secret};

pub const KEYGEN_ABOUT: &str = "\
Each party runs `pgc keygen` once. It writes the party's private key (readable by the owner \
only) and prints the public fingerprint, pgc1-... . Give your fingerprint to the other party \
over a channel where you recognise each other (in person, by phone, signed mail); it is not \
secret. Each side then runs `pgc run` with --peer-key set to the other's fingerprint.

Alternatively, `pgc keygen --secret FILE` writes a random shared secret: copy the same file \
to both parties over a safe channel and both run with --psk FILE. --psk takes only such a \
file (one line, pgc-secret1- and 64 hex digits).

Files are written readable by the owner only (0600) from the moment they exist, and never \
replace an existing file without --force. The directory of --out or --secret must exist (a \
typo in the path is an error, not a new directory); the default key's directory is made.";

pub const KEYGEN_EXAMPLES: &str = "\
Examples:
  pgc keygen                       # writes ~/.config/pgc/identity.pem, prints pgc1-...
  pgc keygen --out party-a.pem     # another location (then pgc run --key party-a.pem)
  pgc keygen --secret shared.psk   # a shared secret for --psk";

#[derive(Args)]
pub struct KeygenArgs {
    /// Where to write the key [default: $XDG_CONFIG_HOME/pgc/identity.pem or
    /// ~/.config/pgc/identity.pem].
    #[arg(long, value_name = "PATH", conflicts_with = "secret")]
    pub out: Option<PathBuf>,
    /// Replace an existing key or secret file (the old one is lost).
    #[arg(long)]
    pub force: bool,
    /// Write a fresh random 256-bit shared secret to FILE instead, for --psk.
    #[arg(long, value_name = "FILE")]
    pub secret: Option<PathBuf>,
}

/// `pgc keygen`.
pub fn keygen(args: KeygenArgs) -> Result<()> {
    if let Some(path) = &args.secret {
        Secret::generate()?.save(path, args.force)?;
        eprintln!(
            "wrote a random shared secret to {} (readable by you only); copy it to the other \
             party over a safe channel, then both run with --psk {}",
            path.display(),
            path.display()
        );
        return Ok(());
    }
    let path = match &args.out {
        Some(p) => p.clone(),
        None => {
            // The default location is pgc's own choice, not a path that could hold a typo:
            // its directories are made (private), as ssh-keygen makes ~/.ssh. A path given
            // with --out or --secret must have its directory already.
            let path = default_identity_path()?;
            if let Some(dir) = path.parent() {
                create_private_dir(dir)?;
            }
            path
        }
    };
    if path.exists() && !args.force {
        let existing = Identity::load(&path)
            .map(|id| format!(" (its fingerprint is {})", id.fingerprint()))
            .unwrap_or_default();
        bail!(
            "{} already exists{existing}; add --force to replace it (the old key is then lost)",
            path.display()
        );
    }
    let identity = Identity::generate()?;
    identity.save(&path, args.force)?;
    outln!("{}", identity.fingerprint());
    eprintln!(
        "wrote this party's key to {} (readable by you only). The line above is its \
         fingerprint: give it to the other party, who runs pgc run with --peer-key {}",
        path.display(),
        identity.fingerprint()
    );
    Ok(())
}

/// Creates `dir` and any missing parents, readable by the owner only.
fn create_private_dir(dir: &std::path::Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| anyhow::anyhow!("could not create {}: {e}", dir.display()))
}
