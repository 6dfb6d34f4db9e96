//! Circuits with parallel regions (coarse-grained parallelism, USENIX Sec 2015 §4.4).
//!
//! A [`ParallelCircuit`] is a sequence of [`Phase`]s: sequential gate lists on global wires,
//! and [`Region`]s whose [`Instance`]s are independent of each other, so that any thread may
//! garble or evaluate any instance in any order. Each instance runs a *template* (a
//! sub-circuit stored once however many instances use it) on its own inner inputs (global
//! wires defined before the region) and writes its inner outputs to fresh global wires.
//! Wires internal to an instance never get global ids: a garbler keeps their labels in a
//! per-thread scratch array.
//!
//! [`ParallelCircuit::from_flat`] builds one from a plain circuit and the gate ranges of
//! each region's instances (what the compiler records); [`ParallelCircuit::flatten`] gives
//! the plain circuit back, and the [`GateSource`] impl streams exactly that gate sequence,
//! so a sequential protocol runs a parallel circuit unchanged.

use std::collections::HashMap;
use std::ops::Range;

use crate::ir::{CHUNK_GATES, Circuit, Gate, GateSource, Layout, Op, WireId};

/// A sub-circuit run by the instances of a region: input wires `0..num_inputs`, then one
/// wire per gate in order (gate `k` writes wire `num_inputs + k`); `outputs` lists the
/// wires the instance hands back, in the order of [`Instance::outputs`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Template {
    pub num_inputs: u32,
    pub gates: Vec<Gate>,
    pub outputs: Vec<WireId>,
}

impl Template {
    pub fn num_wires(&self) -> u32 {
        self.num_inputs + self.gates.len() as u32
    }
    pub fn and_count(&self) -> u64 {
        self.gates.iter().filter(|g| g.op == Op::And).count() as u64
    }
}

/// One run of a template: the global wires feeding its inputs and receiving its outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub template: u32,
    pub inputs: Vec<WireId>,
    pub outputs: Vec<WireId>,
}

/// A parallel region: instances that read only wires set before the region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Source line of the loop the region came from (0 if unknown).
    pub line: u32,
    pub instances: Vec<Instance>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Gates on global wires, in topological order.
    Sequential(Vec<Gate>),
    Region(Region),
}

/// Where a region's instances lie in a flat circuit: instance `k` is the gates
/// `bounds[k]..bounds[k + 1]` (so the instances are consecutive and cover the region).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionSpan {
    pub line: u32,
    pub bounds: Vec<usize>,
}

/// What a region looks like, for `pgc info`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RegionInfo {
    pub line: u32,
    pub instances: u64,
    /// ANDs per instance (the average where instances run different templates).
    pub and_gates_per_instance: u64,
    pub and_gates: u64,
    pub templates: u64,
    pub inputs_per_instance: u64,
    pub outputs_per_instance: u64,
}

impl RegionInfo {
    /// Runs of equal consecutive regions (the same loop reached again and again, as when a
    /// function holding it is called in a loop), each with how often it repeats: what a
    /// listing shows as one line.
    pub fn runs(info: &[RegionInfo]) -> Vec<(&RegionInfo, usize)> {
        let mut runs: Vec<(&RegionInfo, usize)> = Vec::new();
        for r in info {
            match runs.last_mut() {
                Some((last, n)) if *last == r => *n += 1,
                _ => runs.push((r, 1)),
            }
        }
        runs
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParallelError {
    #[error("region at line {line}: its instance bounds are not increasing or leave the circuit")]
    BadBounds { line: u32 },
    #[error("region at line {line} overlaps the region before it")]
    Overlap { line: u32 },
    #[error(
        "region at line {line}: instance {instance} reads wire {wire}, set by another instance of the same region"
    )]
    NotIndependent {
        line: u32,
        instance: usize,
        wire: WireId,
    },
    #[error("the circuit must be in single-assignment form: gate {gate} writes wire {wire} again")]
    NotSsa { gate: usize, wire: WireId },
    #[error("gate {gate} reads wire {wire}, which is out of range or not yet set")]
    BadWire { gate: usize, wire: WireId },
    #[error("{0}")]
    Malformed(String),
}

