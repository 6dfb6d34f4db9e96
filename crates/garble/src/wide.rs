//! Half-gates hashing and arithmetic in vector registers, on CPUs with VAES.
//!
//! Each AND is hashed as soon as its gate comes: both calls of π of TMMO run on the
//! AND's blocks in registers (a chain of 20 dependent rounds, π(x) kept in registers),
//! then the tables or the output label are computed from the hashes still in registers.
//! One AND's chain alone would leave the AES units idle most of the time, but the gate
//! loop issues the next ANDs' chains right behind it and the out-of-order core runs
//! several of them at once, overlapped with the label loads and stores of the gates in
//! between. So nothing is queued across gates and no hazard between gates needs tracking.
//!
//! - Garbler, [`GarbleZmm`]: one 512-bit register `[A⁰, A⁰ ⊕ Δ, B⁰, B⁰ ⊕ Δ]` per AND.
//!   512-bit VAES runs on one port and takes the vector half of a second one; that leaves
//!   the integer ports to the gate loop, and 8 AES calls per AND keep that one port busy.
//!   Runs of 8 independent ANDs go through [`GarbleZmm::garble_batch`] instead: their 8
//!   registers hashed together, rounds outermost ([`independent_ands`] finds them; on the
//!   random layered circuit of `pgc bench garble` this measured ≈ 20 % faster on an AMD EPYC
//!   (Zen 5); hashing the evaluator's pairs in batches of 4 or 8 registers measured 10–40 %
//!   slower than its pairs alone, so the evaluator has no such batches; its windows,
//!   below, batch only the first of TMMO's two calls). A batch's tables and outputs come
//!   from its registers by three lane permutes and one XOR per AND ([`batch_outputs`]);
//!   the batch test is AVX-512CD's conflict detection. Measured and dropped (`hot_loop`,
//!   random layered garbling): batches of 16 (−9 %: spills), prefetching the next
//!   batch's labels (−6 %).
//! - Garbler, [`GarbleYmm`]: two 256-bit registers `[A⁰, A¹]`, `[B⁰, B¹]` per AND, for CPUs
//!   with VAES but without AVX-512 (on this crate's test machine it is a quarter slower).
//! - Evaluator, [`EvaluateYmm`]: one 256-bit register `[A, B]` per AND. 256-bit VAES runs
//!   on two ports, the same blocks per cycle as 512-bit VAES on one; with no 512-bit
//!   instruction in its loop the evaluator keeps both, and hashing each AND alone costs it
//!   no bookkeeping (pairing ANDs in 512-bit registers measured slower, for the tests that
//!   pairing needs at every gate).
//! - Evaluator, [`EvaluateZmm`]: where a call's gates have runs of consecutive ANDs (as
//!   layered circuits do), two consecutive ANDs with no dependency between them share one
//!   512-bit register `[A₁, B₁, A₂, B₂]`; the test is one look at the next gate, only
//!   after an AND. Half the AES instructions per AND let twice as many ANDs' chains into
//!   the out-of-order window (measured about 15% faster on `pgc bench garble`); calls
//!   without such runs keep [`EvaluateYmm`] (see `Evaluator::evaluate`). Runs of windows
//!   of 8 independent ANDs (the garbler's batch test) go through
//!   [`EvaluateZmm::evaluate_windows`]: TMMO's first AES call of the next window runs
//!   side by side with the second of this one, 8 chains of 10 rounds per pass.
//!
//! Every function here needs the features named where it is used (`aes,avx512f,vaes` for
//! [`GarbleZmm`], `aes,avx2,avx512f,avx512bw,avx512cd,vaes` for [`EvaluateZmm`],
//! `aes,avx2,vaes` for the others; [`fields_at_most`] AVX-512F, [`independent_ands`]
//! AVX-512F, BW and CD); they are `#[inline(always)]` and only inlined into functions
//! compiled with those features, after run-time detection.

use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::Block;
use pgc_crypto::aes::wide::{RoundKeys256, RoundKeys512, Zmm};
use std::arch::x86_64::*;

/// ANDs the garbler hashes as one batch (one 512-bit register each).
pub(crate) const GARBLE_BATCH: usize = 8;

#[inline(always)]
unsafe fn load(p: *const Block) -> __m128i {
    // SAFETY: the caller passes a pointer valid for reading one block; the load is unaligned
    // and SSE2 is baseline on x86-64.
    unsafe { _mm_loadu_si128(p as *const __m128i) }
}

#[inline(always)]
unsafe fn store(p: *mut Block, v: __m128i) {
    // SAFETY: the caller passes a pointer valid for writing one block; the store is unaligned
    // and SSE2 is baseline on x86-64.
    unsafe { _mm_storeu_si128(p as *mut __m128i, v) }
}

/// The lsb of the label at `p` (its point-and-permute bit), read as an integer.
///
/// # Safety
/// `p` is valid for a block.
#[inline(always)]
unsafe fn lsb(p: *const Block) -> usize {
    // SAFETY: `p` is valid for a block (the contract), and a `Block` (a u128) is 16-aligned, so
    // its first 8 bytes are an aligned, readable u64.
    unsafe { (*(p as *const u64) & 1) as usize }
}

/// 64-byte aligned room for the four hashes of an AND, read back by lane at addresses
/// computed from the point-and-permute bits.
#[repr(C, align(64))]
struct Lanes([Block; 4]);

