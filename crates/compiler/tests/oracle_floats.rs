//! `float` and `double` against gcc on x86-64 (SSE2) as the oracle, bit for bit: every
//! arithmetic and comparison operator on every pair of floating types and on floats mixed
//! with integers, casts between every integer type, `_Bool` and both floating types,
//! unary operators, `++`/`--`, compound assignments, the `<math.h>` built-ins, literals, and
//! constant folding. Inputs are the special values (±0, subnormals, the smallest and largest
//! normal numbers, ±inf, quiet and signaling NaNs with payloads, halfway cases, values at
//! the integer types' limits) in every pair, plus seeded random values.
//!
//! gcc compiles the oracle at -O0 ([`FLOAT_ORACLE_FLAGS`]). Where gcc computes `d + f` or
//! `d * f` (a `double` and a converted `float`) with the converted operand first, a result
//! from two NaN operands keeps the other payload than pgc (which always keeps the left
//! one, as IEEE 754 allows); those expressions are checked with NaNs matching any NaN.

mod common;

use common::Rng;
use common::oracle::{Case, FLOAT_ORACLE_FLAGS, check_inputs_with, eval_circuit};
use common::values::{Values, random_inputs};
use pgc_circuit::OptimizeFor;
use pgc_compiler::Compiled;

/// The input types every program gets, for both parties (`INPUT_A_t0` is A's `float`, …).
const TYPES: [&str; 9] = [
    "float",
    "double",
    "_Bool",
    "char",
    "uint16_t",
    "int",
    "unsigned",
    "long long",
    "unsigned long long",
];

/// The special values of a format (`width` 32 or 64) as bit patterns.
fn specials(width: u32) -> Vec<u64> {
    let of = |v: f64| -> u64 {
        if width == 32 {
            (v as f32).to_bits() as u64
        } else {
            v.to_bits()
        }
    };
    let (e_bits, f_bits) = pgc_circuit::float_text::layout(width).unwrap();
    let sign = 1u64 << (width - 1);
    let exp_ones = ((1u64 << e_bits) - 1) << f_bits;
    let quiet = 1u64 << (f_bits - 1);
    let frac = (1u64 << f_bits) - 1;
    vec![
        0,
        sign,         // -0
        1,            // smallest subnormal
        sign | frac,  // largest subnormal, negative
        1 << f_bits,  // smallest normal
        exp_ones - 1, // largest finite
        sign | (exp_ones - 1),
        exp_ones,                // inf
        sign | exp_ones,         // -inf
        exp_ones | quiet,        // nan
        sign | exp_ones | quiet, // -nan, x86's default NaN
        exp_ones | quiet | 0x2a, // a quiet NaN with a payload
        sign | exp_ones | 0x15,  // a signaling NaN, negative
        of(1.0),
        of(-1.0),
        of(0.5),
        of(2.5),
        of(-3.5),
        of(0.1),
        of(3.0),
        of(2147483648.0),
        of(-2147483649.0),
        of(9223372036854775808.0),
        of(18446744073709551616.0),
        of(1e10),
        of(-65536.75),
    ]
}

/// One output of a test program: `setup` statements (in a block of their own), then the
/// output slot of type `ty` gets `expr`.
struct Item {
    ty: &'static str,
    setup: String,
    expr: String,
}

fn item(ty: &'static str, expr: String) -> Item {
    Item {
        ty,
        setup: String::new(),
        expr,
    }
}

fn stmt(ty: &'static str, setup: String, expr: &str) -> Item {
    Item {
        ty,
        setup,
        expr: expr.to_string(),
    }
}

/// Input `t…` of party `party` holding a value of type `t`.
fn input(party: char, t: &str) -> String {
    let k = TYPES
        .iter()
        .position(|x| *x == t)
        .unwrap_or_else(|| panic!("no input of type {t}"));
    format!("INPUT_{party}_t{k}")
}

