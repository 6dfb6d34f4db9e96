//! Structural analysis and rewriting: validation, AND-level ordering ([`levelize`]),
//! wire-slot reuse ([`assign_slots`]) and statistics ([`stats`]).
//!
//! All functions use slot semantics: a gate reads its inputs, then writes its output, and a
//! wire id may be written more than once; an output wire names the value its slot holds
//! after the last gate.

use crate::ir::{Circuit, Gate, Op, WireId};

/// A structurally invalid circuit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CircuitError {
    #[error("the {inputs} input wires exceed the circuit's {num_wires} wires")]
    InputsExceedWires { inputs: u64, num_wires: u32 },
    #[error("the layout lists {listed} output wires but its output widths add up to {declared}")]
    OutputCount { listed: usize, declared: u64 },
    #[error("gate {gate} uses wire {wire}, out of range for {num_wires} wires")]
    WireOutOfRange {
        gate: usize,
        wire: WireId,
        num_wires: u32,
    },
    #[error("gate {gate} reads wire {wire} before it is set")]
    UnsetRead { gate: usize, wire: WireId },
    #[error("gate {gate} is a constant with value {value}, not 0 or 1")]
    ConstNotBit { gate: usize, value: u32 },
    #[error("output {index} is wire {wire}, out of range for {num_wires} wires")]
    OutputOutOfRange {
        index: usize,
        wire: WireId,
        num_wires: u32,
    },
    #[error("output {index} is wire {wire}, which is never set")]
    OutputUnset { index: usize, wire: WireId },
    #[error("gate {gate} writes wire {wire} again (each wire must be written once here)")]
    RewrittenWire { gate: usize, wire: WireId },
    #[error("gate {gate} writes input wire {wire} (each wire must be written once here)")]
    WritesInput { gate: usize, wire: WireId },
}

/// Checks that a circuit can be evaluated: every wire id is `< num_wires`, every gate reads
/// only wires that are inputs or were written by an earlier gate, constants are 0 or 1, and
/// every output wire is set. Slot reuse (writing a wire again) is allowed.
pub fn validate(c: &Circuit) -> Result<(), CircuitError> {
    let layout = &c.layout;
    let num_wires = layout.num_wires;
    let inputs: u64 = layout.input_widths.iter().map(|&w| w as u64).sum();
    if inputs > num_wires as u64 {
        return Err(CircuitError::InputsExceedWires { inputs, num_wires });
    }
    let declared: u64 = layout.output_widths.iter().map(|&w| w as u64).sum();
    if layout.output_wires.len() as u64 != declared {
        return Err(CircuitError::OutputCount {
            listed: layout.output_wires.len(),
            declared,
        });
    }
    let mut set = vec![false; num_wires as usize];
    set[..inputs as usize].fill(true);
    for (gate, g) in c.gates.iter().enumerate() {
        if g.op == Op::Const && g.a > 1 {
            return Err(CircuitError::ConstNotBit { gate, value: g.a });
        }
        for &wire in g.inputs() {
            match set.get(wire as usize) {
                None => {
                    return Err(CircuitError::WireOutOfRange {
                        gate,
                        wire,
                        num_wires,
                    });
                }
                Some(false) => return Err(CircuitError::UnsetRead { gate, wire }),
                Some(true) => {}
            }
        }
        match set.get_mut(g.out as usize) {
            Some(s) => *s = true,
            None => {
                return Err(CircuitError::WireOutOfRange {
                    gate,
                    wire: g.out,
                    num_wires,
                });
            }
        }
    }
    for (index, &wire) in layout.output_wires.iter().enumerate() {
        match set.get(wire as usize) {
            None => {
                return Err(CircuitError::OutputOutOfRange {
                    index,
                    wire,
                    num_wires,
                });
            }
            Some(false) => return Err(CircuitError::OutputUnset { index, wire }),
            Some(true) => {}
        }
    }
    Ok(())
}

/// [`validate`], and additionally that no wire is written twice and no input is written
/// (single-assignment form).
pub fn validate_ssa(c: &Circuit) -> Result<(), CircuitError> {
    validate(c)?;
    let n_in = c.layout.num_input_wires();
    let mut written = vec![false; c.layout.num_wires as usize];
    for (gate, g) in c.gates.iter().enumerate() {
        if g.out < n_in {
            return Err(CircuitError::WritesInput { gate, wire: g.out });
        }
        if std::mem::replace(&mut written[g.out as usize], true) {
            return Err(CircuitError::RewrittenWire { gate, wire: g.out });
        }
    }
    Ok(())
}

/// AND depth of every gate's output: the most ANDs on any path from an input to it (inputs
/// and constants have depth 0; XOR, INV and copies add nothing). Uses slot semantics.
/// Returns the per-gate depths and the final depth of every wire slot.
fn gate_depths(c: &Circuit) -> (Vec<u32>, Vec<u32>) {
    let mut wire_depth = vec![0u32; c.layout.num_wires as usize];
    let depths = c
        .gates
        .iter()
        .map(|g| {
            let d = g
                .inputs()
                .iter()
                .map(|&w| wire_depth[w as usize])
                .max()
                .unwrap_or(0)
                + u32::from(g.op == Op::And);
            wire_depth[g.out as usize] = d;
            d
        })
        .collect();
    (depths, wire_depth)
}

