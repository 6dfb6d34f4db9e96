//! Behaviour of both channel implementations: framing, exact reads, counters, timeouts and
//! what a vanished or misbehaving peer looks like.

use pgc_net::{Channel, MemoryChannel, NetError, TcpChannel};
use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

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

const FRAME_SIZES: [usize; 7] = [0, 1, 3, 4096, 65_535, 65_537, 3 << 20];

/// Sends frames of every size one way and echoes them back the other way.
fn framing_round_trip<C: Channel + 'static>(mut a: C, mut b: C) {
    let echo = thread::spawn(move || {
        let mut buf = Vec::new();
        for _ in FRAME_SIZES {
            b.recv_frame_into(&mut buf, 4 << 20).unwrap();
            b.send_frame(&buf).unwrap();
            b.flush().unwrap();
        }
        b
    });
    for (i, &len) in FRAME_SIZES.iter().enumerate() {
        let msg = pattern(len, i as u64 + 1);
        a.send_frame(&msg).unwrap();
        a.flush().unwrap();
        let back = a.recv_frame(4 << 20).unwrap();
        assert_eq!(back.len(), len);
        assert!(back == msg, "frame of {len} bytes came back changed");
    }
    let b = echo.join().unwrap();
    let expected: u64 = FRAME_SIZES.iter().map(|&l| 4 + l as u64).sum();
    assert_eq!(a.counts().sent, expected);
    assert_eq!(a.counts().received, expected);
    assert_eq!(a.counts().sent, b.counts().received);
    assert_eq!(a.counts().received, b.counts().sent);
}

/// Streams odd-sized writes and reads them back with differently odd-sized exact reads.
fn exact_reads_across_boundaries<C: Channel + 'static>(mut a: C, mut b: C) {
    let data = pattern(1_000_003, 99);
    let expected = data.clone();
    let writer = thread::spawn(move || {
        let mut rest = &data[..];
        let mut step = 1usize;
        while !rest.is_empty() {
            let take = step.min(rest.len());
            a.send(&rest[..take]).unwrap();
            rest = &rest[take..];
            step = (step * 7 + 13) % 150_001;
        }
        a.flush().unwrap();
        a
    });
    let mut got = Vec::with_capacity(expected.len());
    let mut step = 5usize;
    while got.len() < expected.len() {
        let take = step.min(expected.len() - got.len());
        let mut buf = vec![0u8; take];
        b.recv(&mut buf).unwrap();
        got.extend_from_slice(&buf);
        step = (step * 11 + 3) % 90_001;
    }
    let a = writer.join().unwrap();
    assert!(got == expected, "the byte stream arrived changed");
    assert_eq!(a.counts().sent, expected.len() as u64);
    assert_eq!(b.counts().received, expected.len() as u64);
}

/// A frame header announcing more than the limit is refused before any allocation.
fn oversized_frame_refused<C: Channel>(mut a: C, mut b: C) {
    a.send(&(1u32 << 30).to_le_bytes()).unwrap();
    a.flush().unwrap();
    let mut buf = Vec::new();
    match b.recv_frame_into(&mut buf, 1 << 20) {
        Err(NetError::FrameTooLarge { len, max }) => {
            assert_eq!(len, 1 << 30);
            assert_eq!(max, 1 << 20);
        }
        other => panic!("expected FrameTooLarge, got {other:?}"),
    }
    assert_eq!(buf.capacity(), 0, "allocated for a refused frame");
}

/// After the peer is dropped, what it sent is still readable, then `Closed` arrives at once.
fn peer_drop_gives_closed<C: Channel + 'static>(mut a: C, mut b: C) {
    a.send_frame(b"last words").unwrap();
    // No flush: dropping must deliver buffered data.
    drop(a);
    assert_eq!(b.recv_frame(100).unwrap(), b"last words");
    let start = Instant::now();
    let mut byte = [0u8; 1];
    assert!(matches!(b.recv(&mut byte), Err(NetError::Closed)));
    assert!(start.elapsed() < Duration::from_secs(5));
}

