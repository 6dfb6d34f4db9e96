//! What each party puts on the wire, checked against the secrets it drew.
//!
//! Every protocol runs between two threads over in-memory channels, each wrapped in a
//! [`RecordingChannel`] that records every byte a party sends (main channel and worker
//! streams share one log). The
//! secrets come from [`crate::secret_probe`] (test builds only). The checks, each only what
//! the protocol guarantees:
//!
//! - No Δ a run drew (garblers' free-XOR offsets, every cut-and-choose copy's, GMW's OT
//!   secrets) appears as a 16-byte window at any offset of either party's transcript, in
//!   any of its obvious encodings: Δ, Δ with the permute bit cleared, their complements,
//!   each little- and big-endian.
//! - Semi-honest Yao (half-gates, three-halves, compact): the garbler never sends the
//!   inactive label of its own input wires (its active ones it does send, by design: the
//!   test checks they are found, which shows the scan works), nor either label of the
//!   evaluator's input wires (those travel only inside the OT); the evaluator never sends
//!   the labels it obtained.
//! - A party's input bits (each value ≥ 64 bits, so a chance match is negligible) never
//!   appear packed in either bit order, nor their complement, in what it sends.
//! - Cut-and-choose: the seeds of the checked copies are sent by design (step 7 of
//!   [`crate::malicious::cut_and_choose`]): exactly `checked` seeds appear; the seeds of
//!   the evaluated copies and the Δ of every copy (checked ones included: B derives those,
//!   A never sends them) do not.

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use pgc_circuit::compact::{Call, CompactCircuit, CompactSource, Item, Template};
use pgc_circuit::generate::{SplitMix64, random_circuit};
use pgc_circuit::{Gate, GateSource, Layout, Visibility, eval_bits};
use pgc_crypto::Block;
use pgc_net::recording::{assert_bits_absent, block_encodings};
use pgc_net::{Channel, MemoryChannel, NetError, RecordingChannel, SentLog};

use crate::Garbling;
use crate::gmw::{GmwConfig, run_gmw};
use crate::malicious::cut_and_choose::{CopyPlan, run_cut_and_choose};
use crate::malicious::dual::run_dual_execution;
use crate::parallel::{MemoryStreams, ParallelConfig, ParallelMode, StreamOpener, run_parallel};
use crate::secret_probe::{self, Secret};
use crate::yao::{Outcome, Party, ProtocolError, RunOptions, all_visible};
use crate::yao::{run_evaluator_with, run_garbler_with};

/// Worker streams whose every stream records into the party's log.
struct TapStreams {
    inner: MemoryStreams,
    log: SentLog,
}

impl StreamOpener for TapStreams {
    fn open(&mut self, n: usize, token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError> {
        Ok(self
            .inner
            .open(n, token)?
            .into_iter()
            .map(|inner| {
                Box::new(RecordingChannel::with_log(inner, self.log.clone())) as Box<dyn Channel>
            })
            .collect())
    }
}

/// One party's run: its outcome, every byte it sent, every secret it noted.
struct Side {
    outcome: Outcome,
    sent: Vec<u8>,
    noted: Vec<(Secret, Vec<Block>)>,
}

impl Side {
    fn all(&self, what: Secret) -> Vec<Block> {
        self.noted
            .iter()
            .filter(|(w, _)| *w == what)
            .flat_map(|(_, b)| b.iter().copied())
            .collect()
    }
}

/// One party's side of a run, given its tapped channel and worker streams.
type PartyRun<'a> = &'a (
        dyn Fn(
    &mut RecordingChannel<MemoryChannel>,
    &mut TapStreams,
) -> Result<Outcome, ProtocolError>
            + Sync
    );

/// Runs `a` and `b` on two threads over tapped in-memory channels and streams.
fn run_pair(a: PartyRun<'_>, b: PartyRun<'_>) -> (Side, Side) {
    let timeout = Duration::from_secs(30);
    let (ca, cb) = MemoryChannel::pair();
    let (sa, sb) = MemoryStreams::pair(timeout);
    let side = |f: PartyRun<'_>, mut ch: MemoryChannel, streams: MemoryStreams| {
        ch.set_timeout(Some(timeout));
        let log = SentLog::default();
        let mut ch = RecordingChannel::with_log(ch, log.clone());
        let mut streams = TapStreams {
            inner: streams,
            log: log.clone(),
        };
        let outcome = f(&mut ch, &mut streams).expect("an honest party succeeds");
        drop((ch, streams));
        let sent = std::mem::take(&mut *log.lock().unwrap());
        Side {
            outcome,
            sent,
            noted: secret_probe::take(),
        }
    };
    std::thread::scope(|s| {
        let ha = s.spawn(|| side(a, ca, sa));
        let hb = s.spawn(|| side(b, cb, sb));
        (ha.join().unwrap(), hb.join().unwrap())
    })
}

