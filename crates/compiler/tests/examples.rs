//! Every program in `examples/` checked three ways on seeded random inputs: pgc's circuit
//! against gcc (cleartext, and a few runs through the two-party protocol), and against a
//! reference implementation in Rust of what the example claims to compute. The commands in
//! examples/README.md are checked for the values the README states.
//!
//! The seed benchmarks run at full size too (`*_full_size`; BioMatch's protocol run is
//! `#[ignore]`d: `cargo test -p pgc-compiler --test examples -- --ignored`).

mod common;

use std::path::PathBuf;

use common::Rng;
use common::oracle::{
    Case, check_case, check_inputs, eval_circuit, inputs_named, output_named, protocol_variants,
    run_protocol_with,
};
use common::values::{Values, random_inputs};
use pgc_compiler::Compiled;

fn example(name: &str) -> PathBuf {
    common::repo_root().join("examples").join(name)
}

/// Leaf `k` of input port `port` as a signed number of `bits` bits.
fn signed(v: u64, bits: u32) -> i64 {
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

/// The circuit's outputs must equal `reference(inputs)` on `n` random input sets.
fn check_reference(
    case: &Case,
    c: &Compiled,
    n: usize,
    seed: u64,
    reference: impl Fn(&Values) -> Values,
) {
    let mut rng = Rng::new(seed);
    let inputs: Vec<Values> = (0..n)
        .map(|_| random_inputs(&c.interface, &mut rng))
        .collect();
    check_reference_on(case, c, &inputs, reference);
}

fn check_reference_on(
    case: &Case,
    c: &Compiled,
    inputs: &[Values],
    reference: impl Fn(&Values) -> Values,
) {
    let got = eval_circuit(c, inputs);
    for (i, (input, out)) in inputs.iter().zip(&got).enumerate() {
        let want = reference(input);
        assert_eq!(
            *out,
            want,
            "{}: input set #{i} {input:?}: the circuit gives {out:?}, the reference {want:?}\n\
             reproduce: {}",
            case.label,
            case.reproduce_command(c, input)
        );
    }
}

/// Runs one input set (by port short names) through the circuit; returns `output`'s value.
fn run_named(c: &Compiled, inputs: &[(&str, Vec<i64>)], output: &str) -> Vec<i128> {
    let input = inputs_named(c, inputs);
    let out = eval_circuit(c, std::slice::from_ref(&input));
    output_named(c, &out[0], output)
}

macro_rules! require_gcc {
    () => {
        if !common::gcc_available() {
            return;
        }
    };
}

#[test]
fn millionaires() {
    require_gcc!();
    let case = Case::file(example("millionaires.c"), &[]);
    let c = check_case(&case, 200, 2, 1);
    check_reference(&case, &c, 200, 2, |v| {
        let (a, b) = (signed(v[0][0], 32), signed(v[1][0], 32));
        vec![vec![(a > b) as u64]]
    });
    assert_eq!(
        run_named(
            &c,
            &[("income", vec![5000]), ("INPUT_B_income", vec![7000])],
            "OUTPUT_result"
        ),
        [0]
    );
    assert_eq!(
        run_named(
            &c,
            &[("income", vec![-3]), ("INPUT_B_income", vec![-4])],
            "OUTPUT_result"
        ),
        [1]
    );
}

fn dot_product_reference(v: &Values) -> Values {
    let sum = v[0].iter().zip(&v[1]).fold(0i32, |s, (&a, &b)| {
        s.wrapping_add((a as i32).wrapping_mul(b as i32))
    });
    vec![vec![sum as u32 as u64]]
}

#[test]
fn dot_product_listing_2_local_style() {
    require_gcc!();
    for defines in [&["N=4"][..], &[][..]] {
        let case = Case::file(example("dot_product.c"), defines);
        let c = check_case(&case, 100, 1, 3);
        assert!(c.entry_params.is_empty(), "inputs and outputs are locals");
        check_reference(&case, &c, 100, 4, dot_product_reference);
        if defines == ["N=4"] {
            let got = run_named(
                &c,
                &[("a", vec![1, 2, 3, 4]), ("b", vec![5, 6, 7, 8])],
                "OUTPUT_res",
            );
            assert_eq!(got, [70]);
        }
    }
}

fn biomatch_reference(n: usize, d: usize) -> impl Fn(&Values) -> Values {
    move |v: &Values| {
        let db = &v[0];
        let sample = &v[1];
        let mut best = i64::MAX;
        for j in 0..n {
            let mut dist = 0i64;
            for i in 0..d {
                let diff = (sample[i] as i64).wrapping_sub(db[j * d + i] as i64);
                dist = dist.wrapping_add(diff.wrapping_mul(diff));
            }
            best = best.min(dist);
        }
        vec![vec![best as u64]]
    }
}

#[test]
fn biomatch_small() {
    require_gcc!();
    let case = Case::file(example("biomatch.c"), &["BIOMATCH_N=4", "BIOMATCH_D=3"]);
    let c = check_case(&case, 200, 2, 5);
    check_reference(&case, &c, 200, 6, biomatch_reference(4, 3));
    let case = Case::file(example("biomatch.c"), &["BIOMATCH_N=2"]);
    let c = case.compile_or_panic();
    let got = run_named(
        &c,
        &[
            ("db", vec![1, 2, 3, 4, 9, 9, 9, 9]),
            ("sample", vec![1, 2, 3, 5]),
        ],
        "OUTPUT_min_dist",
    );
    assert_eq!(got, [1]);
}

/// The seed's parameters: n = 512 templates, d = 4, 64-bit. Cleartext against gcc and the
/// reference (one compile, ~5 s in the test profile).
#[test]
fn biomatch_full_size() {
    require_gcc!();
    let case = Case::file(example("biomatch.c"), &[]);
    let c = case.compile_or_panic();
    assert_eq!(c.interface.inputs[0].ctype.bit_width(), 512 * 4 * 64);
    assert_eq!(c.interface.inputs[1].ctype.bit_width(), 4 * 64);
    eprintln!(
        "BioMatch (512 x 4, 64-bit): {} AND gates",
        c.stats.and_gates_final
    );
    let mut rng = Rng::new(7);
    let inputs: Vec<Values> = (0..16)
        .map(|_| random_inputs(&c.interface, &mut rng))
        .collect();
    check_inputs(&case, &c, &inputs, 0);
    check_reference_on(&case, &c, &inputs, biomatch_reference(512, 4));
}

#[test]
#[ignore = "slow: a full-size BioMatch run through the two-party protocol"]
fn biomatch_full_size_protocol() {
    require_gcc!();
    let case = Case::file(example("biomatch.c"), &[]);
    check_case(&case, 2, 1, 8);
}

fn modexp(base: u32, exponent: u32, modulus: u32) -> u32 {
    let mut result = 1u32;
    let mut square = base % modulus;
    let mut e = exponent;
    for _ in 0..32 {
        if e & 1 == 1 {
            result = result.wrapping_mul(square) % modulus;
        }
        square = square.wrapping_mul(square) % modulus;
        e >>= 1;
    }
    result
}

fn mexp_reference(v: &Values) -> Values {
    vec![
        v[0].iter()
            .zip(&v[1])
            .map(|(&b, &e)| modexp(b as u32, e as u32, 65521) as u64)
            .collect(),
    ]
}

#[test]
fn mexp_small() {
    require_gcc!();
    let case = Case::file(example("mexp.c"), &["MEXP_K=2"]);
    let c = check_case(&case, 100, 1, 9);
    check_reference(&case, &c, 100, 10, mexp_reference);
    let got = run_named(
        &c,
        &[("base", vec![3, 10]), ("exponent", vec![5, 65520])],
        "OUTPUT_power",
    );
    assert_eq!(got, [243, 1], "3^5 = 243; 10^(p-1) = 1 mod p (Fermat)");
    // The reference itself against repeated multiplication.
    for (b, e) in [
        (2u64, 0u32),
        (2, 40),
        (65_520, 3),
        (123_456, 17),
        (7, 65_520),
    ] {
        let naive = (0..e).fold(1u64, |acc, _| acc * b % 65_521);
        assert_eq!(modexp(b as u32, e, 65_521) as u64, naive, "{b}^{e}");
    }
}

/// The seed's parameters: k = 32 exponentiations of 32 iterations, 32-bit.
#[test]
fn mexp_full_size() {
    require_gcc!();
    let case = Case::file(example("mexp.c"), &[]);
    let c = check_case(&case, 64, 0, 11);
    assert_eq!(c.interface.inputs[0].ctype.bit_width(), 1024);
    assert_eq!(c.interface.inputs[1].ctype.bit_width(), 1024);
    eprintln!(
        "MExp (k = 32, 32-bit): {} AND gates",
        c.stats.and_gates_final
    );
    check_reference(&case, &c, 64, 12, mexp_reference);
}

fn mvmul_reference(m: usize, k: usize) -> impl Fn(&Values) -> Values {
    move |v: &Values| {
        let out = (0..m)
            .map(|r| {
                (0..k).fold(0i64, |s, col| {
                    s.wrapping_add((v[0][r * k + col] as i64).wrapping_mul(v[1][col] as i64))
                }) as u64
            })
            .collect();
        vec![out]
    }
}

#[test]
fn mvmul_small() {
    require_gcc!();
    let case = Case::file(example("mvmul.c"), &["MVMUL_M=3", "MVMUL_K=4"]);
    let c = check_case(&case, 100, 2, 13);
    check_reference(&case, &c, 100, 14, mvmul_reference(3, 4));
    let case = Case::file(example("mvmul.c"), &["MVMUL_M=2", "MVMUL_K=2"]);
    let c = case.compile_or_panic();
    let got = run_named(
        &c,
        &[("matrix", vec![1, 2, 3, 4]), ("vector", vec![5, 6])],
        "OUTPUT_product",
    );
    assert_eq!(got, [17, 39]);
}

/// The seed's parameters: 16 x 16 by 16, 64-bit; also one protocol run (about a million
/// AND gates).
#[test]
fn mvmul_full_size() {
    require_gcc!();
    let case = Case::file(example("mvmul.c"), &[]);
    let c = check_case(&case, 64, 1, 15);
    assert_eq!(c.interface.inputs[0].ctype.bit_width(), 16 * 16 * 64);
    eprintln!(
        "MVMul (16 x 16, 64-bit): {} AND gates",
        c.stats.and_gates_final
    );
    check_reference(&case, &c, 64, 16, mvmul_reference(16, 16));
}

fn levenshtein(a: &[u64], b: &[u64]) -> u64 {
    let mut row: Vec<u64> = (0..=b.len() as u64).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i as u64 + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + (ca != cb) as u64);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[test]
fn edit_distance() {
    require_gcc!();
    let case = Case::file(example("edit_distance.c"), &[]);
    let c = check_case(&case, 100, 1, 17);
    let reference = |v: &Values| vec![vec![levenshtein(&v[0], &v[1])]];
    check_reference(&case, &c, 100, 18, reference);
    // Random text rarely shares characters: also strings over a two-letter alphabet.
    let mut rng = Rng::new(19);
    let inputs: Vec<Values> = (0..64)
        .map(|_| {
            (0..2)
                .map(|_| (0..16).map(|_| 97 + rng.below(2)).collect())
                .collect()
        })
        .collect();
    check_inputs(&case, &c, &inputs, 0);
    check_reference_on(&case, &c, &inputs, reference);

    let case = Case::file(example("edit_distance.c"), &["EDIT_LEN=6"]);
    let c = case.compile_or_panic();
    let kitten = b"kitten".iter().map(|&x| x as i64).collect();
    let sittin = b"sittin".iter().map(|&x| x as i64).collect();
    assert_eq!(
        run_named(
            &c,
            &[("INPUT_A_text", kitten), ("INPUT_B_text", sittin)],
            "OUTPUT_distance"
        ),
        [2]
    );
}

#[test]
fn hamming() {
    require_gcc!();
    let case = Case::file(example("hamming.c"), &[]);
    let c = check_case(&case, 200, 2, 20);
    check_reference(&case, &c, 200, 21, |v| {
        let d: u32 = v[0]
            .iter()
            .zip(&v[1])
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        vec![vec![d as u64]]
    });
    let case = Case::file(example("hamming.c"), &["HAMMING_WORDS=2"]);
    let c = case.compile_or_panic();
    let got = run_named(
        &c,
        &[
            ("bits", vec![0xffff_ffff, 0]),
            ("INPUT_B_bits", vec![0x0000_ffff, 1]),
        ],
        "OUTPUT_distance",
    );
    assert_eq!(got, [17]);
}

fn auction_reference(v: &Values) -> Values {
    let bids: Vec<u64> = v[0].iter().chain(&v[1]).copied().collect();
    let (mut highest, mut second, mut winner) = (0u64, 0u64, 0u64);
    for (i, &b) in bids.iter().enumerate() {
        if b > highest {
            second = highest;
            highest = b;
            winner = i as u64;
        } else if b > second {
            second = b;
        }
    }
    vec![vec![winner], vec![second]]
}

#[test]
fn auction() {
    require_gcc!();
    let case = Case::file(example("auction.c"), &[]);
    let c = check_case(&case, 200, 2, 22);
    check_reference(&case, &c, 200, 23, auction_reference);
    let input = inputs_named(
        &c,
        &[
            ("bids", vec![100, 250, 80, 40]),
            ("INPUT_B_bids", vec![120, 90, 300, 10]),
        ],
    );
    let out = &eval_circuit(&c, std::slice::from_ref(&input))[0];
    assert_eq!(output_named(&c, out, "OUTPUT_winner"), [6]);
    assert_eq!(output_named(&c, out, "OUTPUT_price"), [250]);
    // A tie: the lower number wins and pays the tied bid.
    let input = inputs_named(
        &c,
        &[
            ("bids", vec![5, 300, 0, 0]),
            ("INPUT_B_bids", vec![300, 7, 0, 0]),
        ],
    );
    let out = &eval_circuit(&c, std::slice::from_ref(&input))[0];
    assert_eq!(output_named(&c, out, "OUTPUT_winner"), [1]);
    assert_eq!(output_named(&c, out, "OUTPUT_price"), [300]);
}

#[test]
fn median() {
    require_gcc!();
    let case = Case::file(example("median.c"), &[]);
    let c = check_case(&case, 100, 2, 24);
    // Sorted lists, as the example expects: the lower median of the union.
    let mut rng = Rng::new(25);
    let inputs: Vec<Values> = (0..100)
        .map(|_| {
            (0..2)
                .map(|_| {
                    let mut list: Vec<i64> = (0..16).map(|_| rng.below(200) as i64 - 100).collect();
                    list.sort();
                    list.iter().map(|&x| x as u32 as u64).collect()
                })
                .collect()
        })
        .collect();
    check_inputs(&case, &c, &inputs, 1);
    check_reference_on(&case, &c, &inputs, |v| {
        let mut all: Vec<i64> = v[0].iter().chain(&v[1]).map(|&x| signed(x, 32)).collect();
        all.sort();
        vec![vec![all[15] as u32 as u64]]
    });
    let case = Case::file(example("median.c"), &["MEDIAN_N=4"]);
    let c = case.compile_or_panic();
    let got = run_named(
        &c,
        &[
            ("list", vec![1, 5, 9, 13]),
            ("INPUT_B_list", vec![2, 3, 20, 30]),
        ],
        "OUTPUT_median",
    );
    assert_eq!(got, [5]);
}

/// Every example in examples/ has a test here and a line in examples/README.md.
#[test]
fn every_example_is_tested_and_documented() {
    let tested = [
        "millionaires.c",
        "dot_product.c",
        "biomatch.c",
        "mexp.c",
        "mvmul.c",
        "edit_distance.c",
        "hamming.c",
        "auction.c",
        "median.c",
        // Tested in large_examples.rs.
        "edit_distance_large.c",
        "modexp.c",
        "lwe_dot.c",
    ];
    let readme = std::fs::read_to_string(example("README.md")).expect("examples/README.md");
    let dir = common::repo_root().join("examples");
    for entry in std::fs::read_dir(&dir).expect("examples/") {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".c") {
            assert!(
                tested.contains(&name.as_str()),
                "examples/{name} has no test in examples.rs"
            );
            assert!(
                readme.contains(&format!("pgc local examples/{name}")),
                "examples/README.md has no `pgc local examples/{name}` line"
            );
        }
    }
}

