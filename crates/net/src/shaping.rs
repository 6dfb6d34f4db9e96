//! Bandwidth and latency shaping inside the channel, to reproduce WAN experiments on hosts
//! where the kernel offers no traffic control (no netem).
//!
//! Each party shapes only what it sends: a [`ShapedChannel`] books its outgoing bytes on a
//! [`SharedLink`] (one direction of a simulated link, shared by all channels of that party
//! the way one network card is) and a forwarding thread hands them to the real channel when
//! they would have arrived at the far end. The sender goes on while bytes are "on the
//! wire", as with a real link, so latency is pipelined rather than paid per send; it only
//! waits once more than a bounded amount is in flight. Receiving is not shaped: the peer's
//! own shaping already delayed what arrives. Shaping both directions of a run in one
//! process therefore means wrapping both ends.

use crate::{ByteCounts, Channel, MemoryChannel, NetError, TcpChannel};
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes gathered before they are booked on the link as one piece. Also the granularity of
/// the simulation: a piece arrives whole, when its last bit would have.
pub const SHAPE_CHUNK_BYTES: usize = 64 << 10;
/// Least amount a sender may have in flight before it waits (see
/// [`LinkShape::max_in_flight_bytes`]).
pub const MIN_IN_FLIGHT_BYTES: usize = 4 << 20;

/// Properties of one direction of a simulated link. The default shapes nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkShape {
    /// Bandwidth in bits per second; `None` (or 0) means unlimited.
    pub rate_bits_per_sec: Option<u64>,
    /// One-way delay added to every byte.
    pub latency: Duration,
}

impl LinkShape {
    /// True when this shape changes nothing (no rate limit, no latency).
    pub fn is_none(&self) -> bool {
        self.rate().is_none() && self.latency.is_zero()
    }

    /// The rate limit, if there is one (0 counts as none: a link that moves nothing would
    /// only turn every run into a hang).
    fn rate(&self) -> Option<u64> {
        self.rate_bits_per_sec.filter(|&rate| rate > 0)
    }

    /// How long `bytes` occupy the link at its rate (zero when unlimited).
    pub fn transmit_time(&self, bytes: usize) -> Duration {
        match self.rate() {
            None => Duration::ZERO,
            Some(rate) => {
                let nanos = (bytes as u128 * 8 * 1_000_000_000).div_ceil(rate as u128);
                Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
            }
        }
    }

    /// How many bytes a sender may have handed over but not yet delivered before it waits:
    /// twice the bandwidth-delay product (enough to keep the link busy for a round trip,
    /// like a TCP window), but at least [`MIN_IN_FLIGHT_BYTES`]. Without a rate limit the
    /// minimum applies, which caps throughput at that many bytes per one-way latency.
    pub fn max_in_flight_bytes(&self) -> usize {
        let bdp = match self.rate() {
            None => 0,
            Some(rate) => rate as u128 * self.latency.as_nanos() / 8 / 1_000_000_000,
        };
        usize::try_from(bdp.saturating_mul(2))
            .unwrap_or(usize::MAX)
            .max(MIN_IN_FLIGHT_BYTES)
    }
}

impl fmt::Display for LinkShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("no shaping");
        }
        match self.rate() {
            None => f.write_str("unlimited rate")?,
            Some(rate) => {
                let (value, unit) = if rate >= 1_000_000_000 {
                    (rate as f64 / 1e9, "Gbit/s")
                } else if rate >= 1_000_000 {
                    (rate as f64 / 1e6, "Mbit/s")
                } else if rate >= 1_000 {
                    (rate as f64 / 1e3, "kbit/s")
                } else {
                    (rate as f64, "bit/s")
                };
                write!(f, "{} {unit}", trim_number(value))?;
            }
        }
        if self.latency.is_zero() {
            f.write_str(", no added latency")
        } else {
            let ms = self.latency.as_secs_f64() * 1e3;
            write!(f, ", {} ms one-way", trim_number(ms))
        }
    }
}