/// The garbler's half-gate arithmetic for a lone AND (a batch's ANDs take
/// [`batch_outputs`]) from the four hashes `H(A⁰), H(A¹), H(B⁰), H(B¹)` stored in `lanes` (`g` = `H(A⁰) ⊕ H(A¹)`, `e` = `H(B⁰) ⊕ H(B¹)`): writes
/// `T_G = g ⊕ p_b·Δ`, `T_E = e ⊕ A⁰` to `rows[0..2]` and
/// `C⁰ = H(A^{p_a}) ⊕ H(B^{p_b}) ⊕ p_a·p_b·Δ` to `out`. The selections by p_a, p_b are
/// loads at computed addresses (forwarded from the stores of the hashes), which leaves the
/// vector ports to AES.
///
/// # Safety
/// The pointers are valid for their blocks; `p_a`, `p_b` are 0 or 1 (the lsbs of A⁰, B⁰).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn garbler_outputs(
    lanes: &Lanes,
    g: __m128i,
    e: __m128i,
    a0: __m128i,
    zero_delta: &[Block; 2],
    p_a: usize,
    p_b: usize,
    rows: *mut Block,
    out: *mut Block,
) {
    // SAFETY: the pointers are valid (the contract); `p_a`, `p_b` are 0 or 1, so the unchecked
    // indices 0..=1 and 2..=3 are within the 2 and 4 elements; SSE2 is baseline.
    unsafe {
        let delta_if = |bit: usize| load(zero_delta.get_unchecked(bit));
        store(rows, _mm_xor_si128(g, delta_if(p_b)));
        store(rows.add(1), _mm_xor_si128(e, a0));
        let c = _mm_xor_si128(
            load(lanes.0.get_unchecked(p_a)),
            load(lanes.0.get_unchecked(2 + p_b)),
        );
        store(out, _mm_xor_si128(c, delta_if(p_a & p_b)));
    }
}

/// The garbler on 512-bit registers (see the module doc).
pub(crate) struct GarbleZmm {
    keys: RoundKeys512,
    /// `[0, Δ, 0, Δ]`
    odd_delta: Zmm,
    /// `[0, Δ]`: `zero_delta[bit]` is bit·Δ.
    zero_delta: [Block; 2],
    /// `[2j, 2j, 2j + 1, 2j + 1]` for the next AND j (each in the low half of its block).
    tweaks: Zmm,
    lanes: Lanes,
}

impl GarbleZmm {
    /// # Safety
    /// AES-NI, AVX-512F and VAES.
    #[inline(always)]
    pub(crate) unsafe fn new(keys: RoundKeys512, delta: Block, and_index: u64) -> GarbleZmm {
        let t = and_index.wrapping_mul(2);
        let (t0, t1) = (t as i64, t.wrapping_add(1) as i64);
        // SAFETY: register intrinsics and a load from a live `Block`; the CPU features are this
        // function's contract.
        unsafe {
            GarbleZmm {
                keys,
                // The mask selects 32-bit words: those of blocks 1 and 3.
                odd_delta: _mm512_maskz_broadcast_i32x4(0b1111_0000_1111_0000, load(&delta)),
                zero_delta: [Block::ZERO, delta],
                tweaks: _mm512_set_epi64(0, t1, 0, t1, 0, t0, 0, t0),
                lanes: Lanes([Block::ZERO; 4]),
            }
        }
    }

    /// Makes the next AND the `and_index`-th (its tweaks).
    ///
    /// # Safety
    /// AES-NI, AVX-512F and VAES.
    #[inline(always)]
    pub(crate) unsafe fn set_and_index(&mut self, and_index: u64) {
        let t = and_index.wrapping_mul(2);
        let (t0, t1) = (t as i64, t.wrapping_add(1) as i64);
        // SAFETY: a register-only intrinsic; the CPU feature is this function's contract.
        self.tweaks = unsafe { _mm512_set_epi64(0, t1, 0, t1, 0, t0, 0, t0) };
    }

    /// Garbles the next AND: input zero-labels at `a`, `b`; writes `[T_G, T_E]` to
    /// `rows[0..2]` and C⁰ to `out`.
    ///
    /// # Safety
    /// AES-NI, AVX-512F and VAES; the pointers are valid for their blocks (`a`, `b`, `out`
    /// may coincide).
    #[inline(always)]
    pub(crate) unsafe fn garble_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *mut Block,
        out: *mut Block,
    ) {
        // SAFETY: loads from `a`, `b` and stores to `rows[0..2]`, `out` are valid by the
        // contract; the 64-byte store goes to the 64-aligned `lanes`; the CPU features are the
        // contract's.
        unsafe {
            let a0 = load(a);
            // [A⁰, A⁰, B⁰, B⁰] (the mask selects the 32-bit words of blocks 2, 3), ⊕ Δ in
            // the odd blocks.
            let x = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(a0), 0xff00, load(b));
            let [h] = self
                .keys
                .tmmo([_mm512_xor_si512(x, self.odd_delta)], [self.tweaks]);
            let step = _mm512_set_epi64(0, 2, 0, 2, 0, 2, 0, 2);
            self.tweaks = _mm512_add_epi64(self.tweaks, step);
            _mm512_store_si512(self.lanes.0.as_mut_ptr() as *mut __m512i, h);
            // [H(A⁰) ⊕ H(A¹), ·, H(B⁰) ⊕ H(B¹), ·]
            let folded = _mm512_xor_si512(h, _mm512_shuffle_i64x2::<0b10_11_00_01>(h, h));
            let g = _mm512_castsi512_si128(folded);
            let e = _mm512_extracti32x4_epi32::<2>(folded);
            let (p_a, p_b) = (lsb(a), lsb(b));
            garbler_outputs(&self.lanes, g, e, a0, &self.zero_delta, p_a, p_b, rows, out);
        }
    }
}

