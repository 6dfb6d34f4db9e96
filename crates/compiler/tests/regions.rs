//! Parallel-region detection (coarse-grained parallelism): which loops become regions,
//! reductions rewritten so that iterations are independent, and `#pragma omp parallel for`
//! honoured or refused. Results are checked against gcc like every other program.

mod common;

use common::oracle::{Case, check_case};
use pgc_circuit::{GateSource, eval_bits};
use pgc_compiler::{Compiled, Options, compile_source};

fn compile(src: &str) -> Compiled {
    compile_source(src, "regions.c", &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// (line, instances) of each region, after splitting into templates.
fn regions(c: &Compiled) -> Vec<(u32, u64, u64)> {
    let pc = c.parallel_circuit().expect("regions split");
    // The split circuit computes what the flat one does.
    let n = c.circuit.layout.num_input_wires() as usize;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..4 {
        let bits: Vec<bool> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x & 1 == 1
            })
            .collect();
        assert_eq!(eval_bits(&c.circuit, &bits), eval_bits(&pc, &bits));
    }
    assert_eq!(pc.and_count(), c.circuit.and_count());
    pc.region_info()
        .iter()
        .map(|r| (r.line, r.instances, r.templates))
        .collect()
}

fn check_gcc(name: &str, src: &str) {
    if !common::gcc_available() {
        return;
    }
    let seed = name
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31) ^ b as u64);
    check_case(&Case::text(name, src), 60, 1, seed);
}

const DOT: &str = r#"
int mult(int a, int b) { return a * b; }
void mpc_main(int INPUT_A_a[16], int INPUT_B_b[16], int *OUTPUT_res)
{
    int res = 0;
    for (int i = 0; i < 16; i++)
        res += mult(INPUT_A_a[i], INPUT_B_b[i]);
    *OUTPUT_res = res;
}
"#;

#[test]
fn dot_product_is_one_region_with_one_template() {
    let c = compile(DOT);
    assert_eq!(regions(&c), vec![(6, 16, 1)]);
    let info = &c.parallel_circuit().unwrap().region_info()[0];
    assert_eq!(
        info.and_gates_per_instance, 993,
        "a 32-bit multiplication per instance"
    );
    check_gcc("dot_region.c", DOT);
}

#[test]
fn reductions_of_every_operator_give_gcc_results() {
    let src = r#"
#include <stdint.h>
void mpc_main(int32_t INPUT_A_a[6], int32_t INPUT_B_b[6], int32_t *OUTPUT_sum, int32_t *OUTPUT_prod,
              uint32_t *OUTPUT_and, uint32_t *OUTPUT_or, uint32_t *OUTPUT_xor, int32_t *OUTPUT_min,
              uint16_t *OUTPUT_umax, int32_t *OUTPUT_diff, int32_t *OUTPUT_count)
{
    int32_t sum = 5, prod = 3, mn = 100, diff = 0, count = 0;
    uint32_t an = 0xffffffffu, o = 0, x = 7;
    uint16_t mx = 2;
    for (int i = 0; i < 6; i++) {
        int32_t t = INPUT_A_a[i] ^ INPUT_B_b[i];
        sum += t;
        prod = prod * (t | 1);
        an &= (uint32_t)t;
        o = (uint32_t)INPUT_A_a[i] | o;
        x ^= (uint32_t)INPUT_B_b[i];
        if (t < mn)
            mn = t;
        uint16_t u = (uint16_t)INPUT_B_b[i];
        if (mx < u) mx = u;
        diff -= INPUT_A_a[i];
        if (t > 0)
            count++;
    }
    *OUTPUT_sum = sum; *OUTPUT_prod = prod; *OUTPUT_and = an; *OUTPUT_or = o; *OUTPUT_xor = x;
    *OUTPUT_min = mn; *OUTPUT_umax = mx; *OUTPUT_diff = diff; *OUTPUT_count = count;
}
"#;
    let c = compile(src);
    assert_eq!(regions(&c), vec![(10, 6, 1)]);
    check_gcc("reductions.c", src);
}

#[test]
fn reductions_under_a_secret_condition() {
    // The loop runs on secret paths only: each iteration's partial result must be the
    // identity on the other paths (found by the random-program oracle, seed 181).
    let src = r#"
void mpc_main(int INPUT_A_x, int INPUT_B_c, int INPUT_B_v[4], int *OUTPUT_r, int *OUTPUT_m)
{
    int r = INPUT_A_x;
    int m = 1000;
    if (INPUT_B_c) {
        r = r * 2;
    } else {
        for (int i = 0; i < 4; i += 1) {
            --r;
            if (INPUT_B_v[i] < m)
                m = INPUT_B_v[i];
        }
    }
    *OUTPUT_r = r;
    *OUTPUT_m = m;
}
"#;
    let c = compile(src);
    assert_eq!(regions(&c).len(), 1);
    check_gcc("secret_reduction.c", src);
}

