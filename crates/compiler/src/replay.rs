//! Bound programs: a loop template's interval transfer, replayed per call from the caller's
//! exact input intervals.
//!
//! A template of a loop body ([`crate::loops`]) is built for a *class* of inputs: those whose
//! upper bounds are at most the ones in its shape key. The intervals the value-range analysis
//! ([`crate::range`]) derives inside it are facts for the whole class, so the bounds it
//! reports for its results are those of the class, not of the call. Where the key holds the
//! exact bounds of one iteration that loses nothing; where it holds rounded bounds (a row of
//! a table stored once for a band of rows, whose bounds grow with the row) the reported
//! bounds would follow the rounded ones, and the next row would round again: the bounds would
//! double row by row.
//!
//! So while a template is built, every interval the analysis derives from other intervals is
//! also recorded as an op over *registers* ([`BoundProgram`]): the template's inputs, the
//! results of additions, subtractions, products, quotients, remainders, masks, multiplexer
//! hulls, minima and maxima of registers, and the steps of the template's own inner calls (a
//! call evaluates its inputs' registers, replays the callee's program and gives the
//! callee's results as registers). Calling the template with inputs whose intervals are
//! known replays the program from them and intersects every register with the interval the
//! build derived for it. That is sound: the gates are the same function whatever the call,
//! the build's intervals hold for the whole class and so for the call's inputs, and every op
//! is a sound interval transfer (the narrowing decisions the build made, that an adder cannot
//! wrap or a difference go below zero, hold for the class, so for the call's sub-class). The
//! analysis's idea is abstract interpretation over intervals (Cousot and Cousot, POPL 1977),
//! here evaluated once per call over a straight-line program, so no widening is needed.
//!
//! The program is a flat vector of small ops that name registers by index: replaying it
//! hashes nothing, and a call's registers live on one stack shared by all nested calls.

/// An interval `[lo, hi]` of an unsigned number.
pub(crate) type Interval = (u64, u64);

/// What nothing is known of (the identity of intersection).
const FULL: Interval = (0, u64::MAX);

/// An argument or output that has no register.
pub(crate) const NO_REG: u32 = u32::MAX;

/// A transfer over registers (indices into the same program's registers).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// The interval the call gives the template's use `k`.
    Input(u32),
    /// Only what the build derived (a value of constant literals, or one whose derivation
    /// was not recorded).
    Const,
    Add(u32, u32),
    /// `a - b` where the build showed it does not go below zero.
    Sub(u32, u32),
    Mul(u32, u32),
    Div(u32, u32),
    Rem(u32, u32),
    /// `a & b`.
    And(u32, u32),
    /// A choice between `t` and `f` (a multiplexer) with what its selector says of their
    /// order ([`Select`]): the hull, narrowed to a minimum's or maximum's bounds.
    Select {
        t: u32,
        f: u32,
        order: Select,
    },
    /// The hull of `len` registers listed in the program's arguments from `start`.
    Hull {
        start: u32,
        len: u32,
    },
    /// A call of the template whose program is `prog`, its inputs' registers listed in the
    /// arguments from `start` (one per use of the callee; [`NO_REG`] where none). The
    /// callee's results, one register per use of the callee, are the registers right after
    /// this one ([`Op::CallResult`]).
    Call {
        prog: u32,
        start: u32,
    },
    /// Set by the [`Op::Call`] before it.
    CallResult,
}

/// What a choice's selector says of the order of its choices `t` and `f`: which of their
/// bounds bound the result. The result's upper bound is the least of the hull's and those
/// of the choices flagged `hi_*`; its lower bound the greatest of the hull's and those
/// flagged `lo_*` (a minimum of `t` and `f` flags `hi_t` and `hi_f`, a maximum `lo_t` and
/// `lo_f`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Select {
    pub(crate) hi_t: bool,
    pub(crate) hi_f: bool,
    pub(crate) lo_t: bool,
    pub(crate) lo_f: bool,
}

/// A register: its op and the interval the build derived for it.
#[derive(Clone, Copy, Debug)]
struct Reg {
    op: Op,
    lo: u64,
    hi: u64,
}

/// The interval transfer of one template (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct BoundProgram {
    regs: Vec<Reg>,
    args: Vec<u32>,
    /// Per use of the template's body, the register of its interval after the body.
    outs: Vec<u32>,
    /// Uses of the template's body (the length of the inputs a replay takes).
    uses: u32,
}

