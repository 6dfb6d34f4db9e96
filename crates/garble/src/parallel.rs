//! Multi-threaded garbling and evaluation of a [`ParallelCircuit`] (fine-grained and
//! coarse-grained parallelism, Buescher et al., USENIX Security 2015, §4.2–4.4), sans IO.
//!
//! # How it works
//!
//! A [`Plan`] cuts the circuit into *steps*. In a step each of T threads runs its own list
//! of work (gates or region instances), and all threads meet at a barrier before the next
//! step. Garbler thread t writes its tables, in its work order, to its own stream t; the
//! evaluator builds the same plan (a pure function of the circuit, T, the mode and τ), so
//! its thread t reads stream t in exactly that order. No table carries an index.
//!
//! Every AND uses the tweaks of its position in the *flat order* (phases in order,
//! instances in order, as [`ParallelCircuit::flatten`] lists the gates), so the tables of
//! an AND are the same for every thread count and mode, and equal to what the sequential
//! [`Garbler`](crate::Garbler) produces on the flattened circuit; only their distribution
//! over the streams differs ([`Plan::stream_and_indices`]).
//!
//! Modes:
//! - [`Mode::None`]: one step, all work on thread 0 in flat order (the sequential stream).
//! - [`Mode::Fgp`]: the flattened circuit is cut into *levels* of mutually independent gates;
//!   a level with at least 2τ ANDs (AND levels) or 2·16τ linear gates (linear levels) is
//!   split among up to T threads, at least τ ANDs (16τ linear gates) each; runs of narrower
//!   levels are merged into one serial step on thread 0.
//! - [`Mode::Cgp`]: the instances of each region are split among the threads in contiguous
//!   runs of about equal weight (ANDs plus linear gates / 16), at least τ ANDs' worth each;
//!   sequential phases run serially.
//! - [`Mode::Auto`]: CGP for regions and FGP inside each sequential phase.
//!
//! Levels: every gate gets a level `(D, s)`, ordered lexicographically. An AND gets
//! `(1 + max D of its inputs, 0)`; a linear gate (XOR, INV, copy, constant) gets `(D, s + 1)`
//! where `(D, s)` is the largest level among its inputs (inputs and wires set before the
//! part are at `(0, 0)`). Every gate's level is strictly above its inputs' levels, so the
//! gates of one level never read each other's outputs, and in single-assignment form they
//! write distinct wires: a level runs in any order on any threads. AND levels hold only
//! ANDs and linear levels only linear gates, so ANDs and linear gates are balanced
//! separately (§4.3). Unlike depth counting every gate, all ANDs of AND depth D share one
//! level, so there are as few AND steps as the AND depth allows, each as wide as possible;
//! the linear gates between them (cheap, free XOR) form short sub-levels, usually merged
//! into serial steps.
//!
//! # Claimed instances
//!
//! A plan made by [`Plan::claimed`] does not fix which thread runs which instance of a
//! parallel region: the region's instances are cut into *chunks* (contiguous runs of about
//! equal weight, [`CHUNKS_PER_THREAD`] per thread, each at least τ ANDs' worth), and each
//! garbler thread of the step takes the next chunk from a shared counter until none is
//! left. Cores that run faster (or start earlier) take more, so a step ends when the work
//! does rather than when the slowest core's fixed share does: on the 16-core machine the
//! slowest of T equal shares took 1.15–1.33× the mean (BENCHMARKS.md, "Where a CGP run's
//! wall time goes"). This is the dynamic loop scheduling of OpenMP (`schedule(dynamic)`)
//! applied to the instances of Buescher et al.'s coarse-grained parallelism (§4.4).
//!
//! The evaluator cannot know the garbler's claims, so in a claimed step stream t carries,
//! for each chunk garbler thread t took, a header block naming the chunk followed by its
//! tables, and one end block after the last. Evaluator thread t evaluates the chunks its
//! stream names, in that order. Before it evaluates a chunk it marks the chunk taken: a
//! chunk named twice (on any streams) is refused before its instances run, so no two
//! threads ever write the same wires, and when the last thread of the step reads its end
//! block, a chunk no stream named is refused too. Both errors name the region. Which
//! thread garbled which chunk tells the evaluator only how fast the garbler's cores ran:
//! the tables, their tweaks and every label are the same as under a fixed split.
//!
//! # Streams and flushing
//!
//! A garbler thread batches its tables into puts of about 64 KiB, and at the end of every
//! step in which it produced tables it puts the rest and calls [`TableSink::flush`]. The
//! flush per step is what keeps a bounded transport from deadlocking: evaluator thread t
//! cannot pass step s's barrier before it has read stream t's tables of step s, and with
//! backpressure a garbler thread blocked in `put` on another stream would otherwise stall
//! the garbler barrier while those tables sat in its buffer.
//!
//! # Threads and errors
//!
//! T threads (the caller's thread is thread 0, the others taken from a pool of workers
//! kept between runs, `crate::pool`) run all steps with a barrier between them; threads
//! that have no work in any step are not used, and a thread leaves the barrier after its
//! last step with work (CGP's workers after their region, while thread 0 runs a serial
//! tail). A thread whose sink or source fails (or that panics) records the error and the
//! step, and still goes to the barrier; after barrier s every thread checks for a failure
//! in a step up to s, so all stop after the same barrier and none waits forever. The first
//! error is returned (a panic is resumed on the caller's thread).
//!
//! Labels of global wires (of the flattened circuit in FGP mode) live in one array shared
//! by all threads, each step's threads writing disjoint wires (see the safety comments);
//! the wires inside a region instance live in a per-thread scratch array, through the
//! plan's copy of each template with its wires renamed to reusable slots (`Slotted`), so
//! that array holds the instance's live values only.

use std::any::Any;
use std::convert::Infallible;
use std::mem::MaybeUninit;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use pgc_circuit::{Gate, Op, ParallelCircuit, Phase, Template, WireId};
use pgc_crypto::{Block, Prg, TccrHash};

use crate::{AndTweaks, GarbleError, Kernel, evaluate_gates, garble_gates, random_delta};

/// How a [`Plan`] parallelizes (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Everything on thread 0, in flat order.
    None,
    /// Fine-grained: levels of the flattened circuit split among threads.
    Fgp,
    /// Coarse-grained: region instances split among threads.
    Cgp,
    /// CGP for regions, FGP inside sequential phases.
    Auto,
}

/// A default τ (minimum ANDs per thread for a split): a barrier of parked threads costs
/// microseconds, a garbled AND tens of nanoseconds. Measure it per machine (`garble_offline`
/// over FGP widths, paper Fig. 5).
pub const DEFAULT_TAU: usize = 128;

/// Linear gates (free XOR: a few loads and stores) counted as one AND for balancing and τ.
const LINEAR_PER_AND: usize = 16;
/// The most ANDs of one work piece: the evaluator reads a piece's tables at once
/// (128 KiB).
const PIECE_ANDS: usize = 4096;
/// A garbler thread hands its tables to its sink once it has this many blocks (64 KiB).
const PUT_BLOCKS: usize = 4096;
/// Runs of consecutive gates at least this long are run in place rather than copied.
const MIN_RUN: usize = 32;
/// Chunks per thread of a claimed region (see "Claimed instances" in the module doc): more
/// even out faster and slower cores more finely; each costs one header block and one
/// atomic increment.
pub const CHUNKS_PER_THREAD: usize = 16;
/// The high 64 bits of a chunk header or end block ("pgc-chnk").
const CHUNK_TAG: u64 = u64::from_be_bytes(*b"pgc-chnk");
/// The low 64 bits of the end block of a claimed step.
const CHUNK_END: u64 = u64::MAX;

/// The header block announcing chunk `chunk` of a claimed region.
fn chunk_header(chunk: usize) -> Block {
    Block::new(((CHUNK_TAG as u128) << 64) | chunk as u128)
}

/// The block that ends a thread's chunks in a claimed step.
fn chunk_end() -> Block {
    Block::new(((CHUNK_TAG as u128) << 64) | CHUNK_END as u128)
}

/// What a block read where a chunk header belongs says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkMark {
    Chunk(u64),
    End,
    /// Not a header at all (the streams are out of step).
    Garbage,
}

fn chunk_mark(block: Block) -> ChunkMark {
    let bytes = block.to_bytes();
    let v = u128::from_le_bytes(bytes);
    if (v >> 64) as u64 != CHUNK_TAG {
        return ChunkMark::Garbage;
    }
    match v as u64 {
        CHUNK_END => ChunkMark::End,
        c => ChunkMark::Chunk(c),
    }
}

/// Where the gates of a [`Work::Gates`] item are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    /// A sequential phase of the circuit.
    Phase(usize),
    /// The plan's flattened circuit (FGP mode).
    Flat,
    /// The plan's pool of copied gates.
    Pool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// Gates `start..end` of `src`; their ANDs are consecutive in flat order, the first
    /// one the `first_and`-th.
    Gates {
        src: Src,
        start: usize,
        end: usize,
        first_and: u64,
        ands: usize,
    },
    /// Gates `start..end` of the plan's pool; AND k of them is the
    /// `and_indices[first_index + k]`-th in flat order.
    Scattered {
        start: usize,
        end: usize,
        first_index: usize,
        ands: usize,
    },
    /// Instance `instance` of the region at phase `phase`, whose first AND is the
    /// `first_and`-th.
    Instance {
        phase: usize,
        instance: usize,
        first_and: u64,
    },
    /// Chunks of the plan's claimed region `region`, taken one by one as the thread goes
    /// (see "Claimed instances" in the module doc).
    Claim { region: usize },
}

/// A parallel region whose instances the threads claim chunk by chunk.
#[derive(Clone, Debug)]
struct ClaimedRegion {
    phase: usize,
    /// Chunk c is instances `bounds[c]..bounds[c + 1]`.
    bounds: Vec<usize>,
    /// Threads 0..threads take part (each has one [`Work::Claim`] in the step).
    threads: usize,
}

impl ClaimedRegion {
    fn chunks(&self) -> usize {
        self.bounds.len() - 1
    }
}

/// Gate ranges of a template with at most [`PIECE_ANDS`] ANDs each.
#[derive(Clone, Debug)]
struct Pieces {
    /// Gate bounds: piece k is gates `bounds[k]..bounds[k + 1]`.
    bounds: Vec<usize>,
    /// ANDs before piece k (one more entry: the template's total).
    ands_before: Vec<u64>,
}

impl Pieces {
    fn of(template: &Template) -> Pieces {
        let mut bounds = vec![0];
        let mut ands_before = vec![0];
        let mut ands = 0u64;
        let mut in_piece = 0;
        for (k, g) in template.gates.iter().enumerate() {
            if g.op == Op::And {
                if in_piece == PIECE_ANDS {
                    bounds.push(k);
                    ands_before.push(ands);
                    in_piece = 0;
                }
                in_piece += 1;
                ands += 1;
            }
        }
        bounds.push(template.gates.len());
        ands_before.push(ands);
        Pieces {
            bounds,
            ands_before,
        }
    }

    fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The template's ANDs.
    fn ands(&self) -> u64 {
        *self.ands_before.last().expect("one entry at least")
    }
}

