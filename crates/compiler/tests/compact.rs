//! Compact compilation (functions stored once per argument shape, expanded while
//! garbling) against the fully unrolled compilation of the same program: identical
//! outputs on random inputs, for the examples, focused programs and random programs.
//!
//! The random-program tests take `PGC_RANDPROG_BASE=S` (first seed, default 0) and
//! `PGC_RANDPROG_COUNT=N` (programs per test), or `PGC_RANDPROG_SEEDS=a,b,c`, as
//! `tests/random_programs.rs` does, for campaigns at fresh seeds.

mod common;

use pgc_circuit::compact::CompactSource;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::{Circuit, GateSource};
use pgc_compiler::randprog::{self, Config};
use pgc_compiler::{Options, compile_compact_source, compile_source};

struct Rng(u64);

impl Rng {
    fn bit(&mut self) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 & 1 == 1
    }
}

/// Compiles `source` both ways and compares outputs on `runs` random inputs (plus all-zero
/// and all-one inputs). Returns (templates, calls reused) of the compact form.
fn same_outputs(name: &str, source: &str, opts: &Options, runs: usize, seed: u64) -> (usize, u64) {
    let flat = compile_source(source, name, opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    let compact =
        compile_compact_source(source, name, opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        flat.interface, compact.interface,
        "{name}: interfaces differ"
    );
    let templates = compact.circuit.templates.len();
    let reused = compact.calls_reused;
    let expanded = compact.circuit.flatten().expect("expands");
    let source_form = CompactSource::new(compact.circuit).expect("valid compact circuit");
    assert_eq!(
        source_form.layout().input_widths,
        flat.circuit.layout.input_widths,
        "{name}"
    );
    assert_eq!(
        source_form.and_count(),
        expanded.and_count(),
        "{name}: counted and expanded AND gates differ"
    );
    let n_in = flat.circuit.layout.num_input_wires() as usize;
    let mut rng = Rng(seed | 1);
    for run in 0..runs + 2 {
        let bits: Vec<bool> = match run {
            0 => vec![false; n_in],
            1 => vec![true; n_in],
            _ => (0..n_in).map(|_| rng.bit()).collect(),
        };
        let want = eval_bits(&flat.circuit, &bits);
        assert_eq!(
            eval_bits(&source_form, &bits),
            want,
            "{name}: compact and unrolled outputs differ (run {run})"
        );
        assert_eq!(
            eval_bits(&expanded, &bits),
            want,
            "{name}: flatten() differs"
        );
    }
    (templates, reused)
}

#[test]
fn examples_compact_equals_unrolled() {
    let dir = common::repo_root().join("examples");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    entries.sort();
    assert!(entries.len() >= 5);
    for path in entries {
        let source = std::fs::read_to_string(&path).unwrap();
        let opts = Options {
            include_dirs: vec![dir.clone()],
            ..Options::default()
        };
        same_outputs(&path.display().to_string(), &source, &opts, 4, 7);
    }
}

#[test]
fn repeated_calls_share_one_template() {
    let src = r#"
        #include <stdint.h>
        static uint16_t cell(uint16_t up, uint16_t left, uint16_t diag, uint8_t a, uint8_t b) {
            uint16_t s = diag + (a != b);
            uint16_t m = up + 1 < left + 1 ? up + 1 : left + 1;
            return m < s ? m : s;
        }
        void mpc_main(uint8_t INPUT_A_x[8], uint8_t INPUT_B_y[8], uint16_t *OUTPUT_d) {
            uint16_t row[9];
            for (int j = 0; j <= 8; j++) row[j] = j;
            for (int i = 1; i <= 8; i++) {
                uint16_t diag = row[0];
                row[0] = i;
                for (int j = 1; j <= 8; j++) {
                    uint16_t up = row[j];
                    row[j] = cell(up, row[j - 1], diag, INPUT_A_x[i - 1], INPUT_B_y[j - 1]);
                    diag = up;
                }
            }
            *OUTPUT_d = row[8];
        }
    "#;
    let (templates, reused) = same_outputs("edit", src, &Options::default(), 20, 3);
    // Row 1 sees constant `up` and `diag` that change with j, column 1 a constant `left`
    // and `diag` that change with i: one shape each, while the 7×7 inner cells share
    // templates per class of bounds (upper bounds, and lower bounds rounded down to a power
    // of two: 23 templates and 41 reuses by upper bounds only, 37 and 27 with lower bounds,
    // for 4.5 % fewer ANDs).
    assert!(templates <= 40, "{templates} templates");
    assert!(reused >= 24, "only {reused} calls reused a template");
}

#[test]
fn pointers_conditions_structs_and_nesting() {
    let src = r#"
        #include <stdint.h>
        struct pair { uint32_t lo, hi; };
        static uint32_t sq(uint32_t x) { return x * x; }
        static struct pair split(uint32_t v) { struct pair p; p.lo = v & 0xffff; p.hi = sq(v >> 16); return p; }
        static void bump(uint32_t *a, int n, uint32_t by) { for (int i = 0; i < n; i++) a[i] += by + sq(a[i]); }
        static void swap(uint32_t *x, uint32_t *y) { uint32_t t = *x; *x = *y; *y = t; }
        static uint32_t readonly_sum(const uint32_t *a, int n) { uint32_t s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
        void mpc_main(uint32_t INPUT_A_a[4], uint32_t INPUT_B_b[4], uint32_t *OUTPUT_r, uint32_t OUTPUT_v[4]) {
            uint32_t v[4];
            for (int i = 0; i < 4; i++) v[i] = INPUT_A_a[i] ^ INPUT_B_b[i];
            for (int k = 0; k < 3; k++) {
                if (v[k] > INPUT_B_b[k]) bump(v, 4, k);   /* secret condition */
                else bump(v + 1, 2, 7);
                swap(&v[k], &v[k + 1]);
            }
            swap(&v[0], &v[0]);                           /* aliasing: inlined */
            struct pair p = split(v[2]);
            *OUTPUT_r = p.lo + p.hi + readonly_sum(v, 4) + readonly_sum(INPUT_A_a, 4);
            for (int i = 0; i < 4; i++) OUTPUT_v[i] = v[i];
        }
    "#;
    let (templates, reused) = same_outputs("mixed", src, &Options::default(), 30, 5);
    assert!(templates >= 3, "{templates}");
    assert!(reused >= 1, "{reused}");
}

/// Unions, bit-fields and compound literals in functions stored once (by value, returned,
/// as arguments) and in loop bodies written inline.
#[test]
fn unions_bit_fields_and_compound_literals_compact_equals_unrolled() {
    let src = r#"
        union V { int i; unsigned char b[4]; float f; };
        struct BF { unsigned a : 3; int b : 5; unsigned long e : 40; };
        static int mix(union V v, struct BF s) { v.b[1] ^= s.a; s.b += v.i; return v.i + s.b + (int)s.e; }
        static struct BF bump(struct BF s, int k) { s.a += k; s.e -= k; return s; }
        static int pick(int x) { union V u = (union V){ .i = x }; return ((int[]){ u.b[0], 2 * x })[x & 1]; }
        void mpc_main(int INPUT_A_x[4], int INPUT_B_y[4], int OUTPUT_r[12]) {
            for (int i = 0; i < 4; i++) {
                union V v = { .i = INPUT_A_x[i] };
                struct BF s = bump((struct BF){ INPUT_B_y[i], INPUT_A_x[i], INPUT_B_y[i] }, i);
                OUTPUT_r[i] = mix(v, s) + mix((union V){ .b = { 1, 2 } }, s) + pick(INPUT_B_y[i]);
            }
            union V t[4];
            for (int i = 0; i < 4; i++) { t[i].i = INPUT_A_x[i]; t[i].b[0] = INPUT_B_y[i]; }
            struct BF q[4];
            for (int i = 0; i < 4; i++) { q[i].b = INPUT_A_x[i]; q[i].a = q[i].b + 1; }
            for (int i = 0; i < 4; i++) OUTPUT_r[4 + i] = t[i].i + q[i].a * 100 + q[i].b;
            for (int i = 0; i < 4; i++) OUTPUT_r[8 + i] = ((int[]){ i, INPUT_B_y[i] })[1] * t[i].b[2];
        }
    "#;
    let (templates, reused) = same_outputs("aggregates", src, &Options::default(), 30, 9);
    assert!(templates >= 2, "{templates}");
    assert!(reused >= 1, "{reused}");
}

/// String literals under templates: a function reading a literal through its pointer
/// parameter is inlined (so a write into the literal would be refused), one reading a
/// local array a literal initialized is a template; both read the literal's bytes as gcc does.
#[test]
fn string_literals_compact_equals_unrolled() {
    let src = r#"
        #include <stdint.h>
        static int count(const char *s, char c) { int n = 0; for (int i = 0; i < 8 && s[i]; i++) n += s[i] == c; return n; }
        static int score(char w[8], uint8_t key) { int s = 0; for (int i = 0; i < 8; i++) s += (uint8_t)w[i] ^ key; return s; }
        void mpc_main(uint8_t INPUT_A_k[4], char INPUT_B_t[8], int *OUTPUT_r) {
            char words[3][8] = {"alpha", "beta", "gamma"};
            int r = count("mississippi"[1] == 'i' ? "banana" : "x", 'a');
            for (int j = 0; j < 4; j++) {
                r += score(words[j % 3], INPUT_A_k[j]) + count(INPUT_B_t, "abcd"[j]);
                r += "\x10\x20\x30\x40"[INPUT_A_k[j] & 3];
            }
            *OUTPUT_r = r;
        }
    "#;
    let (templates, _) = same_outputs("strings", src, &Options::default(), 30, 11);
    assert!(templates >= 1, "{templates}");
}

#[test]
fn functions_touching_globals_are_inlined() {
    let src = r#"
        #include <stdint.h>
        uint32_t acc;
        static void add(uint32_t x) { acc += x; }
        static uint32_t twice(uint32_t x) { return x * x + x; }
        void mpc_main(uint32_t INPUT_A_x, uint32_t INPUT_B_y, uint32_t *OUTPUT_r) {
            acc = 0;
            for (int i = 0; i < 4; i++) add(twice(INPUT_A_x + i) ^ INPUT_B_y);
            *OUTPUT_r = acc;
        }
    "#;
    let (templates, _) = same_outputs("globals", src, &Options::default(), 20, 9);
    assert!(templates >= 1, "twice() should still become a template");
}

#[test]
fn random_programs_compact_equals_unrolled() {
    let cfg = Config::from_env();
    let seeds = common::seeds(
        "PGC_RANDPROG",
        if cfg!(debug_assertions) { 60 } else { 300 },
        0,
    );
    let count = seeds.len();
    let mut with_templates = 0;
    for seed in seeds {
        let p = randprog::generate(seed, &format!("p{seed}"), &cfg);
        let opts = Options {
            entry: Some(p.entry.clone()),
            ..Options::default()
        };
        let (templates, _) =
            same_outputs(&format!("random seed {seed}"), &p.source, &opts, 3, seed);
        with_templates += (templates > 0) as usize;
    }
    assert!(
        with_templates > count / 10,
        "only {with_templates} of {count} random programs made a template"
    );
}

/// Float programs (helpers taking and returning floats become templates too).
#[test]
fn random_float_programs_compact_equals_unrolled() {
    let cfg = randprog::floats::Config::default();
    let mut with_templates = 0;
    for seed in 0..40 {
        let p = randprog::floats::generate(seed, &format!("f{seed}"), &cfg);
        let opts = Options {
            entry: Some(p.entry.clone()),
            ..Options::default()
        };
        let (templates, _) = same_outputs(
            &format!("random float seed {seed}"),
            &p.source,
            &opts,
            3,
            seed,
        );
        with_templates += (templates > 0) as usize;
    }
    assert!(
        with_templates >= 4,
        "only {with_templates} of 40 random float programs made a template"
    );
}

/// Working-set sizes of a tiny program, worked out by hand.
#[test]
fn peak_live_wires_of_a_small_program() {
    let src = r#"
        static _Bool and2(_Bool x, _Bool y) { return x & y; }
        void mpc_main(_Bool INPUT_A_a, _Bool INPUT_B_b, _Bool INPUT_B_c, _Bool *OUTPUT_r) {
            *OUTPUT_r = and2(and2(INPUT_A_a, INPUT_B_b), INPUT_B_c);
        }
    "#;
    let c = compile_compact_source(src, "and3", &Options::default()).unwrap();
    let s = pgc_circuit::compact::compact_stats(&c.circuit).unwrap();
    assert_eq!(s.templates, 1, "one shape: two wire arguments");
    assert_eq!(s.calls, 2);
    assert_eq!(s.and_gates, 2);
    // Main: a, b, c are live from the start (3 slots). The first call's output t gets a
    // fourth slot before a and b are freed (a call's outputs never share its inputs' slots);
    // the second call's output r then takes a freed slot: peak 4. The template's AND writes
    // straight into its output region, so it needs no scratch.
    assert_eq!(s.main_slots, 4);
    assert_eq!(s.scratch_slots, 0);
    assert_eq!(s.peak_live_wires, 4);
    assert_eq!(s.label_bytes_per_party, 64);
}

/// An error inside a function body is reported as the inlined compilation reports it (the
/// template attempt gives the function up and the inlined call meets the error in place).
#[test]
fn errors_in_function_bodies_are_reported_in_place() {
    let src = "static int f(int x) {\n    return x + missing;\n}\nvoid mpc_main(int INPUT_A_a, int *OUTPUT_r) { *OUTPUT_r = f(INPUT_A_a) + f(INPUT_A_a + 1); }\n";
    let flat = compile_source(src, "err.c", &Options::default())
        .map(|_| ())
        .expect_err("an error")
        .to_string();
    let compact = compile_compact_source(src, "err.c", &Options::default())
        .map(|_| ())
        .expect_err("an error")
        .to_string();
    assert!(
        flat.contains("err.c:2:") && flat.contains("missing"),
        "{flat}"
    );
    assert_eq!(compact, flat);
}

/// Compact compilation of `source` with the loops it stored once, after checking the
/// outputs against the unrolled form: (loops outlined, iterations outlined, templates,
/// compact AND gates, unrolled AND gates).
fn loop_templates(name: &str, source: &str, runs: usize, seed: u64) -> (u64, u64, usize, u64, u64) {
    let opts = Options::default();
    same_outputs(name, source, &opts, runs, seed);
    let c = compile_compact_source(source, name, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    let flat = compile_source(source, name, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    (
        c.loops_outlined,
        c.loop_iterations_outlined,
        c.circuit.templates.len(),
        c.stats.and_gates_final,
        flat.circuit.and_count() as u64,
    )
}

#[test]
fn inline_textbook_edit_distance_becomes_templates() {
    let src =
        std::fs::read_to_string(common::repo_root().join("examples/edit_distance_textbook.c"))
            .unwrap()
            .replace("#define EDIT_LEN 16", "#define EDIT_LEN 24");
    let (loops, iterations, templates, and_compact, and_flat) = loop_templates("edt", &src, 30, 11);
    let c = compile_compact_source(&src, "edt", &Options::default()).unwrap();
    let rows = c.loop_iterations_outlined_nested;
    eprintln!(
        "edt-24: {iterations} iterations, {rows} rows, {templates} templates, {and_compact} / {and_flat} AND"
    );
    // The cell loop's 24 × 24 iterations: a shape is the cells' constant bits and upper
    // bounds, which change along the table's edges and diagonal (a few per column). Rows
    // whose exact bounds differ are keyed by rounded bounds: the rows of a band share a
    // template (the first of each band, and the rows where the band changes, run inline).
    assert!(loops >= 2, "no loop stored once");
    assert!(rows >= 12, "{rows} rows stored once");
    assert!(iterations >= 24 * 12, "{iterations} iterations outlined");
    assert!(templates <= 6 * 24, "{templates} templates");
    // The bounds pass through the templates: cells stay narrow (without them every cell
    // would be 32-bit arithmetic, about 7 times the AND gates). A row of the nest takes
    // its border cell `d[i][0] = i` as a lifted constant whose bound is rounded up to
    // 2^k - 1, so its cells, bounded by the minimum of their neighbours (`max(i, j)`
    // unrolled), can need a bit more than unrolled ones.
    assert!(
        and_compact * 10 <= and_flat * 12,
        "compact {and_compact} AND against {and_flat} unrolled"
    );
}

#[test]
fn inline_loops_with_conditions_aliasing_and_structs() {
    let src = r#"
        #include <stdint.h>
        struct acc { uint32_t sum; uint8_t hits; };
        void mpc_main(uint32_t INPUT_A_a[10], uint32_t INPUT_B_b[10], uint32_t INPUT_B_k,
                      uint32_t OUTPUT_r[10], uint32_t *OUTPUT_s, uint8_t *OUTPUT_h, uint32_t *OUTPUT_m) {
            uint32_t v[10];
            struct acc st;
            st.sum = 0; st.hits = 0;
            uint32_t best = 0xffffffff;
            for (int i = 0; i < 10; i++) v[i] = INPUT_A_a[i] ^ INPUT_B_b[i];
            for (int i = 0; i < 10; i++) {
                /* a secret condition inside the body; a struct and scalars as places */
                uint32_t x = v[i] + INPUT_B_k;
                if (x < best) best = x;
                if (v[i] & 1) { st.sum += v[i]; st.hits++; }
            }
            for (int i = 0; i < 10; i++)
                for (int j = 0; j < 10; j++) {
                    /* v[i] and v[9 - j] are one element when i + j == 9 */
                    v[i] = v[i] * 3 + v[9 - j];
                    v[9 - j] ^= v[i] >> 3;
                }
            if (INPUT_B_k > 5) {
                /* the loop runs under a secret condition: results written back under it */
                for (int i = 1; i < 10; i++) v[i] += v[i - 1];
            }
            for (int i = 0; i < 10; i++) {
                if (v[i] == INPUT_B_k) break; /* a break: inlined */
                st.sum -= 1;
            }
            for (int i = 0; i < 10; i++) OUTPUT_r[i] = v[i];
            *OUTPUT_s = st.sum; *OUTPUT_h = st.hits; *OUTPUT_m = best;
        }
    "#;
    let (loops, iterations, ..) = loop_templates("mixed-loops", src, 40, 21);
    assert!(loops >= 3, "{loops} loops outlined");
    assert!(iterations >= 100, "{iterations}");
}

/// A loop body stored once whose names are bound to new variables between runs of its loop
/// (`x` is declared anew per pass of the outer loop, `t` is shadowed in a block): the
/// bindings a body's iterations share must be looked up again after such changes.
#[test]
fn loop_body_names_rebound_between_runs() {
    let src = r#"
        #include <stdint.h>
        void mpc_main(uint32_t INPUT_A_a[4], uint32_t INPUT_B_b, uint32_t OUTPUT_r[4]) {
            uint32_t t[4];
            for (int j = 0; j < 4; j++) t[j] = INPUT_A_a[j];
            for (int r = 0; r < 3; r++) {
                uint32_t x = INPUT_B_b + r;
                for (int j = 0; j < 4; j++) t[j] = t[j] * 3 + x;
                {
                    uint32_t t[4];
                    for (int j = 0; j < 4; j++) t[j] = x ^ j;
                    for (int j = 0; j < 4; j++) x += t[j];
                }
                for (int j = 0; j < 4; j++) t[j] ^= x;
            }
            for (int j = 0; j < 4; j++) OUTPUT_r[j] = t[j];
        }
    "#;
    let (loops, iterations, ..) = loop_templates("rebound", src, 30, 5);
    assert!(loops >= 3, "{loops} loops outlined");
    assert!(iterations >= 3 * 16, "{iterations}");
}

#[test]
fn loop_subscripts_follow_c_arithmetic() {
    // Subscripts of outlined iterations are computed without the general evaluator where
    // they are constant sums and products: the same elements as C must come out, also
    // where C's arithmetic wraps (`u + 1` is 0 for the largest unsigned) or a narrow
    // signed counter is negative, and with hex/octal literals and enum constants.
    let src = r#"
        #include <stdint.h>
        enum { BASE = 2, STEP = 0x1 };
        void mpc_main(uint8_t INPUT_A_a[8], uint8_t INPUT_B_b[8], uint32_t OUTPUT_r[8]) {
            uint32_t v[8];
            for (int i = 0; i < 8; i++) v[i] = INPUT_A_a[i];
            unsigned u = 4294967295u;
            unsigned long long w = 18446744073709551615ull;
            signed char c = -1;
            for (int i = 0; i < 8; i++)
                v[u + 1 + i] = v[u + 1 + i] * 3 + INPUT_B_b[7 - i];
            for (int i = 0; i < 7; i++)
                v[w + STEP + i] += v[c + 2 + i] ^ INPUT_B_b[i * 2 - i];
            for (int i = 0; i < 3; i++)
                v[BASE * i + 01] -= v[(unsigned)i + 010 - 3] + v[i - u - 1];
            for (int i = 0; i < 8; i++) OUTPUT_r[i] = v[i];
        }
    "#;
    let (loops, iterations, ..) = loop_templates("subscripts", src, 40, 5);
    assert!(loops >= 3, "{loops} loops outlined");
    assert!(iterations >= 8 + 7 + 3, "{iterations}");
}

#[test]
fn inline_loops_inside_function_templates() {
    let src = r#"
        #include <stdint.h>
        static uint32_t dot(const uint32_t *a, const uint32_t *b) {
            uint32_t s = 0;
            for (int i = 0; i < 8; i++) s += a[i] * b[i];
            return s;
        }
        void mpc_main(uint32_t INPUT_A_m[4][8], uint32_t INPUT_B_x[8], uint32_t OUTPUT_y[4]) {
            uint32_t x[8];
            for (int i = 0; i < 8; i++) x[i] = INPUT_B_x[i];
            for (int r = 0; r < 4; r++) {
                uint32_t row[8];
                for (int i = 0; i < 8; i++) row[i] = INPUT_A_m[r][i];
                OUTPUT_y[r] = dot(row, x);
            }
        }
    "#;
    let (loops, ..) = loop_templates("dot-loops", src, 30, 31);
    assert!(loops >= 2, "{loops}");
}

/// Random dynamic-programming loops over integer tables (`randprog::ranged`, checked
/// against gcc in `--test random_programs ranged`): stored once as loop templates where
/// their cells' subscripts are constants, with the same outputs as unrolled.
#[test]
fn random_ranged_loop_programs_compact_equals_unrolled() {
    let seeds = common::seeds(
        "PGC_RANDPROG",
        if cfg!(debug_assertions) { 40 } else { 150 },
        0,
    );
    let count = seeds.len() as u64;
    let (mut outlined, mut nests, mut and_compact, mut and_flat) = (0, 0, 0, 0);
    for seed in seeds {
        let p = randprog::ranged::generate(seed, &format!("r{seed}"));
        let name = format!("random ranged-loop program seed {seed}");
        let opts = Options {
            entry: Some(p.entry.clone()),
            ..Options::default()
        };
        same_outputs(&name, &p.source, &opts, 3, seed);
        let c = compile_compact_source(&p.source, &name, &opts).unwrap();
        let flat = compile_source(&p.source, &name, &opts).unwrap();
        outlined += (c.loops_outlined > 0) as u64;
        nests += (c.loops_outlined_nested > 0) as u64;
        and_compact += c.stats.and_gates_final;
        and_flat += flat.circuit.and_count();
    }
    eprintln!(
        "ranged-loop programs: {and_compact} ANDs compact, {and_flat} unrolled; \
         {nests} stored a nest's rows once"
    );
    // The table's rows (the outer loop's body) are a nest stored once where its cells
    // qualify.
    assert!(
        nests > count / 10,
        "only {nests} of {count} programs stored a nest once"
    );
    assert!(
        outlined > count / 3,
        "only {outlined} of {count} programs stored a loop once"
    );
}

/// Nests: outer loops whose bodies hold counted loops indexing 2-D arrays are stored once
/// (a row per call), with a constant table read inside (folded, not a template input), a
/// triangular nest (`j < i`: each row its own shape), a secret `if` around the inner loop,
/// a loop-variant constant (`d[i][0] = i`), a counter counting down and three levels.
#[test]
fn nests_compact_equals_unrolled() {
    let src = r#"
        #include <stdint.h>
        void mpc_main(uint8_t INPUT_A_a[6][5], uint8_t INPUT_B_b[5], uint16_t INPUT_B_k,
                      uint32_t OUTPUT_r[6][5], uint32_t *OUTPUT_s) {
            uint32_t t[6][5];
            uint32_t d[6][5];
            uint8_t tab[5] = {3, 1, 4, 1, 5};
            uint32_t s = 0;
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 5; j++)
                    t[i][j] = INPUT_A_a[i][j] + INPUT_B_b[j];
            for (int i = 0; i < 6; i++) {
                for (int j = 1; j < 5; j++)
                    t[i][j] = t[i][j] * tab[j] + t[i][j - 1];
            }
            for (int i = 1; i < 6; i++)
                for (int j = 0; j < i; j++)
                    t[i][j] ^= t[j][i - 1] >> 2;
            for (int i = 0; i < 6; i++) {
                if (t[i][0] > INPUT_B_k) {
                    for (int j = 0; j < 5; j++) t[i][j] += 7;
                }
                s += t[i][4];
            }
            for (int i = 0; i < 6; i++) d[i][0] = i;
            for (int i = 0; i < 6; i++) {
                for (int j = 1; j < 5; j++) {
                    uint32_t x = d[i][j - 1] + (t[i][j] & 3);
                    if (x > 9) x = 9;
                    d[i][j] = x;
                }
            }
            for (int k = 0; k < 2; k++)
                for (int i = 0; i < 6; i++)
                    for (int j = 4; j >= 1; j--)
                        t[i][j] = t[i][j] + (t[i][j - 1] ^ d[i][j]);
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 5; j++)
                    OUTPUT_r[i][j] = t[i][j] + d[i][j];
            *OUTPUT_s = s;
        }
    "#;
    let opts = Options::default();
    same_outputs("nests", src, &opts, 40, 31);
    let c = compile_compact_source(src, "nests", &opts).unwrap();
    let flat = compile_source(src, "nests", &opts).unwrap();
    assert!(
        c.loops_outlined_nested >= 3,
        "{} nests",
        c.loops_outlined_nested
    );
    assert!(
        c.loop_iterations_outlined_nested >= 20,
        "{} nest iterations",
        c.loop_iterations_outlined_nested
    );
    // The table's constants stay folded and the bounds exact: no more AND gates than
    // unrolled but for the few rows where `d[i][0]` is a template input.
    let (and_compact, and_flat) = (c.stats.and_gates_final, flat.circuit.and_count() as u64);
    assert!(
        and_compact <= and_flat + and_flat / 20,
        "compact {and_compact} AND against {and_flat} unrolled"
    );
}

/// The rows of a nest with the same shape share one template: the main body holds one
/// call per row, and the row template holds the inner loop's calls.
#[test]
fn nest_rows_share_one_template() {
    let src = r#"
        #include <stdint.h>
        void mpc_main(uint8_t INPUT_A_a[8][8], uint8_t INPUT_B_b[8], uint32_t OUTPUT_r[8]) {
            uint16_t t[8][8];
            uint16_t w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++)
                    t[i][j] = INPUT_A_a[i][j] ^ INPUT_B_b[j];
            for (int i = 0; i < 8; i++) {
                for (int j = 1; j < 8; j++)
                    t[i][j] = (t[i][j] & w[j]) + (t[i][j - 1] >> 1);
            }
            for (int i = 0; i < 8; i++) OUTPUT_r[i] = t[i][7];
        }
    "#;
    let opts = Options::default();
    same_outputs("nest-rows", src, &opts, 30, 41);
    let c = compile_compact_source(src, "nest-rows", &opts).unwrap();
    assert_eq!(c.loops_outlined_nested, 2, "both nests stored once");
    assert_eq!(c.loop_iterations_outlined_nested, 16, "one call per row");
    // One row template per nest (the templates holding calls), not one per row.
    let is_call =
        |it: &pgc_circuit::compact::Item| matches!(it, pgc_circuit::compact::Item::Call(_));
    let rows = c
        .circuit
        .templates
        .iter()
        .filter(|t| t.items.iter().any(is_call))
        .count();
    assert_eq!(rows, 2, "row templates");
    let calls = c.circuit.main.iter().filter(|it| is_call(it)).count();
    assert_eq!(calls, 16, "the main body holds one call per row");
}

/// Nest headers run at compile time as C runs them: a counter counting down past zero
/// (signed: the loop ends at -1; unsigned: it wraps, and the nest runs inline), a narrow
/// counter, an unsigned bound, `%` in a subscript.
#[test]
fn nest_headers_follow_c_arithmetic() {
    let src = r#"
        #include <stdint.h>
        void mpc_main(uint8_t INPUT_A_a[4][4], uint32_t OUTPUT_r[4][4]) {
            uint32_t t[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) t[i][j] = INPUT_A_a[i][j];
            for (int i = 0; i < 4; i++) {
                for (unsigned j = 3; j < 4; j--) t[i][j] += t[i][3 - j];
            }
            for (int i = 0; i < 4; i++) {
                for (int j = 3; j >= 0; j--) t[i][j] ^= t[i][(j + 1) % 4] >> 1;
            }
            for (int i = 1; i < 4; i++) {
                for (unsigned char j = 0; j < i; j++) t[i][j] += t[i - 1][j];
            }
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < 4u; j++) t[i][j] = t[i][j] * 3;
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) OUTPUT_r[i][j] = t[i][j];
        }
    "#;
    let opts = Options::default();
    same_outputs("nest-headers", src, &opts, 40, 51);
    let c = compile_compact_source(src, "nest-headers", &opts).unwrap();
    assert!(
        c.loops_outlined_nested >= 3,
        "{} nests",
        c.loops_outlined_nested
    );
}

