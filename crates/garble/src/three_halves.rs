//! Three-halves garbling (Rosulek, Roy, "Three Halves Make a Whole? Beating the Half-Gates
//! Lower Bound for Garbled Circuits", CRYPTO 2021, ePrint 2021/749), sans IO: 1.5κ + 5 bits
//! per AND gate (three 64-bit half-ciphertexts and five control bits) instead of the 2κ of
//! half-gates, free XOR kept. Garbling costs 6 hash calls per AND (half-gates: 4),
//! evaluating 3 (half-gates: 2), so it pays where the link, not the CPU, is the bottleneck.
//!
//! The paper was not at hand when this was written (so no section numbers are cited): the
//! construction follows its scheme (labels and Δ sliced into halves, the randomised
//! "dicing" control bits, the evaluator's linear combination of 3 half-ciphertexts) as
//! recalled, and the constant matrices were re-derived here by solving the scheme's linear
//! constraints for every permute bit and random choice (see `Dicing::derive`; the
//! lowest-weight solution is the one the public implementation
//! GarbleCoder/Implementation-of-threehalves uses, which was read to check this
//! understanding, not copied). The tests check every (a, b) with every permute bit, random
//! circuits, and the shared Bristol circuits through the protocol.
//!
//! # Conventions both parties share (beyond those of the crate root)
//!
//! - Labels, Δ (lsb 1) and the point-and-permute bit lsb(label) are as for half-gates;
//!   constants, XOR, INV and Copy are garbled the same way. A label X is *sliced* into
//!   halves X_L (bits 0..64, holding the colour bit) and X_R (bits 64..128); Δ likewise.
//! - AND j (counted from 0 across all calls) hashes with tweaks 3j (input A), 3j + 1
//!   (input B) and 3j + 2 (A ⊕ B). Of each 128-bit hash output h, the low 64 bits
//!   `half(h)` pad the half-ciphertexts and output label, and bit 64 `bit(h)` pads the
//!   control bits.
//! - The evaluator holds A, B with colours i = lsb(A), j = lsb(B) and computes
//!   hA = H(A, 3j), hB = H(B, 3j+1), hX = H(A ⊕ B, 3j+2), then
//!   - r₀ = z₀ ⊕ i·z₂ ⊕ (i⊕j)·z₄ ⊕ bit(hA) ⊕ bit(hX),
//!     r₁ = z₁ ⊕ j·z₃ ⊕ (i⊕j)·z₄ ⊕ bit(hB) ⊕ bit(hX);
//!   - the 2×4 bit matrix R = Rp[2i+j] ⊕ r₀·S₁ ⊕ r₁·S₂ ("dicing": which halves of A and B
//!     enter which half of the output);
//!   - C_L = half(hA) ⊕ half(hX) ⊕ i·G₀ ⊕ (i⊕j)·G₂ ⊕ R₀·(A_L, A_R, B_L, B_R),
//!     C_R = half(hB) ⊕ half(hX) ⊕ j·G₁ ⊕ (i⊕j)·G₂ ⊕ R₁·(A_L, A_R, B_L, B_R).
//! - The garbler draws two fresh random bits (c₀, c₁) per AND (RR21's randomised control
//!   bits: without them R would reveal the permute bits) and picks the half-ciphertexts
//!   G₀, G₁, G₂, the control bits z and C⁰ so that, for all four colour pairs, the
//!   evaluator gets C⁰ ⊕ ab·Δ; their linear parts come from the table of `Dicing`.
//!
//! # Tables, in memory and on the wire
//!
//! [`Tables`] holds, per AND in order, `[G₀, G₁, G₂]` as three `u64` and the five control
//! bits z₀..z₄ as one byte (bit k = z_k). On the wire ([`Tables::pack`]) a run of n ANDs
//! is 24n bytes (the 3n halves, little-endian, in AND order) followed by ⌈5n/8⌉ bytes
//! holding the 5n control bits, AND k's z_m at bit 5k + m (least significant bit
//! first): exactly 1.5κ + 5 bits per AND but for at most 7 bits of padding per run.
//!
//! # The hash
//!
//! H is pgc's [`TccrHash`] (TMMO, tweakable circular-correlation robust: GKWY20 §7.4,
//! proven in the random-permutation model), under the garbler's fresh per-run key. RR21's
//! security rests on a correlation-robustness property of H of this kind: H is called on X
//! and X ⊕ Δ for X ∈ {A⁰, B⁰, A⁰ ⊕ B⁰}. Here each of those pairs has its own tweak (3j,
//! 3j + 1, 3j + 2), so no (input, tweak) is used twice, as TCCR requires, and the output is
//! truncated to the 64 + 1 bits used, which keeps the property (a distinguisher for the
//! truncation is one for the whole). Beyond half-gates, the garbled values contain linear
//! functions of Δ's halves (the dicing) rather than Δ itself; TMMO's proof treats the
//! oracle's answers as uniform until the adversary queries π at a point that depends on Δ,
//! whichever linear function of Δ is added to them. That last step is our argument from
//! the paper as recalled, not a quoted theorem: check RR21's security section (where its
//! hash notion is defined) before relying on it beyond what README "What is protected"
//! states.

use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::{Block, Prg, TccrHash};

use crate::GarbleError;

/// Half-ciphertexts per AND gate.
pub const HALVES_PER_AND: usize = 3;
/// Control bits per AND gate.
pub const CONTROL_BITS_PER_AND: usize = 5;

