//! Cut-and-choose Yao, secure against a malicious garbler or evaluator: party A garbles
//! many copies of the circuit from seeds it commits to, party B checks a random subset by
//! regenerating them from their seeds and evaluates the rest, taking the majority output.
//!
//! It follows Kreuter, shelat, Shen, *Billion-Gate Secure Computation with Malicious
//! Adversaries* (USENIX Security 2012, "KSS12"): §3 the protocol and its three attacks,
//! §4.4 random-seed checking (a checked copy is regenerated from its seed and compared by
//! hash, never sent), §4.5 copies processed in lockstep so memory holds only the copies'
//! working sets. Each of KSS12's three attacks has its own defence here:
//!
//! - **Garbler input consistency**: the universal-hash check of shelat, Shen (*Fast
//!   two-party secure computation with minimal assumptions*, CCS 2013, §3.2): A commits to
//!   its input labels in every copy, B then picks a random binary matrix M, and every
//!   evaluated copy must give the same M·(x‖r) (r: A's random padding). With free XOR the
//!   hash wires are XORs of A's input labels, which B computes itself, so no garbled table
//!   and none of B's inputs touch them: a bad copy cannot make this check depend on B's
//!   input, and B may abort on it. A refuses an M whose r-columns lack full rank, so the
//!   hash reveals nothing about x.
//! - **Selective failure** on B's input: B's input y is encoded as y' with E·y' = y for a
//!   random block-diagonal matrix E = [I | R] that B draws (a probe-resistant matrix:
//!   Lindell, Pinkas, EUROCRYPT 2007, §3.1.1; shelat, Shen 2013, §3.1), and B obtains the
//!   labels of y' through actively secure OT (KOS15). A corrupting OT messages makes B
//!   abort with a probability that does not depend on y unless it corrupts at least S
//!   positions of one row's support.
//! - **Output authenticity**: B's outputs come from the majority of evaluated copies
//!   (KSS12 §3; shelat, Shen, EUROCRYPT 2011, for the copy counts). Outputs A may see
//!   return through B with a one-time MAC computed inside the circuit (the
//!   transformation of Lindell, Pinkas 2007, §2.4): the copies also output
//!   t = K·m ⊕ b for A's secret Toeplitz matrix K and pad b (and m = A-only outputs
//!   masked by A's one-time pad), so B cannot make A accept a wrong value except with
//!   probability 2^-S.
//!
//! # Copies
//!
//! With N copies of which c are checked, a cheating garbler wins only if no bad copy is
//! checked and at least half of the N − c evaluated copies are bad, with probability at
//! most C(N − b, c) / C(N, c) for b = ⌈(N − c)/2⌉. [`CopyPlan::for_stat_sec`] takes the
//! smallest N (and its best c) that makes this at most 2^-S: 123 copies, 78 checked, for
//! S = 40. Lindell's cheating recovery (CRYPTO 2013) would need only S copies but a second,
//! maliciously secure computation to recover A's input; it is not built (docs/malicious.md).
//!
//! # Message flow, after the [handshake](crate::handshake) (security level and S agreed)
//!
//! 1. A → B: commitments H(j ‖ seed_j) to the N copy seeds. A copy's Δ, hash key and all of
//!    its input labels derive from its seed; a copy is garbled exactly as semi-honest Yao
//!    garbles (see `pgc_garble`), with the MAC gates appended.
//! 2. B → A: the seed of the input encoding E. Actively secure random OT on y' (KOS15),
//!    then A → B: for every encoded bit and copy, both labels encrypted under the two OT
//!    keys; B decrypts the one it chose.
//! 3. A → B: a commitment H(nonce_j ‖ labels) to its active input labels in every copy.
//! 4. B → A: the seed of the hash matrix M. A checks its rank.
//! 5. A → B: for every copy, H(garbled tables ‖ output decoding bits ‖ hash decoding bits).
//! 6. B → A: the check set (c of the N copies, uniformly at random).
//! 7. A → B: the seeds of checked copies; for evaluated copies the opened input commitment
//!    and the decoding bits. Then the garbled tables of the evaluated copies, streamed in
//!    groups of copies in lockstep, then an empty frame.
//! 8. B checks: seeds against commitments; checked copies regenerated and hashed against
//!    their commitment, and B's OT labels in them against the seed; evaluated copies'
//!    tables and decoding bits against their commitment; the input hashes of evaluated
//!    copies equal. Any failure aborts, naming the check. B takes the output vector a
//!    strict majority of evaluated copies give (none: abort).
//! 9. B → A: ok with the MACed outputs A may see, or the name of the failed check. A checks
//!    the MAC.
//!
//! B learns its outputs and the masked, MACed values of A's; A learns its outputs. A
//! malicious party learns nothing more except with probability 2^-S; it can always make
//! the run abort (and learns that it did).
//!
//! The per-copy work of steps 5, 7 and 8 (`CopyWork`) is the same whether one process
//! does it for every copy or each rank of a cluster for its share ([`super::cluster`],
//! KSS12 §6).

use std::time::Instant;

use pgc_circuit::{Gate, GateSource, MemoryLimit, MemoryNeed, Op, Visibility, WireId};
use pgc_crypto::{Block, Prg};
use pgc_garble::{Evaluator, Garbler, and_count, random_delta};
use pgc_net::Channel;

use crate::malicious::Security;
use crate::malicious::cluster::Ranks;
use crate::malicious::input_ot;
use crate::secret_probe::{self, Secret};
use crate::yao::{
    HelloTerms, Outcome, Party, ProtocolError, begin, input_wires_by_owner, outcome, pack_bits,
    sees, unpack_bits,
};

/// How many circuit copies a run garbles and how many of them the evaluator checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    pub copies: usize,
    pub checked: usize,
}

impl CopyPlan {
    /// The fewest copies (and the best number of them to check) for which a cheating
    /// garbler wins the majority vote with probability at most 2^-`stat_sec`.
    pub fn for_stat_sec(stat_sec: u32) -> CopyPlan {
        let target = -(stat_sec as f64);
        // log2 n! for n up to the copies tried, so that each candidate costs O(1) rather
        // than a product over its check set (O(N^3) log2 calls in all: 10^7 for S = 128).
        let mut log2_factorial = vec![0.0f64];
        for copies in 1usize.. {
            log2_factorial.push(log2_factorial[copies - 1] + (copies as f64).log2());
            // Of the check-set sizes that meet the bound, the largest: a checked copy costs
            // one garbling on each side, an evaluated one two for A plus the transfer.
            if let Some(checked) = (0..copies)
                .rev()
                .find(|&c| Self::cheat_log2_from(&log2_factorial, copies, c) <= target)
            {
                return CopyPlan { copies, checked };
            }
        }
        unreachable!("the loop returns once the bound is met")
    }

    /// Copies evaluated (the rest are checked).
    pub fn evaluated(&self) -> usize {
        self.copies - self.checked
    }

    /// log2 of the largest probability that a cheating garbler passes the checks with a
    /// majority of bad evaluated copies.
    pub fn cheat_probability_log2(&self) -> f64 {
        Self::cheat_log2(self.copies, self.checked)
    }

    /// [`Self::cheat_log2`] as log2 C(N − b, c) − log2 C(N, c) from a table of log2 n!
    /// up to N (the same plans as the product for every S of 1 to 128: `copy_plan_from_factorials_is_the_products`).
    fn cheat_log2_from(log2_factorial: &[f64], copies: usize, checked: usize) -> f64 {
        let bad = (copies - checked).div_ceil(2);
        if copies - bad < checked {
            return f64::NEG_INFINITY;
        }
        let f = |n: usize| log2_factorial[n];
        // C(n, c) = n! / (c! (n − c)!); the c! cancel.
        (f(copies - bad) - f(copies - bad - checked)) - (f(copies) - f(copies - checked))
    }

