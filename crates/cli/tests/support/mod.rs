//! Helpers shared by the CLI's process-level tests.

// Each test file compiles this module on its own and uses only some of it.
#![allow(dead_code)]

use std::process::{Child, Command, Output, Stdio};

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
pub fn test_psk() -> String {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("pgc-test-psk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("test.psk");
        std::fs::write(&path, format!("pgc-secret1-{}\n", "5a".repeat(32))).unwrap();
        // Private, as `pgc keygen --secret` writes it (else each run notes the mode).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        path.to_str().unwrap().to_string()
    })
    .clone()
}

/// A directory of its own for one test, removed when dropped; `pgc` commands run with their
/// cache and configuration (keys) inside it, never the user's.
pub struct Scratch(pub std::path::PathBuf);

impl Scratch {
    /// `pgc-TEST-NAME-PID` under the system's temporary directory, empty.
    pub fn new(test: &str, name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pgc-{test}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// The `pgc` binary, running in this directory with its cache and keys here.
    pub fn pgc(&self) -> Command {
        self.inside(Command::new(env!("CARGO_BIN_EXE_pgc")))
    }

    /// As [`pgc_in_1gib`], in this directory with its cache and keys here.
    pub fn pgc_in_1gib(&self) -> Command {
        self.inside(pgc_in_1gib())
    }

    fn inside(&self, mut c: Command) -> Command {
        c.env("XDG_CACHE_HOME", self.0.join("cache"))
            .env("XDG_CONFIG_HOME", self.0.join("config"))
            .current_dir(&self.0);
        c
    }
}

/// The `pgc` binary with its address space limited to 1 GiB (`ulimit -v`; append the
/// arguments): a file read towards the default --max-memory (half the machine's memory), or
/// a hostile header asking for gigabytes, makes it fail instead of filling the machine.
pub fn pgc_in_1gib() -> Command {
    let mut c = Command::new("sh");
    // "$@" passes every argument as it is ("$10" would be "$1" followed by "0").
    c.arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_pgc"));
    c
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A loopback address with a port that was free just now, for a listening party.
pub fn loopback_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

/// Party A (listening) and party B (connecting) of `pgc run` on `src`, as two processes in
/// `s`, each with its own extra arguments.
pub fn two_parties(s: &Scratch, src: &str, a_args: &[&str], b_args: &[&str]) -> (Child, Child) {
    let addr = loopback_addr();
    let spawn = |party: &str, endpoint: &str, extra: &[&str]| {
        s.pgc()
            .args(["run", src, "--party", party, endpoint, &addr])
            .args(["--psk", &test_psk(), "--timeout", "20"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    (
        spawn("a", "--listen", a_args),
        spawn("b", "--connect", b_args),
    )
}

/// The start of each protocol command, enough for the level flags to be checked (the
/// checks come before any compile or connection).
pub fn protocol_commands() -> Vec<Vec<String>> {
    let psk = test_psk();
    [
        vec!["local", "builtin:millionaires", "--a", "1", "--b", "2"],
        vec![
            "run",
            "builtin:millionaires",
            "--party",
            "a",
            "--connect",
            "127.0.0.1:9",
            "--input",
            "1",
            "--psk",
            &psk,
        ],
        vec!["bench", "run", "--ands", "1000"],
    ]
    .iter()
    .map(|c| c.iter().map(|s| s.to_string()).collect())
    .collect()
}

/// `base` followed by `extra`.
pub fn with(base: &[String], extra: &[&str]) -> Vec<String> {
    base.iter()
        .cloned()
        .chain(extra.iter().map(|s| s.to_string()))
        .collect()
}
