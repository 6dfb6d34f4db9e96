//! Yao's protocol across threads and, with inter-party parallelization, across both parties
//! (Buescher, Katzenbeisser, *Faster Secure Computation through Automatic Parallelization*,
//! USENIX Security 2015, §4.2–§4.4 and §5: per-thread channels, fine- and coarse-grained
//! parallelism, and IPP's *transferring roles*).
//!
//! After the handshake the parties agree on a [`ParallelMode`] and a thread count T, run the
//! input phase of [`crate::yao`] (A garbles every input), then open T more connections
//! ([`StreamOpener`]) so that each worker thread has a stream of garbled tables of its own
//! and no evaluator thread ever waits behind another thread's data.
//!
//! - `none`, `fgp`, `cgp`, `auto`: A garbles and B evaluates the whole circuit with
//!   [`pgc_garble::parallel`]: thread t garbles exactly what B's thread t evaluates, and
//!   stream t carries those tables in order. Where region instances run in parallel (`cgp`,
//!   `auto`), A's threads claim chunks of instances as they go (faster cores take more), and
//!   stream t names each chunk before its tables, so B's thread t evaluates the chunks A's
//!   thread t took; B refuses a chunk named twice, out of range or never (the engine's
//!   "Claimed instances"). The AND gates use the same tweaks whatever the thread count and
//!   whoever took which chunk, so every mode and count computes the same function with the
//!   same security as the sequential protocol; the headers tell B only how A's threads
//!   shared the work.
//! - `ipp`: sequential phases are garbled by A on one thread (on the main connection), and
//!   within each parallel region A garbles the even instances and B the odd ones, each party
//!   evaluating the other's, on 2T streams (T per direction): both parties' cores and both
//!   directions of the network work. Between A's labels (free-XOR offset Δ_A) and B's (Δ_B) values move by the
//!   *transferring roles* protocol with point-and-permute bits as blinding: a value v on a
//!   wire that A garbled is shared as v = d ⊕ p, where d is the lsb of A's zero-label and p
//!   the lsb of B's label; each bit alone is uniformly random. To move v into B's labels, B
//!   (OT sender with correlation Δ_B) draws x₀ and sets its zero-label to x₀ ⊕ p·Δ_B, while A
//!   (OT receiver with choice d) obtains x₀ ⊕ d·Δ_B, which is exactly the label of v. The
//!   way back is symmetric with A as sender. One correlated OT per boundary wire, and
//!   nothing else crosses: no intermediate value is revealed to either party.
//!
//! After the last garbled table (on every stream) and before any output-revealing message,
//! the parties exchange [completion](crate::completion) ("done") messages on the main
//! connection: gates and AND gates each party garbled or evaluated, the table blocks it sent
//! and received summed over all its streams (the engine checks each stream against its plan
//! already), and whether its gate source was complete. Both judge the same pair of messages;
//! on any mismatch both stop with [`ProtocolError::Incomplete`] and nothing about the
//! outputs is sent. The outputs are then revealed as in [`crate::yao`].
//!
//! Security: semi-honest, like [`crate::yao`]. Under `ipp` both parties garble, so neither
//! may deviate (the one-sided protection against a malicious evaluator that plain Yao with
//! malicious-secure OT would have does not hold).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use pgc_circuit::{
    GateSource, Layout, ParallelCircuit, Phase, Template, ValueFormat, Visibility, WireId,
    WithValueFormat,
};
use pgc_crypto::{Block, Prg, TccrHash};
use pgc_garble::parallel::{
    self as engine, EvalError, Mode as EngineMode, Plan, TableSink, TableSource,
};
use pgc_garble::{Evaluator, Garbler, random_delta};
use pgc_net::{
    Channel, ChannelSecurity, MemoryChannel, NetError, PeerChannel, RefusalNotes, SharedLink,
    TcpListenerHandle,
};
use pgc_ot::{IknpReceiver, IknpSender};

use crate::completion::{self, Done, Expected};
use crate::secret_probe::{self, Secret};
use crate::yao::{
    HelloTerms, Outcome, Party, ProtocolError, RunStats, TABLE_FRAME_BLOCKS, TableReader, begin,
    input_wires_by_owner, pack_bits, recv_bits, recv_blocks_exact, sees,
};

/// How the work is spread (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParallelMode {
    /// One thread, the sequential gate order.
    None,
    /// Fine-grained: wide AND levels split among threads.
    Fgp,
    /// Coarse-grained: region instances spread over threads.
    Cgp,
    /// Inter-party: region instances split between the parties, which swap roles.
    Ipp,
    /// CGP for regions and FGP in the sequential parts.
    Auto,
}

impl ParallelMode {
    pub fn name(self) -> &'static str {
        match self {
            ParallelMode::None => "none",
            ParallelMode::Fgp => "fgp",
            ParallelMode::Cgp => "cgp",
            ParallelMode::Ipp => "ipp",
            ParallelMode::Auto => "auto",
        }
    }

    fn to_byte(self) -> u8 {
        match self {
            ParallelMode::None => 0,
            ParallelMode::Fgp => 1,
            ParallelMode::Cgp => 2,
            ParallelMode::Ipp => 3,
            ParallelMode::Auto => 4,
        }
    }

    fn from_byte(b: u8) -> Option<ParallelMode> {
        Some(match b {
            0 => ParallelMode::None,
            1 => ParallelMode::Fgp,
            2 => ParallelMode::Cgp,
            3 => ParallelMode::Ipp,
            4 => ParallelMode::Auto,
            _ => return None,
        })
    }

    fn engine_mode(self) -> EngineMode {
        match self {
            ParallelMode::None => EngineMode::None,
            ParallelMode::Fgp => EngineMode::Fgp,
            ParallelMode::Cgp | ParallelMode::Ipp => EngineMode::Cgp,
            ParallelMode::Auto => EngineMode::Auto,
        }
    }
}

