//! Cut-and-choose Yao ([`super::cut_and_choose`]) with each party a cluster of K ranks:
//! the circuit copies spread over the ranks, as the billion-gate system of Kreuter,
//! shelat and Shen ran its copies (USENIX Security 2012, §6: each party a root process
//! and slave processes, slave i of the generator paired with slave i of the evaluator,
//! each pair handling its own share of the copies; §4.5's lockstep groups within a rank).
//!
//! # Who does what
//!
//! Rank 0 of each party runs the protocol of [`super::cut_and_choose`] with its peer's
//! rank 0, unchanged on the main connection: the seed commitments (step 1), the OT for
//! B's input (2), A's input commitments (3), the hash matrix (4), the check set (6), the
//! openings of step 7 with the input-consistency check, B's check of the OT labels of the
//! checked copies, the majority vote and the MAC (9). The per-copy work, which is all of
//! the circuit-sized work, is spread (copy j of step 5 to rank j mod K; the i-th checked
//! and the i-th evaluated copy of steps 7–8 to rank i mod K, rank 0 included):
//!
//! ```text
//!   A rank 0 ──main connection (steps 1–9, rank 0's share of the tables)── B rank 0
//!     │ MPI: Commit{seeds, E and M seeds} ▲ commitments,      │ MPI: Check{seeds, commitments,
//!     │      Stream{seeds}                │ decoding bits     │  A's and B's input labels} ▲
//!     ▼                                   │                   ▼        decoded outputs or │
//!   A rank i ──its own TCP stream: evaluated copies' tables──▶ B rank i    the failed check
//! ```
//!
//! - **A's rank i** garbles its share of the copies from their seeds to commit to them
//!   (step 5; it returns the commitments and the decoding bits), and after the check set
//!   garbles its share of the evaluated copies again, streaming their tables to B's rank i
//!   over the rank pair's own TCP stream: tables never pass through rank 0.
//! - **B's rank i** regenerates its share of the checked copies from their opened seeds and
//!   compares them with their commitments, and evaluates its share of the evaluated copies
//!   with the tables from A's rank i, checking them against their commitments; it returns
//!   the decoded output bits of each copy, or the failed check by name (which rank 0
//!   reports as the run's [`ProtocolError::CheatDetected`]).
//!
//! Every copy is garbled, checked and evaluated exactly as in one process, so the outputs
//! (a strict majority of the evaluated copies) are the same for any K. The set-up of the
//! rank pairs is the semi-honest cluster's ([`crate::cluster`]: the rank-count exchange,
//! [`Msg::Setup`] without Δ, addresses, one stream per pair under the main connection's
//! channel security), as are the heartbeats and the failure reports naming a rank.
//!
//! # Who learns what
//!
//! A's ranks are one trust domain: rank 0 sends its workers copy seeds, from which every
//! label and Δ of those copies follows, over MPI (unencrypted). B's ranks are another:
//! B's rank 0 sends its workers the opened seeds (which A revealed anyway), A's input
//! labels of the evaluated copies and B's own input labels, which together encode B's
//! input. Neither party's ranks learn anything of the other party beyond what its rank 0
//! learns in the single-process protocol, and the guarantee against a malicious peer is
//! unchanged (KSS12 §3, cheating succeeds with probability at most 2^-S): the check set is
//! drawn by B's rank 0 after A's rank 0 committed to every copy, and B's ranks check every
//! copy against those commitments whatever rank garbled it.

use std::sync::atomic::{AtomicU64, Ordering};

use pgc_circuit::{GateSource, Visibility};
use pgc_crypto::{Block, Prg};
use pgc_net::Channel;

use super::cut_and_choose::{
    Cheat, Committed, CopyWork, Encoding, EvalCopy, HashMatrix, Shape, share_of,
};
use crate::cluster::heartbeat::{Clock, pumped};
use crate::cluster::plan::{Reader, put_str};
use crate::cluster::{
    Msg, RankLinks, Summary, Team, WorkerEnd, WorkerSetup, accept_setup, check_team_size, hear,
    link_workers, name_failed_worker, open_peer, rank_failed, rank_name, report_failure,
    unexpected,
};
use crate::yao::{Outcome, Party, ProtocolError, pack_bits, unpack_bits};