/// A loop counter used both as a value and in a subscript (`x[j] = j + a`) gives every
/// iteration a shape of its own; past the shapes with bounds and those with constants a
/// generic template would take the counter as wires and index with them, so such
/// iterations run inline (this used to panic: a template call naming a wire of the
/// outer builder).
#[test]
fn counter_as_value_and_subscript_past_every_shape_tier() {
    let src = r#"
        #define N 32900
        int mpc_main(int INPUT_A_a, int INPUT_B_b) {
            int x[N];
            for (int j = 0; j < N; j++)
                x[j] = j + INPUT_A_a;
            int s = 0;
            for (int j = N - 8; j < N; j++)
                s = s ^ x[j];
            return s + INPUT_B_b;
        }
    "#;
    let (loops, iterations, ..) = loop_templates("counter_tiers", src, 2, 5);
    assert!(loops >= 1, "no loop stored once");
    // Past 2^15 ranged shapes and 32 with constants (loops.rs), iterations run inline.
    assert!(iterations < 32_900 + 8, "{iterations} iterations outlined");
}

/// Iterations whose places hold only constants (a nest of loops computing a constant) run
/// inline: they build no gates there. Stored once, every iteration's constants were a shape
/// of its own, and past the shape tiers a generic template made them wires (a million
/// constant steps compiled to 60 M AND gates and 800 MB).
#[test]
fn constant_only_iterations_run_inline() {
    let src = r#"
        int mpc_main(int INPUT_A_a, int INPUT_B_b) {
            int s = 0;
            for (int i = 0; i < 12; i++)
                for (int j = 0; j < 12; j++)
                    for (int k = 0; k < 12; k++)
                        s += (i ^ j) + k;
            return s + INPUT_A_a + INPUT_B_b;
        }
    "#;
    let (_, iterations, templates, and_compact, and_flat) =
        loop_templates("constant_nest", src, 4, 9);
    assert_eq!(iterations, 0, "constant iterations outlined");
    assert_eq!(templates, 0, "templates stored for constant iterations");
    assert!(
        and_compact <= and_flat + 8,
        "compact {and_compact} AND against {and_flat} unrolled"
    );
}

