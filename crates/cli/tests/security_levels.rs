//! `--security` and `--stat-sec` on `pgc run`, `pgc local` and `pgc bench run`: what the
//! flags accept, what they refuse before any work, that two parties must agree on the level,
//! and that every level computes the same outputs.

use std::path::PathBuf;
use std::process::Output;

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

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `pgc ARGS` in `s` and returns its output, which must be a failure.
fn fails(s: &Scratch, args: &[&str]) -> String {
    let out = s.pgc().args(args).output().expect("pgc starts");
    assert!(
        !out.status.success(),
        "pgc {args:?} should fail; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr(&out)
}

fn fails_with(s: &Scratch, args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails(s, &args)
}

#[test]
fn an_unknown_level_is_refused_with_the_levels_listed() {
    let s = Scratch::new("levels", "unknown");
    for base in protocol_commands() {
        let e = fails_with(&s, &with(&base, &["--security", "paranoid"]));
        for level in ["semi-honest", "malicious", "dual-execution"] {
            assert!(e.contains(level), "{base:?}: {e}");
        }
        assert!(e.contains("paranoid"), "{base:?}: {e}");
    }
}

#[test]
fn stat_sec_out_of_range_or_without_malicious_is_refused() {
    let s = Scratch::new("levels", "statsec");
    for base in protocol_commands() {
        for bad in ["0", "129", "x"] {
            let e = fails_with(
                &s,
                &with(&base, &["--security", "malicious", "--stat-sec", bad]),
            );
            assert!(e.contains("--stat-sec"), "{base:?} --stat-sec {bad}: {e}");
        }
        for level in [
            &[][..],
            &["--security", "semi-honest"],
            &["--security", "dual-execution"],
        ] {
            let e = fails_with(&s, &with(&with(&base, level), &["--stat-sec", "40"]));
            assert!(
                e.contains("--stat-sec 40 applies to --security malicious only"),
                "{base:?} {level:?}: {e}"
            );
        }
    }
}

#[test]
fn a_parallel_mode_with_a_level_against_cheating_is_refused() {
    let s = Scratch::new("levels", "parallel");
    for base in &protocol_commands()[..2] {
        for level in ["malicious", "dual-execution"] {
            for mode in ["fgp", "cgp", "ipp"] {
                let e = fails_with(&s, &with(base, &["--security", level, "--parallel", mode]));
                assert!(
                    e.contains(&format!(
                        "--parallel {mode} is a mode of the semi-honest protocol only; \
                         --security {level}"
                    )) && e.contains("leave --parallel out (or give --parallel none)"),
                    "{base:?} {level} {mode}: {e}"
                );
            }
        }
    }
}

#[test]
fn dual_execution_refuses_an_output_for_one_party_only() {
    let s = Scratch::new("levels", "dualvis");
    std::fs::write(
        s.0.join("private.c"),
        "void mpc_main(int INPUT_A_x, int INPUT_B_y, int *OUTPUT_sum, int *OUTPUT_B_diff)\n\
         { *OUTPUT_sum = INPUT_A_x + INPUT_B_y; *OUTPUT_B_diff = INPUT_A_x - INPUT_B_y; }\n",
    )
    .unwrap();
    let e = fails(
        &s,
        &[
            "local",
            "private.c",
            "--a",
            "x=1",
            "--b",
            "y=2",
            "--security",
            "dual-execution",
        ],
    );
    assert!(
        e.contains("--security dual-execution reveals every output to both parties")
            && e.contains("OUTPUT_B_diff is for one party only"),
        "{e}"
    );
}

#[test]
fn parties_at_different_levels_stop_with_the_handshake_error() {
    let s = Scratch::new("levels", "mismatch");
    let cases: [(&[&str], &[&str]); 3] = [
        (&[], &["--security", "malicious"]),
        (
            &["--security", "malicious", "--stat-sec", "40"],
            &["--security", "malicious", "--stat-sec", "41"],
        ),
        (
            &["--security", "dual-execution"],
            &["--security", "malicious"],
        ),
    ];
    for (a_level, b_level) in cases {
        let (a, b) = two_parties(
            &s,
            "builtin:millionaires",
            &[a_level, &["--input", "5"]].concat(),
            &[b_level, &["--input", "7"]].concat(),
        );
        for (who, out) in [("a", a.wait_with_output()), ("b", b.wait_with_output())] {
            let out = out.unwrap();
            assert!(!out.status.success(), "party {who} {a_level:?}/{b_level:?}");
            let e = stderr(&out);
            assert!(
                e.contains("the parties run different security levels")
                    && e.contains("give both the same --security and --stat-sec"),
                "party {who} {a_level:?}/{b_level:?}: {e}"
            );
        }
    }
}

#[test]
fn every_level_computes_the_same_outputs() {
    let s = Scratch::new("levels", "same");
    let program = example("dot_product.c");
    let local = |level: &[&str]| {
        let mut cmd = s.pgc();
        cmd.args(["local", &program, "-D", "N=4", "--a", "a=[1,2,3,4]"])
            .args(["--b", "b=[5,6,-7,8]", "--json"])
            .args(level);
        json_of(&run_ok(&mut cmd))["outputs"].clone()
    };
    let semi_honest = local(&[]);
    assert_eq!(semi_honest, serde_json::json!({ "OUTPUT_res": 28 }));
    assert_eq!(
        local(&["--security", "malicious", "--stat-sec", "2"]),
        semi_honest
    );
    assert_eq!(local(&["--security", "dual-execution"]), semi_honest);

    // Two processes, the listening one serving: the level reaches a served run too.
    let level = ["--security", "malicious", "--stat-sec", "2", "--json"];
    let (a, b) = two_parties(
        &s,
        "builtin:millionaires",
        &[&level[..], &["--serve", "--runs", "1", "--input", "5"]].concat(),
        &[&level[..], &["--input", "7"]].concat(),
    );
    for (who, out) in [("a", a.wait_with_output()), ("b", b.wait_with_output())] {
        let out = out.unwrap();
        assert!(out.status.success(), "party {who}: {}", stderr(&out));
        // The server's summary says "(0 failed)"; any failure shows as an error line.
        assert!(
            !stderr(&out).contains("error") && !stderr(&out).contains(" 1 failed"),
            "party {who}: {}",
            stderr(&out)
        );
        assert_eq!(
            json_of(&out)["outputs"],
            serde_json::json!(["0x0"]),
            "party {who}"
        );
    }
}
