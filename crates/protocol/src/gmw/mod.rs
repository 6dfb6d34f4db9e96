//! Semi-honest two-party GMW (Goldreich, Micali, Wigderson, STOC 1987) with a setup/online
//! split, as the seed paper runs it (Demmler et al., CCS 2015, §2.1 and §5; their ABY
//! framework, Demmler, Schneider, Zohner, NDSS 2015, §III-B).
//!
//! Every wire is XOR-shared between A and B. XOR, INV and copies are local; an AND gate
//! opens two bits per party, masked with a Beaver triple; all AND gates of one AND level go
//! in one message each way, so the online phase takes one round per level (the circuit's
//! AND depth — compile with `--optimize depth`).
//!
//! Message flow, after the [hello](crate::handshake) (protocol `gmw`):
//! 1. Setup (independent of inputs and gates):
//!    - A ⇄ B: base OTs of two IKNP extensions, A the sender of one and B of the other;
//!    - B → A and A → B: the extension matrices of one random OT per direction per triple
//!      (16 bytes each way per AND gate), giving each party its shares of the Beaver triples
//!      ([`triples`]);
//!    - a circuit that fits one window is also read and scheduled here ([`schedule`]).
//! 2. Online:
//!    - A ⇄ B: a 16-byte seed each; the owner of an input bit x holds x ⊕ m and the other
//!      party m, m being the bit of the owner's seed's AES-CTR stream. The seed is a fresh
//!      random mask, so the other party learns nothing from it.
//!    - A ⇄ B, once per AND level: this party's shares of d = x ⊕ a and e = y ⊕ b for every
//!      AND gate of the level (2 bits per gate, packed; split into pieces of at most
//!      [`ROUND_PIECE_BYTES`], each side sending at most `send_ahead_bytes` beyond what it
//!      has received, so two parties that send at once never both wait for room). Both
//!      sides send the same length, checked on receipt ([`online`]).
//!    - Triples run out only for circuits larger than the pool (by default
//!      [`MAX_POOL_TRIPLES`] AND gates); then both refill at the same window boundary
//!      (timed as setup).
//! 3. A ⇄ B: the [completion](crate::completion) messages (gates, AND gates and opened-share
//!    bytes each way); nothing about the outputs moves unless both parties processed the
//!    whole circuit.
//! 4. Outputs, each as its [`Visibility`] says: A → B A's shares of the outputs B may see,
//!    then B → A B's shares of those A may see. A share alone is a uniformly random bit.
//!
//! Who learns what: each party sees the peer's masked input shares, the opened d and e of
//! every AND gate (uniform bits: x and y masked with triple shares it does not know) and
//! the peer's shares of the outputs it may see. Semi-honest only: a party that deviates can
//! change the outputs without being noticed.

pub mod online;
pub mod schedule;
pub mod triples;

use std::time::Instant;

use pgc_circuit::{Gate, GateSource, Op, Visibility};
use pgc_crypto::{Block, Prg};
use pgc_net::{Channel, NetError};

use crate::choice::ProtocolChoice;
use crate::completion::{self, Done, Expected};
use crate::yao::{
    HelloTerms, Outcome, Party, ProtocolError, begin, input_wires_by_owner, outcome,
    output_wires_seen_by, pack_bits, recv_bits,
};
use online::Shares;
use schedule::{AndOp, RoundCounter, Schedule, Scheduler, WindowCounts};
use triples::{TripleGenerator, Triples};

/// Largest piece of one round's message: small enough that a piece fits the socket
/// buffers of any link, large enough to amortise framing.
pub const ROUND_PIECE_BYTES: usize = 16 << 10;
/// Most triples made ahead of time by default (3 bits each per party: 48 MiB).
pub const MAX_POOL_TRIPLES: usize = 1 << 27;

/// How a GMW run uses memory and the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GmwConfig {
    /// Gates scheduled together (about 45 bytes each while scheduled). Rounds are the sum of
    /// the windows' AND depths, so a circuit that fits one window runs in its AND depth.
    pub window_gates: usize,
    /// Bytes of a round this party sends beyond what it has received from the peer. The
    /// channel must take this much (plus a piece) without the peer reading: 64 KiB fits any
    /// TCP socket's buffers; a shaped channel (pgc's link shaping) takes megabytes, which
    /// keeps wide levels streaming over a long link.
    pub send_ahead_bytes: usize,
    /// Most triples made ahead of time (3 bits each per party); a larger circuit refills
    /// the pool at window boundaries.
    pub pool_triples: usize,
}

