//! Heartbeats between a party's ranks, so that a rank that stops answering (stopped,
//! deadlocked in MPI, its node gone without `mpirun`/`srun` noticing) fails the run within
//! a bound instead of leaving the others waiting forever.
//!
//! The thread that calls [`pumped`] (under MPI the one that initialized it: MPI is
//! `FUNNELED`) becomes the rank's *pump*: it alone calls the real [`Team`]. The protocol
//! runs on a thread of its own against a [`Relay`] team whose messages the pump carries.
//! Every [`HEARTBEAT_EVERY`] (or a quarter of the bound, if shorter) the pump sends each watched rank (rank 0 watches its workers,
//! a worker watches rank 0) a heartbeat, an empty message, which no protocol message is;
//! it keeps doing so while the protocol computes for as long as it likes. A watched rank
//! from which nothing, not even a heartbeat, arrived for the team's
//! [`Team::silence_bound`] is *lost*: the protocol's next wait for it fails with an error
//! saying so (rank 0 names the rank and party). If the protocol is then still busy after
//! another bound (waiting on a TCP peer, say), the pump reports on stderr and ends the
//! party itself ([`Team::abort`], `MPI_Abort`), so no rank outlives a lost one by more than
//! about twice the bound.
//!
//! Rank 0 starts pumping only once it has reached its peer (which it waits for up to the
//! network timeout, then fails and ends the party): a worker counts rank 0's silence from
//! rank 0's first message ([`Clock::FromFirstMessage`]); rank 0 allows a worker
//! [`Team::first_contact_bound`] for its first message (it may still be loading the
//! program), then the silence bound between messages.
//!
//! A rank that has finished its part (a worker that sent its summary) is
//! [released](Team::release): its silence is then expected.
//!
//! A heartbeat proves that the rank's process runs and its MPI transport works; a protocol
//! thread stuck on a network peer is bounded by the run's network timeout instead.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use super::team::Team;
use crate::yao::ProtocolError;

/// How often a rank tells the ranks it talks to that it is alive.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// The silence bound a cluster run derives from its network timeout: the timeout, but at
/// least 3 heartbeats and at most [`MAX_SILENCE`] (a rank lost is reported within seconds
/// even under a long network timeout).
pub fn silence_bound(network_timeout: Duration) -> Duration {
    network_timeout.clamp(3 * HEARTBEAT_EVERY, MAX_SILENCE)
}

/// The longest silence a cluster run (`pgc run --cluster`) tolerates from a rank.
pub const MAX_SILENCE: Duration = Duration::from_secs(10);

/// The first and the longest pause of an idle pump.
const PUMP_FIRST: Duration = Duration::from_micros(20);
const PUMP_MAX: Duration = Duration::from_millis(1);
/// How often a protocol thread waiting on a relay looks whether its rank was lost.
const RELAY_POLL: Duration = Duration::from_millis(20);

enum Outgoing {
    Send(usize, Vec<u8>),
    Abort(i32),
}

/// The team the protocol thread sees: its messages go through the pump.
pub struct Relay {
    rank: usize,
    size: usize,
    silence: Duration,
    out: Sender<Outgoing>,
    /// `inbox[r]`: the messages of rank r (only for watched ranks).
    inbox: Vec<Option<Mutex<Receiver<Vec<u8>>>>>,
    /// `lost[r]`: why rank r is lost, once it is.
    lost: Mutex<Vec<Option<String>>>,
    /// `released[r]`: rank r has finished; it is no longer watched.
    released: Vec<AtomicBool>,
}

impl Relay {
    fn lost(&self, r: usize) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l[r].clone())
    }

    fn inbox(&self, from: usize) -> Result<&Mutex<Receiver<Vec<u8>>>, ProtocolError> {
        self.inbox
            .get(from)
            .and_then(|i| i.as_ref())
            .ok_or_else(|| ProtocolError::Input(format!("rank {from} is not watched here")))
    }
}

impl Team for Relay {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn silence_bound(&self) -> Duration {
        self.silence
    }
    fn send(&self, to: usize, msg: &[u8]) -> Result<(), ProtocolError> {
        if msg.is_empty() {
            return Err(ProtocolError::Input(
                "an empty team message (empty messages are heartbeats)".into(),
            ));
        }
        if let Some(why) = self.lost(to) {
            return Err(ProtocolError::Incomplete(why));
        }
        self.out
            .send(Outgoing::Send(to, msg.to_vec()))
            .map_err(|_| ProtocolError::Incomplete("this rank's message pump has ended".into()))
    }
    fn recv(&self, from: usize) -> Result<Vec<u8>, ProtocolError> {
        let rx = self
            .inbox(from)?
            .lock()
            .map_err(|_| ProtocolError::Incomplete("a poisoned relay".into()))?;
        loop {
            // What arrived before the rank was lost is still read (a failure report).
            match rx.recv_timeout(RELAY_POLL) {
                Ok(m) => return Ok(m),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(ProtocolError::Incomplete(
                        self.lost(from)
                            .unwrap_or_else(|| "this rank's message pump has ended".into()),
                    ));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(why) = self.lost(from) {
                        return Err(ProtocolError::Incomplete(why));
                    }
                }
            }
        }
    }
    fn poll(&self, from: usize) -> Result<Option<Vec<u8>>, ProtocolError> {
        let rx = self
            .inbox(from)?
            .lock()
            .map_err(|_| ProtocolError::Incomplete("a poisoned relay".into()))?;
        Ok(rx.try_recv().ok())
    }
    fn abort(&self, code: i32) {
        let _ = self.out.send(Outgoing::Abort(code));
    }
    fn release(&self, rank: usize) {
        if let Some(r) = self.released.get(rank) {
            r.store(true, Ordering::SeqCst);
        }
    }
}

