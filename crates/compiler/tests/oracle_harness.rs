//! Checks of the gcc oracle itself, independent of the compiler: hand-built circuits with a
//! hand-written interface must agree with gcc (and a wrong circuit must be caught), and the
//! local-style rewrite must report the values gcc computes.

mod common;

use std::time::Duration;

use common::Rng;
use common::oracle::{Case, GccOracle, compare, inputs_named};
use common::values::{Values, random_inputs};
use pgc_circuit::{Builder, CType, Circuit, InputPort, Interface, OutputPort, Owner, Visibility};
use pgc_compiler::{CompileStats, Compiled};

fn int(bits: u32, signed: bool) -> CType {
    CType::int(bits, signed)
}

fn compiled(
    circuit: Circuit,
    entry: &str,
    params: &[&str],
    inputs: Vec<InputPort>,
    outputs: Vec<OutputPort>,
) -> Compiled {
    Compiled {
        circuit,
        regions: Vec::new(),
        interface: Interface { inputs, outputs },
        stats: CompileStats {
            passes: Vec::new(),
            gates_emitted: 0,
            gates_final: 0,
            and_gates_final: 0,
            elapsed: Duration::ZERO,
            phases: Vec::new(),
        },
        entry_name: entry.into(),
        entry_params: params.iter().map(|p| p.to_string()).collect(),
    }
}

fn input(name: &str, owner: Owner, ctype: CType) -> InputPort {
    InputPort {
        name: name.into(),
        owner,
        ctype,
    }
}

fn output(name: &str, visibility: Visibility, ctype: CType) -> OutputPort {
    OutputPort {
        name: name.into(),
        visibility,
        ctype,
    }
}

const PARAM_STYLE: &str = r#"
#include <stdint.h>
struct pair { int16_t lo; uint8_t hi; };
void mpc_main(int INPUT_A_x, const int8_t INPUT_B_v[2], struct pair INPUT_B_p,
              int *OUTPUT_sum, _Bool *OUTPUT_A_less, int16_t (*OUTPUT_B_arr)[2])
{
    *OUTPUT_sum = INPUT_A_x + INPUT_B_p.lo;
    *OUTPUT_A_less = INPUT_A_x < INPUT_B_v[0];
    (*OUTPUT_B_arr)[0] = INPUT_B_v[1];
    (*OUTPUT_B_arr)[1] = INPUT_B_p.hi;
}
"#;

fn sign_extend(w: &[u32], bits: usize) -> Vec<u32> {
    let mut v = w.to_vec();
    v.resize(bits, *w.last().unwrap());
    v
}

/// The circuit of `PARAM_STYLE` built by hand; `wrong` uses subtraction for the sum.
fn param_style(wrong: bool) -> Compiled {
    let (mut b, ins) = Builder::new(&[32, 16, 24]);
    let x = &ins[0];
    let (v0, v1) = (&ins[1][0..8], &ins[1][8..16]);
    let (lo, hi) = (&ins[2][0..16], &ins[2][16..24]);
    let lo32 = sign_extend(lo, 32);
    let sum = if wrong {
        b.sub(x, &lo32)
    } else {
        b.add(x, &lo32)
    };
    let less = b.lt_signed(x, &sign_extend(v0, 32));
    let zero = b.constant(false);
    let mut arr = sign_extend(v1, 16);
    arr.extend_from_slice(hi);
    arr.extend(std::iter::repeat_n(zero, 8));
    b.output(&sum);
    b.output(&[less]);
    b.output(&arr);
    let pair = CType::Struct {
        name: "pair".into(),
        fields: vec![("lo".into(), int(16, true)), ("hi".into(), int(8, false))],
    };
    compiled(
        b.finish(),
        "mpc_main",
        &[
            "INPUT_A_x",
            "INPUT_B_v",
            "INPUT_B_p",
            "OUTPUT_sum",
            "OUTPUT_A_less",
            "OUTPUT_B_arr",
        ],
        vec![
            input("INPUT_A_x", Owner::A, int(32, true)),
            input(
                "INPUT_B_v",
                Owner::B,
                CType::Array {
                    elem: Box::new(int(8, true)),
                    len: 2,
                },
            ),
            input("INPUT_B_p", Owner::B, pair),
        ],
        vec![
            output("OUTPUT_sum", Visibility::Both, int(32, true)),
            output("OUTPUT_A_less", Visibility::A, CType::Bool),
            output(
                "OUTPUT_B_arr",
                Visibility::B,
                CType::Array {
                    elem: Box::new(int(16, true)),
                    len: 2,
                },
            ),
        ],
    )
}

#[test]
fn hand_built_circuit_agrees_with_gcc_in_cleartext_and_protocol() {
    if !common::gcc_available() {
        return;
    }
    let case = Case::text("param_style.c", PARAM_STYLE);
    let c = param_style(false);
    let mut rng = Rng::new(11);
    let inputs: Vec<Values> = (0..200)
        .map(|_| random_inputs(&c.interface, &mut rng))
        .collect();
    common::oracle::check_inputs(&case, &c, &inputs, 2);
}