impl Default for GmwConfig {
    fn default() -> GmwConfig {
        GmwConfig {
            window_gates: 1 << 23,
            send_ahead_bytes: 64 << 10,
            pool_triples: MAX_POOL_TRIPLES,
        }
    }
}

/// The phases of a GMW run, as one party measured them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GmwStats {
    /// Base OTs and triple generation (and scheduling a circuit that fits one window).
    pub setup_seconds: f64,
    /// Input sharing, the AND rounds, the completion check and the outputs.
    pub online_seconds: f64,
    /// AND rounds of the online phase.
    pub rounds: u64,
    /// Triples made.
    pub triples: u64,
    /// Bytes sent and received during setup.
    pub setup_bytes_sent: u64,
    pub setup_bytes_received: u64,
}

/// Runs this party's side of `circuit` with GMW. `inputs` holds the bits of this party's
/// own input values in circuit order; the outputs are revealed as `visibility` says (the
/// peer must pass the same, checked at the handshake). `progress` is called with the AND
/// gates done so far.
#[allow(clippy::too_many_arguments)]
pub fn run_gmw<C: Channel + ?Sized, S: GateSource>(
    ch: &mut C,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    config: &GmwConfig,
    progress: &mut dyn FnMut(u64),
) -> Result<Outcome, ProtocolError> {
    let terms = HelloTerms {
        protocol: ProtocolChoice::Gmw,
        ..HelloTerms::default()
    };
    let (start, counts0) = begin(ch, circuit, owners, visibility, me, inputs, terms)?;
    let layout = circuit.layout();
    let window = config.window_gates.max(1);
    let send_ahead = config.send_ahead_bytes.max(ROUND_PIECE_BYTES);
    let mut scheduler = Scheduler::new(layout.num_wires, window).map_err(ProtocolError::Input)?;
    let total_ands = circuit.and_count();

    // 1. Setup.
    let setup_start = Instant::now();
    let setup_counts0 = ch.counts();
    let mut generator = TripleGenerator::setup(ch, me)?;
    let mut pool = Triples::default();
    let pool_max = config.pool_triples.max(1);
    let first = total_ands.min(pool_max as u64) as usize;
    generator.extend(ch, first, send_ahead, &mut pool)?;
    let triples_made = first as u64;
    // Which windows run in stream order, decided now (a pass over the gates, before the
    // inputs are needed); a circuit that fits one window is also planned now, in full.
    let mut counter = RoundCounter::new(layout.num_wires);
    let mut stream_order = Vec::new();
    let prepared: Option<Plan> = if circuit.gate_count() <= window as u64 {
        let mut gates = Vec::with_capacity(circuit.gate_count() as usize);
        circuit.for_each_chunk(&mut |chunk| -> Result<(), ProtocolError> {
            gates.extend_from_slice(chunk);
            Ok(())
        })?;
        let counts = counter.count(&gates);
        Some(Plan::of(gates, Some(counts), &mut scheduler))
    } else {
        let mut buf: Vec<Gate> = Vec::with_capacity(window);
        let mut decide = |buf: &mut Vec<Gate>| {
            let counts = counter.count(buf);
            stream_order.push((counts.stream_order(), counts.ands));
            buf.clear();
        };
        circuit.for_each_chunk(&mut |mut chunk| -> Result<(), ProtocolError> {
            while !chunk.is_empty() {
                let take = (window - buf.len()).min(chunk.len());
                buf.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
                if buf.len() == window {
                    decide(&mut buf);
                }
            }
            Ok(())
        })?;
        if !buf.is_empty() {
            decide(&mut buf);
        }
        None
    };
    drop(counter);
    let setup_counts = ch.counts();
    let setup_seconds = setup_start.elapsed().as_secs_f64();
    let online_start = Instant::now();

    // 2. Online: inputs.
    let mut shares = Shares::new(me, layout.num_wires as usize);
    share_inputs(ch, layout, owners, me, inputs, &mut shares)?;
    let input_done = Instant::now();

    // The AND rounds, window by window.
    let mut run = Rounds {
        pending: vec![0; layout.num_wires as usize],
        batch_id: 1,
        batch: Vec::new(),
        shares,
        pool,
        msg: Vec::new(),
        peer: Vec::new(),
        piece: Vec::new(),
        send_ahead,
        rounds: 0,
        gates: 0,
        ands: 0,
        bytes_sent: 0,
        bytes_received: 0,
    };
    let mut refills = Refills {
        generator,
        pool_max,
        total_ands,
        triples_made,
        seconds: 0.0,
    };
    match prepared {
        Some(plan) => {
            refills.ensure(ch, &mut run, plan.and_gates())?;
            run.run_plan(ch, &plan, progress)?;
        }
        None => {
            // Windows in stream order run chunk by chunk as the gates arrive; the others are
            // gathered, then reordered. A stream that changed since the planning pass is
            // caught by the completion check; its extra windows are reordered meanwhile.
            let mut buf: Vec<Gate> = Vec::new();
            let (mut index, mut in_window) = (0usize, 0usize);
            let pass = circuit.for_each_chunk(&mut |mut chunk| -> Result<(), ProtocolError> {
                while !chunk.is_empty() {
                    let stream = match stream_order.get(index) {
                        Some(&(true, ands)) => {
                            if in_window == 0 {
                                refills.ensure(ch, &mut run, ands)?;
                            }
                            true
                        }
                        _ => false,
                    };
                    let take = (window - in_window).min(chunk.len());
                    if stream {
                        run.stream_gates(ch, &chunk[..take], progress)?;
                    } else {
                        buf.extend_from_slice(&chunk[..take]);
                    }
                    chunk = &chunk[take..];
                    in_window += take;
                    if in_window == window {
                        let plan = stream_order.get(index).copied();
                        run.finish_window(
                            ch,
                            &mut buf,
                            plan,
                            &mut scheduler,
                            &mut refills,
                            progress,
                        )?;
                        index += 1;
                        in_window = 0;
                    }
                }
                Ok(())
            });
            pass?;
            if in_window > 0 {
                let plan = stream_order.get(index).copied();
                run.finish_window(ch, &mut buf, plan, &mut scheduler, &mut refills, progress)?;
            }
        }
    }
    let circuit_done = Instant::now();

    // 3. Completeness before outputs.
    let mine = Done::of(
        circuit,
        Done {
            gates: run.gates,
            and_gates: run.ands,
            blocks_sent: run.bytes_sent,
            blocks_received: run.bytes_received,
            ..Done::default()
        },
    );
    completion::exchange(ch, me, &mine, Expected::gmw(circuit))?;

    // 4. Outputs: A's shares of B's outputs first, then B's shares of A's.
    let shares = &run.shares;
    let for_b = output_wires_seen_by(layout, visibility, Party::B);
    let for_a = output_wires_seen_by(layout, visibility, Party::A);
    let my_shares = |wires: &[u32]| -> Vec<bool> { wires.iter().map(|&w| shares.get(w)).collect() };
    let out_bits: Vec<bool> = match me {
        Party::A => {
            ch.send_frame(&pack_bits(&my_shares(&for_b)))?;
            ch.flush()?;
            let theirs = recv_bits(ch, for_a.len(), "the peer's output shares")?;
            my_shares(&for_a)
                .iter()
                .zip(&theirs)
                .map(|(x, y)| x ^ y)
                .collect()
        }
        Party::B => {
            let theirs = recv_bits(ch, for_b.len(), "the peer's output shares")?;
            ch.send_frame(&pack_bits(&my_shares(&for_a)))?;
            ch.flush()?;
            my_shares(&for_b)
                .iter()
                .zip(&theirs)
                .map(|(x, y)| x ^ y)
                .collect()
        }
    };
    let mut result = outcome(
        layout,
        visibility,
        me,
        out_bits,
        ch,
        counts0,
        start,
        input_done,
        circuit_done,
        circuit,
    );
    result.stats.gmw = Some(GmwStats {
        setup_seconds: setup_seconds + refills.seconds,
        online_seconds: online_start.elapsed().as_secs_f64(),
        rounds: run.rounds,
        triples: refills.triples_made,
        setup_bytes_sent: setup_counts.sent - setup_counts0.sent,
        setup_bytes_received: setup_counts.received - setup_counts0.received,
    });
    Ok(result)
}