/// Reorders the gates into AND-level order: the linear gates (XOR, INV, copy, constant) of
/// AND depth 0, then the ANDs of depth 1, then the linear gates of depth 1, then the ANDs of
/// depth 2, and so on (a gate's depth is the largest depth of its inputs, plus one for an
/// AND). Within a group of linear gates, gates are ordered by their chain depth (the most
/// linear gates of the group on a path to them; see [`depths_and_chains`]), otherwise
/// the order is kept. Wire ids and the layout are unchanged.
///
/// **Invariant the garbler relies on:** in the result, consecutive ANDs never depend on
/// each other. A run of consecutive ANDs all have the same depth `d`, and an AND of depth
/// `d` only reads wires of depth `< d`, all of which were written before the run began; so
/// a run can be garbled as one batch (hash all inputs, then write all outputs). Where two
/// AND levels would touch because no linear gate has the depth in between (e.g. a tree of
/// ANDs), a separator is inserted: a copy of the next run's first input into a fresh wire
/// that is never read (`layout.num_wires` grows by one per separator). A copy is free to
/// garble and to evaluate, and [`assign_slots`] gives it a slot that is free anyway.
///
/// Requires single-assignment form (each wire written at most once, inputs never written);
/// use it before [`assign_slots`], which keeps the order and the invariant.
pub fn levelize(c: &Circuit) -> Result<Circuit, CircuitError> {
    validate_ssa(c)?;
    let (depths, chains) = depths_and_chains(c);
    // Group key: linear gates of depth d -> 2d, ANDs of depth d (>= 1) -> 2d - 1.
    let key = |g: &Gate, d: u32| -> usize {
        if g.op == Op::And {
            2 * d as usize - 1
        } else {
            2 * d as usize
        }
    };
    let max_key = c
        .gates
        .iter()
        .zip(&depths)
        .map(|(g, &d)| key(g, d))
        .max()
        .unwrap_or(0);
    // Gate indices are u32 below (as value ids are in [`LiveRanges`]).
    assert!(
        c.gates.len() < u32::MAX as usize,
        "levelize: too many gates for 32-bit indices"
    );
    // Stable counting sorts, least significant key first: by chain depth, then by group.
    let by_chain = counting_sort(&chains);
    drop(chains);
    // Gates per group, then where each group starts in the result: after the groups
    // before it and a separator before every non-empty AND group that directly follows
    // ANDs (the last non-empty group before it is an AND group).
    let mut count = vec![0usize; max_key + 1];
    for (g, &d) in c.gates.iter().zip(&depths) {
        count[key(g, d)] += 1;
    }
    let mut layout = c.layout.clone();
    let mut next = vec![0usize; max_key + 1];
    let mut separators = Vec::new();
    let (mut at, mut last_was_and) = (0usize, false);
    for (group, &n) in count.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let is_and = group % 2 == 1;
        if is_and && last_was_and {
            separators.push(at);
            at += 1;
        }
        next[group] = at;
        at += n;
        last_was_and = is_and;
    }
    // Placed straight into the result (one pass, no intermediate copy: on EDT-255's 13 M
    // gates the copy and the regrowth of a result sized without the separators cost more
    // than the sort).
    let mut gates = vec![Gate::constant(false, 0); at];
    for &k in &by_chain {
        let k = k as usize;
        let (g, d) = (&c.gates[k], depths[k]);
        let group = key(g, d);
        gates[next[group]] = *g;
        next[group] += 1;
    }
    // A separator copies the first input of the AND that follows it into a fresh wire,
    // numbered in order.
    for &pos in &separators {
        let fresh = layout.num_wires;
        layout.num_wires = fresh
            .checked_add(1)
            .expect("levelize: too many wires for 32-bit ids");
        gates[pos] = Gate::copy(gates[pos + 1].a, fresh);
    }
    Ok(Circuit { layout, gates })
}

/// Per gate, its AND depth (as [`gate_depths`] counts it) and its chain depth within its
/// group of linear gates: 0 for ANDs and for linear gates reading no output of a linear
/// gate of the same AND depth, else one more than the largest chain depth among those
/// producers. For a single-assignment circuit (every wire is final once written, so its
/// depth is known when it is read), in one pass with each wire's depth and chain side by
/// side (one memory access per input: the arrays of a 13 M gate circuit are far larger
/// than the caches).
///
/// Why chains: a linear gate costs a load, an XOR and a store when garbled, so a gate that
/// reads the gate just before it waits for that store to reach its load (several cycles),
/// and a group in source order is often such a chain (one S-box's linear layer, then the
/// next S-box's). Ordered by chain depth, successive gates come from independent chains, so
/// the processor overlaps them: on the Bristol AES-128 circuit this measured ≈ 15 % faster
/// garbling (issue 17, BENCHMARKS.md). Each gate still follows everything it reads: a
/// producer in the same group has a smaller chain depth, and all others are in earlier
/// groups.
fn depths_and_chains(c: &Circuit) -> (Vec<u32>, Vec<u32>) {
    // Per wire: its AND depth, and 1 + the chain depth of the linear gate that wrote it
    // (0: an input or an AND's output).
    let mut wire = vec![[0u32; 2]; c.layout.num_wires as usize];
    let mut depths = Vec::with_capacity(c.gates.len());
    let mut chains = Vec::with_capacity(c.gates.len());
    for g in &c.gates {
        let inputs = g.inputs();
        let depth_in = inputs
            .iter()
            .map(|&w| wire[w as usize][0])
            .max()
            .unwrap_or(0);
        let (depth, chain) = if g.op == Op::And {
            (depth_in + 1, 0)
        } else {
            let chain = inputs
                .iter()
                .filter(|&&w| wire[w as usize][0] == depth_in)
                .map(|&w| wire[w as usize][1])
                .max()
                .unwrap_or(0);
            (depth_in, chain)
        };
        wire[g.out as usize] = [depth, if g.op == Op::And { 0 } else { chain + 1 }];
        depths.push(depth);
        chains.push(chain);
    }
    (depths, chains)
}

