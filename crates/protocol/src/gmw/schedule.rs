//! GMW's round schedule: a window of the gate stream, sorted by AND depth so that all AND
//! gates of one level are opened in one message (the seed paper, Demmler et al. CCS 2015,
//! §3.4: "all AND gates on the same layer are evaluated in parallel").
//!
//! Pure computation, no IO. A window is up to [`GmwConfig::window_gates`](super::GmwConfig)
//! consecutive gates. Gate streams may reuse wire slots (sequential `.pgc` circuits and
//! compact expansions do), so reordering them needs renaming: every gate of the window
//! writes its own fresh value, and a gate reads either a value written earlier in the window
//! or the slot as it stood when the window began. After the window the last value written to
//! each slot is copied back ([`Schedule::commits`]).
//!
//! Most circuits pgc streams are already in level order (the sequential protocol's loader
//! levelizes them: each level's linear gates, then its AND gates, see
//! `pgc_circuit::analysis::levelize`). Such a window needs no reordering: run in stream
//! order, each run of consecutive AND gates is one round. [`RoundCounter`] measures, for a
//! window, how many rounds stream order takes and how many reordering would take (its AND
//! depth); the protocol reorders only windows where that saves rounds.
//!
//! Values are numbered in one space: `0..num_slots` are the circuit's slots at the window's
//! start, `num_slots + i` is the output of the window's gate `i`. Depth counts AND gates from
//! the window's start (slots have depth 0), so a circuit that fits in one window runs in
//! exactly its AND depth of rounds, and a larger one in the sum of its windows' depths.

use pgc_circuit::{Gate, Op};

/// A gate that needs no interaction (XOR, INV, copy, constant), on value indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearOp {
    pub op: Op,
    pub a: u32,
    pub b: u32,
    pub out: u32,
}

/// An AND gate on value indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AndOp {
    pub a: u32,
    pub b: u32,
    pub out: u32,
}

/// The window's gates, level by level: level `r` runs `linear(r)`, then the AND gates of
/// depth `r + 1`, `ands(r)` (empty after the last level).
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    num_slots: u32,
    linear: Vec<LinearOp>,
    ands: Vec<AndOp>,
    /// `linear_start[r]..linear_start[r + 1]` are level r's linear gates.
    linear_start: Vec<usize>,
    /// `and_start[r]..and_start[r + 1]` are the AND gates of depth r + 1.
    and_start: Vec<usize>,
    /// (slot, value) for the last value written to each slot in the window.
    commits: Vec<(u32, u32)>,
}

impl Schedule {
    /// Number of levels (the window's AND depth + 1).
    pub fn levels(&self) -> usize {
        self.linear_start.len() - 1
    }

    /// The window's AND depth: its communication rounds.
    pub fn depth(&self) -> usize {
        self.levels() - 1
    }

    pub fn linear(&self, level: usize) -> &[LinearOp] {
        &self.linear[self.linear_start[level]..self.linear_start[level + 1]]
    }

    pub fn ands(&self, level: usize) -> &[AndOp] {
        &self.ands[self.and_start[level]..self.and_start[level + 1]]
    }

    pub fn gates(&self) -> usize {
        self.linear.len() + self.ands.len()
    }

    pub fn and_gates(&self) -> usize {
        self.ands.len()
    }

    pub fn commits(&self) -> &[(u32, u32)] {
        &self.commits
    }

    /// How many values the window needs (slots and its own outputs).
    pub fn values(&self) -> usize {
        self.num_slots as usize + self.gates()
    }
}

