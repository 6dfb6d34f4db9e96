//! Every C integer operator on every pair of integer types, against gcc: one program per
//! operator whose outputs are `a op b` for all 12 x 12 type pairs, converted to `unsigned long
//! long` (so the result's type shows: a signed result sign-extends, an unsigned one does not).
//! Also unary operators and casts between all types, compound assignments (where the result
//! converts back to the narrow left type), and `++`/`--`. Inputs are seeded, edge-biased random
//! values (0, ±1, extremes, shared values), 64 sets per program.

mod common;

use common::oracle::{Case, check_case};
use pgc_compiler::randprog::IntTy;

/// (spelling, type) for the 12 integer types, `stdint.h` names mixed in.
const TYPES: [(&str, IntTy); 12] = [
    ("_Bool", IntTy::Bool),
    ("char", IntTy::Char),
    ("int8_t", IntTy::SChar),
    ("uint8_t", IntTy::UChar),
    ("short", IntTy::Short),
    ("uint16_t", IntTy::UShort),
    ("int", IntTy::Int),
    ("uint32_t", IntTy::UInt),
    ("int64_t", IntTy::Long),
    ("unsigned long", IntTy::ULong),
    ("long long", IntTy::LLong),
    ("unsigned long long", IntTy::ULLong),
];

fn min_of(t: IntTy) -> &'static str {
    match t {
        IntTy::Int => "(-2147483647 - 1)",
        IntTy::Long => "(-9223372036854775807L - 1)",
        IntTy::LLong => "(-9223372036854775807LL - 1)",
        _ => unreachable!("not a promoted signed type"),
    }
}

/// `b` as a divisor of `a` that avoids the two traps (0, and MIN / -1 in the common type).
fn safe_divisor(a: &str, b: &str, t: IntTy) -> String {
    if t.signed() {
        format!(
            "(({b}) == 0 || (({b}) == -1 && ({a}) == {}) ? 1 : ({b}))",
            min_of(t)
        )
    } else {
        format!("(({b}) == 0 ? 1 : ({b}))")
    }
}

fn signature(outputs: usize) -> String {
    let mut params = Vec::new();
    for party in ['A', 'B'] {
        for (i, (spelling, _)) in TYPES.iter().enumerate() {
            params.push(format!("{spelling} INPUT_{party}_t{i}"));
        }
    }
    params.push(format!("unsigned long long OUTPUT_r[{outputs}]"));
    format!(
        "#include <stdint.h>\nvoid mpc_main({})\n",
        params.join(", ")
    )
}

/// The program computing `a op b` for every type pair.
fn binary_program(op: &str) -> String {
    let mut body = String::new();
    let mut k = 0;
    for (i, (_, ta)) in TYPES.iter().enumerate() {
        for (j, (_, tb)) in TYPES.iter().enumerate() {
            let (a, b) = (format!("INPUT_A_t{i}"), format!("INPUT_B_t{j}"));
            let e = match op {
                "/" | "%" => format!("{a} {op} {}", safe_divisor(&a, &b, IntTy::usual(*ta, *tb))),
                "<<" | ">>" => format!("{a} {op} ({b} & {})", ta.promote().bits() - 1),
                _ => format!("{a} {op} {b}"),
            };
            body.push_str(&format!("    OUTPUT_r[{k}] = {e};\n"));
            k += 1;
        }
    }
    format!("{}{{\n{body}}}\n", signature(k))
}

/// `x op= b` for a variable `x` of every type and `b` of every type.
fn compound_program(op: &str) -> String {
    let mut body = String::new();
    let mut k = 0;
    for (i, (spelling, ta)) in TYPES.iter().enumerate() {
        for (j, (_, tb)) in TYPES.iter().enumerate() {
            let b = format!("INPUT_B_t{j}");
            let rhs = match op {
                "/" | "%" => safe_divisor("x", &b, IntTy::usual(*ta, *tb)),
                "<<" | ">>" => format!("({b} & {})", ta.promote().bits() - 1),
                _ => b,
            };
            body.push_str(&format!(
                "    {{ {spelling} x = INPUT_A_t{i}; x {op}= {rhs}; OUTPUT_r[{k}] = x; }}\n"
            ));
            k += 1;
        }
    }
    format!("{}{{\n{body}}}\n", signature(k))
}