/// A template with its wires renamed to reusable slots, as instances run it: a thread's
/// scratch array then holds the values live at once instead of every wire of the template
/// (MVMul's row: 226,488 wires, 3.6 MB, against a few thousand live ones), so it stays in
/// the core's caches and costs nothing to set up. Gate k still is the template's gate k
/// (same op, same order, so the same ANDs and tweaks: the tables do not change); inner
/// input k starts in slot k, and a slot is freed after its value's last reader (a gate
/// reads its inputs before it writes its output, so the very gate that last reads a value
/// may take its slot). Outputs keep their slots to the end.
#[derive(Clone, Debug)]
struct Slotted {
    gates: Vec<Gate>,
    outputs: Vec<WireId>,
    slots: usize,
}

impl Slotted {
    fn of(template: &Template) -> Slotted {
        const NEVER: u32 = u32::MAX;
        const KEEP: u32 = u32::MAX - 1;
        let n_in = template.num_inputs as usize;
        let mut last = vec![NEVER; template.num_wires() as usize];
        for (k, g) in template.gates.iter().enumerate() {
            for &w in g.inputs() {
                last[w as usize] = k as u32;
            }
        }
        for &w in &template.outputs {
            last[w as usize] = KEEP;
        }
        let mut slot = vec![u32::MAX; last.len()];
        for (w, s) in slot.iter_mut().enumerate().take(n_in) {
            *s = w as u32;
        }
        // Free slots, the most recently freed on top (still in cache).
        let mut free: Vec<u32> = (0..n_in as u32)
            .rev()
            .filter(|&w| last[w as usize] == NEVER)
            .collect();
        let mut next = n_in as u32;
        let mut gates = Vec::with_capacity(template.gates.len());
        for (k, g) in template.gates.iter().enumerate() {
            let mut r = *g;
            match g.op {
                Op::And | Op::Xor => {
                    r.a = slot[g.a as usize];
                    r.b = slot[g.b as usize];
                }
                Op::Inv | Op::Copy => r.a = slot[g.a as usize],
                Op::Const => {}
            }
            for &w in g.inputs() {
                // Freed once, even where the gate reads it twice.
                if last[w as usize] == k as u32 {
                    last[w as usize] = NEVER - 2;
                    free.push(slot[w as usize]);
                }
            }
            let out = free.pop().unwrap_or_else(|| {
                next += 1;
                next - 1
            });
            slot[g.out as usize] = out;
            r.out = out;
            if last[g.out as usize] == NEVER {
                free.push(out);
            }
            gates.push(r);
        }
        let outputs = template.outputs.iter().map(|&w| slot[w as usize]).collect();
        Slotted {
            gates,
            outputs,
            slots: next as usize,
        }
    }
}

/// What the plan knows of each phase, to check that it is run on the circuit it was made
/// for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PhaseShape {
    Sequential { gates: usize },
    Region { templates: Vec<u32> },
}

/// Figures about a plan, for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanStats {
    /// Steps (barriers between them: steps − 1).
    pub steps: usize,
    /// Steps where more than one thread works.
    pub parallel_steps: usize,
    /// ANDs run in serial steps (on thread 0).
    pub serial_ands: u64,
    /// ANDs run in parallel steps.
    pub parallel_ands: u64,
    /// FGP levels (over all sequential parts planned with FGP).
    pub levels: usize,
    /// FGP levels split among threads.
    pub split_levels: usize,
    /// Threads that have work in some step (the others are not started).
    pub active_threads: usize,
}

/// The schedule of a parallel garbling or evaluation: a pure function of the circuit, the
/// thread count, the mode and τ, so that both parties build the same one.
#[derive(Clone, Debug)]
pub struct Plan {
    threads: usize,
    mode: Mode,
    tau: usize,
    /// Size of the shared label array: global wires, or flat wires in FGP mode.
    label_wires: usize,
    num_input_wires: usize,
    /// The flattened circuit's gates (FGP mode only), their wires renamed to reusable slots
    /// (see [`Plan::reuse_slots`]).
    flat: Vec<Gate>,
    /// Wires of the flattened circuit (FGP mode only; `label_wires` then counts slots).
    flat_wires: usize,
    /// FGP mode: the slot of each output wire of the layout.
    output_slots: Vec<WireId>,
    /// Copies of gates that run out of order (pieces of FGP levels).
    pool: Vec<Gate>,
    and_indices: Vec<u64>,
    work: Vec<Work>,
    /// Step s, thread t: work `bounds[s * (threads + 1) + t]..[.. + t + 1]`.
    bounds: Vec<usize>,
    steps: usize,
    /// Per phase: for a region whose instances run on several threads at once, their
    /// wires (checked when the plan was made).
    region_wires: Vec<Option<RegionWires>>,
    /// The regions whose instances are claimed as the threads go ([`Plan::claimed`]).
    claimed: Vec<ClaimedRegion>,
    /// Chunk header and end blocks the streams carry besides the tables, in all.
    header_blocks: u64,
    phase_and_base: Vec<u64>,
    instance_and_base: Vec<Vec<u64>>,
    pieces: Vec<Pieces>,
    /// The templates renamed to slots, as instances run them.
    slotted: Vec<Slotted>,
    scratch_wires: usize,
    shape: Vec<PhaseShape>,
    and_gates: u64,
    stats: PlanStats,
}

/// A step's gates for slot planning: whether it runs in parallel, and its gate ranges in
/// execution order as (in the pool?, start, end).
type StepGates = (bool, Vec<(bool, usize, usize)>);

/// Collects the steps while the plan is built.
struct Builder {
    threads: usize,
    /// Per step: whether it is serial (open for more serial work), and each thread's work.
    steps: Vec<(bool, Vec<Vec<Work>>)>,
    pool: Vec<Gate>,
    and_indices: Vec<u64>,
    stats: PlanStats,
}

impl Builder {
    /// The work list of the current serial step (a new one after a parallel step).
    fn serial(&mut self) -> &mut Vec<Work> {
        if !matches!(self.steps.last(), Some((true, _))) {
            self.steps.push((true, vec![Vec::new(); self.threads]));
        }
        let (_, per_thread) = self.steps.last_mut().expect("just pushed");
        &mut per_thread[0]
    }

    /// A step with each thread's work (serial if only one thread has any).
    fn parallel(&mut self, per_thread: Vec<Vec<Work>>) {
        let busy = per_thread.iter().filter(|w| !w.is_empty()).count();
        if busy <= 1 {
            for works in per_thread {
                self.serial().extend(works);
            }
        } else {
            self.steps.push((false, per_thread));
        }
    }

    /// Work items for gates `range` of `src` (already in flat order), cut into pieces of at
    /// most [`PIECE_ANDS`] ANDs.
    fn range(
        out: &mut Vec<Work>,
        gates: &[Gate],
        src: Src,
        range: std::ops::Range<usize>,
        first_and: u64,
    ) {
        let mut start = range.start;
        let mut piece_first = first_and;
        let mut ands = 0;
        for p in range.clone() {
            if gates[p].op == Op::And {
                if ands == PIECE_ANDS {
                    out.push(Work::Gates {
                        src,
                        start,
                        end: p,
                        first_and: piece_first,
                        ands,
                    });
                    start = p;
                    piece_first += ands as u64;
                    ands = 0;
                }
                ands += 1;
            }
        }
        if range.end > start {
            out.push(Work::Gates {
                src,
                start,
                end: range.end,
                first_and: piece_first,
                ands,
            });
        }
    }

    /// Work items for the gates at `positions` (ascending) of a part, in that order: long
    /// runs of consecutive gates as they are, the rest copied to the pool with one AND
    /// index each. `ands_before[p]` counts the part's ANDs before gate `p`. In a parallel
    /// step (`shared`) the runs of a circuit phase are copied to the pool too, so that what
    /// threads run concurrently is the plan's own data, whose levels it checked.
    #[allow(clippy::too_many_arguments)]
    fn positions(
        &mut self,
        out: &mut Vec<Work>,
        gates: &[Gate],
        src: Src,
        ands_before: &[u64],
        first_and: u64,
        positions: &[u32],
        shared: bool,
    ) {
        let mut copied: Option<(usize, usize, usize)> = None;
        let flush = |b: &mut Builder, out: &mut Vec<Work>, copied: &mut Option<_>| {
            if let Some((start, first_index, ands)) = copied.take() {
                out.push(Work::Scattered {
                    start,
                    end: b.pool.len(),
                    first_index,
                    ands,
                });
            }
        };
        let mut i = 0;
        while i < positions.len() {
            let mut j = i + 1;
            while j < positions.len() && positions[j] == positions[j - 1] + 1 {
                j += 1;
            }
            let (first, last) = (positions[i] as usize, positions[j - 1] as usize);
            if j - i >= MIN_RUN {
                flush(self, out, &mut copied);
                let run_first_and = first_and + ands_before[first];
                if shared && matches!(src, Src::Phase(_)) {
                    let start = self.pool.len();
                    self.pool.extend_from_slice(&gates[first..=last]);
                    let end = self.pool.len();
                    Builder::range(out, &self.pool, Src::Pool, start..end, run_first_and);
                } else {
                    Builder::range(out, gates, src, first..last + 1, run_first_and);
                }
            } else {
                for p in first..=last {
                    let batch = copied.get_or_insert((self.pool.len(), self.and_indices.len(), 0));
                    self.pool.push(gates[p]);
                    if gates[p].op == Op::And {
                        self.and_indices.push(first_and + ands_before[p]);
                        batch.2 += 1;
                        if batch.2 == PIECE_ANDS {
                            flush(self, out, &mut copied);
                        }
                    }
                }
            }
            i = j;
        }
        flush(self, out, &mut copied);
    }
}

impl Plan {
    /// Plans `circuit` for `threads` threads (0 counts as 1) in `mode`, splitting work only
    /// where each thread gets at least `tau` ANDs' worth (0 counts as 1). Each thread's
    /// work is fixed: stream t carries exactly the tables [`Plan::stream_and_indices`]
    /// lists.
    pub fn new(circuit: &ParallelCircuit, threads: usize, mode: Mode, tau: usize) -> Plan {
        Plan::build(circuit, threads, mode, tau, false)
    }

    /// [`Plan::new`], except that the instances of each region run in parallel are claimed
    /// by the threads chunk by chunk as they go, so that faster cores take more (see
    /// "Claimed instances" in the module doc). The streams then carry chunk headers
    /// ([`Plan::header_blocks`] blocks in all, besides the tables), and which tables a
    /// stream carries depends on the run. Both parties must make the same kind of plan.
    pub fn claimed(circuit: &ParallelCircuit, threads: usize, mode: Mode, tau: usize) -> Plan {
        Plan::build(circuit, threads, mode, tau, true)
    }