/// Every 16-byte window of `sent`, for lookups.
fn windows(sent: &[u8]) -> HashSet<[u8; 16]> {
    sent.windows(16)
        .map(|w| w.try_into().expect("16 bytes"))
        .collect()
}

fn assert_no_block(seen: &HashSet<[u8; 16]>, blocks: &[Block], what: &str) {
    assert!(!blocks.is_empty(), "the run noted {what}");
    for (i, b) in blocks.iter().enumerate() {
        for e in block_encodings(b.0) {
            assert!(!seen.contains(&e), "{what} #{i} appears in the transcript");
        }
    }
}

/// Each input value of the party (all of them ≥ 64 bits) never appears packed in `sent`.
fn assert_inputs_hidden(sent: &[u8], inputs: &[Vec<bool>], who: &str) {
    assert!(!inputs.is_empty(), "{who} has inputs");
    for (k, v) in inputs.iter().enumerate() {
        assert_bits_absent(
            sent,
            v,
            &format!("{who}'s input value {k} (in what it sends)"),
        );
    }
}

/// Every Δ either party noted is absent from both transcripts.
fn assert_no_delta(a: &Side, b: &Side) -> (HashSet<[u8; 16]>, HashSet<[u8; 16]>) {
    let (wa, wb) = (windows(&a.sent), windows(&b.sent));
    let deltas: Vec<Block> = [a.all(Secret::Delta), b.all(Secret::Delta)].concat();
    assert_no_block(&wa, &deltas, "a Δ");
    assert_no_block(&wb, &deltas, "a Δ");
    (wa, wb)
}

fn random_bits(rng: &mut SplitMix64, n: usize) -> Vec<bool> {
    (0..n).map(|_| rng.next_bool()).collect()
}

/// Semi-honest Yao (A garbles) on `circuit`, A owning value 0 and B value 1 (128 bits
/// each), with every check of the module docs.
fn check_yao<S: GateSource + Sync>(circuit: &S, options: RunOptions, seed: u64) {
    let layout = circuit.layout();
    assert_eq!(layout.input_widths.len(), 2);
    let owners = [Party::A, Party::B];
    let mut rng = SplitMix64::new(seed);
    let x = vec![random_bits(&mut rng, layout.input_widths[0] as usize)];
    let y = vec![random_bits(&mut rng, layout.input_widths[1] as usize)];
    let vis = all_visible(layout);
    let (a, b) = run_pair(
        &|ch, _| run_garbler_with(ch, circuit, &owners, &vis, &x, options, &mut |_| {}),
        &|ch, _| run_evaluator_with(ch, circuit, &owners, &vis, &y, options, &mut |_| {}),
    );
    assert_eq!(a.outcome.all_outputs(), b.outcome.all_outputs());
    let (wa, wb) = assert_no_delta(&a, &b);
    let [delta] = a.all(Secret::Delta)[..] else {
        panic!("one Δ per run");
    };

    // A's input labels: the active ones are sent (so the scan finds what is there), the
    // inactive ones never.
    let zero = a.all(Secret::OwnZeroLabels);
    assert_eq!(zero.len(), x[0].len());
    for (i, (&z, &bit)) in zero.iter().zip(&x[0]).enumerate() {
        assert!(
            wa.contains(&(z ^ delta.select(bit)).to_bytes()),
            "A's active label #{i} is sent (the scan finds blocks that are there)"
        );
    }
    let inactive: Vec<Block> = zero
        .iter()
        .zip(&x[0])
        .map(|(&z, &bit)| z ^ delta.select(!bit))
        .collect();
    assert_no_block(&wa, &inactive, "an inactive label of A's input");

    // B's input labels: both of each pair stay out of A's messages, and the one B got out
    // of B's. The probe's records agree with each other: B's label is x0 ⊕ y·Δ.
    let x0 = a.all(Secret::PeerZeroLabels);
    let got = b.all(Secret::EvaluatorLabels);
    assert_eq!(x0.len(), y[0].len());
    for ((&z, &l), &bit) in x0.iter().zip(&got).zip(&y[0]) {
        assert_eq!(l, z ^ delta.select(bit), "B's label is the OT's x0 ⊕ y·Δ");
    }
    let x1: Vec<Block> = x0.iter().map(|&z| z ^ delta).collect();
    assert_no_block(&wa, &x0, "a zero-label of B's input");
    assert_no_block(&wa, &x1, "a one-label of B's input");
    assert_no_block(&wb, &got, "a label B obtained");

    assert_inputs_hidden(&a.sent, &x, "A");
    assert_inputs_hidden(&b.sent, &y, "B");
}

