//! How `pgc` ends when its surroundings go away: a reader that closes the output pipe
//! early, an interrupted compile (its spill files must go), and a compile killed outright
//! (the next compile in the directory sweeps what it left).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::Scratch;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// pgc's temporary files in `dir`: spill files `pgc-…-PID-….tmp` and partial outputs
/// `NAME.pgc.tmpPID`.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect()
}

#[test]
fn a_closed_output_pipe_ends_pgc_quietly() {
    let s = Scratch::new("edges", "pipe");
    let mut child = s
        .pgc()
        .args(["info", "builtin:aes128"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end at once, as `head` does once it has what it wants. (Reading a
    // line first would race: this output fits the pipe's buffer, so pgc could finish writing
    // before the pipe closes.) pgc is still starting, so its every write meets a closed pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // 141 = 128 + SIGPIPE, what the shell reports for GNU tools in the same spot.
    assert_eq!(out.status.code(), Some(141), "stderr: {stderr}");
}

/// Starts a compact compile large enough to spill for many seconds, and waits until its
/// spill files exist.
fn start_spilling_compile(s: &Scratch) -> std::process::Child {
    let child = s
        .pgc()
        .arg("compile")
        .arg(example("edit_distance_large.c"))
        .args(["-D", "EDIT_LEN=4095", "--compact", "always", "-o"])
        .arg(s.0.join("out.pgc"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while temp_files(&s.0).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no spill files appeared: {:?}",
            temp_files(&s.0)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

#[test]
fn an_interrupted_compile_removes_its_spill_files() {
    for signal in ["-INT", "-TERM"] {
        let s = Scratch::new("edges", &format!("interrupt{signal}"));
        let child = start_spilling_compile(&s);
        let killed = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(killed.success());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{signal}: {stderr}");
        assert!(
            stderr.contains("interrupted; removed"),
            "{signal}: {stderr}"
        );
        assert_eq!(temp_files(&s.0), Vec::<String>::new(), "{signal}");
        assert!(!s.0.join("out.pgc").exists());
    }
}

#[test]
fn a_killed_compiles_files_are_swept_by_the_next_compile_there() {
    let s = Scratch::new("edges", "sweep");
    let mut child = start_spilling_compile(&s);
    child.kill().unwrap();
    child.wait().unwrap();
    let left = temp_files(&s.0);
    assert!(!left.is_empty(), "SIGKILL leaves files behind");
    let out = s
        .pgc()
        .arg("compile")
        .arg(example("edit_distance_large.c"))
        .args(["-D", "EDIT_LEN=7", "--compact", "always", "-o"])
        .arg(s.0.join("small.pgc"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(temp_files(&s.0), Vec::<String>::new(), "was: {left:?}");
    assert!(s.0.join("small.pgc").exists());
}
