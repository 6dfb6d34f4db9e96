//! Extra connections between the same two parties, so that every worker thread has a
//! stream of its own and garbled tables of independent sub-circuits never queue behind each
//! other (nor contend for one channel's lock).
//!
//! The connecting party opens `n` connections and starts each with a hello: the magic
//! [`STREAM_MAGIC`], a 16-byte session token the parties agreed on over their main
//! channel, and the stream's index (u32, little-endian). The accepting party keeps every
//! connection whose hello matches and drops any other (a stray client, a stale run), until
//! it holds one per index; then it answers [`STREAM_ACK`] on each, so the connector knows
//! all streams are in place, or learns that it was turned away, before either side uses
//! them. Connections are set up concurrently, each by its own deadline (see
//! [`crate::connect`], which also runs this exchange inside TLS).

use crate::NetError;
use crate::connect::{
    ChannelSecurity, PeerChannel, accept_peer_streams, connect_peer_streams, no_notes,
};
use crate::memory::MemoryChannel;
use crate::tcp::{TcpChannel, TcpListenerHandle};
use std::time::Duration;

/// First bytes of every extra connection's hello.
pub const STREAM_MAGIC: [u8; 4] = *b"PGCS";
/// What the acceptor sends on every stream once all of them are in place.
pub const STREAM_ACK: [u8; 4] = *b"PGCA";
/// Most extra connections one call sets up; far more than useful worker threads.
pub const MAX_STREAMS: usize = 1024;
#[cfg(test)]
const HELLO_BYTES: usize = 4 + 16 + 4;

#[cfg(test)]
fn hello(token: &[u8; 16], index: u32) -> [u8; HELLO_BYTES] {
    let mut bytes = [0u8; HELLO_BYTES];
    bytes[..4].copy_from_slice(&STREAM_MAGIC);
    bytes[4..20].copy_from_slice(token);
    bytes[20..].copy_from_slice(&index.to_le_bytes());
    bytes
}

