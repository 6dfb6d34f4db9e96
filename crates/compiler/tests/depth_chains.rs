//! `--optimize depth` rebalances the associative chains a program writes serially (see the
//! compiler's `deferred` module): the circuits must still compute exactly what gcc computes,
//! and their AND depth must grow with the logarithm of a chain's length.
//!
//! - [`chain_programs_agree_with_gcc`]: seeded random programs built from accumulation
//!   patterns (sums of products, `-=`, `++`, `*=`, `&=`, `|=`, `^=`, the min/max spellings,
//!   helper functions, updates under secret conditions, secret `break`/`continue`, secret
//!   indices, struct members, prefix sums and other non-associative uses mid-chain, and
//!   MVMul/BioMatch-shaped loops that become parallel regions), compiled in depth mode and
//!   run against gcc.
//! - [`random_programs_agree_with_gcc_in_depth_mode`]: the general random-program generator's
//!   programs, compiled in depth mode.
//! - [`examples_agree_with_gcc_in_depth_mode`]: the shipped examples, at small sizes.
//! - [`depth_grows_with_the_logarithm`]: AND depths of chains of 4, 16 and 64.
//!
//! Knobs: `PGC_DEPTH_CHAINS_COUNT=N` (programs per test, default 40), `PGC_DEPTH_CHAINS_BASE=S`
//! (the first seed, default 1), `PGC_DEPTH_CHAINS_SEEDS=a,b` (exactly these seeds, to
//! reproduce a failure).

mod common;

use common::Rng;
use common::oracle::{Case, GccOracle, compare};
use common::values::{Values, random_inputs};
use pgc_circuit::OptimizeFor;
use pgc_compiler::randprog::{self, Config};
use pgc_compiler::{Compiled, Options, compile_source};

fn depth_options(entry: &str) -> Options {
    Options {
        entry: Some(entry.to_string()),
        optimize: OptimizeFor::Depth,
        unroll_limit: 4096,
        ..Options::default()
    }
}

/// Compiles every case, runs each on `inputs_per_case` seeded inputs through gcc and the
/// circuit (and one in `protocol_every` through the protocol), and reports all mismatches.
fn check_all(cases: &[Case], inputs_per_case: usize, protocol_every: usize) {
    let mut failures = Vec::new();
    let mut ok: Vec<(usize, Compiled)> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        match case.compile_within(common::oracle::COMPILE_LIMIT) {
            Ok(c) => ok.push((i, c)),
            Err(e) => failures.push(format!(
                "pgc rejected {}:\n  {e}\n--- program ---\n{}",
                case.label,
                case.source.text()
            )),
        }
    }
    let pairs: Vec<(&Case, &Compiled)> = ok.iter().map(|(i, c)| (&cases[*i], c)).collect();
    if !pairs.is_empty() {
        let oracle = GccOracle::build(&pairs).unwrap_or_else(|e| panic!("{e}"));
        let inputs: Vec<Vec<Values>> = ok
            .iter()
            .map(|(i, c)| {
                let mut rng = Rng::new(*i as u64 ^ 0xdeb7_5eed);
                (0..inputs_per_case)
                    .map(|_| random_inputs(&c.interface, &mut rng))
                    .collect()
            })
            .collect();
        let calls: Vec<(usize, &Values)> = inputs
            .iter()
            .enumerate()
            .flat_map(|(u, sets)| sets.iter().map(move |v| (u, v)))
            .collect();
        let mut results = oracle
            .run(&calls)
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter();
        for (u, (i, c)) in ok.iter().enumerate() {
            let gcc: Vec<_> = results.by_ref().take(inputs_per_case).collect();
            let protocol_runs = usize::from(u % protocol_every == 0);
            let mut f = compare(&cases[*i], c, &inputs[u], &gcc, protocol_runs);
            if !f.is_empty() {
                f.truncate(2);
                failures.push(format!(
                    "{}\n--- program ---\n{}",
                    f.join("\n"),
                    cases[*i].source.text()
                ));
            }
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} of {} programs failed; the first ones:\n\n{}",
            failures.len(),
            cases.len(),
            failures
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n\n==========\n\n")
        );
    }
}

