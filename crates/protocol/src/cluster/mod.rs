//! Each party a cluster of processes (MPI ranks): semi-honest Yao with the region
//! instances of a coarse-grained parallel (CGP) circuit spread over K ranks per party, as
//! the billion-gate system of Kreuter, shelat and Shen ran (USENIX Security 2012, §6: a
//! root process per party coordinating its slave processes and the other root, slave i of
//! the generator paired with slave i of the evaluator; their "IP exchanger" is our address
//! exchange between the two rank 0s).
//!
//! # Who talks to whom
//!
//! ```text
//!        party A (one trust domain)                   party B (one trust domain)
//!   rank 0 ──main TCP + T streams (port P)────────── rank 0
//!     │ MPI: Δ, hash key, boundary labels ▲            │ MPI: hash key, boundary labels
//!     ▼                                   │ outputs    ▼
//!   rank 1 ──T streams (port P+1)─────────────────── rank 1
//!   rank i ──T streams (port P+i)─────────────────── rank i      (garbled tables: A → B)
//! ```
//!
//! - **Rank 0** of each party is the coordinator. It runs the whole protocol of
//!   [`crate::parallel`] with its peer's rank 0: the handshake, A's input labels and the
//!   OT for B's inputs, every *sequential* phase (on the main connection, one thread), the
//!   completion check and the outputs. It also takes its own share of every region, on
//!   its T streams.
//! - **Rank i > 0** (a worker) pairs with rank i of the other party over its own T TCP
//!   streams (one per thread). For each region, its rank 0 sends it over MPI the
//!   *boundary labels* (the labels of the distinct input wires of rank i's share); it
//!   garbles (A) or evaluates (B) those instances with T threads and returns the output
//!   labels to its rank 0 over MPI. Garbled tables go straight from A's rank i to B's
//!   rank i; they never pass through rank 0, so rank 0's links carry only its own share,
//!   the sequential phases and the (small) boundary labels.
//! - **What is distributed**: region instances, over ranks and then over each rank's
//!   threads (ranks × threads), in contiguous runs of about equal weight
//!   ([`plan::rank_shares`], [`plan::thread_shares`]). Sequential phases run on rank 0,
//!   one thread (fine-grained parallelism does not cross ranks; under `--cluster` it is
//!   not used within rank 0 either). Every AND keeps the tweak of its position in the
//!   circuit's flat order ([`pgc_garble::parallel`]), so the tables and the outputs are
//!   the same for any rank and thread count.
//!
//! # Set-up and ports
//!
//! The hello of the single-machine handshake states K (`cluster_ranks`; 0 for a run
//! without `--cluster`), so a cluster against a single process, or different K, fails
//! there on both sides, saying which runs what. After the input phase and rank 0's
//! streams, the two rank 0s check K once more (a guard) and set up the workers: rank 0
//! sends each worker the run's parameters ([`plan::Msg::Setup`]); on the listening party each worker
//! listens on the base port + its rank ([`plan::rank_port`]: a firewall in front of the
//! listening party opens `P ..= P+K-1`) and reports the address its peer rank should
//! connect to: its bound address, or, when bound to the unspecified address (`0.0.0.0`),
//! the local address of the interface that routes toward the peer's rank 0. The two rank
//! 0s swap their workers' addresses over the main connection and hand each worker its
//! peer's; the connecting party's rank i then opens T streams to that address, with a
//! token derived from A's run token and i ([`plan::rank_token`]: a connection that
//! reaches the wrong rank is turned away).
//!
//! # Security
//!
//! Semi-honest, as [`crate::parallel`]. (Malicious security over a cluster spreads the
//! cut-and-choose copies instead: [`crate::malicious::cluster`], which reuses this module's
//! rank-pair set-up (`link_workers` and its worker side), heartbeats and failure reports.) Δ and A's garbling randomness are known to *all of
//! A's ranks* (rank 0 sends Δ to its workers over MPI): party A's ranks are one trust
//! domain, and so must be the MPI transport between them (a cluster's own network). B's
//! ranks never see Δ; they receive only A's hash key and active labels. Every rank-pair
//! connection uses the same channel security as the main connection (TLS with the same
//! pinned keys or pre-shared key, or plaintext when the main connection is plaintext).
//!
//! # Failure
//!
//! A worker that fails (its peer rank gone, a timeout, a malformed table) reports to rank
//! 0, which stops the run with an error naming the party and rank; the caller then ends
//! the whole party ([`Team::abort`], `MPI_Abort`), so no rank waits forever. A rank that
//! dies is ended with its whole party by `mpirun`/`srun`, which closes its connections,
//! so the other party's matching ranks fail at once and report in turn.
//!
//! A rank that stops answering without dying (stopped, hung in MPI, its node gone without
//! the launcher noticing) is caught by heartbeats ([`heartbeat`]): the thread that calls
//! [`run_coordinator`] or [`run_worker`] (MPI's thread) only carries messages and sends a
//! heartbeat every second to the ranks it talks to, while the protocol runs on a thread of
//! its own, so a rank may compute as long as it needs. Rank 0 fails with "party X rank i
//! (of K) failed: rank i sent nothing, not even a heartbeat, for … s" once a worker was
//! silent for [`Team::silence_bound`] (`pgc run --cluster`: its `--timeout`, clamped to
//! 3 ..= 10 s, [`heartbeat::silence_bound`]); a worker fails the same way when rank 0 is
//! silent and, if rank 0 cannot report, ends the party itself. A protocol thread that does
//! not notice (it waits on a network peer) is ended by its own pump one bound later. A
//! worker counts rank 0's silence from rank 0's first message (rank 0 pumps only once it
//! has reached its peer), and rank 0 releases a worker once it has sent its summary.

