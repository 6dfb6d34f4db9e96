//! Dual execution: semi-honest Yao run twice with the roles swapped, then a secure test that
//! the two runs agree. Either party may deviate from the protocol; the honest party never
//! accepts a wrong output, and a cheater learns at most one bit beyond its own output.
//!
//! Constructions: Mohassel and Franklin, *Efficiency Tradeoffs for Malicious Two-Party
//! Computation* (PKC 2006), dual execution; Huang, Katz, Evans, *Quid-Pro-Quo-tocols:
//! Strengthening Semi-Honest Protocols with Dual Execution* (IEEE S&P 2012, "HKE12"), §3: the
//! protocol, run on the parties' real inputs in both executions, and its output validation
//! on wire labels; the leakage it allows is the one-bit-leakage model of Husted, Myers,
//! shelat, Grubbs (ACSAC 2013, §3).
//!
//! Message flow, after the [handshake](crate::handshake) (both state
//! [`Security::DualExecution`]; every output must be visible to both parties, HKE12's
//! setting, or the run is refused before anything is sent):
//! 1. Execution 1, A garbles C_A and B evaluates it (A draws a fresh Δ_A, hash key and
//!    zero-labels from OS randomness):
//!    1. A → B: the garbling hash key, then the labels of A's input bits.
//!    2. A ⇄ B: one random OT per input bit of B, A the sender: A gets key pairs
//!       (k_i⁰, k_i¹), B gets k_i^{c_i} for its bit c_i.
//!    3. A → B: per input bit i of B, W_i⁰ ⊕ k_i⁰ and W_i¹ ⊕ k_i¹ (W_i¹ = W_i⁰ ⊕ Δ_A); B
//!       decrypts the one its key opens, the label of its bit.
//!    4. A → B: the garbled tables, streamed in frames, then the end-of-tables frame (as in
//!       [`crate::yao`]).
//!    5. A ⇄ B: the [completion](crate::completion) ("done") messages.
//!    6. A → B: the decoding bit of every output wire; B decodes its output v_B.
//! 2. Execution 2: the same with the roles swapped: B garbles C_B (fresh Δ_B), A evaluates
//!    it and decodes its output v_A.
//! 3. Output validation (HKE12 §3), no message: each party forms a string from the output
//!    labels of both circuits, C_A's first:
//!    - A: T_A = H(C_A's labels of v_A, from its zero-labels and Δ_A ‖ the labels A got
//!      evaluating C_B);
//!    - B: T_B = H(the labels B got evaluating C_A ‖ C_B's labels of v_B).
//!
//!    H is BLAKE3 in key-derivation mode with a domain string of its own. Run honestly,
//!    with v_A = v_B, both strings hash the same labels.
//! 4. A ⇄ B: the [equality test](super::peqt) of T_A and T_B. Only if it passes does a
//!    party return its output; otherwise both return [`ProtocolError::CheatDetected`].
//!
//! Who learns what. Each party learns its output from the circuit the *other* party
//! garbled, evaluated on its own real input; it sends nothing derived from that circuit's
//! labels except through the equality test. The honest party's output is correct when the
//! test passes: say A is honest. The first half of T_A holds C_A's labels of v_A; B knows
//! only one label per output wire of C_A, the one it evaluated, which encodes
//! f(x_A, x_B') for the input x_B' B chose in the OTs of execution 1 (the other label is
//! hidden by Δ_A). So T_B can match T_A only if v_A = f(x_A, x_B'): A accepts exactly what
//! an ideal run with B's input x_B' would give. (The same holds for B with C_B.)
//!
//! What a cheater gains beyond its own output (which it decodes from the honest party's
//! circuit, as in semi-honest Yao, and keeps even if the run then aborts: there is no
//! fairness) is the test's verdict. By garbling a wrong circuit, sending wrong decoding
//! bits, corrupting one label of an OT pair (selective failure) or using other inputs in
//! the circuit it garbles, it can make the verdict any predicate of the honest party's
//! input it likes: one bit, the leakage HKE12 §3 and Husted et al. §3 allow. When the
//! verdict is "unequal" the honest party returns no output.
//!
//! Cost: about twice semi-honest Yao (the executions run in turn over the one channel),
//! plus two random-OT set-ups and a few group operations.
//!
//! The random OTs are actively secure: KOS15 extension on Masny–Rindal endemic base OTs
//! (`pgc_ot::kos`, through `input_ot`), so an evaluator cannot get both labels of an input
//! wire (the passively secure IKNP would let a malicious one learn the OT correlation).

