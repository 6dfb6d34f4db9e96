//! The links between one party's cluster ranks ([`pgc_protocol::cluster`]): rank 0 or
//! worker rank 1 of a two-rank party, fed a scripted teammate (the plan messages of
//! `cluster/plan.rs`: set-up, ready, peer address, opened, regions and their outputs,
//! cut-and-choose jobs and results, finish, summary, failure, stop) and a scripted peer
//! (for rank 0 the peer's rank 0 on the main connection, for the worker its peer rank on
//! the rank-pair stream).
//!
//! A party's ranks trust each other (one trust domain, see the module doc of
//! [`pgc_protocol::cluster`]), so a hostile teammate is not an attack the protocol defends
//! against; but no rank may panic, hang or allocate without bound on what arrives over MPI
//! (a bug or a version mismatch in the other rank, a corrupted transport), and the peer
//! links carry the other party's bytes. Both protocols with ranks are run: semi-honest Yao
//! over a cluster ([`run_coordinator`] / [`run_worker`], CGP on the parallel target's
//! circuit, [`crate::parallel_circuit`], one thread) and cut-and-choose
//! ([`run_cut_and_choose_coordinator`] / [`run_cut_and_choose_worker`], on the sequential
//! targets' circuit at [`crate::malicious::STAT_SEC`]).
//!
//! The scripted team ([`ScriptTeam`]) cannot fall silent, so the rank runs on the calling
//! thread without the heartbeat pump ([`pgc_protocol::cluster::Team::can_fall_silent`]):
//! every input runs deterministically (with this party's replayed entropy, as the
//! cut-and-choose target), and a spent script ends the run at once (the teammate "left").
//! The pump itself is time-driven, not byte-driven; the protocol crate's cluster tests
//! cover it.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pgc_circuit::Visibility;
use pgc_net::{Channel, MemoryChannel};
use pgc_protocol::cluster::{
    MemoryTeam, OpenerLinks, RankLinks, Team, WorkerEnd, run_coordinator, run_worker,
};
use pgc_protocol::malicious::{run_cut_and_choose_coordinator, run_cut_and_choose_worker};
use pgc_protocol::parallel::{
    MemoryStreams, ParallelConfig, ParallelExtras, ParallelMode, StreamOpener,
};
use pgc_protocol::{Outcome, Party, ProtocolError};

use crate::malicious::STAT_SEC;
use crate::script::{Recorder, Recording, RecordingStreams, ScriptChannel, ScriptedStreams};
use crate::{
    PARALLEL_OWNERS, YAO_OWNERS, join_parts, parallel_circuit, parallel_input, replay_entropy,
    split_parts, take, timed, yao_circuit, yao_input,
};

/// The cluster protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// Semi-honest Yao, the region instances of a CGP circuit spread over the ranks.
    SemiHonest,
    /// Cut-and-choose Yao, the copies spread over the ranks.
    CutAndChoose,
}

/// What a [`cluster_rank`] input runs, from its first byte: bit 0 the party, bit 1 the
/// protocol, bit 2 the rank (0: rank 0, the coordinator; 1: worker rank 1).
fn cluster_setup(byte: u8) -> (Party, Protocol, usize) {
    let party = if byte & 1 == 0 { Party::A } else { Party::B };
    let protocol = if byte & 2 == 0 {
        Protocol::SemiHonest
    } else {
        Protocol::CutAndChoose
    };
    (party, protocol, (byte >> 2 & 1) as usize)
}

/// Threads per rank (and so rank-pair streams per worker, and rank 0's own streams in the
/// semi-honest protocol).
const THREADS: usize = 1;

/// One rank of a team of two: the other rank's messages are a script, what this rank sends
/// is discarded. Its ranks cannot fall silent (no heartbeat pump); once the script is spent,
/// `recv` and `poll` fail as if the other rank had left.
pub struct ScriptTeam {
    rank: usize,
    from_other: Mutex<VecDeque<Vec<u8>>>,
}