pub mod heartbeat;
pub mod plan;
pub mod tcp;
pub mod team;

#[cfg(feature = "mpi")]
pub mod mpi;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use pgc_circuit::{ParallelCircuit, Phase, Region, Template, Visibility, WireId};
use pgc_crypto::{Block, TccrHash};
use pgc_garble::parallel as engine;
use pgc_garble::{Evaluator, Garbler};
use pgc_net::{ByteCounts, Channel};

use crate::parallel::{
    CircuitDriver, CircuitStart, MAX_THREADS, ParallelConfig, ParallelExtras, StreamOpener, Work,
    count_ands, run_parallel_driven,
};
use crate::yao::{Outcome, Party, ProtocolError, TABLE_FRAME_BLOCKS, TableReader};

pub use plan::{MAX_RANKS, Msg, Summary, rank_port, rank_token};
pub use tcp::TcpRankLinks;
pub use team::{MemoryTeam, Team};

/// How a worker rank reaches its peer rank (TCP in production, [`tcp::TcpRankLinks`]).
pub trait RankLinks: Send {
    /// The address the peer rank should connect to (the listening party), or `None` (the
    /// connecting party). `peer_host` is where rank 0's peer is (to pick the interface).
    fn advertise(&mut self, peer_host: &str) -> Result<Option<String>, ProtocolError>;
    /// Opens (or accepts) the `n` streams to the peer rank, which advertised
    /// `peer_advert`.
    fn open(
        &mut self,
        peer_advert: Option<&str>,
        n: usize,
        token: [u8; 16],
    ) -> Result<Vec<Box<dyn Channel>>, ProtocolError>;
}

/// Rank-pair links over any [`StreamOpener`] that needs no address (in-memory streams in
/// tests, scripted ones in fuzzing): neither side advertises one, and a worker's streams are
/// whatever the opener opens.
pub struct OpenerLinks<O>(pub O);

impl<O: StreamOpener + Send> RankLinks for OpenerLinks<O> {
    fn advertise(&mut self, _peer_host: &str) -> Result<Option<String>, ProtocolError> {
        Ok(None)
    }
    fn open(
        &mut self,
        _peer_advert: Option<&str>,
        n: usize,
        token: [u8; 16],
    ) -> Result<Vec<Box<dyn Channel>>, ProtocolError> {
        Ok(self.0.open(n, token)?)
    }
}

/// Runs rank 0 of party `me` in a cluster run: [`crate::parallel::run_parallel_with`] with
/// the region instances spread over `team` (see the module doc). `opener` opens rank 0's
/// own streams; `peer_host` is the peer's host as the main connection sees it. On an
/// error the workers are told to stop; the caller reports the error and then calls
/// [`Team::abort`].
#[allow(clippy::too_many_arguments)]
pub fn run_coordinator(
    me: Party,
    team: &dyn Team,
    peer_host: &str,
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
    if team.rank() != 0 {
        return Err(ProtocolError::Input(format!(
            "run_coordinator on rank {} (only rank 0 coordinates)",
            team.rank()
        )));
    }
    check_team_size(team.size())?;
    let k = team.size();
    let workers: Vec<usize> = (1..k).collect();
    heartbeat::pumped(
        team,
        &workers,
        heartbeat::Clock::FromStart,
        &rank_name(me, 0, k),
        |team| {
            coordinate(
                me, team, peer_host, ch, opener, circuit, owners, visibility, inputs, config,
                progress, extras,
            )
        },
    )
}

/// [`run_coordinator`] on the protocol thread, `team` the pump's relay.
#[allow(clippy::too_many_arguments)]
fn coordinate(
    me: Party,
    team: &dyn Team,
    peer_host: &str,
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
    let mut driver = Driver {
        team,
        peer_host: peer_host.to_string(),
    };
    let result = run_parallel_driven(
        me,
        ch,
        opener,
        circuit,
        owners,
        visibility,
        inputs,
        config,
        progress,
        extras,
        Some(&mut driver),
    );
    let Err(error) = result else {
        return result;
    };
    // A link of rank 0 that broke usually means the peer's party ended because one of its
    // ranks failed, which this party's worker paired with it may be reporting right now:
    // name that rank if it does so soon.
    let error = match error {
        ProtocolError::Net(e) => match name_failed_worker(me, team) {
            Some(named) => ProtocolError::Incomplete(format!("{named} (rank 0 saw: {e})")),
            None => ProtocolError::Net(e),
        },
        other => other,
    };
    let stop = Msg::Stop.to_bytes();
    for r in 1..team.size() {
        // Best effort: a worker that has left needs no stop.
        let _ = team.send(r, &stop);
    }
    Err(error)
}