/// The input phase: each party's input bits become shares masked by its seed's stream.
fn share_inputs(
    ch: &mut (impl Channel + ?Sized),
    layout: &pgc_circuit::Layout,
    owners: &[Party],
    me: Party,
    inputs: &[Vec<bool>],
    shares: &mut Shares,
) -> Result<(), ProtocolError> {
    let seed = Prg::from_os_entropy().random_block();
    ch.send_frame(&seed.to_bytes())?;
    ch.flush()?;
    let peer = ch.recv_frame(16).map_err(|e| match e {
        NetError::FrameTooLarge { .. } => {
            ProtocolError::Peer("the peer's input mask seed is not 16 bytes".into())
        }
        e => e.into(),
    })?;
    let peer: [u8; 16] = peer
        .try_into()
        .map_err(|_| ProtocolError::Peer("the peer's input mask seed is not 16 bytes".into()))?;
    let (a_wires, b_wires) = input_wires_by_owner(layout, owners);
    let (mine, theirs) = match me {
        Party::A => (a_wires, b_wires),
        Party::B => (b_wires, a_wires),
    };
    let mask = |seed: Block, n: usize| -> Vec<u8> {
        let mut bytes = vec![0u8; n.div_ceil(8)];
        Prg::from_seed(seed).fill_bytes(&mut bytes);
        bytes
    };
    let my_mask = mask(seed, mine.len());
    for (i, (&w, &x)) in mine.iter().zip(inputs.iter().flatten()).enumerate() {
        shares.set(w, x ^ (my_mask[i / 8] >> (i % 8) & 1 == 1));
    }
    let peer_mask = mask(Block::from_bytes(peer), theirs.len());
    for (i, &w) in theirs.iter().enumerate() {
        shares.set(w, peer_mask[i / 8] >> (i % 8) & 1 == 1);
    }
    Ok(())
}

