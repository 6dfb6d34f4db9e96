//! The real channel: one TCP connection with Nagle's algorithm off, large kernel buffers
//! and user-space buffers in both directions (protocols send many small messages; each
//! system call costs more than copying a few kilobytes).

use crate::{ByteCounts, Channel, NetError};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Size of the user-space write buffer; sends at least this large skip it.
pub const WRITE_BUFFER_BYTES: usize = 1 << 20;
/// Size of the user-space read buffer; reads at least this large skip it.
pub const READ_BUFFER_BYTES: usize = 256 << 10;
/// Kernel socket buffer size we ask for (the kernel may cap it).
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;
/// How long a read (or a write to a peer that does not read) waits unless told otherwise.
pub const DEFAULT_TCP_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause between connection attempts while the listening party is not up yet.
const CONNECT_RETRY: Duration = Duration::from_millis(50);
/// Pause between lookups of a host name that does not resolve yet (each one may ask a DNS
/// server, so not as often as a refused connection is retried).
const RESOLVE_RETRY: Duration = Duration::from_millis(250);
/// Pause between checks for an incoming connection.
const ACCEPT_POLL: Duration = Duration::from_millis(5);

/// A [`Channel`] over one TCP connection.
///
/// Sends are buffered until `flush`, a full buffer, or a `recv` that has to wait for the
/// peer (which flushes first, so a forgotten flush costs latency, not a deadlock).
///
/// Byte counters count payload bytes handed to the socket (`sent`) and read from it
/// (`received`); bytes still in the write buffer are not counted until they are written.
pub struct TcpChannel {
    stream: TcpStream,
    write_buf: Vec<u8>,
    read_buf: Box<[u8]>,
    /// Unconsumed bytes are `read_buf[read_pos..read_len]`.
    read_pos: usize,
    read_len: usize,
    counts: ByteCounts,
    timer: SocketTimer,
}

/// A bound listening socket, from [`TcpChannel::listen`].
#[derive(Debug)]
pub struct TcpListenerHandle {
    listener: TcpListener,
    addr: SocketAddr,
}

impl TcpListenerHandle {
    /// The address actually bound (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits up to `timeout` for the peer to connect.
    pub fn accept(&self, timeout: Duration) -> Result<TcpChannel, NetError> {
        let deadline = Instant::now() + timeout;
        self.listener
            .set_nonblocking(true)
            .map_err(|source| self.io_error(source))?;
        let generation = crate::interrupt::generation();
        let accepted = loop {
            match self.listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    if crate::interrupt::interrupted_since(generation) {
                        return Err(NetError::Interrupted);
                    }
                    if Instant::now() >= deadline {
                        return Err(NetError::AcceptTimeout {
                            addr: self.addr.to_string(),
                            waited: timeout,
                        });
                    }
                    std::thread::sleep(ACCEPT_POLL);
                }
                // A connection that died between SYN and accept: wait for another one.
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => continue,
                Err(source) => return Err(self.io_error(source)),
            }
        };
        // Some platforms let the accepted socket inherit non-blocking mode.
        accepted
            .set_nonblocking(false)
            .map_err(|source| self.io_error(source))?;
        TcpChannel::from_stream(accepted)
    }

    /// Takes one waiting connection without blocking, or `None` if there is none.
    pub(crate) fn try_accept(&self) -> Result<Option<(TcpStream, SocketAddr)>, NetError> {
        self.listener
            .set_nonblocking(true)
            .map_err(|source| self.io_error(source))?;
        match self.listener.accept() {
            Ok((stream, from)) => {
                // Some platforms let the accepted socket inherit non-blocking mode.
                stream.set_nonblocking(false)?;
                Ok(Some((stream, from)))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                ) =>
            {
                Ok(None)
            }
            Err(source) => Err(self.io_error(source)),
        }
    }

    fn io_error(&self, source: std::io::Error) -> NetError {
        NetError::Accept {
            addr: self.addr.to_string(),
            source,
        }
    }
}

impl TcpChannel {
    /// Connects to `addr` ("host:port"), retrying every ~50 ms while nobody listens there
    /// yet, until `timeout` has passed. Either party may therefore start first.
    pub fn connect(addr: &str, timeout: Duration) -> Result<TcpChannel, NetError> {
        TcpChannel::from_stream(connect_stream(addr, timeout)?)
    }
}

