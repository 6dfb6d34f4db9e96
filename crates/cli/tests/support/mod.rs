//! Helpers shared by the CLI's process-level tests.

use std::process::{Command, Output};

use serde_json::Value;

/// Runs `cmd` and asserts it succeeded, showing its output otherwise.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("pgc starts");
    assert!(
        out.status.success(),
        "pgc failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The command's stdout parsed as JSON.
pub fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A shared-secret file for `pgc run --psk` in tests (fixed content: a test secret, not a
/// real one), written once per test process.
#[allow(dead_code)]
pub fn test_psk() -> String {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("pgc-test-psk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("test.psk");
        std::fs::write(&path, format!("pgc-secret1-{}\n", "5a".repeat(32))).unwrap();
        path.to_str().unwrap().to_string()
    })
    .clone()
}