/// A circuit split into sequential phases and parallel regions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParallelCircuit {
    /// Global wires: inputs first, then every wire a sequential gate or an instance output
    /// sets. `num_wires` counts global wires only.
    pub layout: Layout,
    pub phases: Vec<Phase>,
    pub templates: Vec<Template>,
    /// The layout of the flattened circuit (global wires plus one per instance-internal
    /// gate), which the [`GateSource`] impl presents.
    flat_layout: Layout,
    gate_count: u64,
    and_count: u64,
}

const NO_INSTANCE: u32 = u32::MAX;

impl ParallelCircuit {
    /// Assembles a parallel circuit from its parts, checking that it is well formed: every
    /// wire in range and set before it is read, each global wire set once, instances only
    /// reading wires set before their region.
    pub fn new(
        layout: Layout,
        phases: Vec<Phase>,
        templates: Vec<Template>,
    ) -> Result<ParallelCircuit, ParallelError> {
        let n = layout.num_wires as usize;
        let n_in = layout.num_input_wires() as usize;
        if n_in > n {
            return Err(ParallelError::Malformed(format!(
                "{n_in} input wires but only {n} wires"
            )));
        }
        for (t, tpl) in templates.iter().enumerate() {
            let nw = tpl.num_wires();
            for (k, g) in tpl.gates.iter().enumerate() {
                let out = tpl.num_inputs + k as u32;
                if g.out != out {
                    return Err(ParallelError::Malformed(format!(
                        "template {t}: gate {k} writes wire {} instead of {out}",
                        g.out
                    )));
                }
                if g.op == Op::Const && g.a > 1 {
                    return Err(ParallelError::Malformed(format!(
                        "template {t}: gate {k} is a constant {}",
                        g.a
                    )));
                }
                if g.op != Op::Const && g.inputs().iter().any(|&w| w >= out) {
                    return Err(ParallelError::Malformed(format!(
                        "template {t}: gate {k} reads a wire not set before it"
                    )));
                }
            }
            if let Some(&w) = tpl.outputs.iter().find(|&&w| w >= nw) {
                return Err(ParallelError::Malformed(format!(
                    "template {t}: output wire {w} out of range"
                )));
            }
        }
        // The phase (from 1; inputs 0) in which each wire was set, UNSET if never: an
        // instance may read only wires set in an earlier phase.
        const UNSET: u32 = u32::MAX;
        let mut set = vec![UNSET; n];
        set[..n_in].fill(0);
        let mut phase_no = 0u32;
        let mut gate_count = 0u64;
        let mut and_count = 0u64;
        let mut internal = 0u64;
        let mut index = 0usize;
        let write = |set: &mut Vec<u32>, w: WireId, gate: usize, phase: u32| match set
            .get_mut(w as usize)
        {
            Some(s) if *s == UNSET => {
                *s = phase;
                Ok(())
            }
            Some(_) => Err(ParallelError::NotSsa { gate, wire: w }),
            None => Err(ParallelError::BadWire { gate, wire: w }),
        };
        for phase in &phases {
            phase_no += 1;
            match phase {
                Phase::Sequential(gates) => {
                    for g in gates {
                        if g.op == Op::Const && g.a > 1 {
                            return Err(ParallelError::Malformed(format!(
                                "gate {index} is a constant {}",
                                g.a
                            )));
                        }
                        for &w in g.inputs() {
                            if set.get(w as usize).is_none_or(|&p| p == UNSET) {
                                return Err(ParallelError::BadWire {
                                    gate: index,
                                    wire: w,
                                });
                            }
                        }
                        write(&mut set, g.out, index, phase_no)?;
                        and_count += (g.op == Op::And) as u64;
                        index += 1;
                    }
                    gate_count += gates.len() as u64;
                }
                Phase::Region(region) => {
                    // Instances read only what was set before the region.
                    for (i, inst) in region.instances.iter().enumerate() {
                        let tpl = templates.get(inst.template as usize).ok_or_else(|| {
                            ParallelError::Malformed(format!(
                                "region at line {}: instance {i} names template {} of {}",
                                region.line,
                                inst.template,
                                templates.len()
                            ))
                        })?;
                        if inst.inputs.len() != tpl.num_inputs as usize
                            || inst.outputs.len() != tpl.outputs.len()
                        {
                            return Err(ParallelError::Malformed(format!(
                                "region at line {}: instance {i} has {} inputs and {} outputs, its template {} and {}",
                                region.line,
                                inst.inputs.len(),
                                inst.outputs.len(),
                                tpl.num_inputs,
                                tpl.outputs.len()
                            )));
                        }
                        for &w in &inst.inputs {
                            if set.get(w as usize).is_none_or(|&p| p >= phase_no) {
                                return Err(ParallelError::NotIndependent {
                                    line: region.line,
                                    instance: i,
                                    wire: w,
                                });
                            }
                        }
                        for &w in &inst.outputs {
                            write(&mut set, w, index, phase_no)?;
                        }
                        gate_count += tpl.gates.len() as u64;
                        and_count += tpl.and_count();
                        internal += tpl.gates.len() as u64;
                        index += tpl.gates.len();
                    }
                }
            }
        }
        for (index, &w) in layout.output_wires.iter().enumerate() {
            if set.get(w as usize).is_none_or(|&p| p == UNSET) {
                return Err(ParallelError::Malformed(format!(
                    "output {index} is wire {w}, which is never set"
                )));
            }
        }
        let flat_wires = layout.num_wires as u64 + internal;
        if flat_wires > u32::MAX as u64 {
            return Err(ParallelError::Malformed(format!(
                "the flattened circuit would have {flat_wires} wires, more than 32-bit ids allow"
            )));
        }
        let mut flat_layout = layout.clone();
        flat_layout.num_wires = flat_wires as u32;
        Ok(ParallelCircuit {
            layout,
            phases,
            templates,
            flat_layout,
            gate_count,
            and_count,
        })
    }

