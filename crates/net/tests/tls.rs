//! The encrypted channel and the peer set-up: TLS round trips (whole and split under a
//! shaped link), pinned keys refused on both sides with clear errors, TLS meeting
//! plaintext, impostors connecting first, pre-shared secrets, and per-message deadlines
//! against a peer that trickles bytes.

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use pgc_net::connect::{
    accept_peer, accept_peer_streams, connect_peer, connect_peer_streams, no_notes,
};
use pgc_net::{
    Channel, ChannelSecurity, Identity, LinkShape, NetError, PeerChannel, RefusalNotes, Secret,
    ShapedChannel, SharedLink, TcpChannel, TlsSettings,
};

const TIMEOUT: Duration = Duration::from_secs(10);
const TOKEN: [u8; 16] = *b"fedcba9876543210";

/// Notes collected for checking.
fn collecting_notes() -> (RefusalNotes, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (
        Arc::new(move |note: &str| sink.lock().unwrap().push(note.to_string())),
        seen,
    )
}

/// Main channels of both parties: (acceptor's, connector's).
fn main_pair(a: &ChannelSecurity, b: &ChannelSecurity) -> (PeerChannel, PeerChannel) {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let b = b.clone();
    let connector = thread::spawn(move || connect_peer(&addr, &b, TIMEOUT).unwrap());
    let accepted = accept_peer(&listener, a, TIMEOUT, &no_notes()).unwrap();
    (accepted, connector.join().unwrap())
}

/// Both directions at once, a small and a large message each way.
fn exchange(mut x: impl Channel + 'static, mut y: impl Channel + 'static) {
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 991) as u8).collect();
    let big_y = big.clone();
    let other = thread::spawn(move || {
        y.send_frame(b"hello from y").unwrap();
        y.send_frame(&big_y).unwrap();
        y.flush().unwrap();
        assert_eq!(y.recv_frame(64).unwrap(), b"hello from x");
        assert_eq!(y.recv_frame(4 << 20).unwrap(), big_y);
        y
    });
    x.send_frame(b"hello from x").unwrap();
    x.send_frame(&big).unwrap();
    x.flush().unwrap();
    assert_eq!(x.recv_frame(64).unwrap(), b"hello from y");
    assert_eq!(x.recv_frame(4 << 20).unwrap(), big);
    let y = other.join().unwrap();
    // Counters count bytes on the wire: TLS adds record headers and tags.
    assert!(x.counts().sent >= big.len() as u64, "{:?}", x.counts());
    assert!(y.counts().received >= big.len() as u64, "{:?}", y.counts());
}

#[test]
fn tls_round_trip_both_ways() {
    let (a, b) = ChannelSecurity::loopback_pair().unwrap();
    let (accepted, connected) = main_pair(&a, &b);
    assert!(accepted.is_tls() && connected.is_tls());
    let PeerChannel::Tls(tls) = &connected else {
        unreachable!()
    };
    assert_eq!(
        tls.protocol_description(),
        "Some(TLSv1_3) Some(TLS13_AES_128_GCM_SHA256)"
    );
    let counts_before = connected.counts();
    exchange(accepted, connected);
    assert!(counts_before.received > 0, "the handshake is counted");
}

#[test]
fn plaintext_round_trip_still_works() {
    let plain = ChannelSecurity::Plaintext;
    let (accepted, connected) = main_pair(&plain, &plain);
    assert!(!accepted.is_tls());
    exchange(accepted, connected);
}

#[test]
fn split_tls_halves_work_under_a_shaped_link() {
    let (a, b) = ChannelSecurity::loopback_pair().unwrap();
    let (accepted, connected) = main_pair(&a, &b);
    let shape = LinkShape {
        rate_bits_per_sec: Some(2_000_000_000),
        latency: Duration::from_millis(2),
    };
    let x = ShapedChannel::wrap_peer(accepted, SharedLink::new(shape)).unwrap();
    let y = ShapedChannel::wrap_peer(connected, SharedLink::new(shape)).unwrap();
    exchange(x, y);
}