    pub(crate) fn cheat_log2(copies: usize, checked: usize) -> f64 {
        let bad = (copies - checked).div_ceil(2);
        // C(N − b, c) / C(N, c) = Π_{i<c} (N − b − i) / (N − i).
        let mut log2 = 0.0;
        for i in 0..checked {
            if copies - bad <= i {
                return f64::NEG_INFINITY;
            }
            log2 += ((copies - bad - i) as f64).log2() - ((copies - i) as f64).log2();
        }
        log2
    }
}

/// Test-only deviations of a cheating party (see the tests): release builds have only
/// `Honest`, so the release CLI cannot cheat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Cheat {
    #[default]
    Honest,
    /// A: flips a bit of one garbled table of these copies (bitmask of copy indices).
    #[cfg(test)]
    CorruptTable { copies: u128 },
    /// A: uses a different input (first bit flipped) in this copy.
    #[cfg(test)]
    InconsistentInput { copy: usize },
    /// A: sends a wrong OT label for value `side` of encoded bit 0 in this copy.
    #[cfg(test)]
    WrongOtLabel { copy: usize, side: bool },
    /// A: opens a wrong seed for the first checked copy.
    #[cfg(test)]
    WrongSeed,
    /// A: commits to (and sends) a flipped output decoding bit in these copies.
    #[cfg(test)]
    WrongDecoding { copies: u128 },
    /// B: asks to check one copy more than the plan allows.
    #[cfg(test)]
    OversizedCheckSet,
    /// B: reports a flipped output bit to A.
    #[cfg(test)]
    WrongOutputToGarbler,
}

impl Cheat {
    #[allow(unused_variables)]
    fn corrupts_table(self, copy: usize) -> bool {
        #[cfg(test)]
        if let Cheat::CorruptTable { copies } = self {
            return copy < 128 && copies >> copy & 1 == 1;
        }
        false
    }
    #[allow(unused_variables)]
    fn flips_input(self, copy: usize) -> bool {
        #[cfg(test)]
        if let Cheat::InconsistentInput { copy: c } = self {
            return c == copy;
        }
        false
    }
    #[allow(unused_variables)]
    fn flips_decoding(self, copy: usize) -> bool {
        #[cfg(test)]
        if let Cheat::WrongDecoding { copies } = self {
            return copy < 128 && copies >> copy & 1 == 1;
        }
        false
    }
    #[allow(unused_variables)]
    fn ot_label_flip(self, copy: usize, encoded_bit: usize, side: bool) -> bool {
        #[cfg(test)]
        if let Cheat::WrongOtLabel { copy: c, side: s } = self {
            return c == copy && encoded_bit == 0 && s == side;
        }
        false
    }
    fn opens_wrong_seed(self) -> bool {
        #[cfg(test)]
        if self == Cheat::WrongSeed {
            return true;
        }
        false
    }
    fn oversizes_check_set(self) -> bool {
        #[cfg(test)]
        if self == Cheat::OversizedCheckSet {
            return true;
        }
        false
    }
    fn lies_about_output(self) -> bool {
        #[cfg(test)]
        if self == Cheat::WrongOutputToGarbler {
            return true;
        }
        false
    }
}

/// Bits of the one-time MAC on A's outputs (forgery probability 2^-S).
fn mac_bits(stat_sec: u32) -> usize {
    stat_sec as usize
}

/// Rows of the input-consistency hash: two different inputs of any two evaluated copies
/// collide with probability 2^-rows, so S + 2·log2(N) rows bound all pairs by 2^-S.
fn hash_rows(stat_sec: u32, copies: usize) -> usize {
    stat_sec as usize + 2 * (usize::BITS - copies.leading_zeros()) as usize
}

/// Padding bits beyond the hash rows (see `Shape::new`).
const PADDING_SLACK: usize = 80;

/// Most rows of B's input per encoding block.
const ENCODING_BLOCK: usize = 128;

/// Domain strings of the commitments (blake3 key derivation).
const SEED_COMMIT: &str = "pgc cut-and-choose seed commitment v1";
const INPUT_COMMIT: &str = "pgc cut-and-choose garbler input commitment v1";
const COPY_COMMIT: &str = "pgc cut-and-choose garbled copy commitment v1";
const B_LABELS_HASH: &str = "pgc cut-and-choose evaluator OT labels v1";

/// Everything about the run both parties derive from the circuit, the input owners, the
/// output visibility and S.
pub(super) struct Shape {
    pub(super) plan: CopyPlan,
    pub(super) stat_sec: u32,
    num_wires: usize,
    a_wires: Vec<WireId>,
    pub(super) b_wires: Vec<WireId>,
    /// A's extended input: [its input bits | masks of A-only outputs | Toeplitz key κ |
    /// MAC pad b | padding r]; `*_at` are offsets into it.
    pub(super) ext_len: usize,
    mask_at: usize,
    kappa_at: usize,
    pad_at: usize,
    r_at: usize,
    pub(super) rows: usize,
    /// Wires of the appended MAC gates' inputs, in extended-input order from `mask_at`.
    tail_inputs: Vec<WireId>,
    tail: Vec<Gate>,
    /// Wires B decodes in every evaluated copy: its visible outputs, then the masked A-only
    /// outputs, then the MAC.
    pub(super) decoded: Vec<WireId>,
    /// How many of `decoded` are B's own outputs, and the MAC's length.
    b_out_len: usize,
    mac_len: usize,
    /// For each output bit A may see (in output order): its index in `decoded`, and whether
    /// it is masked (A-only).
    a_view: Vec<(usize, bool)>,
}

impl Shape {
    pub(super) fn new<S: GateSource>(
        circuit: &S,
        owners: &[Party],
        visibility: &[Visibility],
        stat_sec: u32,
    ) -> Shape {
        let plan = CopyPlan::for_stat_sec(stat_sec);
        let layout = circuit.layout();
        let (a_wires, b_wires) = input_wires_by_owner(layout, owners);
        let num_wires = layout.num_wires as usize;

        // Outputs: B's own, and those A may see (masked when B may not see them).
        let mut decoded = Vec::new();
        let mut a_only = Vec::new();
        let mut a_view_src = Vec::new(); // (wire, masked)
        for (j, &v) in visibility.iter().enumerate() {
            for &w in layout.output_wires_of(j) {
                if sees(v, Party::B) {
                    decoded.push(w);
                }
                if sees(v, Party::A) {
                    a_view_src.push((w, !sees(v, Party::B)));
                    if !sees(v, Party::B) {
                        a_only.push(w);
                    }
                }
            }
        }
        let b_out_len = decoded.len();
        let l = a_view_src.len();
        let mac_len = if l == 0 { 0 } else { mac_bits(stat_sec) };
        let rows = hash_rows(stat_sec, plan.copies);
        let n_a = a_wires.len();
        let mask_at = n_a;
        let kappa_at = mask_at + a_only.len();
        let pad_at = kappa_at + if l == 0 { 0 } else { mac_len + l - 1 };
        let r_at = pad_at + mac_len;
        // Rank-deficient padding columns (which A refuses) then happen with probability
        // below 2^-80 for an honest B's random M.
        let ext_len = r_at + rows + PADDING_SLACK;

        // The MAC gates, on wires after the circuit's.
        let mut next = num_wires as WireId;
        let mut fresh = || {
            let w = next;
            next += 1;
            w
        };
        let tail_inputs: Vec<WireId> = (mask_at..r_at).map(|_| fresh()).collect();
        let mask_wire = |k: usize| tail_inputs[k];
        let kappa_wire = |k: usize| tail_inputs[kappa_at - mask_at + k];
        let pad_wire = |k: usize| tail_inputs[pad_at - mask_at + k];
        let mut tail = Vec::new();
        let mut m_wires = Vec::with_capacity(l);
        let mut masked_seen = 0;
        for &(w, masked) in &a_view_src {
            if masked {
                let m = fresh();
                tail.push(Gate {
                    op: Op::Xor,
                    a: w,
                    b: mask_wire(masked_seen),
                    out: m,
                });
                masked_seen += 1;
                decoded.push(m);
                m_wires.push(m);
            } else {
                m_wires.push(w);
            }
        }
        let tmp = fresh();
        for r in 0..mac_len {
            let t = fresh();
            tail.push(Gate {
                op: Op::Copy,
                a: pad_wire(r),
                b: 0,
                out: t,
            });
            for (i, &m) in m_wires.iter().enumerate() {
                tail.push(Gate::and(kappa_wire(r + l - 1 - i), m, tmp));
                tail.push(Gate {
                    op: Op::Xor,
                    a: t,
                    b: tmp,
                    out: t,
                });
            }
            decoded.push(t);
        }
        // Where each bit A may see sits in `decoded`.
        let mut a_view = Vec::with_capacity(l);
        let mut masked_seen = 0;
        let mut b_index = 0;
        let b_visible_positions: Vec<WireId> = decoded[..b_out_len].to_vec();
        for &(w, masked) in &a_view_src {
            if masked {
                a_view.push((b_out_len + masked_seen, true));
                masked_seen += 1;
            } else {
                // Both-visible: find it among B's outputs, in order.
                while b_visible_positions[b_index] != w {
                    b_index += 1;
                }
                a_view.push((b_index, false));
                b_index += 1;
            }
        }
        Shape {
            plan,
            stat_sec,
            num_wires: next as usize,
            a_wires,
            b_wires,
            ext_len,
            mask_at,
            kappa_at,
            pad_at,
            r_at,
            rows,
            tail_inputs,
            tail,
            decoded,
            b_out_len,
            mac_len,
            a_view,
        }
    }

