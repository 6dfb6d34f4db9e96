//! Semi-honest Yao: party A garbles, party B evaluates.
//!
//! Constructions: Yao's garbled-circuit protocol (Yao, FOCS 1986; its semi-honest security
//! proof: Lindell, Pinkas, J. Cryptology 2009) with half-gates garbling (Zahur, Rosulek,
//! Evans, EUROCRYPT 2015; [`pgc_garble`]) or three-halves garbling (Rosulek, Roy, CRYPTO
//! 2021; [`pgc_garble::three_halves`]), B's input labels by IKNP correlated OT extension
//! (Ishai, Kilian, Nissim, Petrank, CRYPTO 2003; [`pgc_ot::iknp`]) on Chou–Orlandi base OT
//! (LATINCRYPT 2015; [`pgc_ot::base`]).
//!
//! Message flow, after the [handshake](crate::handshake):
//! 1. A → B: the labels of A's input bits (A's zero-labels XOR bit·Δ).
//! 2. A ⇄ B: IKNP correlated OT with correlation Δ gives B the labels of its input bits
//!    without A learning them (A's zero-labels are the OT's x0 outputs).
//! 3. A → B: the garbled tables, streamed in frames while B evaluates them, so neither side
//!    ever holds more than a frame of tables (memory is bounded whatever the circuit size),
//!    then an empty frame: the end of the tables.
//! 4. A ⇄ B: the [completion](crate::completion) ("done") messages: each party's gate, AND
//!    and table counts and whether its gate stream was read in full. Both judge the same
//!    pair; unless both streams were healthy and every count matches the circuit and the
//!    peer's, both stop here with [`ProtocolError::Incomplete`] and nothing about the
//!    outputs is sent.
//! 5. Outputs, each revealed as its [`Visibility`] says (both parties agree on it at the
//!    handshake):
//!    - A → B: the decoding bits (lsb of the zero-label) of every output wire B may see
//!      (`Both` and `B`); B decodes them. A sends nothing for `A`-only outputs, so B's labels
//!      of those stay meaningless to it.
//!    - B → A: the permute bit (lsb of B's label) of every output wire A may see (`Both` and
//!      `A`); A decodes them with its own decoding bits. B sends nothing for `B`-only outputs.
//!
//!    Each party thus learns exactly the outputs it may see (when both follow the protocol).
//!    A permute bit alone tells B nothing: the decoding bit it is masked with is uniformly
//!    random and never leaves A.

use std::time::Instant;

use pgc_circuit::compact::CompactParts;
use pgc_circuit::{GateSource, Layout, Visibility, WireId};
use pgc_crypto::{Block, Prg};
use pgc_garble::compact::{CompactEvaluator, CompactGarbler, CompactRunError};
use pgc_garble::three_halves::{self, Tables, TablesRef};
use pgc_garble::{Evaluator, GarbleError, Garbler, Garbling, and_count, random_delta};
use pgc_net::{Channel, NetError};
use pgc_ot::{IknpReceiver, IknpSender, OtError};
use thiserror::Error;

use crate::choice::ProtocolChoice;
use crate::completion::{self, Done, Expected};
use crate::gpu::{Device, receive_tables_gpu, send_tables_gpu};
use crate::handshake::{self, Hello, PROTOCOL_VERSION};
use crate::malicious::Security;
use crate::secret_probe::{self, Secret};

/// The two parties. A garbles, B evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Party {
    A = 0,
    B = 1,
}

impl Party {
    pub fn from_byte(b: u8) -> Option<Party> {
        match b {
            0 => Some(Party::A),
            1 => Some(Party::B),
            _ => None,
        }
    }
    pub fn letter(self) -> char {
        match self {
            Party::A => 'A',
            Party::B => 'B',
        }
    }
    pub fn other(self) -> Party {
        match self {
            Party::A => Party::B,
            Party::B => Party::A,
        }
    }
}

#[derive(Debug, Error)]
pub enum ProtocolError {
    #[error("handshake failed: {0}")]
    Handshake(String),
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("oblivious transfer failed: {0}")]
    Ot(#[from] OtError),
    #[error("the peer sent a malformed message: {0}")]
    Peer(String),
    #[error("{0}")]
    Input(String),
    #[error("garbled evaluation failed: {0}")]
    Garble(#[from] GarbleError),
    /// The completion check failed (see [`crate::completion`]): no output was revealed.
    #[error("the run did not complete: {0}: no output was revealed")]
    Incomplete(String),
    /// A check of the malicious or dual-execution protocol failed: the peer deviated from
    /// the protocol (or the link corrupted data). The message names the check; no output
    /// was accepted.
    #[error("cheating detected: {0}; no output was accepted")]
    CheatDetected(String),
    /// The peer aborted the run because one of its checks failed.
    #[error("the peer aborted the run: {0}; no output was accepted")]
    PeerAborted(String),
}

/// Figures a run measured about itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    pub gates: u64,
    pub and_gates: u64,
    /// Whole run, handshake to outputs.
    pub seconds: f64,
    /// Handshake, input labels and OT.
    pub input_seconds: f64,
    /// Streaming the garbled tables (garbling or evaluating).
    pub circuit_seconds: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The phases of a GMW run (`None` for Yao).
    pub gmw: Option<crate::gmw::GmwStats>,
}

/// What a run produced: the output values this party may see and stats.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// One entry per output value of the circuit: its bits (in the value's wire order) if
    /// this party may see it, `None` if the output is revealed to the other party only.
    pub outputs: Vec<Option<Vec<bool>>>,
    pub stats: RunStats,
}

impl Outcome {
    /// Every output value, if this party may see all of them (always so when every output
    /// is visible to both, as with [`run_garbler`] and [`run_evaluator`]).
    pub fn all_outputs(&self) -> Option<Vec<Vec<bool>>> {
        self.outputs.iter().cloned().collect()
    }
}

/// Whether `party` may see an output of this visibility.
pub fn sees(visibility: Visibility, party: Party) -> bool {
    match visibility {
        Visibility::Both => true,
        Visibility::A => party == Party::A,
        Visibility::B => party == Party::B,
    }
}