/// A program being recorded while a template is built.
#[derive(Default)]
pub(crate) struct Recorder {
    prog: BoundProgram,
}

impl Recorder {
    /// Adds a register holding `op`, which the build found to lie in `iv`.
    pub(crate) fn push(&mut self, op: Op, iv: Interval) -> u32 {
        self.prog.regs.push(Reg {
            op,
            lo: iv.0,
            hi: iv.1,
        });
        self.prog.regs.len() as u32 - 1
    }

    /// A hull of `regs`.
    pub(crate) fn push_hull(&mut self, regs: &[u32], iv: Interval) -> u32 {
        let start = self.prog.args.len() as u32;
        self.prog.args.extend_from_slice(regs);
        self.push(
            Op::Hull {
                start,
                len: regs.len() as u32,
            },
            iv,
        )
    }

    /// A call of `prog` (whose program is `callee`) with `inputs` (one register per use of
    /// the callee, [`NO_REG`] where none), its results found to lie in `results` by the
    /// build; returns the register of the callee's first use's result (the others follow).
    pub(crate) fn push_call(
        &mut self,
        prog: u32,
        callee: &BoundProgram,
        inputs: &[u32],
        results: &[Interval],
    ) -> u32 {
        debug_assert_eq!(inputs.len(), callee.uses as usize);
        debug_assert_eq!(results.len(), callee.uses as usize);
        let start = self.prog.args.len() as u32;
        self.prog.args.extend_from_slice(inputs);
        self.push(Op::Call { prog, start }, FULL);
        let first = self.prog.regs.len() as u32;
        for &iv in results {
            self.push(Op::CallResult, iv);
        }
        first
    }

    /// The finished program of a body with `outs` (per use, the register of its result).
    pub(crate) fn finish(mut self, outs: Vec<u32>) -> BoundProgram {
        self.prog.uses = outs.len() as u32;
        self.prog.outs = outs;
        self.prog.regs.shrink_to_fit();
        self.prog.args.shrink_to_fit();
        self.prog
    }
}

/// `a ∩ b`; the build's interval `b` where they do not meet (sound rules cannot make that
/// happen: both are facts about the same value).
fn meet(a: Interval, b: Interval) -> Interval {
    let m = (a.0.max(b.0), a.1.min(b.1));
    if m.0 > m.1 {
        debug_assert!(false, "disjoint facts {a:?} and {b:?}");
        return b;
    }
    m
}

