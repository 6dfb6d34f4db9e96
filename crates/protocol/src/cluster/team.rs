//! The ranks of one party and how they message each other: [`Team`] (MPI in production,
//! [`crate::cluster::mpi`]; threads in tests, [`MemoryTeam`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::yao::ProtocolError;

/// The ranks of one party (one trust domain): point-to-point byte messages, in order per
/// sender and receiver.
pub trait Team {
    /// This process's rank, 0 ..< size.
    fn rank(&self) -> usize;
    /// The ranks of this party (K).
    fn size(&self) -> usize;
    /// How long a rank this one talks to may send nothing, not even a heartbeat, before it
    /// counts as lost ([`crate::cluster::heartbeat`]).
    fn silence_bound(&self) -> Duration;
    /// How long rank 0 waits for a worker's first message (a worker may still be starting,
    /// e.g. loading the program); the silence bound by default.
    fn first_contact_bound(&self) -> Duration {
        self.silence_bound()
    }
    fn send(&self, to: usize, msg: &[u8]) -> Result<(), ProtocolError>;
    /// Waits for the next message from `from`.
    fn recv(&self, from: usize) -> Result<Vec<u8>, ProtocolError>;
    /// The next message from `from` if one has arrived, without waiting.
    fn poll(&self, from: usize) -> Result<Option<Vec<u8>>, ProtocolError>;
    /// Ends every rank of this party now (MPI_Abort under MPI), after a failure that may
    /// leave a rank waiting: the caller reports the error first.
    fn abort(&self, code: i32);
    /// This rank expects nothing more from `rank` (it has finished): its silence is no
    /// longer a failure ([`crate::cluster::heartbeat`]). Nothing to do for a plain team.
    fn release(&self, _rank: usize) {}
    /// Whether a rank of this team can fall silent (stop, hang) so that the run needs
    /// heartbeats ([`crate::cluster::heartbeat::pumped`]). A team whose messages are a
    /// fixed script (a fuzz target's, whose `recv` fails once the script is spent) cannot:
    /// the protocol then runs on the calling thread without a pump, deterministically.
    fn can_fall_silent(&self) -> bool {
        true
    }
}

/// A team of threads in one process, for tests: [`MemoryTeam::new`] makes all K members.
/// `abort` makes every member's waiting `recv` and `poll` fail.
pub struct MemoryTeam {
    rank: usize,
    /// `to[j]`: this member's sender to member j.
    to: Vec<Sender<Vec<u8>>>,
    /// `from[j]`: this member's receiver from member j.
    from: Vec<Mutex<Receiver<Vec<u8>>>>,
    aborted: Arc<AtomicBool>,
    timeout: Duration,
}

impl MemoryTeam {
    /// The `k` members; a `recv` waits at most `timeout`, which is also the silence bound.
    pub fn new(k: usize, timeout: Duration) -> Vec<MemoryTeam> {
        let aborted = Arc::new(AtomicBool::new(false));
        // senders[i][j] / receivers[j][i]: the channel from member i to member j.
        let mut senders: Vec<Vec<Sender<Vec<u8>>>> = (0..k).map(|_| Vec::new()).collect();
        let mut receivers: Vec<Vec<Option<Receiver<Vec<u8>>>>> =
            (0..k).map(|_| (0..k).map(|_| None).collect()).collect();
        for (i, row) in senders.iter_mut().enumerate() {
            for receiver_row in receivers.iter_mut() {
                let (tx, rx) = channel();
                row.push(tx);
                receiver_row[i] = Some(rx);
            }
        }
        senders
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(rank, (to, from))| MemoryTeam {
                rank,
                to,
                from: from
                    .into_iter()
                    .map(|r| Mutex::new(r.expect("every pair has a channel")))
                    .collect(),
                aborted: aborted.clone(),
                timeout,
            })
            .collect()
    }
}

const ABORT_POLL: Duration = Duration::from_millis(20);

impl Team for MemoryTeam {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.to.len()
    }
    fn silence_bound(&self) -> Duration {
        self.timeout
    }
    fn send(&self, to: usize, msg: &[u8]) -> Result<(), ProtocolError> {
        self.to[to]
            .send(msg.to_vec())
            .map_err(|_| ProtocolError::Incomplete(format!("rank {to} has left")))
    }
    fn recv(&self, from: usize) -> Result<Vec<u8>, ProtocolError> {
        let rx = self.from[from]
            .lock()
            .map_err(|_| ProtocolError::Incomplete("a poisoned team channel".into()))?;
        let mut waited = Duration::ZERO;
        loop {
            if self.aborted.load(Ordering::SeqCst) {
                return Err(ProtocolError::Incomplete(
                    "the party's run was aborted".into(),
                ));
            }
            match rx.recv_timeout(ABORT_POLL) {
                Ok(m) => return Ok(m),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(ProtocolError::Incomplete(format!("rank {from} has left")));
                }
                Err(RecvTimeoutError::Timeout) => {
                    waited += ABORT_POLL;
                    if waited >= self.timeout {
                        return Err(ProtocolError::Incomplete(format!(
                            "rank {from} sent nothing for {:?}",
                            self.timeout
                        )));
                    }
                }
            }
        }
    }
    fn poll(&self, from: usize) -> Result<Option<Vec<u8>>, ProtocolError> {
        let rx = self.from[from]
            .lock()
            .map_err(|_| ProtocolError::Incomplete("a poisoned team channel".into()))?;
        if self.aborted.load(Ordering::SeqCst) {
            return Err(ProtocolError::Incomplete(
                "the party's run was aborted".into(),
            ));
        }
        Ok(rx.try_recv().ok())
    }
    fn abort(&self, _code: i32) {
        self.aborted.store(true, Ordering::SeqCst);
    }
}
