//! The actively secure OTs (endemic base OT, KOS15 extension) through their public API:
//! correctness with both parties on threads (memory channel, one test each over loopback
//! TCP), and peers that send malformed messages, played by hand-written message sequences.
//! A receiver that cheats inside the KOS15 matrix is tested in `kos.rs` itself, where the
//! real receiver can be told to deviate.

use pgc_crypto::{Block, Prg};
use pgc_net::{Channel, MemoryChannel, NetError, TcpChannel};
use pgc_ot::iknp::BATCH_OTS;
use pgc_ot::kos::PADDING_OTS;
use pgc_ot::{KosReceiver, KosSender, OtError, endemic};
use std::collections::HashSet;
use std::thread;
use std::time::Duration;

/// Runs `sender` and `receiver` on two threads joined by a fresh memory channel.
fn run_pair<A: Send, B: Send>(
    sender: impl FnOnce(&mut MemoryChannel) -> A + Send,
    receiver: impl FnOnce(&mut MemoryChannel) -> B + Send,
) -> (A, B) {
    let (mut a, mut b) = MemoryChannel::pair();
    thread::scope(|s| {
        let ha = s.spawn(move || sender(&mut a));
        let hb = s.spawn(move || receiver(&mut b));
        (ha.join().unwrap(), hb.join().unwrap())
    })
}

fn random_choices(n: usize, seed: u128) -> Vec<bool> {
    let mut prg = Prg::from_seed(Block(seed));
    (0..n).map(|_| prg.random_bool()).collect()
}

/// Checks random-OT outputs: the receiver holds the chosen key, never the other one, the
/// two keys of a pair differ, and no key appears twice in `seen`.
fn check_random_ots(
    what: &str,
    pairs: &[(Block, Block)],
    got: &[Block],
    choices: &[bool],
    seen: &mut HashSet<u128>,
) {
    assert_eq!(pairs.len(), choices.len(), "{what}");
    assert_eq!(got.len(), choices.len(), "{what}");
    for (j, ((&(k0, k1), &k), &c)) in pairs.iter().zip(got).zip(choices).enumerate() {
        assert_ne!(k0, k1, "{what}, OT {j}: equal keys");
        let (chosen, other) = if c { (k1, k0) } else { (k0, k1) };
        assert_eq!(k, chosen, "{what}, OT {j}");
        assert_ne!(k, other, "{what}, OT {j}");
        assert!(
            seen.insert(k0.0) && seen.insert(k1.0),
            "{what}, OT {j}: repeated key"
        );
    }
}

const ENDEMIC_SIZES: [usize; 5] = [0, 1, 127, 128, 1000];

#[test]
fn endemic_ot_delivers_the_chosen_keys() {
    let mut seen = HashSet::new();
    for (k, &n) in ENDEMIC_SIZES.iter().enumerate() {
        let choices = random_choices(n, 100 + k as u128);
        let (pairs, got) = run_pair(
            |ch| endemic::send_random(ch, n, &mut Prg::from_seed(Block(200 + k as u128))).unwrap(),
            |ch| {
                endemic::receive_random(ch, &choices, &mut Prg::from_seed(Block(300 + k as u128)))
                    .unwrap()
            },
        );
        check_random_ots(&format!("n = {n}"), &pairs, &got, &choices, &mut seen);
    }
}

#[test]
fn endemic_ot_over_tcp_takes_one_round() {
    // Both parties send before they receive; over TCP that must not deadlock.
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let choices = random_choices(128, 1);
    let (pairs, got) = thread::scope(|s| {
        let sender = s.spawn(|| {
            let mut ch = listener.accept(Duration::from_secs(10)).unwrap();
            endemic::send_random(&mut ch, 128, &mut Prg::from_os_entropy()).unwrap()
        });
        let receiver = s.spawn(|| {
            let mut ch = TcpChannel::connect(&addr, Duration::from_secs(10)).unwrap();
            endemic::receive_random(&mut ch, &choices, &mut Prg::from_os_entropy()).unwrap()
        });
        (sender.join().unwrap(), receiver.join().unwrap())
    });
    check_random_ots("tcp", &pairs, &got, &choices, &mut HashSet::new());
}

