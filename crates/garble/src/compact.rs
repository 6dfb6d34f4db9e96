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
//! reused slots). Items whose predecessors are done are *ready*. A thread that finishes an
//! item counts its successors' pending predecessors down (atomics) and runs the first one
//! it makes ready itself; the others go to a shared queue, from which a thread with nothing
//! of its own takes a *group* (up to [`GROUP_ITEMS`], in the order they became ready) under
//! its lock (see [`run_window`]). A window ends when all its items are done; the next one
//! then starts (the window is the memory bound: its tables).
//!
//! [`CompactGarbler::garble_main`] and [`CompactEvaluator::evaluate_main`] take the whole
//! main body and pipeline it: the calling thread reads the main body, plans the next window
//! and sends (or receives) tables while the other threads run the window before, so
//! reading and planning, a third of one thread's work on edit distance, no longer stop
//! the threads at every window. Of `threads`, the calling thread is then the one that
//! reads and plans and the others run windows. `push` and `finish` run each window on the
//! calling thread and the others as it fills.
//!
//! The garbler and the evaluator are one implementation (`CompactRun`); a `Role` says what
//! differs: the engine, and when a window's tables meet the caller's stream. The garbler's
//! threads write them, and `emit` gets them after the window ran (pipelined: while the
//! next window runs); the evaluator's `read` fills them before the window runs (pipelined:
//! the next window's, before waiting for the one in flight).
//!
//! Each thread runs an item in its own wire space (the call's inputs, outputs and the
//! callee's scratch, as the [`Expander`] lays out one call; each template's expansion is
//! cached after its first call, so a call costs no expansion), copying the input labels in
//! from the shared main labels and the output labels back. Every AND uses the tweak of its
//! position in the sequential expansion (its call's first AND plus its place in the call),
//! and its tables go to that position of the window's buffer, so the garbled tables are
//! exactly those the sequential garbler produces, for any thread count and group size, and
//! they are sent in that same order: the evaluator may run with any thread count, or
//! sequentially, whatever the garbler used. Memory: main labels, per thread one call's
//! wire space, and one window of tables (two when pipelined: the one running and the one
//! sent or read meanwhile).
//!
//! # Opened calls
//!
//! A call is one item, so a main body of a few big calls that each need the one before
//! (edit distance with its outer loop stored as a template: one call per row, the row
//! calling one template per cell) would run on one thread. A call of a template that
//! itself calls templates, with at least [`OPEN_CALL_ANDS`] ANDs, is therefore *opened*:
//! its template's items enter the window as items of their own, and such calls among
//! them are opened in turn, so the cells of consecutive rows are scheduled one by one and
//! the anti-diagonal wavefront across rows comes back. The inner items read the call's
//! inputs from the caller's wires and write its outputs into the caller's output wires,
//! as the [`Expander`] maps them; the template's scratch lives in a *region* of wires
//! above the main ones (nested opened calls stack above it; the next opened call reuses
//! it). This needs the call's outputs distinct from each other and from its inputs (else
//! an inner write could clobber an input a later inner item reads): the slotter never
//! gives an output of a call the slot of one of its inputs, and a call that breaks the
//! rule is checked for and runs as one item (see [`Planner`]). An inner item's first AND
//! is the call's first AND plus the ANDs of the template items before it, its place in
//! the sequential expansion, so the tables are still the sequential ones. On one thread
//! calls are opened too: their inner calls then take their templates' cached expansions
//! instead of the whole call being expanded again (a row is too big to cache). Memory: the
//! scratch regions of the deepest chain of openable templates (edit distance's row
//! template has 38 scratch wires), 24 bytes a wire (a label, a renaming entry and an
//! aliasing mark), at most `MAX_REGION_WIRES`, and the aliasing marks of the main wires
//! (4 bytes each, once a call is opened). Windows may end inside an opened call, so a call bigger than a
//! window no longer makes the window that big (tables are held per window).
//!
//! One thread needs no dependency graph: it runs the items in order, in windows of
//! [`SEQUENTIAL_WINDOW_ANDS`] (their tables stay in cache), and so costs less than the
//! sequential garbler, which renames every gate of every call on its way.
//!
//! Garbling a group's calls with their gates interleaved (round robin, one AND of each call
//! per turn, so that consecutive ANDs are independent) was measured too: on an AMD EPYC
//! (Zen 5) the half-gates kernel took the same time per AND as on one call at a time (the
//! out-of-order core already overlaps what the calls' chains allow), and the interleaving
//! cost more than it saved, so calls run one after the other (see BENCHMARKS.md).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

use pgc_circuit::compact::{
    Call, CompactError, Expander, Item, Location, MainItems, StopPass, Template, TemplateId,
};
use pgc_circuit::{Gate, Op, WireId};
use pgc_crypto::Block;

use crate::{Evaluator, GarbleError, Garbler};

/// AND gates per thread in one window (32 MiB of tables): a window must span several
/// rows of a wavefront (edit distance at n = 4095 has ≈ 400 k ANDs per row) for its
/// anti-diagonals to be wide.
pub const WINDOW_ANDS_PER_THREAD: u64 = 1 << 20;
/// AND gates in one window on one thread (2 MiB of tables, which stay in cache): items
/// run in order, so the window needs no width.
pub const SEQUENTIAL_WINDOW_ANDS: u64 = 1 << 16;
/// The most items in one window.
pub const WINDOW_MAX_ITEMS: usize = 1 << 20;
/// The most ready items a thread takes at once (one lock per group).
pub const GROUP_ITEMS: usize = 16;

const NONE: u32 = u32::MAX;

/// Makes `buf` `len` blocks long for a window whose every block is written next. Beyond
/// its capacity it is allocated afresh rather than grown, since growing would copy the old
/// window's blocks and hold both copies at once; with an eighth more room, since windows
/// fill to about the same size, each a little over its AND budget by its last item: an
/// exact fit was allocated again (mapped, zeroed and faulted in page by page, 64 MiB on
/// two threads) for nearly every window, which cost a third of what two threads added.
fn size_for_overwrite(buf: &mut Vec<Block>, len: usize) {
    if len > buf.capacity() {
        *buf = Vec::new();
        buf.reserve_exact(len.saturating_add(len / 8));
    }
    buf.resize(len, Block::ZERO);
}

/// A window item as a worker runs it: a main gate, or a call's template and its number of
/// inputs (its wires are the window's). Stored inline rather than as a copy of the
/// [`Item`]: a boxed call with two wire vectors cost an allocation per item when planned
/// and, when run in the order the items became ready, a cache miss on the box (a sixth of
/// what two threads added on edit distance).
#[derive(Clone, Copy)]
enum Unit {
    Gate(Gate),
    Call { template: u32, inputs: u32 },
}

impl Unit {
    fn of(item: &Item) -> Unit {
        match item {
            Item::Gate(g) => Unit::Gate(*g),
            Item::Call(c) => Unit::Call {
                template: c.template,
                inputs: c.inputs.len() as u32,
            },
        }
    }

    /// How many of the item's wires it reads (the rest it writes).
    fn reads(self) -> usize {
        match self {
            Unit::Gate(g) => g.inputs().len(),
            Unit::Call { inputs, .. } => inputs as usize,
        }
    }
}

/// One window of items and, on several threads, their dependency graph.
#[derive(Default)]
struct Window {
    /// The window's items, in order.
    units: Vec<Unit>,
    len: usize,
    /// First AND (flat index) and AND count of each item.
    first_and: Vec<u64>,
    ands: Vec<u64>,
    /// Each item's predecessors: `preds[pred_end[j - 1]..pred_end[j]]` (several threads).
    preds: Vec<u32>,
    pred_end: Vec<u32>,
    /// `marked[p] == j + 1` while item j's predecessors are gathered and p is one of them.
    marked: Vec<u32>,
    /// Each item's label wires (renamed on several threads, see [`Planner`]): its inputs
    /// then its outputs, `wires[wires_end[j - 1]..wires_end[j]]`.
    wires: Vec<WireId>,
    wires_end: Vec<u32>,
    /// On several threads, ANDs on the longest chain of items ending with each item.
    chain_ands: Vec<u64>,
    window_ands: u64,
    window_gates: u64,
    /// Set when the window is closed ([`Planner::close`]): the label wires its run needs,
    /// and for after it, each extended wire written in it with its newest label wire.
    label_wires: usize,
    settle: Vec<(WireId, WireId)>,
}

impl Window {
    /// After the window ran: each extended wire written in it takes its newest label, and
    /// the renamed ones (above `base`) are dropped.
    fn settle_labels(&self, labels: &mut Vec<Block>, base: u32) {
        for &(w, newest) in &self.settle {
            labels[w as usize] = labels[newest as usize];
        }
        labels.truncate(base as usize);
    }

    /// Empties the window for the next one (keeping its buffers).
    fn clear(&mut self) {
        self.wires.clear();
        self.wires_end.clear();
        self.len = 0;
        self.units.clear();
        self.first_and.clear();
        self.ands.clear();
        self.preds.clear();
        self.pred_end.clear();
        self.marked.clear();
        self.chain_ands.clear();
        self.window_ands = 0;
        self.window_gates = 0;
        self.label_wires = 0;
        self.settle.clear();
    }

    /// Stores `item` as the next one.
    fn store(&mut self, item: &Item) {
        self.units.push(Unit::of(item));
        self.len += 1;
    }

    /// The (label) wires item `i` reads and writes: its renamed ones on several threads,
    /// its extended ones on one.
    fn wires(&self, i: usize) -> (&[WireId], &[WireId]) {
        let reads = self.units[i].reads();
        let from = if i == 0 {
            0
        } else {
            self.wires_end[i - 1] as usize
        };
        let to = self.wires_end[i] as usize;
        self.wires[from..to].split_at(reads)
    }
}

/// The successors of each item of a window and their unfinished predecessors, built from
/// the window's predecessor lists when it runs (several threads).
#[derive(Default)]
struct Graph {
    /// `successors[start[i]..start[i + 1]]`.
    start: Vec<u32>,
    successors: Vec<u32>,
    /// Each item's predecessors not yet done (counted down by the threads as they finish).
    pending: Vec<AtomicU32>,
}

impl Graph {
    fn build(&mut self, win: &Window) {
        let n = win.len;
        self.start.clear();
        self.start.resize(n + 1, 0);
        self.pending.clear();
        let mut from = 0;
        for j in 0..n {
            let to = win.pred_end[j] as usize;
            self.pending.push(AtomicU32::new((to - from) as u32));
            for &p in &win.preds[from..to] {
                self.start[p as usize + 1] += 1;
            }
            from = to;
        }
        for i in 0..n {
            self.start[i + 1] += self.start[i];
        }
        self.successors.clear();
        self.successors.resize(win.preds.len(), 0);
        // Filled in item order, so each item's successors come lowest first.
        let mut next: Vec<u32> = self.start[..n].to_vec();
        let mut from = 0;
        for j in 0..n {
            let to = win.pred_end[j] as usize;
            for &p in &win.preds[from..to] {
                self.successors[next[p as usize] as usize] = j as u32;
                next[p as usize] += 1;
            }
            from = to;
        }
    }

