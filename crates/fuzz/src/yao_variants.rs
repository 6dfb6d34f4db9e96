//! Semi-honest Yao in the variants the sequential targets do not reach: the three-halves
//! garbling scheme (`--garbling three-halves`, [`pgc_garble::three_halves`]) and a compact
//! circuit (a `.pgc` version 3 file, garbled and evaluated call by call through
//! [`pgc_garble::compact`]), each party against a scripted peer.

use std::sync::OnceLock;

use pgc_circuit::compact::CompactSource;
use pgc_circuit::pgcfile::read_pgc_compact_from;
use pgc_circuit::{GateSource, Owner, Visibility};
use pgc_net::Channel;
use pgc_protocol::yao::{RunOptions, run_evaluator_with, run_garbler_with};
use pgc_protocol::{Garbling, Outcome, Party, ProtocolError};

use crate::script::ScriptChannel;
use crate::{YAO_OWNERS, record_pair, replay_entropy, yao_circuit, yao_input};

/// One party of semi-honest Yao on `circuit` with the given options.
fn yao_party<S: GateSource>(
    ch: &mut dyn Channel,
    circuit: &S,
    owners: &[Party],
    inputs: &[Vec<bool>],
    party: Party,
    options: RunOptions,
) -> Result<Outcome, ProtocolError> {
    let visibility = vec![Visibility::Both; circuit.layout().output_widths.len()];
    let mut ch = ch;
    match party {
        Party::A => run_garbler_with(
            &mut ch,
            circuit,
            owners,
            &visibility,
            inputs,
            options,
            &mut |_| {},
        ),
        Party::B => run_evaluator_with(
            &mut ch,
            circuit,
            owners,
            &visibility,
            inputs,
            options,
            &mut |_| {},
        ),
    }
}

fn party_of(byte: u8) -> Party {
    if byte & 1 == 0 { Party::A } else { Party::B }
}

const THREE_HALVES: RunOptions = RunOptions {
    threads: 1,
    device: pgc_protocol::Device::Cpu,
    garbling: Garbling::ThreeHalves,
};

fn three_halves_party(ch: &mut dyn Channel, party: Party) -> Result<Outcome, ProtocolError> {
    yao_party(
        ch,
        yao_circuit(),
        &YAO_OWNERS,
        &yao_input(party),
        party,
        THREE_HALVES,
    )
}

/// Semi-honest Yao with three-halves garbling on the sequential targets' circuit (8-bit
/// millionaires): as the evaluator, every message of a scripted garbler (hello, hash key,
/// input labels, OT, the three-halves tables: 1.5 blocks and a control byte per AND gate,
/// outputs); as the garbler, a scripted evaluator's.
///
/// Input: one byte (bit 0: the honest party is A or B), then every byte the peer sends.
pub fn yao_three_halves(data: &[u8]) {
    let _ = yao_three_halves_run(data);
}

/// [`yao_three_halves`]'s run, with its result (`None` for an empty input).
pub fn yao_three_halves_run(data: &[u8]) -> Option<Result<Outcome, ProtocolError>> {
    let (&first, rest) = data.split_first()?;
    let party = party_of(first);
    replay_entropy(Some(party));
    let result = three_halves_party(&mut ScriptChannel::new(rest), party);
    replay_entropy(None);
    Some(result)
}

/// Seeds of [`yao_three_halves`]: each party's byte and what it received in an honest run.
pub fn yao_three_halves_transcripts() -> Vec<(String, Vec<u8>)> {
    let (to_a, to_b) = record_pair(
        |ch| three_halves_party(ch, Party::A),
        |ch| three_halves_party(ch, Party::B),
    );
    vec![
        ("A".to_string(), [vec![0], to_a].concat()),
        ("B".to_string(), [vec![1], to_b].concat()),
    ]
}

