//! Focused semantics tests with hand-computed expectations (the gcc oracle tests live in
//! `tests/`).

use pgc_circuit::eval_bits;

use crate::{CompileError, Options, compile_source};

/// Compiles `src`, feeds each input port the given integers (flattened, in port order, each
/// scalar at its own width) and returns every output's scalars, sign-extended per type.
fn run(src: &str, inputs: &[i64]) -> Vec<i64> {
    let c = compile_source(src, "test.c", &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut bits = Vec::new();
    let mut k = 0;
    for p in &c.interface.inputs {
        for (w, _) in scalar_widths(&p.ctype) {
            let v = inputs[k];
            k += 1;
            bits.extend((0..w).map(|i| (v >> i.min(63)) & 1 == 1));
        }
    }
    assert_eq!(k, inputs.len(), "input count");
    let out = eval_bits(&c.circuit, &bits);
    let mut vals = Vec::new();
    let mut pos = 0;
    for p in &c.interface.outputs {
        for (w, signed) in scalar_widths(&p.ctype) {
            let mut v: i64 = 0;
            for i in 0..w {
                if out[pos + i as usize] {
                    v |= 1 << i;
                }
            }
            if signed && w < 64 && out[pos + w as usize - 1] {
                v -= 1 << w;
            }
            pos += w as usize;
            vals.push(v);
        }
    }
    vals
}

fn scalar_widths(t: &pgc_circuit::CType) -> Vec<(u32, bool)> {
    use pgc_circuit::CType;
    match t {
        CType::Bool => vec![(1, false)],
        CType::Int { bits, signed, .. } => vec![(*bits, *signed)],
        CType::Float { bits } => vec![(*bits, false)],
        CType::Array { elem, len } => (0..*len).flat_map(|_| scalar_widths(elem)).collect(),
        CType::Struct { fields, .. } => fields.iter().flat_map(|(_, t)| scalar_widths(t)).collect(),
    }
}

fn compile_err(src: &str) -> CompileError {
    match compile_source(
        src,
        "test.c",
        &Options {
            unroll_limit: 1000,
            ..Options::default()
        },
    ) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn millionaires_listing_1() {
    let src = "void millionaires() { int INPUT_A_income; int INPUT_B_income; int OUTPUT_result = 0;
               if (INPUT_A_income > INPUT_B_income) OUTPUT_result = 1; }";
    assert_eq!(run(src, &[5000, 7000]), vec![0]);
    assert_eq!(run(src, &[9000, 7000]), vec![1]);
    assert_eq!(run(src, &[-5, -7]), vec![1]);
}

#[test]
fn parameters_and_pointer_outputs() {
    let src = "void mpc_main(int INPUT_A_x, unsigned char INPUT_B_y, int *OUTPUT_sum, long OUTPUT_arr[2]) {
                 *OUTPUT_sum = INPUT_A_x + INPUT_B_y; OUTPUT_arr[0] = INPUT_A_x; OUTPUT_arr[1] = -1; }";
    assert_eq!(run(src, &[10, 250]), vec![260, 10, -1]);
}

#[test]
fn secret_break_keeps_loop_counter_constant() {
    let src = "int mpc_main(int INPUT_A_a[8], int INPUT_B_x) { int i; for (i = 0; i < 8; i++) { if (INPUT_A_a[i] == INPUT_B_x) break; } return i; }";
    assert_eq!(run(src, &[5, 6, 7, 8, 9, 10, 11, 12, 9]), vec![4]);
    assert_eq!(run(src, &[5, 6, 7, 8, 9, 10, 11, 12, 99]), vec![8]);
}

/// Loop conditions and steps at the edges of their types, where the shortcut for constant
/// counters (`Lowerer::const_loop_cond`, `const_loop_step`) must give way to C's rules:
/// wrap-around of narrow and unsigned counters, negative values compared with unsigned ones.
#[test]
fn counted_loops_at_type_edges() {
    let src = "int mpc_main(int INPUT_A_x) { int n = 0;
                 for (unsigned char c = 250; c != 4; c++) n++;              /* 250..255, 0..3 */
                 for (signed char s = 120; s > 0 && n < 1000; s++) n += 2;  /* 120..127 */
                 for (int k = 5; k >= 0; k--) n += 3;                       /* 5..0 */
                 unsigned int u; for (u = 2; u != 4294967295u; u--) n += 5; /* 2, 1, 0 */
                 for (int k = -2; k < 2u; k++) n += 1000;                   /* -2 > 2u: none */
                 return n + INPUT_A_x; }";
    assert_eq!(run(src, &[1]), vec![1 + 10 + 2 * 8 + 3 * 6 + 5 * 3]);
}

