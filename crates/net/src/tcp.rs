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
    timeout: Option<Duration>,
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
        let accepted = loop {
            match self.listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
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
        let deadline = Instant::now() + timeout;
        let connect_error = |source| NetError::Connect {
            addr: addr.to_string(),
            source,
        };
        let targets: Vec<SocketAddr> = addr.to_socket_addrs().map_err(connect_error)?.collect();
        if targets.is_empty() {
            return Err(connect_error(std::io::Error::new(
                ErrorKind::NotFound,
                "the name resolved to no address",
            )));
        }
        loop {
            let mut last_error = None;
            for target in &targets {
                let left = deadline.saturating_duration_since(Instant::now());
                let attempt = left.max(Duration::from_millis(1));
                match TcpStream::connect_timeout(target, attempt) {
                    Ok(stream) => return TcpChannel::from_stream(stream),
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
            timeout: None,
        };
        channel.set_timeout(Some(DEFAULT_TCP_TIMEOUT))?;
        Ok(channel)
    }

    /// How long a read waits for the peer, and a write for the peer to make room; `None`
    /// waits forever. Default: 60 s.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), NetError> {
        // A zero duration means "no timeout" to the OS but is an error in std; treat it as
        // the smallest real timeout instead.
        let os_timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
        self.stream.set_read_timeout(os_timeout)?;
        self.stream.set_write_timeout(os_timeout)?;
        self.timeout = timeout;
        Ok(())
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
        writer.set_timeout(self.timeout)?;
        writer.write_buf = std::mem::take(&mut self.write_buf);
        Ok((self, writer))
    }

    /// A handle to the same socket, for another thread to `shutdown` the connection (a
    /// watchdog ending a stalled run: every blocked read or write then returns an error).
    pub fn try_clone_socket(&self) -> std::io::Result<std::net::TcpStream> {
        self.stream.try_clone()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr, NetError> {
        Ok(self.stream.peer_addr()?)
    }

    fn map_io(&self, e: std::io::Error) -> NetError {
        map_io_error(e, self.timeout)
    }

    /// Writes all of `bytes` to the socket.
    fn write_socket(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            match self.stream.write(rest) {
                Ok(0) => return Err(NetError::Closed),
                Ok(k) => {
                    rest = &rest[k..];
                    self.counts.sent += k as u64;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.map_io(e)),
            }
        }
        Ok(())
    }

    fn flush_write_buf(&mut self) -> Result<(), NetError> {
        if self.write_buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.write_buf);
        let result = self.write_socket(&buf);
        self.write_buf = buf;
        self.write_buf.clear();
        result
    }

    /// One `read` system call into `buf`; returns how many bytes arrived (never 0).
    fn read_socket(&mut self, buf: &mut [u8]) -> Result<usize, NetError> {
        loop {
            match self.stream.read(buf) {
                Ok(0) => return Err(NetError::Closed),
                Ok(k) => {
                    self.counts.received += k as u64;
                    return Ok(k);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(map_io_error(e, self.timeout)),
            }
        }
    }
}

/// Maps the I/O errors that mean "the peer is gone" or "the peer is too slow" to their
/// channel-level meaning; anything else stays an I/O error.
fn map_io_error(e: std::io::Error, timeout: Option<Duration>) -> NetError {
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
        self.flush_write_buf()?;
        if bytes.len() >= WRITE_BUFFER_BYTES {
            // Copying a large message into the buffer would gain nothing.
            self.write_socket(bytes)
        } else {
            self.write_buf.extend_from_slice(bytes);
            Ok(())
        }
    }

    fn recv(&mut self, mut buf: &mut [u8]) -> Result<(), NetError> {
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
            match self.flush_write_buf() {
                Ok(()) | Err(NetError::Closed) => {}
                Err(e) => return Err(e),
            }
            if buf.len() >= READ_BUFFER_BYTES {
                // Large reads go straight into the caller's buffer.
                let k = self.read_socket(buf)?;
                buf = &mut buf[k..];
            } else {
                let mut read_buf = std::mem::take(&mut self.read_buf);
                let result = self.read_socket(&mut read_buf);
                self.read_buf = read_buf;
                self.read_pos = 0;
                self.read_len = result?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NetError> {
        self.flush_write_buf()?;
        self.stream.flush().map_err(|e| self.map_io(e))
    }

    fn counts(&self) -> ByteCounts {
        self.counts
    }
}

impl Drop for TcpChannel {
    fn drop(&mut self) {
        // Data sent before dropping must still reach the peer; errors no longer matter.
        let _ = self.flush_write_buf();
    }
}

impl std::fmt::Debug for TcpChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpChannel")
            .field("peer", &self.stream.peer_addr().ok())
            .field("counts", &self.counts)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