use std::time::{Duration, Instant};

use pgc_circuit::{GateSource, Layout, Visibility, WireId};
use pgc_crypto::{Block, Prg};
use pgc_garble::{Evaluator, Garbler, random_delta};
use pgc_net::Channel;

use super::Security;
use super::peqt;
use crate::completion::{self, Done, Expected};
use crate::secret_probe::{self, Secret};
use crate::yao::{
    HelloTerms, Outcome, Party, ProtocolError, begin, input_wires_by_owner, outcome, pack_bits,
    receive_tables, recv_bits, recv_blocks_exact, send_tables,
};

/// Domain string of the validation strings T_A, T_B.
const VALIDATION_CONTEXT: &str = "pgc dual execution validation v1";

/// What both parties return when the equality test fails.
const MISMATCH: &str = "the dual-execution equality test failed: the two executions gave \
                        different outputs or a garbled circuit was wrong";

/// Encrypted input-label pairs per frame (1 MiB).
const OT_FRAME_PAIRS: usize = 1 << 15;

/// One party's side of dual execution: both parties garble and evaluate in turn and learn
/// every output, which each returns only after the equality test of the two executions
/// passed.
///
/// `owners[i]` owns input value `i`; `inputs` holds the bits of this party's own input
/// values, in circuit order. Every entry of `visibility` must be [`Visibility::Both`].
/// `progress` is called with the AND gates done so far, both executions together scaled to
/// the circuit's AND count (each execution counts half).
pub fn run_dual_execution<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    run(
        ch,
        circuit,
        owners,
        visibility,
        me,
        inputs,
        progress,
        Behaviour::default(),
    )
}

#[allow(clippy::too_many_arguments)]
fn run<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
    behaviour: Behaviour,
) -> Result<Outcome, ProtocolError> {
    check_visibility(visibility)?;
    let terms = HelloTerms::secured(Security::DualExecution);
    let (start, counts0) = begin(ch, circuit, owners, visibility, me, inputs, terms)?;
    let layout = circuit.layout();
    let ands = circuit.and_count();
    // The handshake counts as input time, as in semi-honest Yao.
    let mut timing = Timing {
        input: start.elapsed(),
        ..Timing::default()
    };
    let (garbled, evaluated) = match me {
        Party::A => {
            let garbled = garble(
                ch,
                circuit,
                owners,
                me,
                inputs,
                &mut |n| progress(n / 2),
                behaviour,
                &mut timing,
            )?;
            let evaluated = evaluate(
                ch,
                circuit,
                owners,
                me,
                inputs,
                &mut |n| progress((ands + n) / 2),
                &mut timing,
            )?;
            (garbled, evaluated)
        }
        Party::B => {
            let evaluated = evaluate(
                ch,
                circuit,
                owners,
                me,
                inputs,
                &mut |n| progress(n / 2),
                &mut timing,
            )?;
            let garbled = garble(
                ch,
                circuit,
                owners,
                me,
                inputs,
                &mut |n| progress((ands + n) / 2),
                behaviour,
                &mut timing,
            )?;
            (garbled, evaluated)
        }
    };

    // Output validation: this party's own circuit's labels of the value it learned, and
    // the labels it got in the other circuit, C_A's first on both sides.
    let mut claimed = evaluated.values.clone();
    behaviour.claimed_values(&mut claimed);
    let own = garbled.labels_of(&claimed);
    let validation = match me {
        Party::A => validation_string(&own, &evaluated.labels),
        Party::B => validation_string(&evaluated.labels, &own),
    };
    if !peqt::equality_test(ch, me, &validation)? {
        return Err(ProtocolError::CheatDetected(MISMATCH.into()));
    }

    let input_done = start + timing.input;
    Ok(outcome(
        layout,
        visibility,
        me,
        evaluated.values,
        ch,
        counts0,
        start,
        input_done,
        input_done + timing.circuit,
        circuit,
    ))
}