/// Bytes on the wire of `ands` consecutive garbled ANDs (see the module's wire layout).
pub const fn packed_bytes(ands: usize) -> usize {
    8 * HALVES_PER_AND * ands + (CONTROL_BITS_PER_AND * ands).div_ceil(8)
}

/// The number of ANDs whose packed tables take exactly `bytes` bytes, if any.
pub fn ands_in_packed(bytes: usize) -> Option<usize> {
    // packed_bytes(n) lies in [197n/8, 197n/8 + 1), so n is one of two candidates.
    let hi = bytes.checked_mul(8)? / 197;
    [hi, hi.saturating_sub(1)]
        .into_iter()
        .find(|&n| packed_bytes(n) == bytes)
}

/// The garbled ANDs of one or more calls, in AND order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    /// `[G₀, G₁, G₂]` of each AND.
    pub halves: Vec<u64>,
    /// z₀..z₄ of each AND (bit k = z_k).
    pub control: Vec<u8>,
}

impl Tables {
    /// Garbled ANDs held.
    pub fn len(&self) -> usize {
        self.control.len()
    }

    pub fn is_empty(&self) -> bool {
        self.control.is_empty()
    }

    pub fn clear(&mut self) {
        self.halves.clear();
        self.control.clear();
    }

    /// Appends the wire form of these tables to `out` ([`packed_bytes`] of them).
    pub fn pack(&self, out: &mut Vec<u8>) {
        self.pack_range(0, self.len(), out);
    }

    /// Appends the wire form of ANDs `start..end` of these tables to `out`.
    ///
    /// # Panics
    /// If the range is not within the tables.
    pub fn pack_range(&self, start: usize, end: usize, out: &mut Vec<u8>) {
        let control = &self.control[start..end];
        out.reserve(packed_bytes(control.len()));
        for h in &self.halves[HALVES_PER_AND * start..HALVES_PER_AND * end] {
            out.extend_from_slice(&h.to_le_bytes());
        }
        let at = out.len();
        out.resize(at + (CONTROL_BITS_PER_AND * control.len()).div_ceil(8), 0);
        let bits = &mut out[at..];
        for (k, &z) in control.iter().enumerate() {
            for m in 0..CONTROL_BITS_PER_AND {
                let at = CONTROL_BITS_PER_AND * k + m;
                bits[at / 8] |= ((z >> m) & 1) << (at % 8);
            }
        }
    }

    /// Appends the tables packed in `bytes` (from [`Tables::pack`]); `None` if `bytes` is
    /// no packed length or its padding bits are not zero.
    pub fn unpack_append(&mut self, bytes: &[u8]) -> Option<usize> {
        let n = ands_in_packed(bytes.len())?;
        let (halves, bits) = bytes.split_at(8 * HALVES_PER_AND * n);
        let used = CONTROL_BITS_PER_AND * n;
        if !used.is_multiple_of(8) && bits[used / 8] >> (used % 8) != 0 {
            return None;
        }
        self.halves.extend(
            halves
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap())),
        );
        self.control.extend((0..n).map(|k| {
            (0..CONTROL_BITS_PER_AND).fold(0u8, |z, m| {
                let at = CONTROL_BITS_PER_AND * k + m;
                z | (((bits[at / 8] >> (at % 8)) & 1) << m)
            })
        }));
        Some(n)
    }
}

/// The public dicing matrices: 2×4 bit matrices over (A_L, A_R, B_L, B_R), bit 4·row +
/// column. Rp is indexed by 2i + j (the evaluator's colours).
const RP: [u8; 4] = [0x24, 0x04, 0x20, 0x00];
const S1: u8 = 0x97;
const S2: u8 = 0xe9;

/// The linear part of one AND's garbling for each (α, β, c₀, c₁) (α, β the permute bits of
/// the inputs' zero-labels, c the random control bits): for each of C⁰_L, C⁰_R, G₀, G₁, G₂
/// a 6-bit mask over (A⁰_L, A⁰_R, B⁰_L, B⁰_R, Δ_L, Δ_R).
struct Dicing {
    rows: [[u8; 5]; 16],
}

