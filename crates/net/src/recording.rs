//! A channel that records every byte its party sends, for transcripts: the tests that
//! check no secret crosses the wire (`pgc_ot`, `pgc_protocol`), and anyone who wants to see
//! what a party put on the wire. Several channels may share one log (a party's main
//! connection and its worker streams).

use std::sync::{Arc, Mutex};

use crate::{ByteCounts, Channel, NetError};

/// Where a [`RecordingChannel`] appends what it sends; shareable between channels.
pub type SentLog = Arc<Mutex<Vec<u8>>>;

/// Wraps a channel and appends every byte sent through it to a [`SentLog`].
pub struct RecordingChannel<C> {
    inner: C,
    log: SentLog,
}

impl<C> RecordingChannel<C> {
    /// Records into a log of its own.
    pub fn new(inner: C) -> RecordingChannel<C> {
        RecordingChannel::with_log(inner, SentLog::default())
    }

    /// Records into `log`, which other channels may share.
    pub fn with_log(inner: C, log: SentLog) -> RecordingChannel<C> {
        RecordingChannel { inner, log }
    }

    /// The log this channel appends to.
    pub fn log(&self) -> &SentLog {
        &self.log
    }

    /// A copy of everything sent into the log so far.
    pub fn sent(&self) -> Vec<u8> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl<C: Channel> Channel for RecordingChannel<C> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(bytes);
        self.inner.send(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        self.inner.recv(buf)
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }
    fn counts(&self) -> ByteCounts {
        self.inner.counts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryChannel;

    #[test]
    fn records_what_is_sent_not_what_is_received() {
        let (a, b) = MemoryChannel::pair();
        let (mut a, mut b) = (RecordingChannel::new(a), RecordingChannel::new(b));
        a.send(b"hello").unwrap();
        a.flush().unwrap();
        let mut buf = [0u8; 5];
        b.recv(&mut buf).unwrap();
        b.send(b"ok").unwrap();
        assert_eq!(a.sent(), b"hello");
        assert_eq!(b.sent(), b"ok");
        let (c, _peer) = MemoryChannel::pair();
        let mut shared = RecordingChannel::with_log(c, a.log().clone());
        shared.send(b"!").unwrap();
        shared.flush().unwrap();
        assert_eq!(a.sent(), b"hello!", "one log for both");
    }
}