    fn build(
        circuit: &ParallelCircuit,
        threads: usize,
        mode: Mode,
        tau: usize,
        claim: bool,
    ) -> Plan {
        let threads = threads.max(1);
        let tau = tau.max(1);
        let templates = &circuit.templates;
        let pieces: Vec<Pieces> = templates.iter().map(Pieces::of).collect();
        let slotted: Vec<Slotted> = templates.iter().map(Slotted::of).collect();
        let scratch_wires = slotted.iter().map(|t| t.slots).max().unwrap_or(0);
        let mut phase_and_base = Vec::with_capacity(circuit.phases.len());
        let mut instance_and_base = Vec::with_capacity(circuit.phases.len());
        let mut shape = Vec::with_capacity(circuit.phases.len());
        let mut and_gates = 0u64;
        for phase in &circuit.phases {
            phase_and_base.push(and_gates);
            match phase {
                Phase::Sequential(gates) => {
                    instance_and_base.push(Vec::new());
                    shape.push(PhaseShape::Sequential { gates: gates.len() });
                    and_gates += crate::and_count(gates) as u64;
                }
                Phase::Region(region) => {
                    let mut bases = Vec::with_capacity(region.instances.len());
                    for inst in &region.instances {
                        bases.push(and_gates);
                        and_gates += pieces[inst.template as usize].ands_before.last().unwrap();
                    }
                    instance_and_base.push(bases);
                    shape.push(PhaseShape::Region {
                        templates: region.instances.iter().map(|i| i.template).collect(),
                    });
                }
            }
        }

        let mut b = Builder {
            threads,
            steps: Vec::new(),
            pool: Vec::new(),
            and_indices: Vec::new(),
            stats: PlanStats::default(),
        };
        let mut flat = Vec::new();
        let mut parallel_regions = Vec::new();
        let mut claimed = Vec::new();
        let label_wires;
        if mode == Mode::Fgp && threads > 1 {
            let flattened = circuit.flatten();
            label_wires = flattened.layout.num_wires as usize;
            flat = flattened.gates;
            let mut levels = Levels::new(label_wires, circuit.layout.num_input_wires() as usize);
            levels.plan(&mut b, &flat, Src::Flat, 0, tau);
        } else {
            label_wires = circuit.layout.num_wires as usize;
            let mut levels = (mode == Mode::Auto && threads > 1)
                .then(|| Levels::new(label_wires, circuit.layout.num_input_wires() as usize));
            for (p, phase) in circuit.phases.iter().enumerate() {
                match phase {
                    Phase::Sequential(gates) => match levels.as_mut() {
                        Some(levels) => {
                            levels.plan(&mut b, gates, Src::Phase(p), phase_and_base[p], tau)
                        }
                        None => {
                            let out = b.serial();
                            Builder::range(
                                out,
                                gates,
                                Src::Phase(p),
                                0..gates.len(),
                                phase_and_base[p],
                            );
                        }
                    },
                    Phase::Region(region) => {
                        let spread = matches!(mode, Mode::Cgp | Mode::Auto) && threads > 1;
                        let weights = if spread {
                            instance_weights(circuit, &pieces, region)
                        } else {
                            Vec::new()
                        };
                        let per_thread = if spread {
                            split_instances(&weights, &instance_and_base[p], p, threads, tau)
                        } else {
                            None
                        };
                        match per_thread {
                            Some(per_thread) if claim => {
                                parallel_regions.push(p);
                                let k = per_thread.iter().filter(|w| !w.is_empty()).count();
                                let bounds = claim_chunks(&weights, k, tau);
                                let work = vec![Work::Claim {
                                    region: claimed.len(),
                                }];
                                claimed.push(ClaimedRegion {
                                    phase: p,
                                    bounds,
                                    threads: k,
                                });
                                let mut per_thread = vec![Vec::new(); threads];
                                per_thread[..k].fill(work);
                                b.parallel(per_thread);
                            }
                            Some(per_thread) => {
                                parallel_regions.push(p);
                                b.parallel(per_thread);
                            }
                            None => {
                                let out = b.serial();
                                for (i, &first_and) in instance_and_base[p].iter().enumerate() {
                                    out.push(Work::Instance {
                                        phase: p,
                                        instance: i,
                                        first_and,
                                    });
                                }
                            }
                        }
                        // Instance outputs are set for the FGP of later phases.
                        if let Some(levels) = levels.as_mut() {
                            for inst in &region.instances {
                                for &w in &inst.outputs {
                                    levels.mark_set(w);
                                }
                            }
                        }
                    }
                }
            }
        }

        // The steps as flat arrays, and their figures.
        let mut work = Vec::new();
        let mut bounds = Vec::with_capacity(b.steps.len() * (threads + 1));
        let mut stats = b.stats;
        let mut active = 1;
        let ands_of = |w: &Work, t: usize| -> u64 {
            match *w {
                Work::Gates { ands, .. } | Work::Scattered { ands, .. } => ands as u64,
                // Every thread of the step holds the same item: counted once, on thread 0.
                Work::Claim { region } if t == 0 => match &circuit.phases[claimed[region].phase] {
                    Phase::Region(r) => pieces_ands(&pieces, r),
                    Phase::Sequential(_) => 0,
                },
                Work::Claim { .. } => 0,
                Work::Instance {
                    phase, instance, ..
                } => match &circuit.phases[phase] {
                    // Counted once per template (`Pieces`): counting per instance went
                    // over BioMatch's 29 K-gate template 512 times, ≈ 5 ms a plan.
                    Phase::Region(r) => pieces[r.instances[instance].template as usize].ands(),
                    Phase::Sequential(_) => 0,
                },
            }
        };
        for (_, per_thread) in &b.steps {
            let busy = per_thread.iter().filter(|w| !w.is_empty()).count();
            let ands: u64 = per_thread
                .iter()
                .enumerate()
                .flat_map(|(t, works)| works.iter().map(move |w| (t, w)))
                .map(|(t, w)| ands_of(w, t))
                .sum();
            if busy > 1 {
                stats.parallel_steps += 1;
                stats.parallel_ands += ands;
            } else {
                stats.serial_ands += ands;
            }
            for (t, works) in per_thread.iter().enumerate() {
                bounds.push(work.len());
                if !works.is_empty() {
                    active = active.max(t + 1);
                }
                work.extend_from_slice(works);
            }
            bounds.push(work.len());
        }
        stats.steps = b.steps.len();
        stats.active_threads = active;
        let flat_wires = if flat.is_empty() { 0 } else { label_wires };
        let mut region_wires = vec![None; circuit.phases.len()];
        // One bit per wire (53 KB for BioMatch's 425 K wires), for every region in turn.
        let mut written = vec![0u64; label_wires.div_ceil(64)];
        for p in parallel_regions {
            if let Phase::Region(region) = &circuit.phases[p] {
                region_wires[p] = Some(RegionWires::checked(region, p, label_wires, &mut written));
            }
        }
        let header_blocks = claimed
            .iter()
            .map(|c: &ClaimedRegion| (c.chunks() + c.threads) as u64)
            .sum();
        let mut plan = Plan {
            threads,
            mode,
            tau,
            label_wires,
            num_input_wires: circuit.layout.num_input_wires() as usize,
            flat,
            flat_wires,
            output_slots: Vec::new(),
            pool: b.pool,
            and_indices: b.and_indices,
            work,
            bounds,
            steps: b.steps.len(),
            region_wires,
            claimed,
            header_blocks,
            phase_and_base,
            instance_and_base,
            pieces,
            slotted,
            scratch_wires,
            shape,
            and_gates,
            stats,
        };
        if !plan.flat.is_empty() {
            plan.reuse_slots(&circuit.layout.output_wires);
        }
        plan
    }

    /// FGP mode: renames the flattened circuit's wires to reusable slots, so the label
    /// array holds the values live at once instead of every unrolled wire (240 MB for
    /// BioMatch). A slot is freed after its value's last reader. Within a serial step
    /// (one thread, in order) it may be taken by the very next gate; within a parallel
    /// step every gate runs at once, so slots freed there become free only after the step,
    /// and the step's outputs take slots freed before it: no thread ever writes a slot
    /// another thread of the same step reads or writes.
    fn reuse_slots(&mut self, outputs: &[WireId]) {
        const NEVER: u64 = u64::MAX;
        const TO_END: u64 = u64::MAX - 1;
        const RELEASED: u64 = u64::MAX - 2;
        let n_in = self.num_input_wires;
        // Debug builds (tests) replay the renamed plan against the original wires.
        let originals = cfg!(debug_assertions).then(|| (self.flat.clone(), self.pool.clone()));
        // Each step's gate ranges, as (in the pool?, start, end), in execution order.
        let mut steps: Vec<StepGates> = Vec::with_capacity(self.steps);
        for step in 0..self.steps {
            let mut ranges = Vec::new();
            let mut busy = 0;
            for t in 0..self.threads {
                let items = self.items(step, t);
                busy += (!items.is_empty()) as usize;
                for w in items {
                    match *w {
                        Work::Gates {
                            src, start, end, ..
                        } => ranges.push((src == Src::Pool, start, end)),
                        Work::Scattered { start, end, .. } => ranges.push((true, start, end)),
                        Work::Instance { .. } | Work::Claim { .. } => {
                            unreachable!("FGP mode runs no instances")
                        }
                    }
                }
            }
            steps.push((busy > 1, ranges));
        }
        // Last use of each wire, in a clock where a serial step ticks once per gate and a
        // parallel step once for all its gates.
        let mut last = vec![NEVER; self.flat_wires];
        let mut clock = 0u64;
        for (parallel, ranges) in &steps {
            for &(in_pool, start, end) in ranges {
                let gates = if in_pool { &self.pool } else { &self.flat };
                for g in &gates[start..end] {
                    for &w in g.inputs() {
                        last[w as usize] = clock;
                    }
                    clock += !parallel as u64;
                }
            }
            clock += *parallel as u64;
        }
        for &w in outputs {
            last[w as usize] = TO_END;
        }
        // Assign slots in the same order.
        let mut slot = vec![u32::MAX; self.flat_wires];
        for (w, s) in slot.iter_mut().enumerate().take(n_in) {
            *s = w as u32;
        }
        let mut free: Vec<u32> = (0..n_in as u32)
            .rev()
            .filter(|&w| last[w as usize] == NEVER)
            .collect();
        let mut next = n_in as u32;
        let mut after_step: Vec<u32> = Vec::new();
        let mut clock = 0u64;
        for (parallel, ranges) in &steps {
            for &(in_pool, start, end) in ranges {
                let gates = if in_pool {
                    &mut self.pool[start..end]
                } else {
                    &mut self.flat[start..end]
                };
                for g in gates.iter_mut() {
                    let release = if *parallel {
                        &mut after_step
                    } else {
                        &mut free
                    };
                    let (a, b) = (g.a, g.b);
                    match g.op {
                        Op::And | Op::Xor => {
                            g.a = slot[a as usize];
                            g.b = slot[b as usize];
                        }
                        Op::Inv | Op::Copy => g.a = slot[a as usize],
                        Op::Const => {}
                    }
                    let inputs: &[WireId] = match g.op {
                        Op::And | Op::Xor => &[a, b],
                        Op::Inv | Op::Copy => &[a],
                        Op::Const => &[],
                    };
                    for &w in inputs {
                        // Freed once, however many readers it has at its last clock (a
                        // gate reading it twice, several gates of a parallel step).
                        if last[w as usize] == clock {
                            last[w as usize] = RELEASED;
                            release.push(slot[w as usize]);
                        }
                    }
                    let out = g.out as usize;
                    let s = free.pop().unwrap_or_else(|| {
                        next += 1;
                        next - 1
                    });
                    slot[out] = s;
                    g.out = s;
                    if last[out] == NEVER {
                        let release = if *parallel {
                            &mut after_step
                        } else {
                            &mut free
                        };
                        release.push(s);
                    }
                    clock += !parallel as u64;
                }
            }
            clock += *parallel as u64;
            free.append(&mut after_step);
        }
        self.output_slots = outputs.iter().map(|&w| slot[w as usize]).collect();
        self.label_wires = next as usize;
        if let Some((flat, pool)) = originals {
            self.check_slots(&steps, &flat, &pool);
        }
    }

