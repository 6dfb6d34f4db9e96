//! The fuzz targets of pgc's front ends: a C program through the compiler (`c_program`), a
//! netlist in Yosys' JSON format through the Verilog mapper (`yosys_json`), and the object of
//! named inputs of `--inputs FILE.json` (`inputs_json`).
//!
//! A program or netlist is outside input like a circuit file: the compiler must refuse a
//! malformed one with an error naming what is wrong and where, never panic, hang or take
//! unbounded memory. Legitimate programs may be large, so the targets compile with small
//! limits (loop unrolling, loop iterations in all, gates): a program past them is refused
//! quickly with a clean error instead of being compiled slowly, and what the fuzzer explores
//! is the handling of malformed input, not the speed of large compilations.

use pgc_circuit::compact::CompactSource;
use pgc_circuit::eval::eval_bits_checked;
use pgc_circuit::limits::MemoryLimit;
use pgc_circuit::{CType, Circuit, GateSource, InputPort, Interface, Owner};
use pgc_compiler::{Compiled, Options};
use pgc_engine::typed_io::{Gathered, Scope};

/// Most iterations one loop of a fuzzed program may unroll to.
pub const FUZZ_UNROLL_LIMIT: u64 = 1 << 10;
/// Most loop iterations and inlined calls a fuzzed program may run in all.
pub const FUZZ_STEP_LIMIT: u64 = 1 << 16;
/// Most gates a fuzzed program or netlist may make.
pub const FUZZ_GATE_BUDGET: u64 = 1 << 16;
/// The memory the checks on a compiled circuit may take (evaluating it in the clear).
const FUZZ_EVAL_MEMORY: MemoryLimit = MemoryLimit::from_bytes(64 << 20);

/// The compiler options of the front-end targets: the defaults with small limits.
pub fn fuzz_options(compact: bool) -> Options {
    Options {
        unroll_limit: FUZZ_UNROLL_LIMIT,
        step_limit: FUZZ_STEP_LIMIT,
        gate_budget: Some(FUZZ_GATE_BUDGET),
        compact,
        ..Options::default()
    }
}

/// A C program through the compiler's entry point of `pgc compile` (the system `cpp`, the
/// parser, symbolic execution). Bit 0 of the first byte picks the flat path (as
/// `--compact never`) or the compact one (`--compact always`); the rest is the program,
/// as UTF-8 with invalid sequences replaced. A program that compiles must give a well-formed
/// circuit: the compact one validates, and either evaluates on all-zero inputs.
pub fn c_program(data: &[u8]) {
    let _ = c_program_run(data);
}

/// [`c_program`], returning the compiler's error (`None` for an empty input).
pub fn c_program_run(data: &[u8]) -> Option<Result<(), String>> {
    let (&selector, source) = data.split_first()?;
    let source = String::from_utf8_lossy(source);
    if selector & 1 == 0 {
        let compiled = match pgc_compiler::compile_source(&source, "fuzz.c", &fuzz_options(false)) {
            Ok(c) => c,
            Err(e) => return Some(Err(e.to_string())),
        };
        check_flat(&compiled);
    } else {
        let compiled =
            match pgc_compiler::compile_compact_source(&source, "fuzz.c", &fuzz_options(true)) {
                Ok(c) => c,
                Err(e) => return Some(Err(e.to_string())),
            };
        let source =
            CompactSource::new(compiled.circuit).expect("the compiler's compact circuit validates");
        check_interface(source.layout(), &compiled.interface);
        evaluate_on_zeros(&source);
    }
    Some(Ok(()))
}

fn check_flat(compiled: &Compiled) {
    check_interface(&compiled.circuit.layout, &compiled.interface);
    evaluate_on_zeros(&compiled.circuit);
    // The regions found must split the circuit (an error is allowed, a panic is not).
    let _ = compiled.parallel_circuit();
}

/// The interface's ports cover exactly the layout's input and output wires.
fn check_interface(layout: &pgc_circuit::Layout, interface: &Interface) {
    let input_bits: u64 = interface.inputs.iter().map(|p| p.ctype.bit_width()).sum();
    let layout_inputs: u64 = layout.input_widths.iter().map(|&w| w as u64).sum();
    assert_eq!(
        input_bits, layout_inputs,
        "input ports and input wires agree"
    );
    let output_bits: u64 = interface.outputs.iter().map(|p| p.ctype.bit_width()).sum();
    assert_eq!(
        output_bits,
        layout.output_wires.len() as u64,
        "output ports and output wires agree"
    );
}

