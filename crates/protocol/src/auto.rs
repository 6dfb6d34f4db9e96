//! What `--parallel auto` runs: a choice per circuit between the sequential protocol
//! ([`crate::yao`], on the circuit levelized and packed into slots) and coarse-grained
//! parallelism over the circuit's regions ([`crate::parallel`], CGP: Buescher et al., USENIX
//! Security 2015, §4.4), made from facts of the circuit that both parties hold, so that both
//! make the same choice without a message.
//!
//! Why these two and when (measured in BENCHMARKS.md, "Issue 17"):
//! - The sequential protocol garbles AND gates in batches of one level and keeps labels in
//!   reused slots; it is the fastest per gate on deep, narrow circuits (edit distance,
//!   modular exponentiation), but levelizing and slot assignment cost time per unrolled gate
//!   before the first table.
//! - The parallel protocol runs each region instance from its template (one stored copy,
//!   labels in a per-thread scratch array): no levelizing of the unrolled circuit, and the
//!   instances of a region spread over threads at one barrier per region. Its sequential
//!   phases run gate by gate in program order, slower than level batches.
//! - So the parallel protocol wins where regions worth splitting hold most of the AND gates
//!   (BioMatch, MExp, MVMul: 98–100 %), even on one thread, and the sequential one wherever
//!   they do not (modexp's many tiny regions, edit distance and Bristol circuits, none).
//! - Circuits without regions run sequentially at any size: running them in program order
//!   on one thread (CGP's sequential phase, no levelizing) once took up to 17 % less CPU on
//!   EDT-255 (13 M gates), but the sequential path now reads such a circuit as it is stored
//!   and levelizes and slots it in place, and costs no more CPU than program order on every
//!   such circuit measured (EDT-63…255, random and Bristol circuits; BENCHMARKS.md, "`none`
//!   on large circuits without regions"), so there is no size at which to switch.
//! - Fine-grained parallelism (FGP) is never chosen: a barrier per AND level lost on every
//!   program measured so far (Figure 6), and deciding it needs the circuit levelized first.
//!   Inter-party parallelism (IPP) is never chosen either (it needs both parties' machines
//!   idle, which a party cannot know). Both stay available as explicit modes.
//!
//! The choice depends on the circuit only (not on thread counts or τ, which may differ
//! between the parties before [`crate::parallel`] agrees on them), so two parties running
//! `--parallel auto` choose alike.

use pgc_circuit::{GateSource, ParallelCircuit, Phase};

use crate::parallel::ParallelMode;

/// Regions below this many AND gates in all are never split (the engine's default τ of
/// 128 ANDs per thread, for 2 threads): they run serially under CGP too.
pub const MIN_SPLIT_REGION_ANDS: u64 = 2 * pgc_garble::parallel::DEFAULT_TAU as u64;

/// The share of AND gates (in percent) that regions worth splitting must hold for `auto`
/// to choose the parallel protocol.
pub const MIN_REGION_SHARE_PERCENT: u64 = 50;

/// What `auto` chose, and why (one line, for stderr).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoChoice {
    /// [`ParallelMode::None`] or [`ParallelMode::Cgp`].
    pub mode: ParallelMode,
    /// Worker threads per party (1 for the sequential protocol).
    pub threads: usize,
    pub reason: String,
}

/// The regions of a circuit as `auto` sees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionFacts {
    pub and_gates: u64,
    /// Regions with at least 2 instances and [`MIN_SPLIT_REGION_ANDS`] AND gates.
    pub split_regions: u64,
    /// AND gates in those regions.
    pub split_ands: u64,
    /// Regions too small to split (they run serially).
    pub small_regions: u64,
}

impl RegionFacts {
    pub fn of(circuit: &ParallelCircuit) -> RegionFacts {
        let template_ands: Vec<u64> = circuit.templates.iter().map(|t| t.and_count()).collect();
        let mut facts = RegionFacts {
            and_gates: circuit.and_count(),
            ..RegionFacts::default()
        };
        for phase in &circuit.phases {
            if let Phase::Region(region) = phase {
                let ands: u64 = region
                    .instances
                    .iter()
                    .map(|i| template_ands.get(i.template as usize).copied().unwrap_or(0))
                    .sum();
                if region.instances.len() >= 2 && ands >= MIN_SPLIT_REGION_ANDS {
                    facts.split_regions += 1;
                    facts.split_ands += ands;
                } else {
                    facts.small_regions += 1;
                }
            }
        }
        facts
    }

    /// Percent of the AND gates in regions worth splitting (rounded down).
    pub fn split_percent(&self) -> u64 {
        (self.split_ands as u128 * 100 / self.and_gates.max(1) as u128) as u64
    }
}

/// Chooses for a circuit held as phases and regions; `threads`: this party's worker
/// threads.
pub fn choose(circuit: &ParallelCircuit, threads: usize) -> AutoChoice {
    choose_from(&RegionFacts::of(circuit), threads)
}