    /// Replays the steps on slot contents: every gate must find in its input slots the
    /// original wires it read before renaming (a parallel step's writes land after all of
    /// its reads). Panics on the first violation.
    fn check_slots(&self, steps: &[StepGates], orig_flat: &[Gate], orig_pool: &[Gate]) {
        let mut holder: Vec<u32> = (0..self.label_wires as u32).collect();
        // Slots above the inputs hold nothing yet.
        for h in holder.iter_mut().skip(self.num_input_wires) {
            *h = u32::MAX;
        }
        for (si, (parallel, ranges)) in steps.iter().enumerate() {
            let mut writes = Vec::new();
            for &(in_pool, start, end) in ranges {
                let (new, old) = if in_pool {
                    (&self.pool[start..end], &orig_pool[start..end])
                } else {
                    (&self.flat[start..end], &orig_flat[start..end])
                };
                for (k, (g, o)) in new.iter().zip(old).enumerate() {
                    let ins: Vec<(u32, u32)> = match g.op {
                        Op::And | Op::Xor => vec![(g.a, o.a), (g.b, o.b)],
                        Op::Inv | Op::Copy => vec![(g.a, o.a)],
                        Op::Const => vec![],
                    };
                    for (sl, w) in ins {
                        assert_eq!(
                            holder[sl as usize], w,
                            "FGP slot reuse: step {si} (parallel {parallel}), gate {k} of \
                             {start}..{end}: slot {sl} no longer holds wire {w}"
                        );
                    }
                    if *parallel {
                        writes.push((g.out, o.out));
                    } else {
                        holder[g.out as usize] = o.out;
                    }
                }
            }
            for (sl, w) in writes {
                holder[sl as usize] = w;
            }
        }
    }

    /// Threads (sinks and sources) the plan is made for.
    pub fn threads(&self) -> usize {
        self.threads
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn tau(&self) -> usize {
        self.tau
    }

    /// ANDs of the whole circuit.
    pub fn and_gates(&self) -> u64 {
        self.and_gates
    }

    pub fn stats(&self) -> &PlanStats {
        &self.stats
    }

    /// Whether threads claim region instances as they go ([`Plan::claimed`]) in some step.
    pub fn is_claimed(&self) -> bool {
        !self.claimed.is_empty()
    }

    /// Blocks the streams carry besides the tables (2 per AND): the chunk headers and end
    /// blocks of claimed steps, summed over all streams (0 for a plan without claims).
    pub fn header_blocks(&self) -> u64 {
        self.header_blocks
    }

    /// Blocks of the scratch array a thread needs for region instances: the most slots
    /// any template's renamed wires take (see [`Slotted`]), not its wire count.
    pub fn scratch_blocks(&self) -> usize {
        self.scratch_wires
    }

    /// The flat-order index of the first AND of phase `phase` (None if there is no such
    /// phase).
    pub fn phase_and_base(&self, phase: usize) -> Option<u64> {
        self.phase_and_base.get(phase).copied()
    }

    /// The flat-order index of the first AND of instance `instance` of the region at phase
    /// `phase` (None if that is not a region instance): the `and_index_base` for
    /// [`garble_instance`] and [`evaluate_instance`].
    pub fn instance_and_base(&self, phase: usize, instance: usize) -> Option<u64> {
        self.instance_and_base.get(phase)?.get(instance).copied()
    }

    /// The flat-order AND index of each table pair in stream `thread`, in stream order
    /// (empty for a thread without work): the sequential garbler's tables of AND j are the
    /// pair this lists at j.
    ///
    /// # Panics
    /// For a plan with claims ([`Plan::is_claimed`]), whose streams depend on the run.
    pub fn stream_and_indices(&self, circuit: &ParallelCircuit, thread: usize) -> Vec<u64> {
        assert!(
            !self.is_claimed(),
            "a claimed plan's streams depend on the run: no fixed stream order"
        );
        let mut out = Vec::new();
        if thread >= self.threads {
            return out;
        }
        for step in 0..self.steps {
            for w in self.items(step, thread) {
                match *w {
                    Work::Gates {
                        first_and, ands, ..
                    } => out.extend(first_and..first_and + ands as u64),
                    Work::Scattered {
                        first_index, ands, ..
                    } => out.extend_from_slice(&self.and_indices[first_index..first_index + ands]),
                    Work::Instance {
                        phase,
                        instance,
                        first_and,
                    } => {
                        if let Phase::Region(r) = &circuit.phases[phase] {
                            let ands = self.pieces[r.instances[instance].template as usize].ands();
                            out.extend(first_and..first_and + ands);
                        }
                    }
                    Work::Claim { .. } => unreachable!("asserted above"),
                }
            }
        }
        out
    }

    fn items(&self, step: usize, thread: usize) -> &[Work] {
        let at = step * (self.threads + 1) + thread;
        &self.work[self.bounds[at]..self.bounds[at + 1]]
    }

    /// Panics unless `circuit` is the one the plan was made for, in the respects the plan
    /// depends on. Cheap (it runs before every run): the wires of the regions run in
    /// parallel are the plan's own copy, checked once when the plan was made
    /// ([`RegionWires::checked`]), whatever was done to the circuit's public fields since.
    fn check_circuit(&self, circuit: &ParallelCircuit) {
        let same = circuit.phases.len() == self.shape.len()
            && circuit.templates.len() == self.pieces.len()
            && circuit.layout.num_input_wires() as usize == self.num_input_wires
            && circuit
                .phases
                .iter()
                .zip(&self.shape)
                .all(|(p, s)| match (p, s) {
                    (Phase::Sequential(g), PhaseShape::Sequential { gates }) => g.len() == *gates,
                    (Phase::Region(r), PhaseShape::Region { templates }) => {
                        r.instances.len() == templates.len()
                            && r.instances
                                .iter()
                                .zip(templates)
                                .all(|(i, &t)| i.template == t)
                    }
                    _ => false,
                })
            && circuit
                .templates
                .iter()
                .zip(&self.pieces)
                .all(|(t, p)| *p.bounds.last().unwrap() == t.gates.len());
        let flat_ok =
            self.flat.is_empty() || circuit.flat_layout().num_wires as usize == self.flat_wires;
        let global_ok =
            !self.flat.is_empty() || circuit.layout.num_wires as usize == self.label_wires;
        assert!(
            same && flat_ok && global_ok,
            "parallel garbling: the plan was made for another circuit"
        );
    }
}

/// The wires the instances of a region run in parallel read and write: the plan's own copy,
/// checked when the plan was made, so that no run depends on the circuit's public fields
/// for the soundness of the threads' concurrent writes.
#[derive(Clone, Debug)]
struct RegionWires {
    wires: Vec<WireId>,
    /// Instance i reads `wires[bounds[2i]..bounds[2i + 1]]` and writes
    /// `wires[bounds[2i + 1]..bounds[2i + 2]]`.
    bounds: Vec<usize>,
}

impl RegionWires {
    /// Copies the region's wires, and panics unless its instances write distinct wires
    /// below `label_wires` that no instance of the region reads: what makes their
    /// concurrent writes to the shared labels sound. `written` is one bit per label wire,
    /// all clear (and left so), shared by the regions of a plan.
    fn checked(
        region: &pgc_circuit::Region,
        phase: usize,
        label_wires: usize,
        written: &mut [u64],
    ) -> RegionWires {
        let n = region.instances.len();
        let mut wires = Vec::with_capacity(
            region
                .instances
                .iter()
                .map(|i| i.inputs.len() + i.outputs.len())
                .sum(),
        );
        let mut bounds = Vec::with_capacity(2 * n + 1);
        bounds.push(0);
        for inst in &region.instances {
            wires.extend_from_slice(&inst.inputs);
            bounds.push(wires.len());
            wires.extend_from_slice(&inst.outputs);
            bounds.push(wires.len());
        }
        let out = RegionWires { wires, bounds };
        let bit = |w: WireId| (w as usize / 64, 1u64 << (w % 64));
        for i in 0..n {
            for &w in out.outputs(i) {
                let (word, mask) = bit(w);
                let fresh = (w as usize) < label_wires && written[word] & mask == 0;
                assert!(
                    fresh,
                    "parallel garbling: instance {i} of the region at phase {phase} writes wire \
                     {w}, out of range or written by another instance"
                );
                written[word] |= mask;
            }
        }
        for i in 0..n {
            for &w in out.inputs(i) {
                let (word, mask) = bit(w);
                assert!(
                    (w as usize) < label_wires && written[word] & mask == 0,
                    "parallel garbling: instance {i} of the region at phase {phase} reads wire \
                     {w}, out of range or written in the region"
                );
            }
        }
        for i in 0..n {
            for &w in out.outputs(i) {
                let (word, mask) = bit(w);
                written[word] &= !mask;
            }
        }
        out
    }

    fn inputs(&self, instance: usize) -> &[WireId] {
        &self.wires[self.bounds[2 * instance]..self.bounds[2 * instance + 1]]
    }

    fn outputs(&self, instance: usize) -> &[WireId] {
        &self.wires[self.bounds[2 * instance + 1]..self.bounds[2 * instance + 2]]
    }
}

/// Each instance's weight in sixteenths of an AND: 16 per AND, 1 per linear gate (each
/// template's ANDs counted once, in its `Pieces`).
fn instance_weights(
    circuit: &ParallelCircuit,
    pieces: &[Pieces],
    region: &pgc_circuit::Region,
) -> Vec<u64> {
    region
        .instances
        .iter()
        .map(|inst| {
            let t = &circuit.templates[inst.template as usize];
            let ands = pieces[inst.template as usize].ands();
            ands * LINEAR_PER_AND as u64 + (t.gates.len() as u64 - ands)
        })
        .collect()
}

/// Splits a region's instances (of `weights`, [`instance_weights`]) among threads in
/// contiguous runs of about equal weight, or None where fewer than 2 threads would get τ
/// ANDs' worth each.
fn split_instances(
    weights: &[u64],
    bases: &[u64],
    phase: usize,
    threads: usize,
    tau: usize,
) -> Option<Vec<Vec<Work>>> {
    let total: u64 = weights.iter().sum();
    let k = (total / (tau * LINEAR_PER_AND) as u64)
        .min(threads as u64)
        .min(weights.len() as u64) as usize;
    if k < 2 {
        return None;
    }
    let mut per_thread = vec![Vec::new(); threads];
    let mut before = 0u64;
    for (i, &w) in weights.iter().enumerate() {
        // The thread whose share [t·total/k, (t+1)·total/k) holds this instance's middle.
        let middle = 2 * before + w;
        let t = ((middle as u128 * k as u128) / (2 * total.max(1)) as u128) as usize;
        per_thread[t.min(k - 1)].push(Work::Instance {
            phase,
            instance: i,
            first_and: bases[i],
        });
        before += w;
    }
    Some(per_thread)
}

/// ANDs of a region's instances (each template's counted once, in its `Pieces`).
fn pieces_ands(pieces: &[Pieces], region: &pgc_circuit::Region) -> u64 {
    region
        .instances
        .iter()
        .map(|i| pieces[i.template as usize].ands())
        .sum()
}

/// Cuts a region claimed by `threads` threads into chunks of contiguous instances (of
/// `weights`, [`instance_weights`]): about [`CHUNKS_PER_THREAD`] per thread of equal
/// weight, each at least τ ANDs' worth where the region allows. Returns the chunk bounds
/// (first 0, last the instance count).
fn claim_chunks(weights: &[u64], threads: usize, tau: usize) -> Vec<usize> {
    let total: u64 = weights.iter().sum();
    let target = (total / (threads * CHUNKS_PER_THREAD).max(1) as u64)
        .max((tau * LINEAR_PER_AND) as u64)
        .max(1);
    let mut bounds = vec![0];
    let mut in_chunk = 0u64;
    for (i, &w) in weights.iter().enumerate() {
        in_chunk += w;
        if in_chunk >= target && i + 1 < weights.len() {
            bounds.push(i + 1);
            in_chunk = 0;
        }
    }
    bounds.push(weights.len());
    bounds
}

/// FGP level planning over one label space.
struct Levels {
    /// The level `(D << 32) | s` of each wire set in the current part (0 otherwise).
    level: Vec<u64>,
    /// Whether each wire is set (inputs, earlier parts, this part so far).
    set: Vec<bool>,
}

impl Levels {
    fn new(num_wires: usize, num_input_wires: usize) -> Levels {
        let mut set = vec![false; num_wires];
        set[..num_input_wires.min(num_wires)].fill(true);
        Levels {
            level: vec![0; num_wires],
            set,
        }
    }