/// Runs an acceptor with `a` and a connector with `b`; returns the connector's error, the
/// acceptor's error and the acceptor's notes.
fn refused_pair(a: &ChannelSecurity, b: &ChannelSecurity) -> (NetError, NetError, Vec<String>) {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let b = b.clone();
    let connector = thread::spawn(move || connect_peer(&addr, &b, TIMEOUT).map(|_| ()));
    let (notes, seen) = collecting_notes();
    let start = Instant::now();
    let accepted = accept_peer(&listener, a, Duration::from_millis(1500), &notes);
    let connector_err = connector.join().unwrap().unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    let notes = seen.lock().unwrap().clone();
    (connector_err, accepted.unwrap_err(), notes)
}

#[test]
fn a_wrong_pinned_key_is_refused_on_both_sides_with_both_fingerprints() {
    let a = Identity::generate().unwrap();
    let b = Identity::generate().unwrap();
    let stranger = Identity::generate().unwrap();
    // The connector pins a stranger instead of the acceptor.
    let (connector_err, acceptor_err, notes) = refused_pair(
        &ChannelSecurity::Tls(TlsSettings::new(&a, b.fingerprint()).unwrap()),
        &ChannelSecurity::Tls(TlsSettings::new(&b, stranger.fingerprint()).unwrap()),
    );
    let text = connector_err.to_string();
    assert!(
        matches!(connector_err, NetError::PeerKeyMismatch { .. }),
        "{connector_err:?}"
    );
    assert!(text.contains(&a.fingerprint().to_string()), "{text}");
    assert!(text.contains(&stranger.fingerprint().to_string()), "{text}");
    assert!(
        matches!(
            acceptor_err,
            NetError::NoAuthenticatedPeer { refused: 1, .. }
        ),
        "{acceptor_err:?}"
    );
    assert!(
        notes.len() == 1 && notes[0].contains("refused this party's key"),
        "{notes:?}"
    );
    assert!(notes[0].contains(&a.fingerprint().to_string()), "{notes:?}");

    // The acceptor pins a stranger instead of the connector.
    let (connector_err, acceptor_err, notes) = refused_pair(
        &ChannelSecurity::Tls(TlsSettings::new(&a, stranger.fingerprint()).unwrap()),
        &ChannelSecurity::Tls(TlsSettings::new(&b, a.fingerprint()).unwrap()),
    );
    assert!(
        matches!(connector_err, NetError::KeyRefusedByPeer { .. }),
        "{connector_err:?}"
    );
    assert!(
        connector_err
            .to_string()
            .contains(&b.fingerprint().to_string())
    );
    let text = acceptor_err.to_string();
    assert!(text.contains(&b.fingerprint().to_string()), "{text}");
    assert!(text.contains(&stranger.fingerprint().to_string()), "{text}");
    assert_eq!(notes.len(), 1, "{notes:?}");
}

#[test]
fn tls_meeting_plaintext_says_so_on_both_sides() {
    let (tls_a, tls_b) = ChannelSecurity::loopback_pair().unwrap();
    let plain = ChannelSecurity::Plaintext;
    let want =
        "the peer is not using TLS: did it run with --insecure-plaintext? Both sides must agree";

    // TLS connector, plaintext acceptor.
    let (connector_err, acceptor_err, notes) = refused_pair(&plain, &tls_b);
    assert_eq!(connector_err.to_string(), want);
    assert!(
        acceptor_err.to_string().contains("--insecure-plaintext"),
        "{acceptor_err}"
    );
    assert!(notes[0].contains("the peer uses TLS"), "{notes:?}");

    // Plaintext connector, TLS acceptor.
    let (connector_err, acceptor_err, notes) = refused_pair(&tls_a, &plain);
    assert!(
        matches!(connector_err, NetError::PeerUsesTls),
        "{connector_err:?}"
    );
    assert!(acceptor_err.to_string().contains(want), "{acceptor_err}");
    assert!(notes[0].contains(want), "{notes:?}");
}