/// Refuses any output not visible to both: dual execution reveals every output to both
/// parties (each decodes it from the circuit it evaluates).
fn check_visibility(visibility: &[Visibility]) -> Result<(), ProtocolError> {
    for (j, &v) in visibility.iter().enumerate() {
        let only = match v {
            Visibility::Both => continue,
            Visibility::A => 'A',
            Visibility::B => 'B',
        };
        return Err(ProtocolError::Input(format!(
            "output value {j} is visible to party {only} only, but dual execution reveals \
             every output to both parties: make every output visible to both, or run \
             another security level"
        )));
    }
    Ok(())
}

/// Time spent on input labels and on the tables, both executions together.
#[derive(Default)]
struct Timing {
    input: Duration,
    circuit: Duration,
}

impl Timing {
    fn add(&mut self, began: Instant, input_done: Instant, circuit_done: Instant) {
        self.input += input_done - began;
        self.circuit += circuit_done - input_done;
    }
}

/// What the garbler keeps of its circuit for the validation.
struct Garbled {
    delta: Block,
    /// The zero-label of every output wire, in output order.
    output_zero: Vec<Block>,
}

impl Garbled {
    /// This circuit's output labels of `values`: W⁰ ⊕ v·Δ.
    fn labels_of(&self, values: &[bool]) -> Vec<Block> {
        self.output_zero
            .iter()
            .zip(values)
            .map(|(&z, &v)| z ^ self.delta.select(v))
            .collect()
    }
}

/// What the evaluator got from the other party's circuit.
struct Evaluated {
    /// The decoded output bits, in output order.
    values: Vec<bool>,
    /// The label of every output wire, in output order.
    labels: Vec<Block>,
}

/// T = H(labels in C_A ‖ labels in C_B).
fn validation_string(in_a: &[Block], in_b: &[Block]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key(VALIDATION_CONTEXT);
    h.update(Block::slice_as_bytes(in_a));
    h.update(Block::slice_as_bytes(in_b));
    *h.finalize().as_bytes()
}

/// (this party's input wires, the peer's), each in circuit order.
fn input_wires(layout: &Layout, owners: &[Party], me: Party) -> (Vec<WireId>, Vec<WireId>) {
    let (a, b) = input_wires_by_owner(layout, owners);
    match me {
        Party::A => (a, b),
        Party::B => (b, a),
    }
}

/// Sender side of `n` random OTs: the key pairs (k⁰, k¹), over actively secure OT
/// (KOS15, see `input_ot`).
fn random_ot_send(
    ch: &mut impl Channel,
    n: usize,
    prg: &mut Prg,
) -> Result<Vec<(Block, Block)>, ProtocolError> {
    super::input_ot::send_keys(ch, n, prg)
}

/// Receiver side: k^{c_i} for each choice bit c_i.
fn random_ot_receive(
    ch: &mut impl Channel,
    choices: &[bool],
    prg: &mut Prg,
) -> Result<Vec<Block>, ProtocolError> {
    super::input_ot::receive_keys(ch, choices, prg)
}

