//! Half-gates garbling (Zahur, Rosulek, Evans, EUROCRYPT 2015) with free XOR and
//! point-and-permute, sans IO: the [`Garbler`] turns gates into garbled tables (2 blocks
//! per AND) and the [`Evaluator`] consumes them; moving tables and labels between the
//! parties is the protocol layer's job.
//!
//! # Conventions both parties share
//!
//! - Every wire has a *zero-label* W⁰ known to the garbler; the label of value v is
//!   W⁰ ⊕ v·Δ, where Δ (the garbler's secret) has lsb 1, so the lsb of a label is its
//!   value masked by the lsb of W⁰ (the point-and-permute bit; [`Garbler::decoding_bits`]).
//! - The hash is [`TccrHash`] under the public key [`GARBLE_HASH_KEY`]. The j-th AND gate
//!   overall (counted from 0 across all calls) uses tweak 2j for the garbler half-gate and
//!   2j + 1 for the evaluator half-gate, and its table is `[T_G, T_E]`:
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
//! Runs of AND gates are hashed in batches of up to [`AND_BATCH`] gates (4 hash blocks per
//! AND for the garbler, 2 for the evaluator) so that the wide AES kernels run on long
//! inputs. A gate's input labels are gathered when it is queued and its output is written
//! when the batch is flushed. XOR, INV, Copy and Const gates run in order as they come.
//! Every wire with a queued, unwritten output is marked; a gate that reads such a wire, or
//! a non-AND gate that writes one, flushes the batch first. So every read sees the value
//! the gate sequence defines and the last writer of a wire wins, whatever the order of the
//! caller's gates; circuits whose ANDs do not read each other within a batch never flush
//! early. Each call to [`Garbler::garble`] or [`Evaluator::evaluate`] ends with a flush, so
//! no state is pending between calls.

mod combine;

use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::{Block, Prg, TccrHash};

/// The public AES key of the garbling hash (distinct from the key any other layer uses, so
/// their tweak spaces never meet). ASCII "pgc half-gates\0\0".
pub const GARBLE_HASH_KEY: Block = Block(u128::from_le_bytes(*b"pgc half-gates\0\0"));

/// Most AND gates hashed in one batch.
pub const AND_BATCH: usize = 512;

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
}

/// A fresh global offset Δ with lsb 1 (the point-and-permute convention).
pub fn random_delta(prg: &mut Prg) -> Block {
    Block(prg.random_block().0 | 1)
}

/// Number of AND gates in `gates` (2 table blocks each).
pub fn and_count(gates: &[Gate]) -> usize {
    gates.iter().filter(|g| g.op == Op::And).count()
}

/// The AND gates queued for hashing, and which wires they will write.
struct AndQueue {
    /// Input labels of each queued AND, (A, B) in turn.
    pairs: Vec<Block>,
    outs: Vec<WireId>,
    len: usize,
    /// `marks[w] == generation` iff a queued AND writes wire w; advancing the generation
    /// clears every mark at once.
    marks: Vec<u32>,
    generation: u32,
}