/// A program storing each item in the next slot of the output array of its type.
fn program(items: &[Item]) -> String {
    let mut arrays: Vec<(&str, usize)> = Vec::new();
    let mut body = String::new();
    for it in items {
        let k = match arrays.iter_mut().find(|(n, _)| *n == it.ty) {
            Some((_, n)) => {
                *n += 1;
                *n - 1
            }
            None => {
                arrays.push((it.ty, 1));
                0
            }
        };
        body.push_str(&format!(
            "    {{ {} OUTPUT_{}[{k}] = {}; }}\n",
            it.setup,
            it.ty.replace(' ', "_"),
            it.expr
        ));
    }
    let mut params = Vec::new();
    for party in ['A', 'B'] {
        for (i, t) in TYPES.iter().enumerate() {
            params.push(format!("{t} INPUT_{party}_t{i}"));
        }
    }
    for (t, n) in &arrays {
        params.push(format!("{t} OUTPUT_{}[{n}]", t.replace(' ', "_")));
    }
    format!(
        "#include <stdint.h>\n#include <math.h>\nvoid mpc_main({})\n{{\n{body}}}\n",
        params.join(", ")
    )
}

/// The result type of `a op b` for the arithmetic operators.
fn arith_result(a: &str, b: &str) -> &'static str {
    if a == "double" || b == "double" {
        "double"
    } else {
        "float"
    }
}

/// Input sets: every pair of special values for (A's, B's) `float` and `double`, then
/// `extra` seeded random sets (integers edge-biased, floats biased to the hard values).
fn input_sets(c: &Compiled, seed: u64, extra: usize) -> Vec<Values> {
    let mut rng = Rng::new(seed);
    let port = |name: String| {
        c.interface
            .inputs
            .iter()
            .position(|p| p.name == name)
            .unwrap_or_else(|| panic!("no input {name}"))
    };
    let (s32, s64) = (specials(32), specials(64));
    let mut sets = Vec::new();
    for i in 0..s32.len() {
        for j in 0..s32.len() {
            let mut v = random_inputs(&c.interface, &mut rng);
            v[port(input('A', "float"))] = vec![s32[i]];
            v[port(input('B', "float"))] = vec![s32[j]];
            v[port(input('A', "double"))] = vec![s64[i]];
            v[port(input('B', "double"))] = vec![s64[j]];
            sets.push(v);
        }
    }
    for _ in 0..extra {
        sets.push(random_inputs(&c.interface, &mut rng));
    }
    sets
}

fn check(name: &str, items: &[Item], any_nan: bool, seed: u64, protocol_runs: usize) {
    if !common::gcc_available() {
        return;
    }
    // Both block variants: size-optimized and (`--optimize depth`) depth-optimized.
    for optimize in [OptimizeFor::Size, OptimizeFor::Depth] {
        let mut case = Case::text(name, &program(items));
        case.any_nan = any_nan;
        case.opts.optimize = optimize;
        case.label = format!("{name} (--optimize {optimize:?})");
        let compiled = case.compile_or_panic();
        let inputs = input_sets(&compiled, seed, 64);
        let runs = if optimize == OptimizeFor::Size {
            protocol_runs
        } else {
            0
        };
        check_inputs_with(&case, &compiled, &inputs, runs, FLOAT_ORACLE_FLAGS);
    }
}

/// `a op b` on the floating pairs and on floats mixed with integer types. `double + float`
/// and `double * float` are left out (see [`double_op_float_where_gcc_commutes`]).
fn binary_items(op: &str) -> Vec<Item> {
    let comparison = matches!(op, "<" | "<=" | ">" | ">=" | "==" | "!=");
    let mut pairs: Vec<(&str, &str)> = vec![
        ("float", "float"),
        ("double", "double"),
        ("float", "double"),
    ];
    if !matches!(op, "+" | "*") {
        pairs.push(("double", "float"));
    }
    for i in ["_Bool", "char", "int", "unsigned long long"] {
        pairs.extend([("float", i), (i, "float"), ("double", i), (i, "double")]);
    }
    pairs
        .into_iter()
        .map(|(a, b)| {
            let t = if comparison {
                "int"
            } else {
                arith_result(a, b)
            };
            item(t, format!("{} {op} {}", input('A', a), input('B', b)))
        })
        .collect()
}