/// Rank 0 of party `me` in a cut-and-choose cluster run at statistical security
/// `stat_sec`: [`super::run_cut_and_choose`] with the copies spread over `team` (see the
/// module doc). `peer_host`: the peer's host as the main connection sees it. On an error
/// the workers are told to stop; the caller reports it and then calls [`Team::abort`].
#[allow(clippy::too_many_arguments)]
pub fn run_cut_and_choose_coordinator<S: GateSource>(
    team: &dyn Team,
    peer_host: &str,
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    stat_sec: u32,
    threads: usize,
    progress: &AtomicU64,
) -> Result<Outcome, ProtocolError> {
    coordinator_with(
        team,
        peer_host,
        ch,
        circuit,
        owners,
        visibility,
        me,
        inputs,
        stat_sec,
        threads,
        progress,
        Cheat::Honest,
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn coordinator_with<S: GateSource>(
    team: &dyn Team,
    peer_host: &str,
    ch: &mut impl Channel,
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    me: Party,
    inputs: &[Vec<bool>],
    stat_sec: u32,
    threads: usize,
    progress: &AtomicU64,
    cheat: Cheat,
) -> Result<Outcome, ProtocolError> {
    let k = team.size();
    if team.rank() != 0 {
        return Err(ProtocolError::Input(format!(
            "the cut-and-choose coordinator runs on rank 0, not rank {}",
            team.rank()
        )));
    }
    check_team_size(k)?;
    let workers: Vec<usize> = (1..k).collect();
    pumped(
        team,
        &workers,
        Clock::FromStart,
        &rank_name(me, 0, k),
        |team| {
            let ranks = Ranks {
                team,
                me,
                peer_host: peer_host.to_string(),
            };
            let result = super::cut_and_choose::run_with(
                ch,
                circuit,
                owners,
                visibility,
                me,
                inputs,
                stat_sec,
                threads,
                &mut |n| progress.store(n, Ordering::Relaxed),
                cheat,
                Some(&ranks),
            );
            // A link of rank 0 that broke usually means the peer's party ended because one of
            // its ranks failed, which this party's worker paired with it may be reporting: name
            // that rank if it does so soon.
            let result = match result {
                Err(ProtocolError::Net(e)) => match name_failed_worker(me, team) {
                    Some(named) => Err(ProtocolError::Incomplete(format!(
                        "{named} (rank 0 saw: {e})"
                    ))),
                    None => Err(ProtocolError::Net(e)),
                },
                other => other,
            };
            let stop = if result.is_ok() {
                Msg::Finish
            } else {
                Msg::Stop
            };
            for r in 1..k {
                // Best effort: a worker that has left needs no stop.
                let _ = team.send(r, &stop.to_bytes());
            }
            let mut outcome = result?;
            // The workers' rank-pair bytes join the run's.
            for r in 1..k {
                match hear(team, me, r)? {
                    Msg::Summary(sum) => {
                        team.release(r);
                        outcome.stats.bytes_sent += sum.bytes_sent;
                        outcome.stats.bytes_received += sum.bytes_received;
                    }
                    m => return Err(unexpected(me, r, k, "a summary", &m)),
                }
            }
            Ok(outcome)
        },
    )
}

/// Rank 0's handle on its workers, used by [`super::cut_and_choose`] at each step.
pub(crate) struct Ranks<'t> {
    team: &'t dyn Team,
    me: Party,
    peer_host: String,
}

impl Ranks<'_> {
    pub(super) fn size(&self) -> usize {
        self.team.size()
    }

    fn tell(&self, r: usize, job: &Job) -> Result<(), ProtocolError> {
        self.team.send(r, &Msg::Copies(job.to_bytes()).to_bytes())
    }

    fn hear_done(&self, r: usize) -> Result<Done, ProtocolError> {
        let k = self.size();
        match hear(self.team, self.me, r)? {
            Msg::Copies(b) => Done::from_bytes(&b)
                .ok_or_else(|| rank_failed(self.me, r, k, "sent a malformed result")),
            m => Err(unexpected(self.me, r, k, "a cut-and-choose result", &m)),
        }
    }

    fn bad_result(&self, r: usize, what: &str) -> ProtocolError {
        rank_failed(self.me, r, self.size(), what)
    }

    /// After the handshake: the rank pairs' streams (A draws their token and sends it on
    /// the authenticated main connection), then the run's shape to every worker.
    pub(super) fn link<S: GateSource>(
        &self,
        ch: &mut impl Channel,
        circuit: &S,
        owners: &[Party],
        visibility: &[Visibility],
        stat_sec: u32,
        threads: usize,
    ) -> Result<(), ProtocolError> {
        let token: [u8; 16] = match self.me {
            Party::A => {
                let mut t = [0u8; 16];
                Prg::from_os_entropy().fill_bytes(&mut t);
                ch.send_frame(&t)?;
                ch.flush()?;
                t
            }
            Party::B => ch
                .recv_frame(16)?
                .try_into()
                .map_err(|_| ProtocolError::Peer("a malformed rank token".into()))?,
        };
        link_workers(
            self.team,
            self.me,
            ch,
            &Msg::Setup {
                threads: threads as u32,
                token,
                fingerprint: circuit.fingerprint(),
                hash_key: Block::ZERO,
                delta: None,
                peer_host: self.peer_host.clone(),
            },
        )?;
        let shape = Job::Shape {
            stat_sec,
            owners: owners.to_vec(),
            visibility: visibility.to_vec(),
        };
        for r in 1..self.size() {
            self.tell(r, &shape)?;
        }
        Ok(())
    }

    /// A, step 5: each worker's share of the copies to commit to.
    pub(super) fn send_commit_jobs(
        &self,
        seeds: &[Block],
        encoding_seed: Block,
        matrix_seed: Block,
    ) -> Result<(), ProtocolError> {
        let all: Vec<usize> = (0..seeds.len()).collect();
        for r in 1..self.size() {
            let copies = share_of(&all, self.size(), r)
                .into_iter()
                .map(|j| (j, seeds[j]))
                .collect();
            self.tell(
                r,
                &Job::Commit {
                    encoding_seed,
                    matrix_seed,
                    copies,
                },
            )?;
        }
        Ok(())
    }

    /// A, step 5: the workers' commitments and decoding bits.
    pub(super) fn collect_commits(
        &self,
        shape: &Shape,
        commitments: &mut [[u8; 32]],
        decode_info: &mut [(Vec<bool>, Vec<bool>)],
    ) -> Result<(), ProtocolError> {
        let all: Vec<usize> = (0..commitments.len()).collect();
        for r in 1..self.size() {
            let Done::Committed(list) = self.hear_done(r)? else {
                return Err(self.bad_result(r, "sent another result than its commitments"));
            };
            let want = share_of(&all, self.size(), r);
            let fits = list.len() == want.len()
                && list.iter().zip(&want).all(|(c, &j)| {
                    c.copy == j
                        && c.decoding.len() == shape.decoded.len()
                        && c.hash_decoding.len() == shape.rows
                });
            if !fits {
                return Err(self.bad_result(r, "committed to other copies than its share"));
            }
            for c in list {
                commitments[c.copy] = c.commitment;
                decode_info[c.copy] = (c.decoding, c.hash_decoding);
            }
        }
        Ok(())
    }

    /// A, step 7: each worker's share of the evaluated copies to stream to its peer rank.
    pub(super) fn send_stream_jobs(
        &self,
        evaluated: &[usize],
        seeds: &[Block],
    ) -> Result<(), ProtocolError> {
        for r in 1..self.size() {
            let copies = share_of(evaluated, self.size(), r)
                .into_iter()
                .map(|j| (j, seeds[j]))
                .collect();
            self.tell(r, &Job::Stream { copies })?;
        }
        Ok(())
    }

    /// A, step 7: every worker has sent its tables.
    pub(super) fn collect_streamed(&self) -> Result<(), ProtocolError> {
        for r in 1..self.size() {
            let Done::Streamed = self.hear_done(r)? else {
                return Err(self.bad_result(r, "sent another result than its stream's end"));
            };
        }
        Ok(())
    }

    /// B, step 8: each worker's share of the checked and evaluated copies, with what it
    /// needs to check and evaluate them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_check_jobs(
        &self,
        checked_list: &[usize],
        seeds: &[Block],
        copy_commits: &[u8],
        eval_copies: &[EvalCopy],
        enc_labels: &[Vec<Block>],
        encoding_seed: Block,
        matrix_seed: Block,
    ) -> Result<(), ProtocolError> {
        let k = self.size();
        let commitment = |j: usize| -> [u8; 32] {
            copy_commits[32 * j..32 * j + 32]
                .try_into()
                .expect("32 bytes")
        };
        for r in 1..k {
            let checked = checked_list
                .iter()
                .zip(seeds)
                .skip(r)
                .step_by(k)
                .map(|(&j, &seed)| (j, seed, commitment(j)))
                .collect();
            let evals = eval_copies
                .iter()
                .skip(r)
                .step_by(k)
                .map(|c| EvalJob {
                    copy: c.copy,
                    hash_key: c.hash_key,
                    labels: c.labels.clone(),
                    enc_labels: enc_labels[c.copy].clone(),
                    decoding: c.decoding.clone(),
                    hash_decoding: c.hash_decoding.clone(),
                    commitment: commitment(c.copy),
                })
                .collect();
            self.tell(
                r,
                &Job::Check {
                    encoding_seed,
                    matrix_seed,
                    checked,
                    evals,
                },
            )?;
        }
        Ok(())
    }

    /// B, step 8: the workers' decoded outputs, or the first failed check (by rank). Each
    /// worker must return exactly its share of `eval_copies`, in order: an output more (a
    /// copy twice, one of another rank's) would be a vote more in the majority.
    pub(super) fn collect_checks(
        &self,
        shape: &Shape,
        eval_copies: &[EvalCopy],
    ) -> Result<Vec<(usize, Vec<bool>)>, ProtocolError> {
        let k = self.size();
        let mut out = Vec::new();
        for r in 1..k {
            match self.hear_done(r)? {
                Done::Checked(Ok(list)) => {
                    let share = eval_copies.iter().skip(r).step_by(k).map(|c| c.copy);
                    if !list.iter().map(|(j, _)| *j).eq(share) {
                        return Err(
                            self.bad_result(r, "returned outputs of other copies than its share")
                        );
                    }
                    if list
                        .iter()
                        .any(|(_, bits)| bits.len() != shape.decoded.len())
                    {
                        return Err(self.bad_result(r, "returned outputs of the wrong length"));
                    }
                    out.extend(list);
                }
                Done::Checked(Err(why)) => return Err(ProtocolError::CheatDetected(why)),
                _ => return Err(self.bad_result(r, "sent another result than its checks")),
            }
        }
        Ok(out)
    }
}