impl Dicing {
    fn get() -> &'static Dicing {
        static TABLE: std::sync::OnceLock<Dicing> = std::sync::OnceLock::new();
        TABLE.get_or_init(Dicing::derive)
    }

    /// Solves RR21's constraints for each (α, β, c). The evaluator's output is
    /// `hash part ⊕ V_ij·G ⊕ R_ij·(A; B)` with V_ij = [[i, 0, i⊕j], [0, j, i⊕j]]; writing
    /// C⁰ = P·u and G = Q·u (u the six halves), correctness for every (i, j) with
    /// a = i⊕α, b = j⊕β reads
    ///   P_AB = V_ij·Q_AB ⊕ R_ij  and  P_Δ ⊕ V_ij·Q_Δ = a·R^A_ij ⊕ b·R^B_ij ⊕ ab·I.
    /// At (0, 0) V vanishes, giving P; the other colour pairs give Q from differences.
    /// Rp, S₁, S₂ and the control bits' g = (ᾱ, β̄, ᾱ⊕β̄) are the choices that make the
    /// system solvable for every (α, β, c); `dicing_solves_every_colour_pair` checks it.
    fn derive() -> Dicing {
        let mut rows = [[0u8; 5]; 16];
        for (index, entry) in rows.iter_mut().enumerate() {
            let (alpha, beta) = ((index >> 3) & 1 == 1, (index >> 2) & 1 == 1);
            let (c0, c1) = (index & 1 == 1, (index >> 1) & 1 == 1);
            let r = |i: bool, j: bool| dice(i, j, control_bits(alpha, beta, c0, c1));
            let t = |i: bool, j: bool| {
                let m = r(i, j);
                let (a, b) = (i ^ alpha, j ^ beta);
                // a·R^A ⊕ b·R^B ⊕ ab·I as a 2×2 matrix over (Δ_L, Δ_R): bit 2·row + col.
                let part = |shift: u8| ((m >> shift) & 3) | (((m >> (4 + shift)) & 3) << 2);
                let mut d = 0u8;
                if a {
                    d ^= part(0);
                }
                if b {
                    d ^= part(2);
                }
                if a && b {
                    d ^= 0b1001;
                }
                d
            };
            // Rows of a matrix family F_ij = P ⊕ V_ij·Q, `width` columns: (P₀, P₁, Q₀, Q₁, Q₂).
            let solve = |f: &dyn Fn(bool, bool) -> u8, width: u8| {
                let mask = (1u8 << width) - 1;
                let row = |m: u8, k: u8| (m >> (width * k)) & mask;
                let (f00, f01, f10) = (f(false, false), f(false, true), f(true, false));
                let q2 = row(f10 ^ f00, 1);
                [
                    row(f00, 0),
                    row(f00, 1),
                    row(f10 ^ f00, 0) ^ q2,
                    row(f01 ^ f00, 1) ^ q2,
                    q2,
                ]
            };
            let ab = solve(&r, 4);
            let d = solve(&t, 2);
            for k in 0..5 {
                entry[k] = ab[k] | (d[k] << 4);
            }
        }
        Dicing { rows }
    }

    fn rows(&self, alpha: bool, beta: bool, c: u8) -> &[u8; 5] {
        &self.rows[((alpha as usize) << 3) | ((beta as usize) << 2) | (c as usize & 3)]
    }
}

/// The control bits before hash padding: (c₀, c₁, ᾱ, β̄, ᾱ ⊕ β̄) as bits 0..5.
fn control_bits(alpha: bool, beta: bool, c0: bool, c1: bool) -> u8 {
    let (na, nb) = (!alpha, !beta);
    (c0 as u8)
        | ((c1 as u8) << 1)
        | ((na as u8) << 2)
        | ((nb as u8) << 3)
        | (((na ^ nb) as u8) << 4)
}

/// The evaluator's dicing matrix R for colours (i, j) from the unpadded control bits z:
/// r = (z₀ ⊕ i·z₂ ⊕ (i⊕j)·z₄, z₁ ⊕ j·z₃ ⊕ (i⊕j)·z₄), R = Rp[2i+j] ⊕ r₀·S₁ ⊕ r₁·S₂.
#[inline(always)]
fn dice(i: bool, j: bool, z: u8) -> u8 {
    let bit = |k: u8| (z >> k) & 1 == 1;
    let r0 = bit(0) ^ (i & bit(2)) ^ ((i ^ j) & bit(4));
    let r1 = bit(1) ^ (j & bit(3)) ^ ((i ^ j) & bit(4));
    RP[((i as usize) << 1) | j as usize]
        ^ (S1 & (r0 as u8).wrapping_neg())
        ^ (S2 & (r1 as u8).wrapping_neg())
}

#[inline(always)]
fn half(h: Block) -> u64 {
    h.0 as u64
}

#[inline(always)]
fn pad_bit(h: Block) -> u8 {
    ((h.0 >> 64) & 1) as u8
}

/// `mask`'s combination of `halves` (bit k selects `halves[k]`).
#[inline(always)]
fn combine(mask: u8, halves: &[u64]) -> u64 {
    halves.iter().enumerate().fold(0, |acc, (k, &h)| {
        acc ^ (h & ((mask as u64 >> k) & 1).wrapping_neg())
    })
}

#[inline(always)]
fn from_halves(l: u64, r: u64) -> Block {
    Block(l as u128 | ((r as u128) << 64))
}

/// The hash calls of one AND, on any CPU or fused into vector registers.
trait AndHasher {
    /// `[H(x₀, t), H(x₀ ⊕ Δ, t), H(x₁, t+1), H(x₁ ⊕ Δ, t+1), H(x₂, t+2), H(x₂ ⊕ Δ, t+2)]`.
    fn garbler(&self, xs: [Block; 3], delta: Block, first_tweak: u64) -> [Block; 6];
    /// `[H(x₀, t), H(x₁, t+1), H(x₂, t+2)]`.
    fn evaluator(&self, xs: [Block; 3], first_tweak: u64) -> [Block; 3];

    /// [`AndHasher::garbler`] for two ANDs at once (tweaks from `t0` and `t1`), so that
    /// their AES chains overlap.
    #[inline(always)]
    fn garbler2(&self, xs: [Block; 6], delta: Block, t0: u64, t1: u64) -> [Block; 12] {
        let (a, b) = (
            self.garbler([xs[0], xs[1], xs[2]], delta, t0),
            self.garbler([xs[3], xs[4], xs[5]], delta, t1),
        );
        std::array::from_fn(|k| if k < 6 { a[k] } else { b[k - 6] })
    }

    /// [`AndHasher::evaluator`] for two ANDs at once.
    #[inline(always)]
    fn evaluator2(&self, xs: [Block; 6], t0: u64, t1: u64) -> [Block; 6] {
        let (a, b) = (
            self.evaluator([xs[0], xs[1], xs[2]], t0),
            self.evaluator([xs[3], xs[4], xs[5]], t1),
        );
        std::array::from_fn(|k| if k < 3 { a[k] } else { b[k - 3] })
    }
}

