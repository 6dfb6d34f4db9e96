//! Programs and netlists that crash, hang or exhaust memory in this crate's front ends (see
//! docs/fuzzing.md), each kept under `tests/fuzz_regressions/TARGET/` and asserted here to be
//! a clean error naming what is wrong and where. The pgc-fuzz crate's corpus test replays
//! the same files through the fuzz targets' entry points (`c_program`: the first byte picks
//! the flat or the compact path, the rest is the program).

use std::path::PathBuf;

use pgc_compiler::{Options, compile_compact_source, compile_source};

fn input(target: &str, name: &str) -> Vec<u8> {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests/fuzz_regressions",
        target,
        name,
    ]
    .iter()
    .collect();
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The program of a `c_program` input (without its selector byte).
fn program(name: &str) -> String {
    let data = input("c_program", name);
    String::from_utf8(data[1..].to_vec()).expect("a UTF-8 program")
}

/// c_program: three nested loops of 1,000 constant iterations each stay under the
/// per-loop `--unroll-limit` but run 10^9 iterations that make no gates, so neither the
/// unroll limit nor a gate budget stopped them: the compiler ran for about half an hour at
/// the defaults (found by reading the limits while adding the target). Now the loop
/// iterations and calls of the whole compilation count against `--step-limit`, and the
/// innermost loop is named where the count runs out. (Compiled compact, the inner loops
/// become template calls on constant arguments, answered without running them again, so
/// that path finishes quickly either way.)
#[test]
fn nested_constant_loops_stop_at_the_step_limit() {
    let src = program("nested-constant-loops.c");
    let progress = std::sync::Arc::new(pgc_compiler::Progress::default());
    let opts = Options {
        step_limit: 1 << 16,
        progress: Some(progress.clone()),
        ..Options::default()
    };
    let e = compile_source(&src, "fuzz.c", &opts)
        .map(|_| ())
        .expect_err("the flat compilation stops");
    let at = e.pos().expect("a position");
    assert_eq!((at.line, at.col), (6, 13), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("more than 65536 loop iterations and calls"),
        "{e}"
    );
    assert!(e.contains("--step-limit"), "{e}");
    // The progress display saw the steps go by (told every 4,096), though no gate was made.
    let told = progress.steps.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(told, 1 << 16, "steps told");
    assert_eq!(progress.gates.load(std::sync::atomic::Ordering::Relaxed), 0);
    if let Err(e) = compile_compact_source(&src, "fuzz.c", &opts) {
        assert!(e.to_string().contains("--step-limit"), "{e}");
    }
}

/// Calls count too: each call of `h` runs four of `f`, so the calls of a loop nest grow
/// faster than its iterations.
#[test]
fn calls_count_against_the_step_limit() {
    let src = "int f(int x) { return x + 1; }\nint g(int x) { return f(f(x)); }\n\
               int h(int x) { return g(g(x)); }\n\
               void mpc_main(int INPUT_A_a, int *OUTPUT_r)\n{\n    int x = INPUT_A_a;\n\
               for (int i = 0; i < 100; i++)\n        x = h(x);\n    *OUTPUT_r = x;\n}\n";
    let opts = Options {
        step_limit: 400,
        ..Options::default()
    };
    let e = compile_source(src, "calls.c", &opts)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than 400 loop iterations and calls"), "{e}");
    // Under the limit the same program compiles: 100 iterations, 700 calls.
    let opts = Options {
        step_limit: 800,
        ..Options::default()
    };
    compile_source(src, "calls.c", &opts).unwrap_or_else(|e| panic!("{e}"));
}

/// yosys_json: the netlist of `examples/verilog/mac.v` with the `$mul` cell's `Y_WIDTH`
/// mutated to 2^27 + 32 while its ports have 63 bits in all. The mapper built the product
/// at the declared width (libFuzzer: out-of-memory, 2,350 MB > 2,048 MB, from a 4 KB
/// netlist); now a width parameter above the bits connected to the cell is refused, naming
/// the cell and its place in the Verilog source.
#[test]
fn a_width_parameter_beyond_the_cells_ports_is_refused() {
    // The fuzzer also put a byte that is not UTF-8 into a name; the target reads lossily.
    let netlist = String::from_utf8_lossy(&input("yosys_json", "mul-y-width-beyond-its-port.json"))
        .into_owned();
    let e = pgc_compiler::verilog::compile_json_netlist(&netlist, "mac", &Options::default())
        .map(|_| ())
        .unwrap_err();
    let at = e.pos().expect("the cell's source position");
    assert_eq!(
        (at.file.as_str(), at.line, at.col),
        ("examples/verilog/mac.v", 11, 35),
        "{e}"
    );
    let e = e.to_string();
    assert!(e.contains("($mul)"), "{e}");
    assert!(
        e.contains("parameter Y_WIDTH is 134217760, more than the 63 bits connected to the cell"),
        "{e}"
    );
}