    fn mark_set(&mut self, w: WireId) {
        if let Some(s) = self.set.get_mut(w as usize) {
            *s = true;
        }
    }

    /// Plans the gates of one sequential part (`first_and`: its first AND's flat index).
    fn plan(&mut self, b: &mut Builder, gates: &[Gate], src: Src, first_and: u64, tau: usize) {
        let n = gates.len();
        let level_of = |level: &[u64], w: WireId| level.get(w as usize).copied().unwrap_or(0);
        let mut keys = Vec::with_capacity(n);
        let mut ands_before = Vec::with_capacity(n + 1);
        let mut max_s: Vec<u32> = Vec::new();
        let mut ands = 0u64;
        // Levels are only sound in single-assignment form with every read wire set before:
        // otherwise the part runs serially.
        let mut ssa = true;
        for g in gates {
            ands_before.push(ands);
            let inputs: &[WireId] = match g.op {
                Op::Const => &[],
                _ => g.inputs(),
            };
            let mut m = 0;
            for &w in inputs {
                ssa &= self.set.get(w as usize).copied().unwrap_or(false);
                m = m.max(level_of(&self.level, w));
            }
            let key = if g.op == Op::And {
                ands += 1;
                ((m >> 32) + 1) << 32
            } else {
                m + 1
            };
            match self.set.get_mut(g.out as usize) {
                Some(s) if !*s => *s = true,
                _ => ssa = false,
            }
            if let Some(l) = self.level.get_mut(g.out as usize) {
                *l = key;
            }
            keys.push(key);
            let (d, s) = ((key >> 32) as usize, key as u32);
            if max_s.len() <= d {
                max_s.resize(d + 1, 0);
            }
            max_s[d] = max_s[d].max(s);
        }
        ands_before.push(ands);
        for g in gates {
            if let Some(l) = self.level.get_mut(g.out as usize) {
                *l = 0;
            }
        }
        if !ssa || b.threads == 1 || n == 0 {
            let out = b.serial();
            Builder::range(out, gates, src, 0..n, first_and);
            return;
        }
        // Dense level numbers, then the gates bucketed by level (ascending within one).
        let mut offset = Vec::with_capacity(max_s.len());
        let mut total = 0usize;
        for &s in &max_s {
            offset.push(total);
            total += s as usize + 1;
        }
        let dense = |key: u64| offset[(key >> 32) as usize] + key as u32 as usize;
        let mut start = vec![0usize; total + 1];
        for &key in &keys {
            start[dense(key) + 1] += 1;
        }
        for l in 0..total {
            start[l + 1] += start[l];
        }
        let mut fill = start.clone();
        let mut order = vec![0u32; n];
        for (p, &key) in keys.iter().enumerate() {
            let l = dense(key);
            order[fill[l]] = p as u32;
            fill[l] += 1;
        }
        drop(keys);

        let threads = b.threads;
        let mut serial: Vec<u32> = Vec::new();
        let flush_serial = |b: &mut Builder, serial: &mut Vec<u32>| {
            if serial.is_empty() {
                return;
            }
            serial.sort_unstable();
            let mut out = std::mem::take(b.serial());
            b.positions(&mut out, gates, src, &ands_before, first_and, serial, false);
            *b.serial() = out;
            serial.clear();
        };
        for l in 0..total {
            let members = &order[start[l]..start[l + 1]];
            if members.is_empty() {
                continue;
            }
            b.stats.levels += 1;
            let is_and = gates[members[0] as usize].op == Op::And;
            let weight = if is_and {
                members.len()
            } else {
                members.len() / LINEAR_PER_AND
            };
            let k = (weight / tau).min(threads);
            if k < 2 {
                serial.extend_from_slice(members);
                continue;
            }
            flush_serial(b, &mut serial);
            b.stats.split_levels += 1;
            let mut per_thread = vec![Vec::new(); threads];
            for (t, out) in per_thread.iter_mut().enumerate().take(k) {
                let share = &members[t * members.len() / k..(t + 1) * members.len() / k];
                b.positions(out, gates, src, &ands_before, first_and, share, true);
            }
            b.parallel(per_thread);
        }
        flush_serial(b, &mut serial);
    }
}

/// What a thread needs to run one instance ([`Shared::instance`]).
struct InstanceRun<'a> {
    template: &'a Slotted,
    pieces: &'a Pieces,
    inputs: &'a [WireId],
    outputs: &'a [WireId],
}

/// Copies an instance's input labels from the shared array into this thread's scratch
/// (grown to the template's slots).
fn load_instance(scratch: &mut Vec<Block>, labels: SharedLabels, run: &InstanceRun<'_>) {
    scratch.resize(run.template.slots.max(scratch.len()), Block::ZERO);
    for (k, &w) in run.inputs.iter().enumerate() {
        // SAFETY: in a parallel step, instances read wires set before their region, which
        // no thread writes during it (the plan's copy of the wires, `RegionWires::checked`);
        // in a serial step this is the only thread.
        scratch[k] = unsafe { labels.read(w) };
    }
}

/// Copies an instance's output labels from this thread's scratch to the shared array.
fn store_instance(scratch: &[Block], labels: SharedLabels, run: &InstanceRun<'_>) {
    for (&local, &global) in run.template.outputs.iter().zip(run.outputs) {
        // SAFETY: in a parallel step, the instances of a region write distinct wires that
        // none of them reads (`RegionWires::checked`), and each instance runs on one thread
        // (a fixed split, or a claimed chunk); in a serial step this is the only thread.
        unsafe { labels.write(global, scratch[local as usize]) };
    }
}

/// Where garbler thread t puts its tables: stream t.
pub trait TableSink: Send {
    type Error: Send;
    /// Takes the next tables of this stream (it may buffer them).
    fn put(&mut self, tables: &[Block]) -> Result<(), Self::Error>;
    /// Sends everything put so far on its way to the peer: called at the end of each step
    /// in which the thread put tables (see the module doc for why).
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Where evaluator thread t reads its tables: stream t.
pub trait TableSource: Send {
    type Error: Send;
    /// The next `n_blocks` blocks of this stream (exactly that many).
    fn take(&mut self, n_blocks: usize) -> Result<&[Block], Self::Error>;
}

/// Collects the stream in memory.
impl TableSink for Vec<Block> {
    type Error = Infallible;
    fn put(&mut self, tables: &[Block]) -> Result<(), Infallible> {
        self.extend_from_slice(tables);
        Ok(())
    }
}

/// A stream read from memory.
#[derive(Clone, Debug)]
pub struct SliceSource<'a> {
    blocks: &'a [Block],
    position: usize,
}

impl<'a> SliceSource<'a> {
    pub fn new(blocks: &'a [Block]) -> SliceSource<'a> {
        SliceSource {
            blocks,
            position: 0,
        }
    }

    /// Blocks not taken yet.
    pub fn remaining(&self) -> usize {
        self.blocks.len() - self.position
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the table stream ended: {wanted} blocks wanted, {left} left")]
pub struct StreamEnded {
    pub wanted: usize,
    pub left: usize,
}

impl TableSource for SliceSource<'_> {
    type Error = StreamEnded;
    fn take(&mut self, n_blocks: usize) -> Result<&[Block], StreamEnded> {
        let left = self.remaining();
        if n_blocks > left {
            return Err(StreamEnded {
                wanted: n_blocks,
                left,
            });
        }
        let start = self.position;
        self.position += n_blocks;
        Ok(&self.blocks[start..self.position])
    }
}

/// Errors of [`evaluate`]; `E` is the sources' error.
#[derive(Debug, thiserror::Error)]
pub enum EvalError<E> {
    #[error("evaluator thread {thread}: reading garbled tables failed: {source}")]
    Source { thread: usize, source: E },
    #[error(
        "evaluator thread {thread}: the table source returned {got} blocks where {expected} \
         were asked for"
    )]
    ShortRead {
        thread: usize,
        expected: usize,
        got: usize,
    },
    #[error("evaluator thread {thread}: {source}")]
    Garble { thread: usize, source: GarbleError },
    #[error("{got} input labels given, but the circuit has {expected} input wires")]
    InputCount { expected: usize, got: usize },
    #[error("evaluator thread {thread}, the region at phase {phase}: {problem}")]
    Claim {
        thread: usize,
        phase: usize,
        problem: ClaimProblem,
    },
}

/// What was wrong with the chunk headers of a claimed step's streams (see "Claimed
/// instances" in the module doc): the streams do not match the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClaimProblem {
    #[error("a chunk header was expected, but the stream holds something else there")]
    NotAHeader,
    #[error("the stream names chunk {chunk}, but the region has {chunks} chunks")]
    OutOfRange { chunk: u64, chunks: usize },
    #[error("chunk {chunk} was named twice (on this stream or another)")]
    Twice { chunk: usize },
    #[error("the streams named {got} of the region's {chunks} chunks")]
    Missing { got: usize, chunks: usize },
}

/// What [`garble`] returns besides the tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GarbleOutput {
    /// The zero-label of each output wire of the layout, in order (their lsbs are the
    /// decoding bits).
    pub output_zero_labels: Vec<Block>,
    pub and_gates: u64,
    /// Table blocks put to each stream.
    pub blocks_per_stream: Vec<u64>,
}

/// The label array all threads share.
#[derive(Clone, Copy)]
struct SharedLabels {
    ptr: *mut Block,
    len: usize,
}

// SAFETY: the threads access the array only as the plan allows: in each step, at wires no
// other thread of that step reads or writes (see `RegionWires::checked`, `Levels`, and for
// FGP's reused slots `Plan::reuse_slots`, which never hands a parallel step a slot freed in
// that step), with a barrier between steps.
unsafe impl Send for SharedLabels {}
unsafe impl Sync for SharedLabels {}

impl SharedLabels {
    /// # Safety
    /// No other thread writes wire `w` during this call.
    unsafe fn read(self, w: WireId) -> Block {
        assert!((w as usize) < self.len, "wire {w} out of range");
        // SAFETY: in range (just checked); no concurrent write per the caller.
        unsafe { *self.ptr.add(w as usize) }
    }