/// Every output visible to both parties: what [`run_garbler`] and [`run_evaluator`] use.
pub fn all_visible(layout: &Layout) -> Vec<Visibility> {
    vec![Visibility::Both; layout.output_widths.len()]
}

/// Garbled tables per frame: 1 MiB, large enough to amortise the per-frame cost, small enough
/// to keep memory bounded and the evaluator busy early.
pub(crate) const TABLE_FRAME_BLOCKS: usize = 1 << 16;
/// The largest table frame the evaluator accepts (a peer announcing more is broken).
const MAX_TABLE_FRAME_BYTES: usize = 16 << 20;

/// Party A: garbles `circuit` and streams it to the evaluator over `ch`; both parties learn
/// every output.
///
/// `owners[i]` owns input value `i`; `inputs` holds the bits of A's own input values, in
/// circuit order. `progress` is called with the number of AND gates done so far.
pub fn run_garbler<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    let visibility = all_visible(circuit.layout());
    run_garbler_with_visibility(ch, circuit, owners, &visibility, inputs, progress)
}

/// [`run_garbler`] where output value `j` is revealed as `visibility[j]` says: to both
/// parties, to A only or to B only. The evaluator must pass the same list (checked at the
/// handshake).
pub fn run_garbler_with_visibility<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    run_garbler_with(
        ch,
        circuit,
        owners,
        visibility,
        inputs,
        RunOptions::default(),
        progress,
    )
}

/// How one party runs its side of semi-honest Yao: on how many threads a compact circuit's
/// independent calls run ([`pgc_garble::compact`]; other circuits run on one), on which
/// device the gate stream runs ([`Device::Gpu`]: [`crate::gpu`]) and with which garbling
/// scheme (stated in the hello, so both parties must give the same; three-halves runs on the
/// CPU, one thread, the gate stream in order). Threads and device are each party's own
/// business: the tables and their order are those of one CPU thread either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    pub threads: usize,
    pub device: Device,
    pub garbling: Garbling,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            threads: 1,
            device: Device::Cpu,
            garbling: Garbling::HalfGates,
        }
    }
}

/// [`run_garbler_with_visibility`] run as `options` say (threads, device, garbling scheme).
pub fn run_garbler_with<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    inputs: &[Vec<bool>],
    options: RunOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    let RunOptions {
        threads,
        device,
        garbling,
    } = options;
    refuse_three_halves_on_gpu(garbling, device)?;
    let terms = HelloTerms {
        garbling,
        ..HelloTerms::default()
    };
    let (start, counts0) = begin(ch, circuit, owners, visibility, Party::A, inputs, terms)?;
    let layout = circuit.layout();

    let mut prg = Prg::from_os_entropy();
    let delta = random_delta(&mut prg);
    secret_probe::note(Secret::Delta, &[delta]);
    // The garbling hash's key: public, but fresh each run, so that no attack work carries
    // over between runs (see pgc_crypto::hash).
    let hash_key = prg.random_block();
    let num_wires = layout.num_wires as usize;
    let mut garbler = match garbling {
        Garbling::HalfGates => AnyGarbler::Half(Garbler::new(num_wires, delta, hash_key)),
        Garbling::ThreeHalves => AnyGarbler::Three(three_halves::Garbler::new(
            num_wires,
            delta,
            hash_key,
            Prg::from_seed(prg.random_block()),
        )),
    };

    // Input labels: A's are sent as they are, B's come out of correlated OT.
    let (a_wires, b_wires) = input_wires_by_owner(layout, owners);
    let mut zero = vec![Block::ZERO; a_wires.len()];
    prg.fill_blocks(&mut zero);
    secret_probe::note(Secret::OwnZeroLabels, &zero);
    let a_bits = inputs.iter().flatten();
    let mut active = Vec::with_capacity(a_wires.len());
    for ((&w, &z), &bit) in a_wires.iter().zip(&zero).zip(a_bits) {
        garbler.set_zero_label(w, z);
        active.push(z ^ delta.select(bit));
    }
    ch.send_frame(Block::slice_as_bytes(&[hash_key]))?;
    ch.send_frame(Block::slice_as_bytes(&active))?;
    ch.flush()?;
    drop(active);
    if !b_wires.is_empty() {
        let mut ot = IknpSender::setup(ch, delta, &mut prg)?;
        let x0 = ot.send_correlated(ch, b_wires.len())?;
        secret_probe::note(Secret::PeerZeroLabels, &x0);
        for (&w, &z) in b_wires.iter().zip(&x0) {
            garbler.set_zero_label(w, z);
        }
    }
    ch.flush()?;
    let input_done = Instant::now();

    // Garbled tables, streamed, then the end-of-tables frame. A compact circuit's calls run
    // through `pgc_garble::compact` on any thread count: on one thread, in order, each
    // template's expansion cached, which costs less than expanding the gate stream.
    let (gates_done, blocks_sent) = match &mut garbler {
        AnyGarbler::Three(garbler) => send_three_halves_tables(ch, circuit, garbler, progress)?,
        AnyGarbler::Half(garbler) => match circuit.compact_parts() {
            _ if device == Device::Gpu => {
                send_tables_gpu(ch, circuit, garbler, hash_key, progress)?
            }
            Some(parts) => send_compact_tables(ch, &parts, garbler, hash_key, threads, progress)?,
            None => send_tables(ch, circuit, garbler, progress, |_| {})?,
        },
    };
    let circuit_done = Instant::now();

    // Completeness before outputs.
    let mine = Done::of(
        circuit,
        Done {
            gates: gates_done,
            and_gates: garbler.and_gates_done(),
            blocks_sent,
            ..Done::default()
        },
    );
    completion::exchange(ch, Party::A, &mine, Expected::of(circuit, false))?;

    // Outputs: decoding bits of B's outputs to B; permute bits of A's outputs from B.
    let for_b = output_wires_seen_by(layout, visibility, Party::B);
    ch.send_frame(&pack_bits(&garbler.decoding_bits(&for_b)))?;
    ch.flush()?;
    let for_a = output_wires_seen_by(layout, visibility, Party::A);
    let permute = recv_bits(ch, for_a.len(), "output permute bits")?;
    let decoding = garbler.decoding_bits(&for_a);
    let out_bits: Vec<bool> = permute.iter().zip(&decoding).map(|(p, d)| p ^ d).collect();
    Ok(outcome(
        layout,
        visibility,
        Party::A,
        out_bits,
        ch,
        counts0,
        start,
        input_done,
        circuit_done,
        circuit,
    ))
}