    fn successors(&self, i: u32) -> &[u32] {
        &self.successors[self.start[i as usize] as usize..self.start[i as usize + 1] as usize]
    }
}

/// Calls of templates that themselves call templates are *opened* when they have at least
/// this many AND gates (see the module doc): 1/64 of what one thread runs in a window. A
/// call below it is one unit of work of at most 1/64 of a thread's share, so the threads
/// end a window within about that of each other and its planning costs one item; a
/// bigger call (a row of edit distance at n = 1023 has ≈ 100 k ANDs) would keep one
/// thread busy while the others wait, and when the next call needs its result (row i
/// needs row i − 1) hide all the parallelism inside it. On one thread the gain is the
/// cached expansions of the inner calls, for calls too big to cache, which is about this
/// size too (`CACHED_TEMPLATE_GATES` gates hold ≈ 18 k ANDs in edit distance).
pub const OPEN_CALL_ANDS: u64 = WINDOW_ANDS_PER_THREAD / 64;

/// The most wires the regions of the calls open at once may take (64 MiB of labels, 16 MiB
/// of renaming and 16 MiB of aliasing marks per party); a template needing more is run as
/// one item.
const MAX_REGION_WIRES: u64 = 1 << 22;

/// A call being opened: its template's items enter the window one by one, their wires
/// mapped to the extended wires (see [`Planner`]).
#[derive(Default)]
struct OpenCall {
    template: u32,
    /// The next of the template's items to add.
    next: usize,
    /// The caller's extended wires of the call's inputs and outputs.
    inputs: Vec<WireId>,
    outputs: Vec<WireId>,
    /// Template wire `num_inputs + num_outputs + k` (scratch) is extended wire `region + k`.
    region: WireId,
}

/// The wires an item reads and writes, as its body names them.
fn item_wires(item: &Item) -> (&[WireId], &[WireId]) {
    match item {
        Item::Gate(g) => (g.inputs(), std::slice::from_ref(&g.out)),
        Item::Call(c) => (&c.inputs, &c.outputs),
    }
}

/// Builds windows: item counts and, on several threads, the dependencies.
///
/// Main wires are reused slots (edit distance keeps one row and one `diagonal` that every
/// cell rewrites), so ordering items by the slots they share would chain every cell to
/// the next. Instead each write in a window gets a fresh label wire above the extended
/// ones (renaming, as an out-of-order CPU renames registers) and reads go to the newest
/// one: only true dependencies (an item reads what another wrote) remain. When the window
/// is done, each extended wire takes its newest label ([`close`](Planner::close) notes
/// which, [`Window::settle_labels`] copies them).
///
/// *Extended wires* are the main wires followed by the regions of the calls being opened.
/// An opened call's template reads its inputs from the caller's wires and writes its
/// outputs straight into the caller's output wires, as the [`Expander`] maps them, and its
/// scratch lives in its region, above which nested opened calls stack their own. That is
/// sound because a template never writes its inputs and a call is opened only when its
/// output wires are distinct from each other and from its inputs (the slotter never
/// reuses an input's slot for an output of the same call; a call breaking that rule runs
/// as one item, which reads all its inputs before writing an output): so no inner item
/// clobbers a wire a later inner item reads, and a reused slot is ordered by renaming
/// like any other. Regions keep their labels across windows like main wires, so a window
/// may end inside an opened call, and on one thread (no renaming) the items simply run
/// in order on the extended wires.
struct Planner<'t> {
    templates: &'t [Template],
    main_num_wires: u32,
    /// Extended wires: the main ones, then the regions; renamed wires are numbered from here.
    base: u32,
    /// Each extended wire's newest label wire in this window (`NONE`: its own).
    current: Vec<WireId>,
    /// The item that writes each renamed wire (`base + k` is `producer[k]`'s).
    producer: Vec<u32>,
    /// Extended wires written in this window.
    touched: Vec<WireId>,
    /// (gates, ANDs) of one call of each template.
    counts: Vec<(u64, u64)>,
    /// Per template: whether its calls may be opened (it calls templates and its region
    /// fits in `MAX_REGION_WIRES`).
    openable: Vec<bool>,
    /// Calls of openable templates with at least this many ANDs are opened.
    open_ands: u64,
    /// The calls being opened, outermost first: `open[..depth]` (the rest keep buffers).
    open: Vec<OpenCall>,
    depth: usize,
    /// `seen[w] == epoch` while extended wire `w` is an output of the call being checked
    /// for aliasing (allocated at the first check).
    seen: Vec<u32>,
    epoch: u32,
    /// An opened item's extended wires (buffers).
    reads: Vec<WireId>,
    writes: Vec<WireId>,
    next_and: u64,
    /// ANDs on the longest chain of the windows run so far, and of this one.
    span_ands: u64,
    window_span: u64,
    threads: usize,
    /// The most items of one window.
    max_items: usize,
}