fn tcp_pair() -> (TcpChannel, TcpChannel) {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let client =
        thread::spawn(move || TcpChannel::connect(&addr, Duration::from_secs(10)).unwrap());
    let server = listener.accept(Duration::from_secs(10)).unwrap();
    (client.join().unwrap(), server)
}

#[test]
fn memory_framing_round_trip() {
    let (a, b) = MemoryChannel::pair();
    framing_round_trip(a, b);
}

#[test]
fn tcp_framing_round_trip() {
    let (a, b) = tcp_pair();
    framing_round_trip(a, b);
}

#[test]
fn memory_exact_reads_across_chunks() {
    let (a, b) = MemoryChannel::pair();
    exact_reads_across_boundaries(a, b);
}

#[test]
fn tcp_exact_reads_across_chunks() {
    let (a, b) = tcp_pair();
    exact_reads_across_boundaries(a, b);
}

#[test]
fn memory_oversized_frame_refused() {
    let (a, b) = MemoryChannel::pair();
    oversized_frame_refused(a, b);
}

#[test]
fn tcp_oversized_frame_refused() {
    let (a, b) = tcp_pair();
    oversized_frame_refused(a, b);
}

#[test]
fn memory_peer_drop_gives_closed() {
    let (a, b) = MemoryChannel::pair();
    peer_drop_gives_closed(a, b);
}

#[test]
fn tcp_peer_drop_gives_closed() {
    let (a, b) = tcp_pair();
    peer_drop_gives_closed(a, b);
}

#[test]
fn memory_data_of_dropped_peer_readable_while_holding_unsent_data() {
    let (mut a, mut b) = MemoryChannel::pair();
    a.send_frame(b"sent before leaving").unwrap();
    drop(a);
    // b holds unsent bytes, so its read first tries to flush them to the vanished peer.
    b.send(b"never delivered").unwrap();
    assert_eq!(b.recv_frame(100).unwrap(), b"sent before leaving");
    assert!(matches!(b.recv(&mut [0u8; 1]), Err(NetError::Closed)));
}

#[test]
fn memory_send_to_dropped_peer_fails() {
    let (mut a, b) = MemoryChannel::pair();
    drop(b);
    a.send(&[1, 2, 3]).unwrap(); // buffered
    assert!(matches!(a.flush(), Err(NetError::Closed)));
}