impl AndHasher for TccrHash {
    #[inline(always)]
    fn garbler(&self, xs: [Block; 3], delta: Block, first_tweak: u64) -> [Block; 6] {
        let mut h = [Block::ZERO; 6];
        self.tccr_batch_seq_pairs(&xs, delta, first_tweak, &mut h);
        h
    }

    #[inline(always)]
    fn evaluator(&self, xs: [Block; 3], first_tweak: u64) -> [Block; 3] {
        let mut h = [Block::ZERO; 3];
        self.tccr_batch_seq(&xs, first_tweak, &mut h);
        h
    }
}

/// TMMO on 256-bit VAES registers (two blocks each), the AND's hashes side by side. Its
/// methods may only run inside functions compiled with AES, AVX2 and VAES (see
/// [`garble_vaes`]), which is why only those make one.
#[cfg(target_arch = "x86_64")]
struct Vaes(pgc_crypto::aes::wide::RoundKeys256);

#[cfg(target_arch = "x86_64")]
impl AndHasher for Vaes {
    #[inline(always)]
    fn garbler(&self, xs: [Block; 3], delta: Block, first_tweak: u64) -> [Block; 6] {
        use std::arch::x86_64::*;
        // SAFETY: a `Vaes` exists only inside functions with AES, AVX2 and VAES enabled,
        // made after checking the CPU (`garble_vaes`, `evaluate_vaes`).
        unsafe {
            let pair = |lo: Block, hi: Block| {
                _mm256_set_epi64x(
                    (hi.0 >> 64) as i64,
                    hi.0 as i64,
                    (lo.0 >> 64) as i64,
                    lo.0 as i64,
                )
            };
            let tweak = |k: u64| {
                _mm256_set_epi64x(
                    0,
                    first_tweak.wrapping_add(k) as i64,
                    0,
                    first_tweak.wrapping_add(k) as i64,
                )
            };
            let out = self.0.tmmo::<3>(
                [
                    pair(xs[0], xs[0] ^ delta),
                    pair(xs[1], xs[1] ^ delta),
                    pair(xs[2], xs[2] ^ delta),
                ],
                [tweak(0), tweak(1), tweak(2)],
            );
            let mut h = [Block::ZERO; 6];
            for (k, v) in out.iter().enumerate() {
                _mm256_storeu_si256(h.as_mut_ptr().add(2 * k) as *mut __m256i, *v);
            }
            h
        }
    }

    #[inline(always)]
    fn evaluator(&self, xs: [Block; 3], first_tweak: u64) -> [Block; 3] {
        use std::arch::x86_64::*;
        // SAFETY: as for `garbler`.
        unsafe {
            let t = first_tweak as i64;
            let in0 = _mm256_loadu_si256(xs.as_ptr() as *const __m256i);
            let x2 = _mm_loadu_si128(xs.as_ptr().add(2) as *const __m128i);
            let in1 = _mm256_zextsi128_si256(x2);
            let out = self.0.tmmo::<2>(
                [in0, in1],
                [
                    _mm256_set_epi64x(0, t.wrapping_add(1), 0, t),
                    _mm256_set_epi64x(0, 0, 0, t.wrapping_add(2)),
                ],
            );
            let mut h = [Block::ZERO; 4];
            _mm256_storeu_si256(h.as_mut_ptr() as *mut __m256i, out[0]);
            _mm256_storeu_si256(h.as_mut_ptr().add(2) as *mut __m256i, out[1]);
            [h[0], h[1], h[2]]
        }
    }

    #[inline(always)]
    fn garbler2(&self, xs: [Block; 6], delta: Block, t0: u64, t1: u64) -> [Block; 12] {
        use std::arch::x86_64::*;
        // SAFETY: as for `garbler`.
        unsafe {
            let pair = |x: Block| {
                let hi = x ^ delta;
                _mm256_set_epi64x(
                    (hi.0 >> 64) as i64,
                    hi.0 as i64,
                    (x.0 >> 64) as i64,
                    x.0 as i64,
                )
            };
            let tweak = |t: u64| _mm256_set_epi64x(0, t as i64, 0, t as i64);
            let out = self.0.tmmo::<6>(
                [
                    pair(xs[0]),
                    pair(xs[1]),
                    pair(xs[2]),
                    pair(xs[3]),
                    pair(xs[4]),
                    pair(xs[5]),
                ],
                [
                    tweak(t0),
                    tweak(t0.wrapping_add(1)),
                    tweak(t0.wrapping_add(2)),
                    tweak(t1),
                    tweak(t1.wrapping_add(1)),
                    tweak(t1.wrapping_add(2)),
                ],
            );
            let mut h = [Block::ZERO; 12];
            for (k, v) in out.iter().enumerate() {
                _mm256_storeu_si256(h.as_mut_ptr().add(2 * k) as *mut __m256i, *v);
            }
            h
        }
    }

    #[inline(always)]
    fn evaluator2(&self, xs: [Block; 6], t0: u64, t1: u64) -> [Block; 6] {
        use std::arch::x86_64::*;
        // SAFETY: as for `garbler`.
        unsafe {
            let p = xs.as_ptr() as *const __m256i;
            let (u0, u1) = (t0 as i64, t1 as i64);
            let out = self.0.tmmo::<3>(
                [
                    _mm256_loadu_si256(p),
                    _mm256_loadu_si256(p.add(1)),
                    _mm256_loadu_si256(p.add(2)),
                ],
                [
                    _mm256_set_epi64x(0, u0.wrapping_add(1), 0, u0),
                    _mm256_set_epi64x(0, u1, 0, u0.wrapping_add(2)),
                    _mm256_set_epi64x(0, u1.wrapping_add(2), 0, u1.wrapping_add(1)),
                ],
            );
            let mut h = [Block::ZERO; 6];
            for (k, v) in out.iter().enumerate() {
                _mm256_storeu_si256(h.as_mut_ptr().add(2 * k) as *mut __m256i, *v);
            }
            h
        }
    }
}

