//! Verilog through Yosys, checked against what nobody here wrote: Yosys' own evaluator
//! (`eval`, on the design after `proc -norom; flatten` only, so none of the passes or cell
//! mappings of pgc's flows) and Rust models of the example designs; and against the C
//! compiler's circuit for the same function written in C (`examples/verilog/*.c`).
//!
//! - `random_designs_match_yosys_eval`: random combinational modules over every Verilog
//!   operator (all widths and signedness mixes, shifts, part selects at secret indices, case
//!   statements and tables, chains of sums, submodules), through both flows and both
//!   `--optimize` modes (24 designs; `PGC_VERILOG_DESIGNS=0..300` runs more).
//! - `examples_match_yosys_c_and_models`: the designs of `examples/verilog/`, with their AND
//!   counts (the word-level flow must cost no more ANDs than the C twin).
//! - the refusals: sequential logic, bad ports, ambiguous tops, syntax errors, each with its
//!   position.
//!
//! Tests skip with a notice when Yosys is missing, except under CI (`CI` set), where that
//! fails.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pgc_circuit::{CType, OptimizeFor};
use pgc_compiler::randprog::Rng;
use pgc_compiler::verilog::{self, VerilogFlow};
use pgc_compiler::{CompileError, Compiled, Options};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Whether Yosys runs here. Missing Yosys skips (loudly) on a developer machine and fails
/// in CI.
fn yosys_available() -> bool {
    match verilog::yosys_version() {
        Ok(_) => true,
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(!ci, "CI is set but Yosys is missing: {e}");
            eprintln!("\n!!!!!!!! Yosys NOT FOUND: skipping a Verilog test ({e}) !!!!!!!!\n");
            false
        }
    }
}

fn options(flow: VerilogFlow, optimize: OptimizeFor) -> Options {
    Options {
        verilog_flow: flow,
        optimize,
        ..Options::default()
    }
}

const FLOWS: [(VerilogFlow, OptimizeFor); 3] = [
    (VerilogFlow::Words, OptimizeFor::Size),
    (VerilogFlow::Words, OptimizeFor::Depth),
    (VerilogFlow::Gates, OptimizeFor::Size),
];

// ---- Values ----

/// A port value (up to 128 bits) and which of its bits are defined (Yosys' `x` are not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Val {
    bits: u128,
    defined: u128,
}

fn mask(w: u32) -> u128 {
    if w >= 128 { u128::MAX } else { (1 << w) - 1 }
}

fn port_width(t: &CType) -> u32 {
    t.bit_width() as u32
}

/// Input values by port name, in the circuit's input order.
type Case = Vec<(String, u128)>;

/// The circuit's outputs on each case, by name.
fn eval_pgc(c: &Compiled, cases: &[Case]) -> Vec<HashMap<String, u128>> {
    cases
        .iter()
        .map(|case| {
            let mut bits = Vec::new();
            for p in &c.interface.inputs {
                let v = case
                    .iter()
                    .find(|(n, _)| *n == p.name)
                    .map(|(_, v)| *v)
                    .unwrap_or_else(|| panic!("no value for {}", p.name));
                let w = port_width(&p.ctype);
                bits.extend((0..w).map(|i| (v >> i) & 1 == 1));
            }
            let out = pgc_circuit::eval_bits(&c.circuit, &bits);
            let mut pos = 0;
            let mut vals = HashMap::new();
            for p in &c.interface.outputs {
                let w = port_width(&p.ctype) as usize;
                let v = out[pos..pos + w]
                    .iter()
                    .enumerate()
                    .fold(0u128, |acc, (i, &b)| acc | (b as u128) << i);
                pos += w;
                vals.insert(p.name.clone(), v);
            }
            vals
        })
        .collect()
}

/// Random inputs for the circuit's ports: uniform, or an edge value (0, 1, all ones, the
/// signed extremes) a third of the time.
fn random_cases(c: &Compiled, n: usize, rng: &mut Rng) -> Vec<Case> {
    (0..n)
        .map(|_| {
            c.interface
                .inputs
                .iter()
                .map(|p| {
                    let w = port_width(&p.ctype);
                    let v = match rng.below(9) {
                        0 => 0,
                        1 => 1,
                        2 => mask(w),
                        3 => 1u128 << (w - 1),
                        4 => mask(w) >> 1,
                        5 => rng.below(4) as u128,
                        _ => ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) & mask(w),
                    };
                    (p.name.clone(), v & mask(w))
                })
                .collect()
        })
        .collect()
}

// ---- Yosys' evaluator ----