/// Runs program `p` of `progs` with its inputs' intervals at `stack[ins..ins + uses]`;
/// returns where its registers start on `stack` (the caller truncates it).
fn run(progs: &[BoundProgram], p: usize, ins: usize, stack: &mut Vec<Interval>) -> usize {
    let prog = &progs[p];
    let base = stack.len();
    stack.resize(base + prog.regs.len(), FULL);
    let mut i = 0;
    while i < prog.regs.len() {
        let r = prog.regs[i];
        let at = |k: u32| stack[base + k as usize];
        let v = match r.op {
            Op::Input(k) => stack[ins + k as usize],
            Op::Const | Op::CallResult => FULL,
            Op::Add(a, b) => {
                let (a, b) = (at(a), at(b));
                (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
            }
            Op::Sub(a, b) => {
                let (a, b) = (at(a), at(b));
                (a.0.saturating_sub(b.1), a.1.saturating_sub(b.0))
            }
            Op::Mul(a, b) => {
                let (a, b) = (at(a), at(b));
                (a.0.saturating_mul(b.0), a.1.saturating_mul(b.1))
            }
            Op::Div(a, b) => {
                let (a, b) = (at(a), at(b));
                (a.0 / b.1.max(1), a.1 / b.0.max(1))
            }
            Op::Rem(a, b) => {
                let (a, b) = (at(a), at(b));
                (0, a.1.min(b.1.saturating_sub(1)))
            }
            Op::And(a, b) => (0, at(a).1.min(at(b).1)),
            Op::Select { t, f, order } => {
                let (t, f) = (at(t), at(f));
                let (mut lo, mut hi) = (t.0.min(f.0), t.1.max(f.1));
                for (flag, bound) in [(order.hi_t, t.1), (order.hi_f, f.1)] {
                    if flag {
                        hi = hi.min(bound);
                    }
                }
                for (flag, bound) in [(order.lo_t, t.0), (order.lo_f, f.0)] {
                    if flag {
                        lo = lo.max(bound);
                    }
                }
                (lo, hi)
            }
            Op::Hull { start, len } => {
                let regs = &prog.args[start as usize..(start + len) as usize];
                regs.iter().fold((u64::MAX, 0), |(lo, hi), &k| {
                    let x = at(k);
                    (lo.min(x.0), hi.max(x.1))
                })
            }
            Op::Call { prog: q, start } => {
                let callee = &progs[q as usize];
                let n = callee.uses as usize;
                let callee_ins = stack.len();
                for k in 0..n {
                    let a = prog.args[start as usize + k];
                    let x = if a == NO_REG {
                        FULL
                    } else {
                        stack[base + a as usize]
                    };
                    stack.push(x);
                }
                let callee_base = run(progs, q as usize, callee_ins, stack);
                for (k, &o) in callee.outs.iter().enumerate() {
                    let x = if o == NO_REG {
                        FULL
                    } else {
                        stack[callee_base + o as usize]
                    };
                    let res = prog.regs[i + 1 + k];
                    stack[base + i + 1 + k] = meet(x, (res.lo, res.hi));
                }
                stack.truncate(callee_ins);
                i += 1 + n;
                continue;
            }
        };
        stack[base + i] = meet(v, (r.lo, r.hi));
        i += 1;
    }
    base
}

/// The intervals of the results of a call of program `p`, per use of its body (`None`
/// where the program has no register for it), given its inputs' intervals per use (`None`:
/// not known beyond what the build assumed). `stack` is scratch space, left empty.
pub(crate) fn replay(
    progs: &[BoundProgram],
    p: u32,
    inputs: &[Option<Interval>],
    stack: &mut Vec<Interval>,
) -> Vec<Option<Interval>> {
    stack.clear();
    stack.extend(inputs.iter().map(|x| x.unwrap_or(FULL)));
    let prog = &progs[p as usize];
    debug_assert_eq!(inputs.len(), prog.uses as usize);
    let base = run(progs, p as usize, 0, stack);
    let out = prog
        .outs
        .iter()
        .map(|&o| (o != NO_REG).then(|| stack[base + o as usize]))
        .collect();
    stack.clear();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body `y = x + c` (c in [0, 1]) then `z = min-hull(y, x)`: replayed from a narrower
    /// input, the results narrow, and never leave the build's intervals.
    #[test]
    fn replay_narrows_within_the_build() {
        let mut r = Recorder::default();
        let x = r.push(Op::Input(0), (0, 15));
        let c = r.push(Op::Const, (0, 1));
        let y = r.push(Op::Add(x, c), (0, 16));
        let z = r.push_hull(&[x, y], (0, 16));
        let min = Select {
            hi_t: true,
            hi_f: true,
            ..Select::default()
        };
        let m = r.push(
            Op::Select {
                t: x,
                f: y,
                order: min,
            },
            (0, 15),
        );
        let inner = r.finish(vec![y, z, m]);
        let mut progs = vec![inner];
        let mut stack = Vec::new();
        let out = replay(&progs, 0, &[Some((3, 5)), None, None], &mut stack);
        assert_eq!(out, vec![Some((3, 6)), Some((3, 6)), Some((3, 5))]);
        // Unknown inputs: the build's intervals.
        let out = replay(&progs, 0, &[None, None, None], &mut stack);
        assert_eq!(out, vec![Some((0, 16)), Some((0, 16)), Some((0, 15))]);
        // An outer program calling it twice in a chain.
        let mut r = Recorder::default();
        let x = r.push(Op::Input(0), (0, 31));
        let first = r.push_call(0, &progs[0], &[x, NO_REG, NO_REG], &[(0, 16); 3]);
        let second = r.push_call(0, &progs[0], &[first, NO_REG, NO_REG], &[(0, 17); 3]);
        let outer = r.finish(vec![second]);
        progs.push(outer);
        let out = replay(&progs, 1, &[Some((2, 2))], &mut stack);
        assert_eq!(out, vec![Some((2, 4))]);
        assert!(stack.is_empty());
    }
}