/// One execution as the garbler (steps 1.1–1.6 of the module docs).
#[allow(clippy::too_many_arguments)]
fn garble<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    me: Party,
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
    behaviour: Behaviour,
    timing: &mut Timing,
) -> Result<Garbled, ProtocolError> {
    let began = Instant::now();
    let layout = circuit.layout();
    let mut prg = Prg::from_os_entropy();
    let delta = random_delta(&mut prg);
    secret_probe::note(Secret::Delta, &[delta]);
    // Public, fresh for each circuit (see pgc_crypto::hash).
    let hash_key = prg.random_block();
    let mut garbler = Garbler::new(layout.num_wires as usize, delta, hash_key);

    // This party's input labels, sent as they are.
    let (own_wires, peer_wires) = input_wires(layout, owners, me);
    let mut zero = vec![Block::ZERO; own_wires.len()];
    prg.fill_blocks(&mut zero);
    let mut active = Vec::with_capacity(own_wires.len());
    for (i, ((&w, &z), &bit)) in own_wires
        .iter()
        .zip(&zero)
        .zip(inputs.iter().flatten())
        .enumerate()
    {
        garbler.set_zero_label(w, z);
        active.push(z ^ delta.select(behaviour.own_input_bit(i, bit)));
    }
    ch.send_frame(Block::slice_as_bytes(&[hash_key]))?;
    ch.send_frame(Block::slice_as_bytes(&active))?;
    ch.flush()?;
    drop(active);

    // The peer's input labels, each pair encrypted under a random-OT key pair.
    if !peer_wires.is_empty() {
        let keys = random_ot_send(ch, peer_wires.len(), &mut prg)?;
        let mut zero = vec![Block::ZERO; peer_wires.len()];
        prg.fill_blocks(&mut zero);
        let mut pairs = Vec::with_capacity(2 * peer_wires.len());
        for ((&w, &z), &(k0, k1)) in peer_wires.iter().zip(&zero).zip(&keys) {
            garbler.set_zero_label(w, z);
            pairs.push(z ^ k0);
            pairs.push(z ^ delta ^ k1);
        }
        behaviour.encrypted_labels(&mut pairs);
        for frame in pairs.chunks(2 * OT_FRAME_PAIRS) {
            ch.send_frame(Block::slice_as_bytes(frame))?;
        }
        ch.flush()?;
    }
    let input_done = Instant::now();

    behaviour.before_tables(ch)?;
    let (gates, blocks_sent) = send_tables(ch, circuit, &mut garbler, progress, |frame| {
        behaviour.table_frame(frame)
    })?;
    let circuit_done = Instant::now();

    let mine = Done::of(
        circuit,
        Done {
            gates,
            and_gates: garbler.and_gates_done(),
            blocks_sent,
            ..Done::default()
        },
    );
    completion::exchange(ch, me, &mine, Expected::of(circuit, true))?;

    let out_wires = &layout.output_wires;
    let mut decoding = garbler.decoding_bits(out_wires);
    behaviour.decoding_bits(&mut decoding);
    let mut frame = pack_bits(&decoding);
    behaviour.decoding_frame(&mut frame);
    ch.send_frame(&frame)?;
    ch.flush()?;
    timing.add(began, input_done, circuit_done);
    Ok(Garbled {
        delta,
        output_zero: out_wires.iter().map(|&w| garbler.zero_label(w)).collect(),
    })
}

/// One execution as the evaluator.
fn evaluate<S: GateSource>(
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    me: Party,
    inputs: &[Vec<bool>],
    progress: &mut dyn FnMut(u64),
    timing: &mut Timing,
) -> Result<Evaluated, ProtocolError> {
    let began = Instant::now();
    let layout = circuit.layout();
    let mut hash_key = [Block::ZERO];
    recv_blocks_exact(ch, &mut hash_key, "the garbling hash key")?;
    let mut evaluator = Evaluator::new(layout.num_wires as usize, hash_key[0]);

    let (own_wires, peer_wires) = input_wires(layout, owners, me);
    let mut active = vec![Block::ZERO; peer_wires.len()];
    recv_blocks_exact(ch, &mut active, "the garbler's input labels")?;
    for (&w, &l) in peer_wires.iter().zip(&active) {
        evaluator.set_label(w, l);
    }
    drop(active);

    if !own_wires.is_empty() {
        let choices: Vec<bool> = inputs.iter().flatten().copied().collect();
        let keys = random_ot_receive(ch, &choices, &mut Prg::from_os_entropy())?;
        let mut pairs = Vec::new();
        for ((wires, choices), keys) in own_wires
            .chunks(OT_FRAME_PAIRS)
            .zip(choices.chunks(OT_FRAME_PAIRS))
            .zip(keys.chunks(OT_FRAME_PAIRS))
        {
            pairs.clear();
            pairs.resize(2 * wires.len(), Block::ZERO);
            recv_blocks_exact(ch, &mut pairs, "the garbler's encrypted input labels")?;
            for (((&w, &c), &k), pair) in wires.iter().zip(choices).zip(keys).zip(pairs.chunks(2)) {
                // y_c ⊕ k_c, without a branch on the secret choice.
                let (y0, y1) = (pair[0], pair[1]);
                evaluator.set_label(w, y0 ^ (y0 ^ y1).select(c) ^ k);
            }
        }
    }
    let input_done = Instant::now();

    let (gates, blocks_received) = receive_tables(ch, circuit, &mut evaluator, progress)?;
    let circuit_done = Instant::now();
    let mine = Done::of(
        circuit,
        Done {
            gates,
            and_gates: evaluator.and_gates_done(),
            blocks_received,
            ..Done::default()
        },
    );
    completion::exchange(ch, me, &mine, Expected::of(circuit, true))?;

    let out_wires = &layout.output_wires;
    let decoding = recv_bits(ch, out_wires.len(), "output decoding bits")?;
    timing.add(began, input_done, circuit_done);
    Ok(Evaluated {
        values: evaluator.decode(out_wires, &decoding),
        labels: out_wires.iter().map(|&w| evaluator.label(w)).collect(),
    })
}