    /// A circuit without regions.
    pub fn sequential(c: &Circuit) -> Result<ParallelCircuit, ParallelError> {
        ParallelCircuit::from_flat(c, &[])
    }

    /// Splits a single-assignment, topologically ordered circuit into phases: the gates of
    /// each span become a region (one instance per range, identical instances sharing one
    /// template), the rest sequential phases. Global wires are renumbered densely (inputs
    /// keep their ids). A region with fewer than two non-empty instances stays sequential.
    pub fn from_flat(c: &Circuit, spans: &[RegionSpan]) -> Result<ParallelCircuit, ParallelError> {
        let n = c.layout.num_wires as usize;
        let n_in = c.layout.num_input_wires() as usize;
        let n_gates = c.gates.len();
        // Instance id of each gate (global numbering over all regions).
        let mut inst_of_gate = vec![NO_INSTANCE; n_gates];
        let mut next_inst = 0u32;
        let mut prev_end = 0usize;
        let mut kept: Vec<bool> = Vec::with_capacity(spans.len());
        for span in spans {
            let b = &span.bounds;
            if b.len() < 2 || b.windows(2).any(|w| w[0] > w[1]) || b[b.len() - 1] > n_gates {
                return Err(ParallelError::BadBounds { line: span.line });
            }
            if b[0] < prev_end {
                return Err(ParallelError::Overlap { line: span.line });
            }
            prev_end = b[b.len() - 1];
            // A region with fewer than two non-empty instances stays sequential.
            let keep = b.windows(2).filter(|w| w[1] > w[0]).count() >= 2;
            kept.push(keep);
            if keep {
                for w in b.windows(2) {
                    inst_of_gate[w[0]..w[1]].fill(next_inst);
                    next_inst += 1;
                }
            }
        }
        // Which instance defines each wire, and which are read inside their instance.
        let mut def_inst = vec![NO_INSTANCE; n];
        let mut defined = vec![false; n];
        defined[..n_in.min(n)].fill(true);
        let mut read_inside = vec![false; n];
        for (k, g) in c.gates.iter().enumerate() {
            let me = inst_of_gate[k];
            for &w in g.inputs() {
                if !defined.get(w as usize).copied().unwrap_or(false) {
                    return Err(ParallelError::BadWire { gate: k, wire: w });
                }
                if me != NO_INSTANCE && def_inst[w as usize] == me {
                    read_inside[w as usize] = true;
                }
            }
            match defined.get_mut(g.out as usize) {
                Some(s) if !*s => *s = true,
                Some(_) => {
                    return Err(ParallelError::NotSsa {
                        gate: k,
                        wire: g.out,
                    });
                }
                None => {
                    return Err(ParallelError::BadWire {
                        gate: k,
                        wire: g.out,
                    });
                }
            }
            def_inst[g.out as usize] = me;
        }
        // An INV or copy of an instance's own wire that only the code after the region
        // reads moves out of the instance (it is free), so that instances differing only in
        // which of their results later code needs complemented share one template.
        let mut hoisted = vec![false; n_gates];
        for (k, g) in c.gates.iter().enumerate() {
            let me = inst_of_gate[k];
            if me != NO_INSTANCE
                && matches!(g.op, Op::Inv | Op::Copy)
                && def_inst[g.a as usize] == me
                && !read_inside[g.out as usize]
            {
                hoisted[k] = true;
                inst_of_gate[k] = NO_INSTANCE;
                def_inst[g.out as usize] = NO_INSTANCE;
            }
        }
        let mut escapes = vec![false; n];
        for (k, g) in c.gates.iter().enumerate() {
            let me = inst_of_gate[k];
            for &w in g.inputs() {
                if def_inst[w as usize] != me {
                    escapes[w as usize] = true;
                }
            }
        }
        for &w in &c.layout.output_wires {
            if !defined.get(w as usize).copied().unwrap_or(false) {
                return Err(ParallelError::Malformed(format!(
                    "output wire {w} is never set"
                )));
            }
            escapes[w as usize] = true;
        }
        // Independence: an instance reads only wires set before its region began.
        let mut first_inst = 0u32;
        for (span, _) in spans.iter().zip(&kept).filter(|(_, k)| **k) {
            let region_start = span.bounds[0];
            let count = span.bounds.len() as u32 - 1;
            let region_end = span.bounds[span.bounds.len() - 1];
            for (g, &me) in c.gates[region_start..region_end]
                .iter()
                .zip(&inst_of_gate[region_start..region_end])
            {
                if me == NO_INSTANCE {
                    continue;
                }
                for &w in g.inputs() {
                    let d = def_inst[w as usize];
                    if d != me && d != NO_INSTANCE && d >= first_inst && d < first_inst + count {
                        return Err(ParallelError::NotIndependent {
                            line: span.line,
                            instance: (me - first_inst) as usize,
                            wire: w,
                        });
                    }
                }
            }
            first_inst += count;
        }
        // Global renumbering: inputs keep ids; sequential outputs and escaping instance
        // outputs get the next ids in definition order.
        let mut global = vec![u32::MAX; n];
        for (i, g) in global.iter_mut().enumerate().take(n_in) {
            *g = i as u32;
        }
        let mut next = n_in as u32;
        for (k, g) in c.gates.iter().enumerate() {
            if inst_of_gate[k] == NO_INSTANCE || escapes[g.out as usize] {
                global[g.out as usize] = next;
                next += 1;
            }
        }
        let gmap = |w: WireId| global[w as usize];

        let mut phases: Vec<Phase> = Vec::new();
        let mut templates: Vec<Template> = Vec::new();
        let mut template_ids: HashMap<Template, u32> = HashMap::new();
        let mut template_outputs: Vec<std::collections::BTreeSet<WireId>> = Vec::new();
        // (phase, instance, wanted local outputs, their global wires), finished below.
        #[allow(clippy::type_complexity)]
        let mut pending: Vec<(usize, usize, Vec<WireId>, Vec<WireId>)> = Vec::new();
        let mut seq: Vec<Gate> = Vec::new();
        let push_seq = |seq: &mut Vec<Gate>, g: &Gate| {
            let mut ng = *g;
            match g.op {
                Op::Xor | Op::And => {
                    ng.a = gmap(g.a);
                    ng.b = gmap(g.b);
                }
                Op::Inv | Op::Copy => ng.a = gmap(g.a),
                Op::Const => {}
            }
            ng.out = gmap(g.out);
            seq.push(ng);
        };
        let mut pos = 0usize;
        for (span, &keep) in spans.iter().zip(&kept) {
            let b = &span.bounds;
            for g in &c.gates[pos..b[0]] {
                push_seq(&mut seq, g);
            }
            pos = b[b.len() - 1];
            let own = |r: Range<usize>| -> Vec<Gate> {
                r.filter(|&k| !hoisted[k]).map(|k| c.gates[k]).collect()
            };
            if !keep {
                for g in &c.gates[b[0]..pos] {
                    push_seq(&mut seq, g);
                }
                continue;
            }
            if !seq.is_empty() {
                phases.push(Phase::Sequential(std::mem::take(&mut seq)));
            }
            let mut instances = Vec::with_capacity(b.len() - 1);
            for w in b.windows(2) {
                let gates = own(w[0]..w[1]);
                if gates.is_empty() {
                    continue;
                }
                let (mut tpl, inputs, outputs) = template_of(&gates, &escapes, &gmap);
                // Instances with the same gates share a template whatever results later
                // code needs from each: the template hands out the union, and an instance
                // gets a fresh (unread) global wire for results nobody reads.
                let wanted = std::mem::take(&mut tpl.outputs);
                let id = *template_ids.entry(tpl.clone()).or_insert_with(|| {
                    templates.push(tpl);
                    template_outputs.push(std::collections::BTreeSet::new());
                    templates.len() as u32 - 1
                });
                template_outputs[id as usize].extend(wanted.iter().copied());
                pending.push((phases.len(), instances.len(), wanted, outputs.clone()));
                instances.push(Instance {
                    template: id,
                    inputs,
                    outputs,
                });
            }
            phases.push(Phase::Region(Region {
                line: span.line,
                instances,
            }));
            for (g, _) in c.gates[b[0]..pos]
                .iter()
                .zip(&hoisted[b[0]..pos])
                .filter(|(_, h)| **h)
            {
                push_seq(&mut seq, g);
            }
        }
        for g in &c.gates[pos..] {
            push_seq(&mut seq, g);
        }
        if !seq.is_empty() {
            phases.push(Phase::Sequential(seq));
        }
        for (t, outs) in templates.iter_mut().zip(&template_outputs) {
            t.outputs = outs.iter().copied().collect();
        }
        for (phase, index, wanted, globals) in pending {
            let Phase::Region(region) = &mut phases[phase] else {
                unreachable!("pending instances are in regions")
            };
            let inst = &mut region.instances[index];
            let tpl = &templates[inst.template as usize];
            // Both lists ascend (wires in definition order), so one merge walk pairs them.
            let mut k = 0;
            inst.outputs = tpl
                .outputs
                .iter()
                .map(|lw| {
                    if wanted.get(k) == Some(lw) {
                        k += 1;
                        globals[k - 1]
                    } else {
                        next += 1;
                        next - 1
                    }
                })
                .collect();
        }
        let layout = Layout {
            num_wires: next,
            input_widths: c.layout.input_widths.clone(),
            output_widths: c.layout.output_widths.clone(),
            output_wires: c.layout.output_wires.iter().map(|&w| gmap(w)).collect(),
        };
        ParallelCircuit::new(layout, phases, templates)
    }

