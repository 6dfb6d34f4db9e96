//! Half-gates garbling (Zahur, Rosulek, Evans, EUROCRYPT 2015) with free XOR and
//! point-and-permute, sans IO: the [`Garbler`] turns gates into garbled tables (2 blocks
//! per AND) and the [`Evaluator`] consumes them; moving tables, labels and the hash key
//! between the parties is the protocol layer's job.
//!
//! [`three_halves`] is the alternative scheme of Rosulek–Roy (CRYPTO 2021): 1.5κ + 5 bits
//! per AND instead of 2κ, for runs the link limits ([`Garbling`] names the two).
//!
//! [`parallel`] garbles and evaluates a `ParallelCircuit` on several threads (fine- and
//! coarse-grained parallelism) with the same tweaks as this sequential order.
//!
//! # Conventions both parties share
//!
//! - Every wire has a *zero-label* W⁰ known to the garbler; the label of value v is
//!   W⁰ ⊕ v·Δ, where Δ (the garbler's secret) has lsb 1, so the lsb of a label is its
//!   value masked by the lsb of W⁰ (the point-and-permute bit; [`Garbler::decoding_bits`]).
//! - The hash H is [`TccrHash`] (TMMO, tweakable circular correlation robust) under a
//!   public key the garbler draws at random for each run and sends to the evaluator (see
//!   `pgc_crypto::hash` for why the key is per run). The j-th AND gate overall (counted
//!   from 0 across all calls) uses tweak 2j for the garbler half-gate and 2j + 1 for the
//!   evaluator half-gate, and its table is `[T_G, T_E]`:
//!   - T_G = H(A⁰, 2j) ⊕ H(A¹, 2j) ⊕ p_b·Δ,
//!   - T_E = H(B⁰, 2j+1) ⊕ H(B¹, 2j+1) ⊕ A⁰,
//!   - C⁰ = H(A^{p_a}, 2j) ⊕ H(B^{p_b}, 2j+1) ⊕ p_a·p_b·Δ (with p_a, p_b the lsbs of
//!     A⁰, B⁰),
//!
//!   and the evaluator holding A, B computes
//!   C = H(A, 2j) ⊕ lsb(A)·T_G ⊕ H(B, 2j+1) ⊕ lsb(B)·(T_E ⊕ A).
//! - XOR: C⁰ = A⁰ ⊕ B⁰ (free XOR). INV: C⁰ = A⁰ ⊕ Δ, the evaluator copies its label.
//!   Copy copies on both sides.
//! - Constant v: the garbler's zero-label is v·Δ and the evaluator's label is the public
//!   block 0, which is the label of v (v·Δ ⊕ v·Δ = 0). This is safe because the value of a
//!   constant wire is part of the public circuit: a simulator knows it and can output the
//!   same label 0, and the other label, Δ, stays as hidden as every other inactive label.
//! - Gates may reuse wire ids (slots); a gate reads its inputs before it writes its output.
//!
//! # Speed
//!
//! Gates run in order as they come, and each AND is hashed at once. On CPUs with VAES the
//! hash (8 AES calls per AND for the garbler, 4 for the evaluator) runs in vector registers
//! fused with the table and label arithmetic (`wide`), and the out-of-order core overlaps
//! the AES chains of successive ANDs with each other and with the label traffic of the
//! gates in between; elsewhere the batch functions of [`TccrHash`] hash one AND's blocks
//! per call. The 512-bit garbler also takes runs of 8 consecutive ANDs none of which reads
//! another's output (as levels of ANDs are) as one batch whose 8 hashes run side by side,
//! rounds outermost: one AND's chain of 20 dependent rounds would otherwise leave the AES
//! units waiting, and the scheduler holds too few waiting instructions to find 8 chains
//! by itself. A batch loads all its inputs before it stores, and stores in gate order, so
//! that test (one vector test per candidate batch) is the only hazard to check. The
//! 512-bit evaluator takes such runs 8 ANDs (4 pair registers) at a time, software-
//! pipelined: the first calls π(x) of TMMO's next window run in one pass with the second
//! calls of this one, which needs one more test (the next window reads none of this one's
//! outputs, as its inputs are loaded before they are stored). Nothing is
//! queued across gates beyond that, so every read sees the value the gate sequence
//! defines, whatever the order and slot reuse of the caller's gates, and no state is
//! pending between calls. One pass over each call's gates (4 per instruction with
//! AVX-512) bounds all wire ids and counts the ANDs up front, so the gate loops test
//! nothing per gate unless that pass flags the call.

pub mod compact;
pub mod parallel;
mod pool;
pub mod three_halves;
#[cfg(target_arch = "x86_64")]
mod wide;

use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::{Block, Prg, TccrHash};

/// Errors of [`Evaluator::evaluate`]. Messages name the problem but never a label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GarbleError {
    #[error(
        "garbled tables hold {got} blocks, but the {and_gates} AND gates of these gates need \
         {expected} (2 per AND)"
    )]
    TableCountMismatch {
        and_gates: usize,
        expected: usize,
        got: usize,
    },
    #[error("gate {gate_index} ({op}) uses wire {wire}, but there are only {num_wires} wires")]
    WireOutOfRange {
        gate_index: usize,
        op: &'static str,
        wire: WireId,
        num_wires: usize,
    },
    #[error("{got} input labels given, but there are {expected} inputs")]
    LabelCount { expected: usize, got: usize },
}

/// The garbling scheme of a run (both parties agree on it at the handshake).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Garbling {
    /// Half-gates (ZRE15): 2κ bits per AND, 4 hash calls garbling and 2 evaluating.
    #[default]
    HalfGates,
    /// Three-halves ([`three_halves`], RR21): 1.5κ + 5 bits per AND, 6 hash calls garbling
    /// and 3 evaluating.
    ThreeHalves,
}

impl Garbling {
    /// The name used on the command line and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Garbling::HalfGates => "half-gates",
            Garbling::ThreeHalves => "three-halves",
        }
    }
}

impl std::fmt::Display for Garbling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A fresh global offset Δ with lsb 1 (the point-and-permute convention).
pub fn random_delta(prg: &mut Prg) -> Block {
    Block(prg.random_block().0 | 1)
}

/// Number of AND gates in `gates` (2 table blocks each).
pub fn and_count(gates: &[Gate]) -> usize {
    gates.iter().filter(|g| g.op == Op::And).count()
}

/// The code that hashes AND gates: the fastest the CPU runs is chosen when a garbler or
/// evaluator is made (tests may pick another).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    /// 512-bit VAES (for the evaluator, only for pairs of ANDs: see `wide`).
    Zmm,
    /// 256-bit VAES.
    Ymm,
    /// The batch functions of [`TccrHash`], on any CPU.
    Portable,
}

impl Kernel {
    fn is_available(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Zmm => {
                // The evaluator's lone ANDs take the 256-bit path.
                pgc_crypto::AesKernel::Vaes512.is_available()
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512cd")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Ymm => {
                std::arch::is_x86_feature_detected!("aes")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("vaes")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The fastest kernel this CPU runs (detected once).
    pub(crate) fn best() -> Kernel {
        static BEST: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| Kernel::first_available(&[Kernel::Zmm, Kernel::Ymm]))
    }

    /// The first of `preference` the CPU runs.
    fn first_available(preference: &[Kernel]) -> Kernel {
        preference
            .iter()
            .copied()
            .find(|k| k.is_available())
            .unwrap_or(Kernel::Portable)
    }
}

/// Whether the wires a gate uses are below `num_wires` (Const's `a` is a bit, not a wire).
#[inline(always)]
fn gate_wires_ok(g: &Gate, num_wires: usize) -> bool {
    let highest = match g.op {
        Op::Xor | Op::And => g.a.max(g.b).max(g.out),
        Op::Inv | Op::Copy => g.a.max(g.out),
        Op::Const => g.out,
    };
    (highest as usize) < num_wires
}

/// Runs the XOR gates from `index` on, up to the first other gate or `end`; returns the
/// index of the gate after them. XOR runs are common (a level's linear layer), and this loop
/// tests one thing per gate where the gate loop's dispatch tested up to four.
///
/// # Safety
/// `end` ≤ `gates.len()`, and every wire of `gates[index..end]` is below the length of
/// `labels`.
#[inline(always)]
unsafe fn xor_run(labels: *mut Block, gates: &[Gate], mut index: usize, end: usize) -> usize {
    // Four gates per turn: one test of the count for all (two per turn left 3 of its 13
    // instructions per XOR to the loop). In order, as a gate may read an earlier one's output.
    while index + 4 <= end {
        // SAFETY: index + 3 < end ≤ gates.len(); the wires per the caller.
        unsafe {
            for k in 0..4 {
                let g = gates.get_unchecked(index + k);
                if g.op != Op::Xor {
                    return index + k;
                }
                xor_labels(labels, g.a, g.b, g.out);
            }
        }
        index += 4;
    }
    while index < end {
        // SAFETY: as above.
        unsafe {
            let g = gates.get_unchecked(index);
            if g.op != Op::Xor {
                return index;
            }
            xor_labels(labels, g.a, g.b, g.out);
        }
        index += 1;
    }
    index
}

/// `labels[out] = labels[a] ⊕ labels[b]` through a vector register (the compiler would
/// move each label through two general registers).
///
/// # Safety
/// The three wires are below the length of `labels`.
#[inline(always)]
unsafe fn xor_labels(labels: *mut Block, a: WireId, b: WireId, out: WireId) {
    // SAFETY: per the caller; SSE2 is part of the x86-64 baseline.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use std::arch::x86_64::*;
        let load = |w: WireId| _mm_loadu_si128(labels.add(w as usize) as *const __m128i);
        _mm_storeu_si128(
            labels.add(out as usize) as *mut __m128i,
            _mm_xor_si128(load(a), load(b)),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    unsafe {
        *labels.add(out as usize) = *labels.add(a as usize) ^ *labels.add(b as usize);
    }
}

/// Garbles one AND gate at a time.
trait GarbleAnd {
    /// Garbles the next AND (the kernel counts them, for the tweaks): zero-labels at `a`,
    /// `b`; writes `[T_G, T_E]` to `rows[0..2]` and C⁰ to `out`.
    ///
    /// # Safety
    /// The pointers are valid for their blocks (`a`, `b`, `out` may coincide).
    unsafe fn garble_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *mut Block,
        out: *mut Block,
    );

    /// Makes the next AND the `and_index`-th overall (tweaks 2j, 2j + 1): for gate lists
    /// whose ANDs are not consecutive in the circuit's order (`parallel`).
    ///
    /// # Safety
    /// As the kernel's other methods (its CPU features).
    unsafe fn set_and_index(&mut self, and_index: u64);

    /// ANDs the kernel hashes together in [`GarbleAnd::garble_batch`] (0: it has no batches).
    const BATCH: usize = 0;

    /// Whether the [`GarbleAnd::BATCH`] gates at `gates` can be one batch: all ANDs, every
    /// wire at most `max_wire`, none reading the output of an earlier one.
    ///
    /// # Safety
    /// As the kernel's other methods; `gates` is valid for `BATCH` gates.
    #[inline(always)]
    unsafe fn batch_ready(&self, _gates: *const Gate, _max_wire: u32) -> bool {
        false
    }

    /// Whether every `a`, `b` and `out` field of `gates` is at most `max_wire` (the
    /// garbler's bounds check of a span of gates).
    ///
    /// # Safety
    /// As the kernel's other methods (its CPU features).
    #[inline(always)]
    unsafe fn fields_at_most(&self, gates: &[Gate], max_wire: u32) -> bool {
        gates.iter().all(|g| g.a.max(g.b).max(g.out) <= max_wire)
    }

    /// Garbles the [`GarbleAnd::BATCH`] ANDs at `gates` (tables to `rows`, 2 per AND).
    ///
    /// # Safety
    /// [`GarbleAnd::batch_ready`] said yes with a `max_wire` below the length of `labels`;
    /// `rows` has room for the tables.
    #[inline(always)]
    unsafe fn garble_batch(&mut self, _labels: *mut Block, _gates: *const Gate, _rows: *mut Block) {
        unreachable!("kernel without batches")
    }
}

/// Evaluates one AND gate at a time.
trait EvaluateAnd {
    /// Evaluates the next AND: labels at `a`, `b`, tables at `rows` (2 blocks); writes
    /// the output label to `out`.
    ///
    /// # Safety
    /// The pointers are valid for their blocks.
    unsafe fn evaluate_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *const Block,
        out: *mut Block,
    );