// ---- a generator of accumulation patterns ----------------------------------------------------

/// C integer types: (name, smallest value, largest value).
const TYPES: &[(&str, &str, &str)] = &[
    ("int8_t", "INT8_MIN", "INT8_MAX"),
    ("uint8_t", "0", "UINT8_MAX"),
    ("int16_t", "INT16_MIN", "INT16_MAX"),
    ("uint16_t", "0", "UINT16_MAX"),
    ("int32_t", "INT32_MIN", "INT32_MAX"),
    ("uint32_t", "0", "UINT32_MAX"),
    ("int32_t", "INT32_MIN", "INT32_MAX"),
    ("int64_t", "INT64_MIN", "INT64_MAX"),
    ("uint64_t", "0", "UINT64_MAX"),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Sum,
    Product,
    And,
    Or,
    Xor,
    Min,
    Max,
}

struct Acc {
    name: String,
    ty: usize,
    role: Role,
}

struct Gen {
    r: Rng,
    /// Prefix of every global name (many programs share one C file in the oracle).
    p: String,
    n: usize,
    helpers: Vec<String>,
    fresh: usize,
}

impl Gen {
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        *self.r.pick(items)
    }

    /// A side-effect-free expression over the inputs at iteration `i`.
    fn expr(&mut self, acc_ty: &str) -> String {
        let n = self.n;
        let forms: Vec<String> = vec![
            "INPUT_A_x[i]".into(),
            "INPUT_B_y[i]".into(),
            "INPUT_B_c".into(),
            "INPUT_A_x[i] * INPUT_B_y[i]".into(),
            format!("({acc_ty})INPUT_A_x[i] * INPUT_B_y[i]"),
            "INPUT_A_x[i] * INPUT_B_y[i] * INPUT_B_c".into(),
            "(INPUT_A_x[i] - INPUT_B_y[i])".into(),
            "(INPUT_A_x[i] + INPUT_B_c)".into(),
            "INPUT_A_x[i] * 3".into(),
            format!("INPUT_B_y[(i + 1) % {n}] * INPUT_A_x[i]"),
            "(INPUT_A_x[i] < INPUT_B_y[i])".into(),
            "(INPUT_A_x[i] ^ INPUT_B_c)".into(),
            "(INPUT_A_x[i] & INPUT_B_y[i])".into(),
            "(INPUT_A_x[i] | INPUT_B_c)".into(),
            "-INPUT_A_x[i]".into(),
            "(INPUT_A_x[i] * INPUT_A_x[i] + INPUT_B_y[i] * INPUT_B_y[i])".into(),
        ];
        self.r.pick(&forms).clone()
    }

    fn cond(&mut self) -> String {
        self.pick(&[
            "INPUT_A_x[i] > INPUT_B_y[i]",
            "(INPUT_A_x[i] & 1)",
            "INPUT_B_c < INPUT_A_x[i]",
            "INPUT_A_x[i] == INPUT_B_y[i]",
            "i < INPUT_B_c",
            "(INPUT_B_y[i] & 2)",
        ])
        .to_string()
    }

    /// A min/max update of `s` (type `t`) by `e`, in one of C's spellings.
    fn minmax(&mut self, s: &str, t: &str, max: bool) -> String {
        let e = format!("({t})({})", self.expr(t));
        let (lt, gt) = if max { (">", "<") } else { ("<", ">") };
        let le = if max { ">=" } else { "<=" };
        match self.r.below(8) {
            0 => format!("if ({e} {lt} {s}) {s} = {e};"),
            1 => format!("if ({e} {le} {s}) {{ {s} = {e}; }}"),
            2 => format!("if ({s} {gt} {e}) {s} = {e};"),
            3 => format!("{s} = {e} {lt} {s} ? {e} : {s};"),
            4 => format!("{s} = {s} {gt} {e} ? {e} : {s};"),
            5 => format!("{s} = {s} {lt} {e} ? {s} : {e};"),
            6 => {
                let h = format!("{}{}_{}", self.p, if max { "max" } else { "min" }, t);
                if !self.helpers.iter().any(|x| x.contains(&format!(" {h}("))) {
                    self.helpers.push(format!(
                        "static {t} {h}({t} a, {t} b) {{ return a {lt} b ? a : b; }}\n"
                    ));
                }
                format!("{s} = {h}({s}, {e});")
            }
            _ => {
                let c = self.cond();
                format!("if ({c}) {{ if ({e} {lt} {s}) {s} = {e}; }}")
            }
        }
    }

    /// One statement of `a`'s chain (or, now and then, something that breaks it).
    fn update(&mut self, a: &Acc, accs: &[Acc]) -> String {
        let (s, t) = (a.name.as_str(), TYPES[a.ty].0);
        if self.r.percent(12) {
            // A non-associative use mid-chain.
            return match self.r.below(6) {
                0 => format!("if ({s} > ({t})INPUT_B_c) {s} = {s} >> 1;"),
                1 => format!("{s} = {s} % 13;"),
                2 => format!("OUTPUT_trace[i] = (int64_t){s};"),
                3 => format!("{s} ^= {s} >> 3;"),
                4 => {
                    let other = &accs[self.r.below(accs.len() as u64) as usize];
                    format!("{} += {s};", other.name)
                }
                _ => {
                    self.fresh += 1;
                    let k = self.fresh;
                    format!("{t} t{k} = {s}; t{k} += {}; {s} -= t{k};", self.expr(t))
                }
            };
        }
        let e = self.expr(t);
        match a.role {
            Role::Sum => match self.r.below(12) {
                0 => format!("{s} += {e};"),
                1 => format!("{s} -= {e};"),
                2 => format!("{s} = {s} + {e};"),
                3 => format!("{s} = {e} + {s};"),
                4 => format!("{s} = {s} - {e};"),
                5 => self.pick(&["s++;", "s--;", "++s;", "--s;"]).replace('s', s),
                6 => format!("if ({}) {s} += {e};", self.cond()),
                7 => format!(
                    "if ({}) {{ {s} -= {e}; }} else {{ {s} += {}; }}",
                    self.cond(),
                    self.expr(t)
                ),
                8 => {
                    let h = format!("{}mul", self.p);
                    format!("{s} += {h}(INPUT_A_x[i], INPUT_B_y[i]);")
                }
                9 => {
                    self.fresh += 1;
                    format!("{t} t{} = {e}; {s} += t{};", self.fresh, self.fresh)
                }
                10 => format!("if ({}) {s}++;", self.cond()),
                _ => format!("{s} += {e}; {s} += {};", self.expr(t)),
            },
            Role::Product => match self.r.below(4) {
                0 => format!("{s} *= {e};"),
                1 => format!("{s} = {s} * {e};"),
                2 => format!("{s} = ({t})({e}) * {s};"),
                _ => format!("if ({}) {s} *= {e};", self.cond()),
            },
            Role::And | Role::Or | Role::Xor => {
                let op = match a.role {
                    Role::And => "&",
                    Role::Or => "|",
                    _ => "^",
                };
                match self.r.below(5) {
                    0 => format!("{s} {op}= {e};"),
                    1 => format!("{s} = {s} {op} {e};"),
                    2 => format!("{s} {op}= (INPUT_A_x[i] != INPUT_B_y[i]);"),
                    3 => format!("if ({}) {s} {op}= {e};", self.cond()),
                    _ => format!("{s} = ({t})({e}) {op} {s};"),
                }
            }
            Role::Min => self.minmax(s, t, false),
            Role::Max => self.minmax(s, t, true),
        }
    }

    fn init(&mut self, a: &Acc) -> String {
        let (t, min, max) = TYPES[a.ty];
        match a.role {
            Role::Sum | Role::Or | Role::Xor => self.pick(&["0", "INPUT_B_c", "5"]).to_string(),
            Role::Product => self.pick(&["1", "INPUT_B_c", "3"]).to_string(),
            Role::And => self.pick(&["-1", "INPUT_B_c"]).to_string(),
            Role::Min => {
                if self.r.percent(70) {
                    max.to_string()
                } else {
                    format!("({t})INPUT_B_c")
                }
            }
            Role::Max => {
                if self.r.percent(70) {
                    min.to_string()
                } else {
                    format!("({t})INPUT_B_c")
                }
            }
        }
    }
}