    /// The layout of the flattened circuit (what [`GateSource::layout`] returns).
    pub fn flat_layout(&self) -> &Layout {
        &self.flat_layout
    }

    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.phases.iter().filter_map(|p| match p {
            Phase::Region(r) => Some(r),
            Phase::Sequential(_) => None,
        })
    }

    /// One entry per region, in order.
    pub fn region_info(&self) -> Vec<RegionInfo> {
        self.regions()
            .map(|r| {
                let and_gates: u64 = r
                    .instances
                    .iter()
                    .map(|i| self.templates[i.template as usize].and_count())
                    .sum();
                let n = r.instances.len() as u64;
                let mut used: Vec<u32> = r.instances.iter().map(|i| i.template).collect();
                used.sort_unstable();
                used.dedup();
                let first = &r.instances[0];
                RegionInfo {
                    line: r.line,
                    instances: n,
                    and_gates_per_instance: and_gates / n.max(1),
                    and_gates,
                    templates: used.len() as u64,
                    inputs_per_instance: first.inputs.len() as u64,
                    outputs_per_instance: first.outputs.len() as u64,
                }
            })
            .collect()
    }

    /// Calls `f` with the gates of the flattened circuit, phase by phase and instance by
    /// instance; instance-internal wires get ids from `layout.num_wires` up, in order.
    pub fn for_each_flat_chunk<E>(
        &self,
        f: &mut dyn FnMut(&[Gate]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut next_internal = self.layout.num_wires;
        let mut buf: Vec<Gate> = Vec::with_capacity(CHUNK_GATES);
        let mut local: Vec<WireId> = Vec::new();
        for phase in &self.phases {
            match phase {
                Phase::Sequential(gates) => {
                    for chunk in gates.chunks(CHUNK_GATES) {
                        if !buf.is_empty() {
                            f(&buf)?;
                            buf.clear();
                        }
                        f(chunk)?;
                    }
                }
                Phase::Region(region) => {
                    for inst in &region.instances {
                        let tpl = &self.templates[inst.template as usize];
                        local.clear();
                        local.extend_from_slice(&inst.inputs);
                        let first_gate = local.len();
                        for _ in &tpl.gates {
                            local.push(next_internal);
                            next_internal += 1;
                        }
                        for (&lw, &gw) in tpl.outputs.iter().zip(&inst.outputs) {
                            // Outputs are gates' wires (or inputs passed through, which a
                            // template never lists since they are not set inside it).
                            if lw as usize >= first_gate {
                                local[lw as usize] = gw;
                            }
                        }
                        for g in &tpl.gates {
                            let mut ng = *g;
                            match g.op {
                                Op::Xor | Op::And => {
                                    ng.a = local[g.a as usize];
                                    ng.b = local[g.b as usize];
                                }
                                Op::Inv | Op::Copy => ng.a = local[g.a as usize],
                                Op::Const => {}
                            }
                            ng.out = local[g.out as usize];
                            buf.push(ng);
                            if buf.len() >= CHUNK_GATES {
                                f(&buf)?;
                                buf.clear();
                            }
                        }
                    }
                }
            }
        }
        if !buf.is_empty() {
            f(&buf)?;
        }
        Ok(())
    }

    /// What [`flatten`](ParallelCircuit::flatten) allocates: 16 bytes per flattened gate
    /// (a small file of regions can stand for a huge flattened circuit: check this first).
    pub fn flat_memory_need(&self) -> crate::limits::MemoryNeed {
        crate::limits::MemoryNeed::per_item(self.gate_count, "gates", 16, "records when flattened")
    }

    /// The equivalent plain circuit.
    pub fn flatten(&self) -> Circuit {
        let mut gates = Vec::with_capacity(self.gate_count as usize);
        self.for_each_flat_chunk(&mut |chunk| {
            gates.extend_from_slice(chunk);
            Ok::<(), std::convert::Infallible>(())
        })
        .expect("infallible");
        Circuit {
            layout: self.flat_layout.clone(),
            gates,
        }
    }
}