/// A number with at most three decimals and no trailing zeros ("100", "1.5", "0.125").
fn trim_number(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One direction of a simulated link, shared by every channel that sends over it.
///
/// Pacing uses a virtual clock: the link is busy until `free_at`; a piece of `len` bytes
/// starts at `max(now, free_at)`, leaves the link `len * 8 / rate` later, and arrives one
/// latency after that. An idle link earns no credit, so there are no bursts above the rate.
#[derive(Clone)]
pub struct SharedLink {
    inner: Arc<LinkInner>,
}

struct LinkInner {
    shape: LinkShape,
    /// When the link has finished transmitting everything booked so far.
    free_at: Mutex<Option<Instant>>,
}

impl SharedLink {
    pub fn new(shape: LinkShape) -> SharedLink {
        SharedLink {
            inner: Arc::new(LinkInner {
                shape,
                free_at: Mutex::new(None),
            }),
        }
    }

    pub fn shape(&self) -> LinkShape {
        self.inner.shape
    }

    /// Books the link for `bytes` sent now and returns when they reach the far end.
    pub fn reserve(&self, bytes: usize) -> Instant {
        let shape = self.inner.shape;
        let now = Instant::now();
        let transmitted = {
            // The clock is a single value; a panic elsewhere cannot leave it inconsistent.
            let mut free_at = self
                .inner
                .free_at
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let start = free_at.map_or(now, |free| free.max(now));
            let done = start + shape.transmit_time(bytes);
            *free_at = Some(done);
            done
        };
        transmitted + shape.latency
    }
}

impl fmt::Debug for SharedLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedLink")
            .field("shape", &self.inner.shape)
            .finish_non_exhaustive()
    }
}

/// A piece of outgoing data and when it may be written to the real channel.
struct Scheduled {
    due: Instant,
    bytes: Vec<u8>,
}

/// State shared between a [`ShapedChannel`] and its forwarding thread.
struct Forwarder {
    state: Mutex<ForwardState>,
    /// Signalled when a piece is queued or the channel is closing.
    work: Condvar,
    /// Signalled when a piece has been delivered or the thread has stopped.
    room: Condvar,
    /// Mirrors `state.stopped`, so sends can check for a failure without locking.
    stopped: AtomicBool,
}

#[derive(Default)]
struct ForwardState {
    queue: VecDeque<Scheduled>,
    /// Bytes handed over and not yet written to the real channel (queued or being written).
    in_flight: usize,
    /// Most bytes ever in flight at once; lets tests check the memory bound.
    peak_in_flight: usize,
    /// The channel is being dropped: deliver what is queued, then stop.
    closing: bool,
    /// The thread has exited (done, failed or panicked); nothing more will be delivered.
    stopped: bool,
    /// Why the thread stopped early, kept so that every later call can report it.
    failure: Option<NetError>,
}

impl Forwarder {
    fn lock(&self) -> MutexGuard<'_, ForwardState> {
        // Every critical section leaves the state consistent (single pushes, pops and
        // counter updates), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The error to report once the thread has stopped (state must say it has).
    fn stop_error(state: &ForwardState) -> NetError {
        match &state.failure {
            Some(failure) => duplicate_error(failure),
            None => NetError::ShaperStopped,
        }
    }
}

/// Marks the forwarding thread stopped when it exits by any path, panics included, so a
/// sender waiting for room never waits for a thread that is gone.
struct StopOnExit(Arc<Forwarder>);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.stopped = true;
        state.queue.clear();
        state.in_flight = 0;
        drop(state);
        self.0.stopped.store(true, Ordering::Release);
        self.0.room.notify_all();
    }
}