/// Encodings both parties must refuse: not canonical (high bit set, field element ≥ p)
/// and the identity (all zeros).
const BAD_POINTS: [[u8; 32]; 3] = [[0xff; 32], [0xee; 32], [0; 32]];

fn good_point() -> [u8; 32] {
    curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED.to_bytes()
}

#[test]
fn endemic_receiver_refuses_an_invalid_sender_point() {
    for bad in BAD_POINTS {
        let ((), result) = run_pair(
            |ch| {
                ch.send_frame(&bad).unwrap();
                ch.flush().unwrap();
                // Take the receiver's pairs so that its send does not fail first.
                let _ = ch.recv_frame(1 << 10);
            },
            |ch| endemic::receive_random(ch, &[true, false], &mut Prg::from_seed(Block(4))),
        );
        assert!(
            matches!(result, Err(OtError::InvalidPoint { index: 0 })),
            "{result:?}"
        );
    }
}

#[test]
fn endemic_sender_refuses_an_invalid_receiver_point() {
    // OT 2 of 4 carries the bad point, first or second of its pair: point 4 or 5.
    for bad in BAD_POINTS {
        for position in [0, 1] {
            let (result, ()) = run_pair(
                |ch| endemic::send_random(ch, 4, &mut Prg::from_seed(Block(5))),
                |ch| {
                    let _sender_point = ch.recv_frame(32).unwrap();
                    let mut msg = Vec::new();
                    for point in 0..8 {
                        let p = if point == 4 + position {
                            bad
                        } else {
                            good_point()
                        };
                        msg.extend_from_slice(&p);
                    }
                    ch.send_frame(&msg).unwrap();
                    ch.flush().unwrap();
                },
            );
            assert!(
                matches!(result, Err(OtError::InvalidPoint { index }) if index == 4 + position),
                "{result:?}"
            );
        }
    }
}

#[test]
fn endemic_ot_refuses_wrong_message_sizes() {
    // The sender expects 4 pairs of points: 256 bytes. Shorter, longer and huge frames are
    // refused; for a huge one the sender stops at the length header, allocating nothing.
    for len in [255usize, 257, 64 * 3, 1 << 30] {
        let (result, ()) = run_pair(
            |ch| endemic::send_random(ch, 4, &mut Prg::from_seed(Block(6))),
            |ch| {
                ch.recv_frame(32).unwrap();
                ch.send(&(len as u32).to_le_bytes()).unwrap();
                ch.send(&vec![0u8; len.min(512)]).unwrap();
                ch.flush().unwrap();
            },
        );
        match result {
            Err(OtError::Protocol(msg)) => {
                assert!(msg.contains("expected 256 bytes"), "{msg}");
                assert!(msg.contains(&format!("got {len}")), "{msg}");
            }
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }
    // The receiver expects exactly one point from the sender.
    for len in [0usize, 31, 33, 64] {
        let ((), result) = run_pair(
            |ch| {
                ch.send_frame(&vec![1u8; len]).unwrap();
                ch.flush().unwrap();
                let _ = ch.recv_frame(1 << 10);
            },
            |ch| endemic::receive_random(ch, &[true; 3], &mut Prg::from_seed(Block(7))),
        );
        assert!(
            matches!(&result, Err(OtError::Protocol(m)) if m.contains("expected 32 bytes")),
            "{result:?}"
        );
    }
}

/// Sets up KOS15 on both sides and runs `sender` and `receiver` with the parties.
fn with_kos<A: Send, B: Send>(
    sender: impl FnOnce(&mut MemoryChannel, &mut KosSender) -> A + Send,
    receiver: impl FnOnce(&mut MemoryChannel, &mut KosReceiver) -> B + Send,
) -> (A, B) {
    run_pair(
        move |ch| {
            let mut s = KosSender::setup(ch, &mut Prg::from_seed(Block(100))).unwrap();
            sender(ch, &mut s)
        },
        move |ch| {
            let mut r = KosReceiver::setup(ch, &mut Prg::from_seed(Block(101))).unwrap();
            receiver(ch, &mut r)
        },
    )
}

#[test]
fn kos_random_ot_is_correct_over_consecutive_calls() {
    // 70,000 spans two batches; every call continues the same extension.
    let sizes = [0usize, 1, 127, 128, 1000, 70_000, 5];
    const { assert!(70_000 > BATCH_OTS) };
    let choices: Vec<Vec<bool>> = sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| random_choices(n, 1000 + k as u128))
        .collect();
    let (pairs, got) = with_kos(
        |ch, s| {
            sizes
                .iter()
                .map(|&n| s.send_random(ch, n).unwrap())
                .collect::<Vec<_>>()
        },
        |ch, r| {
            choices
                .iter()
                .map(|c| r.receive_random(ch, c).unwrap())
                .collect::<Vec<_>>()
        },
    );
    let mut seen = HashSet::new();
    for (call, ((p, g), c)) in pairs.iter().zip(&got).zip(&choices).enumerate() {
        check_random_ots(&format!("call {call}"), p, g, c, &mut seen);
    }
}

