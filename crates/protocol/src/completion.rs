//! Completeness before outputs: the "done" message both parties exchange after the last
//! garbled table and before any output-revealing message.
//!
//! A run is *complete* when
//! - each party's gate stream was healthy: [`GateSource::check_complete`] holds (a circuit
//!   file re-read during the run could be read in full and was unchanged), and
//! - each party processed exactly the circuit's gate and AND counts (the gates it garbled or
//!   evaluated, counted as they went by), and
//! - the garbled-table blocks one party sent are exactly the blocks the other received, and
//!   together they are 2 per AND gate (one direction in the sequential protocol and the
//!   parallel engine, both directions summed under IPP; per-stream counts are summed, since
//!   the parallel engine already checks each stream against its plan).
//!
//! Each party sends a [`Done`] with its own counts and, if its gate stream failed, the
//! cause (a "failed" done message, so the peer reports the real cause rather than a closed
//! connection). Both then judge the *same* pair of messages with [`verdict`], so both reach
//! the same decision; only if everything matches does either send anything about the
//! outputs. Otherwise both return [`ProtocolError::Incomplete`] and nothing is revealed.
//!
//! In the sequential protocol, the garbler ends its table stream with an empty frame (a
//! table frame is never empty), so an evaluator waiting for tables that will not come
//! learns that they ended and goes on to the done messages instead of waiting forever.
//!
//! Wire format of a done message (one frame, at most [`MAX_DONE`] bytes): `pgc-done`,
//! a status byte (0 complete, 1 failed), gates, AND gates, table blocks sent, table blocks
//! received (each u64 little-endian), a u16 length and that many bytes of UTF-8 cause.

use pgc_circuit::GateSource;
use pgc_net::Channel;

use crate::yao::{Party, ProtocolError};

const MAGIC: &[u8; 8] = b"pgc-done";
/// The longest cause a party sends (longer ones are cut).
const MAX_REASON: usize = 1000;
/// A done message is small; a peer announcing more is broken.
pub(crate) const MAX_DONE: usize = 8 + 1 + 4 * 8 + 2 + MAX_REASON;

/// What one party did between the input phase and the outputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// `Some(cause)` if this party's gate stream failed (see [`GateSource::check_complete`]).
    pub failure: Option<String>,
    /// Gates this party garbled or evaluated.
    pub gates: u64,
    /// AND gates among them.
    pub and_gates: u64,
    /// Garbled-table blocks (16 bytes, 2 per AND gate) this party sent. Three-halves
    /// tables count 2 per AND too: the check is on tables, not bytes.
    pub blocks_sent: u64,
    /// Garbled-table blocks this party received and consumed.
    pub blocks_received: u64,
}