/// A constant that changes every iteration next to a wire (`c += 3; acc ^= c`) gives every
/// iteration a shape of its own, each folding `c` for free; past the shape tiers the generic
/// template took `c` as wires, an adder per call (216,000 AND gates where the unrolled
/// program has none). The first generic template is held against the shapes' templates,
/// and the body runs inline when it costs more.
#[test]
fn generic_template_that_costs_more_runs_inline() {
    let src = r#"
        #define N 32900
        int mpc_main(int INPUT_A_a) {
            int acc = INPUT_A_a;
            int c = 0;
            for (int i = 0; i < N; i++) {
                c += 3;
                acc ^= c;
            }
            return acc;
        }
    "#;
    let (loops, _, _, and_compact, and_flat) = loop_templates("generic_counter", src, 2, 13);
    assert!(loops >= 1, "no loop stored once");
    assert!(
        and_compact <= and_flat + 8,
        "compact {and_compact} AND against {and_flat} unrolled"
    );
}

/// A loop-variant constant of a nest (`c[i]`) that decides a loop in the body (`k <
/// c[i]`, `while (k > 0)` after `k = c[i]`) is not lifted into a template input: lifted,
/// the loop's condition was secret inside the template, so a `while` ran on secret paths
/// up to the limit of such loops (65,536 iterations, all counted as outlined) before the
/// build failed and the nest ran inline, and a bounded `for` cost gates for a condition
/// that is a constant inline. Without lifting the rows are stored as before.
#[test]
fn lifted_constant_deciding_a_loop_stays_a_constant() {
    let src = r#"
        #include <stdint.h>
        void mpc_main(uint8_t INPUT_A_a[8][4], uint32_t OUTPUT_r[8][4]) {
            uint32_t t[8][4];
            int c[8];
            for (int i = 0; i < 8; i++) c[i] = i % 3 + 1;
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 4; j++) t[i][j] = INPUT_A_a[i][j];
            for (int i = 0; i < 8; i++) {
                for (int j = 1; j < 4; j++) t[i][j] += t[i][j - 1];
                for (int k = 0; k < c[i]; k++) t[i][0] = t[i][0] * 3 + 1;
            }
            for (int i = 0; i < 8; i++) {
                for (int j = 1; j < 4; j++) t[i][j] ^= t[i][j - 1] >> 1;
                int k = c[i];
                while (k > 0) { t[i][1] ^= t[i][2] + k; k--; }
            }
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 4; j++) OUTPUT_r[i][j] = t[i][j];
        }
    "#;
    let (loops, iterations, _, and_compact, and_flat) = loop_templates("lifted_loop", src, 20, 61);
    assert!(loops >= 2, "{loops} loops stored once");
    // 8 rows of each nest, their inner iterations, the copy loops: far from 65,536.
    assert!(iterations < 200, "{iterations} iterations outlined");
    assert!(
        and_compact <= and_flat + and_flat / 50,
        "compact {and_compact} AND against {and_flat} unrolled"
    );
}

