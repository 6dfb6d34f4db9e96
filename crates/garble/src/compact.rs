//! Garbling and evaluating a compact circuit ([`pgc_circuit::compact`]) on several threads:
//! main-body items (calls and gates) that do not depend on each other run on different
//! threads, such as the cells of one anti-diagonal of edit distance (the wavefront) or
//! independent limbs. This is coarse-grained parallelism (Buescher et al., USENIX Security
//! 2015, §4.4) found at run time over calls instead of at compile time over loop iterations.
//!
//! # How it works
//!
//! The main body is cut into *windows* of consecutive items (at most
//! [`WINDOW_ANDS_PER_THREAD`] × threads AND gates, [`WINDOW_MAX_ITEMS`] items). Within a
//! window, item j depends on an earlier item i when they touch one main wire and at least one
//! of them writes it (read after write, write after read, write after write: main wires are
//! reused slots). Items whose predecessors are done are *ready*; each thread takes the ready
//! item of lowest index, runs it, and releases its successors. A window ends when all its
//! items are done; the next one then starts (the window is the memory bound: its tables).
//!
//! Each thread expands a call into its own wire space (the call's inputs, outputs and the
//! callee's scratch; an [`Expander`] and a [`Garbler`]/[`Evaluator`] per thread), copying the
//! input labels in from the shared main labels and the output labels back. Every AND uses
//! the tweaks of its position in the sequential expansion (its call's first AND plus its
//! place in the call), so the garbled tables are exactly those the sequential garbler
//! produces, for any thread count, and they are sent in that same order: the evaluator may
//! run with any thread count, or sequentially, whatever the garbler used. Memory: main
//! labels, per thread one call's wire space, and one window of tables.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::convert::Infallible;
use std::sync::{Condvar, Mutex};

use pgc_circuit::compact::{Call, CompactError, Expander, Item, Template};
use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::Block;

use crate::{Evaluator, GarbleError, Garbler};

/// AND gates per thread in one window (32 MiB of tables): a window must span several
/// rows of a wavefront (edit distance at n = 4095 has ≈ 400 k ANDs per row) for its
/// anti-diagonals to be wide.
pub const WINDOW_ANDS_PER_THREAD: u64 = 1 << 20;
/// The most items in one window.
pub const WINDOW_MAX_ITEMS: usize = 1 << 20;

const NONE: u32 = u32::MAX;

/// The most ready items a thread takes at once.
const MAX_BATCH: usize = 16;

/// The dependency graph of one window.
#[derive(Default)]
struct Window {
    items: Vec<Item>,
    /// First AND (flat index) and AND count of each item.
    first_and: Vec<u64>,
    ands: Vec<u64>,
    /// Unfinished predecessors of each item, and each item's successors.
    pending: Vec<u32>,
    successors: Vec<Vec<u32>>,
    window_ands: u64,
    window_gates: u64,
}

/// Builds windows: item counts and the main-wire hazards.
struct Planner {
    last_writer: Vec<u32>,
    readers: Vec<Vec<u32>>,
    touched: Vec<WireId>,
    /// (gates, ANDs) of one call of each template.
    counts: Vec<(u64, u64)>,
    next_and: u64,
    threads: usize,
    /// The most items of one window.
    max_items: usize,
    /// A buffer for one item's predecessors.
    preds: Vec<u32>,
}

impl Planner {
    /// A planner for a main body over `main_num_wires` wires calling `templates` templates
    /// (their sizes read from `space`), on `threads` threads.
    fn new(space: &Space, templates: usize, main_num_wires: u32, threads: usize) -> Planner {
        Planner {
            last_writer: vec![NONE; main_num_wires as usize],
            readers: vec![Vec::new(); main_num_wires as usize],
            touched: Vec::new(),
            counts: (0..templates as u32)
                .map(|t| space.expander.template_counts(t).unwrap_or((0, 0)))
                .collect(),
            next_and: 0,
            threads,
            max_items: WINDOW_MAX_ITEMS,
            preds: Vec::new(),
        }
    }