/// Party B: evaluates the garbled circuit streamed by the garbler over `ch`; both parties
/// learn every output.
///
/// `inputs` holds the bits of B's own input values, in circuit order.
pub fn run_evaluator<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    let visibility = all_visible(circuit.layout());
    run_evaluator_with_visibility(ch, circuit, owners, &visibility, inputs, progress)
}

/// [`run_evaluator`] with per-output visibility (see [`run_garbler_with_visibility`]).
pub fn run_evaluator_with_visibility<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    run_evaluator_with(
        ch,
        circuit,
        owners,
        visibility,
        inputs,
        RunOptions::default(),
        progress,
    )
}

/// [`run_evaluator_with_visibility`] run as `options` say (see [`run_garbler_with`]).
pub fn run_evaluator_with<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    inputs: &[Vec<bool>],
    options: RunOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    let RunOptions {
        threads,
        device,
        garbling,
    } = options;
    refuse_three_halves_on_gpu(garbling, device)?;
    let terms = HelloTerms {
        garbling,
        ..HelloTerms::default()
    };
    let (start, counts0) = begin(ch, circuit, owners, visibility, Party::B, inputs, terms)?;
    let layout = circuit.layout();

    // The garbler's hash key for this run, then its input labels.
    let mut hash_key = [Block::ZERO];
    recv_blocks_exact(ch, &mut hash_key, "the garbling hash key")?;
    let num_wires = layout.num_wires as usize;
    let mut evaluator = match garbling {
        Garbling::HalfGates => AnyEvaluator::Half(Evaluator::new(num_wires, hash_key[0])),
        Garbling::ThreeHalves => {
            AnyEvaluator::Three(three_halves::Evaluator::new(num_wires, hash_key[0]))
        }
    };
    let (a_wires, b_wires) = input_wires_by_owner(layout, owners);
    let mut active = vec![Block::ZERO; a_wires.len()];
    recv_blocks_exact(ch, &mut active, "the garbler's input labels")?;
    for (&w, &l) in a_wires.iter().zip(&active) {
        evaluator.set_label(w, l);
    }
    drop(active);
    if !b_wires.is_empty() {
        let choices: Vec<bool> = inputs.iter().flatten().copied().collect();
        let mut ot = IknpReceiver::setup(ch, &mut Prg::from_os_entropy())?;
        let labels = ot.receive_correlated(ch, &choices)?;
        secret_probe::note(Secret::EvaluatorLabels, &labels);
        for (&w, &l) in b_wires.iter().zip(&labels) {
            evaluator.set_label(w, l);
        }
    }
    ch.flush()?;
    let input_done = Instant::now();

    let (gates_done, blocks_received) = match &mut evaluator {
        AnyEvaluator::Three(evaluator) => {
            receive_three_halves_tables(ch, circuit, evaluator, progress)?
        }
        // As the garbler: compact circuits through `pgc_garble::compact`, any thread count.
        AnyEvaluator::Half(evaluator) => match circuit.compact_parts() {
            _ if device == Device::Gpu => {
                receive_tables_gpu(ch, circuit, evaluator, hash_key[0], progress)?
            }
            Some(parts) => receive_compact_tables(
                ch,
                circuit,
                &parts,
                evaluator,
                hash_key[0],
                threads,
                progress,
            )?,
            None => receive_tables(ch, circuit, evaluator, progress)?,
        },
    };
    let circuit_done = Instant::now();

    // Completeness before outputs.
    let mine = Done::of(
        circuit,
        Done {
            gates: gates_done,
            and_gates: evaluator.and_gates_done(),
            blocks_received,
            ..Done::default()
        },
    );
    completion::exchange(ch, Party::B, &mine, Expected::of(circuit, false))?;

    let for_b = output_wires_seen_by(layout, visibility, Party::B);
    let decoding = recv_bits(ch, for_b.len(), "output decoding bits")?;
    let out_bits = evaluator.decode(&for_b, &decoding);
    let for_a = output_wires_seen_by(layout, visibility, Party::A);
    let permute: Vec<bool> = for_a.iter().map(|&w| evaluator.label(w).lsb()).collect();
    ch.send_frame(&pack_bits(&permute))?;
    ch.flush()?;
    Ok(outcome(
        layout,
        visibility,
        Party::B,
        out_bits,
        ch,
        counts0,
        start,
        input_done,
        circuit_done,
        circuit,
    ))
}

/// Garbles `circuit` chunk by chunk and streams the tables in frames of about
/// [`TABLE_FRAME_BLOCKS`] blocks, then the empty end-of-tables frame. `before_send` sees
/// each frame just before it goes out (a no-op except in the dual-execution tests'
/// misbehaving garbler). Returns the gates garbled and the table blocks sent.
pub(crate) fn send_tables<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    garbler: &mut Garbler,
    progress: &mut dyn FnMut(u64),
    mut before_send: impl FnMut(&mut [Block]),
) -> Result<(u64, u64), ProtocolError> {
    let mut tables: Vec<Block> =
        Vec::with_capacity(TABLE_FRAME_BLOCKS + 2 * pgc_circuit::ir::CHUNK_GATES);
    let (mut gates_done, mut blocks_sent) = (0u64, 0u64);
    circuit.for_each_chunk(&mut |gates| -> Result<(), ProtocolError> {
        garbler.garble(gates, &mut tables);
        gates_done += gates.len() as u64;
        if tables.len() >= TABLE_FRAME_BLOCKS {
            before_send(&mut tables);
            ch.send_frame(Block::slice_as_bytes(&tables))?;
            blocks_sent += tables.len() as u64;
            tables.clear();
        }
        progress(garbler.and_gates_done());
        Ok(())
    })?;
    if !tables.is_empty() {
        before_send(&mut tables);
        ch.send_frame(Block::slice_as_bytes(&tables))?;
        blocks_sent += tables.len() as u64;
    }
    ch.send_frame(&[])?;
    Ok((gates_done, blocks_sent))
}

