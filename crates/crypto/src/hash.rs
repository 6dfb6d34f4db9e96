//! The tweakable circular-correlation-robust (TCCR) hash of half-gates garbling and OT
//! extension.
//!
//! # Construction
//!
//! TMMO of Guo, Katz, Wang and Yu, "Efficient and Secure Multiparty Computation from
//! Fixed-Key Block Ciphers" (IEEE S&P 2020; ePrint 2019/074), §7.4, with the 64-bit tweak i
//! in the low half of a block:
//!
//! ```text
//! H(x, i) = π(π(x) ⊕ i) ⊕ π(x)
//! ```
//!
//! π is AES-128 under the key given to [`TccrHash::new`]. The key is public; the garbling
//! layer draws a fresh random one per run and sends it to the evaluator in the clear.
//!
//! # What is proven
//!
//! GKWY prove TMMO TCCR in the random-permutation model (π random, and the adversary may
//! query π and π⁻¹): given q queries to O(x, i, b) = H(x ⊕ Δ, i) ⊕ b·Δ, never the same
//! (x, i) twice, and p queries to π and π⁻¹, it tells O from a random function with
//! advantage of order (q² + p·q)/2^ρ, ρ being the min-entropy of the secret Δ (127 bits
//! here: its lsb is 1). We state the order only, not the paper's exact constants. GKWY
//! also show that TCCR is what half-gates garbling needs, each hash call with its own
//! tweak. The one-call form π(σ(x) ⊕ i) ⊕ σ(x), σ a linear orthomorphism, is not TCCR
//! (chosen inputs collide; see the test `sigma_form_is_not_tccr`).
//!
//! # Why a fresh key per run
//!
//! Under one fixed key the p·q term counts the hash calls of every run together: Guo,
//! Katz, Wang, Weng and Yu, "Better Concrete Security for Half-Gates Garbling (in the
//! Multi-Instance Setting)" (CRYPTO 2020; ePrint 2019/1168) show that an attacker who
//! evaluates π about 2^ρ/Q times, Q being the calls of all runs, recovers some run's Δ, with
//! the work done once for all runs. With π keyed afresh per run (modelled as an ideal
//! cipher), work done before a run's key is known is useless, so each run stands alone
//! with its own q. (GKWWY go further and re-key per small group of tweaks, which removes
//! the dependence on q; pgc does not.)
//!
//! # Large circuits
//!
//! Each garbled AND gate adds about 2 calls involving Δ to q (one per half gate). A circuit
//! of 10⁹ AND gates has q ≈ 2³¹: q²/2¹²⁷ ≈ 2⁻⁶⁵ is negligible, and p·q/2¹²⁷ approaches 1
//! only for an attacker who evaluates AES about 2⁹⁶ times against that one run.

use crate::aes::AesKernel;
use crate::{Aes128, Block};

/// H(x, i) = π(π(x) ⊕ i) ⊕ π(x) (TMMO), π being AES-128 under a public key.
#[derive(Clone)]
pub struct TccrHash {
    pi: Aes128,
}

impl TccrHash {
    /// A hash whose permutation is AES under the public key `key`. Use a fresh random key
    /// per protocol run, and distinct keys for distinct purposes (garbling, OT extension)
    /// so that their tweak spaces never meet.
    pub fn new(key: Block) -> TccrHash {
        TccrHash {
            pi: Aes128::new(key),
        }
    }

    /// The permutation π, for callers that fuse the hash into their own kernels (see
    /// [`crate::aes::wide`]).
    pub fn permutation(&self) -> &Aes128 {
        &self.pi
    }

    #[inline]
    pub fn tccr(&self, x: Block, tweak: u64) -> Block {
        let first = self.pi.encrypt_block(x);
        self.pi.encrypt_block(first ^ Block(tweak as u128)) ^ first
    }

    /// `out[k] = H(xs[k], tweaks[k])` for all k, in one pass of the fastest AES kernel.
    /// Panics if the three lengths differ.
    #[inline]
    pub fn tccr_batch(&self, xs: &[Block], tweaks: &[u64], out: &mut [Block]) {
        self.pi.tmmo_blocks(AesKernel::detect(), xs, tweaks, out);
    }

    /// `out[k] = H(xs[k], first_tweak + k)` (tweaks wrap mod 2⁶⁴), the tweaks made in
    /// registers. Panics if the lengths differ.
    #[inline]
    pub fn tccr_batch_seq(&self, xs: &[Block], first_tweak: u64, out: &mut [Block]) {
        self.pi
            .tmmo_seq_blocks(AesKernel::detect(), xs, first_tweak, out);
    }