/// How long rank 0, after its own link broke, waits for a worker's failure report.
const FAILURE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The first failure a worker reports within [`FAILURE_GRACE`], as "party A rank i (of K)
/// failed: why". A worker whose messages can no longer be read (the party aborted, the
/// rank is lost, a script has ended) reports nothing more, so the wait ends early once that
/// holds for every worker.
pub(crate) fn name_failed_worker(me: Party, team: &dyn Team) -> Option<String> {
    let k = team.size();
    let deadline = std::time::Instant::now() + FAILURE_GRACE;
    while k > 1 && std::time::Instant::now() < deadline {
        let mut all_gone = true;
        for r in 1..k {
            match team.poll(r) {
                Ok(Some(bytes)) => {
                    all_gone = false;
                    if let Ok(Msg::Failed(why)) = Msg::from_bytes(&bytes, "a worker") {
                        return Some(format!("{} failed: {why}", rank_name(me, r, k)));
                    }
                }
                Ok(None) => all_gone = false,
                Err(_) => {}
            }
        }
        if all_gone {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

pub(crate) fn check_team_size(k: usize) -> Result<(), ProtocolError> {
    if k == 0 || k > MAX_RANKS {
        return Err(ProtocolError::Input(format!(
            "a cluster run needs 1 ..= {MAX_RANKS} ranks per party, not {k}"
        )));
    }
    Ok(())
}

/// Names a rank in errors.
pub(crate) fn rank_name(me: Party, rank: usize, k: usize) -> String {
    format!("party {} rank {rank} (of {k})", me.letter())
}

pub(crate) fn rank_failed(me: Party, rank: usize, k: usize, why: &str) -> ProtocolError {
    ProtocolError::Incomplete(format!("{} failed: {why}", rank_name(me, rank, k)))
}

/// The set-up of a cluster run's workers, on rank 0 after the handshake: both rank 0s
/// check that they run the same K; each worker gets `setup` ([`Msg::Setup`]) and reports
/// the address its peer rank should reach (the listening party's); the two rank 0s swap
/// those lists over `ch` and hand each worker its peer's; the workers open their streams.
pub(crate) fn link_workers(
    team: &dyn Team,
    me: Party,
    ch: &mut dyn Channel,
    setup: &Msg,
) -> Result<(), ProtocolError> {
    let k = team.size();
    // Both parties run the same number of ranks.
    ch.send_frame(&(k as u32).to_le_bytes())?;
    ch.flush()?;
    let peer = ch.recv_frame(4)?;
    let peer_k = u32::from_le_bytes(
        peer.as_slice()
            .try_into()
            .map_err(|_| ProtocolError::Peer("a malformed rank count".into()))?,
    ) as usize;
    if peer_k != k {
        return Err(ProtocolError::Handshake(format!(
            "this party runs {k} rank(s) but the peer runs {peer_k}; launch both with the \
             same count (mpirun -np K / srun -n K)"
        )));
    }
    // Workers: parameters, then addresses (the listening party's), swapped between the
    // two rank 0s, then the rank-pair streams.
    for r in 1..k {
        team.send(r, &setup.to_bytes())?;
    }
    let mut adverts = Vec::with_capacity(k.saturating_sub(1));
    for r in 1..k {
        match hear(team, me, r)? {
            Msg::Ready { advert } => adverts.push(advert),
            m => return Err(unexpected(me, r, k, "ready", &m)),
        }
    }
    ch.send_frame(&encode_adverts(&adverts))?;
    ch.flush()?;
    let peer_adverts = decode_adverts(&ch.recv_frame(1 << 20)?, k - 1)?;
    for (r, advert) in (1..k).zip(peer_adverts) {
        team.send(r, &Msg::Peer { advert }.to_bytes())?;
    }
    for r in 1..k {
        match hear(team, me, r)? {
            Msg::Opened => {}
            m => return Err(unexpected(me, r, k, "opened", &m)),
        }
    }
    Ok(())
}

/// The next message of worker `r` on rank 0; its failure report becomes an error naming
/// it.
pub(crate) fn hear(team: &dyn Team, me: Party, r: usize) -> Result<Msg, ProtocolError> {
    let k = team.size();
    let bytes = team
        .recv(r)
        .map_err(|e| rank_failed(me, r, k, &e.to_string()))?;
    match Msg::from_bytes(&bytes, &rank_name(me, r, k))? {
        Msg::Failed(why) => Err(rank_failed(me, r, k, &why)),
        m => Ok(m),
    }
}

/// Worker `r` sent `got` where rank 0 expected `wanted`.
pub(crate) fn unexpected(me: Party, r: usize, k: usize, wanted: &str, got: &Msg) -> ProtocolError {
    rank_failed(
        me,
        r,
        k,
        &format!("sent {} where rank 0 expected {wanted}", got.name()),
    )
}

/// Rank 0's circuit phase.
struct Driver<'t> {
    team: &'t dyn Team,
    peer_host: String,
}

impl Driver<'_> {
    fn tell(&self, r: usize, msg: &Msg) -> Result<(), ProtocolError> {
        self.team.send(r, &msg.to_bytes())
    }

    fn hear(&self, me: Party, r: usize) -> Result<Msg, ProtocolError> {
        hear(self.team, me, r)
    }

    fn unexpected(me: Party, r: usize, k: usize, wanted: &str, got: &Msg) -> ProtocolError {
        unexpected(me, r, k, wanted, got)
    }
}

impl CircuitDriver for Driver<'_> {
    fn ranks(&self) -> usize {
        self.team.size()
    }

    fn run(&mut self, s: CircuitStart<'_>) -> Result<(Vec<Block>, ByteCounts), ProtocolError> {
        let me = s.me;
        let k = self.team.size();
        link_workers(
            self.team,
            me,
            &mut *s.ch,
            &Msg::Setup {
                threads: s.threads as u32,
                token: s.token,
                fingerprint: pgc_circuit::GateSource::fingerprint(s.circuit),
                hash_key: s.hash_key,
                delta: s.delta,
                peer_host: self.peer_host.clone(),
            },
        )?;

        let circuit = s.circuit;
        let n = circuit.layout.num_wires as usize;
        let hash = TccrHash::new(s.hash_key);
        let mut and_base = 0u64;
        let output_labels = match s.delta {
            Some(delta) => {
                let mut garbler = Garbler::new(n, delta, s.hash_key);
                for (w, &z) in s.input_labels.iter().enumerate() {
                    garbler.set_zero_label(w as WireId, z);
                }
                let mut tables = Vec::new();
                for (p, phase) in circuit.phases.iter().enumerate() {
                    match phase {
                        Phase::Sequential(gates) => {
                            garbler.set_and_index(and_base);
                            garbler.garble(gates, &mut tables);
                            for frame in tables.chunks(TABLE_FRAME_BLOCKS) {
                                s.ch.send_frame(Block::slice_as_bytes(frame))?;
                            }
                            s.progress
                                .fetch_add(tables.len() as u64 / 2, Ordering::Relaxed);
                            Work::add(&s.work.gates, gates.len() as u64);
                            Work::add(&s.work.and_gates, count_ands(gates));
                            Work::add(&s.work.blocks_sent, tables.len() as u64);
                            tables.clear();
                            and_base += count_ands(gates);
                        }
                        Phase::Region(region) => {
                            let outs = self.region(
                                me,
                                circuit,
                                region,
                                p,
                                and_base,
                                &|w| garbler.zero_label(w),
                                &mut Share {
                                    delta: Some(delta),
                                    hash: &hash,
                                    streams: &mut *s.streams,
                                    progress: s.progress,
                                    work: s.work,
                                },
                            )?;
                            for (w, l) in outs {
                                garbler.set_zero_label(w, l);
                            }
                            and_base = end_of(circuit, region, and_base);
                        }
                    }
                }
                s.ch.flush()?;
                circuit
                    .layout
                    .output_wires
                    .iter()
                    .map(|&w| garbler.zero_label(w))
                    .collect()
            }
            None => {
                let mut evaluator = Evaluator::new(n, s.hash_key);
                for (w, &l) in s.input_labels.iter().enumerate() {
                    evaluator.set_label(w as WireId, l);
                }
                let mut reader = TableReader::default();
                for (p, phase) in circuit.phases.iter().enumerate() {
                    match phase {
                        Phase::Sequential(gates) => {
                            let ands = count_ands(gates) as usize;
                            let tables = reader.take(&mut *s.ch, 2 * ands)?;
                            evaluator.set_and_index(and_base);
                            evaluator.evaluate(gates, tables)?;
                            s.progress.fetch_add(ands as u64, Ordering::Relaxed);
                            Work::add(&s.work.gates, gates.len() as u64);
                            Work::add(&s.work.and_gates, ands as u64);
                            Work::add(&s.work.blocks_received, 2 * ands as u64);
                            and_base += ands as u64;
                        }
                        Phase::Region(region) => {
                            let outs = self.region(
                                me,
                                circuit,
                                region,
                                p,
                                and_base,
                                &|w| evaluator.label(w),
                                &mut Share {
                                    delta: None,
                                    hash: &hash,
                                    streams: &mut *s.streams,
                                    progress: s.progress,
                                    work: s.work,
                                },
                            )?;
                            for (w, l) in outs {
                                evaluator.set_label(w, l);
                            }
                            and_base = end_of(circuit, region, and_base);
                        }
                    }
                }
                if reader.remaining() != 0 {
                    return Err(ProtocolError::Peer(
                        "the garbler sent more garbled tables than the sequential phases have \
                         AND gates"
                            .into(),
                    ));
                }
                circuit
                    .layout
                    .output_wires
                    .iter()
                    .map(|&w| evaluator.label(w))
                    .collect()
            }
        };

        // The workers' counts join rank 0's (for the completion check) and their bytes the
        // run's stats.
        let mut bytes = ByteCounts::default();
        for r in 1..k {
            self.tell(r, &Msg::Finish)?;
        }
        for r in 1..k {
            match self.hear(me, r)? {
                Msg::Summary(sum) => {
                    // Its part is done: its silence from now on is no failure.
                    self.team.release(r);
                    Work::add(&s.work.gates, sum.gates);
                    Work::add(&s.work.and_gates, sum.and_gates);
                    Work::add(&s.work.blocks_sent, sum.blocks_sent);
                    Work::add(&s.work.blocks_received, sum.blocks_received);
                    bytes.sent += sum.bytes_sent;
                    bytes.received += sum.bytes_received;
                }
                m => return Err(Self::unexpected(me, r, k, "summary", &m)),
            }
        }
        Ok((output_labels, bytes))
    }
}

