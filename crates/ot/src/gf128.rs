//! Arithmetic in GF(2^128) for the KOS15 consistency check ([`crate::kos`]).
//!
//! A [`Block`] is the polynomial Σ bit_i(x)·X^i (bit i of the `u128` is the coefficient of
//! X^i) modulo X^128 + X^7 + X^2 + X + 1. Addition is XOR. The check needs Σ_j χ_j·t_j over
//! every row of an OT batch, so [`dot`] multiplies without reducing, adds the 256-bit
//! products, and reduces once at the end (reduction is linear).
//!
//! Kernels: PCLMULQDQ (carry-less multiply) on x86-64 CPUs that have it, else a portable
//! shift-and-mask multiply. Neither branches on or indexes memory by the operands.

use pgc_crypto::Block;

/// The product a·b in GF(2^128).
pub fn mul(a: Block, b: Block) -> Block {
    let (lo, hi) = clmul128_portable(a.0, b.0);
    Block(reduce(lo, hi))
}

/// Σ_k xs_k·ys_k in GF(2^128). Panics if the lengths differ (a caller bug).
pub fn dot(xs: &[Block], ys: &[Block]) -> Block {
    assert_eq!(xs.len(), ys.len(), "gf128::dot: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the CPU supports PCLMULQDQ (checked just above); the function needs
        // nothing else.
        return unsafe { x86::dot_pclmul(xs, ys) };
    }
    dot_portable(xs, ys)
}

/// [`dot`] without special instructions (the fallback, and the reference in tests).
pub fn dot_portable(xs: &[Block], ys: &[Block]) -> Block {
    assert_eq!(xs.len(), ys.len(), "gf128::dot_portable: lengths differ");
    let (mut lo, mut hi) = (0u128, 0u128);
    for (x, y) in xs.iter().zip(ys) {
        let (l, h) = clmul128_portable(x.0, y.0);
        lo ^= l;
        hi ^= h;
    }
    Block(reduce(lo, hi))
}

/// Carry-less 64 × 64 → 128-bit product, one masked shift per bit of `b`.
#[inline]
fn clmul64_portable(a: u64, b: u64) -> u128 {
    let a = a as u128;
    let mut acc = 0u128;
    for i in 0..64 {
        let bit = ((b >> i) & 1) as u128;
        acc ^= (a << i) & bit.wrapping_neg();
    }
    acc
}

/// Carry-less 128 × 128 → 256-bit product (low, high) by Karatsuba over 64-bit halves.
#[inline]
fn clmul128_portable(a: u128, b: u128) -> (u128, u128) {
    let (a0, a1) = (a as u64, (a >> 64) as u64);
    let (b0, b1) = (b as u64, (b >> 64) as u64);
    let low = clmul64_portable(a0, b0);
    let high = clmul64_portable(a1, b1);
    let middle = clmul64_portable(a0 ^ a1, b0 ^ b1) ^ low ^ high;
    (low ^ (middle << 64), high ^ (middle >> 64))
}