/// How this party behaves. In the library it follows the protocol, always: every method
/// below leaves its argument alone. Only this module's tests build a misbehaving party
/// (the `Cheat` field exists in test builds only), to check that the honest one catches
/// it.
#[derive(Clone, Copy, Debug, Default)]
struct Behaviour {
    #[cfg(test)]
    cheat: Option<Cheat>,
}

/// The ways a test's party misbehaves.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cheat {
    /// As garbler: flips a bit of every garbled-table block (a wrong circuit).
    CorruptTable,
    /// As garbler: flips the decoding bit of the first output wire.
    WrongDecoding,
    /// As garbler: garbage in place of the 1-label of the evaluator's first input bit (a
    /// selective-failure attack: it shows only if that bit is 1).
    WrongOtLabel,
    /// In validation: its own circuit's label for the other value of the first output bit
    /// (claiming an output it did not learn).
    FlipOutputLabel,
    /// As garbler: its first input bit flipped in the circuit it garbles (other inputs in
    /// the two executions).
    InconsistentInput,
    /// As garbler: one encrypted input label too few.
    ShortOtFrame,
    /// As garbler: a table frame of 17 bytes before the tables.
    BadTableFrame,
    /// As garbler: one byte too many in the decoding bits.
    LongDecodingFrame,
}

// Outside tests the arguments go unused (and a slice would do for the Vecs).
#[cfg_attr(not(test), allow(unused_variables, clippy::ptr_arg))]
impl Behaviour {
    #[cfg(test)]
    fn cheats(self, how: Cheat) -> bool {
        self.cheat == Some(how)
    }

    fn own_input_bit(self, index: usize, bit: bool) -> bool {
        #[cfg(test)]
        if self.cheats(Cheat::InconsistentInput) && index == 0 {
            return !bit;
        }
        bit
    }

    fn encrypted_labels(self, pairs: &mut Vec<Block>) {
        #[cfg(test)]
        if self.cheats(Cheat::WrongOtLabel) {
            pairs[1] ^= Block(0xbad_u128 << 64);
        } else if self.cheats(Cheat::ShortOtFrame) {
            pairs.pop();
        }
    }

    fn before_tables(self, ch: &mut impl Channel) -> Result<(), ProtocolError> {
        #[cfg(test)]
        if self.cheats(Cheat::BadTableFrame) {
            ch.send_frame(&[0; 17])?;
        }
        Ok(())
    }

    fn table_frame(self, frame: &mut [Block]) {
        #[cfg(test)]
        if self.cheats(Cheat::CorruptTable) {
            for block in frame {
                *block ^= Block(1_u128 << 100);
            }
        }
    }

    fn decoding_bits(self, bits: &mut [bool]) {
        #[cfg(test)]
        if self.cheats(Cheat::WrongDecoding) {
            bits[0] ^= true;
        }
    }