#[test]
fn early_return_and_continue() {
    let src = "int f(int x) { if (x < 0) return -x; if (x > 100) return 100; return x; }
               void mpc_main(int INPUT_A_a[4], int *OUTPUT_s) { int s = 0;
                 for (int i = 0; i < 4; i++) { if (INPUT_A_a[i] == 7) continue; s += f(INPUT_A_a[i]); }
                 *OUTPUT_s = s; }";
    assert_eq!(run(src, &[-3, 7, 500, 4]), vec![3 + 100 + 4]);
}

#[test]
fn switch_with_fallthrough_and_default() {
    let src = "int mpc_main(int INPUT_A_x) { int r = 0; switch (INPUT_A_x) { case 1: r += 1; case 2: r += 10; break; case 3: r = 5; break; default: r = -1; } return r; }";
    assert_eq!(run(src, &[1]), vec![11]);
    assert_eq!(run(src, &[2]), vec![10]);
    assert_eq!(run(src, &[3]), vec![5]);
    assert_eq!(run(src, &[9]), vec![-1]);
    let nodefault = "int mpc_main(int INPUT_A_x) { int r = 7; switch (INPUT_A_x) { case 1: r = 1; break; } return r; }";
    assert_eq!(run(nodefault, &[1]), vec![1]);
    assert_eq!(run(nodefault, &[2]), vec![7]);
}

#[test]
fn secret_index_read_and_write() {
    let src = "void mpc_main(int INPUT_A_i, int INPUT_B_v, int OUTPUT_a[4], int *OUTPUT_r) {
                 int a[4] = {10, 20, 30, 40}; a[INPUT_A_i] = INPUT_B_v; *OUTPUT_r = a[(INPUT_A_i + 1) & 3];
                 for (int k = 0; k < 4; k++) OUTPUT_a[k] = a[k]; }";
    assert_eq!(run(src, &[2, 99]), vec![10, 20, 99, 40, 40]);
    assert_eq!(run(src, &[3, 5]), vec![10, 20, 30, 5, 10]);
    // Out of range: the write is dropped.
    assert_eq!(run(src, &[7, 5]), vec![10, 20, 30, 40, 10]);
}

#[test]
fn structs_and_conversions() {
    let src = "struct P { char c; unsigned short s; long l; };
               void mpc_main(struct P INPUT_A_p, int *OUTPUT_x, unsigned *OUTPUT_u, _Bool *OUTPUT_b) {
                 struct P q = INPUT_A_p; q.l += q.c; *OUTPUT_x = (int)q.l * 2; *OUTPUT_u = (unsigned char)q.c + q.s;
                 *OUTPUT_b = q.s; }";
    assert_eq!(run(src, &[-2, 65535, 100]), vec![196, 254 + 65535, 1]);
}

#[test]
fn short_circuit_side_effects() {
    let src = "int mpc_main(int INPUT_A_x) { int n = 0; if (INPUT_A_x > 0 && (n = 5)) n++; int m = (INPUT_A_x || n++); return n * 10 + m; }";
    assert_eq!(run(src, &[1]), vec![61]);
    assert_eq!(run(src, &[0]), vec![10]);
}

#[test]
fn errors_have_positions() {
    let e = compile_err("void mpc_main(int INPUT_A_x, int *OUTPUT_y) {\n  long double f = 1;\n}");
    assert_eq!(e.pos().map(|p| (p.line, p.col)), Some((2, 3)), "{e}");
    let e = compile_err(
        "void mpc_main(int INPUT_A_x, int *OUTPUT_y) {\n  while (INPUT_A_x > 0) INPUT_A_x--;\n  *OUTPUT_y = 1;\n}",
    );
    assert_eq!(e.pos().map(|p| p.line), Some(2), "{e}");
    let e = compile_err(
        "int f(int x) { return f(x); }\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_y) { *OUTPUT_y = f(1); }",
    );
    assert!(e.to_string().contains("recursive"), "{e}");
    let e = compile_err("void mpc_main(int INPUT_A_x, int *OUTPUT_y) {\n  *OUTPUT_y = 1\n}");
    assert_eq!(e.pos().map(|p| p.line), Some(3), "{e}");
}