/// A program of accumulation patterns for `seed`; its entry is `c<seed>_main`.
fn chain_program(seed: u64) -> (String, String) {
    let mut g = Gen {
        r: Rng::new(seed ^ 0xc4a1_5eed),
        p: format!("c{seed}_"),
        n: 0,
        helpers: Vec::new(),
        fresh: 0,
    };
    let p = g.p.clone();
    let n = 1 + g.r.below(7) as usize;
    g.n = n;
    let tx = TYPES[g.r.below(TYPES.len() as u64) as usize].0;
    let ty = TYPES[g.r.below(TYPES.len() as u64) as usize].0;
    let tc = TYPES[g.r.below(TYPES.len() as u64) as usize].0;
    let entry = format!("{p}main");
    let mut body = String::new();
    let mut params = vec![
        format!("{tx} INPUT_A_x[{n}]"),
        format!("{ty} INPUT_B_y[{n}]"),
        format!("{tc} INPUT_B_c"),
    ];
    if g.r.percent(35) {
        // MVMul- or BioMatch-shaped: a parallel region over rows, each a chain of its own,
        // then a min or max over the rows (a reduction).
        let rows = 2 + g.r.below(4) as usize;
        let t = TYPES[g.r.below(TYPES.len() as u64) as usize];
        let (tn, tmin, tmax) = t;
        let max = g.r.percent(50);
        params.insert(0, format!("{tx} INPUT_A_m[{rows}][{n}]"));
        params.push(format!("{tn} OUTPUT_rows[{rows}]"));
        params.push(format!("{tn} *OUTPUT_best"));
        let term = g.pick(&[
            "INPUT_A_m[r][i] * INPUT_B_y[i]",
            "d * d",
            "(INPUT_A_m[r][i] < INPUT_B_y[i] ? INPUT_B_y[i] - INPUT_A_m[r][i] : INPUT_A_m[r][i] - INPUT_B_y[i])",
        ]);
        let guard = if g.r.percent(30) {
            "if (INPUT_A_m[r][i] != INPUT_B_c) "
        } else {
            ""
        };
        let (cmp, init) = if max { (">", tmin) } else { ("<", tmax) };
        body.push_str(&format!(
            "    {tn} best = {init};\n    for (int r = 0; r < {rows}; r++) {{\n        {tn} acc = 0;\n        \
             for (int i = 0; i < {n}; i++) {{\n            {tn} d = INPUT_A_m[r][i] - INPUT_B_y[i];\n            \
             {guard}acc += {term};\n        }}\n        OUTPUT_rows[r] = acc;\n        \
             if (acc {cmp} best) best = acc;\n    }}\n    *OUTPUT_best = best;\n"
        ));
    }
    let roles = [
        Role::Sum,
        Role::Sum,
        Role::Product,
        Role::And,
        Role::Or,
        Role::Xor,
        Role::Min,
        Role::Max,
    ];
    let count = 1 + g.r.below(4) as usize;
    let accs: Vec<Acc> = (0..count)
        .map(|k| Acc {
            name: format!("s{k}"),
            ty: g.r.below(TYPES.len() as u64) as usize,
            role: *g.r.pick(&roles),
        })
        .collect();
    for a in &accs {
        let t = TYPES[a.ty].0;
        let init = g.init(a);
        body.push_str(&format!("    {t} {} = {init};\n", a.name));
        params.push(format!("{t} *OUTPUT_{}", a.name));
    }
    let ta = TYPES[accs[0].ty].0;
    body.push_str(&format!("    {ta} arr[3] = {{0, 1, 2}};\n"));
    body.push_str(&format!(
        "    struct {p}pair {{ {ta} f; {ta} g; }} st = {{0, 1}};\n"
    ));
    params.push("int64_t OUTPUT_trace[8]".to_string());
    params.push(format!("{ta} OUTPUT_arr[3]"));
    params.push(format!("{ta} *OUTPUT_st"));
    let nested = g.r.percent(20);
    body.push_str(&format!("    for (int i = 0; i < {n}; i++) {{\n"));
    if nested {
        body.push_str("      for (int j = 0; j < 2; j++) {\n");
    }
    let statements = 2 + g.r.below(4);
    for _ in 0..statements {
        let line = match g.r.below(10) {
            0 if g.r.percent(40) => format!("if ({}) break;", g.cond()),
            1 if g.r.percent(40) => format!("if ({}) continue;", g.cond()),
            2 => format!("arr[i % 3] += {};", g.expr(ta)),
            3 => format!("arr[INPUT_A_x[i] & 1] += {};", g.expr(ta)),
            4 => format!("st.f += {}; st.g = st.g * {};", g.expr(ta), g.expr(ta)),
            _ => {
                let k = g.r.below(accs.len() as u64) as usize;
                g.update(&accs[k], &accs)
            }
        };
        body.push_str(&format!("        {line}\n"));
    }
    if nested {
        body.push_str("      }\n");
    }
    body.push_str("    }\n");
    for a in &accs {
        body.push_str(&format!("    *OUTPUT_{0} = {0};\n", a.name));
    }
    body.push_str("    for (int k = 0; k < 3; k++) OUTPUT_arr[k] = arr[k];\n");
    body.push_str("    *OUTPUT_st = st.f + st.g;\n");
    let mul = format!("static {tx} {p}mul({tx} a, {ty} b) {{ return a * b; }}\n");
    let src = format!(
        "#include <stdint.h>\n{mul}{}void {entry}({})\n{{\n    for (int k = 0; k < 8; k++) OUTPUT_trace[k] = 0;\n{body}}}\n",
        g.helpers.concat(),
        params.join(", ")
    );
    (src, entry)
}