    /// # Safety
    /// No other thread reads or writes wire `w` during this call.
    unsafe fn write(self, w: WireId, label: Block) {
        assert!((w as usize) < self.len, "wire {w} out of range");
        // SAFETY: in range (just checked); no concurrent access per the caller.
        unsafe { *self.ptr.add(w as usize) = label }
    }
}

/// What every thread of a run shares.
struct Shared<'a> {
    plan: &'a Plan,
    circuit: &'a ParallelCircuit,
    kernel: Kernel,
    hash: &'a TccrHash,
    labels: SharedLabels,
    /// Per claimed region of the plan, this run's claims.
    claims: Vec<Claims>,
}

/// A counter on a cache line of its own: the threads of a claimed step all increment it,
/// and must not slow each other's other data.
#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicUsize);

/// One run's claims on a claimed region (see "Claimed instances" in the module doc).
struct Claims {
    /// The garbler's next chunk to take.
    next: Padded,
    /// The evaluator's chunks taken (a stream named them), one flag each.
    taken: Vec<AtomicBool>,
    /// The evaluator's chunks taken so far, and its threads that read their end block.
    counted: Padded,
    ended: Padded,
}

impl Claims {
    fn new(region: &ClaimedRegion) -> Claims {
        Claims {
            next: Padded::default(),
            taken: (0..region.chunks())
                .map(|_| AtomicBool::new(false))
                .collect(),
            counted: Padded::default(),
            ended: Padded::default(),
        }
    }
}

impl<'a> Shared<'a> {
    /// What both sides share: `labels` is the whole label array (inputs filled in), which
    /// must outlive the returned value's use.
    fn new(
        plan: &'a Plan,
        circuit: &'a ParallelCircuit,
        hash: &'a TccrHash,
        labels: &mut [Block],
    ) -> Shared<'a> {
        plan.check_circuit(circuit);
        Shared {
            plan,
            circuit,
            kernel: Kernel::best(),
            hash,
            labels: SharedLabels {
                ptr: labels.as_mut_ptr(),
                len: labels.len(),
            },
            claims: plan.claimed.iter().map(Claims::new).collect(),
        }
    }
}

/// Label arrays of at least this many blocks (1 MiB) are zeroed by all of a run's threads.
const PARALLEL_ZEROING_BLOCKS: usize = 1 << 16;

/// The label array for a plan, its input wires set to `inputs` and every other wire zero.
/// A large one is zeroed by the plan's threads together: BioMatch's 6.8 MB took 0.75 ms on
/// the caller's thread alone, before any other thread started (BENCHMARKS.md, "Where a CGP
/// run's wall time goes"); it also wakes the pooled workers for the run's first step.
fn initial_labels(plan: &Plan, inputs: &[Block]) -> Vec<Block> {
    let n = plan.label_wires;
    let threads = plan.stats.active_threads.max(1);
    if threads == 1 || n < PARALLEL_ZEROING_BLOCKS {
        let mut labels = vec![Block::ZERO; n];
        labels[..plan.num_input_wires].copy_from_slice(inputs);
        return labels;
    }
    let mut labels: Vec<Block> = Vec::with_capacity(n);
    {
        let (head, tail) = labels.spare_capacity_mut()[..n].split_at_mut(inputs.len());
        for (slot, &label) in head.iter_mut().zip(inputs) {
            slot.write(label);
        }
        let mut chunks = tail.chunks_mut(tail.len().div_ceil(threads));
        let own = chunks.next();
        let jobs: Vec<Box<dyn FnOnce() + Send + '_>> = chunks
            .map(|c| Box::new(move || c.fill(MaybeUninit::new(Block::ZERO))) as Box<_>)
            .collect();
        crate::pool::scoped(jobs, || {
            if let Some(c) = own {
                c.fill(MaybeUninit::new(Block::ZERO));
            }
        });
    }
    // SAFETY: the first `n` blocks were all written above (the inputs, then every chunk of
    // the rest, each by a job that finished before `scoped` returned).
    unsafe { labels.set_len(n) };
    labels
}

/// The labels of the circuit's output wires, in layout order (through the plan's slots in
/// FGP mode).
fn output_labels(plan: &Plan, circuit: &ParallelCircuit, labels: &[Block]) -> Vec<Block> {
    let wires = if plan.output_slots.is_empty() {
        &circuit.layout.output_wires
    } else {
        &plan.output_slots
    };
    wires.iter().map(|&w| labels[w as usize]).collect()
}

impl Shared<'_> {
    fn gates(&self, src: Src, start: usize, end: usize) -> &[Gate] {
        match src {
            Src::Flat => &self.plan.flat[start..end],
            Src::Pool => &self.plan.pool[start..end],
            Src::Phase(p) => match &self.circuit.phases[p] {
                Phase::Sequential(gates) => &gates[start..end],
                Phase::Region(_) => unreachable!("checked by Plan::check_circuit"),
            },
        }
    }

    /// Instance `instance` of the region at phase `phase`: its template as it runs, the
    /// template's pieces, and the wires it reads and writes (the plan's checked copy where
    /// the region runs in parallel, the circuit's where only thread 0 runs it).
    fn instance(&self, phase: usize, instance: usize) -> InstanceRun<'_> {
        match &self.circuit.phases[phase] {
            Phase::Region(r) => {
                let inst = &r.instances[instance];
                let t = inst.template as usize;
                let (inputs, outputs) = match &self.plan.region_wires[phase] {
                    Some(w) => (w.inputs(instance), w.outputs(instance)),
                    None => (&inst.inputs[..], &inst.outputs[..]),
                };
                InstanceRun {
                    template: &self.plan.slotted[t],
                    pieces: &self.plan.pieces[t],
                    inputs,
                    outputs,
                }
            }
            Phase::Sequential(_) => unreachable!("checked by Plan::check_circuit"),
        }
    }
}

/// One thread's part of a run.
trait StepRunner: Send {
    type Error: Send;
    fn run(&mut self, thread: usize, items: &[Work]) -> Result<(), Self::Error>;
}

/// A barrier that spins briefly before it sleeps: steps of fine-grained parallelism take
/// microseconds, and waking a parked thread costs about as much again (std's `Barrier`
/// always parks), while a long serial step must not leave the other threads burning a
/// core. A thread with no work in any later step [leaves](StepBarrier::leave) instead of
/// waiting: it counts as arrived this time and is no longer waited for afterwards (CGP's
/// workers after their region, while thread 0 runs a serial tail).
struct StepBarrier {
    /// Threads that still meet here.
    threads: AtomicUsize,
    /// Threads that left in the current generation (taken off `threads` when it ends).
    leaving: AtomicUsize,
    /// Spin iterations before sleeping: none when there are more threads than CPUs, where
    /// a spinning thread would only take the CPU from one with work.
    spins: u32,
    arrived: AtomicUsize,
    generation: AtomicU64,
    lock: Mutex<()>,
    wake: Condvar,
}

/// Spin iterations before sleeping (tens of microseconds).
const BARRIER_SPINS: u32 = 1 << 14;