fn and_count(src: &str) -> u64 {
    compile_source(src, "q.c", &Options::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .circuit
        .and_count()
}

/// The AND counts the issue sets (the Bristol Fashion circuits' counts for 64 bits).
#[test]
fn building_block_and_counts() {
    let op = |t: &str, o: &str| {
        and_count(&format!(
            "void mpc_main({t} INPUT_A_a, {t} INPUT_B_b, {t} *OUTPUT_c) {{ *OUTPUT_c = INPUT_A_a {o} INPUT_B_b; }}"
        ))
    };
    assert_eq!(op("int", "+"), 31);
    assert_eq!(op("int", "<"), 32);
    assert_eq!(op("int", "=="), 31);
    assert_eq!(op("int", "*"), 993);
    assert!(op("long", "*") <= 4033, "{}", op("long", "*"));
    assert!(
        op("unsigned long", "/") <= 4285,
        "{}",
        op("unsigned long", "/")
    );
}

#[test]
fn sizeof_and_two_dimensional_arrays() {
    let src = "int sum(int m[][3], int rows) { int s = 0; for (int r = 0; r < rows; r++) for (int c = 0; c < 3; c++) s += m[r][c]; return s; }
               void mpc_main(int INPUT_A_m[2][3], int INPUT_B_i, int *OUTPUT_s, int *OUTPUT_z, int *OUTPUT_e) {
                 *OUTPUT_s = sum(INPUT_A_m, 2); *OUTPUT_z = sizeof INPUT_A_m[0] + sizeof(long);
                 *OUTPUT_e = INPUT_A_m[INPUT_B_i & 1][INPUT_B_i >> 1]; }";
    assert_eq!(run(src, &[1, 2, 3, 4, 5, 6, 4]), vec![21, 20, 3]);
    assert_eq!(run(src, &[1, 2, 3, 4, 5, 6, 5]), vec![21, 20, 6]);
}

#[test]
fn deeply_nested_expressions_do_not_overflow_the_stack() {
    let sum = vec!["INPUT_A_x"; 20_000].join(" + ");
    let src = format!("int mpc_main(int INPUT_A_x) {{ return {sum}; }}");
    assert_eq!(run(&src, &[3]), vec![60_000]);
}

#[test]
fn huge_arrays_are_refused_not_allocated() {
    let e = compile_err(
        "void mpc_main(int INPUT_A_x, int *OUTPUT_y) {\n  int a[1 << 30];\n  *OUTPUT_y = a[0];\n}",
    );
    assert_eq!(e.pos().map(|p| p.line), Some(2), "{e}");
    assert!(e.to_string().contains("too large"), "{e}");
}

#[test]
fn large_arrays_are_stored_packed_and_read_back_exactly() {
    // 4096 ints are 131,072 bits: stored packed (crate::bits). Cells hold constants, runs
    // of wires (products of a secret), a secretly indexed write (multiplexers, pooled)
    // and reads at constant and secret indices.
    let src = "int mpc_main(int INPUT_A_x, int INPUT_B_y) {
  int t[4096];
  for (int i = 0; i < 4096; i++)
    t[i] = i < 2048 ? i : i * INPUT_A_x + (i & 7);
  t[INPUT_B_y & 15] = 77;
  return t[5] + t[INPUT_B_y & 15] + t[4095] + t[100] + t[3000 + (INPUT_B_y & 1)];
}";
    let expect = |x: i64, y: i64| {
        let mut t: Vec<i64> = (0..4096)
            .map(|i| if i < 2048 { i } else { i * x + (i & 7) })
            .collect();
        t[(y & 15) as usize] = 77;
        t[5] + t[(y & 15) as usize] + t[4095] + t[100] + t[3000 + (y & 1) as usize]
    };
    for (x, y) in [(3, 5), (0, 0), (-7, 14), (1000, 3)] {
        assert_eq!(run(src, &[x, y]), vec![expect(x, y)], "x = {x}, y = {y}");
    }
}

#[test]
fn huge_ports_are_refused_by_name() {
    let e = compile_err(
        "void mpc_main(int INPUT_A_x[1 << 23], int *OUTPUT_y) {\n  *OUTPUT_y = INPUT_A_x[0];\n}",
    );
    assert!(e.to_string().contains("INPUT_A_x"), "{e}");
    assert!(e.to_string().contains("too large"), "{e}");
}

#[test]
fn huge_structs_are_refused_not_copied() {
    let e = compile_err(
        "struct big { int t[4096][4096]; };\nint mpc_main(int INPUT_A_x) {\n  struct big a, b;\n  a = b;\n  return a.t[0][0] + INPUT_A_x;\n}",
    );
    assert!(e.to_string().contains("struct `big`"), "{e}");
    assert!(e.to_string().contains("too large"), "{e}");
}