impl Driver<'_> {
    /// One region on rank 0: the workers' boundary labels out, rank 0's own share, the
    /// workers' output labels back. Returns (wire, label) of every instance output.
    #[allow(clippy::too_many_arguments)]
    fn region(
        &self,
        me: Party,
        circuit: &ParallelCircuit,
        region: &Region,
        phase: usize,
        and_base: u64,
        label_of: &dyn Fn(WireId) -> Block,
        own: &mut Share<'_>,
    ) -> Result<Vec<(WireId, Block)>, ProtocolError> {
        let k = self.team.size();
        let shares = plan::rank_shares(circuit, region, k);
        for (r, share) in shares.iter().enumerate().skip(1) {
            if share.is_empty() {
                continue;
            }
            self.tell(
                r,
                &Msg::Region {
                    phase: phase as u32,
                    and_base,
                    labels: plan::boundary_wires(region, share.clone())
                        .into_iter()
                        .map(label_of)
                        .collect(),
                },
            )?;
        }
        let bases = plan::instance_and_bases(circuit, region, and_base);
        let inputs = plan::pack_inputs(region, shares[0].clone(), label_of);
        let mine = own.run(circuit, region, shares[0].clone(), &bases, &inputs)?;
        let mut outs = Vec::new();
        collect_outputs(region, shares[0].clone(), &mine, &mut outs);
        for (r, share) in shares.iter().enumerate().skip(1) {
            if share.is_empty() {
                continue;
            }
            match self.hear(me, r)? {
                Msg::Outputs { labels } => {
                    let want = plan::boundary_len(region, share.clone(), true);
                    if labels.len() != want {
                        return Err(rank_failed(
                            me,
                            r,
                            k,
                            &format!(
                                "returned {} output labels for a share with {want}",
                                labels.len()
                            ),
                        ));
                    }
                    collect_outputs(region, share.clone(), &labels, &mut outs);
                }
                m => return Err(Self::unexpected(me, r, k, "output labels", &m)),
            }
        }
        Ok(outs)
    }
}

