//! An in-process duplex byte stream, for tests and benchmarks that run both parties as
//! threads of one process.
//!
//! Each direction is a bounded queue of byte chunks (a mutex-protected deque with two
//! condition variables), so a fast sender waits once [`QUEUE_CHUNKS`] chunks are in flight
//! instead of growing memory without limit. Small sends are gathered into a chunk of up to
//! [`CHUNK_BYTES`] bytes that leaves on `flush`, when it fills, or before this end blocks
//! waiting for the peer. Both waits (for data, and for room in a full queue) time out, so a
//! stuck or deadlocked peer gives an error instead of a hang.

use crate::{ByteCounts, Channel, NetError};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Size of the chunks that travel through the queue.
pub const CHUNK_BYTES: usize = 64 << 10;
/// Chunks that may be in flight in one direction before the sender waits.
pub const QUEUE_CHUNKS: usize = 32;
/// How long an end waits for its peer unless told otherwise.
pub const DEFAULT_MEMORY_TIMEOUT: Duration = Duration::from_secs(60);

/// One direction of the channel.
#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when a chunk arrives or the sending end goes away.
    readable: Condvar,
    /// Signalled when a chunk leaves or the receiving end goes away.
    writable: Condvar,
}

#[derive(Default)]
struct QueueState {
    chunks: VecDeque<Vec<u8>>,
    sender_gone: bool,
    receiver_gone: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // A panic while holding the lock cannot leave the deque half-updated (every
        // critical section is a single push, pop or flag store), so poisoning is harmless.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends a chunk, waiting while the queue is full.
    fn push(&self, chunk: Vec<u8>, timeout: Option<Duration>) -> Result<(), NetError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut state = self.lock();
        while state.chunks.len() >= QUEUE_CHUNKS && !state.receiver_gone {
            state = wait(&self.writable, state, deadline, timeout)?;
        }
        if state.receiver_gone {
            return Err(NetError::Closed);
        }
        state.chunks.push_back(chunk);
        drop(state);
        self.readable.notify_one();
        Ok(())
    }

    /// Takes the oldest chunk, waiting while there is none. Chunks queued before the
    /// sender went away are still delivered; after them comes `Closed`.
    fn pop(&self, timeout: Option<Duration>) -> Result<Vec<u8>, NetError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut state = self.lock();
        loop {
            if let Some(chunk) = state.chunks.pop_front() {
                drop(state);
                self.writable.notify_one();
                return Ok(chunk);
            }
            if state.sender_gone {
                return Err(NetError::Closed);
            }
            state = wait(&self.readable, state, deadline, timeout)?;
        }
    }

    fn has_chunk(&self) -> bool {
        !self.lock().chunks.is_empty()
    }
}

/// One wait on `cond`, failing with `Timeout` once `deadline` has passed. Poisoning is
/// ignored, as in [`Queue::lock`].
fn wait<'a>(
    cond: &Condvar,
    state: MutexGuard<'a, QueueState>,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
) -> Result<MutexGuard<'a, QueueState>, NetError> {
    match (deadline, timeout) {
        (Some(deadline), Some(timeout)) => {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NetError::Timeout(timeout));
            }
            let (state, _) = cond
                .wait_timeout(state, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            Ok(state)
        }
        _ => Ok(cond
            .wait(state)
            .unwrap_or_else(|poisoned| poisoned.into_inner())),
    }
}

/// One end of an in-memory duplex channel. Create both ends with [`MemoryChannel::pair`].
///
/// Byte counters count bytes handed to the queue (`sent`) and taken from it (`received`),
/// so once both sides have flushed and read everything, one end's `sent` equals the other
/// end's `received`.
pub struct MemoryChannel {
    outgoing: Arc<Queue>,
    incoming: Arc<Queue>,
    /// Bytes sent but not yet queued.
    pending: Vec<u8>,
    /// The chunk being read and how far into it we are.
    current: Vec<u8>,
    read_pos: usize,
    counts: ByteCounts,
    timeout: Option<Duration>,
}

impl MemoryChannel {
    /// Two connected ends: what one sends, the other receives.
    pub fn pair() -> (MemoryChannel, MemoryChannel) {
        let a_to_b = Arc::new(Queue::default());
        let b_to_a = Arc::new(Queue::default());
        (
            MemoryChannel::new(a_to_b.clone(), b_to_a.clone()),
            MemoryChannel::new(b_to_a, a_to_b),
        )
    }

