//! `--protocol yao|gmw|auto` on `pgc run`, `pgc local` and `pgc bench run`: the same outputs
//! under both protocols (each revealed to the same parties), the refusals that come before
//! any work, both parties agreeing at the handshake, and `auto` saying what it chose.

use std::path::PathBuf;
use std::process::Output;

use serde_json::json;

mod support;
use support::{Scratch, json_of, protocol_commands, run_ok, two_parties, with};

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn shared(rel: &str) -> String {
    let f = pgc_circuit::testdata::vector_file(rel);
    f.path.to_str().unwrap().to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn fails(s: &Scratch, args: &[&str]) -> String {
    let out = s.pgc().args(args).output().expect("pgc starts");
    assert!(
        !out.status.success(),
        "pgc {args:?} should fail; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr(&out)
}

/// Arrays, a struct and outputs for both, A only and B only.
const MIXED: &str = "\
struct pt { int x; unsigned char y[2]; };
void mpc_main(int INPUT_A_v[3], struct pt INPUT_B_p, long INPUT_B_k,
              int *OUTPUT_sum, int *OUTPUT_A_dot, _Bool *OUTPUT_B_big, int OUTPUT_grid[2][2])
{
    *OUTPUT_sum = INPUT_A_v[0] + INPUT_A_v[1] + INPUT_A_v[2] + INPUT_B_p.x;
    *OUTPUT_A_dot = INPUT_A_v[0] * INPUT_B_p.y[0] + INPUT_A_v[1] * INPUT_B_p.y[1];
    *OUTPUT_B_big = INPUT_B_k > 1000;
    OUTPUT_grid[0][0] = -1;
    OUTPUT_grid[0][1] = INPUT_A_v[2];
    OUTPUT_grid[1][0] = 7;
    OUTPUT_grid[1][1] = INPUT_B_p.x;
}
";

#[test]
fn local_gives_the_same_outputs_under_both_protocols() {
    let s = Scratch::new("protocols", "local");
    let cases: [(String, &[&str]); 3] = [
        (
            example("millionaires.c"),
            &["--a", "income=5000", "--b", "income=7000"],
        ),
        (
            example("hamming.c"),
            &[
                "-D",
                "HAMMING_WORDS=2",
                "--a",
                "bits=[1,2]",
                "--b",
                "bits=[3,255]",
            ],
        ),
        (
            shared("bristol_fashion/aes_128.txt"),
            &["--a", "0x0", "--b", "0x0"],
        ),
    ];
    for (program, args) in &cases {
        let outputs: Vec<_> = ["yao", "gmw", "auto"]
            .iter()
            .map(|p| {
                let out = run_ok(
                    s.pgc()
                        .args(["local", program.as_str(), "--json", "--protocol", p])
                        .args(*args),
                );
                let v = json_of(&out);
                if *p == "gmw" {
                    let g = &v["stats"]["b"]["gmw"];
                    assert!(g["rounds"].as_u64().unwrap() > 0, "{program}: {v}");
                    assert_eq!(v["stats"]["a"]["protocol"], "gmw");
                }
                v["outputs"].clone()
            })
            .collect();
        assert_eq!(outputs[0], outputs[1], "{program}: yao vs gmw");
        assert_eq!(outputs[0], outputs[2], "{program}: yao vs auto");
    }
    // AES-128 of the zero key and block (FIPS-197 test vector, Bristol bit order).
    let out = run_ok(s.pgc().args([
        "local",
        &shared("bristol_fashion/aes_128.txt"),
        "--a",
        "0x0",
        "--b",
        "0x0",
        "--protocol",
        "gmw",
        "--latency",
        "1",
    ]));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("0x66e94bd4ef8a2c3b884cfa59ca342b2e"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let e = stderr(&out);
    assert!(e.contains("setup") && e.contains("60 rounds"), "{e}");
}

#[test]
fn auto_says_what_it_chose_and_why() {
    let s = Scratch::new("protocols", "auto");
    let out = run_ok(s.pgc().args([
        "local",
        &example("millionaires.c"),
        "--a",
        "income=1",
        "--b",
        "income=2",
        "--protocol",
        "auto",
    ]));
    let e = stderr(&out);
    assert!(
        e.contains("--protocol auto chose") && e.contains("AND depth") && e.contains("predicted"),
        "{e}"
    );
}

#[test]
fn gmw_refuses_cheater_levels_and_parallel_modes_before_any_work() {
    let s = Scratch::new("protocols", "refuse");
    let bases = protocol_commands();
    let fails_with = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&s, &args)
    };
    for base in &bases {
        for protocol in ["gmw", "auto"] {
            for level in ["malicious", "dual-execution"] {
                let e = fails_with(with(base, &["--protocol", protocol, "--security", level]));
                assert!(
                    e.contains(&format!("--protocol {protocol} is semi-honest only")),
                    "{base:?}: {e}"
                );
            }
        }
        let e = fails_with(with(base, &["--protocol", "bmr"]));
        assert!(
            e.contains("yao") && e.contains("gmw") && e.contains("auto"),
            "{e}"
        );
    }
    for base in &bases[..2] {
        let e = fails_with(with(base, &["--protocol", "gmw", "--parallel", "cgp"]));
        assert!(
            e.contains("--parallel cgp is a mode of Yao's protocol"),
            "{e}"
        );
    }
}

#[test]
fn two_processes_under_gmw_and_auto_each_see_only_their_outputs() {
    let s = Scratch::new("protocols", "run");
    let src = s.0.join("mixed.c");
    std::fs::write(&src, MIXED).unwrap();
    let src = src.to_str().unwrap();
    for protocol in ["gmw", "auto"] {
        let (a, b) = two_parties(
            &s,
            src,
            &["--input", "v=[1, 2, -3]", "--json", "--protocol", protocol],
            &[
                "--input",
                "p={x: 10, y: [2, 255]}",
                "--input",
                "k=5000",
                "--json",
                "--protocol",
                protocol,
            ],
        );
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        for (who, out) in [("a", &a), ("b", &b)] {
            assert!(
                out.status.success(),
                "{protocol} party {who}: {}",
                stderr(out)
            );
        }
        assert_eq!(
            json_of(&a)["outputs"],
            json!({"OUTPUT_sum": 10, "OUTPUT_A_dot": 512, "OUTPUT_grid": [[-1, -3], [7, 10]]})
        );
        assert_eq!(
            json_of(&b)["outputs"],
            json!({"OUTPUT_sum": 10, "OUTPUT_B_big": 1, "OUTPUT_grid": [[-1, -3], [7, 10]]})
        );
        // Both ran the same protocol (under auto, the one A chose and told B).
        let (pa, pb) = (
            json_of(&a)["stats"]["protocol"].clone(),
            json_of(&b)["stats"]["protocol"].clone(),
        );
        assert_eq!(pa, pb);
        if protocol == "gmw" {
            assert_eq!(pa, "gmw");
        }
    }
}

#[test]
fn parties_running_different_protocols_stop_at_the_handshake() {
    let s = Scratch::new("protocols", "mismatch");
    for (pa, pb) in [("gmw", "yao"), ("auto", "gmw")] {
        let (a, b) = two_parties(
            &s,
            "builtin:millionaires",
            &["--input", "5", "--protocol", pa],
            &["--input", "7", "--protocol", pb],
        );
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        for out in [&a, &b] {
            assert!(!out.status.success());
            assert!(out.stdout.is_empty());
            assert!(
                stderr(out).contains("the parties run different protocols"),
                "{pa}/{pb}: {}",
                stderr(out)
            );
        }
    }
}

#[test]
fn bench_run_measures_gmw_phases() {
    let s = Scratch::new("protocols", "bench");
    let out = run_ok(s.pgc().args([
        "bench",
        "run",
        "--ands",
        "20000",
        "--width",
        "1000",
        "--tls-only",
        "--json",
        "--protocol",
        "gmw",
    ]));
    let v = json_of(&out);
    assert_eq!(v["protocol"], "gmw");
    assert_eq!(v["gmw"]["rounds"], 20);
    assert!(v["online_and_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn compact_circuits_in_memory_and_streamed_run_under_gmw() {
    let s = Scratch::new("protocols", "compact");
    let pgc = s.0.join("edc.pgc");
    let pgc = pgc.to_str().unwrap();
    run_ok(s.pgc().args([
        "compile",
        &example("edit_distance_large.c"),
        "-D",
        "EDIT_LEN=12",
        "--compact",
        "always",
        "-o",
        pgc,
    ]));
    let inputs = [
        "--a",
        "text=[1,2,3,4,5,6,7,8,9,10,11,12]",
        "--b",
        "text=[1,2,3,4,5,6,7,8,9,10,11,13]",
    ];
    for extra in [&[][..], &["--stream", "--parallel", "none"][..]] {
        let out = run_ok(
            s.pgc()
                .args(["local", pgc, "--json", "--protocol", "gmw"])
                .args(inputs)
                .args(extra),
        );
        let v = json_of(&out);
        assert_eq!(v["outputs"]["OUTPUT_distance"], 1, "{extra:?}: {v}");
        assert!(v["stats"]["b"]["gmw"]["rounds"].as_u64().unwrap() > 12);
    }
}