/// The template an instance's gates run, with the global wires of its inputs (in order of
/// first use) and outputs (in order of definition). Template outputs are its gate wires
/// that escape the instance.
fn template_of(
    gates: &[Gate],
    escapes: &[bool],
    gmap: &dyn Fn(WireId) -> WireId,
) -> (Template, Vec<WireId>, Vec<WireId>) {
    let mut local: HashMap<WireId, WireId> = HashMap::with_capacity(gates.len() * 2);
    let mut inputs: Vec<WireId> = Vec::new();
    // First pass: inputs are wires read but not set inside, numbered by first use.
    let inside: std::collections::HashSet<WireId> = gates.iter().map(|g| g.out).collect();
    for g in gates {
        for &w in g.inputs() {
            if !inside.contains(&w) && !local.contains_key(&w) {
                local.insert(w, inputs.len() as WireId);
                inputs.push(w);
            }
        }
    }
    let num_inputs = inputs.len() as u32;
    let mut tgates = Vec::with_capacity(gates.len());
    let mut outputs = Vec::new();
    let mut out_globals = Vec::new();
    for (k, g) in gates.iter().enumerate() {
        let out = num_inputs + k as u32;
        let mut ng = *g;
        match g.op {
            Op::Xor | Op::And => {
                ng.a = local[&g.a];
                ng.b = local[&g.b];
            }
            Op::Inv | Op::Copy => ng.a = local[&g.a],
            Op::Const => {}
        }
        ng.out = out;
        local.insert(g.out, out);
        tgates.push(ng);
        if escapes[g.out as usize] {
            outputs.push(out);
            out_globals.push(gmap(g.out));
        }
    }
    let global_inputs = inputs.iter().map(|&w| gmap(w)).collect();
    (
        Template {
            num_inputs,
            gates: tgates,
            outputs,
        },
        global_inputs,
        out_globals,
    )
}