/// Evaluates `circuit` on the table frames [`send_tables`] streams, up to and including the
/// end-of-tables frame. Returns the gates evaluated and the table blocks received; if the
/// garbler's tables ended early it returns what it got, and the completion check that
/// follows reports the shortfall on both sides.
pub(crate) fn receive_tables<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    evaluator: &mut Evaluator,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, u64), ProtocolError> {
    let mut reader = TableReader::default();
    let mut gates_done = 0u64;
    let pass = circuit.for_each_chunk(&mut |gates| -> Result<(), ProtocolError> {
        let tables = reader.take(ch, 2 * and_count(gates))?;
        evaluator.evaluate(gates, tables)?;
        gates_done += gates.len() as u64;
        progress(evaluator.and_gates_done());
        Ok(())
    });
    match pass {
        // The garbler's tables ended before this party's gates did: its done message,
        // next, says why (and the counts show it).
        Err(_) if reader.ended() => {}
        Err(e) => return Err(e),
        // This party's gates ended: read what the garbler sent up to its end of tables
        // (more than the circuit's tables is a broken peer).
        Ok(()) => reader.skip_to_end(ch, 2 * circuit.and_count())?,
    }
    Ok((gates_done, reader.consumed() + reader.remaining() as u64))
}

/// The garbler of either scheme, for the parts of the run both share (input labels,
/// decoding bits, counts).
// One per run: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum AnyGarbler {
    Half(Garbler),
    Three(three_halves::Garbler),
}

impl AnyGarbler {
    fn set_zero_label(&mut self, wire: WireId, label: Block) {
        match self {
            AnyGarbler::Half(g) => g.set_zero_label(wire, label),
            AnyGarbler::Three(g) => g.set_zero_label(wire, label),
        }
    }

    fn decoding_bits(&self, wires: &[WireId]) -> Vec<bool> {
        match self {
            AnyGarbler::Half(g) => g.decoding_bits(wires),
            AnyGarbler::Three(g) => g.decoding_bits(wires),
        }
    }

    fn and_gates_done(&self) -> u64 {
        match self {
            AnyGarbler::Half(g) => g.and_gates_done(),
            AnyGarbler::Three(g) => g.and_gates_done(),
        }
    }
}

/// The evaluator of either scheme (see [`AnyGarbler`]).
enum AnyEvaluator {
    Half(Evaluator),
    Three(three_halves::Evaluator),
}

impl AnyEvaluator {
    fn set_label(&mut self, wire: WireId, label: Block) {
        match self {
            AnyEvaluator::Half(e) => e.set_label(wire, label),
            AnyEvaluator::Three(e) => e.set_label(wire, label),
        }
    }

    fn label(&self, wire: WireId) -> Block {
        match self {
            AnyEvaluator::Half(e) => e.label(wire),
            AnyEvaluator::Three(e) => e.label(wire),
        }
    }

    fn decode(&self, wires: &[WireId], decoding_bits: &[bool]) -> Vec<bool> {
        match self {
            AnyEvaluator::Half(e) => e.decode(wires, decoding_bits),
            AnyEvaluator::Three(e) => e.decode(wires, decoding_bits),
        }
    }

    fn and_gates_done(&self) -> u64 {
        match self {
            AnyEvaluator::Half(e) => e.and_gates_done(),
            AnyEvaluator::Three(e) => e.and_gates_done(),
        }
    }
}

fn refuse_three_halves_on_gpu(garbling: Garbling, device: Device) -> Result<(), ProtocolError> {
    if garbling == Garbling::ThreeHalves && device == Device::Gpu {
        return Err(ProtocolError::Input(
            "--garbling three-halves runs on the CPU only; the GPU engine garbles half-gates \
             (--device cpu, or leave --garbling out)"
                .into(),
        ));
    }
    Ok(())
}

/// ANDs per three-halves table frame (about 790 KiB; the last frame may hold fewer).
pub(crate) const THREE_HALVES_FRAME_ANDS: usize = 1 << 15;

/// [`send_tables`] for three-halves: frames of the packed tables of whole ANDs
/// ([`three_halves::Tables::pack`], at most [`THREE_HALVES_FRAME_ANDS`] each), then the
/// empty end-of-tables frame. Returns the gates garbled and, for the completion check, 2
/// per AND sent (tables counted in half-gates' units, not bytes).
fn send_three_halves_tables<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    garbler: &mut three_halves::Garbler,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, u64), ProtocolError> {
    let mut tables = Tables::default();
    let mut bytes = Vec::with_capacity(three_halves::packed_bytes(THREE_HALVES_FRAME_ANDS));
    let (mut gates_done, mut ands_sent) = (0u64, 0u64);
    circuit.for_each_chunk(&mut |gates| -> Result<(), ProtocolError> {
        garbler.garble(gates, &mut tables);
        gates_done += gates.len() as u64;
        if tables.len() >= THREE_HALVES_FRAME_ANDS {
            ands_sent += send_three_halves_frames(ch, &mut tables, &mut bytes)?;
        }
        progress(garbler.and_gates_done());
        Ok(())
    })?;
    ands_sent += send_three_halves_frames(ch, &mut tables, &mut bytes)?;
    ch.send_frame(&[])?;
    Ok((gates_done, 2 * ands_sent))
}

/// Sends `tables` in frames of at most [`THREE_HALVES_FRAME_ANDS`] ANDs and empties it;
/// returns the ANDs sent.
fn send_three_halves_frames(
    ch: &mut (impl Channel + ?Sized),
    tables: &mut Tables,
    bytes: &mut Vec<u8>,
) -> Result<u64, ProtocolError> {
    let mut start = 0;
    while start < tables.len() {
        let end = tables.len().min(start + THREE_HALVES_FRAME_ANDS);
        bytes.clear();
        tables.pack_range(start, end, bytes);
        ch.send_frame(bytes)?;
        start = end;
    }
    let sent = tables.len() as u64;
    tables.clear();
    Ok(sent)
}