/// Connects to `addr`, retrying while nobody listens there yet, until `timeout` has passed
/// (see [`TcpChannel::connect`]).
pub(crate) fn connect_stream(addr: &str, timeout: Duration) -> Result<TcpStream, NetError> {
    connect_stream_noting(addr, timeout, &|_| {})
}

/// [`connect_stream`], telling `note` once when the host name does not resolve yet and is
/// being looked up again.
pub(crate) fn connect_stream_noting(
    addr: &str,
    timeout: Duration,
    note: &dyn Fn(&str),
) -> Result<TcpStream, NetError> {
    let deadline = Instant::now() + timeout;
    let connect_error = |source| NetError::Connect {
        addr: addr.to_string(),
        source,
    };
    let generation = crate::interrupt::generation();
    let targets = resolve_by(addr, deadline, timeout, generation, note)?;
    loop {
        if crate::interrupt::interrupted_since(generation) {
            return Err(NetError::Interrupted);
        }
        let mut last_error = None;
        for target in &targets {
            let left = deadline.saturating_duration_since(Instant::now());
            let attempt = left.max(Duration::from_millis(1));
            match TcpStream::connect_timeout(target, attempt) {
                Ok(stream) => return Ok(stream),
                Err(e) => last_error = Some(e),
            }
        }
        let e = last_error.expect("at least one address was tried");
        // Refused (nobody listening yet) and timed-out attempts are worth repeating;
        // anything else (bad address, no route) will not get better.
        let retry = matches!(
            e.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::TimedOut
                | ErrorKind::WouldBlock
                | ErrorKind::Interrupted
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
        );
        if !retry {
            return Err(connect_error(e));
        }
        if Instant::now() + CONNECT_RETRY > deadline {
            return Err(NetError::ConnectTimeout {
                addr: addr.to_string(),
                waited: timeout,
                last_error: e,
            });
        }
        std::thread::sleep(CONNECT_RETRY);
    }
}

/// The addresses `addr` ("host:port") resolves to, looking the host name up again while it
/// does not resolve, until `deadline`: the peer's host (another container, a machine just
/// booting) may not be in DNS yet, as it may not be listening yet. An address that cannot be
/// one (no port, a bad port) fails at once.
fn resolve_by(
    addr: &str,
    deadline: Instant,
    timeout: Duration,
    generation: u64,
    note: &dyn Fn(&str),
) -> Result<Vec<SocketAddr>, NetError> {
    // An IP address and port needs no lookup (nor a thread).
    if let Ok(target) = addr.parse::<SocketAddr>() {
        return Ok(vec![target]);
    }
    let host = addr
        .rsplit_once(':')
        .map_or(addr, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let mut noted = false;
    loop {
        if crate::interrupt::interrupted_since(generation) {
            return Err(NetError::Interrupted);
        }
        let last_error = match lookup_by(addr, deadline, generation) {
            Ok(targets) if !targets.is_empty() => return Ok(targets),
            Ok(_) => "the name resolved to no address".to_string(),
            Err(e) if e.kind() == ErrorKind::Interrupted => return Err(NetError::Interrupted),
            // Not an address at all: looking again will not help.
            Err(e) if e.kind() == ErrorKind::InvalidInput => {
                return Err(NetError::Connect {
                    addr: addr.to_string(),
                    source: e,
                });
            }
            Err(e) => e.to_string(),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left < RESOLVE_RETRY {
            return Err(NetError::Unresolved {
                host: host.to_string(),
                addr: addr.to_string(),
                waited: timeout,
                last_error,
            });
        }
        if !noted {
            noted = true;
            note(&format!(
                "the host name {host} does not resolve yet ({last_error}); looking it up \
                 again until the timeout ({} s left)",
                left.as_secs()
            ));
        }
        std::thread::sleep(RESOLVE_RETRY);
    }
}

/// `addr.to_socket_addrs()`, given up at `deadline` or on an interrupt (Ctrl-C): the
/// system's resolver may wait for a DNS server far longer than the time left. The lookup
/// runs on a thread of its own, which a lookup given up on is left to finish.
fn lookup_by(addr: &str, deadline: Instant, generation: u64) -> std::io::Result<Vec<SocketAddr>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = addr.to_string();
    std::thread::Builder::new()
        .name("pgc-resolve".into())
        .spawn(move || {
            let _ = tx.send(owned.to_socket_addrs().map(Iterator::collect));
        })?;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = left.clamp(Duration::from_millis(1), Duration::from_millis(100));
        match rx.recv_timeout(wait) {
            Ok(answer) => return answer,
            Err(_) if crate::interrupt::interrupted_since(generation) => {
                return Err(ErrorKind::Interrupted.into());
            }
            Err(_) if Instant::now() < deadline => {}
            Err(_) => {
                return Err(std::io::Error::new(
                    ErrorKind::TimedOut,
                    "the lookup did not answer in time",
                ));
            }
        }
    }
}