    fn a_view_len(&self) -> usize {
        self.a_view.len()
    }

    /// The MAC A expects for the values `m` it may see (in `a_view` order).
    fn mac(&self, ext: &[bool], m: &[bool]) -> Vec<bool> {
        let l = m.len();
        (0..self.mac_len)
            .map(|r| {
                let mut t = ext[self.pad_at + r];
                for (i, &mi) in m.iter().enumerate() {
                    t ^= ext[self.kappa_at + r + l - 1 - i] & mi;
                }
                t
            })
            .collect()
    }
}

/// B's input encoding y = E·y' with E block-diagonal, each block [I | R] for a random R
/// (probe-resistant: every non-empty sum of a block's rows has weight ≥ S w.h.p.).
pub(super) struct Encoding {
    blocks: Vec<EncodingBlock>,
    pub(super) len: usize,
}

struct EncodingBlock {
    /// First row (bit of y) and number of rows.
    row: usize,
    rows: usize,
    /// First encoded bit of this block: `rows` identity bits, then `extra` shared ones.
    col: usize,
    extra: usize,
    /// R, row by row, `extra` bits per row in u64 words.
    r: Vec<Vec<u64>>,
}

impl Encoding {
    pub(super) fn new(n: usize, stat_sec: u32, seed: Block) -> Encoding {
        let mut prg = Prg::from_seed(seed);
        let mut blocks = Vec::new();
        let (mut row, mut col) = (0, 0);
        while row < n {
            let rows = ENCODING_BLOCK.min(n - row);
            let extra = (3 * rows).max(8 * stat_sec as usize);
            let words = extra.div_ceil(64);
            let r = (0..rows)
                .map(|_| {
                    let mut w = vec![0u64; words];
                    for x in w.iter_mut() {
                        *x = prg.random_u64();
                    }
                    if !extra.is_multiple_of(64) {
                        w[words - 1] &= (1u64 << (extra % 64)) - 1;
                    }
                    w
                })
                .collect();
            blocks.push(EncodingBlock {
                row,
                rows,
                col,
                extra,
                r,
            });
            row += rows;
            col += rows + extra;
        }
        Encoding { blocks, len: col }
    }

    /// A uniformly random y' with E·y' = y.
    fn encode(&self, y: &[bool], prg: &mut Prg) -> Vec<bool> {
        let mut out = vec![false; self.len];
        for b in &self.blocks {
            let extra: Vec<bool> = (0..b.extra).map(|_| prg.random_bool()).collect();
            for i in 0..b.rows {
                let mut bit = y[b.row + i];
                for (t, &e) in extra.iter().enumerate() {
                    bit ^= e & (b.r[i][t / 64] >> (t % 64) & 1 == 1);
                }
                out[b.col + i] = bit;
            }
            out[b.col + b.rows..b.col + b.rows + b.extra].copy_from_slice(&extra);
        }
        out
    }

    /// The labels of y from the labels of y' (free XOR: the label of a XOR is the XOR).
    fn fold(&self, encoded: &[Block]) -> Vec<Block> {
        let mut out = Vec::with_capacity(self.blocks.iter().map(|b| b.rows).sum());
        for b in &self.blocks {
            let extra = &encoded[b.col + b.rows..b.col + b.rows + b.extra];
            for i in 0..b.rows {
                let mut l = encoded[b.col + i];
                for (w, &word) in b.r[i].iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        let t = w * 64 + bits.trailing_zeros() as usize;
                        l ^= extra[t];
                        bits &= bits - 1;
                    }
                }
                out.push(l);
            }
        }
        out
    }
}

/// What a copy's seed determines.
struct CopyKeys {
    delta: Block,
    hash_key: Block,
    /// Seeds of the streams of A's extended-input zero-labels and of the encoded-input
    /// zero-labels.
    a_seed: Block,
    b_seed: Block,
}

impl CopyKeys {
    fn from_seed(seed: Block) -> CopyKeys {
        let mut prg = Prg::from_seed(seed);
        CopyKeys {
            delta: random_delta(&mut prg),
            hash_key: prg.random_block(),
            a_seed: prg.random_block(),
            b_seed: prg.random_block(),
        }
    }

    fn a_zero_labels(&self, n: usize) -> Vec<Block> {
        let mut v = vec![Block::ZERO; n];
        Prg::from_seed(self.a_seed).fill_blocks(&mut v);
        v
    }

    fn encoded_zero_labels(&self, n: usize) -> Vec<Block> {
        let mut v = vec![Block::ZERO; n];
        Prg::from_seed(self.b_seed).fill_blocks(&mut v);
        v
    }

    /// A garbler for this copy with every input zero-label set.
    fn garbler(&self, shape: &Shape, encoding: &Encoding) -> Garbler {
        let mut g = Garbler::new(shape.num_wires, self.delta, self.hash_key);
        let a = self.a_zero_labels(shape.ext_len);
        for (&w, &z) in shape.a_wires.iter().zip(&a) {
            g.set_zero_label(w, z);
        }
        for (&w, &z) in shape.tail_inputs.iter().zip(&a[shape.mask_at..]) {
            g.set_zero_label(w, z);
        }
        let b = encoding.fold(&self.encoded_zero_labels(encoding.len));
        for (&w, &z) in shape.b_wires.iter().zip(&b) {
            g.set_zero_label(w, z);
        }
        g
    }
}

fn commit_seed(j: usize, seed: Block) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(SEED_COMMIT);
    h.update(&(j as u64).to_le_bytes());
    h.update(&seed.to_bytes());
    *h.finalize().as_bytes()
}

fn commit_inputs(j: usize, nonce: &[u8; 32], labels: &[Block]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(INPUT_COMMIT);
    h.update(&(j as u64).to_le_bytes());
    h.update(nonce);
    h.update(Block::slice_as_bytes(labels));
    *h.finalize().as_bytes()
}

fn copy_hasher(j: usize) -> blake3::Hasher {
    let mut h = blake3::Hasher::new_derive_key(COPY_COMMIT);
    h.update(&(j as u64).to_le_bytes());
    h
}

/// Ends a copy's commitment: its tables were hashed already; its decoding bits and
/// hash-decoding bits follow.
fn finish_copy(
    mut h: blake3::Hasher,
    hash_key: Block,
    decoding: &[bool],
    hash_decoding: &[bool],
) -> [u8; 32] {
    h.update(&hash_key.to_bytes());
    h.update(&pack_bits(decoding));
    h.update(&pack_bits(hash_decoding));
    *h.finalize().as_bytes()
}

/// The hash matrix M (rows × ext_len bits) from B's seed.
pub(super) struct HashMatrix {
    rows: Vec<Vec<u64>>,
}

