//! Levels of a window of gates, for running it one kernel launch per level.
//!
//! A window is a run of consecutive gates of the circuit's flat order. Its gates are placed
//! in levels so that every gate of a level can run at the same time as the others and after
//! every earlier level, with the result the sequential order defines. Wire ids may be slots
//! that later gates reuse, so three hazards order gates, not one:
//!
//! - read after write: a gate comes after the gate that wrote each of its inputs;
//! - write after read: a gate that overwrites a slot comes after every gate that read the
//!   slot's previous value;
//! - write after write: it comes after the slot's previous writer.
//!
//! Each gate takes the lowest level these allow (as soon as possible). XOR, INV and copies
//! count as gates of their level like ANDs (they cost a thread, not a hash), so a chain of
//! them deepens the schedule; the seed paper's kernels do the same (Husted et al., ACSAC
//! 2013, §7.4). Levels are counted across windows in one [`Scheduler`] so that wires written
//! by an earlier window need no reset: anything below the window's first level is ready.
//!
//! Windows run one after another, so a window's levels depend only on its own gates: every
//! wire an earlier window wrote is ready, and every earlier read is done. Several
//! schedulers may therefore level different windows of one circuit at the same time (the
//! protocol's GPU path does), each keeping its own per-wire state.
//!
//! Every AND keeps its place in the sequential order (its local AND index, counted from the
//! window's first AND), which fixes its tweaks and where its table goes: the tables of a
//! window come out in exactly the order the CPU engine produces them.

use pgc_circuit::{Gate, Op};

/// Gate records as the kernels read them (`halfgates.h`): `[a, b, out, op | local_and << 3]`.
pub type GateRecord = [u32; 4];

/// The largest window: local AND indices must fit the record's 29 bits.
pub const MAX_WINDOW_GATES: usize = 1 << 28;

/// A window's gates sorted by level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// The gate records, level after level; within a level its ANDs first, then the
    /// other gates, each in the window's order.
    pub records: Vec<GateRecord>,
    /// `records[offsets[l]..offsets[l + 1]]` is level `l`; `offsets.len()` = levels + 1.
    pub offsets: Vec<u32>,
    /// ANDs in the window (the tables hold 2 blocks per AND).
    pub and_gates: u64,
}

impl Schedule {
    pub fn levels(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    /// The records of level `l`.
    pub fn level(&self, l: usize) -> &[GateRecord] {
        &self.records[self.offsets[l] as usize..self.offsets[l + 1] as usize]
    }
}

/// What makes a window unschedulable: the garbler's own circuit is malformed, or a window
/// is too large for the record format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error(
        "gate {gate_index} of the window ({op}) uses wire {wire}, but there are only {num_wires} wires"
    )]
    WireOutOfRange {
        gate_index: usize,
        op: &'static str,
        wire: u32,
        num_wires: usize,
    },
    #[error("gate {gate_index} of the window is a constant gate with value {value} (not 0 or 1)")]
    BadConstant { gate_index: usize, value: u32 },
    #[error("a window of {gates} gates is more than the GPU engine takes at once ({max})")]
    WindowTooLarge { gates: usize, max: usize },
    #[error("the schedule needs more than 2^32 levels")]
    TooDeep,
    #[error("levelling stopped: the run ended")]
    Stopped,
}

/// Levels windows of one circuit, one after another (see the module doc).
pub struct Scheduler {
    /// Per wire: `[ready, read_until]`, side by side so that a wire costs one cache miss.
    /// `ready`: the first level at which its current value may be read (one past its
    /// writer's level; 0 for values set before the first window). `read_until`: one past
    /// the highest level that read its current value (0: none).
    wires: Vec<[u32; 2]>,
    /// The first level of the next window (all levels so far are below it).
    next_level: u32,
    /// Scratch: each gate's level in the window being scheduled.
    gate_levels: Vec<u32>,
}

impl Scheduler {
    /// A scheduler for a circuit of `num_wires` wires (8 bytes of host memory per wire).
    pub fn new(num_wires: usize) -> Scheduler {
        Scheduler {
            wires: vec![[0, 0]; num_wires],
            next_level: 0,
            gate_levels: Vec::new(),
        }
    }