/// [`receive_tables`] for three-halves (frames of [`send_three_halves_tables`]).
fn receive_three_halves_tables<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    evaluator: &mut three_halves::Evaluator,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, u64), ProtocolError> {
    let mut reader = ThreeHalvesReader::default();
    let mut gates_done = 0u64;
    let pass = circuit.for_each_chunk(&mut |gates| -> Result<(), ProtocolError> {
        let tables = reader.take(ch, and_count(gates))?;
        evaluator.evaluate(gates, tables)?;
        gates_done += gates.len() as u64;
        progress(evaluator.and_gates_done());
        Ok(())
    });
    match pass {
        Err(_) if reader.ended => {}
        Err(e) => return Err(e),
        Ok(()) => reader.skip_to_end(ch, circuit.and_count())?,
    }
    Ok((
        gates_done,
        2 * (reader.consumed + reader.remaining() as u64),
    ))
}

/// [`TableReader`] for three-halves frames: hands out exactly the tables of each chunk's
/// ANDs, whatever the frame boundaries.
#[derive(Default)]
struct ThreeHalvesReader {
    tables: Tables,
    /// ANDs of `tables` handed out already.
    pos: usize,
    /// ANDs handed out (or skipped) so far.
    consumed: u64,
    ended: bool,
}

impl ThreeHalvesReader {
    fn remaining(&self) -> usize {
        self.tables.len() - self.pos
    }

    /// Appends one frame's tables; returns its AND count (0: the end frame).
    fn read_frame(&mut self, ch: &mut (impl Channel + ?Sized)) -> Result<usize, ProtocolError> {
        let mut len = [0u8; 4];
        ch.recv(&mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        if len == 0 {
            self.ended = true;
            return Ok(0);
        }
        let bad = || {
            ProtocolError::Peer(format!(
                "a three-halves table frame of {len} bytes (must hold whole ANDs' tables, 24 \
                 bytes and 5 bits each with zero padding, at most {MAX_TABLE_FRAME_BYTES} bytes)"
            ))
        };
        if len > MAX_TABLE_FRAME_BYTES || three_halves::ands_in_packed(len).is_none() {
            return Err(bad());
        }
        let mut bytes = vec![0u8; len];
        ch.recv(&mut bytes)?;
        self.tables.unpack_append(&bytes).ok_or_else(bad)
    }

    fn take(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        n: usize,
    ) -> Result<TablesRef<'_>, ProtocolError> {
        if self.remaining() < n {
            self.tables
                .halves
                .drain(..three_halves::HALVES_PER_AND * self.pos);
            self.tables.control.drain(..self.pos);
            self.pos = 0;
            while self.tables.len() < n {
                if self.ended || self.read_frame(ch)? == 0 {
                    return Err(tables_ended_early());
                }
            }
        }
        let (from, to) = (self.pos, self.pos + n);
        self.pos = to;
        self.consumed += n as u64;
        let h = three_halves::HALVES_PER_AND;
        Ok(TablesRef {
            halves: &self.tables.halves[h * from..h * to],
            control: &self.tables.control[from..to],
        })
    }

    /// Reads (and counts, then drops) tables up to the end frame; more than `limit` ANDs'
    /// tables in all is an error.
    fn skip_to_end(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        limit: u64,
    ) -> Result<(), ProtocolError> {
        let too_many = || {
            ProtocolError::Peer(
                "the garbler sent more garbled tables than the circuit has AND gates".into(),
            )
        };
        self.consumed += self.remaining() as u64;
        self.tables.clear();
        self.pos = 0;
        while !self.ended {
            if self.consumed > limit {
                return Err(too_many());
            }
            self.consumed += self.read_frame(ch)? as u64;
            self.tables.clear();
        }
        if self.consumed > limit {
            return Err(too_many());
        }
        Ok(())
    }
}

/// [`send_tables`] for a compact circuit on `threads` threads: the same tables in the same
/// frames' order ([`pgc_garble::compact`]); `garbler` holds the input labels before and
/// every main wire's label after.
fn send_compact_tables(
    ch: &mut (impl Channel + ?Sized),
    parts: &CompactParts<'_>,
    garbler: &mut Garbler,
    hash_key: Block,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, u64), ProtocolError> {
    let circuit_error = |e: String| ProtocolError::Input(format!("the compact circuit: {e}"));
    let mut cg = CompactGarbler::new(
        parts.templates,
        parts.main_num_wires,
        threads,
        garbler.delta(),
        hash_key,
    )
    .map_err(|e| circuit_error(e.to_string()))?;
    for w in 0..parts.main_num_wires {
        cg.set_zero_label(w, garbler.zero_label(w));
    }
    let mut pending: Vec<Block> = Vec::with_capacity(TABLE_FRAME_BLOCKS);
    let mut blocks_sent = 0u64;
    fn send<C: Channel + ?Sized>(
        ch: &mut C,
        pending: &mut Vec<Block>,
        sent: &mut u64,
    ) -> Result<(), NetError> {
        *sent += pending.len() as u64;
        let r = ch.send_frame(Block::slice_as_bytes(pending));
        pending.clear();
        r
    }
    let pass = {
        let mut emit = |tables: &[Block]| -> Result<(), NetError> {
            let mut rest = tables;
            while !rest.is_empty() {
                let take = (TABLE_FRAME_BLOCKS - pending.len()).min(rest.len());
                pending.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if pending.len() == TABLE_FRAME_BLOCKS {
                    send(&mut *ch, &mut pending, &mut blocks_sent)?;
                }
            }
            Ok(())
        };
        cg.garble_main(parts.main, &mut emit, &mut *progress)
    };
    match pass {
        Ok(()) => {}
        Err(CompactRunError::Io(e)) => return Err(e.into()),
        Err(e) => return Err(circuit_error(e.to_string())),
    }
    if !pending.is_empty() {
        send(&mut *ch, &mut pending, &mut blocks_sent)?;
    }
    ch.send_frame(&[])?;
    progress(cg.and_gates_done());
    for w in 0..parts.main_num_wires {
        garbler.set_zero_label(w, cg.zero_label(w));
    }
    garbler.set_and_index(cg.and_gates_done());
    Ok((cg.gates_done(), blocks_sent))
}