/// Accumulation patterns compiled in depth mode compute what gcc computes.
#[test]
fn chain_programs_agree_with_gcc() {
    if !common::gcc_available() {
        return;
    }
    let start = std::time::Instant::now();
    let cases: Vec<Case> = common::seeds("PGC_DEPTH_CHAINS", 40, 1)
        .into_iter()
        .map(|seed| {
            let (src, entry) = chain_program(seed);
            let mut case = Case::text(&format!("depth_chain_{seed}.c"), &src);
            case.label = format!(
                "chain program seed {seed} (rerun alone: PGC_DEPTH_CHAINS_SEEDS={seed} cargo test -p \
                 pgc-compiler --test depth_chains chain_programs)"
            );
            case.opts = depth_options(&entry);
            case
        })
        .collect();
    check_all(&cases, 8, 20);
    eprintln!(
        "{} chain programs checked in depth mode in {:.1?}",
        cases.len(),
        start.elapsed()
    );
}

/// The general random programs, compiled in depth mode, compute what gcc computes.
#[test]
fn random_programs_agree_with_gcc_in_depth_mode() {
    if !common::gcc_available() {
        return;
    }
    let start = std::time::Instant::now();
    let cases: Vec<Case> = common::seeds("PGC_DEPTH_CHAINS", 40, 1)
        .into_iter()
        .map(|seed| {
            let p = randprog::generate(seed, &format!("p{seed}"), &Config::from_env());
            let mut case = Case::text(&format!("random_{seed}.c"), &p.source);
            case.label = format!(
                "random program seed {seed} in depth mode (rerun alone: PGC_DEPTH_CHAINS_SEEDS={seed} \
                 cargo test -p pgc-compiler --test depth_chains random_programs)"
            );
            case.opts = Options {
                unroll_limit: 64,
                ..depth_options(&p.entry)
            };
            case
        })
        .collect();
    check_all(&cases, 8, 20);
    eprintln!(
        "{} random programs checked in depth mode in {:.1?}",
        cases.len(),
        start.elapsed()
    );
}