/// The gate indices stably sorted by `keys` (a counting sort: linear, keys up to the gate
/// count or so). Indices as `u32` (gates are numbered by `u32` values, see [`LiveRanges`]):
/// on EDT-255's 13 M gates half the memory, and the fresh pages, of `usize`.
fn counting_sort(keys: &[u32]) -> Vec<u32> {
    let max = keys.iter().copied().max().unwrap_or(0) as usize;
    let mut starts = vec![0usize; max + 2];
    for &key in keys {
        starts[key as usize + 1] += 1;
    }
    for k in 1..starts.len() {
        starts[k] += starts[k - 1];
    }
    let mut order = vec![0u32; keys.len()];
    for (k, &key) in keys.iter().enumerate() {
        let slot = &mut starts[key as usize];
        order[*slot] = k as u32;
        *slot += 1;
    }
    order
}

/// `last_use` marker: the value is never read and is not an output.
const NEVER: u32 = u32::MAX;
/// `last_use` marker: the value is an output and stays live to the end.
const TO_END: u32 = u32::MAX - 1;

/// Live ranges of a circuit's values. Value ids: input wire `i` is value `i`; gate `k`'s
/// output is value `n_in + k` (a fresh value per write, so slot reuse is resolved).
struct LiveRanges {
    n_in: u32,
    /// Per gate, the values of its inputs (for constants unused).
    gate_inputs: Vec<[u32; 2]>,
    /// Per value, the index of the last gate reading it, or [`NEVER`] / [`TO_END`].
    last_use: Vec<u32>,
    /// The value of each output wire.
    output_values: Vec<u32>,
}

impl LiveRanges {
    /// # Panics
    /// If the circuit reads a wire that is not set (see [`validate`]).
    fn new(c: &Circuit) -> Self {
        let n_in = c.layout.num_input_wires();
        let n_values = n_in as usize + c.gates.len();
        assert!(
            n_values < TO_END as usize,
            "circuit too large for 32-bit value ids"
        );
        let mut current: Vec<u32> = vec![NEVER; c.layout.num_wires as usize];
        for (i, v) in current.iter_mut().take(n_in as usize).enumerate() {
            *v = i as u32;
        }
        let mut last_use = vec![NEVER; n_values];
        let mut gate_inputs = Vec::with_capacity(c.gates.len());
        let read = |current: &[u32], w: WireId| -> u32 {
            let v = current[w as usize];
            assert!(v != NEVER, "circuit reads wire {w} before it is set");
            v
        };
        for (k, g) in c.gates.iter().enumerate() {
            let ins = match g.op {
                Op::Xor | Op::And => [read(&current, g.a), read(&current, g.b)],
                Op::Inv | Op::Copy => {
                    let v = read(&current, g.a);
                    [v, v]
                }
                Op::Const => [NEVER, NEVER],
            };
            for v in ins {
                if v != NEVER {
                    last_use[v as usize] = k as u32;
                }
            }
            gate_inputs.push(ins);
            current[g.out as usize] = n_in + k as u32;
        }
        let output_values: Vec<u32> = c
            .layout
            .output_wires
            .iter()
            .map(|&w| read(&current, w))
            .collect();
        for &v in &output_values {
            last_use[v as usize] = TO_END;
        }
        LiveRanges {
            n_in,
            gate_inputs,
            last_use,
            output_values,
        }
    }

    /// The distinct input values of gate `k` whose last use is gate `k`.
    fn dying_at(&self, k: usize) -> impl Iterator<Item = u32> + '_ {
        let [a, b] = self.gate_inputs[k];
        let dies = move |v: u32| v != NEVER && self.last_use[v as usize] == k as u32;
        let first = dies(a).then_some(a);
        let second = (b != a && dies(b)).then_some(b);
        first.into_iter().chain(second)
    }

    fn never_read(&self, v: u32) -> bool {
        self.last_use[v as usize] == NEVER
    }
}