/// Garbles one AND: zero-labels `a0`, `b0`; pushes its table to `tables`, returns C⁰.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn garble_and<H: AndHasher>(
    hash: &H,
    dicing: &Dicing,
    delta: Block,
    and_index: u64,
    c: u8,
    a0: Block,
    b0: Block,
    tables: &mut Tables,
) -> Block {
    let h = hash.garbler([a0, b0, a0 ^ b0], delta, 3u64.wrapping_mul(and_index));
    garble_hashed(&h, dicing, delta, c, a0, b0, tables)
}

/// [`garble_and`] after the hashing: `h` holds its six hashes.
#[inline(always)]
fn garble_hashed(
    h: &[Block],
    dicing: &Dicing,
    delta: Block,
    c: u8,
    a0: Block,
    b0: Block,
    tables: &mut Tables,
) -> Block {
    let (alpha, beta) = (a0.lsb(), b0.lsb());
    // The colour-0 label of A is A⁰ when α = 0, else A¹; A⁰ ⊕ B⁰ has colour α ⊕ β.
    let (ha0, hb0, hx0) = (
        h[alpha as usize],
        h[2 + beta as usize],
        h[4 + (alpha ^ beta) as usize],
    );
    let u = [
        a0.0 as u64,
        (a0.0 >> 64) as u64,
        b0.0 as u64,
        (b0.0 >> 64) as u64,
        delta.0 as u64,
        (delta.0 >> 64) as u64,
    ];
    let rows = dicing.rows(alpha, beta, c);
    let c_l = half(ha0) ^ half(hx0) ^ combine(rows[0], &u);
    let c_r = half(hb0) ^ half(hx0) ^ combine(rows[1], &u);
    for k in 0..3 {
        tables
            .halves
            .push(half(h[2 * k]) ^ half(h[2 * k + 1]) ^ combine(rows[2 + k], &u));
    }
    let pads = (pad_bit(ha0) ^ pad_bit(hx0))
        | ((pad_bit(hb0) ^ pad_bit(hx0)) << 1)
        | ((pad_bit(h[0]) ^ pad_bit(h[1])) << 2)
        | ((pad_bit(h[2]) ^ pad_bit(h[3])) << 3)
        | ((pad_bit(h[4]) ^ pad_bit(h[5])) << 4);
    tables
        .control
        .push(control_bits(alpha, beta, c & 1 == 1, c & 2 == 2) ^ pads);
    from_halves(c_l, c_r)
}

/// Evaluates one AND on labels `a`, `b` with its halves `g` and control bits `z`.
#[inline(always)]
fn evaluate_and<H: AndHasher>(
    hash: &H,
    and_index: u64,
    a: Block,
    b: Block,
    g: &[u64],
    z: u8,
) -> Block {
    let h = hash.evaluator([a, b, a ^ b], 3u64.wrapping_mul(and_index));
    evaluate_hashed(&h, a, b, g, z)
}

/// [`evaluate_and`] after the hashing: `h` holds its three hashes.
#[inline(always)]
fn evaluate_hashed(h: &[Block], a: Block, b: Block, g: &[u64], z: u8) -> Block {
    let (i, j) = (a.lsb(), b.lsb());
    let pads = (pad_bit(h[0]) ^ pad_bit(h[2])) | ((pad_bit(h[1]) ^ pad_bit(h[2])) << 1);
    let r = dice(i, j, z ^ pads);
    let ab = [
        a.0 as u64,
        (a.0 >> 64) as u64,
        b.0 as u64,
        (b.0 >> 64) as u64,
    ];
    let sel = |bit: bool, v: u64| v & (bit as u64).wrapping_neg();
    let c_l = half(h[0]) ^ half(h[2]) ^ sel(i, g[0]) ^ sel(i ^ j, g[2]) ^ combine(r & 15, &ab);
    let c_r = half(h[1]) ^ half(h[2]) ^ sel(j, g[1]) ^ sel(i ^ j, g[2]) ^ combine(r >> 4, &ab);
    from_halves(c_l, c_r)
}

/// The three-halves garbler: holds Δ and every wire's zero-label.
pub struct Garbler {
    zero_labels: Vec<Block>,
    delta: Block,
    hash: TccrHash,
    and_gates_done: u64,
    /// Source of the two random control bits per AND.
    prg: Prg,
    random_bits: u128,
    random_left: u32,
}

impl Garbler {
    /// As [`crate::Garbler::new`], with `prg` for the per-AND random control bits (seed it
    /// from the OS for real runs). Panics if the lsb of `delta` is 0.
    pub fn new(num_wires: usize, delta: Block, hash_key: Block, prg: Prg) -> Garbler {
        assert!(
            delta.lsb(),
            "the garbler's Δ must have lsb 1 (point-and-permute)"
        );
        Garbler {
            zero_labels: vec![Block::ZERO; num_wires],
            delta,
            hash: TccrHash::new(hash_key),
            and_gates_done: 0,
            prg,
            random_bits: 0,
            random_left: 0,
        }
    }

    pub fn delta(&self) -> Block {
        self.delta
    }

    pub fn set_zero_label(&mut self, wire: WireId, label: Block) {
        self.zero_labels[wire as usize] = label;
    }