/// A worker rank (> 0) of party `me` in a cut-and-choose cluster run, until its rank 0
/// says the run is done or stops it. `links` reaches the peer rank; `progress` counts the
/// ANDs of its current pass. A failure is reported to rank 0 (which names this rank) and
/// returned once rank 0 has stopped the run.
pub fn run_cut_and_choose_worker<S: GateSource>(
    me: Party,
    team: &dyn Team,
    circuit: &S,
    links: &mut dyn RankLinks,
    progress: &AtomicU64,
) -> Result<WorkerEnd, ProtocolError> {
    worker_with(me, team, circuit, links, progress, Cheat::Honest)
}

pub(crate) fn worker_with<S: GateSource>(
    me: Party,
    team: &dyn Team,
    circuit: &S,
    links: &mut dyn RankLinks,
    progress: &AtomicU64,
    cheat: Cheat,
) -> Result<WorkerEnd, ProtocolError> {
    let rank = team.rank();
    if rank == 0 {
        return Err(ProtocolError::Input(
            "a cut-and-choose worker runs on rank > 0 (rank 0 coordinates)".into(),
        ));
    }
    check_team_size(team.size())?;
    let who = rank_name(me, rank, team.size());
    pumped(team, &[0], Clock::FromFirstMessage, &who, |team| {
        let mut w = Worker {
            me,
            team,
            circuit,
            links,
            progress,
            cheat,
            setup: None,
            stream: None,
            shape: None,
            encoding: None,
        };
        match w.serve() {
            Ok(Some(summary)) => Ok(WorkerEnd::Finished(summary)),
            Ok(None) => Ok(WorkerEnd::Stopped),
            Err(failure) => report_failure(team, failure),
        }
    })
}