/// [`choose`] from the facts.
pub fn choose_from(facts: &RegionFacts, threads: usize) -> AutoChoice {
    let threads = threads.max(1);
    if facts.and_gates == 0 || facts.split_percent() < MIN_REGION_SHARE_PERCENT {
        let reason = if facts.split_regions + facts.small_regions == 0 {
            "the circuit has no parallel regions: the sequential protocol garbles it in \
             AND-level batches"
                .to_string()
        } else {
            format!(
                "{}% of the AND gates lie in regions worth splitting ({} region(s); {} \
                 more too small), under the {}% that pays for running the rest gate by gate: \
                 the sequential protocol garbles it in AND-level batches",
                facts.split_percent(),
                facts.split_regions,
                facts.small_regions,
                MIN_REGION_SHARE_PERCENT
            )
        };
        return AutoChoice {
            mode: ParallelMode::None,
            threads: 1,
            reason,
        };
    }
    let mut reason = format!(
        "{}% of the AND gates lie in {} parallel region(s): their instances run from \
         their templates (nothing to levelize)",
        facts.split_percent(),
        facts.split_regions
    );
    if threads > 1 {
        reason += &format!(", spread over {threads} threads per party (cgp)");
    } else {
        reason += ", on one thread per party (cgp)";
    }
    AutoChoice {
        mode: ParallelMode::Cgp,
        threads,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_circuit::{Gate, Instance, Layout, Region, Template};

    /// A circuit with one region of `instances` instances of `ands` ANDs each, after a
    /// sequential chain of `seq_ands` ANDs.
    fn circuit(seq_ands: u32, instances: u32, ands: u32) -> ParallelCircuit {
        // Inputs 0 and 1; the chain writes 2.. .
        let mut seq = Vec::new();
        let mut last = 0;
        for k in 0..seq_ands {
            let out = 2 + k;
            seq.push(Gate::and(last, 1, out));
            last = out;
        }
        let mut next = 2 + seq_ands;
        let template = Template {
            num_inputs: 2,
            gates: (0..ands)
                .map(|k| Gate::and(if k == 0 { 0 } else { 1 + k }, 1, 2 + k))
                .collect(),
            outputs: vec![1 + ands],
        };
        let mut insts = Vec::new();
        for _ in 0..instances {
            insts.push(Instance {
                template: 0,
                inputs: vec![last, 1],
                outputs: vec![next],
            });
            next += 1;
        }
        let outputs: Vec<u32> = insts.iter().map(|i| i.outputs[0]).collect();
        let mut phases = vec![Phase::Sequential(seq)];
        if instances > 0 {
            phases.push(Phase::Region(Region {
                line: 1,
                instances: insts,
            }));
        }
        let layout = Layout {
            num_wires: next,
            input_widths: vec![1, 1],
            output_widths: vec![outputs.len() as u32],
            output_wires: outputs,
        };
        ParallelCircuit::new(layout, phases, vec![template]).expect("a valid circuit")
    }

    #[test]
    fn flat_and_mostly_sequential_circuits_run_sequentially() {
        let flat = choose(&circuit(500, 0, 0), 8);
        assert_eq!(flat.mode, ParallelMode::None);
        assert_eq!(flat.threads, 1);
        assert!(
            flat.reason.contains("no parallel regions"),
            "{}",
            flat.reason
        );
        // 40 % in a region worth splitting: still sequential.
        let mixed = choose(&circuit(600, 4, 100), 8);
        assert_eq!(mixed.mode, ParallelMode::None);
        assert!(mixed.reason.contains("40%"), "{}", mixed.reason);
        // Most ANDs in regions too small to split.
        let small = choose(&circuit(10, 2, 100), 8);
        assert_eq!(small.mode, ParallelMode::None);
        assert!(small.reason.contains("too small"), "{}", small.reason);
    }

    #[test]
    fn circuits_without_regions_run_sequentially_whatever_their_size() {
        // From EDT-63's AND count to far beyond EDT-255's (3.37 M): no size switches to the
        // program-order path (see the module doc).
        for and_gates in [156_996, 3_371_952, 1 << 40] {
            let facts = RegionFacts {
                and_gates,
                ..RegionFacts::default()
            };
            for threads in [1, 2, 16] {
                let got = choose_from(&facts, threads);
                assert_eq!(got.mode, ParallelMode::None, "{and_gates} ANDs, {threads}");
                assert_eq!(got.threads, 1);
            }
        }
    }

    #[test]
    fn region_heavy_circuits_run_cgp_at_any_thread_count() {
        let c = circuit(100, 16, 200);
        for threads in [1, 2, 16] {
            let got = choose(&c, threads);
            assert_eq!(got.mode, ParallelMode::Cgp, "{threads}");
            assert_eq!(got.threads, threads);
        }
    }

    #[test]
    fn the_mode_does_not_depend_on_threads() {
        // Two parties with different thread counts must choose the same mode.
        for c in [
            circuit(100, 16, 200),
            circuit(600, 4, 100),
            circuit(5, 0, 0),
        ] {
            let modes: Vec<ParallelMode> =
                [1, 3, 8, 64].iter().map(|&t| choose(&c, t).mode).collect();
            assert!(modes.windows(2).all(|w| w[0] == w[1]), "{modes:?}");
        }
    }
}