impl StepBarrier {
    fn new(threads: usize) -> StepBarrier {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        StepBarrier {
            threads: AtomicUsize::new(threads),
            leaving: AtomicUsize::new(0),
            spins: if threads <= cpus { BARRIER_SPINS } else { 0 },
            arrived: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Waits until every thread still here has arrived.
    fn wait(&self) {
        self.arrive(false);
    }

    /// Arrives without waiting, and leaves for good.
    fn leave(&self) {
        self.arrive(true);
    }

    fn arrive(&self, leave: bool) {
        let generation = self.generation.load(Ordering::Acquire);
        if leave {
            self.leaving.fetch_add(1, Ordering::Relaxed);
        }
        // Every thread arriving in this generation saw the last one's end (the new
        // generation, with Acquire), so it sees `threads` as that end left it.
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads.load(Ordering::Acquire) {
            // Last to arrive: reset for the next step, then release the others. No thread
            // can arrive for the next step before it sees the new generation. The AcqRel
            // increments order every leaver's `leaving` increment before this.
            let gone = self.leaving.swap(0, Ordering::Relaxed);
            self.threads.fetch_sub(gone, Ordering::Release);
            self.arrived.store(0, Ordering::Relaxed);
            let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.generation.store(generation + 1, Ordering::Release);
            self.wake.notify_all();
            return;
        }
        if leave {
            return;
        }
        for _ in 0..self.spins {
            if self.generation.load(Ordering::Acquire) != generation {
                return;
            }
            std::hint::spin_loop();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        // The generation changes only under the lock, so no wake-up is lost.
        while self.generation.load(Ordering::Acquire) == generation {
            guard = self.wake.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Runs every step of `plan` on `runners.len()` threads (runner t on thread t): thread 0
/// is the caller's, the others are pooled ([`crate::pool`]) and kept between runs.
fn execute<R: StepRunner>(plan: &Plan, runners: &mut [R]) -> Result<(), R::Error> {
    if runners.len() == 1 {
        for step in 0..plan.steps {
            runners[0].run(0, plan.items(step, 0))?;
        }
        return Ok(());
    }
    let barrier = StepBarrier::new(runners.len());
    // The first step in which a thread failed (usize::MAX: none). A step number rather than
    // a flag: after barrier s every thread must decide alike, so a failure in step s + 1
    // by a thread that ran ahead must not count yet.
    let failed_step = AtomicUsize::new(usize::MAX);
    let first_error: Mutex<Option<R::Error>> = Mutex::new(None);
    let panicked: Mutex<Option<Box<dyn Any + Send>>> = Mutex::new(None);
    let thread_loop = |t: usize, runner: &mut R| {
        // After its last step with work a thread only has to arrive (its writes then
        // happen before the next step of the others); thread 0 always runs to the end.
        let last = if t == 0 {
            plan.steps.saturating_sub(1)
        } else {
            (0..plan.steps)
                .rev()
                .find(|&s| !plan.items(s, t).is_empty())
                .unwrap_or(0)
        };
        let mut failed = false;
        for step in 0..plan.steps {
            if !failed {
                let outcome = catch_unwind(AssertUnwindSafe(|| runner.run(t, plan.items(step, t))));
                match outcome {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                        slot.get_or_insert(e);
                        failed = true;
                    }
                    Err(payload) => {
                        let mut slot = panicked.lock().unwrap_or_else(|p| p.into_inner());
                        slot.get_or_insert(payload);
                        failed = true;
                    }
                }
                if failed {
                    failed_step.fetch_min(step, Ordering::Release);
                }
            }
            if step == last {
                // Thread 0's last step is the plan's: its return is followed by the wait
                // for every pooled thread, no barrier needed.
                if t != 0 {
                    barrier.leave();
                }
                return;
            }
            // Everyone still here reaches every barrier until all see a failure after the
            // same one.
            barrier.wait();
            if failed_step.load(Ordering::Acquire) <= step {
                return;
            }
        }
    };
    {
        let (first, rest) = runners.split_first_mut().expect("at least 2 runners");
        let thread_loop = &thread_loop;
        let jobs: Vec<Box<dyn FnOnce() + Send + '_>> = rest
            .iter_mut()
            .enumerate()
            .map(|(t, runner)| {
                Box::new(move || thread_loop(t + 1, runner)) as Box<dyn FnOnce() + Send + '_>
            })
            .collect();
        crate::pool::scoped(jobs, || thread_loop(0, first));
    }
    if let Some(payload) = panicked.into_inner().unwrap_or_else(|p| p.into_inner()) {
        resume_unwind(payload);
    }
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct GarbleRunner<'a, S> {
    shared: &'a Shared<'a>,
    delta: Block,
    sink: &'a mut S,
    tables: Vec<Block>,
    scratch: Vec<Block>,
    put_in_step: bool,
    blocks: u64,
    /// When this thread's steps began and ended ([`garble_offline_traced`]).
    trace: Option<StepTrace>,
}

/// When one thread ran its steps, in seconds from the start of the run: `(step, start,
/// end)` for each step in which it had work.
#[derive(Clone, Debug)]
pub struct StepTrace {
    origin: Instant,
    /// Steps run so far, with work or without.
    calls: usize,
    pub steps: Vec<(usize, f64, f64)>,
}

impl<S: TableSink> GarbleRunner<'_, S> {
    fn put(&mut self) -> Result<(), S::Error> {
        if !self.tables.is_empty() {
            self.sink.put(&self.tables)?;
            self.blocks += self.tables.len() as u64;
            self.tables.clear();
            self.put_in_step = true;
        }
        Ok(())
    }
}

impl<S: TableSink> StepRunner for GarbleRunner<'_, S> {
    type Error = S::Error;

    fn run(&mut self, _thread: usize, items: &[Work]) -> Result<(), S::Error> {
        let Some(mut trace) = self.trace.take() else {
            return self.run_untraced(items);
        };
        let origin = trace.origin;
        let start = origin.elapsed().as_secs_f64();
        let outcome = self.run_untraced(items);
        if !items.is_empty() {
            trace
                .steps
                .push((trace.calls, start, origin.elapsed().as_secs_f64()));
        }
        trace.calls += 1;
        self.trace = Some(trace);
        outcome
    }
}

impl<S: TableSink> GarbleRunner<'_, S> {
    fn run_untraced(&mut self, items: &[Work]) -> Result<(), S::Error> {
        let shared = self.shared;
        if self.tables.capacity() == 0 && !items.is_empty() {
            self.tables.reserve(PUT_BLOCKS + 2 * PIECE_ANDS);
        }
        let (kernel, hash, delta, labels) = (shared.kernel, shared.hash, self.delta, shared.labels);
        for &item in items {
            match item {
                Work::Gates {
                    src,
                    start,
                    end,
                    first_and,
                    ..
                } => {
                    let gates = shared.gates(src, start, end);
                    // SAFETY: the labels hold `len` blocks. In a serial step this is the
                    // only thread. In a parallel step these gates are the plan's own copies
                    // (`Src::Flat` or `Src::Pool`, see `Builder::positions`) of part of one
                    // FGP level, whose gates read only wires of lower levels (set in
                    // earlier steps) and write distinct wires (single assignment, checked
                    // by `Levels::plan`), and the other threads run other gates of the
                    // level.
                    unsafe {
                        garble_gates(
                            kernel,
                            hash,
                            delta,
                            labels.ptr,
                            labels.len,
                            AndTweaks::From(first_and),
                            gates,
                            &mut self.tables,
                        );
                    }
                }
                Work::Scattered {
                    start,
                    end,
                    first_index,
                    ands,
                } => {
                    let plan = shared.plan;
                    let indices = &plan.and_indices[first_index..first_index + ands];
                    // SAFETY: as for `Work::Gates`.
                    unsafe {
                        garble_gates(
                            kernel,
                            hash,
                            delta,
                            labels.ptr,
                            labels.len,
                            AndTweaks::Each(indices),
                            &plan.pool[start..end],
                            &mut self.tables,
                        );
                    }
                }
                Work::Instance {
                    phase,
                    instance,
                    first_and,
                } => self.garble_instance(phase, instance, first_and)?,
                Work::Claim { region } => {
                    let claimed = &shared.plan.claimed[region];
                    let next = &shared.claims[region].next.0;
                    let bases = &shared.plan.instance_and_base[claimed.phase];
                    loop {
                        // Relaxed: the increment alone makes each chunk this thread's or
                        // another's; the labels are ordered by the step's barriers.
                        let chunk = next.fetch_add(1, Ordering::Relaxed);
                        if chunk >= claimed.chunks() {
                            break;
                        }
                        self.tables.push(chunk_header(chunk));
                        let instances = claimed.bounds[chunk]..claimed.bounds[chunk + 1];
                        for (i, &first_and) in instances.clone().zip(&bases[instances]) {
                            self.garble_instance(claimed.phase, i, first_and)?;
                        }
                    }
                    self.tables.push(chunk_end());
                }
            }
            if self.tables.len() >= PUT_BLOCKS {
                self.put()?;
            }
        }
        self.put()?;
        if std::mem::take(&mut self.put_in_step) {
            self.sink.flush()?;
        }
        Ok(())
    }

    /// Garbles instance `instance` of the region at phase `phase` (its first AND the
    /// `first_and`-th), putting its tables as they fill a batch.
    fn garble_instance(
        &mut self,
        phase: usize,
        instance: usize,
        first_and: u64,
    ) -> Result<(), S::Error> {
        let shared = self.shared;
        let (kernel, hash, delta, labels) = (shared.kernel, shared.hash, self.delta, shared.labels);
        let run = shared.instance(phase, instance);
        let (template, pieces) = (run.template, run.pieces);
        let num_wires = template.slots;
        load_instance(&mut self.scratch, labels, &run);
        for k in 0..pieces.count() {
            let gates = &template.gates[pieces.bounds[k]..pieces.bounds[k + 1]];
            // SAFETY: the scratch array is this thread's own, with at least `num_wires`
            // blocks (`load_instance`).
            unsafe {
                garble_gates(
                    kernel,
                    hash,
                    delta,
                    self.scratch.as_mut_ptr(),
                    num_wires,
                    AndTweaks::From(first_and + pieces.ands_before[k]),
                    gates,
                    &mut self.tables,
                );
            }
            if self.tables.len() >= PUT_BLOCKS {
                self.put()?;
            }
        }
        store_instance(&self.scratch, labels, &run);
        Ok(())
    }
}

struct EvaluateRunner<'a, R> {
    shared: &'a Shared<'a>,
    source: &'a mut R,
    scratch: Vec<Block>,
}

impl<R: TableSource> EvaluateRunner<'_, R> {
    /// The next `2 * ands` blocks of the stream.
    fn tables(source: &mut R, thread: usize, ands: usize) -> Result<&[Block], EvalError<R::Error>> {
        Self::tables_raw(source, thread, 2 * ands)
    }

    /// The next `expected` blocks of the stream.
    fn tables_raw(
        source: &mut R,
        thread: usize,
        expected: usize,
    ) -> Result<&[Block], EvalError<R::Error>> {
        if expected == 0 {
            return Ok(&[]);
        }
        let tables = source
            .take(expected)
            .map_err(|source| EvalError::Source { thread, source })?;
        if tables.len() != expected {
            return Err(EvalError::ShortRead {
                thread,
                expected,
                got: tables.len(),
            });
        }
        Ok(tables)
    }
}

impl<R: TableSource> StepRunner for EvaluateRunner<'_, R> {
    type Error = EvalError<R::Error>;

    fn run(&mut self, thread: usize, items: &[Work]) -> Result<(), Self::Error> {
        let shared = self.shared;
        let (kernel, hash, labels) = (shared.kernel, shared.hash, shared.labels);
        let garble_error = |source| EvalError::Garble { thread, source };
        for &item in items {
            match item {
                Work::Gates {
                    src,
                    start,
                    end,
                    first_and,
                    ands,
                } => {
                    let gates = shared.gates(src, start, end);
                    let tables = Self::tables(self.source, thread, ands)?;
                    // SAFETY: as in `GarbleRunner::run`.
                    unsafe {
                        evaluate_gates(
                            kernel,
                            hash,
                            labels.ptr,
                            labels.len,
                            AndTweaks::From(first_and),
                            gates,
                            tables,
                        )
                    }
                    .map_err(garble_error)?;
                }
                Work::Scattered {
                    start,
                    end,
                    first_index,
                    ands,
                } => {
                    let plan = shared.plan;
                    let indices = &plan.and_indices[first_index..first_index + ands];
                    let tables = Self::tables(self.source, thread, ands)?;
                    // SAFETY: as in `GarbleRunner::run`.
                    unsafe {
                        evaluate_gates(
                            kernel,
                            hash,
                            labels.ptr,
                            labels.len,
                            AndTweaks::Each(indices),
                            &plan.pool[start..end],
                            tables,
                        )
                    }
                    .map_err(garble_error)?;
                }
                Work::Instance {
                    phase,
                    instance,
                    first_and,
                } => self.evaluate_instance(thread, phase, instance, first_and)?,
                Work::Claim { region } => self.evaluate_claimed(thread, region)?,
            }
        }
        Ok(())
    }
}

impl<R: TableSource> EvaluateRunner<'_, R> {
    /// Evaluates instance `instance` of the region at phase `phase` (its first AND the
    /// `first_and`-th) with the next tables of the stream.
    fn evaluate_instance(
        &mut self,
        thread: usize,
        phase: usize,
        instance: usize,
        first_and: u64,
    ) -> Result<(), EvalError<R::Error>> {
        let shared = self.shared;
        let (kernel, hash, labels) = (shared.kernel, shared.hash, shared.labels);
        let run = shared.instance(phase, instance);
        let (template, pieces) = (run.template, run.pieces);
        let num_wires = template.slots;
        load_instance(&mut self.scratch, labels, &run);
        for k in 0..pieces.count() {
            let gates = &template.gates[pieces.bounds[k]..pieces.bounds[k + 1]];
            let ands = (pieces.ands_before[k + 1] - pieces.ands_before[k]) as usize;
            let tables = Self::tables(self.source, thread, ands)?;
            // SAFETY: the scratch array is this thread's own, with at least `num_wires`
            // blocks (`load_instance`).
            unsafe {
                evaluate_gates(
                    kernel,
                    hash,
                    self.scratch.as_mut_ptr(),
                    num_wires,
                    AndTweaks::From(first_and + pieces.ands_before[k]),
                    gates,
                    tables,
                )
            }
            .map_err(|source| EvalError::Garble { thread, source })?;
        }
        store_instance(&self.scratch, labels, &run);
        Ok(())
    }

    /// Evaluates the chunks of claimed region `region` that this thread's stream names,
    /// up to its end block (see "Claimed instances" in the module doc).
    fn evaluate_claimed(
        &mut self,
        thread: usize,
        region: usize,
    ) -> Result<(), EvalError<R::Error>> {
        let shared = self.shared;
        let claimed = &shared.plan.claimed[region];
        let claims = &shared.claims[region];
        let bases = &shared.plan.instance_and_base[claimed.phase];
        let refuse = |problem| EvalError::Claim {
            thread,
            phase: claimed.phase,
            problem,
        };
        loop {
            let header = Self::tables_raw(self.source, thread, 1)?[0];
            let chunk = match chunk_mark(header) {
                ChunkMark::End => break,
                ChunkMark::Garbage => return Err(refuse(ClaimProblem::NotAHeader)),
                ChunkMark::Chunk(c) if c >= claimed.chunks() as u64 => {
                    return Err(refuse(ClaimProblem::OutOfRange {
                        chunk: c,
                        chunks: claimed.chunks(),
                    }));
                }
                ChunkMark::Chunk(c) => c as usize,
            };
            // Taken before any of its instances runs: no two threads ever run the same
            // instance, whose output wires they would both write.
            if claims.taken[chunk].swap(true, Ordering::Relaxed) {
                return Err(refuse(ClaimProblem::Twice { chunk }));
            }
            claims.counted.0.fetch_add(1, Ordering::Relaxed);
            let instances = claimed.bounds[chunk]..claimed.bounds[chunk + 1];
            for (i, &first_and) in instances.clone().zip(&bases[instances]) {
                self.evaluate_instance(thread, claimed.phase, i, first_and)?;
            }
        }
        // The last thread of the step to end sees every other thread's count (each counted
        // before it ended, and the AcqRel increments order them).
        if claims.ended.0.fetch_add(1, Ordering::AcqRel) + 1 == claimed.threads {
            let got = claims.counted.0.load(Ordering::Relaxed);
            if got != claimed.chunks() {
                return Err(refuse(ClaimProblem::Missing {
                    got,
                    chunks: claimed.chunks(),
                }));
            }
        }
        Ok(())
    }
}

