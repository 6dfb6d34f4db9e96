//! The large benchmark programs — examples/edit_distance_large.c (the seed's EDT n x n),
//! examples/modexp.c (RSA-style square-and-multiply on uint32_t limbs) and examples/lwe_dot.c
//! (an LWE sample <a, s> + e) — at several small sizes: pgc's circuit against gcc on seeded
//! random and edge-case inputs (in cleartext, and one input set per size through the
//! two-party protocol), and against a Rust reference of what each program claims to compute.
//! The full benchmark sizes compile to millions of gates; `pgc compile --stats` measures them.

mod common;

use std::path::PathBuf;

use common::Rng;
use common::oracle::{
    Case, ProtocolVariant, check_inputs, eval_circuit, inputs_named, output_named,
    run_protocol_with,
};
use common::values::{Values, random_inputs};
use pgc_compiler::Compiled;

fn example(name: &str) -> PathBuf {
    common::repo_root().join("examples").join(name)
}

macro_rules! require_gcc {
    () => {
        if !common::gcc_available() {
            return;
        }
    };
}

/// The circuit's outputs must equal `reference(input)` on every input set where the
/// reference says what the program computes (`None`: outside the documented domain, where
/// only the comparison with gcc applies).
fn check_reference(
    case: &Case,
    c: &Compiled,
    inputs: &[Values],
    reference: impl Fn(&Values) -> Option<Values>,
) -> usize {
    let got = eval_circuit(c, inputs);
    let mut checked = 0;
    for (i, (input, out)) in inputs.iter().zip(&got).enumerate() {
        if let Some(want) = reference(input) {
            assert_eq!(
                *out,
                want,
                "{} {:?}: input set #{i} {input:?}: the circuit gives {out:?}, the reference \
                 {want:?}\nreproduce: {}",
                case.label,
                case.defines,
                case.reproduce_command(c, input)
            );
            checked += 1;
        }
    }
    checked
}