/// Compares tokens without an early exit, so response timing tells a guesser nothing.
pub(crate) fn tokens_equal(a: &[u8], b: &[u8; 16]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

fn plain(channels: Vec<PeerChannel>) -> Vec<TcpChannel> {
    channels
        .into_iter()
        .map(|c| match c {
            PeerChannel::Tcp(c) => c,
            PeerChannel::Tls(_) => unreachable!("plaintext set-up returns plaintext channels"),
        })
        .collect()
}

/// Accepts the `n` extra plaintext connections that [`connect_streams`] opens with the same
/// `token`, returned in stream-index order: [`accept_peer_streams`] without TLS. Connections
/// with another magic, token or a repeated or out-of-range index are dropped while waiting
/// goes on; after `timeout` the call fails with [`NetError::StreamsTimeout`].
pub fn accept_streams(
    listener: &TcpListenerHandle,
    n: usize,
    token: [u8; 16],
    timeout: Duration,
) -> Result<Vec<TcpChannel>, NetError> {
    let notes = no_notes();
    let channels = accept_peer_streams(
        listener,
        &ChannelSecurity::Plaintext,
        n,
        token,
        timeout,
        &notes,
    )?;
    Ok(plain(channels))
}

/// Opens `n` extra plaintext connections to `addr` (where the peer runs [`accept_streams`]
/// with the same `token`): [`connect_peer_streams`] without TLS.
pub fn connect_streams(
    addr: &str,
    n: usize,
    token: [u8; 16],
    timeout: Duration,
) -> Result<Vec<TcpChannel>, NetError> {
    let channels = connect_peer_streams(addr, &ChannelSecurity::Plaintext, n, token, timeout)?;
    Ok(plain(channels))
}

/// `n` in-memory channel pairs: the first vector holds one end of each, the second the
/// other, index for index.
pub fn memory_streams(n: usize) -> (Vec<MemoryChannel>, Vec<MemoryChannel>) {
    (0..n).map(|_| MemoryChannel::pair()).unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Channel;
    use std::thread;
    use std::time::Instant;

    const TOKEN: [u8; 16] = *b"0123456789abcdef";
    const TIMEOUT: Duration = Duration::from_secs(5);

    /// Sends a distinct message on every stream from both sides and checks that each
    /// arrives on the stream with the same index.
    fn exchange_on_every_stream<C: Channel + Send + 'static>(ours: Vec<C>, theirs: Vec<C>) {
        let n = ours.len();
        assert_eq!(theirs.len(), n);
        let peer = thread::spawn(move || {
            for (i, mut stream) in theirs.into_iter().enumerate() {
                stream
                    .send_frame(format!("to connector {i}").as_bytes())
                    .unwrap();
                stream.flush().unwrap();
                let got = stream.recv_frame(64).unwrap();
                assert_eq!(got, format!("to acceptor {i}").as_bytes());
            }
        });
        for (i, mut stream) in ours.into_iter().enumerate() {
            stream
                .send_frame(format!("to acceptor {i}").as_bytes())
                .unwrap();
            stream.flush().unwrap();
            let got = stream.recv_frame(64).unwrap();
            assert_eq!(got, format!("to connector {i}").as_bytes());
        }
        peer.join().unwrap();
    }

    fn round_trip(n: usize) {
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().to_string();
        let connector = thread::spawn(move || connect_streams(&addr, n, TOKEN, TIMEOUT));
        let accepted = accept_streams(&listener, n, TOKEN, TIMEOUT).unwrap();
        let connected = connector.join().unwrap().unwrap();
        assert_eq!(accepted.len(), n);
        exchange_on_every_stream(connected, accepted);
    }

    #[test]
    fn one_stream_round_trip() {
        round_trip(1);
    }

    #[test]
    fn four_streams_round_trip_in_index_order() {
        round_trip(4);
    }

    #[test]
    fn zero_streams_is_a_no_op() {
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().to_string();
        assert!(
            accept_streams(&listener, 0, TOKEN, TIMEOUT)
                .unwrap()
                .is_empty()
        );
        assert!(
            connect_streams(&addr, 0, TOKEN, TIMEOUT)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn wrong_token_is_turned_away_while_the_right_streams_connect() {
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().to_string();
        let mut wrong = TOKEN;
        wrong[15] ^= 1;
        // The impostor connects first, so the acceptor has to skip it.
        let impostor_addr = addr.clone();
        let impostor = thread::spawn(move || connect_streams(&impostor_addr, 1, wrong, TIMEOUT));
        thread::sleep(Duration::from_millis(200));
        let connector = thread::spawn(move || connect_streams(&addr, 3, TOKEN, TIMEOUT));
        let accepted = accept_streams(&listener, 3, TOKEN, TIMEOUT).unwrap();
        let connected = connector.join().unwrap().unwrap();
        exchange_on_every_stream(connected, accepted);
        // Had the impostor come too late to be accepted, closing the listener resets it.
        drop(listener);
        let rejected = impostor.join().unwrap();
        assert!(
            matches!(rejected, Err(NetError::StreamRejected { index: 0, .. })),
            "{rejected:?}"
        );
    }

    #[test]
    fn bad_hellos_and_duplicate_indices_are_dropped() {
        use std::io::{Read, Write};
        use std::net::TcpStream;
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().to_string();
        let client = thread::spawn(move || {
            let raw = |bytes: [u8; HELLO_BYTES]| {
                let mut stream = TcpStream::connect(&addr).unwrap();
                stream.write_all(&bytes).unwrap();
                stream
            };
            let mut bad_magic = hello(&TOKEN, 0);
            bad_magic[0] = b'X';
            // Every one stays open until the end, so only its hello decides its fate.
            let bad_magic = raw(bad_magic);
            let out_of_range = raw(hello(&TOKEN, 7));
            let second = raw(hello(&TOKEN, 1));
            let duplicate = raw(hello(&TOKEN, 1));
            let mut first = raw(hello(&TOKEN, 0));
            let mut ack = [0u8; 4];
            first.read_exact(&mut ack).unwrap();
            assert_eq!(ack, STREAM_ACK);
            // Set-ups run concurrently, so either connection announcing index 1 may win: the
            // winner gets the ack, the other sees its connection end without one.
            let outcome = |mut s: &TcpStream| {
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut got = Vec::new();
                Read::take(&mut s, 4).read_to_end(&mut got).unwrap();
                got
            };
            let (a, b) = (outcome(&second), outcome(&duplicate));
            let taken = match (a.as_slice(), b.as_slice()) {
                (x, []) if x == STREAM_ACK => second,
                ([], x) if x == STREAM_ACK => duplicate,
                other => panic!("exactly one stream 1 must be taken: {other:?}"),
            };
            (bad_magic, out_of_range, taken, first)
        });
        let accepted = accept_streams(&listener, 2, TOKEN, TIMEOUT).unwrap();
        let (_bad_magic, _out_of_range, taken, first) = client.join().unwrap();
        // Ordered by the announced index, not by arrival (stream 1 came first).
        assert_eq!(accepted.len(), 2);
        assert_eq!(
            accepted[0].peer_addr().unwrap(),
            first.local_addr().unwrap()
        );
        assert_eq!(
            accepted[1].peer_addr().unwrap(),
            taken.local_addr().unwrap()
        );
    }

    #[test]
    fn acceptor_times_out_when_nobody_comes() {
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let start = Instant::now();
        let err = accept_streams(&listener, 2, TOKEN, Duration::from_millis(200)).unwrap_err();
        assert!(
            matches!(
                err,
                NetError::StreamsTimeout {
                    got: 0,
                    wanted: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(err.to_string().contains("0 of 2"), "{err}");
    }

    #[test]
    fn acceptor_times_out_when_only_some_streams_come() {
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().to_string();
        let partial = thread::spawn(move || {
            let mut stream = TcpChannel::connect(&addr, TIMEOUT).unwrap();
            stream.send(&hello(&TOKEN, 1)).unwrap();
            stream.flush().unwrap();
            stream
        });
        let err = accept_streams(&listener, 3, TOKEN, Duration::from_millis(300)).unwrap_err();
        drop(partial.join().unwrap());
        assert!(
            matches!(
                err,
                NetError::StreamsTimeout {
                    got: 1,
                    wanted: 3,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn too_many_streams_is_refused() {
        let err = connect_streams("127.0.0.1:1", MAX_STREAMS + 1, TOKEN, TIMEOUT).unwrap_err();
        assert!(matches!(err, NetError::TooManyStreams { .. }), "{err:?}");
    }

    #[test]
    fn memory_streams_pair_up_by_index() {
        let (ours, theirs) = memory_streams(3);
        exchange_on_every_stream(ours, theirs);
    }
}
