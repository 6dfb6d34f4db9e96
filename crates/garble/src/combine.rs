//! The per-AND arithmetic after hashing: tables and output labels from the hashes.
//!
//! Two implementations of each step compute the same thing: a portable one on `Block`s
//! (u128 arithmetic, two general-purpose registers per block) and an SSE2 one (baseline on
//! every x86-64 CPU, so no run-time detection), one register per block, which roughly
//! halves the cost of this step. Tests check that they agree.

use pgc_circuit::WireId;
use pgc_crypto::Block;
use std::mem::MaybeUninit;

/// Garbler, per queued AND k with zero-labels `(A⁰, B⁰) = pairs[2k..2k+2]` and hashes
/// `hashes[4k..4k+4] = H(A⁰), H(A¹), H(B⁰), H(B¹)`:
/// `rows[2k..2k+2] = [T_G, T_E]` and `labels[outs[k]] = C⁰`.
#[inline]
pub(crate) fn garble_ands(
    delta: Block,
    pairs: &[Block],
    hashes: &[Block],
    outs: &[WireId],
    rows: &mut [MaybeUninit<Block>],
    labels: &mut [Block],
) {
    debug_assert!(pairs.len() == 2 * outs.len() && hashes.len() == 4 * outs.len());
    debug_assert_eq!(rows.len(), 2 * outs.len());
    // SAFETY: SSE2 is part of the x86-64 baseline, so the CPU has it.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        sse2::garble_ands(delta, pairs, hashes, outs, rows, labels)
    };
    #[cfg(not(target_arch = "x86_64"))]
    portable::garble_ands(delta, pairs, hashes, outs, rows, labels);
}

