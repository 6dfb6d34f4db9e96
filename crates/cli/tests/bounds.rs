//! Issue 16, finding 1 as a user meets it: small hostile circuit files that declare huge
//! sizes must stop `info`, `eval` and `local` with a clear error at once, under a small
//! address-space limit (so any allocation per declared wire would abort the process), and
//! `--max-memory` refuses a legitimate circuit too large for the budget.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pgc_circuit::compact::Item;
use pgc_circuit::pgcfile::{PgcCompactWriter, PgcWriter};
use pgc_circuit::{Gate, Interface, Layout};

mod support;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pgc-bounds-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `pgc ARGS` with its address space limited to 1 GiB (the hostile files below asked for
/// 4 to 16 GiB); returns the output and how long it took.
fn pgc_limited(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = support::pgc_in_1gib().args(args).output().unwrap();
    (out, started.elapsed())
}

fn refused_clearly(args: &[&str], expected: &str) {
    let (out, took) = pgc_limited(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        err.starts_with("error: ") && err.contains(expected),
        "{args:?}: {err}"
    );
    assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
}

/// Two 1-bit inputs, one AND, and a layout claiming 2^30 wires.
fn wide_layout() -> Layout {
    Layout {
        num_wires: 1 << 30,
        input_widths: vec![1, 1],
        output_widths: vec![1],
        output_wires: vec![2],
    }
}

#[test]
#[cfg(target_os = "linux")]
fn hostile_sizes_are_refused_quickly_without_allocating() {
    let dir = scratch("files");
    let v1 = dir.join("wide-v1.pgc");
    let mut w = PgcWriter::new(Vec::new(), &wide_layout(), &Interface::default()).unwrap();
    w.write_gates(&[Gate::and(0, 1, 2)]).unwrap();
    let bytes = w.finish().unwrap();
    assert!(bytes.len() < 1024);
    std::fs::write(&v1, bytes).unwrap();

    let v3 = dir.join("wide-v3.pgc");
    let mut w =
        PgcCompactWriter::new(Vec::new(), &wide_layout(), &Interface::default(), &[]).unwrap();
    w.write_items(&[Item::Gate(Gate::and(0, 1, 2))]).unwrap();
    std::fs::write(&v3, w.finish().unwrap()).unwrap();

    let bristol = dir.join("wide.txt");
    let text = "1 268435456\n1 2\n1 1\n\n2 1 0 1 268435455 AND\n";
    assert!(text.len() <= 45);
    std::fs::write(&bristol, text).unwrap();

    for (file, expected) in [
        (&v1, "byte 20: the layout declares 1073741824 wires"),
        (&v3, "byte 20: the main layout declares 1073741824 wires"),
        (&bristol, "line 1: header declares 268435456 wires"),
    ] {
        let f = file.to_str().unwrap();
        refused_clearly(&["info", f], expected);
        refused_clearly(&["eval", f, "--input", "1", "--input", "1"], expected);
        refused_clearly(&["local", f, "--a", "1", "--b", "1"], expected);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn max_memory_refuses_a_circuit_above_the_budget() {
    // AES-128 as it runs: a few thousand wires, more than 16 KiB of labels.
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(["local", "builtin:aes128", "--max-memory", "16K"])
        .args(["--a", "0x00", "--b", "0x00", "--parallel", "none"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this circuit needs ")
            && err.contains("more than --max-memory 16.0 KiB; raise --max-memory"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(["eval", "builtin:millionaires", "--max-memory", "8X"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'8X' is not a memory size"), "{err}");
    // A budget that fits changes nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(["eval", "builtin:millionaires", "--max-memory", "64M"])
        .args(["--input", "7", "--input", "5", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pgc_ok(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `--stream` reads a .pgc file block by block: `info` reports what loading it whole
/// reports (but the live-wire count), and the sequential protocol computes the same.
#[test]
fn streamed_files_give_the_same_statistics_and_results() {
    let dir = scratch("stream");
    let file = dir.join("dp.pgc");
    let file = file.to_str().unwrap();
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/dot_product.c");
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(["compile", source, "-D", "N=8", "-o", file])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole = pgc_ok(&["info", file, "--json"]);
    let streamed = pgc_ok(&["info", file, "--json", "--stream"]);
    assert_eq!(streamed["streamed"], true);
    for key in [
        "gates",
        "and_gates",
        "xor_gates",
        "wires",
        "and_depth",
        "and_levels",
        "max_width",
        "fingerprint",
        "inputs",
        "outputs",
    ] {
        assert_eq!(streamed[key], whole[key], "{key}");
    }
    assert_eq!(streamed["regions"][0]["line"], whole["regions"][0]["line"]);

    let inputs = ["--a", "a=[1,2,3,4,5,6,7,8]", "--b", "b=[9,8,7,6,5,4,3,2]"];
    let run = |extra: &[&str]| {
        let mut args = vec!["local", file, "--json"];
        args.extend_from_slice(&inputs);
        args.extend_from_slice(extra);
        pgc_ok(&args)["outputs"].clone()
    };
    let expected = run(&[]);
    assert_eq!(run(&["--parallel", "none", "--stream"]), expected);
    // `--parallel auto` (the default) runs a streamed file sequentially and says so; a
    // parallel mode cannot stream.
    assert_eq!(run(&["--stream"]), expected);
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(["local", file, "--stream", "--parallel", "cgp"])
        .args(inputs)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--stream runs the sequential protocol: add --parallel none"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A C program unrolled may make only as many gates as `--max-memory` holds (64 bytes
/// each): `--compact never` refuses it with advice, the default `auto` compiles it compact
/// and computes what C computes.
#[test]
fn max_memory_bounds_an_unrolled_c_program() {
    let dir = scratch("unrolled");
    let source = dir.join("chain.c");
    // About 3,500 gates per iteration: 347 k in all, past the 131 k that 8 MiB holds.
    std::fs::write(
        &source,
        "#include <stdint.h>\n\
         void mpc_main(uint32_t INPUT_A_a[16], uint32_t INPUT_B_b[16], uint32_t *OUTPUT_r)\n\
         {\n    uint32_t acc = 0;\n    for (int i = 0; i < 100; i++) {\n        \
         uint32_t x = INPUT_A_a[i % 16] ^ acc;\n        \
         acc = acc * x + INPUT_B_b[(i * 7) % 16];\n    }\n    *OUTPUT_r = acc;\n}\n",
    )
    .unwrap();
    let source = source.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args([
            "--max-memory",
            "8M",
            "compile",
            source,
            "--compact",
            "never",
        ])
        .args(["-o", dir.join("never.pgc").to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: ")
            && err.contains("chain.c unrolls to more than 131,072 gates")
            && err.contains("--max-memory (8.0 MiB)")
            && err.contains("--low-memory"),
        "{err}"
    );
    assert!(!dir.join("never.pgc").exists());

    let a: Vec<u32> = (0..16)
        .map(|i| 0x9e37_79b9u32.wrapping_mul(i + 1))
        .collect();
    let b: Vec<u32> = (0..16)
        .map(|i| 0x85eb_ca6bu32.wrapping_mul(i + 3))
        .collect();
    let mut acc = 0u32;
    for i in 0..100 {
        let x = a[i % 16] ^ acc;
        acc = acc.wrapping_mul(x).wrapping_add(b[(i * 7) % 16]);
    }
    let list = |v: &[u32]| {
        let items: Vec<String> = v.iter().map(u32::to_string).collect();
        format!("INPUT_A_a=[{}]", items.join(","))
    };
    let v = pgc_ok(&[
        "--max-memory",
        "8M",
        "eval",
        source,
        "--input",
        &list(&a),
        "--input",
        &list(&b).replace("INPUT_A_a", "INPUT_B_b"),
        "--json",
    ]);
    assert_eq!(v["outputs"]["OUTPUT_r"], serde_json::json!(acc), "{v}");
    std::fs::remove_dir_all(&dir).ok();
}