    fn new(outgoing: Arc<Queue>, incoming: Arc<Queue>) -> MemoryChannel {
        MemoryChannel {
            outgoing,
            incoming,
            pending: Vec::with_capacity(CHUNK_BYTES),
            current: Vec::new(),
            read_pos: 0,
            counts: ByteCounts::default(),
            timeout: Some(DEFAULT_MEMORY_TIMEOUT),
        }
    }

    /// Splits this end into a reading half and a writing half, `(reader, writer)`, so one
    /// thread can block in `recv` while another sends (the link shaper needs this).
    ///
    /// Each half owns one direction: the peer sees its incoming data end when the writer
    /// is dropped, and its sends fail once the reader is dropped. Sending on the reader or
    /// receiving on the writer fails with `Closed`. Unread data stays with the reader,
    /// unflushed sends move to the writer; the reader keeps the counters so far and the
    /// writer starts from zero.
    pub fn split(mut self) -> (MemoryChannel, MemoryChannel) {
        // Stand-ins for the direction a half does not own: already closed at the far end,
        // so misuse fails at once instead of waiting for a peer that does not exist.
        let no_outgoing = Arc::new(Queue::default());
        no_outgoing.lock().receiver_gone = true;
        let no_incoming = Arc::new(Queue::default());
        no_incoming.lock().sender_gone = true;
        let reader = MemoryChannel {
            outgoing: no_outgoing.clone(),
            incoming: std::mem::replace(&mut self.incoming, no_incoming.clone()),
            pending: Vec::new(),
            current: std::mem::take(&mut self.current),
            read_pos: self.read_pos,
            counts: self.counts,
            timeout: self.timeout,
        };
        let writer = MemoryChannel {
            outgoing: std::mem::replace(&mut self.outgoing, no_outgoing),
            incoming: no_incoming,
            pending: std::mem::take(&mut self.pending),
            current: Vec::new(),
            read_pos: 0,
            counts: ByteCounts::default(),
            timeout: self.timeout,
        };
        // `self` now holds only the stand-ins and nothing pending, so dropping it touches
        // neither real queue.
        (reader, writer)
    }

    /// How long `recv` waits for data, and a send for room in a full queue; `None` waits
    /// forever. Default: 60 s.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// Queues one chunk (waiting while the queue is full: backpressure).
    fn push_chunk(&mut self, chunk: Vec<u8>) -> Result<(), NetError> {
        let len = chunk.len() as u64;
        self.outgoing.push(chunk, self.timeout)?;
        self.counts.sent += len;
        Ok(())
    }

    /// Makes the next chunk from the peer the current one.
    fn next_chunk(&mut self) -> Result<(), NetError> {
        if !self.incoming.has_chunk() {
            // About to wait: push out what we hold so the peer is not left waiting for it.
            // If the peer is gone that fails, but what it sent before leaving is still
            // readable, so go on reading (`pop` reports `Closed` once it is drained).
            match self.flush() {
                Ok(()) | Err(NetError::Closed) => {}
                Err(e) => return Err(e),
            }
        }
        let chunk = self.incoming.pop(self.timeout)?;
        self.counts.received += chunk.len() as u64;
        self.current = chunk;
        self.read_pos = 0;
        Ok(())
    }
}

impl Channel for MemoryChannel {
    fn send(&mut self, mut bytes: &[u8]) -> Result<(), NetError> {
        while !bytes.is_empty() {
            let room = CHUNK_BYTES - self.pending.len();
            let take = room.min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() == CHUNK_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn recv(&mut self, mut buf: &mut [u8]) -> Result<(), NetError> {
        while !buf.is_empty() {
            if self.read_pos == self.current.len() {
                self.next_chunk()?;
                continue;
            }
            let available = &self.current[self.read_pos..];
            let take = available.len().min(buf.len());
            buf[..take].copy_from_slice(&available[..take]);
            self.read_pos += take;
            buf = &mut buf[take..];
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NetError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.pending, Vec::with_capacity(CHUNK_BYTES));
        self.push_chunk(chunk)
    }

    fn counts(&self) -> ByteCounts {
        self.counts
    }
}

impl Drop for MemoryChannel {
    fn drop(&mut self) {
        // Stop receiving first: a peer waiting for room in our incoming queue then fails
        // instead of waiting for us while we wait for it below.
        self.incoming.lock().receiver_gone = true;
        self.incoming.writable.notify_all();
        // Data sent before dropping must still reach the peer, like a TCP close. This waits
        // (at most the timeout) only while the peer is alive and its queue is full.
        let _ = self.flush();
        self.outgoing.lock().sender_gone = true;
        self.outgoing.readable.notify_all();
    }
}

impl std::fmt::Debug for MemoryChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryChannel")
            .field("counts", &self.counts)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
