//! Transposing a 128 × n bit matrix, the core data movement of IKNP: the parties compute
//! 128 long columns (one per base OT) and need n rows of 128 bits (one per extended OT).
//!
//! Layout: the input is 128 rows of `w` blocks each, row-major (`rows[i * w + k]` holds
//! bits `128k .. 128k + 128` of row i, bit c of a row being bit `c % 128` of the block's
//! `u128`). The output is `n = 128 w` blocks; bit i of `out[j]` is bit j of row i.
//!
//! Kernels, picked at run time:
//! - [`TransposeKernel::Avx512Gfni`]: per 128 × 128 tile, an in-lane 16 × 16 byte transpose
//!   (4 rounds of unpacks on 16 zmm registers), an 8 × 8 bit transpose of every 64-bit word
//!   with one GF(2) affine instruction, and a byte permutation that assembles the output
//!   rows.
//! - [`TransposeKernel::Avx2`]: the same byte transpose on ymm registers (32 rows at a
//!   time), then `movemask` peels off one bit column of 32 rows per instruction.
//! - [`TransposeKernel::Portable`]: the recursive block-swap transpose (7 rounds of masked
//!   shifts on 64-bit words).

use pgc_crypto::Block;
use std::sync::OnceLock;

/// One implementation of the transpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransposeKernel {
    /// Plain Rust, any CPU.
    Portable,
    /// AVX2 byte shuffles and `movemask` (x86-64 only).
    Avx2,
    /// AVX-512 BW + VBMI with GFNI (x86-64 only; Ice Lake, Sapphire Rapids, Zen 4 and later).
    Avx512Gfni,
}

impl TransposeKernel {
    /// Whether this CPU can run the kernel.
    pub fn is_supported(self) -> bool {
        match self {
            TransposeKernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            TransposeKernel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            TransposeKernel::Avx512Gfni => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vbmi")
                    && std::arch::is_x86_feature_detected!("gfni")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The fastest kernel this CPU supports (detected once).
    pub fn best() -> TransposeKernel {
        static BEST: OnceLock<TransposeKernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            [TransposeKernel::Avx512Gfni, TransposeKernel::Avx2]
                .into_iter()
                .find(|k| k.is_supported())
                .unwrap_or(TransposeKernel::Portable)
        })
    }

    /// Every kernel this CPU supports (for tests and benchmarks).
    pub fn all_supported() -> Vec<TransposeKernel> {
        [
            TransposeKernel::Portable,
            TransposeKernel::Avx2,
            TransposeKernel::Avx512Gfni,
        ]
        .into_iter()
        .filter(|k| k.is_supported())
        .collect()
    }
}

/// Transposes 128 rows of `rows.len() / 128` blocks into `out` with the fastest kernel.
///
/// # Panics
/// If `rows.len()` is not a multiple of 128 or `out.len() != rows.len()` (caller bugs).
pub fn transpose_128(rows: &[Block], out: &mut [Block]) {
    transpose_128_with(TransposeKernel::best(), rows, out)
}

/// [`transpose_128`] with a chosen kernel.
///
/// # Panics
/// As [`transpose_128`], and if the CPU does not support `kernel`.
pub fn transpose_128_with(kernel: TransposeKernel, rows: &[Block], out: &mut [Block]) {
    assert!(
        rows.len().is_multiple_of(128),
        "transpose input must be 128 rows: got {} blocks",
        rows.len()
    );
    assert_eq!(
        out.len(),
        rows.len(),
        "transpose output has the wrong length"
    );
    transpose_128_strided_with(kernel, rows, rows.len() / 128, out)
}

/// Transposes 128 rows of `out.len() / 128` blocks each, row i starting at
/// `rows[i * stride]`, into `out`.
///
/// A stride whose size in bytes is a multiple of 4 KiB makes every row fall into the same
/// L1 cache set, which slows the fast kernel down several times; callers that own the
/// layout should pad rows by a cache line (see [`padded_stride`]).
///
/// # Panics
/// If `out.len()` is not a multiple of 128, `stride` is less than the row width, or `rows`
/// is too short for 128 rows (caller bugs).
pub fn transpose_128_strided(rows: &[Block], stride: usize, out: &mut [Block]) {
    transpose_128_strided_with(TransposeKernel::best(), rows, stride, out)
}

/// A row stride (in blocks) for rows of `width` blocks that avoids cache-set conflicts:
/// `width` rounded up to whole cache lines, plus one cache line.
pub fn padded_stride(width: usize) -> usize {
    width.div_ceil(4) * 4 + 4
}

