//! Setting up the connections to the peer, so that only the real peer gets through.
//!
//! [`ChannelSecurity`] says how: TLS with pinned keys (the default everywhere) or
//! plaintext (opted into with `--insecure-plaintext`). Both parties call the matching
//! pair: [`accept_peer`] / [`connect_peer`] for the main channel, then
//! [`accept_peer_streams`] / [`connect_peer_streams`] for the per-thread streams.
//!
//! Messages, after the TLS handshake where there is one (so inside TLS):
//! - the connector sends a 24-byte hello: `PGCM`, 16 zero bytes and the set-up version
//!   (u32 LE) on the main channel; `PGCS`, the 16-byte session token and the stream index
//!   (u32 LE) on an extra stream (see [`crate::streams`]);
//! - the acceptor answers `PGCA` once it has taken the connection (for streams: once it
//!   holds all of them). A TLS acceptor meeting a plaintext hello answers `PGCT` in the
//!   clear, a plaintext acceptor meeting a TLS ClientHello answers `PGCP`, so the other
//!   side can say what is wrong instead of just "connection closed".
//!
//! The accepting party never takes the first comer: every accepted connection gets its own
//! thread (at most [`MAX_PENDING`] at a time) that runs the handshake and reads the hello
//! by its own short deadline ([`SETUP_WAIT`]), and only a connection that completes both
//! is taken. One that fails authentication, speaks something else or stays silent is
//! turned away with a one-line note (through [`RefusalNotes`], never with secrets in it)
//! while waiting goes on, so it cannot delay the real peer.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::keys::Identity;
use crate::streams::{MAX_STREAMS, STREAM_ACK, STREAM_MAGIC, tokens_equal};
use crate::tcp::{DEFAULT_TCP_TIMEOUT, TcpChannel, TcpListenerHandle, connect_stream_noting};
use crate::tls::{TlsChannel, TlsSettings};
use crate::{ByteCounts, Channel, NetError, ShapedChannel, SharedLink};

/// First bytes of the main channel's hello.
pub const MAIN_MAGIC: [u8; 4] = *b"PGCM";
/// Version of this set-up exchange, in the main hello.
pub const SETUP_VERSION: u32 = 1;
/// A TLS acceptor's answer to a plaintext hello.
pub const WANTS_TLS: [u8; 4] = *b"PGCT";
/// A plaintext acceptor's answer to a TLS ClientHello.
pub const WANTS_PLAINTEXT: [u8; 4] = *b"PGCP";
/// Most connections in set-up at once; more are closed at once.
pub const MAX_PENDING: usize = 64;
/// How long one connection may take for its handshake and hello.
pub const SETUP_WAIT: Duration = Duration::from_secs(10);
const HELLO_BYTES: usize = 24;
/// Pause before a connector tries again after its connection was closed unanswered.
const CONNECT_AGAIN: Duration = Duration::from_millis(100);
/// Pause between checks of the listener when nothing happens.
const ACCEPT_POLL: Duration = Duration::from_millis(5);
/// The same while a session's extra streams are expected: the peer opens them right now,
/// and every protocol run waits for them (with 5 ms, each stream could wait that long).
const STREAM_POLL: Duration = Duration::from_micros(200);
/// Streams a connector sets up at once (TLS handshakes, each on its own thread), well
/// below [`MAX_PENDING`].
const STREAMS_AT_ONCE: usize = 16;

/// How the connections to the peer are protected.
#[derive(Clone, Debug)]
pub enum ChannelSecurity {
    /// No encryption, no authentication (`--insecure-plaintext`).
    Plaintext,
    /// TLS 1.3, each side presenting its key and pinning the peer's.
    Tls(TlsSettings),
}