// The layout a gate stream presents is the flattened one (global plus internal wires).
#[allow(clippy::misnamed_getters)]
impl GateSource for ParallelCircuit {
    fn layout(&self) -> &Layout {
        &self.flat_layout
    }
    fn gate_count(&self) -> u64 {
        self.gate_count
    }
    fn and_count(&self) -> u64 {
        self.and_count
    }
    fn fingerprint(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"pgc parallel circuit v1\0");
        h.update(&self.layout.to_bytes());
        h.update(&(self.templates.len() as u64).to_le_bytes());
        for t in &self.templates {
            h.update(&t.num_inputs.to_le_bytes());
            h.update(&(t.gates.len() as u64).to_le_bytes());
            crate::ir::hash_gates(&mut h, &t.gates);
            h.update(&(t.outputs.len() as u64).to_le_bytes());
            for w in &t.outputs {
                h.update(&w.to_le_bytes());
            }
        }
        h.update(&(self.phases.len() as u64).to_le_bytes());
        for p in &self.phases {
            match p {
                Phase::Sequential(gates) => {
                    h.update(&[0]);
                    h.update(&(gates.len() as u64).to_le_bytes());
                    crate::ir::hash_gates(&mut h, gates);
                }
                Phase::Region(r) => {
                    h.update(&[1]);
                    h.update(&r.line.to_le_bytes());
                    h.update(&(r.instances.len() as u64).to_le_bytes());
                    // The same bytes as one update per field, gathered first: an update
                    // of 4 bytes costs as much as one of kilobytes (BioMatch's 131,072
                    // instance wires took 4.8 ms one by one).
                    let mut bytes = Vec::with_capacity(1 << 16);
                    for i in &r.instances {
                        bytes.extend_from_slice(&i.template.to_le_bytes());
                        for w in i.inputs.iter().chain(&i.outputs) {
                            bytes.extend_from_slice(&w.to_le_bytes());
                        }
                        if bytes.len() >= 1 << 16 {
                            h.update(&bytes);
                            bytes.clear();
                        }
                    }
                    h.update(&bytes);
                }
            }
        }
        *h.finalize().as_bytes()
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        self.for_each_flat_chunk(f)
    }
    fn form(&self) -> crate::ir::CircuitForm {
        crate::ir::CircuitForm::Parallel
    }
}

/// Gate ranges helper for tests and tools: instance `k` of a span as a range.
pub fn instance_range(span: &RegionSpan, k: usize) -> Range<usize> {
    span.bounds[k]..span.bounds[k + 1]
}