/// The outputs Yosys' `eval` computes on each case for module `top` of the Verilog file
/// `file` (after `proc -norom; flatten` only). Widths come from the circuit's interface.
fn eval_yosys(file: &Path, top: &str, c: &Compiled, cases: &[Case]) -> Vec<HashMap<String, Val>> {
    let mut script = format!(
        "read_verilog \"{}\"; hierarchy -check -top {top}; proc -norom; flatten",
        file.display()
    );
    let outputs: Vec<(&str, u32)> = c
        .interface
        .outputs
        .iter()
        .map(|p| (p.name.as_str(), port_width(&p.ctype)))
        .collect();
    for case in cases {
        script.push_str("; eval");
        for p in &c.interface.inputs {
            let w = port_width(&p.ctype);
            let v = case.iter().find(|(n, _)| *n == p.name).unwrap().1;
            let bits: String = (0..w)
                .rev()
                .map(|i| if (v >> i) & 1 == 1 { '1' } else { '0' })
                .collect();
            write!(script, " -set {} {w}'b{bits}", p.name).unwrap();
        }
        for (name, _) in &outputs {
            write!(script, " -show {name}").unwrap();
        }
    }
    // Long scripts go through a file (a command line has a length limit).
    let dir = TempDir::new("eval");
    let script_file = dir.0.join("eval.ys");
    std::fs::write(&script_file, script.replace("; ", "\n")).unwrap();
    let out = std::process::Command::new("yosys")
        .arg("-s")
        .arg(&script_file)
        .output()
        .expect("yosys runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "yosys eval failed on {}:\n{}\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr),
        text.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
    let results: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Eval result: \\"))
        .collect();
    assert_eq!(results.len(), cases.len() * outputs.len(), "eval results");
    results
        .chunks(outputs.len())
        .map(|chunk| {
            chunk
                .iter()
                .zip(&outputs)
                .map(|(line, (name, w))| {
                    let (got_name, value) = line.split_once(" = ").expect("NAME = VALUE");
                    assert_eq!(got_name, *name);
                    (
                        name.to_string(),
                        parse_eval_value(value.trim_end_matches('.'), *w),
                    )
                })
                .collect()
        })
        .collect()
}

/// `14`, `1'1` or `4'x01x` (most significant first) as a value of `w` bits.
fn parse_eval_value(s: &str, w: u32) -> Val {
    match s.split_once('\'') {
        None => Val {
            bits: s
                .parse::<u128>()
                .unwrap_or_else(|_| panic!("eval value {s}"))
                & mask(w),
            defined: mask(w),
        },
        Some((_, digits)) => {
            let mut v = Val {
                bits: 0,
                defined: 0,
            };
            for (i, ch) in digits.bytes().rev().enumerate() {
                match ch {
                    b'1' => {
                        v.bits |= 1 << i;
                        v.defined |= 1 << i;
                    }
                    b'0' => v.defined |= 1 << i,
                    _ => {}
                }
            }
            v
        }
    }
}