impl GarbleZmm {
    /// Garbles the `N` ANDs `gates[0..N]` as one batch: all inputs are loaded, the `N`
    /// hashes run with rounds outermost (`N` independent AES chains side by side instead
    /// of one per AND left to the out-of-order core), then tables and outputs are written
    /// in gate order. The tables go to `rows[0..2N]`.
    ///
    /// # Safety
    /// AES-NI, AVX-512F and VAES; `gates` holds `N` ANDs whose wires are below the length
    /// of `labels`, and none reads the output of an earlier one ([`independent_ands`]):
    /// with loads before stores and stores in order, that is the sequential semantics.
    #[inline(always)]
    pub(crate) unsafe fn garble_batch<const N: usize>(
        &mut self,
        labels: *mut Block,
        gates: *const Gate,
        rows: *mut Block,
    ) {
        // SAFETY: every gate index `k < N` is within `gates`, every wire below the length of
        // `labels`, and `rows` has room for 2N blocks (the contract); the inputs are all loaded
        // before any store, which is the sequential semantics since no gate reads an earlier
        // one's output; the CPU features are the contract's.
        unsafe {
            let step = _mm512_set_epi64(0, 2, 0, 2, 0, 2, 0, 2);
            let mut xs = [_mm512_setzero_si512(); N];
            let mut tweaks = [_mm512_setzero_si512(); N];
            for k in 0..N {
                let g = &*gates.add(k);
                let a0 = load(labels.add(g.a as usize));
                let x = _mm512_mask_broadcast_i32x4(
                    _mm512_broadcast_i32x4(a0),
                    0xff00,
                    load(labels.add(g.b as usize)),
                );
                xs[k] = _mm512_xor_si512(x, self.odd_delta);
                tweaks[k] = self.tweaks;
                self.tweaks = _mm512_add_epi64(self.tweaks, step);
            }
            let hs = self.keys.tmmo(xs, tweaks);
            // Bit 0 of 64-bit lanes 0 and 4 only: a test against it sets no other bit of
            // the mask (a writemask 0x11 with a test against all ones, the compiler made a
            // shift, a test and an `and` of the mask in a general register).
            let lsbs_a0_b0 = _mm512_set_epi64(0, 0, 0, 1, 0, 0, 0, 1);
            for k in 0..N {
                // Block 0 of xs[k] is A⁰ and block 2 is B⁰ (Δ went to blocks 1, 3): their
                // lsbs are bits 0 and 4 of the mask (the tables take it as it is: folding
                // the two bits into p_a + 2·p_b, the compiler vectorized it across the
                // batch, 7 instructions per AND where this takes 3).
                let bits = _mm512_test_epi64_mask(xs[k], lsbs_a0_b0) as usize;
                let rows_out = batch_outputs(hs[k], xs[k], self.odd_delta, bits);
                // [C⁰, ·, T_G, T_E]: the rows by a store of blocks 2, 3 under a mask (the
                // address of block 0 is two blocks before them; nothing is written there),
                // C⁰ by a plain store: no extract for either.
                // SAFETY: only the masked-in lanes, `rows[2k..2k + 2]`, are written (rows
                // for them per the contract); the address of the masked-out ones is never
                // accessed.
                _mm512_mask_storeu_epi64(
                    rows.wrapping_add(2 * k).wrapping_sub(2) as *mut i64,
                    0xf0,
                    rows_out,
                );
                let out = labels.add((*gates.add(k)).out as usize);
                store(out, _mm512_castsi512_si128(rows_out));
            }
        }
    }
}

/// 512 bits of 64-bit lane indices, loaded whole, one set per value of the lsb mask
/// `bits` = p_a + 16·p_b (0, 1, 16 or 17; the entries between are never read).
#[repr(C, align(64))]
struct LaneIndices([[i64; 8]; 18]);

impl LaneIndices {
    /// Indices picking the blocks `blocks[sel]`, `sel` = p_a + 2·p_b (block 4 and up: the
    /// second source).
    const fn new(blocks: [[i64; 4]; 4]) -> LaneIndices {
        let mut out = [[0i64; 8]; 18];
        let mut bits = 0;
        while bits < 18 {
            let sel = (bits & 1) | ((bits >> 3) & 2);
            let mut j = 0;
            while j < 4 {
                out[bits][2 * j] = 2 * blocks[sel][j];
                out[bits][2 * j + 1] = 2 * blocks[sel][j] + 1;
                j += 1;
            }
            bits += 1;
        }
        LaneIndices(out)
    }
}

/// From h = `[H(A⁰), H(A¹), H(B⁰), H(B¹)]`: `[H(A^{p_a}), ·, H(A⁰), H(B⁰)]`.
static FIRST_HASHES: LaneIndices =
    LaneIndices::new([[0, 0, 0, 2], [1, 0, 0, 2], [0, 0, 0, 2], [1, 0, 0, 2]]);
/// From h: `[H(B^{p_b}), ·, H(A¹), H(B¹)]`.
static SECOND_HASHES: LaneIndices =
    LaneIndices::new([[2, 1, 1, 3], [2, 1, 1, 3], [3, 1, 1, 3], [3, 1, 1, 3]]);
/// From x = `[A⁰, A¹, B⁰, B¹]` and `[0, Δ, 0, Δ]` (blocks 4–7):
/// `[p_a·p_b·Δ, ·, p_b·Δ, A⁰]`.
static CORRECTIONS: LaneIndices =
    LaneIndices::new([[4, 4, 4, 0], [4, 4, 4, 0], [4, 4, 5, 0], [5, 4, 5, 0]]);