impl ScriptTeam {
    /// Rank `rank` (0 or 1) of two; `messages` those of the other rank, in order.
    pub fn new(rank: usize, messages: Vec<Vec<u8>>) -> ScriptTeam {
        ScriptTeam {
            rank,
            from_other: Mutex::new(messages.into()),
        }
    }

    fn other(&self) -> usize {
        1 - self.rank
    }

    fn next(&self, from: usize) -> Result<Vec<u8>, ProtocolError> {
        if from != self.other() {
            return Err(ProtocolError::Input(format!(
                "rank {} waits for rank {from} of 2",
                self.rank
            )));
        }
        let mut queue = self
            .from_other
            .lock()
            .map_err(|_| ProtocolError::Incomplete("a poisoned script".into()))?;
        // An empty message is a heartbeat, which the pump never hands to the protocol.
        std::iter::from_fn(|| queue.pop_front())
            .find(|m| !m.is_empty())
            .ok_or_else(|| {
                ProtocolError::Incomplete(format!("rank {from} has left (its script ended)"))
            })
    }
}

impl Team for ScriptTeam {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        2
    }
    fn silence_bound(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn send(&self, to: usize, msg: &[u8]) -> Result<(), ProtocolError> {
        // As the pump's relay: an empty message would read as a heartbeat.
        if to != self.other() || msg.is_empty() {
            return Err(ProtocolError::Input(format!(
                "rank {} sent {} bytes to rank {to} of 2",
                self.rank,
                msg.len()
            )));
        }
        Ok(())
    }
    fn recv(&self, from: usize) -> Result<Vec<u8>, ProtocolError> {
        self.next(from)
    }
    fn poll(&self, from: usize) -> Result<Option<Vec<u8>>, ProtocolError> {
        self.next(from).map(Some)
    }
    fn abort(&self, _code: i32) {}
    fn can_fall_silent(&self) -> bool {
        false
    }
}

/// What a rank run ends with: rank 0's outcome or the worker's end.
#[derive(Debug)]
pub enum RankEnd {
    Coordinator(Outcome),
    Worker(WorkerEnd),
}

/// Rank 0 or worker rank 1 of a two-rank party in a cluster run, against a scripted
/// teammate and scripted peers.
///
/// Input: one setup byte (bit 0: the party A or B; bit 1: semi-honest or cut-and-choose;
/// bit 2: rank 0 or worker rank 1), then parts, each a u16 little-endian length and that
/// many bytes: (1) what the peer sends on this rank's peer link (rank 0: the peer's rank 0
/// on the main connection; the worker: its peer rank on the rank-pair stream); (2) what
/// rank 0's own stream receives (semi-honest rank 0 only; otherwise unused); (3) onwards,
/// the teammate's messages in order (each a `Msg` of `cluster/plan.rs`; cut-and-choose jobs
/// and results inside `Msg::Copies`).
pub fn cluster_rank(data: &[u8]) {
    let _ = cluster_rank_run(data);
}

/// [`cluster_rank`]'s run, with its result (`None` for an empty input).
pub fn cluster_rank_run(data: &[u8]) -> Option<Result<RankEnd, ProtocolError>> {
    let (&setup, rest) = data.split_first()?;
    let (party, protocol, rank) = cluster_setup(setup);
    let mut parts = split_parts(rest).into_iter();
    let peer = parts.next().unwrap_or_default();
    let own_stream = parts.next().unwrap_or_default();
    let team = ScriptTeam::new(rank, parts.collect());
    let progress = AtomicU64::new(0);
    replay_entropy(Some(party));
    let result = if rank == 0 {
        let mut ch = ScriptChannel::new(&peer);
        let mut opener = ScriptedStreams {
            scripts: vec![own_stream],
        };
        run_rank0(party, protocol, &team, &mut ch, &mut opener, &progress).map(RankEnd::Coordinator)
    } else {
        // The worker's first rank-pair stream replays the peer rank; any other is empty.
        let mut links = OpenerLinks(ScriptedStreams {
            scripts: vec![peer],
        });
        run_rank1(party, protocol, &team, &mut links, &progress).map(RankEnd::Worker)
    };
    replay_entropy(None);
    Some(result)
}

