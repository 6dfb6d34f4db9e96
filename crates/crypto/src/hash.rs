//! A tweakable hash built from a fixed-key permutation, for half-gates garbling and OT
//! extension.
//!
//! # Construction
//!
//! π is AES-128 under a fixed public key, modelled as a random permutation (public: every
//! party, the adversary included, can evaluate π and π⁻¹). σ is the linear orthomorphism
//! σ(x_L ‖ x_R) = (x_L ⊕ x_R) ‖ x_L (x_L the high 64 bits), and the 64-bit tweak i sits in
//! the low half of a block:
//!
//! ```text
//! H(x, i) = π(σ(x) ⊕ i) ⊕ σ(x)
//! ```
//!
//! # What is proven, and what is not
//!
//! Guo, Katz, Wang and Yu, "Efficient and Secure Multiparty Computation from Fixed-Key
//! Block Ciphers" (IEEE S&P 2020; ePrint 2019/074) prove, in the random-permutation model:
//!
//! - (§7.3) MMO^σ(x) = π(σ(x)) ⊕ σ(x) is **circular correlation robust** (CCR): an
//!   adversary making q queries to O(x, b) = MMO^σ(x ⊕ Δ) ⊕ b·Δ (never the same x with
//!   both b) and p queries to π, π⁻¹ tells O from a random function with advantage of
//!   order (q² + p·q)/2^ρ, ρ being the min-entropy of the secret Δ (127 bits here: its
//!   lsb is 1). The orthomorphism property is what makes both σ(Δ) and σ(Δ) ⊕ Δ
//!   unpredictable, so the b·Δ term leaks nothing.
//! - (§7.4) the two-call construction π(π(x) ⊕ i) ⊕ π(x) is **tweakable** CCR (TCCR).
//!
//! `H` above is neither of these exactly: since σ is linear,
//! H(x, i) = MMO^σ(x ⊕ σ⁻¹(i)) ⊕ i, i.e. the CCR hash at an input shifted by a
//! tweak-dependent offset, plus the public i. It is **not** TCCR against inputs the
//! adversary chooses: two queries (x, i), (x′, i′) with σ(x ⊕ x′) = i ⊕ i′ reach the same
//! π input and their answers differ by the known i ⊕ i′. Half-gates hashes only wire
//! labels, never adversarial inputs, and a simulation proof reduces to CCR of MMO^σ as long
//! as no two hash calls of a garbling share the shifted input x ⊕ σ⁻¹(i); with distinct
//! tweaks and labels that are uniform, public constants or free-XOR combinations of
//! those, that happens with probability about Q²/2^127 for Q hash calls. That reduction is
//! our own sketch, not a theorem of the paper (whose authors say it proves half-gates from
//! a CCR hash only when the hash is used the way the paper describes). Where chosen inputs
//! matter (an actively malicious OT receiver), use a TCCR construction instead.
//!
//! # Many gates, many executions
//!
//! Guo, Katz, Wang, Weng and Yu, "Better Concrete Security for Half-Gates Garbling (in the
//! Multi-Instance Setting)" (CRYPTO 2020; ePrint 2019/1168) show that the p·q/2^ρ term is
//! real for a fixed-key π: with C hash calls in total, across all executions that share the
//! key, an attacker who evaluates π about 2^ρ/C times recovers some Δ. Their fix re-keys π
//! per small group of tweaks from a per-execution random seed (ideal-cipher model), which
//! makes the bound independent of C. pgc keeps one fixed key. So a circuit of 10⁹ AND
//! gates (2·10⁹ ≈ 2³¹ calls) has about 2⁹⁶ AES evaluations of security, not 2¹²⁷, and that
//! figure falls by log₂ of the number of executions run under the same key.

use crate::aes::AesKernel;
use crate::{Aes128, Block};

/// σ(x_L ‖ x_R) = (x_L ⊕ x_R) ‖ x_L, with x_L the high 64 bits.
#[inline(always)]
pub fn sigma(x: Block) -> Block {
    let hi = (x.0 >> 64) as u64;
    let lo = x.0 as u64;
    Block((((hi ^ lo) as u128) << 64) | hi as u128)
}

/// H(x, i) = π(σ(x) ⊕ i) ⊕ σ(x) under a fixed public key.
#[derive(Clone)]
pub struct TccrHash {
    pi: Aes128,
}

impl TccrHash {
    /// A hash whose permutation is AES under the public key `key`. Use distinct keys for
    /// distinct purposes (garbling, OT extension) so their tweak spaces never meet.
    pub fn new(key: Block) -> TccrHash {
        TccrHash {
            pi: Aes128::new(key),
        }
    }

    #[inline]
    pub fn tccr(&self, x: Block, tweak: u64) -> Block {
        let s = sigma(x);
        self.pi.encrypt_block(s ^ Block(tweak as u128)) ^ s
    }

