//! `--parallel`, `--threads`, link shaping and the regions `pgc info` reports, through the
//! `pgc` binary as a user runs it.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::json;

mod support;
use support::{json_of, run_ok};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    repo()
        .join("examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn pgc(cache: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgc"));
    let dir = std::env::temp_dir().join(format!("pgc-par-{cache}-{}", std::process::id()));
    c.env("XDG_CACHE_HOME", dir);
    c
}

#[test]
fn every_mode_gives_the_same_outputs_for_the_seed_benchmarks() {
    let cases = [
        (
            "biomatch.c",
            vec![
                "-D",
                "BIOMATCH_N=5",
                "--a",
                "db=[[1,2,3,4],[9,9,9,9],[0,0,0,0],[1,2,3,5],[-7,1,1,1]]",
                "--b",
                "sample=[1,2,3,6]",
            ],
            json!({"OUTPUT_min_dist": 1}),
        ),
        (
            "mexp.c",
            vec![
                "-D",
                "MEXP_K=3",
                "--a",
                "base=[3,10,7]",
                "--b",
                "exponent=[5,65520,2]",
            ],
            json!({"OUTPUT_power": [243, 1, 49]}),
        ),
        (
            "mvmul.c",
            vec![
                "-D",
                "MVMUL_M=3",
                "-D",
                "MVMUL_K=2",
                "--a",
                "matrix=[[1,2],[3,4],[-1,0]]",
                "--b",
                "vector=[5,6]",
            ],
            json!({"OUTPUT_product": [17, 39, -5]}),
        ),
    ];
    for (file, args, expect) in &cases {
        for (mode, threads) in [
            ("none", "1"),
            ("fgp", "2"),
            ("cgp", "3"),
            ("ipp", "2"),
            ("auto", "8"),
        ] {
            let out = run_ok(
                pgc("modes")
                    .args(["local", &example(file)])
                    .args(args)
                    .args(["--parallel", mode, "--threads", threads, "--json"]),
            );
            assert_eq!(
                json_of(&out)["outputs"],
                *expect,
                "{file} --parallel {mode}"
            );
        }
    }
}

#[test]
fn info_lists_the_regions() {
    let out = run_ok(pgc("info").args(["info", &example("mvmul.c"), "-D", "MVMUL_M=4", "--json"]));
    let regions = &json_of(&out)["regions"];
    assert_eq!(regions.as_array().unwrap().len(), 1, "{regions}");
    assert_eq!(regions[0]["instances"], 4);
    assert!(regions[0]["line"].as_u64().unwrap() > 0);
    assert!(regions[0]["and_gates_per_instance"].as_u64().unwrap() > 1000);
    let text = String::from_utf8(
        run_ok(pgc("info").args(["info", &example("mvmul.c"), "-D", "MVMUL_M=4"])).stdout,
    )
    .unwrap();
    assert!(text.contains("4 instances"), "{text}");
    // A Bristol circuit has no regions: an empty list.
    let out = run_ok(pgc("info").args(["info", "builtin:millionaires", "--json"]));
    assert_eq!(json_of(&out)["regions"], json!([]));
}