/// Rank 0 of `party` (the honest run's and the fuzz run's).
fn run_rank0(
    party: Party,
    protocol: Protocol,
    team: &dyn Team,
    ch: &mut dyn Channel,
    opener: &mut dyn StreamOpener,
    progress: &AtomicU64,
) -> Result<Outcome, ProtocolError> {
    match protocol {
        Protocol::SemiHonest => {
            let pc = parallel_circuit();
            let visibility = vec![Visibility::Both; pc.layout.output_widths.len()];
            run_coordinator(
                party,
                team,
                "127.0.0.1",
                ch,
                opener,
                pc,
                &PARALLEL_OWNERS,
                &visibility,
                &parallel_input(party),
                &ParallelConfig {
                    mode: ParallelMode::Cgp,
                    threads: THREADS,
                    tau: 2,
                },
                progress,
                &ParallelExtras::default(),
            )
        }
        Protocol::CutAndChoose => run_cut_and_choose_coordinator(
            team,
            "127.0.0.1",
            &mut &mut *ch,
            yao_circuit(),
            &YAO_OWNERS,
            &[Visibility::Both],
            party,
            &yao_input(party),
            STAT_SEC,
            THREADS,
            progress,
        ),
    }
}

/// Worker rank 1 of `party`.
fn run_rank1(
    party: Party,
    protocol: Protocol,
    team: &dyn Team,
    links: &mut dyn RankLinks,
    progress: &AtomicU64,
) -> Result<WorkerEnd, ProtocolError> {
    match protocol {
        Protocol::SemiHonest => run_worker(party, team, parallel_circuit(), links, progress),
        Protocol::CutAndChoose => {
            run_cut_and_choose_worker(party, team, yao_circuit(), links, progress)
        }
    }
}

/// Seeds of [`cluster_rank`]: per protocol, party and rank, what that rank received in an
/// honest run of two ranks per party (named `semi-honest-A-rank0`, `cut-and-choose-B-rank1`,
/// ...).
pub fn cluster_rank_transcripts() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (protocol_bit, name) in [(0u8, "semi-honest"), (2, "cut-and-choose")] {
        let (_, protocol, _) = cluster_setup(protocol_bit);
        let recorded = cluster_run_recorded(protocol);
        for (party_bit, ranks) in [(0u8, &recorded[0]), (1, &recorded[1])] {
            for (rank, got) in ranks.iter().enumerate() {
                let setup = protocol_bit | party_bit | (rank as u8) << 2;
                let mut parts = vec![got.peer.clone(), got.own_stream.clone()];
                parts.extend(got.from_teammate.iter().cloned());
                let letter = cluster_setup(setup).0.letter();
                seeds.push((
                    format!("{name}-{letter}-rank{rank}"),
                    [vec![setup], join_parts(&parts)].concat(),
                ));
            }
        }
    }
    seeds
}

/// What one rank received in an honest run.
#[derive(Default)]
struct Received {
    peer: Vec<u8>,
    own_stream: Vec<u8>,
    from_teammate: Vec<Vec<u8>>,
}