/// A random circuit with two 128-bit inputs.
fn wide_random_circuit(seed: u64) -> pgc_circuit::Circuit {
    let c = random_circuit(seed, 256, 3000);
    assert_eq!(c.layout.input_widths, [128, 128]);
    c
}

#[test]
fn half_gates_sends_no_delta_inactive_label_or_input() {
    check_yao(&wide_random_circuit(11), RunOptions::default(), 1);
}

#[test]
fn three_halves_sends_no_delta_inactive_label_or_input() {
    let options = RunOptions {
        garbling: Garbling::ThreeHalves,
        ..RunOptions::default()
    };
    check_yao(&wide_random_circuit(12), options, 2);
}

/// A compact circuit: A's 128 bits and B's 128 bits go pairwise through calls of one
/// template (x ∧ y ⊕ x), then through a second layer of calls that mixes neighbours.
fn compact_circuit() -> CompactSource {
    let t = Template::from_ssa(
        "f".into(),
        2,
        4,
        vec![
            Item::Gate(Gate::and(0, 1, 2)),
            Item::Gate(Gate::xor(2, 0, 3)),
        ],
        &[3],
    )
    .unwrap();
    let call = |inputs: Vec<u32>, out: u32| {
        Item::Call(Box::new(Call {
            template: 0,
            inputs,
            outputs: vec![out],
        }))
    };
    let n = 128u32;
    let mut main: Vec<Item> = (0..n).map(|k| call(vec![k, n + k], 2 * n + k)).collect();
    main.extend((0..n).map(|k| call(vec![2 * n + k, 2 * n + (k + 1) % n], 3 * n + k)));
    let layout = Layout {
        num_wires: 4 * n,
        input_widths: vec![n, n],
        output_widths: vec![n],
        output_wires: (3 * n..4 * n).collect(),
    };
    CompactSource::new(CompactCircuit::from_ssa(layout, vec![t], main).unwrap()).unwrap()
}

#[test]
fn compact_circuits_send_no_delta_inactive_label_or_input() {
    let c = compact_circuit();
    assert!(c.compact_parts().is_some(), "the compact path is taken");
    for threads in [1, 2] {
        let options = RunOptions {
            threads,
            ..RunOptions::default()
        };
        check_yao(&c, options, 3 + threads as u64);
    }
}

/// The parallel protocol's integration tests' circuit (two regions between sequential
/// phases), shared rather than copied.
#[path = "../tests/common/mod.rs"]
#[allow(dead_code)]
mod common;
use common::mixed_circuit;

#[test]
fn parallel_modes_send_no_delta_or_input() {
    let (n, w) = (4, 64);
    let pc = mixed_circuit(n, w);
    let mut owners = vec![Party::A; n];
    owners.extend(vec![Party::B; n]);
    let vis = vec![Visibility::Both; pc.layout.output_widths.len()];
    let mut rng = SplitMix64::new(6);
    let x: Vec<Vec<bool>> = (0..n).map(|_| random_bits(&mut rng, w as usize)).collect();
    let y: Vec<Vec<bool>> = (0..n).map(|_| random_bits(&mut rng, w as usize)).collect();
    for mode in [ParallelMode::Fgp, ParallelMode::Cgp, ParallelMode::Ipp] {
        let config = ParallelConfig {
            mode,
            threads: 2,
            tau: 4,
        };
        let party = |me: Party,
                     inputs: &[Vec<bool>],
                     ch: &mut RecordingChannel<MemoryChannel>,
                     s: &mut TapStreams| {
            let progress = AtomicU64::new(0);
            run_parallel(me, ch, s, &pc, &owners, &vis, inputs, &config, &progress)
        };
        let (a, b) = run_pair(&|ch, s| party(Party::A, &x, ch, s), &|ch, s| {
            party(Party::B, &y, ch, s)
        });
        assert_eq!(a.outcome.all_outputs(), b.outcome.all_outputs());
        let want = if mode == ParallelMode::Ipp {
            (1, 1)
        } else {
            (1, 0)
        };
        let drawn = (a.all(Secret::Delta).len(), b.all(Secret::Delta).len());
        assert_eq!(drawn, want, "{mode:?}: the Δs drawn (IPP: Δ_A and Δ_B)");
        assert_no_delta(&a, &b);
        assert_inputs_hidden(&a.sent, &x, "A");
        assert_inputs_hidden(&b.sent, &y, "B");
    }
}

