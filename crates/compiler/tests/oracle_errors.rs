//! Programs outside the C subset, and syntax errors, must be rejected with a clear message at
//! the exact `file:line:col` (1-based, columns in bytes as gcc counts them without tabs):
//! never a wrong circuit, never a panic.

mod common;

use pgc_compiler::{CompileError, Options, compile_file, compile_source};

/// One rejected program and where (and with which words) it must be rejected.
struct Rejected<'a> {
    name: &'a str,
    source: &'a str,
    /// Acceptable (line, column) positions: usually one.
    at: &'a [(u32, u32)],
    /// Words the message must contain (case-insensitive).
    says: &'a [&'a str],
    unroll_limit: Option<u64>,
}

/// The source with line numbers and a caret under `col` of `line`, for failure messages.
fn show(source: &str, line: u32, col: u32) -> String {
    let mut out = String::new();
    for (i, text) in source.lines().enumerate() {
        out.push_str(&format!("{:>3} | {text}\n", i + 1));
        if i as u32 + 1 == line {
            out.push_str(&format!(
                "    | {}^\n",
                " ".repeat(col.saturating_sub(1) as usize)
            ));
        }
    }
    out
}

fn check_rejected(r: &Rejected) {
    let file = format!("{}.c", r.name);
    let opts = Options {
        unroll_limit: r.unroll_limit.unwrap_or(Options::default().unroll_limit),
        ..Options::default()
    };
    let err = match compile_source(r.source, &file, &opts) {
        Ok(c) => panic!(
            "{file}: pgc compiled a program it must reject ({} AND gates); expected an error at \
             {:?} saying {:?}:\n{}",
            c.stats.and_gates_final,
            r.at,
            r.says,
            show(r.source, r.at[0].0, r.at[0].1)
        ),
        Err(e) => e,
    };
    check_error(&file, r.source, &err, r.at, r.says, |f| f == file);
}