/// A loop-variant constant of a nest used as a divisor, shift or factor (`x / c[i]`) is not
/// lifted when that costs more than sharing the rows saves: the first template with lifted
/// constants is held against the same row's without them (lifted, the rows' divisions
/// were secret: about 9 times the AND gates of the unrolled program).
#[test]
fn lifted_divisor_that_costs_more_stays_a_constant() {
    let src = r#"
        #include <stdint.h>
        void mpc_main(uint8_t INPUT_A_a[8][4], uint32_t OUTPUT_r[8][4]) {
            uint32_t t[8][4];
            int c[8];
            for (int i = 0; i < 8; i++) c[i] = i % 3 + 1;
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 4; j++) t[i][j] = INPUT_A_a[i][j];
            for (int i = 0; i < 8; i++) {
                for (int j = 1; j < 4; j++)
                    t[i][j] += (t[i][j - 1] << c[i]) / c[i] + (t[i][j] >> c[i]) % c[i];
                t[i][0] = t[i][0] * c[i];
            }
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 4; j++) OUTPUT_r[i][j] = t[i][j];
        }
    "#;
    let (loops, _, _, and_compact, and_flat) = loop_templates("lifted_divisor", src, 20, 71);
    assert!(loops >= 2, "{loops} loops stored once");
    assert!(
        and_compact <= and_flat + and_flat / 20,
        "compact {and_compact} AND against {and_flat} unrolled"
    );
}