    /// Expanded (gates, ANDs) of a main item (a call of a missing template fails when
    /// it is expanded).
    fn item_counts(&self, item: &Item) -> (u64, u64) {
        match item {
            Item::Gate(g) => (1, u64::from(g.op == Op::And)),
            Item::Call(c) => self
                .counts
                .get(c.template as usize)
                .copied()
                .unwrap_or((0, 0)),
        }
    }

    fn touch(&mut self, w: WireId) -> Result<usize, CompactError> {
        let i = w as usize;
        if i >= self.last_writer.len() {
            return Err(CompactError::TooManyWires {
                what: "a main-body item's wire",
                needed: w as u64 + 1,
                max: self.last_writer.len() as u64,
            });
        }
        if self.last_writer[i] == NONE && self.readers[i].is_empty() {
            self.touched.push(w);
        }
        Ok(i)
    }

    /// Adds `item` to `win` with its hazards.
    fn add(&mut self, win: &mut Window, item: Item) -> Result<(), CompactError> {
        let me = win.items.len() as u32;
        let mut preds = std::mem::take(&mut self.preds);
        preds.clear();
        let (reads, writes): (&[WireId], &[WireId]) = match &item {
            Item::Gate(g) => (g.inputs(), std::slice::from_ref(&g.out)),
            Item::Call(c) => (&c.inputs, &c.outputs),
        };
        for &r in reads {
            let i = self.touch(r)?;
            if self.last_writer[i] != NONE {
                preds.push(self.last_writer[i]);
            }
            self.readers[i].push(me);
        }
        for &w in writes {
            let i = self.touch(w)?;
            if self.last_writer[i] != NONE {
                preds.push(self.last_writer[i]);
            }
            preds.extend(self.readers[i].iter().copied().filter(|&r| r != me));
            self.readers[i].clear();
            self.last_writer[i] = me;
        }
        preds.sort_unstable();
        preds.dedup();
        for &p in &preds {
            win.successors[p as usize].push(me);
        }
        let n_preds = preds.len() as u32;
        self.preds = preds;
        let (gates, ands) = self.item_counts(&item);
        win.window_gates += gates;
        win.pending.push(n_preds);
        win.successors.push(Vec::new());
        win.first_and.push(self.next_and);
        win.ands.push(ands);
        win.items.push(item);
        self.next_and += ands;
        win.window_ands += ands;
        Ok(())
    }

    fn full(&self, win: &Window) -> bool {
        win.items.len() >= self.max_items
            || win.window_ands >= WINDOW_ANDS_PER_THREAD * self.threads as u64
    }

    /// Forgets the window's hazards (the next window starts after all of it is done).
    fn reset(&mut self, win: &mut Window) {
        for &w in &self.touched {
            self.last_writer[w as usize] = NONE;
            self.readers[w as usize].clear();
        }
        self.touched.clear();
        win.items.clear();
        win.first_and.clear();
        win.ands.clear();
        win.pending.clear();
        win.successors.clear();
        win.window_ands = 0;
        win.window_gates = 0;
    }
}

/// Main labels shared by the threads of a window.
#[derive(Clone, Copy)]
struct SharedLabels {
    ptr: *mut Block,
    len: usize,
}

// SAFETY: the pointer is only used through `read`/`write`, whose callers guarantee (by the
// window's dependency graph) that no wire is written while another thread reads or writes it.
unsafe impl Send for SharedLabels {}
unsafe impl Sync for SharedLabels {}

impl SharedLabels {
    /// # Safety
    /// No other thread writes wire `w` during this call.
    unsafe fn read(self, w: WireId) -> Block {
        assert!((w as usize) < self.len, "main wire {w} out of range");
        // SAFETY: in range (checked); no concurrent write (the caller's guarantee).
        unsafe { *self.ptr.add(w as usize) }
    }

    /// # Safety
    /// No other thread reads or writes wire `w` during this call.
    unsafe fn write(self, w: WireId, label: Block) {
        assert!((w as usize) < self.len, "main wire {w} out of range");
        // SAFETY: in range (checked); exclusive access (the caller's guarantee).
        unsafe { *self.ptr.add(w as usize) = label }
    }
}