#[test]
fn kos_random_ot_over_tcp() {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let choices = random_choices(20_000, 2);
    let (pairs, got) = thread::scope(|s| {
        let sender = s.spawn(|| {
            let mut ch = listener.accept(Duration::from_secs(10)).unwrap();
            let mut ot = KosSender::setup(&mut ch, &mut Prg::from_os_entropy()).unwrap();
            ot.send_random(&mut ch, choices.len()).unwrap()
        });
        let receiver = s.spawn(|| {
            let mut ch = TcpChannel::connect(&addr, Duration::from_secs(10)).unwrap();
            let mut ot = KosReceiver::setup(&mut ch, &mut Prg::from_os_entropy()).unwrap();
            ot.receive_random(&mut ch, &choices).unwrap()
        });
        (sender.join().unwrap(), receiver.join().unwrap())
    });
    check_random_ots("tcp", &pairs, &got, &choices, &mut HashSet::new());
}

/// Bytes of the receiver's matrix for a batch of `n` OTs.
fn matrix_bytes(n: usize) -> usize {
    (n + PADDING_OTS).div_ceil(128) * 128 * 16
}

fn expect_protocol_error<T: std::fmt::Debug>(result: Result<T, OtError>, expected: &str) {
    match result {
        Err(OtError::Protocol(msg)) => assert!(msg.contains(expected), "{msg}"),
        other => panic!("expected a protocol error containing {expected:?}, got {other:?}"),
    }
}

#[test]
fn kos_sender_refuses_a_wrong_sized_matrix() {
    let right = matrix_bytes(10);
    assert_eq!(right, 4096);
    for len in [right - 1, right + 1, right - 2048, 100 << 20] {
        let (result, ()) = with_kos(
            |ch, s| s.send_random(ch, 10),
            |ch, _r| {
                ch.send(&(len as u32).to_le_bytes()).unwrap();
                ch.send(&vec![0u8; len.min(right + 16)]).unwrap();
                ch.flush().unwrap();
            },
        );
        expect_protocol_error(result, &format!("expected {right} bytes, got {len}"));
    }
}

