//! Test support for the compiler's integration tests: gcc as the oracle.
//!
//! - [`values`]: port values as scalar leaves, bit encoding, edge-biased random inputs.
//! - [`harness`]: turns a program (and its `Compiled` interface) into C that gcc builds:
//!   a run function per program that fills the `INPUT_` values and reports the `OUTPUT_` values.
//! - [`oracle`]: builds and runs that C with gcc, evaluates the circuit (in cleartext and
//!   through the two-party protocol) and compares, with readable reports on a mismatch.
//!
//! Every test binary uses a different part of this, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod harness;
pub mod oracle;
pub mod values;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// SplitMix64 from the random-program generator, so every test input is reproducible from its seed.
pub use pgc_compiler::randprog::Rng;

/// The seeds a random-program test runs: `{prefix}_SEEDS=a,b,c` exactly (to reproduce a
/// reported failure), else `{prefix}_COUNT` seeds (default `default_count`) from
/// `{prefix}_BASE` (default `default_base`), so a campaign can run fresh seeds.
pub fn seeds(prefix: &str, default_count: u64, default_base: u64) -> Vec<u64> {
    if let Ok(list) = std::env::var(format!("{prefix}_SEEDS")) {
        return list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
    }
    let var = |name: &str| {
        std::env::var(format!("{prefix}_{name}"))
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let count = var("COUNT").unwrap_or(default_count);
    let base = var("BASE").unwrap_or(default_base);
    (base..base + count).collect()
}

/// A scratch directory removed when dropped (kept when `PGC_KEEP_TEMP` is set, for debugging).
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("pgc-{tag}-{}-{n}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("PGC_KEEP_TEMP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            eprintln!("kept {}", self.0.display());
        }
    }
}

/// Whether gcc can be run. Tests that need it call this first and return early (loudly) when
/// it cannot: gcc is present on the development machines and in CI, so this is for odd setups.
pub fn gcc_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *AVAILABLE.get_or_init(|| {
        std::process::Command::new("gcc")
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    });
    if !ok {
        eprintln!(
            "\n!!!!!!!! gcc NOT FOUND: skipping a gcc-oracle test. Install gcc to run it. !!!!!!!!\n"
        );
    }
    ok
}

/// The repository root (examples/ lives there).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}