/// Templates whose expansion has at most this many gates keep it (per thread) after
/// their first call: every call of a template expands to the same gates in this space.
const CACHED_TEMPLATE_GATES: usize = 1 << 16;

/// One thread's wire space: a call's inputs at `0..n_in`, outputs at `n_in..n_in + n_out`,
/// the callee's scratch above (the [`Expander`]'s "main" is this call alone).
struct Space<'t> {
    templates: &'t [Template],
    expander: Expander<'t>,
    gates: Vec<Gate>,
    /// Each template's expansion in this space, once expanded (if small enough).
    cached: Vec<Option<Vec<Gate>>>,
    call: Item,
}

impl<'t> Space<'t> {
    fn new(templates: &'t [Template]) -> Result<Self, CompactError> {
        let local = templates
            .iter()
            .map(|t| t.num_inputs.saturating_add(t.num_outputs))
            .max()
            .unwrap_or(0)
            .max(3);
        Ok(Space {
            templates,
            expander: Expander::new(templates, local)?,
            gates: Vec::new(),
            cached: vec![None; templates.len()],
            call: Item::Call(Call {
                template: 0,
                inputs: Vec::new(),
                outputs: Vec::new(),
            }),
        })
    }

    fn num_wires(&self) -> usize {
        self.expander.num_wires() as usize
    }

    /// The item's gates in this space (a main gate reads wires 0 and 1 and writes 2); the
    /// main wires whose labels go in, and those that come back, in local order.
    fn expand<'s, 'i>(
        &'s mut self,
        item: &'i Item,
    ) -> Result<(&'s [Gate], &'i [WireId], Local<'i>), CompactError> {
        match item {
            Item::Gate(g) => {
                let local = match g.op {
                    Op::Const => Gate { out: 2, ..*g },
                    Op::Inv | Op::Copy => Gate {
                        op: g.op,
                        a: 0,
                        b: 0,
                        out: 2,
                    },
                    Op::And | Op::Xor => Gate {
                        op: g.op,
                        a: 0,
                        b: 1,
                        out: 2,
                    },
                };
                self.gates.clear();
                self.gates.push(local);
                Ok((&self.gates, g.inputs(), Local::Gate(g.out)))
            }
            Item::Call(c) => {
                let n_in = c.inputs.len() as u32;
                let n_out = c.outputs.len() as u32;
                let t = c.template as usize;
                // The arity decides the local wires: only a call of the template's own
                // arity may take its cached expansion (others go to the expander's checks).
                let fits = self
                    .templates
                    .get(t)
                    .is_some_and(|tpl| tpl.num_inputs == n_in && tpl.num_outputs == n_out);
                let local = Local::Call(n_in, &c.outputs);
                if fits && self.cached[t].is_some() {
                    let gates = self.cached[t].as_deref().unwrap_or_default();
                    return Ok((gates, &c.inputs, local));
                }
                if let Item::Call(call) = &mut self.call {
                    call.template = c.template;
                    call.inputs.clear();
                    call.inputs.extend(0..n_in);
                    call.outputs.clear();
                    call.outputs.extend(n_in..n_in + n_out);
                }
                self.gates.clear();
                let gates = &mut self.gates;
                self.expander.expand::<CompactError>(
                    std::slice::from_ref(&self.call),
                    &mut |chunk| {
                        gates.extend_from_slice(chunk);
                        Ok(())
                    },
                )?;
                self.expander.finish::<CompactError>(&mut |chunk| {
                    gates.extend_from_slice(chunk);
                    Ok(())
                })?;
                if fits && self.gates.len() <= CACHED_TEMPLATE_GATES {
                    self.cached[t] = Some(self.gates.clone());
                }
                Ok((&self.gates, &c.inputs, local))
            }
        }
    }
}

/// Where an item's results are in its thread's space, and the main wires they go to.
enum Local<'i> {
    Gate(WireId),
    Call(u32, &'i [WireId]),
}

impl Local<'_> {
    fn each(&self, mut f: impl FnMut(WireId, WireId)) {
        match *self {
            Local::Gate(out) => f(2, out),
            Local::Call(n_in, outs) => {
                for (j, &w) in outs.iter().enumerate() {
                    f(n_in + j as u32, w);
                }
            }
        }
    }
}

