//! The protocols against a cheating peer ([`pgc_protocol::malicious`]): cut-and-choose Yao
//! and dual execution, each party against a scripted peer. These protocols exist to survive
//! exactly this peer, so besides "no panic, no hang, bounded memory" a run must end in a
//! detected cheat, a protocol or format error, or the correct output.
//!
//! Both use the sequential targets' circuit ([`crate::yao_circuit`], 8-bit millionaires)
//! and, for cut-and-choose, statistical security [`STAT_SEC`] (a handful of copies), so
//! that one execution takes milliseconds.

use pgc_circuit::Visibility;
use pgc_net::Channel;
use pgc_protocol::malicious::{CopyPlan, run_cut_and_choose, run_dual_execution};
use pgc_protocol::{Outcome, Party, ProtocolError};

use crate::script::ScriptChannel;
use crate::{YAO_OWNERS, record_pair, replay_entropy, yao_circuit, yao_input};

/// The statistical security parameter of the cut-and-choose target: few copies (see
/// [`CopyPlan::for_stat_sec`]: 11, of which 8 are checked and 3 evaluated, so the
/// majority vote and the input-consistency check across evaluated copies are reached),
/// but every phase of the protocol.
pub const STAT_SEC: u32 = 4;

/// The honest party and the output visibility of a [`cut_and_choose`] input, from its first
/// byte: bit 0 the party (A garbles, B checks and evaluates), bit 1 whether the output is
/// visible to both (then B sends it back to A under the one-time MAC) or to A only (then B
/// decodes it masked, and A checks the MAC).
fn cut_and_choose_setup(byte: u8) -> (Party, Visibility) {
    let party = if byte & 1 == 0 { Party::A } else { Party::B };
    let visibility = if byte & 2 == 0 {
        Visibility::Both
    } else {
        Visibility::A
    };
    (party, visibility)
}

fn cut_and_choose_party(
    ch: &mut dyn Channel,
    party: Party,
    visibility: Visibility,
) -> Result<Outcome, ProtocolError> {
    let mut ch = ch;
    run_cut_and_choose(
        &mut ch,
        yao_circuit(),
        &YAO_OWNERS,
        &[visibility],
        party,
        &yao_input(party),
        STAT_SEC,
        1,
        &mut |_| {},
    )
}

/// One party of cut-and-choose Yao (`--security malicious`) against a scripted peer: the
/// seed commitments, the input-encoding seed and actively secure OT (KOS15 on endemic base
/// OTs), the encrypted label pairs, the input commitments, the hash-matrix seed, the copy
/// commitments, the check set, the opened seeds and commitments, the garbled tables of the
/// evaluated copies, and the verdict with the MACed outputs.
///
/// Input: one setup byte (see `cut_and_choose_setup`: bit 0 the party, bit 1 the output's
/// visibility), then every byte the peer sends.
pub fn cut_and_choose(data: &[u8]) {
    let _ = cut_and_choose_run(data);
}

/// [`cut_and_choose`]'s run, with its result (`None` for an empty input).
pub fn cut_and_choose_run(data: &[u8]) -> Option<Result<Outcome, ProtocolError>> {
    let (&setup, rest) = data.split_first()?;
    let (party, visibility) = cut_and_choose_setup(setup);
    replay_entropy(Some(party));
    let mut ch = ScriptChannel::new(rest);
    let result = cut_and_choose_party(&mut ch, party, visibility);
    replay_entropy(None);
    Some(result)
}

/// Seeds of [`cut_and_choose`]: per visibility and party, what that party received in an
/// honest run (named `both-A`, `a-only-B`, ...).
pub fn cut_and_choose_transcripts() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (vis_bit, vis_name) in [(0u8, "both"), (2, "a-only")] {
        let (_, visibility) = cut_and_choose_setup(vis_bit);
        let (to_a, to_b) = record_pair(
            |ch| cut_and_choose_party(ch, Party::A, visibility),
            |ch| cut_and_choose_party(ch, Party::B, visibility),
        );
        for (party_bit, received) in [(0u8, to_a), (1, to_b)] {
            let setup = vis_bit | party_bit;
            let letter = cut_and_choose_setup(setup).0.letter();
            seeds.push((
                format!("{vis_name}-{letter}"),
                [vec![setup], received].concat(),
            ));
        }
    }
    seeds
}

/// The copy plan of the cut-and-choose target (for the docs and tests).
pub fn cut_and_choose_plan() -> CopyPlan {
    CopyPlan::for_stat_sec(STAT_SEC)
}

fn dual_party(ch: &mut dyn Channel, party: Party) -> Result<Outcome, ProtocolError> {
    let mut ch = ch;
    run_dual_execution(
        &mut ch,
        yao_circuit(),
        &YAO_OWNERS,
        &[Visibility::Both],
        party,
        &yao_input(party),
        &mut |_| {},
    )
}

/// One party of dual execution (`--security dual-execution`) against a scripted peer: in
/// the execution this party garbles, the OT and the peer's completion message; in the one
/// the peer garbles, its hash key, input labels, OT and encrypted labels, garbled-table
/// frames, completion and decoding bits; then the equality test (commitments, group
/// elements, openings).
///
/// Input: one byte (0: the honest party is A, else B), then every byte the peer sends.
pub fn dual_execution(data: &[u8]) {
    let _ = dual_execution_run(data);
}

/// [`dual_execution`]'s run, with its result (`None` for an empty input).
pub fn dual_execution_run(data: &[u8]) -> Option<Result<Outcome, ProtocolError>> {
    let (&first, rest) = data.split_first()?;
    let party = if first == 0 { Party::A } else { Party::B };
    replay_entropy(Some(party));
    let mut ch = ScriptChannel::new(rest);
    let result = dual_party(&mut ch, party);
    replay_entropy(None);
    Some(result)
}

/// Seeds of [`dual_execution`]: each party's byte and what it received in an honest run.
pub fn dual_execution_transcripts() -> Vec<(String, Vec<u8>)> {
    let (to_a, to_b) = record_pair(|ch| dual_party(ch, Party::A), |ch| dual_party(ch, Party::B));
    vec![
        ("A".to_string(), [vec![0], to_a].concat()),
        ("B".to_string(), [vec![1], to_b].concat()),
    ]
}