impl TcpChannel {
    /// Binds a listening socket at `addr` ("host:port"; port 0 picks a free port).
    pub fn listen(addr: &str) -> Result<TcpListenerHandle, NetError> {
        let listener = TcpListener::bind(addr).map_err(|source| NetError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let local = listener.local_addr().map_err(|source| NetError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        Ok(TcpListenerHandle {
            listener,
            addr: local,
        })
    }

    /// Wraps a connected stream: turns Nagle off, asks for large kernel buffers and sets
    /// the default timeout.
    pub fn from_stream(stream: TcpStream) -> Result<TcpChannel, NetError> {
        stream.set_nodelay(true)?;
        let socket = socket2::SockRef::from(&stream);
        // Best effort: the kernel caps these at its configured maximum (or refuses), and
        // the channel works either way, only slower on high-latency links.
        let _ = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES);
        let _ = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
        let mut channel = TcpChannel {
            stream,
            write_buf: Vec::with_capacity(WRITE_BUFFER_BYTES),
            read_buf: vec![0u8; READ_BUFFER_BYTES].into_boxed_slice(),
            read_pos: 0,
            read_len: 0,
            counts: ByteCounts::default(),
            timer: SocketTimer::default(),
        };
        channel.set_timeout(Some(DEFAULT_TCP_TIMEOUT))?;
        Ok(channel)
    }

    /// How long a read waits for the peer, and a write for the peer to make room; `None`
    /// waits forever. Default: 60 s.
    ///
    /// The timeout is a deadline for each whole call: a `recv` (or `recv_frame`, length and
    /// payload together) or `send`/`flush` fails once this much time has passed since it
    /// began, however the peer spreads its bytes over that time.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), NetError> {
        self.timer.set(&self.stream, timeout)
    }

    /// A second handle on the socket, e.g. for a watchdog that shuts the connection down
    /// (`shutdown(Both)` makes every blocked call of this channel return).
    pub fn try_clone_socket(&self) -> Result<TcpStream, NetError> {
        Ok(self.stream.try_clone()?)
    }

    /// Splits the connection into a reading half and a writing half, `(reader, writer)`,
    /// so one thread can block in `recv` while another writes (the link shaper needs this).
    ///
    /// Both halves share one socket, which closes when both are dropped. Use the reader
    /// only to receive and the writer only to send. Bytes already read ahead stay with the
    /// reader, unflushed sends move to the writer; the reader keeps the counters so far and
    /// the writer starts from zero. Both keep this channel's timeout.
    pub fn split(mut self) -> Result<(TcpChannel, TcpChannel), NetError> {
        let write_stream = self.stream.try_clone()?;
        let mut writer = TcpChannel::from_stream(write_stream)?;
        // `from_stream` reset the (shared) socket's timeouts to the default.
        writer.set_timeout(self.timer.timeout)?;
        self.timer.set(&self.stream, self.timer.timeout)?;
        writer.write_buf = std::mem::take(&mut self.write_buf);
        Ok((self, writer))
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr, NetError> {
        Ok(self.stream.peer_addr()?)
    }

    /// Writes all of `bytes` to the socket by `deadline`.
    fn write_socket(&mut self, bytes: &[u8], deadline: Option<Instant>) -> Result<(), NetError> {
        let counts = &mut self.counts;
        write_all_by(&mut self.stream, &mut self.timer, bytes, deadline, |k| {
            counts.sent += k as u64
        })
    }

    fn flush_write_buf(&mut self, deadline: Option<Instant>) -> Result<(), NetError> {
        if self.write_buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.write_buf);
        let result = self.write_socket(&buf, deadline);
        self.write_buf = buf;
        self.write_buf.clear();
        result
    }

    /// One `read` system call into `buf` (waiting at most until `deadline`); returns how
    /// many bytes arrived (never 0).
    fn read_socket(
        &mut self,
        buf: &mut [u8],
        deadline: Option<Instant>,
    ) -> Result<usize, NetError> {
        let k = read_by(&mut self.stream, &mut self.timer, buf, deadline)?;
        self.counts.received += k as u64;
        Ok(k)
    }