/// A team member that keeps a copy of every message it receives from the other rank, and
/// runs without the heartbeat pump (the protocol then runs on the calling thread, whose
/// entropy is replayed as in the fuzz run).
struct RecordingTeam {
    inner: MemoryTeam,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl RecordingTeam {
    fn keep(&self, msg: &[u8]) {
        if !msg.is_empty() {
            self.received
                .lock()
                .expect("a recorder's buffer is never poisoned")
                .push(msg.to_vec());
        }
    }
}

impl Team for RecordingTeam {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn silence_bound(&self) -> Duration {
        self.inner.silence_bound()
    }
    fn send(&self, to: usize, msg: &[u8]) -> Result<(), ProtocolError> {
        self.inner.send(to, msg)
    }
    fn recv(&self, from: usize) -> Result<Vec<u8>, ProtocolError> {
        let msg = self.inner.recv(from)?;
        self.keep(&msg);
        Ok(msg)
    }
    fn poll(&self, from: usize) -> Result<Option<Vec<u8>>, ProtocolError> {
        let msg = self.inner.poll(from)?;
        if let Some(m) = &msg {
            self.keep(m);
        }
        Ok(msg)
    }
    fn abort(&self, code: i32) {
        self.inner.abort(code)
    }
    fn can_fall_silent(&self) -> bool {
        false
    }
}

/// The first stream's bytes of a recording opener.
fn first_stream(streams: &Arc<Mutex<Vec<Recording>>>) -> Vec<u8> {
    let streams = streams.lock().expect("not poisoned");
    streams.first().map(take).unwrap_or_default()
}

/// An honest in-memory run of `protocol`, two ranks per party (threads), each rank with
/// its party's replayed entropy; per party, what rank 0 and rank 1 received.
fn cluster_run_recorded(protocol: Protocol) -> [[Received; 2]; 2] {
    const TIMEOUT: Duration = Duration::from_secs(20);
    let (ca, cb) = MemoryChannel::pair();
    let (own_a, own_b) = MemoryStreams::pair(TIMEOUT);
    let (pair_a, pair_b) = MemoryStreams::pair(TIMEOUT);
    let party = |me: Party, ch: MemoryChannel, own: MemoryStreams, pair: MemoryStreams| {
        let mut members = MemoryTeam::new(2, TIMEOUT).into_iter();
        let (to_rank0, to_rank1) = (Arc::default(), Arc::default());
        let rank0 = RecordingTeam {
            inner: members.next().expect("two members"),
            received: Arc::clone(&to_rank0),
        };
        let rank1 = RecordingTeam {
            inner: members.next().expect("two members"),
            received: Arc::clone(&to_rank1),
        };
        let (main, own_streams, pair_streams) = (Arc::default(), Arc::default(), Arc::default());
        let mut ch = Recorder {
            inner: timed(ch),
            received: Arc::clone(&main),
        };
        let mut opener = RecordingStreams {
            inner: own,
            received: Arc::clone(&own_streams),
        };
        let mut links = OpenerLinks(RecordingStreams {
            inner: pair,
            received: Arc::clone(&pair_streams),
        });
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                replay_entropy(Some(me));
                let end = run_rank1(me, protocol, &rank1, &mut links, &AtomicU64::new(0));
                replay_entropy(None);
                end
            });
            replay_entropy(Some(me));
            let outcome = run_rank0(
                me,
                protocol,
                &rank0,
                &mut ch,
                &mut opener,
                &AtomicU64::new(0),
            );
            replay_entropy(None);
            outcome.unwrap_or_else(|e| panic!("an honest rank 0 of {} fails: {e}", me.letter()));
            match worker.join().expect("the worker's thread does not panic") {
                Ok(WorkerEnd::Finished(_)) => {}
                other => panic!("an honest worker of {} ends with {other:?}", me.letter()),
            }
        });
        let taken =
            |m: &Arc<Mutex<Vec<Vec<u8>>>>| std::mem::take(&mut *m.lock().expect("not poisoned"));
        [
            Received {
                peer: take(&main),
                own_stream: first_stream(&own_streams),
                from_teammate: taken(&to_rank0),
            },
            Received {
                peer: first_stream(&pair_streams),
                own_stream: Vec::new(),
                from_teammate: taken(&to_rank1),
            },
        ]
    };
    std::thread::scope(|s| {
        let a = s.spawn(|| party(Party::A, ca, own_a, pair_a));
        let b = party(Party::B, cb, own_b, pair_b);
        [a.join().expect("party A's thread does not panic"), b]
    })
}