/// Runs party A (listening) and party B (connecting) of `pgc run` on `src` as two
/// processes, each with its own extra arguments; returns (A's output, B's output).
fn run_two_parties(cache: &str, src: &str, a_args: &[&str], b_args: &[&str]) -> (Output, Output) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let spawn = |party: &str, endpoint: &str, extra: &[&str]| {
        pgc(cache)
            .args(["run", src, "--party", party, endpoint, &addr])
            .args(["--psk", &support::test_psk()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("a", "--listen", a_args);
    let b = spawn("b", "--connect", b_args);
    (a.wait_with_output().unwrap(), b.wait_with_output().unwrap())
}

#[test]
fn shaped_link_and_two_processes_under_ipp() {
    let common = [
        "-D",
        "MEXP_K=4",
        "--parallel",
        "ipp",
        "--threads",
        "2",
        "--json",
        "--latency",
        "2",
        "--rate-limit",
        "200",
    ];
    let a_args = [&common[..], &["--input", "base=[2,3,4,5]"]].concat();
    let b_args = [&common[..], &["--input", "exponent=[10,4,3,1]"]].concat();
    let (a, b) = run_two_parties("run", &example("mexp.c"), &a_args, &b_args);
    for (who, out) in [("a", &a), ("b", &b)] {
        assert!(
            out.status.success(),
            "party {who}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            json_of(out)["outputs"],
            json!({"OUTPUT_power": [1024, 81, 64, 5]})
        );
    }
}

#[test]
fn parties_with_different_modes_stop_with_a_clear_error() {
    let src = example("mexp.c");
    let common = ["-D", "MEXP_K=2", "--timeout", "20"];
    let a_args = [&common[..], &["--input", "base=[2,3]", "--parallel", "cgp"]].concat();
    let b_args = [
        &common[..],
        &["--input", "exponent=[1,2]", "--parallel", "ipp"],
    ]
    .concat();
    let (a, b) = run_two_parties("mm", &src, &a_args, &b_args);
    for out in [&a, &b] {
        assert!(!out.status.success());
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("--parallel"), "{e}");
    }
    // Bad values are refused before anything runs.
    let out = pgc("mm")
        .args(["local", &src, "--threads", "0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threads"));
    let out = pgc("mm")
        .args(["local", &src, "--rate-limit", "0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rate-limit"));
}

#[test]
fn auto_says_what_it_chose_and_two_parties_with_different_threads_agree() {
    // Regions hold almost every AND of MVMul: coarse-grained. Edit distance has none:
    // sequential. Both say so on stderr, with the reason.
    let mvmul = [
        "-D",
        "MVMUL_M=3",
        "-D",
        "MVMUL_K=2",
        "--a",
        "matrix=[[1,2],[3,4],[-1,0]]",
        "--b",
        "vector=[5,6]",
    ];
    let out = run_ok(
        pgc("auto")
            .args(["local", &example("mvmul.c")])
            .args(mvmul)
            .args(["--json"]),
    );
    assert_eq!(
        json_of(&out)["outputs"],
        json!({"OUTPUT_product": [17, 39, -5]})
    );
    // --json keeps stderr quiet; without it the choice is said.
    let out = run_ok(pgc("auto").args(["local", &example("mvmul.c")]).args(mvmul));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--parallel auto chose cgp: "), "{e}");
    let edit = [
        "-D",
        "EDIT_LEN=3",
        "--a",
        "text=[1,2,3]",
        "--b",
        "text=[1,3,3]",
    ];
    let out = run_ok(
        pgc("auto")
            .args(["local", &example("edit_distance_large.c")])
            .args(edit),
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--parallel auto chose none: "), "{e}");
    assert!(e.contains("no parallel regions"), "{e}");

    // Two processes with different thread counts still choose alike (the choice depends
    // on the circuit only) and compute the right result, for both kinds of circuit.
    let cases = [
        (
            example("mexp.c"),
            vec!["-D", "MEXP_K=2", "--input", "base=[2,3]"],
            vec!["-D", "MEXP_K=2", "--input", "exponent=[10,4]"],
            "cgp",
            "power = [1024, 81]",
        ),
        (
            example("edit_distance_large.c"),
            vec!["-D", "EDIT_LEN=3", "--input", "text=[1,2,3]"],
            vec!["-D", "EDIT_LEN=3", "--input", "text=[1,3,3]"],
            "none",
            "distance = 1",
        ),
    ];
    for (src, a_extra, b_extra, mode, expect) in cases {
        let a_args = [&a_extra[..], &["--threads", "1", "--timeout", "20"]].concat();
        let b_args = [&b_extra[..], &["--threads", "3", "--timeout", "20"]].concat();
        let (a, b) = run_two_parties("auto2", &src, &a_args, &b_args);
        for (who, out) in [("a", &a), ("b", &b)] {
            let e = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "party {who}: {e}");
            assert!(
                e.contains(&format!(
                    "party {}: --parallel auto chose {mode}: ",
                    who.to_uppercase()
                )),
                "party {who}: {e}"
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains(expect), "party {who}: {text}");
        }
    }
}