/// The garbler's half-gate arithmetic for one AND of a batch, in one register:
/// `[C⁰, ·, T_G, T_E]` with `T_G = H(A⁰) ⊕ H(A¹) ⊕ p_b·Δ`, `T_E = H(B⁰) ⊕ H(B¹) ⊕ A⁰`,
/// `C⁰ = H(A^{p_a}) ⊕ H(B^{p_b}) ⊕ p_a·p_b·Δ`, from the hashes `h`, the hashed blocks `x`
/// = `[A⁰, A¹, B⁰, B¹]` and `odd_delta` = `[0, Δ, 0, Δ]`: three lane permutes picked by
/// `bits` = p_a + 16·p_b and one three-way XOR, where [`garbler_outputs`] selects by loads
/// from the stored hashes (a dozen scalar and vector instructions more per AND).
///
/// # Safety
/// AVX-512F; `bits` < 18.
#[inline(always)]
unsafe fn batch_outputs(h: Zmm, x: Zmm, odd_delta: Zmm, bits: usize) -> Zmm {
    // SAFETY: register-only intrinsics (AVX-512F, the contract); the permute controls are
    // picked from a table by `bits` < 18 (the contract).
    unsafe {
        let idx = |t: &LaneIndices| _mm512_load_si512(t.0.get_unchecked(bits).as_ptr() as *const _);
        let first = _mm512_permutexvar_epi64(idx(&FIRST_HASHES), h);
        let second = _mm512_permutexvar_epi64(idx(&SECOND_HASHES), h);
        let corrections = _mm512_permutex2var_epi64(x, idx(&CORRECTIONS), odd_delta);
        _mm512_ternarylogic_epi64::<0x96>(first, second, corrections)
    }
}

/// The garbler on 256-bit registers (see the module doc).
pub(crate) struct GarbleYmm {
    keys: RoundKeys256,
    /// `[0, Δ]` as a register and as blocks.
    odd_delta: __m256i,
    zero_delta: [Block; 2],
    /// `[2j, 2j]` for the next AND j.
    tweaks: __m256i,
    lanes: Lanes,
}

impl GarbleYmm {
    /// # Safety
    /// AES-NI, AVX2 and VAES.
    #[inline(always)]
    pub(crate) unsafe fn new(keys: RoundKeys256, delta: Block, and_index: u64) -> GarbleYmm {
        let t = and_index.wrapping_mul(2) as i64;
        // SAFETY: register intrinsics and a load from a live `Block`; the CPU features are this
        // function's contract.
        unsafe {
            GarbleYmm {
                keys,
                odd_delta: _mm256_inserti128_si256::<1>(_mm256_setzero_si256(), load(&delta)),
                zero_delta: [Block::ZERO, delta],
                tweaks: _mm256_set_epi64x(0, t, 0, t),
                lanes: Lanes([Block::ZERO; 4]),
            }
        }
    }

    /// Makes the next AND the `and_index`-th (its tweaks).
    ///
    /// # Safety
    /// AES-NI, AVX2 and VAES.
    #[inline(always)]
    pub(crate) unsafe fn set_and_index(&mut self, and_index: u64) {
        let t = and_index.wrapping_mul(2) as i64;
        // SAFETY: a register-only intrinsic; the CPU feature is this function's contract.
        self.tweaks = unsafe { _mm256_set_epi64x(0, t, 0, t) };
    }

    /// As [`GarbleZmm::garble_and`].
    ///
    /// # Safety
    /// AES-NI, AVX2 and VAES; the pointers are valid for their blocks.
    #[inline(always)]
    pub(crate) unsafe fn garble_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *mut Block,
        out: *mut Block,
    ) {
        // SAFETY: loads from `a`, `b` and stores to `rows[0..2]`, `out` are valid by the
        // contract; the CPU features are the contract's.
        unsafe {
            let a0 = load(a);
            let xa = _mm256_xor_si256(_mm256_broadcastsi128_si256(a0), self.odd_delta);
            let xb = _mm256_xor_si256(_mm256_broadcastsi128_si256(load(b)), self.odd_delta);
            let b_tweaks = _mm256_add_epi64(self.tweaks, _mm256_set_epi64x(0, 1, 0, 1));
            let [ha, hb] = self.keys.tmmo([xa, xb], [self.tweaks, b_tweaks]);
            self.tweaks = _mm256_add_epi64(self.tweaks, _mm256_set_epi64x(0, 2, 0, 2));
            let lanes = self.lanes.0.as_mut_ptr();
            _mm256_store_si256(lanes as *mut __m256i, ha);
            _mm256_store_si256(lanes.add(2) as *mut __m256i, hb);
            let fold = |h: __m256i| {
                _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h))
            };
            let (g, e) = (fold(ha), fold(hb));
            let (p_a, p_b) = (lsb(a), lsb(b));
            garbler_outputs(&self.lanes, g, e, a0, &self.zero_delta, p_a, p_b, rows, out);
        }
    }
}

/// The evaluator on 256-bit registers (see the module doc).
pub(crate) struct EvaluateYmm {
    keys: RoundKeys256,
    /// `[2j, 2j + 1]` for the next AND j.
    tweaks: __m256i,
}

impl EvaluateYmm {
    /// # Safety
    /// AES-NI, AVX2 and VAES.
    #[inline(always)]
    pub(crate) unsafe fn new(keys: RoundKeys256, and_index: u64) -> EvaluateYmm {
        let t = and_index.wrapping_mul(2);
        // SAFETY: a register-only intrinsic; the CPU feature is this function's contract.
        let tweaks = unsafe { _mm256_set_epi64x(0, t.wrapping_add(1) as i64, 0, t as i64) };
        EvaluateYmm { keys, tweaks }
    }