/// Every example (at small sizes) through the protocol in every parallel mode with 1, 2, 3
/// and 8 threads, and the sequential protocol: each party sees exactly the circuit's outputs
/// it may see (the circuit itself is checked against gcc above).
#[test]
fn every_example_in_every_parallel_mode() {
    let cases: [(&str, &[&str]); 12] = [
        ("millionaires.c", &[]),
        ("dot_product.c", &["N=6"]),
        ("biomatch.c", &["BIOMATCH_N=5", "BIOMATCH_D=2"]),
        ("mexp.c", &["MEXP_K=3"]),
        ("mvmul.c", &["MVMUL_M=3", "MVMUL_K=2"]),
        ("edit_distance.c", &["EDIT_LEN=4"]),
        ("hamming.c", &["HAMMING_WORDS=2"]),
        ("auction.c", &[]),
        ("median.c", &["MEDIAN_N=4"]),
        ("edit_distance_large.c", &["EDIT_LEN=4"]),
        ("modexp.c", &[]),
        ("lwe_dot.c", &["LWE_N=4"]),
    ];
    let mut rng = Rng::new(44);
    for (file, defines) in cases {
        let case = Case::file(example(file), defines);
        let c = case.compile_or_panic();
        let input = random_inputs(&c.interface, &mut rng);
        let want = &eval_circuit(&c, std::slice::from_ref(&input))[0];
        for variant in protocol_variants() {
            let (a, b) = run_protocol_with(&c, &input, variant)
                .unwrap_or_else(|e| panic!("{file} {variant:?}: {e}"));
            for (party, view) in [(pgc_protocol::Party::A, a), (pgc_protocol::Party::B, b)] {
                for ((port, seen), value) in c.interface.outputs.iter().zip(&view).zip(want) {
                    let visible = pgc_protocol::sees(port.visibility, party);
                    assert_eq!(
                        seen.as_ref(),
                        visible.then_some(value),
                        "{file} {variant:?}: party {} and output {}",
                        party.letter(),
                        port.name
                    );
                }
            }
        }
    }
}