/// The shipped examples (at small sizes), compiled in depth mode, compute what gcc computes.
#[test]
fn examples_agree_with_gcc_in_depth_mode() {
    if !common::gcc_available() {
        return;
    }
    let examples: &[(&str, &[&str])] = &[
        ("auction.c", &["AUCTION_A=3", "AUCTION_B=2"]),
        ("biomatch.c", &["BIOMATCH_N=5", "BIOMATCH_D=3"]),
        ("dot_product.c", &["N=9"]),
        ("edit_distance.c", &["EDIT_LEN=4"]),
        ("hamming.c", &["HAMMING_WORDS=3"]),
        ("lwe_dot.c", &["LWE_N=6"]),
        ("median.c", &["MEDIAN_N=5"]),
        ("mexp.c", &["MEXP_K=2"]),
        ("millionaires.c", &[]),
        ("modexp.c", &["RSA_BITS=16"]),
        ("mvmul.c", &["MVMUL_M=3", "MVMUL_K=5"]),
    ];
    for (k, (file, defines)) in examples.iter().enumerate() {
        // One oracle each: the examples share their entry's name.
        let mut case = Case::file(common::repo_root().join("examples").join(file), defines);
        case.opts.optimize = OptimizeFor::Depth;
        common::oracle::check_case(&case, 6, usize::from(k % 4 == 0), 0xe8a_0000 + k as u64);
    }
}