/// Connections that try to become the peer before the real one: no TLS, a wrong key,
/// silence (held open), garbage. Returns what keeps them alive.
fn impostors(addr: &str, wrong_key: &ChannelSecurity) -> Vec<TcpStream> {
    let mut held = Vec::new();
    // Silent: connects and says nothing (would have blocked the old acceptor 5 s or more).
    held.push(TcpStream::connect(addr).unwrap());
    // Garbage.
    let mut garbage = TcpStream::connect(addr).unwrap();
    garbage.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    held.push(garbage);
    // Plaintext pgc hello, no key.
    let plain = connect_peer(addr, &ChannelSecurity::Plaintext, TIMEOUT);
    assert!(plain.is_err());
    // A TLS client with a key the acceptor does not pin.
    let wrong = connect_peer(addr, wrong_key, TIMEOUT);
    assert!(
        matches!(wrong, Err(NetError::KeyRefusedByPeer { .. })),
        "{wrong:?}"
    );
    held
}

#[test]
fn impostors_connecting_first_do_not_stop_the_real_peer() {
    let a_id = Identity::generate().unwrap();
    let b_id = Identity::generate().unwrap();
    let a = ChannelSecurity::Tls(TlsSettings::new(&a_id, b_id.fingerprint()).unwrap());
    let b = ChannelSecurity::Tls(TlsSettings::new(&b_id, a_id.fingerprint()).unwrap());
    // Pins A correctly but presents a key A does not pin.
    let stranger = Identity::generate().unwrap();
    let wrong_key = ChannelSecurity::Tls(TlsSettings::new(&stranger, a_id.fingerprint()).unwrap());
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let (notes, seen) = collecting_notes();
    let start = Instant::now();
    let peer = {
        let addr = addr.clone();
        let wrong_key = wrong_key.clone();
        thread::spawn(move || {
            let held = impostors(&addr, &wrong_key);
            let main = connect_peer(&addr, &b, TIMEOUT).unwrap();
            // More impostors before the streams, then the real streams.
            let held2 = impostors(&addr, &wrong_key);
            let mut bad_token = TOKEN;
            bad_token[0] ^= 1;
            let stray = {
                let addr = addr.clone();
                let b = b.clone();
                thread::spawn(move || connect_peer_streams(&addr, &b, 1, bad_token, TIMEOUT))
            };
            let streams = connect_peer_streams(&addr, &b, 3, TOKEN, TIMEOUT).unwrap();
            let stray = stray.join().unwrap();
            assert!(stray.is_err(), "{stray:?}");
            drop((held, held2));
            (main, streams)
        })
    };
    let main = accept_peer(&listener, &a, TIMEOUT, &notes).unwrap();
    let streams = accept_peer_streams(&listener, &a, 3, TOKEN, TIMEOUT, &notes).unwrap();
    // Well inside the silent impostors' own 10 s set-up wait.
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );
    let (their_main, their_streams) = peer.join().unwrap();
    exchange(main, their_main);
    for (ours, theirs) in streams.into_iter().zip(their_streams) {
        exchange(ours, theirs);
    }
    let notes = seen.lock().unwrap().clone();
    // At least the plaintext, wrong-key and garbage connections of each round were noted.
    assert!(notes.len() >= 5, "{notes:?}");
    assert!(
        notes
            .iter()
            .all(|n| n.starts_with("turned away a connection from"))
    );
}

#[test]
fn pre_shared_secret_round_trip_and_a_wrong_secret_is_refused() {
    let secret = Secret::generate().unwrap();
    let id = Identity::from_secret(&secret).unwrap();
    let psk = ChannelSecurity::Tls(TlsSettings::new(&id, id.fingerprint()).unwrap());
    let (accepted, connected) = main_pair(&psk, &psk);
    exchange(accepted, connected);

    let other = Identity::from_secret(&Secret::generate().unwrap()).unwrap();
    let wrong = ChannelSecurity::Tls(TlsSettings::new(&other, other.fingerprint()).unwrap());
    let (connector_err, _, notes) = refused_pair(&psk, &wrong);
    assert!(
        matches!(connector_err, NetError::PeerKeyMismatch { .. }),
        "{connector_err:?}"
    );
    assert_eq!(notes.len(), 1, "{notes:?}");
}