fn check_error(
    file: &str,
    source: &str,
    err: &CompileError,
    at: &[(u32, u32)],
    says: &[&str],
    file_ok: impl Fn(&str) -> bool,
) {
    let msg = err.to_string();
    let expected = at
        .iter()
        .map(|(l, c)| format!("{l}:{c}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let Some(pos) = err.pos() else {
        panic!(
            "{file}: the error has no position (expected {expected}):\n  {msg}\n{}",
            show(source, at[0].0, at[0].1)
        );
    };
    assert!(
        file_ok(&pos.file),
        "{file}: the error names file {:?}:\n  {msg}",
        pos.file
    );
    assert!(
        at.contains(&(pos.line, pos.col)),
        "{file}: error at {}:{} but expected {expected}:\n  {msg}\nexpected:\n{}got:\n{}",
        pos.line,
        pos.col,
        show(source, at[0].0, at[0].1),
        show(source, pos.line, pos.col)
    );
    assert!(
        msg.starts_with(&format!("{}:{}:{}: ", pos.file, pos.line, pos.col)),
        "{file}: the message does not start with file:line:col: {msg}"
    );
    for word in says {
        assert!(
            msg.to_lowercase().contains(&word.to_lowercase()),
            "{file}: the message should mention {word:?}: {msg}"
        );
    }
}

#[test]
fn unsupported_floating_point_is_rejected_where_it_is_written() {
    // (name, source, where, words of the message)
    type Refused<'a> = (&'a str, &'a str, (u32, u32), &'a [&'a str]);
    let cases: [Refused; 11] = [
        (
            "long_double_local",
            "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    long double f = 1.5;\n    *OUTPUT_r = INPUT_A_x;\n}\n",
            (3, 5),
            &["long double", "x87 80-bit"],
        ),
        (
            "long_double_param",
            "void mpc_main(double long INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = 1;\n}\n",
            (1, 15),
            &["long double"],
        ),
        (
            "long_double_constant",
            "void mpc_main(double INPUT_A_x, double *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_x * 1.5L;\n}\n",
            (3, 29),
            &["long double", "suffix"],
        ),
        (
            "float128",
            "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    _Float128 q = 1;\n    *OUTPUT_r = INPUT_A_x;\n}\n",
            (3, 5),
            &["_Float128", "not supported"],
        ),
        (
            "modulo_of_double",
            "void mpc_main(double INPUT_A_x, int INPUT_B_y, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_x % INPUT_B_y;\n}\n",
            (3, 27),
            &["invalid operands", "%", "double"],
        ),
        (
            "bitwise_and_of_float",
            "void mpc_main(float INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = 1 & INPUT_A_x;\n}\n",
            (3, 19),
            &["invalid operands", "&", "float"],
        ),
        (
            "shift_by_double",
            "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    int y = INPUT_A_x;\n    y <<= 1.0;\n    *OUTPUT_r = y;\n}\n",
            (4, 7),
            &["invalid operands", "<<"],
        ),
        (
            "complement_of_double",
            "void mpc_main(double INPUT_A_x, double *OUTPUT_r)\n{\n    *OUTPUT_r = ~INPUT_A_x;\n}\n",
            (3, 17),
            &["~", "integer"],
        ),
        (
            "double_subscript",
            "void mpc_main(int INPUT_A_a[4], double INPUT_B_i, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_a[INPUT_B_i];\n}\n",
            (3, 27),
            &["double", "integer"],
        ),
        (
            "switch_on_double",
            "void mpc_main(double INPUT_A_x, int *OUTPUT_r)\n{\n    switch (INPUT_A_x) { default: *OUTPUT_r = 1; }\n}\n",
            (3, 13),
            &["switch", "not an integer"],
        ),
        (
            "sin_is_not_built_in",
            "#include <math.h>\nvoid mpc_main(double INPUT_A_x, double *OUTPUT_r)\n{\n    *OUTPUT_r = sin(INPUT_A_x);\n}\n",
            (4, 17),
            &["`sin`", "not defined", "sqrt", "nearbyint"],
        ),
    ];
    for (name, source, at, says) in cases {
        check_rejected(&Rejected {
            name,
            source,
            at: &[at],
            says,
            unroll_limit: None,
        });
    }
}

#[test]
fn pointer_arithmetic_on_a_secret_offset_is_rejected() {
    check_rejected(&Rejected {
        name: "ptr_plus_secret",
        source: "void mpc_main(int INPUT_A_a[4], int INPUT_B_i, int *OUTPUT_r)\n{\n    int *p = INPUT_A_a;\n    *OUTPUT_r = *(p + INPUT_B_i);\n}\n",
        at: &[(4, 21)],
        says: &["pointer arithmetic", "secret"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "ptr_plus_assign_secret",
        source: "void mpc_main(int INPUT_A_a[4], int INPUT_B_i, int *OUTPUT_r)\n{\n    int *p = INPUT_A_a;\n    p += INPUT_B_i;\n    *OUTPUT_r = *p;\n}\n",
        at: &[(4, 7)],
        says: &["pointer arithmetic", "secret"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "address_of_secret_element",
        source: "void mpc_main(int INPUT_A_a[4], int INPUT_B_i, int *OUTPUT_r)\n{\n    int *p = &INPUT_A_a[INPUT_B_i & 3];\n    *OUTPUT_r = *p;\n}\n",
        at: &[(3, 14)],
        says: &["secret"],
        unroll_limit: None,
    });
}

#[test]
fn public_pointer_arithmetic_is_fine() {
    let src = "void mpc_main(int INPUT_A_a[4], int *OUTPUT_r)\n{\n    int *p = INPUT_A_a;\n    p += 2;\n    *OUTPUT_r = *p + p[1];\n}\n";
    compile_source(src, "ptr_public.c", &Options::default())
        .unwrap_or_else(|e| panic!("pointer arithmetic by a constant must compile: {e}"));
}

#[test]
fn loops_without_a_compile_time_bound_are_rejected_at_the_loop() {
    check_rejected(&Rejected {
        name: "while_secret",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    int n = 0;\n    while (INPUT_A_x) {\n        INPUT_A_x = INPUT_A_x & (INPUT_A_x - 1);\n        n++;\n    }\n    *OUTPUT_r = n;\n}\n",
        at: &[(4, 5)],
        says: &["16", "--unroll-limit"],
        unroll_limit: Some(16),
    });
    check_rejected(&Rejected {
        name: "for_secret_bound",
        source: "void mpc_main(int INPUT_A_n, int *OUTPUT_r)\n{\n    int s = 0;\n    for (int i = 0; i < INPUT_A_n; i++)\n        s += i;\n    *OUTPUT_r = s;\n}\n",
        at: &[(4, 5)],
        says: &["--unroll-limit"],
        unroll_limit: Some(100),
    });
    check_rejected(&Rejected {
        name: "do_secret_bound",
        source: "void mpc_main(unsigned INPUT_A_x, int *OUTPUT_r)\n{\n    int n = 0;\n    do {\n        n++;\n    } while (n < INPUT_A_x);\n    *OUTPUT_r = n;\n}\n",
        at: &[(4, 5)],
        says: &["--unroll-limit"],
        unroll_limit: Some(50),
    });
    // A public loop longer than the limit is an error too, at the loop.
    check_rejected(&Rejected {
        name: "public_over_limit",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    int s = 0;\n    for (int i = 0; i < 100; i++)\n        s += INPUT_A_x;\n    *OUTPUT_r = s;\n}\n",
        at: &[(4, 5)],
        says: &["10", "--unroll-limit"],
        unroll_limit: Some(10),
    });
}

#[test]
fn recursion_is_rejected_at_the_recursive_call() {
    check_rejected(&Rejected {
        name: "recursion",
        source: "int fact(int n)\n{\n    return n <= 1 ? 1 : n * fact(n - 1);\n}\n\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = fact(INPUT_A_x);\n}\n",
        at: &[(3, 29)],
        says: &["recurs", "fact"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "mutual_recursion",
        source: "int odd(int n);\nint even(int n) { if (n == 0) return 1; return odd(n - 1); }\nint odd(int n) { if (n == 0) return 0; return even(n - 1); }\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = even(3);\n}\n",
        at: &[(3, 47)],
        says: &["recurs", "even"],
        unroll_limit: None,
    });
}

#[test]
fn io_and_library_calls_are_rejected_at_the_call() {
    // printf is the I/O call; its format string is not the construct to blame.
    check_rejected(&Rejected {
        name: "printf",
        source: "#include <stdio.h>\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_x;\n    printf(\"%d\\n\", INPUT_A_x);\n}\n",
        at: &[(5, 5)],
        says: &["printf"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "putchar",
        source: "int putchar(int c);\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_x;\n    putchar(INPUT_A_x);\n}\n",
        at: &[(5, 5)],
        says: &["putchar"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "malloc",
        source: "#include <stdlib.h>\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    int *p = malloc(4);\n    *OUTPUT_r = INPUT_A_x;\n}\n",
        at: &[(4, 14)],
        says: &["malloc"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "asm",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    __asm__(\"nop\");\n    *OUTPUT_r = INPUT_A_x;\n}\n",
        at: &[(3, 5)],
        says: &["assembly"],
        unroll_limit: None,
    });
}

#[test]
fn syntax_errors_point_at_the_offending_token() {
    // The missing `;` is noticed at the next token, as gcc reports it.
    check_rejected(&Rejected {
        name: "missing_semicolon",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    int y = INPUT_A_x + 1\n    int z = 2;\n    *OUTPUT_r = y + z;\n}\n",
        at: &[(4, 5)],
        says: &["syntax"],
        unroll_limit: None,
    });
    // Here `1 *OUTPUT_r` still parses; the `=` cannot.
    check_rejected(&Rejected {
        name: "missing_semicolon_before_star",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    int y = INPUT_A_x + 1\n    *OUTPUT_r = y;\n}\n",
        at: &[(4, 15)],
        says: &["syntax"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "stray_character",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_x @ 2;\n}\n",
        at: &[(3, 27)],
        says: &["syntax"],
        unroll_limit: None,
    });
}

#[test]
fn other_constructs_outside_the_subset() {
    check_rejected(&Rejected {
        name: "undeclared",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_x + missing;\n}\n",
        at: &[(3, 29)],
        says: &["missing"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "goto",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = 0;\n    if (INPUT_A_x) goto out;\n    *OUTPUT_r = 1;\nout:\n    return;\n}\n",
        at: &[(4, 20)],
        says: &["goto"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "wide_string_literal",
        source: "#include <wchar.h>\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    const wchar_t *s = L\"abc\";\n    *OUTPUT_r = s[INPUT_A_x & 1];\n}\n",
        at: &[(4, 24)],
        says: &["wide string literals"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "secret_array_size",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    int a[INPUT_A_x];\n    *OUTPUT_r = 0;\n}\n",
        at: &[(3, 11)],
        says: &["secret"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "bad_io_name",
        source: "void mpc_main(int INPUT_C_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_C_x;\n}\n",
        at: &[(1, 15)],
        says: &["INPUT_C_x"],
        unroll_limit: None,
    });
}

#[test]
fn positions_survive_the_preprocessor() {
    // Comments, multi-line macros and CRLF line ends before the error.
    check_rejected(&Rejected {
        name: "after_comments_and_macros",
        source: "/* a comment\n   spanning\n   lines */\n#define TWICE(x) \\\n    ((x) + (x))\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = TWICE(INPUT_A_x);   /* fine */\n    *OUTPUT_r += undefined_thing;\n}\n",
        at: &[(9, 18)],
        says: &["undefined_thing"],
        unroll_limit: None,
    });
    check_rejected(&Rejected {
        name: "crlf",
        source: "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\r\n{\r\n    *OUTPUT_r = INPUT_A_x;\r\n    *OUTPUT_r += missing;\r\n}\r\n",
        at: &[(4, 18)],
        says: &["missing"],
        unroll_limit: None,
    });
    // A macro expanded earlier on the line must not shift the column of what follows.
    check_rejected(&Rejected {
        name: "after_macro_on_the_same_line",
        source: "#define TWICE(x) ((x) + (x))\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = TWICE(INPUT_A_x) + missing;\n}\n",
        at: &[(4, 36)],
        says: &["missing"],
        unroll_limit: None,
    });
    // An error inside a macro's expansion: at the macro's use, or (as gcc) in its definition.
    check_rejected(&Rejected {
        name: "inside_macro",
        source: "#define SCALE(x) ((long double)(x))\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = SCALE(INPUT_A_x);\n}\n",
        at: &[(4, 17), (1, 20)],
        says: &["long double"],
        unroll_limit: None,
    });
}

#[test]
fn errors_in_an_included_header_name_the_header() {
    let dir = common::TempDir::new("errors");
    std::fs::create_dir_all(dir.path().join("inc")).unwrap();
    let header = "/* helper header */\n#define LEN 4\n\nstatic long double scale(int x)\n{\n    return x;\n}\n";
    std::fs::write(dir.path().join("inc/bad.h"), header).unwrap();
    let main = "#include \"inc/bad.h\"\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = scale(INPUT_A_x);\n}\n";
    let path = dir.path().join("uses_header.c");
    std::fs::write(&path, main).unwrap();
    let Err(err) = compile_file(&path, &Options::default()) else {
        panic!("a long double in a used header function must be rejected");
    };
    check_error(
        "inc/bad.h",
        header,
        &err,
        &[(4, 8)],
        &["long double"],
        |f| f.ends_with("inc/bad.h"),
    );
}

#[test]
fn entry_selection_errors_name_the_problem() {
    let two = "int f(int x) { return x; }\nint g(int x) { return x; }\n";
    let Err(err) = compile_source(two, "two.c", &Options::default()) else {
        panic!("no mpc_main and two functions must be an error");
    };
    let msg = err.to_string();
    assert!(msg.contains("--entry") && msg.contains("mpc_main"), "{msg}");
    let opts = Options {
        entry: Some("nosuch".into()),
        ..Options::default()
    };
    let Err(err) = compile_source(two, "two.c", &opts) else {
        panic!("--entry nosuch must be an error");
    };
    let msg = err.to_string();
    assert!(msg.contains("nosuch"), "{msg}");
}

/// Bit-fields and unions that gcc refuses (or that pgc cannot compile exactly) are errors at
/// the declaration or expression that is wrong.
#[test]
fn bad_bit_fields_and_unions_are_rejected_where_they_are_written() {
    // (name, source, where, words of the message)
    type Refused<'a> = (&'a str, &'a str, (u32, u32), &'a [&'a str]);
    let cases: [Refused; 13] = [
        (
            "bit_field_wider_than_its_type",
            "struct S { int ok : 3;\n  int x : 33; };\nint mpc_main(int INPUT_A_x) { struct S s = {INPUT_A_x}; return s.ok; }\n",
            (2, 11),
            &["width", "`x`", "exceeds", "32 bits"],
        ),
        (
            "bit_field_of_float",
            "struct S { float f : 3; };\nint mpc_main(int INPUT_A_x) { struct S s; return INPUT_A_x; }\n",
            (1, 18),
            &["bit-field `f`", "float", "integer type"],
        ),
        (
            "bit_field_of_array",
            "struct S { int a[2] : 3; };\nint mpc_main(int INPUT_A_x) { return INPUT_A_x; }\n",
            (1, 16),
            &["bit-field `a`", "integer type"],
        ),
        (
            "named_bit_field_of_zero_width",
            "struct S { unsigned z : 0; };\nint mpc_main(int INPUT_A_x) { return INPUT_A_x; }\n",
            (1, 25),
            &["`z`", "zero width"],
        ),
        (
            "bit_field_of_negative_width",
            "struct S { unsigned n : -1; };\nint mpc_main(int INPUT_A_x) { return INPUT_A_x; }\n",
            (1, 25),
            &["`n`", "negative width"],
        ),
        (
            "address_of_bit_field",
            "struct S { unsigned b : 3; };\nint mpc_main(int INPUT_A_x) {\n  struct S s = {INPUT_A_x};\n  unsigned *p = &s.b;\n  return *p; }\n",
            (4, 17),
            &["address", "bit-field `b`"],
        ),
        (
            "sizeof_bit_field",
            "struct S { unsigned b : 3; };\nint mpc_main(int INPUT_A_x) {\n  struct S s = {INPUT_A_x};\n  return sizeof s.b; }\n",
            (4, 10),
            &["sizeof", "bit-field `b`"],
        ),
        (
            "union_of_bool",
            "union U { int i;\n  _Bool b; };\nint mpc_main(int INPUT_A_x) { union U u = {INPUT_A_x}; return u.i; }\n",
            (2, 9),
            &["union member `b`", "_Bool", "not supported"],
        ),
        (
            "union_of_padded_struct",
            "struct P { char c; int i; };\nunion U { long l; struct P p; };\nint mpc_main(int INPUT_A_x) { union U u; u.l = INPUT_A_x; return u.p.i; }\n",
            (2, 28),
            &["union member `p`", "struct P", "padding"],
        ),
        (
            "anonymous_union_member",
            "struct S { union { int a; float f; }; int c; };\nint mpc_main(int INPUT_A_x) { struct S s; return INPUT_A_x; }\n",
            (1, 12),
            &["anonymous", "not supported"],
        ),
        (
            "union_named_as_struct",
            "union U { int a; };\nint mpc_main(int INPUT_A_x) { struct U s; return INPUT_A_x; }\n",
            (2, 31),
            &["`U`", "union tag", "not a struct"],
        ),
        (
            "too_many_union_initializers",
            "union U { int a; short s; };\nint mpc_main(int INPUT_A_x) { union U u = { 1, INPUT_A_x }; return u.a; }\n",
            (2, 48),
            &["too many initializers"],
        ),
        (
            "bit_field_struct_as_input",
            "struct S { unsigned b : 3; };\nint mpc_main(struct S INPUT_A_s) { return INPUT_A_s.b; }\n",
            (2, 14),
            &["INPUT_A_s", "struct S"],
        ),
    ];
    for (name, source, at, says) in cases {
        check_rejected(&Rejected {
            name,
            source,
            at: &[at],
            says,
            unroll_limit: None,
        });
    }
}