/// The compact circuit of [`yao_compact`]: `fuzz/seeds/pgc_v3/hamming.pgc`, the Hamming
/// distance of two 32-bit words compiled with `--compact always` (templates and calls), with
/// its input owners, held as a [`CompactSource`] (what `pgc run` holds a version 3 file
/// as, through `CompactFile`, hands the protocol the same `compact_parts`).
pub struct CompactTarget {
    pub circuit: CompactSource,
    pub owners: Vec<Party>,
}

/// [`CompactTarget`], read once.
pub fn compact_target() -> &'static CompactTarget {
    static TARGET: OnceLock<CompactTarget> = OnceLock::new();
    TARGET.get_or_init(|| {
        let bytes = include_bytes!("../../../fuzz/seeds/pgc_v3/hamming.pgc");
        let (circuit, interface) =
            read_pgc_compact_from(&bytes[..]).expect("the committed compact seed reads");
        let owners = interface
            .inputs
            .iter()
            .map(|port| match port.owner {
                Owner::A => Party::A,
                Owner::B => Party::B,
            })
            .collect();
        let circuit = CompactSource::new(circuit).expect("the committed compact seed is valid");
        CompactTarget { circuit, owners }
    })
}

/// Party `party`'s inputs to the compact circuit (a fixed bit pattern per party).
fn compact_input(party: Party) -> Vec<Vec<bool>> {
    let t = compact_target();
    t.circuit
        .layout()
        .input_widths
        .iter()
        .zip(&t.owners)
        .filter(|&(_, &owner)| owner == party)
        .map(|(&width, _)| {
            (0..width as usize)
                .map(|i| (i * 7 + party as usize).is_multiple_of(3))
                .collect()
        })
        .collect()
}

/// The honest party and its thread count of a [`yao_compact`] input, from its first byte:
/// bit 0 the party, bit 1 one or two threads (the thread count is each party's own
/// business: the tables are the same, so either seed runs with either count).
fn compact_setup(byte: u8) -> (Party, usize) {
    (party_of(byte), 1 + (byte >> 1 & 1) as usize)
}

fn compact_party(
    ch: &mut dyn Channel,
    party: Party,
    threads: usize,
) -> Result<Outcome, ProtocolError> {
    let t = compact_target();
    let options = RunOptions {
        threads,
        ..RunOptions::default()
    };
    yao_party(
        ch,
        &t.circuit,
        &t.owners,
        &compact_input(party),
        party,
        options,
    )
}

/// Semi-honest Yao on a compact circuit (half-gates through [`pgc_garble::compact`]) against
/// a scripted peer: as the evaluator, the garbler's messages, with the garbled tables of
/// the compact circuit's calls; as the garbler, the evaluator's.
///
/// Input: one setup byte (bit 0: the party; bit 1: one or two threads), then every byte the
/// peer sends.
pub fn yao_compact(data: &[u8]) {
    let _ = yao_compact_run(data);
}

/// [`yao_compact`]'s run, with its result (`None` for an empty input).
pub fn yao_compact_run(data: &[u8]) -> Option<Result<Outcome, ProtocolError>> {
    let (&first, rest) = data.split_first()?;
    let (party, threads) = compact_setup(first);
    replay_entropy(Some(party));
    let result = compact_party(&mut ScriptChannel::new(rest), party, threads);
    replay_entropy(None);
    Some(result)
}

/// Seeds of [`yao_compact`]: per thread count and party, what that party received in an
/// honest run (named `t1-A`, ...).
pub fn yao_compact_transcripts() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for threads in [1usize, 2] {
        let (to_a, to_b) = record_pair(
            |ch| compact_party(ch, Party::A, threads),
            |ch| compact_party(ch, Party::B, threads),
        );
        for (party_bit, received) in [(0u8, to_a), (1, to_b)] {
            let setup = party_bit | ((threads - 1) as u8) << 1;
            let (party, t) = compact_setup(setup);
            assert_eq!(t, threads);
            seeds.push((
                format!("t{threads}-{}", party.letter()),
                [vec![setup], received].concat(),
            ));
        }
    }
    seeds
}