/// Mode, worker threads and the FGP threshold τ (ANDs per thread a level needs before it
/// is split).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParallelConfig {
    pub mode: ParallelMode,
    /// Worker threads (the parties use the smaller of their two counts). Under `ipp`, each
    /// party runs this many garbling and this many evaluating threads.
    pub threads: usize,
    pub tau: usize,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        ParallelConfig {
            mode: ParallelMode::Auto,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tau: engine::DEFAULT_TAU,
        }
    }
}

/// The most worker threads a party may ask for (each gets one or two connections).
pub const MAX_THREADS: usize = 256;

/// Opens the extra connections to the peer. Both parties call [`StreamOpener::open`] with
/// the same count and token (the token, drawn by A, lets the accepting side tell the
/// peer's connections from anyone else's).
pub trait StreamOpener: Send {
    fn open(&mut self, n: usize, token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError>;
}

/// The party that accepted the main connection accepts the streams on the same listener,
/// under the same security as the main channel (every stream is authenticated alike).
pub struct TcpAcceptStreams<'l> {
    pub listener: &'l TcpListenerHandle,
    pub timeout: Duration,
    /// Each stream's sends are shaped by this party's link, if any.
    pub link: Option<SharedLink>,
    pub security: ChannelSecurity,
    /// Where connections turned away are reported.
    pub notes: RefusalNotes,
}

/// The party that connected opens the streams to the same address.
pub struct TcpConnectStreams {
    pub addr: String,
    pub timeout: Duration,
    pub link: Option<SharedLink>,
    pub security: ChannelSecurity,
}

fn finish_streams(
    streams: Vec<PeerChannel>,
    timeout: Duration,
    link: &Option<SharedLink>,
) -> Result<Vec<Box<dyn Channel>>, NetError> {
    streams
        .into_iter()
        .map(|mut s| -> Result<Box<dyn Channel>, NetError> {
            s.set_timeout(Some(timeout))?;
            s.shaped(link)
        })
        .collect()
}

impl StreamOpener for TcpAcceptStreams<'_> {
    fn open(&mut self, n: usize, token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError> {
        let streams = pgc_net::connect::accept_peer_streams(
            self.listener,
            &self.security,
            n,
            token,
            self.timeout,
            &self.notes,
        )?;
        finish_streams(streams, self.timeout, &self.link)
    }
}

impl StreamOpener for TcpConnectStreams {
    fn open(&mut self, n: usize, token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError> {
        let streams = pgc_net::connect::connect_peer_streams(
            &self.addr,
            &self.security,
            n,
            token,
            self.timeout,
        )?;
        finish_streams(streams, self.timeout, &self.link)
    }
}

/// In-memory streams for tests: one side makes the pairs and hands the other side its ends.
pub struct MemoryStreams {
    maker: bool,
    to_peer: mpsc::Sender<Vec<MemoryChannel>>,
    from_peer: Arc<Mutex<mpsc::Receiver<Vec<MemoryChannel>>>>,
    timeout: Duration,
}

impl MemoryStreams {
    /// Openers for the two parties (the first makes the pairs).
    pub fn pair(timeout: Duration) -> (MemoryStreams, MemoryStreams) {
        let (tx1, rx1) = mpsc::channel();
        let (tx2, rx2) = mpsc::channel();
        (
            MemoryStreams {
                maker: true,
                to_peer: tx1,
                from_peer: Arc::new(Mutex::new(rx2)),
                timeout,
            },
            MemoryStreams {
                maker: false,
                to_peer: tx2,
                from_peer: Arc::new(Mutex::new(rx1)),
                timeout,
            },
        )
    }
}

impl StreamOpener for MemoryStreams {
    fn open(&mut self, n: usize, _token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError> {
        let mine = if self.maker {
            let (mut mine, mut theirs) = pgc_net::memory_streams(n);
            for c in mine.iter_mut().chain(theirs.iter_mut()) {
                c.set_timeout(Some(self.timeout));
            }
            self.to_peer.send(theirs).map_err(|_| NetError::Closed)?;
            mine
        } else {
            let rx = self.from_peer.lock().map_err(|_| NetError::Closed)?;
            rx.recv_timeout(self.timeout)
                .map_err(|_| NetError::Timeout(self.timeout))?
        };
        Ok(mine
            .into_iter()
            .map(|c| Box::new(c) as Box<dyn Channel>)
            .collect())
    }
}

// ---------------------------------------------------------------------------------------
// Table streams over channels

/// What this party garbled, evaluated, sent and received, counted as it goes (by every
/// worker thread), for its completion message.
#[derive(Default)]
pub(crate) struct Work {
    pub gates: AtomicU64,
    pub and_gates: AtomicU64,
    pub blocks_sent: AtomicU64,
    pub blocks_received: AtomicU64,
}

impl Work {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn done(&self) -> Done {
        Done {
            failure: None,
            gates: self.gates.load(Ordering::Relaxed),
            and_gates: self.and_gates.load(Ordering::Relaxed),
            blocks_sent: self.blocks_sent.load(Ordering::Relaxed),
            blocks_received: self.blocks_received.load(Ordering::Relaxed),
        }
    }
}

/// Garbled tables of one worker thread to its stream, in frames.
struct ChannelSink<'c> {
    ch: &'c mut dyn Channel,
    progress: &'c AtomicU64,
    work: &'c Work,
}

impl TableSink for ChannelSink<'_> {
    type Error = NetError;
    fn put(&mut self, tables: &[Block]) -> Result<(), NetError> {
        for frame in tables.chunks(TABLE_FRAME_BLOCKS) {
            self.ch.send_frame(Block::slice_as_bytes(frame))?;
        }
        self.progress
            .fetch_add(tables.len() as u64 / 2, Ordering::Relaxed);
        Work::add(&self.work.blocks_sent, tables.len() as u64);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.ch.flush()
    }
}