/// Column counts: `d[i][j]` is at most `i`, so every row of the nest has its own exact
/// bounds. Keyed by rounded bounds, the rows of a band share a template; the bounds of
/// their results are replayed per call from the exact ones, so they do not grow (rounded
/// bounds reported as they are would double row by row).
fn column_counts(rows: usize, cols: usize, tail: &str) -> String {
    format!(
        r#"
        #include <stdint.h>
        void mpc_main(uint8_t INPUT_A_a[{rows}], uint8_t INPUT_B_b[{cols}], int OUTPUT_r[{cols} + 1]) {{
            int d[{rows} + 1][{cols}];
            for (int j = 0; j < {cols}; j++)
                d[0][j] = 0;
            for (int i = 1; i <= {rows}; i++)
                for (int j = 0; j < {cols}; j++)
                    d[i][j] = d[i - 1][j] + (INPUT_A_a[i - 1] == INPUT_B_b[j]);
            for (int j = 0; j < {cols}; j++)
                OUTPUT_r[j] = d[{rows}][j];
            OUTPUT_r[{cols}] = {tail};
        }}
    "#
    )
}

/// AND gates of a compact circuit's main body (calls not counted).
fn main_body_ands(c: &pgc_compiler::CompiledCompact) -> u64 {
    c.circuit
        .main
        .iter()
        .filter(
            |it| matches!(it, pgc_circuit::compact::Item::Gate(g) if g.op == pgc_circuit::Op::And),
        )
        .count() as u64
}