    /// As [`GarbleAnd::set_and_index`].
    ///
    /// # Safety
    /// As the kernel's other methods (its CPU features).
    unsafe fn set_and_index(&mut self, and_index: u64);

    /// Whether [`EvaluateAnd::evaluate_pair`] is faster than two single ANDs (the gate
    /// loop looks for pairs only then).
    const PAIRS: bool = false;

    /// As [`GarbleAnd::fields_at_most`].
    ///
    /// # Safety
    /// As the kernel's other methods (its CPU features).
    #[inline(always)]
    unsafe fn fields_at_most(&self, gates: &[Gate], max_wire: u32) -> bool {
        gates.iter().all(|g| g.a.max(g.b).max(g.out) <= max_wire)
    }

    /// Pairs in a window of [`EvaluateAnd::evaluate_windows`] (0: no windows): consecutive
    /// independent ANDs whose hash calls run side by side.
    const WINDOW: usize = 0;

    /// Whether the `2·WINDOW` gates at `gates` are independent ANDs with wires at most
    /// `max_wire`.
    ///
    /// # Safety
    /// As the kernel's other methods; `gates` valid for `2·WINDOW` gates.
    #[inline(always)]
    unsafe fn window_ready(&self, _gates: *const Gate, _max_wire: u32) -> bool {
        false
    }

    /// Evaluates windows from `gates[first]` on (the first tested ready), as many as come;
    /// returns the ANDs evaluated.
    ///
    /// # Safety
    /// As the kernel's other methods; [`EvaluateAnd::window_ready`] said yes for
    /// `gates[first..]` with `max_wire` below the length of `labels`; `rows` valid for
    /// `rows_left` (at least `4·WINDOW`) blocks; the tweaks are consecutive.
    #[inline(always)]
    unsafe fn evaluate_windows(
        &mut self,
        _labels: *mut Block,
        _gates: &[Gate],
        _first: usize,
        _max_wire: u32,
        _rows: *const Block,
        _rows_left: usize,
    ) -> usize {
        unreachable!("kernel without windows")
    }

    /// Evaluates the next two ANDs, `(a1, b1) → out1` then `(a2, b2) → out2`, tables at
    /// `rows` (4 blocks).
    ///
    /// # Safety
    /// The pointers are valid for their blocks; neither `a2` nor `b2` is `out1`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn evaluate_pair(
        &mut self,
        a1: *const Block,
        b1: *const Block,
        out1: *mut Block,
        a2: *const Block,
        b2: *const Block,
        out2: *mut Block,
        rows: *const Block,
    ) {
        // SAFETY: per the caller.
        unsafe {
            self.evaluate_and(a1, b1, rows, out1);
            self.evaluate_and(a2, b2, rows.add(2), out2);
        }
    }
}

/// Any CPU: the hash's batch functions (on the fastest AES kernel the CPU has) on the 4
/// blocks of a garbled AND or the 2 of an evaluated one.
struct Portable<'a> {
    hash: &'a TccrHash,
    delta: Block,
    and_index: u64,
}

impl GarbleAnd for Portable<'_> {
    unsafe fn garble_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *mut Block,
        out: *mut Block,
    ) {
        // SAFETY: per the trait contract.
        let (a0, b0) = unsafe { (*a, *b) };
        let mut h = [Block::ZERO; 4];
        self.hash
            .tccr_batch_seq_pairs(&[a0, b0], self.delta, 2 * self.and_index, &mut h);
        self.and_index += 1;
        let (p_a, p_b) = (a0.lsb(), b0.lsb());
        let t_g = h[0] ^ h[1] ^ self.delta.select(p_b);
        let t_e = h[2] ^ h[3] ^ a0;
        // C⁰ = H(A^{p_a}) ⊕ p_a·p_b·Δ ⊕ H(B^{p_b}) = (H(A⁰) ⊕ p_a·T_G) ⊕ H(B^{p_b}).
        let c = h[0] ^ t_g.select(p_a) ^ if p_b { h[3] } else { h[2] };
        // SAFETY: per the trait contract.
        unsafe {
            *rows = t_g;
            *rows.add(1) = t_e;
            *out = c;
        }
    }

    unsafe fn set_and_index(&mut self, and_index: u64) {
        self.and_index = and_index;
    }
}

impl EvaluateAnd for Portable<'_> {
    unsafe fn evaluate_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *const Block,
        out: *mut Block,
    ) {
        // SAFETY: per the trait contract.
        let (a, b, t_g, t_e) = unsafe { (*a, *b, *rows, *rows.add(1)) };
        let mut h = [Block::ZERO; 2];
        self.hash
            .tccr_batch_seq(&[a, b], 2 * self.and_index, &mut h);
        self.and_index += 1;
        let c = h[0] ^ t_g.select(a.lsb()) ^ h[1] ^ (t_e ^ a).select(b.lsb());
        // SAFETY: per the trait contract.
        unsafe { *out = c };
    }

    unsafe fn set_and_index(&mut self, and_index: u64) {
        self.and_index = and_index;
    }
}

// SAFETY (the four impls below): these kernels are only made, and their methods only
// inlined, in the functions that run after detecting their CPU features and are compiled
// with them (`garble_zmm`, `garble_ymm`, `evaluate_ymm`, `evaluate_zmm`).
#[cfg(target_arch = "x86_64")]
impl GarbleAnd for wide::GarbleZmm {
    #[inline(always)]
    unsafe fn garble_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *mut Block,
        out: *mut Block,
    ) {
        unsafe { wide::GarbleZmm::garble_and(self, a, b, rows, out) }
    }

    #[inline(always)]
    unsafe fn set_and_index(&mut self, and_index: u64) {
        unsafe { wide::GarbleZmm::set_and_index(self, and_index) }
    }

    const BATCH: usize = wide::GARBLE_BATCH;

    #[inline(always)]
    unsafe fn fields_at_most(&self, gates: &[Gate], max_wire: u32) -> bool {
        unsafe { wide::fields_at_most(gates, max_wire) }
    }

    #[inline(always)]
    unsafe fn batch_ready(&self, gates: *const Gate, max_wire: u32) -> bool {
        unsafe { wide::independent_ands::<{ wide::GARBLE_BATCH }>(gates, max_wire) }
    }

    #[inline(always)]
    unsafe fn garble_batch(&mut self, labels: *mut Block, gates: *const Gate, rows: *mut Block) {
        unsafe {
            wide::GarbleZmm::garble_batch::<{ wide::GARBLE_BATCH }>(self, labels, gates, rows)
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl GarbleAnd for wide::GarbleYmm {
    #[inline(always)]
    unsafe fn garble_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *mut Block,
        out: *mut Block,
    ) {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::GarbleYmm::garble_and(self, a, b, rows, out) }
    }

    #[inline(always)]
    unsafe fn set_and_index(&mut self, and_index: u64) {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::GarbleYmm::set_and_index(self, and_index) }
    }
}

#[cfg(target_arch = "x86_64")]
impl EvaluateAnd for wide::EvaluateYmm {
    #[inline(always)]
    unsafe fn evaluate_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *const Block,
        out: *mut Block,
    ) {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::EvaluateYmm::evaluate_and(self, a, b, rows, out) }
    }

    #[inline(always)]
    unsafe fn set_and_index(&mut self, and_index: u64) {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::EvaluateYmm::set_and_index(self, and_index) }
    }
}

