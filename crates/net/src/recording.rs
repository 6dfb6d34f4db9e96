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

// ---------------------------------------------------------------------------------------
// Checks on a recorded transcript (test support for the crates above)

/// The obvious byte encodings of a secret 128-bit block (a label, Δ, a seed): itself, with
/// its lowest (permute) bit cleared, and the complements of both, each little- and
/// big-endian.
pub fn block_encodings(secret: u128) -> [[u8; 16]; 8] {
    let forms = [secret, secret & !1, !secret, !(secret & !1)];
    std::array::from_fn(|i| {
        let x = forms[i / 2];
        if i % 2 == 0 {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        }
    })
}

/// The bits packed eight to a byte lsb-first and msb-first, and the complements of both.
pub fn bit_packings(bits: &[bool]) -> [Vec<u8>; 4] {
    let lsb: Vec<u8> = bits
        .chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (i, &x)| b | (x as u8) << i)
        })
        .collect();
    let msb: Vec<u8> = bits
        .chunks(8)
        .map(|c| c.iter().fold(0u8, |b, &x| b << 1 | x as u8))
        .collect();
    let not = |v: &[u8]| v.iter().map(|b| !b).collect::<Vec<u8>>();
    let (not_lsb, not_msb) = (not(&lsb), not(&msb));
    [lsb, msb, not_lsb, not_msb]
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Test support: `secret` appears in none of its [`block_encodings`] at any offset of
/// `sent` (a real transcript: more than 1000 bytes). Panics naming `what` otherwise.
pub fn assert_block_absent(sent: &[u8], secret: u128, what: &str) {
    assert!(
        sent.len() > 1000,
        "a real transcript ({} bytes)",
        sent.len()
    );
    for bytes in block_encodings(secret) {
        assert!(!contains(sent, &bytes), "{what} appears in the transcript");
    }
}

/// Test support: the bits (at least 64, so that a chance match is negligible) appear in
/// none of their [`bit_packings`] at any offset of `sent`. Panics naming `what` otherwise.
pub fn assert_bits_absent(sent: &[u8], bits: &[bool], what: &str) {
    assert!(
        bits.len() >= 64,
        "enough bits that a chance match is negligible"
    );
    let [lsb, msb, not_lsb, not_msb] = bit_packings(bits);
    for p in [&lsb, &msb] {
        assert!(!contains(sent, p), "{what} appear in the clear");
    }
    for p in [&not_lsb, &not_msb] {
        assert!(!contains(sent, p), "{what} appear complemented");
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

    #[test]
    fn the_checks_find_a_secret_in_each_encoding() {
        let secret: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3211;
        let filler = vec![0x5au8; 1200];
        for (i, bytes) in block_encodings(secret).iter().enumerate() {
            let mut sent = filler.clone();
            sent[333..349].copy_from_slice(bytes);
            let found = std::panic::catch_unwind(|| assert_block_absent(&sent, secret, "s"));
            assert!(found.is_err(), "encoding {i} not found");
        }
        assert_block_absent(&filler, secret, "s");

        let bits: Vec<bool> = (0..72).map(|i| (i * 7 + i / 3) % 5 < 2).collect();
        for (i, packed) in bit_packings(&bits).iter().enumerate() {
            let sent = [&filler[..17], packed, &filler[..9]].concat();
            let found = std::panic::catch_unwind(|| assert_bits_absent(&sent, &bits, "b"));
            assert!(found.is_err(), "packing {i} not found");
        }
        assert_bits_absent(&filler, &bits, "b");
        // lsb-first: bit 0 is the low bit of byte 0.
        assert_eq!(bit_packings(&[true, false, false])[0], [1]);
        assert_eq!(bit_packings(&[true, false, false])[1], [4]);
    }
}