#[test]
fn loops_with_a_carried_dependence_are_not_regions() {
    let prefix = r#"
void mpc_main(int INPUT_A_x[8], int OUTPUT_p[8])
{
    int acc[8];
    acc[0] = INPUT_A_x[0];
    for (int i = 1; i < 8; i++)
        acc[i] = acc[i - 1] + INPUT_A_x[i];
    for (int i = 0; i < 8; i++)
        OUTPUT_p[i] = acc[i];
}
"#;
    assert!(regions(&compile(prefix)).is_empty());
    check_gcc("prefix.c", prefix);
    // A running state that is not a reduction (s = 3s + x is not associative in s).
    let running = r#"
void mpc_main(int INPUT_A_x[8], int *OUTPUT_s)
{
    int s = 1;
    for (int i = 0; i < 8; i++)
        s = s * 3 + INPUT_A_x[i];
    *OUTPUT_s = s;
}
"#;
    assert!(regions(&compile(running)).is_empty());
    check_gcc("running.c", running);
    // A reduction variable also read elsewhere in the body is no reduction.
    let read_too = r#"
void mpc_main(int INPUT_A_x[8], int OUTPUT_y[8])
{
    int s = 0;
    for (int i = 0; i < 8; i++) {
        s += INPUT_A_x[i];
        OUTPUT_y[i] = s;
    }
}
"#;
    assert!(regions(&compile(read_too)).is_empty());
    check_gcc("read_too.c", read_too);
}

#[test]
fn nested_and_consecutive_loops() {
    let src = r#"
#include <stdint.h>
void mpc_main(int16_t INPUT_A_m[4][5], int16_t INPUT_B_v[5], int16_t OUTPUT_r[4], int16_t *OUTPUT_best)
{
    for (int row = 0; row < 4; row++) {
        int16_t s = 0;
        for (int col = 0; col < 5; col++)
            s += INPUT_A_m[row][col] * INPUT_B_v[col];
        OUTPUT_r[row] = s;
    }
    int16_t best = INT16_MIN;
    for (int row = 0; row < 4; row++) {
        int16_t t = OUTPUT_r[row] - INPUT_B_v[row];
        if (t > best)
            best = t;
    }
    *OUTPUT_best = best;
}
"#;
    let c = compile(src);
    // The outer loops are the regions; the inner loop runs inside each instance.
    assert_eq!(regions(&c), vec![(5, 4, 1), (12, 4, 1)]);
    check_gcc("nested.c", src);
}

#[test]
fn a_sequential_loop_around_a_parallel_one_gives_consecutive_regions() {
    // Each round depends on the previous one, but within a round the updates are
    // independent: the outer loop is given up as a region in its second iteration, and the
    // inner loops of the later rounds become regions of their own.
    let src = r#"
#include <stdint.h>
void mpc_main(uint16_t INPUT_A_x[6], uint16_t INPUT_B_k[6], uint16_t OUTPUT_y[6])
{
    uint16_t s[6];
    for (int i = 0; i < 6; i++)
        s[i] = INPUT_A_x[i];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 6; i++)
            s[i] = (uint16_t)(s[i] * s[i] + INPUT_B_k[i] * round);
    }
    for (int i = 0; i < 6; i++)
        OUTPUT_y[i] = s[i];
}
"#;
    let c = compile(src);
    let r = regions(&c);
    assert!(r.len() >= 2, "{r:?}");
    assert!(
        r.iter().all(|&(line, n, t)| line == 9 && n == 6 && t == 1),
        "{r:?}"
    );
    check_gcc("rounds.c", src);
}