    /// `recv` with a deadline shared by the caller (see [`Channel::recv_frame_into`]).
    fn recv_by(&mut self, mut buf: &mut [u8], deadline: Option<Instant>) -> Result<(), NetError> {
        while !buf.is_empty() {
            let buffered = self.read_len - self.read_pos;
            if buffered > 0 {
                let take = buffered.min(buf.len());
                buf[..take].copy_from_slice(&self.read_buf[self.read_pos..self.read_pos + take]);
                self.read_pos += take;
                buf = &mut buf[take..];
                continue;
            }
            // About to block: push out what we hold so the peer is not left waiting for it.
            // If the peer is gone that fails, but what it sent before leaving may still be
            // readable, so go on reading (the read reports `Closed` once it is drained).
            match self.flush_write_buf(deadline) {
                Ok(()) | Err(NetError::Closed) => {}
                Err(e) => return Err(e),
            }
            if buf.len() >= READ_BUFFER_BYTES {
                // Large reads go straight into the caller's buffer.
                let k = self.read_socket(buf, deadline)?;
                buf = &mut buf[k..];
            } else {
                let mut read_buf = std::mem::take(&mut self.read_buf);
                let result = self.read_socket(&mut read_buf, deadline);
                self.read_buf = read_buf;
                self.read_pos = 0;
                self.read_len = result?;
            }
        }
        Ok(())
    }
}

/// How far the socket's own timeouts may exceed a call's deadline before they are set
/// again: setting them costs a system call, and the first read or write of a call finds
/// them at the full timeout already.
const REARM_SLACK: Duration = Duration::from_millis(10);

/// A socket's per-call timeout, and what its read and write timeouts are set to now, so
/// that each read or write of a call waits only for the time the call has left.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SocketTimer {
    pub(crate) timeout: Option<Duration>,
    read_armed: Option<Duration>,
    write_armed: Option<Duration>,
    /// The [`interrupt`](crate::interrupt) generation the connection was made in.
    generation: u64,
}

impl Default for SocketTimer {
    fn default() -> Self {
        SocketTimer {
            timeout: None,
            read_armed: None,
            write_armed: None,
            generation: crate::interrupt::generation(),
        }
    }
}

impl SocketTimer {
    /// Sets the per-call timeout and both socket timeouts to it.
    pub(crate) fn set(
        &mut self,
        stream: &TcpStream,
        timeout: Option<Duration>,
    ) -> Result<(), NetError> {
        // A zero duration means "no timeout" to the OS but is an error in std; treat it as
        // the smallest real timeout instead.
        let os_timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
        stream.set_read_timeout(os_timeout)?;
        stream.set_write_timeout(os_timeout)?;
        self.timeout = timeout;
        self.read_armed = os_timeout;
        self.write_armed = os_timeout;
        Ok(())
    }

    /// The deadline of a call starting now.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.timeout.map(|t| Instant::now() + t)
    }

    pub(crate) fn timed_out(&self) -> NetError {
        NetError::Timeout(self.timeout.unwrap_or(Duration::ZERO))
    }

    /// Sets the socket's read (or write) timeout to what is left until `deadline`, unless
    /// it is close enough already; fails once the deadline has passed.
    fn arm(
        &mut self,
        stream: &TcpStream,
        deadline: Option<Instant>,
        write: bool,
    ) -> Result<(), NetError> {
        if crate::interrupt::interrupted_since(self.generation) {
            return Err(NetError::Interrupted);
        }
        let Some(deadline) = deadline else {
            return Ok(());
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timed_out());
        }
        // A blocked call wakes at least this often to look for an interrupt.
        let left = left.min(crate::interrupt::CHECK_EVERY);
        let armed = if write {
            &mut self.write_armed
        } else {
            &mut self.read_armed
        };
        if matches!(*armed, Some(a) if a >= left && a - left <= REARM_SLACK) {
            return Ok(());
        }
        let wait = left.max(Duration::from_millis(1));
        if write {
            stream.set_write_timeout(Some(wait))?;
        } else {
            stream.set_read_timeout(Some(wait))?;
        }
        *armed = Some(wait);
        Ok(())
    }
}