/// [`transpose_128_strided`] with a chosen kernel.
///
/// # Panics
/// As [`transpose_128_strided`], and if the CPU does not support `kernel`.
pub fn transpose_128_strided_with(
    kernel: TransposeKernel,
    rows: &[Block],
    stride: usize,
    out: &mut [Block],
) {
    assert!(
        out.len().is_multiple_of(128),
        "transpose output must be a multiple of 128 blocks: got {}",
        out.len()
    );
    let width = out.len() / 128;
    if width == 0 {
        return;
    }
    assert!(
        stride >= width,
        "row stride {stride} is less than the row width {width}"
    );
    assert!(
        rows.len() >= 127 * stride + width,
        "transpose input of {} blocks is too short for 128 rows of stride {stride}",
        rows.len()
    );
    assert!(
        kernel.is_supported(),
        "{kernel:?} is not supported by this CPU"
    );
    match kernel {
        TransposeKernel::Portable => {
            for (k, tile) in out.chunks_exact_mut(128).enumerate() {
                swap_transpose_tile(rows, stride, k, tile);
            }
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `is_supported` checked above that the CPU has AVX2; the lengths checked
        // above keep the kernel's raw-pointer accesses inside `rows` and `out`.
        TransposeKernel::Avx2 => unsafe {
            x86::transpose_avx2(rows.as_ptr(), stride, width, out.as_mut_ptr())
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `is_supported` checked AVX-512 F/BW/VBMI and GFNI; the lengths checked
        // above keep the kernel's raw-pointer accesses inside `rows` and `out`.
        TransposeKernel::Avx512Gfni => unsafe {
            x86::transpose_avx512_gfni(rows.as_ptr(), stride, width, out.as_mut_ptr())
        },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("is_supported only admits Portable here"),
    }
}

/// Bit-by-bit reference transpose, for testing the fast kernels.
pub fn transpose_128_reference(rows: &[Block], out: &mut [Block]) {
    assert!(rows.len().is_multiple_of(128));
    assert_eq!(out.len(), rows.len());
    let width = rows.len() / 128;
    for (j, o) in out.iter_mut().enumerate() {
        let mut v = 0u128;
        for i in 0..128 {
            let bit = (rows[i * width + j / 128].0 >> (j % 128)) & 1;
            v |= bit << i;
        }
        *o = Block(v);
    }
}

/// Masks of the columns c with `c & d == 0` within a 64-bit word, for d = 32, 16, .., 1.
const SWAP_MASKS: [(u32, u64); 6] = [
    (32, 0x0000_0000_ffff_ffff),
    (16, 0x0000_ffff_0000_ffff),
    (8, 0x00ff_00ff_00ff_00ff),
    (4, 0x0f0f_0f0f_0f0f_0f0f),
    (2, 0x3333_3333_3333_3333),
    (1, 0x5555_5555_5555_5555),
];

/// Transposes tile k (columns 128k..128k+128) by recursive block swaps: for every distance
/// d, rows r and r + d (r & d = 0) exchange the bits of columns c + d and c (c & d = 0).
/// The d = 64 round swaps 64-bit words; the others shift within words, since the bits a
/// 128-bit shift would carry across the word boundary are masked out anyway.
#[inline]
fn swap_transpose_tile(rows: &[Block], stride: usize, k: usize, out: &mut [Block]) {
    let mut m = [[0u64; 2]; 128];
    for (r, words) in m.iter_mut().enumerate() {
        let v = rows[r * stride + k].0;
        *words = [v as u64, (v >> 64) as u64];
    }
    let (top, bottom) = m.split_at_mut(64);
    for (a, b) in top.iter_mut().zip(bottom.iter_mut()) {
        std::mem::swap(&mut a[1], &mut b[0]);
    }
    for (d, mask) in SWAP_MASKS {
        for group in m.chunks_exact_mut(2 * d as usize) {
            let (top, bottom) = group.split_at_mut(d as usize);
            for (a_row, b_row) in top.iter_mut().zip(bottom.iter_mut()) {
                for (a, b) in a_row.iter_mut().zip(b_row.iter_mut()) {
                    let t = ((*a >> d) ^ *b) & mask;
                    *b ^= t;
                    *a ^= t << d;
                }
            }
        }
    }
    for (o, words) in out.iter_mut().zip(&m) {
        *o = Block(words[0] as u128 | (words[1] as u128) << 64);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use pgc_crypto::Block;
    use std::arch::x86_64::*;

    /// One round of unpacks over register pairs (a, b) of the array `$v`.
    macro_rules! unpack_round {
        ($v:ident, $lo:ident, $hi:ident; $($a:literal $b:literal),*) => {
            $(
                let (x, y) = ($v[$a], $v[$b]);
                $v[$a] = $lo(x, y);
                $v[$b] = $hi(x, y);
            )*
        };
    }

    /// One ymm whose 128-bit lanes are the blocks at `src + rows[l] * stride`.
    ///
    /// # Safety
    /// The two blocks must be readable.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn load_lanes_avx2(src: *const Block, stride: usize, rows: [usize; 2]) -> __m256i {
        // SAFETY: the caller guarantees both blocks are readable; unaligned loads are
        // allowed.
        unsafe {
            let low = _mm_loadu_si128(src.add(rows[0] * stride).cast());
            let high = _mm_loadu_si128(src.add(rows[1] * stride).cast());
            _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(low), high)
        }
    }

    /// Register i, lane l = input row `$first + 16l + i`.
    macro_rules! load_rows_avx2 {
        ($src:ident, $stride:ident, $first:ident; $($i:literal),*) => {
            [$(
                // SAFETY: rows first .. first + 32 are readable by the contract of
                // `transpose_avx2`.
                unsafe { load_lanes_avx2($src, $stride, [$first + $i, $first + 16 + $i]) }
            ),*]
        };
    }

    /// Writes the eight bit columns of byte column C (register `$v[$reg]`, holding byte C
    /// of 32 consecutive rows) as 32-bit pieces `$quarter` of output rows 8C + 7 .. 8C.
    macro_rules! peel_bits {
        ($v:ident, $out:ident, $quarter:ident; $($c:literal $reg:literal),*) => {
            $(
                let mut x = $v[$reg];
                for bit in (0..8).rev() {
                    let column = _mm256_movemask_epi8(x) as u32;
                    // SAFETY: output row 8C + bit of this tile is inside the output (the
                    // contract of `transpose_avx2`); u32 pieces of a block are aligned
                    // enough for an unaligned write.
                    unsafe { $out.add(4 * (8 * $c + bit) + $quarter).write_unaligned(column) };
                    x = _mm256_add_epi8(x, x);
                }
            )*
        };
    }

    /// # Safety
    /// The CPU must support AVX2; for every r < 128 the blocks `src + r * stride .. + width`
    /// must be readable and `dst .. dst + 128 * width` writable.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn transpose_avx2(
        src: *const Block,
        stride: usize,
        width: usize,
        dst: *mut Block,
    ) {
        for k in 0..width {
            // SAFETY: k < width: column k of every row and output tile k are in bounds.
            let (tile, out) = unsafe { (src.add(k), dst.add(128 * k).cast::<u32>()) };
            for quarter in 0..4 {
                let first = 32 * quarter;
                let mut v = load_rows_avx2!(tile, stride, first;
                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                // Per lane a 16 × 16 byte transpose, as in the AVX-512 kernel.
                unpack_round!(v, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8;
                    0 1, 2 3, 4 5, 6 7, 8 9, 10 11, 12 13, 14 15);
                unpack_round!(v, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16;
                    0 2, 1 3, 4 6, 5 7, 8 10, 9 11, 12 14, 13 15);
                unpack_round!(v, _mm256_unpacklo_epi32, _mm256_unpackhi_epi32;
                    0 4, 1 5, 2 6, 3 7, 8 12, 9 13, 10 14, 11 15);
                unpack_round!(v, _mm256_unpacklo_epi64, _mm256_unpackhi_epi64;
                    0 8, 1 9, 2 10, 3 11, 4 12, 5 13, 6 14, 7 15);
                peel_bits!(v, out, quarter;
                    0 0, 1 8, 2 4, 3 12, 4 2, 5 10, 6 6, 7 14,
                    8 1, 9 9, 10 5, 11 13, 12 3, 13 11, 14 7, 15 15);
            }
        }
    }

    /// Byte indices for the final step: output rows 8C + b (b in `first_b .. first_b + 4`),
    /// 16 bytes each, where byte R of row 8C + b sits in the transposed tile words at
    /// position `(R / 8) * 64 + (R % 8) * 8 + b` of the register pair (low, high).
    const fn assemble_index(first_b: usize) -> [u8; 64] {
        let mut idx = [0u8; 64];
        let mut p = 0;
        while p < 64 {
            let b = first_b + p / 16;
            let r = p % 16;
            idx[p] = ((r / 8) * 64 + (r % 8) * 8 + b) as u8;
            p += 1;
        }
        idx
    }
    const ASSEMBLE_LOW: [u8; 64] = assemble_index(0);
    const ASSEMBLE_HIGH: [u8; 64] = assemble_index(4);

    /// GF(2) affine "x" operand whose byte j is 1 << j: with the data as the matrix
    /// operand, output byte c bit i is bit c of data byte 7 - i.
    const GFNI_TRANSPOSE: i64 = 0x8040_2010_0804_0201u64 as i64;

    /// One zmm whose 128-bit lanes are the blocks at `src + rows[l] * stride`.
    ///
    /// # Safety
    /// The four blocks must be readable.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn load_lanes(src: *const Block, stride: usize, rows: [usize; 4]) -> __m512i {
        // SAFETY: the caller guarantees the four blocks are readable; unaligned loads are
        // allowed.
        unsafe {
            let lane = |l: usize| _mm_loadu_si128(src.add(rows[l] * stride).cast());
            let z = _mm512_castsi128_si512(lane(0));
            let z = _mm512_inserti32x4::<1>(z, lane(1));
            let z = _mm512_inserti32x4::<2>(z, lane(2));
            _mm512_inserti32x4::<3>(z, lane(3))
        }
    }

    /// The 16 registers of [`transposed_half`]'s first step: register i, lane l = input
    /// row `$first + 16l + (i ^ 7)`. The `^ 7` stores each 8-row group in reverse order,
    /// which is the order the GF(2) affine step wants.
    macro_rules! load_rows {
        ($src:ident, $stride:ident, $first:ident; $($i:literal),*) => {
            [$(
                // SAFETY: all four rows lie in first .. first + 64, readable by the
                // contract of `transposed_half`.
                unsafe {
                    load_lanes(
                        $src,
                        $stride,
                        [
                            $first + ($i ^ 7),
                            $first + 16 + ($i ^ 7),
                            $first + 32 + ($i ^ 7),
                            $first + 48 + ($i ^ 7),
                        ],
                    )
                }
            ),*]
        };
    }

    /// The GF(2) affine bit transpose of the listed registers, in order.
    macro_rules! bit_transpose_tiles {
        ($v:ident, $x:ident; $($reg:literal),*) => {
            [$(_mm512_gf2p8affine_epi64_epi8::<0>($x, $v[$reg])),*]
        };
    }

    /// Input rows `$first .. $first + 64` of the 128 × 128 tile at `$src` as transposed
    /// 8 × 8 bit tiles (an array of 16 zmm): word q of entry C holds, in byte b, the bits of
    /// input rows `$first + 8q .. $first + 8q + 8` in column 8C + b. A macro rather than a
    /// function so that the 16 registers never round-trip through memory.
    ///
    /// Use inside an `unsafe` function with AVX-512 F/BW and GFNI enabled; block
    /// `$src + r * $stride` must be readable for every r in `$first .. $first + 64`.
    macro_rules! transposed_half {
        ($src:expr, $stride:expr, $first:expr) => {{
            let (src, stride, first): (*const Block, usize, usize) = ($src, $stride, $first);
            let mut v = load_rows!(src, stride, first; 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            // Per lane, a 16 × 16 byte transpose. With register index i = (i3 i2 i1 i0) and
            // byte position c = (c3 c2 c1 c0), each round pairs registers on one index bit:
            // the unpack moves that bit into the position and the top position bit into the
            // register index. After four rounds the position is i and the register index is
            // c with its bits reversed.
            unpack_round!(v, _mm512_unpacklo_epi8, _mm512_unpackhi_epi8;
                0 1, 2 3, 4 5, 6 7, 8 9, 10 11, 12 13, 14 15);
            unpack_round!(v, _mm512_unpacklo_epi16, _mm512_unpackhi_epi16;
                0 2, 1 3, 4 6, 5 7, 8 10, 9 11, 12 14, 13 15);
            unpack_round!(v, _mm512_unpacklo_epi32, _mm512_unpackhi_epi32;
                0 4, 1 5, 2 6, 3 7, 8 12, 9 13, 10 14, 11 15);
            unpack_round!(v, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64;
                0 8, 1 9, 2 10, 3 11, 4 12, 5 13, 6 14, 7 15);
            // v[bitrev4(C)] holds byte column C, each 64-bit word an 8 × 8 tile with its
            // rows reversed; transpose the bits of every tile.
            let x = _mm512_set1_epi64(GFNI_TRANSPOSE);
            bit_transpose_tiles!(v, x; 0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15)
        }};
    }

    /// # Safety
    /// The CPU must support AVX-512 F, BW, VBMI and GFNI; for every r < 128 the blocks
    /// `src + r * stride .. + width` must be readable and `dst .. dst + 128 * width`
    /// writable.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub(super) unsafe fn transpose_avx512_gfni(
        src: *const Block,
        stride: usize,
        width: usize,
        dst: *mut Block,
    ) {
        // SAFETY: both tables are 64 bytes; unaligned loads are allowed.
        let (assemble_low, assemble_high) = unsafe {
            (
                _mm512_loadu_si512(ASSEMBLE_LOW.as_ptr().cast()),
                _mm512_loadu_si512(ASSEMBLE_HIGH.as_ptr().cast()),
            )
        };
        for k in 0..width {
            // SAFETY: k < width, so column k of every row is readable (caller's guarantee).
            let tile = unsafe { src.add(k) };
            let low = transposed_half!(tile, stride, 0);
            let high = transposed_half!(tile, stride, 64);
            for c in 0..16 {
                let rows_0_3 = _mm512_permutex2var_epi8(low[c], assemble_low, high[c]);
                let rows_4_7 = _mm512_permutex2var_epi8(low[c], assemble_high, high[c]);
                // SAFETY: output rows 128k + 8c .. + 8 lie inside dst .. dst + 128 width;
                // unaligned stores are allowed.
                unsafe {
                    let out = dst.add(128 * k + 8 * c);
                    _mm512_storeu_si512(out.cast(), rows_0_3);
                    _mm512_storeu_si512(out.add(4).cast(), rows_4_7);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_crypto::Prg;

    fn random_rows(width: usize, seed: u128) -> Vec<Block> {
        let mut prg = Prg::from_seed(Block(seed));
        let mut rows = vec![Block::ZERO; 128 * width];
        prg.fill_blocks(&mut rows);
        rows
    }

    #[test]
    fn every_kernel_matches_the_reference() {
        for (width, seed) in [(1, 1), (2, 2), (3, 3), (8, 4), (77, 5)] {
            let rows = random_rows(width, seed);
            let mut expect = vec![Block::ZERO; rows.len()];
            transpose_128_reference(&rows, &mut expect);
            for kernel in TransposeKernel::all_supported() {
                let mut got = vec![Block::ONES; rows.len()];
                transpose_128_with(kernel, &rows, &mut got);
                assert!(got == expect, "{kernel:?} differs at width {width}");
            }
        }
    }

    #[test]
    fn strided_input_matches_the_reference() {
        for (width, stride, seed) in [(1, 1, 6), (1, 5, 7), (4, 8, 8), (33, 40, 9)] {
            let contiguous = random_rows(width, seed);
            // The same rows spread out at `stride`, the gaps filled with noise.
            let mut strided = random_rows(stride, seed + 100);
            for r in 0..128 {
                strided[r * stride..r * stride + width]
                    .copy_from_slice(&contiguous[r * width..(r + 1) * width]);
            }
            strided.truncate(127 * stride + width);
            let mut expect = vec![Block::ZERO; 128 * width];
            transpose_128_reference(&contiguous, &mut expect);
            for kernel in TransposeKernel::all_supported() {
                let mut got = vec![Block::ONES; 128 * width];
                transpose_128_strided_with(kernel, &strided, stride, &mut got);
                assert!(
                    got == expect,
                    "{kernel:?} differs at width {width} stride {stride}"
                );
            }
        }
        assert_eq!(padded_stride(1), 8);
        assert_eq!(padded_stride(512), 516);
    }

    #[test]
    fn single_bits_land_where_expected() {
        // Each set bit moves to its mirrored place, for every kernel.
        let width = 2;
        for (row, col) in [
            (0usize, 0usize),
            (0, 255),
            (127, 0),
            (5, 130),
            (64, 63),
            (63, 64),
        ] {
            let mut rows = vec![Block::ZERO; 128 * width];
            rows[row * width + col / 128] = Block(1u128 << (col % 128));
            for kernel in TransposeKernel::all_supported() {
                let mut out = vec![Block::ZERO; rows.len()];
                transpose_128_with(kernel, &rows, &mut out);
                for (j, o) in out.iter().enumerate() {
                    let want = if j == col {
                        Block(1u128 << row)
                    } else {
                        Block::ZERO
                    };
                    assert_eq!(*o, want, "{kernel:?}: bit ({row},{col}), output row {j}");
                }
            }
        }
    }

    #[test]
    fn transposing_twice_at_width_one_is_identity() {
        let rows = random_rows(1, 9);
        let mut once = vec![Block::ZERO; 128];
        let mut twice = vec![Block::ZERO; 128];
        transpose_128(&rows, &mut once);
        transpose_128(&once, &mut twice);
        assert_eq!(rows, twice);
    }

    #[test]
    fn best_kernel_is_supported() {
        assert!(TransposeKernel::best().is_supported());
        assert!(TransposeKernel::all_supported().contains(&TransposeKernel::Portable));
    }
}