#[test]
fn omp_pragma_is_honoured_and_refused_where_wrong() {
    let ok = r#"
void mpc_main(int INPUT_A_a[8], int INPUT_B_b[8], int *OUTPUT_r)
{
    int r = 0;
#pragma omp parallel for reduction(+:r) schedule(static)
    for (int i = 0; i < 8; i++)
        r += INPUT_A_a[i] & INPUT_B_b[i];
    *OUTPUT_r = r;
}
"#;
    let opts = Options {
        regions: false,
        ..Options::default()
    };
    let c = compile_source(ok, "ok.c", &opts).unwrap();
    assert_eq!(c.parallel_circuit().unwrap().region_info().len(), 1);
    check_gcc("pragma_ok.c", ok);

    let not_parallel = r#"
void mpc_main(int INPUT_A_a[8], int OUTPUT_p[8])
{
    int acc[8];
    acc[0] = INPUT_A_a[0];
#pragma omp parallel for
    for (int i = 1; i < 8; i++)
        acc[i] = acc[i - 1] + INPUT_A_a[i];
    for (int i = 0; i < 8; i++)
        OUTPUT_p[i] = acc[i];
}
"#;
    let e = compile_source(not_parallel, "np.c", &Options::default()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("np.c:7:"), "{msg}");
    assert!(msg.contains("not parallel"), "{msg}");

    let missing_reduction = r#"
void mpc_main(int INPUT_A_a[8], int *OUTPUT_r)
{
    int r = 0;
#pragma omp parallel for
    for (int i = 0; i < 8; i++)
        r += INPUT_A_a[i];
    *OUTPUT_r = r;
}
"#;
    let msg = compile_source(missing_reduction, "mr.c", &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("not parallel") && msg.contains("reduction"),
        "{msg}"
    );

    let wrong_op = r#"
void mpc_main(int INPUT_A_a[8], int *OUTPUT_r)
{
    int r = 0;
#pragma omp parallel for reduction(*:r)
    for (int i = 0; i < 8; i++)
        r += INPUT_A_a[i];
    *OUTPUT_r = r;
}
"#;
    let msg = compile_source(wrong_op, "wo.c", &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("wo.c:6:") && msg.contains("reduction(*: r)"),
        "{msg}"
    );

    let bad_clause = "void mpc_main(int INPUT_A_a, int *OUTPUT_r) {\n#pragma omp parallel for reduction(%:r)\nfor (int i = 0; i < 2; i++) *OUTPUT_r = INPUT_A_a;\n}\n";
    let msg = compile_source(bad_clause, "bc.c", &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("bc.c:2:") && msg.contains("not supported"),
        "{msg}"
    );
}

/// The regions' lines of a program compiled unrolled, after checking that the compact
/// form and `--optimize depth` compute what the unrolled circuit does.
fn region_lines_all_ways(name: &str, src: &str) -> Vec<u32> {
    let c = compile(src);
    let compact = pgc_compiler::compile_compact_source(src, name, &Options::default())
        .unwrap_or_else(|e| panic!("{name} (compact): {e}"));
    let compact = pgc_circuit::compact::CompactSource::new(compact.circuit).unwrap();
    let depth_opts = Options {
        optimize: pgc_circuit::OptimizeFor::Depth,
        ..Options::default()
    };
    let depth =
        compile_source(src, name, &depth_opts).unwrap_or_else(|e| panic!("{name} (depth): {e}"));
    let n = c.circuit.layout.num_input_wires() as usize;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..16 {
        let bits: Vec<bool> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x & 1 == 1
            })
            .collect();
        let want = eval_bits(&c.circuit, &bits);
        assert_eq!(eval_bits(&compact, &bits), want, "{name}: compact differs");
        assert_eq!(
            eval_bits(&depth.circuit, &bits),
            want,
            "{name}: depth differs"
        );
    }
    regions(&c).iter().map(|r| r.0).collect()
}

