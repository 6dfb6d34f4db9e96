//! `--garbling three-halves`: `pgc local` and `pgc run` (two processes) give the cleartext
//! result; parties that garble differently are refused at the handshake, both naming the
//! two choices; runs three-halves does not cover are refused before inputs are read.

mod support;

use std::process::Output;

use support::{Scratch, run_ok, two_parties};

const INPUTS: [&str; 4] = ["--a", "0x0123456789abcdef", "--b", "0xfedcba9876543210"];
const CIRCUIT: &str = "builtin:random:64x8";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The cleartext result of `CIRCUIT` on `INPUTS`.
fn cleartext(s: &Scratch) -> String {
    stdout(&run_ok(s.pgc().args([
        "eval", CIRCUIT, "--input", INPUTS[1], "--input", INPUTS[3],
    ])))
}

#[test]
fn local_with_three_halves_gives_the_cleartext_result() {
    let s = Scratch::new("garbling", "local");
    let want = cleartext(&s);
    assert!(want.starts_with("output 0: 0x"), "{want}");
    let out = run_ok(
        s.pgc()
            .args(["local", CIRCUIT, "--quiet", "--garbling", "three-halves"])
            .args(INPUTS),
    );
    assert_eq!(stdout(&out), want);
    // A program with parallel regions: --parallel auto runs it sequentially.
    let mvmul = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mvmul.c");
    let row = format!("[{}]", ["3"; 16].join(","));
    let matrix = format!("matrix=[{}]", [row.as_str(); 4].join(","));
    let vector = format!("vector=[{}]", ["2"; 16].join(","));
    let args = |garbling: &str| {
        vec![
            "local".to_string(),
            mvmul.into(),
            "-D".into(),
            "MVMUL_M=4".into(),
            "--quiet".into(),
            "--garbling".into(),
            garbling.into(),
            "--a".into(),
            matrix.clone(),
            "--b".into(),
            vector.clone(),
        ]
    };
    let three = run_ok(s.pgc().args(args("three-halves")));
    let half = run_ok(s.pgc().args(args("half-gates")));
    assert_eq!(stdout(&three), stdout(&half));
    assert!(stdout(&three).contains("96"), "{}", stdout(&three));
}

#[test]
fn run_with_three_halves_on_both_sides_gives_the_cleartext_result() {
    let s = Scratch::new("garbling", "run");
    let want = cleartext(&s);
    let flags = ["--garbling", "three-halves", "--quiet"];
    let (a, b) = two_parties(
        &s,
        CIRCUIT,
        &[&["--input", INPUTS[1]][..], &flags].concat(),
        &[&["--input", INPUTS[3]][..], &flags].concat(),
    );
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    assert_eq!(stdout(&a), want);
    assert_eq!(stdout(&b), want);
}

#[test]
fn different_garbling_is_refused_at_the_handshake_on_both_sides() {
    let s = Scratch::new("garbling", "mismatch");
    let (a, b) = two_parties(
        &s,
        CIRCUIT,
        &["--input", INPUTS[1], "--garbling", "three-halves"],
        &["--input", INPUTS[3]],
    );
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(!a.status.success() && !b.status.success());
    assert!(
        stderr(&a).contains("--garbling three-halves here, half-gates at the peer"),
        "{}",
        stderr(&a)
    );
    assert!(
        stderr(&b).contains("--garbling half-gates here, three-halves at the peer"),
        "{}",
        stderr(&b)
    );
}

#[test]
fn uncovered_runs_are_refused_before_inputs_are_read() {
    let s = Scratch::new("garbling", "refused");
    // "zz" is no value: an error about it would mean the inputs were read first.
    for (extra, says) in [
        (&["--parallel", "cgp"][..], "--parallel cgp"),
        (&["--security", "malicious"][..], "--security malicious"),
        (
            &["--security", "dual-execution"][..],
            "--security dual-execution",
        ),
        (&["--protocol", "gmw"][..], "--protocol gmw"),
        (&["--protocol", "auto"][..], "--protocol auto"),
        (&["--device", "gpu"][..], "GPU engine garbles half-gates"),
    ] {
        for cmd in [
            vec!["local", CIRCUIT, "--a", "zz", "--b", "zz"],
            vec![
                "run",
                CIRCUIT,
                "--party",
                "a",
                "--connect",
                "127.0.0.1:9",
                "--input",
                "zz",
                "--insecure-plaintext",
            ],
        ] {
            let out = s
                .pgc()
                .args(&cmd)
                .args(["--garbling", "three-halves"])
                .args(extra)
                .output()
                .unwrap();
            assert!(!out.status.success());
            let err = stderr(&out);
            assert!(
                err.contains("--garbling three-halves is refused") && err.contains(says),
                "{cmd:?} {extra:?}: {err}"
            );
        }
    }
}

#[test]
fn auto_picks_three_halves_where_the_link_limits_yao() {
    // A deep circuit over a slow link with latency: Yao beats GMW (one latency per AND
    // level), and the link, not the CPU, limits Yao's tables.
    let s = Scratch::new("garbling", "auto");
    let circuit = "builtin:random:64x64";
    let want =
        stdout(&run_ok(s.pgc().args([
            "eval", circuit, "--input", INPUTS[1], "--input", INPUTS[3],
        ])));
    let flags = ["--protocol", "auto", "--rate-limit", "20", "--latency", "2"];
    let (a, b) = two_parties(
        &s,
        circuit,
        &[&["--input", INPUTS[1]][..], &flags].concat(),
        &[&["--input", INPUTS[3]][..], &flags].concat(),
    );
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    for o in [&a, &b] {
        assert_eq!(stdout(o), want);
        assert!(
            stderr(o).contains("chose yao") && stderr(o).contains("garbling three-halves"),
            "{}",
            stderr(o)
        );
    }
}