fn collect_outputs(
    region: &Region,
    share: Range<usize>,
    labels: &[Block],
    outs: &mut Vec<(WireId, Block)>,
) {
    let wires = region.instances[share]
        .iter()
        .flat_map(|i| i.outputs.iter());
    outs.extend(wires.copied().zip(labels.iter().copied()));
}

/// The flat index of each phase's first AND (the tweak order of [`engine`]), and one more
/// entry: the circuit's AND count.
fn phase_and_bases(circuit: &ParallelCircuit) -> Vec<u64> {
    let mut bases = Vec::with_capacity(circuit.phases.len() + 1);
    let mut at = 0u64;
    bases.push(at);
    for phase in &circuit.phases {
        at = match phase {
            Phase::Sequential(gates) => at + count_ands(gates),
            Phase::Region(region) => end_of(circuit, region, at),
        };
        bases.push(at);
    }
    bases
}

/// The AND index after `region`.
fn end_of(circuit: &ParallelCircuit, region: &Region, and_base: u64) -> u64 {
    and_base
        + region
            .instances
            .iter()
            .map(|i| circuit.templates[i.template as usize].and_count())
            .sum::<u64>()
}

/// The swapped worker addresses: a count, then each as an optional string.
fn encode_adverts(adverts: &[Option<String>]) -> Vec<u8> {
    let mut b = (adverts.len() as u32).to_le_bytes().to_vec();
    for a in adverts {
        let one = Msg::Peer { advert: a.clone() }.to_bytes();
        b.extend_from_slice(&(one.len() as u32).to_le_bytes());
        b.extend_from_slice(&one);
    }
    b
}

fn decode_adverts(bytes: &[u8], want: usize) -> Result<Vec<Option<String>>, ProtocolError> {
    let bad = || ProtocolError::Peer("a malformed list of rank addresses".into());
    let mut rest = bytes;
    let mut take = |n: usize| -> Result<&[u8], ProtocolError> {
        if rest.len() < n {
            return Err(bad());
        }
        let (a, b) = rest.split_at(n);
        rest = b;
        Ok(a)
    };
    let n = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    if n != want {
        return Err(ProtocolError::Peer(format!(
            "the peer listed {n} worker address(es), not {want}"
        )));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        match Msg::from_bytes(take(len)?, "the peer")? {
            Msg::Peer { advert } => out.push(advert),
            _ => return Err(bad()),
        }
    }
    if !rest.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

/// One rank's share of a region, run on its T threads and streams: garbled (A, with Δ)
/// or evaluated (B).
struct Share<'a> {
    delta: Option<Block>,
    hash: &'a TccrHash,
    streams: &'a mut [Box<dyn Channel>],
    progress: &'a AtomicU64,
    work: &'a Work,
}