#[test]
fn a_wrong_circuit_is_reported_with_inputs_and_values() {
    if !common::gcc_available() {
        return;
    }
    let case = Case::text("param_style.c", PARAM_STYLE);
    let c = param_style(true);
    let oracle = GccOracle::build(&[(&case, &c)]).unwrap();
    let input = inputs_named(
        &c,
        &[("x", vec![10]), ("v", vec![-3, 4]), ("p", vec![3, 200])],
    );
    let gcc = oracle.run(&[(0, &input)]).unwrap();
    let failures = compare(&case, &c, std::slice::from_ref(&input), &gcc, 1);
    // Cleartext, both parties of the protocol and both under GMW see 7 instead of 13.
    assert_eq!(failures.len(), 5, "{failures:#?}");
    assert_eq!(
        failures.iter().filter(|f| f.contains("GMW (party")).count(),
        2,
        "{failures:#?}"
    );
    for f in &failures {
        assert!(f.contains("OUTPUT_sum: gcc 13 but"), "{f}");
        assert!(f.contains(" 7"), "{f}");
        assert!(
            f.contains("--a x=10 --b v=[-3,4] --b p={lo:3,hi:200}"),
            "{f}"
        );
    }
}

#[test]
fn listing_1_local_style_is_rewritten() {
    if !common::gcc_available() {
        return;
    }
    let src = "void millionaires() {\n  int INPUT_A_income;\n  int INPUT_B_income;\n  \
               int OUTPUT_result = 0;\n  if (INPUT_A_income > INPUT_B_income)\n    \
               OUTPUT_result = 1;\n}\n";
    let case = Case::text("millionaires_local.c", src);
    let (mut b, ins) = Builder::new(&[32, 32]);
    let gt = b.lt_signed(&ins[1], &ins[0]);
    let zero = b.constant(false);
    let mut out = vec![gt];
    out.extend(std::iter::repeat_n(zero, 31));
    b.output(&out);
    let c = compiled(
        b.finish(),
        "millionaires",
        &[],
        vec![
            input("INPUT_A_income", Owner::A, int(32, true)),
            input("INPUT_B_income", Owner::B, int(32, true)),
        ],
        vec![output("OUTPUT_result", Visibility::Both, int(32, true))],
    );
    let mut rng = Rng::new(5);
    let inputs: Vec<Values> = (0..100)
        .map(|_| random_inputs(&c.interface, &mut rng))
        .collect();
    common::oracle::check_inputs(&case, &c, &inputs, 1);
}

#[test]
fn local_outputs_are_reported_at_every_return() {
    if !common::gcc_available() {
        return;
    }
    // Two declarators in one input declaration, a struct output, early returns.
    let src = r#"
struct res { int v; unsigned char tag; };
int entry(void)
{
    int INPUT_A_a, INPUT_B_b[2];
    struct res OUTPUT_r = {0, 0};
    int OUTPUT_count = 1;
    if (INPUT_A_a < 0) {
        OUTPUT_r.v = -INPUT_A_a;
        OUTPUT_r.tag = 1;
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        if (INPUT_B_b[i] == INPUT_A_a)
            return 2;
        OUTPUT_count++;
    }
    OUTPUT_r.v = INPUT_A_a + INPUT_B_b[0] + INPUT_B_b[1];
    OUTPUT_r.tag = 3;
}
"#;
    let case = Case::text("returns.c", src);
    let res = CType::Struct {
        name: "res".into(),
        fields: vec![("v".into(), int(32, true)), ("tag".into(), int(8, false))],
    };
    // The circuit is not used here: only gcc's answers are checked.
    let (b, _) = Builder::new(&[32, 64]);
    let c = compiled(
        b.finish(),
        "entry",
        &[],
        vec![
            input("INPUT_A_a", Owner::A, int(32, true)),
            input(
                "INPUT_B_b",
                Owner::B,
                CType::Array {
                    elem: Box::new(int(32, true)),
                    len: 2,
                },
            ),
        ],
        vec![
            output("OUTPUT_r", Visibility::Both, res),
            output("OUTPUT_count", Visibility::Both, int(32, true)),
        ],
    );
    let oracle = GccOracle::build(&[(&case, &c)]).unwrap();
    // (a, b, (OUTPUT_r.v, OUTPUT_r.tag), OUTPUT_count)
    type Expectation = (i64, [i64; 2], (i64, i64), i64);
    let cases: [Expectation; 4] = [
        (-5, [0, 0], (5, 1), 1),
        (7, [1, 7], (0, 0), 2),
        (7, [7, 1], (0, 0), 1),
        (4, [10, 20], (34, 3), 3),
    ];
    for (a, bs, (v, tag), count) in cases {
        let input = inputs_named(&c, &[("a", vec![a]), ("b", bs.to_vec())]);
        let got = oracle.run(&[(0, &input)]).unwrap().remove(0).unwrap();
        let want: Values = vec![vec![v as u64 & 0xffff_ffff, tag as u64], vec![count as u64]];
        assert_eq!(got, want, "a={a} b={bs:?}");
    }
}

#[test]
fn unsupported_harness_shapes_are_refused_clearly() {
    if !common::gcc_available() {
        return;
    }
    let src = "void mpc_main(void) { int INPUT_A_a; if (INPUT_A_a) { int OUTPUT_x = 1; } }";
    let case = Case::text("nested.c", src);
    let (b, _) = Builder::new(&[32]);
    let c = compiled(
        b.finish(),
        "mpc_main",
        &[],
        vec![input("INPUT_A_a", Owner::A, int(32, true))],
        vec![output("OUTPUT_x", Visibility::Both, int(32, true))],
    );
    let err = GccOracle::build(&[(&case, &c)]).err().expect("refused");
    assert!(err.contains("nested block"), "{err}");
}