/// A peer that announces a 100-byte frame and then sends one byte every 100 ms: the
/// receiver's 300 ms timeout is per message, so it fails at about 300 ms, not when the
/// trickle ends (10 s). On the old code every byte reset the timeout.
#[test]
fn a_trickling_peer_fails_the_message_at_the_deadline_tcp() {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let trickler = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        s.write_all(&100u32.to_le_bytes()).unwrap();
        for _ in 0..100 {
            if s.write_all(&[7]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(100));
        }
    });
    let mut ch = listener.accept(TIMEOUT).unwrap();
    ch.set_timeout(Some(Duration::from_millis(300))).unwrap();
    let start = Instant::now();
    let err = ch.recv_frame(1000).unwrap_err();
    let took = start.elapsed();
    assert!(matches!(err, NetError::Timeout(_)), "{err:?}");
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(900),
        "{took:?}"
    );
    // And a plain recv of the trickle: one deadline for the whole call too.
    let mut buf = [0u8; 50];
    let start = Instant::now();
    assert!(matches!(ch.recv(&mut buf), Err(NetError::Timeout(_))));
    assert!(start.elapsed() < Duration::from_millis(900));
    drop(ch);
    trickler.join().unwrap();
}

#[test]
fn a_trickling_peer_fails_the_message_at_the_deadline_tls() {
    let (a, b) = ChannelSecurity::loopback_pair().unwrap();
    let (mut accepted, mut connected) = main_pair(&a, &b);
    let trickler = thread::spawn(move || {
        connected.send(&100u32.to_le_bytes()).unwrap();
        connected.flush().unwrap();
        for _ in 0..100 {
            // One TLS record per byte.
            if connected
                .send(&[7])
                .and_then(|()| connected.flush())
                .is_err()
            {
                break;
            }
            thread::sleep(Duration::from_millis(100));
        }
    });
    accepted
        .set_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let start = Instant::now();
    let err = accepted.recv_frame(1000).unwrap_err();
    let took = start.elapsed();
    assert!(matches!(err, NetError::Timeout(_)), "{err:?}");
    assert!(took < Duration::from_millis(900), "{took:?}");
    drop(accepted);
    trickler.join().unwrap();
}

#[test]
fn many_tls_streams_open_at_once_and_keep_their_order() {
    // More streams than the connector sets up at once (16), so several rounds of
    // concurrent handshakes; stream i on one side must be stream i on the other.
    let (a, b) = ChannelSecurity::loopback_pair().unwrap();
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let n = 37;
    let connector = thread::spawn(move || {
        let mut streams = connect_peer_streams(&addr, &b, n, TOKEN, TIMEOUT).unwrap();
        for (i, s) in streams.iter_mut().enumerate() {
            s.send_frame(&(i as u32).to_le_bytes()).unwrap();
            s.flush().unwrap();
        }
        for (i, s) in streams.iter_mut().enumerate() {
            assert_eq!(s.recv_frame(4).unwrap(), (1000 + i as u32).to_le_bytes());
        }
    });
    let mut streams = accept_peer_streams(&listener, &a, n, TOKEN, TIMEOUT, &no_notes()).unwrap();
    assert_eq!(streams.len(), n);
    for (i, s) in streams.iter_mut().enumerate() {
        assert_eq!(
            s.recv_frame(4).unwrap(),
            (i as u32).to_le_bytes(),
            "stream {i}"
        );
        s.send_frame(&(1000 + i as u32).to_le_bytes()).unwrap();
        s.flush().unwrap();
    }
    connector.join().unwrap();
}