#[test]
fn arithmetic_on_floating_and_mixed_pairs() {
    for (k, op) in ["+", "-", "*", "/"].iter().enumerate() {
        check(
            &format!("fop_{k}.c"),
            &binary_items(op),
            false,
            200 + k as u64,
            usize::from(k == 0),
        );
    }
}

/// gcc computes `d + f` and `d * f` (and `d += f`, `d *= f`) with the converted `float`
/// first, so with two NaN operands its result keeps the `float`'s payload where pgc keeps
/// the `double`'s: checked with NaNs matching any NaN; every other result bit for bit.
#[test]
fn double_op_float_where_gcc_commutes() {
    let (d, f) = (input('A', "double"), input('B', "float"));
    let items = vec![
        item("double", format!("{d} + {f}")),
        item("double", format!("{d} * {f}")),
        stmt("double", format!("double x = {d}; x += {f};"), "x"),
        stmt("double", format!("double x = {d}; x *= {f};"), "x"),
    ];
    check("fop_commuted.c", &items, true, 210, 0);
}

#[test]
fn comparisons_on_floating_and_mixed_pairs() {
    let mut items = Vec::new();
    for op in ["<", "<=", ">", ">=", "==", "!="] {
        items.extend(binary_items(op));
    }
    // Against a constant zero (pgc tests the magnitude bits instead).
    for t in ["float", "double"] {
        let a = input('A', t);
        for e in [
            "{a} == 0",
            "0.0 != {a}",
            "{a} == -0.0f",
            "{a} != 0.0",
            "{a} < 0",
        ] {
            items.push(item("int", e.replace("{a}", &a)));
        }
    }
    check("fcmp.c", &items, false, 220, 1);
}

#[test]
fn casts_between_every_integer_type_and_both_floating_types() {
    let ints = [
        "_Bool",
        "char",
        "signed char",
        "unsigned char",
        "short",
        "unsigned short",
        "int",
        "unsigned",
        "long",
        "unsigned long",
        "long long",
        "unsigned long long",
    ];
    let mut items = Vec::new();
    for src in ["float", "double"] {
        let a = input('A', src);
        for t in ints {
            // Stored as long long: the cast's value shows, sign-extended or not.
            items.push(item("long long", format!("({t}){a}")));
        }
        items.push(item("float", format!("(float){a}")));
        items.push(item("double", format!("(double){a}")));
        items.push(item("double", format!("(double)(float){a}")));
        items.push(item("int", format!("!{a}")));
        items.push(item("int", format!("{a} ? 1 : 2")));
        items.push(item("int", format!("{a} && {}", input('B', "int"))));
        items.push(item("int", format!("{} || {a}", input('B', "_Bool"))));
        items.push(item("double", format!("{} ? {a} : 7", input('B', "_Bool"))));
        items.push(stmt("int", format!("int r = 0; if ({a}) r = 1;"), "r"));
    }
    for src in &TYPES[2..] {
        let b = input('B', src);
        items.push(item("float", format!("(float){b}")));
        items.push(item("double", format!("(double){b}")));
        items.push(stmt("float", format!("float x = {b};"), "x"));
        items.push(stmt("double", format!("double x = {b};"), "x"));
    }
    // Near the integer types' extremes, where the conversion to float rounds.
    for (t, v) in [
        ("int", "2147483647"),
        ("long long", "9223372036854775807LL"),
        ("unsigned long long", "18446744073709551615ULL"),
        ("unsigned long long", "9007199254740993ULL"),
        ("long long", "(-9223372036854775807LL - 1)"),
    ] {
        let small = input('A', "_Bool");
        items.push(item("float", format!("(float)(({t}){v} - {small})")));
        items.push(item("double", format!("(double)(({t}){v} - {small})")));
    }
    check("fcasts.c", &items, false, 230, 1);
}

