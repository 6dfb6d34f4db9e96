//! `pgc run --serve`: one listening party serves many peers' runs, one per connection, over
//! TLS with a shared secret, and neither an impostor nor a peer that leaves mid-run stops it.
//! The serving process's file descriptors and memory must not grow with the number of runs.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::Scratch;

/// Open file descriptors and resident memory (KiB) of process `pid`.
fn fds_and_rss(pid: u32) -> (usize, u64) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    (fds, rss)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until the server's stderr says it is serving.
fn wait_until_serving(server: &mut Child) -> BufReader<std::process::ChildStderr> {
    let mut err = BufReader::new(server.stderr.take().unwrap());
    let start = Instant::now();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "server ended early");
        if line.contains("serving runs on") {
            return err;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{line}");
    }
}

#[test]
fn one_party_serves_many_runs_without_growing() {
    let s = Scratch::new("serve", "many");
    let secret = s.0.join("shared.psk");
    let wrong = s.0.join("wrong.psk");
    for f in [&secret, &wrong] {
        let out = s
            .pgc()
            .arg("keygen")
            .arg("--secret")
            .arg(f)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let addr = format!("127.0.0.1:{}", free_port());
    const RUNS: u64 = 40;
    let mut server = s
        .pgc()
        .args([
            "run",
            "builtin:millionaires",
            "--party",
            "a",
            "--listen",
            &addr,
        ])
        .args([
            "--serve",
            "--runs",
            &RUNS.to_string(),
            "--json",
            "--input",
            "5000",
        ])
        .arg("--psk")
        .arg(&secret)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = wait_until_serving(&mut server);
    // Read the server's notes on a thread so its pipe never fills.
    let notes = std::thread::spawn(move || {
        let mut text = String::new();
        let mut err = err;
        err.read_to_string(&mut text).unwrap();
        text
    });
    let client = |input: u64, psk: &PathBuf| {
        s.pgc()
            .args([
                "run",
                "builtin:millionaires",
                "--party",
                "b",
                "--connect",
                &addr,
            ])
            .args(["--json", "--timeout", "10", "--input", &input.to_string()])
            .arg("--psk")
            .arg(psk)
            .output()
            .unwrap()
    };
    let mut sample_after_5 = None;
    for run in 1..=RUNS {
        if run == 20 {
            // An impostor (another secret) is refused; serving goes on.
            let out = client(1, &wrong);
            assert!(!out.status.success(), "the impostor must fail");
        }
        // A's 5000 > B's value exactly when B's value is below 5000.
        let b = if run % 2 == 0 { 4000 + run } else { 6000 + run };
        let out = client(b, &secret);
        assert!(
            out.status.success(),
            "run {run}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["outputs"][0], format!("0x{}", u8::from(b < 5000)), "{v}");
        if run == 5 {
            sample_after_5 = Some(fds_and_rss(server.id()));
        }
        if run == RUNS - 1 {
            let (fds5, rss5) = sample_after_5.unwrap();
            // The server may still be closing the connection of the run that just ended
            // (seen once under CI load: one descriptor more): a leak stays, that goes.
            let settled = Instant::now();
            let (mut fds, mut rss) = fds_and_rss(server.id());
            while fds > fds5 && settled.elapsed() < Duration::from_secs(3) {
                std::thread::sleep(Duration::from_millis(50));
                (fds, rss) = fds_and_rss(server.id());
            }
            assert!(fds <= fds5, "file descriptors grew from {fds5} to {fds}");
            // Allocator noise only: a leak of even a few KiB per run would show over 34 runs.
            assert!(
                rss <= rss5 + 2048,
                "resident memory grew from {rss5} to {rss} KiB"
            );
        }
    }
    let out = server.wait_with_output().unwrap();
    let notes = notes.join().unwrap();
    assert!(out.status.success(), "{notes}");
    assert!(
        notes.contains(&format!("served {RUNS} runs (0 failed)")),
        "{notes}"
    );
    // One JSON object per run, numbered.
    let lines: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, RUNS);
    for (i, v) in lines.iter().enumerate() {
        assert_eq!(v["run"], i as u64 + 1);
    }
}

#[test]
fn a_peer_that_leaves_mid_run_does_not_stop_serving() {
    let s = Scratch::new("serve", "leaver");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut server = s
        .pgc()
        .args(["run", "builtin:aes128", "--party", "a", "--listen", &addr])
        .args([
            "--serve",
            "--runs",
            "2",
            "--insecure-plaintext",
            "--timeout",
            "5",
        ])
        .args(["--input", "0x000102030405060708090a0b0c0d0e0f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = wait_until_serving(&mut server);
    let notes = std::thread::spawn(move || {
        let mut text = String::new();
        let mut err = err;
        err.read_to_string(&mut text).unwrap();
        text
    });
    // A raw client that completes connection set-up (the 24-byte main hello, then the
    // acceptor's `PGCA`), then sends half a message and leaves: a failed run.
    {
        use std::io::Write;
        let mut raw = std::net::TcpStream::connect(&addr).unwrap();
        let mut hello = [0u8; 24];
        hello[..4].copy_from_slice(b"PGCM");
        hello[20..].copy_from_slice(&1u32.to_le_bytes());
        raw.write_all(&hello).unwrap();
        let mut ack = [0u8; 4];
        raw.read_exact(&mut ack).unwrap();
        assert_eq!(&ack, b"PGCA");
        raw.write_all(&[0, 0, 0, 8, 1, 2, 3]).unwrap();
    }
    let out = s
        .pgc()
        .args(["run", "builtin:aes128", "--party", "b", "--connect", &addr])
        .args(["--insecure-plaintext", "--timeout", "10"])
        .args(["--input", "0x00112233445566778899aabbccddeeff"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("0x69c4e0d86a7b0430d8cdb78070b4c55a"),
        "{out:?}"
    );
    let done = server.wait_with_output().unwrap();
    let notes = notes.join().unwrap();
    assert!(done.status.success(), "{notes}");
    assert!(notes.contains("served 2 runs (1 failed)"), "{notes}");
    assert!(notes.contains("run 1 (peer"), "{notes}");
}