/// The forwarding thread: writes each piece to the real channel at its due time.
fn forward<W: Channel>(mut writer: W, forwarder: Arc<Forwarder>) {
    let _stop = StopOnExit(forwarder.clone());
    loop {
        let piece = {
            let mut state = forwarder.lock();
            loop {
                if let Some(piece) = state.queue.pop_front() {
                    break piece;
                }
                if state.closing {
                    return;
                }
                state = forwarder
                    .work
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        };
        let now = Instant::now();
        if piece.due > now {
            std::thread::sleep(piece.due - now);
        }
        let result = writer.send(&piece.bytes).and_then(|()| writer.flush());
        let mut state = forwarder.lock();
        match result {
            Ok(()) => state.in_flight -= piece.bytes.len(),
            Err(e) => {
                state.failure = Some(e);
                return;
            }
        }
        drop(state);
        forwarder.room.notify_all();
    }
}

/// A copy of `e` for reporting it again (I/O errors keep their kind and message).
fn duplicate_error(e: &NetError) -> NetError {
    let io = |e: &std::io::Error| std::io::Error::new(e.kind(), e.to_string());
    match e {
        NetError::Closed => NetError::Closed,
        NetError::Interrupted => NetError::Interrupted,
        NetError::Timeout(d) => NetError::Timeout(*d),
        NetError::FrameTooLarge { len, max } => NetError::FrameTooLarge {
            len: *len,
            max: *max,
        },
        NetError::Io(e) => NetError::Io(io(e)),
        NetError::Connect { addr, source } => NetError::Connect {
            addr: addr.clone(),
            source: io(source),
        },
        NetError::ConnectTimeout {
            addr,
            waited,
            last_error,
        } => NetError::ConnectTimeout {
            addr: addr.clone(),
            waited: *waited,
            last_error: io(last_error),
        },
        NetError::Unresolved {
            host,
            addr,
            waited,
            last_error,
        } => NetError::Unresolved {
            host: host.clone(),
            addr: addr.clone(),
            waited: *waited,
            last_error: last_error.clone(),
        },
        NetError::Bind { addr, source } => NetError::Bind {
            addr: addr.clone(),
            source: io(source),
        },
        NetError::Accept { addr, source } => NetError::Accept {
            addr: addr.clone(),
            source: io(source),
        },
        NetError::AcceptTimeout { addr, waited } => NetError::AcceptTimeout {
            addr: addr.clone(),
            waited: *waited,
        },
        NetError::StreamsTimeout {
            addr,
            got,
            wanted,
            waited,
        } => NetError::StreamsTimeout {
            addr: addr.clone(),
            got: *got,
            wanted: *wanted,
            waited: *waited,
        },
        NetError::StreamRejected { addr, index } => NetError::StreamRejected {
            addr: addr.clone(),
            index: *index,
        },
        NetError::TooManyStreams { requested, max } => NetError::TooManyStreams {
            requested: *requested,
            max: *max,
        },
        NetError::ShaperStopped => NetError::ShaperStopped,
        NetError::PeerKeyMismatch {
            expected,
            presented,
        } => NetError::PeerKeyMismatch {
            expected: expected.clone(),
            presented: presented.clone(),
        },
        NetError::KeyRefusedByPeer { ours } => NetError::KeyRefusedByPeer { ours: ours.clone() },
        NetError::NotTls => NetError::NotTls,
        NetError::PeerUsesTls => NetError::PeerUsesTls,
        NetError::NotPgc => NetError::NotPgc,
        NetError::SetupRefused { addr } => NetError::SetupRefused { addr: addr.clone() },
        NetError::Tls(text) => NetError::Tls(text.clone()),
        NetError::NoAuthenticatedPeer {
            addr,
            waited,
            refused,
            last,
        } => NetError::NoAuthenticatedPeer {
            addr: addr.clone(),
            waited: *waited,
            refused: *refused,
            last: last.clone(),
        },
    }
}

/// A [`Channel`] whose sends travel over a simulated link (see the module docs).
///
/// `R` is the half of the real channel that receives; the sending half belongs to the
/// forwarding thread. `send` gathers bytes; `flush`, a full [`SHAPE_CHUNK_BYTES`] piece,
/// or a `recv` books them on the link and queues them without waiting for the latency.
/// A failure of the real channel while forwarding is reported by the next `send`, `flush`
/// or [`wait_delivered`](ShapedChannel::wait_delivered). Dropping the channel delivers
/// what is queued (at its due times) before the real channel closes.
///
/// Counters count bytes as the application sent and received them, whether or not they
/// have been delivered yet.
pub struct ShapedChannel<R: Channel> {
    /// Only `None` while dropping, so the peer's sends fail before we wait for delivery.
    reader: Option<R>,
    /// Bytes sent but not yet booked on the link.
    pending: Vec<u8>,
    link: SharedLink,
    forwarder: Arc<Forwarder>,
    thread: Option<JoinHandle<()>>,
    max_in_flight: usize,
    counts: ByteCounts,
}

impl<R: Channel> ShapedChannel<R> {
    /// Shapes what is sent through `writer` (moved to a forwarding thread) by `link`;
    /// `reader` receives from the same peer, unshaped. The two are normally the halves of
    /// one connection; see [`wrap_tcp`](ShapedChannel::wrap_tcp) and
    /// [`wrap_memory`](ShapedChannel::wrap_memory).
    pub fn new<W: Channel + 'static>(
        writer: W,
        reader: R,
        link: SharedLink,
    ) -> Result<ShapedChannel<R>, NetError> {
        let forwarder = Arc::new(Forwarder {
            state: Mutex::new(ForwardState::default()),
            work: Condvar::new(),
            room: Condvar::new(),
            stopped: AtomicBool::new(false),
        });
        let thread_state = forwarder.clone();
        let thread = std::thread::Builder::new()
            .name("pgc-link-shaper".into())
            .spawn(move || forward(writer, thread_state))?;
        Ok(ShapedChannel {
            reader: Some(reader),
            pending: Vec::with_capacity(SHAPE_CHUNK_BYTES),
            max_in_flight: link.shape().max_in_flight_bytes(),
            link,
            forwarder,
            thread: Some(thread),
            counts: ByteCounts::default(),
        })
    }

    /// Changes how many bytes may be in flight before a send waits (default:
    /// [`LinkShape::max_in_flight_bytes`]). One piece is always allowed, however small the
    /// limit.
    pub fn with_max_in_flight(mut self, bytes: usize) -> ShapedChannel<R> {
        self.max_in_flight = bytes;
        self
    }

    pub fn link(&self) -> &SharedLink {
        &self.link
    }

    /// Flushes, then waits until everything sent so far has been written to the real
    /// channel, reporting a failure to do so.
    pub fn wait_delivered(&mut self) -> Result<(), NetError> {
        self.flush()?;
        let mut state = self.forwarder.lock();
        while state.in_flight > 0 && !state.stopped {
            state = self
                .forwarder
                .room
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        if state.stopped {
            return Err(Forwarder::stop_error(&state));
        }
        Ok(())
    }

    /// Fails if the forwarding thread has stopped; cheap enough for every send.
    fn check_forwarder(&self) -> Result<(), NetError> {
        if self.forwarder.stopped.load(Ordering::Acquire) {
            return Err(Forwarder::stop_error(&self.forwarder.lock()));
        }
        Ok(())
    }

    /// Books the pending bytes on the link and queues them, waiting while too much is in
    /// flight.
    fn hand_over_pending(&mut self) -> Result<(), NetError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let len = self.pending.len();
        let mut state = self.forwarder.lock();
        loop {
            if state.stopped {
                return Err(Forwarder::stop_error(&state));
            }
            if state.in_flight == 0 || state.in_flight + len <= self.max_in_flight {
                break;
            }
            state = self
                .forwarder
                .room
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        // Booked only now, after any wait, so a blocked sender holds no link time.
        let due = self.link.reserve(len);
        let bytes = if len < SHAPE_CHUNK_BYTES / 4 {
            // Small pieces (ping-pong messages) get an exact-size copy, so the gathering
            // buffer is reused instead of allocating a full-size one per message.
            let copy = self.pending.clone();
            self.pending.clear();
            copy
        } else {
            std::mem::replace(&mut self.pending, Vec::with_capacity(SHAPE_CHUNK_BYTES))
        };
        state.in_flight += len;
        state.peak_in_flight = state.peak_in_flight.max(state.in_flight);
        state.queue.push_back(Scheduled { due, bytes });
        drop(state);
        self.forwarder.work.notify_one();
        Ok(())
    }

    #[cfg(test)]
    fn peak_in_flight(&self) -> usize {
        self.forwarder.lock().peak_in_flight
    }
}

impl ShapedChannel<TcpChannel> {
    /// Shapes the sends of a TCP connection; its receiving half stays in this channel.
    pub fn wrap_tcp(
        channel: TcpChannel,
        link: SharedLink,
    ) -> Result<ShapedChannel<TcpChannel>, NetError> {
        let (reader, writer) = channel.split()?;
        ShapedChannel::new(writer, reader, link)
    }
}

impl ShapedChannel<MemoryChannel> {
    /// Shapes the sends of one end of an in-memory channel.
    pub fn wrap_memory(
        channel: MemoryChannel,
        link: SharedLink,
    ) -> Result<ShapedChannel<MemoryChannel>, NetError> {
        let (reader, writer) = channel.split();
        ShapedChannel::new(writer, reader, link)
    }
}

impl<R: Channel> Channel for ShapedChannel<R> {
    fn send(&mut self, mut bytes: &[u8]) -> Result<(), NetError> {
        self.check_forwarder()?;
        while !bytes.is_empty() {
            let take = (SHAPE_CHUNK_BYTES - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            self.counts.sent += take as u64;
            bytes = &bytes[take..];
            if self.pending.len() == SHAPE_CHUNK_BYTES {
                self.hand_over_pending()?;
            }
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        // The peer may be waiting for what we hold before it answers. If our direction is
        // already dead, what the peer sent before that may still be readable: go on.
        match self.hand_over_pending() {
            Ok(()) | Err(NetError::Closed) => {}
            Err(e) => return Err(e),
        }
        // The reader is only taken while dropping, when no `recv` can run.
        let Some(reader) = self.reader.as_mut() else {
            return Err(NetError::Closed);
        };
        reader.recv(buf)?;
        self.counts.received += buf.len() as u64;
        Ok(())
    }

    /// The reader's own framing, so its per-message deadline covers the whole frame.
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        match self.hand_over_pending() {
            Ok(()) | Err(NetError::Closed) => {}
            Err(e) => return Err(e),
        }
        let Some(reader) = self.reader.as_mut() else {
            return Err(NetError::Closed);
        };
        reader.recv_frame_into(buf, max_len)?;
        self.counts.received += 4 + buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NetError> {
        self.check_forwarder()?;
        self.hand_over_pending()
    }

    fn counts(&self) -> ByteCounts {
        self.counts
    }
}

impl<R: Channel> Drop for ShapedChannel<R> {
    fn drop(&mut self) {
        // Stop receiving first, so a peer blocked sending to us fails instead of waiting
        // for us while we wait for delivery below.
        drop(self.reader.take());
        // What was sent before dropping still goes out, as with a real close; errors can
        // no longer be reported.
        let _ = self.hand_over_pending();
        self.forwarder.lock().closing = true;
        self.forwarder.work.notify_all();
        if let Some(thread) = self.thread.take() {
            // The thread marks itself stopped even if it panicked; nothing to report here.
            let _ = thread.join();
        }
    }
}

impl<R: Channel> fmt::Debug for ShapedChannel<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShapedChannel")
            .field("shape", &self.link.shape())
            .field("counts", &self.counts)
            .field("max_in_flight", &self.max_in_flight)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// Deterministic test bytes (xorshift), so failures reproduce.
    fn pattern(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn shape(rate_bits_per_sec: Option<u64>, latency_ms: u64) -> LinkShape {
        LinkShape {
            rate_bits_per_sec,
            latency: Duration::from_millis(latency_ms),
        }
    }

    fn shaped_memory_pair(link: &SharedLink) -> (ShapedChannel<MemoryChannel>, MemoryChannel) {
        let (a, b) = MemoryChannel::pair();
        (ShapedChannel::wrap_memory(a, link.clone()).unwrap(), b)
    }

    fn tcp_pair() -> (TcpChannel, TcpChannel) {
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().to_string();
        let connector = thread::spawn(move || TcpChannel::connect(&addr, Duration::from_secs(5)));
        let accepted = listener.accept(Duration::from_secs(5)).unwrap();
        (connector.join().unwrap().unwrap(), accepted)
    }

    /// Fails unless `measured` is at most `tolerance` (a fraction) below `expected` and at
    /// most [`LATE`] above it. The shaper delays at least what it emulates, so falling short
    /// is its error; arriving late is also the machine's (a loaded 2-vCPU CI machine ran a
    /// 300 ms ping-pong in 390 ms), so the upper bound only catches a delay paid twice.
    fn assert_near(measured: Duration, expected: Duration, tolerance: f64) {
        // Shown with `--nocapture`, to see how close the shaper gets.
        eprintln!("took {measured:?}, expected {expected:?}");
        let (m, e) = (measured.as_secs_f64(), expected.as_secs_f64());
        assert!(
            m >= e * (1.0 - tolerance) && m <= e * (1.0 + LATE),
            "took {measured:?}, expected {expected:?} (−{:.0}% … +{:.0}%)",
            tolerance * 100.0,
            LATE * 100.0
        );
    }

    /// How late a shaped transfer may finish, as a fraction of what it emulates.
    const LATE: f64 = 0.6;

    /// Receives exactly `len` bytes in pieces and checks them against `expected`.
    fn receive_all(channel: &mut impl Channel, expected: &[u8]) {
        let mut got = vec![0u8; expected.len()];
        for piece in got.chunks_mut(40_000) {
            channel.recv(piece).unwrap();
        }
        assert!(got == expected, "received bytes differ from the sent ones");
    }

    #[test]
    fn display_and_is_none() {
        assert!(LinkShape::default().is_none());
        assert!(shape(Some(0), 0).is_none());
        assert!(!shape(None, 1).is_none());
        assert_eq!(LinkShape::default().to_string(), "no shaping");
        assert_eq!(
            shape(Some(100_000_000), 50).to_string(),
            "100 Mbit/s, 50 ms one-way"
        );
        assert_eq!(
            shape(Some(1_500_000_000), 0).to_string(),
            "1.5 Gbit/s, no added latency"
        );
        assert_eq!(shape(None, 20).to_string(), "unlimited rate, 20 ms one-way");
        let sub_ms = LinkShape {
            rate_bits_per_sec: Some(64_000),
            latency: Duration::from_micros(250),
        };
        assert_eq!(sub_ms.to_string(), "64 kbit/s, 0.25 ms one-way");
    }

    #[test]
    fn in_flight_bound_is_twice_the_bandwidth_delay_product_with_a_floor() {
        assert_eq!(shape(Some(100_000_000), 50).max_in_flight_bytes(), 4 << 20);
        // 1 Gbit/s × 100 ms = 12.5 MB in flight one way.
        assert_eq!(
            shape(Some(1_000_000_000), 100).max_in_flight_bytes(),
            25_000_000
        );
        assert_eq!(shape(None, 100).max_in_flight_bytes(), MIN_IN_FLIGHT_BYTES);
    }

    #[test]
    fn reservations_follow_a_virtual_clock() {
        // 8 Mbit/s is one byte per microsecond.
        let link = SharedLink::new(shape(Some(8_000_000), 10));
        assert_eq!(
            link.shape().transmit_time(100_000),
            Duration::from_millis(100)
        );
        let before = Instant::now();
        let first = link.reserve(100_000);
        let second = link.clone().reserve(100_000);
        assert!(first >= before + Duration::from_millis(110));
        // The second booking starts when the first leaves the link, even from a clone.
        assert_eq!(second - first, Duration::from_millis(100));
    }

    #[test]
    fn throughput_matches_the_rate_in_memory() {
        let link = SharedLink::new(shape(Some(40_000_000), 0));
        let (mut a, mut b) = shaped_memory_pair(&link);
        let data = pattern(2_000_000, 1);
        let expected = data.clone();
        let start = Instant::now();
        let receiver = thread::spawn(move || {
            receive_all(&mut b, &expected);
            start.elapsed()
        });
        for piece in data.chunks(10_000) {
            a.send(piece).unwrap();
        }
        a.flush().unwrap();
        let elapsed = receiver.join().unwrap();
        assert_near(elapsed, Duration::from_millis(400), 0.15);
        assert_eq!(a.counts().sent, 2_000_000);
    }

    #[test]
    fn throughput_matches_the_rate_over_tcp() {
        let (a, mut b) = tcp_pair();
        let link = SharedLink::new(shape(Some(40_000_000), 0));
        let mut a = ShapedChannel::wrap_tcp(a, link).unwrap();
        let data = pattern(2_000_000, 2);
        let expected = data.clone();
        let start = Instant::now();
        let receiver = thread::spawn(move || {
            receive_all(&mut b, &expected);
            start.elapsed()
        });
        a.send(&data).unwrap();
        a.flush().unwrap();
        let elapsed = receiver.join().unwrap();
        assert_near(elapsed, Duration::from_millis(400), 0.15);
    }

    #[test]
    fn ping_pong_costs_two_latencies_per_round_trip() {
        const ROUNDS: u32 = 6;
        let (a, b) = MemoryChannel::pair();
        let mut a = ShapedChannel::wrap_memory(a, SharedLink::new(shape(None, 25))).unwrap();
        let mut b = ShapedChannel::wrap_memory(b, SharedLink::new(shape(None, 25))).unwrap();
        let echo = thread::spawn(move || {
            for _ in 0..ROUNDS {
                let frame = b.recv_frame(64).unwrap();
                b.send_frame(&frame).unwrap();
                b.flush().unwrap();
            }
        });
        let start = Instant::now();
        for round in 0..ROUNDS {
            a.send_frame(&round.to_le_bytes()).unwrap();
            a.flush().unwrap();
            assert_eq!(a.recv_frame(64).unwrap(), round.to_le_bytes());
        }
        let elapsed = start.elapsed();
        echo.join().unwrap();
        let expected = Duration::from_millis(50) * ROUNDS;
        assert!(elapsed >= expected, "{elapsed:?} is less than {expected:?}");
        assert_near(elapsed, expected, 0.15);
    }

    #[test]
    fn latency_is_pipelined_not_paid_per_send() {
        let link = SharedLink::new(shape(None, 200));
        let (mut a, mut b) = shaped_memory_pair(&link);
        let start = Instant::now();
        let receiver = thread::spawn(move || {
            let mut arrivals = Vec::new();
            for i in 0..20u32 {
                assert_eq!(b.recv_frame(4).unwrap(), i.to_le_bytes());
                arrivals.push(start.elapsed());
            }
            arrivals
        });
        for i in 0..20u32 {
            a.send_frame(&i.to_le_bytes()).unwrap();
            a.flush().unwrap();
        }
        let sending = start.elapsed();
        assert!(
            sending < Duration::from_millis(100),
            "sends took {sending:?}"
        );
        let arrivals = receiver.join().unwrap();
        assert!(arrivals[0] >= Duration::from_millis(200), "{arrivals:?}");
        assert!(arrivals[19] < Duration::from_millis(300), "{arrivals:?}");
    }

    #[test]
    fn channels_sharing_a_link_share_its_rate() {
        let link = SharedLink::new(shape(Some(40_000_000), 0));
        let start = Instant::now();
        let mut threads = Vec::new();
        for seed in 0..2u64 {
            let (mut a, mut b) = shaped_memory_pair(&link);
            let data = pattern(1_000_000, seed + 10);
            let expected = data.clone();
            threads.push(thread::spawn(move || {
                a.send(&data).unwrap();
                a.wait_delivered().unwrap();
            }));
            threads.push(thread::spawn(move || receive_all(&mut b, &expected)));
        }
        for thread in threads {
            thread.join().unwrap();
        }
        // Together 2 MB at 40 Mbit/s; each alone would have needed only half the time.
        assert_near(start.elapsed(), Duration::from_millis(400), 0.15);
    }

    #[test]
    fn sender_waits_while_too_much_is_in_flight() {
        // 1 MB/s, and at most two pieces in flight.
        let link = SharedLink::new(shape(Some(8_000_000), 0));
        let (a, mut b) = shaped_memory_pair(&link);
        let mut a = a.with_max_in_flight(2 * SHAPE_CHUNK_BYTES);
        let data = pattern(8 * SHAPE_CHUNK_BYTES, 3);
        let expected = data.clone();
        let receiver = thread::spawn(move || receive_all(&mut b, &expected));
        let start = Instant::now();
        a.send(&data).unwrap();
        let blocked = start.elapsed();
        // The 8th piece may only be queued once the 6th has been delivered.
        let six_pieces = link.shape().transmit_time(6 * SHAPE_CHUNK_BYTES);
        assert!(blocked >= six_pieces, "send returned after {blocked:?}");
        a.wait_delivered().unwrap();
        receiver.join().unwrap();
        assert_eq!(a.peak_in_flight(), 2 * SHAPE_CHUNK_BYTES);
    }

    #[test]
    fn peer_gone_is_reported_on_the_next_call() {
        let link = SharedLink::new(shape(None, 5));
        let (mut a, b) = shaped_memory_pair(&link);
        drop(b);
        a.send(b"hello").unwrap();
        a.flush().unwrap();
        assert!(matches!(a.wait_delivered(), Err(NetError::Closed)));
        assert!(matches!(a.send(b"again"), Err(NetError::Closed)));
        assert!(matches!(a.flush(), Err(NetError::Closed)));
        assert!(matches!(a.recv(&mut [0u8; 1]), Err(NetError::Closed)));
    }

    #[test]
    fn sender_blocked_on_a_full_link_wakes_when_the_peer_leaves() {
        let link = SharedLink::new(shape(Some(8_000_000), 0));
        let (a, mut b) = shaped_memory_pair(&link);
        let mut a = a.with_max_in_flight(SHAPE_CHUNK_BYTES);
        let reader = thread::spawn(move || {
            let mut buf = vec![0u8; 100_000];
            b.recv(&mut buf).unwrap();
        });
        let start = Instant::now();
        let data = vec![7u8; 10 << 20];
        let result = a.send(&data);
        reader.join().unwrap();
        assert!(matches!(result, Err(NetError::Closed)), "{result:?}");
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn peer_gone_is_reported_over_tcp() {
        let (a, b) = tcp_pair();
        let mut a = ShapedChannel::wrap_tcp(a, SharedLink::new(shape(None, 1))).unwrap();
        drop(b);
        let piece = vec![1u8; SHAPE_CHUNK_BYTES];
        let mut error = None;
        // The first writes may still land in kernel buffers before the reset comes back.
        for _ in 0..200 {
            if let Err(e) = a.send(&piece).and_then(|()| a.wait_delivered()) {
                error = Some(e);
                break;
            }
        }
        assert!(matches!(error, Some(NetError::Closed)), "{error:?}");
    }

    #[test]
    fn drop_delivers_what_was_queued() {
        let link = SharedLink::new(shape(Some(80_000_000), 100));
        let (mut a, mut b) = shaped_memory_pair(&link);
        let data = pattern(300_000, 4);
        a.send(&data).unwrap();
        let start = Instant::now();
        drop(a);
        let dropping = start.elapsed();
        // 300 kB at 10 MB/s plus the latency had to pass before the close.
        assert!(
            dropping >= Duration::from_millis(100),
            "drop took {dropping:?}"
        );
        receive_all(&mut b, &data);
        assert!(matches!(b.recv(&mut [0u8; 1]), Err(NetError::Closed)));
    }

    #[test]
    fn tcp_round_trip_keeps_data_and_counts() {
        const SIZES: [usize; 6] = [0, 1, 4096, 65_535, 65_537, 1 << 20];
        let (a, b) = tcp_pair();
        let mut a =
            ShapedChannel::wrap_tcp(a, SharedLink::new(shape(Some(1_000_000_000), 2))).unwrap();
        let mut b =
            ShapedChannel::wrap_tcp(b, SharedLink::new(shape(Some(1_000_000_000), 2))).unwrap();
        let echo = thread::spawn(move || {
            let mut buf = Vec::new();
            for _ in SIZES {
                b.recv_frame_into(&mut buf, 2 << 20).unwrap();
                b.send_frame(&buf).unwrap();
                b.flush().unwrap();
            }
            b.counts()
        });
        for (i, &len) in SIZES.iter().enumerate() {
            let msg = pattern(len, i as u64 + 20);
            a.send_frame(&msg).unwrap();
            a.flush().unwrap();
            assert!(
                a.recv_frame(2 << 20).unwrap() == msg,
                "frame of {len} bytes changed"
            );
        }
        let b_counts = echo.join().unwrap();
        let expected: u64 = SIZES.iter().map(|&len| 4 + len as u64).sum();
        assert_eq!(
            a.counts(),
            ByteCounts {
                sent: expected,
                received: expected
            }
        );
        assert_eq!(b_counts, a.counts());
    }
}