#[test]
fn unary_increments_and_compound_assignments() {
    let mut items = Vec::new();
    for t in ["float", "double"] {
        let a = input('A', t);
        items.push(item(t, format!("-{a}")));
        items.push(item(t, format!("+{a}")));
        items.push(item(t, format!("-(-{a} - 1)")));
        for form in ["x++", "++x", "x--", "--x"] {
            items.push(stmt(t, format!("{t} x = {a}; {t} r = {form};"), "r"));
            items.push(stmt(t, format!("{t} x = {a}; {form};"), "x"));
        }
    }
    for (lhs, rhs) in [
        ("float", "float"),
        ("double", "double"),
        ("float", "double"),
        ("float", "int"),
        ("double", "unsigned long long"),
        ("int", "float"),
        ("int", "double"),
        ("char", "double"),
        ("unsigned", "float"),
        ("long long", "double"),
    ] {
        for op in ["+", "-", "*", "/"] {
            let setup = format!(
                "{lhs} x = {}; x {op}= {};",
                input('A', lhs),
                input('B', rhs)
            );
            items.push(stmt(arith_or_int(lhs), setup, "x"));
        }
    }
    check("funary.c", &items, false, 240, 0);
}

/// The output type that holds a value of type `t` exactly.
fn arith_or_int(t: &str) -> &'static str {
    match t {
        "float" => "float",
        "double" => "double",
        _ => "long long",
    }
}

#[test]
fn math_builtins() {
    let mut items = Vec::new();
    for f in ["sqrt", "fabs", "floor", "ceil", "trunc", "nearbyint"] {
        items.push(item("double", format!("{f}({})", input('A', "double"))));
        items.push(item("float", format!("{f}f({})", input('A', "float"))));
        // The argument converts to the prototype's type.
        items.push(item("double", format!("{f}({})", input('B', "float"))));
        items.push(item("double", format!("{f}({})", input('B', "long long"))));
        items.push(item("float", format!("{f}f({})", input('B', "double"))));
    }
    check("fmath.c", &items, false, 250, 1);
}