/// Builds schedules; keeps the per-slot scratch between windows.
#[derive(Debug)]
pub struct Scheduler {
    num_slots: u32,
    /// For each slot, the window gate that last wrote it, or [`NONE`].
    last_writer: Vec<u32>,
    /// Scratch: each window gate's value depth.
    depth: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Scheduler {
    /// A scheduler for circuits of `num_slots` wires (or slots), with windows of at most
    /// `max_window` gates. Fails if their values do not fit 32-bit indices.
    pub fn new(num_slots: u32, max_window: usize) -> Result<Scheduler, String> {
        if num_slots as u64 + max_window as u64 >= NONE as u64 {
            return Err(format!(
                "a circuit of {num_slots} wires leaves no room for a GMW window of {max_window} \
                 gates in 32-bit value indices"
            ));
        }
        Ok(Scheduler {
            num_slots,
            last_writer: vec![NONE; num_slots as usize],
            depth: Vec::new(),
        })
    }

    /// The schedule of `gates` (a window of at most `max_window` gates whose wires are all
    /// below `num_slots`; the protocol's circuit loaders guarantee this).
    pub fn schedule(&mut self, gates: &[Gate]) -> Schedule {
        let base = self.num_slots;
        let n = gates.len();
        self.depth.clear();
        self.depth.reserve(n);
        // Resolved operands of each gate, in stream order.
        let mut resolved: Vec<(u32, u32)> = Vec::with_capacity(n);
        let mut max_depth = 0u32;
        for (i, g) in gates.iter().enumerate() {
            let value = |w: u32| -> (u32, u32) {
                match self.last_writer[w as usize] {
                    NONE => (w, 0),
                    j => (base + j, self.depth[j as usize]),
                }
            };
            let (a, b, d) = match g.op {
                Op::And | Op::Xor => {
                    let ((a, da), (b, db)) = (value(g.a), value(g.b));
                    let d = da.max(db) + (g.op == Op::And) as u32;
                    (a, b, d)
                }
                Op::Inv | Op::Copy => {
                    let (a, da) = value(g.a);
                    (a, 0, da)
                }
                // The constant bit rides in `a`.
                Op::Const => (g.a, 0, 0),
            };
            max_depth = max_depth.max(d);
            self.depth.push(d);
            resolved.push((a, b));
            self.last_writer[g.out as usize] = i as u32;
        }
        // Counting sort by depth, stable, linear and AND gates apart.
        let levels = max_depth as usize + 1;
        let mut linear_start = vec![0usize; levels + 1];
        let mut and_start = vec![0usize; levels + 1];
        for (g, &d) in gates.iter().zip(&self.depth) {
            if g.op == Op::And {
                // Depth d ≥ 1 runs after level d − 1's linear gates.
                and_start[d as usize] += 1;
            } else {
                linear_start[d as usize + 1] += 1;
            }
        }
        for r in 0..levels {
            linear_start[r + 1] += linear_start[r];
            and_start[r + 1] += and_start[r];
        }
        let mut linear = vec![
            LinearOp {
                op: Op::Copy,
                a: 0,
                b: 0,
                out: 0
            };
            linear_start[levels]
        ];
        let mut ands = vec![AndOp { a: 0, b: 0, out: 0 }; and_start[levels]];
        let (mut next_linear, mut next_and) = (linear_start.clone(), and_start.clone());
        for (i, (g, (&d, &(a, b)))) in gates
            .iter()
            .zip(self.depth.iter().zip(&resolved))
            .enumerate()
        {
            let out = base + i as u32;
            if g.op == Op::And {
                let slot = &mut next_and[d as usize - 1];
                ands[*slot] = AndOp { a, b, out };
                *slot += 1;
            } else {
                let slot = &mut next_linear[d as usize];
                linear[*slot] = LinearOp {
                    op: g.op,
                    a,
                    b,
                    out,
                };
                *slot += 1;
            }
        }
        // The last writer of each slot goes back to it; the scratch is cleared for the next
        // window as it is read.
        let mut commits = Vec::new();
        for (i, g) in gates.iter().enumerate() {
            if self.last_writer[g.out as usize] == i as u32 {
                commits.push((g.out, base + i as u32));
            }
        }
        for g in gates {
            self.last_writer[g.out as usize] = NONE;
        }
        Schedule {
            num_slots: base,
            linear,
            ands,
            linear_start,
            and_start,
            commits,
        }
    }
}

/// Counts a window's rounds both ways (see the module docs), and decides the batches of
/// stream order: a run of AND gates is cut where a gate reads the output of an AND gate
/// still in the current batch.
#[derive(Debug)]
pub struct RoundCounter {
    /// Per slot: the batch whose AND gate last wrote it, and its depth counted from the
    /// first window (8 bytes, so a slot's marks are one load).
    marks: Vec<SlotMark>,
    /// Depths at or below this are before the current window (depth 0 in it).
    base: u32,
    batch: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct SlotMark {
    batch: u32,
    depth: u32,
}

impl RoundCounter {
    pub fn new(num_slots: u32) -> RoundCounter {
        RoundCounter {
            marks: vec![SlotMark::default(); num_slots as usize],
            base: 0,
            batch: 0,
        }
    }