impl<'t> Planner<'t> {
    /// A planner for a main body over `main_num_wires` wires calling `templates` (their
    /// sizes read from `space`), on `threads` threads.
    fn new(
        space: &Space,
        templates: &'t [Template],
        main_num_wires: u32,
        threads: usize,
    ) -> Planner<'t> {
        let counts: Vec<(u64, u64)> = (0..templates.len() as u32)
            .map(|t| space.expander.template_counts(t).unwrap_or((0, 0)))
            .collect();
        // Region of an opened call of t: its scratch, then the deepest region of an opened
        // callee (callees have smaller indices).
        let mut need = vec![0u64; templates.len()];
        let mut openable = vec![false; templates.len()];
        for (t, tpl) in templates.iter().enumerate() {
            let mut deepest = 0;
            let mut calls = false;
            for item in &tpl.items {
                if let Item::Call(c) = item {
                    calls = true;
                    let callee = c.template as usize;
                    if callee < t && openable[callee] {
                        deepest = deepest.max(need[callee]);
                    }
                }
            }
            let own = tpl.num_inputs.saturating_add(tpl.num_outputs);
            need[t] = u64::from(tpl.num_wires.saturating_sub(own)) + deepest;
            openable[t] = calls && need[t] <= MAX_REGION_WIRES;
        }
        let region = (0..templates.len())
            .filter(|&t| openable[t])
            .map(|t| need[t])
            .max()
            .unwrap_or(0);
        // Opening needs the region below u32::MAX with room to rename.
        let base = main_num_wires as u64 + region;
        let (base, openable) = if base <= (u32::MAX / 2) as u64 {
            (base as u32, openable)
        } else {
            (main_num_wires, vec![false; templates.len()])
        };
        let renamed = if threads > 1 { base as usize } else { 0 };
        Planner {
            templates,
            main_num_wires,
            base,
            current: vec![NONE; renamed],
            producer: Vec::new(),
            touched: Vec::new(),
            counts,
            openable,
            open_ands: OPEN_CALL_ANDS,
            open: Vec::new(),
            depth: 0,
            seen: Vec::new(),
            epoch: 0,
            reads: Vec::new(),
            writes: Vec::new(),
            next_and: 0,
            span_ands: 0,
            window_span: 0,
            threads,
            max_items: WINDOW_MAX_ITEMS,
        }
    }

    /// Expanded (gates, ANDs) of an item (a call of a missing template fails when it is
    /// expanded).
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

    /// Whether a call `c` with extended wires `inputs` and `outputs` is opened rather than
    /// run as one item: its template calls templates, it is big enough, its arity is the
    /// template's, and its outputs are distinct from each other and from its inputs.
    fn opens(&mut self, c: &Call, inputs: &[WireId], outputs: &[WireId]) -> bool {
        let t = c.template as usize;
        let fits = self.openable.get(t).copied().unwrap_or(false)
            && self.counts[t].1 >= self.open_ands
            && self.templates[t].num_inputs as usize == inputs.len()
            && self.templates[t].num_outputs as usize == outputs.len();
        if !fits {
            return false;
        }
        // Mark the outputs with a fresh epoch: a wire marked twice, or an input marked,
        // is shared.
        if self.seen.len() < self.base as usize {
            self.seen.resize(self.base as usize, 0);
        }
        self.epoch = match self.epoch.checked_add(1) {
            Some(e) => e,
            None => {
                self.seen.fill(0);
                1
            }
        };
        let epoch = self.epoch;
        for &w in outputs {
            match self.seen.get_mut(w as usize) {
                Some(mark) if *mark != epoch => *mark = epoch,
                _ => return false,
            }
        }
        inputs
            .iter()
            .all(|&w| self.seen.get(w as usize).is_some_and(|&mark| mark != epoch))
    }

    /// Notes `p` as a predecessor of the item being added (`me`), once.
    fn precede(win: &mut Window, p: u32, me: u32) {
        if win.marked[p as usize] != me + 1 {
            win.marked[p as usize] = me + 1;
            win.preds.push(p);
        }
    }

    /// Adds a main-body item to `win`, or opens it (see [`step`](Self::step)).
    fn add(&mut self, win: &mut Window, item: &Item) -> Result<(), CompactError> {
        let num_wires = self.main_num_wires;
        let (reads, writes) = item_wires(item);
        if let Some(&w) = reads.iter().chain(writes).find(|&&w| w >= num_wires) {
            return Err(CompactError::TooManyWires {
                what: "a main-body item's wire",
                needed: w as u64 + 1,
                max: num_wires as u64,
            });
        }
        if let Item::Call(c) = item
            && self.opens(c, reads, writes)
        {
            self.open(c.template, reads, writes, num_wires);
            return Ok(());
        }
        let counts = self.item_counts(item);
        self.add_mapped(win, item, reads, writes, counts)
    }

    /// Starts opening a call of `template` whose inputs and outputs are the extended wires
    /// `inputs` and `outputs`, with its region at `region`.
    fn open(&mut self, template: u32, inputs: &[WireId], outputs: &[WireId], region: WireId) {
        if self.depth == self.open.len() {
            self.open.push(OpenCall::default());
        }
        let call = &mut self.open[self.depth];
        call.template = template;
        call.next = 0;
        call.inputs.clear();
        call.inputs.extend_from_slice(inputs);
        call.outputs.clear();
        call.outputs.extend_from_slice(outputs);
        call.region = region;
        self.depth += 1;
    }

    /// Adds the next item of the innermost opened call (opening it in turn if it is such
    /// a call), or ends that call when its items are done. False when no call is open.
    fn step(&mut self, win: &mut Window) -> Result<bool, CompactError> {
        let Some(top) = self.depth.checked_sub(1) else {
            return Ok(false);
        };
        let templates = self.templates;
        let call = &mut self.open[top];
        let t = call.template;
        let tpl = &templates[t as usize];
        let Some(item) = tpl.items.get(call.next) else {
            // Its outputs are in the caller's wires already.
            self.depth = top;
            return Ok(true);
        };
        let at = call.next;
        call.next += 1;
        let (reads, writes) = item_wires(item);
        let map = |w: WireId| -> Result<WireId, CompactError> {
            let outputs = tpl.num_inputs.saturating_add(tpl.num_outputs);
            if w < tpl.num_inputs {
                Ok(call.inputs[w as usize])
            } else if w < outputs {
                Ok(call.outputs[(w - tpl.num_inputs) as usize])
            } else if w < tpl.num_wires {
                Ok(call.region + (w - outputs))
            } else {
                Err(CompactError::WireOutOfRange {
                    at: Location::Template {
                        template: TemplateId {
                            index: Some(t),
                            name: tpl.name.clone(),
                        },
                        item: at as u64,
                    },
                    wire: w,
                    num_wires: tpl.num_wires as u64,
                })
            }
        };
        let (mut mapped_reads, mut mapped_writes) = (
            std::mem::take(&mut self.reads),
            std::mem::take(&mut self.writes),
        );
        mapped_reads.clear();
        mapped_writes.clear();
        let mapped = reads
            .iter()
            .map(|&w| map(w).map(|x| mapped_reads.push(x)))
            .chain(
                writes
                    .iter()
                    .map(|&w| map(w).map(|x| mapped_writes.push(x))),
            )
            .collect::<Result<(), _>>();
        let inner_region = call.region
            + tpl
                .num_wires
                .saturating_sub(tpl.num_inputs.saturating_add(tpl.num_outputs));
        let result = mapped.and_then(|()| match item {
            Item::Call(c) if self.opens(c, &mapped_reads, &mapped_writes) => {
                self.open(c.template, &mapped_reads, &mapped_writes, inner_region);
                Ok(())
            }
            _ => {
                let counts = self.item_counts(item);
                self.add_mapped(win, item, &mapped_reads, &mapped_writes, counts)
            }
        });
        (self.reads, self.writes) = (mapped_reads, mapped_writes);
        result.map(|()| true)
    }

    /// Adds `item` to `win` reading and writing the extended wires `reads` and `writes`
    /// (with its renamed wires and dependencies on several threads), as `counts` (gates,
    /// ANDs) of the expansion.
    fn add_mapped(
        &mut self,
        win: &mut Window,
        item: &Item,
        reads: &[WireId],
        writes: &[WireId],
        (gates, ands): (u64, u64),
    ) -> Result<(), CompactError> {
        let me = win.len as u32;
        if self.threads > 1 {
            let base = self.base;
            let needed = base as u64 + self.producer.len() as u64 + writes.len() as u64;
            if needed > u32::MAX as u64 {
                return Err(CompactError::TooManyWires {
                    what: "the main wires renamed in one window",
                    needed,
                    max: u32::MAX as u64,
                });
            }
            win.marked.push(0);
            let first_pred = win.preds.len();
            for &r in reads {
                let wire = match self.current[r as usize] {
                    NONE => r,
                    renamed => {
                        Self::precede(win, self.producer[(renamed - base) as usize], me);
                        renamed
                    }
                };
                win.wires.push(wire);
            }
            for &w in writes {
                let renamed = base + self.producer.len() as u32;
                self.producer.push(me);
                if self.current[w as usize] == NONE {
                    self.touched.push(w);
                }
                self.current[w as usize] = renamed;
                win.wires.push(renamed);
            }
            win.pred_end.push(win.preds.len() as u32);
            win.wires_end.push(win.wires.len() as u32);
            let chain = ands
                + win.preds[first_pred..]
                    .iter()
                    .map(|&p| win.chain_ands[p as usize])
                    .max()
                    .unwrap_or(0);
            win.chain_ands.push(chain);
            self.window_span = self.window_span.max(chain);
        } else {
            // One thread: the items run in order on the extended wires themselves.
            win.wires.extend_from_slice(reads);
            win.wires.extend_from_slice(writes);
            win.wires_end.push(win.wires.len() as u32);
        }
        win.store(item);
        win.window_gates += gates;
        win.first_and.push(self.next_and);
        win.ands.push(ands);
        self.next_and += ands;
        win.window_ands += ands;
        Ok(())
    }

    fn full(&self, win: &Window) -> bool {
        let ands = if self.threads > 1 {
            WINDOW_ANDS_PER_THREAD * self.threads as u64
        } else {
            SEQUENTIAL_WINDOW_ANDS
        };
        win.len >= self.max_items || win.window_ands >= ands || self.producer.len() as u64 >= ands
    }

    /// Closes `win` for running: notes the label wires it needs (the extended ones and
    /// the renamed ones) and, for after it ran, each extended wire written in it with its
    /// newest label wire; then forgets the window's hazards, so that the next window can
    /// be planned (it starts after all of this one is done) while this one runs.
    fn close(&mut self, win: &mut Window) {
        win.label_wires = self.base as usize + self.producer.len();
        win.settle.clear();
        for &w in &self.touched {
            win.settle.push((w, self.current[w as usize]));
            self.current[w as usize] = NONE;
        }
        self.touched.clear();
        self.producer.clear();
        self.span_ands += self.window_span;
        self.window_span = 0;
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
    /// The threads' view of `labels`, which the caller leaves alone while they use it.
    fn of(labels: &mut [Block]) -> SharedLabels {
        SharedLabels {
            ptr: labels.as_mut_ptr(),
            len: labels.len(),
        }
    }

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

/// One call's wire space (the [`Expander`]'s "main" is this call alone): the call's inputs
/// at `0..n_in`, outputs at `n_in..n_in + n_out`, the callee's scratch above. A group lays
/// several such spaces side by side.
struct Space<'t> {
    templates: &'t [Template],
    expander: Expander<'t>,
    gates: Vec<Gate>,
    /// Each template's expansion in this space, once expanded (if small enough).
    cached: Vec<Option<Vec<Gate>>>,
    call: Item,
}

/// Where an item's gates (in its own space) are.
#[derive(Clone, Copy)]
enum Source {
    /// The cached expansion of this template.
    Cached(u32),
    /// `Group::own[from..to]`.
    Own(usize, usize),
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
            call: Item::Call(Box::new(Call {
                template: 0,
                inputs: Vec::new(),
                outputs: Vec::new(),
            })),
        })
    }

    fn num_wires(&self) -> u32 {
        self.expander.num_wires()
    }

    /// Expands an item with `outputs` outputs into this space (a main gate reads wires 0
    /// and 1 and writes 2): a cached expansion, or gates appended to `own`.
    fn expand(
        &mut self,
        unit: Unit,
        outputs: usize,
        own: &mut Vec<Gate>,
    ) -> Result<Source, CompactError> {
        match unit {
            Unit::Gate(g) => {
                let local = match g.op {
                    Op::Const => Gate { out: 2, ..g },
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
                own.push(local);
                Ok(Source::Own(own.len() - 1, own.len()))
            }
            Unit::Call { template, inputs } => {
                let n_in = inputs;
                let n_out = outputs as u32;
                let t = template as usize;
                // The arity decides the local wires: only a call of the template's own
                // arity may take its cached expansion (others go to the expander's checks).
                let fits = self
                    .templates
                    .get(t)
                    .is_some_and(|tpl| tpl.num_inputs == n_in && tpl.num_outputs == n_out);
                if fits && self.cached[t].is_some() {
                    return Ok(Source::Cached(template));
                }
                if let Item::Call(call) = &mut self.call {
                    call.template = template;
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
                    self.cached[t] = Some(std::mem::take(&mut self.gates));
                    return Ok(Source::Cached(template));
                }
                let from = own.len();
                own.extend_from_slice(&self.gates);
                Ok(Source::Own(from, own.len()))
            }
        }
    }
}

/// Calls `f(local, wire)` for each result of window item `i`: its local wire and the
/// label wire it goes to.
fn each_output(win: &Window, i: usize, mut f: impl FnMut(WireId, WireId)) {
    let (reads, writes) = win.wires(i);
    let first = match win.units[i] {
        Unit::Gate(_) => 2,
        Unit::Call { .. } => reads.len() as u32,
    };
    for (j, &w) in writes.iter().enumerate() {
        f(first + j as u32, w);
    }
}

/// What a thread does with a group of window items.
type RunGroup<'a, W, E> = dyn Fn(&mut W, &[u32]) -> Result<(), E> + Sync + 'a;