/// The millionaires' comparison of two 64-bit values: small, so the malicious runs are fast.
fn millionaires() -> pgc_circuit::Circuit {
    pgc_circuit::millionaires_circuit(64)
}

#[test]
fn cut_and_choose_sends_checked_seeds_only_and_no_delta_or_input() {
    let c = millionaires();
    let owners = [Party::A, Party::B];
    let vis = all_visible(c.layout());
    let mut rng = SplitMix64::new(7);
    let x = vec![random_bits(&mut rng, 64)];
    let y = vec![random_bits(&mut rng, 64)];
    let s = 4;
    let plan = CopyPlan::for_stat_sec(s);
    assert!(plan.checked > 0 && plan.evaluated() > 0);
    let (a, b) = run_pair(
        &|ch, _| run_cut_and_choose(ch, &c, &owners, &vis, Party::A, &x, s, 2, &mut |_| {}),
        &|ch, _| run_cut_and_choose(ch, &c, &owners, &vis, Party::B, &y, s, 2, &mut |_| {}),
    );
    let want = eval_bits(&c, &[x[0].clone(), y[0].clone()].concat());
    assert_eq!(a.outcome.all_outputs().unwrap().concat(), want);
    assert_eq!(b.outcome.all_outputs().unwrap().concat(), want);
    let (wa, _) = assert_no_delta(&a, &b);
    assert_eq!(a.all(Secret::Delta).len(), plan.copies, "one Δ per copy");
    let seeds = a.all(Secret::CopySeed);
    assert_eq!(seeds.len(), plan.copies);
    let opened: Vec<Block> = seeds
        .iter()
        .copied()
        .filter(|s| wa.contains(&s.to_bytes()))
        .collect();
    assert_eq!(
        opened.len(),
        plan.checked,
        "exactly the checked copies' seeds are sent"
    );
    let unopened: Vec<Block> = seeds
        .iter()
        .copied()
        .filter(|s| !opened.contains(s))
        .collect();
    assert_no_block(&wa, &unopened, "an evaluated copy's seed");
    assert_inputs_hidden(&a.sent, &x, "A");
    assert_inputs_hidden(&b.sent, &y, "B");
}

#[test]
fn dual_execution_sends_no_delta_or_input() {
    let c = millionaires();
    let owners = [Party::A, Party::B];
    let vis = all_visible(c.layout());
    let mut rng = SplitMix64::new(8);
    let x = vec![random_bits(&mut rng, 64)];
    let y = vec![random_bits(&mut rng, 64)];
    let (a, b) = run_pair(
        &|ch, _| run_dual_execution(ch, &c, &owners, &vis, Party::A, &x, &mut |_| {}),
        &|ch, _| run_dual_execution(ch, &c, &owners, &vis, Party::B, &y, &mut |_| {}),
    );
    assert_eq!(a.outcome.all_outputs(), b.outcome.all_outputs());
    let drawn = (a.all(Secret::Delta).len(), b.all(Secret::Delta).len());
    assert_eq!(drawn, (1, 1), "Δ_A and Δ_B");
    assert_no_delta(&a, &b);
    assert_inputs_hidden(&a.sent, &x, "A");
    assert_inputs_hidden(&b.sent, &y, "B");
}

#[test]
fn gmw_sends_no_ot_secret_or_input() {
    let c = wide_random_circuit(13);
    let owners = [Party::A, Party::B];
    let vis = all_visible(c.layout());
    let mut rng = SplitMix64::new(9);
    let x = vec![random_bits(&mut rng, 128)];
    let y = vec![random_bits(&mut rng, 128)];
    let config = GmwConfig {
        window_gates: 256,
        send_ahead_bytes: 16 << 10,
        pool_triples: 512,
    };
    let (a, b) = run_pair(
        &|ch, _| run_gmw(ch, &c, &owners, &vis, Party::A, &x, &config, &mut |_| {}),
        &|ch, _| run_gmw(ch, &c, &owners, &vis, Party::B, &y, &config, &mut |_| {}),
    );
    assert_eq!(a.outcome.all_outputs(), b.outcome.all_outputs());
    let drawn = (a.all(Secret::Delta).len(), b.all(Secret::Delta).len());
    assert_eq!(drawn, (1, 1), "each party's IKNP sender secret");
    assert_no_delta(&a, &b);
    assert_inputs_hidden(&a.sent, &x, "A");
    assert_inputs_hidden(&b.sent, &y, "B");
}
