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