impl Done {
    /// This party's done message: its counts, and the source's own health check.
    pub(crate) fn of<S: GateSource + ?Sized>(source: &S, counts: Done) -> Done {
        Done {
            failure: source.check_complete().err(),
            ..counts
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(MAGIC);
        v.push(self.failure.is_some() as u8);
        for x in [
            self.gates,
            self.and_gates,
            self.blocks_sent,
            self.blocks_received,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        let reason = self.failure.as_deref().unwrap_or("");
        let mut cut = reason.len().min(MAX_REASON);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        v.extend_from_slice(&(cut as u16).to_le_bytes());
        v.extend_from_slice(&reason.as_bytes()[..cut]);
        v
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Done, ProtocolError> {
        let bad = || {
            ProtocolError::Peer(
                "a malformed completion (done) message where the peer's gate counts were due"
                    .into(),
            )
        };
        if bytes.len() < 8 + 1 + 32 + 2 || &bytes[..8] != MAGIC {
            return Err(bad());
        }
        let status = bytes[8];
        let word = |i: usize| {
            let at = 9 + 8 * i;
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
        };
        let len = u16::from_le_bytes([bytes[41], bytes[42]]) as usize;
        if len > MAX_REASON || bytes.len() != 43 + len {
            return Err(bad());
        }
        let failure = match status {
            0 if len == 0 => None,
            // The cause is printed to this party's terminal: keep the text, drop control
            // characters (a terminal escape sequence from the peer must not reach it).
            1 => Some(
                String::from_utf8_lossy(&bytes[43..])
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect(),
            ),
            _ => return Err(bad()),
        };
        Ok(Done {
            failure,
            gates: word(0),
            and_gates: word(1),
            blocks_sent: word(2),
            blocks_received: word(3),
        })
    }
}

/// Sends this party's done message.
pub(crate) fn send(ch: &mut (impl Channel + ?Sized), done: &Done) -> Result<(), ProtocolError> {
    ch.send_frame(&done.to_bytes())?;
    ch.flush()?;
    Ok(())
}

/// Receives the peer's done message.
pub(crate) fn recv(ch: &mut (impl Channel + ?Sized)) -> Result<Done, ProtocolError> {
    let bytes = ch.recv_frame(MAX_DONE).map_err(|e| match e {
        pgc_net::NetError::FrameTooLarge { .. } => ProtocolError::Peer(
            "a malformed completion (done) message where the peer's gate counts were due".into(),
        ),
        e => e.into(),
    })?;
    Done::from_bytes(&bytes)
}

/// What a complete run has: the circuit's counts and how its tables flow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Expected {
    pub gates: u64,
    pub and_gates: u64,
    /// Both parties garble (IPP): tables flow both ways, and each party's role is named by
    /// its letter only.
    pub both_garble: bool,
    /// GMW: no garbled tables; the "blocks" counts are the bytes of opened shares each
    /// party sent and received in the AND rounds, which must match in each direction.
    pub shares_only: bool,
}

impl Expected {
    pub(crate) fn of<S: GateSource + ?Sized>(source: &S, both_garble: bool) -> Expected {
        Expected {
            gates: source.gate_count(),
            and_gates: source.and_count(),
            both_garble,
            shares_only: false,
        }
    }

    /// A GMW run of `source`.
    pub(crate) fn gmw<S: GateSource + ?Sized>(source: &S) -> Expected {
        Expected {
            both_garble: true,
            shares_only: true,
            ..Expected::of(source, true)
        }
    }
}

/// Judges both parties' done messages (the same pair on both sides, so both reach the same
/// verdict); `me` only says which of the two is "this party" in the message.
pub(crate) fn verdict(
    a: &Done,
    b: &Done,
    expected: Expected,
    me: Party,
) -> Result<(), ProtocolError> {
    let name = |p: Party| -> String {
        let role = match (expected.both_garble, p) {
            (true, _) => String::new(),
            (false, Party::A) => "the garbler, ".into(),
            (false, Party::B) => "the evaluator, ".into(),
        };
        let who = if p == me { "this party" } else { "the peer" };
        format!("party {} ({role}{who})", p.letter())
    };
    let fail = |m: String| Err(ProtocolError::Incomplete(m));
    for (p, d) in [(Party::A, a), (Party::B, b)] {
        if let Some(cause) = &d.failure {
            return fail(format!(
                "{} could not read its circuit in full ({cause}); it processed {} of {} gates",
                name(p),
                group(d.gates),
                group(expected.gates)
            ));
        }
    }
    for (p, d) in [(Party::A, a), (Party::B, b)] {
        if d.gates != expected.gates || d.and_gates != expected.and_gates {
            return fail(format!(
                "{} processed {} of {} gates ({} of {} AND gates)",
                name(p),
                group(d.gates),
                group(expected.gates),
                group(d.and_gates),
                group(expected.and_gates)
            ));
        }
    }
    let what = if expected.shares_only {
        "bytes of opened shares"
    } else {
        "garbled-table blocks"
    };
    for (from, to, sent, received) in [
        (Party::A, Party::B, a.blocks_sent, b.blocks_received),
        (Party::B, Party::A, b.blocks_sent, a.blocks_received),
    ] {
        if sent != received {
            return fail(format!(
                "{} sent {} {what} but {} received {}",
                name(from),
                group(sent),
                name(to),
                group(received)
            ));
        }
    }
    if expected.shares_only {
        return Ok(());
    }
    let tables = a.blocks_sent + b.blocks_sent;
    if tables != 2 * expected.and_gates {
        return fail(format!(
            "{} garbled-table blocks crossed for {} AND gates (2 per AND gate)",
            group(tables),
            group(expected.and_gates)
        ));
    }
    Ok(())
}

/// Sends this party's done message, receives the peer's and judges both.
pub(crate) fn exchange(
    ch: &mut (impl Channel + ?Sized),
    me: Party,
    mine: &Done,
    expected: Expected,
) -> Result<(), ProtocolError> {
    send(ch, mine)?;
    let peer = recv(ch)?;
    let (a, b) = match me {
        Party::A => (mine, &peer),
        Party::B => (&peer, mine),
    };
    verdict(a, b, expected, me)
}

pub(crate) use pgc_circuit::limits::group_digits as group;

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(gates: u64, ands: u64, sent: u64, received: u64) -> Done {
        Done {
            failure: None,
            gates,
            and_gates: ands,
            blocks_sent: sent,
            blocks_received: received,
        }
    }

    const SEQ: Expected = Expected {
        gates: 5000,
        and_gates: 1000,
        both_garble: false,
        shares_only: false,
    };

    #[test]
    fn done_messages_round_trip_and_garbage_is_refused() {
        let d = complete(5000, 1000, 2000, 0);
        assert_eq!(Done::from_bytes(&d.to_bytes()).unwrap(), d);
        let f = Done {
            failure: Some("x.pgc: the file changed".into()),
            ..d.clone()
        };
        assert_eq!(Done::from_bytes(&f.to_bytes()).unwrap(), f);
        let bytes = f.to_bytes();
        for cut in 0..bytes.len() {
            assert!(Done::from_bytes(&bytes[..cut]).is_err());
        }
        let mut v = d.to_bytes();
        v[8] = 2;
        assert!(Done::from_bytes(&v).is_err(), "unknown status");
        // A cause with a terminal escape arrives without its control characters; a long
        // cause is cut at a character boundary.
        let f = Done {
            failure: Some(format!("bad\x1b[2Jfile {}", "é".repeat(600))),
            ..d.clone()
        };
        let got = Done::from_bytes(&f.to_bytes()).unwrap().failure.unwrap();
        assert!(got.starts_with("bad [2Jfile é"), "{got}");
        assert!(got.len() <= MAX_REASON);
    }

    #[test]
    fn the_verdict_names_the_first_cause_on_both_sides() {
        let a = complete(5000, 1000, 2000, 0);
        let b = complete(5000, 1000, 0, 2000);
        verdict(&a, &b, SEQ, Party::A).unwrap();
        verdict(&a, &b, SEQ, Party::B).unwrap();

        let short = complete(1204, 300, 600, 0);
        let e = verdict(&short, &b, SEQ, Party::B).unwrap_err().to_string();
        assert!(
            e.contains(
                "party A (the garbler, the peer) processed 1,204 of 5,000 gates (300 of 1,000 \
                 AND gates)"
            ) && e.ends_with("no output was revealed"),
            "{e}"
        );
        let failed = Done {
            failure: Some("c.pgc: the file changed since it was opened".into()),
            ..short
        };
        let e = verdict(&a, &failed, SEQ, Party::B).unwrap_err().to_string();
        assert!(
            e.contains("party B (the evaluator, this party) could not read its circuit in full")
                && e.contains("the file changed")
                && e.contains("processed 1,204 of 5,000 gates"),
            "{e}"
        );
        let e = verdict(&a, &complete(5000, 1000, 0, 1998), SEQ, Party::A)
            .unwrap_err()
            .to_string();
        assert!(e.contains("sent 2,000 garbled-table blocks but"), "{e}");
        let e = verdict(
            &complete(5000, 1000, 1000, 0),
            &complete(5000, 1000, 0, 1000),
            SEQ,
            Party::A,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("1,000 garbled-table blocks crossed"), "{e}");
        // Under IPP tables flow both ways.
        let ipp = Expected {
            both_garble: true,
            ..SEQ
        };
        verdict(
            &complete(5000, 1000, 1200, 800),
            &complete(5000, 1000, 800, 1200),
            ipp,
            Party::A,
        )
        .unwrap();
        let e = verdict(
            &complete(5000, 1000, 1200, 800),
            &complete(5000, 1000, 802, 1200),
            ipp,
            Party::B,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("party B (this party) sent 802 garbled-table blocks but party A (the peer) received 800"),
            "{e}"
        );
    }

    #[test]
    fn grouping() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }
}