#[cfg(target_arch = "x86_64")]
impl EvaluateAnd for wide::EvaluateZmm {
    #[inline(always)]
    unsafe fn evaluate_and(
        &mut self,
        a: *const Block,
        b: *const Block,
        rows: *const Block,
        out: *mut Block,
    ) {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::EvaluateZmm::evaluate_and(self, a, b, rows, out) }
    }

    #[inline(always)]
    unsafe fn set_and_index(&mut self, and_index: u64) {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::EvaluateZmm::set_and_index(self, and_index) }
    }

    const PAIRS: bool = true;

    #[inline(always)]
    unsafe fn evaluate_pair(
        &mut self,
        a1: *const Block,
        b1: *const Block,
        out1: *mut Block,
        a2: *const Block,
        b2: *const Block,
        out2: *mut Block,
        rows: *const Block,
    ) {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::EvaluateZmm::evaluate_pair(self, a1, b1, out1, a2, b2, out2, rows) }
    }

    const WINDOW: usize = 4;

    #[inline(always)]
    unsafe fn window_ready(&self, gates: *const Gate, max_wire: u32) -> bool {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::independent_ands::<8>(gates, max_wire) }
    }

    #[inline(always)]
    unsafe fn evaluate_windows(
        &mut self,
        labels: *mut Block,
        gates: &[Gate],
        first: usize,
        max_wire: u32,
        rows: *const Block,
        rows_left: usize,
    ) -> usize {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe {
            wide::EvaluateZmm::evaluate_windows(
                self, labels, gates, first, max_wire, rows, rows_left,
            )
        }
    }

    #[inline(always)]
    unsafe fn fields_at_most(&self, gates: &[Gate], max_wire: u32) -> bool {
        // SAFETY: this method's contract (valid pointers), forwarded; the CPU features hold as
        // the comment above `impl GarbleAnd for wide::GarbleZmm` says.
        unsafe { wide::fields_at_most(gates, max_wire) }
    }
}

/// The garbler: holds Δ and every wire's zero-label.
pub struct Garbler {
    zero_labels: Vec<Block>,
    delta: Block,
    hash: TccrHash,
    and_gates_done: u64,
    kernel: Kernel,
}

/// The label memory a [`Garbler`] or an [`Evaluator`] for `num_wires` wires allocates (16
/// bytes per wire, each party): check it against the memory limit
/// ([`MemoryNeed::check`](pgc_circuit::MemoryNeed::check)) before building either, so that
/// a circuit too large is refused with a clear error instead of an allocation failure.
pub fn label_memory_needed(num_wires: usize) -> pgc_circuit::MemoryNeed {
    pgc_circuit::MemoryNeed::labels(num_wires as u64)
}

impl Garbler {
    /// A garbler for `num_wires` wires (all zero-labels 0 until set), with global offset
    /// `delta` and the public key `hash_key` of the garbling hash. Both must be fresh and
    /// random for each run: Δ secret, the key sent to the evaluator. Panics if the lsb of
    /// `delta` is 0.
    pub fn new(num_wires: usize, delta: Block, hash_key: Block) -> Garbler {
        assert!(
            delta.lsb(),
            "the garbler's Δ must have lsb 1 (point-and-permute)"
        );
        Garbler {
            zero_labels: vec![Block::ZERO; num_wires],
            delta,
            hash: TccrHash::new(hash_key),
            and_gates_done: 0,
            kernel: Kernel::first_available(&[Kernel::Zmm, Kernel::Ymm]),
        }
    }

    /// The global offset Δ. Secret: only the OT layer may use it.
    pub fn delta(&self) -> Block {
        self.delta
    }

    pub fn set_zero_label(&mut self, wire: WireId, label: Block) {
        self.zero_labels[wire as usize] = label;
    }

    pub fn zero_label(&self, wire: WireId) -> Block {
        self.zero_labels[wire as usize]
    }

    /// Every wire's zero-label, for an engine that garbles elsewhere (the GPU,
    /// `pgc_gpu`) and hands the labels back with [`zero_labels_mut`](Self::zero_labels_mut).
    pub fn zero_labels(&self) -> &[Block] {
        &self.zero_labels
    }

    pub fn zero_labels_mut(&mut self) -> &mut [Block] {
        &mut self.zero_labels
    }

    /// Garbles `gates` in order; appends exactly 2 blocks per AND to `tables`.
    ///
    /// # Panics
    /// If a gate uses a wire at or above `num_wires` (a malformed circuit; the garbler's
    /// own input, so a bug rather than a peer's doing).
    pub fn garble(&mut self, gates: &[Gate], tables: &mut Vec<Block>) {
        let num_wires = self.zero_labels.len();
        // SAFETY: the labels are this garbler's own array of `num_wires` blocks, borrowed
        // mutably through `self` for the whole call.
        let ands = unsafe {
            garble_gates(
                self.kernel,
                &self.hash,
                self.delta,
                self.zero_labels.as_mut_ptr(),
                num_wires,
                AndTweaks::From(self.and_gates_done),
                gates,
                tables,
            )
        };
        self.and_gates_done += ands as u64;
    }

    /// Makes the next AND garbled the `and_index`-th of the circuit (tweaks 2j, 2j + 1),
    /// for callers that garble a circuit's gates out of order or in pieces (`parallel`).
    pub fn set_and_index(&mut self, and_index: u64) {
        self.and_gates_done = and_index;
    }
    /// The lsb of each wire's zero-label: the evaluator decodes a label L as lsb(L) ⊕ bit.
    pub fn decoding_bits(&self, wires: &[WireId]) -> Vec<bool> {
        wires.iter().map(|&w| self.zero_label(w).lsb()).collect()
    }

    /// AND gates garbled so far (the next AND uses tweaks 2·this and 2·this + 1).
    pub fn and_gates_done(&self) -> u64 {
        self.and_gates_done
    }
}

/// The evaluator: holds one label per wire.
pub struct Evaluator {
    labels: Vec<Block>,
    hash: TccrHash,
    and_gates_done: u64,
    kernel: Kernel,
}

impl Evaluator {
    /// An evaluator for `num_wires` wires (all labels 0 until set), hashing with the
    /// public key `hash_key` the garbler chose for this run.
    pub fn new(num_wires: usize, hash_key: Block) -> Evaluator {
        Evaluator {
            labels: vec![Block::ZERO; num_wires],
            hash: TccrHash::new(hash_key),
            and_gates_done: 0,
            kernel: Kernel::first_available(&[Kernel::Zmm, Kernel::Ymm]),
        }
    }

    pub fn set_label(&mut self, wire: WireId, label: Block) {
        self.labels[wire as usize] = label;
    }

    pub fn label(&self, wire: WireId) -> Block {
        self.labels[wire as usize]
    }

    /// Every wire's label, for an engine that evaluates elsewhere (the GPU, `pgc_gpu`) and
    /// hands the labels back with [`labels_mut`](Self::labels_mut).
    pub fn labels(&self) -> &[Block] {
        &self.labels
    }

    pub fn labels_mut(&mut self) -> &mut [Block] {
        &mut self.labels
    }

    /// Evaluates `gates` in order with their garbled `tables`, which must hold exactly 2
    /// blocks per AND in `gates`.
    ///
    /// A wire out of range, or tables that run out or are left over, is reported when
    /// found (the count as the ANDs come, not before the first gate): after such an error
    /// the labels are unspecified and the evaluator must be dropped, as the protocol aborts
    /// anyway.
    pub fn evaluate(&mut self, gates: &[Gate], tables: &[Block]) -> Result<(), GarbleError> {
        let num_wires = self.labels.len();
        // SAFETY: the labels are this evaluator's own array of `num_wires` blocks,
        // borrowed mutably through `self` for the whole call.
        unsafe {
            evaluate_gates(
                self.kernel,
                &self.hash,
                self.labels.as_mut_ptr(),
                num_wires,
                AndTweaks::From(self.and_gates_done),
                gates,
                tables,
            )?;
        }
        self.and_gates_done += (tables.len() / 2) as u64;
        Ok(())
    }

    /// As [`Garbler::set_and_index`]: the next AND evaluated is the `and_index`-th.
    pub fn set_and_index(&mut self, and_index: u64) {
        self.and_gates_done = and_index;
    }
    /// The cleartext value of each wire: lsb(label) ⊕ its decoding bit.
    ///
    /// # Panics
    /// If `wires` and `decoding_bits` differ in length (the protocol layer checks the
    /// length of what it receives).
    pub fn decode(&self, wires: &[WireId], decoding_bits: &[bool]) -> Vec<bool> {
        assert_eq!(
            wires.len(),
            decoding_bits.len(),
            "decode: {} wires but {} decoding bits",
            wires.len(),
            decoding_bits.len()
        );
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

#[cold]
fn wire_error(gate_index: usize, g: &Gate, num_wires: usize) -> GarbleError {
    let used: &[WireId] = match g.op {
        Op::Const => &[],
        _ => g.inputs(),
    };
    let wire = used
        .iter()
        .chain(std::iter::once(&g.out))
        .copied()
        .find(|&w| w as usize >= num_wires)
        .unwrap_or(g.out);
    GarbleError::WireOutOfRange {
        gate_index,
        op: g.op.name(),
        wire,
        num_wires,
    }
}

/// The garbler's circuit is its own input: a bad wire is a bug, reported like an index
/// out of bounds.
#[cold]
#[inline(never)]
fn wire_panic(gate_index: usize, g: &Gate, num_wires: usize) -> ! {
    panic!(
        "{} (index out of bounds)",
        wire_error(gate_index, g, num_wires)
    )
}

/// Which tweaks the ANDs of a call use.
#[derive(Clone, Copy)]
pub(crate) enum AndTweaks<'a> {
    /// The ANDs are consecutive in the circuit's order, the first one the j-th.
    From(u64),
    /// One AND index per AND of the call, in order (`parallel`, for a level's share of
    /// ANDs that lie scattered in the circuit's order).
    Each(&'a [u64]),
}

impl AndTweaks<'_> {
    fn first(self) -> u64 {
        match self {
            AndTweaks::From(j) => j,
            AndTweaks::Each(indices) => indices.first().copied().unwrap_or(0),
        }
    }
}

/// Garbles `gates` in order on the zero-labels at `labels` with the given AND tweaks;
/// appends exactly 2 blocks per AND to `tables` and returns the number of ANDs.
///
/// Nothing scans the gates first: wires are checked gate by gate in the gate loop (one
/// compare of the largest field, a batch's in its vector test) and `tables` grows as ANDs
/// come. A separate pass over the gates (bounds and AND count) had cost about a quarter of
/// the garbling time on the Bristol AES-128 circuit, whose 36 Ki gates a call reads from L2.
///
/// # Panics
/// If a gate uses a wire at or above `num_wires`, or `tweaks` is
/// [`AndTweaks::Each`] with a count other than the number of ANDs (both bugs of the
/// caller, whose own circuit this is; the gates before the bad one, or all of them for a
/// wrong count, have been garbled by then).
///
/// # Safety
/// `labels` is valid for reads and writes of `num_wires` blocks, and while this runs no
/// other thread writes a wire these gates read nor accesses a wire they write.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn garble_gates(
    kernel: Kernel,
    hash: &TccrHash,
    delta: Block,
    labels: *mut Block,
    num_wires: usize,
    tweaks: AndTweaks<'_>,
    gates: &[Gate],
    tables: &mut Vec<Block>,
) -> usize {
    let run = GarbleRun {
        delta,
        labels,
        num_wires,
        tweaks,
        gates,
    };
    // SAFETY (all arms): the caller's guarantees for `labels`; the kernel was chosen
    // because the CPU has its features.
    unsafe {
        match kernel {
            #[cfg(target_arch = "x86_64")]
            Kernel::Zmm => garble_zmm(hash, run, tables),
            #[cfg(target_arch = "x86_64")]
            Kernel::Ymm => garble_ymm(hash, run, tables),
            _ => {
                let mut kernel = Portable {
                    hash,
                    delta,
                    and_index: tweaks.first(),
                };
                run.dispatch(&mut kernel, tables)
            }
        }
    }
}