/// Runs the items of `win` on `workers.len()` threads, each by `run(worker, &[item])`; the
/// first error stops the window. `graph` is the window's dependency graph, built here.
///
/// A thread that finishes an item counts down its successors' pending predecessors (an
/// atomic per item, no lock) and keeps the first one it makes ready (the lowest-numbered:
/// in edit distance the next cell of its row, whose input it just wrote and still has in
/// cache) to run next itself; the others it makes ready go to the shared queue at once.
/// A thread with nothing of its own takes a share of that queue (at most a group of
/// `group` items, first ready first taken) under its lock. So a chain of items that each
/// release one runs without taking the lock at all: with a lock and a shared queue for
/// every group of ready items (as this did before), two threads spent nearly a quarter
/// more CPU than one on edit distance, and more threads contended for the lock more.
///
/// First ready, first taken: taking the lowest-numbered ready item instead runs a
/// wavefront row by row, and edit distance's ready set then stayed at one or two items;
/// in order of readiness the ready set grows to the anti-diagonal of the window's rows.
fn run_window<W: Send, E: Send>(
    win: &Window,
    graph: &mut Graph,
    workers: &mut [W],
    group: usize,
    run: &RunGroup<'_, W, E>,
) -> Result<(), E> {
    let n = win.len;
    graph.build(win);
    let graph = &*graph;
    struct State<E> {
        ready: VecDeque<u32>,
        /// Items done, as the threads report them when they take the lock.
        done: usize,
        failed: Option<E>,
        /// Threads waiting for a ready item (only they need waking).
        idle: usize,
    }
    let state = Mutex::new(State {
        ready: (0..n as u32)
            .filter(|&i| graph.pending[i as usize].load(Ordering::Relaxed) == 0)
            .collect(),
        done: 0,
        failed: None,
        idle: 0,
    });
    // Set with `failed`, read without the lock between items.
    let stop = AtomicBool::new(false);
    let wake = Condvar::new();
    let threads = workers.len();
    let work = |worker: &mut W| {
        // Items this thread runs next, in order, and those its last item made ready.
        let mut mine: VecDeque<u32> = VecDeque::with_capacity(group);
        let mut fresh: Vec<u32> = Vec::new();
        // Items done here and not yet reported.
        let mut done = 0;
        loop {
            if mine.is_empty() || !fresh.is_empty() {
                let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
                guard.done += std::mem::take(&mut done);
                let released = fresh.len();
                guard.ready.extend(fresh.drain(..));
                if guard.done == n || guard.failed.is_some() {
                    wake.notify_all();
                    return;
                }
                if guard.idle > 0 {
                    if released > 1 {
                        wake.notify_all();
                    } else if released == 1 {
                        wake.notify_one();
                    }
                }
                while mine.is_empty() {
                    // A share of the ready items (at most one group), first ready first:
                    // no thread takes what another could run meanwhile.
                    let take = (guard.ready.len() / threads).clamp(1, group);
                    while mine.len() < take {
                        match guard.ready.pop_front() {
                            Some(i) => mine.push_back(i),
                            None => break,
                        }
                    }
                    if mine.is_empty() {
                        guard.idle += 1;
                        guard = wake.wait(guard).unwrap_or_else(|p| p.into_inner());
                        guard.idle -= 1;
                        if guard.done == n || guard.failed.is_some() {
                            return;
                        }
                    }
                }
            }
            let Some(i) = mine.pop_front() else {
                continue;
            };
            if stop.load(Ordering::Relaxed) {
                return;
            }
            if let Err(e) = run(worker, &[i]) {
                let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
                guard.failed.get_or_insert(e);
                stop.store(true, Ordering::Relaxed);
                wake.notify_all();
                return;
            }
            done += 1;
            // Acquire and release: the thread that makes an item ready sees every write
            // of its predecessors (the counts form one release sequence), and hands it on
            // through the lock when another thread runs it.
            for &s in graph.successors(i) {
                if graph.pending[s as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
                    fresh.push(s);
                }
            }
            if mine.is_empty() && !fresh.is_empty() {
                mine.push_back(fresh.remove(0));
            }
        }
    };
    std::thread::scope(|scope| {
        let (first, rest) = workers.split_first_mut().expect("at least 1 worker");
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

/// What the threads running a window share: the labels, the window's tables (`T`: as its
/// role sees them) and the window's first AND.
#[derive(Clone, Copy)]
struct Shared<T> {
    labels: SharedLabels,
    tables: T,
    base: u64,
}

/// A closed window handed to the runner thread with what its threads share: the calling
/// thread leaves the window, and the labels and tables `shared` points to, alone until the
/// runner reports it done.
struct Job<T> {
    win: *const Window,
    shared: Shared<T>,
}

// SAFETY: the window is only read, by the runner and its threads, while the calling thread
// (which owns it) waits for the runner's report before touching it again.
unsafe impl<T: Send> Send for Job<T> {}

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

/// An error of the threads (which never touch the caller's stream) as one of the pass.
fn widen<E>(e: CompactRunError<Infallible>) -> CompactRunError<E> {
    match e {
        CompactRunError::Circuit(c) => CompactRunError::Circuit(c),
        CompactRunError::Garble(g) => CompactRunError::Garble(g),
        CompactRunError::Io(never) => match never {},
    }
}

/// What tells garbling and evaluating a main body apart; all else ([`CompactRun`]) is
/// shared. The garbler's threads write a window's tables at their places, which go to the
/// caller's `emit` after the window ran; the evaluator's are filled by the caller's `read`
/// before the window runs (pipelined: while the window before is still running), and each
/// thread reads its items' tables from them.
trait Role {
    /// The half-gates engine each thread runs.
    type Engine: Send;
    /// A window's tables as the threads running it see them.
    type Tables: Copy + Send + Sync;
    /// The caller's end of the tables stream: `emit` or `read`.
    type Stream<'s, E>: ?Sized;

    fn set_label(engine: &mut Self::Engine, wire: WireId, label: Block);
    fn label(engine: &Self::Engine, wire: WireId) -> Block;
    fn set_and_index(engine: &mut Self::Engine, and_index: u64);

    /// Readies `tables` for window `win` before it runs, on one thread (`in_order`) or
    /// on several.
    fn before<E>(
        tables: &mut Vec<Block>,
        win: &Window,
        in_order: bool,
        stream: &mut Self::Stream<'_, E>,
    ) -> Result<(), E>;

    /// Hands on the tables of a window that ran.
    fn after<E>(tables: &[Block], stream: &mut Self::Stream<'_, E>) -> Result<(), E>;

    /// The threads' view of `tables`, readied by [`before`](Self::before) for several
    /// threads.
    fn share(tables: &mut Vec<Block>) -> Self::Tables;

    /// Runs item `i` of `win` on `w`, with what the window's threads share.
    ///
    /// # Safety
    /// Every writer of a wire item `i` reads has finished, and no reader or writer of a
    /// wire it writes runs meanwhile (the window's graph orders them); `i` runs once;
    /// `shared` is `win`'s, and its labels and tables outlive the call.
    unsafe fn run_item(
        w: &mut Worker<'_, Self::Engine>,
        win: &Window,
        i: usize,
        shared: Shared<Self::Tables>,
    ) -> Result<(), CompactRunError<Infallible>>;

    /// Runs the items of `win` in order on `w` (one thread), with `tables` readied by
    /// [`before`](Self::before) in order.
    fn run_in_order(
        w: &mut Worker<'_, Self::Engine>,
        win: &Window,
        labels: &mut [Block],
        tables: &mut Vec<Block>,
    ) -> Result<(), CompactRunError<Infallible>>;
}

/// One thread's wire space, engine and gate buffers.
struct Worker<'t, G> {
    space: Space<'t>,
    engine: G,
    /// Gates of an item with no cached expansion.
    own: Vec<Gate>,
    /// One item's tables (garbler on several threads).
    rows: Vec<Block>,
}

impl<'t, G> Worker<'t, G> {
    /// Runs window item `i`: expands it into this worker's space, copies its input labels
    /// in from `labels`, runs `kernel` on its gates from its first AND's tweak on, and
    /// copies its output labels back.
    ///
    /// # Safety
    /// No other thread writes a main wire item `i` reads, or reads or writes one it
    /// writes, during this call; `labels` outlives it.
    unsafe fn run<R: Role<Engine = G>>(
        &mut self,
        win: &Window,
        i: usize,
        labels: SharedLabels,
        kernel: impl FnOnce(&mut G, &[Gate]) -> Result<(), GarbleError>,
    ) -> Result<(), CompactRunError<Infallible>> {
        self.own.clear();
        let (reads, writes) = win.wires(i);
        let source = self
            .space
            .expand(win.units[i], writes.len(), &mut self.own)?;
        for (k, &src) in reads.iter().enumerate() {
            // SAFETY: the caller's guarantee.
            R::set_label(&mut self.engine, k as u32, unsafe { labels.read(src) });
        }
        let gates = match source {
            Source::Cached(t) => self.space.cached[t as usize].as_deref().unwrap_or_default(),
            Source::Own(from, to) => &self.own[from..to],
        };
        R::set_and_index(&mut self.engine, win.first_and[i]);
        kernel(&mut self.engine, gates)?;
        let engine = &self.engine;
        each_output(win, i, |local, main| {
            // SAFETY: the caller's guarantee.
            unsafe { labels.write(main, R::label(engine, local)) }
        });
        Ok(())
    }
}

/// Garbling ([`CompactGarbler`]).
struct Garbling;

impl Role for Garbling {
    type Engine = Garbler;
    type Tables = SharedRows;
    type Stream<'s, E> = dyn FnMut(&[Block]) -> Result<(), E> + 's;

    fn set_label(engine: &mut Garbler, wire: WireId, label: Block) {
        engine.set_zero_label(wire, label);
    }

    fn label(engine: &Garbler, wire: WireId) -> Block {
        engine.zero_label(wire)
    }

    fn set_and_index(engine: &mut Garbler, and_index: u64) {
        engine.set_and_index(and_index);
    }

    fn before<E>(
        tables: &mut Vec<Block>,
        win: &Window,
        in_order: bool,
        _: &mut Self::Stream<'_, E>,
    ) -> Result<(), E> {
        if in_order {
            // The items append their tables.
            tables.clear();
        } else {
            // Every block is written before it is sent.
            size_for_overwrite(tables, 2 * win.window_ands as usize);
        }
        Ok(())
    }

    fn after<E>(tables: &[Block], emit: &mut Self::Stream<'_, E>) -> Result<(), E> {
        if tables.is_empty() {
            return Ok(());
        }
        emit(tables)
    }

    fn share(tables: &mut Vec<Block>) -> SharedRows {
        SharedRows {
            ptr: tables.as_mut_ptr(),
            len: tables.len(),
        }
    }

    unsafe fn run_item(
        w: &mut Worker<'_, Garbler>,
        win: &Window,
        i: usize,
        shared: Shared<SharedRows>,
    ) -> Result<(), CompactRunError<Infallible>> {
        let mut rows = std::mem::take(&mut w.rows);
        rows.clear();
        // SAFETY: the caller's guarantee.
        let done = unsafe {
            w.run::<Self>(win, i, shared.labels, |garbler, gates| {
                garbler.garble(gates, &mut rows);
                Ok(())
            })
        };
        if done.is_ok() {
            // SAFETY: item i's ANDs are its own, and it runs once.
            unsafe {
                shared
                    .tables
                    .write_rows(2 * (win.first_and[i] - shared.base) as usize, &rows)
            };
        }
        w.rows = rows;
        done
    }

    fn run_in_order(
        w: &mut Worker<'_, Garbler>,
        win: &Window,
        labels: &mut [Block],
        tables: &mut Vec<Block>,
    ) -> Result<(), CompactRunError<Infallible>> {
        let labels = SharedLabels::of(labels);
        for i in 0..win.len {
            // SAFETY: one thread, and the labels stay borrowed for the whole window.
            unsafe {
                w.run::<Self>(win, i, labels, |garbler, gates| {
                    garbler.garble(gates, tables);
                    Ok(())
                })?
            };
        }
        Ok(())
    }
}

/// A window's tables, written by the threads at the places of their ANDs.
#[derive(Clone, Copy)]
struct SharedRows {
    ptr: *mut Block,
    len: usize,
}

// SAFETY: used only through `write_rows`, whose callers write disjoint places (an item's
// own tables, from the one thread that runs it).
unsafe impl Send for SharedRows {}
unsafe impl Sync for SharedRows {}

impl SharedRows {
    /// # Safety
    /// No other thread reads or writes blocks `at..at + rows.len()` during this call.
    unsafe fn write_rows(self, at: usize, rows: &[Block]) {
        assert!(
            at + rows.len() <= self.len,
            "tables {at}.. outside the window"
        );
        // SAFETY: in range (checked); exclusive access (the caller's guarantee).
        unsafe { std::ptr::copy_nonoverlapping(rows.as_ptr(), self.ptr.add(at), rows.len()) }
    }
}

/// Evaluating ([`CompactEvaluator`]).
struct Evaluating;

impl Role for Evaluating {
    type Engine = Evaluator;
    type Tables = SharedTables;
    type Stream<'s, E> = dyn FnMut(&mut [Block]) -> Result<(), E> + 's;

    fn set_label(engine: &mut Evaluator, wire: WireId, label: Block) {
        engine.set_label(wire, label);
    }

    fn label(engine: &Evaluator, wire: WireId) -> Block {
        engine.label(wire)
    }

    fn set_and_index(engine: &mut Evaluator, and_index: u64) {
        engine.set_and_index(and_index);
    }

    fn before<E>(
        tables: &mut Vec<Block>,
        win: &Window,
        _: bool,
        read: &mut Self::Stream<'_, E>,
    ) -> Result<(), E> {
        // `read` fills every block.
        size_for_overwrite(tables, 2 * win.window_ands as usize);
        read(tables)
    }

    fn after<E>(_: &[Block], _: &mut Self::Stream<'_, E>) -> Result<(), E> {
        Ok(())
    }

    fn share(tables: &mut Vec<Block>) -> SharedTables {
        SharedTables {
            ptr: tables.as_ptr(),
            len: tables.len(),
        }
    }

    unsafe fn run_item(
        w: &mut Worker<'_, Evaluator>,
        win: &Window,
        i: usize,
        shared: Shared<SharedTables>,
    ) -> Result<(), CompactRunError<Infallible>> {
        // SAFETY: the window's tables, which outlive the call (the caller's guarantee).
        let tables = unsafe { shared.tables.get() };
        let from = 2 * (win.first_and[i] - shared.base) as usize;
        let mine = &tables[from..from + 2 * win.ands[i] as usize];
        // SAFETY: the caller's guarantee.
        unsafe {
            w.run::<Self>(win, i, shared.labels, |evaluator, gates| {
                evaluator.evaluate(gates, mine)
            })
        }
    }

    fn run_in_order(
        w: &mut Worker<'_, Evaluator>,
        win: &Window,
        labels: &mut [Block],
        tables: &mut Vec<Block>,
    ) -> Result<(), CompactRunError<Infallible>> {
        let shared = Shared {
            labels: SharedLabels::of(labels),
            tables: Self::share(tables),
            base: win.first_and.first().copied().unwrap_or(0),
        };
        for i in 0..win.len {
            // SAFETY: one thread, items in order, and the labels and tables stay borrowed
            // for the whole window.
            unsafe { Self::run_item(w, win, i, shared)? };
        }
        Ok(())
    }
}

/// A window's tables, read by the threads evaluating it.
#[derive(Clone, Copy)]
struct SharedTables {
    ptr: *const Block,
    len: usize,
}

// SAFETY: the tables are only read, while the window runs (the calling thread leaves them
// alone until then).
unsafe impl Send for SharedTables {}
unsafe impl Sync for SharedTables {}

impl SharedTables {
    /// # Safety
    /// The tables outlive `'a` and nothing writes them meanwhile.
    unsafe fn get<'a>(self) -> &'a [Block] {
        // SAFETY: the caller's guarantee.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Runs `win` on the threads of `workers` (as [`run_window`]), each item as its role does.
fn run_shared<R: Role>(
    win: &Window,
    graph: &mut Graph,
    workers: &mut [Worker<'_, R::Engine>],
    group: usize,
    shared: Shared<R::Tables>,
) -> Result<(), CompactRunError<Infallible>> {
    let each = |w: &mut Worker<'_, R::Engine>, items: &[u32]| {
        for &i in items {
            // SAFETY: `run_window` runs item i once, after its predecessors and apart
            // from every item it is ordered with; `shared` is the window's, which
            // outlives the run.
            unsafe { R::run_item(w, win, i as usize, shared)? };
        }
        Ok(())
    };
    run_window(win, graph, workers, group, &each)
}

/// The runner thread of a pipelined pass: runs each window it is handed on `workers` (as
/// [`run_window`]) and reports the outcome, until the calling thread hangs up.
fn serve<R: Role>(
    jobs: mpsc::Receiver<Job<R::Tables>>,
    done: mpsc::Sender<Result<(), CompactRunError<Infallible>>>,
    graph: &mut Graph,
    workers: &mut [Worker<'_, R::Engine>],
    group: usize,
) {
    for job in jobs {
        // SAFETY: the calling thread leaves the window alone until it hears back.
        let win = unsafe { &*job.win };
        let ran = run_shared::<R>(win, graph, workers, group, job.shared);
        if done.send(ran).is_err() {
            return;
        }
    }
}

/// The runner's report on the window in flight; a runner that is gone panicked (the
/// scope passes its panic on).
fn wait_for<E>(done: &mpsc::Receiver<Result<(), E>>) -> Result<(), E> {
    done.recv()
        .unwrap_or_else(|_| panic!("the compact runner thread stopped"))
}

/// The threads' side of a run: a worker per thread, the window's dependency graph and
/// the group size.
struct Crew<'t, G> {
    workers: Vec<Worker<'t, G>>,
    graph: Graph,
    group: usize,
}

/// The calling thread's side of a run: it reads the main body, plans windows and meets
/// the caller's tables stream.
struct Feed<'t> {
    labels: Vec<Block>,
    planner: Planner<'t>,
    /// The window being planned.
    window: Window,
    /// Pipelined, the window in flight while the next one is planned.
    spare: Window,
    /// The tables of the window that runs (pipelined: the one in flight).
    tables: Vec<Block>,
    /// Pipelined, the other window's tables: the next one's, read before the one in
    /// flight is waited for (evaluator), or the last one's, sent while the next one runs
    /// (garbler).
    spare_tables: Vec<Block>,
    and_gates: u64,
    gates: u64,
}

impl Feed<'_> {
    /// Plans the next main-body items, calling `run` on the window each time it is full
    /// (also inside an opened call).
    fn push<E>(
        &mut self,
        items: &[Item],
        mut run: impl FnMut(&mut Self) -> Result<(), CompactRunError<E>>,
    ) -> Result<(), CompactRunError<E>> {
        for item in items {
            self.planner.add(&mut self.window, item)?;
            loop {
                if self.planner.full(&self.window) {
                    run(self)?;
                }
                if !self.planner.step(&mut self.window)? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Closes the window planned and runs it on the calling thread (and, on several
    /// threads, the others), its tables meeting the stream before or after.
    fn run_here<R: Role, E>(
        &mut self,
        crew: &mut Crew<'_, R::Engine>,
        stream: &mut R::Stream<'_, E>,
    ) -> Result<(), CompactRunError<E>> {
        self.planner.close(&mut self.window);
        let win = &self.window;
        let in_order = crew.workers.len() == 1;
        R::before(&mut self.tables, win, in_order, stream).map_err(CompactRunError::Io)?;
        self.labels.resize(win.label_wires, Block::ZERO);
        if let [worker] = &mut crew.workers[..] {
            R::run_in_order(worker, win, &mut self.labels, &mut self.tables).map_err(widen)?;
        } else {
            let shared = Shared {
                labels: SharedLabels::of(&mut self.labels),
                tables: R::share(&mut self.tables),
                base: win.first_and.first().copied().unwrap_or(0),
            };
            let ran = run_shared::<R>(win, &mut crew.graph, &mut crew.workers, crew.group, shared);
            win.settle_labels(&mut self.labels, self.planner.base);
            ran.map_err(widen)?;
        }
        R::after(&self.tables, stream).map_err(CompactRunError::Io)?;
        self.and_gates += win.window_ands;
        self.gates += win.window_gates;
        self.window.clear();
        Ok(())
    }
}

/// The calling thread's link to the runner thread of a pipelined run: `flight` while the
/// feed's `spare` window runs there.
struct Link<T> {
    jobs: mpsc::Sender<Job<T>>,
    done: mpsc::Receiver<Result<(), CompactRunError<Infallible>>>,
    flight: bool,
}

impl<T> Link<T> {
    /// Waits for the window in flight, if any, and settles its labels; its tables are
    /// then the feed's `tables`. Whether one was in flight.
    fn land(&mut self, feed: &mut Feed<'_>) -> Result<bool, CompactRunError<Infallible>> {
        if !std::mem::take(&mut self.flight) {
            return Ok(false);
        }
        let ran = wait_for(&self.done);
        feed.spare
            .settle_labels(&mut feed.labels, feed.planner.base);
        ran?;
        feed.and_gates += feed.spare.window_ands;
        feed.gates += feed.spare.window_gates;
        Ok(true)
    }

    /// Closes the window planned and readies its tables (the evaluator reads them); once
    /// the window in flight is done, hands the new one to the runner, and then passes on
    /// the tables of the one that was in flight (the garbler sends them).
    fn hand_over<R: Role<Tables = T>, E>(
        &mut self,
        feed: &mut Feed<'_>,
        stream: &mut R::Stream<'_, E>,
    ) -> Result<(), CompactRunError<E>> {
        feed.planner.close(&mut feed.window);
        R::before(&mut feed.spare_tables, &feed.window, false, stream)
            .map_err(CompactRunError::Io)?;
        let landed = self.land(feed).map_err(widen)?;
        std::mem::swap(&mut feed.window, &mut feed.spare);
        feed.window.clear();
        std::mem::swap(&mut feed.tables, &mut feed.spare_tables);
        let win = &feed.spare;
        if win.len > 0 {
            feed.labels.resize(win.label_wires, Block::ZERO);
            let shared = Shared {
                labels: SharedLabels::of(&mut feed.labels),
                tables: R::share(&mut feed.tables),
                base: win.first_and[0],
            };
            if self.jobs.send(Job { win, shared }).is_err() {
                panic!("the compact runner thread stopped");
            }
            self.flight = true;
        }
        if landed {
            R::after(&feed.spare_tables, stream).map_err(CompactRunError::Io)?;
        }
        Ok(())
    }

    /// Runs what is left: hands over the last window and passes on its tables.
    fn finish<R: Role<Tables = T>, E>(
        &mut self,
        feed: &mut Feed<'_>,
        stream: &mut R::Stream<'_, E>,
    ) -> Result<(), CompactRunError<E>> {
        self.hand_over::<R, E>(feed, stream)?;
        if self.land(feed).map_err(widen)? {
            R::after(&feed.tables, stream).map_err(CompactRunError::Io)?;
        }
        Ok(())
    }
}

/// Feeds the main body `main` piece by piece to `step(Some(items))`, then `step(None)`
/// for the rest, calling `progress` with the ANDs done that `step` returns; the first
/// error stops the pass.
fn drive<E>(
    main: &dyn MainItems,
    progress: &mut dyn FnMut(u64),
    mut step: impl FnMut(Option<&[Item]>) -> Result<u64, CompactRunError<E>>,
) -> Result<(), CompactRunError<E>> {
    let mut failure = None;
    let _ = main.for_each_items(&mut |items| match step(Some(items)) {
        Ok(ands) => {
            progress(ands);
            Ok(())
        }
        Err(e) => {
            failure = Some(e);
            Err(StopPass)
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    progress(step(None)?);
    Ok(())
}

/// A garbler's or evaluator's run of a main body, as its role `R` says:
/// [`CompactGarbler`] and [`CompactEvaluator`] are this with their public names.
struct CompactRun<'t, R: Role> {
    crew: Crew<'t, R::Engine>,
    feed: Feed<'t>,
}

impl<'t, R: Role> CompactRun<'t, R> {
    /// A run of the main body over `main_num_wires` wires calling `templates` on `threads`
    /// threads (0 counts as 1), each with the engine `engine(wires)` makes.
    fn new(
        templates: &'t [Template],
        main_num_wires: u32,
        threads: usize,
        engine: impl Fn(usize) -> R::Engine,
    ) -> Result<Self, CompactError> {
        let threads = threads.max(1);
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let space = Space::new(templates)?;
            workers.push(Worker {
                engine: engine(space.num_wires() as usize),
                space,
                own: Vec::new(),
                rows: Vec::new(),
            });
        }
        let planner = Planner::new(&workers[0].space, templates, main_num_wires, threads);
        Ok(CompactRun {
            crew: Crew {
                workers,
                graph: Graph::default(),
                group: GROUP_ITEMS,
            },
            feed: Feed {
                labels: vec![Block::ZERO; main_num_wires as usize],
                planner,
                window: Window::default(),
                spare: Window::default(),
                tables: Vec::new(),
                spare_tables: Vec::new(),
                and_gates: 0,
                gates: 0,
            },
        })
    }

    fn push<E>(
        &mut self,
        items: &[Item],
        stream: &mut R::Stream<'_, E>,
    ) -> Result<(), CompactRunError<E>> {
        let crew = &mut self.crew;
        self.feed
            .push(items, |feed| feed.run_here::<R, E>(crew, stream))
    }

    fn finish<E>(&mut self, stream: &mut R::Stream<'_, E>) -> Result<(), CompactRunError<E>> {
        self.feed.run_here::<R, E>(&mut self.crew, stream)
    }

    /// The whole main body: as `push` on each piece and `finish` on one thread; on several,
    /// pipelined (see the module doc).
    fn run_main<E>(
        &mut self,
        main: &dyn MainItems,
        stream: &mut R::Stream<'_, E>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), CompactRunError<E>> {
        if self.crew.workers.len() == 1 {
            return drive(main, progress, |items| {
                match items {
                    Some(items) => self.push(items, stream)?,
                    None => self.finish(stream)?,
                }
                Ok(self.feed.and_gates)
            });
        }
        let CompactRun { crew, feed } = self;
        let Crew {
            workers,
            graph,
            group,
        } = crew;
        let group = *group;
        let (jobs, job_rx) = mpsc::channel::<Job<R::Tables>>();
        let (done_tx, done) = mpsc::channel();
        std::thread::scope(|scope| {
            // The calling thread reads and plans: the others run.
            scope.spawn(move || serve::<R>(job_rx, done_tx, graph, &mut workers[1..], group));
            let mut link = Link {
                jobs,
                done,
                flight: false,
            };
            drive(main, progress, |items| {
                match items {
                    Some(items) => feed.push(items, |feed| link.hand_over::<R, E>(feed, stream))?,
                    None => link.finish::<R, E>(feed, stream)?,
                }
                Ok(feed.and_gates)
            })
        })
    }
}

/// The methods [`CompactGarbler`] and [`CompactEvaluator`] share.
macro_rules! shared_methods {
    ($run:ident, $done:literal) => {
        impl $run<'_> {
            /// Caps a window at `items` main items (at least 1; default
            /// [`WINDOW_MAX_ITEMS`]): smaller windows hold fewer tables but wait at their
            /// end more often. The parties need not agree on it.
            pub fn set_window_items(&mut self, items: usize) {
                self.0.feed.planner.max_items = items.max(1);
            }

            /// Caps the ready items a thread takes at once at `items` (at least 1; default
            /// [`GROUP_ITEMS`]). The tables do not depend on it.
            pub fn set_group_items(&mut self, items: usize) {
                self.0.crew.group = items.max(1);
            }

            /// Opens calls (of templates that call templates) with at least `ands` AND
            /// gates (default [`OPEN_CALL_ANDS`]; `u64::MAX` opens none). The tables do not
            /// depend on it.
            pub fn set_open_call_ands(&mut self, ands: u64) {
                self.0.feed.planner.open_ands = ands;
            }

            /// AND gates on the longest chain of dependent items, summed over the windows
            /// run so far (several threads; 0 on one): [`and_gates_done`](Self::and_gates_done)
            /// divided by it bounds the speedup any number of threads can reach.
            pub fn span_and_gates(&self) -> u64 {
                self.0.feed.planner.span_ands
            }

            #[doc = concat!("AND gates ", $done, " so far.")]
            pub fn and_gates_done(&self) -> u64 {
                self.0.feed.and_gates
            }

            #[doc = concat!("Gates (expanded) ", $done, " so far.")]
            pub fn gates_done(&self) -> u64 {
                self.0.feed.gates
            }
        }
    };
}

/// Garbles a compact circuit's main body on several threads; tables come out in the
/// sequential order (see the module doc). Feed the main body with [`push`](Self::push) in
/// order, then [`finish`](Self::finish), or all at once with
/// [`garble_main`](Self::garble_main).
pub struct CompactGarbler<'t>(CompactRun<'t, Garbling>);

shared_methods!(CompactGarbler, "garbled");

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
        CompactRun::new(templates, main_num_wires, threads, |wires| {
            Garbler::new(wires, delta, hash_key)
        })
        .map(CompactGarbler)
    }

    pub fn set_zero_label(&mut self, wire: WireId, label: Block) {
        self.0.feed.labels[wire as usize] = label;
    }

    pub fn zero_label(&self, wire: WireId) -> Block {
        self.0.feed.labels[wire as usize]
    }

    /// Garbles the whole main body `main`: as [`push`](Self::push) on each of its pieces
    /// and then [`finish`](Self::finish), calling `progress` with the ANDs garbled so far
    /// after each piece. On several threads it is pipelined: the calling thread reads and
    /// plans the next window while the others garble this one, and sends this one's
    /// tables while they garble the next (with `push`, reading and planning a window and
    /// sending its tables waited for the threads, and the threads for them: a third of one
    /// thread's work on edit distance, which bounded what any number of threads could
    /// gain). The tables are the same.
    pub fn garble_main<E: Send>(
        &mut self,
        main: &dyn MainItems,
        emit: &mut dyn FnMut(&[Block]) -> Result<(), E>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), CompactRunError<E>> {
        self.0.run_main(main, emit, progress)
    }

    /// Garbles the next main-body items; `emit` receives the tables in sequential order.
    pub fn push<E: Send>(
        &mut self,
        items: &[Item],
        emit: &mut dyn FnMut(&[Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        self.0.push(items, emit)
    }

    /// Garbles what is left.
    pub fn finish<E: Send>(
        &mut self,
        emit: &mut dyn FnMut(&[Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        self.0.finish(emit)
    }
}

/// Evaluates a compact circuit's main body on several threads, reading the tables in the
/// sequential order (see the module doc).
pub struct CompactEvaluator<'t>(CompactRun<'t, Evaluating>);

shared_methods!(CompactEvaluator, "evaluated");

impl<'t> CompactEvaluator<'t> {
    /// An evaluator for the main body over `main_num_wires` wires calling `templates`, on
    /// `threads` threads, with the garbler's hash key.
    pub fn new(
        templates: &'t [Template],
        main_num_wires: u32,
        threads: usize,
        hash_key: Block,
    ) -> Result<Self, CompactError> {
        CompactRun::new(templates, main_num_wires, threads, |wires| {
            Evaluator::new(wires, hash_key)
        })
        .map(CompactEvaluator)
    }

    pub fn set_label(&mut self, wire: WireId, label: Block) {
        self.0.feed.labels[wire as usize] = label;
    }

    pub fn label(&self, wire: WireId) -> Block {
        self.0.feed.labels[wire as usize]
    }

    /// Evaluates the whole main body `main`, as [`CompactGarbler::garble_main`] garbles
    /// it: on several threads the calling thread reads and plans the next window, and
    /// reads its tables, while the others evaluate this one.
    pub fn evaluate_main<E: Send>(
        &mut self,
        main: &dyn MainItems,
        read: &mut dyn FnMut(&mut [Block]) -> Result<(), E>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), CompactRunError<E>> {
        self.0.run_main(main, read, progress)
    }

    /// Evaluates the next main-body items; `read` fills its buffer with the next tables of
    /// the stream (exactly its length).
    pub fn push<E: Send>(
        &mut self,
        items: &[Item],
        read: &mut dyn FnMut(&mut [Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        self.0.push(items, read)
    }

    /// Evaluates what is left.
    pub fn finish<E: Send>(
        &mut self,
        read: &mut dyn FnMut(&mut [Block]) -> Result<(), E>,
    ) -> Result<(), CompactRunError<E>> {
        self.0.finish(read)
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
    /// and one that calls it twice, each cell's result then inverted in place (a main gate
    /// that reads and writes one wire, as compiled edit distance has).
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
                Item::Call(Box::new(Call {
                    template: 0,
                    inputs: vec![0, 1, 2],
                    outputs: vec![4],
                })),
                Item::Gate(Gate::inv(0, 5)),
                Item::Call(Box::new(Call {
                    template: 0,
                    inputs: vec![4, 1, 5],
                    outputs: vec![3],
                })),
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
                main.push(Item::Call(Box::new(Call {
                    template: (i + j) % 2,
                    inputs: vec![row(prev, j), row(cur, j - 1), temp(j)],
                    outputs: vec![row(cur, j)],
                })));
                main.push(Item::Gate(Gate::inv(row(cur, j), row(cur, j))));
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

    /// Rows as calls: the wavefront of [`wavefront`] with each row one call of a row
    /// template (one for even rows, one for odd), whose cells call the cell templates of
    /// `wavefront` (so three levels: row, `twice`, `maj`). Rows alternate between two main
    /// arrays, so each row call writes the slots the previous row call read (write after
    /// read on reused slots), and after every row a main gate inverts one of its cells in
    /// place and every third row another folds its first cell into its last in place.
    fn wavefront_rows(n: u32) -> CompactCircuit {
        let cells = wavefront(n).templates;
        let n_in = 2 * n + 2;
        let row_template = |parity: u32| {
            let prev = |j: u32| j;
            let (x, b) = (n + 1, |j: u32| n + 2 + j);
            let cur = |j: u32| n_in + j;
            let temp = |j: u32| n_in + n + 1 + j % 2;
            let mut items = vec![Item::Gate(Gate::constant(parity == 1, cur(0)))];
            for j in 1..=n {
                items.push(Item::Gate(Gate::xor(x, b(j - 1), temp(j))));
                items.push(Item::Call(Box::new(Call {
                    template: (parity + j) % 2,
                    inputs: vec![prev(j), cur(j - 1), temp(j)],
                    outputs: vec![cur(j)],
                })));
                items.push(Item::Gate(Gate::inv(cur(j), cur(j))));
            }
            Template {
                name: format!("row{parity}"),
                num_inputs: n_in,
                num_outputs: n + 1,
                num_wires: n_in + n + 1 + 2,
                items,
            }
        };
        let row = |r: u32, j: u32| 2 * n + r * (n + 1) + j;
        let mut main = Vec::new();
        for j in 0..=n {
            main.push(Item::Gate(Gate::constant(j % 2 == 1, row(0, j))));
        }
        for i in 1..=n {
            let (cur, prev) = (i % 2, (i - 1) % 2);
            let mut inputs: Vec<WireId> = (0..=n).map(|j| row(prev, j)).collect();
            inputs.push(i - 1);
            inputs.extend(n..2 * n);
            main.push(Item::Call(Box::new(Call {
                template: 2 + i % 2,
                inputs,
                outputs: (0..=n).map(|j| row(cur, j)).collect(),
            })));
            let k = 1 + i % n;
            main.push(Item::Gate(Gate::inv(row(cur, k), row(cur, k))));
            if i % 3 == 0 {
                main.push(Item::Gate(Gate::xor(row(cur, n), row(cur, 1), row(cur, n))));
            }
        }
        let layout = Layout {
            num_wires: 2 * n + 2 * (n + 1),
            input_widths: vec![n, n],
            output_widths: vec![n],
            output_wires: (1..=n).map(|j| row(n % 2, j)).collect(),
        };
        let mut templates = cells;
        templates.push(row_template(0));
        templates.push(row_template(1));
        let c = CompactCircuit {
            layout,
            templates,
            main,
        };
        c.validate().expect("a valid compact circuit");
        c
    }

    /// Garbles `c` on several thread counts, window sizes, group sizes and opening
    /// thresholds, and checks the tables and output labels against the sequential garbler
    /// on the expanded gates, and that evaluation on any thread count (opening or not)
    /// decodes the cleartext result.
    fn check_against_the_sequential_garbler(c: &CompactCircuit, open: &[u64]) {
        let src = CompactSource::new(c.clone()).unwrap();
        let mut prg = Prg::from_seed(Block(17));
        let delta = crate::random_delta(&mut prg);
        let hash_key = prg.random_block();
        let n_in = c.layout.num_input_wires() as usize;
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

        // (threads, window items, group items).
        for (threads, window, group) in [
            (1, 1000, GROUP_ITEMS),
            (1, 7, GROUP_ITEMS),
            (2, 1000, GROUP_ITEMS),
            (3, 1000, 1),
            (4, 1000, 3),
            (8, 1000, GROUP_ITEMS),
            (2, 5, GROUP_ITEMS),
            (3, 1, 2),
        ] {
            for (k, &open_ands) in open.iter().enumerate() {
                let what = format!(
                    "{threads} threads, windows of {window}, groups of {group}, opening at \
                     {open_ands} ANDs"
                );
                let mut g =
                    CompactGarbler::new(&c.templates, c.layout.num_wires, threads, delta, hash_key)
                        .unwrap();
                g.set_window_items(window);
                g.set_group_items(group);
                g.set_open_call_ands(open_ands);
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
                assert!(tables == seq_tables, "tables differ: {what}");

                // The whole main body at once (pipelined on several threads): the same
                // tables and labels, and progress up to every AND.
                let mut whole =
                    CompactGarbler::new(&c.templates, c.layout.num_wires, threads, delta, hash_key)
                        .unwrap();
                whole.set_window_items(window);
                whole.set_group_items(group);
                whole.set_open_call_ands(open_ands);
                for (w, &z) in zero.iter().enumerate() {
                    whole.set_zero_label(w as u32, z);
                }
                let mut whole_tables = Vec::new();
                let mut seen = Vec::new();
                whole
                    .garble_main(
                        &Pieces(&c.main, 7),
                        &mut |t: &[Block]| -> Result<(), ()> {
                            whole_tables.extend_from_slice(t);
                            Ok(())
                        },
                        &mut |ands| seen.push(ands),
                    )
                    .unwrap();
                assert!(whole_tables == seq_tables, "tables differ (whole): {what}");

                // The first items by `push`, the rest by `garble_main` (which goes on from
                // the window `push` left open): the same tables and labels.
                let mut mixed =
                    CompactGarbler::new(&c.templates, c.layout.num_wires, threads, delta, hash_key)
                        .unwrap();
                mixed.set_window_items(window);
                mixed.set_group_items(group);
                mixed.set_open_call_ands(open_ands);
                for (w, &z) in zero.iter().enumerate() {
                    mixed.set_zero_label(w as u32, z);
                }
                let mut mixed_tables = Vec::new();
                let mut emit = |t: &[Block]| -> Result<(), ()> {
                    mixed_tables.extend_from_slice(t);
                    Ok(())
                };
                let (head, rest) = c.main.split_at(c.main.len() / 3);
                mixed.push(head, &mut emit).unwrap();
                mixed
                    .garble_main(&Pieces(rest, 4), &mut emit, &mut |_| ())
                    .unwrap();
                assert!(mixed_tables == seq_tables, "tables differ (mixed): {what}");
                assert_eq!(mixed.and_gates_done(), src.and_count(), "{what}");
                for &w in outs {
                    assert_eq!(mixed.zero_label(w), seq.zero_label(w), "{what}, wire {w}");
                }
                assert!(seen.is_sorted(), "{what}: progress {seen:?}");
                assert_eq!(seen.last(), Some(&src.and_count()), "{what}");
                assert_eq!(whole.gates_done(), src.gate_count(), "{what}");
                for &w in outs {
                    assert_eq!(whole.zero_label(w), seq.zero_label(w), "{what}, wire {w}");
                }
                assert_eq!(g.and_gates_done(), src.and_count(), "{what}");
                assert_eq!(g.gates_done(), src.gate_count(), "{what}");
                for &w in outs {
                    assert_eq!(g.zero_label(w), seq.zero_label(w), "{what}, wire {w}");
                }

                // Evaluation on any thread count, group size and threshold decodes the
                // cleartext result.
                let other_open = open[(k + 1) % open.len()];
                // (threads, group, threshold, how): 0 by `push`, 1 by `evaluate_main`, 2
                // the first third by `push` and the rest by `evaluate_main`.
                for (eval_threads, eval_group, eval_open, how) in [
                    (1, GROUP_ITEMS, open_ands, 0),
                    (threads, group, open_ands, 1),
                    (2, 5, other_open, 0),
                    (3, GROUP_ITEMS, open_ands, 2),
                    (1, GROUP_ITEMS, other_open, 1),
                ] {
                    let mut e = CompactEvaluator::new(
                        &c.templates,
                        c.layout.num_wires,
                        eval_threads,
                        hash_key,
                    )
                    .unwrap();
                    e.set_window_items(window + 2);
                    e.set_group_items(eval_group);
                    e.set_open_call_ands(eval_open);
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
                    match how {
                        0 => {
                            e.push(&c.main, &mut read).unwrap();
                            e.finish(&mut read).unwrap();
                        }
                        1 => e
                            .evaluate_main(&Pieces(&c.main, 5), &mut read, &mut |_| ())
                            .unwrap(),
                        _ => {
                            let (head, rest) = c.main.split_at(c.main.len() / 3);
                            e.push(head, &mut read).unwrap();
                            e.evaluate_main(&Pieces(rest, 5), &mut read, &mut |_| ())
                                .unwrap();
                        }
                    }
                    assert_eq!(at, tables.len());
                    assert_eq!(e.and_gates_done(), src.and_count());
                    let got: Vec<bool> = outs
                        .iter()
                        .map(|&w| e.label(w).lsb() ^ g.zero_label(w).lsb())
                        .collect();
                    assert_eq!(
                        got, expect_bits,
                        "{what} → {eval_threads} threads opening at {eval_open} ({how})"
                    );
                }
            }
        }
    }

    /// A main body in pieces of a given length.
    struct Pieces<'a>(&'a [Item], usize);

    impl MainItems for Pieces<'_> {
        fn for_each_items(
            &self,
            f: &mut dyn FnMut(&[Item]) -> Result<(), StopPass>,
        ) -> Result<(), StopPass> {
            self.0.chunks(self.1).try_for_each(f)
        }
    }

    /// A sink or source that fails, or panics, at any of its calls stops a pass (pipelined
    /// on several threads, window by window on one) with its error, or its panic, rather
    /// than hanging the threads or going on.
    #[test]
    fn a_failing_or_panicking_sink_stops_a_pass_at_any_call() {
        let c = wavefront(9);
        for threads in [1, 2, 3] {
            let garbler = || {
                let mut g = CompactGarbler::new(
                    &c.templates,
                    c.layout.num_wires,
                    threads,
                    Block(3),
                    Block(5),
                )
                .unwrap();
                g.set_window_items(20);
                g
            };
            let evaluator = || {
                let mut e =
                    CompactEvaluator::new(&c.templates, c.layout.num_wires, threads, Block(5))
                        .unwrap();
                e.set_window_items(20);
                e
            };
            // How often each party meets its stream in a whole pass.
            let mut emits = 0;
            garbler()
                .garble_main(
                    &Pieces(&c.main, 7),
                    &mut |_: &[Block]| -> Result<(), ()> {
                        emits += 1;
                        Ok(())
                    },
                    &mut |_| (),
                )
                .unwrap();
            let mut reads = 0usize;
            evaluator()
                .evaluate_main(
                    &Pieces(&c.main, 7),
                    &mut |buf: &mut [Block]| -> Result<(), ()> {
                        reads += 1;
                        buf.fill(Block(reads as u128));
                        Ok(())
                    },
                    &mut |_| (),
                )
                .unwrap();
            assert!(emits > 3 && reads > 3, "{threads} threads: {emits} {reads}");
            for fail_at in 1..=emits {
                let mut calls = 0;
                let outcome = garbler().garble_main(
                    &Pieces(&c.main, 7),
                    &mut |_: &[Block]| -> Result<(), usize> {
                        calls += 1;
                        if calls == fail_at { Err(calls) } else { Ok(()) }
                    },
                    &mut |_| (),
                );
                assert!(
                    matches!(outcome, Err(CompactRunError::Io(n)) if n == fail_at),
                    "{threads} threads, emit {fail_at}: {outcome:?}"
                );
                assert_eq!(calls, fail_at, "{threads} threads: emitted after the error");
            }
            for fail_at in 1..=reads {
                let mut calls = 0;
                let outcome = evaluator().evaluate_main(
                    &Pieces(&c.main, 7),
                    &mut |buf: &mut [Block]| -> Result<(), usize> {
                        calls += 1;
                        buf.fill(Block(calls as u128));
                        if calls == fail_at { Err(calls) } else { Ok(()) }
                    },
                    &mut |_| (),
                );
                assert!(
                    matches!(outcome, Err(CompactRunError::Io(n)) if n == fail_at),
                    "{threads} threads, read {fail_at}: {outcome:?}"
                );
                assert_eq!(calls, fail_at, "{threads} threads: read after the error");
            }
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut calls = 0;
                garbler().garble_main(
                    &Pieces(&c.main, 7),
                    &mut |_: &[Block]| -> Result<(), ()> {
                        calls += 1;
                        assert!(calls < 3, "the sink gives up");
                        Ok(())
                    },
                    &mut |_| (),
                )
            }));
            assert!(panicked.is_err(), "{threads} threads");
        }
    }

    #[test]
    fn tables_and_labels_match_the_sequential_garbler_for_any_thread_count() {
        check_against_the_sequential_garbler(&wavefront(9), &[OPEN_CALL_ANDS, 1]);
    }

    /// Rows as calls, opened or not, and opened down to the `twice` cells (threshold 1)
    /// or only the rows (threshold above a `twice` call's 4 ANDs): the same tables.
    #[test]
    fn opened_row_calls_give_the_sequential_tables_for_any_thread_count() {
        let c = wavefront_rows(9);
        check_against_the_sequential_garbler(&c, &[u64::MAX, 1, 5, OPEN_CALL_ANDS]);
    }

    /// Adds the whole main body of `c` to one window on 2 threads opening calls of at
    /// least `open_ands` ANDs; returns (items, ANDs, ANDs on the longest chain).
    fn plan_one_window(c: &CompactCircuit, open_ands: u64) -> (usize, u64, u64) {
        let space = Space::new(&c.templates).unwrap();
        let mut planner = Planner::new(&space, &c.templates, c.layout.num_wires, 2);
        planner.open_ands = open_ands;
        let mut win = Window::default();
        for item in &c.main {
            planner.add(&mut win, item).unwrap();
            while planner.step(&mut win).unwrap() {}
        }
        let span = planner.window_span;
        planner.close(&mut win);
        (win.len, win.window_ands, span)
    }

    /// Opening row calls brings the wavefront back: a row needs all of the previous row,
    /// so unopened the longest chain is every AND; opened, it follows the cells of one
    /// path through the table (2n − 1 cells of at most 4 ANDs).
    #[test]
    fn opening_row_calls_shortens_the_longest_chain_to_the_wavefront() {
        let n = 12;
        let c = wavefront_rows(n);
        let (closed_items, work, closed_span) = plan_one_window(&c, u64::MAX);
        assert_eq!(closed_span, work, "rows chained: {closed_items} items");
        let (items, opened_work, span) = plan_one_window(&c, 1);
        assert_eq!(opened_work, work);
        assert!(items > 3 * (n * n) as usize, "{items} items");
        assert!(
            span <= 4 * (2 * n as u64 - 1),
            "longest chain {span} of {work} ANDs"
        );
    }

    /// Renaming leaves only true dependencies: the longest chain of the wavefront's items
    /// follows its anti-diagonals (about 3 items per cell along one), not its ≈ 3n² items
    /// in slot order, although every cell rewrites the same row and temporary slots.
    #[test]
    fn reused_main_slots_do_not_chain_independent_calls() {
        let n = 12;
        let c = wavefront(n);
        let space = Space::new(&c.templates).unwrap();
        let mut planner = Planner::new(&space, &c.templates, c.layout.num_wires, 2);
        let mut win = Window::default();
        for item in &c.main {
            planner.add(&mut win, item).unwrap();
        }
        let mut depth = vec![0usize; win.len];
        let mut from = 0;
        for j in 0..win.len {
            let to = win.pred_end[j] as usize;
            depth[j] = 1 + win.preds[from..to]
                .iter()
                .map(|&p| depth[p as usize])
                .max()
                .unwrap_or(0);
            from = to;
        }
        let longest = depth.iter().copied().max().unwrap_or(0);
        let n = n as usize;
        assert!(win.len > 3 * n * n, "{} items", win.len);
        assert!(
            longest <= 3 * (2 * n - 1) + 2,
            "longest chain {longest} of {} items",
            win.len
        );
        // And the graph's successor lists are the predecessor lists turned around.
        let mut graph = Graph::default();
        graph.build(&win);
        let edges: usize = (0..win.len as u32).map(|i| graph.successors(i).len()).sum();
        assert_eq!(edges, win.preds.len());
        assert_eq!(
            graph
                .pending
                .iter()
                .map(|p| p.load(Ordering::Relaxed) as usize)
                .sum::<usize>(),
            edges
        );
    }

    #[test]
    fn a_malformed_main_item_is_an_error_not_a_panic() {
        let c = wavefront(3);
        let mut g = CompactGarbler::new(&c.templates, c.layout.num_wires, 2, Block(3), Block::ZERO)
            .unwrap();
        let bad = [Item::Call(Box::new(Call {
            template: 0,
            inputs: vec![0, 1, c.layout.num_wires + 5],
            outputs: vec![6],
        }))];
        let mut emit = |_: &[Block]| -> Result<(), ()> { Ok(()) };
        assert!(g.push(&bad, &mut emit).is_err());
        let missing = [Item::Call(Box::new(Call {
            template: 9,
            inputs: vec![0, 1, 2],
            outputs: vec![6],
        }))];
        let mut g = CompactGarbler::new(&c.templates, c.layout.num_wires, 2, Block(3), Block::ZERO)
            .unwrap();
        let r = g
            .push(&missing, &mut emit)
            .and_then(|()| g.finish(&mut emit));
        assert!(r.is_err());
    }
    /// A malformed call that would be opened (rows of [`wavefront_rows`]) fails cleanly,
    /// on the garbler and the evaluator, and so does a row template with a wire out of
    /// range (refused when the garbler is made, before any call is opened).
    #[test]
    fn a_malformed_opened_call_is_an_error_not_a_panic() {
        let c = wavefront_rows(3);
        let num_wires = c.layout.num_wires;
        let Some(Item::Call(row)) = c.main.iter().find(|i| matches!(i, Item::Call(_))) else {
            panic!("a row call");
        };
        let bad = |f: &dyn Fn(&mut Call)| {
            let mut call = (**row).clone();
            f(&mut call);
            Item::Call(Box::new(call))
        };
        let cases = [
            (
                "an input out of range",
                bad(&|c| c.inputs[2] = num_wires + 5),
            ),
            ("an output out of range", bad(&|c| c.outputs[1] = num_wires)),
            (
                "an input too few",
                bad(&|c| {
                    c.inputs.pop();
                }),
            ),
            ("an output too many", bad(&|c| c.outputs.push(0))),
            ("a missing template", bad(&|c| c.template = 99)),
        ];
        let mut emit = |_: &[Block]| -> Result<(), ()> { Ok(()) };
        let mut read = |buf: &mut [Block]| -> Result<(), ()> {
            buf.fill(Block::ZERO);
            Ok(())
        };
        for (what, item) in &cases {
            let items = std::slice::from_ref(item);
            let mut g =
                CompactGarbler::new(&c.templates, num_wires, 2, Block(3), Block::ZERO).unwrap();
            g.set_open_call_ands(1);
            let r = g.push(items, &mut emit).and_then(|()| g.finish(&mut emit));
            assert!(r.is_err(), "garbler: {what}");
            let mut e = CompactEvaluator::new(&c.templates, num_wires, 3, Block::ZERO).unwrap();
            e.set_open_call_ands(1);
            let r = e.push(items, &mut read).and_then(|()| e.finish(&mut read));
            assert!(r.is_err(), "evaluator: {what}");
        }
        let mut templates = c.templates.clone();
        let row_wires = templates[2].num_wires;
        templates[2]
            .items
            .push(Item::Gate(Gate::xor(0, row_wires + 3, row_wires - 1)));
        let made = CompactGarbler::new(&templates, num_wires, 2, Block(3), Block::ZERO);
        let err = made.err().expect("a template wire out of range is refused");
        assert!(err.to_string().contains("out of range"), "{err}");

        // A row call whose output is one of its inputs is not opened (an inner write would
        // clobber the input): it runs as one item, giving the same tables whether opening
        // is asked for or not, on one thread or three.
        let aliased = bad(&|c| c.outputs[1] = c.inputs[3]);
        let garble = |threads: usize, open_ands: u64| {
            let mut g =
                CompactGarbler::new(&c.templates, num_wires, threads, Block(3), Block(5)).unwrap();
            g.set_open_call_ands(open_ands);
            for w in 0..num_wires {
                g.set_zero_label(w, Block(u128::from(w) << 7));
            }
            let mut tables = Vec::new();
            let mut emit = |t: &[Block]| -> Result<(), ()> {
                tables.extend_from_slice(t);
                Ok(())
            };
            let items = [aliased.clone(), Item::Call(row.clone())];
            g.push(&items, &mut emit).unwrap();
            g.finish(&mut emit).unwrap();
            let labels: Vec<Block> = (0..num_wires).map(|w| g.zero_label(w)).collect();
            (tables, labels)
        };
        let whole = garble(1, u64::MAX);
        assert!(!whole.0.is_empty());
        for (threads, open_ands) in [(1, 1), (3, 1), (3, u64::MAX)] {
            assert!(
                garble(threads, open_ands) == whole,
                "{threads} threads, {open_ands}"
            );
        }
    }
}