#[test]
fn memory_recv_times_out() {
    let (mut a, _b) = MemoryChannel::pair();
    a.set_timeout(Some(Duration::from_millis(50)));
    let mut buf = [0u8; 4];
    let start = Instant::now();
    match a.recv(&mut buf) {
        Err(NetError::Timeout(t)) => assert_eq!(t, Duration::from_millis(50)),
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert!(start.elapsed() >= Duration::from_millis(50));
}

#[test]
fn memory_backpressure_bounds_the_queue() {
    // A writer far ahead of its reader blocks rather than queueing everything.
    let (mut a, mut b) = MemoryChannel::pair();
    let total = 16 << 20;
    let writer = thread::spawn(move || {
        let data = vec![7u8; total];
        a.send(&data).unwrap();
        a.flush().unwrap();
        a
    });
    thread::sleep(Duration::from_millis(50));
    // Only the bounded queue (plus one chunk in the writer's hands) can be in flight.
    assert!(!writer.is_finished(), "the writer was never blocked");
    let mut buf = vec![0u8; total];
    b.recv(&mut buf).unwrap();
    assert!(buf.iter().all(|&x| x == 7));
    writer.join().unwrap();
}

#[test]
fn memory_send_to_a_peer_that_never_reads_times_out() {
    // Both ends writing and neither reading would deadlock; the full queue times out instead.
    let (mut a, _b) = MemoryChannel::pair();
    a.set_timeout(Some(Duration::from_millis(50)));
    let start = Instant::now();
    let result = a.send(&vec![0u8; 16 << 20]);
    assert!(matches!(result, Err(NetError::Timeout(_))), "{result:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn tcp_recv_times_out() {
    let (mut a, _b) = tcp_pair();
    a.set_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = [0u8; 4];
    let start = Instant::now();
    assert!(matches!(a.recv(&mut buf), Err(NetError::Timeout(_))));
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn tcp_connect_retries_until_listener_appears() {
    // Find a free port, release it, and start listening there only after the client began.
    let port = TcpChannel::listen("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let client_addr = addr.clone();
    let client = thread::spawn(move || {
        let mut ch = TcpChannel::connect(&client_addr, Duration::from_secs(10)).unwrap();
        ch.send_frame(b"hello").unwrap();
        ch.flush().unwrap();
        ch
    });
    thread::sleep(Duration::from_millis(200));
    let listener = TcpChannel::listen(&addr).unwrap();
    let mut server = listener.accept(Duration::from_secs(10)).unwrap();
    assert_eq!(server.recv_frame(16).unwrap(), b"hello");
    client.join().unwrap();
}

#[test]
fn tcp_connect_gives_up_naming_the_address() {
    let port = TcpChannel::listen("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let start = Instant::now();
    let err = TcpChannel::connect(&addr, Duration::from_millis(200)).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(matches!(err, NetError::ConnectTimeout { .. }), "{err:?}");
    assert!(err.to_string().contains(&addr), "{err}");
}

/// A host name that does not resolve (yet) is looked up again until the timeout, then named:
/// `.invalid` never resolves (RFC 6761). An address with no port is not retried.
#[test]
fn tcp_connect_retries_a_name_that_does_not_resolve_then_names_it() {
    let err =
        TcpChannel::connect("nonexistent.invalid:7000", Duration::from_millis(600)).unwrap_err();
    match &err {
        NetError::Unresolved { host, addr, .. } => {
            assert_eq!(host, "nonexistent.invalid");
            assert_eq!(addr, "nonexistent.invalid:7000");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().starts_with(
            "the host name nonexistent.invalid (of nonexistent.invalid:7000) did not resolve \
             to an address within 600 ms"
        ),
        "{err}"
    );
    let err = TcpChannel::connect("nonexistent.invalid", Duration::from_secs(30)).unwrap_err();
    assert!(matches!(err, NetError::Connect { .. }), "{err:?}");
}

#[test]
fn tcp_connect_bad_address_names_it() {
    let err = TcpChannel::connect("not an address", Duration::from_millis(100)).unwrap_err();
    assert!(matches!(err, NetError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("not an address"), "{err}");
}

#[test]
fn tcp_accept_times_out_naming_the_address() {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let start = Instant::now();
    let err = listener.accept(Duration::from_millis(100)).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert!(matches!(err, NetError::AcceptTimeout { .. }), "{err:?}");
    assert!(err.to_string().contains(&addr), "{err}");
}

#[test]
fn tcp_listen_on_taken_port_names_it() {
    let first = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = first.local_addr().to_string();
    let err = TcpChannel::listen(&addr).unwrap_err();
    assert!(matches!(err, NetError::Bind { .. }), "{err:?}");
    assert!(err.to_string().contains(&addr), "{err}");
}

/// A raw socket peer (not a `TcpChannel`) that writes `bytes` and hangs up.
fn raw_peer_writes(bytes: Vec<u8>) -> TcpChannel {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let peer = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&bytes).unwrap();
    });
    let ch = listener.accept(Duration::from_secs(10)).unwrap();
    peer.join().unwrap();
    ch
}

#[test]
fn tcp_garbage_header_is_refused() {
    let mut ch = raw_peer_writes(vec![0xff; 64]);
    let err = ch.recv_frame(1 << 20).unwrap_err();
    assert!(
        matches!(err, NetError::FrameTooLarge { len, .. } if len == u32::MAX as u64),
        "{err:?}"
    );
}

#[test]
fn tcp_short_frame_gives_closed() {
    let mut bytes = 100u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&[1u8; 10]);
    let mut ch = raw_peer_writes(bytes);
    let err = ch.recv_frame(1 << 20).unwrap_err();
    assert!(matches!(err, NetError::Closed), "{err:?}");
    // A header cut short is the same.
    let mut ch = raw_peer_writes(vec![1, 0]);
    assert!(matches!(ch.recv_frame(1 << 20), Err(NetError::Closed)));
}

#[test]
fn channels_work_as_trait_objects() {
    let (a, b) = MemoryChannel::pair();
    let mut a: Box<dyn Channel> = Box::new(a);
    let mut b: Box<dyn Channel> = Box::new(b);
    a.send_frame(&[9; 10]).unwrap();
    a.flush().unwrap();
    // Through the `&mut C` forwarding impl as well.
    fn recv_through<C: Channel>(mut ch: C) -> Vec<u8> {
        ch.recv_frame(10).unwrap()
    }
    assert_eq!(recv_through(&mut b), vec![9; 10]);
}

#[test]
fn memory_split_halves_own_one_direction_each() {
    let (mut a, mut b) = MemoryChannel::pair();
    a.send(b"early").unwrap();
    b.send_frame(b"ping").unwrap();
    b.flush().unwrap();
    let (mut reader, mut writer) = a.split();
    // Unflushed sends moved to the writer; unread data stayed with the reader.
    writer.flush().unwrap();
    let mut early = [0u8; 5];
    b.recv(&mut early).unwrap();
    assert_eq!(&early, b"early");
    assert_eq!(reader.recv_frame(10).unwrap(), b"ping");
    // Each half refuses the other direction at once.
    reader.send(b"x").unwrap();
    assert!(matches!(reader.flush(), Err(NetError::Closed)));
    assert!(matches!(writer.recv(&mut [0u8; 1]), Err(NetError::Closed)));
    // Dropping the writer ends only our outgoing direction.
    drop(writer);
    assert!(matches!(b.recv(&mut [0u8; 1]), Err(NetError::Closed)));
    b.send_frame(b"still heard").unwrap();
    b.flush().unwrap();
    assert_eq!(reader.recv_frame(20).unwrap(), b"still heard");
    drop(reader);
    b.send(b"gone").unwrap();
    assert!(matches!(b.flush(), Err(NetError::Closed)));
}

#[test]
fn tcp_split_halves_read_and_write_at_once() {
    let (mut a, mut b) = tcp_pair();
    b.send(b"hello").unwrap();
    b.flush().unwrap();
    let mut he = [0u8; 2];
    a.recv(&mut he).unwrap();
    a.set_timeout(Some(Duration::from_secs(10))).unwrap();
    let (mut reader, mut writer) = a.split().unwrap();
    // Bytes read ahead before the split stay readable.
    let mut llo = [0u8; 3];
    reader.recv(&mut llo).unwrap();
    assert_eq!(&llo, b"llo");
    // Both sides send more than kernel buffers hold before reading: this only finishes
    // because our reading and writing halves run on different threads.
    let ours = pattern(16 << 20, 5);
    let theirs = pattern(16 << 20, 6);
    let (ours_copy, theirs_copy) = (ours.clone(), theirs.clone());
    let peer = thread::spawn(move || {
        b.send(&theirs_copy).unwrap();
        b.flush().unwrap();
        let mut got = vec![0u8; ours_copy.len()];
        b.recv(&mut got).unwrap();
        assert!(got == ours_copy);
    });
    let sender = thread::spawn(move || {
        writer.send(&ours).unwrap();
        writer.flush().unwrap();
        writer
    });
    let mut got = vec![0u8; theirs.len()];
    reader.recv(&mut got).unwrap();
    assert!(got == theirs);
    peer.join().unwrap();
    let writer = sender.join().unwrap();
    assert_eq!(writer.counts().sent, 16 << 20);
    assert_eq!(reader.counts().received, 5 + (16 << 20));
}