    /// Makes the next AND the `and_index`-th (its tweaks).
    ///
    /// # Safety
    /// AES-NI, AVX2 and VAES.
    #[inline(always)]
    pub(crate) unsafe fn set_and_index(&mut self, and_index: u64) {
        let t = and_index.wrapping_mul(2);
        // SAFETY: a register-only intrinsic; the CPU feature is this function's contract.
        self.tweaks = unsafe { _mm256_set_epi64x(0, t.wrapping_add(1) as i64, 0, t as i64) };
    }

    /// Evaluates the next AND: labels at `a`, `b`, tables `[T_G, T_E]` at `rows`; writes
    /// C = H(A) ⊕ lsb(A)·T_G ⊕ H(B) ⊕ lsb(B)·(T_E ⊕ A) to `out`.
    ///
    /// # Safety
    /// AES-NI, AVX2 and VAES; the pointers are valid for their blocks (`rows` for 2).
    #[inline(always)]
    pub(crate) unsafe fn evaluate_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *const Block,
        out: *mut Block,
    ) {
        // SAFETY: loads from `a`, `b`, `rows[0..2]` and the store to `out` are valid by the
        // contract; the CPU features are the contract's.
        unsafe {
            let x = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(load(a)), load(b));
            let [h] = self.keys.tmmo([x], [self.tweaks]);
            self.tweaks = _mm256_add_epi64(self.tweaks, _mm256_set_epi64x(0, 2, 0, 2));
            // [T_G, T_E ⊕ A] (the permute puts A in the high half, zero in the low).
            let a_high = _mm256_permute2x128_si256::<0x08>(x, x);
            let t = _mm256_xor_si256(_mm256_loadu_si256(rows as *const __m256i), a_high);
            // All ones in the half whose label has lsb 1.
            let lsb = _mm256_and_si256(
                _mm256_shuffle_epi32::<0b01_00_01_00>(x),
                _mm256_set1_epi64x(1),
            );
            let mask = _mm256_sub_epi64(_mm256_setzero_si256(), lsb);
            let w = _mm256_xor_si256(h, _mm256_and_si256(t, mask));
            let c = _mm_xor_si128(_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w));
            store(out, c);
        }
    }
}

/// The evaluator with a 512-bit path for two consecutive independent ANDs: one register
/// `[A₁, B₁, A₂, B₂]` halves the AES instructions per AND, so twice as many ANDs' chains
/// fit in the out-of-order window (long runs of independent ANDs are the common case in
/// layered circuits). Lone ANDs take [`EvaluateYmm`]'s path, so a loop without pairs runs
/// no 512-bit instruction.
pub(crate) struct EvaluateZmm {
    single: EvaluateYmm,
    keys: RoundKeys512,
}

impl EvaluateZmm {
    /// # Safety
    /// AES-NI, AVX2, AVX-512F and VAES.
    #[inline(always)]
    pub(crate) unsafe fn new(
        keys256: RoundKeys256,
        keys: RoundKeys512,
        and_index: u64,
    ) -> EvaluateZmm {
        EvaluateZmm {
            // SAFETY: `EvaluateYmm::new` needs AES-NI, AVX2 and VAES, a subset of this
            // function's contract.
            single: unsafe { EvaluateYmm::new(keys256, and_index) },
            keys,
        }
    }

    /// As [`EvaluateYmm::evaluate_and`].
    ///
    /// # Safety
    /// As [`EvaluateYmm::evaluate_and`].
    #[inline(always)]
    pub(crate) unsafe fn evaluate_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *const Block,
        out: *mut Block,
    ) {
        // SAFETY: the same contract as `EvaluateYmm::evaluate_and`, forwarded.
        unsafe { self.single.evaluate_and(a, b, rows, out) }
    }

    /// As [`EvaluateYmm::set_and_index`].
    ///
    /// # Safety
    /// AES-NI, AVX2 and VAES.
    #[inline(always)]
    pub(crate) unsafe fn set_and_index(&mut self, and_index: u64) {
        // SAFETY: the same contract as `EvaluateYmm::set_and_index`, forwarded.
        unsafe { self.single.set_and_index(and_index) }
    }

    /// Evaluates the next two ANDs, `(a1, b1) → out1` and `(a2, b2) → out2`, with their
    /// tables at `rows[0..4]`; writes `out1` before `out2`.
    ///
    /// # Safety
    /// AES-NI, AVX2, AVX-512F and VAES; the pointers are valid for their blocks (`rows`
    /// for 4); neither `a2` nor `b2` is `out1` (the second AND reads its inputs before the
    /// first writes its output).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn evaluate_pair(
        &mut self,
        a1: *const Block,
        b1: *const Block,
        out1: *mut Block,
        a2: *const Block,
        b2: *const Block,
        out2: *mut Block,
        rows: *const Block,
    ) {
        // SAFETY: the pointers are valid (`rows` for 4) and `a2`, `b2` are not `out1`, so
        // loading all inputs first and storing `out1` before `out2` is the sequential semantics
        // (the contract); the CPU features are the contract's.
        unsafe {
            // Built by three inserts in a row: from two 256-bit halves the compiler had
            // built x again in pieces for the lsb and `[0, A₁, 0, A₂]` terms (five inserts
            // on the vector ports next to the AES rounds; this measured 1 % faster).
            let x = _mm512_castsi128_si512(load(a1));
            let x = _mm512_inserti32x4::<1>(x, load(b1));
            let x = _mm512_inserti32x4::<2>(x, load(a2));
            let x = _mm512_inserti32x4::<3>(x, load(b2));
            let t1 = self.single.tweaks;
            let t2 = _mm256_add_epi64(t1, _mm256_set_epi64x(0, 2, 0, 2));
            let tweaks = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(t1), t2);
            let [h] = self.keys.tmmo([x], [tweaks]);
            self.single.tweaks = _mm256_add_epi64(t1, _mm256_set_epi64x(0, 4, 0, 4));
            pair_outputs(h, x, rows, out1, out2);
        }
    }
}