// ---- depth --------------------------------------------------------------------------------------

fn and_depth(src: &str, optimize: OptimizeFor) -> u64 {
    let opts = Options {
        optimize,
        ..Options::default()
    };
    let c = compile_source(src, "chain.c", &opts).unwrap_or_else(|e| panic!("{e}\n{src}"));
    pgc_circuit::stats(&c.circuit).and_depth
}

/// A chain of `n` (`N` in the body) as a complete program over 32-bit inputs.
fn chain_of(n: usize, decl: &str, body: &str) -> String {
    format!(
        "#include <stdint.h>\nvoid mpc_main(int32_t INPUT_A_x[{n}], int32_t INPUT_B_y[{n}], int32_t *OUTPUT_r) {{\n\
         {decl}\n    for (int i = 0; i < {n}; i++) {{ {body} }}\n    *OUTPUT_r = s;\n}}\n"
    )
}

/// Growing a chain fourfold adds a few stages in depth mode, not four times the levels.
#[test]
fn depth_grows_with_the_logarithm() {
    // (what, declaration, loop body, most added depth per fourfold length in depth mode)
    let chains = [
        (
            "dot product",
            "int32_t s = 0;",
            "s += INPUT_A_x[i] * INPUT_B_y[i];",
            5,
        ),
        ("sum", "int32_t s = 0;", "s = s + INPUT_A_x[i];", 5),
        (
            "guarded sum",
            "int32_t s = 0;",
            "if (INPUT_A_x[i] > INPUT_B_y[i]) s += INPUT_A_x[i];",
            5,
        ),
        (
            "count",
            "int32_t s = 0;",
            "if (INPUT_A_x[i] == INPUT_B_y[i]) s++;",
            5,
        ),
        ("product", "int32_t s = 1;", "s *= INPUT_A_x[i];", 2 * 20),
        (
            "and of comparisons",
            "int32_t s = 1;",
            "s &= INPUT_A_x[i] != INPUT_B_y[i];",
            2,
        ),
        (
            "or",
            "int32_t s = 0;",
            "s |= INPUT_A_x[i] & INPUT_B_y[i];",
            2,
        ),
        (
            "min (if)",
            "int32_t s = INT32_MAX;",
            "if (INPUT_A_x[i] < s) s = INPUT_A_x[i];",
            2 * 7,
        ),
        (
            "max (?:)",
            "int32_t s = INT32_MIN;",
            "s = s > INPUT_A_x[i] ? s : INPUT_A_x[i];",
            2 * 7,
        ),
    ];
    for (what, decl, body, step) in chains {
        let depth = |n, mode| and_depth(&chain_of(n, decl, body), mode);
        let (d4, d16, d64) = (
            depth(4, OptimizeFor::Depth),
            depth(16, OptimizeFor::Depth),
            depth(64, OptimizeFor::Depth),
        );
        let serial64 = depth(64, OptimizeFor::Size);
        eprintln!(
            "{what}: depth {d4} / {d16} / {d64} for 4 / 16 / 64; size mode {serial64} for 64"
        );
        assert!(
            d16 <= d4 + step && d64 <= d16 + step,
            "{what}: AND depth {d4}, {d16}, {d64} for chains of 4, 16, 64 (allowed {step} more per fourfold)"
        );
    }
}