/// When the silence of a watched rank starts to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// From the start of [`pumped`], the first message allowed [`Team::first_contact_bound`]
    /// (rank 0 watching its workers, which pump as soon as they have loaded the program).
    FromStart,
    /// From the rank's first message (a worker watching rank 0, which starts pumping only
    /// once it has reached its peer, after waiting for it up to the network timeout).
    FromFirstMessage,
}

/// Runs `body` on a thread of its own against a [`Relay`] while this thread pumps
/// messages and heartbeats between it and `team` (see the module doc). `watch`: the
/// ranks this rank talks to, their silence counted as `clock` says; `who` names this rank
/// in the report before a self-abort.
pub fn pumped<R: Send>(
    team: &dyn Team,
    watch: &[usize],
    clock: Clock,
    who: &str,
    body: impl FnOnce(&dyn Team) -> R + Send,
) -> R {
    if !team.can_fall_silent() {
        return body(team);
    }
    let k = team.size();
    let silence = team.silence_bound();
    // Several heartbeats per bound, however short the bound (tests).
    let every = HEARTBEAT_EVERY.min(silence / 4);
    let (out_tx, out_rx) = channel();
    let mut inbox_tx: Vec<Option<Sender<Vec<u8>>>> = (0..k).map(|_| None).collect();
    let mut inbox = Vec::with_capacity(k);
    for (r, slot) in inbox_tx.iter_mut().enumerate() {
        if watch.contains(&r) {
            let (tx, rx) = channel();
            *slot = Some(tx);
            inbox.push(Some(Mutex::new(rx)));
        } else {
            inbox.push(None);
        }
    }
    let relay = Relay {
        rank: team.rank(),
        size: k,
        silence,
        out: out_tx,
        inbox,
        lost: Mutex::new(vec![None; k]),
        released: (0..k).map(|_| AtomicBool::new(false)).collect(),
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let body_thread = s.spawn(|| {
            let r = body(&relay);
            done.store(true, Ordering::SeqCst);
            r
        });
        let mark_lost = |r: usize, why: String| {
            if let Ok(mut l) = relay.lost.lock()
                && l[r].is_none()
            {
                l[r] = Some(why);
            }
        };
        let start = Instant::now();
        // When each watched rank was last heard from (`None`: not yet, under
        // `FromFirstMessage`).
        let mut heard: Vec<Option<Instant>> = vec![None; k];
        let first_contact = team.first_contact_bound().max(silence);
        let mut next_beat = start;
        let mut first_loss: Option<Instant> = None;
        let mut pause = PUMP_FIRST;
        loop {
            // Checked before draining: whatever the body sent before it ended goes out.
            // A body that panicked never sets `done`; its thread has finished all the same.
            let finished = done.load(Ordering::SeqCst) || body_thread.is_finished();
            let mut busy = false;
            while let Ok(o) = out_rx.try_recv() {
                busy = true;
                match o {
                    Outgoing::Send(to, m) => {
                        if let Err(e) = team.send(to, &m) {
                            mark_lost(to, e.to_string());
                        }
                    }
                    Outgoing::Abort(code) => team.abort(code),
                }
            }
            if finished {
                break;
            }
            let now = Instant::now();
            for &r in watch {
                loop {
                    match team.poll(r) {
                        Ok(Some(m)) => {
                            busy = true;
                            heard[r] = Some(now);
                            if !m.is_empty()
                                && let Some(tx) = &inbox_tx[r]
                            {
                                let _ = tx.send(m);
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            mark_lost(r, e.to_string());
                            break;
                        }
                    }
                }
                if relay.released[r].load(Ordering::SeqCst) {
                    continue;
                }
                let (since, bound) = match (heard[r], clock) {
                    (Some(last), _) => (last, silence),
                    (None, Clock::FromStart) => (start, first_contact),
                    (None, Clock::FromFirstMessage) => continue,
                };
                if now.duration_since(since) > bound {
                    mark_lost(
                        r,
                        format!(
                            "rank {r} sent nothing, not even a heartbeat, for {:.1} s (stopped, \
                             hung, or its node is gone)",
                            now.duration_since(since).as_secs_f64()
                        ),
                    );
                }
            }
            if now >= next_beat {
                for &r in watch {
                    if relay.lost(r).is_none()
                        && !relay.released[r].load(Ordering::SeqCst)
                        && let Err(e) = team.send(r, &[])
                    {
                        mark_lost(r, e.to_string());
                    }
                }
                next_beat = now + every;
            }
            let any_lost = watch.iter().any(|&r| relay.lost(r).is_some());
            if any_lost {
                let since = *first_loss.get_or_insert(now);
                if now.duration_since(since) > silence {
                    // The protocol did not notice (it waits on something else): end the
                    // party rather than let it hang.
                    let why = watch
                        .iter()
                        .find_map(|&r| relay.lost(r))
                        .unwrap_or_default();
                    eprintln!("error: {who}: {why}; ending this party");
                    team.abort(1);
                    // A team whose abort returns (threads in tests): wait for the body.
                    first_loss = Some(now + Duration::from_secs(3600));
                }
            }
            if busy {
                pause = PUMP_FIRST;
            } else {
                std::thread::sleep(pause);
                pause = (pause * 2).min(PUMP_MAX);
            }
        }
        match body_thread.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