impl Share<'_> {
    /// `bases`: [`plan::instance_and_bases`] of the region; `inputs`: the packed input
    /// labels of `share`. Returns the output labels of `share`, instance after instance.
    fn run(
        &mut self,
        circuit: &ParallelCircuit,
        region: &Region,
        share: Range<usize>,
        bases: &[u64],
        inputs: &[Block],
    ) -> Result<Vec<Block>, ProtocolError> {
        if share.is_empty() {
            return Ok(Vec::new());
        }
        let t = self.streams.len();
        let parts = plan::thread_shares(circuit, region, share.clone(), t);
        // Where each thread's inputs start in `inputs`.
        let mut offsets = Vec::with_capacity(t);
        let mut at = 0usize;
        for part in &parts {
            offsets.push(at);
            at += plan::boundary_len(region, part.clone(), false);
        }
        let template =
            |i: usize| -> &Template { &circuit.templates[region.instances[i].template as usize] };
        let (delta, hash, progress, work) = (self.delta, self.hash, self.progress, self.work);
        std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(t);
            for ((stream, part), offset) in self.streams.iter_mut().zip(parts).zip(offsets) {
                if part.is_empty() {
                    handles.push(None);
                    continue;
                }
                handles.push(Some(scope.spawn(
                    move || -> Result<Vec<Block>, ProtocolError> {
                        let mut scratch = Vec::new();
                        let mut tables = Vec::new();
                        let mut out = Vec::new();
                        let mut outputs = Vec::new();
                        let mut reader = TableReader::default();
                        let mut at = offset;
                        for i in part {
                            let tpl = template(i);
                            let n_in = tpl.num_inputs as usize;
                            let input = &inputs[at..at + n_in];
                            at += n_in;
                            let ands = tpl.and_count();
                            match delta {
                                Some(delta) => {
                                    tables.clear();
                                    engine::garble_instance(
                                        tpl,
                                        bases[i],
                                        delta,
                                        hash,
                                        input,
                                        &mut scratch,
                                        &mut tables,
                                        &mut out,
                                    );
                                    for frame in tables.chunks(TABLE_FRAME_BLOCKS) {
                                        stream.send_frame(Block::slice_as_bytes(frame))?;
                                    }
                                    Work::add(&work.blocks_sent, tables.len() as u64);
                                }
                                None => {
                                    let got = reader.take(&mut **stream, 2 * ands as usize)?;
                                    engine::evaluate_instance(
                                        tpl,
                                        bases[i],
                                        hash,
                                        input,
                                        got,
                                        &mut scratch,
                                        &mut out,
                                    )?;
                                    Work::add(&work.blocks_received, 2 * ands);
                                }
                            }
                            progress.fetch_add(ands, Ordering::Relaxed);
                            Work::add(&work.gates, tpl.gates.len() as u64);
                            Work::add(&work.and_gates, ands);
                            outputs.extend_from_slice(&out);
                        }
                        if delta.is_some() {
                            stream.flush()?;
                        } else if reader.remaining() != 0 {
                            return Err(ProtocolError::Peer(
                                "the peer rank sent more garbled tables than its instances have \
                                 AND gates"
                                    .into(),
                            ));
                        }
                        Ok(outputs)
                    },
                )));
            }
            let mut all = Vec::with_capacity(plan::boundary_len(region, share.clone(), true));
            let mut first_err = None;
            for h in handles.into_iter().flatten() {
                match h.join() {
                    Ok(Ok(o)) => all.extend(o),
                    Ok(Err(e)) => {
                        first_err.get_or_insert(e);
                    }
                    Err(_) => {
                        first_err
                            .get_or_insert(ProtocolError::Peer("a worker thread panicked".into()));
                    }
                }
            }
            match first_err {
                Some(e) => Err(e),
                None => Ok(all),
            }
        })
    }
}

/// How a worker's run ended without a failure of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerEnd {
    /// The circuit is done; what this rank did.
    Finished(Summary),
    /// Rank 0 stopped the run (it reports why, then ends the party).
    Stopped,
}