/// Triples beyond the first pool, made when a window needs them (timed as setup).
struct Refills {
    generator: TripleGenerator,
    pool_max: usize,
    total_ands: u64,
    triples_made: u64,
    seconds: f64,
}

impl Refills {
    /// Makes sure `needed` triples are in the pool. Both parties reach each call with the
    /// same counts, so both make the same refill.
    fn ensure(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        run: &mut Rounds,
        needed: usize,
    ) -> Result<(), ProtocolError> {
        if run.pool.available() >= needed {
            return Ok(());
        }
        let t = Instant::now();
        let remaining = self.total_ands.saturating_sub(run.ands) as usize;
        let n = (needed - run.pool.available()).max(remaining.min(self.pool_max));
        self.generator
            .extend(ch, n, run.send_ahead, &mut run.pool)?;
        self.triples_made += n as u64;
        self.seconds += t.elapsed().as_secs_f64();
        Ok(())
    }
}

/// How one window runs: in stream order (already level-ordered: each run of AND gates a
/// round), or reordered by AND depth where that takes fewer rounds.
enum Plan {
    Stream {
        gates: Vec<Gate>,
        ands: usize,
    },
    Scheduled {
        gates: Vec<Gate>,
        schedule: Schedule,
    },
}

impl Plan {
    /// Runs `gates` in stream order where that takes no more rounds than reordering them
    /// (`counts`, from [`RoundCounter::count`]), else (or without counts) reorders them by
    /// AND depth.
    fn of(gates: Vec<Gate>, counts: Option<WindowCounts>, scheduler: &mut Scheduler) -> Plan {
        if let Some(counts) = counts.filter(WindowCounts::stream_order) {
            Plan::Stream {
                gates,
                ands: counts.ands,
            }
        } else {
            let schedule = scheduler.schedule(&gates);
            Plan::Scheduled { gates, schedule }
        }
    }

    fn and_gates(&self) -> usize {
        match self {
            Plan::Stream { ands, .. } => *ands,
            Plan::Scheduled { schedule, .. } => schedule.and_gates(),
        }
    }

    fn into_buffer(self) -> Vec<Gate> {
        match self {
            Plan::Stream { gates, .. } | Plan::Scheduled { gates, .. } => gates,
        }
    }
}

/// The online phase's state across windows.
struct Rounds {
    /// Stream order: per slot, the batch whose AND gate last wrote it.
    pending: Vec<u32>,
    batch_id: u32,
    batch: Vec<AndOp>,
    shares: Shares,
    pool: Triples,
    msg: Vec<u8>,
    peer: Vec<u8>,
    piece: Vec<u8>,
    send_ahead: usize,
    rounds: u64,
    gates: u64,
    ands: u64,
    bytes_sent: u64,
    bytes_received: u64,
}

impl Rounds {
    /// Evaluates one planned window (its triples are in the pool).
    fn run_plan(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        plan: &Plan,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        match plan {
            Plan::Stream { gates, .. } => {
                self.stream_gates(ch, gates, progress)?;
                self.flush(ch, progress)
            }
            Plan::Scheduled { schedule, .. } => self.window(ch, schedule, progress),
        }
    }