/// The arguments of one garbling call, minus the kernel.
#[derive(Clone, Copy)]
struct GarbleRun<'a> {
    delta: Block,
    labels: *mut Block,
    num_wires: usize,
    tweaks: AndTweaks<'a>,
    gates: &'a [Gate],
}

impl GarbleRun<'_> {
    /// Picks the gate loop for the tweaks this call needs.
    ///
    /// # Safety
    /// As [`garble_gates`]; the kernel's CPU features are present.
    #[inline(always)]
    unsafe fn dispatch<K: GarbleAnd>(self, kernel: &mut K, tables: &mut Vec<Block>) -> usize {
        // SAFETY: per this function's contract.
        unsafe {
            match self.tweaks {
                AndTweaks::From(_) => self.garble_loop::<K, false>(kernel, tables),
                AndTweaks::Each(_) => self.garble_loop::<K, true>(kernel, tables),
            }
        }
    }

    /// The gate loop; with `EACH`, the tweaks are [`AndTweaks::Each`]. Spans of
    /// [`CHECK_SPAN`] gates are bounds-checked as a whole (one vector pass while they are
    /// about to be read anyway) and run without a per-gate test; a span that fails runs with
    /// the exact test at every gate, which finds the gate at fault.
    ///
    /// # Safety
    /// As [`GarbleRun::dispatch`].
    #[inline(always)]
    unsafe fn garble_loop<K: GarbleAnd, const EACH: bool>(
        self,
        kernel: &mut K,
        tables: &mut Vec<Block>,
    ) -> usize {
        let gates = self.gates;
        let indices: &[u64] = match self.tweaks {
            AndTweaks::Each(indices) => indices,
            AndTweaks::From(_) => &[],
        };
        let first_row = tables.len();
        let mut cursor = RowCursor {
            rows: tables.as_mut_ptr().wrapping_add(first_row),
            rows_end: tables.as_mut_ptr().wrapping_add(tables.capacity()),
        };
        // A gate's largest field at most this proves all its wires in range (a Const's `a`
        // is a bit and an INV's `b` is 0, so a valid gate fails it only where `num_wires`
        // < 2, and then the exact test runs). With no wires every gate is at fault (its
        // `out`), and `max_wire` 0 would pass some.
        let max_wire = self.num_wires.saturating_sub(1).min(u32::MAX as usize) as u32;
        if self.num_wires == 0
            && let Some(g) = gates.first()
        {
            wire_panic(0, g, 0);
        }
        let mut index = 0;
        while index < gates.len() {
            let end = (index + CHECK_SPAN).min(gates.len());
            // SAFETY: per this function's contract; the span's wires were just checked (or
            // are checked gate by gate).
            index = unsafe {
                if kernel.fields_at_most(&gates[index..end], max_wire) {
                    self.garble_span::<K, EACH, false>(
                        kernel,
                        tables,
                        &mut cursor,
                        indices,
                        first_row,
                        max_wire,
                        index,
                        end,
                    )
                } else {
                    self.garble_span::<K, EACH, true>(
                        kernel,
                        tables,
                        &mut cursor,
                        indices,
                        first_row,
                        max_wire,
                        index,
                        end,
                    )
                }
            };
        }
        // SAFETY: the kernel wrote both rows of each AND up to `rows`.
        let ands = unsafe {
            let len = cursor.rows.offset_from(tables.as_ptr()) as usize;
            tables.set_len(len);
            (len - first_row) / 2
        };
        if EACH && ands != indices.len() {
            and_count_panic(indices.len(), ands);
        }
        ands
    }

    /// Garbles the gates from `index` on, at least up to `end` (a batch may run past it);
    /// returns the index of the next gate. With `CHECKED`, each gate's wires are tested
    /// (exactly) before it runs; without, the caller proved the gates up to `end` in range.
    ///
    /// # Safety
    /// As [`GarbleRun::dispatch`]; without `CHECKED`, every field of `gates[index..end]` is
    /// at most `max_wire`, which is below `num_wires`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn garble_span<K: GarbleAnd, const EACH: bool, const CHECKED: bool>(
        self,
        kernel: &mut K,
        tables: &mut Vec<Block>,
        cursor: &mut RowCursor,
        indices: &[u64],
        first_row: usize,
        max_wire: u32,
        mut index: usize,
        end: usize,
    ) -> usize {
        let GarbleRun {
            delta,
            labels,
            num_wires,
            gates,
            ..
        } = self;
        // Few live values in this loop: `labels` reloaded from the stack at every XOR gate
        // (registers spilled) was a hot spot. The rows written so far, and so the ANDs,
        // follow from `rows`.
        let RowCursor {
            mut rows,
            mut rows_end,
        } = *cursor;
        let rows_done = |tables: &Vec<Block>, rows: *mut Block| {
            // SAFETY: `rows` points into (or one past) the rows of `tables`' allocation.
            unsafe { rows.offset_from(tables.as_ptr()) as usize }
        };
        while index < end {
            let g = &gates[index];
            let Gate { op, a, b, out } = *g;
            if CHECKED && !gate_wires_ok(g, num_wires) {
                wire_panic(index, g, num_wires);
            }
            index += 1;
            // SAFETY (all arms): the gate's wires are below num_wires, the length of the
            // labels (checked for the span or just above; a batch's gates by `batch_ready`).
            // `rows` has room for 2 blocks per AND (`room`, grown before each AND or batch).
            unsafe {
                // If-else rather than `match`: XOR and AND are the common gates, and two
                // predictable branches are cheaper than the jump a `match` compiles to.
                if op == Op::Xor {
                    xor_labels(labels, a, b, out);
                    if !CHECKED {
                        index = xor_run(labels, gates, index, end);
                    }
                } else if op == Op::And {
                    if (rows_end.offset_from(rows) as usize) < 2 * K::BATCH.max(1) {
                        tables.set_len(rows_done(tables, rows));
                        grow_tables(tables, 2 * K::BATCH.max(1));
                        rows = tables.as_mut_ptr().add(tables.len());
                        rows_end = tables.as_mut_ptr().add(tables.capacity());
                    }
                    // A batch (consecutive tweaks) where the next gates allow one; the
                    // scalar look at its last gate skips the vector test in AND-sparse code.
                    let first = index - 1;
                    if K::BATCH > 0
                        && !EACH
                        && first + K::BATCH <= gates.len()
                        && gates.get_unchecked(first + K::BATCH - 1).op == Op::And
                        && kernel.batch_ready(gates.as_ptr().add(first), max_wire)
                    {
                        kernel.garble_batch(labels, gates.as_ptr().add(first), rows);
                        rows = rows.add(2 * K::BATCH);
                        index = first + K::BATCH;
                        // The next batches straight away while the gates make them and
                        // their rows fit: a level's ANDs are a run of batches, and going
                        // back through the gate dispatch cost a dozen instructions each.
                        while index + K::BATCH <= gates.len()
                            && rows_end.offset_from(rows) as usize >= 2 * K::BATCH
                            && gates.get_unchecked(index + K::BATCH - 1).op == Op::And
                            && kernel.batch_ready(gates.as_ptr().add(index), max_wire)
                        {
                            kernel.garble_batch(labels, gates.as_ptr().add(index), rows);
                            rows = rows.add(2 * K::BATCH);
                            index += K::BATCH;
                        }
                        continue;
                    }
                    if EACH {
                        let done = rows_done(tables, rows);
                        let ands = (done - first_row) / 2;
                        let Some(&and_index) = indices.get(ands) else {
                            tables.set_len(done);
                            and_count_panic(indices.len(), ands + 1);
                        };
                        kernel.set_and_index(and_index);
                    }
                    let at = |w: WireId| labels.add(w as usize);
                    kernel.garble_and(at(a), at(b), rows, at(out));
                    rows = rows.add(2);
                } else {
                    let value = match op {
                        Op::Const => delta.select(a != 0),
                        _ => *labels.add(a as usize) ^ delta.select(op == Op::Inv),
                    };
                    *labels.add(out as usize) = value;
                }
            }
        }
        *cursor = RowCursor { rows, rows_end };
        index
    }
}