impl ChannelSecurity {
    /// Settings for two parties in one process (`pgc local`, tests): fresh keys from the
    /// OS's randomness, each side pinning the other's. Returns (A's, B's).
    pub fn loopback_pair() -> Result<(ChannelSecurity, ChannelSecurity), NetError> {
        let key_error = |e: crate::KeyError| NetError::Tls(e.to_string());
        let a = Identity::generate().map_err(key_error)?;
        let b = Identity::generate().map_err(key_error)?;
        Ok((
            ChannelSecurity::Tls(TlsSettings::new(&a, b.fingerprint())?),
            ChannelSecurity::Tls(TlsSettings::new(&b, a.fingerprint())?),
        ))
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, ChannelSecurity::Tls(_))
    }
}

/// Where the acceptor reports connections it turned away (one line each, no secrets).
pub type RefusalNotes = Arc<dyn Fn(&str) + Send + Sync>;

/// Notes that go nowhere.
pub fn no_notes() -> RefusalNotes {
    Arc::new(|_| {})
}

/// A connection to the peer, plaintext or TLS.
#[derive(Debug)]
pub enum PeerChannel {
    Tcp(TcpChannel),
    Tls(TlsChannel),
}

impl PeerChannel {
    /// See [`TcpChannel::set_timeout`]: a deadline for each call or frame.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), NetError> {
        match self {
            PeerChannel::Tcp(c) => c.set_timeout(timeout),
            PeerChannel::Tls(c) => c.set_timeout(timeout),
        }
    }

    /// Reading and writing halves, `(reader, writer)`; see [`TcpChannel::split`].
    pub fn split(self) -> Result<(PeerChannel, PeerChannel), NetError> {
        Ok(match self {
            PeerChannel::Tcp(c) => {
                let (r, w) = c.split()?;
                (PeerChannel::Tcp(r), PeerChannel::Tcp(w))
            }
            PeerChannel::Tls(c) => {
                let (r, w) = c.split()?;
                (PeerChannel::Tls(r), PeerChannel::Tls(w))
            }
        })
    }

    /// A second handle on the socket, e.g. for a watchdog that shuts it down.
    pub fn try_clone_socket(&self) -> Result<TcpStream, NetError> {
        match self {
            PeerChannel::Tcp(c) => c.try_clone_socket(),
            PeerChannel::Tls(c) => c.try_clone_socket(),
        }
    }

    pub fn peer_addr(&self) -> Result<SocketAddr, NetError> {
        match self {
            PeerChannel::Tcp(c) => c.peer_addr(),
            PeerChannel::Tls(c) => c.peer_addr(),
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, PeerChannel::Tls(_))
    }

    /// This channel, its sends shaped by `link` if there is one.
    pub fn shaped(self, link: &Option<SharedLink>) -> Result<Box<dyn Channel>, NetError> {
        Ok(match link {
            Some(l) => Box::new(ShapedChannel::wrap_peer(self, l.clone())?),
            None => Box::new(self),
        })
    }
}

impl ShapedChannel<PeerChannel> {
    /// Shapes the sends of a connection; its receiving half stays in this channel.
    pub fn wrap_peer(
        channel: PeerChannel,
        link: SharedLink,
    ) -> Result<ShapedChannel<PeerChannel>, NetError> {
        let (reader, writer) = channel.split()?;
        ShapedChannel::new(writer, reader, link)
    }
}

impl Channel for PeerChannel {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        match self {
            PeerChannel::Tcp(c) => c.send(bytes),
            PeerChannel::Tls(c) => c.send(bytes),
        }
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        match self {
            PeerChannel::Tcp(c) => c.recv(buf),
            PeerChannel::Tls(c) => c.recv(buf),
        }
    }
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        match self {
            PeerChannel::Tcp(c) => c.recv_frame_into(buf, max_len),
            PeerChannel::Tls(c) => c.recv_frame_into(buf, max_len),
        }
    }
    fn flush(&mut self) -> Result<(), NetError> {
        match self {
            PeerChannel::Tcp(c) => c.flush(),
            PeerChannel::Tls(c) => c.flush(),
        }
    }
    fn counts(&self) -> ByteCounts {
        match self {
            PeerChannel::Tcp(c) => c.counts(),
            PeerChannel::Tls(c) => c.counts(),
        }
    }
}