/// Garbled tables of one worker thread from its stream.
struct ChannelSource<'c> {
    ch: &'c mut dyn Channel,
    reader: TableReader,
    progress: &'c AtomicU64,
}

impl TableSource for ChannelSource<'_> {
    type Error = ProtocolError;
    fn take(&mut self, n_blocks: usize) -> Result<&[Block], ProtocolError> {
        self.progress
            .fetch_add(n_blocks as u64 / 2, Ordering::Relaxed);
        self.reader.take(&mut *self.ch, n_blocks)
    }
}

fn engine_eval_error(e: EvalError<ProtocolError>) -> ProtocolError {
    match e {
        EvalError::Source { source, .. } => source,
        other => ProtocolError::Peer(other.to_string()),
    }
}

// ---------------------------------------------------------------------------------------
// The run

/// Runs party `me` of the parallel protocol on the main channel `ch`, opening the worker
/// streams with `opener`. `inputs` are this party's input values in circuit order;
/// `progress` counts AND gates garbled or evaluated by this party (updated as they go).
#[allow(clippy::too_many_arguments)]
pub fn run_parallel(
    me: Party,
    ch: &mut dyn Channel,
    opener: &mut dyn StreamOpener,
    circuit: &ParallelCircuit,
    owners: &[Party],
    visibility: &[Visibility],
    inputs: &[Vec<bool>],
    config: &ParallelConfig,
    progress: &AtomicU64,
) -> Result<Outcome, ProtocolError> {
    run_parallel_with(
        me,
        ch,
        opener,
        circuit,
        owners,
        visibility,
        inputs,
        config,
        progress,
        &ParallelExtras::default(),
    )
}

/// What a caller may add to [`run_parallel`] (see [`run_parallel_with`]).
pub struct ParallelExtras<'a> {
    /// How this party reads and prints values; compared with the peer's at the handshake
    /// (see [`GateSource::value_format`]).
    pub value_format: ValueFormat,
    /// Says, after the last garbled table, whether whatever this party's circuit came from
    /// was read in full and unchanged (see [`GateSource::check_complete`]): an `Err` goes to
    /// the peer in this party's completion message and both parties stop before any output
    /// is revealed. A circuit held in memory is always complete.
    pub check_complete: &'a (dyn Fn() -> Result<(), String> + Sync),
}

impl Default for ParallelExtras<'_> {
    fn default() -> Self {
        ParallelExtras {
            value_format: ValueFormat::Bits,
            check_complete: &|| Ok(()),
        }
    }
}

/// [`run_parallel`] with a stated value format and a completeness check.
#[allow(clippy::too_many_arguments)]
pub fn run_parallel_with(
    me: Party,
    ch: &mut dyn Channel,
    opener: &mut dyn StreamOpener,
    circuit: &ParallelCircuit,
    owners: &[Party],
    visibility: &[Visibility],
    inputs: &[Vec<bool>],
    config: &ParallelConfig,
    progress: &AtomicU64,
    extras: &ParallelExtras<'_>,
) -> Result<Outcome, ProtocolError> {
    run_parallel_driven(
        me, ch, opener, circuit, owners, visibility, inputs, config, progress, extras, None,
    )
}

/// What a [`CircuitDriver`] gets once the inputs are labelled and this party's worker
/// streams are open.
pub(crate) struct CircuitStart<'a> {
    pub me: Party,
    pub ch: &'a mut dyn Channel,
    pub streams: &'a mut [Box<dyn Channel>],
    pub circuit: &'a ParallelCircuit,
    /// Worker threads (streams) agreed with the peer.
    pub threads: usize,
    /// A's stream token (both parties know it).
    pub token: [u8; 16],
    /// A: Δ; B: none.
    pub delta: Option<Block>,
    /// A's garbling hash key (both parties know it).
    pub hash_key: Block,
    /// Labels of the input wires: A's zero-labels, B's active labels.
    pub input_labels: &'a [Block],
    pub progress: &'a AtomicU64,
    pub work: &'a Work,
}

/// Garbles or evaluates the whole circuit in place of the single-machine engine (the
/// cluster coordinator, [`crate::cluster`]); returns this party's output-wire labels and
/// the bytes its helpers sent and received beyond `ch` and `streams`.
pub(crate) trait CircuitDriver {
    /// Processes of this party that run the circuit phase (stated in the hello).
    fn ranks(&self) -> usize;
    fn run(
        &mut self,
        start: CircuitStart<'_>,
    ) -> Result<(Vec<Block>, pgc_net::ByteCounts), ProtocolError>;
}