/// Literals and expressions on them: gcc folds them exactly (with MPFR), pgc by running the
/// circuit blocks on constants; both must give the correctly rounded result.
#[test]
fn literals_and_constant_folding() {
    if !common::gcc_available() {
        return;
    }
    let literals = [
        ("double", "0.1"),
        ("float", "0.1f"),
        ("float", "0.1F"),
        ("double", "1e308"),
        ("double", "1e309"),
        ("float", "1e39f"),
        ("double", "4.9406564584124654e-324"),
        ("double", "2.4703282292062327e-324"),
        ("double", "2.4703282292062328e-324"),
        ("float", "1.4e-45f"),
        ("float", "7.0064923216240854e-46f"),
        ("double", "2.2250738585072011e-308"),
        ("float", "16777217.0f"),
        ("double", "9007199254740993."),
        ("double", ".5"),
        ("double", "5."),
        ("double", "1E+2"),
        ("double", "0x1.8p3"),
        ("double", "0x.8p-1"),
        ("float", "0x1.000001p0f"),
        ("float", "0x1.0000010000000000001p0f"),
        ("double", "0x1.fffffffffffff8p1023"),
        ("double", "0X1P-1074"),
        ("float", "1.00000005960464477539062500000001f"),
        ("float", "3.40282356779733661637539395458142568448e38f"),
        ("double", "0.1 + 0.2"),
        ("double", "1.0 / 3.0"),
        ("float", "1.0f / 3.0f"),
        ("double", "0.1f * 3"),
        ("double", "(double)(float)0.1"),
        ("float", "1e300 * 1e10"),
        ("double", "-0.0 + 0.0"),
        ("double", "-0.0 - 0.0"),
        ("double", "1.0 / -0.0"),
        ("long long", "(long long)-2.5"),
        // (In range only: gcc folds an out-of-range constant cast by saturating, e.g.
        // `(unsigned char)300.5` to 255, where its run-time code and pgc give 44.)
        ("long long", "(unsigned char)200.7"),
        ("long long", "(int)1e9 + 0.5"),
        ("int", "0.1 + 0.2 == 0.3"),
        ("int", "0.1f + 0.2f == 0.3f"),
        ("double", "sqrt(2.0)"),
        ("float", "sqrtf(2.0f)"),
        (
            "double",
            "floor(-2.5) + ceil(-2.5) + trunc(-2.5) + nearbyint(-2.5)",
        ),
        ("double", "nearbyint(2.5) + nearbyint(3.5) * 10"),
        ("double", "1e-320 / 3.0"),
        ("float", "(float)1e-40"),
        ("int", "sizeof(float) * 10 + sizeof 1.0"),
    ];
    let items: Vec<Item> = literals
        .iter()
        .map(|(t, e)| item(t, e.to_string()))
        .collect();
    let case = Case::text("fliterals.c", &program(&items));
    let compiled = case.compile_or_panic();
    assert_eq!(
        compiled.circuit.and_count(),
        0,
        "literal expressions fold to constants"
    );
    let mut rng = Rng::new(260);
    let inputs: Vec<Values> = (0..2)
        .map(|_| random_inputs(&compiled.interface, &mut rng))
        .collect();
    check_inputs_with(&case, &compiled, &inputs, 0, FLOAT_ORACLE_FLAGS);
}

/// A constant expression folds to exactly what the circuit computes from inputs holding the
/// same values, NaNs included (gcc folds NaN constants its own way, so the circuit is the
/// reference here): expressions over literals against the same expressions over inputs.
#[test]
fn folding_matches_the_circuit_bit_for_bit() {
    let values = [
        "0.0",
        "-0.0",
        "1.5",
        "-3.25",
        "1e308",
        "1e-310",
        "(0.0/0.0)",
        "-(0.0/0.0)",
        "(1.0/0.0)",
        "2.5",
    ];
    let exprs = [
        "X + Y",
        "X - Y",
        "X * Y",
        "X / Y",
        "Y - X",
        "(float)X + (float)Y",
        "(float)(X * Y)",
        "sqrt(X)",
        "floor(X) - ceil(Y)",
        "nearbyint(X / 3) + trunc(Y)",
        "(double)(long long)X + (double)(unsigned)Y",
        "(double)(X < Y) + (X == Y) * 2 + (X >= Y) * 4",
        "-X * fabs(Y)",
    ];
    let with = |e: &str, x: &str, y: &str| {
        e.replace('X', &format!("({x})"))
            .replace('Y', &format!("({y})"))
    };
    // Every expression at every pair of values, as constants.
    let mut folded = String::new();
    let mut k = 0;
    for e in exprs {
        for a in values {
            for b in values {
                folded.push_str(&format!("    OUTPUT_r[{k}] = {};\n", with(e, a, b)));
                k += 1;
            }
        }
    }
    let folded = format!(
        "#include <math.h>\nvoid mpc_main(int INPUT_A_unused, double OUTPUT_r[{k}])\n{{\n{folded}}}\n"
    );
    let folded = Case::text("ffold_const.c", &folded).compile_or_panic();
    assert_eq!(folded.circuit.and_count(), 0, "constants fold");
    let folded = &eval_circuit(&folded, &[vec![vec![0]]])[0][0];
    // The values' bits, as pgc folds them, to feed the run-time circuit.
    let value_bits: String = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("    OUTPUT_v[{i}] = {v};\n"))
        .collect();
    let value_bits = format!(
        "void mpc_main(int INPUT_A_unused, double OUTPUT_v[{}])\n{{\n{value_bits}}}\n",
        values.len()
    );
    let value_bits = Case::text("ffold_values.c", &value_bits).compile_or_panic();
    let bits = eval_circuit(&value_bits, &[vec![vec![0]]])[0][0].clone();
    // The same expressions from inputs.
    let at_run: String = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "    OUTPUT_r[{i}] = {};\n",
                with(e, "INPUT_A_x", "INPUT_B_y")
            )
        })
        .collect();
    let at_run = format!(
        "#include <math.h>\nvoid mpc_main(double INPUT_A_x, double INPUT_B_y, double OUTPUT_r[{}])\n{{\n{at_run}}}\n",
        exprs.len()
    );
    let at_run = Case::text("ffold_run.c", &at_run).compile_or_panic();
    let pairs: Vec<Values> = (0..values.len())
        .flat_map(|a| (0..values.len()).map(move |b| (a, b)))
        .map(|(a, b)| vec![vec![bits[a]], vec![bits[b]]])
        .collect();
    let outs = eval_circuit(&at_run, &pairs);
    let mut k = 0;
    for (ei, e) in exprs.iter().enumerate() {
        for (ai, a) in values.iter().enumerate() {
            for (bi, b) in values.iter().enumerate() {
                let run = outs[ai * values.len() + bi][0][ei];
                assert_eq!(
                    folded[k],
                    run,
                    "{} folds to {:#x} but the circuit computes {run:#x}",
                    with(e, a, b),
                    folded[k]
                );
                k += 1;
            }
        }
    }
}

