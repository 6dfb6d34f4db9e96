//! `pgc run` against a peer that keeps its connection open but stops mid-protocol (a
//! process stopped with SIGSTOP): the other party is cut off after `--timeout`, with an
//! error, instead of waiting forever.

#![cfg(unix)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_peer_that_stops_mid_run_is_cut_off() {
    let addr = format!("127.0.0.1:{}", free_port());
    // Long enough (tens of millions of AND gates, seconds) that B is still running when it is stopped.
    let circuit = "builtin:random:4000x10000";
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pgc"))
            .args([
                "run",
                circuit,
                "--timeout",
                "1",
                "--quiet",
                "--insecure-plaintext",
            ])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn(&["--party", "a", "--listen", &addr, "--input", "0x1234"]);
    let mut b = spawn(&["--party", "b", "--connect", &addr, "--input", "0x5678"]);
    std::thread::sleep(Duration::from_millis(300));
    let stop = Command::new("kill")
        .args(["-STOP", &b.id().to_string()])
        .status()
        .unwrap();
    assert!(stop.success());
    let start = Instant::now();
    let out = a.wait_with_output().unwrap();
    let waited = start.elapsed();
    let _ = b.kill();
    let _ = b.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "A must fail: {err}");
    assert!(out.stdout.is_empty(), "no output");
    assert!(
        err.contains(
            "no progress for 1 s (the peer stopped sending or is too slow); --timeout sets this"
        ) || err.contains("timed out after 1.0 s"),
        "{err}"
    );
    assert!(waited < Duration::from_secs(10), "cut off after {waited:?}");
}