#[test]
fn nest_rows_share_templates_under_rounded_bounds() {
    let src = column_counts(40, 5, "0");
    let opts = Options::default();
    // All-zero and all-one inputs make every cell a match: each hits its bound.
    same_outputs("column-counts", &src, &opts, 30, 77);
    let c = compile_compact_source(&src, "column-counts", &opts).unwrap();
    let flat = compile_source(&src, "column-counts", &opts).unwrap();
    // Rows 1-4 (exact shapes), then every row but the first of each band (5, 8, 16, 32),
    // which runs inline: a rounded shape is built when it comes again.
    assert_eq!(c.loop_iterations_outlined_nested, 36, "rows as calls");
    let is_call =
        |it: &pgc_circuit::compact::Item| matches!(it, pgc_circuit::compact::Item::Call(_));
    let rows = c
        .circuit
        .templates
        .iter()
        .filter(|t| t.items.iter().any(is_call))
        .count();
    // 4 exact shapes, then one per band of rounded bounds (6, 14, 30, 62).
    assert_eq!(rows, 8, "row templates for 40 rows");
    // The bounds do not grow: the cells stay as narrow as unrolled ones, up to the bit a
    // rounded band costs (doubling bounds would cost several times the ANDs).
    let (compact, unrolled) = (c.stats.and_gates_final, flat.circuit.and_count() as u64);
    assert!(
        compact * 4 <= unrolled * 5,
        "compact {compact} AND against {unrolled} unrolled"
    );
    // Without the replay the rows make new shapes and the nest runs inline after 4.
    let off = Options {
        bound_replay: false,
        ..Options::default()
    };
    let c_off = compile_compact_source(&src, "column-counts", &off).unwrap();
    assert_eq!(c_off.loop_iterations_outlined_nested, 4);
    same_outputs("column-counts-off", &src, &off, 5, 78);
}

