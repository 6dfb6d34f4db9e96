//! Channels between the two parties: a byte-stream [`Channel`] trait with length-framed
//! messages on top, a real TCP implementation, TLS 1.3 over it with pinned keys
//! ([`tls`], [`keys`]), the set-up that accepts only the real peer ([`connect`]), and an
//! in-memory channel for tests, with byte counters in both directions.

use thiserror::Error;

pub mod connect;
pub mod interrupt;
pub mod keys;
pub mod memory;
pub mod recording;
pub mod shaping;
pub mod streams;
pub mod tcp;
pub mod tls;

pub use connect::{ChannelSecurity, PeerChannel, RefusalNotes};
pub use keys::{Fingerprint, Identity, KeyError, Secret};
pub use memory::MemoryChannel;
pub use recording::{RecordingChannel, SentLog};
pub use shaping::{LinkShape, ShapedChannel, SharedLink};
pub use streams::{accept_streams, connect_streams, memory_streams};
pub use tcp::{TcpChannel, TcpListenerHandle};
pub use tls::{TlsChannel, TlsSettings};

/// Largest frame a peer may announce unless a caller asks for less. Keeps a broken or
/// hostile peer from making us allocate gigabytes.
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// A wait as error messages give it: "3.0 s", or "50 ms" below a second.
fn seconds(d: &std::time::Duration) -> String {
    // Rounded first: a deadline's remainder is often a hair under the whole seconds given.
    let ms = (d.as_secs_f64() * 1e3).round();
    if ms >= 1e3 {
        format!("{:.1} s", ms / 1e3)
    } else {
        format!("{ms} ms")
    }
}

/// What can go wrong on a channel. Messages name the cause in terms a user can act on.
#[derive(Debug, Error)]
pub enum NetError {
    #[error("the peer closed the connection")]
    Closed,
    #[error("interrupted")]
    Interrupted,
    #[error("timed out after {} waiting for the peer", seconds(.0))]
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
    #[error(
        "nobody accepted a connection at {addr} within {} (last error: {last_error})",
        seconds(.waited)
    )]
    ConnectTimeout {
        addr: String,
        waited: std::time::Duration,
        last_error: std::io::Error,
    },
    /// The host name of a `host:port` address did not resolve before the deadline (lookups
    /// are retried until then: the peer's machine or container may come up later).
    #[error(
        "the host name {host} (of {addr}) did not resolve to an address within {} (last \
         error: {last_error}); check the name, or that the other party's machine or container \
         is up",
        seconds(.waited)
    )]
    Unresolved {
        host: String,
        addr: String,
        waited: std::time::Duration,
        last_error: String,
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
    #[error("no peer connected to {addr} within {}", seconds(.waited))]
    AcceptTimeout {
        addr: String,
        waited: std::time::Duration,
    },
    #[error(
        "only {got} of {wanted} extra connections were set up with the peer at {addr} within {}",
        seconds(.waited)
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
    #[error(
        "the peer presented key {presented}, but {expected} was expected: it is another party, \
         or one of you gave the wrong fingerprint (check --peer-key on both sides, or that both \
         use the same --psk file)"
    )]
    PeerKeyMismatch { expected: String, presented: String },
    #[error(
        "the peer refused this party's key {ours}: it expects another fingerprint (check the \
         --peer-key the other party gave, or that both use the same --psk file)"
    )]
    KeyRefusedByPeer { ours: String },
    #[error(
        "the peer is not using TLS: did it run with --insecure-plaintext? Both sides must agree"
    )]
    NotTls,
    #[error(
        "the peer uses TLS (encrypted and authenticated) but this side runs with \
         --insecure-plaintext: both sides must agree"
    )]
    PeerUsesTls,
    #[error("the peer does not speak pgc's protocol (its first bytes were not a pgc hello)")]
    NotPgc,
    #[error(
        "the peer at {addr} closed the connection during set-up; its own messages say why \
         (a different key, protocol or --insecure-plaintext setting)"
    )]
    SetupRefused { addr: String },
    #[error("TLS: {0}")]
    Tls(String),
    #[error(
        "no peer connected to {addr} and completed set-up within {}; {refused} \
         connection(s) were turned away, the last because {last}",
        seconds(.waited)
    )]
    NoAuthenticatedPeer {
        addr: String,
        waited: std::time::Duration,
        refused: usize,
        last: String,
    },
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
    ///
    /// Network channels override this so that one timeout covers the whole message.
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        let mut len = [0u8; 4];
        self.recv(&mut len)?;
        let len = check_frame_len(len, max_len)?;
        resize_for_frame(buf, len);
        self.recv(buf)
    }

    /// Receives one message of at most `max_len` bytes.
    fn recv_frame(&mut self, max_len: usize) -> Result<Vec<u8>, NetError> {
        let mut v = Vec::new();
        self.recv_frame_into(&mut v, max_len)?;
        Ok(v)
    }
}

/// A frame's length from its 4-byte header, refused above `max_len`.
pub(crate) fn check_frame_len(header: [u8; 4], max_len: usize) -> Result<usize, NetError> {
    let len = u32::from_le_bytes(header) as usize;
    if len > max_len {
        return Err(NetError::FrameTooLarge {
            len: len as u64,
            max: max_len,
        });
    }
    Ok(len)
}

/// Makes `buf` `len` bytes long for a frame's payload.
pub(crate) fn resize_for_frame(buf: &mut Vec<u8>, len: usize) {
    // Only newly grown bytes need initializing: the payload overwrites all of them, and a
    // large buffer reused for every message is not zeroed again each time.
    if buf.len() > len {
        buf.truncate(len);
    } else {
        buf.resize(len, 0);
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
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        (**self).recv_frame_into(buf, max_len)
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
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        (**self).recv_frame_into(buf, max_len)
    }
}

#[cfg(test)]
mod wait_text_tests {
    use super::seconds;
    use std::time::Duration;

    #[test]
    fn waits_print_rounded_in_seconds_or_milliseconds() {
        assert_eq!(seconds(&Duration::from_nanos(2_999_999_799)), "3.0 s");
        assert_eq!(seconds(&Duration::from_millis(60_000)), "60.0 s");
        assert_eq!(seconds(&Duration::from_millis(1_250)), "1.2 s");
        assert_eq!(seconds(&Duration::from_nanos(999_999_800)), "1.0 s");
        assert_eq!(seconds(&Duration::from_millis(50)), "50 ms");
    }
}