/// Runs worker rank `team.rank()` > 0 of party `me` until its rank 0 says the circuit is
/// done or stops the run. `links` reaches the peer rank; `progress` counts this rank's
/// ANDs. A failure of this rank is reported to rank 0 (which names this rank in its
/// error), and the worker then waits for rank 0's stop (or its party's abort) before
/// returning it.
pub fn run_worker(
    me: Party,
    team: &dyn Team,
    circuit: &ParallelCircuit,
    links: &mut dyn RankLinks,
    progress: &AtomicU64,
) -> Result<WorkerEnd, ProtocolError> {
    let rank = team.rank();
    if rank == 0 {
        return Err(ProtocolError::Input(
            "run_worker on rank 0 (rank 0 coordinates)".into(),
        ));
    }
    check_team_size(team.size())?;
    let who = rank_name(me, rank, team.size());
    heartbeat::pumped(
        team,
        &[0],
        heartbeat::Clock::FromFirstMessage,
        &who,
        |team| serve_rank0(me, team, circuit, links, progress),
    )
}

/// [`run_worker`] on the protocol thread, `team` the pump's relay.
fn serve_rank0(
    me: Party,
    team: &dyn Team,
    circuit: &ParallelCircuit,
    links: &mut dyn RankLinks,
    progress: &AtomicU64,
) -> Result<WorkerEnd, ProtocolError> {
    let mut state = WorkerState {
        me,
        team,
        circuit,
        links,
        progress,
        streams: Vec::new(),
        setup: None,
        work: Work::default(),
        phase_bases: None,
    };
    match state.serve() {
        Ok(Some(summary)) => Ok(WorkerEnd::Finished(summary)),
        Ok(None) => Ok(WorkerEnd::Stopped),
        Err(failure) => report_failure(team, failure),
    }
}

/// A worker's failure: told to rank 0, which names this rank in its error; then the
/// worker waits for rank 0's stop (answering anything else with the failure again) and
/// returns the failure.
pub(crate) fn report_failure(
    team: &dyn Team,
    failure: ProtocolError,
) -> Result<WorkerEnd, ProtocolError> {
    let failed = Msg::Failed(failure.to_string()).to_bytes();
    let _ = team.send(0, &failed);
    loop {
        match team.recv(0).map(|b| Msg::from_bytes(&b, "rank 0")) {
            Ok(Ok(Msg::Stop)) | Err(_) => return Err(failure),
            Ok(Ok(
                Msg::Setup { .. }
                | Msg::Peer { .. }
                | Msg::Region { .. }
                | Msg::Finish
                | Msg::Copies(_),
            )) => {
                let _ = team.send(0, &failed);
            }
            Ok(_) => return Err(failure),
        }
    }
}

/// What a worker keeps of its [`Msg::Setup`].
pub(crate) struct WorkerSetup {
    pub(crate) threads: usize,
    /// The token of this rank's pair ([`rank_token`]).
    pub(crate) token: [u8; 16],
    pub(crate) hash_key: Block,
    pub(crate) delta: Option<Block>,
}

/// A worker's answer to [`Msg::Setup`] (`setup`): checks that its circuit is rank 0's
/// (`fingerprint`) and the thread count, and finds the address its peer rank should
/// reach ([`Msg::Ready`]).
pub(crate) fn accept_setup(
    links: &mut dyn RankLinks,
    rank: usize,
    fingerprint: [u8; 32],
    setup: &Msg,
) -> Result<(WorkerSetup, Option<String>), ProtocolError> {
    let Msg::Setup {
        threads,
        token,
        fingerprint: rank0s,
        hash_key,
        delta,
        peer_host,
    } = setup
    else {
        return Err(ProtocolError::Peer(format!(
            "rank 0 sent {} instead of the set-up",
            setup.name()
        )));
    };
    if *rank0s != fingerprint {
        return Err(ProtocolError::Input(
            "this rank's circuit differs from rank 0's (another program, options or \
             compiler version): every rank must run the same command"
                .into(),
        ));
    }
    let threads = *threads as usize;
    if threads == 0 || threads > MAX_THREADS {
        return Err(ProtocolError::Peer(format!(
            "rank 0 asks for {threads} threads (1 ..= {MAX_THREADS})"
        )));
    }
    let advert = links.advertise(peer_host)?;
    Ok((
        WorkerSetup {
            threads,
            token: rank_token(*token, rank),
            hash_key: *hash_key,
            delta: *delta,
        },
        advert,
    ))
}

/// A worker's answer to [`Msg::Peer`]: its `n` streams to the peer rank.
pub(crate) fn open_peer(
    links: &mut dyn RankLinks,
    setup: &WorkerSetup,
    advert: Option<&str>,
    n: usize,
) -> Result<Vec<Box<dyn Channel>>, ProtocolError> {
    let streams = links.open(advert, n, setup.token)?;
    if streams.len() != n {
        return Err(ProtocolError::Input(format!(
            "{} streams opened to the peer rank, not {n}",
            streams.len()
        )));
    }
    Ok(streams)
}

struct WorkerState<'a> {
    me: Party,
    team: &'a dyn Team,
    circuit: &'a ParallelCircuit,
    links: &'a mut dyn RankLinks,
    progress: &'a AtomicU64,
    streams: Vec<Box<dyn Channel>>,
    setup: Option<WorkerSetup>,
    work: Work,
    /// The flat index of each phase's first AND ([`phase_and_bases`]), once a region
    /// arrives.
    phase_bases: Option<Vec<u64>>,
}