    /// Runs `gates` in stream order: linear gates at once, consecutive AND gates batched
    /// into one round until a gate needs the batch's outputs (the same cut
    /// [`RoundCounter`] counts). The last batch stays open for the next call, so chunk
    /// boundaries cost no round; [`flush`](Rounds::flush) closes it.
    fn stream_gates(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        gates: &[Gate],
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        for g in gates {
            if g.op == Op::And {
                let id = self.batch_id;
                if !self.batch.is_empty()
                    && (self.pending[g.a as usize] == id || self.pending[g.b as usize] == id)
                {
                    self.flush(ch, progress)?;
                }
                self.batch.push(AndOp {
                    a: g.a,
                    b: g.b,
                    out: g.out,
                });
                self.pending[g.out as usize] = self.batch_id;
            } else {
                if !self.batch.is_empty() {
                    self.flush(ch, progress)?;
                }
                self.shares.linear_gate(g.op, g.a, g.b, g.out);
            }
        }
        self.gates += gates.len() as u64;
        Ok(())
    }

    /// Ends a window of the chunk-by-chunk pass: a window in stream order closes its open
    /// batch; any other is reordered from `buf` and run. `plan` is the planning pass's
    /// (stream order, AND gates) for it, `None` beyond the windows it saw.
    fn finish_window(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        buf: &mut Vec<Gate>,
        plan: Option<(bool, usize)>,
        scheduler: &mut Scheduler,
        refills: &mut Refills,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        if let Some((true, _)) = plan {
            return self.flush(ch, progress);
        }
        let plan = Plan::of(std::mem::take(buf), None, scheduler);
        refills.ensure(ch, self, plan.and_gates())?;
        self.run_plan(ch, &plan, progress)?;
        *buf = plan.into_buffer();
        buf.clear();
        Ok(())
    }

    /// Runs the open batch of stream order (if any) as one round.
    fn flush(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        let result = self.round(ch, &batch, progress);
        self.batch = batch;
        self.batch.clear();
        self.new_batch();
        result
    }

    fn new_batch(&mut self) {
        if self.batch_id == u32::MAX {
            self.pending.fill(0);
            self.batch_id = 0;
        }
        self.batch_id += 1;
    }

    /// One AND round: open, exchange, close.
    fn round(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        ands: &[AndOp],
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        self.shares.open(ands, &mut self.pool, &mut self.msg);
        exchange_round(
            ch,
            &self.msg,
            &mut self.peer,
            &mut self.piece,
            self.send_ahead,
        )?;
        self.shares.close(ands, &self.peer);
        self.rounds += 1;
        self.ands += ands.len() as u64;
        self.bytes_sent += self.msg.len() as u64;
        self.bytes_received += self.peer.len() as u64;
        progress(self.ands);
        Ok(())
    }

    /// Evaluates one scheduled window.
    fn window(
        &mut self,
        ch: &mut (impl Channel + ?Sized),
        s: &Schedule,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), ProtocolError> {
        self.shares.begin_window(s);
        for level in 0..s.levels() {
            self.shares.linear(s.linear(level));
            let ands = s.ands(level);
            if !ands.is_empty() {
                self.round(ch, ands, progress)?;
            }
        }
        self.shares.end_window(s);
        self.gates += s.gates() as u64;
        Ok(())
    }
}

/// One round: sends `mine` and receives the peer's message of the same length into
/// `peer`, in pieces of [`ROUND_PIECE_BYTES`], never more than `send_ahead` bytes ahead of
/// what has arrived.
fn exchange_round(
    ch: &mut (impl Channel + ?Sized),
    mine: &[u8],
    peer: &mut Vec<u8>,
    piece: &mut Vec<u8>,
    send_ahead: usize,
) -> Result<(), ProtocolError> {
    let count = mine.len().div_ceil(ROUND_PIECE_BYTES);
    let piece_of =
        |k: usize| &mine[k * ROUND_PIECE_BYTES..((k + 1) * ROUND_PIECE_BYTES).min(mine.len())];
    peer.clear();
    let (mut sent, mut got) = (0usize, 0usize);
    while got < count {
        let mut pushed = false;
        while sent < count && (sent - got) * ROUND_PIECE_BYTES < send_ahead {
            ch.send_frame(piece_of(sent))?;
            sent += 1;
            pushed = true;
        }
        if pushed {
            ch.flush()?;
        }
        let expected = piece_of(got).len();
        ch.recv_frame_into(piece, expected).map_err(|e| match e {
            NetError::FrameTooLarge { len, .. } => ProtocolError::Peer(format!(
                "the peer's opened shares came in a piece of {len} bytes, {expected} expected \
                 (does it run the same circuit?)"
            )),
            e => e.into(),
        })?;
        if piece.len() != expected {
            return Err(ProtocolError::Peer(format!(
                "the peer's opened shares came in a piece of {} bytes, {expected} expected",
                piece.len()
            )));
        }
        peer.extend_from_slice(piece);
        got += 1;
    }
    Ok(())
}