    /// Both labels of each wire: `out[2k] = H(xs[k], first_tweak + k)` and
    /// `out[2k + 1] = H(xs[k] ⊕ offset, first_tweak + k)` (the garbler's half-gate hashes,
    /// with offset Δ applied in registers). Panics unless `out.len() == 2 * xs.len()`.
    #[inline]
    pub fn tccr_batch_seq_pairs(
        &self,
        xs: &[Block],
        offset: Block,
        first_tweak: u64,
        out: &mut [Block],
    ) {
        self.pi
            .tmmo_seq_pair_blocks(AesKernel::detect(), xs, offset, first_tweak, out);
    }

    /// [`tccr_batch`](Self::tccr_batch) with a chosen AES kernel (tests, benchmarks).
    /// Panics if the CPU cannot run `kernel` or the lengths differ.
    pub fn tccr_batch_with(
        &self,
        kernel: AesKernel,
        xs: &[Block],
        tweaks: &[u64],
        out: &mut [Block],
    ) {
        self.pi.tmmo_blocks(kernel, xs, tweaks, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prg;

    /// TMMO written out from single-block AES, as the definition reads.
    fn reference(pi: &Aes128, x: Block, tweak: u64) -> Block {
        let pi_x = pi.encrypt_block(x);
        pi.encrypt_block(pi_x ^ Block(tweak as u128)) ^ pi_x
    }

    #[test]
    fn tccr_matches_the_definition() {
        let key = Block(0x2a);
        let (h, pi) = (TccrHash::new(key), Aes128::new(key));
        let x = Block(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        assert_eq!(h.tccr(x, 9), reference(&pi, x, 9));
        assert_ne!(h.tccr(x, 9), h.tccr(x, 10));
        // The key matters, and the tweak sits in the low half of the block.
        assert_ne!(TccrHash::new(Block(0x2b)).tccr(x, 9), h.tccr(x, 9));
        let pi_x = pi.encrypt_block(x);
        assert_eq!(
            h.tccr(x, u64::MAX),
            pi.encrypt_block(pi_x ^ Block(u64::MAX as u128)) ^ pi_x
        );
    }

    #[test]
    fn batch_matches_reference_on_every_kernel() {
        let mut prg = Prg::from_seed(Block(7));
        let key = prg.random_block();
        let (h, pi) = (TccrHash::new(key), Aes128::new(key));
        for len in 0..200 {
            let mut xs = vec![Block::ZERO; len];
            prg.fill_blocks(&mut xs);
            let tweaks: Vec<u64> = (0..len).map(|_| prg.random_u64()).collect();
            let expect: Vec<Block> = xs
                .iter()
                .zip(&tweaks)
                .map(|(&x, &t)| reference(&pi, x, t))
                .collect();
            for kernel in AesKernel::available() {
                let mut out = vec![Block::ONES; len];
                h.tccr_batch_with(kernel, &xs, &tweaks, &mut out);
                assert_eq!(out, expect, "{kernel:?} len {len}");
            }
            let mut out = vec![Block::ZERO; len];
            h.tccr_batch(&xs, &tweaks, &mut out);
            assert_eq!(out, expect);
        }
    }

    #[test]
    fn consecutive_tweak_batches_match_reference_on_every_kernel() {
        let mut prg = Prg::from_seed(Block(8));
        let key = prg.random_block();
        let (h, pi) = (TccrHash::new(key), Aes128::new(key));
        let offset = prg.random_block();
        // Tweaks that wrap around 2^64 inside a call.
        for first in [0u64, 1000, u64::MAX - 37] {
            for len in 0..130 {
                let mut xs = vec![Block::ZERO; len];
                prg.fill_blocks(&mut xs);
                let tweak = |k: usize| first.wrapping_add(k as u64);
                let seq: Vec<Block> = (0..len).map(|k| reference(&pi, xs[k], tweak(k))).collect();
                let pairs: Vec<Block> = (0..len)
                    .flat_map(|k| {
                        [
                            reference(&pi, xs[k], tweak(k)),
                            reference(&pi, xs[k] ^ offset, tweak(k)),
                        ]
                    })
                    .collect();
                for kernel in AesKernel::available() {
                    let mut out = vec![Block::ONES; len];
                    h.pi.tmmo_seq_blocks(kernel, &xs, first, &mut out);
                    assert_eq!(out, seq, "seq {kernel:?} len {len} first {first}");
                    let mut out = vec![Block::ONES; 2 * len];
                    h.pi.tmmo_seq_pair_blocks(kernel, &xs, offset, first, &mut out);
                    assert_eq!(out, pairs, "pairs {kernel:?} len {len} first {first}");
                }
                let mut out = vec![Block::ZERO; len];
                h.tccr_batch_seq(&xs, first, &mut out);
                assert_eq!(out, seq);
                let mut out = vec![Block::ZERO; 2 * len];
                h.tccr_batch_seq_pairs(&xs, offset, first, &mut out);
                assert_eq!(out, pairs);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wide_registers_match_reference() {
        use crate::aes::wide::{RoundKeys256, RoundKeys512, Ymm, Zmm};
        use std::arch::x86_64::*;
        const N: usize = 12;
        #[target_feature(enable = "aes,avx512f,vaes")]
        fn through_zmm(h: &TccrHash, xs: &[Block; N], tweaks: &[Block; N]) -> [Block; N] {
            // SAFETY: loads and stores of 4 of the 12 blocks; this function is compiled
            // with AES-NI, AVX-512F and VAES, and runs only where the CPU has them.
            unsafe {
                let load = |b: &[Block]| -> Zmm { _mm512_loadu_si512(b.as_ptr() as *const _) };
                let x: [Zmm; N / 4] = std::array::from_fn(|j| load(&xs[4 * j..]));
                let t: [Zmm; N / 4] = std::array::from_fn(|j| load(&tweaks[4 * j..]));
                let mut out = [Block::ZERO; N];
                let keys = RoundKeys512::new(h.permutation());
                for (j, v) in keys.tmmo(x, t).into_iter().enumerate() {
                    _mm512_storeu_si512(out[4 * j..].as_mut_ptr() as *mut _, v);
                }
                out
            }
        }
        #[target_feature(enable = "aes,avx2,vaes")]
        fn through_ymm(h: &TccrHash, xs: &[Block; N], tweaks: &[Block; N]) -> [Block; N] {
            // SAFETY: as in `through_zmm`, 2 blocks at a time, with AVX2 and VAES.
            unsafe {
                let load = |b: &[Block]| -> Ymm { _mm256_loadu_si256(b.as_ptr() as *const _) };
                let x: [Ymm; N / 2] = std::array::from_fn(|j| load(&xs[2 * j..]));
                let t: [Ymm; N / 2] = std::array::from_fn(|j| load(&tweaks[2 * j..]));
                let mut out = [Block::ZERO; N];
                let keys = RoundKeys256::new(h.permutation());
                for (j, v) in keys.tmmo(x, t).into_iter().enumerate() {
                    _mm256_storeu_si256(out[2 * j..].as_mut_ptr() as *mut _, v);
                }
                out
            }
        }
        let mut prg = Prg::from_seed(Block(9));
        let key = prg.random_block();
        let (h, pi) = (TccrHash::new(key), Aes128::new(key));
        let mut xs = [Block::ZERO; N];
        prg.fill_blocks(&mut xs);
        let tweaks: [u64; N] = std::array::from_fn(|_| prg.random_u64());
        let expect: Vec<Block> = (0..N).map(|k| reference(&pi, xs[k], tweaks[k])).collect();
        let tweak_blocks = tweaks.map(|t| Block(t as u128));
        if AesKernel::Vaes512.is_available() {
            // SAFETY: the CPU has the features (checked).
            assert_eq!(
                unsafe { through_zmm(&h, &xs, &tweak_blocks) }.to_vec(),
                expect
            );
        }
        if is_x86_feature_detected!("aes")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("vaes")
        {
            // SAFETY: the CPU has the features (checked).
            assert_eq!(
                unsafe { through_ymm(&h, &xs, &tweak_blocks) }.to_vec(),
                expect
            );
        }
    }

    #[test]
    fn sigma_form_is_not_tccr() {
        // The one-call form G(x, i) = π(σ(x) ⊕ i) ⊕ σ(x), σ(x_L ‖ x_R) = (x_L ⊕ x_R) ‖ x_L
        // with x_L the high half, maps (x, i) and (x ⊕ σ⁻¹(i ⊕ j), j) to the same π input,
        // so their outputs differ by the public i ⊕ j: no TCCR hash may allow that. TMMO,
        // on the same two queries, shows no such relation.
        let sigma = |x: Block| {
            let (hi, lo) = ((x.0 >> 64) as u64, x.0 as u64);
            Block((((hi ^ lo) as u128) << 64) | hi as u128)
        };
        let sigma_inv = |u: Block| {
            let (hi, lo) = ((u.0 >> 64) as u64, u.0 as u64);
            Block(((lo as u128) << 64) | (hi ^ lo) as u128)
        };
        let pi = Aes128::new(Block(1));
        let sigma_form =
            |x: Block, i: u64| pi.encrypt_block(sigma(x) ^ Block(i as u128)) ^ sigma(x);
        let (i, j) = (4u64, 7u64);
        let x = Block(0xabcdef);
        let x2 = x ^ sigma_inv(Block((i ^ j) as u128));
        assert_eq!(
            sigma(sigma_inv(Block(12345 << 64 | 678))),
            Block(12345 << 64 | 678)
        );
        assert_eq!(sigma_form(x, i) ^ sigma_form(x2, j), Block((i ^ j) as u128));
        let h = TccrHash::new(Block(1));
        assert_ne!(h.tccr(x, i) ^ h.tccr(x2, j), Block((i ^ j) as u128));
    }
}