/// A row template built for a band of rows reports, at a call from a later row of the
/// band, the bounds replayed from that row's exact inputs, tighter than the ones it was
/// built with; the caller's next arithmetic is narrowed by them. Here the last row (17) is
/// built for rows of at most 30 (bounds 2^5 - 2), so its results are at most 31 as the build
/// sees them, and at most 17 replayed: their product is 9 bits wide, not 10, exactly what
/// the unrolled circuit builds.
#[test]
fn replayed_bounds_narrow_the_callers_arithmetic() {
    let opts = Options::default();
    let with = column_counts(17, 2, "d[17][0] * d[17][1]");
    let without = column_counts(17, 2, "0");
    same_outputs("product", &with, &opts, 30, 91);
    let compact = |src: &str| compile_compact_source(src, "product", &opts).unwrap();
    let (cw, co) = (compact(&with), compact(&without));
    // Rows 1-4, 6-7, 9-15 and 17 (the first of each band runs inline).
    assert_eq!(cw.loop_iterations_outlined_nested, 14, "rows stored once");
    let product_compact = main_body_ands(&cw) - main_body_ands(&co);
    let flat = |src: &str| {
        compile_source(src, "product", &opts)
            .unwrap()
            .circuit
            .and_count()
    };
    let product_unrolled = flat(&with) - flat(&without);
    assert_eq!(
        product_compact, product_unrolled,
        "the product after the nest costs what it costs with exact bounds"
    );
}

/// The textbook edit distance at 40 characters: its rows are keyed by rounded bounds, so a
/// row template built for a band is called with the smaller exact bounds of later rows.
/// On strings with no common character every cell reaches its bound (`max(i, j)`), and on
/// equal strings the diagonal stays 0: the compact circuit gives the unrolled circuit's
/// distance (and the DP's) on both, and on strings in between.
#[test]
fn textbook_edit_distance_rows_at_their_bounds() {
    let n = 40;
    let src =
        std::fs::read_to_string(common::repo_root().join("examples/edit_distance_textbook.c"))
            .unwrap()
            .replace("#define EDIT_LEN 16", &format!("#define EDIT_LEN {n}"));
    let opts = Options::default();
    let compact = compile_compact_source(&src, "edt-40", &opts).unwrap();
    assert!(
        compact.loop_iterations_outlined_nested >= 30,
        "{} rows stored once",
        compact.loop_iterations_outlined_nested
    );
    let flat = compile_source(&src, "edt-40", &opts).unwrap();
    let source_form = CompactSource::new(compact.circuit).expect("valid compact circuit");
    check_edit_distance(&flat.circuit, &source_form, n, 32);
}

/// Column counts with one function call per row: `count_row` adds a row's matches to the
/// counts, which are at most `i` after row `i`, so every call has its own exact bounds.
/// After the first shapes of the function are not reused, its calls are keyed by rounded
/// bounds (the row's `i` a wire below its rounded bound): the rows of a band share a
/// template, and each call's results get the bounds replayed from that call's exact ones
/// (`crate::replay`), so they do not grow band by band.
fn column_counts_by_function(rows: usize, cols: usize, tail: &str) -> String {
    format!(
        r#"
        #include <stdint.h>
        static void count_row(uint16_t counts[{cols}], uint16_t i, uint8_t a, uint8_t b[{cols}]) {{
            for (int j = 0; j < {cols}; j++)
                counts[j] = counts[j] + (a == b[j]);
            counts[0] = counts[0] + (i > 100);
        }}
        void mpc_main(uint8_t INPUT_A_a[{rows}], uint8_t INPUT_B_b[{cols}], uint16_t OUTPUT_r[{cols} + 1]) {{
            uint16_t counts[{cols}];
            for (int j = 0; j < {cols}; j++)
                counts[j] = 0;
            for (int i = 1; i <= {rows}; i++)
                count_row(counts, (uint16_t)i, INPUT_A_a[i - 1], INPUT_B_b);
            for (int j = 0; j < {cols}; j++)
                OUTPUT_r[j] = counts[j];
            OUTPUT_r[{cols}] = {tail};
        }}
    "#
    )
}

#[test]
fn function_rows_share_templates_under_rounded_bounds() {
    let src = column_counts_by_function(40, 5, "0");
    let opts = Options::default();
    // All-zero and all-one inputs make every cell a match: each hits its bound.
    same_outputs("column-counts-fn", &src, &opts, 30, 177);
    let c = compile_compact_source(&src, "column-counts-fn", &opts).unwrap();
    let flat = compile_source(&src, "column-counts-fn", &opts).unwrap();
    // 16 exact shapes (rows 1-16), then one per band of rounded bounds met (rows 17-30 are
    // at most 30, 31-40 at most 62), and a row whose input bounds straddle a band edge.
    let templates = c.circuit.templates.len();
    assert!(
        (17..=20).contains(&templates),
        "{templates} templates for 40 rows"
    );
    // Narrow like unrolled cells, up to the bit a rounded band costs (bounds that doubled
    // row by row, or no bounds at all, cost several times more).
    let (compact, unrolled) = (c.stats.and_gates_final, flat.circuit.and_count() as u64);
    assert!(
        compact * 4 <= unrolled * 5,
        "compact {compact} AND against {unrolled} unrolled"
    );
    // Without bounds in the shape the calls use a generic template of full-width counts.
    let off = Options {
        bound_replay: false,
        ..Options::default()
    };
    let c_off = compile_compact_source(&src, "column-counts-fn", &off).unwrap();
    assert!(
        c_off.stats.and_gates_final > compact * 2,
        "unranged {} AND against {compact}",
        c_off.stats.and_gates_final
    );
    same_outputs("column-counts-fn-off", &src, &off, 5, 178);
}