impl HashMatrix {
    pub(super) fn new(seed: Block, rows: usize, cols: usize) -> HashMatrix {
        let mut prg = Prg::from_seed(seed);
        let words = cols.div_ceil(64);
        HashMatrix {
            rows: (0..rows)
                .map(|_| {
                    let mut w: Vec<u64> = (0..words).map(|_| prg.random_u64()).collect();
                    if !cols.is_multiple_of(64) {
                        w[words - 1] &= (1u64 << (cols % 64)) - 1;
                    }
                    w
                })
                .collect(),
        }
    }

    fn apply(&self, bits: &[bool]) -> Vec<bool> {
        self.rows
            .iter()
            .map(|row| {
                bits.iter().enumerate().fold(false, |acc, (i, &b)| {
                    acc ^ (b & (row[i / 64] >> (i % 64) & 1 == 1))
                })
            })
            .collect()
    }

    /// Whether the columns from `from` on have full row rank (Gaussian elimination over
    /// GF(2)): then M·(x‖r) is uniform for uniform r, whatever x.
    fn padding_has_full_rank(&self, from: usize, cols: usize) -> bool {
        let mut m: Vec<Vec<bool>> = self
            .rows
            .iter()
            .map(|row| {
                (from..cols)
                    .map(|i| row[i / 64] >> (i % 64) & 1 == 1)
                    .collect()
            })
            .collect();
        let width = cols - from;
        let mut rank = 0;
        for c in 0..width {
            let Some(p) = (rank..m.len()).find(|&r| m[r][c]) else {
                continue;
            };
            m.swap(rank, p);
            for r in 0..m.len() {
                if r != rank && m[r][c] {
                    let pivot = m[rank].clone();
                    for (x, y) in m[r].iter_mut().zip(pivot) {
                        *x ^= y;
                    }
                }
            }
            rank += 1;
        }
        rank == m.len()
    }
}

fn recv_exact(
    ch: &mut (impl Channel + ?Sized),
    len: usize,
    what: &str,
) -> Result<Vec<u8>, ProtocolError> {
    let bytes = ch.recv_frame(len).map_err(|e| match e {
        pgc_net::NetError::FrameTooLarge { .. } => {
            ProtocolError::Peer(format!("{what}: more than the expected {len} bytes"))
        }
        e => e.into(),
    })?;
    if bytes.len() != len {
        return Err(ProtocolError::Peer(format!(
            "{what}: expected {len} bytes, got {}",
            bytes.len()
        )));
    }
    Ok(bytes)
}

fn recv_block(ch: &mut (impl Channel + ?Sized), what: &str) -> Result<Block, ProtocolError> {
    let b = recv_exact(ch, 16, what)?;
    Ok(Block::from_bytes(b[..].try_into().expect("16 bytes")))
}

fn blocks_from(bytes: &[u8]) -> Vec<Block> {
    bytes
        .chunks_exact(16)
        .map(|c| Block::from_bytes(c.try_into().expect("16-byte chunk")))
        .collect()
}

/// Runs `f` on every item, spread over at most `threads` threads.
fn for_each_parallel<T: Send>(items: &mut [T], threads: usize, f: impl Fn(&mut T) + Sync) {
    if threads <= 1 || items.len() <= 1 {
        items.iter_mut().for_each(f);
        return;
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        for part in items.chunks_mut(per) {
            let f = &f;
            s.spawn(move || part.iter_mut().for_each(f));
        }
    });
}

/// How many copies one pass over the circuit may hold at once: their wire labels and a
/// chunk of tables each must fit in half the memory budget.
fn group_size(shape: &Shape, want: usize) -> Result<usize, ProtocolError> {
    let per_copy = MemoryNeed::labels(shape.num_wires as u64).plus(MemoryNeed::per_item(
        2 * pgc_circuit::ir::CHUNK_GATES as u64,
        "garbled-table blocks",
        16,
        "block",
    ));
    per_copy
        .check()
        .map_err(|e| ProtocolError::Input(e.to_string()))?;
    let budget = MemoryLimit::current().bytes() / 2;
    let fit = (budget / per_copy.bytes.max(1)).max(1) as usize;
    Ok(fit.min(want).max(1))
}

/// One copy in a garbling pass.
struct GarbleSlot {
    garbler: Garbler,
    hasher: blake3::Hasher,
    tables: Vec<Block>,
    corrupt: bool,
}

impl GarbleSlot {
    fn garble(&mut self, gates: &[Gate]) {
        self.tables.clear();
        self.garbler.garble(gates, &mut self.tables);
        if self.corrupt && !self.tables.is_empty() {
            self.tables[0] ^= Block::new(1);
            self.corrupt = false;
        }
        self.hasher.update(Block::slice_as_bytes(&self.tables));
    }
}

/// One pass over the circuit and the MAC gates for `slots`, in lockstep; `sink` gets each
/// chunk's tables, copy by copy. Returns the AND gates of one copy.
fn garble_pass<S: GateSource>(
    circuit: &S,
    shape: &Shape,
    slots: &mut [GarbleSlot],
    threads: usize,
    progress: &mut dyn FnMut(u64),
    sink: &mut dyn FnMut(&GarbleSlot) -> Result<(), ProtocolError>,
) -> Result<u64, ProtocolError> {
    let gates_done = std::cell::Cell::new(0u64);
    let mut ands = 0u64;
    let mut step = |gates: &[Gate]| -> Result<(), ProtocolError> {
        // At most CHUNK_GATES gates per frame of each copy, whatever the source's chunks,
        // so that every table frame stays within the evaluator's limit.
        for part in gates.chunks(pgc_circuit::ir::CHUNK_GATES) {
            for_each_parallel(slots, threads, |s| s.garble(part));
            for s in slots.iter() {
                sink(s)?;
            }
        }
        gates_done.set(gates_done.get() + gates.len() as u64);
        ands += and_count(gates) as u64;
        progress(ands);
        Ok(())
    };
    circuit.for_each_chunk(&mut step)?;
    check_pass(circuit, gates_done.get())?;
    step(&shape.tail)?;
    Ok(ands)
}

fn check_pass<S: GateSource>(circuit: &S, gates_done: u64) -> Result<(), ProtocolError> {
    circuit
        .check_complete()
        .map_err(ProtocolError::Incomplete)?;
    if gates_done != circuit.gate_count() {
        return Err(ProtocolError::Incomplete(format!(
            "{gates_done} gates were read, but the circuit has {}",
            circuit.gate_count()
        )));
    }
    Ok(())
}

/// Party A's decoding bits for one copy: of the decoded wires, and of the input hash.
fn decodings(
    shape: &Shape,
    garbler: &Garbler,
    a_zero: &[Block],
    matrix: &HashMatrix,
    flip: bool,
) -> (Vec<bool>, Vec<bool>) {
    let mut decoding = garbler.decoding_bits(&shape.decoded);
    if flip && !decoding.is_empty() {
        decoding[0] = !decoding[0];
    }
    let lsbs: Vec<bool> = a_zero.iter().map(|l| l.lsb()).collect();
    (decoding, matrix.apply(&lsbs))
}

/// One party's side of cut-and-choose Yao at statistical security `stat_sec`.
#[allow(clippy::too_many_arguments)]
pub fn run_cut_and_choose<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    stat_sec: u32,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    run_with(
        ch,
        circuit,
        owners,
        visibility,
        me,
        inputs,
        stat_sec,
        threads,
        progress,
        Cheat::Honest,
        None,
    )
}