fn main_hello() -> [u8; HELLO_BYTES] {
    let mut bytes = [0u8; HELLO_BYTES];
    bytes[..4].copy_from_slice(&MAIN_MAGIC);
    bytes[20..].copy_from_slice(&SETUP_VERSION.to_le_bytes());
    bytes
}

fn stream_hello(token: &[u8; 16], index: u32) -> [u8; HELLO_BYTES] {
    let mut bytes = [0u8; HELLO_BYTES];
    bytes[..4].copy_from_slice(&STREAM_MAGIC);
    bytes[4..20].copy_from_slice(token);
    bytes[20..].copy_from_slice(&index.to_le_bytes());
    bytes
}

/// Waits until at least `want` bytes can be peeked (or the peer closes, or `deadline`).
fn peek_first(stream: &TcpStream, want: usize, deadline: Instant) -> Result<Vec<u8>, NetError> {
    let mut buf = [0u8; 8];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(NetError::Timeout(SETUP_WAIT));
        }
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match stream.peek(&mut buf[..want]) {
            Ok(0) => return Err(NetError::Closed),
            Ok(k) if k >= want => return Ok(buf[..k].to_vec()),
            // Fewer bytes than needed so far: look again shortly.
            Ok(_) => std::thread::sleep(ACCEPT_POLL),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(NetError::Timeout(SETUP_WAIT));
            }
            Err(e) => return Err(NetError::Io(e)),
        }
    }
}

/// Best-effort short answer in the clear before closing a connection we turn away.
fn answer_and_close(mut stream: TcpStream, answer: &[u8]) {
    use std::io::Write;
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = stream.write_all(answer);
    crate::tls::linger_close(&stream);
}

/// The acceptor's side of one connection: handshake (if TLS) and hello, by `deadline`.
fn set_up_accepted(
    stream: TcpStream,
    security: &ChannelSecurity,
    deadline: Instant,
) -> Result<(PeerChannel, [u8; HELLO_BYTES]), NetError> {
    let first = peek_first(&stream, 2, deadline)?;
    let looks_tls = first[0] == 0x16 && first[1] == 0x03;
    let mut channel = match security {
        ChannelSecurity::Tls(settings) => {
            if !looks_tls {
                if first == b"PG" {
                    answer_and_close(stream, &WANTS_TLS);
                    return Err(NetError::NotTls);
                }
                return Err(NetError::NotPgc);
            }
            PeerChannel::Tls(TlsChannel::accept(stream, settings, deadline)?)
        }
        ChannelSecurity::Plaintext => {
            if looks_tls {
                answer_and_close(stream, &WANTS_PLAINTEXT);
                return Err(NetError::PeerUsesTls);
            }
            PeerChannel::Tcp(TcpChannel::from_stream(stream)?)
        }
    };
    let left = deadline.saturating_duration_since(Instant::now());
    channel.set_timeout(Some(left.max(Duration::from_millis(1))))?;
    let mut hello = [0u8; HELLO_BYTES];
    channel.recv(&mut hello)?;
    if hello[..3] != *b"PGC" {
        return Err(NetError::NotPgc);
    }
    Ok((channel, hello))
}

/// What the acceptor waits for.
enum Wanted {
    Main,
    Streams { n: usize, token: [u8; 16] },
}