/// Runs every item of `win` on `workers.len()` threads (item order with one), each by
/// `run(worker, item)`; the first error stops the window.
fn run_window<W: Send, E: Send>(
    win: &Window,
    workers: &mut [W],
    run: &(dyn Fn(&mut W, usize) -> Result<(), E> + Sync),
) -> Result<(), E> {
    let n = win.items.len();
    if workers.len() == 1 || n < 2 {
        for i in 0..n {
            run(&mut workers[0], i)?;
        }
        return Ok(());
    }
    struct State<E> {
        ready: BinaryHeap<Reverse<u32>>,
        pending: Vec<u32>,
        done: usize,
        failed: Option<E>,
        /// Threads waiting for a ready item (only they need waking).
        idle: usize,
    }
    let state = Mutex::new(State {
        ready: (0..n as u32)
            .filter(|&i| win.pending[i as usize] == 0)
            .map(Reverse)
            .collect(),
        pending: win.pending.clone(),
        done: 0,
        failed: None,
        idle: 0,
    });
    let wake = Condvar::new();
    let threads = workers.len();
    let work = |worker: &mut W| {
        let mut batch: Vec<u32> = Vec::with_capacity(MAX_BATCH);
        let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if guard.done == n || guard.failed.is_some() {
                return;
            }
            // A share of the ready items (at most MAX_BATCH), lowest first: one lock per
            // batch, and no thread takes what another could run meanwhile.
            let take = (guard.ready.len() / threads).clamp(1, MAX_BATCH);
            batch.clear();
            while batch.len() < take {
                match guard.ready.pop() {
                    Some(Reverse(i)) => batch.push(i),
                    None => break,
                }
            }
            if batch.is_empty() {
                guard.idle += 1;
                guard = wake.wait(guard).unwrap_or_else(|p| p.into_inner());
                guard.idle -= 1;
                continue;
            }
            drop(guard);
            let mut outcome = Ok(());
            let mut ran = 0;
            for &i in &batch {
                outcome = run(worker, i as usize);
                if outcome.is_err() {
                    break;
                }
                ran += 1;
            }
            guard = state.lock().unwrap_or_else(|p| p.into_inner());
            let mut released = 0;
            for &i in &batch[..ran] {
                guard.done += 1;
                for &s in &win.successors[i as usize] {
                    let p = &mut guard.pending[s as usize];
                    *p -= 1;
                    if *p == 0 {
                        guard.ready.push(Reverse(s));
                        released += 1;
                    }
                }
            }
            if let Err(e) = outcome {
                guard.failed.get_or_insert(e);
                wake.notify_all();
            } else if guard.idle > 0 {
                if guard.done == n || released > 1 {
                    wake.notify_all();
                } else if released == 1 {
                    wake.notify_one();
                }
            }
        }
    };
    std::thread::scope(|scope| {
        let (first, rest) = workers.split_first_mut().expect("at least 2 workers");
        for w in rest {
            let work = &work;
            scope.spawn(move || work(w));
        }
        work(first);
    });
    let state = state.into_inner().unwrap_or_else(|p| p.into_inner());
    match state.failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Errors of a compact run: the circuit, or the caller's sink or source.
#[derive(Debug, thiserror::Error)]
pub enum CompactRunError<E> {
    #[error(transparent)]
    Circuit(#[from] CompactError),
    #[error(transparent)]
    Garble(#[from] GarbleError),
    #[error("{0}")]
    Io(E),
}

struct GarbleWorker<'t> {
    space: Space<'t>,
    garbler: Garbler,
}

/// Garbles a compact circuit's main body on several threads; tables come out in the
/// sequential order (see the module doc). Feed the main body with [`push`](Self::push) in
/// order, then [`finish`](Self::finish).
pub struct CompactGarbler<'t> {
    workers: Vec<GarbleWorker<'t>>,
    labels: Vec<Block>,
    planner: Planner,
    window: Window,
    tables: Vec<Vec<Block>>,
    and_gates: u64,
    gates: u64,
}