/// Gates bounds-checked at once by the garbler's gate loop: 1 KiB, so they are read from
/// L1 when the loop runs them right after.
const CHECK_SPAN: usize = 64;

/// Where the garbler's gate loop writes its next table rows.
#[derive(Clone, Copy)]
struct RowCursor {
    /// The next row (all rows of `tables` before it are written).
    rows: *mut Block,
    /// The end of `tables`' capacity.
    rows_end: *mut Block,
}

/// Room for at least `rows` more blocks in `tables`, growing it by doubling (so a call's
/// tables cost amortized constant time per AND, as if reserved up front).
#[cold]
#[inline(never)]
fn grow_tables(tables: &mut Vec<Block>, rows: usize) {
    tables.reserve(rows.max(tables.capacity()));
}

/// An [`AndTweaks::Each`] whose count is not the number of ANDs: the caller's bug.
#[cold]
#[inline(never)]
fn and_count_panic(indices: usize, ands: usize) -> ! {
    panic!("one AND index per AND of the gates: {indices} indices for at least {ands} ANDs")
}

/// # Safety
/// As [`GarbleRun::dispatch`]; the CPU has AES-NI, AVX-512F, AVX-512BW, AVX-512CD and VAES.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,avx512f,avx512bw,avx512cd,vaes")]
unsafe fn garble_zmm(hash: &TccrHash, run: GarbleRun<'_>, tables: &mut Vec<Block>) -> usize {
    // SAFETY: the caller checked the CPU, and this function has its features.
    unsafe {
        let keys = pgc_crypto::aes::wide::RoundKeys512::new(hash.permutation());
        let mut kernel = wide::GarbleZmm::new(keys, run.delta, run.tweaks.first());
        run.dispatch(&mut kernel, tables)
    }
}

/// # Safety
/// As [`GarbleRun::dispatch`]; the CPU has AES-NI, AVX2 and VAES.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,avx2,vaes")]
unsafe fn garble_ymm(hash: &TccrHash, run: GarbleRun<'_>, tables: &mut Vec<Block>) -> usize {
    // SAFETY: the caller checked the CPU, and this function has its features.
    unsafe {
        let keys = pgc_crypto::aes::wide::RoundKeys256::new(hash.permutation());
        let mut kernel = wide::GarbleYmm::new(keys, run.delta, run.tweaks.first());
        run.dispatch(&mut kernel, tables)
    }
}

/// Evaluates `gates` in order on the labels at `labels` with their garbled `tables`
/// (exactly 2 blocks per AND) and the given AND tweaks. A wire out of range, or tables
/// that run out or are left over, is an error when found (the labels are then
/// unspecified). As in [`garble_gates`], nothing scans the gates first: wires are checked
/// a span at a time and each AND checks that its rows are there.
///
/// # Panics
/// If `tweaks` is [`AndTweaks::Each`] with a count other than the number of ANDs (the
/// caller's bug).
///
/// # Safety
/// As [`garble_gates`].
pub(crate) unsafe fn evaluate_gates(
    kernel: Kernel,
    hash: &TccrHash,
    labels: *mut Block,
    num_wires: usize,
    tweaks: AndTweaks<'_>,
    gates: &[Gate],
    tables: &[Block],
) -> Result<(), GarbleError> {
    let run = EvaluateRun {
        labels,
        num_wires,
        tweaks,
        gates,
        tables,
    };
    // SAFETY (all arms): the caller's guarantees for `labels`; the kernel was chosen
    // because the CPU has its features.
    unsafe {
        match kernel {
            // Without enough pairs, the 512-bit path's keys and pair tests only cost (on
            // alternating AND/XOR gates it measured a quarter slower than the 256-bit one);
            // with one index per AND nothing is paired.
            #[cfg(target_arch = "x86_64")]
            Kernel::Zmm if matches!(tweaks, AndTweaks::From(_)) && pairs_pay(gates) => {
                evaluate_zmm(hash, run)
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Zmm | Kernel::Ymm => evaluate_ymm(hash, run),
            _ => {
                let mut kernel = Portable {
                    hash,
                    delta: Block::ZERO,
                    and_index: tweaks.first(),
                };
                run.dispatch(&mut kernel)
            }
        }
    }
}

/// Whether the evaluator's 512-bit pairs pay on these gates: at least a quarter of the
/// ANDs directly followed by an AND, judged on 16 samples of 16 gates spread over the
/// call (so the choice costs the same for any length, and no pass over all the gates).
fn pairs_pay(gates: &[Gate]) -> bool {
    const SAMPLES: usize = 16;
    const SAMPLE: usize = 16;
    let (mut ands, mut adjacent) = (0usize, 0usize);
    let mut count = |sample: &[Gate]| {
        for (k, g) in sample.iter().enumerate() {
            let and = g.op == Op::And;
            ands += and as usize;
            adjacent += (and && sample.get(k + 1).is_some_and(|n| n.op == Op::And)) as usize;
        }
    };
    if gates.len() <= SAMPLES * SAMPLE {
        count(gates);
    } else {
        let stride = gates.len() / SAMPLES;
        for k in 0..SAMPLES {
            count(&gates[k * stride..k * stride + SAMPLE]);
        }
    }
    4 * adjacent >= ands && ands > 0
}

/// The table count error for `gates` given `got` table blocks.
#[cold]
#[inline(never)]
fn table_count_error(gates: &[Gate], got: usize) -> GarbleError {
    let and_gates = and_count(gates);
    GarbleError::TableCountMismatch {
        and_gates,
        expected: 2 * and_gates,
        got,
    }
}

/// The arguments of one evaluation call, minus the kernel.
#[derive(Clone, Copy)]
struct EvaluateRun<'a> {
    labels: *mut Block,
    num_wires: usize,
    tweaks: AndTweaks<'a>,
    gates: &'a [Gate],
    tables: &'a [Block],
}

impl EvaluateRun<'_> {
    /// Picks the gate loop for the tweaks this call needs.
    ///
    /// # Safety
    /// As [`evaluate_gates`]; the kernel's CPU features are present.
    #[inline(always)]
    unsafe fn dispatch<K: EvaluateAnd>(self, kernel: &mut K) -> Result<(), GarbleError> {
        // SAFETY: per this function's contract.
        unsafe {
            match self.tweaks {
                AndTweaks::From(_) => self.evaluate_loop::<K, false>(kernel),
                AndTweaks::Each(_) => self.evaluate_loop::<K, true>(kernel),
            }
        }
    }

    /// The gate loop (spans as in [`GarbleRun::garble_loop`]).
    ///
    /// # Safety
    /// As [`EvaluateRun::dispatch`].
    #[inline(always)]
    unsafe fn evaluate_loop<K: EvaluateAnd, const EACH: bool>(
        self,
        kernel: &mut K,
    ) -> Result<(), GarbleError> {
        let EvaluateRun {
            num_wires,
            tweaks,
            gates,
            tables,
            ..
        } = self;
        let indices: &[u64] = match tweaks {
            AndTweaks::Each(indices) => indices,
            AndTweaks::From(_) => &[],
        };
        // As in `garble_loop`: with no wires every gate is at fault.
        if num_wires == 0
            && let Some(g) = gates.first()
        {
            return Err(wire_error(0, g, 0));
        }
        let max_wire = num_wires.saturating_sub(1).min(u32::MAX as usize) as u32;
        let mut rows = tables.as_ptr();
        let mut index = 0;
        while index < gates.len() {
            let end = (index + CHECK_SPAN).min(gates.len());
            // SAFETY: per this function's contract; the span's wires were just checked (or
            // are checked gate by gate).
            index = unsafe {
                if kernel.fields_at_most(&gates[index..end], max_wire) {
                    self.evaluate_span::<K, EACH, false>(
                        kernel, indices, &mut rows, max_wire, index, end,
                    )?
                } else {
                    self.evaluate_span::<K, EACH, true>(
                        kernel, indices, &mut rows, max_wire, index, end,
                    )?
                }
            };
        }
        // SAFETY: `rows` stays within `tables` (each AND checks its rows are there).
        let used = unsafe { rows.offset_from(tables.as_ptr()) as usize };
        if used != tables.len() {
            return Err(table_count_error(gates, tables.len()));
        }
        if EACH && used / 2 != indices.len() {
            and_count_panic(indices.len(), used / 2);
        }
        Ok(())
    }

    /// Evaluates `gates[index..end]` (see [`GarbleRun::garble_span`]; pairs never cross
    /// `end`, a kernel's window may, its test checking its wires); returns the next gate's
    /// index.
    ///
    /// # Safety
    /// As [`EvaluateRun::dispatch`]; without `CHECKED`, every field of `gates[index..end]`
    /// is below `num_wires`; `rows` points into `tables` at the next AND's rows.
    #[inline(always)]
    unsafe fn evaluate_span<K: EvaluateAnd, const EACH: bool, const CHECKED: bool>(
        self,
        kernel: &mut K,
        indices: &[u64],
        rows_at: &mut *const Block,
        max_wire: u32,
        mut index: usize,
        end: usize,
    ) -> Result<usize, GarbleError> {
        let EvaluateRun {
            labels,
            num_wires,
            gates,
            tables,
            ..
        } = self;
        let mut rows = *rows_at;
        // SAFETY: one past the end of `tables`.
        let rows_end = unsafe { tables.as_ptr().add(tables.len()) };
        while index < end {
            let g = &gates[index];
            let Gate { op, a, b, out } = *g;
            index += 1;
            // A bad gate is an error, not a panic.
            if CHECKED && !gate_wires_ok(g, num_wires) {
                return Err(wire_error(index - 1, g, num_wires));
            }
            // SAFETY (all arms): the gate's wires are below num_wires, the length of the
            // labels: checked for the span or just above. `rows` points at this AND's 2
            // blocks (and a paired next AND's 2 after them): checked against the end of
            // the tables before each use; with EACH, `indices` is read checked. A paired
            // next gate is in the same span (so checked too), and it does not read this
            // AND's output (the `evaluate_pair` contract); with EACH nothing is paired, as
            // a pair's tweaks are consecutive. A run of windows is tested by the kernel
            // (`window_ready` for the first, with `max_wire`, and the kernel for the next
            // ones) and gets the rows left, so it may go past the span.
            unsafe {
                // If-else rather than `match`, as in `GarbleRun::garble_span`.
                if op == Op::Xor {
                    xor_labels(labels, a, b, out);
                    if !CHECKED {
                        index = xor_run(labels, gates, index, end);
                    }
                } else if op == Op::And {
                    let at = |w: WireId| labels.add(w as usize);
                    let left = rows_end.offset_from(rows) as usize;
                    if left < 2 {
                        return Err(table_count_error(gates, tables.len()));
                    }
                    if EACH {
                        let ands = rows.offset_from(tables.as_ptr()) as usize / 2;
                        let Some(&and_index) = indices.get(ands) else {
                            and_count_panic(indices.len(), ands + 1);
                        };
                        kernel.set_and_index(and_index);
                    }
                    // Windows of independent ANDs where the kernel has them (as the
                    // garbler's batches; they may run past the span: the batch test
                    // checks their wires), one after another while the gates make them.
                    if K::WINDOW > 0 && !CHECKED && !EACH {
                        let first = index - 1;
                        let w = 2 * K::WINDOW;
                        if first + w <= gates.len()
                            && rows_end.offset_from(rows) as usize >= 2 * w
                            && gates.get_unchecked(first + w - 1).op == Op::And
                            && kernel.window_ready(gates.as_ptr().add(first), max_wire)
                        {
                            let done = kernel.evaluate_windows(
                                labels,
                                gates,
                                first,
                                max_wire,
                                rows,
                                rows_end.offset_from(rows) as usize,
                            );
                            rows = rows.add(2 * done);
                            index = first + done;
                            continue;
                        }
                    }
                    // Pairs only within the span and where the rows are there.
                    let next = if K::PAIRS && !EACH && index < end && left >= 4 {
                        Some(gates.get_unchecked(index))
                    } else {
                        None
                    };
                    match next {
                        Some(n) if n.op == Op::And && n.a != out && n.b != out => {
                            if CHECKED && !gate_wires_ok(n, num_wires) {
                                return Err(wire_error(index, n, num_wires));
                            }
                            kernel.evaluate_pair(
                                at(a),
                                at(b),
                                at(out),
                                at(n.a),
                                at(n.b),
                                at(n.out),
                                rows,
                            );
                            rows = rows.add(4);
                            index += 1;
                            // The next pairs straight away while the span's gates make
                            // them and their rows are there (as the garbler's batches): a
                            // level's ANDs are a run of pairs, and the gate dispatch cost
                            // a dozen instructions per pair. Checked spans go gate by gate.
                            while !CHECKED
                                && index + 2 <= end
                                && rows_end.offset_from(rows) as usize >= 4
                            {
                                let (g1, g2) =
                                    (gates.get_unchecked(index), gates.get_unchecked(index + 1));
                                if g1.op != Op::And
                                    || g2.op != Op::And
                                    || g2.a == g1.out
                                    || g2.b == g1.out
                                {
                                    break;
                                }
                                kernel.evaluate_pair(
                                    at(g1.a),
                                    at(g1.b),
                                    at(g1.out),
                                    at(g2.a),
                                    at(g2.b),
                                    at(g2.out),
                                    rows,
                                );
                                rows = rows.add(4);
                                index += 2;
                            }
                        }
                        _ => {
                            kernel.evaluate_and(at(a), at(b), rows, at(out));
                            rows = rows.add(2);
                        }
                    }
                } else {
                    // INV and Copy copy the label; Const's is the public 0.
                    let value = match op {
                        Op::Const => Block::ZERO,
                        _ => *labels.add(a as usize),
                    };
                    *labels.add(out as usize) = value;
                }
            }
        }
        *rows_at = rows;
        Ok(index)
    }
}