/// Accepts connections on `listener` until those `wanted` have completed set-up (see the
/// module docs); returns them in stream-index order.
fn accept_wanted(
    listener: &TcpListenerHandle,
    security: &ChannelSecurity,
    wanted: Wanted,
    timeout: Duration,
    notes: &RefusalNotes,
) -> Result<Vec<PeerChannel>, NetError> {
    let deadline = Instant::now() + timeout;
    let addr = listener.local_addr().to_string();
    let n = match wanted {
        Wanted::Main => 1,
        Wanted::Streams { n, .. } => n,
    };
    let mut slots: Vec<Option<PeerChannel>> = (0..n).map(|_| None).collect();
    let mut got = 0;
    let (done_tx, done_rx) = mpsc::channel();
    let mut pending = 0usize;
    let generation = crate::interrupt::generation();
    let mut refusals = Refusals {
        count: 0,
        last: String::new(),
        notes,
    };
    while got < n {
        let mut progressed = false;
        while let Ok((from, result)) = done_rx.try_recv() {
            progressed = true;
            pending -= 1;
            let (channel, hello): (PeerChannel, [u8; HELLO_BYTES]) = match result {
                Ok(r) => r,
                Err(e) => {
                    refusals.add(from, describe_refusal(&e));
                    continue;
                }
            };
            let index = u32::from_le_bytes([hello[20], hello[21], hello[22], hello[23]]);
            match &wanted {
                Wanted::Main if hello == main_hello() => {
                    slots[0] = Some(channel);
                    got = 1;
                    break;
                }
                Wanted::Main => refusals.add(
                    from,
                    "it is not a new pgc session (another version, or an extra stream of an \
                     old run)"
                        .into(),
                ),
                Wanted::Streams { token, .. }
                    if hello[..4] == STREAM_MAGIC && tokens_equal(&hello[4..20], token) =>
                {
                    match usize::try_from(index) {
                        Ok(i) if i < n && slots[i].is_none() => {
                            slots[i] = Some(channel);
                            got += 1;
                        }
                        _ => refusals
                            .add(from, format!("a repeated or unknown stream index {index}")),
                    }
                }
                Wanted::Streams { .. } => refusals.add(
                    from,
                    "it is not an extra stream of this session (another session token)".into(),
                ),
            }
        }
        if got == n {
            break;
        }
        if crate::interrupt::interrupted_since(generation) {
            return Err(NetError::Interrupted);
        }
        if Instant::now() >= deadline {
            return Err(match wanted {
                Wanted::Main if refusals.count > 0 => NetError::NoAuthenticatedPeer {
                    addr,
                    waited: timeout,
                    refused: refusals.count,
                    last: refusals.last,
                },
                Wanted::Main => NetError::AcceptTimeout {
                    addr,
                    waited: timeout,
                },
                Wanted::Streams { .. } => NetError::StreamsTimeout {
                    addr,
                    got,
                    wanted: n,
                    waited: timeout,
                },
            });
        }
        if let Some((stream, from)) = listener.try_accept()? {
            progressed = true;
            if pending >= MAX_PENDING {
                refusals.add(
                    from,
                    format!("more than {MAX_PENDING} connections were in set-up"),
                );
                drop(stream);
            } else {
                pending += 1;
                let done = done_tx.clone();
                let security = security.clone();
                let own_deadline = deadline.min(Instant::now() + SETUP_WAIT);
                let spawned =
                    std::thread::Builder::new()
                        .name("pgc-accept".into())
                        .spawn(move || {
                            let result = set_up_accepted(stream, &security, own_deadline);
                            // The acceptor may have finished already: then this one is not needed.
                            let _ = done.send((from, result));
                        });
                if let Err(e) = spawned {
                    pending -= 1;
                    refusals.add(from, format!("could not start a thread for it: {e}"));
                }
            }
        }
        if !progressed {
            // Wakes early when a set-up finishes.
            let poll = match wanted {
                Wanted::Main => ACCEPT_POLL,
                Wanted::Streams { .. } => STREAM_POLL,
            };
            if let Ok(msg) = done_rx.recv_timeout(poll) {
                // Put it back in the loop's way: handle it next round.
                let (from, result) = msg;
                let _ = done_tx.send((from, result));
            }
        }
    }
    let mut channels: Vec<PeerChannel> = slots.into_iter().flatten().collect();
    for channel in &mut channels {
        channel.send(&STREAM_ACK)?;
        channel.flush()?;
        channel.set_timeout(Some(DEFAULT_TCP_TIMEOUT))?;
    }
    Ok(channels)
}