/// [`receive_tables`] for a compact circuit on `threads` threads (see
/// [`send_compact_tables`]).
fn receive_compact_tables<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    parts: &CompactParts<'_>,
    evaluator: &mut Evaluator,
    hash_key: Block,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, u64), ProtocolError> {
    let circuit_error = |e: String| ProtocolError::Input(format!("the compact circuit: {e}"));
    let mut ce = CompactEvaluator::new(parts.templates, parts.main_num_wires, threads, hash_key)
        .map_err(|e| circuit_error(e.to_string()))?;
    for w in 0..parts.main_num_wires {
        ce.set_label(w, evaluator.label(w));
    }
    let mut reader = TableReader::default();
    let pass = {
        let mut read = |buf: &mut [Block]| reader.fill(&mut *ch, buf);
        ce.evaluate_main(parts.main, &mut read, &mut *progress)
    };
    match pass {
        // The garbler's tables ended before this party's gates did: its done message,
        // next, says why (and the counts show it).
        Err(_) if reader.ended() => {}
        Err(CompactRunError::Io(e)) => return Err(e),
        Err(CompactRunError::Garble(e)) => return Err(e.into()),
        Err(e) => return Err(circuit_error(e.to_string())),
        Ok(()) => reader.skip_to_end(ch, 2 * circuit.and_count())?,
    }
    progress(ce.and_gates_done());
    for w in 0..parts.main_num_wires {
        evaluator.set_label(w, ce.label(w));
    }
    evaluator.set_and_index(ce.and_gates_done());
    Ok((
        ce.gates_done(),
        reader.consumed() + reader.remaining() as u64,
    ))
}

/// The output wires `party` may see, value by value.
pub(crate) fn output_wires_seen_by(
    layout: &Layout,
    visibility: &[Visibility],
    party: Party,
) -> Vec<WireId> {
    (0..layout.output_widths.len())
        .filter(|&j| sees(visibility[j], party))
        .flat_map(|j| layout.output_wires_of(j).iter().copied())
        .collect()
}

pub(crate) fn recv_bits(
    ch: &mut (impl Channel + ?Sized),
    n: usize,
    what: &str,
) -> Result<Vec<bool>, ProtocolError> {
    let expected = n.div_ceil(8);
    let packed = recv_frame_of(ch, expected, what)?;
    unpack_bits(&packed, n).ok_or_else(|| wrong_size(expected, packed.len() as u64, what))
}

fn wrong_size(expected: usize, got: u64, what: &str) -> ProtocolError {
    ProtocolError::Peer(format!("expected {expected} bytes of {what}, got {got}"))
}

/// Receives a frame of at most `max_len` bytes; a longer one is a malformed message.
fn recv_frame_of(
    ch: &mut (impl Channel + ?Sized),
    max_len: usize,
    what: &str,
) -> Result<Vec<u8>, ProtocolError> {
    ch.recv_frame(max_len).map_err(|e| match e {
        NetError::FrameTooLarge { len, .. } => wrong_size(max_len, len, what),
        e => e.into(),
    })
}

/// `out_bits` holds the bits of the outputs `me` may see, in output order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn outcome<S: GateSource>(
    layout: &Layout,
    visibility: &[Visibility],
    me: Party,
    out_bits: Vec<bool>,
    ch: &(impl Channel + ?Sized),
    counts0: pgc_net::ByteCounts,
    start: Instant,
    input_done: Instant,
    circuit_done: Instant,
    circuit: &S,
) -> Outcome {
    let counts = ch.counts();
    let mut outputs = Vec::with_capacity(layout.output_widths.len());
    let mut bits = out_bits.into_iter();
    for (&w, &v) in layout.output_widths.iter().zip(visibility) {
        outputs.push(sees(v, me).then(|| bits.by_ref().take(w as usize).collect()));
    }
    Outcome {
        outputs,
        stats: RunStats {
            gates: circuit.gate_count(),
            and_gates: circuit.and_count(),
            seconds: start.elapsed().as_secs_f64(),
            input_seconds: (input_done - start).as_secs_f64(),
            circuit_seconds: (circuit_done - input_done).as_secs_f64(),
            bytes_sent: counts.sent - counts0.sent,
            bytes_received: counts.received - counts0.received,
            gmw: None,
        },
    }
}

/// What the hello states besides the circuit, which both parties must give alike.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HelloTerms {
    pub security: Security,
    pub protocol: ProtocolChoice,
    pub garbling: Garbling,
    /// 0 for one process per party, K for a cluster of K ranks (`--cluster`).
    pub cluster_ranks: usize,
}

impl Default for HelloTerms {
    fn default() -> HelloTerms {
        HelloTerms {
            security: Security::SemiHonest,
            protocol: ProtocolChoice::Yao,
            garbling: Garbling::HalfGates,
            cluster_ranks: 0,
        }
    }
}

impl HelloTerms {
    pub fn secured(security: Security) -> HelloTerms {
        HelloTerms {
            security,
            ..HelloTerms::default()
        }
    }
}

/// What both parties do first: check this party's inputs (before anything is sent), then
/// the handshake, stating `terms`. Returns when the run started and the channel's counts
/// at that point.
pub(crate) fn begin<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    terms: HelloTerms,
) -> Result<(Instant, pgc_net::ByteCounts), ProtocolError> {
    let start = Instant::now();
    check_own_inputs(circuit.layout(), owners, me, inputs)?;
    let n_out = circuit.layout().output_widths.len();
    if visibility.len() != n_out {
        return Err(ProtocolError::Input(format!(
            "the circuit has {n_out} output value(s) but a visibility was given for {}",
            visibility.len()
        )));
    }
    let counts = ch.counts();
    handshake::exchange(ch, &hello(circuit, owners, visibility, me, terms))?;
    Ok((start, counts))
}