    /// The rounds both ways and the AND gates of `gates`, the next window of the stream.
    pub fn count(&mut self, gates: &[Gate]) -> WindowCounts {
        // Stamps that would overflow start over (after billions of levels or batches).
        let room = u32::MAX - gates.len() as u32 - 2;
        if self.base >= room || self.batch >= room {
            self.marks.fill(SlotMark::default());
            self.base = 0;
            self.batch = 0;
        }
        self.batch += 1;
        let (base, mut batch) = (self.base, self.batch);
        let (mut rounds, mut batch_open, mut max_depth) = (0usize, false, 0u32);
        let mut ands = 0usize;
        let depth_of = |m: SlotMark| m.depth.saturating_sub(base);
        for g in gates {
            let d = match g.op {
                Op::And | Op::Xor => {
                    let (ma, mb) = (self.marks[g.a as usize], self.marks[g.b as usize]);
                    if g.op == Op::And && batch_open && (ma.batch == batch || mb.batch == batch) {
                        // Reads the current batch: a new round.
                        batch += 1;
                        batch_open = false;
                    }
                    depth_of(ma).max(depth_of(mb)) + (g.op == Op::And) as u32
                }
                Op::Inv | Op::Copy => depth_of(self.marks[g.a as usize]),
                Op::Const => 0,
            };
            if g.op == Op::And {
                ands += 1;
                if !batch_open {
                    rounds += 1;
                    batch_open = true;
                }
            } else if batch_open {
                batch += 1;
                batch_open = false;
            }
            max_depth = max_depth.max(d);
            self.marks[g.out as usize] = SlotMark {
                batch: if g.op == Op::And { batch } else { 0 },
                depth: base + d,
            };
        }
        self.batch = batch;
        // The next window starts above every depth stored so far.
        self.base = base + max_depth + 1;
        WindowCounts {
            stream_rounds: rounds,
            depth: max_depth as usize,
            ands,
        }
    }
}

/// What [`RoundCounter::count`] found in a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowCounts {
    /// Rounds in stream order.
    pub stream_rounds: usize,
    /// AND depth: the rounds when reordered.
    pub depth: usize,
    pub ands: usize,
}

impl WindowCounts {
    /// Whether stream order takes no more rounds than reordering.
    pub fn stream_order(&self) -> bool {
        self.stream_rounds <= self.depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Evaluates a schedule in the clear (what both parties' shares add up to).
    fn run(s: &Schedule, slots: &mut [bool]) {
        let mut v = slots.to_vec();
        v.resize(s.values(), false);
        for r in 0..s.levels() {
            for op in s.linear(r) {
                v[op.out as usize] = match op.op {
                    Op::Xor => v[op.a as usize] ^ v[op.b as usize],
                    Op::Inv => !v[op.a as usize],
                    Op::Copy => v[op.a as usize],
                    Op::Const => op.a == 1,
                    Op::And => unreachable!(),
                };
            }
            for op in s.ands(r) {
                v[op.out as usize] = v[op.a as usize] & v[op.b as usize];
            }
        }
        for &(slot, value) in s.commits() {
            slots[slot as usize] = v[value as usize];
        }
    }

    fn reference(gates: &[Gate], slots: &mut [bool]) {
        for g in gates {
            slots[g.out as usize] = match g.op {
                Op::Xor => slots[g.a as usize] ^ slots[g.b as usize],
                Op::And => slots[g.a as usize] & slots[g.b as usize],
                Op::Inv => !slots[g.a as usize],
                Op::Copy => slots[g.a as usize],
                Op::Const => g.a == 1,
            };
        }
    }

    #[test]
    fn reordered_windows_compute_what_the_stream_does_with_reused_slots() {
        // Random gates over 12 slots, so slots are overwritten all the time (including a
        // gate that reads and writes the same slot), cut into windows of several sizes.
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let gates: Vec<Gate> = (0..3000)
            .map(|_| {
                let (a, b, out) = (next(12) as u32, next(12) as u32, next(12) as u32);
                match next(5) {
                    0 | 1 => Gate::and(a, b, out),
                    2 => Gate::xor(a, b, out),
                    3 => Gate::inv(a, out),
                    _ => Gate::constant(next(2) == 1, out),
                }
            })
            .collect();
        for window in [1usize, 7, 64, 3000] {
            let mut s = Scheduler::new(12, window).unwrap();
            for start in 0..4 {
                let init: Vec<bool> = (0..12).map(|i| (i * 5 + start) % 3 == 0).collect();
                let (mut got, mut want) = (init.clone(), init);
                for w in gates.chunks(window) {
                    run(&s.schedule(w), &mut got);
                }
                reference(&gates, &mut want);
                assert_eq!(got, want, "window {window}");
            }
        }
    }

    #[test]
    fn levels_follow_and_depth() {
        // x = a & b; y = x ^ c; z = y & a: depth 2, with the XOR between the rounds.
        let gates = [Gate::and(0, 1, 3), Gate::xor(3, 2, 4), Gate::and(4, 0, 5)];
        let s = Scheduler::new(6, 16).unwrap().schedule(&gates);
        assert_eq!(s.depth(), 2);
        assert_eq!(s.ands(0).len(), 1);
        assert_eq!(s.linear(1).len(), 1);
        assert_eq!(s.ands(1).len(), 1);
        assert!(s.ands(2).is_empty());
        assert_eq!(s.commits().len(), 3);
    }

    #[test]
    fn stream_order_rounds_equal_the_depth_of_a_levelized_circuit() {
        let c = pgc_circuit::generate::random_circuit(3, 4, 600);
        let levelized = pgc_circuit::analysis::levelize(&c).unwrap();
        let slotted = pgc_circuit::analysis::assign_slots(&levelized);
        let depth = pgc_circuit::analysis::stats(&c).and_levels as usize;
        for circuit in [&levelized, &slotted] {
            let mut counter = RoundCounter::new(circuit.layout.num_wires);
            let counts = counter.count(&circuit.gates);
            assert_eq!((counts.stream_rounds, counts.depth), (depth, depth));
        }
        // As generated (not in level order), stream order takes more rounds.
        let mut counter = RoundCounter::new(c.layout.num_wires);
        let counts = counter.count(&c.gates);
        assert_eq!(counts.depth, depth);
        assert!(counts.stream_rounds > depth);
    }

    #[test]
    fn value_space_must_fit() {
        assert!(Scheduler::new(u32::MAX - 10, 100).is_err());
    }
}