/// # Safety
/// As [`EvaluateRun::dispatch`]; the CPU has AES-NI, AVX2 and VAES.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,avx2,vaes")]
unsafe fn evaluate_ymm(hash: &TccrHash, run: EvaluateRun<'_>) -> Result<(), GarbleError> {
    // SAFETY: the caller checked the CPU, and this function has its features.
    unsafe {
        let keys = pgc_crypto::aes::wide::RoundKeys256::new(hash.permutation());
        let mut kernel = wide::EvaluateYmm::new(keys, run.tweaks.first());
        run.dispatch(&mut kernel)
    }
}

/// # Safety
/// As [`EvaluateRun::dispatch`]; the CPU has AES-NI, AVX2, AVX-512F, AVX-512BW, AVX-512CD
/// and VAES.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,avx2,avx512f,avx512bw,avx512cd,vaes")]
unsafe fn evaluate_zmm(hash: &TccrHash, run: EvaluateRun<'_>) -> Result<(), GarbleError> {
    // SAFETY: the caller checked the CPU, and this function has its features.
    unsafe {
        let aes = hash.permutation();
        let mut kernel = wide::EvaluateZmm::new(
            pgc_crypto::aes::wide::RoundKeys256::new(aes),
            pgc_crypto::aes::wide::RoundKeys512::new(aes),
            run.tweaks.first(),
        );
        run.dispatch(&mut kernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random gates over few wires (every gate a hazard for the next) or many.
    fn random_gates(prg: &mut Prg, num_wires: usize, count: usize) -> Vec<Gate> {
        random_gates_with(prg, num_wires, count, 5)
    }

    /// As [`random_gates`], with `ands_in_ten` of every 10 gates ANDs on average (9 makes
    /// long runs of ANDs, which the batch kernels take).
    fn random_gates_with(
        prg: &mut Prg,
        num_wires: usize,
        count: usize,
        ands_in_ten: u64,
    ) -> Vec<Gate> {
        let below = |prg: &mut Prg, n: usize| (prg.random_u64() % n as u64) as WireId;
        (0..count)
            .map(|_| {
                let (a, b, out) = (
                    below(prg, num_wires),
                    below(prg, num_wires),
                    below(prg, num_wires),
                );
                let kind = prg.random_u64() % 10;
                if kind < ands_in_ten {
                    return Gate::and(a, b, out);
                }
                match below(prg, 10) {
                    0..=5 => Gate::xor(a, b, out),
                    6..=8 => Gate::inv(a, out),
                    _ => Gate::constant(prg.random_bool(), out),
                }
            })
            .collect()
    }

    #[test]
    fn every_available_kernel_gives_the_same_tables_and_labels() {
        let garblers = [Kernel::Zmm, Kernel::Ymm, Kernel::Portable];
        let garblers: Vec<Kernel> = garblers.into_iter().filter(|k| k.is_available()).collect();
        let evaluators: Vec<Kernel> = [Kernel::Zmm, Kernel::Ymm, Kernel::Portable]
            .into_iter()
            .filter(|k| k.is_available())
            .collect();
        let mut prg = Prg::from_seed(Block(0xfa57));
        // AND-heavy lists over many wires give batches; over 40 or 200 wires some batch
        // candidates read an earlier AND's output (and must not be batched), and ANDs
        // overwrite inputs or outputs of earlier ones in a batch.
        for (num_wires, count, ands_in_ten) in [
            (3usize, 300usize, 5),
            (40, 500, 5),
            (5000, 6000, 5),
            (40, 3000, 10),
            (200, 3000, 10),
            (5000, 6000, 9),
            (100_000, 6000, 10),
        ] {
            let gates = random_gates_with(&mut prg, num_wires, count, ands_in_ten);
            let (delta, key) = (random_delta(&mut prg), prg.random_block());
            let labels: Vec<Block> = (0..num_wires).map(|_| prg.random_block()).collect();
            // Calls of 37 or 1000 gates: the AND counter (tweaks) carries across calls.
            let chunks: Vec<&[Gate]> = gates.chunks(if count < 1000 { 37 } else { 1000 }).collect();
            let mut results = Vec::new();
            for &kernel in &garblers {
                let mut garbler = Garbler::new(num_wires, delta, key);
                garbler.kernel = kernel;
                for (w, &l) in labels.iter().enumerate() {
                    garbler.set_zero_label(w as WireId, l);
                }
                let mut tables = Vec::new();
                for chunk in &chunks {
                    garbler.garble(chunk, &mut tables);
                }
                results.push((tables, garbler.zero_labels));
            }
            for (k, result) in results.iter().enumerate() {
                assert_eq!(result, &results[0], "{:?}, {num_wires} wires", garblers[k]);
            }
            let tables = &results[0].0;
            let mut evaluated = Vec::new();
            for &kernel in &evaluators {
                let mut evaluator = Evaluator::new(num_wires, key);
                evaluator.kernel = kernel;
                for (w, &l) in labels.iter().enumerate() {
                    evaluator.set_label(w as WireId, l);
                }
                let mut used = 0;
                for chunk in &chunks {
                    let n = 2 * and_count(chunk);
                    evaluator
                        .evaluate(chunk, &tables[used..used + n])
                        .expect("tables fit");
                    used += n;
                }
                evaluated.push(evaluator.labels);
            }
            for (k, labels) in evaluated.iter().enumerate() {
                assert_eq!(
                    labels, &evaluated[0],
                    "{:?}, {num_wires} wires",
                    evaluators[k]
                );
            }
        }
    }

    #[test]
    fn one_index_per_and_matches_the_counter_set_per_gate() {
        let kernels: Vec<Kernel> = [Kernel::Zmm, Kernel::Ymm, Kernel::Portable]
            .into_iter()
            .filter(|k| k.is_available())
            .collect();
        let mut prg = Prg::from_seed(Block(0x1d5));
        for (num_wires, count) in [(3usize, 200usize), (64, 700)] {
            let gates = random_gates(&mut prg, num_wires, count);
            let (delta, key) = (random_delta(&mut prg), prg.random_block());
            let labels: Vec<Block> = (0..num_wires).map(|_| prg.random_block()).collect();
            // Scattered, increasing AND indices.
            let mut next = 5u64;
            let indices: Vec<u64> = (0..and_count(&gates))
                .map(|_| {
                    next += 1 + prg.random_u64() % 9;
                    next
                })
                .collect();
            // Reference: one gate per call, the counter set before each AND.
            let mut garbler = Garbler::new(num_wires, delta, key);
            garbler.kernel = Kernel::Portable;
            for (w, &l) in labels.iter().enumerate() {
                garbler.set_zero_label(w as WireId, l);
            }
            let mut expected = Vec::new();
            let mut ands = indices.iter();
            for g in &gates {
                if g.op == Op::And {
                    garbler.set_and_index(*ands.next().unwrap());
                }
                garbler.garble(std::slice::from_ref(g), &mut expected);
            }
            let hash = TccrHash::new(key);
            for &kernel in &kernels {
                let mut zero = labels.clone();
                let mut tables = Vec::new();
                // SAFETY: `zero` is this test's own array of `num_wires` blocks.
                let n = unsafe {
                    garble_gates(
                        kernel,
                        &hash,
                        delta,
                        zero.as_mut_ptr(),
                        num_wires,
                        AndTweaks::Each(&indices),
                        &gates,
                        &mut tables,
                    )
                };
                assert_eq!(n, indices.len());
                assert_eq!(tables, expected, "{kernel:?}");
                assert_eq!(zero, garbler.zero_labels, "{kernel:?}");
                // Evaluating from the zero-labels ends on the same labels as a reference
                // evaluator taking one gate at a time.
                let mut evaluator = Evaluator::new(num_wires, key);
                evaluator.kernel = Kernel::Portable;
                for (w, &l) in labels.iter().enumerate() {
                    evaluator.set_label(w as WireId, l);
                }
                let (mut ands, mut rows) = (indices.iter(), tables.chunks(2));
                for g in &gates {
                    let t: &[Block] = if g.op == Op::And {
                        evaluator.set_and_index(*ands.next().unwrap());
                        rows.next().unwrap()
                    } else {
                        &[]
                    };
                    evaluator.evaluate(std::slice::from_ref(g), t).unwrap();
                }
                let mut evaluated = labels.clone();
                // SAFETY: as above.
                unsafe {
                    evaluate_gates(
                        kernel,
                        &hash,
                        evaluated.as_mut_ptr(),
                        num_wires,
                        AndTweaks::Each(&indices),
                        &gates,
                        &tables,
                    )
                }
                .unwrap();
                assert_eq!(evaluated, evaluator.labels, "{kernel:?}");
            }
        }
    }

    #[test]
    fn paired_ands_respect_dependencies_between_the_two() {
        // Runs of ANDs (so the 512-bit evaluator pairs them) where the second AND reads
        // the first's output through `a` or `b`, writes the same wire, or overwrites an
        // input of the first.
        let gates = [
            Gate::and(0, 1, 2),
            Gate::and(2, 0, 3),
            Gate::and(1, 3, 4),
            Gate::and(0, 4, 5),
            Gate::and(0, 1, 5),
            Gate::and(2, 3, 5),
            Gate::and(5, 1, 0),
            Gate::and(0, 2, 1),
            Gate::and(3, 4, 6),
            Gate::and(5, 6, 7),
            // After an AND it depends on, a pair, then (in the gate loop's run of pairs)
            // one whose second AND reads the first's output through `b`.
            Gate::and(7, 1, 2),
            Gate::and(3, 4, 5),
            Gate::and(0, 1, 6),
            Gate::and(2, 6, 0),
        ];
        let mut prg = Prg::from_seed(Block(0x9a1e));
        let (delta, key) = (random_delta(&mut prg), prg.random_block());
        let mut garbler = Garbler::new(8, delta, key);
        let labels: Vec<Block> = (0..8).map(|_| prg.random_block()).collect();
        for (w, &l) in labels.iter().enumerate() {
            garbler.set_zero_label(w as WireId, l);
        }
        let mut tables = Vec::new();
        garbler.garble(&gates, &mut tables);
        for kernel in [Kernel::Zmm, Kernel::Ymm, Kernel::Portable] {
            if !kernel.is_available() {
                continue;
            }
            let mut evaluator = Evaluator::new(8, key);
            evaluator.kernel = kernel;
            for (w, &l) in labels.iter().enumerate() {
                evaluator.set_label(w as WireId, l);
            }
            evaluator.evaluate(&gates, &tables).expect("tables fit");
            // Every input label is a zero-label, so every wire ends on its zero-label.
            assert_eq!(evaluator.labels, garbler.zero_labels, "{kernel:?}");
        }
    }

    /// The batch test of the 512-bit garbler against its definition.
    #[test]
    fn evaluator_windows_respect_dependencies_and_shared_inputs() {
        // Windows of 8 ANDs (the 512-bit evaluator takes π of all their inputs first): in
        // each, gate k reads the output of an earlier gate j of the window through `a` or
        // `b` (no window there, or a shorter run after it), and around them windows that
        // read one wire many times, a wire twice in one AND, and overwrite their own inputs;
        // the first window starts 4 gates before the end of a 64-gate span (60 XORs first).
        let mut gates: Vec<Gate> = (0..60)
            .map(|k| Gate::xor(k % 32, (k + 5) % 32, 200 + k))
            .collect();
        let fresh = |k: u32| Gate::and(k % 64, (k * 7 + 3) % 64, 64 + k % 64);
        for k in 0..24 {
            gates.push(fresh(k));
        }
        for k in 1..8u32 {
            for j in 0..k {
                for through_b in [false, true] {
                    let base = 100 + 8 * k;
                    for g in 0..8u32 {
                        let mut gate = Gate::and((base + g) % 64, (base + 3 * g + 1) % 64, 128 + g);
                        if g == k {
                            if through_b {
                                gate.b = 128 + j;
                            } else {
                                gate.a = 128 + j;
                            }
                        }
                        gates.push(gate);
                    }
                }
            }
        }
        // Two windows in a row (each independent within), the second reading an output of
        // the first (gate j of the first, through `a` or `b` of gate k of the second): the
        // next window's first calls run before this one's outputs are written, so it must
        // not be taken with it.
        for (j, k) in [(0u32, 0u32), (7, 0), (0, 7), (3, 5), (7, 7)] {
            for through_b in [false, true] {
                for g in 0..8u32 {
                    gates.push(Gate::and(g, g + 8, 160 + g));
                }
                for g in 0..8u32 {
                    let mut gate = Gate::and(g + 16, g + 24, 170 + g);
                    if g == k {
                        if through_b {
                            gate.b = 160 + j;
                        } else {
                            gate.a = 160 + j;
                        }
                    }
                    gates.push(gate);
                }
            }
        }
        // Three windows in a row with no dependency between them (pipelined).
        for g in 0..24u32 {
            gates.push(Gate::and(g, (g + 11) % 32, 180 + g));
        }
        // One wire read by all 8 ANDs, one AND reading a wire twice, ANDs overwriting the
        // inputs of earlier ones in the window.
        for g in 0..8u32 {
            gates.push(Gate::and(5, 10 + g, 140 + g));
        }
        gates.push(Gate::and(7, 7, 150));
        for g in 1..8u32 {
            gates.push(Gate::and(20 + g, 30 + g, 19 + g));
        }
        let num_wires = 260;
        let mut prg = Prg::from_seed(Block(0x3e1d));
        let (delta, key) = (random_delta(&mut prg), prg.random_block());
        let mut garbler = Garbler::new(num_wires, delta, key);
        let labels: Vec<Block> = (0..num_wires).map(|_| prg.random_block()).collect();
        for (w, &l) in labels.iter().enumerate() {
            garbler.set_zero_label(w as WireId, l);
        }
        let mut tables = Vec::new();
        garbler.garble(&gates, &mut tables);
        for kernel in [Kernel::Zmm, Kernel::Ymm, Kernel::Portable] {
            if !kernel.is_available() {
                continue;
            }
            let mut evaluator = Evaluator::new(num_wires, key);
            evaluator.kernel = kernel;
            for (w, &l) in labels.iter().enumerate() {
                evaluator.set_label(w as WireId, l);
            }
            evaluator.evaluate(&gates, &tables).expect("tables fit");
            // Every input label is a zero-label, so every wire ends on its zero-label.
            assert_eq!(evaluator.labels, garbler.zero_labels, "{kernel:?}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn cross_window_test_matches_its_definition() {
        if !Kernel::Zmm.is_available() {
            return;
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512cd")]
        unsafe fn vector(later: &[Gate], earlier: &[Gate]) -> bool {
            // SAFETY: the CPU has the features (checked by the caller); 8 gates each.
            unsafe { wide::reads_none_of(later.as_ptr(), earlier.as_ptr()) }
        }
        let reference = |later: &[Gate], earlier: &[Gate]| {
            later
                .iter()
                .all(|g| earlier.iter().all(|e| e.out != g.a && e.out != g.b))
        };
        let mut prg = Prg::from_seed(Block(0xc205));
        let (mut yes, mut no) = (0, 0);
        for num_wires in [16usize, 64, 256, 1000] {
            let gates = random_gates_with(&mut prg, num_wires, 20_000, 10);
            for pair in gates.windows(16) {
                let (earlier, later) = pair.split_at(8);
                let expected = reference(later, earlier);
                // SAFETY: Kernel::Zmm's features include AVX-512F, AVX-512BW and AVX-512CD.
                assert_eq!(unsafe { vector(later, earlier) }, expected, "{pair:?}");
                if expected { yes += 1 } else { no += 1 }
            }
        }
        assert!(yes > 1000 && no > 1000, "{yes} independent, {no} dependent");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn batch_test_matches_its_definition() {
        if !Kernel::Zmm.is_available() {
            return;
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512cd")]
        unsafe fn vector(gates: &[Gate], max_wire: u32) -> bool {
            // SAFETY: the CPU has the features (checked by the caller); 8 gates.
            unsafe { wide::independent_ands::<{ wide::GARBLE_BATCH }>(gates.as_ptr(), max_wire) }
        }
        let reference = |gates: &[Gate], max_wire: u32| {
            gates.iter().all(|g| g.op == Op::And)
                && gates.iter().all(|g| g.a.max(g.b).max(g.out) <= max_wire)
                && gates.iter().enumerate().all(|(l, g)| {
                    gates[..l]
                        .iter()
                        .all(|earlier| earlier.out != g.a && earlier.out != g.b)
                })
        };
        let mut prg = Prg::from_seed(Block(0xba7c));
        let (mut yes, mut no) = (0, 0);
        for num_wires in [4usize, 16, 64, 1000] {
            let gates = random_gates_with(&mut prg, num_wires, 20_000, 10);
            let mixed = random_gates_with(&mut prg, num_wires, 2_000, 9);
            for window in gates.windows(wide::GARBLE_BATCH).chain(mixed.windows(8)) {
                // Mostly a bound every wire meets; now and then one some wire exceeds.
                let max_wire = match prg.random_u64() % 8 {
                    0 => (prg.random_u64() % num_wires as u64) as u32,
                    1 => u32::MAX,
                    _ => num_wires as u32 - 1,
                };
                let expected = reference(window, max_wire);
                // SAFETY: Kernel::Zmm's features include AVX-512F, AVX-512BW and AVX-512CD.
                assert_eq!(unsafe { vector(window, max_wire) }, expected, "{window:?}");
                if expected { yes += 1 } else { no += 1 }
            }
        }
        // Both answers occur often enough for the comparison to mean something.
        assert!(yes > 1000 && no > 1000, "{yes} batches, {no} refusals");
    }

    /// The garbler's vector bounds check of a span against its definition.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn span_bounds_check_matches_its_definition() {
        if !Kernel::Zmm.is_available() {
            return;
        }
        #[target_feature(enable = "avx512f")]
        unsafe fn vector(gates: &[Gate], max_wire: u32) -> bool {
            // SAFETY: the CPU has AVX-512F (checked by the caller).
            unsafe { wide::fields_at_most(gates, max_wire) }
        }
        let mut prg = Prg::from_seed(Block(0xb0d5));
        let (mut yes, mut no) = (0, 0);
        for len in (0..=70).chain([255, 256, 257]) {
            for _ in 0..40 {
                let mut gates = random_gates(&mut prg, 1000, len);
                // A large field now and then, in any of a, b, out of any gate.
                if len > 0 && prg.random_bool() {
                    let g = &mut gates[(prg.random_u64() % len as u64) as usize];
                    let big = u32::MAX - (prg.random_u64() % 3) as u32;
                    match prg.random_u64() % 3 {
                        0 => g.a = big,
                        1 => g.b = big,
                        _ => g.out = big,
                    }
                }
                let max_wire = match prg.random_u64() % 3 {
                    0 => (prg.random_u64() % 1000) as u32,
                    1 => u32::MAX,
                    _ => 999,
                };
                let expected = gates.iter().all(|g| g.a.max(g.b).max(g.out) <= max_wire);
                // SAFETY: Kernel::Zmm's features include AVX-512F.
                assert_eq!(unsafe { vector(&gates, max_wire) }, expected, "{len} gates");
                if expected { yes += 1 } else { no += 1 }
            }
        }
        assert!(yes > 300 && no > 300, "{yes} in range, {no} not");
    }

    /// `gates` with field `field` (0: a, 1: b, 2: out) of gate `at` set to `wire`, or `None`
    /// where that field is not a wire (a Const's `a` is its bit; only AND and XOR have a `b`).
    fn with_wire_field(gates: &[Gate], at: usize, field: usize, wire: WireId) -> Option<Vec<Gate>> {
        let op = gates[at].op;
        let is_wire = match field {
            0 => op != Op::Const,
            1 => matches!(op, Op::And | Op::Xor),
            _ => true,
        };
        is_wire.then(|| {
            let mut bad = gates.to_vec();
            let g = &mut bad[at];
            *[&mut g.a, &mut g.b, &mut g.out][field] = wire;
            bad
        })
    }

    /// A wire out of range anywhere (first gate of a span, inside a batch, at a span's
    /// end, past the last full span) panics in every kernel, naming its gate.
    #[test]
    fn a_bad_wire_anywhere_panics_in_the_garbler() {
        let mut prg = Prg::from_seed(Block(0xbadd));
        let key = prg.random_block();
        let delta = random_delta(&mut prg);
        // A run of ANDs (batches where independent) on 4096 wires, then mixed gates.
        let mut gates = random_gates_with(&mut prg, 4096, 200, 10);
        gates.extend(random_gates_with(&mut prg, 4096, 100, 5));
        for kernel in [Kernel::Zmm, Kernel::Ymm, Kernel::Portable] {
            if !kernel.is_available() {
                continue;
            }
            for bad_at in [0usize, 3, 7, 63, 64, 65, 130, 299] {
                for field in 0..3 {
                    let Some(bad) = with_wire_field(&gates, bad_at, field, 4096) else {
                        continue;
                    };
                    let run = std::panic::catch_unwind(|| {
                        let mut garbler = Garbler::new(4096, delta, key);
                        garbler.kernel = kernel;
                        garbler.garble(&bad, &mut Vec::new());
                    });
                    let err = run.expect_err("a bad wire must panic");
                    let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
                    assert!(
                        text.contains(&format!("gate {bad_at}")) && text.contains("4096"),
                        "{kernel:?} at {bad_at}: {text}"
                    );
                }
            }
        }
    }

    /// Tables appended to a vector already holding rows, with little or no spare capacity
    /// (so it grows during the call), are the same as into a fresh one with room.
    #[test]
    fn garbler_tables_grow_as_ands_come() {
        let mut prg = Prg::from_seed(Block(0x960));
        let key = prg.random_block();
        let delta = random_delta(&mut prg);
        let gates = random_gates_with(&mut prg, 2048, 5000, 9);
        for kernel in [Kernel::Zmm, Kernel::Ymm, Kernel::Portable] {
            if !kernel.is_available() {
                continue;
            }
            let garble_into = |tables: &mut Vec<Block>| {
                let mut garbler = Garbler::new(2048, delta, key);
                garbler.kernel = kernel;
                garbler.garble(&gates[..2500], tables);
                garbler.garble(&gates[2500..], tables);
                garbler.zero_labels
            };
            let mut roomy = Vec::with_capacity(3 + 2 * gates.len());
            roomy.extend([Block::ONES; 3]);
            let labels = garble_into(&mut roomy);
            let mut tight = vec![Block::ONES; 3];
            tight.shrink_to_fit();
            assert_eq!(garble_into(&mut tight), labels, "{kernel:?}");
            assert_eq!(tight, roomy, "{kernel:?}");
            assert_eq!(tight.len(), 3 + 2 * and_count(&gates), "{kernel:?}");
        }
    }

    /// In the evaluator, a wire out of range anywhere (first gate of a span, in a pair, at
    /// a span's end, after the last full span) is an error naming its gate, and so are
    /// tables that run out at any AND or are left over, in every kernel.
    #[test]
    fn bad_wires_and_table_counts_are_errors_anywhere_in_the_evaluator() {
        let mut prg = Prg::from_seed(Block(0xe7a1));
        let key = prg.random_block();
        let mut gates = random_gates_with(&mut prg, 4096, 200, 10);
        gates.extend(random_gates_with(&mut prg, 4096, 100, 5));
        let mut garbler = Garbler::new(4096, random_delta(&mut prg), key);
        let mut tables = Vec::new();
        garbler.garble(&gates, &mut tables);
        let ands = and_count(&gates);
        for kernel in [Kernel::Zmm, Kernel::Ymm, Kernel::Portable] {
            if !kernel.is_available() {
                continue;
            }
            let evaluate = |gates: &[Gate], tables: &[Block]| {
                let mut evaluator = Evaluator::new(4096, key);
                evaluator.kernel = kernel;
                evaluator.evaluate(gates, tables)
            };
            assert_eq!(evaluate(&gates, &tables), Ok(()), "{kernel:?}");
            for bad_at in [0usize, 1, 2, 63, 64, 65, 127, 128, 199, 299] {
                for field in 0..3 {
                    let Some(bad) = with_wire_field(&gates, bad_at, field, 5000) else {
                        continue;
                    };
                    match evaluate(&bad, &tables) {
                        Err(GarbleError::WireOutOfRange {
                            gate_index, wire, ..
                        }) => assert_eq!((gate_index, wire), (bad_at, 5000), "{kernel:?}"),
                        other => panic!("{kernel:?} at {bad_at}: {other:?}"),
                    }
                }
            }
            for got in [
                0,
                1,
                2,
                2 * ands - 4,
                2 * ands - 1,
                2 * ands + 1,
                2 * ands + 2,
            ] {
                let mut wrong = tables.clone();
                wrong.resize(got, Block::ONES);
                assert_eq!(
                    evaluate(&gates, &wrong),
                    Err(GarbleError::TableCountMismatch {
                        and_gates: ands,
                        expected: 2 * ands,
                        got
                    }),
                    "{kernel:?}"
                );
            }
        }
    }

    /// An AND index list of the wrong length panics (the caller's bug), whichever way.
    #[test]
    fn wrong_and_index_count_panics_in_the_garbler() {
        let mut prg = Prg::from_seed(Block(0x1d));
        let gates = random_gates_with(&mut prg, 64, 100, 5);
        let ands = and_count(&gates);
        for count in [0, ands - 1, ands + 1] {
            let indices: Vec<u64> = (0..count as u64).collect();
            let run = std::panic::catch_unwind(|| {
                let mut labels = vec![Block::ZERO; 64];
                let mut tables = Vec::new();
                // SAFETY: the labels are this closure's own 64 blocks, the gates' wires.
                unsafe {
                    garble_gates(
                        Kernel::best(),
                        &TccrHash::new(Block(5)),
                        Block(1),
                        labels.as_mut_ptr(),
                        64,
                        AndTweaks::Each(&indices),
                        &gates,
                        &mut tables,
                    )
                }
            });
            assert!(run.is_err(), "{count} indices for {ands} ANDs");
        }
    }
}