    pub fn zero_label(&self, wire: WireId) -> Block {
        self.zero_labels[wire as usize]
    }

    fn random_control(&mut self) -> u8 {
        if self.random_left == 0 {
            self.random_bits = self.prg.random_block().0;
            self.random_left = 64;
        }
        let c = (self.random_bits & 3) as u8;
        self.random_bits >>= 2;
        self.random_left -= 1;
        c
    }

    /// Garbles `gates` in order; appends one table (3 halves, 1 control byte) per AND.
    ///
    /// # Panics
    /// If a gate uses a wire at or above `num_wires` (the garbler's own circuit: a bug).
    pub fn garble(&mut self, gates: &[Gate], tables: &mut Tables) {
        let n = crate::and_count(gates);
        tables.halves.reserve(HALVES_PER_AND * n);
        tables.control.reserve(n);
        #[cfg(target_arch = "x86_64")]
        if vaes_available() {
            // SAFETY: the CPU has AES, AVX2 and VAES (just checked).
            return unsafe { garble_vaes(self, gates, tables) };
        }
        let hash = self.hash.clone();
        self.garble_with(&hash, gates, tables)
    }

    #[inline(always)]
    fn garble_with<H: AndHasher>(&mut self, hash: &H, gates: &[Gate], tables: &mut Tables) {
        let dicing = Dicing::get();
        let num_wires = self.zero_labels.len();
        let mut index = 0;
        while index < gates.len() {
            let g = &gates[index];
            if !crate::gate_wires_ok(g, num_wires) {
                crate::wire_panic(index, g, num_wires);
            }
            // Two consecutive ANDs, the second not reading the first's output: hashed
            // together (same tweaks, control bits and table order as one by one).
            if let Some(g2) = gates
                .get(index + 1)
                .filter(|g2| g.op == Op::And && g2.op == Op::And && g2.a != g.out && g2.b != g.out)
            {
                if !crate::gate_wires_ok(g2, num_wires) {
                    crate::wire_panic(index + 1, g2, num_wires);
                }
                let l = &self.zero_labels;
                let (a0, b0) = (l[g.a as usize], l[g.b as usize]);
                let (a1, b1) = (l[g2.a as usize], l[g2.b as usize]);
                let j = self.and_gates_done;
                let h = hash.garbler2(
                    [a0, b0, a0 ^ b0, a1, b1, a1 ^ b1],
                    self.delta,
                    3u64.wrapping_mul(j),
                    3u64.wrapping_mul(j.wrapping_add(1)),
                );
                let c = self.random_control();
                let out = garble_hashed(&h[..6], dicing, self.delta, c, a0, b0, tables);
                self.zero_labels[g.out as usize] = out;
                let c = self.random_control();
                let out = garble_hashed(&h[6..], dicing, self.delta, c, a1, b1, tables);
                self.zero_labels[g2.out as usize] = out;
                self.and_gates_done += 2;
                index += 2;
                continue;
            }
            index += 1;
            let l = &self.zero_labels;
            let value = match g.op {
                Op::Xor => l[g.a as usize] ^ l[g.b as usize],
                Op::And => {
                    let (a0, b0) = (l[g.a as usize], l[g.b as usize]);
                    let c = self.random_control();
                    let out = garble_and(
                        hash,
                        dicing,
                        self.delta,
                        self.and_gates_done,
                        c,
                        a0,
                        b0,
                        tables,
                    );
                    self.and_gates_done += 1;
                    out
                }
                Op::Inv => l[g.a as usize] ^ self.delta,
                Op::Copy => l[g.a as usize],
                Op::Const => self.delta.select(g.a != 0),
            };
            self.zero_labels[g.out as usize] = value;
        }
    }

    /// The lsb of each wire's zero-label: the evaluator decodes a label L as lsb(L) ⊕ bit.
    pub fn decoding_bits(&self, wires: &[WireId]) -> Vec<bool> {
        wires.iter().map(|&w| self.zero_label(w).lsb()).collect()
    }

    /// AND gates garbled so far (the next AND uses tweaks 3·this .. 3·this + 2).
    pub fn and_gates_done(&self) -> u64 {
        self.and_gates_done
    }
}

/// The three-halves evaluator: holds one label per wire.
pub struct Evaluator {
    labels: Vec<Block>,
    hash: TccrHash,
    and_gates_done: u64,
}

impl Evaluator {
    /// As [`crate::Evaluator::new`].
    pub fn new(num_wires: usize, hash_key: Block) -> Evaluator {
        Evaluator {
            labels: vec![Block::ZERO; num_wires],
            hash: TccrHash::new(hash_key),
            and_gates_done: 0,
        }
    }

    pub fn set_label(&mut self, wire: WireId, label: Block) {
        self.labels[wire as usize] = label;
    }

    pub fn label(&self, wire: WireId) -> Block {
        self.labels[wire as usize]
    }

    /// Evaluates `gates` in order with `tables`, which must hold exactly one table per AND
    /// in `gates` (checked before any gate runs). A wire out of range is an error when its
    /// gate is reached; the labels are then unspecified.
    pub fn evaluate(&mut self, gates: &[Gate], tables: TablesRef<'_>) -> Result<(), GarbleError> {
        let n = crate::and_count(gates);
        if tables.control.len() != n || tables.halves.len() != HALVES_PER_AND * tables.control.len()
        {
            return Err(GarbleError::TableCountMismatch {
                and_gates: n,
                expected: HALVES_PER_AND * n,
                got: tables.halves.len(),
            });
        }
        #[cfg(target_arch = "x86_64")]
        if vaes_available() {
            // SAFETY: the CPU has AES, AVX2 and VAES (just checked).
            return unsafe { evaluate_vaes(self, gates, tables) };
        }
        let hash = self.hash.clone();
        self.evaluate_with(&hash, gates, tables)
    }