fn show_case(case: &Case) -> String {
    case.iter()
        .map(|(n, v)| format!("{n}={v:#x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// pgc's outputs equal Yosys' on every bit Yosys defines.
fn check_against_yosys(label: &str, file: &Path, top: &str, c: &Compiled, cases: &[Case]) {
    let want = eval_yosys(file, top, c, cases);
    let got = eval_pgc(c, cases);
    for ((case, w), g) in cases.iter().zip(&want).zip(&got) {
        for (name, y) in w {
            let p = g[name];
            assert_eq!(
                p & y.defined,
                y.bits & y.defined,
                "{label}: {name} on {}: pgc gives {p:#x}, Yosys {:#x} (defined bits {:#x})\n{}",
                show_case(case),
                y.bits,
                y.defined,
                std::fs::read_to_string(file).unwrap_or_default()
            );
        }
    }
}

// ---- Random designs ----

/// A random combinational module: inputs of both parties, every operator, outputs of
/// assorted widths and signedness.
struct DesignGen {
    rng: Rng,
    inputs: Vec<(String, u32, bool)>,
}

impl DesignGen {
    fn width(&mut self) -> u32 {
        match self.rng.below(10) {
            0 => 1,
            1..=6 => 2 + self.rng.below(9) as u32,
            7 | 8 => 11 + self.rng.below(24) as u32,
            _ => 33 + self.rng.below(40) as u32,
        }
    }

    fn constant(&mut self) -> String {
        let w = self.width().min(40);
        let v = self.rng.next_u64() as u128 & mask(w);
        let signed = if self.rng.percent(30) { "s" } else { "" };
        match self.rng.below(3) {
            0 => format!("{w}'{signed}d{v}"),
            1 => format!("{w}'{signed}h{v:x}"),
            _ => format!("{}'{signed}d{}", w, self.rng.below(4).min(v as u64)),
        }
    }

    fn leaf(&mut self) -> String {
        if self.rng.percent(20) {
            return self.constant();
        }
        let (name, w, _) = self.rng.pick(&self.inputs).clone();
        match self.rng.below(8) {
            0 if w > 1 => {
                let hi = self.rng.below(w as u64) as u32;
                let lo = self.rng.below(hi as u64 + 1) as u32;
                format!("{name}[{hi}:{lo}]")
            }
            1 if w > 1 => format!("{name}[{}]", self.rng.below(w as u64)),
            _ => name,
        }
    }

    fn expr(&mut self, depth: u32) -> String {
        if depth == 0 || self.rng.percent(20) {
            return self.leaf();
        }
        let d = depth - 1;
        match self.rng.below(20) {
            0..=7 => {
                let op = *self.rng.pick(&[
                    "+", "-", "*", "&", "|", "^", "~^", "==", "!=", "<", "<=", ">", ">=", "&&",
                    "||", "+", "-", "<<", ">>", "<<<", ">>>", "/", "%",
                ]);
                // (`===` and `!==` differ from `==` and `!=` only on `x`, which Yosys'
                // simulation compares as a value and synthesis does not: tested apart.)
                let (a, b) = (self.expr(d), self.expr(d));
                let b = if op.contains("<<") || op.contains(">>") {
                    // Small shift amounts most of the time, so bits survive.
                    if self.rng.percent(70) {
                        format!("({b} & 4'd7)")
                    } else {
                        b
                    }
                } else {
                    b
                };
                format!("({a} {op} {b})")
            }
            8..=10 => {
                let op = *self.rng.pick(&[
                    "-",
                    "~",
                    "!",
                    "&",
                    "|",
                    "^",
                    "~&",
                    "~|",
                    "~^",
                    "$signed",
                    "$unsigned",
                    "+",
                ]);
                let a = self.expr(d);
                if op.starts_with('$') {
                    format!("{op}({a})")
                } else {
                    format!("({op}{a})")
                }
            }
            11 | 12 => {
                let (c, a, b) = (self.expr(d), self.expr(d), self.expr(d));
                format!("({c} ? {a} : {b})")
            }
            13 => {
                let (a, b) = (self.expr(d), self.expr(d));
                format!("{{{a}, {b}}}")
            }
            14 => format!("{{{}{{{}}}}}", 1 + self.rng.below(3), self.expr(d)),
            15 | 16 => {
                let (name, w, _) = self.rng.pick(&self.inputs).clone();
                let idx = self.expr(d);
                if self.rng.percent(50) || w < 3 {
                    format!("{name}[{idx}]")
                } else {
                    let k = 1 + self.rng.below(w as u64 - 1);
                    let dir = if self.rng.percent(70) { "+:" } else { "-:" };
                    format!("{name}[{idx} {dir} {k}]")
                }
            }
            _ => self.leaf(),
        }
    }

    /// Verilog source of design `seed`, its top module's name.
    fn design(seed: u64) -> (String, String) {
        let mut g = DesignGen {
            rng: Rng::new(seed),
            inputs: Vec::new(),
        };
        let top = format!("fuzz{seed}");
        let mut ports = Vec::new();
        let n_in = 2 + g.rng.below(3);
        for i in 0..n_in {
            let w = g.width();
            let signed = g.rng.percent(40);
            let owner = if i % 2 == 0 { "A" } else { "B" };
            let name = format!("INPUT_{owner}_i{i}");
            ports.push(format!(
                "input {}[{}:0] {name}",
                if signed { "signed " } else { "" },
                w - 1
            ));
            g.inputs.push((name, w, signed));
        }
        let mut body = String::new();
        let n_out = 3 + g.rng.below(4);
        for k in 0..n_out {
            let w = g.width();
            let signed = if g.rng.percent(40) { "signed " } else { "" };
            let name = format!("OUTPUT_o{k}");
            ports.push(format!("output {signed}[{}:0] {name}", w - 1));
            let e = g.expr(3);
            writeln!(body, "  assign {name} = {e};").unwrap();
        }
        let mut extra = String::new();
        // A case statement over a narrow selector: expressions (a $pmux) or constants
        // covering every value (a ROM); or a casez whose patterns overlap (first match wins).
        if g.rng.percent(60) {
            let w = g.width().min(24);
            ports.push(format!("output reg [{}:0] OUTPUT_c", w - 1));
            let sel_bits = 1 + g.rng.below(4) as u32;
            let sel = g.expr(1);
            let rom = g.rng.percent(40);
            let casez = !rom && g.rng.percent(40);
            let keyword = if casez { "casez" } else { "case" };
            writeln!(
                body,
                "  always @* begin\n    {keyword} ({sel_bits}'d0 + {sel})"
            )
            .unwrap();
            for v in 0..(1u64 << sel_bits) {
                if !rom && g.rng.percent(40) {
                    continue;
                }
                let value = if rom {
                    format!("{w}'d{}", g.rng.next_u64() as u128 & mask(w))
                } else {
                    g.expr(2)
                };
                let pattern = if casez {
                    let bits: String = (0..sel_bits)
                        .rev()
                        .map(|i| match g.rng.below(3) {
                            0 => '?',
                            _ if (v >> i) & 1 == 1 => '1',
                            _ => '0',
                        })
                        .collect();
                    format!("{sel_bits}'b{bits}")
                } else {
                    format!("{sel_bits}'d{v}")
                };
                writeln!(body, "      {pattern}: OUTPUT_c = {value};").unwrap();
            }
            let default = if rom { format!("{w}'d0") } else { g.expr(2) };
            writeln!(
                body,
                "      default: OUTPUT_c = {default};\n    endcase\n  end"
            )
            .unwrap();
        }
        // A chain of sums through wires of assorted widths and signedness (merged into
        // multi-operand sums where the widths allow), and an accumulation loop.
        if g.rng.percent(60) {
            let mut prev = g.expr(1);
            let steps = 2 + g.rng.below(5);
            for k in 0..steps {
                let w = g.width().min(40);
                let signed = if g.rng.percent(50) { "signed " } else { "" };
                let op = *g.rng.pick(&["+", "-", "+"]);
                let term = if g.rng.percent(35) {
                    format!("{} * {}", g.leaf(), g.leaf())
                } else if g.rng.percent(15) {
                    format!("-{}", g.leaf())
                } else {
                    g.expr(1)
                };
                writeln!(
                    body,
                    "  wire {signed}[{}:0] s{k} = {prev} {op} {term};",
                    w - 1
                )
                .unwrap();
                prev = format!("s{k}");
            }
            let w = g.width().min(40);
            ports.push(format!("output [{}:0] OUTPUT_chain", w - 1));
            writeln!(body, "  assign OUTPUT_chain = {prev};").unwrap();
        }
        if g.rng.percent(40) {
            let (name, w, _) = g.rng.pick(&g.inputs).clone();
            let acc_w = 1 + g.rng.below(8);
            let signed = if g.rng.percent(30) { "signed " } else { "" };
            let step = *g.rng.pick(&["+", "-"]);
            ports.push(format!("output reg {signed}[{}:0] OUTPUT_count", acc_w - 1));
            writeln!(
                body,
                "  integer j;\n  always @* begin\n    OUTPUT_count = {};\n    \
                 for (j = 0; j < {w}; j = j + 1)\n      \
                 OUTPUT_count = OUTPUT_count {step} {name}[j];\n  end",
                g.leaf()
            )
            .unwrap();
        }
        // A submodule, flattened by Yosys.
        if g.rng.percent(40) {
            let (a, b) = (g.expr(2), g.expr(2));
            ports.push("output [8:0] OUTPUT_sub".into());
            // Through wires: Yosys 0.23 asserts on some expressions as port connections.
            writeln!(
                body,
                "  wire [7:0] ha = {a};\n  wire signed [7:0] hb = {b};\n  \
                 helper{seed} h(.a(ha), .b(hb), .y(OUTPUT_sub));"
            )
            .unwrap();
            writeln!(
                extra,
                "module helper{seed}(input [7:0] a, input signed [7:0] b, output [8:0] y);\n  \
                 assign y = a * b - (a >>> 2);\nendmodule"
            )
            .unwrap();
        }
        let src = format!(
            "module {top}(\n  {}\n);\n{body}endmodule\n{extra}",
            ports.join(",\n  ")
        );
        (src, top)
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Under target/tmp rather than /tmp, which YoWASP's Yosys cannot see.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("pgc-verilog-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn random_designs_match_yosys_eval() {
    if !yosys_available() {
        return;
    }
    let dir = TempDir::new("random");
    // More designs (and other seeds) with PGC_VERILOG_DESIGNS=FIRST..END.
    let seeds = std::env::var("PGC_VERILOG_DESIGNS")
        .ok()
        .and_then(|r| {
            let (a, b) = r.split_once("..")?;
            Some(a.parse().ok()?..b.parse().ok()?)
        })
        .unwrap_or(0..24u64);
    for seed in seeds {
        let (src, top) = DesignGen::design(seed);
        let file = dir.0.join(format!("fuzz{seed}.v"));
        std::fs::write(&file, &src).unwrap();
        // Mostly the word-level flow in both modes; the gate-level one (a second or so of
        // ABC each) on every eighth design.
        let (flow, optimize) = match seed % 8 {
            7 => (VerilogFlow::Gates, OptimizeFor::Size),
            k if k % 2 == 0 => (VerilogFlow::Words, OptimizeFor::Size),
            _ => (VerilogFlow::Words, OptimizeFor::Depth),
        };
        // The top by name, or found by pgc.
        let opts = Options {
            entry: (seed % 3 != 0).then(|| top.clone()),
            ..options(flow, optimize)
        };
        let c = verilog::compile_file(&file, &opts)
            .unwrap_or_else(|e| panic!("design {seed}: {e}\n{src}"));
        assert_eq!(c.entry_name, top);
        let mut rng = Rng::new(seed ^ 0xfeed);
        let cases = random_cases(&c, 40, &mut rng);
        let label = format!("design {seed} ({flow:?}, {optimize:?})");
        check_against_yosys(&label, &file, &top, &c, &cases);
    }
}

// ---- The examples ----

fn example(name: &str) -> PathBuf {
    repo_root().join("examples/verilog").join(name)
}

/// The AES S-box from its definition (FIPS-197 §5.1.1): the inverse in GF(2^8), then the
/// affine map.
fn aes_sbox(x: u8) -> u8 {
    let mul = |mut a: u8, mut b: u8| {
        let mut r = 0u8;
        while b != 0 {
            if b & 1 == 1 {
                r ^= a;
            }
            let carry = a & 0x80 != 0;
            a <<= 1;
            if carry {
                a ^= 0x1b;
            }
            b >>= 1;
        }
        r
    };
    let inv = (1..=255u8).find(|&b| mul(x, b) == 1).unwrap_or(0);
    let mut s = inv;
    for i in 1..5 {
        s ^= inv.rotate_left(i);
    }
    s ^ 0x63
}

/// CRC-32 (reflected, 0xEDB88320) of a 32-bit word's bits, least significant first,
/// continuing from `crc` without inversion.
fn crc32_model(crc: u32, data: u32) -> u32 {
    let mut c = crc;
    for i in 0..32 {
        let bit = (c ^ (data >> i)) & 1;
        c = (c >> 1) ^ if bit == 1 { 0xEDB8_8320 } else { 0 };
    }
    c
}

fn sext(v: u128, w: u32) -> i128 {
    ((v << (128 - w)) as i128) >> (128 - w)
}

/// What each example computes, on one case (inputs by name), as outputs by name.
fn model(name: &str, case: &Case) -> Vec<(&'static str, u128)> {
    let get = |n: &str| case.iter().find(|(k, _)| k == n).unwrap().1;
    let m32 = mask(32);
    match name {
        "adder" => vec![("OUTPUT_sum", (get("INPUT_A_x") + get("INPUT_B_y")) & m32)],
        "comparator" => {
            let (x, y) = (get("INPUT_A_x"), get("INPUT_B_y"));
            vec![
                ("OUTPUT_less", (sext(x, 32) < sext(y, 32)) as u128),
                ("OUTPUT_less_unsigned", (x < y) as u128),
                ("OUTPUT_equal", (x == y) as u128),
            ]
        }
        "multiplier" => vec![
            ("OUTPUT_wide", get("INPUT_A_x") * get("INPUT_B_y")),
            (
                "OUTPUT_product",
                (sext(get("INPUT_A_u"), 32).wrapping_mul(sext(get("INPUT_B_v"), 32)) as u128) & m32,
            ),
        ],
        "mac" => {
            let sum = (get("INPUT_B_acc") + get("INPUT_A_x") * get("INPUT_B_y")) & m32;
            vec![
                ("OUTPUT_sum", sum),
                ("OUTPUT_over", (sum > get("INPUT_A_threshold")) as u128),
            ]
        }
        "hamming_max" => {
            let (x, y) = (get("INPUT_A_x"), get("INPUT_B_y"));
            vec![
                ("OUTPUT_distance", (x ^ y).count_ones() as u128),
                ("OUTPUT_max", x.max(y)),
            ]
        }
        "crc32" => vec![(
            "OUTPUT_crc",
            crc32_model(get("INPUT_A_crc") as u32, get("INPUT_B_data") as u32) as u128,
        )],
        "aes_sbox" => vec![(
            "OUTPUT_sub",
            aes_sbox((get("INPUT_A_key") ^ get("INPUT_B_plain")) as u8) as u128,
        )],
        _ => panic!("no model for {name}"),
    }
}

const EXAMPLES: [&str; 7] = [
    "adder",
    "comparator",
    "multiplier",
    "mac",
    "hamming_max",
    "crc32",
    "aes_sbox",
];

#[test]
fn examples_match_yosys_c_and_models() {
    if !yosys_available() {
        return;
    }
    let mut report = String::from("\nAND gates (depth) of examples/verilog:\n");
    writeln!(
        report,
        "{:<12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "design", "words", "words/depth", "gates (ABC)", "C", "C/depth"
    )
    .unwrap();
    for name in EXAMPLES {
        let v = example(&format!("{name}.v"));
        let c_twin =
            pgc_compiler::compile_file(&example(&format!("{name}.c")), &Options::default())
                .unwrap_or_else(|e| panic!("{name}.c: {e}"));
        let mut rng = Rng::new(0x5eed ^ name.len() as u64);
        let cases = random_cases(&c_twin, 64, &mut rng);
        let c_out = eval_pgc(&c_twin, &cases);
        let mut row = format!("{name:<12}");
        let mut words_ands = 0;
        let mut words_depth = 0;
        for (flow, optimize) in FLOWS {
            let c = verilog::compile_file(&v, &options(flow, optimize))
                .unwrap_or_else(|e| panic!("{name}.v: {e}"));
            let label = format!("{name}.v ({flow:?}, {optimize:?})");
            // Same ports, in the same order, as the C twin.
            assert_eq!(c.interface, c_twin.interface, "{label}: interface");
            check_against_yosys(&label, &v, name, &c, &cases);
            let got = eval_pgc(&c, &cases);
            for ((case, g), want_c) in cases.iter().zip(&got).zip(&c_out) {
                assert_eq!(g, want_c, "{label} vs {name}.c on {}", show_case(case));
                for (port, want) in model(name, case) {
                    assert_eq!(g[port], want, "{label}: {port} on {}", show_case(case));
                }
            }
            let s = pgc_circuit::stats(&c.circuit);
            write!(row, " {:>12}", format!("{} ({})", s.and_gates, s.and_depth)).unwrap();
            match (flow, optimize) {
                (VerilogFlow::Words, OptimizeFor::Size) => words_ands = s.and_gates,
                (VerilogFlow::Words, OptimizeFor::Depth) => words_depth = s.and_depth,
                _ => {}
            }
        }
        let cs = pgc_circuit::stats(&c_twin.circuit);
        let c_depth = pgc_compiler::compile_file(
            &example(&format!("{name}.c")),
            &Options {
                optimize: OptimizeFor::Depth,
                ..Options::default()
            },
        )
        .unwrap_or_else(|e| panic!("{name}.c: {e}"));
        let cd = pgc_circuit::stats(&c_depth.circuit);
        writeln!(
            row,
            " {:>12} {:>12}",
            format!("{} ({})", cs.and_gates, cs.and_depth),
            format!("{} ({})", cd.and_gates, cd.and_depth)
        )
        .unwrap();
        report.push_str(&row);
        assert!(
            words_ands <= cs.and_gates,
            "{name}.v costs {words_ands} ANDs, more than its C twin's {}",
            cs.and_gates
        );
        assert!(
            words_depth <= cd.and_depth,
            "{name}.v has AND depth {words_depth} with --optimize depth, more than its C twin's {}",
            cd.and_depth
        );
    }
    eprintln!("{report}");
}

// ---- Refusals ----

fn compile_err(src: &str, top: Option<&str>) -> CompileError {
    let opts = Options {
        entry: top.map(str::to_string),
        ..Options::default()
    };
    match verilog::compile_source(src, "design.v", &opts) {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => e,
    }
}

#[test]
fn refusals_name_the_construct_and_its_position() {
    if !yosys_available() {
        return;
    }
    let check = |src: &str, top: Option<&str>, want: &[&str], line: Option<u32>| {
        let e = compile_err(src, top);
        let text = e.to_string();
        for w in want {
            assert!(text.contains(w), "error `{text}` lacks `{w}`");
        }
        if let Some(line) = line {
            let pos = e.pos().unwrap_or_else(|| panic!("no position in `{text}`"));
            assert_eq!((pos.file.as_str(), pos.line), ("design.v", line), "{text}");
            assert!(pos.col >= 1, "{text}");
            assert!(
                text.starts_with(&format!("design.v:{line}:{}: ", pos.col)),
                "{text}"
            );
        }
    };
    // A flip-flop.
    check(
        "module t(input INPUT_A_clk, input [3:0] INPUT_B_d, output reg [3:0] OUTPUT_q);\n\
         always @(posedge INPUT_A_clk)\n  OUTPUT_q <= INPUT_B_d;\nendmodule\n",
        None,
        &["$dff", "flip-flop or latch", "combinational"],
        Some(2),
    );
    // A latch: not assigned on every path.
    check(
        "module t(input INPUT_A_e, input [3:0] INPUT_B_d, output reg [3:0] OUTPUT_q);\n\
         always @*\n  if (INPUT_A_e) OUTPUT_q = INPUT_B_d;\nendmodule\n",
        None,
        &["latch"],
        Some(2),
    );
    // A memory written to.
    check(
        "module t(input INPUT_A_c, input [1:0] INPUT_A_a, input [7:0] INPUT_B_d, output [7:0] OUTPUT_q);\n\
         reg [7:0] m [0:3];\n\
         always @(posedge INPUT_A_c) m[INPUT_A_a] <= INPUT_B_d;\n\
         assign OUTPUT_q = m[INPUT_A_a];\nendmodule\n",
        None,
        &["written"],
        None,
    );
    // Ports: a clock, an inout, an unnamed output.
    check(
        "module t(input clk, input [3:0] INPUT_A_x, output [3:0] OUTPUT_y);\n\
         assign OUTPUT_y = INPUT_A_x;\nendmodule\n",
        None,
        &["`clk`", "INPUT_A_"],
        Some(1),
    );
    check(
        "module t(inout [3:0] INPUT_A_x, output [3:0] OUTPUT_y);\n\
         assign OUTPUT_y = INPUT_A_x;\nendmodule\n",
        None,
        &["inout", "INPUT_A_x"],
        Some(1),
    );
    check(
        "module t(input [3:0] INPUT_A_x,\n output [3:0] result);\n\
         assign result = INPUT_A_x;\nendmodule\n",
        None,
        &["`result`", "OUTPUT_"],
        Some(2),
    );
    check(
        "module t(input [3:0] INPUT_A_x, input [3:0] INPUT_B_y);\nendmodule\n",
        None,
        &["no outputs"],
        None,
    );
    check(
        "module t(input [199:0] INPUT_A_x, output [199:0] OUTPUT_y);\n\
         assign OUTPUT_y = INPUT_A_x;\nendmodule\n",
        None,
        &["200 bits", "128"],
        Some(1),
    );
    // A combinational loop.
    check(
        "module t(input [3:0] INPUT_A_x, output [3:0] OUTPUT_y);\n\
         wire [3:0] w;\nassign w = (w + INPUT_A_x) ^ 4'd1;\nassign OUTPUT_y = w;\nendmodule\n",
        None,
        &["loop"],
        Some(3),
    );
    // Tops: ambiguous, missing, malformed.
    let two = "module a(input INPUT_A_x, output OUTPUT_y); assign OUTPUT_y = INPUT_A_x; endmodule\n\
               module b(input INPUT_A_x, output OUTPUT_y); assign OUTPUT_y = !INPUT_A_x; endmodule\n";
    check(
        two,
        None,
        &["several top-level modules (a, b)", "--top"],
        None,
    );
    check(two, Some("c"), &["c"], None);
    check(two, Some("a b"), &["not a plain Verilog identifier"], None);
    let c = verilog::compile_source(
        two,
        "design.v",
        &Options {
            entry: Some("b".into()),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(pgc_circuit::eval_bits(&c.circuit, &[true]), [false]);
    // Yosys' own errors keep its position (line only) under the user's file name.
    check(
        "module t(input [3:0] INPUT_A_x, output [3:0] OUTPUT_y);\n\
         assign OUTPUT_y = INPUT_A_x +;\nendmodule\n",
        None,
        &["design.v:2:", "syntax error"],
        None,
    );
}

#[test]
fn submodules_signed_ports_and_includes() {
    if !yosys_available() {
        return;
    }
    let dir = TempDir::new("include");
    std::fs::create_dir_all(dir.0.join("inc")).unwrap();
    std::fs::write(dir.0.join("inc/width.vh"), "localparam W = 12;\n").unwrap();
    let top = dir.0.join("top.v");
    std::fs::write(
        &top,
        "`include \"width.vh\"\n\
         module neg(input signed [W-1:0] a, output signed [W-1:0] y); assign y = -a; endmodule\n\
         module top(input signed [W-1:0] INPUT_A_x, input INPUT_B_b, output signed [W-1:0] OUTPUT_A_y,\n\
                    output OUTPUT_B_flag);\n\
           wire signed [W-1:0] n;\n\
           neg u(.a(INPUT_A_x), .y(n));\n\
           assign OUTPUT_A_y = INPUT_B_b ? n : INPUT_A_x;\n\
           assign OUTPUT_B_flag = n < 0;\n\
         endmodule\n",
    )
    .unwrap();
    let opts = Options {
        include_dirs: vec![dir.0.join("inc")],
        ..Options::default()
    };
    let c = verilog::compile_file(&top, &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.entry_name, "top");
    let int12 = CType::int(12, true);
    assert_eq!(c.interface.inputs[0].ctype, int12);
    assert_eq!(c.interface.inputs[1].ctype, CType::Bool);
    assert_eq!(
        c.interface.outputs[0].visibility,
        pgc_circuit::Visibility::A
    );
    assert_eq!(
        c.interface.outputs[1].visibility,
        pgc_circuit::Visibility::B
    );
    let cases = vec![
        vec![
            ("INPUT_A_x".to_string(), 5u128),
            ("INPUT_B_b".to_string(), 1),
        ],
        vec![
            ("INPUT_A_x".to_string(), 0xffb),
            ("INPUT_B_b".to_string(), 0),
        ],
    ];
    let got = eval_pgc(&c, &cases);
    assert_eq!(got[0]["OUTPUT_A_y"], 0xffb);
    assert_eq!(got[0]["OUTPUT_B_flag"], 1);
    assert_eq!(got[1]["OUTPUT_A_y"], 0xffb);
    assert_eq!(got[1]["OUTPUT_B_flag"], 0);
    // The include directory is needed (the file's own directory is searched, not inc/).
    let e = verilog::compile_file(&top, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("width.vh"), "{e}");
    // The files a cache must key on: the design and what it includes.
    let mut deps = verilog::source_files(&top, &opts).unwrap();
    deps.sort();
    assert_eq!(deps.len(), 2, "{deps:?}");
    assert!(deps.iter().any(|d| d.ends_with("inc/width.vh")), "{deps:?}");
}

/// Sums merge only where that changes no result: a narrow unsigned sum read as signed (or a
/// signed one read as unsigned) must stay a separate, truncated adder. Exhaustive over the
/// narrow operands, against Yosys' evaluator.
#[test]
fn sum_merging_respects_how_the_reader_extends() {
    if !yosys_available() {
        return;
    }
    let dir = TempDir::new("sums");
    let file = dir.0.join("sums.v");
    std::fs::write(
        &file,
        "module sums(input [3:0] INPUT_A_a, input [3:0] INPUT_B_b, input signed [7:0] INPUT_A_c,\n\
         \x20 output signed [7:0] OUTPUT_y, output [7:0] OUTPUT_z, output [7:0] OUTPUT_w);\n\
         \x20 wire [4:0] s = INPUT_A_a + INPUT_B_b;\n\
         \x20 assign OUTPUT_y = $signed(s) + INPUT_A_c;\n\
         \x20 wire signed [4:0] t = $signed({1'b0, INPUT_A_a}) - $signed({1'b0, INPUT_B_b});\n\
         \x20 assign OUTPUT_z = $unsigned(t) + $unsigned(INPUT_A_c);\n\
         \x20 wire [3:0] u = INPUT_A_a * INPUT_B_b;\n\
         \x20 assign OUTPUT_w = u - INPUT_A_c;\n\
         endmodule\n",
    )
    .unwrap();
    let mut cases = Vec::new();
    for a in 0..16u128 {
        for b in 0..16u128 {
            for c in [0u128, 1, 0x7f, 0x80, 0xf0] {
                cases.push(vec![
                    ("INPUT_A_a".to_string(), a),
                    ("INPUT_B_b".to_string(), b),
                    ("INPUT_A_c".to_string(), c),
                ]);
            }
        }
    }
    for (flow, optimize) in FLOWS {
        let c = verilog::compile_file(&file, &options(flow, optimize)).unwrap();
        check_against_yosys(
            &format!("sums ({flow:?}, {optimize:?})"),
            &file,
            "sums",
            &c,
            &cases,
        );
    }
}

/// Yosys 0.23's `opt -full` (`opt_expr -fine`) turns `(x >= 0) > y`, the comparison's one-bit
/// result zero-extended to y's width, into the sign bit extended with ones; neither flow may
/// run it (found by `random_designs_match_yosys_eval`, design 264 of the long run).
#[test]
fn yosys_opt_full_sign_compare_bug_is_avoided() {
    if !yosys_available() {
        return;
    }
    let dir = TempDir::new("optfull");
    let file = dir.0.join("cmp.v");
    std::fs::write(
        &file,
        "module cmp(input signed [7:0] INPUT_A_x, input [6:0] INPUT_B_y, output [1:0] OUTPUT_c);\n\
         \x20 assign OUTPUT_c = (INPUT_A_x >= 8'sd0) > INPUT_B_y;\n\
         endmodule\n",
    )
    .unwrap();
    let cases: Vec<Case> = [0u128, 1, 0x7f, 0x80, 0xff]
        .iter()
        .flat_map(|&x| {
            [0u128, 1, 2, 0x41, 0x7f]
                .map(|y| vec![("INPUT_A_x".to_string(), x), ("INPUT_B_y".to_string(), y)])
        })
        .collect();
    for (flow, optimize) in FLOWS {
        let c = verilog::compile_file(&file, &options(flow, optimize)).unwrap();
        check_against_yosys(&format!("cmp ({flow:?})"), &file, "cmp", &c, &cases);
    }
}

// ---- The gate budget ----

/// A product of two `bits`-bit words that repeat the 128-bit inputs: a few lines of Verilog
/// for a block of `bits`² partial products.
fn wide_product(bits: u32) -> String {
    let copies = bits / 128;
    format!(
        "module wide(input [127:0] INPUT_A_a, input [127:0] INPUT_B_b, output [127:0] OUTPUT_y);\n\
         \x20 wire [{hi}:0] a = {{{copies}{{INPUT_A_a}}}};\n\
         \x20 wire [{hi}:0] b = {{{copies}{{INPUT_B_b}}}};\n\
         \x20 wire [{phi}:0] p = a * b;\n\
         \x20 assign OUTPUT_y = p[{phi}:{plo}] ^ p[127:0];\n\
         endmodule\n",
        hi = bits - 1,
        phi = 2 * bits - 1,
        plo = 2 * bits - 128,
    )
}

fn with_budget(budget: u64) -> Options {
    Options {
        gate_budget: Some(budget),
        ..Options::default()
    }
}

/// Found reading the limits: the Verilog path took no gate budget, so a consistent netlist
/// of a few lines cost what it declared (`wide_product(20480)`: 88.6 M gates, 5.3 GB and a
/// minute; twice as wide, more memory than the machine has). A block far larger than the
/// budget is refused before it is built, naming the cell and its line.
#[test]
fn a_block_far_past_the_gate_budget_is_refused_unbuilt() {
    if !yosys_available() {
        return;
    }
    let e = verilog::compile_source(&wide_product(4096), "wide.v", &with_budget(1_000_000))
        .unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(
            e,
            CompileError::CellOverBudget {
                budget: 1_000_000,
                ..
            }
        ),
        "{text}"
    );
    for want in [
        "wide.v:4:",
        "($mul) multiplies 4096 × 4096 bits: 16,777,216 partial products",
        "too many for the 1,000,000 gates left of the 1,000,000",
    ] {
        assert!(text.contains(want), "`{text}` lacks `{want}`");
    }
    assert!(
        !text.contains("/pgc-yosys"),
        "a temporary file's name: {text}"
    );
}

/// A block that the estimate lets through but whose gates go past the budget stops there
/// (the builder folds every gate past it away) and names the cell that went over.
#[test]
fn a_design_that_goes_past_the_gate_budget_names_the_cell() {
    if !yosys_available() {
        return;
    }
    let src = wide_product(128);
    let e = verilog::compile_source(&src, "wide.v", &with_budget(20_000)).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, CompileError::CellOverBudget { budget: 20_000, .. }),
        "{text}"
    );
    assert_eq!(e.pos().map(|p| p.line), Some(4), "{text}");
    assert!(
        text.contains("($mul) takes the design past the 20,000 gates"),
        "{text}"
    );
    // Without the budget it compiles, and reports what it made as it goes.
    let progress = std::sync::Arc::new(pgc_compiler::Progress::default());
    let opts = Options {
        progress: Some(progress.clone()),
        ..Options::default()
    };
    let c = verilog::compile_source(&src, "wide.v", &opts).unwrap();
    assert!(c.stats.gates_emitted > 20_000, "{}", c.stats.gates_emitted);
    assert_eq!(
        progress.gates.load(std::sync::atomic::Ordering::Relaxed),
        c.stats.gates_emitted
    );
}