/// One `read` of `stream` into `buf`, by `deadline`; returns how many bytes arrived
/// (never 0: the end of the stream is [`NetError::Closed`]).
pub(crate) fn read_by(
    stream: &mut TcpStream,
    timer: &mut SocketTimer,
    buf: &mut [u8],
    deadline: Option<Instant>,
) -> Result<usize, NetError> {
    loop {
        timer.arm(stream, deadline, false)?;
        match stream.read(buf) {
            Ok(0) => return Err(NetError::Closed),
            Ok(k) => return Ok(k),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // The socket's timeout ran out: `arm` fails if the deadline has passed too,
            // else waits for the time left (the slack allowed the socket a little more).
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if deadline.is_none_or(|d| Instant::now() >= d) {
                    return Err(timer.timed_out());
                }
            }
            Err(e) => return Err(map_io_error(e, timer.timeout)),
        }
    }
}

/// Writes all of `bytes` to `stream` by `deadline`, reporting each piece written.
pub(crate) fn write_all_by(
    stream: &mut TcpStream,
    timer: &mut SocketTimer,
    bytes: &[u8],
    deadline: Option<Instant>,
    mut wrote: impl FnMut(usize),
) -> Result<(), NetError> {
    let mut rest = bytes;
    while !rest.is_empty() {
        timer.arm(stream, deadline, true)?;
        match stream.write(rest) {
            Ok(0) => return Err(NetError::Closed),
            Ok(k) => {
                rest = &rest[k..];
                wrote(k);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if deadline.is_none_or(|d| Instant::now() >= d) {
                    return Err(timer.timed_out());
                }
            }
            Err(e) => return Err(map_io_error(e, timer.timeout)),
        }
    }
    Ok(())
}

/// Maps the I/O errors that mean "the peer is gone" or "the peer is too slow" to their
/// channel-level meaning; anything else stays an I/O error.
pub(crate) fn map_io_error(e: std::io::Error, timeout: Option<Duration>) -> NetError {
    match e.kind() {
        ErrorKind::UnexpectedEof
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted
        | ErrorKind::BrokenPipe
        | ErrorKind::NotConnected => NetError::Closed,
        ErrorKind::WouldBlock | ErrorKind::TimedOut => {
            NetError::Timeout(timeout.unwrap_or(Duration::ZERO))
        }
        _ => NetError::Io(e),
    }
}

impl Channel for TcpChannel {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        if self.write_buf.len() + bytes.len() <= WRITE_BUFFER_BYTES {
            self.write_buf.extend_from_slice(bytes);
            return Ok(());
        }
        let deadline = self.timer.deadline();
        self.flush_write_buf(deadline)?;
        if bytes.len() >= WRITE_BUFFER_BYTES {
            // Copying a large message into the buffer would gain nothing.
            self.write_socket(bytes, deadline)
        } else {
            self.write_buf.extend_from_slice(bytes);
            Ok(())
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        // Served from the read buffer without a clock read where possible.
        let buffered = self.read_len - self.read_pos;
        if buf.len() <= buffered {
            buf.copy_from_slice(&self.read_buf[self.read_pos..self.read_pos + buf.len()]);
            self.read_pos += buf.len();
            return Ok(());
        }
        let deadline = self.timer.deadline();
        self.recv_by(buf, deadline)
    }

    /// One deadline for the length and the payload together: the timeout is per message.
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        let deadline = self.timer.deadline();
        let mut len = [0u8; 4];
        self.recv_by(&mut len, deadline)?;
        let len = crate::check_frame_len(len, max_len)?;
        crate::resize_for_frame(buf, len);
        self.recv_by(buf, deadline)
    }

    fn flush(&mut self) -> Result<(), NetError> {
        let deadline = self.timer.deadline();
        self.flush_write_buf(deadline)?;
        self.stream
            .flush()
            .map_err(|e| map_io_error(e, self.timer.timeout))
    }

    fn counts(&self) -> ByteCounts {
        self.counts
    }
}

impl Drop for TcpChannel {
    fn drop(&mut self) {
        // Data sent before dropping must still reach the peer; errors no longer matter.
        let deadline = self.timer.deadline();
        let _ = self.flush_write_buf(deadline);
    }
}

impl std::fmt::Debug for TcpChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpChannel")
            .field("peer", &self.stream.peer_addr().ok())
            .field("counts", &self.counts)
            .field("timeout", &self.timer.timeout)
            .finish_non_exhaustive()
    }
}