impl AndQueue {
    fn new(num_wires: usize) -> AndQueue {
        AndQueue {
            pairs: vec![Block::ZERO; 2 * AND_BATCH],
            outs: vec![0; AND_BATCH],
            len: 0,
            marks: vec![0; num_wires],
            generation: 1,
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        if self.generation == u32::MAX {
            self.marks.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
    }
}

/// What the gate loops keep in registers about the queue: its generation and the range
/// `low..=low + span` of the queued outputs, so that most checks are a subtraction and a
/// compare, with `marks` consulted only inside the range. (Kept out of `AndQueue`, whose
/// fields the compiler would load and store at every gate.)
#[derive(Clone, Copy)]
struct Pending {
    generation: u32,
    low: u32,
    high: u32,
    span: u32,
}

impl Pending {
    /// Nothing queued: `in_range` holds only for u32::MAX, which no valid wire reaches.
    #[inline(always)]
    fn empty(generation: u32) -> Pending {
        Pending {
            generation,
            low: u32::MAX,
            high: 0,
            span: 0,
        }
    }

    #[inline(always)]
    fn in_range(self, wire: WireId) -> bool {
        wire.wrapping_sub(self.low) <= self.span
    }

    #[inline(always)]
    fn is_pending(self, marks: &[u32], wire: WireId) -> bool {
        self.in_range(wire) && marks[wire as usize] == self.generation
    }

    /// Whether a gate touching these wires must flush first (inputs written by a queued
    /// AND, or an output a queued AND will overwrite).
    #[inline(always)]
    fn conflicts(self, marks: &[u32], w1: WireId, w2: WireId, w3: WireId) -> bool {
        (self.in_range(w1) | self.in_range(w2) | self.in_range(w3))
            && (self.is_pending(marks, w1)
                || self.is_pending(marks, w2)
                || self.is_pending(marks, w3))
    }

    #[inline(always)]
    fn note(&mut self, out: WireId) {
        self.low = self.low.min(out);
        self.high = self.high.max(out);
        self.span = self.high - self.low;
    }
}

/// Queues an AND (input labels `a`, `b`, output `out`) at position `len`.
#[inline(always)]
fn enqueue(
    queue: &mut AndQueue,
    pending: &mut Pending,
    len: usize,
    a: Block,
    b: Block,
    out: WireId,
) {
    queue.pairs[2 * len] = a;
    queue.pairs[2 * len + 1] = b;
    queue.outs[len] = out;
    queue.marks[out as usize] = pending.generation;
    pending.note(out);
}

/// The garbler: holds Δ and every wire's zero-label.
pub struct Garbler {
    zero_labels: Vec<Block>,
    delta: Block,
    hash: TccrHash,
    and_gates_done: u64,
    queue: AndQueue,
    /// H(A⁰), H(A¹), H(B⁰), H(B¹) of each queued AND.
    hashes: Vec<Block>,
}

impl Garbler {
    /// A garbler for `num_wires` wires (all zero-labels 0 until set). Panics if the lsb of
    /// `delta` is 0.
    pub fn new(num_wires: usize, delta: Block) -> Garbler {
        assert!(
            delta.lsb(),
            "the garbler's Δ must have lsb 1 (point-and-permute)"
        );
        Garbler {
            zero_labels: vec![Block::ZERO; num_wires],
            delta,
            hash: TccrHash::new(GARBLE_HASH_KEY),
            and_gates_done: 0,
            queue: AndQueue::new(num_wires),
            hashes: vec![Block::ZERO; 4 * AND_BATCH],
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

    /// Garbles `gates` in order; appends exactly 2 blocks per AND to `tables`.
    ///
    /// # Panics
    /// If a gate uses a wire at or above `num_wires` (a malformed circuit; the garbler's
    /// own input, so a bug rather than a peer's doing).
    pub fn garble(&mut self, gates: &[Gate], tables: &mut Vec<Block>) {
        let delta = self.delta;
        // Locals, so the loop keeps them in registers across gates.
        let labels = &mut self.zero_labels[..];
        let queue = &mut self.queue;
        let mut flush = |queue: &mut AndQueue, labels: &mut [Block]| {
            garbler_flush(
                &self.hash,
                delta,
                &mut self.and_gates_done,
                queue,
                &mut self.hashes,
                labels,
                tables,
            )
        };
        // The queue is empty between calls; `len` and `pending` live in registers.
        let mut len = 0;
        let mut pending = Pending::empty(queue.generation);
        macro_rules! flush_now {
            () => {{
                queue.len = len;
                flush(queue, labels);
                len = 0;
                pending = Pending::empty(queue.generation);
            }};
        }
        for g in gates {
            // XOR first, outside the `match`: it is the commonest gate, and a predictable
            // branch is cheaper than the jump table a `match` compiles to.
            if g.op == Op::Xor {
                if pending.conflicts(&queue.marks, g.a, g.b, g.out) {
                    flush_now!();
                }
                labels[g.out as usize] = labels[g.a as usize] ^ labels[g.b as usize];
                continue;
            }
            match g.op {
                Op::Xor => unreachable!("handled above"),
                Op::And => {
                    if pending.conflicts(&queue.marks, g.a, g.b, g.a) {
                        flush_now!();
                    }
                    let (a, b) = (labels[g.a as usize], labels[g.b as usize]);
                    enqueue(queue, &mut pending, len, a, b, g.out);
                    len += 1;
                    if len == AND_BATCH {
                        flush_now!();
                    }
                }
                Op::Inv | Op::Copy => {
                    if pending.conflicts(&queue.marks, g.a, g.out, g.out) {
                        flush_now!();
                    }
                    let flip = delta.select(g.op == Op::Inv);
                    labels[g.out as usize] = labels[g.a as usize] ^ flip;
                }
                Op::Const => {
                    if pending.conflicts(&queue.marks, g.out, g.out, g.out) {
                        flush_now!();
                    }
                    labels[g.out as usize] = delta.select(g.a != 0);
                }
            }
        }
        queue.len = len;
        flush(queue, labels);
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

/// Hashes the queued ANDs, appends their tables and writes their output zero-labels in
/// gate order.
#[inline(never)]
fn garbler_flush(
    hash: &TccrHash,
    delta: Block,
    and_gates_done: &mut u64,
    queue: &mut AndQueue,
    hashes: &mut [Block],
    labels: &mut [Block],
    tables: &mut Vec<Block>,
) {
    let n = queue.len;
    if n == 0 {
        return;
    }
    let hashes = &mut hashes[..4 * n];
    hash.tccr_batch_seq_pairs(&queue.pairs[..2 * n], delta, 2 * *and_gates_done, hashes);
    let start = tables.len();
    tables.reserve(2 * n);
    let rows = &mut tables.spare_capacity_mut()[..2 * n];
    combine::garble_ands(
        delta,
        &queue.pairs[..2 * n],
        hashes,
        &queue.outs[..n],
        rows,
        labels,
    );
    // SAFETY: `garble_ands` wrote all 2n reserved slots after `start` (2 rows for each of
    // the n queued ANDs).
    unsafe { tables.set_len(start + 2 * n) };
    *and_gates_done += n as u64;
    queue.clear();
}

/// The evaluator: holds one label per wire.
pub struct Evaluator {
    labels: Vec<Block>,
    hash: TccrHash,
    and_gates_done: u64,
    queue: AndQueue,
    /// H(A, 2j), H(B, 2j + 1) of each queued AND.
    hashes: Vec<Block>,
}

impl Evaluator {
    /// An evaluator for `num_wires` wires (all labels 0 until set).
    pub fn new(num_wires: usize) -> Evaluator {
        Evaluator {
            labels: vec![Block::ZERO; num_wires],
            hash: TccrHash::new(GARBLE_HASH_KEY),
            and_gates_done: 0,
            queue: AndQueue::new(num_wires),
            hashes: vec![Block::ZERO; 2 * AND_BATCH],
        }
    }

    pub fn set_label(&mut self, wire: WireId, label: Block) {
        self.labels[wire as usize] = label;
    }

    pub fn label(&self, wire: WireId) -> Block {
        self.labels[wire as usize]
    }

    /// Evaluates `gates` in order with their garbled `tables`, which must hold exactly 2
    /// blocks per AND in `gates`.
    ///
    /// Errors are found as evaluation goes (a separate pass would cost a tenth of the
    /// time): after an error the labels are unspecified and the evaluator must be dropped,
    /// as the protocol aborts anyway.
    pub fn evaluate(&mut self, gates: &[Gate], tables: &[Block]) -> Result<(), GarbleError> {
        let num_wires = self.labels.len();
        let labels = &mut self.labels[..];
        let queue = &mut self.queue;
        // Tables of the queued ANDs start at `first_table`; the next AND's at `next_table`.
        let mut first_table = 0;
        let mut next_table = 0;
        let mut flush = |queue: &mut AndQueue, labels: &mut [Block], first_table: usize| {
            evaluator_flush(
                &self.hash,
                &mut self.and_gates_done,
                queue,
                &mut self.hashes,
                labels,
                &tables[first_table..],
            )
        };
        // The queue is empty between calls; `len` and `pending` live in registers.
        let mut len = 0;
        let mut pending = Pending::empty(queue.generation);
        macro_rules! flush_now {
            () => {{
                queue.len = len;
                flush(queue, labels, first_table);
                len = 0;
                pending = Pending::empty(queue.generation);
            }};
        }
        macro_rules! fail {
            ($e:expr) => {{
                queue.len = len;
                queue.clear();
                return Err($e);
            }};
        }
        for (index, g) in gates.iter().enumerate() {
            let (a, b, out) = (g.a as usize, g.b as usize, g.out as usize);
            // Each arm checks the wires it uses: a bad gate is an error, not a panic.
            macro_rules! check_wires {
                ($($w:expr),+) => {
                    if 0 $(.max($w))+ >= num_wires {
                        fail!(wire_error(index, g, num_wires));
                    }
                };
            }
            // XOR first, as in `Garbler::garble`.
            if g.op == Op::Xor {
                check_wires!(a, b, out);
                if pending.conflicts(&queue.marks, g.a, g.b, g.out) {
                    flush_now!();
                }
                labels[out] = labels[a] ^ labels[b];
                continue;
            }
            match g.op {
                Op::Xor => unreachable!("handled above"),
                Op::And => {
                    check_wires!(a, b, out);
                    if next_table + 2 > tables.len() {
                        fail!(table_count_error(gates, tables));
                    }
                    if pending.conflicts(&queue.marks, g.a, g.b, g.a) {
                        flush_now!();
                    }
                    if len == 0 {
                        first_table = next_table;
                    }
                    next_table += 2;
                    enqueue(queue, &mut pending, len, labels[a], labels[b], g.out);
                    len += 1;
                    if len == AND_BATCH {
                        flush_now!();
                    }
                }
                Op::Inv | Op::Copy => {
                    check_wires!(a, out);
                    if pending.conflicts(&queue.marks, g.a, g.out, g.out) {
                        flush_now!();
                    }
                    labels[out] = labels[a];
                }
                Op::Const => {
                    check_wires!(out);
                    if pending.conflicts(&queue.marks, g.out, g.out, g.out) {
                        flush_now!();
                    }
                    labels[out] = Block::ZERO;
                }
            }
        }
        if next_table != tables.len() {
            fail!(table_count_error(gates, tables));
        }
        queue.len = len;
        flush(queue, labels, first_table);
        Ok(())
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

/// Hashes the queued ANDs, whose tables start `rows`, and writes their output labels in
/// gate order.
#[inline(never)]
fn evaluator_flush(
    hash: &TccrHash,
    and_gates_done: &mut u64,
    queue: &mut AndQueue,
    hashes: &mut [Block],
    labels: &mut [Block],
    rows: &[Block],
) {
    let n = queue.len;
    if n == 0 {
        return;
    }
    let hashes = &mut hashes[..2 * n];
    hash.tccr_batch_seq(&queue.pairs[..2 * n], 2 * *and_gates_done, hashes);
    combine::evaluate_ands(
        &queue.pairs[..2 * n],
        hashes,
        &rows[..2 * n],
        &queue.outs[..n],
        labels,
    );
    *and_gates_done += n as u64;
    queue.clear();
}

#[cold]
fn table_count_error(gates: &[Gate], tables: &[Block]) -> GarbleError {
    let and_gates = and_count(gates);
    GarbleError::TableCountMismatch {
        and_gates,
        expected: 2 * and_gates,
        got: tables.len(),
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