/// [`run_parallel_with`], the circuit phase optionally run by `driver`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_parallel_driven(
    me: Party,
    ch: &mut dyn Channel,
    opener: &mut dyn StreamOpener,
    circuit: &ParallelCircuit,
    owners: &[Party],
    visibility: &[Visibility],
    inputs: &[Vec<bool>],
    config: &ParallelConfig,
    progress: &AtomicU64,
    extras: &ParallelExtras<'_>,
    mut driver: Option<&mut dyn CircuitDriver>,
) -> Result<Outcome, ProtocolError> {
    if driver.is_some() && config.mode == ParallelMode::Ipp {
        return Err(ProtocolError::Input(
            "a cluster run spreads region instances over ranks (CGP); --parallel ipp is not \
             supported with --cluster"
                .into(),
        ));
    }
    if config.threads == 0 || config.threads > MAX_THREADS {
        return Err(ProtocolError::Input(format!(
            "--threads must be between 1 and {MAX_THREADS}, not {}",
            config.threads
        )));
    }
    let described = WithValueFormat::new(circuit, extras.value_format.clone());
    let terms = HelloTerms {
        cluster_ranks: driver.as_ref().map_or(0, |d| d.ranks()),
        ..HelloTerms::default()
    };
    let (start, counts0) = begin(&mut *ch, &described, owners, visibility, me, inputs, terms)?;
    let (threads, tau) = agree(&mut *ch, me, config)?;
    let layout = &circuit.layout;
    let mut prg = Prg::from_os_entropy();
    let ipp = config.mode == ParallelMode::Ipp;

    // Input phase (A's labels; under IPP both OT directions are set up). The base OTs'
    // group operations run on the agreed threads (the same messages for any count).
    let mut keys = Keys::default();
    let mut world = match me {
        Party::A => {
            let delta = random_delta(&mut prg);
            secret_probe::note(Secret::Delta, &[delta]);
            let hash_key = prg.random_block();
            ch.send_frame(Block::slice_as_bytes(&[hash_key]))?;
            let (a_wires, b_wires) = input_wires_by_owner(layout, owners);
            let mut zero = vec![Block::ZERO; layout.num_input_wires() as usize];
            let mut active = Vec::with_capacity(a_wires.len());
            let a_bits = inputs.iter().flatten();
            for (&w, &bit) in a_wires.iter().zip(a_bits) {
                let z = prg.random_block();
                zero[w as usize] = z;
                active.push(z ^ delta.select(bit));
            }
            ch.send_frame(Block::slice_as_bytes(&active))?;
            ch.flush()?;
            let mut ot = None;
            if !b_wires.is_empty() || ipp {
                let mut sender = IknpSender::setup_threads(&mut *ch, delta, &mut prg, threads)?;
                let x0 = sender.send_correlated(&mut *ch, b_wires.len())?;
                for (&w, &z) in b_wires.iter().zip(&x0) {
                    zero[w as usize] = z;
                }
                ot = Some(sender);
            }
            keys.own = Some((delta, hash_key));
            keys.peer_hash = None;
            World::A {
                zero,
                ot_sender: ot,
                ot_receiver: None,
            }
        }
        Party::B => {
            let mut hash_key = [Block::ZERO];
            recv_blocks_exact(&mut *ch, &mut hash_key, "the garbling hash key")?;
            keys.peer_hash = Some(hash_key[0]);
            let (a_wires, b_wires) = input_wires_by_owner(layout, owners);
            let mut labels = vec![Block::ZERO; layout.num_input_wires() as usize];
            let mut active = vec![Block::ZERO; a_wires.len()];
            recv_blocks_exact(&mut *ch, &mut active, "the garbler's input labels")?;
            for (&w, &l) in a_wires.iter().zip(&active) {
                labels[w as usize] = l;
            }
            let mut ot = None;
            if !b_wires.is_empty() || ipp {
                let choices: Vec<bool> = inputs.iter().flatten().copied().collect();
                let mut receiver = IknpReceiver::setup_threads(&mut *ch, &mut prg, threads)?;
                let got = receiver.receive_correlated(&mut *ch, &choices)?;
                for (&w, &l) in b_wires.iter().zip(&got) {
                    labels[w as usize] = l;
                }
                ot = Some(receiver);
            }
            World::B {
                labels,
                ot_receiver: ot,
                ot_sender: None,
            }
        }
    };
    if ipp {
        setup_reverse(&mut *ch, me, &mut world, &mut keys, &mut prg, threads)?;
    }
    ch.flush()?;
    let input_done = Instant::now();

    // Worker streams.
    let token = match me {
        Party::A => {
            let mut t = [0u8; 16];
            prg.fill_bytes(&mut t);
            ch.send_frame(&t)?;
            ch.flush()?;
            t
        }
        Party::B => {
            let t = ch.recv_frame(16)?;
            t.try_into()
                .map_err(|_| ProtocolError::Peer("a stream token that is not 16 bytes".into()))?
        }
    };
    let n_streams = if ipp { 2 * threads } else { threads };
    let mut streams = opener.open(n_streams, token)?;
    let streams_counts0: Vec<pgc_net::ByteCounts> = streams.iter().map(|s| s.counts()).collect();

    let work = Work::default();
    let mut helpers = pgc_net::ByteCounts::default();
    let output_labels = if let Some(driver) = driver.as_mut() {
        let (delta, hash_key, input_labels) = match &world {
            World::A { zero, .. } => {
                let (delta, hash_key) = keys.own.expect("A has its keys");
                (Some(delta), hash_key, zero)
            }
            World::B { labels, .. } => (None, keys.peer_hash.expect("B knows A's key"), labels),
        };
        let (labels, extra) = driver.run(CircuitStart {
            me,
            ch: &mut *ch,
            streams: &mut streams,
            circuit,
            threads,
            token,
            delta,
            hash_key,
            input_labels,
            progress,
            work: &work,
        })?;
        helpers = extra;
        labels
    } else if ipp {
        run_ipp(
            ch,
            &mut streams,
            circuit,
            threads,
            &mut world,
            &keys,
            progress,
            &work,
        )?
    } else {
        // Region instances are claimed by A's threads as they go, and B's threads follow
        // the chunk headers on their streams (`engine` module doc, "Claimed instances").
        let plan = Plan::claimed(circuit, threads, config.mode.engine_mode(), tau);
        match (&world, me) {
            (World::A { zero, .. }, Party::A) => {
                let (delta, hash_key) = keys.own.expect("A has its keys");
                let mut sinks: Vec<ChannelSink<'_>> = streams
                    .iter_mut()
                    .map(|s| ChannelSink {
                        ch: &mut **s,
                        progress,
                        work: &work,
                    })
                    .collect();
                let out = engine::garble(&plan, circuit, delta, hash_key, zero, &mut sinks)?;
                for s in &mut sinks {
                    s.flush()?;
                }
                // The chunk headers went with the tables; the completion counts tables only.
                work.blocks_sent
                    .fetch_sub(plan.header_blocks(), Ordering::Relaxed);
                // The engine garbles every gate of the plan or fails.
                Work::add(&work.gates, circuit.gate_count());
                Work::add(&work.and_gates, out.and_gates);
                out.output_zero_labels
            }
            (World::B { labels, .. }, Party::B) => {
                let hash_key = keys.peer_hash.expect("B knows A's key");
                let mut sources: Vec<ChannelSource<'_>> = streams
                    .iter_mut()
                    .map(|s| ChannelSource {
                        ch: &mut **s,
                        reader: TableReader::default(),
                        progress,
                    })
                    .collect();
                let out = engine::evaluate(&plan, circuit, hash_key, labels, &mut sources)
                    .map_err(engine_eval_error)?;
                if sources.iter().any(|s| s.reader.remaining() != 0) {
                    return Err(ProtocolError::Peer(
                        "the garbler sent more garbled tables than the circuit has AND gates"
                            .into(),
                    ));
                }
                // The engine evaluates every gate of the plan or fails, taking 2 blocks
                // per AND gate and, in claimed steps, the plan's header blocks.
                let blocks: u64 = sources
                    .iter()
                    .map(|s| s.reader.consumed())
                    .sum::<u64>()
                    .saturating_sub(plan.header_blocks());
                Work::add(&work.gates, circuit.gate_count());
                Work::add(&work.and_gates, blocks / 2);
                Work::add(&work.blocks_received, blocks);
                out
            }
            _ => unreachable!("the world matches the party"),
        }
    };
    let circuit_done = Instant::now();

    // Completeness before outputs.
    let mine = Done {
        failure: circuit
            .check_complete()
            .and_then(|()| (extras.check_complete)())
            .err(),
        ..work.done()
    };
    completion::exchange(&mut *ch, me, &mine, Expected::of(circuit, ipp))?;

    // Outputs, as in the sequential protocol (labels of A's world on both sides).
    let out_bits = reveal_outputs(&mut *ch, me, layout, visibility, &output_labels)?;
    let counts = ch.counts();
    let (mut sent, mut received) = (
        counts.sent - counts0.sent + helpers.sent,
        counts.received - counts0.received + helpers.received,
    );
    for (s, c0) in streams.iter().zip(&streams_counts0) {
        let c = s.counts();
        sent += c.sent - c0.sent;
        received += c.received - c0.received;
    }
    drop(streams);
    let mut outputs = Vec::with_capacity(layout.output_widths.len());
    let mut bits = out_bits.into_iter();
    for (&w, &v) in layout.output_widths.iter().zip(visibility) {
        outputs.push(sees(v, me).then(|| bits.by_ref().take(w as usize).collect()));
    }
    Ok(Outcome {
        outputs,
        stats: RunStats {
            gates: circuit.gate_count(),
            and_gates: circuit.and_count(),
            seconds: start.elapsed().as_secs_f64(),
            input_seconds: (input_done - start).as_secs_f64(),
            circuit_seconds: (circuit_done - input_done).as_secs_f64(),
            bytes_sent: sent,
            bytes_received: received,
            gmw: None,
        },
    })
}