    /// `out[k] = H(xs[k], tweaks[k])` for all k, in one fused pass of the fastest AES
    /// kernel. Panics if the three lengths differ.
    #[inline]
    pub fn tccr_batch(&self, xs: &[Block], tweaks: &[u64], out: &mut [Block]) {
        self.pi.tccr_blocks(AesKernel::detect(), xs, tweaks, out);
    }

    /// `out[k] = H(xs[k], first_tweak + k)` (tweaks wrap mod 2⁶⁴): the evaluator's half-gate
    /// hashes, with the tweaks made in registers. Panics if the lengths differ.
    #[inline]
    pub fn tccr_batch_seq(&self, xs: &[Block], first_tweak: u64, out: &mut [Block]) {
        self.pi
            .tccr_seq_blocks(AesKernel::detect(), xs, first_tweak, out);
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
            .tccr_seq_pair_blocks(AesKernel::detect(), xs, offset, first_tweak, out);
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
        self.pi.tccr_blocks(kernel, xs, tweaks, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prg;

    #[test]
    fn sigma_is_the_stated_orthomorphism() {
        let x = Block((0x1111_2222_3333_4444u128 << 64) | 0x0f0f_0f0f_0f0f_0f0f);
        let expect = Block(
            ((0x1111_2222_3333_4444u128 ^ 0x0f0f_0f0f_0f0f_0f0f) << 64) | 0x1111_2222_3333_4444,
        );
        assert_eq!(sigma(x), expect);
        // Linear, and σ(x) ⊕ x is a permutation too (orthomorphism): spot-check injectivity.
        let y = Block(0xdead_beef_u128 << 70 | 77);
        assert_eq!(sigma(x ^ y), sigma(x) ^ sigma(y));
        assert_ne!(sigma(x) ^ x, sigma(y) ^ y);
    }

    #[test]
    fn tccr_matches_its_definition() {
        let h = TccrHash::new(Block(42));
        let pi = Aes128::new(Block(42));
        let x = Block(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        let s = sigma(x);
        assert_eq!(h.tccr(x, 9), pi.encrypt_block(s ^ Block(9)) ^ s);
        assert_ne!(h.tccr(x, 9), h.tccr(x, 10));
    }

    #[test]
    fn batch_matches_single_on_every_kernel() {
        let mut prg = Prg::from_seed(Block(7));
        let h = TccrHash::new(prg.random_block());
        for len in 0..200 {
            let mut xs = vec![Block::ZERO; len];
            prg.fill_blocks(&mut xs);
            let tweaks: Vec<u64> = (0..len).map(|_| prg.random_u64()).collect();
            let expect: Vec<Block> = xs
                .iter()
                .zip(&tweaks)
                .map(|(&x, &t)| h.tccr(x, t))
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
    fn consecutive_tweak_batches_match_single_on_every_kernel() {
        let mut prg = Prg::from_seed(Block(8));
        let h = TccrHash::new(prg.random_block());
        let offset = prg.random_block();
        // Tweaks that wrap around 2^64 inside a call.
        for first in [0u64, 1000, u64::MAX - 37] {
            for len in 0..130 {
                let mut xs = vec![Block::ZERO; len];
                prg.fill_blocks(&mut xs);
                let tweak = |k: usize| first.wrapping_add(k as u64);
                let seq: Vec<Block> = (0..len).map(|k| h.tccr(xs[k], tweak(k))).collect();
                let pairs: Vec<Block> = (0..len)
                    .flat_map(|k| [h.tccr(xs[k], tweak(k)), h.tccr(xs[k] ^ offset, tweak(k))])
                    .collect();
                for kernel in AesKernel::available() {
                    let mut out = vec![Block::ONES; len];
                    h.pi.tccr_seq_blocks(kernel, &xs, first, &mut out);
                    assert_eq!(out, seq, "seq {kernel:?} len {len} first {first}");
                    let mut out = vec![Block::ONES; 2 * len];
                    h.pi.tccr_seq_pair_blocks(kernel, &xs, offset, first, &mut out);
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

    #[test]
    fn the_chosen_input_collision_is_real() {
        // Documents why this hash is not TCCR for adversarial inputs: (x, i) and
        // (x ⊕ σ⁻¹(i ⊕ i′), i′) hit the same π input, so the outputs differ by i ⊕ i′.
        // σ⁻¹(u_L ‖ u_R) = u_R ‖ (u_L ⊕ u_R).
        let sigma_inv = |u: Block| {
            let hi = (u.0 >> 64) as u64;
            let lo = u.0 as u64;
            Block(((lo as u128) << 64) | (hi ^ lo) as u128)
        };
        let h = TccrHash::new(Block(1));
        let (i, j) = (4u64, 7u64);
        let x = Block(0xabcdef);
        let x2 = x ^ sigma_inv(Block((i ^ j) as u128));
        assert_eq!(
            sigma(sigma_inv(Block(12345 << 64 | 678))),
            Block(12345 << 64 | 678)
        );
        assert_eq!(h.tccr(x, i) ^ h.tccr(x2, j), Block((i ^ j) as u128));
    }
}