/// One run of the sequential protocol on `input`: each party must learn exactly the circuit's
/// outputs meant for it (the circuit itself is compared with gcc by `check_inputs`). The
/// modular exponentiation runs this way rather than in a thread-parallel mode picked from its
/// inputs: its circuits are deep and narrow (AND depth about a third of the gate count), where
/// threads gain nothing, and on a small loaded machine some modes take 10 to 60 times longer.
fn check_sequential_protocol(case: &Case, c: &Compiled, input: &Values) {
    let want = &eval_circuit(c, std::slice::from_ref(input))[0];
    let (a, b) = run_protocol_with(c, input, ProtocolVariant::Sequential)
        .unwrap_or_else(|e| panic!("{} {:?}: {e}", case.label, case.defines));
    for (party, view) in [(pgc_protocol::Party::A, a), (pgc_protocol::Party::B, b)] {
        for ((port, seen), value) in c.interface.outputs.iter().zip(&view).zip(want) {
            let visible = pgc_protocol::sees(port.visibility, party);
            assert_eq!(
                seen.as_ref(),
                visible.then_some(value),
                "{} {:?}: party {} and output {}\nreproduce: {}",
                case.label,
                case.defines,
                party.letter(),
                port.name,
                case.reproduce_command(c, input)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Edit distance

fn levenshtein(a: &[u64], b: &[u64]) -> u64 {
    let mut row: Vec<u64> = (0..=b.len() as u64).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i as u64 + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + u64::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Random strings, strings over two letters (so characters often match), and the edge cases:
/// equal strings (distance 0), strings with no character in common (distance n), one string
/// rotated by one place (distance 2 unless all its characters are equal), and one reversed.
fn edit_inputs(c: &Compiled, n: usize, rng: &mut Rng) -> Vec<Values> {
    let text = |rng: &mut Rng, letters: u64| -> Vec<u64> {
        (0..n).map(|_| 97 + rng.below(letters)).collect()
    };
    let mut inputs = Vec::new();
    inputs.push(vec![text(rng, 4), text(rng, 4)]);
    for _ in 0..16 {
        inputs.push(random_inputs(&c.interface, rng));
    }
    for _ in 0..24 {
        inputs.push(vec![text(rng, 2), text(rng, 2)]);
    }
    let s = text(rng, 26);
    inputs.push(vec![s.clone(), s.clone()]);
    inputs.push(vec![vec![0; n], vec![0; n]]);
    inputs.push(vec![vec![255; n], vec![255; n]]);
    inputs.push(vec![vec![b'a' as u64; n], vec![b'b' as u64; n]]);
    inputs.push(vec![vec![0; n], vec![255; n]]);
    let mut rotated = s.clone();
    rotated.rotate_left(1);
    inputs.push(vec![s.clone(), rotated]);
    let mut reversed = s.clone();
    reversed.reverse();
    inputs.push(vec![reversed, s]);
    inputs
}

#[test]
fn edit_distance_large() {
    require_gcc!();
    let mut rng = Rng::new(0xed17);
    for n in [1usize, 2, 7, 16, 31] {
        let define = format!("EDIT_LEN={n}");
        let case = Case::file(example("edit_distance_large.c"), &[define.as_str()]);
        let c = case.compile_or_panic();
        assert_eq!(c.interface.inputs[0].ctype.bit_width(), 8 * n as u64);
        assert_eq!(c.interface.outputs[0].ctype.bit_width(), 16);
        let inputs = edit_inputs(&c, n, &mut rng);
        check_inputs(&case, &c, &inputs, 1);
        check_reference(&case, &c, &inputs, |v| {
            Some(vec![vec![levenshtein(&v[0], &v[1])]])
        });
        // The edge cases' distances, independently of the reference.
        let outs = eval_circuit(&c, &inputs[inputs.len() - 7..]);
        let distances: Vec<u64> = outs.iter().map(|o| o[0][0]).collect();
        let n64 = n as u64;
        // A rotation of a string is the string itself when all its characters are equal, and
        // otherwise one deletion and one insertion away (never a single substitution).
        let s = &inputs[inputs.len() - 7][0];
        let rotated = if s.windows(2).all(|w| w[0] == w[1]) {
            0
        } else {
            2
        };
        assert_eq!(
            distances[..6],
            [0, 0, 0, n64, n64, rotated],
            "EDIT_LEN={n}: equal strings, no common character, rotation"
        );
    }
    // The command in the file's header and examples/README.md.
    let case = Case::file(example("edit_distance_large.c"), &["EDIT_LEN=6"]);
    let c = case.compile_or_panic();
    let word = |w: &[u8]| w.iter().map(|&x| i64::from(x)).collect::<Vec<i64>>();
    let input = inputs_named(
        &c,
        &[
            ("INPUT_A_text", word(b"kitten")),
            ("INPUT_B_text", word(b"sittin")),
        ],
    );
    let out = &eval_circuit(&c, std::slice::from_ref(&input))[0];
    assert_eq!(output_named(&c, out, "OUTPUT_distance"), [2]);
}

// ---------------------------------------------------------------------------------------------
// Modular exponentiation

fn limbs_of(bits: u32) -> usize {
    bits.div_ceil(32) as usize
}

/// A number as `limbs` uint32_t limbs, least significant first.
fn to_limbs(x: u128, limbs: usize) -> Vec<u64> {
    (0..limbs)
        .map(|k| ((x >> (32 * k)) & 0xffff_ffff) as u64)
        .collect()
}

fn from_limbs(v: &[u64]) -> u128 {
    v.iter()
        .enumerate()
        .map(|(k, &l)| u128::from(l as u32) << (32 * k))
        .sum()
}

fn low_bits(x: u128, bits: u32) -> u128 {
    if bits >= 128 {
        x
    } else {
        x & ((1u128 << bits) - 1)
    }
}

/// base^exponent mod modulus as the program documents it: every number cut to `bits` bits;
/// `None` for a zero modulus (no meaning). Up to 64 bits (products fit in u128).
fn modexp_reference(bits: u32, v: &Values) -> Option<Values> {
    assert!(bits <= 64, "the reference multiplies in u128");
    let base = low_bits(from_limbs(&v[0]), bits);
    let modulus = low_bits(from_limbs(&v[1]), bits);
    let exponent = low_bits(from_limbs(&v[2]), bits);
    if modulus == 0 {
        return None;
    }
    let mut result = 1 % modulus;
    for bit in (0..bits).rev() {
        result = result * result % modulus;
        if (exponent >> bit) & 1 == 1 {
            result = result * base % modulus;
        }
    }
    Some(vec![to_limbs(result, limbs_of(bits))])
}

/// 64 input sets (one bit-sliced pass): random keys and messages of `bits` bits, the
/// interface's edge-biased random values (which include zero moduli and bits above the
/// number's width), and the edge cases: moduli 1, 2, 3, 2^bits - 1, 2^bits - 3, 2^(bits-1) and
/// 2^(bits-1) + 1, each with base 0, 1, modulus - 1, above the modulus and random, and
/// exponent 0, 1, 2, all ones and random.
fn modexp_inputs(c: &Compiled, bits: u32, rng: &mut Rng) -> Vec<Values> {
    let limbs = limbs_of(bits);
    let random = |rng: &mut Rng| low_bits(u128::from(rng.next_u64()), bits);
    let set = |b: u128, m: u128, e: u128| {
        vec![to_limbs(b, limbs), to_limbs(m, limbs), to_limbs(e, limbs)]
    };
    let mut inputs = Vec::new();
    for _ in 0..8 {
        let m = random(rng) | 1 | (1 << (bits - 1)); // an RSA-like modulus: odd, full width
        let b = random(rng) % m;
        inputs.push(set(b, m, random(rng)));
    }
    for _ in 0..6 {
        inputs.push(random_inputs(&c.interface, rng));
    }
    let top = 1u128 << (bits - 1);
    let all_ones = (top - 1) | top;
    for m in [1, 2, 3, all_ones, all_ones - 2, top, top + 1] {
        let r = random(rng);
        let above = m.saturating_add(r % m) & all_ones;
        for (b, e) in [
            (0, 1),
            (1, all_ones),
            (m - 1, 2),
            (m - 1, all_ones),
            (r, 0),
            (r, 1),
            (above, random(rng)),
        ] {
            inputs.push(set(b, m, e));
        }
    }
    if !bits.is_multiple_of(32) {
        // Bits above RSA_BITS in the top limb are ignored.
        let junk = (!((1u128 << (bits % 32)) - 1) & 0xffff_ffff) << (32 * (limbs - 1));
        let m = all_ones - 2;
        inputs.push(set(5 | junk, m | junk, 3 | junk));
    }
    assert!(inputs.len() <= 64);
    inputs
}

fn modexp_size(bits: u32, seed: u64) {
    let define = format!("RSA_BITS={bits}");
    let case = Case::file(example("modexp.c"), &[define.as_str()]);
    let c = case.compile_or_panic();
    let limbs = limbs_of(bits);
    let ports = c.interface.inputs.iter().map(|p| (&p.name, &p.ctype));
    for (name, ctype) in ports.chain(c.interface.outputs.iter().map(|p| (&p.name, &p.ctype))) {
        assert_eq!(ctype.bit_width(), 32 * limbs as u64, "{name}");
    }
    let mut rng = Rng::new(seed);
    let inputs = modexp_inputs(&c, bits, &mut rng);
    check_inputs(&case, &c, &inputs, 0);
    check_sequential_protocol(&case, &c, &inputs[0]);
    let checked = check_reference(&case, &c, &inputs, |v| modexp_reference(bits, v));
    // Zero moduli (outside the documented domain) are compared with gcc only.
    assert!(
        checked * 2 >= inputs.len(),
        "RSA_BITS={bits}: only {checked} of {} input sets have a nonzero modulus",
        inputs.len()
    );
    eprintln!(
        "modexp RSA_BITS={bits}: {} AND gates, {} input sets",
        c.stats.and_gates_final,
        inputs.len()
    );
}

#[test]
fn modexp_16_bits() {
    require_gcc!();
    modexp_size(16, 0x16);
    // The command in the file's header: 42^(p-2) mod p is 42's inverse mod p = 65521.
    let case = Case::file(example("modexp.c"), &[]);
    let c = case.compile_or_panic();
    let input = inputs_named(
        &c,
        &[
            ("base", vec![42]),
            ("modulus", vec![65521]),
            ("exponent", vec![65519]),
        ],
    );
    let out = &eval_circuit(&c, std::slice::from_ref(&input))[0];
    assert_eq!(output_named(&c, out, "OUTPUT_result"), [63961]);
    assert_eq!(42 * 63961 % 65521, 1);
}

#[test]
fn modexp_32_bits() {
    require_gcc!();
    modexp_size(32, 0x32);
}

/// Two limbs, the top one holding a single bit: carries between limbs in the product and in
/// the long division, and the doubling's carry out of the top limb's only bit.
#[test]
fn modexp_33_bits() {
    require_gcc!();
    modexp_size(33, 0x33);
}

/// Two full limbs; about 3 million AND gates, 20 to 60 s in the test profile on a 2-core
/// machine: `cargo test -p pgc-compiler --test large_examples -- --ignored`.
#[test]
#[ignore = "slow: a 64-bit modular exponentiation (3 million AND gates) compiled and run"]
fn modexp_64_bits() {
    require_gcc!();
    modexp_size(64, 0x64);
}

#[test]
fn modexp_reference_is_modular_exponentiation() {
    // Against repeated multiplication, including exponents beyond the modulus.
    let mut rng = Rng::new(5);
    for _ in 0..200 {
        let m = 1 + rng.below(5000) as u128;
        let b = rng.below(1 << 16) as u128;
        let e = rng.below(300) as u128;
        let naive = (0..e).fold(1 % m, |acc, _| acc * b % m);
        let v = vec![to_limbs(b, 1), to_limbs(m, 1), to_limbs(e, 1)];
        assert_eq!(
            modexp_reference(16, &v),
            Some(vec![to_limbs(naive, 1)]),
            "{b}^{e} mod {m}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// LWE sample

fn lwe_reference(log_q: u32, v: &Values) -> Option<Values> {
    let sum = v[0].iter().zip(&v[1]).fold(0u32, |s, (&secret, &a)| {
        s.wrapping_add((secret as u32).wrapping_mul(a as u32))
    });
    let b = sum.wrapping_add(v[2][0] as u32);
    let mask = u32::MAX >> (32 - log_q);
    Some(vec![vec![u64::from(b & mask)]])
}

/// Random and edge-biased vectors, a small ternary secret (as LWE schemes use), and the edge
/// cases: all zeros, a secret of all -1 (every term wraps around), the largest values and
/// error, and products of the top bit.
fn lwe_inputs(c: &Compiled, n: usize, rng: &mut Rng) -> Vec<Values> {
    let mut inputs = Vec::new();
    let word = |rng: &mut Rng| rng.next_u64() & 0xffff_ffff;
    for _ in 0..8 {
        let secret = (0..n)
            .map(|_| [0, 1, 0xffff_ffff][rng.below(3) as usize])
            .collect();
        let vector = (0..n).map(|_| word(rng)).collect();
        inputs.push(vec![secret, vector, vec![rng.below(8)]]);
    }
    for _ in 0..24 {
        inputs.push(random_inputs(&c.interface, rng));
    }
    inputs.push(vec![vec![0; n], vec![0; n], vec![0]]);
    inputs.push(vec![vec![0xffff_ffff; n], vec![1; n], vec![0]]);
    inputs.push(vec![
        vec![0xffff_ffff; n],
        vec![0xffff_ffff; n],
        vec![0xffff_ffff],
    ]);
    inputs.push(vec![
        vec![0x8000_0000; n],
        vec![0x8000_0001; n],
        vec![0x7fff_ffff],
    ]);
    inputs
}

#[test]
fn lwe_dot() {
    require_gcc!();
    let mut rng = Rng::new(0x1e);
    for (n, log_q) in [(1usize, 32u32), (4, 32), (16, 32), (4, 16), (16, 13)] {
        let defines = [format!("LWE_N={n}"), format!("LWE_LOG_Q={log_q}")];
        let defines: Vec<&str> = defines.iter().map(String::as_str).collect();
        let case = Case::file(example("lwe_dot.c"), &defines);
        let c = case.compile_or_panic();
        let inputs = lwe_inputs(&c, n, &mut rng);
        check_inputs(&case, &c, &inputs, 1);
        check_reference(&case, &c, &inputs, |v| lwe_reference(log_q, v));
        if n > 1 {
            assert!(
                !c.regions.is_empty(),
                "LWE_N={n}: the term loop is a `+` reduction and should be a parallel region"
            );
        }
    }
    // The command in the file's header.
    let case = Case::file(example("lwe_dot.c"), &["LWE_N=4"]);
    let c = case.compile_or_panic();
    let input = inputs_named(
        &c,
        &[
            ("secret", vec![1, 0, 4_294_967_295, 2]),
            ("vector", vec![10, 20, 30, 40]),
            ("error", vec![3]),
        ],
    );
    let out = &eval_circuit(&c, std::slice::from_ref(&input))[0];
    assert_eq!(output_named(&c, out, "OUTPUT_sample"), [63]);
}

/// Without -D the programs take their documented small default sizes (the commands in their
/// headers and in examples/README.md rely on them, and tests/examples.rs runs them as they are).
#[test]
fn default_sizes() {
    let widths = |file: &str| -> Vec<u64> {
        let c = Case::file(example(file), &[]).compile_or_panic();
        let inputs = c.interface.inputs.iter().map(|p| p.ctype.bit_width());
        inputs
            .chain(c.interface.outputs.iter().map(|p| p.ctype.bit_width()))
            .collect()
    };
    assert_eq!(widths("edit_distance_large.c"), [16 * 8, 16 * 8, 16]);
    assert_eq!(widths("modexp.c"), [32, 32, 32, 32]);
    assert_eq!(widths("lwe_dot.c"), [16 * 32, 16 * 32, 32, 32]);
}