fn unary_and_cast_program() -> String {
    let mut body = String::new();
    let mut k = 0;
    for i in 0..TYPES.len() {
        let a = format!("INPUT_A_t{i}");
        for e in [
            format!("-{a}"),
            format!("~{a}"),
            format!("!{a}"),
            format!("+{a}"),
        ] {
            body.push_str(&format!("    OUTPUT_r[{k}] = {e};\n"));
            k += 1;
        }
        for (spelling, _) in TYPES {
            body.push_str(&format!("    OUTPUT_r[{k}] = ({spelling}){a};\n"));
            k += 1;
        }
        // A conversion chain through every narrower type.
        body.push_str(&format!(
            "    OUTPUT_r[{k}] = (int8_t)(uint16_t)(_Bool)(short)(uint8_t){a} + (int)(unsigned)(char){a};\n"
        ));
        k += 1;
    }
    format!("{}{{\n{body}}}\n", signature(k))
}

fn increment_program() -> String {
    let mut body = String::new();
    let mut k = 0;
    for (i, (spelling, _)) in TYPES.iter().enumerate() {
        for form in ["x++", "++x", "x--", "--x"] {
            body.push_str(&format!(
                "    {{ {spelling} x = INPUT_A_t{i}; OUTPUT_r[{k}] = {form}; OUTPUT_r[{}] = x; }}\n",
                k + 1
            ));
            k += 2;
        }
    }
    format!("{}{{\n{body}}}\n", signature(k))
}

fn check(name: &str, source: String, seed: u64, protocol_runs: usize) {
    if !common::gcc_available() {
        return;
    }
    let case = Case::text(name, &source);
    check_case(&case, 64, protocol_runs, seed);
}

#[test]
fn arithmetic_operators_on_all_type_pairs() {
    for (k, op) in ["+", "-", "*"].iter().enumerate() {
        check(
            &format!("op_{k}.c"),
            binary_program(op),
            100 + k as u64,
            usize::from(k == 0),
        );
    }
}

#[test]
fn division_and_modulo_on_all_type_pairs() {
    check("op_div.c", binary_program("/"), 110, 0);
    check("op_mod.c", binary_program("%"), 111, 0);
}

#[test]
fn shifts_on_all_type_pairs() {
    check("op_shl.c", binary_program("<<"), 120, 0);
    check("op_shr.c", binary_program(">>"), 121, 0);
}

#[test]
fn bitwise_and_logical_operators_on_all_type_pairs() {
    for (k, op) in ["&", "|", "^", "&&", "||"].iter().enumerate() {
        check(
            &format!("op_bit{k}.c"),
            binary_program(op),
            130 + k as u64,
            0,
        );
    }
}

#[test]
fn comparisons_on_all_type_pairs() {
    // Mixed signedness is where C surprises: -1 < 0u is false.
    for (k, op) in ["<", "<=", ">", ">=", "==", "!="].iter().enumerate() {
        check(
            &format!("op_cmp{k}.c"),
            binary_program(op),
            140 + k as u64,
            usize::from(k == 0),
        );
    }
}

#[test]
fn unary_operators_and_casts_between_all_types() {
    check("unary_casts.c", unary_and_cast_program(), 150, 1);
}

#[test]
fn compound_assignments_convert_back_to_the_left_type() {
    for (k, op) in ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"]
        .iter()
        .enumerate()
    {
        check(
            &format!("compound_{k}.c"),
            compound_program(op),
            160 + k as u64,
            0,
        );
    }
}

#[test]
fn increments_and_decrements_on_all_types() {
    check("increments.c", increment_program(), 170, 0);
}