fn evaluate_on_zeros<S: GateSource>(source: &S) {
    let inputs: u64 = source.layout().input_widths.iter().map(|&w| w as u64).sum();
    let zeros = vec![false; inputs as usize];
    FUZZ_EVAL_MEMORY
        .scoped(|| eval_bits_checked(source, &zeros))
        .map(|outputs| assert_eq!(outputs.len(), source.layout().output_wires.len()))
        .ok();
}

/// The compilations [`c_semantics`] holds against the reference (flat, default options):
/// each must compute the same function, on every input, whatever the program's C-level
/// undefined behaviour (the value-range analysis and the compact form claim exactly that:
/// `pgc_compiler::range`, `pgc_compiler::compact`).
const SEMANTIC_VARIANTS: [&str; 4] = [
    "compact",
    "flat without value ranges",
    "flat, --optimize depth",
    "compact without replayed bounds",
];

/// A preprocessed C program (no `cpp` process: fast enough for long campaigns) compiled the
/// reference way and one other way (bits 0–1 of the first byte pick one of
/// [`SEMANTIC_VARIANTS`]); where both compile, the two circuits must give the same outputs
/// on all-zero, all-one and pseudo-random inputs (drawn from a hash of the fuzz input). A
/// disagreement is a miscompile in one of them. The rest of the input is the program text,
/// as `cpp` would give it (the seeds are the `c_program` seeds preprocessed with
/// `cpp -P -std=gnu11 -D__PGC__=1`).
pub fn c_semantics(data: &[u8]) {
    let _ = c_semantics_run(data);
}

/// [`c_semantics`], returning `None` for an empty input, else whether both compiled (the
/// reference's error if it did not; `Ok(false)` if only the variant refused).
pub fn c_semantics_run(data: &[u8]) -> Option<Result<bool, String>> {
    let (&selector, text) = data.split_first()?;
    let text = String::from_utf8_lossy(text);
    let variant = usize::from(selector & 3);
    let reference = match pgc_compiler::compile_preprocessed(&text, "fuzz.c", &fuzz_options(false))
    {
        Ok(c) => c,
        Err(e) => return Some(Err(e.to_string())),
    };
    check_flat(&reference);
    let flat_variant = |opts: Options| pgc_compiler::compile_preprocessed(&text, "fuzz.c", &opts);
    let compact_variant = |opts: Options| {
        pgc_compiler::compile_compact_preprocessed(&text, "fuzz.c", &opts).map(|c| {
            CompactSource::new(c.circuit).expect("the compiler's compact circuit validates")
        })
    };
    let compiled = match variant {
        0 | 3 => {
            let opts = Options {
                bound_replay: variant == 0,
                ..fuzz_options(true)
            };
            match compact_variant(opts) {
                Ok(compact) => Compilation::Compact(compact),
                Err(_) => return Some(Ok(false)),
            }
        }
        _ => {
            let opts = if variant == 1 {
                Options {
                    value_ranges: false,
                    ..fuzz_options(false)
                }
            } else {
                Options {
                    optimize: pgc_circuit::OptimizeFor::Depth,
                    ..fuzz_options(false)
                }
            };
            match flat_variant(opts) {
                Ok(flat) => Compilation::Flat(flat.circuit),
                Err(_) => return Some(Ok(false)),
            }
        }
    };
    match &compiled {
        Compilation::Flat(c) => same_ports(&reference.circuit, c, variant),
        Compilation::Compact(c) => same_ports(&reference.circuit, c, variant),
    }
    let width: u64 = reference
        .circuit
        .layout
        .input_widths
        .iter()
        .map(|&w| w as u64)
        .sum();
    let mut state = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut next_bit = move || {
        // xorshift64*: only a spread of test inputs, not a secret.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 63 == 1
    };
    let patterns: [Vec<bool>; 4] = [
        vec![false; width as usize],
        vec![true; width as usize],
        (0..width).map(|_| next_bit()).collect(),
        (0..width).map(|_| next_bit()).collect(),
    ];
    for inputs in &patterns {
        let got = match &compiled {
            Compilation::Flat(c) => evaluate(c, inputs),
            Compilation::Compact(c) => evaluate(c, inputs),
        };
        let (Some(want), Some(got)) = (evaluate(&reference.circuit, inputs), got) else {
            continue;
        };
        assert!(
            want == got,
            "the {} compilation disagrees with the flat one on inputs {}: {} vs {}",
            SEMANTIC_VARIANTS[variant],
            bit_string(inputs),
            bit_string(&got),
            bit_string(&want)
        );
    }
    Some(Ok(true))
}

/// The other compilation [`c_semantics`] compares.
enum Compilation {
    Flat(Circuit),
    Compact(CompactSource),
}