struct Worker<'a, S: GateSource> {
    me: Party,
    team: &'a dyn Team,
    circuit: &'a S,
    links: &'a mut dyn RankLinks,
    progress: &'a AtomicU64,
    cheat: Cheat,
    setup: Option<WorkerSetup>,
    stream: Option<Box<dyn Channel>>,
    shape: Option<Shape>,
    /// The input encoding of the run (its seed, from the first job that names it).
    encoding: Option<(Block, Encoding)>,
}

impl<S: GateSource> Worker<'_, S> {
    fn reply(&self, done: &Done) -> Result<(), ProtocolError> {
        self.team.send(0, &Msg::Copies(done.to_bytes()).to_bytes())
    }

    /// `Ok(Some)`: finished; `Ok(None)`: stopped by rank 0.
    fn serve(&mut self) -> Result<Option<Summary>, ProtocolError> {
        loop {
            let msg = Msg::from_bytes(&self.team.recv(0)?, "rank 0")?;
            match msg {
                Msg::Setup { delta: Some(_), .. } => {
                    return Err(ProtocolError::Peer(
                        "rank 0 sent Δ to a cut-and-choose rank (its copies' Δs come from \
                         their seeds)"
                            .into(),
                    ));
                }
                Msg::Setup { .. } => {
                    let (setup, advert) = accept_setup(
                        self.links,
                        self.team.rank(),
                        self.circuit.fingerprint(),
                        &msg,
                    )?;
                    self.setup = Some(setup);
                    self.team.send(0, &Msg::Ready { advert }.to_bytes())?;
                }
                Msg::Peer { advert } => {
                    let setup = self.setup.as_ref().ok_or_else(|| {
                        ProtocolError::Peer("rank 0 sent the peer address before the set-up".into())
                    })?;
                    let mut streams = open_peer(self.links, setup, advert.as_deref(), 1)?;
                    self.stream = streams.pop();
                    self.team.send(0, &Msg::Opened.to_bytes())?;
                }
                Msg::Copies(bytes) => {
                    let job = Job::from_bytes(&bytes)
                        .ok_or_else(|| ProtocolError::Peer("rank 0 sent a malformed job".into()))?;
                    if let Some(done) = self.run(job)? {
                        self.reply(&done)?;
                    }
                }
                Msg::Finish => {
                    let c = self.stream.as_ref().map(|s| s.counts()).unwrap_or_default();
                    let sum = Summary {
                        bytes_sent: c.sent,
                        bytes_received: c.received,
                        ..Summary::default()
                    };
                    self.team.send(0, &Msg::Summary(sum).to_bytes())?;
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

    fn encoding(&mut self, seed: Block) -> Result<&Encoding, ProtocolError> {
        let shape = self.shape(&"a job")?;
        let (b_len, stat_sec) = (shape.b_wires.len(), shape.stat_sec);
        if self.encoding.as_ref().is_none_or(|(s, _)| *s != seed) {
            self.encoding = Some((seed, Encoding::new(b_len, stat_sec, seed)));
        }
        Ok(&self.encoding.as_ref().expect("just set").1)
    }

    fn shape(&self, what: &&str) -> Result<&Shape, ProtocolError> {
        self.shape
            .as_ref()
            .ok_or_else(|| ProtocolError::Peer(format!("rank 0 sent {what} before the shape")))
    }

    fn must_be(&self, party: Party, job: &str) -> Result<(), ProtocolError> {
        if self.me != party {
            return Err(ProtocolError::Peer(format!(
                "rank 0 sent {job} to a rank of party {}",
                self.me.letter()
            )));
        }
        Ok(())
    }

    /// Runs one job; `Some`: the result to return to rank 0.
    fn run(&mut self, job: Job) -> Result<Option<Done>, ProtocolError> {
        let progress = self.progress;
        let mut count = |n: u64| progress.store(n, Ordering::Relaxed);
        match job {
            Job::Shape {
                stat_sec,
                owners,
                visibility,
            } => {
                let layout = self.circuit.layout();
                if owners.len() != layout.input_widths.len()
                    || visibility.len() != layout.output_widths.len()
                    || !(1..=super::MAX_STAT_SEC).contains(&stat_sec)
                {
                    return Err(ProtocolError::Peer(
                        "rank 0's input owners, output visibility or S do not fit this \
                         rank's circuit"
                            .into(),
                    ));
                }
                self.shape = Some(Shape::new(self.circuit, &owners, &visibility, stat_sec));
                Ok(None)
            }
            Job::Commit {
                encoding_seed,
                matrix_seed,
                copies,
            } => {
                self.must_be(Party::A, "copies to commit to")?;
                self.check_copies(copies.iter().map(|c| c.0))?;
                self.encoding(encoding_seed)?;
                let shape = self.shape(&"a job")?;
                let matrix = HashMatrix::new(matrix_seed, shape.rows, shape.ext_len);
                let committed = self.work()?.commit(&copies, &matrix, &mut count)?;
                Ok(Some(Done::Committed(committed)))
            }
            Job::Stream { copies } => {
                self.must_be(Party::A, "copies to stream")?;
                self.check_copies(copies.iter().map(|c| c.0))?;
                let mut stream = self.stream.take().ok_or_else(|| {
                    ProtocolError::Peer("rank 0 sent copies to stream before the link".into())
                })?;
                self.work()?.stream(&mut stream, &copies, &mut count)?;
                self.stream = Some(stream);
                Ok(Some(Done::Streamed))
            }
            Job::Check {
                encoding_seed,
                matrix_seed,
                checked,
                evals,
            } => {
                self.must_be(Party::B, "copies to check")?;
                self.check_copies(
                    checked
                        .iter()
                        .map(|c| c.0)
                        .chain(evals.iter().map(|e| e.copy)),
                )?;
                self.encoding(encoding_seed)?;
                let shape = self.shape(&"a job")?;
                let matrix = HashMatrix::new(matrix_seed, shape.rows, shape.ext_len);
                let enc_len = self.encoding.as_ref().expect("set above").1.len;
                let fits = evals.iter().all(|e| {
                    e.labels.len() == shape.ext_len
                        && e.enc_labels.len() == enc_len
                        && e.decoding.len() == shape.decoded.len()
                        && e.hash_decoding.len() == shape.rows
                });
                if !fits {
                    return Err(ProtocolError::Peer(
                        "rank 0 sent an evaluated copy with labels or decoding bits of the \
                         wrong length"
                            .into(),
                    ));
                }
                let mut stream = self.stream.take().ok_or_else(|| {
                    ProtocolError::Peer("rank 0 sent copies to check before the link".into())
                })?;
                let work = self.work()?;
                let seeds: Vec<(usize, Block)> = checked.iter().map(|c| (c.0, c.1)).collect();
                let commitment_of = |j: usize| -> [u8; 32] {
                    checked
                        .iter()
                        .map(|c| (c.0, c.2))
                        .chain(evals.iter().map(|e| (e.copy, e.commitment)))
                        .find(|&(c, _)| c == j)
                        .map(|(_, h)| h)
                        .unwrap_or([0; 32])
                };
                let copies: Vec<EvalCopy> = evals
                    .iter()
                    .map(|e| EvalCopy {
                        copy: e.copy,
                        hash_key: e.hash_key,
                        labels: e.labels.clone(),
                        decoding: e.decoding.clone(),
                        hash_decoding: e.hash_decoding.clone(),
                    })
                    .collect();
                let refs: Vec<&EvalCopy> = copies.iter().collect();
                let enc_of = |j: usize| -> &[Block] {
                    evals
                        .iter()
                        .find(|e| e.copy == j)
                        .map(|e| &e.enc_labels[..])
                        .unwrap_or(&[])
                };
                let verdict = work
                    .check(&mut stream, &seeds, &commitment_of, &matrix, &mut count)
                    .and_then(|()| {
                        work.evaluate(&mut stream, &refs, &enc_of, &commitment_of, &mut count)
                    });
                self.stream = Some(stream);
                match verdict {
                    Ok(results) => Ok(Some(Done::Checked(Ok(results)))),
                    // A cheat is the run's verdict, reported by rank 0; anything else
                    // (a broken link) is this rank's failure.
                    Err(ProtocolError::CheatDetected(why)) => Ok(Some(Done::Checked(Err(why)))),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// The copies of a job exist and are distinct.
    fn check_copies(&self, copies: impl Iterator<Item = usize>) -> Result<(), ProtocolError> {
        let n = self.shape(&"a job")?.plan.copies;
        let mut seen = vec![false; n];
        for j in copies {
            if j >= n || std::mem::replace(&mut seen[j], true) {
                return Err(ProtocolError::Peer(format!(
                    "rank 0 sent copy {j} twice or out of range (the run has {n} copies)"
                )));
            }
        }
        Ok(())
    }

    fn work(&self) -> Result<CopyWork<'_, S>, ProtocolError> {
        let shape = self.shape(&"a job")?;
        let encoding = &self
            .encoding
            .as_ref()
            .ok_or_else(|| ProtocolError::Peer("rank 0 sent copies before the encoding".into()))?
            .1;
        Ok(CopyWork {
            circuit: self.circuit,
            shape,
            encoding,
            threads: self.setup.as_ref().map_or(1, |s| s.threads),
            cheat: self.cheat,
        })
    }
}

/// An evaluated copy for a worker of B: its keys, both parties' input labels, decoding
/// bits and commitment.
struct EvalJob {
    copy: usize,
    hash_key: Block,
    labels: Vec<Block>,
    enc_labels: Vec<Block>,
    decoding: Vec<bool>,
    hash_decoding: Vec<bool>,
    commitment: [u8; 32],
}

/// Rank 0 → worker, inside [`Msg::Copies`].
enum Job {
    /// The run's shape: S, input owners and output visibility (sent once).
    Shape {
        stat_sec: u32,
        owners: Vec<Party>,
        visibility: Vec<Visibility>,
    },
    /// A, step 5: garble and commit to these (copy, seed).
    Commit {
        encoding_seed: Block,
        matrix_seed: Block,
        copies: Vec<(usize, Block)>,
    },
    /// A, step 7: garble these again and stream their tables to the peer rank.
    Stream { copies: Vec<(usize, Block)> },
    /// B, step 8: check these (copy, seed, commitment) and evaluate these.
    Check {
        encoding_seed: Block,
        matrix_seed: Block,
        checked: Vec<(usize, Block, [u8; 32])>,
        evals: Vec<EvalJob>,
    },
}

/// Worker → rank 0, inside [`Msg::Copies`].
enum Done {
    Committed(Vec<Committed>),
    Streamed,
    /// Each evaluated copy's decoded output bits, or the failed check.
    Checked(Result<Vec<(usize, Vec<bool>)>, String>),
}

const J_SHAPE: u8 = 1;
const J_COMMIT: u8 = 2;
const J_STREAM: u8 = 3;
const J_CHECK: u8 = 4;
const D_COMMITTED: u8 = 11;
const D_STREAMED: u8 = 12;
const D_CHECKED_OK: u8 = 13;
const D_CHECKED_CHEAT: u8 = 14;

fn put_u32(b: &mut Vec<u8>, v: usize) {
    b.extend_from_slice(&(v as u32).to_le_bytes());
}

fn put_blocks(b: &mut Vec<u8>, v: &[Block]) {
    put_u32(b, v.len());
    b.extend_from_slice(Block::slice_as_bytes(v));
}

fn put_bits(b: &mut Vec<u8>, v: &[bool]) {
    put_u32(b, v.len());
    b.extend_from_slice(&pack_bits(v));
}

fn get_u32(r: &mut Reader<'_>) -> Option<usize> {
    Some(u32::from_le_bytes(r.array()?) as usize)
}

fn get_block(r: &mut Reader<'_>) -> Option<Block> {
    Some(Block::from_bytes(r.array()?))
}

fn get_blocks(r: &mut Reader<'_>) -> Option<Vec<Block>> {
    let n = get_u32(r)?;
    let bytes = r.take(n.checked_mul(16)?)?;
    Some(
        bytes
            .chunks_exact(16)
            .map(|c| Block::from_bytes(c.try_into().expect("16 bytes")))
            .collect(),
    )
}

fn get_bits(r: &mut Reader<'_>) -> Option<Vec<bool>> {
    let n = get_u32(r)?;
    unpack_bits(r.take(n.div_ceil(8))?, n)
}

/// `n` items read by `item`, after their count.
fn get_list<T>(r: &mut Reader<'_>, item: impl Fn(&mut Reader<'_>) -> Option<T>) -> Option<Vec<T>> {
    let n = get_u32(r)?;
    // Every item takes at least one byte: a count beyond the bytes left is malformed.
    if n > r.rest.len() {
        return None;
    }
    (0..n).map(|_| item(r)).collect()
}

impl Job {
    fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let seeded = |b: &mut Vec<u8>, copies: &[(usize, Block)]| {
            put_u32(b, copies.len());
            for &(j, s) in copies {
                put_u32(b, j);
                b.extend_from_slice(&s.to_bytes());
            }
        };
        match self {
            Job::Shape {
                stat_sec,
                owners,
                visibility,
            } => {
                b.push(J_SHAPE);
                put_u32(&mut b, *stat_sec as usize);
                put_u32(&mut b, owners.len());
                b.extend(owners.iter().map(|&p| (p == Party::B) as u8));
                put_u32(&mut b, visibility.len());
                b.extend(visibility.iter().map(|v| match v {
                    Visibility::Both => 0u8,
                    Visibility::A => 1,
                    Visibility::B => 2,
                }));
            }
            Job::Commit {
                encoding_seed,
                matrix_seed,
                copies,
            } => {
                b.push(J_COMMIT);
                b.extend_from_slice(&encoding_seed.to_bytes());
                b.extend_from_slice(&matrix_seed.to_bytes());
                seeded(&mut b, copies);
            }
            Job::Stream { copies } => {
                b.push(J_STREAM);
                seeded(&mut b, copies);
            }
            Job::Check {
                encoding_seed,
                matrix_seed,
                checked,
                evals,
            } => {
                b.push(J_CHECK);
                b.extend_from_slice(&encoding_seed.to_bytes());
                b.extend_from_slice(&matrix_seed.to_bytes());
                put_u32(&mut b, checked.len());
                for (j, s, h) in checked {
                    put_u32(&mut b, *j);
                    b.extend_from_slice(&s.to_bytes());
                    b.extend_from_slice(h);
                }
                put_u32(&mut b, evals.len());
                for e in evals {
                    put_u32(&mut b, e.copy);
                    b.extend_from_slice(&e.hash_key.to_bytes());
                    put_blocks(&mut b, &e.labels);
                    put_blocks(&mut b, &e.enc_labels);
                    put_bits(&mut b, &e.decoding);
                    put_bits(&mut b, &e.hash_decoding);
                    b.extend_from_slice(&e.commitment);
                }
            }
        }
        b
    }

    fn from_bytes(bytes: &[u8]) -> Option<Job> {
        let (&tag, rest) = bytes.split_first()?;
        let mut r = Reader { rest };
        let seeded = |r: &mut Reader<'_>| get_list(r, |r| Some((get_u32(r)?, get_block(r)?)));
        let job = match tag {
            J_SHAPE => {
                let stat_sec = get_u32(&mut r)? as u32;
                let owners = get_list(&mut r, |r| match r.byte()? {
                    0 => Some(Party::A),
                    1 => Some(Party::B),
                    _ => None,
                })?;
                let visibility = get_list(&mut r, |r| match r.byte()? {
                    0 => Some(Visibility::Both),
                    1 => Some(Visibility::A),
                    2 => Some(Visibility::B),
                    _ => None,
                })?;
                Job::Shape {
                    stat_sec,
                    owners,
                    visibility,
                }
            }
            J_COMMIT => Job::Commit {
                encoding_seed: get_block(&mut r)?,
                matrix_seed: get_block(&mut r)?,
                copies: seeded(&mut r)?,
            },
            J_STREAM => Job::Stream {
                copies: seeded(&mut r)?,
            },
            J_CHECK => Job::Check {
                encoding_seed: get_block(&mut r)?,
                matrix_seed: get_block(&mut r)?,
                checked: get_list(&mut r, |r| Some((get_u32(r)?, get_block(r)?, r.array()?)))?,
                evals: get_list(&mut r, |r| {
                    Some(EvalJob {
                        copy: get_u32(r)?,
                        hash_key: get_block(r)?,
                        labels: get_blocks(r)?,
                        enc_labels: get_blocks(r)?,
                        decoding: get_bits(r)?,
                        hash_decoding: get_bits(r)?,
                        commitment: r.array()?,
                    })
                })?,
            },
            _ => return None,
        };
        r.rest.is_empty().then_some(job)
    }
}

impl Done {
    fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Done::Committed(list) => {
                b.push(D_COMMITTED);
                put_u32(&mut b, list.len());
                for c in list {
                    put_u32(&mut b, c.copy);
                    b.extend_from_slice(&c.commitment);
                    put_bits(&mut b, &c.decoding);
                    put_bits(&mut b, &c.hash_decoding);
                }
            }
            Done::Streamed => b.push(D_STREAMED),
            Done::Checked(Ok(list)) => {
                b.push(D_CHECKED_OK);
                put_u32(&mut b, list.len());
                for (j, bits) in list {
                    put_u32(&mut b, *j);
                    put_bits(&mut b, bits);
                }
            }
            Done::Checked(Err(why)) => {
                b.push(D_CHECKED_CHEAT);
                put_str(&mut b, why);
            }
        }
        b
    }

    fn from_bytes(bytes: &[u8]) -> Option<Done> {
        let (&tag, rest) = bytes.split_first()?;
        let mut r = Reader { rest };
        let done = match tag {
            D_COMMITTED => Done::Committed(get_list(&mut r, |r| {
                Some(Committed {
                    copy: get_u32(r)?,
                    commitment: r.array()?,
                    decoding: get_bits(r)?,
                    hash_decoding: get_bits(r)?,
                })
            })?),
            D_STREAMED => Done::Streamed,
            D_CHECKED_OK => {
                Done::Checked(Ok(get_list(&mut r, |r| Some((get_u32(r)?, get_bits(r)?)))?))
            }
            D_CHECKED_CHEAT => Done::Checked(Err(r.string()?)),
            _ => return None,
        };
        r.rest.is_empty().then_some(done)
    }
}

/// Encoded samples of every job and result, for the codec's tests.
#[cfg(test)]
pub(super) fn codec_samples() -> Vec<Vec<u8>> {
    let b = |v: u128| Block::new(v);
    let jobs = [
        Job::Shape {
            stat_sec: 40,
            owners: vec![Party::A, Party::B],
            visibility: vec![Visibility::Both, Visibility::A, Visibility::B],
        },
        Job::Commit {
            encoding_seed: b(1),
            matrix_seed: b(2),
            copies: vec![(0, b(3)), (5, b(4))],
        },
        Job::Stream {
            copies: vec![(7, b(5))],
        },
        Job::Check {
            encoding_seed: b(1),
            matrix_seed: b(2),
            checked: vec![(1, b(6), [7; 32])],
            evals: vec![EvalJob {
                copy: 2,
                hash_key: b(8),
                labels: vec![b(9), b(10)],
                enc_labels: vec![b(11)],
                decoding: vec![true, false, true],
                hash_decoding: vec![false; 9],
                commitment: [3; 32],
            }],
        },
    ];
    let dones = [
        Done::Committed(vec![Committed {
            copy: 4,
            commitment: [1; 32],
            decoding: vec![true],
            hash_decoding: vec![true, true],
        }]),
        Done::Streamed,
        Done::Checked(Ok(vec![(3, vec![true, false])])),
        Done::Checked(Err("checked copy 3 …".into())),
    ];
    let mut out: Vec<Vec<u8>> = jobs.iter().map(Job::to_bytes).collect();
    out.extend(dones.iter().map(Done::to_bytes));
    out
}

/// `bytes` decoded as a job or a result (their tags differ) and encoded again.
#[cfg(test)]
pub(super) fn reencode(bytes: &[u8]) -> Option<Vec<u8>> {
    Job::from_bytes(bytes)
        .map(|j| j.to_bytes())
        .or_else(|| Done::from_bytes(bytes).map(|d| d.to_bytes()))
}