/// Connections turned away so far.
struct Refusals<'n> {
    count: usize,
    last: String,
    notes: &'n RefusalNotes,
}

impl Refusals<'_> {
    fn add(&mut self, from: SocketAddr, why: String) {
        self.count += 1;
        (self.notes)(&format!("turned away a connection from {from}: {why}"));
        self.last = why;
    }
}

/// A refusal's reason for a note: the error's text, with a timeout said plainly.
fn describe_refusal(e: &NetError) -> String {
    match e {
        NetError::Timeout(_) => format!(
            "it sent no complete set-up within {} s",
            SETUP_WAIT.as_secs()
        ),
        NetError::Closed => "it closed the connection during set-up".into(),
        other => other.to_string(),
    }
}

/// Waits on `listener` for the peer's main connection and returns it once the peer has
/// completed set-up under `security`; connections that fail are reported to `notes` and
/// waiting goes on until `timeout`.
pub fn accept_peer(
    listener: &TcpListenerHandle,
    security: &ChannelSecurity,
    timeout: Duration,
    notes: &RefusalNotes,
) -> Result<PeerChannel, NetError> {
    let mut channels = accept_wanted(listener, security, Wanted::Main, timeout, notes)?;
    Ok(channels.pop().expect("one main channel"))
}

/// Accepts the `n` extra streams the peer opens with [`connect_peer_streams`] and the same
/// `token`, in index order.
pub fn accept_peer_streams(
    listener: &TcpListenerHandle,
    security: &ChannelSecurity,
    n: usize,
    token: [u8; 16],
    timeout: Duration,
    notes: &RefusalNotes,
) -> Result<Vec<PeerChannel>, NetError> {
    check_count(n)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    accept_wanted(
        listener,
        security,
        Wanted::Streams { n, token },
        timeout,
        notes,
    )
}

fn check_count(n: usize) -> Result<(), NetError> {
    if n > MAX_STREAMS {
        return Err(NetError::TooManyStreams {
            requested: n,
            max: MAX_STREAMS,
        });
    }
    Ok(())
}

/// Connects to `addr` (retrying while nobody listens yet) and runs the handshake, sending
/// `hello`; the acceptor's answer is read by the caller.
fn open(
    addr: &str,
    security: &ChannelSecurity,
    hello: &[u8; HELLO_BYTES],
    deadline: Instant,
    note: &dyn Fn(&str),
) -> Result<PeerChannel, NetError> {
    let left = deadline.saturating_duration_since(Instant::now());
    let stream = connect_stream_noting(addr, left, note)?;
    let mut channel = match security {
        ChannelSecurity::Tls(settings) => {
            PeerChannel::Tls(TlsChannel::connect(stream, settings, deadline)?)
        }
        ChannelSecurity::Plaintext => PeerChannel::Tcp(TcpChannel::from_stream(stream)?),
    };
    channel.send(hello)?;
    channel.flush()?;
    Ok(channel)
}

/// Reads the acceptor's answer on a freshly opened connection.
fn read_answer(channel: &mut PeerChannel, deadline: Instant) -> Result<(), NetError> {
    let left = deadline.saturating_duration_since(Instant::now());
    channel.set_timeout(Some(left.max(Duration::from_millis(1))))?;
    let mut answer = [0u8; 4];
    channel.recv(&mut answer)?;
    match answer {
        STREAM_ACK => {
            channel.set_timeout(Some(DEFAULT_TCP_TIMEOUT))?;
            Ok(())
        }
        WANTS_TLS => Err(NetError::PeerUsesTls),
        _ => Err(NetError::NotPgc),
    }
}