impl EvaluateZmm {
    /// Loads the 4 pair registers `[A₁, B₁, A₂, B₂]` of the window of 8 ANDs at `gates`.
    ///
    /// # Safety
    /// AVX-512F; the gates' input wires are below the length of `labels`.
    #[inline(always)]
    unsafe fn window_inputs(labels: *const Block, gates: *const Gate) -> [Zmm; 4] {
        // SAFETY: 8 gates at `gates`, their inputs in `labels` (the contract); AVX-512F.
        unsafe {
            let at = |w: WireId| labels.add(w as usize);
            let mut xs = [_mm512_setzero_si512(); 4];
            for (j, x) in xs.iter_mut().enumerate() {
                let (g1, g2) = (&*gates.add(2 * j), &*gates.add(2 * j + 1));
                let v = _mm512_castsi128_si512(load(at(g1.a)));
                let v = _mm512_inserti32x4::<1>(v, load(at(g1.b)));
                let v = _mm512_inserti32x4::<2>(v, load(at(g2.a)));
                *x = _mm512_inserti32x4::<3>(v, load(at(g2.b)));
            }
            xs
        }
    }

    /// The next 4 pairs' tweaks (advancing the counter).
    ///
    /// # Safety
    /// AVX2, AVX-512F.
    #[inline(always)]
    unsafe fn window_tweaks(&mut self) -> [Zmm; 4] {
        // SAFETY: register arithmetic only, with the features of the contract.
        unsafe {
            let mut tweaks = [_mm512_setzero_si512(); 4];
            for t in tweaks.iter_mut() {
                let t1 = self.single.tweaks;
                let t2 = _mm256_add_epi64(t1, _mm256_set_epi64x(0, 2, 0, 2));
                *t = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(t1), t2);
                self.single.tweaks = _mm256_add_epi64(t1, _mm256_set_epi64x(0, 4, 0, 4));
            }
            tweaks
        }
    }

    /// Evaluates the windows of 8 independent ANDs from `gates[first]` on (the first is
    /// one: the caller tested it) while the next gates make one that reads no output of
    /// the one before and `rows_left` holds its rows; returns the ANDs evaluated.
    ///
    /// TMMO is H(x, i) = π(π(x) ⊕ i) ⊕ π(x) (Guo, Katz, Wang, Yu, S&P 2020, §7.4; see
    /// `pgc_crypto::hash`), and its first call π(x) does not depend on the tweak, so it
    /// can run a step ahead: one pass of 8 registers, rounds outermost (8 independent
    /// chains of 10 rounds), runs this window's second calls π(π(x) ⊕ i) on its 4 pair
    /// registers `[A₁, B₁, A₂, B₂]` together with the next window's first calls π(x);
    /// then this window's outputs are written. [`EvaluateZmm::evaluate_pair`] runs one
    /// chain of 20 rounds per pair, which the out-of-order core overlaps with only a few
    /// others. The same hash, the same values: only the order of the AES calls changes.
    /// The next window's inputs are loaded before this one's outputs are stored, hence
    /// the test that it reads none of them ([`reads_none_of`]).
    ///
    /// Measured (BENCHMARKS.md, eighth session, `hot_loop`): the window's first calls
    /// side by side, then its second calls pair by pair, 7 % faster than pairs on the
    /// random layered circuit (windows of 2 pairs slower, of 8 no better than 4); this
    /// pipelined form a further 10 % or so. Computing π once per distinct input wire
    /// across a run (TMMO's first call depends on the label alone) measured 40 % slower:
    /// finding the repeated wires cost more than the AES it saved.
    ///
    /// # Safety
    /// AES-NI, AVX2, AVX-512F, AVX-512BW, AVX-512CD and VAES; `gates[first..first + 8]` is
    /// a window ([`independent_ands`] with `max_wire`); `max_wire` is below the length of
    /// `labels`; `rows` valid for `rows_left` blocks.
    #[inline(always)]
    pub(crate) unsafe fn evaluate_windows(
        &mut self,
        labels: *mut Block,
        gates: &[Gate],
        first: usize,
        max_wire: u32,
        rows: *const Block,
        rows_left: usize,
    ) -> usize {
        // SAFETY: each window run here passed `independent_ands` with `max_wire` (the first
        // by the caller), so its wires are in `labels` and it reads no output of its own;
        // a next window is loaded early only after `reads_none_of` said it reads no output
        // of this one, and only while `rows_left` holds both windows' rows (16 blocks
        // each); `gates[next + 7]` is read after `next + 8 <= gates.len()`.
        unsafe {
            let mut at = first;
            let mut rows = rows;
            let mut rows_left = rows_left;
            let mut xs = Self::window_inputs(labels, gates.as_ptr().add(at));
            let mut firsts = self.keys.encrypt(xs);
            loop {
                let here = gates.as_ptr().add(at);
                let next = at + 8;
                let go_on = next + 8 <= gates.len()
                    && rows_left >= 32
                    && gates.get_unchecked(next + 7).op == Op::And
                    && independent_ands::<8>(gates.as_ptr().add(next), max_wire)
                    && reads_none_of(gates.as_ptr().add(next), here);
                let tweaks = self.window_tweaks();
                let mut seconds = [_mm512_setzero_si512(); 4];
                for j in 0..4 {
                    seconds[j] = _mm512_xor_si512(firsts[j], tweaks[j]);
                }
                let (hs, next_xs, next_firsts) = if go_on {
                    let next_xs = Self::window_inputs(labels, gates.as_ptr().add(next));
                    let both = self.keys.encrypt([
                        seconds[0], seconds[1], seconds[2], seconds[3], next_xs[0], next_xs[1],
                        next_xs[2], next_xs[3],
                    ]);
                    (
                        [both[0], both[1], both[2], both[3]],
                        next_xs,
                        [both[4], both[5], both[6], both[7]],
                    )
                } else {
                    (self.keys.encrypt(seconds), xs, firsts)
                };
                for j in 0..4 {
                    let (g1, g2) = (&*here.add(2 * j), &*here.add(2 * j + 1));
                    let h = _mm512_xor_si512(hs[j], firsts[j]);
                    pair_outputs(
                        h,
                        xs[j],
                        rows.add(4 * j),
                        labels.add(g1.out as usize),
                        labels.add(g2.out as usize),
                    );
                }
                rows = rows.add(16);
                rows_left -= 16;
                at = next;
                if !go_on {
                    return at - first;
                }
                xs = next_xs;
                firsts = next_firsts;
            }
        }
    }
}