    /// The gate loop; `tables` holds one table per AND (checked by the caller).
    #[inline(always)]
    fn evaluate_with<H: AndHasher>(
        &mut self,
        hash: &H,
        gates: &[Gate],
        tables: TablesRef<'_>,
    ) -> Result<(), GarbleError> {
        let num_wires = self.labels.len();
        let h3 = HALVES_PER_AND;
        let mut k = 0;
        let mut index = 0;
        while index < gates.len() {
            let g = &gates[index];
            if !crate::gate_wires_ok(g, num_wires) {
                return Err(crate::wire_error(index, g, num_wires));
            }
            // As in the garbler: two independent consecutive ANDs hashed together.
            if let Some(g2) = gates
                .get(index + 1)
                .filter(|g2| g.op == Op::And && g2.op == Op::And && g2.a != g.out && g2.b != g.out)
            {
                if !crate::gate_wires_ok(g2, num_wires) {
                    return Err(crate::wire_error(index + 1, g2, num_wires));
                }
                let l = &self.labels;
                let (a0, b0) = (l[g.a as usize], l[g.b as usize]);
                let (a1, b1) = (l[g2.a as usize], l[g2.b as usize]);
                let j = self.and_gates_done;
                let h = hash.evaluator2(
                    [a0, b0, a0 ^ b0, a1, b1, a1 ^ b1],
                    3u64.wrapping_mul(j),
                    3u64.wrapping_mul(j.wrapping_add(1)),
                );
                let g_1 = &tables.halves[h3 * k..h3 * (k + 1)];
                let g_2 = &tables.halves[h3 * (k + 1)..h3 * (k + 2)];
                let out = evaluate_hashed(&h[..3], a0, b0, g_1, tables.control[k]);
                self.labels[g.out as usize] = out;
                let out = evaluate_hashed(&h[3..], a1, b1, g_2, tables.control[k + 1]);
                self.labels[g2.out as usize] = out;
                self.and_gates_done += 2;
                k += 2;
                index += 2;
                continue;
            }
            index += 1;
            let l = &self.labels;
            let value = match g.op {
                Op::Xor => l[g.a as usize] ^ l[g.b as usize],
                Op::And => {
                    let out = evaluate_and(
                        hash,
                        self.and_gates_done,
                        l[g.a as usize],
                        l[g.b as usize],
                        &tables.halves[HALVES_PER_AND * k..HALVES_PER_AND * (k + 1)],
                        tables.control[k],
                    );
                    self.and_gates_done += 1;
                    k += 1;
                    out
                }
                Op::Inv | Op::Copy => l[g.a as usize],
                Op::Const => Block::ZERO,
            };
            self.labels[g.out as usize] = value;
        }
        Ok(())
    }

    /// The cleartext value of each wire: lsb(label) ⊕ its decoding bit.
    ///
    /// # Panics
    /// If `wires` and `decoding_bits` differ in length.
    pub fn decode(&self, wires: &[WireId], decoding_bits: &[bool]) -> Vec<bool> {
        assert_eq!(wires.len(), decoding_bits.len(), "decode: lengths differ");
        wires
            .iter()
            .zip(decoding_bits)
            .map(|(&w, &d)| self.label(w).lsb() ^ d)
            .collect()
    }

    /// AND gates evaluated so far.
    pub fn and_gates_done(&self) -> u64 {
        self.and_gates_done
    }
}

/// A borrowed run of tables (halves and control bytes of the same ANDs).
#[derive(Clone, Copy, Debug)]
pub struct TablesRef<'a> {
    pub halves: &'a [u64],
    pub control: &'a [u8],
}

impl<'a> From<&'a Tables> for TablesRef<'a> {
    fn from(t: &'a Tables) -> TablesRef<'a> {
        TablesRef {
            halves: &t.halves,
            control: &t.control,
        }
    }
}

/// Whether this CPU runs the [`Vaes`] hasher (checked once).
#[cfg(target_arch = "x86_64")]
fn vaes_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("vaes")
    })
}

/// [`Garbler::garble`]'s loop with the hash on VAES registers.
///
/// # Safety
/// The CPU has AES, AVX2 and VAES.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,avx2,vaes")]
unsafe fn garble_vaes(garbler: &mut Garbler, gates: &[Gate], tables: &mut Tables) {
    // SAFETY: per this function's contract.
    let hash =
        Vaes(unsafe { pgc_crypto::aes::wide::RoundKeys256::new(garbler.hash.permutation()) });
    garbler.garble_with(&hash, gates, tables)
}

