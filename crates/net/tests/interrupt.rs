//! `interrupt_all` ends the connections made before it, blocked or not, and leaves later ones
//! alone. Its own test binary: the interrupt is process-wide.

use std::time::{Duration, Instant};

use pgc_net::connect::{ChannelSecurity, accept_peer, no_notes};
use pgc_net::{Channel, NetError, TcpChannel, interrupt::interrupt_all};

fn pair() -> (TcpChannel, TcpChannel) {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let t = std::thread::spawn(move || TcpChannel::connect(&addr, Duration::from_secs(5)));
    let a = listener.accept(Duration::from_secs(5)).unwrap();
    (a, t.join().unwrap().unwrap())
}

#[test]
fn interrupt_ends_blocked_and_idle_connections_but_not_later_ones() {
    let (mut a, mut b) = pair();
    a.set_timeout(Some(Duration::from_secs(30))).unwrap();
    let blocked = std::thread::spawn(move || {
        let start = Instant::now();
        let mut buf = [0u8; 4];
        (a.recv(&mut buf), start.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    interrupt_all();
    let (result, waited) = blocked.join().unwrap();
    assert!(matches!(result, Err(NetError::Interrupted)), "{result:?}");
    assert!(waited < Duration::from_secs(5), "woke after {waited:?}");
    // The idle end fails at its next call.
    let sent = b.send(b"late").and_then(|()| b.flush());
    assert!(matches!(sent, Err(NetError::Interrupted)), "{sent:?}");

    // Accepts under way when the interrupt comes return: the plain one and the one that
    // sets up pgc's session (what `pgc run --listen` waits in).
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let waiting = std::thread::spawn(move || listener.accept(Duration::from_secs(30)).err());
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let waiting_for_peer = std::thread::spawn(move || {
        let secure = ChannelSecurity::Plaintext;
        accept_peer(&listener, &secure, Duration::from_secs(30), &no_notes()).err()
    });
    std::thread::sleep(Duration::from_millis(300));
    interrupt_all();
    let (plain, session) = (waiting.join().unwrap(), waiting_for_peer.join().unwrap());
    assert!(matches!(plain, Some(NetError::Interrupted)), "{plain:?}");
    assert!(
        matches!(session, Some(NetError::Interrupted)),
        "{session:?}"
    );

    // Connections made afterwards work.
    let (mut c, mut d) = pair();
    c.send(b"ping").unwrap();
    c.flush().unwrap();
    let mut buf = [0u8; 4];
    d.recv(&mut buf).unwrap();
    assert_eq!(&buf, b"ping");
}