/// Connects the main channel to the peer listening at `addr` under `security`, waiting
/// (and retrying while nobody listens, or while its host name does not resolve) up to
/// `timeout`.
pub fn connect_peer(
    addr: &str,
    security: &ChannelSecurity,
    timeout: Duration,
) -> Result<PeerChannel, NetError> {
    connect_peer_noting(addr, security, timeout, &no_notes())
}

/// [`connect_peer`], telling `notes` when the peer's host name does not resolve yet (once:
/// it is looked up again until `timeout`).
pub fn connect_peer_noting(
    addr: &str,
    security: &ChannelSecurity,
    timeout: Duration,
    notes: &RefusalNotes,
) -> Result<PeerChannel, NetError> {
    let deadline = Instant::now() + timeout;
    // Said once per connection, not once per attempt after a closed connection.
    let said = std::sync::atomic::AtomicBool::new(false);
    let note = |text: &str| {
        if !said.swap(true, std::sync::atomic::Ordering::Relaxed) {
            notes(text);
        }
    };
    loop {
        let attempt = open(addr, security, &main_hello(), deadline, &note)
            .and_then(|mut channel| read_answer(&mut channel, deadline).map(|()| channel));
        match attempt {
            Ok(channel) => return Ok(channel),
            // Closed without a word: the acceptor was busy with other connections (or not
            // yet waiting for a main channel). Try again while time is left; a refusal with
            // a reason (a key, TLS or version mismatch) is final.
            Err(NetError::Closed)
                if deadline.saturating_duration_since(Instant::now()) > 2 * CONNECT_AGAIN =>
            {
                std::thread::sleep(CONNECT_AGAIN);
            }
            Err(NetError::Closed) => {
                return Err(NetError::SetupRefused {
                    addr: addr.to_string(),
                });
            }
            Err(e) => return Err(e),
        }
    }
}

/// Opens `n` extra streams to `addr`, where the peer runs [`accept_peer_streams`] with the
/// same `token`, and waits until the peer has taken all of them, for at most `timeout` in
/// all. Returned in stream-index order.
pub fn connect_peer_streams(
    addr: &str,
    security: &ChannelSecurity,
    n: usize,
    token: [u8; 16],
    timeout: Duration,
) -> Result<Vec<PeerChannel>, NetError> {
    check_count(n)?;
    let deadline = Instant::now() + timeout;
    // `check_count` keeps the index far below u32::MAX.
    let open_one = |index: usize| {
        open(
            addr,
            security,
            &stream_hello(&token, index as u32),
            deadline,
            &|_| {},
        )
    };
    let mut streams = Vec::with_capacity(n);
    if matches!(security, ChannelSecurity::Tls(_)) && n > 1 {
        // A TLS handshake waits for the acceptor and costs both sides key exchanges and
        // signatures: one after the other they took ≈ 2 ms per stream on one core, 32 ms
        // for 16. The acceptor sets each one up on its own thread; so does this side, a
        // few at a time.
        for first in (0..n).step_by(STREAMS_AT_ONCE) {
            let opened: Vec<Result<PeerChannel, NetError>> = std::thread::scope(|scope| {
                let open_one = &open_one;
                let handles: Vec<_> = (first..n.min(first + STREAMS_AT_ONCE))
                    .map(|index| scope.spawn(move || open_one(index)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            });
            for channel in opened {
                streams.push(channel?);
            }
        }
    } else {
        for index in 0..n {
            streams.push(open_one(index)?);
        }
    }
    for (index, channel) in streams.iter_mut().enumerate() {
        read_answer(channel, deadline).map_err(|e| match e {
            NetError::Closed | NetError::NotPgc => NetError::StreamRejected {
                addr: addr.to_string(),
                index,
            },
            NetError::Timeout(_) => NetError::StreamsTimeout {
                addr: addr.to_string(),
                got: index,
                wanted: n,
                waited: timeout,
            },
            other => other,
        })?;
    }
    Ok(streams)
}