/// Floats in every kind of object: globals with initializers, `static const` tables read at a
/// secret index, struct fields (inputs, outputs, returned by value), arrays written at a
/// secret index, parameters passed by value and by pointer, loops and secret branches.
/// (Sums are written `s += sq`, not `s += v[i] * v[i]`, which gcc computes product first:
/// with NaNs on both sides its result would keep the other payload.)
#[test]
fn floats_in_globals_arrays_structs_and_functions() {
    if !common::gcc_available() {
        return;
    }
    let source = "\
#include <math.h>
struct pt { float x; double y; int k; };
static const double table[4] = { 0.5, -1.25, 1e-300, 0x1p60 };
double scale = 2.0;
float bias;
static struct pt make(double a, float b)
{
    struct pt p = { b, a * scale, (int)a };
    return p;
}
static double norm(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double sq = v[i] * v[i];
        s += sq;
    }
    return sqrt(s);
}
static void halve(float *x) { *x /= 2; }
void mpc_main(double INPUT_A_v[3], struct pt INPUT_B_p, unsigned char INPUT_B_i,
              double *OUTPUT_n, struct pt *OUTPUT_q, float OUTPUT_t[2], double *OUTPUT_pick,
              double *OUTPUT_g)
{
    *OUTPUT_n = norm(INPUT_A_v, 3);
    *OUTPUT_q = make(INPUT_A_v[0] + INPUT_B_p.y, INPUT_B_p.x);
    float t[2] = { INPUT_A_v[1], INPUT_B_p.k };
    t[INPUT_B_i & 1] *= 3;
    halve(&t[1]);
    OUTPUT_t[0] = t[0];
    OUTPUT_t[1] = t[1];
    *OUTPUT_pick = table[INPUT_B_i % 4] + INPUT_A_v[INPUT_B_i % 3];
    if (INPUT_A_v[2] > INPUT_B_p.y)
        scale = -scale * INPUT_B_p.x;
    else
        bias = INPUT_B_p.y;
    *OUTPUT_g = scale + bias;
}
";
    let case = Case::text("fobjects.c", source);
    let compiled = case.compile_or_panic();
    let mut rng = Rng::new(270);
    let inputs: Vec<Values> = (0..256)
        .map(|_| random_inputs(&compiled.interface, &mut rng))
        .collect();
    check_inputs_with(&case, &compiled, &inputs, 2, FLOAT_ORACLE_FLAGS);
}