/// A function template built for a band of rows reports, at a call from a later row of
/// the band, the bounds replayed from that call's exact inputs: the last call (row 20) is
/// of a template built for counts of at most 30, so its results are at most 20 replayed
/// (31 as the build sees them). The product after the calls is then exactly as wide as in
/// the unrolled circuit; and calls from rows of different bounds (17 and 20, both of the
/// band) get different bounds back, each the unrolled one.
#[test]
fn function_replayed_bounds_narrow_the_callers_arithmetic() {
    let opts = Options::default();
    let with = column_counts_by_function(20, 2, "counts[0] * counts[1]");
    let without = column_counts_by_function(20, 2, "0");
    same_outputs("fn-product", &with, &opts, 30, 191);
    let compact = |src: &str| compile_compact_source(src, "fn-product", &opts).unwrap();
    let (cw, co) = (compact(&with), compact(&without));
    assert!(cw.calls_reused >= 2, "{} calls reused", cw.calls_reused);
    let product_compact = main_body_ands(&cw) - main_body_ands(&co);
    let flat = |src: &str| {
        compile_source(src, "fn-product", &opts)
            .unwrap()
            .circuit
            .and_count()
    };
    let product_unrolled = flat(&with) - flat(&without);
    assert_eq!(
        product_compact, product_unrolled,
        "the product after the calls costs what it costs with exact bounds"
    );
}

/// The edit distance with one function call per row (crates/cli/tests/programs), at 40
/// characters: its row function is keyed by rounded bounds after 16 rows, and each of its
/// 40 cell calls per row by the exact bounds of the cell. On strings with no common
/// character every cell reaches its bound, on equal strings the diagonal stays 0: the
/// compact circuit gives the DP's distance on those and on strings in between, and costs
/// at most a fifth more than the unrolled circuit.
#[test]
fn edit_distance_rows_as_functions_at_their_bounds() {
    let n = 40;
    let src = std::fs::read_to_string(
        common::repo_root().join("crates/cli/tests/programs/edit_distance_rows.c"),
    )
    .unwrap()
    .replace("#define EDIT_LEN 16", &format!("#define EDIT_LEN {n}"));
    let opts = Options::default();
    let compact = compile_compact_source(&src, "edt-rows-40", &opts).unwrap();
    let flat = compile_source(&src, "edt-rows-40", &opts).unwrap();
    let (and_compact, and_flat) = (
        compact.stats.and_gates_final,
        flat.circuit.and_count() as u64,
    );
    assert!(
        and_compact * 5 <= and_flat * 6,
        "compact {and_compact} AND against {and_flat} unrolled"
    );
    let source_form = CompactSource::new(compact.circuit).expect("valid compact circuit");
    check_edit_distance(&flat.circuit, &source_form, n, 16);
}

/// A function keyed by lower bounds ([`pgc_compiler`]'s compact mode keys calls by their
/// integers' lower bounds rounded down to a power of two): a call with `x` in `[5, 12]` builds
/// a template that knows `x >= 4` (its comparison folds, its difference is narrow and cannot
/// wrap); a later call with the same upper bound but a lower bound of 0 must not reuse it
/// (at `y = 0` that template would give `0 - 4` in 4 bits, 12, instead of 100). The first
/// call's template is as narrow as the unrolled code.
#[test]
fn templates_are_not_reused_across_lower_bounds() {
    let src = r#"
        #include <stdint.h>
        static uint16_t above_four(uint16_t x) {
            return x < 4 ? (uint16_t)100 : (uint16_t)(x - 4);
        }
        void mpc_main(uint16_t INPUT_A_a, uint16_t INPUT_B_b, uint16_t OUTPUT_r[3]) {
            uint16_t x = (uint16_t)((INPUT_A_a & 7) + 5);  /* [5, 12] */
            uint16_t t = (uint16_t)(INPUT_B_b & 15);
            uint16_t y = t < 12 ? t : (uint16_t)12;          /* [0, 12] */
            OUTPUT_r[0] = above_four(x);
            OUTPUT_r[1] = above_four(y);
            OUTPUT_r[2] = above_four((uint16_t)((INPUT_B_b >> 4 & 7) + 6)); /* [6, 13]: reuses none */
        }
    "#;
    let opts = Options::default();
    // All-zero inputs give y = 0, where a wrongly shared template differs.
    let (templates, _) = same_outputs("lower-bounds", src, &opts, 40, 31);
    assert_eq!(
        templates, 3,
        "one template per lower-bound class and upper bound"
    );
    // Only the first call: its template folds `x < 4` and subtracts in 4 bits, as unrolled.
    let first = src
        .replace("OUTPUT_r[1] = above_four(y);", "OUTPUT_r[1] = y;")
        .replace(
            "OUTPUT_r[2] = above_four((uint16_t)((INPUT_B_b >> 4 & 7) + 6));",
            "OUTPUT_r[2] = 0;",
        );
    let c = compile_compact_source(&first, "lower-bound-narrow", &opts).unwrap();
    let flat = compile_source(&first, "lower-bound-narrow", &opts).unwrap();
    assert_eq!(
        c.stats.and_gates_final,
        flat.circuit.and_count() as u64,
        "a template keyed by its lower bound is as narrow as the unrolled code"
    );
}

/// Checks an edit-distance circuit, unrolled and compact, against a cleartext DP on two
/// strings of `n` characters each: none in common (every cell at its bound), equal (the
/// diagonal stays 0), and strings in between. The distance is the output's low `out_bits`.
fn check_edit_distance(flat: &Circuit, compact: &CompactSource, n: usize, out_bits: usize) {
    let bits_of = |a: &[u8], b: &[u8]| -> Vec<bool> {
        a.iter()
            .chain(b)
            .flat_map(|&c| (0..8).map(move |k| (c >> k) & 1 == 1))
            .collect()
    };
    let value = |bits: &[bool]| -> u32 {
        bits.iter()
            .take(out_bits)
            .enumerate()
            .map(|(k, &b)| (b as u32) << k)
            .sum()
    };
    let dp = |a: &[u8], b: &[u8]| -> u32 {
        let mut prev: Vec<u32> = (0..=b.len() as u32).collect();
        for i in 1..=a.len() {
            let mut cur = vec![i as u32; b.len() + 1];
            for j in 1..=b.len() {
                let cost = (a[i - 1] != b[j - 1]) as u32;
                cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            }
            prev = cur;
        }
        prev[b.len()]
    };
    let cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (vec![b'x'; n], vec![b'y'; n]),
        (vec![255; n], vec![0; n]),
        (vec![b'q'; n], vec![b'q'; n]),
        (
            (0..n).map(|i| b'a' + (i * 7 % 26) as u8).collect(),
            (0..n).map(|i| b'a' + (i * 11 % 26) as u8).collect(),
        ),
        (
            (0..n).map(|i| (i % 3) as u8).collect(),
            (0..n).map(|i| (i % 5) as u8).collect(),
        ),
    ];
    for (a, b) in cases {
        let bits = bits_of(&a, &b);
        let want = dp(&a, &b);
        assert_eq!(value(&eval_bits(flat, &bits)), want, "unrolled");
        assert_eq!(value(&eval_bits(compact, &bits)), want, "compact");
    }
}