/// Reduces hi·X^128 + lo modulo X^128 + X^7 + X^2 + X + 1.
#[inline]
fn reduce(lo: u128, hi: u128) -> u128 {
    // X^128 ≡ X^7 + X^2 + X + 1: fold hi down once; the bits shifted past X^127 (at most
    // 7 of them) fold down a second time without overflowing.
    let overflow = (hi >> 127) ^ (hi >> 126) ^ (hi >> 121);
    let fold = |v: u128| v ^ (v << 1) ^ (v << 2) ^ (v << 7);
    lo ^ fold(hi) ^ fold(overflow)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::reduce;
    use pgc_crypto::Block;
    use std::arch::x86_64::*;

    #[target_feature(enable = "sse2")]
    #[inline]
    fn to_m128(v: u128) -> __m128i {
        _mm_set_epi64x((v >> 64) as i64, v as i64)
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    fn from_m128(v: __m128i) -> u128 {
        let low = _mm_cvtsi128_si64(v) as u64 as u128;
        let high = _mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v)) as u64 as u128;
        low | high << 64
    }

    /// [`super::dot`] with PCLMULQDQ: four 64 × 64 products per pair, accumulated
    /// unreduced.
    ///
    /// # Safety
    /// The CPU must support PCLMULQDQ.
    #[target_feature(enable = "sse2,pclmulqdq")]
    pub(super) unsafe fn dot_pclmul(xs: &[Block], ys: &[Block]) -> Block {
        let mut low = _mm_setzero_si128();
        let mut middle = _mm_setzero_si128();
        let mut high = _mm_setzero_si128();
        for (x, y) in xs.iter().zip(ys) {
            let (a, b) = (to_m128(x.0), to_m128(y.0));
            low = _mm_xor_si128(low, _mm_clmulepi64_si128::<0x00>(a, b));
            high = _mm_xor_si128(high, _mm_clmulepi64_si128::<0x11>(a, b));
            middle = _mm_xor_si128(middle, _mm_clmulepi64_si128::<0x01>(a, b));
            middle = _mm_xor_si128(middle, _mm_clmulepi64_si128::<0x10>(a, b));
        }
        let middle = from_m128(middle);
        Block(reduce(
            from_m128(low) ^ (middle << 64),
            from_m128(high) ^ (middle >> 64),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_crypto::Prg;

    /// Schoolbook multiplication, reducing after every shift: shares nothing with [`mul`]
    /// but the polynomial.
    fn mul_reference(a: u128, b: u128) -> u128 {
        let (mut a, mut product) = (a, 0u128);
        for i in 0..128 {
            if (b >> i) & 1 == 1 {
                product ^= a;
            }
            let carry = a >> 127;
            a <<= 1;
            if carry == 1 {
                a ^= 0x87;
            }
        }
        product
    }

    fn random_blocks(n: usize, seed: u128) -> Vec<Block> {
        let mut out = vec![Block::ZERO; n];
        Prg::from_seed(Block(seed)).fill_blocks(&mut out);
        out
    }

    #[test]
    fn known_products() {
        // X^127 · X = X^128 ≡ X^7 + X^2 + X + 1.
        assert_eq!(mul(Block(1 << 127), Block(2)), Block(0x87));
        // X^127 · X^127 = X^254 = X^126 · X^128 ≡ X^133 + X^128 + X^127 + X^126
        //                                        ≡ X^127 + X^126 + (X^5 + 1)·(X^7 + X^2 + X + 1).
        let expected: u128 = (1 << 127) | (1 << 126) | ((0x87 << 5) ^ 0x87);
        assert_eq!(mul(Block(1 << 127), Block(1 << 127)), Block(expected));
        assert_eq!(mul(Block(0x1234), Block(1)), Block(0x1234));
        assert_eq!(mul(Block(u128::MAX), Block::ZERO), Block::ZERO);
    }

    #[test]
    fn mul_matches_the_reference_and_is_a_field_product() {
        let a = random_blocks(200, 1);
        let b = random_blocks(200, 2);
        let c = random_blocks(200, 3);
        for k in 0..200 {
            let (x, y, z) = (a[k], b[k], c[k]);
            assert_eq!(mul(x, y).0, mul_reference(x.0, y.0), "pair {k}");
            assert_eq!(mul(x, y), mul(y, x));
            assert_eq!(mul(mul(x, y), z), mul(x, mul(y, z)));
            assert_eq!(mul(x, y ^ z), mul(x, y) ^ mul(x, z));
        }
        // Edge operands: all ones, top bits only.
        for &x in &[u128::MAX, 1 << 127, (1 << 127) | 1, 0xff << 120] {
            for &y in &[u128::MAX, 1 << 127, 3 << 126, 0x87] {
                assert_eq!(mul(Block(x), Block(y)).0, mul_reference(x, y));
            }
        }
    }

    #[test]
    fn dot_kernels_agree_with_summed_products() {
        for n in [0usize, 1, 2, 7, 100, 1000] {
            let xs = random_blocks(n, 10 + n as u128);
            let ys = random_blocks(n, 20 + n as u128);
            let expected = xs.iter().zip(&ys).fold(Block::ZERO, |acc, (&x, &y)| {
                acc ^ Block(mul_reference(x.0, y.0))
            });
            assert_eq!(dot_portable(&xs, &ys), expected, "portable, n = {n}");
            assert_eq!(dot(&xs, &ys), expected, "best kernel, n = {n}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn pclmul_matches_portable_on_edge_operands() {
        if !std::arch::is_x86_feature_detected!("pclmulqdq") {
            eprintln!("no PCLMULQDQ on this CPU: kernel not tested");
            return;
        }
        let edges = [0u128, 1, u128::MAX, 1 << 127, 1 << 64, (1 << 64) - 1, 0x87];
        let xs: Vec<Block> = edges
            .iter()
            .flat_map(|&x| edges.map(|_| Block(x)))
            .collect();
        let ys: Vec<Block> = edges.iter().flat_map(|_| edges.map(Block)).collect();
        for k in 0..xs.len() {
            let (x, y) = (&xs[k..k + 1], &ys[k..k + 1]);
            // SAFETY: PCLMULQDQ was detected above.
            let fast = unsafe { x86::dot_pclmul(x, y) };
            assert_eq!(fast, dot_portable(x, y), "{:x} · {:x}", x[0].0, y[0].0);
        }
        // SAFETY: as above.
        assert_eq!(unsafe { x86::dot_pclmul(&xs, &ys) }, dot_portable(&xs, &ys));
    }
}