impl WorkerState<'_> {
    fn reply(&self, msg: &Msg) -> Result<(), ProtocolError> {
        self.team.send(0, &msg.to_bytes())
    }

    fn setup(&self, what: &str) -> Result<&WorkerSetup, ProtocolError> {
        self.setup
            .as_ref()
            .ok_or_else(|| ProtocolError::Peer(format!("rank 0 sent {what} before the set-up")))
    }

    /// `Ok(Some)`: finished; `Ok(None)`: stopped by rank 0.
    fn serve(&mut self) -> Result<Option<Summary>, ProtocolError> {
        let rank = self.team.rank();
        let k = self.team.size();
        loop {
            let bytes = self.team.recv(0)?;
            match Msg::from_bytes(&bytes, "rank 0")? {
                Msg::Setup {
                    threads,
                    token,
                    fingerprint,
                    hash_key,
                    delta,
                    peer_host,
                } => {
                    if delta.is_some() != (self.me == Party::A) {
                        return Err(ProtocolError::Peer(
                            "rank 0 sent Δ to an evaluating rank (or none to a garbling one)"
                                .into(),
                        ));
                    }
                    if delta.is_some_and(|d| !d.lsb()) {
                        return Err(ProtocolError::Peer(
                            "rank 0 sent a Δ whose lowest bit is 0 (point-and-permute needs \
                             1)"
                            .into(),
                        ));
                    }
                    let (setup, advert) = accept_setup(
                        self.links,
                        rank,
                        pgc_circuit::GateSource::fingerprint(self.circuit),
                        &Msg::Setup {
                            threads,
                            token,
                            fingerprint,
                            hash_key,
                            delta,
                            peer_host,
                        },
                    )?;
                    self.setup = Some(setup);
                    self.reply(&Msg::Ready { advert })?;
                }
                Msg::Peer { advert } => {
                    self.setup("the peer address")?;
                    let setup = self.setup.as_ref().expect("checked");
                    self.streams = open_peer(self.links, setup, advert.as_deref(), setup.threads)?;
                    self.reply(&Msg::Opened)?;
                }
                Msg::Region {
                    phase,
                    and_base,
                    labels,
                } => {
                    let (hash_key, delta) = {
                        let s = self.setup("a region")?;
                        (s.hash_key, s.delta)
                    };
                    if self.streams.is_empty() {
                        return Err(ProtocolError::Peer(
                            "rank 0 sent a region before the streams were open".into(),
                        ));
                    }
                    let circuit = self.circuit;
                    let region = match circuit.phases.get(phase as usize) {
                        Some(Phase::Region(r)) => r,
                        _ => {
                            return Err(ProtocolError::Peer(format!(
                                "rank 0 sent phase {phase}, which is not a region"
                            )));
                        }
                    };
                    // The region's first AND is fixed by the circuit: rank 0 has no choice,
                    // and another value would shift every tweak (or overflow them).
                    let bases = self
                        .phase_bases
                        .get_or_insert_with(|| phase_and_bases(circuit));
                    if and_base != bases[phase as usize] {
                        return Err(ProtocolError::Peer(format!(
                            "rank 0 sent phase {phase} starting at AND {and_base}, but it starts \
                             at AND {}",
                            bases[phase as usize]
                        )));
                    }
                    let share = plan::rank_shares(circuit, region, k)[rank].clone();
                    let wires = plan::boundary_wires(region, share.clone());
                    if labels.len() != wires.len() {
                        return Err(ProtocolError::Peer(format!(
                            "rank 0 sent {} input labels for a share with {} input wires",
                            labels.len(),
                            wires.len()
                        )));
                    }
                    // Instance after instance, as the threads take them.
                    let labels = plan::pack_inputs(region, share.clone(), |w| {
                        labels[wires.binary_search(&w).expect("every input wire is listed")]
                    });
                    let bases = plan::instance_and_bases(circuit, region, and_base);
                    let hash = TccrHash::new(hash_key);
                    let outputs = Share {
                        delta,
                        hash: &hash,
                        streams: &mut self.streams,
                        progress: self.progress,
                        work: &self.work,
                    }
                    .run(circuit, region, share, &bases, &labels)?;
                    self.reply(&Msg::Outputs { labels: outputs })?;
                }
                Msg::Finish => {
                    let mut sum = Summary {
                        gates: self.work.gates.load(Ordering::Relaxed),
                        and_gates: self.work.and_gates.load(Ordering::Relaxed),
                        blocks_sent: self.work.blocks_sent.load(Ordering::Relaxed),
                        blocks_received: self.work.blocks_received.load(Ordering::Relaxed),
                        ..Summary::default()
                    };
                    for s in &self.streams {
                        let c = s.counts();
                        sum.bytes_sent += c.sent;
                        sum.bytes_received += c.received;
                    }
                    self.reply(&Msg::Summary(sum))?;
                    return Ok(Some(sum));
                }
                Msg::Stop => return Ok(None),
                m => {
                    return Err(ProtocolError::Peer(format!(
                        "rank 0 sent {}, which only a worker sends",
                        m.name()
                    )));
                }
            }
        }
    }
}