/// Renumbers wires into reusable slots so that `layout.num_wires` becomes the peak number
/// of simultaneously live values ([`CircuitStats::peak_live_wires`]).
///
/// Input wires keep ids `0..n_in`. A value's slot is freed right after its last reader;
/// output values stay live to the end; a gate output that is never read and is not an
/// output is freed at once. A gate may take a slot freed by its own inputs (readers read
/// before they write). The most recently freed slot is reused first, for locality. Gate
/// order is kept, so the output of [`levelize`] stays AND-level ordered.
///
/// Guarantee: no gate ever writes a slot holding a value that is still to be read. Hence
/// in a run of consecutive independent ANDs, no AND reads a slot written by an earlier AND
/// of the run (that slot held a live value when the earlier AND wrote it, which is
/// impossible), so batch garbling of runs stays correct.
///
/// Accepts circuits that already reuse slots.
///
/// # Panics
/// If the circuit is invalid (reads an unset wire; see [`validate`]).
pub fn assign_slots(c: &Circuit) -> Circuit {
    let ranges = LiveRanges::new(c);
    let n_in = ranges.n_in;
    let mut slot_of: Vec<WireId> = vec![0; ranges.last_use.len()];
    let mut free: Vec<WireId> = Vec::new();
    let mut next_slot: WireId = n_in;
    for v in 0..n_in {
        slot_of[v as usize] = v;
    }
    // Inputs that are never read and are not outputs are dead from the start; free them in
    // reverse so the lowest is reused first.
    for v in (0..n_in).rev() {
        if ranges.never_read(v) {
            free.push(v);
        }
    }
    let mut gates = Vec::with_capacity(c.gates.len());
    for (k, g) in c.gates.iter().enumerate() {
        let [va, vb] = ranges.gate_inputs[k];
        let mut ng = *g;
        match g.op {
            Op::Xor | Op::And => {
                ng.a = slot_of[va as usize];
                ng.b = slot_of[vb as usize];
            }
            Op::Inv | Op::Copy => ng.a = slot_of[va as usize],
            Op::Const => {}
        }
        for v in ranges.dying_at(k) {
            free.push(slot_of[v as usize]);
        }
        let out_value = n_in + k as u32;
        let slot = free.pop().unwrap_or_else(|| {
            next_slot += 1;
            next_slot - 1
        });
        slot_of[out_value as usize] = slot;
        ng.out = slot;
        if ranges.never_read(out_value) {
            free.push(slot);
        }
        gates.push(ng);
    }
    let mut layout = c.layout.clone();
    layout.num_wires = next_slot;
    layout.output_wires = ranges
        .output_values
        .iter()
        .map(|&v| slot_of[v as usize])
        .collect();
    Circuit { layout, gates }
}

/// [`levelize`] and then [`assign_slots`], the form the sequential protocol runs, made
/// from a circuit the caller gives up: the same result, with less memory and fewer passes.
/// The levelized circuit is in single-assignment form, so a value is its wire (no
/// per-gate table of input values, as [`assign_slots`] needs for circuits that reuse
/// slots), and the slots are written into the levelized gates in place (no third copy of
/// the gate list). On EDT-255's 13 M gates the copies and their fresh pages cost as much
/// CPU as the analysis itself.
pub fn levelize_into_slots(c: Circuit) -> Result<Circuit, CircuitError> {
    let mut leveled = levelize(&c)?;
    drop(c);
    assign_ssa_slots_in_place(&mut leveled);
    Ok(leveled)
}

/// [`levelize_into_slots`] for a circuit the caller keeps.
pub fn levelize_with_slots(c: &Circuit) -> Result<Circuit, CircuitError> {
    let mut leveled = levelize(c)?;
    assign_ssa_slots_in_place(&mut leveled);
    Ok(leveled)
}

/// [`assign_slots`] for a circuit in single-assignment form (no wire written twice, no
/// input written: as [`levelize`] leaves it), in place. Frees and reuses slots in exactly
/// the order [`assign_slots`] does, so the result is the same.
fn assign_ssa_slots_in_place(c: &mut Circuit) {
    let n_in = c.layout.num_input_wires();
    let num_wires = c.layout.num_wires as usize;
    assert!(
        c.gates.len() < TO_END as usize,
        "circuit too large for 32-bit gate indices"
    );
    // Per wire: [index of the last gate reading it (or NEVER / TO_END), its slot].
    let mut wire = vec![[NEVER, 0u32]; num_wires];
    for (k, g) in c.gates.iter().enumerate() {
        for &w in g.inputs() {
            wire[w as usize][0] = k as u32;
        }
    }
    for &w in &c.layout.output_wires {
        wire[w as usize][0] = TO_END;
    }
    let mut free: Vec<WireId> = Vec::new();
    for (v, entry) in wire.iter_mut().enumerate().take(n_in as usize) {
        entry[1] = v as u32;
    }
    // Inputs that are never read and are not outputs are free from the start, the lowest
    // reused first.
    for v in (0..n_in).rev() {
        if wire[v as usize][0] == NEVER {
            free.push(v);
        }
    }
    let mut next_slot: WireId = n_in;
    for (k, g) in c.gates.iter_mut().enumerate() {
        let k = k as u32;
        let (a, b) = (g.a, g.b);
        match g.op {
            Op::Xor | Op::And => {
                g.a = wire[a as usize][1];
                g.b = wire[b as usize][1];
                if wire[a as usize][0] == k {
                    free.push(wire[a as usize][1]);
                }
                if b != a && wire[b as usize][0] == k {
                    free.push(wire[b as usize][1]);
                }
            }
            Op::Inv | Op::Copy => {
                g.a = wire[a as usize][1];
                if wire[a as usize][0] == k {
                    free.push(wire[a as usize][1]);
                }
            }
            Op::Const => {}
        }
        let slot = free.pop().unwrap_or_else(|| {
            next_slot += 1;
            next_slot - 1
        });
        let out = &mut wire[g.out as usize];
        out[1] = slot;
        g.out = slot;
        if out[0] == NEVER {
            free.push(slot);
        }
    }
    c.layout.num_wires = next_slot;
    for w in &mut c.layout.output_wires {
        *w = wire[*w as usize][1];
    }
}

