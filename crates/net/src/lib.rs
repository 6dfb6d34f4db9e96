//! Channels between the two parties: a byte-stream [`Channel`] trait with length-framed
//! messages on top, a real TCP implementation and an in-memory one for tests, with byte
//! counters in both directions.

use thiserror::Error;

pub mod memory;
pub mod shaping;
pub mod streams;
pub mod tcp;

pub use memory::MemoryChannel;
pub use shaping::{LinkShape, ShapedChannel, SharedLink};
pub use streams::{accept_streams, connect_streams, memory_streams};
pub use tcp::{TcpChannel, TcpListenerHandle};

/// Largest frame a peer may announce unless a caller asks for less. Keeps a broken or
/// hostile peer from making us allocate gigabytes.
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// What can go wrong on a channel. Messages name the cause in terms a user can act on.
#[derive(Debug, Error)]
pub enum NetError {
    #[error("the peer closed the connection")]
    Closed,
    #[error("timed out after {0:?} waiting for the peer")]
    Timeout(std::time::Duration),
    #[error("the peer announced a {len}-byte message, more than the limit of {max} bytes")]
    FrameTooLarge { len: u64, max: usize },
    #[error("network error: {0}")]
    Io(#[from] std::io::Error),
    #[error("could not connect to {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("nobody accepted a connection at {addr} within {waited:?} (last error: {last_error})")]
    ConnectTimeout {
        addr: String,
        waited: std::time::Duration,
        last_error: std::io::Error,
    },
    #[error("could not listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("error while waiting for a connection on {addr}: {source}")]
    Accept {
        addr: String,
        source: std::io::Error,
    },
    #[error("no peer connected to {addr} within {waited:?}")]
    AcceptTimeout {
        addr: String,
        waited: std::time::Duration,
    },
    #[error(
        "only {got} of {wanted} extra connections were set up with the peer at {addr} within {waited:?}"
    )]
    StreamsTimeout {
        addr: String,
        got: usize,
        wanted: usize,
        waited: std::time::Duration,
    },
    #[error(
        "the peer at {addr} refused extra connection {index} (it expected another session token, or stopped waiting)"
    )]
    StreamRejected { addr: String, index: usize },
    #[error("{requested} extra connections requested; at most {max} are supported")]
    TooManyStreams { requested: usize, max: usize },
    #[error("the link-shaping thread of this channel stopped unexpectedly")]
    ShaperStopped,
}

/// Bytes moved over a channel so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteCounts {
    pub sent: u64,
    pub received: u64,
}

/// A reliable, ordered, buffered byte stream to the other party.
///
/// `send` may buffer; `flush` pushes buffered bytes out. `recv` fills the whole buffer
/// (an exact read) or fails. Implementations count every byte in [`counts`](Channel::counts).
pub trait Channel: Send {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError>;
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError>;
    fn flush(&mut self) -> Result<(), NetError>;
    fn counts(&self) -> ByteCounts;

    /// Sends one message: a 4-byte little-endian length, then the payload.
    fn send_frame(&mut self, payload: &[u8]) -> Result<(), NetError> {
        let len = u32::try_from(payload.len()).map_err(|_| NetError::FrameTooLarge {
            len: payload.len() as u64,
            max: u32::MAX as usize,
        })?;
        self.send(&len.to_le_bytes())?;
        self.send(payload)
    }

    /// Receives one message into `buf` (replacing its contents), refusing any frame longer
    /// than `max_len` before allocating for it.
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        let mut len = [0u8; 4];
        self.recv(&mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        if len > max_len {
            return Err(NetError::FrameTooLarge {
                len: len as u64,
                max: max_len,
            });
        }
        // Only newly grown bytes need initializing: `recv` overwrites all of them, and a
        // large buffer reused for every message is not zeroed again each time.
        if buf.len() > len {
            buf.truncate(len);
        } else {
            buf.resize(len, 0);
        }
        self.recv(buf)
    }

    /// Receives one message of at most `max_len` bytes.
    fn recv_frame(&mut self, max_len: usize) -> Result<Vec<u8>, NetError> {
        let mut v = Vec::new();
        self.recv_frame_into(&mut v, max_len)?;
        Ok(v)
    }
}

impl<C: Channel + ?Sized> Channel for &mut C {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        (**self).send(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        (**self).recv(buf)
    }
    fn flush(&mut self) -> Result<(), NetError> {
        (**self).flush()
    }
    fn counts(&self) -> ByteCounts {
        (**self).counts()
    }
}

impl<C: Channel + ?Sized> Channel for Box<C> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        (**self).send(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        (**self).recv(buf)
    }
    fn flush(&mut self) -> Result<(), NetError> {
        (**self).flush()
    }
    fn counts(&self) -> ByteCounts {
        (**self).counts()
    }
}
