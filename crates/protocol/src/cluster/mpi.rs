//! [`Team`] over MPI (the `mpi` crate, rsmpi, on OpenMPI or any MPI): the ranks of
//! `MPI_COMM_WORLD` are one party's processes, as `mpirun -np K` or `srun -n K` start
//! them. Only the thread that initialized MPI calls it (`MPI_THREAD_FUNNELED`): rank 0's
//! and the workers' protocol threads never touch MPI. MPI's default error handler
//! (errors are fatal) applies: a broken MPI transport ends the whole party. Cluster runs
//! call only `send`, `poll` and `abort`, from the heartbeat pump
//! ([`super::heartbeat`]), which bounds how long a rank may stay silent; `recv` itself
//! waits without a deadline.

use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, Destination, Source};

use super::team::Team;
use crate::yao::ProtocolError;

/// The most bytes of one MPI message (MPI counts are `int`); longer messages are sent in
/// parts after their length.
const PART_BYTES: usize = 1 << 30;

/// The first and the longest pause between two looks for a message.
const POLL_FIRST: std::time::Duration = std::time::Duration::from_micros(20);
const POLL_MAX: std::time::Duration = std::time::Duration::from_millis(1);

/// This process's party: MPI, initialized once per process (finalized when dropped).
pub struct MpiTeam {
    // Declared before `_universe` so that the communicator is dropped first.
    world: SimpleCommunicator,
    _universe: Universe,
    silence: std::time::Duration,
    first_contact: std::time::Duration,
}

impl MpiTeam {
    /// Initializes MPI. Fails if it was initialized before in this process or if the MPI
    /// library cannot let one thread of a multi-threaded process call it.
    pub fn init() -> Result<MpiTeam, ProtocolError> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| ProtocolError::Input("MPI was already initialized".into()))?;
        if threading < mpi::Threading::Funneled {
            return Err(ProtocolError::Input(format!(
                "the MPI library offers thread support {threading:?}; pgc needs Funneled"
            )));
        }
        Ok(MpiTeam {
            world: universe.world(),
            _universe: universe,
            silence: super::heartbeat::MAX_SILENCE,
            first_contact: super::heartbeat::MAX_SILENCE,
        })
    }

    /// Sets [`Team::silence_bound`] and [`Team::first_contact_bound`] (default
    /// [`super::heartbeat::MAX_SILENCE`] for both).
    pub fn set_silence_bound(&mut self, bound: std::time::Duration, first: std::time::Duration) {
        self.silence = bound;
        self.first_contact = first;
    }
}

impl Team for MpiTeam {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn silence_bound(&self) -> std::time::Duration {
        self.silence
    }
    fn first_contact_bound(&self) -> std::time::Duration {
        self.first_contact
    }
    fn send(&self, to: usize, msg: &[u8]) -> Result<(), ProtocolError> {
        let peer = self.world.process_at_rank(to as i32);
        peer.send(&(msg.len() as u64));
        for part in msg.chunks(PART_BYTES) {
            peer.send(part);
        }
        Ok(())
    }
    fn recv(&self, from: usize) -> Result<Vec<u8>, ProtocolError> {
        let peer = self.world.process_at_rank(from as i32);
        // MPI's blocking receive spins on a core; a rank waits here through whole regions
        // (and several ranks may share a core), so poll with a growing pause instead.
        let mut pause = POLL_FIRST;
        while peer.immediate_probe().is_none() {
            std::thread::sleep(pause);
            pause = (pause * 2).min(POLL_MAX);
        }
        let (len, _) = peer.receive::<u64>();
        let len = usize::try_from(len).map_err(|_| {
            ProtocolError::Peer(format!("rank {from} announced a message of {len} bytes"))
        })?;
        let mut msg = Vec::with_capacity(len.min(PART_BYTES));
        while msg.len() < len {
            let (part, _) = peer.receive_vec::<u8>();
            if part.is_empty() || msg.len() + part.len() > len {
                return Err(ProtocolError::Peer(format!(
                    "rank {from} sent a message part that does not fit its announced length"
                )));
            }
            msg.extend_from_slice(&part);
        }
        Ok(msg)
    }
    fn poll(&self, from: usize) -> Result<Option<Vec<u8>>, ProtocolError> {
        // A message is its length, then its parts, sent back to back: once the length is
        // here, the rest follows at once.
        match self.world.process_at_rank(from as i32).immediate_probe() {
            Some(_) => self.recv(from).map(Some),
            None => Ok(None),
        }
    }
    fn abort(&self, code: i32) {
        self.world.abort(code)
    }
}