#[test]
fn min_over_another_type_runs_in_order_and_keeps_the_other_regions() {
    // `m = a[i] * 3` truncates the 64-bit value that `a[i] * 3 < m` compared: a min at `m`'s type
    // combined from partial results differs, so that loop (found on its own) runs in order;
    // the loops before and after it stay regions.
    let src = r#"
#include <stdint.h>
void mpc_main(int64_t INPUT_A_a[6], int32_t INPUT_B_b[6], int32_t *OUTPUT_m, int32_t *OUTPUT_s,
              int32_t *OUTPUT_x)
{
    int32_t s = 0;
    for (int i = 0; i < 6; i++)
        s += INPUT_B_b[i] * INPUT_B_b[i];
    int32_t m = INT32_MAX;
    for (int i = 0; i < 6; i++)
        if (INPUT_A_a[i] * 3 < m)
            m = INPUT_A_a[i] * 3;
    int32_t x = INT32_MIN;
    for (int i = 0; i < 6; i++)
        if (x < INPUT_B_b[i] * 5)
            x = INPUT_B_b[i] * 5;
    *OUTPUT_m = m; *OUTPUT_s = s; *OUTPUT_x = x;
}
"#;
    assert_eq!(region_lines_all_ways("mt.c", src), vec![7, 14]);
    check_gcc("min_other_type.c", src);
    // A loop that does not hit it keeps exactly its circuit: the same program with the
    // compared value cast compiles the two other loops alike (the min loop as a region).
    let cast = src.replace("INPUT_A_a[i] * 3", "(int32_t)(INPUT_A_a[i] * 3)");
    let c = compile(&cast);
    assert_eq!(
        regions(&c).iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![7, 10, 14]
    );
    check_gcc("min_other_type_cast.c", &cast);

    // Two such loops (a max over an unsigned value, a min over a double), each run in
    // order, in a function called twice.
    let two = r#"
#include <stdint.h>
static int32_t spread(const int64_t *a, const double *d, uint32_t *top)
{
    uint32_t hi = 0;
    for (int i = 0; i < 4; i++)
        if (hi < a[i])
            hi = a[i];
    int32_t lo = 1000;
    for (int i = 0; i < 4; i++)
        if (d[i] < lo)
            lo = d[i];
    *top = hi;
    return lo;
}
void mpc_main(int64_t INPUT_A_a[4], int8_t INPUT_B_q[4], int32_t *OUTPUT_lo, uint32_t *OUTPUT_hi,
              int32_t *OUTPUT_lo2)
{
    double d[4];
    for (int i = 0; i < 4; i++)
        d[i] = INPUT_B_q[i] / 3.0;
    *OUTPUT_lo = spread(INPUT_A_a, d, OUTPUT_hi);
    uint32_t unused;
    *OUTPUT_lo2 = spread(INPUT_A_a + 0, d, &unused);
}
"#;
    assert_eq!(region_lines_all_ways("two.c", two), vec![20]);
    check_gcc("minmax_other_types.c", two);
}

#[test]
fn min_and_max_over_values_that_order_alike_stay_regions() {
    // A narrower value that converts keeping its value, or a comparison made in the
    // variable's type (`u < b[i]` compares as unsigned, and `u = b[i]` converts alike),
    // orders the values as the variable's type does: the partial results combine. An
    // `unsigned` value against an `int` (compared as unsigned, kept as int) or an `int8_t`
    // against a `uint16_t` (compared as int, kept modulo 2^16) does not: that loop runs in
    // order.
    let src = r#"
#include <stdint.h>
void mpc_main(int16_t INPUT_A_a[6], int32_t INPUT_B_b[6], int8_t INPUT_B_c[6], int32_t *OUTPUT_p,
              int32_t *OUTPUT_m, uint32_t *OUTPUT_u, int16_t *OUTPUT_h, int64_t *OUTPUT_l,
              int32_t *OUTPUT_w, uint16_t *OUTPUT_y)
{
    int32_t p = 0, m = INT32_MAX;
    uint32_t u = 7;
    int16_t h = INT16_MIN;
    int64_t l = 0;
    for (int i = 0; i < 6; i++) {
        p += INPUT_A_a[i] * INPUT_B_b[i];
        if (INPUT_A_a[i] < m) m = INPUT_A_a[i];
        if (u < INPUT_B_b[i]) u = INPUT_B_b[i];
        if (INPUT_B_c[i] > h) h = INPUT_B_c[i];
        if (l < (uint32_t)INPUT_B_b[i]) l = (uint32_t)INPUT_B_b[i];
    }
    int32_t q = 0, w = 5;
    for (int i = 0; i < 6; i++) {
        q += INPUT_B_b[i] * INPUT_B_b[i];
        if (w < (uint32_t)INPUT_B_b[i]) w = (uint32_t)INPUT_B_b[i];
    }
    uint16_t y = 40000;
    for (int i = 0; i < 6; i++) {
        q += INPUT_A_a[i] * INPUT_A_a[i];
        if (INPUT_B_c[i] < y) y = INPUT_B_c[i];
    }
    *OUTPUT_p = p + q; *OUTPUT_m = m; *OUTPUT_u = u; *OUTPUT_h = h; *OUTPUT_l = l;
    *OUTPUT_w = w; *OUTPUT_y = y;
}
"#;
    assert_eq!(region_lines_all_ways("alike.c", src), vec![11]);
    check_gcc("minmax_alike.c", src);
}

