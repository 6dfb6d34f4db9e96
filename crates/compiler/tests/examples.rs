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
use pgc_circuit::OptimizeFor;
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

/// The textbook edit distance (inline loop, `int` cells): gcc and the reference agree, and
/// the value-range analysis narrows its cells (the distance never exceeds EDIT_LEN).
#[test]
fn edit_distance_textbook() {
    require_gcc!();
    let case = Case::file(example("edit_distance_textbook.c"), &[]);
    let c = check_case(&case, 100, 1, 45);
    let reference = |v: &Values| vec![vec![levenshtein(&v[0], &v[1])]];
    check_reference(&case, &c, 100, 46, reference);
    let mut rng = Rng::new(47);
    let inputs: Vec<Values> = (0..64)
        .map(|_| {
            (0..2)
                .map(|_| (0..16).map(|_| 97 + rng.below(2)).collect())
                .collect()
        })
        .collect();
    check_inputs(&case, &c, &inputs, 0);
    check_reference_on(&case, &c, &inputs, reference);

    let mut unnarrowed = case.clone();
    unnarrowed.opts.value_ranges = false;
    let wide = unnarrowed.compile_or_panic();
    check_inputs(&unnarrowed, &wide, &inputs, 0);
    eprintln!(
        "textbook edit distance (16): {} AND gates with value ranges, {} without",
        c.stats.and_gates_final, wide.stats.and_gates_final
    );
    // 5-bit cells instead of 32-bit ones: less than half the gates.
    assert!(2 * c.stats.and_gates_final < wide.stats.and_gates_final);

    let case = Case::file(example("edit_distance_textbook.c"), &["EDIT_LEN=6"]);
    let c = case.compile_or_panic();
    let kitten = b"kitten".iter().map(|&x| x as i64).collect();
    let sittin = b"sittin".iter().map(|&x| x as i64).collect();
    assert_eq!(
        run_named(
            &c,
            &[("INPUT_A_a", kitten), ("INPUT_B_b", sittin)],
            "OUTPUT_return"
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

/// The bit-by-bit Hamming distance: gcc and the reference agree; its narrowed counter keeps
/// it within a small factor of the SWAR version (examples/hamming.c).
#[test]
fn hamming_textbook() {
    require_gcc!();
    let case = Case::file(example("hamming_textbook.c"), &[]);
    let c = check_case(&case, 100, 1, 48);
    check_reference(&case, &c, 100, 49, |v| {
        let d: u32 = v[0]
            .iter()
            .zip(&v[1])
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        vec![vec![d as u64]]
    });
    let swar = Case::file(example("hamming.c"), &[]).compile_or_panic();
    eprintln!(
        "Hamming distance (512 bits): {} AND bit by bit, {} AND with the SWAR count",
        c.stats.and_gates_final, swar.stats.and_gates_final
    );
    // 512 additions of one bit into a 32-bit counter would be about 16,000 AND unnarrowed.
    assert!(c.stats.and_gates_final < 2 * swar.stats.and_gates_final);

    let case = Case::file(example("hamming_textbook.c"), &["HAMMING_WORDS=2"]);
    let c = case.compile_or_panic();
    let got = run_named(
        &c,
        &[
            ("INPUT_A_bits", vec![0xffff_ffff, 0]),
            ("INPUT_B_bits", vec![0x0000_ffff, 1]),
        ],
        "OUTPUT_distance",
    );
    assert_eq!(got, [17]);
}

/// Bubble sort of both parties' ints: gcc and a sort in Rust agree, on random values and on
/// values with many repeats.
#[test]
fn sort() {
    require_gcc!();
    let reference = |v: &Values| {
        let mut all: Vec<i64> = v[0].iter().chain(&v[1]).map(|&x| signed(x, 32)).collect();
        all.sort();
        vec![all.iter().map(|&x| x as u32 as u64).collect()]
    };
    let case = Case::file(example("sort.c"), &[]);
    let c = check_case(&case, 40, 1, 50);
    check_reference(&case, &c, 40, 51, reference);
    let mut rng = Rng::new(52);
    let repeats: Vec<Values> = (0..20)
        .map(|_| {
            (0..2)
                .map(|_| {
                    (0..16)
                        .map(|_| rng.below(3).wrapping_sub(1) & 0xffff_ffff)
                        .collect()
                })
                .collect()
        })
        .collect();
    check_inputs(&case, &c, &repeats, 0);
    check_reference_on(&case, &c, &repeats, reference);
    // At most one compare-and-swap per pair of the bubble network: 32 ANDs to compare, 32 to
    // swap (the swap shares one selection between both places).
    assert!(c.stats.and_gates_final <= 32 * 31 / 2 * 64);

    let case = Case::file(example("sort.c"), &["SORT_N=3"]);
    let c = case.compile_or_panic();
    let got = run_named(
        &c,
        &[
            ("INPUT_A_values", vec![7, -2, 5]),
            ("INPUT_B_values", vec![0, 9, 1]),
        ],
        "OUTPUT_sorted",
    );
    assert_eq!(got, [-2, 0, 1, 5, 7, 9]);
}

/// GF(2^8) multiplication modulo AES' polynomial x^8 + x^4 + x^3 + x + 1.
fn gf_mul(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0;
    while b != 0 {
        if b & 1 != 0 {
            product ^= a;
        }
        a = (a << 1) ^ if a & 0x80 != 0 { 0x1b } else { 0 };
        b >>= 1;
    }
    product
}

/// The S-box from its definition (FIPS-197 §5.1.1: inverse in GF(2^8), then the affine map),
/// not from a table, so that the reference does not share the example's table.
fn aes_sbox(x: u8) -> u8 {
    let inverse = (1..=255u8).find(|&y| gf_mul(x, y) == 1).unwrap_or(0);
    let mut out = 0x63;
    for i in 0..8 {
        let bit = (inverse >> i)
            ^ (inverse >> ((i + 4) % 8))
            ^ (inverse >> ((i + 5) % 8))
            ^ (inverse >> ((i + 6) % 8))
            ^ (inverse >> ((i + 7) % 8));
        out ^= (bit & 1) << i;
    }
    out
}

/// AES-128 encryption of one block (FIPS-197), column-major state as in the example.
fn aes128_reference(key: &[u8; 16], block: &[u8; 16]) -> [u8; 16] {
    let sbox: Vec<u8> = (0..=255u8).map(aes_sbox).collect();
    let mut words: Vec<[u8; 4]> = key.chunks(4).map(|w| [w[0], w[1], w[2], w[3]]).collect();
    let mut rcon = 1u8;
    for i in 4..44 {
        let mut t = words[i - 1];
        if i % 4 == 0 {
            t = [
                sbox[t[1] as usize] ^ rcon,
                sbox[t[2] as usize],
                sbox[t[3] as usize],
                sbox[t[0] as usize],
            ];
            rcon = gf_mul(rcon, 2);
        }
        let w = words[i - 4];
        words.push([w[0] ^ t[0], w[1] ^ t[1], w[2] ^ t[2], w[3] ^ t[3]]);
    }
    let round_key = |r: usize, i: usize| words[4 * r + i / 4][i % 4];
    let mut s: [u8; 16] = std::array::from_fn(|i| block[i] ^ round_key(0, i));
    for round in 1..=10 {
        let sub: [u8; 16] = std::array::from_fn(|i| sbox[s[i] as usize]);
        s = std::array::from_fn(|i| sub[4 * ((i / 4 + i % 4) % 4) + i % 4]);
        if round < 10 {
            let col = s;
            for c in 0..4 {
                for r in 0..4 {
                    s[4 * c + r] = gf_mul(col[4 * c + r], 2)
                        ^ gf_mul(col[4 * c + (r + 1) % 4], 3)
                        ^ col[4 * c + (r + 2) % 4]
                        ^ col[4 * c + (r + 3) % 4];
                }
            }
        }
        s = std::array::from_fn(|i| s[i] ^ round_key(round, i));
    }
    s
}

/// AES-128 with a table S-box: gcc, an AES reference built from the S-box's definition, and
/// FIPS-197's example vector agree.
#[test]
fn aes128() {
    require_gcc!();
    let case = Case::file(example("aes128.c"), &[]);
    let c = check_case(&case, 20, 1, 53);
    check_reference(&case, &c, 20, 54, |v| {
        let key: [u8; 16] = std::array::from_fn(|i| v[0][i] as u8);
        let block: [u8; 16] = std::array::from_fn(|i| v[1][i] as u8);
        vec![
            aes128_reference(&key, &block)
                .iter()
                .map(|&x| x as u64)
                .collect(),
        ]
    });
    let got = run_named(
        &c,
        &[
            ("INPUT_A_key", (0..16).collect()),
            ("INPUT_B_plaintext", (0..16).map(|i| i * 0x11).collect()),
        ],
        "OUTPUT_ciphertext",
    );
    let fips_197_c1 = [
        0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5,
        0x5a,
    ];
    assert_eq!(got, fips_197_c1);
    eprintln!(
        "AES-128, table S-box: {} AND gates",
        c.stats.and_gates_final
    );
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

/// The proximity examples compute in binary64 (REAL=double, the default) or binary32.
#[derive(Clone, Copy, Debug)]
enum Real {
    Double,
    Float,
}

impl Real {
    fn define(self) -> &'static str {
        match self {
            Real::Double => "REAL=double",
            Real::Float => "REAL=float",
        }
    }
    /// A value as the port's leaf: its bit pattern at this precision.
    fn leaf(self, x: f64) -> u64 {
        match self {
            Real::Double => x.to_bits(),
            Real::Float => (x as f32).to_bits() as u64,
        }
    }
    /// `f` evaluated at this precision: IEEE-754 arithmetic is deterministic, so the
    /// circuit's bits must equal these exactly (each operation rounded as in the C source).
    fn eval(self, f32_f: impl Fn() -> bool, f64_f: impl Fn() -> bool) -> bool {
        match self {
            Real::Double => f64_f(),
            Real::Float => f32_f(),
        }
    }
}

const EARTH_RADIUS: f64 = 6_371_000.0;
/// The radius the examples test against by default, in metres.
const PROXIMITY_EPSILON: f64 = 1000.0;

/// Uniform in [0, 1).
fn uniform(rng: &mut Rng) -> f64 {
    rng.below(1 << 53) as f64 / (1u64 << 53) as f64
}

/// Two positions on the sphere 0 to 2·ε metres apart (so that both answers occur):
/// latitude/longitude in radians.
fn positions_near(rng: &mut Rng) -> ((f64, f64), (f64, f64)) {
    let d = 2.0 * PROXIMITY_EPSILON * uniform(rng);
    let lat = (uniform(rng) * 160.0 - 80.0).to_radians();
    let lon = (uniform(rng) * 360.0 - 180.0).to_radians();
    let theta = uniform(rng) * std::f64::consts::TAU;
    let dlat = d / EARTH_RADIUS * theta.cos();
    let dlon = d / (EARTH_RADIUS * lat.cos()) * theta.sin();
    ((lat, lon), (lat + dlat, lon + dlon))
}

/// A proximity example checked three ways, at both precisions and both `--optimize` modes:
/// against gcc on random bit patterns (infinities, NaNs and subnormals among them), against
/// the formula evaluated in Rust with the same operations in the same order on realistic
/// positions around the radius (both answers must occur), and through the protocol.
fn check_proximity(
    file: &str,
    seed: u64,
    inputs_for: impl Fn(Real, &mut Rng) -> Values,
    near: impl Fn(Real, &Values) -> bool,
) {
    for real in [Real::Double, Real::Float] {
        for optimize in [OptimizeFor::Size, OptimizeFor::Depth] {
            let mut case = Case::file(example(file), &[real.define()]);
            case.opts.optimize = optimize;
            case.label = format!("{file} ({real:?}, {optimize:?})");
            let c = check_case(&case, 60, 1, seed);
            let mut rng = Rng::new(seed + 1);
            let inputs: Vec<Values> = (0..60).map(|_| inputs_for(real, &mut rng)).collect();
            check_inputs(&case, &c, &inputs, 1);
            let answers: Vec<bool> = inputs.iter().map(|v| near(real, v)).collect();
            assert!(
                answers.contains(&true) && answers.contains(&false),
                "{}: the sample should hold near and far pairs",
                case.label
            );
            check_reference_on(&case, &c, &inputs, |v| vec![vec![near(real, v) as u64]]);
        }
    }
}

fn f32_of(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

#[test]
fn proximity_utm() {
    require_gcc!();
    // UTM is a plane: eastings and northings in metres within one zone, 0 to 2·ε apart.
    let inputs = |real: Real, rng: &mut Rng| -> Values {
        let (x, y) = (
            166_000.0 + 668_000.0 * uniform(rng),
            9_300_000.0 * uniform(rng),
        );
        let (d, theta) = (
            2.0 * PROXIMITY_EPSILON * uniform(rng),
            std::f64::consts::TAU * uniform(rng),
        );
        let (x2, y2) = (x + d * theta.cos(), y + d * theta.sin());
        [x, y, x2, y2].iter().map(|&v| vec![real.leaf(v)]).collect()
    };
    let near = |real: Real, v: &Values| {
        real.eval(
            || {
                let [ax, ay, bx, by] = [0, 1, 2, 3].map(|i| f32_of(v[i][0]));
                let (dx, dy) = (ax - bx, ay - by);
                dx * dx + dy * dy < (PROXIMITY_EPSILON as f32) * (PROXIMITY_EPSILON as f32)
            },
            || {
                let [ax, ay, bx, by] = [0, 1, 2, 3].map(|i| f64::from_bits(v[i][0]));
                let (dx, dy) = (ax - bx, ay - by);
                dx * dx + dy * dy < PROXIMITY_EPSILON * PROXIMITY_EPSILON
            },
        )
    };
    check_proximity("proximity_utm.c", 61, inputs, near);
    // The README's command: about 670 m apart.
    let c = Case::file(example("proximity_utm.c"), &[]).compile_or_panic();
    let input: Values = [448251.9, 5411932.7, 448900.0, 5412100.0]
        .iter()
        .map(|&x: &f64| vec![x.to_bits()])
        .collect();
    assert_eq!(eval_circuit(&c, &[input])[0], vec![vec![1]]);
}

#[test]
fn proximity_ecef() {
    require_gcc!();
    const CHORD_SQUARED: f64 = 999999.9979469308;
    let point = |(lat, lon): (f64, f64)| {
        [
            EARTH_RADIUS * lat.cos() * lon.cos(),
            EARTH_RADIUS * lat.cos() * lon.sin(),
            EARTH_RADIUS * lat.sin(),
        ]
    };
    // The constant the example's header gives is 4 R^2 sin^2(eps / 2R).
    let s = (PROXIMITY_EPSILON / (2.0 * EARTH_RADIUS)).sin();
    assert!((4.0 * EARTH_RADIUS * EARTH_RADIUS * s * s - CHORD_SQUARED).abs() < 1e-6);
    let inputs = |real: Real, rng: &mut Rng| -> Values {
        let (a, b) = positions_near(rng);
        point(a)
            .iter()
            .chain(&point(b))
            .map(|&v| vec![real.leaf(v)])
            .collect()
    };
    let near = |real: Real, v: &Values| {
        real.eval(
            || {
                let p = [0, 1, 2, 3, 4, 5].map(|i| f32_of(v[i][0]));
                let (dx, dy, dz) = (p[0] - p[3], p[1] - p[4], p[2] - p[5]);
                dx * dx + dy * dy + dz * dz < CHORD_SQUARED as f32
            },
            || {
                let p = [0, 1, 2, 3, 4, 5].map(|i| f64::from_bits(v[i][0]));
                let (dx, dy, dz) = (p[0] - p[3], p[1] - p[4], p[2] - p[5]);
                dx * dx + dy * dy + dz * dz < CHORD_SQUARED
            },
        )
    };
    check_proximity("proximity_ecef.c", 63, inputs, near);
}

#[test]
fn proximity_haversine() {
    require_gcc!();
    const A_EPSILON: f64 = 6.1592069633415255e-09;
    // What each party computes from its own position (the example's PREPARE_INPUTS code).
    let terms_a = |(lat, lon): (f64, f64)| {
        let (sh, ch, so, co, c) = (
            (lat / 2.0).sin(),
            (lat / 2.0).cos(),
            (lon / 2.0).sin(),
            (lon / 2.0).cos(),
            lat.cos(),
        );
        [
            ch * ch,
            2.0 * ch * sh,
            sh * sh,
            c * so * so,
            2.0 * c * so * co,
            c * co * co,
        ]
    };
    let terms_b = |(lat, lon): (f64, f64)| {
        let (sh, ch, so, co, c) = (
            (lat / 2.0).sin(),
            (lat / 2.0).cos(),
            (lon / 2.0).sin(),
            (lon / 2.0).cos(),
            lat.cos(),
        );
        [
            sh * sh,
            sh * ch,
            ch * ch,
            c * co * co,
            c * co * so,
            c * so * so,
        ]
    };
    // The split into A's and B's factors is the haversine of the distance.
    let mut rng = Rng::new(64);
    for _ in 0..100 {
        let (a, b) = positions_near(&mut rng);
        let (ta, tb) = (terms_a(a), terms_b(b));
        let h = ta[0] * tb[0] - ta[1] * tb[1] + ta[2] * tb[2] + ta[3] * tb[3] - ta[4] * tb[4]
            + ta[5] * tb[5];
        let hav = ((b.0 - a.0) / 2.0).sin().powi(2)
            + a.0.cos() * b.0.cos() * ((b.1 - a.1) / 2.0).sin().powi(2);
        assert!((h - hav).abs() < 1e-15, "h {h} hav {hav}");
    }
    let inputs = |real: Real, rng: &mut Rng| -> Values {
        let (a, b) = positions_near(rng);
        vec![
            terms_a(a).iter().map(|&t| real.leaf(t)).collect(),
            terms_b(b).iter().map(|&t| real.leaf(t)).collect(),
        ]
    };
    let near = |real: Real, v: &Values| {
        real.eval(
            || {
                let (a, b) = (&v[0], &v[1]);
                let p = |i: usize| f32_of(a[i]) * f32_of(b[i]);
                p(0) - p(1) + p(2) + p(3) - p(4) + p(5) < A_EPSILON as f32
            },
            || {
                let (a, b) = (&v[0], &v[1]);
                let p = |i: usize| f64::from_bits(a[i]) * f64::from_bits(b[i]);
                p(0) - p(1) + p(2) + p(3) - p(4) + p(5) < A_EPSILON
            },
        )
    };
    check_proximity("proximity_haversine.c", 65, inputs, near);
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
        "edit_distance_textbook.c",
        "hamming.c",
        "hamming_textbook.c",
        "sort.c",
        "aes128.c",
        "auction.c",
        "median.c",
        "proximity_utm.c",
        "proximity_ecef.c",
        "proximity_haversine.c",
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

/// Every example (at small sizes) through GMW, Yao's sequential protocol and every parallel
/// mode with 1, 2, 3 and 8 threads: each party sees exactly the circuit's outputs
/// it may see (the circuit itself is checked against gcc above).
#[test]
fn every_example_under_gmw_and_every_yao_mode() {
    let cases: [(&str, &[&str]); 15] = [
        ("millionaires.c", &[]),
        ("dot_product.c", &["N=6"]),
        ("biomatch.c", &["BIOMATCH_N=5", "BIOMATCH_D=2"]),
        ("mexp.c", &["MEXP_K=3"]),
        ("mvmul.c", &["MVMUL_M=3", "MVMUL_K=2"]),
        ("edit_distance.c", &["EDIT_LEN=4"]),
        ("edit_distance_textbook.c", &["EDIT_LEN=4"]),
        ("hamming.c", &["HAMMING_WORDS=2"]),
        ("hamming_textbook.c", &["HAMMING_WORDS=2"]),
        ("sort.c", &["SORT_N=3"]),
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