/// [`run_cut_and_choose`] with a cheating party for tests (`cheat`), and with the copies spread over a
/// cluster's ranks when `ranks` is given (rank 0's side; see [`super::cluster`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_with<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    stat_sec: u32,
    threads: usize,
    progress: &mut dyn FnMut(u64),
    cheat: Cheat,
    ranks: Option<&Ranks<'_>>,
) -> Result<Outcome, ProtocolError> {
    let security = Security::parse("malicious", stat_sec).map_err(ProtocolError::Input)?;
    let terms = HelloTerms {
        cluster_ranks: ranks.map_or(0, |r| r.size()),
        ..HelloTerms::secured(security)
    };
    let (start, counts0) = begin(ch, circuit, owners, visibility, me, inputs, terms)?;
    let shape = Shape::new(circuit, owners, visibility, stat_sec);
    let threads = threads.max(1);
    if let Some(r) = ranks {
        r.link(ch, circuit, owners, visibility, stat_sec, threads)?;
    }
    let (out_bits, input_done, circuit_done) = match me {
        Party::A => garbler(ch, circuit, &shape, inputs, threads, progress, cheat, ranks)?,
        Party::B => evaluator(ch, circuit, &shape, inputs, threads, progress, cheat, ranks)?,
    };
    Ok(outcome(
        circuit.layout(),
        visibility,
        me,
        out_bits,
        ch,
        counts0,
        start,
        input_done,
        circuit_done,
        circuit,
    ))
}

type Phases = (Vec<bool>, Instant, Instant);

#[allow(clippy::too_many_arguments)]
fn garbler<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    shape: &Shape,
    inputs: &[Vec<bool>],
    threads: usize,
    progress: &mut dyn FnMut(u64),
    cheat: Cheat,
    ranks: Option<&Ranks<'_>>,
) -> Result<Phases, ProtocolError> {
    // Under a cluster, this rank's share of the copies (the workers do the rest).
    let k = ranks.map_or(1, |r| r.size());
    let plan = shape.plan;
    let n = plan.copies;
    let mut prg = Prg::from_os_entropy();

    // A's extended input: its bits, then fresh masks, MAC key and pad, hash padding.
    let mut ext: Vec<bool> = inputs.iter().flatten().copied().collect();
    while ext.len() < shape.ext_len {
        ext.push(prg.random_bool());
    }

    // 1. Seed commitments.
    let seeds: Vec<Block> = (0..n).map(|_| prg.random_block()).collect();
    let keys: Vec<CopyKeys> = seeds.iter().map(|&s| CopyKeys::from_seed(s)).collect();
    secret_probe::note(Secret::CopySeed, &seeds);
    for k in &keys {
        secret_probe::note(Secret::Delta, &[k.delta]);
    }
    let mut msg = Vec::with_capacity(32 * n);
    for (j, &s) in seeds.iter().enumerate() {
        msg.extend_from_slice(&commit_seed(j, s));
    }
    ch.send_frame(&msg)?;
    ch.flush()?;

    // 2. B's input labels through OT on its encoded input.
    let encoding_seed = recv_block(ch, "the input-encoding seed")?;
    let encoding = Encoding::new(shape.b_wires.len(), shape.stat_sec, encoding_seed);
    if encoding.len > 0 {
        let pairs = input_ot::send_keys(ch, encoding.len, &mut prg)?;
        let mut streams: Vec<Prg> = keys.iter().map(|k| Prg::from_seed(k.b_seed)).collect();
        let mut frame: Vec<Block> = Vec::with_capacity(input_ot::FRAME_BLOCKS + 2 * n);
        for (t, &(k0, k1)) in pairs.iter().enumerate() {
            let (mut pad0, mut pad1) = (Prg::from_seed(k0), Prg::from_seed(k1));
            for (j, stream) in streams.iter_mut().enumerate() {
                let z = stream.random_block();
                let one = z ^ keys[j].delta;
                let mut l0 = z ^ pad0.random_block();
                let mut l1 = one ^ pad1.random_block();
                if cheat.ot_label_flip(j, t, false) {
                    l0 ^= Block::new(2);
                }
                if cheat.ot_label_flip(j, t, true) {
                    l1 ^= Block::new(2);
                }
                frame.push(l0);
                frame.push(l1);
            }
            if frame.len() >= input_ot::FRAME_BLOCKS || t + 1 == pairs.len() {
                ch.send_frame(Block::slice_as_bytes(&frame))?;
                frame.clear();
            }
        }
        ch.flush()?;
    }

    // 3. Commitments to A's active input labels in every copy (nonces from the OS, not
    // the seed, so an opened seed does not let B test guesses of A's input).
    let mut nonces = Vec::with_capacity(n);
    let mut msg = Vec::with_capacity(32 * n);
    let active = |j: usize| -> Vec<Block> {
        let zero = keys[j].a_zero_labels(shape.ext_len);
        zero.iter()
            .zip(&ext)
            .enumerate()
            .map(|(i, (&z, &bit))| {
                let bit = bit ^ (i == 0 && cheat.flips_input(j));
                z ^ keys[j].delta.select(bit)
            })
            .collect()
    };
    for j in 0..n {
        let mut nonce = [0u8; 32];
        prg.fill_bytes(&mut nonce);
        msg.extend_from_slice(&commit_inputs(j, &nonce, &active(j)));
        nonces.push(nonce);
    }
    ch.send_frame(&msg)?;
    ch.flush()?;

    // 4. The hash matrix; its padding columns must have full rank.
    let matrix_seed = recv_block(ch, "the input-hash matrix seed")?;
    let matrix = HashMatrix::new(matrix_seed, shape.rows, shape.ext_len);
    if !matrix.padding_has_full_rank(shape.r_at, shape.ext_len) {
        return Err(ProtocolError::CheatDetected(
            "the evaluator's input-hash matrix is degenerate (its padding columns lack full \
             rank, which would let it learn about this party's input)"
                .into(),
        ));
    }
    let input_done = Instant::now();

    // 5. Commitments to every copy: garble all of them, in groups, hashing the tables.
    let mut commitments = vec![[0u8; 32]; n];
    let mut decode_info: Vec<(Vec<bool>, Vec<bool>)> = vec![(Vec::new(), Vec::new()); n];
    if let Some(r) = ranks {
        r.send_commit_jobs(&seeds, encoding_seed, matrix_seed)?;
    }
    let mine: Vec<(usize, Block)> = share_of(&(0..n).collect::<Vec<_>>(), k, 0)
        .into_iter()
        .map(|j| (j, seeds[j]))
        .collect();
    let work = CopyWork {
        circuit,
        shape,
        encoding: &encoding,
        threads,
        cheat,
    };
    for c in work.commit(&mine, &matrix, progress)? {
        commitments[c.copy] = c.commitment;
        decode_info[c.copy] = (c.decoding, c.hash_decoding);
    }
    if let Some(r) = ranks {
        r.collect_commits(shape, &mut commitments, &mut decode_info)?;
    }
    ch.send_frame(&commitments.concat())?;
    ch.flush()?;

    // 6. The check set: exactly `checked` distinct copies.
    let cut = recv_exact(ch, n.div_ceil(8), "the check set")?;
    let checked = unpack_bits(&cut, n).expect("length checked");
    let count = checked.iter().filter(|&&c| c).count();
    if count != plan.checked || cut.len() * 8 > n && cut[n / 8] >> (n % 8) != 0 {
        return Err(ProtocolError::CheatDetected(format!(
            "the evaluator asked to check {count} of the {n} copies; the plan for S = {} \
             checks exactly {}",
            shape.stat_sec, plan.checked
        )));
    }

    // 7. Open: seeds of checked copies, inputs and decoding of evaluated ones.
    let mut opened = Vec::new();
    for j in (0..n).filter(|&j| checked[j]) {
        let mut seed = seeds[j];
        if cheat.opens_wrong_seed() && opened.is_empty() {
            seed ^= Block::new(1);
        }
        opened.extend_from_slice(&seed.to_bytes());
    }
    ch.send_frame(&opened)?;
    let evaluated: Vec<usize> = (0..n).filter(|&j| !checked[j]).collect();
    for &j in &evaluated {
        let mut msg = nonces[j].to_vec();
        msg.extend_from_slice(&keys[j].hash_key.to_bytes());
        msg.extend_from_slice(Block::slice_as_bytes(&active(j)));
        msg.extend_from_slice(&pack_bits(&decode_info[j].0));
        msg.extend_from_slice(&pack_bits(&decode_info[j].1));
        ch.send_frame(&msg)?;
    }
    ch.flush()?;

    // The evaluated copies' tables, garbled again, group by group (under a cluster, each
    // rank streams its share to its peer rank).
    if let Some(r) = ranks {
        r.send_stream_jobs(&evaluated, &seeds)?;
    }
    let mine: Vec<(usize, Block)> = share_of(&evaluated, k, 0)
        .into_iter()
        .map(|j| (j, seeds[j]))
        .collect();
    work.stream(ch, &mine, progress)?;
    if let Some(r) = ranks {
        r.collect_streamed()?;
    }
    let circuit_done = Instant::now();

    // 9. B's verdict, with the MACed values A may see.
    let l = shape.a_view_len();
    let reply = ch.recv_frame(1 + (l + shape.mac_len).div_ceil(8).max(256))?;
    match reply.first() {
        Some(0) => {}
        Some(1) => return Err(ProtocolError::PeerAborted(peer_reason(&reply[1..]))),
        _ => return Err(ProtocolError::Peer("a malformed verdict".into())),
    }
    let bits = unpack_bits(&reply[1..], l + shape.mac_len).ok_or_else(|| {
        ProtocolError::Peer(format!(
            "the verdict should carry {} bits of outputs and MAC",
            l + shape.mac_len
        ))
    })?;
    let (m, t) = bits.split_at(l);
    if shape.mac(&ext, m) != t {
        return Err(ProtocolError::CheatDetected(
            "the outputs the evaluator reported fail their MAC (they are not what the \
             garbled circuits computed)"
                .into(),
        ));
    }
    let mut mask_i = 0;
    let out: Vec<bool> = m
        .iter()
        .zip(&shape.a_view)
        .map(|(&bit, &(_, masked))| {
            if masked {
                mask_i += 1;
                bit ^ ext[shape.mask_at + mask_i - 1]
            } else {
                bit
            }
        })
        .collect();
    Ok((out, input_done, circuit_done))
}