#[test]
fn min_over_another_type_with_a_pragma_is_refused_with_advice() {
    // The pragma asks for a region that cannot compute what the loop does: refused, not
    // silently run in order.
    let src = r#"
#include <stdint.h>
void mpc_main(int64_t INPUT_A_a[4], int32_t *OUTPUT_m)
{
    int32_t m = INT32_MAX;
#pragma omp parallel for reduction(min: m)
    for (int i = 0; i < 4; i++)
        if (INPUT_A_a[i] < m)
            m = INPUT_A_a[i];
    *OUTPUT_m = m;
}
"#;
    let msg = compile_source(src, "mt.c", &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("mt.c:9:") && msg.contains("cast") && msg.contains("remove the pragma"),
        "{msg}"
    );
    // Without the pragma it compiles, the loop in order.
    let plain = src.replace("#pragma omp parallel for reduction(min: m)\n", "");
    assert_eq!(region_lines_all_ways("mt.c", &plain), Vec::<u32>::new());
    check_gcc("min_other_type_plain.c", &plain);
}

#[test]
fn sums_and_products_converted_from_floating_point_run_in_order() {
    // `s += e` with a double `e` computes in double and truncates into `s` every step;
    // partial sums of truncated steps differ (1 then -0.5: 0 in order, 1 from partials).
    // Integer steps of narrower or wider types wrap alike, so those stay regions.
    let src = r#"
#include <stdint.h>
void mpc_main(int8_t INPUT_A_a[8], int16_t INPUT_B_b[8], int32_t *OUTPUT_s, int32_t *OUTPUT_p,
              int32_t *OUTPUT_t, uint8_t *OUTPUT_n, int16_t *OUTPUT_x)
{
    int32_t s = 0;
    for (int i = 0; i < 8; i++)
        s += INPUT_A_a[i] / 4.0;
    int32_t p = 1, t = 3;
    for (int i = 0; i < 8; i++) {
        p = p * (INPUT_A_a[i] / 64.0);
        t = t - INPUT_A_a[i] * 0.75f;
    }
    uint8_t n = 0;
    int16_t x = 0;
    for (int i = 0; i < 8; i++) {
        n += INPUT_B_b[i] * INPUT_B_b[i];
        x ^= (int64_t)INPUT_B_b[i] * INPUT_A_a[i] >> 7;
    }
    *OUTPUT_s = s; *OUTPUT_p = p; *OUTPUT_t = t; *OUTPUT_n = n; *OUTPUT_x = x;
}
"#;
    assert_eq!(region_lines_all_ways("fs.c", src), vec![16]);
    check_gcc("float_steps.c", src);

    let pragma = r#"
void mpc_main(signed char INPUT_A_a[8], int *OUTPUT_s)
{
    int s = 0;
#pragma omp parallel for reduction(+: s)
    for (int i = 0; i < 8; i++)
        s += INPUT_A_a[i] / 4.0;
    *OUTPUT_s = s;
}
"#;
    let msg = compile_source(pragma, "fp.c", &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("fp.c:7:")
            && msg.contains("floating point")
            && msg.contains("remove the pragma"),
        "{msg}"
    );
}

#[test]
fn many_loops_that_are_not_regions_after_all_still_compile() {
    // Past the bound on passes, detection is off for every loop without a pragma: the
    // program still compiles, and computes what gcc does.
    let mut body = String::new();
    for k in 0..10 {
        body.push_str(&format!(
            "    for (int i = 0; i < 3; i++)\n        if (INPUT_A_a[i] + {k} < m) m = INPUT_A_a[i] + {k};\n"
        ));
    }
    let src = format!(
        "#include <stdint.h>\nvoid mpc_main(int64_t INPUT_A_a[3], int32_t *OUTPUT_m)\n{{\n    int32_t m = 100;\n{body}    *OUTPUT_m = m;\n}}\n"
    );
    assert!(region_lines_all_ways("many.c", &src).is_empty());
    check_gcc("many_not_regions.c", &src);
}

#[test]
fn seed_benchmarks_have_their_regions() {
    let root = common::repo_root();
    for (file, defines, want) in [
        ("examples/biomatch.c", vec!["BIOMATCH_N=16"], (16u64, 1u64)),
        ("examples/mexp.c", vec!["MEXP_K=4"], (4, 1)),
        ("examples/mvmul.c", vec!["MVMUL_M=4", "MVMUL_K=4"], (4, 1)),
    ] {
        let opts = Options {
            defines: defines.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        };
        let c = pgc_compiler::compile_file(&root.join(file), &opts).unwrap();
        let r = regions(&c);
        assert_eq!(r.len(), 1, "{file}: {r:?}");
        assert_eq!((r[0].1, r[0].2), want, "{file}");
    }
}