/// The parties' keys: this party's Δ and hash key if it garbles, the peer's hash key if it
/// evaluates the peer's garbling.
#[derive(Default)]
struct Keys {
    own: Option<(Block, Block)>,
    peer_hash: Option<Block>,
}

/// Each party's labels of the global wires, in A's world (Δ_A), and its OT endpoints.
enum World {
    A {
        /// Zero-labels of the global wires (A garbles them).
        zero: Vec<Block>,
        /// A → B correlated OT with correlation Δ_A.
        ot_sender: Option<IknpSender>,
        /// B → A correlated OT (IPP only).
        ot_receiver: Option<IknpReceiver>,
    },
    B {
        /// Active labels of the global wires.
        labels: Vec<Block>,
        ot_receiver: Option<IknpReceiver>,
        /// B → A correlated OT with correlation Δ_B (IPP only).
        ot_sender: Option<IknpSender>,
    },
}

/// Mode and thread count: the modes must match; the smaller thread count and A's τ win.
fn agree(
    ch: &mut dyn Channel,
    me: Party,
    config: &ParallelConfig,
) -> Result<(usize, usize), ProtocolError> {
    let mut msg = vec![config.mode.to_byte()];
    msg.extend_from_slice(&(config.threads as u32).to_le_bytes());
    msg.extend_from_slice(&(config.tau as u32).to_le_bytes());
    ch.send_frame(&msg)?;
    ch.flush()?;
    let peer = ch.recv_frame(9)?;
    if peer.len() != 9 {
        return Err(ProtocolError::Peer(
            "a malformed parallel-mode message".into(),
        ));
    }
    let mode = ParallelMode::from_byte(peer[0])
        .ok_or_else(|| ProtocolError::Peer(format!("unknown parallel mode {}", peer[0])))?;
    if mode != config.mode {
        return Err(ProtocolError::Handshake(format!(
            "this party runs --parallel {} but the peer runs --parallel {}; both must use the same mode",
            config.mode.name(),
            mode.name()
        )));
    }
    let threads = u32::from_le_bytes(peer[1..5].try_into().expect("4 bytes")) as usize;
    if threads == 0 || threads > MAX_THREADS {
        return Err(ProtocolError::Peer(format!(
            "the peer asks for {threads} threads (1 ..= {MAX_THREADS})"
        )));
    }
    let tau_peer = u32::from_le_bytes(peer[5..9].try_into().expect("4 bytes")) as usize;
    let tau = if me == Party::A { config.tau } else { tau_peer };
    Ok((threads.min(config.threads), tau.max(1)))
}