/// One committed copy (step 5): its commitment and decoding bits.
pub(super) struct Committed {
    pub(super) copy: usize,
    pub(super) commitment: [u8; 32],
    pub(super) decoding: Vec<bool>,
    pub(super) hash_decoding: Vec<bool>,
}

/// The per-copy work of either party, for any set of copies: what a single process does
/// for all of them and a cluster's rank for its share ([`super::cluster`]).
pub(super) struct CopyWork<'a, S: GateSource> {
    pub(super) circuit: &'a S,
    pub(super) shape: &'a Shape,
    pub(super) encoding: &'a Encoding,
    pub(super) threads: usize,
    pub(super) cheat: Cheat,
}

impl<S: GateSource> CopyWork<'_, S> {
    /// A copy ready to garble (both of A's passes start from its seed).
    fn slot(&self, j: usize, seed: Block) -> GarbleSlot {
        GarbleSlot {
            garbler: CopyKeys::from_seed(seed).garbler(self.shape, self.encoding),
            hasher: copy_hasher(j),
            tables: Vec::new(),
            corrupt: self.cheat.corrupts_table(j),
        }
    }

    /// A, step 5: garbles `copies` (copy, seed) in groups and commits to each.
    pub(super) fn commit(
        &self,
        copies: &[(usize, Block)],
        matrix: &HashMatrix,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Vec<Committed>, ProtocolError> {
        let shape = self.shape;
        let mut out = Vec::with_capacity(copies.len());
        let group = group_size(shape, copies.len())?;
        for part in copies.chunks(group) {
            let mut slots: Vec<GarbleSlot> = part.iter().map(|&(j, s)| self.slot(j, s)).collect();
            garble_pass(
                self.circuit,
                shape,
                &mut slots,
                self.threads,
                progress,
                &mut |_| Ok(()),
            )?;
            for (s, &(j, seed)) in slots.into_iter().zip(part) {
                let keys = CopyKeys::from_seed(seed);
                let a_zero = keys.a_zero_labels(shape.ext_len);
                let (decoding, hash_decoding) = decodings(
                    shape,
                    &s.garbler,
                    &a_zero,
                    matrix,
                    self.cheat.flips_decoding(j),
                );
                out.push(Committed {
                    copy: j,
                    commitment: finish_copy(s.hasher, keys.hash_key, &decoding, &hash_decoding),
                    decoding,
                    hash_decoding,
                });
            }
        }
        Ok(out)
    }

    /// A, step 7: garbles `copies` again and streams their tables on `ch`, group by
    /// group in lockstep (one frame per copy and chunk, then an empty frame per group).
    pub(super) fn stream(
        &self,
        ch: &mut impl Channel,
        copies: &[(usize, Block)],
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        let group = group_size(self.shape, copies.len())?;
        for part in copies.chunks(group) {
            let mut slots: Vec<GarbleSlot> = part.iter().map(|&(j, s)| self.slot(j, s)).collect();
            garble_pass(
                self.circuit,
                self.shape,
                &mut slots,
                self.threads,
                progress,
                &mut |s| {
                    if !s.tables.is_empty() {
                        ch.send_frame(Block::slice_as_bytes(&s.tables))?;
                    }
                    Ok(())
                },
            )?;
            ch.send_frame(&[])?;
        }
        ch.flush()?;
        Ok(())
    }

    /// B, step 8: regenerates the checked `copies` (copy, opened seed) and compares each
    /// with its commitment. `ch` is not read (the pass has no evaluated copy).
    pub(super) fn check(
        &self,
        ch: &mut impl Channel,
        copies: &[(usize, Block)],
        commitment_of: &dyn Fn(usize) -> [u8; 32],
        matrix: &HashMatrix,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        let shape = self.shape;
        let group = group_size(shape, shape.plan.copies)?;
        for part in copies.chunks(group) {
            let mut slots: Vec<BSlot> = part
                .iter()
                .map(|&(j, seed)| BSlot::Check {
                    garbler: CopyKeys::from_seed(seed).garbler(shape, self.encoding),
                    hasher: copy_hasher(j),
                    tables: Vec::new(),
                })
                .collect();
            b_pass(ch, self.circuit, shape, &mut slots, self.threads, progress)?;
            for (s, &(j, seed)) in slots.into_iter().zip(part) {
                let BSlot::Check {
                    garbler, hasher, ..
                } = s
                else {
                    unreachable!("a check group")
                };
                let keys = CopyKeys::from_seed(seed);
                let a_zero = keys.a_zero_labels(shape.ext_len);
                let (dec, hdec) = decodings(shape, &garbler, &a_zero, matrix, false);
                if finish_copy(hasher, keys.hash_key, &dec, &hdec) != commitment_of(j) {
                    return Err(ProtocolError::CheatDetected(format!(
                        "checked copy {j}, regenerated from its seed, does not match the \
                         garbler's commitment (a wrong garbled table or decoding)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// B, step 8: evaluates `copies` with their tables from `ch` (as [`Self::stream`]
    /// sends them), checks each against its commitment, and decodes its outputs.
    pub(super) fn evaluate<'l>(
        &self,
        ch: &mut impl Channel,
        copies: &[&EvalCopy],
        enc_labels_of: &dyn Fn(usize) -> &'l [Block],
        commitment_of: &dyn Fn(usize) -> [u8; 32],
        progress: &mut dyn FnMut(u64),
    ) -> Result<Vec<(usize, Vec<bool>)>, ProtocolError> {
        let shape = self.shape;
        let group = group_size(shape, shape.plan.copies)?;
        let mut results = Vec::with_capacity(copies.len());
        for part in copies.chunks(group) {
            let mut slots: Vec<BSlot> = part
                .iter()
                .map(|c| {
                    let mut ev = Evaluator::new(shape.num_wires, c.hash_key);
                    set_eval_labels(
                        &mut ev,
                        shape,
                        self.encoding,
                        enc_labels_of(c.copy),
                        &c.labels,
                    );
                    BSlot::Eval {
                        copy: c.copy,
                        evaluator: ev,
                        hasher: copy_hasher(c.copy),
                        buffered: Vec::new(),
                        need: 0,
                    }
                })
                .collect();
            b_pass(ch, self.circuit, shape, &mut slots, self.threads, progress)?;
            for (s, c) in slots.into_iter().zip(part) {
                let BSlot::Eval {
                    copy: j,
                    evaluator,
                    hasher,
                    ..
                } = s
                else {
                    unreachable!("an evaluation group")
                };
                if finish_copy(hasher, c.hash_key, &c.decoding, &c.hash_decoding)
                    != commitment_of(j)
                {
                    return Err(ProtocolError::CheatDetected(format!(
                        "evaluated copy {j}'s garbled tables or decoding bits do not match the \
                         garbler's commitment"
                    )));
                }
                results.push((j, evaluator.decode(&shape.decoded, &c.decoding)));
            }
        }
        Ok(results)
    }
}

/// The items of `list` rank `r` of `k` handles: every k-th, from the r-th.
pub(super) fn share_of(list: &[usize], k: usize, r: usize) -> Vec<usize> {
    list.iter().skip(r).step_by(k).copied().collect()
}

/// The peer's abort reason, shown only if it is short printable text.
fn peer_reason(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.len() <= 200 && !s.chars().any(char::is_control) => s.to_string(),
        _ => "(an unreadable reason)".into(),
    }
}

/// Per evaluated copy: what B learned about it before evaluating.
pub(super) struct EvalCopy {
    pub(super) copy: usize,
    pub(super) hash_key: Block,
    pub(super) labels: Vec<Block>,
    pub(super) decoding: Vec<bool>,
    pub(super) hash_decoding: Vec<bool>,
}

/// One copy in B's pass: evaluated (with its tables from the channel) or checked.
enum BSlot {
    Eval {
        copy: usize,
        evaluator: Evaluator,
        hasher: blake3::Hasher,
        buffered: Vec<Block>,
        need: usize,
    },
    Check {
        garbler: Garbler,
        hasher: blake3::Hasher,
        tables: Vec<Block>,
    },
}

#[allow(clippy::too_many_arguments)]
fn evaluator<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    shape: &Shape,
    inputs: &[Vec<bool>],
    threads: usize,
    progress: &mut dyn FnMut(u64),
    cheat: Cheat,
    ranks: Option<&Ranks<'_>>,
) -> Result<Phases, ProtocolError> {
    let k = ranks.map_or(1, |r| r.size());
    let plan = shape.plan;
    let n = plan.copies;
    let mut prg = Prg::from_os_entropy();

    // The check set, drawn now and revealed only after A committed to everything: a
    // partial Fisher–Yates shuffle with exactly uniform picks, so every set of
    // `plan.checked` copies is equally likely (the soundness bound assumes it).
    let mut checked = vec![false; n];
    let mut pool: Vec<usize> = (0..n).collect();
    for k in 0..plan.checked {
        let pick = k + prg.random_below((n - k) as u64) as usize;
        pool.swap(k, pick);
        checked[pool[k]] = true;
    }

    // 1. Seed commitments.
    let seed_commits = recv_exact(ch, 32 * n, "the seed commitments")?;

    // 2. Input encoding and OT.
    let encoding_seed = prg.random_block();
    ch.send_frame(&encoding_seed.to_bytes())?;
    ch.flush()?;
    let encoding = Encoding::new(shape.b_wires.len(), shape.stat_sec, encoding_seed);
    let y: Vec<bool> = inputs.iter().flatten().copied().collect();
    let y_enc = encoding.encode(&y, &mut prg);
    // For evaluated copies the encoded labels (folded later); for checked copies a hash of
    // what arrived, compared with the regenerated labels once the seed is open.
    let mut enc_labels: Vec<Vec<Block>> = (0..n)
        .map(|j| {
            if checked[j] {
                Vec::new()
            } else {
                Vec::with_capacity(encoding.len)
            }
        })
        .collect();
    let mut check_hashes: Vec<blake3::Hasher> = (0..n)
        .map(|_| blake3::Hasher::new_derive_key(B_LABELS_HASH))
        .collect();
    if encoding.len > 0 {
        let keys = input_ot::receive_keys(ch, &y_enc, &mut prg)?;
        let per_t = 2 * n;
        let ts_per_frame = input_ot::FRAME_BLOCKS.div_ceil(per_t);
        let mut t = 0;
        while t < encoding.len {
            let ts = ts_per_frame.min(encoding.len - t);
            let bytes = recv_exact(ch, 16 * per_t * ts, "the encrypted input labels")?;
            let blocks = blocks_from(&bytes);
            for (dt, pairs) in blocks.chunks_exact(per_t).enumerate() {
                let mut pad = Prg::from_seed(keys[t + dt]);
                let choice = y_enc[t + dt];
                for j in 0..n {
                    let label = pairs[2 * j + choice as usize] ^ pad.random_block();
                    if checked[j] {
                        check_hashes[j].update(&label.to_bytes());
                    } else {
                        enc_labels[j].push(label);
                    }
                }
            }
            t += ts;
        }
    }

    // 3. A's input commitments.
    let input_commits = recv_exact(ch, 32 * n, "the garbler's input commitments")?;

    // 4. The hash matrix.
    let matrix_seed = prg.random_block();
    ch.send_frame(&matrix_seed.to_bytes())?;
    ch.flush()?;
    let matrix = HashMatrix::new(matrix_seed, shape.rows, shape.ext_len);
    let input_done = Instant::now();

    // 5. Copy commitments, then 6. the check set.
    let copy_commits = recv_exact(ch, 32 * n, "the garbled-copy commitments")?;
    let mut cut = pack_bits(&checked);
    if cheat.oversizes_check_set()
        && let Some(j) = (0..n).find(|&j| !checked[j])
    {
        cut[j / 8] |= 1 << (j % 8);
    }
    ch.send_frame(&cut)?;
    ch.flush()?;

    // 7. Openings.
    let checked_list: Vec<usize> = (0..n).filter(|&j| checked[j]).collect();
    let seeds = blocks_from(&recv_exact(
        ch,
        16 * checked_list.len(),
        "the seeds of the checked copies",
    )?);
    for (&j, &seed) in checked_list.iter().zip(&seeds) {
        if commit_seed(j, seed)[..] != seed_commits[32 * j..32 * j + 32] {
            return Err(ProtocolError::CheatDetected(format!(
                "the seed opened for checked copy {j} does not match its commitment"
            )));
        }
    }
    let evaluated: Vec<usize> = (0..n).filter(|&j| !checked[j]).collect();
    let d_bytes = shape.decoded.len().div_ceil(8);
    let h_bytes = shape.rows.div_ceil(8);
    let mut eval_copies = Vec::with_capacity(evaluated.len());
    let mut input_hash: Option<Vec<bool>> = None;
    for &j in &evaluated {
        let len = 48 + 16 * shape.ext_len + d_bytes + h_bytes;
        let msg = recv_exact(ch, len, "an evaluated copy's opening")?;
        let nonce: [u8; 32] = msg[..32].try_into().expect("32 bytes");
        let hash_key = Block::from_bytes(msg[32..48].try_into().expect("16 bytes"));
        let msg = &msg[16..];
        let labels = blocks_from(&msg[32..32 + 16 * shape.ext_len]);
        if commit_inputs(j, &nonce, &labels)[..] != input_commits[32 * j..32 * j + 32] {
            return Err(ProtocolError::CheatDetected(format!(
                "the garbler's input labels for copy {j} do not match its commitment"
            )));
        }
        let rest = &msg[32 + 16 * shape.ext_len..];
        let decoding = unpack_bits(&rest[..d_bytes], shape.decoded.len()).expect("length");
        let hash_decoding = unpack_bits(&rest[d_bytes..], shape.rows).expect("length");
        // Input consistency (shelat–Shen 2013): M·lsb(labels) ⊕ decoding = M·(x‖r).
        let lsbs: Vec<bool> = labels.iter().map(|l| l.lsb()).collect();
        let h: Vec<bool> = matrix
            .apply(&lsbs)
            .iter()
            .zip(&hash_decoding)
            .map(|(a, b)| a ^ b)
            .collect();
        match &input_hash {
            None => input_hash = Some(h),
            Some(first) if *first != h => {
                return Err(ProtocolError::CheatDetected(format!(
                    "garbler input consistency: evaluated copy {j} was given a different \
                     input than copy {} (their input hashes differ)",
                    evaluated[0]
                )));
            }
            Some(_) => {}
        }
        eval_copies.push(EvalCopy {
            copy: j,
            hash_key,
            labels,
            decoding,
            hash_decoding,
        });
    }

    // 8. One lockstep pass per group: checked copies regenerated, evaluated ones evaluated.
    let seed_of = |j: usize| seeds[checked_list.binary_search(&j).expect("checked")];
    for &j in &checked_list {
        let keys = CopyKeys::from_seed(seed_of(j));
        // Its OT labels: what arrived must be the seed's labels of B's encoded input.
        let zero = keys.encoded_zero_labels(encoding.len);
        let mut h = blake3::Hasher::new_derive_key(B_LABELS_HASH);
        for (&z, &c) in zero.iter().zip(&y_enc) {
            h.update(&(z ^ keys.delta.select(c)).to_bytes());
        }
        if h.finalize() != check_hashes[j].finalize() {
            return Err(ProtocolError::CheatDetected(format!(
                "the input labels this party received by OT for checked copy {j} are not \
                 the ones its seed defines"
            )));
        }
    }
    // Under a cluster, the workers check and evaluate their shares meanwhile.
    if let Some(r) = ranks {
        r.send_check_jobs(
            &checked_list,
            &seeds,
            &copy_commits,
            &eval_copies,
            &enc_labels,
            encoding_seed,
            matrix_seed,
        )?;
    }
    let work = CopyWork {
        circuit,
        shape,
        encoding: &encoding,
        threads,
        cheat: Cheat::Honest,
    };
    let my_checked: Vec<(usize, Block)> = share_of(&checked_list, k, 0)
        .into_iter()
        .map(|j| (j, seed_of(j)))
        .collect();
    let commitment_of = |j: usize| -> [u8; 32] {
        copy_commits[32 * j..32 * j + 32]
            .try_into()
            .expect("32 bytes")
    };
    work.check(ch, &my_checked, &commitment_of, &matrix, progress)?;
    let my_evals: Vec<&EvalCopy> = eval_copies.iter().step_by(k).collect();
    let mut results =
        work.evaluate(ch, &my_evals, &|j| &enc_labels[j], &commitment_of, progress)?;
    if let Some(r) = ranks {
        results.extend(r.collect_checks(shape, &eval_copies)?);
    }
    let circuit_done = Instant::now();

    // The majority output.
    let mut tally: Vec<(&Vec<bool>, usize)> = Vec::new();
    for (_, r) in &results {
        match tally.iter_mut().find(|(v, _)| *v == r) {
            Some(e) => e.1 += 1,
            None => tally.push((r, 1)),
        }
    }
    let Some(&(winner, _)) = tally.iter().find(|(_, k)| 2 * k > results.len()) else {
        let reason = "the evaluated copies disagree and no output has a majority";
        send_abort(ch, reason)?;
        return Err(ProtocolError::CheatDetected(format!(
            "{reason} (at least half of them were garbled wrongly)"
        )));
    };
    let winner = winner.clone();

    // 9. The verdict: the values A may see and their MAC.
    let mut m: Vec<bool> = shape.a_view.iter().map(|&(i, _)| winner[i]).collect();
    if cheat.lies_about_output() && !m.is_empty() {
        m[0] = !m[0];
    }
    let mac = &winner[winner.len() - shape.mac_len..];
    let mut reply = vec![0u8];
    reply.extend_from_slice(&pack_bits(&[m, mac.to_vec()].concat()));
    ch.send_frame(&reply)?;
    ch.flush()?;
    Ok((winner[..shape.b_out_len].to_vec(), input_done, circuit_done))
}

fn send_abort(ch: &mut impl Channel, reason: &str) -> Result<(), ProtocolError> {
    let mut msg = vec![1u8];
    msg.extend_from_slice(reason.as_bytes());
    ch.send_frame(&msg)?;
    ch.flush()?;
    Ok(())
}

fn set_eval_labels(
    ev: &mut Evaluator,
    shape: &Shape,
    encoding: &Encoding,
    enc_labels: &[Block],
    a_labels: &[Block],
) {
    for (&w, &l) in shape.a_wires.iter().zip(a_labels) {
        ev.set_label(w, l);
    }
    for (&w, &l) in shape.tail_inputs.iter().zip(&a_labels[shape.mask_at..]) {
        ev.set_label(w, l);
    }
    if !enc_labels.is_empty() {
        for (&w, &l) in shape.b_wires.iter().zip(&encoding.fold(enc_labels)) {
            ev.set_label(w, l);
        }
    }
}

/// B's pass over the circuit and MAC gates for one group: checked copies garbled and
/// hashed, evaluated copies fed from the channel (one frame per copy and chunk, in the
/// group's order, then an empty frame).
fn b_pass<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    shape: &Shape,
    slots: &mut [BSlot],
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<(), ProtocolError> {
    let evals = slots
        .iter()
        .filter(|s| matches!(s, BSlot::Eval { .. }))
        .count();
    let mut next_frame = 0usize;
    let gates_done = std::cell::Cell::new(0u64);
    let mut ands = 0u64;
    let mut step = |gates: &[Gate]| -> Result<(), ProtocolError> {
        let need = 2 * and_count(gates);
        // Buffer enough tables for every evaluated copy (A's frames come round-robin).
        if evals > 0 && need > 0 {
            for s in slots.iter_mut() {
                if let BSlot::Eval { need: n, .. } = s {
                    *n = need;
                }
            }
            loop {
                let short = slots.iter().any(|s| match s {
                    BSlot::Eval { buffered, need, .. } => buffered.len() < *need,
                    _ => false,
                });
                if !short {
                    break;
                }
                let frame = ch.recv_frame(16 * 2 * pgc_circuit::ir::CHUNK_GATES)?;
                if frame.is_empty() || frame.len() % 16 != 0 {
                    return Err(ProtocolError::CheatDetected(
                        "the garbler's tables ended early or came in a malformed frame".into(),
                    ));
                }
                let target = slots
                    .iter_mut()
                    .filter(|s| matches!(s, BSlot::Eval { .. }))
                    .nth(next_frame % evals)
                    .expect("evals > 0");
                next_frame += 1;
                if let BSlot::Eval { buffered, .. } = target {
                    buffered.extend(blocks_from(&frame));
                }
            }
        }
        let mut failed: Option<ProtocolError> = None;
        let errors = std::sync::Mutex::new(&mut failed);
        for_each_parallel(slots, threads, |s| match s {
            BSlot::Check {
                garbler,
                hasher,
                tables,
                ..
            } => {
                tables.clear();
                garbler.garble(gates, tables);
                hasher.update(Block::slice_as_bytes(tables));
            }
            BSlot::Eval {
                evaluator,
                hasher,
                buffered,
                need,
                ..
            } => {
                let t = &buffered[..*need];
                hasher.update(Block::slice_as_bytes(t));
                if let Err(e) = evaluator.evaluate(gates, t) {
                    **errors.lock().expect("not poisoned") = Some(e.into());
                }
                buffered.drain(..*need);
                *need = 0;
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        gates_done.set(gates_done.get() + gates.len() as u64);
        ands += and_count(gates) as u64;
        progress(ands);
        Ok(())
    };
    circuit.for_each_chunk(&mut step)?;
    check_pass(circuit, gates_done.get())?;
    step(&shape.tail)?;
    if evals > 0 {
        let leftover = slots.iter().any(|s| match s {
            BSlot::Eval { buffered, .. } => !buffered.is_empty(),
            _ => false,
        });
        if leftover
            || !ch
                .recv_frame(16 * 2 * pgc_circuit::ir::CHUNK_GATES)?
                .is_empty()
        {
            return Err(ProtocolError::CheatDetected(
                "the garbler sent more garbled tables than the circuit has AND gates".into(),
            ));
        }
    }
    Ok(())
}