fn hello<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    party: Party,
    terms: HelloTerms,
) -> Hello {
    let layout = circuit.layout();
    Hello {
        version: PROTOCOL_VERSION,
        party,
        fingerprint: circuit.fingerprint(),
        input_owners: owners.to_vec(),
        input_widths: layout.input_widths.clone(),
        output_widths: layout.output_widths.clone(),
        output_visibility: visibility.to_vec(),
        value_format: circuit.value_format(),
        security: terms.security,
        protocol: terms.protocol,
        garbling: terms.garbling,
        cluster_ranks: terms.cluster_ranks as u32,
        form: circuit.form(),
    }
}

/// Checks the input assignment and this party's own input values before anything is sent.
pub fn check_own_inputs(
    layout: &Layout,
    owners: &[Party],
    me: Party,
    inputs: &[Vec<bool>],
) -> Result<(), ProtocolError> {
    if owners.len() != layout.input_widths.len() {
        return Err(ProtocolError::Input(format!(
            "the circuit has {} input values but an owner was given for {}",
            layout.input_widths.len(),
            owners.len()
        )));
    }
    let mine: Vec<usize> = (0..owners.len()).filter(|&i| owners[i] == me).collect();
    if mine.len() != inputs.len() {
        return Err(ProtocolError::Input(format!(
            "party {} owns {} input value(s) of this circuit (value(s) {}), but {} were given",
            me.letter(),
            mine.len(),
            mine.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            inputs.len()
        )));
    }
    for (&i, v) in mine.iter().zip(inputs) {
        if v.len() != layout.input_widths[i] as usize {
            return Err(ProtocolError::Input(format!(
                "input value {i} is {} bits wide, but {} bits were given",
                layout.input_widths[i],
                v.len()
            )));
        }
    }
    Ok(())
}

/// Input wires of A and of B, each in circuit order.
pub(crate) fn input_wires_by_owner(
    layout: &Layout,
    owners: &[Party],
) -> (Vec<WireId>, Vec<WireId>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, owner) in owners.iter().enumerate() {
        let dst = if *owner == Party::A { &mut a } else { &mut b };
        dst.extend(layout.input_range(i));
    }
    (a, b)
}

pub(crate) fn recv_blocks_exact(
    ch: &mut (impl Channel + ?Sized),
    out: &mut [Block],
    what: &str,
) -> Result<(), ProtocolError> {
    let bytes = recv_frame_of(ch, out.len() * 16, what)?;
    if bytes.len() != out.len() * 16 {
        return Err(wrong_size(out.len() * 16, bytes.len() as u64, what));
    }
    Block::slice_as_bytes_mut(out).copy_from_slice(&bytes);
    Ok(())
}

/// Buffers the garbled-table frames and hands out exactly the tables each gate chunk needs,
/// whatever the frame boundaries.
///
/// An empty frame ends the tables (the sequential protocol sends one after the last table):
/// a `take` that meets it fails and [`ended`](TableReader::ended) turns true.
#[derive(Default)]
pub(crate) struct TableReader {
    buf: Vec<Block>,
    pos: usize,
    /// Blocks handed out by `take` so far.
    consumed: u64,
    ended: bool,
}