/// Evaluator, per queued AND k with labels `(A, B) = pairs[2k..2k+2]`, hashes
/// `H(A, 2j), H(B, 2j+1) = hashes[2k..2k+2]` and table `[T_G, T_E] = rows[2k..2k+2]`:
/// `labels[outs[k]] = H(A) ⊕ lsb(A)·T_G ⊕ H(B) ⊕ lsb(B)·(T_E ⊕ A)`.
#[inline]
pub(crate) fn evaluate_ands(
    pairs: &[Block],
    hashes: &[Block],
    rows: &[Block],
    outs: &[WireId],
    labels: &mut [Block],
) {
    debug_assert!(pairs.len() == 2 * outs.len() && hashes.len() == 2 * outs.len());
    debug_assert_eq!(rows.len(), 2 * outs.len());
    // SAFETY: SSE2 is part of the x86-64 baseline, so the CPU has it.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        sse2::evaluate_ands(pairs, hashes, rows, outs, labels)
    };
    #[cfg(not(target_arch = "x86_64"))]
    portable::evaluate_ands(pairs, hashes, rows, outs, labels);
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub(crate) mod portable {
    use super::*;

    pub(crate) fn garble_ands(
        delta: Block,
        pairs: &[Block],
        hashes: &[Block],
        outs: &[WireId],
        rows: &mut [MaybeUninit<Block>],
        labels: &mut [Block],
    ) {
        for (((x, h), row), &out) in pairs
            .chunks_exact(2)
            .zip(hashes.chunks_exact(4))
            .zip(rows.chunks_exact_mut(2))
            .zip(outs)
        {
            let (a0, b0) = (x[0], x[1]);
            let (p_a, p_b) = (a0.lsb(), b0.lsb());
            let t_g = h[0] ^ h[1] ^ delta.select(p_b);
            let t_e = h[2] ^ h[3] ^ a0;
            // Garbler half: H(A^{p_a}) ⊕ p_a·p_b·Δ, via T_G. Evaluator half: H(B^{p_b}).
            let w_g = h[0] ^ t_g.select(p_a);
            let w_e = h[2] ^ (h[2] ^ h[3]).select(p_b);
            labels[out as usize] = w_g ^ w_e;
            row[0].write(t_g);
            row[1].write(t_e);
        }
    }

    pub(crate) fn evaluate_ands(
        pairs: &[Block],
        hashes: &[Block],
        rows: &[Block],
        outs: &[WireId],
        labels: &mut [Block],
    ) {
        for (((x, h), t), &out) in pairs
            .chunks_exact(2)
            .zip(hashes.chunks_exact(2))
            .zip(rows.chunks_exact(2))
            .zip(outs)
        {
            let (a, b) = (x[0], x[1]);
            let w_g = h[0] ^ t[0].select(a.lsb());
            let w_e = h[1] ^ (t[1] ^ a).select(b.lsb());
            labels[out as usize] = w_g ^ w_e;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::*;
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(b: &Block) -> __m128i {
        // SAFETY: a `Block` is 16 readable bytes.
        unsafe { _mm_loadu_si128(b as *const Block as *const __m128i) }
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn store(dst: *mut Block, v: __m128i) {
        // SAFETY: every caller passes a pointer to a live, writable `Block` slot (from a
        // `&mut Block` or a `&mut MaybeUninit<Block>`).
        unsafe { _mm_storeu_si128(dst as *mut __m128i, v) }
    }

    /// All ones if the lsb of `x` is 1, else zero.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn lsb_mask(x: __m128i) -> __m128i {
        _mm_shuffle_epi32::<0>(_mm_srai_epi32::<31>(_mm_slli_epi32::<31>(x)))
    }

    #[target_feature(enable = "sse2")]
    pub(super) fn garble_ands(
        delta: Block,
        pairs: &[Block],
        hashes: &[Block],
        outs: &[WireId],
        rows: &mut [MaybeUninit<Block>],
        labels: &mut [Block],
    ) {
        let delta = load(&delta);
        for (((x, h), row), &out) in pairs
            .chunks_exact(2)
            .zip(hashes.chunks_exact(4))
            .zip(rows.chunks_exact_mut(2))
            .zip(outs)
        {
            let (a0, b0) = (load(&x[0]), load(&x[1]));
            let (h0, h1, h2, h3) = (load(&h[0]), load(&h[1]), load(&h[2]), load(&h[3]));
            let (p_a, p_b) = (lsb_mask(a0), lsb_mask(b0));
            let t_g = _mm_xor_si128(_mm_xor_si128(h0, h1), _mm_and_si128(delta, p_b));
            let t_e = _mm_xor_si128(_mm_xor_si128(h2, h3), a0);
            let w_g = _mm_xor_si128(h0, _mm_and_si128(t_g, p_a));
            let w_e = _mm_xor_si128(h2, _mm_and_si128(_mm_xor_si128(h2, h3), p_b));
            store(&mut labels[out as usize], _mm_xor_si128(w_g, w_e));
            store(row[0].as_mut_ptr(), t_g);
            store(row[1].as_mut_ptr(), t_e);
        }
    }

    #[target_feature(enable = "sse2")]
    pub(super) fn evaluate_ands(
        pairs: &[Block],
        hashes: &[Block],
        rows: &[Block],
        outs: &[WireId],
        labels: &mut [Block],
    ) {
        for (((x, h), t), &out) in pairs
            .chunks_exact(2)
            .zip(hashes.chunks_exact(2))
            .zip(rows.chunks_exact(2))
            .zip(outs)
        {
            let (a, b) = (load(&x[0]), load(&x[1]));
            let w_g = _mm_xor_si128(load(&h[0]), _mm_and_si128(load(&t[0]), lsb_mask(a)));
            let t_e = _mm_xor_si128(load(&t[1]), a);
            let w_e = _mm_xor_si128(load(&h[1]), _mm_and_si128(t_e, lsb_mask(b)));
            store(&mut labels[out as usize], _mm_xor_si128(w_g, w_e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_crypto::Prg;

    fn random(prg: &mut Prg, n: usize) -> Vec<Block> {
        let mut v = vec![Block::ZERO; n];
        prg.fill_blocks(&mut v);
        v
    }

    #[test]
    fn simd_and_portable_agree() {
        let mut prg = Prg::from_seed(Block(77));
        for n in [0usize, 1, 2, 7, 64] {
            let delta = Block(prg.random_block().0 | 1);
            let pairs = random(&mut prg, 2 * n);
            let hashes = random(&mut prg, 4 * n);
            let outs: Vec<WireId> = (0..n as WireId).map(|k| (k * 7) % 64).collect();

            let mut rows_a = vec![MaybeUninit::new(Block::ZERO); 2 * n];
            let mut rows_b = rows_a.clone();
            let mut labels_a = random(&mut prg, 64);
            let mut labels_b = labels_a.clone();
            garble_ands(delta, &pairs, &hashes, &outs, &mut rows_a, &mut labels_a);
            portable::garble_ands(delta, &pairs, &hashes, &outs, &mut rows_b, &mut labels_b);
            // SAFETY: both were initialized above and fully rewritten.
            let (ra, rb): (Vec<Block>, Vec<Block>) = unsafe {
                (
                    rows_a.iter().map(|r| r.assume_init()).collect(),
                    rows_b.iter().map(|r| r.assume_init()).collect(),
                )
            };
            assert_eq!(ra, rb);
            assert_eq!(labels_a, labels_b);

            let rows = random(&mut prg, 2 * n);
            evaluate_ands(&pairs, &hashes[..2 * n], &rows, &outs, &mut labels_a);
            portable::evaluate_ands(&pairs, &hashes[..2 * n], &rows, &outs, &mut labels_b);
            assert_eq!(labels_a, labels_b);
        }
    }
}