/// Both compilations read the same input wires and give the same number of outputs.
fn same_ports<S: GateSource>(reference: &Circuit, variant: &S, which: usize) {
    let (want, got) = (&reference.layout, variant.layout());
    assert!(
        want.input_widths == got.input_widths && want.output_wires.len() == got.output_wires.len(),
        "the {} compilation has other ports than the flat one: inputs {:?} vs {:?}, {} vs {} outputs",
        SEMANTIC_VARIANTS[which],
        got.input_widths,
        want.input_widths,
        got.output_wires.len(),
        want.output_wires.len()
    );
}

fn evaluate<S: GateSource>(source: &S, inputs: &[bool]) -> Option<Vec<bool>> {
    FUZZ_EVAL_MEMORY
        .scoped(|| eval_bits_checked(source, inputs))
        .ok()
}

fn bit_string(bits: &[bool]) -> String {
    bits.iter().map(|&b| if b { '1' } else { '0' }).collect()
}

/// A netlist in Yosys' JSON format (what `pgc compile design.v` reads back from Yosys)
/// through the Verilog mapper, top module `top` (or the one the netlist marks as top). A
/// netlist that maps must give a well-formed circuit, evaluated on all-zero inputs.
pub fn yosys_json(data: &[u8]) {
    let _ = yosys_json_run(data);
}

/// [`yosys_json`], returning the mapper's error.
pub fn yosys_json_run(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let opts = Options {
        gate_budget: Some(FUZZ_GATE_BUDGET),
        ..Options::default()
    };
    let compiled = pgc_compiler::verilog::compile_json_netlist(&text, "top", &opts)
        .map_err(|e| e.to_string())?;
    check_interface(&compiled.circuit.layout, &compiled.interface);
    evaluate_on_zeros::<Circuit>(&compiled.circuit);
    Ok(())
}

/// The interface `inputs_json` gathers values for: every kind of port type, both owners.
fn inputs_interface() -> Interface {
    let port = |name: &str, owner, ctype| InputPort {
        name: name.to_string(),
        owner,
        ctype,
    };
    let int = |bits, signed| CType::int(bits, signed);
    Interface {
        inputs: vec![
            port("INPUT_A_income", Owner::A, int(32, true)),
            port("INPUT_B_income", Owner::B, int(32, true)),
            port("INPUT_A_flag", Owner::A, CType::Bool),
            port(
                "INPUT_B_bits",
                Owner::B,
                CType::Array {
                    elem: Box::new(int(8, false)),
                    len: 4,
                },
            ),
            port(
                "INPUT_A_point",
                Owner::A,
                CType::Struct {
                    name: "point".into(),
                    fields: vec![
                        ("x".into(), int(16, true)),
                        ("y".into(), CType::Float { bits: 32 }),
                    ],
                },
            ),
        ],
        outputs: Vec::new(),
    }
}

/// The object of `--inputs FILE.json` (`Gathered::add_json` and `finish`, as `pgc local`
/// and `pgc eval` read it) for a fixed interface; the first byte picks the scope (party A's
/// inputs, party B's, or all). Every value gathered has its port's width.
pub fn inputs_json(data: &[u8]) {
    let _ = inputs_json_run(data);
}

/// [`inputs_json`], returning the values gathered or the error (`None` for an empty input).
pub fn inputs_json_run(data: &[u8]) -> Option<Result<Vec<Vec<bool>>, String>> {
    let (&selector, text) = data.split_first()?;
    let json = match serde_json::from_slice::<serde_json::Value>(text) {
        Ok(json) => json,
        Err(e) => return Some(Err(e.to_string())),
    };
    let scope = match selector % 3 {
        0 => Scope::All,
        1 => Scope::Party(pgc_protocol::Party::A),
        _ => Scope::Party(pgc_protocol::Party::B),
    };
    let interface = inputs_interface();
    let flag_for: &dyn Fn(Owner) -> &'static str = &|owner| match owner {
        Owner::A => "--a",
        Owner::B => "--b",
    };
    let mut gathered = Gathered::new(&interface);
    let values = gathered
        .add_json(&json, scope, "fuzz.json", flag_for)
        .and_then(|()| gathered.finish(scope, flag_for));
    let values = match values {
        Ok(v) => v,
        Err(e) => return Some(Err(format!("{e:#}"))),
    };
    let covered = |owner| match scope {
        Scope::All => true,
        Scope::Party(party) => pgc_engine::typed_io::party_of(owner) == party,
    };
    let ports = interface.inputs.iter().filter(|p| covered(p.owner));
    for (port, bits) in ports.zip(&values) {
        assert_eq!(bits.len() as u64, port.ctype.bit_width(), "{}", port.name);
    }
    Some(Ok(values))
}