/// How many AND levels have a width (number of ANDs) in `min..=max`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WidthBucket {
    pub min: u64,
    pub max: u64,
    pub levels: u64,
}

/// Size and shape of a circuit.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CircuitStats {
    pub gates: u64,
    pub and_gates: u64,
    pub xor_gates: u64,
    pub inv_gates: u64,
    pub copy_gates: u64,
    pub const_gates: u64,
    /// `layout.num_wires` (wire ids or slots).
    pub wires: u64,
    pub input_wires: u64,
    pub output_wires: u64,
    /// Longest path to an output wire, counted in ANDs.
    pub and_depth: u64,
    /// Number of distinct AND depths among all ANDs (including ANDs whose results never
    /// reach an output), i.e. the number of sequential AND rounds.
    pub and_levels: u64,
    /// ANDs per level, in power-of-two buckets `[2^i, 2^(i+1) - 1]`; only non-empty buckets.
    pub width_histogram: Vec<WidthBucket>,
    /// Most ANDs on one level (0 without ANDs).
    pub max_width: u64,
    /// ANDs per non-empty level on average (0 without ANDs).
    pub mean_width: f64,
    /// Most values live at once with the gates in their current order: a value is live from
    /// its definition to its last read, inputs from the start, outputs to the end. This is
    /// what [`assign_slots`] reduces `wires` to.
    pub peak_live_wires: u64,
}

/// Level widths (ANDs per level, each > 0) in power-of-two buckets `[2^i, 2^(i+1) - 1]`,
/// only non-empty buckets, narrowest first.
pub fn width_histogram(widths: &[u64]) -> Vec<WidthBucket> {
    let mut histogram: Vec<WidthBucket> = Vec::new();
    for &n in widths.iter().filter(|&&n| n > 0) {
        let min = 1u64 << (63 - n.leading_zeros());
        match histogram.iter_mut().find(|b| b.min == min) {
            Some(b) => b.levels += 1,
            None => histogram.push(WidthBucket {
                min,
                max: min.saturating_mul(2) - 1,
                levels: 1,
            }),
        }
    }
    histogram.sort_by_key(|b| b.min);
    histogram
}

/// Computes [`CircuitStats`].
///
/// # Panics
/// If the circuit is invalid (see [`validate`]).
pub fn stats(c: &Circuit) -> CircuitStats {
    let mut counts = [0u64; 5];
    for g in &c.gates {
        counts[g.op as usize] += 1;
    }
    let (depths, wire_depth) = gate_depths(c);
    let and_depth = c
        .layout
        .output_wires
        .iter()
        .map(|&w| wire_depth[w as usize])
        .max()
        .unwrap_or(0);
    let mut per_level: Vec<u64> = Vec::new();
    for (g, &d) in c.gates.iter().zip(&depths) {
        if g.op == Op::And {
            let level = d as usize - 1;
            if per_level.len() <= level {
                per_level.resize(level + 1, 0);
            }
            per_level[level] += 1;
        }
    }
    let widths: Vec<u64> = per_level.into_iter().filter(|&n| n > 0).collect();
    let histogram = width_histogram(&widths);
    let and_gates = counts[Op::And as usize];
    CircuitStats {
        gates: c.gates.len() as u64,
        and_gates,
        xor_gates: counts[Op::Xor as usize],
        inv_gates: counts[Op::Inv as usize],
        copy_gates: counts[Op::Copy as usize],
        const_gates: counts[Op::Const as usize],
        wires: c.layout.num_wires as u64,
        input_wires: c.layout.num_input_wires() as u64,
        output_wires: c.layout.output_wires.len() as u64,
        and_depth: and_depth as u64,
        and_levels: widths.len() as u64,
        width_histogram: histogram,
        max_width: widths.iter().copied().max().unwrap_or(0),
        mean_width: if widths.is_empty() {
            0.0
        } else {
            and_gates as f64 / widths.len() as f64
        },
        peak_live_wires: peak_live(c) as u64,
    }
}