/// Garbles `circuit` as `plan` says: Δ (lsb 1), the hash key (public, fresh per run), the
/// zero-labels of the global input wires; garbler thread t puts its tables to `sinks[t]`.
/// Returns the output zero-labels, or the first sink error (all threads stop after the
/// step where it happened).
///
/// # Panics
/// If `plan` was made for another circuit, `sinks` does not hold one sink per plan
/// thread, `input_zero_labels` one label per input wire, or Δ has lsb 0.
pub fn garble<S>(
    plan: &Plan,
    circuit: &ParallelCircuit,
    delta: Block,
    hash_key: Block,
    input_zero_labels: &[Block],
    sinks: &mut [S],
) -> Result<GarbleOutput, S::Error>
where
    S: TableSink,
{
    garble_inner(
        plan,
        circuit,
        delta,
        hash_key,
        input_zero_labels,
        sinks,
        None,
    )
    .map(|(output, _)| output)
}

/// [`garble`], with each thread's [`StepTrace`] from `origin` when it is given.
fn garble_inner<S: TableSink>(
    plan: &Plan,
    circuit: &ParallelCircuit,
    delta: Block,
    hash_key: Block,
    input_zero_labels: &[Block],
    sinks: &mut [S],
    origin: Option<Instant>,
) -> Result<(GarbleOutput, Vec<StepTrace>), S::Error> {
    assert!(
        delta.lsb(),
        "the garbler's Δ must have lsb 1 (point-and-permute)"
    );
    assert_eq!(sinks.len(), plan.threads, "one table sink per plan thread");
    assert_eq!(
        input_zero_labels.len(),
        plan.num_input_wires,
        "one zero-label per input wire"
    );
    let hash = TccrHash::new(hash_key);
    let mut labels = initial_labels(plan, input_zero_labels);
    let shared = Shared::new(plan, circuit, &hash, &mut labels);
    let active = plan.stats.active_threads;
    let mut runners: Vec<GarbleRunner<'_, S>> = sinks[..active]
        .iter_mut()
        .map(|sink| GarbleRunner {
            shared: &shared,
            delta,
            sink,
            // Reserved by the thread that uses it (`run_untraced`), not by the caller's
            // thread for every thread before any starts.
            tables: Vec::new(),
            // Grown by the thread that uses it (`load_instance`), in its own cache.
            scratch: Vec::new(),
            put_in_step: false,
            blocks: 0,
            trace: origin.map(|origin| StepTrace {
                origin,
                calls: 0,
                steps: Vec::new(),
            }),
        })
        .collect();
    execute(plan, &mut runners)?;
    let mut blocks_per_stream: Vec<u64> = runners.iter().map(|r| r.blocks).collect();
    let traces = runners.iter_mut().filter_map(|r| r.trace.take()).collect();
    blocks_per_stream.resize(plan.threads, 0);
    drop(runners);
    let output_zero_labels = output_labels(plan, circuit, &labels);
    let output = GarbleOutput {
        output_zero_labels,
        and_gates: plan.and_gates,
        blocks_per_stream,
    };
    Ok((output, traces))
}

/// Evaluates `circuit` as `plan` says, from the labels of the global input wires and the
/// hash key the garbler chose; evaluator thread t reads its tables from `sources[t]`.
/// Returns the label of each output wire of the layout. A failing source, a short read or
/// a bad gate stops all threads after the current step and is returned.
///
/// # Panics
/// If `plan` was made for another circuit or `sources` does not hold one source per plan
/// thread.
pub fn evaluate<R>(
    plan: &Plan,
    circuit: &ParallelCircuit,
    hash_key: Block,
    input_labels: &[Block],
    sources: &mut [R],
) -> Result<Vec<Block>, EvalError<R::Error>>
where
    R: TableSource,
{
    assert_eq!(
        sources.len(),
        plan.threads,
        "one table source per plan thread"
    );
    if input_labels.len() != plan.num_input_wires {
        return Err(EvalError::InputCount {
            expected: plan.num_input_wires,
            got: input_labels.len(),
        });
    }
    let hash = TccrHash::new(hash_key);
    let mut labels = initial_labels(plan, input_labels);
    let shared = Shared::new(plan, circuit, &hash, &mut labels);
    let active = plan.stats.active_threads;
    let mut runners: Vec<EvaluateRunner<'_, R>> = sources[..active]
        .iter_mut()
        .map(|source| EvaluateRunner {
            shared: &shared,
            source,
            scratch: Vec::new(),
        })
        .collect();
    execute(plan, &mut runners)?;
    drop(runners);
    Ok(output_labels(plan, circuit, &labels))
}

/// Garbles one instance of `template` on its own: `input_zero` holds the zero-labels of
/// its inner inputs, its first AND is the `and_index_base`-th of the circuit (see
/// [`Plan::instance_and_base`]). Appends 2 blocks per AND to `tables` and replaces
/// `out_zero` with the zero-labels of its inner outputs. `scratch` is reused across calls.
///
/// # Panics
/// If `input_zero` does not hold one label per inner input, Δ has lsb 0, or the template
/// is malformed (as [`ParallelCircuit::new`] rejects).
#[allow(clippy::too_many_arguments)]
pub fn garble_instance(
    template: &Template,
    and_index_base: u64,
    delta: Block,
    hash: &TccrHash,
    input_zero: &[Block],
    scratch: &mut Vec<Block>,
    tables: &mut Vec<Block>,
    out_zero: &mut Vec<Block>,
) {
    assert!(
        delta.lsb(),
        "the garbler's Δ must have lsb 1 (point-and-permute)"
    );
    assert_eq!(
        input_zero.len(),
        template.num_inputs as usize,
        "one zero-label per inner input"
    );
    let num_wires = template.num_wires() as usize;
    scratch.clear();
    scratch.resize(num_wires, Block::ZERO);
    scratch[..input_zero.len()].copy_from_slice(input_zero);
    // SAFETY: the scratch array is the caller's, borrowed mutably, with `num_wires` blocks.
    unsafe {
        garble_gates(
            Kernel::best(),
            hash,
            delta,
            scratch.as_mut_ptr(),
            num_wires,
            AndTweaks::From(and_index_base),
            &template.gates,
            tables,
        );
    }
    out_zero.clear();
    out_zero.extend(template.outputs.iter().map(|&w| scratch[w as usize]));
}

/// Evaluates one instance of `template` (the counterpart of [`garble_instance`]) with its
/// `tables` (exactly 2 blocks per AND); replaces `out` with the labels of its inner
/// outputs.
pub fn evaluate_instance(
    template: &Template,
    and_index_base: u64,
    hash: &TccrHash,
    input_labels: &[Block],
    tables: &[Block],
    scratch: &mut Vec<Block>,
    out: &mut Vec<Block>,
) -> Result<(), GarbleError> {
    if input_labels.len() != template.num_inputs as usize {
        return Err(GarbleError::LabelCount {
            expected: template.num_inputs as usize,
            got: input_labels.len(),
        });
    }
    let num_wires = template.num_wires() as usize;
    scratch.clear();
    scratch.resize(num_wires, Block::ZERO);
    scratch[..input_labels.len()].copy_from_slice(input_labels);
    // SAFETY: the scratch array is the caller's, borrowed mutably, with `num_wires` blocks.
    unsafe {
        evaluate_gates(
            Kernel::best(),
            hash,
            scratch.as_mut_ptr(),
            num_wires,
            AndTweaks::From(and_index_base),
            &template.gates,
            tables,
        )?;
    }
    out.clear();
    for &w in &template.outputs {
        let label = scratch
            .get(w as usize)
            .copied()
            .ok_or(GarbleError::WireOutOfRange {
                gate_index: template.gates.len(),
                op: "output",
                wire: w,
                num_wires,
            })?;
        out.push(label);
    }
    Ok(())
}

/// Offline garbling speed ([`garble_offline`]).
#[derive(Clone, Debug, PartialEq)]
pub struct OfflineStats {
    pub seconds: f64,
    pub and_gates: u64,
    pub and_per_sec: f64,
}

/// A sink that drops the tables (they are still computed into the thread's buffer).
struct Discard;

impl TableSink for Discard {
    type Error = Infallible;
    fn put(&mut self, tables: &[Block]) -> Result<(), Infallible> {
        std::hint::black_box(tables);
        Ok(())
    }
}

/// Garbles `circuit` as `plan` says with random Δ, hash key and input labels, dropping the
/// tables, and times it (paper Fig. 5/6). The plan fixes the thread count.
pub fn garble_offline(plan: &Plan, circuit: &ParallelCircuit) -> OfflineStats {
    offline_run(plan, circuit, false).0
}

/// [`garble_offline`], with when each thread ran each of its steps, in seconds from just
/// before the run's set-up (the label array, the plan check): where a parallel run's time
/// goes (thread wake-up, the threads' shares, the serial steps).
pub fn garble_offline_traced(
    plan: &Plan,
    circuit: &ParallelCircuit,
) -> (OfflineStats, Vec<StepTrace>) {
    offline_run(plan, circuit, true)
}

fn offline_run(
    plan: &Plan,
    circuit: &ParallelCircuit,
    traced: bool,
) -> (OfflineStats, Vec<StepTrace>) {
    let mut prg = Prg::from_os_entropy();
    let delta = random_delta(&mut prg);
    let hash_key = prg.random_block();
    let mut inputs = vec![Block::ZERO; plan.num_input_wires];
    prg.fill_blocks(&mut inputs);
    let mut sinks: Vec<Discard> = (0..plan.threads).map(|_| Discard).collect();
    let start = Instant::now();
    let origin = traced.then_some(start);
    let result = garble_inner(plan, circuit, delta, hash_key, &inputs, &mut sinks, origin);
    let seconds = start.elapsed().as_secs_f64();
    let (output, traces) = match result {
        Ok(output) => output,
        Err(never) => match never {},
    };
    std::hint::black_box(&output.output_zero_labels);
    let stats = OfflineStats {
        seconds,
        and_gates: output.and_gates,
        and_per_sec: output.and_gates as f64 / seconds.max(1e-12),
    };
    (stats, traces)
}