/// Whether none of the 8 gates at `later` reads (as `a` or `b`) the output of one of the 8
/// gates at `earlier`: `[o₀ … o₇ of earlier, a₀ … a₇ of later]` and the same with `b`,
/// AVX-512CD's conflict detection on each, and one test that no lane of `later` met a lane
/// of `earlier` (as [`independent_ands`]).
///
/// # Safety
/// AVX-512F and AVX-512CD; both pointers valid for 8 gates.
#[inline(always)]
pub(crate) unsafe fn reads_none_of(later: *const Gate, earlier: *const Gate) -> bool {
    // SAFETY: 128 readable bytes at each pointer (8 gates); only the dwords at offsets 4,
    // 8, 12 of each gate are read (mask 0xeeee), never the padding after `op`.
    unsafe {
        let load4 = |p: *const Gate, j: usize| {
            _mm512_maskz_loadu_epi32(0xeeee, (p as *const u8).add(64 * j) as *const i32)
        };
        let (e_low, e_high) = (load4(earlier, 0), load4(earlier, 1));
        let (l_low, l_high) = (load4(later, 0), load4(later, 1));
        let f = |field: i32| {
            let g = |k: i32| 4 * k + field;
            _mm512_set_epi32(
                g(7),
                g(6),
                g(5),
                g(4),
                g(3),
                g(2),
                g(1),
                g(0),
                g(7),
                g(6),
                g(5),
                g(4),
                g(3),
                g(2),
                g(1),
                g(0),
            )
        };
        let outs = _mm512_permutex2var_epi32(e_low, f(3), e_high);
        let reads_a = _mm512_permutex2var_epi32(l_low, f(1), l_high);
        let reads_b = _mm512_permutex2var_epi32(l_low, f(2), l_high);
        let with_a = _mm512_conflict_epi32(_mm512_mask_blend_epi32(0xff00, outs, reads_a));
        let with_b = _mm512_conflict_epi32(_mm512_mask_blend_epi32(0xff00, outs, reads_b));
        let forbidden = _mm512_maskz_set1_epi32(0xff00, 0xff);
        _mm512_test_epi32_mask(_mm512_or_si512(with_a, with_b), forbidden) == 0
    }
}

/// The evaluator's half-gate arithmetic for a pair, from the hashes `h` of `x` =
/// `[A₁, B₁, A₂, B₂]` and the tables at `rows[0..4]`: writes `C₁` to `out1`, then `C₂` to
/// `out2`.
///
/// # Safety
/// AVX-512F; the pointers are valid for their blocks (`rows` for 4).
#[inline(always)]
unsafe fn pair_outputs(h: Zmm, x: Zmm, rows: *const Block, out1: *mut Block, out2: *mut Block) {
    // SAFETY: 4 blocks at `rows`, one at each output (the contract); AVX-512F.
    unsafe {
        // [0, A₁, 0, A₂]: the 64-bit lanes of blocks 1 and 3 (mask), from blocks 0, 2.
        let a_high = _mm512_maskz_shuffle_i64x2::<0b10_00_00_00>(0b1100_1100, x, x);
        let t = _mm512_xor_si512(_mm512_loadu_si512(rows as *const __m512i), a_high);
        // Lanes of the blocks whose label has lsb 1, both 64-bit halves of each.
        let lsb_low = _mm512_shuffle_epi32::<0b01_00_01_00>(x);
        let mask = _mm512_test_epi64_mask(lsb_low, _mm512_set1_epi64(1));
        let w = _mm512_xor_si512(h, _mm512_maskz_mov_epi64(mask, t));
        // Blocks 0 and 2 of the fold are the two output labels.
        let folded = _mm512_xor_si512(w, _mm512_shuffle_i64x2::<0b10_11_00_01>(w, w));
        store(out1, _mm512_castsi512_si128(folded));
        store(out2, _mm512_extracti32x4_epi32::<2>(folded));
    }
}