impl<'t> CompactGarbler<'t> {
    /// A garbler for the main body over `main_num_wires` wires calling `templates`, on
    /// `threads` threads (0 counts as 1), with offset `delta` and hash key `hash_key`.
    pub fn new(
        templates: &'t [Template],
        main_num_wires: u32,
        threads: usize,
        delta: Block,
        hash_key: Block,
    ) -> Result<Self, CompactError> {
        let threads = threads.max(1);
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let space = Space::new(templates)?;
            let garbler = Garbler::new(space.num_wires(), delta, hash_key);
            workers.push(GarbleWorker { space, garbler });
        }
        let planner = Planner::new(&workers[0].space, templates.len(), main_num_wires, threads);
        Ok(CompactGarbler {
            workers,
            labels: vec![Block::ZERO; main_num_wires as usize],
            planner,
            window: Window::default(),
            tables: Vec::new(),
            and_gates: 0,
            gates: 0,
        })
    }

    /// Caps a window at `items` main items (at least 1; default [`WINDOW_MAX_ITEMS`]):
    /// smaller windows hold fewer tables but wait at their end more often.
    pub fn set_window_items(&mut self, items: usize) {
        self.planner.max_items = items.max(1);
    }

    pub fn set_zero_label(&mut self, wire: WireId, label: Block) {
        self.labels[wire as usize] = label;
    }

    pub fn zero_label(&self, wire: WireId) -> Block {
        self.labels[wire as usize]
    }

    /// AND gates garbled so far.
    pub fn and_gates_done(&self) -> u64 {
        self.and_gates
    }

    /// Gates (expanded) garbled so far.
    pub fn gates_done(&self) -> u64 {
        self.gates
    }

    /// Garbles the next main-body items; `emit` receives the tables in sequential order.
    pub fn push<E: Send>(
        &mut self,
        items: &[Item],
        emit: &mut dyn FnMut(&[Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        for item in items {
            self.planner.add(&mut self.window, item.clone())?;
            if self.planner.full(&self.window) {
                self.run(emit)?;
            }
        }
        Ok(())
    }

    /// Garbles what is left.
    pub fn finish<E: Send>(
        &mut self,
        emit: &mut dyn FnMut(&[Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        self.run(emit)
    }

    fn run<E: Send>(
        &mut self,
        emit: &mut dyn FnMut(&[Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        let win = &self.window;
        let n = win.items.len();
        self.tables.resize_with(n.max(self.tables.len()), Vec::new);
        let shared = SharedLabels {
            ptr: self.labels.as_mut_ptr(),
            len: self.labels.len(),
        };
        let out = SharedTables(self.tables.as_mut_ptr());
        let run = |w: &mut GarbleWorker<'t>, i: usize| -> Result<(), CompactError> {
            let GarbleWorker { space, garbler } = w;
            let (gates, inputs, local) = space.expand(&win.items[i])?;
            for (k, &src) in inputs.iter().enumerate() {
                // SAFETY: every writer of `src` in this window precedes item i in the
                // dependency graph and every later writer follows it.
                garbler.set_zero_label(k as u32, unsafe { shared.read(src) });
            }
            garbler.set_and_index(win.first_and[i]);
            // SAFETY: item i's table buffer is touched by the thread running item i only.
            let tables = unsafe { out.get(i) };
            tables.clear();
            garbler.garble(gates, tables);
            local.each(|from, to| {
                // SAFETY: readers and writers of `to` are ordered with item i.
                unsafe { shared.write(to, garbler.zero_label(from)) }
            });
            Ok(())
        };
        run_window(win, &mut self.workers, &run)?;
        for t in &self.tables[..n] {
            if !t.is_empty() {
                emit(t).map_err(CompactRunError::Io)?;
            }
        }
        self.and_gates += win.window_ands;
        self.gates += win.window_gates;
        self.planner.reset(&mut self.window);
        Ok(())
    }
}

/// The per-item table buffers of a window, each used by one thread at a time.
#[derive(Clone, Copy)]
struct SharedTables(*mut Vec<Block>);

// SAFETY: each item's buffer is used only by the thread running that item.
unsafe impl Send for SharedTables {}
unsafe impl Sync for SharedTables {}

impl SharedTables {
    /// # Safety
    /// `i` is in range and no other thread uses buffer `i` meanwhile.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self, i: usize) -> &mut Vec<Block> {
        // SAFETY: the caller's guarantee.
        unsafe { &mut *self.0.add(i) }
    }
}

struct EvalWorker<'t> {
    space: Space<'t>,
    evaluator: Evaluator,
}

/// Evaluates a compact circuit's main body on several threads, reading the tables in the
/// sequential order (see the module doc).
pub struct CompactEvaluator<'t> {
    workers: Vec<EvalWorker<'t>>,
    labels: Vec<Block>,
    planner: Planner,
    window: Window,
    tables: Vec<Block>,
    and_gates: u64,
    gates: u64,
}

impl<'t> CompactEvaluator<'t> {
    /// An evaluator for the main body over `main_num_wires` wires calling `templates`, on
    /// `threads` threads, with the garbler's hash key.
    pub fn new(
        templates: &'t [Template],
        main_num_wires: u32,
        threads: usize,
        hash_key: Block,
    ) -> Result<Self, CompactError> {
        let threads = threads.max(1);
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let space = Space::new(templates)?;
            let evaluator = Evaluator::new(space.num_wires(), hash_key);
            workers.push(EvalWorker { space, evaluator });
        }
        let planner = Planner::new(&workers[0].space, templates.len(), main_num_wires, threads);
        Ok(CompactEvaluator {
            workers,
            labels: vec![Block::ZERO; main_num_wires as usize],
            planner,
            window: Window::default(),
            tables: Vec::new(),
            and_gates: 0,
            gates: 0,
        })
    }

    /// As [`CompactGarbler::set_window_items`] (the parties need not agree on it).
    pub fn set_window_items(&mut self, items: usize) {
        self.planner.max_items = items.max(1);
    }

    pub fn set_label(&mut self, wire: WireId, label: Block) {
        self.labels[wire as usize] = label;
    }

    pub fn label(&self, wire: WireId) -> Block {
        self.labels[wire as usize]
    }

    /// AND gates evaluated so far.
    pub fn and_gates_done(&self) -> u64 {
        self.and_gates
    }

    /// Gates (expanded) evaluated so far.
    pub fn gates_done(&self) -> u64 {
        self.gates
    }

    /// Evaluates the next main-body items; `read` fills its buffer with the next tables of
    /// the stream (exactly its length).
    pub fn push<E: Send>(
        &mut self,
        items: &[Item],
        read: &mut dyn FnMut(&mut [Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        for item in items {
            self.planner.add(&mut self.window, item.clone())?;
            if self.planner.full(&self.window) {
                self.run(read)?;
            }
        }
        Ok(())
    }

    /// Evaluates what is left.
    pub fn finish<E: Send>(
        &mut self,
        read: &mut dyn FnMut(&mut [Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        self.run(read)
    }

    fn run<E: Send>(
        &mut self,
        read: &mut dyn FnMut(&mut [Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        let win = &self.window;
        self.tables.clear();
        self.tables
            .resize(2 * win.window_ands as usize, Block::ZERO);
        read(&mut self.tables).map_err(CompactRunError::Io)?;
        let base = win.first_and.first().copied().unwrap_or(0);
        let shared = SharedLabels {
            ptr: self.labels.as_mut_ptr(),
            len: self.labels.len(),
        };
        let tables = &self.tables;
        let run = |w: &mut EvalWorker<'t>, i: usize| -> Result<(), CompactRunError<Infallible>> {
            let EvalWorker { space, evaluator } = w;
            let (gates, inputs, local) = space.expand(&win.items[i])?;
            for (k, &src) in inputs.iter().enumerate() {
                // SAFETY: as in the garbler: the window's graph orders item i with every
                // writer of `src`.
                evaluator.set_label(k as u32, unsafe { shared.read(src) });
            }
            evaluator.set_and_index(win.first_and[i]);
            let from = 2 * (win.first_and[i] - base) as usize;
            let to = from + 2 * win.ands[i] as usize;
            evaluator.evaluate(gates, &tables[from..to])?;
            local.each(|from, to| {
                // SAFETY: readers and writers of `to` are ordered with item i.
                unsafe { shared.write(to, evaluator.label(from)) }
            });
            Ok(())
        };
        run_window(win, &mut self.workers, &run).map_err(widen)?;
        self.and_gates += win.window_ands;
        self.gates += win.window_gates;
        self.planner.reset(&mut self.window);
        Ok(())
    }
}

fn widen<E>(e: CompactRunError<Infallible>) -> CompactRunError<E> {
    match e {
        CompactRunError::Circuit(c) => CompactRunError::Circuit(c),
        CompactRunError::Garble(g) => CompactRunError::Garble(g),
        CompactRunError::Io(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_circuit::compact::{CompactCircuit, CompactSource};
    use pgc_circuit::{GateSource, Layout, eval_bits};
    use pgc_crypto::Prg;

    /// An n × n wavefront like edit distance: cell (i, j) = cell(up, left, a[i] ⊕ b[j])
    /// over two row arrays used in turn and two temporaries (so rows and temporaries are
    /// reused slots: every kind of hazard occurs), cells alternating between a template
    /// and one that calls it twice.
    fn wavefront(n: u32) -> CompactCircuit {
        // Template 0: o = maj(x, y, z) (2 ANDs), slot 4 reused.
        let maj = Template {
            name: "maj".into(),
            num_inputs: 3,
            num_outputs: 1,
            num_wires: 6,
            items: vec![
                Item::Gate(Gate::xor(0, 1, 4)),
                Item::Gate(Gate::and(4, 2, 5)),
                Item::Gate(Gate::and(0, 1, 4)),
                Item::Gate(Gate::xor(4, 5, 3)),
            ],
        };
        // Template 1: maj(maj(x, y, z), y, ¬x).
        let twice = Template {
            name: "twice".into(),
            num_inputs: 3,
            num_outputs: 1,
            num_wires: 6,
            items: vec![
                Item::Call(Call {
                    template: 0,
                    inputs: vec![0, 1, 2],
                    outputs: vec![4],
                }),
                Item::Gate(Gate::inv(0, 5)),
                Item::Call(Call {
                    template: 0,
                    inputs: vec![4, 1, 5],
                    outputs: vec![3],
                }),
            ],
        };
        let row = |r: u32, j: u32| 2 * n + r * (n + 1) + j;
        let temp = |j: u32| 2 * n + 2 * (n + 1) + j % 2;
        let mut main = Vec::new();
        for j in 0..=n {
            main.push(Item::Gate(Gate::constant(j % 2 == 1, row(0, j))));
        }
        for i in 1..=n {
            let (cur, prev) = (i % 2, (i - 1) % 2);
            main.push(Item::Gate(Gate::constant(i % 2 == 1, row(cur, 0))));
            for j in 1..=n {
                main.push(Item::Gate(Gate::xor(i - 1, n + j - 1, temp(j))));
                main.push(Item::Call(Call {
                    template: (i + j) % 2,
                    inputs: vec![row(prev, j), row(cur, j - 1), temp(j)],
                    outputs: vec![row(cur, j)],
                }));
            }
        }
        let layout = Layout {
            num_wires: 2 * n + 2 * (n + 1) + 2,
            input_widths: vec![n, n],
            output_widths: vec![n],
            output_wires: (1..=n).map(|j| row(n % 2, j)).collect(),
        };
        let c = CompactCircuit {
            layout,
            templates: vec![maj, twice],
            main,
        };
        c.validate().expect("a valid compact circuit");
        c
    }

    #[test]
    fn tables_and_labels_match_the_sequential_garbler_for_any_thread_count() {
        let n = 9;
        let c = wavefront(n);
        let src = CompactSource::new(c.clone()).unwrap();
        let mut prg = Prg::from_seed(Block(17));
        let delta = crate::random_delta(&mut prg);
        let hash_key = prg.random_block();
        let n_in = 2 * n as usize;
        let mut zero = vec![Block::ZERO; n_in];
        prg.fill_blocks(&mut zero);
        let bits: Vec<bool> = (0..n_in).map(|_| prg.random_bool()).collect();
        let expect_bits = eval_bits(&src, &bits);

        // The sequential garbler on the expanded gate stream.
        let mut seq = Garbler::new(src.layout().num_wires as usize, delta, hash_key);
        for (w, &z) in zero.iter().enumerate() {
            seq.set_zero_label(w as u32, z);
        }
        let mut seq_tables = Vec::new();
        src.for_each_chunk::<()>(&mut |g| {
            seq.garble(g, &mut seq_tables);
            Ok(())
        })
        .unwrap();
        assert_eq!(seq_tables.len() as u64, 2 * src.and_count());
        let outs = &c.layout.output_wires;

        for (threads, window) in [(1, 1000), (2, 1000), (3, 1000), (8, 1000), (2, 5), (3, 1)] {
            let mut g =
                CompactGarbler::new(&c.templates, c.layout.num_wires, threads, delta, hash_key)
                    .unwrap();
            g.set_window_items(window);
            for (w, &z) in zero.iter().enumerate() {
                g.set_zero_label(w as u32, z);
            }
            let mut tables = Vec::new();
            let mut emit = |t: &[Block]| -> Result<(), ()> {
                tables.extend_from_slice(t);
                Ok(())
            };
            // In uneven pieces, as a file streams them.
            for piece in c.main.chunks(7) {
                g.push(piece, &mut emit).unwrap();
            }
            g.finish(&mut emit).unwrap();
            assert_eq!(tables, seq_tables, "{threads} threads, windows of {window}");
            assert_eq!(g.and_gates_done(), src.and_count());
            assert_eq!(g.gates_done(), src.gate_count());
            for &w in outs {
                assert_eq!(
                    g.zero_label(w),
                    seq.zero_label(w),
                    "{threads} threads, wire {w}"
                );
            }

            // Evaluation on any thread count decodes the cleartext result.
            for eval_threads in [1, threads] {
                let mut e =
                    CompactEvaluator::new(&c.templates, c.layout.num_wires, eval_threads, hash_key)
                        .unwrap();
                e.set_window_items(window + 2);
                for (w, (&z, &b)) in zero.iter().zip(&bits).enumerate() {
                    e.set_label(w as u32, z ^ delta.select(b));
                }
                let mut at = 0;
                let mut read = |buf: &mut [Block]| -> Result<(), String> {
                    let end = at + buf.len();
                    buf.copy_from_slice(tables.get(at..end).ok_or("tables ended")?);
                    at = end;
                    Ok(())
                };
                e.push(&c.main, &mut read).unwrap();
                e.finish(&mut read).unwrap();
                assert_eq!(at, tables.len());
                let got: Vec<bool> = outs
                    .iter()
                    .map(|&w| e.label(w).lsb() ^ g.zero_label(w).lsb())
                    .collect();
                assert_eq!(got, expect_bits, "{threads} → {eval_threads} threads");
            }
        }
    }

    #[test]
    fn a_malformed_main_item_is_an_error_not_a_panic() {
        let c = wavefront(3);
        let mut g = CompactGarbler::new(&c.templates, c.layout.num_wires, 2, Block(3), Block::ZERO)
            .unwrap();
        let bad = [Item::Call(Call {
            template: 0,
            inputs: vec![0, 1, c.layout.num_wires + 5],
            outputs: vec![6],
        })];
        let mut emit = |_: &[Block]| -> Result<(), ()> { Ok(()) };
        assert!(g.push(&bad, &mut emit).is_err());
        let missing = [Item::Call(Call {
            template: 9,
            inputs: vec![0, 1, 2],
            outputs: vec![6],
        })];
        let mut g = CompactGarbler::new(&c.templates, c.layout.num_wires, 2, Block(3), Block::ZERO)
            .unwrap();
        let r = g
            .push(&missing, &mut emit)
            .and_then(|()| g.finish(&mut emit));
        assert!(r.is_err());
    }
}