/// Plain `char` ports are `char`, through typedefs, `const`, arrays and struct fields;
/// `signed char`, `unsigned char` and the `stdint.h` names are `int8_t`/`uint8_t`; and a
/// `char` computes as `signed char` does (pointers between them, conversions, sign).
#[test]
fn plain_char_ports_are_char_and_compute_as_signed_char() {
    let src = "#include <stdint.h>
               typedef char letter;
               struct rec { char tag; unsigned char raw[2]; };
               void mpc_main(char INPUT_A_c, const char INPUT_A_s[3], letter INPUT_A_l,
                             signed char INPUT_B_sc, unsigned char INPUT_B_uc, int8_t INPUT_B_i,
                             uint8_t INPUT_B_u, struct rec INPUT_B_r,
                             char *OUTPUT_neg, int *OUTPUT_wide, signed char *OUTPUT_same) {
                 const signed char *p = (const signed char *)INPUT_A_s;
                 *OUTPUT_neg = -INPUT_A_c;
                 *OUTPUT_wide = INPUT_A_c + p[1] + INPUT_A_l;
                 *OUTPUT_same = (char)INPUT_B_uc == INPUT_B_sc;
               }";
    let c = compile_source(src, "test.c", &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = c
        .interface
        .inputs
        .iter()
        .map(|p| p.ctype.full_name())
        .chain(c.interface.outputs.iter().map(|p| p.ctype.full_name()))
        .collect();
    assert_eq!(
        names,
        [
            "char",
            "char[3]",
            "char",
            "int8_t",
            "uint8_t",
            "int8_t",
            "uint8_t",
            "struct rec { char tag; uint8_t raw[2]; }",
            "char",
            "int32_t",
            "int8_t",
        ]
    );
    assert_eq!(
        run(src, &[-128, 0, -5, 0, 3, -128, 128, 0, 0, 0, 0, 0]),
        vec![-128, -128 - 5 + 3, 1]
    );
}

/// What C does not allow with a string literal, or gcc would store differently than
/// written, is refused naming the literal; a write into one also when the pointer was
/// passed to a function (compiled compact too, where such a call is inlined to be checked).
#[test]
fn string_literal_mistakes_are_refused_where_they_are() {
    let body = |stmt: &str| {
        format!("void mpc_main(int INPUT_A_x, int *OUTPUT_r) {{ {stmt} *OUTPUT_r = INPUT_A_x; }}")
    };
    for (stmt, says) in [
        (
            r#"char s[2] = "abc";"#,
            "this string has 3 characters, more than the array's 2",
        ),
        (
            r#"int s[4] = "abc";"#,
            "initializes only an array of char, not int[4]",
        ),
        (r#"int s = "abc";"#, "initializes only an array of char"),
        (r#"char s[4] = L"abc";"#, "wide string literals (L\"…\")"),
        (
            r#"char s[4] = "\x100";"#,
            "the hex escape \\x100 is larger than a byte",
        ),
        (
            r#"char *p = "abc"; p[1] = 'x';"#,
            "this writes into a string literal",
        ),
    ] {
        let e = compile_err(&body(stmt));
        let text = e.to_string();
        assert!(text.contains(says), "{stmt}: {text}");
        assert_eq!(e.pos().map(|p| p.line), Some(1), "{stmt}: {text}");
    }
    let through_a_call = "void f(char *s) { s[1] = 'q'; }\n\
        void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n\
        { for (int i = 0; i < 3; i++) f(\"abc\"); *OUTPUT_r = INPUT_A_x; }\n";
    for compact in [false, true] {
        let opts = Options::default();
        let e = if compact {
            crate::compile_compact_source(through_a_call, "t.c", &opts).map(|_| ())
        } else {
            compile_source(through_a_call, "t.c", &opts).map(|_| ())
        }
        .expect_err("a write into a literal");
        let text = e.to_string();
        assert!(
            text.starts_with("t.c:1:19:") && text.contains("writes into a string literal"),
            "compact {compact}: {text}"
        );
    }
}

/// A literal read in a loop is one object: `sizeof` is its length with the zero, and its
/// bytes are constants (no gate reads them at constant indices).
#[test]
fn string_literals_are_constant_arrays() {
    let src = r#"
int mpc_main(int INPUT_A_i)
{
    int n = 0;
    for (int k = 0; k < 4; k++)
        n += "pgc!"[k] + (int)sizeof("pgc!");
    return n + "\x01\x02\x03\x04"[INPUT_A_i & 3];
}
"#;
    let want = b"pgc!".iter().map(|&b| b as i64 + 5).sum::<i64>();
    for i in 0..4 {
        assert_eq!(run(src, &[i]), vec![want + i + 1], "i = {i}");
    }
}

/// A union port is its bytes (`uint8_t[sizeof]`), little-endian as the union's members
/// read them.
#[test]
fn union_ports_are_their_bytes() {
    let src = "union U { unsigned u; unsigned char b[4]; float f; };
               void mpc_main(union U INPUT_A_x, union U *OUTPUT_y) {
                 OUTPUT_y->b[0] = INPUT_A_x.b[3]; OUTPUT_y->u += INPUT_A_x.u; }";
    assert_eq!(run(src, &[1, 2, 3, 4]), vec![5, 2, 3, 4]);
    let c = compile_source(src, "u.c", &Options::default()).unwrap();
    assert_eq!(
        c.interface.inputs[0].ctype,
        pgc_circuit::CType::Array {
            elem: Box::new(pgc_circuit::CType::int(8, false)),
            len: 4
        }
    );
}