    fn decoding_frame(self, frame: &mut Vec<u8>) {
        #[cfg(test)]
        if self.cheats(Cheat::LongDecodingFrame) {
            frame.push(0);
        }
    }

    fn claimed_values(self, values: &mut [bool]) {
        #[cfg(test)]
        if self.cheats(Cheat::FlipOutputLabel) {
            values[0] ^= true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yao::all_visible;
    use pgc_circuit::bristol::read_circuit_file;
    use pgc_circuit::eval::eval_bits;
    use pgc_circuit::generate::random_circuit;
    use pgc_circuit::testdata::vector_file;
    use pgc_circuit::value::{format_value, parse_value};
    use pgc_circuit::{Builder, Circuit, millionaires_circuit};
    use pgc_net::MemoryChannel;

    type Results = (
        Result<Outcome, ProtocolError>,
        Result<Outcome, ProtocolError>,
    );

    fn honest() -> Behaviour {
        Behaviour::default()
    }

    fn cheating(how: Cheat) -> Behaviour {
        Behaviour { cheat: Some(how) }
    }

    /// Both parties over an in-memory channel, A on its own thread.
    fn run_pair(
        circuit: &Circuit,
        owners: &[Party],
        values: &[Vec<bool>],
        a: Behaviour,
        b: Behaviour,
    ) -> Results {
        let visibility = all_visible(&circuit.layout);
        let mine = |p: Party| -> Vec<Vec<bool>> { crate::local::split_inputs(owners, values, p) };
        let (a_inputs, b_inputs) = (mine(Party::A), mine(Party::B));
        let (mut ca, cb) = MemoryChannel::pair();
        std::thread::scope(|s| {
            let visibility = &visibility;
            let ha = s.spawn(move || {
                run(
                    &mut ca,
                    circuit,
                    owners,
                    visibility,
                    Party::A,
                    &a_inputs,
                    &mut |_| {},
                    a,
                )
            });
            // B's end closes as B returns (before the join), so A never waits on a party
            // that stopped.
            let rb = run(
                &mut { cb },
                circuit,
                owners,
                visibility,
                Party::B,
                &b_inputs,
                &mut |_| {},
                b,
            );
            (ha.join().unwrap(), rb)
        })
    }

    /// Runs honestly and checks both parties got the cleartext evaluation.
    fn assert_honest_run_matches(circuit: &Circuit, owners: &[Party], values: &[Vec<bool>]) {
        let (a, b) = run_pair(circuit, owners, values, honest(), honest());
        let (a, b) = (a.unwrap(), b.unwrap());
        let flat: Vec<bool> = values.iter().flatten().copied().collect();
        let expected = eval_bits(circuit, &flat);
        for outcome in [&a, &b] {
            let got: Vec<bool> = outcome.all_outputs().unwrap().concat();
            assert_eq!(got, expected);
        }
        assert!(a.stats.bytes_sent > 0 && a.stats.bytes_sent == b.stats.bytes_received);
    }

    fn word(value: u64, width: u32) -> Vec<bool> {
        (0..width).map(|i| value >> i & 1 == 1).collect()
    }

    fn adder(width: u32) -> Circuit {
        let (mut b, inputs) = Builder::new(&[width, width]);
        let sum = b.add(&inputs[0], &inputs[1]);
        b.output(&sum);
        b.finish()
    }

    const AB: [Party; 2] = [Party::A, Party::B];

    #[test]
    fn honest_runs_match_cleartext_evaluation() {
        let add = adder(32);
        for (x, y) in [(0, 0), (0xffff_ffff, 1), (123_456_789, 987_654_321)] {
            assert_honest_run_matches(&add, &AB, &[word(x, 32), word(y, 32)]);
        }
        let rich = millionaires_circuit(32);
        for (x, y) in [(5, 1000), (1000, 5), (77, 77)] {
            assert_honest_run_matches(&rich, &AB, &[word(x, 32), word(y, 32)]);
        }
        // One party without inputs (no OT in the execution it evaluates), and B first.
        assert_honest_run_matches(&add, &[Party::A, Party::A], &[word(9, 32), word(3, 32)]);
        assert_honest_run_matches(&add, &[Party::B, Party::A], &[word(9, 32), word(3, 32)]);
        // Random circuits: constants, copies, inputs straight to outputs, reused slots.
        for seed in 0..6u64 {
            let c = random_circuit(seed, 8, 300);
            let owners: Vec<Party> = (0..c.layout.input_widths.len())
                .map(|i| {
                    if (i as u64 + seed).is_multiple_of(2) {
                        Party::A
                    } else {
                        Party::B
                    }
                })
                .collect();
            let values: Vec<Vec<bool>> = c
                .layout
                .input_widths
                .iter()
                .enumerate()
                .map(|(i, &w)| word(seed * 0x9e37_79b9 + i as u64 * 31, w.min(64)))
                .collect();
            assert_honest_run_matches(&c, &owners, &values);
        }
    }

    #[test]
    fn aes_128_matches_its_known_answer() {
        let f = vector_file("bristol_fashion/aes_128.txt");
        let c = read_circuit_file(&f.path, Some(f.format)).unwrap();
        let v = &f.vectors[0];
        let values: Vec<Vec<bool>> = v
            .inputs
            .iter()
            .zip(&c.layout.input_widths)
            .map(|(t, &w)| parse_value(t, w, f.bit_order).unwrap())
            .collect();
        let (a, b) = run_pair(&c, &AB, &values, honest(), honest());
        for outcome in [a.unwrap(), b.unwrap()] {
            let got: Vec<String> = outcome
                .all_outputs()
                .unwrap()
                .iter()
                .map(|o| format_value(o, f.bit_order))
                .collect();
            assert_eq!(got, v.outputs);
        }
    }

    fn assert_caught(results: Results, cheater: Party, how: Cheat) {
        let (a, b) = results;
        let honest = if cheater == Party::A { b } else { a };
        match honest {
            Err(ProtocolError::CheatDetected(m)) => assert_eq!(m, MISMATCH, "{how:?}"),
            other => panic!("{how:?} by {cheater:?}: the honest party got {other:?}"),
        }
    }

    #[test]
    fn a_cheating_party_is_caught_and_no_output_is_accepted() {
        let rich = millionaires_circuit(32);
        let values = [word(1001, 32), word(1000, 32)];
        for how in [
            Cheat::CorruptTable,
            Cheat::WrongDecoding,
            Cheat::FlipOutputLabel,
        ] {
            for cheater in AB {
                let (a, b) = match cheater {
                    Party::A => (cheating(how), honest()),
                    Party::B => (honest(), cheating(how)),
                };
                assert_caught(run_pair(&rich, &AB, &values, a, b), cheater, how);
            }
        }
    }

    #[test]
    fn selective_failure_in_the_ot_leaks_exactly_the_verdict() {
        // The cheater corrupts the 1-label of the peer's first input bit: a run where that
        // bit is 1 aborts on both sides; where it is 0 the run is honest in effect and both
        // get the right output (the abort or not is the one bit the cheater learns).
        let add = adder(16);
        for cheater in AB {
            let (a, b) = match cheater {
                Party::A => (cheating(Cheat::WrongOtLabel), honest()),
                Party::B => (honest(), cheating(Cheat::WrongOtLabel)),
            };
            let victim_value = |bit0: u64| -> Vec<Vec<bool>> {
                match cheater {
                    Party::A => vec![word(300, 16), word(40 | bit0, 16)],
                    Party::B => vec![word(300 | bit0, 16), word(40, 16)],
                }
            };
            assert_caught(
                run_pair(&add, &AB, &victim_value(1), a, b),
                cheater,
                Cheat::WrongOtLabel,
            );
            let (ra, rb) = run_pair(&add, &AB, &victim_value(0), a, b);
            assert_eq!(ra.unwrap().outputs, vec![Some(word(340, 16))]);
            assert_eq!(rb.unwrap().outputs, vec![Some(word(340, 16))]);
        }
    }

    #[test]
    fn inconsistent_inputs_are_caught_when_they_change_the_output() {
        let rich = millionaires_circuit(32);
        for cheater in AB {
            let (a, b) = match cheater {
                Party::A => (cheating(Cheat::InconsistentInput), honest()),
                Party::B => (honest(), cheating(Cheat::InconsistentInput)),
            };
            // 1001 against 1000: flipping either party's first bit changes the comparison.
            let deciding = [word(1001, 32), word(1000, 32)];
            assert_caught(
                run_pair(&rich, &AB, &deciding, a, b),
                cheater,
                Cheat::InconsistentInput,
            );
            // Here it does not: the honest party accepts the same, correct, output.
            let (ra, rb) = run_pair(&rich, &AB, &[word(5, 32), word(1000, 32)], a, b);
            assert_eq!(ra.unwrap().outputs, vec![Some(vec![false])]);
            assert_eq!(rb.unwrap().outputs, vec![Some(vec![false])]);
        }
    }

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        let add = adder(8);
        let values = [word(3, 8), word(4, 8)];
        for (how, expect) in [
            (Cheat::ShortOtFrame, "encrypted input labels"),
            (Cheat::BadTableFrame, "a garbled-table frame of 17 bytes"),
            (Cheat::LongDecodingFrame, "output decoding bits"),
        ] {
            for cheater in AB {
                let (a, b) = match cheater {
                    Party::A => (cheating(how), honest()),
                    Party::B => (honest(), cheating(how)),
                };
                let (ra, rb) = run_pair(&add, &AB, &values, a, b);
                let victim = if cheater == Party::A { rb } else { ra };
                let e = victim.unwrap_err();
                assert!(
                    matches!(e, ProtocolError::Peer(_)) && e.to_string().contains(expect),
                    "{how:?} by {cheater:?}: {e}"
                );
            }
        }
        // A garbler whose hash key is a byte short, right after the handshake.
        let visibility = all_visible(&add.layout);
        let (mut ca, mut cb) = MemoryChannel::pair();
        let e = std::thread::scope(|s| {
            s.spawn(|| {
                let a_inputs = [word(3, 8)];
                begin(
                    &mut ca,
                    &add,
                    &AB,
                    &visibility,
                    Party::A,
                    &a_inputs,
                    HelloTerms::secured(Security::DualExecution),
                )
                .unwrap();
                ca.send_frame(&[0; 15]).unwrap();
                ca.flush().unwrap();
            });
            run_dual_execution(
                &mut cb,
                &add,
                &AB,
                &visibility,
                Party::B,
                &[word(4, 8)],
                &mut |_| {},
            )
            .unwrap_err()
        });
        assert!(e.to_string().contains("hash key"), "{e}");
    }

    #[test]
    fn outputs_not_visible_to_both_are_refused_before_anything_is_sent() {
        let rich = millionaires_circuit(8);
        let (mut ca, _cb) = MemoryChannel::pair();
        let e = run_dual_execution(
            &mut ca,
            &rich,
            &AB,
            &[Visibility::B],
            Party::A,
            &[word(1, 8)],
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            matches!(&e, ProtocolError::Input(m) if m.contains("output value 0 is visible to party B only")),
            "{e}"
        );
        assert_eq!(ca.counts().sent, 0);
    }

    #[test]
    fn progress_covers_both_executions() {
        let add = adder(32);
        let visibility = all_visible(&add.layout);
        let (mut ca, mut cb) = MemoryChannel::pair();
        let mut seen = Vec::new();
        std::thread::scope(|s| {
            let visibility = &visibility;
            let add = &add;
            s.spawn(move || {
                run_dual_execution(
                    &mut ca,
                    add,
                    &AB,
                    visibility,
                    Party::A,
                    &[word(1, 32)],
                    &mut |_| {},
                )
                .unwrap()
            });
            run_dual_execution(
                &mut cb,
                add,
                &AB,
                visibility,
                Party::B,
                &[word(2, 32)],
                &mut |n| seen.push(n),
            )
            .unwrap();
        });
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(seen.last().copied(), Some(add.and_count()));
    }
}
