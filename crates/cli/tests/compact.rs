//! Compact circuits through the `pgc` binary: `compile --compact`, `info`, `eval`, `local`
//! and two `run` processes on the compact `.pgc` file, the automatic choice, and the
//! errors a user can meet.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;

mod support;
use support::{json_of, run_ok};

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pgc-compact-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
    fn pgc(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pgc"));
        c.env("XDG_CACHE_HOME", self.0.join("cache"));
        c
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn fails(cmd: &mut Command) -> String {
    let out = cmd.output().expect("pgc starts");
    assert!(
        !out.status.success(),
        "pgc should have failed; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The edit distance the example computes, in Rust.
fn edit_distance(a: &[u8], b: &[u8]) -> u32 {
    let mut row: Vec<u32> = (0..=b.len() as u32).collect();
    for i in 1..=a.len() {
        let mut diag = row[0];
        row[0] = i as u32;
        for j in 1..=b.len() {
            let up = row[j];
            row[j] = (up + 1)
                .min(row[j - 1] + 1)
                .min(diag + (a[i - 1] != b[j - 1]) as u32);
            diag = up;
        }
    }
    row[b.len()]
}

/// The outputs `pgc local FILE --a A --b B --json --threads T` prints.
fn local_outputs(s: &Scratch, file: &str, a: &str, b: &str, threads: &str) -> serde_json::Value {
    json_of(&run_ok(s.pgc().args([
        "local",
        file,
        "--a",
        a,
        "--b",
        b,
        "--json",
        "--threads",
        threads,
    ])))["outputs"]
        .clone()
}

fn list(v: &[u8]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    )
}

#[test]
fn compact_edit_distance_compiles_small_and_runs_everywhere() {
    let s = Scratch::new("edt");
    let out = s.path("edt.pgc");
    let compiled = json_of(&run_ok(s.pgc().args([
        "compile",
        &example("edit_distance_large.c"),
        "-D",
        "EDIT_LEN=24",
        "--compact",
        "always",
        "-o",
        &out,
        "--json",
    ])));
    assert_eq!(compiled["format"], "pgc-compact");
    assert!(compiled["templates"].as_u64().unwrap() >= 1);
    assert!(compiled["calls"].as_u64().unwrap() >= 24 * 24 / 2);
    // The unrolled circuit, for comparison.
    let flat = s.path("flat.pgc");
    run_ok(s.pgc().args([
        "compile",
        &example("edit_distance_large.c"),
        "-D",
        "EDIT_LEN=24",
        "--compact",
        "never",
        "-o",
        &flat,
    ]));
    let (compact_len, flat_len) = (
        std::fs::metadata(&out).unwrap().len(),
        std::fs::metadata(&flat).unwrap().len(),
    );
    assert!(
        compact_len * 4 < flat_len,
        "compact {compact_len} bytes vs unrolled {flat_len}"
    );

    let info = json_of(&run_ok(s.pgc().args(["info", &out, "--json"])));
    assert_eq!(info["compact"], true);
    let peak = info["peak_live_wires"].as_u64().unwrap();
    assert!(peak > 0 && peak < 2_000, "peak live wires {peak}");
    assert_eq!(info["label_bytes_when_run"].as_u64().unwrap(), peak * 16);
    assert_eq!(info["and_gates"], compiled["and_gates"]);

    let a: Vec<u8> = (0..24).map(|i| b'a' + (i * 5 % 26) as u8).collect();
    let b: Vec<u8> = (0..24).map(|i| b'a' + (i * 3 % 26) as u8).collect();
    let want = edit_distance(&a, &b);
    let (ta, tb) = (format!("text={}", list(&a)), format!("text={}", list(&b)));
    let (ea, eb) = (format!("INPUT_A_{ta}"), format!("INPUT_B_{tb}"));
    let eval = json_of(&run_ok(
        s.pgc()
            .args(["eval", &out, "--input", &ea, "--input", &eb, "--json"]),
    ));
    assert_eq!(eval["outputs"], json!({"OUTPUT_distance": want}));
    // Independent calls (the wavefront) on any number of threads: the same result.
    for threads in ["1", "2", "3"] {
        assert_eq!(
            local_outputs(&s, &out, &ta, &tb, threads),
            json!({"OUTPUT_distance": want}),
            "{threads} threads"
        );
    }

    // From the source: compiled compact into the cache, then taken from it.
    for _ in 0..2 {
        let from_source = json_of(&run_ok(s.pgc().args([
            "local",
            &example("edit_distance_large.c"),
            "-D",
            "EDIT_LEN=24",
            "--compact",
            "always",
            "--a",
            &ta,
            "--b",
            &tb,
            "--json",
        ])));
        assert_eq!(from_source["outputs"], json!({"OUTPUT_distance": want}));
    }
    let cached: Vec<_> = std::fs::read_dir(s.0.join("cache/pgc"))
        .expect("the cache directory")
        .collect();
    assert_eq!(cached.len(), 1, "one cache entry: {cached:?}");

    // Two processes over TCP: A streams the compact file, B compiles the source itself;
    // one garbles on 3 threads and the other evaluates on 1, then the other way round (the
    // tables do not depend on either count).
    let psk = support::test_psk();
    let spawn = |cmd: &mut Command| {
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for (threads_a, threads_b) in [("3", "1"), ("1", "3")] {
        let addr = support::loopback_addr();
        let pa = spawn(s.pgc().args([
            "run",
            &out,
            "--party",
            "a",
            "--listen",
            &addr,
            "--input",
            &ta,
            "--json",
            "--psk",
            &psk,
            "--threads",
            threads_a,
        ]));
        let pb = spawn(s.pgc().args([
            "run",
            &example("edit_distance_large.c"),
            "-D",
            "EDIT_LEN=24",
            "--compact",
            "always",
            "--party",
            "b",
            "--connect",
            &addr,
            "--input",
            &tb,
            "--json",
            "--psk",
            &psk,
            "--threads",
            threads_b,
        ]));
        for (who, p) in [("a", pa), ("b", pb)] {
            let o = p.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "party {who} (threads {threads_a} / {threads_b}): {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert_eq!(json_of(&o)["outputs"], json!({"OUTPUT_distance": want}));
        }
    }
}

/// Rows as calls (`tests/programs/edit_distance_rows.c`: one call per row, each calling a
/// template per cell): at 320 characters a row has more ANDs than `OPEN_CALL_ANDS` (its
/// cells narrowed by the bounds that function templates replay: 17 k ANDs a row), so
/// the executor opens the row calls and runs their cells as items of their own (on 2
/// threads in parallel). The distance is the unrolled circuit's and the Rust one's under
/// `pgc local` and in two `pgc run` processes on 2 threads each (`pgc local` cuts its
/// threads to half the machine's cores, since both parties share them: on a 2-core
/// machine that is 1).
#[test]
fn rows_as_calls_give_the_unrolled_distance_on_one_and_two_threads() {
    let s = Scratch::new("rows");
    let rows_program = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/edit_distance_rows.c")
        .to_str()
        .unwrap()
        .to_string();
    let len = 320;
    let define = format!("EDIT_LEN={len}");
    let out = s.path("rows.pgc");
    let compiled = json_of(&run_ok(s.pgc().args([
        "compile",
        &rows_program,
        "-D",
        &define,
        "--compact",
        "always",
        "-o",
        &out,
        "--json",
    ])));
    assert_eq!(compiled["format"], "pgc-compact");
    // One call per row in the main body; a row's ANDs above the opening threshold.
    assert_eq!(compiled["calls"].as_u64(), Some(len as u64), "{compiled}");
    let ands = compiled["and_gates"].as_u64().unwrap();
    assert!(
        ands / len as u64 >= pgc_garble::compact::OPEN_CALL_ANDS,
        "{ands} ANDs"
    );
    let flat = s.path("flat.pgc");
    run_ok(s.pgc().args([
        "compile",
        &rows_program,
        "-D",
        &define,
        "--compact",
        "never",
        "-o",
        &flat,
    ]));
    let a: Vec<u8> = (0..len).map(|i| b'a' + (i * 7 % 26) as u8).collect();
    let b: Vec<u8> = (0..len).map(|i| b'a' + (i * 11 % 26) as u8).collect();
    let want = edit_distance(&a, &b);
    let (ta, tb) = (format!("text={}", list(&a)), format!("text={}", list(&b)));
    let local = |file: &str, threads: &str| local_outputs(&s, file, &ta, &tb, threads);
    let unrolled = local(&flat, "1");
    assert_eq!(unrolled, json!({"OUTPUT_distance": want}));
    for threads in ["1", "2"] {
        assert_eq!(local(&out, threads), unrolled, "{threads} threads");
    }
    let psk = support::test_psk();
    let addr = support::loopback_addr();
    let party = |role: &str, endpoint: &str, input: &str| {
        s.pgc()
            .args([
                "run",
                &out,
                "--party",
                role,
                endpoint,
                &addr,
                "--input",
                input,
                "--psk",
                &psk,
                "--threads",
                "2",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let pa = party("a", "--listen", &ta);
    let pb = party("b", "--connect", &tb);
    for (who, p) in [("a", pa), ("b", pb)] {
        let o = p.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "party {who}: {stderr}");
        assert!(stderr.contains("on 2 threads"), "party {who}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            format!("OUTPUT_distance = {want}"),
            "party {who}"
        );
    }
}

#[test]
fn auto_unrolls_small_programs_and_compact_circuits_refuse_parallel_modes() {
    let s = Scratch::new("auto");
    let out = s.path("small.pgc");
    let compiled = json_of(&run_ok(s.pgc().args([
        "compile",
        &example("edit_distance_large.c"),
        "-D",
        "EDIT_LEN=8",
        "-o",
        &out,
        "--json",
    ])));
    assert_ne!(
        compiled["format"], "pgc-compact",
        "a small program stays unrolled under --compact auto"
    );
    let compact = s.path("c.pgc");
    run_ok(s.pgc().args([
        "compile",
        &example("modexp.c"),
        "--compact",
        "always",
        "-o",
        &compact,
    ]));
    let err = fails(s.pgc().args([
        "local",
        &compact,
        "--parallel",
        "cgp",
        "--a",
        "base=[5]",
        "--a",
        "modulus=[65521]",
        "--b",
        "exponent=[3]",
    ]));
    assert!(err.contains("compact circuits run sequentially"), "{err}");
    let err = fails(s.pgc().args([
        "compile",
        &example("modexp.c"),
        "--compact",
        "always",
        "--emit",
        "bristol",
        "-o",
        &s.path("x.txt"),
    ]));
    assert!(err.contains("Bristol"), "{err}");
    let err = fails(
        s.pgc()
            .args(["info", "builtin:aes128", "--compact", "always"]),
    );
    assert!(err.contains("--compact apply to C programs"), "{err}");
}

#[test]
fn a_compact_file_cut_while_a_party_waits_fails_both_runs_and_prints_no_output() {
    use std::io::{BufRead, BufReader, Read};
    let s = Scratch::new("cut");
    let out = s.path("edt.pgc");
    run_ok(s.pgc().args([
        "compile",
        &example("edit_distance_large.c"),
        "-D",
        "EDIT_LEN=8",
        "--compact",
        "always",
        "-o",
        &out,
    ]));
    let (file_a, file_b) = (s.path("a.pgc"), s.path("b.pgc"));
    std::fs::copy(&out, &file_a).unwrap();
    std::fs::copy(&out, &file_b).unwrap();
    let addr = support::loopback_addr();
    let text = format!("text={}", list(b"abcdefgh"));
    let mut pa = s
        .pgc()
        .args([
            "run",
            &file_a,
            "--party",
            "a",
            "--listen",
            &addr,
            "--input",
            &text,
            "--insecure-plaintext",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A has opened (and checked) its file and waits for the peer: cut the file now, so
    // the pass that garbles it finds it changed.
    let mut a_err = BufReader::new(pa.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("waiting for the peer") {
        line.clear();
        assert!(a_err.read_line(&mut line).unwrap() > 0, "A ended early");
    }
    let bytes = std::fs::read(&file_a).unwrap();
    std::fs::write(&file_a, &bytes[..bytes.len() - 5]).unwrap();
    let pb = s
        .pgc()
        .args([
            "run",
            &file_b,
            "--party",
            "b",
            "--connect",
            &addr,
            "--input",
            &text,
            "--insecure-plaintext",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ob = pb.wait_with_output().unwrap();
    let mut rest = String::new();
    a_err.read_to_string(&mut rest).unwrap();
    let oa = pa.wait_with_output().unwrap();
    for (who, status, stdout, stderr) in [
        ("a", oa.status, &oa.stdout, line + &rest),
        (
            "b",
            ob.status,
            &ob.stdout,
            String::from_utf8_lossy(&ob.stderr).into_owned(),
        ),
    ] {
        assert!(!status.success(), "party {who} must fail: {stderr}");
        assert!(
            stdout.is_empty(),
            "party {who} printed: {}",
            String::from_utf8_lossy(stdout)
        );
        assert!(
            stderr.contains("party A (the garbler")
                && stderr.contains("could not read its circuit in full")
                && stderr.contains("the file changed")
                && stderr.contains("no output was revealed"),
            "party {who}: {stderr}"
        );
    }
}

/// A nest (an outer loop whose body holds a loop indexing a table) compiled compact: the
/// rows are stored once (`--json` reports them), and the circuit gives the program's
/// result locally on one thread and two, like the unrolled circuit.
#[test]
fn compact_nest_rows_stored_once_and_run() {
    let s = Scratch::new("nest");
    let src = s.path("nest.c");
    std::fs::write(
        &src,
        r#"
#include <stdint.h>
#define R 6
#define C 5
void mpc_main(uint8_t INPUT_A_a[R * C], uint8_t INPUT_B_b[C], uint32_t *OUTPUT_s) {
    uint32_t t[R][C];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            t[i][j] = INPUT_A_a[i * C + j] * INPUT_B_b[j];
    for (int i = 1; i < R; i++) {
        for (int j = 0; j < C; j++) {
            uint32_t up = t[i - 1][j];
            if (up > t[i][j]) t[i][j] = up;
        }
    }
    uint32_t sum = 0;
    for (int j = 0; j < C; j++) sum += t[R - 1][j];
    *OUTPUT_s = sum;
}
"#,
    )
    .unwrap();
    let out = s.path("nest.pgc");
    let compiled = json_of(&run_ok(s.pgc().args([
        "compile",
        &src,
        "--compact",
        "always",
        "-o",
        &out,
        "--json",
    ])));
    assert_eq!(compiled["loops_outlined_nested"], 2, "{compiled}");
    assert_eq!(
        compiled["loop_iterations_outlined_nested"],
        6 + 5,
        "{compiled}"
    );
    let flat = s.path("flat.pgc");
    run_ok(
        s.pgc()
            .args(["compile", &src, "--compact", "never", "-o", &flat]),
    );

    let a: Vec<u8> = (0..30).map(|k| (k * 37 % 251) as u8).collect();
    let b: Vec<u8> = vec![3, 250, 17, 0, 99];
    let want: u32 = (0..5)
        .map(|j| {
            (0..6)
                .map(|i| a[i * 5 + j] as u32 * b[j] as u32)
                .max()
                .unwrap()
        })
        .sum();
    let (ta, tb) = (format!("a={}", list(&a)), format!("b={}", list(&b)));
    for (file, threads) in [(&out, "1"), (&out, "2"), (&flat, "1")] {
        assert_eq!(
            local_outputs(&s, file, &ta, &tb, threads),
            json!({"OUTPUT_s": want}),
            "{file}, {threads} threads"
        );
    }
}

/// The textbook edit distance (one inline double loop, `int` cells) in compact form: its
/// rows' exact bounds differ, so the nest is keyed by rounded bounds and the rows of a band
/// share a template, their results' bounds replayed per call. The distance is the unrolled
/// circuit's and the Rust one's under `pgc local` on one thread and two, for strings with
/// no common character (every cell at its bound) and for strings with some.
#[test]
fn textbook_edit_distance_rows_stored_once_give_the_distance() {
    let s = Scratch::new("textbook");
    let len = 70;
    let define = format!("EDIT_LEN={len}");
    let program = example("edit_distance_textbook.c");
    let out = s.path("rows.pgc");
    let compiled = json_of(&run_ok(s.pgc().args([
        "compile",
        &program,
        "-D",
        &define,
        "--compact",
        "always",
        "-o",
        &out,
        "--json",
    ])));
    let rows = compiled["loop_iterations_outlined_nested"]
        .as_u64()
        .unwrap();
    assert!(
        rows >= len as u64 / 2,
        "{rows} rows stored once: {compiled}"
    );
    let flat = s.path("flat.pgc");
    run_ok(s.pgc().args([
        "compile",
        &program,
        "-D",
        &define,
        "--compact",
        "never",
        "-o",
        &flat,
    ]));
    let disjoint: (Vec<u8>, Vec<u8>) = (vec![b'x'; len], vec![b'y'; len]);
    let mixed: (Vec<u8>, Vec<u8>) = (
        (0..len).map(|i| b'a' + (i * 7 % 26) as u8).collect(),
        (0..len).map(|i| b'a' + (i * 11 % 26) as u8).collect(),
    );
    for (a, b) in [disjoint, mixed] {
        let want = edit_distance(&a, &b);
        let (ta, tb) = (format!("a={}", list(&a)), format!("b={}", list(&b)));
        for (file, threads) in [(&flat, "1"), (&out, "1"), (&out, "2")] {
            assert_eq!(
                local_outputs(&s, file, &ta, &tb, threads),
                json!({"OUTPUT_return": want}),
                "{file}, {threads} threads"
            );
        }
    }
}