/// [`Evaluator::evaluate`]'s loop with the hash on VAES registers.
///
/// # Safety
/// The CPU has AES, AVX2 and VAES; `tables` holds one table per AND of `gates`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,avx2,vaes")]
unsafe fn evaluate_vaes(
    evaluator: &mut Evaluator,
    gates: &[Gate],
    tables: TablesRef<'_>,
) -> Result<(), GarbleError> {
    // SAFETY: per this function's contract.
    let hash =
        Vaes(unsafe { pgc_crypto::aes::wide::RoundKeys256::new(evaluator.hash.permutation()) });
    evaluator.evaluate_with(&hash, gates, tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For every (α, β, c) the derived linear parts give C⁰ ⊕ ab·Δ at all four colour
    /// pairs, checked symbolically: each side as a 6-bit mask per output half.
    #[test]
    fn dicing_solves_every_colour_pair() {
        let table = Dicing::derive();
        for index in 0..16usize {
            let (alpha, beta) = ((index >> 3) & 1 == 1, (index >> 2) & 1 == 1);
            let c = (index & 3) as u8;
            let rows = table.rows(alpha, beta, c);
            let z = control_bits(alpha, beta, c & 1 == 1, c & 2 == 2);
            for (i, j) in [(false, false), (false, true), (true, false), (true, true)] {
                let (a, b) = (i ^ alpha, j ^ beta);
                let r = dice(i, j, z);
                for half in 0..2 {
                    // Evaluator: V_ij·G ⊕ R_half·(A⁰ ⊕ aΔ; B⁰ ⊕ bΔ), as masks over u.
                    let mut got = 0u8;
                    if (half == 0 && i) || (half == 1 && j) {
                        got ^= rows[2 + half];
                    }
                    if i ^ j {
                        got ^= rows[4];
                    }
                    let rr = (r >> (4 * half)) & 15;
                    got ^= rr;
                    if a {
                        got ^= (rr & 3) << 4;
                    }
                    if b {
                        got ^= ((rr >> 2) & 3) << 4;
                    }
                    let want = rows[half] ^ if a && b { 1 << (4 + half) } else { 0 };
                    assert_eq!(
                        got, want,
                        "α={alpha} β={beta} c={c} i={i} j={j} half={half}"
                    );
                }
            }
        }
    }

    /// Every (a, b) and every pair of permute bits, through the real hash.
    #[test]
    fn and_gates_match_cleartext_for_all_inputs_and_permute_bits() {
        let mut prg = Prg::from_seed(Block(0x3a1f));
        for trial in 0..64u64 {
            let delta = crate::random_delta(&mut prg);
            let key = prg.random_block();
            let mut garbler = Garbler::new(3, delta, key, Prg::from_seed(Block(trial as u128)));
            let (mut a0, mut b0) = (prg.random_block(), prg.random_block());
            // Force each (α, β) combination in turn.
            a0 = Block((a0.0 & !1) | (trial & 1) as u128);
            b0 = Block((b0.0 & !1) | ((trial >> 1) & 1) as u128);
            garbler.set_zero_label(0, a0);
            garbler.set_zero_label(1, b0);
            let mut tables = Tables::default();
            garbler.garble(&[Gate::and(0, 1, 2)], &mut tables);
            assert_eq!(tables.len(), 1);
            let c0 = garbler.zero_label(2);
            for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
                let mut ev = Evaluator::new(3, key);
                ev.set_label(0, a0 ^ delta.select(a));
                ev.set_label(1, b0 ^ delta.select(b));
                ev.evaluate(&[Gate::and(0, 1, 2)], (&tables).into())
                    .unwrap();
                assert_eq!(
                    ev.label(2),
                    c0 ^ delta.select(a && b),
                    "trial {trial} a={a} b={b}"
                );
            }
        }
    }

    /// The VAES hasher against the hash's definition, where the CPU has it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vaes_hashes_match_the_portable_ones() {
        if !vaes_available() {
            return;
        }
        #[target_feature(enable = "aes,avx2,vaes")]
        unsafe fn both(hash: &TccrHash, xs: [Block; 3], delta: Block, t: u64) -> bool {
            // SAFETY: the caller checked the CPU.
            let v = Vaes(unsafe { pgc_crypto::aes::wide::RoundKeys256::new(hash.permutation()) });
            let six = [xs[0], xs[1], xs[2], xs[2], xs[0], xs[1] ^ delta];
            let t1 = t.wrapping_add(5);
            v.garbler(xs, delta, t) == hash.garbler(xs, delta, t)
                && v.evaluator(xs, t) == hash.evaluator(xs, t)
                && v.garbler2(six, delta, t, t1) == hash.garbler2(six, delta, t, t1)
                && v.evaluator2(six, t, t1) == hash.evaluator2(six, t, t1)
        }
        let mut prg = Prg::from_seed(Block(0x7a));
        for t in [0u64, 1, 3 << 40, u64::MAX - 2] {
            let hash = TccrHash::new(prg.random_block());
            let xs = [prg.random_block(), prg.random_block(), prg.random_block()];
            let delta = crate::random_delta(&mut prg);
            // SAFETY: the CPU has AES, AVX2 and VAES (checked above).
            assert!(unsafe { both(&hash, xs, delta, t) }, "tweak {t}");
        }
    }

    #[test]
    fn packed_tables_round_trip_at_every_length() {
        let mut prg = Prg::from_seed(Block(7));
        for n in 0..40 {
            let t = Tables {
                halves: (0..3 * n).map(|_| prg.random_u64()).collect(),
                control: (0..n).map(|_| (prg.random_u64() & 31) as u8).collect(),
            };
            let mut bytes = Vec::new();
            t.pack(&mut bytes);
            assert_eq!(bytes.len(), packed_bytes(n));
            assert_eq!(ands_in_packed(bytes.len()), Some(n));
            let mut back = Tables::default();
            assert_eq!(back.unpack_append(&bytes), Some(n));
            assert_eq!(back, t);
            if n % 8 != 0 {
                let last = bytes.len() - 1;
                bytes[last] |= 0x80;
                assert_eq!(
                    Tables::default().unpack_append(&bytes),
                    None,
                    "padding n={n}"
                );
            }
        }
        assert_eq!(ands_in_packed(1), None);
    }
}