/// Deferral keeps parallel regions parallel: each instance materializes its own chains (so
/// the rows of a matrix-vector product stay in their instances), and a value deferred before
/// the loop is materialized before it (so no instance reads another's gates). Loops marked
/// `#pragma omp parallel for` would otherwise be refused as dependent.
#[test]
fn regions_stay_parallel_in_depth_mode() {
    let src = "#include <stdint.h>
        void mpc_main(int64_t INPUT_A_m[4][6], int64_t INPUT_B_v[6], int64_t INPUT_B_w[6],
                      int64_t OUTPUT_rows[4], int64_t *OUTPUT_dot) {
            int64_t bias = INPUT_B_v[0] * INPUT_B_w[0] + INPUT_B_v[1] * INPUT_B_w[1];
            int64_t scale = INPUT_B_w[2] + INPUT_B_w[3] + INPUT_B_w[4];
            #pragma omp parallel for
            for (int r = 0; r < 4; r++) {
                int64_t s = bias + (scale >> r);
                for (int i = 0; i < 6; i++) s += INPUT_A_m[r][i] * INPUT_B_v[i];
                OUTPUT_rows[r] = s;
            }
            int64_t d = 0;
            #pragma omp parallel for reduction(+: d)
            for (int i = 0; i < 6; i++) d += INPUT_B_v[i] * INPUT_B_w[i];
            *OUTPUT_dot = d;
        }";
    let opts = Options {
        optimize: OptimizeFor::Depth,
        ..Options::default()
    };
    let c = compile_source(src, "regions.c", &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.regions.len(), 2, "both loops are regions");
    let p = c.parallel_circuit().unwrap_or_else(|e| panic!("{e}"));
    let infos = p.region_info();
    let rows = infos
        .iter()
        .find(|r| r.instances == 4)
        .expect("the row region");
    let total = c.circuit.and_count();
    assert!(
        rows.and_gates * 10 >= total * 7,
        "the rows' carry-save trees stay in their instances: {} of {total} ANDs in the region",
        rows.and_gates
    );
    if common::gcc_available() {
        let mut case = Case::text("regions.c", src);
        case.opts = opts;
        common::oracle::check_case(&case, 8, 1, 0x4e91);
    }
}
