//! Channels whose incoming bytes are a script (the fuzz input) instead of a live peer, and
//! a recorder that captures what an honest peer really sends (for seed corpora).
//!
//! A [`ScriptChannel`] never blocks: it hands out the script's bytes in order, returns
//! [`NetError::Closed`] once they run out, and counts and discards what the party sends. A
//! party run against it therefore ends as soon as it has read the whole script, so a fuzz
//! input cannot hang a run through the channel.

use std::sync::{Arc, Mutex};

use pgc_net::{ByteCounts, Channel, NetError};
use pgc_protocol::parallel::StreamOpener;

/// A channel that replays `script` as the peer's bytes and discards what is sent.
#[derive(Debug, Default)]
pub struct ScriptChannel {
    script: Vec<u8>,
    pos: usize,
    counts: ByteCounts,
}

impl ScriptChannel {
    pub fn new(script: &[u8]) -> ScriptChannel {
        ScriptChannel {
            script: script.to_vec(),
            pos: 0,
            counts: ByteCounts::default(),
        }
    }
}

impl Channel for ScriptChannel {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        self.counts.sent += bytes.len() as u64;
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        let end = self.pos.checked_add(buf.len()).ok_or(NetError::Closed)?;
        let bytes = self.script.get(self.pos..end).ok_or(NetError::Closed)?;
        buf.copy_from_slice(bytes);
        self.pos = end;
        self.counts.received += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NetError> {
        Ok(())
    }

    fn counts(&self) -> ByteCounts {
        self.counts
    }
}

/// Worker streams for the parallel protocol, each replaying its own script (stream `i` gets
/// `scripts[i]`, an empty script past the end), so that the stream messages are fuzzed too.
pub struct ScriptedStreams {
    pub scripts: Vec<Vec<u8>>,
}

impl StreamOpener for ScriptedStreams {
    fn open(&mut self, n: usize, _token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError> {
        Ok((0..n)
            .map(|i| {
                let script = self.scripts.get(i).map_or(&[][..], |s| &s[..]);
                Box::new(ScriptChannel::new(script)) as Box<dyn Channel>
            })
            .collect())
    }
}

/// Wraps a real channel and keeps a copy of every byte it receives: the honest peer's
/// messages, as a seed for the scripted-peer targets.
pub struct Recorder<C> {
    pub inner: C,
    pub received: Recording,
}

impl<C: Channel> Channel for Recorder<C> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        self.inner.send(bytes)
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        self.inner.recv(buf)?;
        self.received
            .lock()
            .expect("a recorder's buffer is never poisoned")
            .extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }

    fn counts(&self) -> ByteCounts {
        self.inner.counts()
    }
}

/// Bytes a recorder keeps, shared with whoever reads them after the run.
pub type Recording = Arc<Mutex<Vec<u8>>>;

/// A stream opener that records what each opened stream receives (stream `i` into
/// `received[i]`).
pub struct RecordingStreams<O> {
    pub inner: O,
    pub received: Arc<Mutex<Vec<Recording>>>,
}

impl<O: StreamOpener> StreamOpener for RecordingStreams<O> {
    fn open(&mut self, n: usize, token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError> {
        let streams = self.inner.open(n, token)?;
        let mut all = self
            .received
            .lock()
            .expect("a recorder's buffer is never poisoned");
        Ok(streams
            .into_iter()
            .map(|inner| {
                let received = Arc::new(Mutex::new(Vec::new()));
                all.push(received.clone());
                Box::new(Recorder { inner, received }) as Box<dyn Channel>
            })
            .collect())
    }
}
