//! The overall progress watchdog of `pgc run`: `--timeout` bounds each wait for the peer,
//! and this ends a run in which nothing moves for that long in all (no byte sent or
//! received on any connection, no AND gate garbled or evaluated), which matters most for
//! parallel runs, where threads wait on each other as well as on the peer.
//!
//! A thread samples an activity counter (bumped by [`Watched`] channels as bytes move, in
//! pieces small enough that a slow but moving transfer counts) and the run's AND-gate
//! counter; when neither changes for the whole timeout it shuts every registered socket
//! down, so that every blocked call returns an error, and [`Watchdog::explain`] then turns
//! the run's error into "no progress for 60 s (…)".

use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pgc_net::connect::{ChannelSecurity, RefusalNotes, accept_peer_streams, connect_peer_streams};
use pgc_net::{ByteCounts, Channel, NetError, SharedLink, TcpListenerHandle};
use pgc_protocol::parallel::StreamOpener;

/// Bytes a [`Watched`] channel moves between two activity bumps.
const PIECE: usize = 256 << 10;

/// Shared between the watchdog thread and the run.
#[derive(Default)]
struct Shared {
    activity: AtomicU64,
    ands: Arc<AtomicU64>,
    fired: AtomicBool,
    sockets: Mutex<Vec<TcpStream>>,
}

pub struct Watchdog {
    shared: Arc<Shared>,
    timeout: Duration,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching; the run reports AND gates with [`set_ands`](Watchdog::set_ands) or
    /// through [`ands`](Watchdog::ands).
    pub fn start(timeout: Duration) -> Watchdog {
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = mpsc::channel::<()>();
        let watched = shared.clone();
        let tick = (timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let thread = std::thread::spawn(move || {
            // Both only grow: their sum changes whenever either moves.
            let sample = || {
                (watched.activity.load(Ordering::Relaxed))
                    .wrapping_add(watched.ands.load(Ordering::Relaxed))
            };
            let (mut last, mut since) = (sample(), Instant::now());
            loop {
                match stopped.recv_timeout(tick) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                let now = sample();
                if now != last {
                    (last, since) = (now, Instant::now());
                } else if since.elapsed() >= timeout {
                    watched.fired.store(true, Ordering::SeqCst);
                    for s in watched
                        .sockets
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .iter()
                    {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                    return;
                }
            }
        });
        Watchdog {
            shared,
            timeout,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// A socket to shut down when the run stalls.
    pub fn watch_socket(&self, socket: Option<TcpStream>) {
        if let Some(s) = socket {
            let mut sockets = self
                .shared
                .sockets
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if self.shared.fired.load(Ordering::SeqCst) {
                let _ = s.shutdown(Shutdown::Both);
            }
            sockets.push(s);
        }
    }

    /// `channel`, with every byte it moves counted as progress.
    pub fn watch<C: Channel>(&self, channel: C) -> Watched<C> {
        Watched {
            inner: channel,
            shared: self.shared.clone(),
        }
    }

    /// The AND gates done so far (for the sequential protocol's progress callback).
    pub fn set_ands(&self, n: u64) {
        self.shared.ands.store(n, Ordering::Relaxed);
    }

    /// The AND-gate counter the watchdog samples (the parallel protocol's progress counter).
    pub fn ands(&self) -> &AtomicU64 {
        &self.shared.ands
    }

    /// Whether the watchdog ended the run.
    pub fn fired(&self) -> bool {
        self.shared.fired.load(Ordering::SeqCst)
    }

    /// The run's result, with its error replaced by the watchdog's if the watchdog ended it
    /// (the error the run saw is then only the consequence: a socket shut down).
    pub fn explain<T>(&self, result: anyhow::Result<T>) -> anyhow::Result<T> {
        match result {
            Err(_) if self.fired() => Err(anyhow::anyhow!(
                "no progress for {} s (the peer stopped sending or is too slow); --timeout \
                 sets this",
                self.timeout.as_secs_f64()
            )),
            other => other,
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A channel whose traffic counts as progress for a [`Watchdog`]. Large sends and receives
/// go through in pieces so that a long transfer on a slow link still shows progress.
pub struct Watched<C> {
    inner: C,
    shared: Arc<Shared>,
}

impl<C: Channel> Channel for Watched<C> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        for piece in bytes.chunks(PIECE) {
            self.inner.send(piece)?;
            self.shared.activity.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        for piece in buf.chunks_mut(PIECE) {
            self.inner.recv(piece)?;
            self.shared.activity.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()?;
        self.shared.activity.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn counts(&self) -> ByteCounts {
        self.inner.counts()
    }
}

/// Which side of the main connection this party is, for [`WatchedStreams`]: the listener
/// (with where to report refused connections) or the peer's address.
pub enum Side<'l> {
    Accept(&'l TcpListenerHandle, &'l RefusalNotes),
    Connect(String),
}

/// Opens the parallel protocol's worker streams under the run's channel security (as
/// [`pgc_protocol::parallel`]'s `TcpAcceptStreams`/`TcpConnectStreams` do), with each one
/// watched by the watchdog.
pub struct WatchedStreams<'a> {
    pub side: Side<'a>,
    pub security: &'a ChannelSecurity,
    pub timeout: Duration,
    pub link: Option<SharedLink>,
    pub dog: &'a Watchdog,
}

impl StreamOpener for WatchedStreams<'_> {
    fn open(&mut self, n: usize, token: [u8; 16]) -> Result<Vec<Box<dyn Channel>>, NetError> {
        let streams = match &self.side {
            Side::Accept(listener, notes) => {
                accept_peer_streams(listener, self.security, n, token, self.timeout, notes)?
            }
            Side::Connect(addr) => {
                connect_peer_streams(addr, self.security, n, token, self.timeout)?
            }
        };
        streams
            .into_iter()
            .map(|mut s| -> Result<Box<dyn Channel>, NetError> {
                s.set_timeout(Some(self.timeout))?;
                self.dog.watch_socket(s.try_clone_socket().ok());
                Ok(Box::new(self.dog.watch(s.shaped(&self.link)?)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_net::TcpChannel;

    #[test]
    fn a_silent_peer_is_cut_off_and_a_moving_one_is_not() {
        let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().to_string();
        let peer = std::thread::spawn(move || {
            let mut c = TcpChannel::connect(&addr, Duration::from_secs(5)).unwrap();
            // Moves a byte every 100 ms for 0.8 s (longer than the timeout), then idles with
            // the connection open.
            for _ in 0..8 {
                c.send(&[1]).unwrap();
                c.flush().unwrap();
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(Duration::from_secs(3));
            drop(c);
        });
        let mut ch = listener.accept(Duration::from_secs(5)).unwrap();
        // The socket's own timeout is far longer: only the watchdog can end this.
        ch.set_timeout(Some(Duration::from_secs(30))).unwrap();
        let dog = Watchdog::start(Duration::from_millis(400));
        dog.watch_socket(ch.try_clone_socket().ok());
        let mut ch = dog.watch(ch);
        let start = Instant::now();
        let mut got = 0;
        let result = loop {
            let mut b = [0u8; 1];
            match ch.recv(&mut b) {
                Ok(()) => got += 1,
                Err(e) => break Err::<(), _>(anyhow::Error::from(e)),
            }
        };
        assert_eq!(got, 8, "the moving part was not cut off");
        let e = dog.explain(result).unwrap_err().to_string();
        assert_eq!(
            e,
            "no progress for 0.4 s (the peer stopped sending or is too slow); --timeout sets this"
        );
        assert!(start.elapsed() < Duration::from_secs(3), "cut off early");
        peer.join().unwrap();
    }
}