#[test]
fn kos_sender_refuses_wrong_sized_commitments_and_check_values() {
    // The commitment must be 32 bytes.
    for len in [0usize, 31, 33] {
        let (result, ()) = with_kos(
            |ch, s| s.send_random(ch, 10),
            |ch, _r| {
                ch.send_frame(&[0u8; 4096]).unwrap();
                ch.send_frame(&vec![0u8; len]).unwrap();
                ch.flush().unwrap();
            },
        );
        expect_protocol_error(result, &format!("expected 32 bytes, got {len}"));
    }
    // The check values must be 48 bytes.
    for len in [0usize, 32, 47, 49] {
        let (result, ()) = with_kos(
            |ch, s| s.send_random(ch, 10),
            |ch, _r| {
                ch.send_frame(&[0u8; 4096]).unwrap();
                ch.send_frame(&[0u8; 32]).unwrap();
                ch.flush().unwrap();
                ch.recv_frame(16).unwrap();
                ch.send_frame(&vec![0u8; len]).unwrap();
                ch.flush().unwrap();
            },
        );
        expect_protocol_error(result, &format!("expected 48 bytes, got {len}"));
    }
}

#[test]
fn kos_receiver_refuses_a_wrong_length_coin() {
    for len in [0usize, 15, 17, 32] {
        let ((), result) = with_kos(
            |ch, _s| {
                ch.recv_frame(matrix_bytes(10)).unwrap();
                ch.recv_frame(32).unwrap();
                ch.send_frame(&vec![7u8; len]).unwrap();
                ch.flush().unwrap();
            },
            |ch, r| r.receive_random(ch, &[true; 10]),
        );
        expect_protocol_error(result, &format!("expected 16 bytes, got {len}"));
    }
}

#[test]
fn kos_sender_catches_made_up_check_values() {
    // A "receiver" that sends a random matrix and zero check values, opening its
    // commitment correctly, still fails the check.
    let (result, ()) = with_kos(
        |ch, s| s.send_random(ch, 10),
        |ch, _r| {
            let mut matrix = vec![0u8; 4096];
            Prg::from_seed(Block(9)).fill_bytes(&mut matrix);
            ch.send_frame(&matrix).unwrap();
            let share = [3u8; 16];
            let commitment =
                blake3::Hasher::new_derive_key("pgc-ot KOS15 check coin: receiver's commitment v1")
                    .update(&share)
                    .finalize();
            ch.send_frame(commitment.as_bytes()).unwrap();
            ch.flush().unwrap();
            ch.recv_frame(16).unwrap();
            let mut check = [0u8; 48];
            check[32..].copy_from_slice(&share);
            ch.send_frame(&check).unwrap();
            ch.flush().unwrap();
        },
    );
    match result {
        Err(OtError::CheatDetected(msg)) => assert!(msg.contains("KOS15 check"), "{msg}"),
        other => panic!("expected CheatDetected, got {other:?}"),
    }
}

#[test]
fn kos_disconnects_are_errors_not_hangs() {
    // The receiver vanishes after setup.
    let (result, ()) = with_kos(
        |ch, s| s.send_random(ch, 1000),
        |ch, _r| {
            let (dead, _) = MemoryChannel::pair();
            drop(std::mem::replace(ch, dead));
        },
    );
    assert!(
        matches!(result, Err(OtError::Net(NetError::Closed))),
        "{result:?}"
    );
    // The sender vanishes after the matrix arrived; the receiver waits for the coin.
    let ((), result) = with_kos(
        |ch, _s| {
            ch.recv_frame(matrix_bytes(10)).unwrap();
            let (dead, _) = MemoryChannel::pair();
            drop(std::mem::replace(ch, dead));
        },
        |ch, r| {
            let first = r.receive_random(ch, &[false; 10]).map(|_| ());
            // A failed batch leaves the extension unusable.
            let again = r.receive_random(ch, &[false; 10]).map(|_| ());
            (first, again)
        },
    );
    let (first, again) = result;
    assert!(
        matches!(first, Err(OtError::Net(NetError::Closed))),
        "{first:?}"
    );
    expect_protocol_error(again, "cannot continue");
}