/// Whether the `N` gates at `gates` (2 ≤ `N` ≤ 8) are all ANDs, all their wires (`a`, `b`,
/// `out`) are at most `max_wire`, and none reads (as `a` or `b`) the output of an earlier
/// one: the condition for hashing them as one batch. Writes to a wire an earlier one reads
/// or writes are fine (a batch loads all inputs before it stores, and stores in order).
/// The bound makes this the batch's only check (the gate loop checks wires a span at a
/// time, and a batch may run past its span).
///
/// One register holds `[o₀ … o₇, a₀ … a₇]`, another `[o₀ … o₇, b₀ … b₇]`; AVX-512CD's
/// conflict detection gives, for each lane, the earlier lanes equal to it, and lane 8 + g
/// may only meet outputs of gates below g: two permutes, two conflicts and one test in all,
/// where comparing each distance apart took a permute and a compare per distance (14 for a
/// batch of 8).
///
/// # Safety
/// AVX-512F, AVX-512BW and AVX-512CD; `gates` is valid for `N` gates.
#[inline(always)]
pub(crate) unsafe fn independent_ands<const N: usize>(gates: *const Gate, max_wire: u32) -> bool {
    const { assert!(N >= 2 && N <= 8) };
    // SAFETY: masked loads read only the `op` byte and the a, b, out dwords of the first `N`
    // gate records, valid by the contract (never the padding, never past the N-th gate); the
    // CPU features are the contract's.
    unsafe {
        let p = gates as *const u8;
        let and_op = _mm512_set1_epi8(Op::And as i8);
        let highest = _mm512_set1_epi32(max_wire as i32);
        // Gates 4j..4j + 4 (fewer past the N-th): whether all are ANDs in range, and their
        // fields. Written out for j = 0, 1 rather than as a loop, which the compiler had
        // kept (with the registers going through the stack).
        let four = |j: usize| {
            let gates_here = N.saturating_sub(4 * j).min(4);
            // Byte 0 (`op`) and dwords 1..4 (a, b, out) of each gate here: never the padding
            // after `op`, nor past the N-th gate.
            let op_bytes = 0x0001_0001_0001_0001u64 & (u64::MAX >> (64 - 16 * gates_here));
            let fields = 0xeeeeu16 & (((1u32 << (4 * gates_here)) - 1) as u16);
            let q = p.add(64 * j);
            let ops = _mm512_maskz_loadu_epi8(op_bytes, q as *const i8);
            let reg = _mm512_maskz_loadu_epi32(fields, q as *const i32);
            // Non-zero where a gate is no AND or a field is above the bound: one test and
            // branch for all of them.
            let bad = _mm512_mask_cmpneq_epi8_mask(op_bytes, ops, and_op)
                | _mm512_mask_cmpgt_epu32_mask(fields, reg, highest) as u64;
            (bad, reg)
        };
        let (low_bad, low) = four(0);
        let (high_bad, high) = if N > 4 {
            four(1)
        } else {
            (0, _mm512_setzero_si512())
        };
        if low_bad | high_bad != 0 {
            return false;
        }
        // Dword 4·g + 1 of the two registers is `a` of gate g, + 2 its `b`, + 3 its `out`;
        // indices 16 and up pick from `high`.
        let outs_then = |field: i32| {
            let f = |g: i32| 4 * g + field;
            let o = |g: i32| 4 * g + 3;
            _mm512_permutex2var_epi32(
                low,
                _mm512_set_epi32(
                    f(7),
                    f(6),
                    f(5),
                    f(4),
                    f(3),
                    f(2),
                    f(1),
                    f(0),
                    o(7),
                    o(6),
                    o(5),
                    o(4),
                    o(3),
                    o(2),
                    o(1),
                    o(0),
                ),
                high,
            )
        };
        // Lane j of a conflict result has bit i set where lane i < j holds the same value.
        let with_a = _mm512_conflict_epi32(outs_then(1));
        let with_b = _mm512_conflict_epi32(outs_then(2));
        // Lane 8 + g (g < N) may not see the outputs of gates 0..g (bits 0..g); lanes 0..8
        // (outputs meeting outputs) and bits 8 and up (inputs meeting inputs) are fine.
        let earlier = |g: i32| if (g as usize) < N { (1 << g) - 1 } else { 0 };
        let forbidden = _mm512_set_epi32(
            earlier(7),
            earlier(6),
            earlier(5),
            earlier(4),
            earlier(3),
            earlier(2),
            earlier(1),
            earlier(0),
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        );
        _mm512_test_epi32_mask(_mm512_or_si512(with_a, with_b), forbidden) == 0
    }
}

/// Whether every `a`, `b` and `out` field of `gates` is at most `max_wire`: the fields of
/// 4 gates per 512-bit load, one compare at the end (both parties' bounds check of a span).
///
/// # Safety
/// AVX-512F.
#[inline(always)]
pub(crate) unsafe fn fields_at_most(gates: &[Gate], max_wire: u32) -> bool {
    // The mask 0xeeee selects dwords 1, 2, 3 of each 16-byte gate: a, b, out.
    const _: () = assert!(
        size_of::<Gate>() == 16
            && std::mem::offset_of!(Gate, a) == 4
            && std::mem::offset_of!(Gate, b) == 8
            && std::mem::offset_of!(Gate, out) == 12
    );
    let chunks = gates.chunks_exact(4);
    let rest = chunks.remainder();
    // SAFETY: AVX-512F is the contract; each masked load reads 64 bytes of four whole gates
    // (`chunks_exact(4)`), see the comment at the load.
    unsafe {
        let mut highest = _mm512_setzero_si512();
        for four in chunks {
            // SAFETY: 64 readable bytes; only the dwords at offsets 4, 8, 12 of each gate
            // (a, b, out) are read (the mask), never the padding after `op`.
            let fields = _mm512_maskz_loadu_epi32(0xeeee, four.as_ptr() as *const i32);
            highest = _mm512_max_epu32(highest, fields);
        }
        _mm512_cmpgt_epu32_mask(highest, _mm512_set1_epi32(max_wire as i32)) == 0
            && rest.iter().all(|g| g.a.max(g.b).max(g.out) <= max_wire)
    }
}