impl TableReader {
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether the end-of-tables frame was read.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Blocks handed out by [`take`](TableReader::take) (and counted by
    /// [`skip_to_end`](TableReader::skip_to_end)).
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Reads (and counts, then drops) tables up to the end-of-tables frame; more than
    /// `limit` blocks in all, or a frame that is not a table frame, is an error.
    pub(crate) fn skip_to_end(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        limit: u64,
    ) -> Result<(), ProtocolError> {
        let too_many = || {
            ProtocolError::Peer(
                "the garbler sent more garbled tables than the circuit has AND gates".into(),
            )
        };
        self.consumed += self.remaining() as u64;
        self.buf.clear();
        self.pos = 0;
        while !self.ended {
            if self.consumed > limit {
                return Err(too_many());
            }
            let blocks = self.read_frame(ch)?;
            self.consumed += blocks as u64;
            self.buf.clear();
        }
        if self.consumed > limit {
            return Err(too_many());
        }
        Ok(())
    }

    /// Reads a table frame's header; returns its block count (0: the end frame).
    fn frame_header(&mut self, ch: &mut (impl Channel + ?Sized)) -> Result<usize, ProtocolError> {
        let mut len = [0u8; 4];
        ch.recv(&mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        if len == 0 {
            self.ended = true;
            return Ok(0);
        }
        if !len.is_multiple_of(16) || len > MAX_TABLE_FRAME_BYTES {
            return Err(ProtocolError::Peer(format!(
                "a garbled-table frame of {len} bytes (must be a non-zero multiple of \
                 16, at most {MAX_TABLE_FRAME_BYTES})"
            )));
        }
        Ok(len / 16)
    }

    /// Appends one table frame to `buf`; returns its block count (0: the end frame).
    fn read_frame(&mut self, ch: &mut (impl Channel + ?Sized)) -> Result<usize, ProtocolError> {
        let blocks = self.frame_header(ch)?;
        let old = self.buf.len();
        self.buf.resize(old + blocks, Block::ZERO);
        ch.recv(Block::slice_as_bytes_mut(&mut self.buf[old..]))?;
        Ok(blocks)
    }

    /// Fills `out` with the next tables, as [`take`](TableReader::take) would hand them
    /// out: what is buffered first, then frames read straight into `out`. Only a frame
    /// running past `out`'s end goes through the buffer, so filling a large window (the
    /// compact evaluator's, 32 MiB per thread) holds no second copy of it.
    pub(crate) fn fill(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        out: &mut [Block],
    ) -> Result<(), ProtocolError> {
        let buffered = self.remaining().min(out.len());
        out[..buffered].copy_from_slice(&self.buf[self.pos..self.pos + buffered]);
        self.pos += buffered;
        let mut filled = buffered;
        while filled < out.len() {
            let blocks = if self.ended {
                0
            } else {
                self.frame_header(ch)?
            };
            if blocks == 0 {
                return Err(tables_ended_early());
            }
            let room = out.len() - filled;
            if blocks <= room {
                ch.recv(Block::slice_as_bytes_mut(&mut out[filled..filled + blocks]))?;
                filled += blocks;
            } else {
                self.buf.clear();
                self.buf.resize(blocks, Block::ZERO);
                ch.recv(Block::slice_as_bytes_mut(&mut self.buf))?;
                out[filled..].copy_from_slice(&self.buf[..room]);
                self.pos = room;
                filled = out.len();
            }
        }
        self.consumed += out.len() as u64;
        Ok(())
    }

    pub(crate) fn take(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        n: usize,
    ) -> Result<&[Block], ProtocolError> {
        if self.remaining() < n {
            self.buf.drain(..self.pos);
            self.pos = 0;
            while self.buf.len() < n {
                if self.ended || self.read_frame(ch)? == 0 {
                    return Err(tables_ended_early());
                }
            }
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        self.consumed += n as u64;
        Ok(s)
    }
}

fn tables_ended_early() -> ProtocolError {
    ProtocolError::Peer("the peer's garbled tables ended before the circuit's gates".into())
}

pub(crate) fn pack_bits(bits: &[bool]) -> Vec<u8> {
    let mut v = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        v[i / 8] |= (b as u8) << (i % 8);
    }
    v
}

pub(crate) fn unpack_bits(bytes: &[u8], n: usize) -> Option<Vec<bool>> {
    if bytes.len() != n.div_ceil(8) {
        return None;
    }
    Some((0..n).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A three-halves table frame from a broken peer is an error naming it, never a panic
    /// or an allocation of what the peer announces.
    #[test]
    fn malformed_three_halves_frames_are_errors() {
        use pgc_net::MemoryChannel;
        let frame = |ch: &mut MemoryChannel, bytes: &[u8]| {
            ch.send_frame(bytes).unwrap();
            ch.flush().unwrap();
        };
        let mut good = Vec::new();
        Tables {
            halves: vec![7; 9],
            control: vec![31, 0, 5],
        }
        .pack(&mut good);
        // Good: 3 ANDs, then the end frame; taken in pieces across frames.
        let (mut a, mut b) = MemoryChannel::pair();
        frame(&mut a, &good[..]);
        frame(&mut a, &good[..]);
        frame(&mut a, &[]);
        let mut r = ThreeHalvesReader::default();
        assert_eq!(r.take(&mut b, 2).unwrap().control, &[31, 0]);
        assert_eq!(r.take(&mut b, 4).unwrap().control, &[5, 31, 0, 5]);
        assert!(r.take(&mut b, 1).is_err() && r.ended);
        // A length that is no whole number of ANDs, non-zero padding, too large a frame.
        let mut padded = good.clone();
        *padded.last_mut().unwrap() |= 0x80;
        for bad in [vec![0u8; 26], padded] {
            let (mut a, mut b) = MemoryChannel::pair();
            frame(&mut a, &bad);
            let e = ThreeHalvesReader::default().take(&mut b, 1).unwrap_err();
            assert!(e.to_string().contains("three-halves table frame"), "{e}");
        }
        let (mut a, mut b) = MemoryChannel::pair();
        a.send(&(MAX_TABLE_FRAME_BYTES as u32 + 25).to_le_bytes())
            .unwrap();
        a.flush().unwrap();
        let e = ThreeHalvesReader::default().take(&mut b, 1).unwrap_err();
        assert!(e.to_string().contains("at most"), "{e}");
        // More tables than the circuit has ANDs.
        let (mut a, mut b) = MemoryChannel::pair();
        frame(&mut a, &good);
        frame(&mut a, &[]);
        let e = ThreeHalvesReader::default()
            .skip_to_end(&mut b, 2)
            .unwrap_err();
        assert!(e.to_string().contains("more garbled tables"), "{e}");
    }

    /// `fill` hands out exactly what `take` would, whether a window starts or ends inside
    /// a frame, spans several or comes after a `take`; tables that end early are an error.
    #[test]
    fn table_fill_reads_across_frames_as_take_does() {
        use pgc_net::MemoryChannel;
        let blocks: Vec<Block> = (0..200u128).map(Block::new).collect();
        let send_all = |ch: &mut MemoryChannel| {
            let mut at = 0;
            for n in [7, 1, 30, 62, 5, 64, 31] {
                ch.send_frame(Block::slice_as_bytes(&blocks[at..at + n]))
                    .unwrap();
                at += n;
            }
            ch.send_frame(&[]).unwrap();
            ch.flush().unwrap();
        };
        for pieces in [vec![200], vec![3, 40, 1, 100, 56], vec![8, 30, 62, 100]] {
            let (mut a, mut b) = MemoryChannel::pair();
            send_all(&mut a);
            let mut r = TableReader::default();
            let mut got = Vec::new();
            for (i, &n) in pieces.iter().enumerate() {
                if i % 2 == 1 {
                    got.extend_from_slice(r.take(&mut b, n).unwrap());
                } else {
                    let mut out = vec![Block::ZERO; n];
                    r.fill(&mut b, &mut out).unwrap();
                    got.extend(out);
                }
            }
            assert_eq!(got, blocks, "{pieces:?}");
            assert_eq!(r.consumed(), 200);
            r.skip_to_end(&mut b, 200).unwrap();
        }
        let (mut a, mut b) = MemoryChannel::pair();
        send_all(&mut a);
        let mut r = TableReader::default();
        let e = r.fill(&mut b, &mut [Block::ZERO; 201]).unwrap_err();
        assert!(e.to_string().contains("ended before"), "{e}");
        assert!(r.ended());
    }

    #[test]
    fn bit_packing_round_trips() {
        for n in [0, 1, 7, 8, 9, 100] {
            let bits: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
            assert_eq!(unpack_bits(&pack_bits(&bits), n).unwrap(), bits);
        }
        assert!(unpack_bits(&[0, 0], 3).is_none());
    }
}