    /// Levels `gates`, the next window of the circuit. On error nothing is recorded and the
    /// scheduler must not be used for later windows of the same circuit.
    pub fn schedule(&mut self, gates: &[Gate]) -> Result<Schedule, ScheduleError> {
        if gates.len() > MAX_WINDOW_GATES {
            return Err(ScheduleError::WindowTooLarge {
                gates: gates.len(),
                max: MAX_WINDOW_GATES,
            });
        }
        let num_wires = self.wires.len();
        let base = self.next_level;
        let mut top = base; // one past the highest level used
        self.gate_levels.clear();
        self.gate_levels.reserve(gates.len());
        for (i, g) in gates.iter().enumerate() {
            let check = |w: u32| {
                if (w as usize) < num_wires {
                    Ok(w as usize)
                } else {
                    Err(ScheduleError::WireOutOfRange {
                        gate_index: i,
                        op: g.op.name(),
                        wire: w,
                        num_wires,
                    })
                }
            };
            let out = check(g.out)?;
            let [out_ready, out_read] = self.wires[out];
            let mut level = base.max(out_ready).max(out_read);
            let (a, b) = match g.op {
                Op::Xor | Op::And => (Some(check(g.a)?), Some(check(g.b)?)),
                Op::Inv | Op::Copy => (Some(check(g.a)?), None),
                Op::Const => {
                    if g.a > 1 {
                        return Err(ScheduleError::BadConstant {
                            gate_index: i,
                            value: g.a,
                        });
                    }
                    (None, None)
                }
            };
            for w in [a, b].into_iter().flatten() {
                level = level.max(self.wires[w][0]);
            }
            let after = level.checked_add(1).ok_or(ScheduleError::TooDeep)?;
            for w in [a, b].into_iter().flatten() {
                self.wires[w][1] = self.wires[w][1].max(after);
            }
            // Readers of the new value are all at `after` or later; those of the old one
            // were below `level`, which the next writer passes through `ready`.
            self.wires[out] = [after, 0];
            top = top.max(after);
            self.gate_levels.push(level - base);
        }
        let levels = (top - base) as usize;
        self.next_level = top;

        // Counting sort by level, ANDs first within a level: a warp then holds ANDs only or
        // cheap gates only, instead of idling the lanes of an XOR beside an AND's hashes.
        // Each kind keeps the window's order.
        let is_and = |g: &Gate| g.op == Op::And;
        let mut offsets = vec![0u32; levels + 1];
        let mut ands = vec![0u32; levels];
        for (g, &l) in gates.iter().zip(&self.gate_levels) {
            offsets[l as usize + 1] += 1;
            ands[l as usize] += is_and(g) as u32;
        }
        for l in 0..levels {
            offsets[l + 1] += offsets[l];
        }
        let mut fill_and: Vec<u32> = offsets[..levels].to_vec();
        let mut fill_other: Vec<u32> = (0..levels).map(|l| offsets[l] + ands[l]).collect();
        let mut records = vec![[0u32; 4]; gates.len()];
        let mut local_and = 0u32;
        for (g, &l) in gates.iter().zip(&self.gate_levels) {
            let op = match g.op {
                Op::Xor => 0,
                Op::And => 1,
                Op::Inv => 2,
                Op::Copy => 3,
                Op::Const => 4,
            };
            let (info, slot) = if is_and(g) {
                let info = op | (local_and << 3);
                local_and += 1;
                (info, &mut fill_and[l as usize])
            } else {
                (op, &mut fill_other[l as usize])
            };
            records[*slot as usize] = [g.a, g.b, g.out, info];
            *slot += 1;
        }
        Ok(Schedule {
            records,
            offsets,
            and_gates: local_and as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels_of(s: &Schedule) -> Vec<Vec<u32>> {
        (0..s.levels())
            .map(|l| s.level(l).iter().map(|r| r[2]).collect())
            .collect()
    }

    #[test]
    fn independent_gates_share_a_level_and_chains_do_not() {
        let gates = [
            Gate::and(0, 1, 4),
            Gate::and(2, 3, 5),
            Gate::xor(4, 5, 6),
            Gate::and(6, 0, 7),
        ];
        let s = Scheduler::new(8).schedule(&gates).unwrap();
        assert_eq!(levels_of(&s), vec![vec![4, 5], vec![6], vec![7]]);
        assert_eq!(s.and_gates, 3);
        // Local AND indices follow the window's order, not the levels.
        assert_eq!(s.records[0][3] >> 3, 0);
        assert_eq!(s.records[1][3] >> 3, 1);
        assert_eq!(s.records[3][3], 1 | (2 << 3));
    }

    #[test]
    fn a_level_lists_its_ands_first_each_kind_in_window_order() {
        let gates = [
            Gate::xor(0, 1, 4),
            Gate::and(0, 1, 5),
            Gate::inv(2, 6),
            Gate::and(2, 3, 7),
            Gate::xor(2, 3, 8),
        ];
        let s = Scheduler::new(9).schedule(&gates).unwrap();
        assert_eq!(levels_of(&s), vec![vec![5, 7, 4, 6, 8]]);
        assert_eq!(s.records[0][3], 1);
        assert_eq!(s.records[1][3], 1 | (1 << 3));
    }

    #[test]
    fn a_reused_slot_waits_for_the_readers_of_its_old_value() {
        // Gate 1 overwrites wire 0, which gate 0 reads: write after read.
        let gates = [Gate::and(0, 1, 2), Gate::xor(1, 1, 0), Gate::and(0, 2, 3)];
        let s = Scheduler::new(4).schedule(&gates).unwrap();
        assert_eq!(levels_of(&s), vec![vec![2], vec![0], vec![3]]);
    }

    #[test]
    fn a_reused_slot_keeps_its_writers_in_order() {
        // Two writes of wire 2 with nothing between: write after write.
        let gates = [Gate::and(0, 1, 2), Gate::xor(0, 1, 2)];
        let s = Scheduler::new(3).schedule(&gates).unwrap();
        assert_eq!(s.levels(), 2);
    }

    #[test]
    fn later_windows_see_earlier_values_as_ready() {
        let mut sched = Scheduler::new(6);
        let first = sched.schedule(&[Gate::and(0, 1, 2)]).unwrap();
        let second = sched
            .schedule(&[Gate::and(2, 0, 3), Gate::and(0, 1, 4)])
            .unwrap();
        assert_eq!(first.levels(), 1);
        assert_eq!(levels_of(&second), vec![vec![3, 4]]);
    }

    #[test]
    fn bad_wires_and_constants_are_errors() {
        let mut sched = Scheduler::new(3);
        let err = sched.schedule(&[Gate::and(0, 7, 2)]).unwrap_err();
        assert!(err.to_string().contains("wire 7"), "{err}");
        let mut sched = Scheduler::new(3);
        let bad = Gate {
            op: Op::Const,
            a: 2,
            b: 0,
            out: 1,
        };
        assert!(matches!(
            sched.schedule(&[bad]),
            Err(ScheduleError::BadConstant { .. })
        ));
    }
}