/// IPP: B garbles too, so it draws a Δ_B and a hash key, and the B → A correlated OT is
/// set up (B the sender).
fn setup_reverse(
    ch: &mut dyn Channel,
    me: Party,
    world: &mut World,
    keys: &mut Keys,
    prg: &mut Prg,
    threads: usize,
) -> Result<(), ProtocolError> {
    match (me, world) {
        (Party::A, World::A { ot_receiver, .. }) => {
            let mut key = [Block::ZERO];
            recv_blocks_exact(&mut *ch, &mut key, "the peer's garbling hash key")?;
            keys.peer_hash = Some(key[0]);
            *ot_receiver = Some(IknpReceiver::setup_threads(&mut *ch, prg, threads)?);
        }
        (Party::B, World::B { ot_sender, .. }) => {
            let delta = random_delta(prg);
            secret_probe::note(Secret::Delta, &[delta]);
            let hash_key = prg.random_block();
            ch.send_frame(Block::slice_as_bytes(&[hash_key]))?;
            ch.flush()?;
            keys.own = Some((delta, hash_key));
            *ot_sender = Some(IknpSender::setup_threads(&mut *ch, delta, prg, threads)?);
        }
        _ => unreachable!("the world matches the party"),
    }
    Ok(())
}

/// Outputs: A sends the decoding bits of what B may see, B returns the permute bits of
/// what A may see; `labels` are this party's labels of the output wires (A: zero-labels).
fn reveal_outputs(
    ch: &mut dyn Channel,
    me: Party,
    layout: &Layout,
    visibility: &[Visibility],
    labels: &[Block],
) -> Result<Vec<bool>, ProtocolError> {
    let positions = |party: Party| -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = 0usize;
        for (&w, &v) in layout.output_widths.iter().zip(visibility) {
            if sees(v, party) {
                out.extend(at..at + w as usize);
            }
            at += w as usize;
        }
        out
    };
    let for_b = positions(Party::B);
    let for_a = positions(Party::A);
    match me {
        Party::A => {
            let bits: Vec<bool> = for_b.iter().map(|&i| labels[i].lsb()).collect();
            ch.send_frame(&pack_bits(&bits))?;
            ch.flush()?;
            let permute = recv_bits(&mut *ch, for_a.len(), "output permute bits")?;
            Ok(permute
                .iter()
                .zip(&for_a)
                .map(|(&p, &i)| p ^ labels[i].lsb())
                .collect())
        }
        Party::B => {
            let decoding = recv_bits(&mut *ch, for_b.len(), "output decoding bits")?;
            let out = for_b
                .iter()
                .zip(&decoding)
                .map(|(&i, &d)| labels[i].lsb() ^ d)
                .collect();
            let permute: Vec<bool> = for_a.iter().map(|&i| labels[i].lsb()).collect();
            ch.send_frame(&pack_bits(&permute))?;
            ch.flush()?;
            Ok(out)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Inter-party parallelization

/// Runs every phase under IPP; returns this party's labels of the output wires (A's world:
/// A's zero-labels, B's active labels).
#[allow(clippy::too_many_arguments)]
fn run_ipp(
    ch: &mut dyn Channel,
    streams: &mut [Box<dyn Channel>],
    circuit: &ParallelCircuit,
    threads: usize,
    world: &mut World,
    keys: &Keys,
    progress: &AtomicU64,
    work: &Work,
) -> Result<Vec<Block>, ProtocolError> {
    let n = circuit.layout.num_wires as usize;
    let n_in = circuit.layout.num_input_wires() as usize;
    let (own_delta, own_hash) = keys.own.expect("both parties garble under IPP");
    let own_hash_fn = TccrHash::new(own_hash);
    let peer_hash_fn = TccrHash::new(keys.peer_hash.expect("both parties evaluate under IPP"));
    // Streams 0..T carry A's tables to B, T..2T B's to A.
    let (a_to_b, b_to_a) = streams.split_at_mut(threads);
    let mut and_base = 0u64;
    match world {
        World::A {
            zero,
            ot_sender,
            ot_receiver,
        } => {
            // A's zero-labels of every global wire live in one garbler.
            let mut garbler = Garbler::new(n, own_delta, own_hash);
            for (w, &z) in zero.iter().enumerate().take(n_in) {
                garbler.set_zero_label(w as WireId, z);
            }
            let mut tables = Vec::new();
            for phase in &circuit.phases {
                match phase {
                    Phase::Sequential(gates) => {
                        // A garbles on the main channel, in frames.
                        garbler.set_and_index(and_base);
                        garbler.garble(gates, &mut tables);
                        for frame in tables.chunks(TABLE_FRAME_BLOCKS) {
                            ch.send_frame(Block::slice_as_bytes(frame))?;
                        }
                        progress.fetch_add(tables.len() as u64 / 2, Ordering::Relaxed);
                        Work::add(&work.gates, gates.len() as u64);
                        Work::add(&work.and_gates, count_ands(gates));
                        Work::add(&work.blocks_sent, tables.len() as u64);
                        tables.clear();
                        and_base += count_ands(gates);
                    }
                    Phase::Region(region) => {
                        let (mine, theirs) = split_instances(region.instances.len());
                        let bases = instance_bases(circuit, region, and_base);
                        // Transfer in: B's labels for the inputs of its instances.
                        let wires_in = boundary(region, &theirs, |i| &i.inputs);
                        let choices: Vec<bool> = wires_in
                            .iter()
                            .map(|&w| garbler.zero_label(w).lsb())
                            .collect();
                        ch.flush()?;
                        let receiver = ot_receiver.as_mut().expect("set up for IPP");
                        let labels_in = receiver.receive_correlated(&mut *ch, &choices)?;
                        ch.flush()?;
                        let in_map = WireMap::new(&wires_in, labels_in);
                        let garbler_ref = &garbler;
                        let (garbled, evaluated) = run_region_workers(
                            circuit,
                            region,
                            &mine,
                            &theirs,
                            &bases,
                            own_delta,
                            &own_hash_fn,
                            &peer_hash_fn,
                            &|w| garbler_ref.zero_label(w),
                            &|w| in_map.get(w),
                            a_to_b,
                            b_to_a,
                            progress,
                            work,
                        )?;
                        for (inst, labels) in garbled {
                            for (&w, &l) in region.instances[inst].outputs.iter().zip(&labels) {
                                garbler.set_zero_label(w, l);
                            }
                        }
                        // Transfer out: B's instances' outputs into A's labels.
                        let (out_wires, out_labels) = flatten_outputs(region, evaluated);
                        let sender = ot_sender.as_mut().expect("set up for IPP");
                        let x0 = sender.send_correlated(&mut *ch, out_wires.len())?;
                        for ((&w, &l), &x) in out_wires.iter().zip(&out_labels).zip(&x0) {
                            garbler.set_zero_label(w, x ^ own_delta.select(l.lsb()));
                        }
                        and_base += bases.total;
                    }
                }
            }
            ch.flush()?;
            Ok(circuit
                .layout
                .output_wires
                .iter()
                .map(|&w| garbler.zero_label(w))
                .collect())
        }
        World::B {
            labels,
            ot_receiver,
            ot_sender,
        } => {
            let peer_key = keys.peer_hash.expect("B evaluates A's garbling");
            let mut evaluator = Evaluator::new(n, peer_key);
            for (w, &l) in labels.iter().enumerate().take(n_in) {
                evaluator.set_label(w as WireId, l);
            }
            let mut reader = TableReader::default();
            for phase in &circuit.phases {
                match phase {
                    Phase::Sequential(gates) => {
                        let ands = count_ands(gates) as usize;
                        let tables = reader.take(&mut *ch, 2 * ands)?;
                        evaluator.set_and_index(and_base);
                        evaluator.evaluate(gates, tables)?;
                        progress.fetch_add(ands as u64, Ordering::Relaxed);
                        Work::add(&work.gates, gates.len() as u64);
                        Work::add(&work.and_gates, ands as u64);
                        Work::add(&work.blocks_received, 2 * ands as u64);
                        and_base += ands as u64;
                    }
                    Phase::Region(region) => {
                        // B garbles the odd instances ("mine" from A's point of view is
                        // A's; B's are the others).
                        let (a_insts, b_insts) = split_instances(region.instances.len());
                        let bases = instance_bases(circuit, region, and_base);
                        let wires_in = boundary(region, &b_insts, |i| &i.inputs);
                        let sender = ot_sender.as_mut().expect("set up for IPP");
                        let x0 = sender.send_correlated(&mut *ch, wires_in.len())?;
                        let zero_in: Vec<Block> = wires_in
                            .iter()
                            .zip(&x0)
                            .map(|(&w, &x)| x ^ own_delta.select(evaluator.label(w).lsb()))
                            .collect();
                        let in_map = WireMap::new(&wires_in, zero_in);
                        let evaluator_ref = &evaluator;
                        let (garbled, evaluated) = run_region_workers(
                            circuit,
                            region,
                            &b_insts,
                            &a_insts,
                            &bases,
                            own_delta,
                            &own_hash_fn,
                            &peer_hash_fn,
                            &|w| in_map.get(w),
                            &|w| evaluator_ref.label(w),
                            b_to_a,
                            a_to_b,
                            progress,
                            work,
                        )?;
                        for (inst, ls) in evaluated {
                            for (&w, &l) in region.instances[inst].outputs.iter().zip(&ls) {
                                evaluator.set_label(w, l);
                            }
                        }
                        let (out_wires, out_zero) = flatten_outputs(region, garbled);
                        let choices: Vec<bool> = out_zero.iter().map(|z| z.lsb()).collect();
                        let receiver = ot_receiver.as_mut().expect("set up for IPP");
                        let got = receiver.receive_correlated(&mut *ch, &choices)?;
                        ch.flush()?;
                        for (&w, &l) in out_wires.iter().zip(&got) {
                            evaluator.set_label(w, l);
                        }
                        and_base += bases.total;
                    }
                }
            }
            if reader.remaining() != 0 {
                return Err(ProtocolError::Peer(
                    "the garbler sent more garbled tables than the circuit has AND gates".into(),
                ));
            }
            Ok(circuit
                .layout
                .output_wires
                .iter()
                .map(|&w| evaluator.label(w))
                .collect())
        }
    }
}

pub(crate) fn count_ands(gates: &[pgc_circuit::Gate]) -> u64 {
    gates
        .iter()
        .filter(|g| g.op == pgc_circuit::Op::And)
        .count() as u64
}

/// A's instances (even positions) and B's (odd positions) of a region.
fn split_instances(n: usize) -> (Vec<usize>, Vec<usize>) {
    ((0..n).step_by(2).collect(), (1..n).step_by(2).collect())
}

/// The flat AND index of each instance's first AND, and the region's total.
struct Bases {
    of: Vec<u64>,
    total: u64,
}

fn instance_bases(circuit: &ParallelCircuit, region: &pgc_circuit::Region, start: u64) -> Bases {
    let mut of = Vec::with_capacity(region.instances.len());
    let mut at = start;
    for inst in &region.instances {
        of.push(at);
        at += circuit.templates[inst.template as usize].and_count();
    }
    Bases {
        of,
        total: at - start,
    }
}

/// The distinct global wires `side` names over the given instances, sorted.
fn boundary(
    region: &pgc_circuit::Region,
    insts: &[usize],
    side: impl Fn(&pgc_circuit::Instance) -> &Vec<WireId>,
) -> Vec<WireId> {
    let mut w: Vec<WireId> = insts
        .iter()
        .flat_map(|&i| side(&region.instances[i]).iter().copied())
        .collect();
    w.sort_unstable();
    w.dedup();
    w
}

/// Labels of a sorted set of wires.
struct WireMap {
    wires: Vec<WireId>,
    labels: Vec<Block>,
}

impl WireMap {
    fn new(wires: &[WireId], labels: Vec<Block>) -> WireMap {
        WireMap {
            wires: wires.to_vec(),
            labels,
        }
    }
    fn get(&self, w: WireId) -> Block {
        let i = self
            .wires
            .binary_search(&w)
            .expect("every boundary wire was transferred");
        self.labels[i]
    }
}

/// The output wires of the given (instance, labels) results, and their labels, in instance
/// order (the order both parties use for the transfer).
fn flatten_outputs(
    region: &pgc_circuit::Region,
    mut results: Vec<(usize, Vec<Block>)>,
) -> (Vec<WireId>, Vec<Block>) {
    results.sort_by_key(|(i, _)| *i);
    let mut wires = Vec::new();
    let mut labels = Vec::new();
    for (i, ls) in results {
        wires.extend_from_slice(&region.instances[i].outputs);
        labels.extend(ls);
    }
    (wires, labels)
}

type Results = Vec<(usize, Vec<Block>)>;

/// One IPP region on one party: T threads garble `mine` (tables to `out_streams`), T
/// threads evaluate `theirs` (tables from `in_streams`), at the same time. Returns the
/// output zero-labels of the garbled instances and the output labels of the evaluated
/// ones.
#[allow(clippy::too_many_arguments)]
fn run_region_workers(
    circuit: &ParallelCircuit,
    region: &pgc_circuit::Region,
    mine: &[usize],
    theirs: &[usize],
    bases: &Bases,
    delta: Block,
    own_hash: &TccrHash,
    peer_hash: &TccrHash,
    garble_input: &(dyn Fn(WireId) -> Block + Sync),
    eval_input: &(dyn Fn(WireId) -> Block + Sync),
    out_streams: &mut [Box<dyn Channel>],
    in_streams: &mut [Box<dyn Channel>],
    progress: &AtomicU64,
    work: &Work,
) -> Result<(Results, Results), ProtocolError> {
    let t = out_streams.len();
    let template =
        |i: usize| -> &Template { &circuit.templates[region.instances[i].template as usize] };
    std::thread::scope(|s| {
        let mut garblers = Vec::with_capacity(t);
        for (k, stream) in out_streams.iter_mut().enumerate() {
            let list: Vec<usize> = mine.iter().copied().skip(k).step_by(t).collect();
            garblers.push(s.spawn(move || -> Result<Results, ProtocolError> {
                let mut scratch = Vec::new();
                let mut tables = Vec::new();
                let mut out = Vec::new();
                let mut results = Vec::with_capacity(list.len());
                for i in list {
                    let inst = &region.instances[i];
                    let input: Vec<Block> = inst.inputs.iter().map(|&w| garble_input(w)).collect();
                    tables.clear();
                    engine::garble_instance(
                        template(i),
                        bases.of[i],
                        delta,
                        own_hash,
                        &input,
                        &mut scratch,
                        &mut tables,
                        &mut out,
                    );
                    for frame in tables.chunks(TABLE_FRAME_BLOCKS) {
                        stream.send_frame(Block::slice_as_bytes(frame))?;
                    }
                    progress.fetch_add(tables.len() as u64 / 2, Ordering::Relaxed);
                    let tpl = template(i);
                    Work::add(&work.gates, tpl.gates.len() as u64);
                    Work::add(&work.and_gates, tpl.and_count());
                    Work::add(&work.blocks_sent, tables.len() as u64);
                    results.push((i, out.clone()));
                }
                stream.flush()?;
                Ok(results)
            }));
        }
        let mut evaluators = Vec::with_capacity(t);
        for (k, stream) in in_streams.iter_mut().enumerate() {
            let list: Vec<usize> = theirs.iter().copied().skip(k).step_by(t).collect();
            evaluators.push(s.spawn(move || -> Result<Results, ProtocolError> {
                let mut scratch = Vec::new();
                let mut reader = TableReader::default();
                let mut out = Vec::new();
                let mut results = Vec::with_capacity(list.len());
                for i in list {
                    let inst = &region.instances[i];
                    let tpl = template(i);
                    let input: Vec<Block> = inst.inputs.iter().map(|&w| eval_input(w)).collect();
                    let ands = tpl.and_count() as usize;
                    let tables = reader.take(&mut **stream, 2 * ands)?;
                    engine::evaluate_instance(
                        tpl,
                        bases.of[i],
                        peer_hash,
                        &input,
                        tables,
                        &mut scratch,
                        &mut out,
                    )?;
                    progress.fetch_add(ands as u64, Ordering::Relaxed);
                    Work::add(&work.gates, tpl.gates.len() as u64);
                    Work::add(&work.and_gates, ands as u64);
                    Work::add(&work.blocks_received, 2 * ands as u64);
                    results.push((i, out.clone()));
                }
                if reader.remaining() != 0 {
                    return Err(ProtocolError::Peer(
                        "the peer sent more garbled tables than its instances have AND gates"
                            .into(),
                    ));
                }
                Ok(results)
            }));
        }
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Results, ProtocolError>>| {
            h.join()
                .unwrap_or_else(|_| Err(ProtocolError::Peer("a worker thread panicked".into())))
        };
        let mut first_err = None;
        let mut garbled = Vec::new();
        for h in garblers {
            match join(h) {
                Ok(r) => garbled.extend(r),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        let mut evaluated = Vec::new();
        for h in evaluators {
            match join(h) {
                Ok(r) => evaluated.extend(r),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok((garbled, evaluated)),
        }
    })
}