/// Peak number of live values, counted the way [`assign_slots`] allocates slots.
fn peak_live(c: &Circuit) -> u32 {
    let ranges = LiveRanges::new(c);
    let n_in = ranges.n_in;
    let mut live = n_in as u64;
    let mut peak = live;
    live -= (0..n_in).filter(|&v| ranges.never_read(v)).count() as u64;
    for k in 0..c.gates.len() {
        live -= ranges.dying_at(k).count() as u64;
        live += 1;
        peak = peak.max(live);
        if ranges.never_read(n_in + k as u32) {
            live -= 1;
        }
    }
    peak as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{eval_bits, eval_bitsliced};
    use crate::generate::{SplitMix64, random_circuit};
    use crate::ir::Layout;

    fn random_lanes(rng: &mut SplitMix64, n: usize) -> Vec<u64> {
        (0..n).map(|_| rng.next_u64()).collect()
    }

    /// Evaluates with every slot that is not an input starting as random garbage, and each
    /// run of consecutive ANDs executed as one batch (all reads, then all writes), the way a
    /// batching garbler does. A read of a stale or never-written slot shows up as a wrong
    /// output.
    fn eval_poisoned(
        c: &Circuit,
        inputs: &[u64],
        batch_ands: bool,
        rng: &mut SplitMix64,
    ) -> Vec<u64> {
        let mut wires: Vec<u64> = (0..c.layout.num_wires).map(|_| rng.next_u64()).collect();
        wires[..inputs.len()].copy_from_slice(inputs);
        let mut i = 0;
        let mut batch: Vec<(WireId, u64)> = Vec::new();
        while i < c.gates.len() {
            let g = c.gates[i];
            if g.op == Op::And && batch_ands {
                batch.clear();
                while i < c.gates.len() && c.gates[i].op == Op::And {
                    let g = c.gates[i];
                    batch.push((g.out, wires[g.a as usize] & wires[g.b as usize]));
                    i += 1;
                }
                for &(out, v) in &batch {
                    wires[out as usize] = v;
                }
                continue;
            }
            let v = match g.op {
                Op::Xor => wires[g.a as usize] ^ wires[g.b as usize],
                Op::Inv => !wires[g.a as usize],
                Op::Copy => wires[g.a as usize],
                Op::Const => 0u64.wrapping_sub(g.a as u64),
                Op::And => wires[g.a as usize] & wires[g.b as usize],
            };
            wires[g.out as usize] = v;
            i += 1;
        }
        c.layout
            .output_wires
            .iter()
            .map(|&w| wires[w as usize])
            .collect()
    }

    #[test]
    fn levelize_then_slots_preserve_function_on_random_circuits() {
        let mut rng = SplitMix64::new(7);
        for seed in 0..300u64 {
            let n_in = 1 + (seed % 9) as u32;
            let c = random_circuit(seed, n_in, 1 + (seed as usize * 7) % 200);
            let lev = levelize(&c).unwrap();
            let slotted = assign_slots(&lev);
            validate(&slotted).unwrap();
            assert!(slotted.layout.num_wires <= c.layout.num_wires);
            assert_eq!(slotted.layout.num_wires as u64, stats(&lev).peak_live_wires);
            assert_eq!(
                stats(&slotted).peak_live_wires,
                slotted.layout.num_wires as u64
            );
            assert_eq!(stats(&lev).and_depth, stats(&c).and_depth);
            for _ in 0..3 {
                let inputs = random_lanes(&mut rng, n_in as usize);
                let want = eval_bitsliced(&c, &inputs);
                assert_eq!(eval_bitsliced(&lev, &inputs), want, "levelize, seed {seed}");
                assert_eq!(
                    eval_poisoned(&lev, &inputs, true, &mut rng),
                    want,
                    "seed {seed}"
                );
                assert_eq!(
                    eval_poisoned(&slotted, &inputs, true, &mut rng),
                    want,
                    "seed {seed}"
                );
                // Slotting the original order directly must also be sound.
                let direct = assign_slots(&c);
                assert_eq!(
                    eval_poisoned(&direct, &inputs, false, &mut rng),
                    want,
                    "seed {seed}"
                );
            }
        }
    }

    #[test]
    fn levelize_into_slots_is_levelize_then_assign_slots() {
        let mut circuits: Vec<Circuit> = (0..150u64)
            .map(|seed| random_circuit(seed, 1 + (seed % 9) as u32, 1 + (seed as usize * 11) % 400))
            .collect();
        // An AND tree (separators), an input that is also an output, an unread input.
        let tree = Circuit {
            layout: Layout {
                num_wires: 10,
                input_widths: vec![5],
                output_widths: vec![2],
                output_wires: vec![9, 2],
            },
            gates: vec![
                Gate::and(0, 1, 5),
                Gate::and(1, 3, 6),
                Gate::and(5, 6, 7),
                Gate::xor(7, 7, 8),
                Gate::and(7, 3, 9),
            ],
        };
        circuits.push(tree);
        for (i, c) in circuits.iter().enumerate() {
            let want = assign_slots(&levelize(c).unwrap());
            assert_eq!(levelize_with_slots(c).unwrap(), want, "circuit {i}");
            assert_eq!(levelize_into_slots(c.clone()).unwrap(), want, "circuit {i}");
        }
        // Refused as levelize refuses it.
        let mut reused = random_circuit(3, 4, 20);
        let first_out = reused.gates[0].out;
        reused.gates.push(Gate::inv(0, first_out));
        assert!(levelize_into_slots(reused).is_err());
    }

    #[test]
    fn levelized_and_runs_are_independent_after_slotting() {
        for seed in 0..200u64 {
            let c = assign_slots(&levelize(&random_circuit(seed, 6, 150)).unwrap());
            let mut i = 0;
            while i < c.gates.len() {
                let mut written: Vec<WireId> = Vec::new();
                while i < c.gates.len() && c.gates[i].op == Op::And {
                    let g = c.gates[i];
                    assert!(
                        !written.contains(&g.a) && !written.contains(&g.b),
                        "seed {seed}: gate {i} reads a slot written earlier in its AND run"
                    );
                    written.push(g.out);
                    i += 1;
                }
                i += 1;
            }
        }
    }

    #[test]
    fn levelize_orders_by_and_depth() {
        // x = a & b (depth 1); y = x ^ c (depth 1); z = y & a (depth 2); w = a ^ b (depth 0)
        let c = Circuit {
            layout: Layout {
                num_wires: 7,
                input_widths: vec![3],
                output_widths: vec![2],
                output_wires: vec![5, 6],
            },
            gates: vec![
                Gate::and(0, 1, 3),
                Gate::xor(3, 2, 4),
                Gate::and(4, 0, 5),
                Gate::xor(0, 1, 6),
            ],
        };
        let lev = levelize(&c).unwrap();
        assert_eq!(lev.layout, c.layout);
        assert_eq!(
            lev.gates,
            vec![
                Gate::xor(0, 1, 6),
                Gate::and(0, 1, 3),
                Gate::xor(3, 2, 4),
                Gate::and(4, 0, 5)
            ]
        );
    }

    #[test]
    fn levelize_interleaves_independent_chains_of_linear_gates() {
        // Two chains of XORs at AND depth 0, one after the other in source order:
        // 4 = 0^1, 5 = 4^2, 6 = 5^3 and 7 = 2^3, 8 = 7^0, 9 = 8^1.
        let c = Circuit {
            layout: Layout {
                num_wires: 10,
                input_widths: vec![4],
                output_widths: vec![2],
                output_wires: vec![6, 9],
            },
            gates: vec![
                Gate::xor(0, 1, 4),
                Gate::xor(4, 2, 5),
                Gate::inv(5, 6),
                Gate::xor(2, 3, 7),
                Gate::xor(7, 0, 8),
                Gate::xor(8, 1, 9),
            ],
        };
        let lev = levelize(&c).unwrap();
        // By chain depth: the two heads, then the two second links, then the two tails.
        assert_eq!(
            lev.gates,
            vec![
                Gate::xor(0, 1, 4),
                Gate::xor(2, 3, 7),
                Gate::xor(4, 2, 5),
                Gate::xor(7, 0, 8),
                Gate::inv(5, 6),
                Gate::xor(8, 1, 9),
            ]
        );
        for x in 0..16u32 {
            let inputs: Vec<bool> = (0..4).map(|i| x >> i & 1 == 1).collect();
            assert_eq!(
                eval_bits(&lev, &inputs),
                eval_bits(&c, &inputs),
                "input {x:04b}"
            );
        }
    }

    #[test]
    fn levelize_separates_touching_and_levels() {
        // An AND tree: two ANDs of depth 1, then one of depth 2 reading both.
        let c = Circuit {
            layout: Layout {
                num_wires: 7,
                input_widths: vec![4],
                output_widths: vec![1],
                output_wires: vec![6],
            },
            gates: vec![Gate::and(0, 1, 4), Gate::and(2, 3, 5), Gate::and(4, 5, 6)],
        };
        let lev = levelize(&c).unwrap();
        assert_eq!(lev.layout.num_wires, 8);
        assert_eq!(
            lev.gates,
            vec![
                Gate::and(0, 1, 4),
                Gate::and(2, 3, 5),
                Gate::copy(4, 7),
                Gate::and(4, 5, 6)
            ]
        );
        let slotted = assign_slots(&lev);
        assert_eq!(slotted.layout.num_wires, 4);
        for x in 0..16u64 {
            let lanes: Vec<u64> = (0..4).map(|i| 0u64.wrapping_sub((x >> i) & 1)).collect();
            assert_eq!(eval_bitsliced(&slotted, &lanes), eval_bitsliced(&c, &lanes));
        }
    }

    /// The chain depths of [`depths_and_chains`] as first written: a second pass over the
    /// depths and each wire's final depth.
    fn linear_chain_depths(c: &Circuit, depths: &[u32], wire_depth: &[u32]) -> Vec<u32> {
        // Per wire: 1 + the chain depth of the linear gate that wrote it, or 0 (input, AND).
        let mut chain_after = vec![0u32; c.layout.num_wires as usize];
        c.gates
            .iter()
            .zip(depths)
            .map(|(g, &d)| {
                if g.op == Op::And {
                    return 0;
                }
                let chain = g
                    .inputs()
                    .iter()
                    .filter(|&&w| wire_depth[w as usize] == d)
                    .map(|&w| chain_after[w as usize])
                    .max()
                    .unwrap_or(0);
                chain_after[g.out as usize] = chain + 1;
                chain
            })
            .collect()
    }

    /// The order levelize is defined by, written plainly (a stable sort by group, the
    /// linear gates within a group by chain depth, a separator wherever an AND group follows
    /// an AND group), to check the one-pass placement against.
    fn levelize_plainly(c: &Circuit) -> Circuit {
        let (depths, wire_depth) = gate_depths(c);
        let chains = linear_chain_depths(c, &depths, &wire_depth);
        let key = |k: usize| {
            let d = depths[k] as usize;
            if c.gates[k].op == Op::And {
                2 * d - 1
            } else {
                2 * d
            }
        };
        let mut order: Vec<usize> = (0..c.gates.len()).collect();
        order.sort_by_key(|&k| (key(k), chains[k]));
        let mut layout = c.layout.clone();
        let mut gates: Vec<Gate> = Vec::new();
        for (i, &k) in order.iter().enumerate() {
            let g = c.gates[k];
            let new_group = i == 0 || key(order[i - 1]) != key(k);
            if new_group && g.op == Op::And && gates.last().is_some_and(|p| p.op == Op::And) {
                gates.push(Gate::copy(g.a, layout.num_wires));
                layout.num_wires += 1;
            }
            gates.push(g);
        }
        Circuit { layout, gates }
    }

    #[test]
    fn levelize_places_gates_as_the_plain_definition_does() {
        for seed in 0..40 {
            let c = random_circuit(seed, 5 + (seed as u32 % 7), 60 + 13 * seed as usize);
            assert_eq!(levelize(&c).unwrap(), levelize_plainly(&c), "seed {seed}");
        }
        // AND trees: every AND level touches the next.
        let mut gates = Vec::new();
        let (mut level, mut next_wire) = ((0..16).collect::<Vec<u32>>(), 16u32);
        while level.len() > 1 {
            let mut up = Vec::new();
            for pair in level.chunks(2) {
                gates.push(Gate::and(pair[0], pair[1], next_wire));
                up.push(next_wire);
                next_wire += 1;
            }
            level = up;
        }
        let tree = Circuit {
            layout: Layout {
                num_wires: next_wire,
                input_widths: vec![16],
                output_widths: vec![1],
                output_wires: level,
            },
            gates,
        };
        let lev = levelize(&tree).unwrap();
        assert_eq!(lev, levelize_plainly(&tree));
        assert_eq!(lev.layout.num_wires, tree.layout.num_wires + 3);
    }

    #[test]
    fn levelize_refuses_reused_wires() {
        let mut c = random_circuit(3, 4, 20);
        let first_out = c.gates[0].out;
        c.gates.push(Gate::inv(0, first_out));
        assert!(matches!(
            levelize(&c),
            Err(CircuitError::RewrittenWire { gate: 20, .. })
        ));
        c.gates.pop();
        c.gates.push(Gate::inv(1, 0));
        assert!(matches!(
            levelize(&c),
            Err(CircuitError::WritesInput { gate: 20, wire: 0 })
        ));
    }

    #[test]
    fn validate_reports_problems() {
        let ok = Circuit {
            layout: Layout {
                num_wires: 3,
                input_widths: vec![2],
                output_widths: vec![1],
                output_wires: vec![2],
            },
            gates: vec![Gate::and(0, 1, 2)],
        };
        validate(&ok).unwrap();
        let mut c = ok.clone();
        c.gates[0] = Gate::and(0, 2, 2);
        assert_eq!(
            validate(&c).unwrap_err().to_string(),
            "gate 0 reads wire 2 before it is set"
        );
        let mut c = ok.clone();
        c.gates[0] = Gate::and(0, 5, 2);
        assert!(matches!(
            validate(&c),
            Err(CircuitError::WireOutOfRange { wire: 5, .. })
        ));
        let mut c = ok.clone();
        c.gates.clear();
        assert!(matches!(
            validate(&c),
            Err(CircuitError::OutputUnset { .. })
        ));
        let mut c = ok.clone();
        c.layout.output_wires.push(1);
        assert!(matches!(
            validate(&c),
            Err(CircuitError::OutputCount { .. })
        ));
        let mut c = ok;
        c.gates[0] = Gate {
            op: Op::Const,
            a: 2,
            b: 0,
            out: 2,
        };
        assert!(matches!(
            validate(&c),
            Err(CircuitError::ConstNotBit { .. })
        ));
    }

    #[test]
    fn slots_reuse_and_keep_outputs() {
        // A chain: t1 = a ^ b, t2 = t1 & a, t3 = t2 ^ b, out = t3; plus a dead gate.
        let c = Circuit {
            layout: Layout {
                num_wires: 7,
                input_widths: vec![2],
                output_widths: vec![2],
                output_wires: vec![5, 0],
            },
            gates: vec![
                Gate::xor(0, 1, 2),
                Gate::and(2, 0, 3),
                Gate::inv(3, 6), // never read
                Gate::xor(3, 1, 4),
                Gate::copy(4, 5),
            ],
        };
        let s = assign_slots(&c);
        // Inputs 0 (output, live to end) and 1, plus at most one temporary at a time
        // besides the gate's own output.
        assert_eq!(s.layout.num_wires, 4);
        assert_eq!(s.layout.output_wires[1], 0);
        for a in 0..4u64 {
            let inputs = [a & 1, a >> 1];
            let inputs = [0u64.wrapping_sub(inputs[0]), 0u64.wrapping_sub(inputs[1])];
            assert_eq!(eval_bitsliced(&s, &inputs), eval_bitsliced(&c, &inputs));
        }
    }

    #[test]
    fn stats_of_small_circuit() {
        let c = Circuit {
            layout: Layout {
                num_wires: 8,
                input_widths: vec![2, 1],
                output_widths: vec![1],
                output_wires: vec![6],
            },
            gates: vec![
                Gate::and(0, 1, 3),
                Gate::and(1, 2, 4),
                Gate::xor(3, 4, 5),
                Gate::and(5, 0, 6),
                Gate::and(0, 2, 7), // depth 1, never read
            ],
        };
        let s = stats(&c);
        assert_eq!(s.and_gates, 4);
        assert_eq!(s.xor_gates, 1);
        assert_eq!(s.and_depth, 2);
        assert_eq!(s.and_levels, 2);
        assert_eq!(s.max_width, 3);
        assert_eq!(s.mean_width, 2.0);
        assert_eq!(
            s.width_histogram,
            vec![
                WidthBucket {
                    min: 1,
                    max: 1,
                    levels: 1
                },
                WidthBucket {
                    min: 2,
                    max: 3,
                    levels: 1
                }
            ]
        );
        // 3 inputs; gate 0 adds wire 3 (4 live); gate 1 retires input 1 and adds 4 (4);
        // then the count only falls.
        assert_eq!(s.peak_live_wires, 4);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"and_depth\":2"));
    }
}
