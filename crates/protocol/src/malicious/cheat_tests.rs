//! The malicious protocols against honest and cheating parties. A cheating party is a
//! test-only [`Cheat`] passed to the protocol's inner function; release builds cannot
//! construct one.

use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::random_circuit;
use pgc_circuit::{Circuit, GateSource, millionaires_circuit};
use pgc_net::MemoryChannel;

use super::cut_and_choose::{Cheat, CopyPlan, run_with};
use crate::yao::{Outcome, Party, ProtocolError};
use pgc_circuit::Visibility;

type Pair = (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
);

/// Runs cut-and-choose with A and B on two threads; `cheat_a` / `cheat_b` make one misbehave.
fn run_cc(
    c: &Circuit,
    owners: &[Party],
    visibility: &[Visibility],
    values: &[Vec<bool>],
    s: u32,
    cheat_a: Cheat,
    cheat_b: Cheat,
) -> Pair {
    let (mut ca, mut cb) = MemoryChannel::pair();
    let mine = |p: Party| -> Vec<Vec<bool>> {
        owners
            .iter()
            .zip(values)
            .filter(|(o, _)| **o == p)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let (va, vb) = (mine(Party::A), mine(Party::B));
    std::thread::scope(|sc| {
        let ha = sc.spawn(|| {
            let r = run_with(
                &mut ca,
                c,
                owners,
                visibility,
                Party::A,
                &va,
                s,
                2,
                &mut |_| {},
                cheat_a,
                None,
            );
            drop(ca);
            r
        });
        let rb = run_with(
            &mut cb,
            c,
            owners,
            visibility,
            Party::B,
            &vb,
            s,
            2,
            &mut |_| {},
            cheat_b,
            None,
        );
        drop(cb);
        (ha.join().unwrap(), rb)
    })
}

fn expected(c: &Circuit, values: &[Vec<bool>]) -> Vec<bool> {
    let flat: Vec<bool> = values.iter().flatten().copied().collect();
    eval_bits(c, &flat)
}

fn bits(v: u64, n: usize) -> Vec<bool> {
    (0..n).map(|i| v >> i & 1 == 1).collect()
}

fn flat(o: &Outcome) -> Vec<bool> {
    o.outputs.iter().flatten().flatten().copied().collect()
}

#[test]
fn copy_plan_matches_the_majority_analysis() {
    let p = CopyPlan::for_stat_sec(40);
    assert_eq!((p.copies, p.checked), (123, 78));
    assert!(p.cheat_probability_log2() <= -40.0);
    for s in 1..=20 {
        let p = CopyPlan::for_stat_sec(s);
        assert!(p.cheat_probability_log2() <= -(s as f64), "s = {s}");
        assert!(p.evaluated() >= 1);
    }
    assert_eq!(CopyPlan::for_stat_sec(2).copies, 4);
}

/// The plan found through a table of factorials is the one the product over the check set
/// gives (the search as first written), for every S a user may ask for: one sweep over the
/// copy counts, each S taking the first that meets its bound.
#[test]
fn copy_plan_from_factorials_is_the_products() {
    let mut by_product: Vec<Option<CopyPlan>> = vec![None; 129];
    for copies in 1usize.. {
        let exact: Vec<f64> = (0..copies)
            .map(|c| CopyPlan::cheat_log2(copies, c))
            .collect();
        for (s, plan) in by_product.iter_mut().enumerate().skip(1) {
            if plan.is_none()
                && let Some(checked) = (0..copies).rev().find(|&c| exact[c] <= -(s as f64))
            {
                *plan = Some(CopyPlan { copies, checked });
            }
        }
        if by_product[1..].iter().all(Option::is_some) {
            break;
        }
    }
    for s in 1..=128u32 {
        assert_eq!(
            Some(CopyPlan::for_stat_sec(s)),
            by_product[s as usize],
            "S = {s}"
        );
    }
}

#[test]
fn honest_runs_match_cleartext() {
    let mill = millionaires_circuit(8);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    for (x, y) in [(3u64, 200u64), (200, 3), (77, 77)] {
        let values = [bits(x, 8), bits(y, 8)];
        let (a, b) = run_cc(
            &mill,
            &owners,
            &vis,
            &values,
            4,
            Cheat::Honest,
            Cheat::Honest,
        );
        let want = expected(&mill, &values);
        assert_eq!(flat(&a.unwrap()), want);
        assert_eq!(flat(&b.unwrap()), want);
    }
    for seed in 0..6 {
        let c = random_circuit(seed, 20, 300);
        let owners: Vec<Party> = (0..c.layout.input_widths.len())
            .map(|i| if i == 0 { Party::A } else { Party::B })
            .collect();
        let values: Vec<Vec<bool>> = c
            .layout
            .input_widths
            .iter()
            .enumerate()
            .map(|(i, &w)| bits(seed.wrapping_mul(0x9E37) ^ (i as u64 * 0x55), w as usize))
            .collect();
        let vis = crate::yao::all_visible(c.layout());
        let (a, b) = run_cc(&c, &owners, &vis, &values, 3, Cheat::Honest, Cheat::Honest);
        let want = expected(&c, &values);
        assert_eq!(flat(&a.unwrap()), want, "seed {seed}");
        assert_eq!(flat(&b.unwrap()), want, "seed {seed}");
    }
}

#[test]
fn private_outputs_reach_only_their_party() {
    // Two outputs of the random circuit: the first to A only, the second to B only.
    let c = (0..50)
        .map(|seed| random_circuit(seed, 16, 200))
        .find(|c| c.layout.output_widths.len() == 2)
        .expect("a two-output circuit");
    let owners = [Party::A, Party::B];
    let values = [bits(0xA5, 8), bits(0x3C, 8)];
    let vis = [Visibility::A, Visibility::B];
    let (a, b) = run_cc(&c, &owners, &vis, &values, 3, Cheat::Honest, Cheat::Honest);
    let (a, b) = (a.unwrap(), b.unwrap());
    let want = expected(&c, &values);
    let w0 = c.layout.output_widths[0] as usize;
    assert_eq!(a.outputs[0].as_deref(), Some(&want[..w0]));
    assert!(a.outputs[1].is_none());
    assert!(b.outputs[0].is_none());
    assert_eq!(b.outputs[1].as_deref(), Some(&want[w0..]));
}

fn caught(r: &Result<Outcome, ProtocolError>) -> bool {
    matches!(r, Err(ProtocolError::CheatDetected(_)))
}

#[test]
fn a_wrong_seed_is_always_caught() {
    let mill = millionaires_circuit(8);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    let values = [bits(5, 8), bits(9, 8)];
    let (a, b) = run_cc(
        &mill,
        &owners,
        &vis,
        &values,
        3,
        Cheat::WrongSeed,
        Cheat::Honest,
    );
    assert!(caught(&b), "{b:?} / A: {a:?}");
    assert!(
        b.unwrap_err()
            .to_string()
            .contains("does not match its commitment")
    );
}

#[test]
fn an_evaluator_lying_about_its_checked_set_or_outputs_is_caught() {
    let mill = millionaires_circuit(8);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    let values = [bits(5, 8), bits(9, 8)];
    let (a, _) = run_cc(
        &mill,
        &owners,
        &vis,
        &values,
        3,
        Cheat::Honest,
        Cheat::OversizedCheckSet,
    );
    assert!(caught(&a), "{a:?}");
    assert!(a.unwrap_err().to_string().contains("asked to check"));
    // A wrong output passes the MAC with probability 2^-S: at the S = 3 used elsewhere here
    // one run in eight would accept it, so this one runs at the default S = 40.
    let (a, _) = run_cc(
        &mill,
        &owners,
        &vis,
        &values,
        40,
        Cheat::Honest,
        Cheat::WrongOutputToGarbler,
    );
    assert!(caught(&a), "{a:?}");
    assert!(a.unwrap_err().to_string().contains("MAC"));
}

/// Runs `runs` times with garbler cheat `cheat`; returns how often B caught it, and checks
/// that B never accepted a wrong output.
fn catch_rate(cheat: Cheat, s: u32, runs: usize) -> usize {
    let mill = millionaires_circuit(8);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    let mut caught_runs = 0;
    for i in 0..runs {
        let values = [bits(i as u64 * 37 % 256, 8), bits(i as u64 * 91 % 256, 8)];
        let want = expected(&mill, &values);
        let (_, b) = run_cc(&mill, &owners, &vis, &values, s, cheat, Cheat::Honest);
        match b {
            Ok(o) => assert_eq!(flat(&o), want, "a wrong output was accepted ({cheat:?})"),
            Err(ProtocolError::CheatDetected(_)) => caught_runs += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    caught_runs
}

/// The number of successes of `runs` trials at probability `p` is within 5 standard
/// deviations of its mean (a false alarm about once in 3 million runs of this test).
fn near(hits: usize, runs: usize, p: f64) -> bool {
    let mean = runs as f64 * p;
    let sd = (runs as f64 * p * (1.0 - p)).sqrt();
    (hits as f64 - mean).abs() <= 5.0 * sd + 1.0
}

#[test]
fn one_corrupted_table_is_caught_when_checked_and_outvoted_otherwise() {
    // s = 5: 14 copies, 9 checked, 5 evaluated. Copy 0 is bad: caught with probability
    // 9/14; when evaluated, the 4 good copies outvote it.
    let plan = CopyPlan::for_stat_sec(5);
    assert_eq!((plan.copies, plan.checked), (14, 9));
    let runs = 64;
    let hits = catch_rate(Cheat::CorruptTable { copies: 1 }, 5, runs);
    let p = plan.checked as f64 / plan.copies as f64;
    assert!(near(hits, runs, p), "{hits} of {runs}, expected ≈ {p}");
}

#[test]
fn a_majority_of_bad_copies_wins_only_at_the_predicted_rate() {
    // s = 2: 4 copies, 3 checked, 1 evaluated. One bad copy wins the vote when it is the
    // evaluated one (probability 1/4 ≤ 2^-2); otherwise it is caught.
    let plan = CopyPlan::for_stat_sec(2);
    assert_eq!((plan.copies, plan.checked), (4, 3));
    let mill = millionaires_circuit(8);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    let runs = 80;
    let (mut caught_runs, mut fooled) = (0, 0);
    for i in 0..runs {
        let values = [bits(i * 37 % 256, 8), bits(i * 91 % 256, 8)];
        let want = expected(&mill, &values);
        let cheat = Cheat::WrongDecoding { copies: 1 };
        let (_, b) = run_cc(&mill, &owners, &vis, &values, 2, cheat, Cheat::Honest);
        match b {
            Ok(o) if flat(&o) == want => {}
            Ok(_) => fooled += 1,
            Err(ProtocolError::CheatDetected(_)) => caught_runs += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(caught_runs + fooled, runs as usize);
    assert!(
        near(fooled, runs as usize, 0.25),
        "fooled {fooled} of {runs}"
    );
}

#[test]
fn an_inconsistent_input_is_caught_whenever_that_copy_is_evaluated() {
    // s = 5: copy 0 evaluated with probability 5/14; then the input hashes differ.
    let runs = 64;
    let hits = catch_rate(Cheat::InconsistentInput { copy: 0 }, 5, runs);
    assert!(near(hits, runs, 5.0 / 14.0), "{hits} of {runs}");
}

#[test]
fn a_wrong_ot_label_is_caught_when_checked_and_chosen() {
    // s = 5: copy 0 checked with probability 9/14, and the corrupted side is B's encoded
    // bit with probability 1/2 (the encoding makes it independent of B's input).
    let runs = 64;
    let hits = catch_rate(
        Cheat::WrongOtLabel {
            copy: 0,
            side: true,
        },
        5,
        runs,
    );
    assert!(near(hits, runs, 9.0 / 28.0), "{hits} of {runs}");
}

/// The cheats `pgc demo` shows (it cannot cheat itself: release builds have no cheating
/// party). Regenerate the recording with `PGC_RECORD_TRANSCRIPT=1 cargo test -p
/// pgc-protocol caught_cheat_transcript`; otherwise this checks that the recording still
/// matches what the protocol does (copy numbers, which vary per run, shown as #).
#[test]
fn caught_cheat_transcript() {
    let mill = millionaires_circuit(8);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    let values = [bits(120, 8), bits(45, 8)];
    let plan = CopyPlan::for_stat_sec(40);
    let mut text = format!(
        "Recorded by `cargo test -p pgc-protocol caught_cheat_transcript` with a test-only \
         cheating party\n(release builds of pgc contain none). Millionaires (8-bit), \
         --security malicious --stat-sec 40:\n{} copies garbled, {} checked, {} evaluated (which ones is \
         drawn at random each run,\nso a copy's number is shown as N).\n",
        plan.copies,
        plan.checked,
        plan.evaluated()
    );
    let all_copies = u128::MAX;
    let cases: [(&str, Cheat, Cheat); 4] = [
        (
            "A opens a wrong seed for a checked copy",
            Cheat::WrongSeed,
            Cheat::Honest,
        ),
        (
            "A corrupts one garbled table in every copy",
            Cheat::CorruptTable { copies: all_copies },
            Cheat::Honest,
        ),
        (
            "A commits to a wrong output decoding in every copy",
            Cheat::WrongDecoding { copies: all_copies },
            Cheat::Honest,
        ),
        (
            "B reports a flipped result to A",
            Cheat::Honest,
            Cheat::WrongOutputToGarbler,
        ),
    ];
    for (what, cheat_a, cheat_b) in cases {
        let (a, b) = run_cc(&mill, &owners, &vis, &values, 40, cheat_a, cheat_b);
        let show = |r: &Result<Outcome, ProtocolError>| match r {
            Ok(o) => format!("output {:?}", flat(o)),
            Err(e) => format!("error: {e}"),
        };
        let (honest, who) = if cheat_a == Cheat::Honest {
            (&a, "A (honest)")
        } else {
            (&b, "B (honest)")
        };
        assert!(caught(honest), "{what}: {}", show(honest));
        text.push_str(&format!("\ncheat: {what}\n  {who}: {}\n", show(honest)));
    }
    // "copy 17" → "copy N": which copy is checked varies from run to run.
    let mut normalized = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("copy ") {
        normalized.push_str(&rest[..at + 5]);
        rest = &rest[at + 5..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            normalized.push('N');
            rest = &rest[digits..];
        }
    }
    normalized.push_str(rest);
    let text = normalized;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/transcripts/caught-cheat.txt"
    );
    if std::env::var_os("PGC_RECORD_TRANSCRIPT").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    let recorded = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        recorded, text,
        "docs/transcripts/caught-cheat.txt is stale: rerun with PGC_RECORD_TRANSCRIPT=1"
    );
}
