//! Both parties of every OT protocol run as threads over a `MemoryChannel` (one test over
//! loopback TCP); misbehaving peers are played by hand-written message sequences.

use pgc_crypto::{Block, Prg};
use pgc_net::{Channel, MemoryChannel, NetError, TcpChannel};
use pgc_ot::{IknpReceiver, IknpSender, OtError, base};
use std::thread;
use std::time::{Duration, Instant};

/// Runs `sender` and `receiver` on two threads joined by a fresh memory channel.
fn run_pair<S, R, A, B>(sender: S, receiver: R) -> (A, B)
where
    S: FnOnce(&mut MemoryChannel) -> A + Send,
    R: FnOnce(&mut MemoryChannel) -> B + Send,
    A: Send,
    B: Send,
{
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

fn random_pairs(n: usize, seed: u128) -> Vec<(Block, Block)> {
    let mut prg = Prg::from_seed(Block(seed));
    (0..n)
        .map(|_| (prg.random_block(), prg.random_block()))
        .collect()
}

/// A Δ as the garbler uses it: random with the colour bit set.
fn test_delta(seed: u128) -> Block {
    Block(Prg::from_seed(Block(seed)).random_block().0 | 1)
}

#[test]
fn base_random_ot_delivers_the_chosen_keys() {
    let choices = random_choices(100, 1);
    let (pairs, got) = run_pair(
        |ch| base::send_random(ch, 100, &mut Prg::from_seed(Block(10))).unwrap(),
        |ch| base::receive_random(ch, &choices, &mut Prg::from_seed(Block(11))).unwrap(),
    );
    assert_eq!(pairs.len(), 100);
    assert_eq!(got.len(), 100);
    for (j, ((&(k0, k1), &k), &c)) in pairs.iter().zip(&got).zip(&choices).enumerate() {
        assert_ne!(k0, k1, "OT {j}: equal keys");
        assert_eq!(k, if c { k1 } else { k0 }, "OT {j}");
    }
    // Keys of different OTs differ.
    let mut all: Vec<u128> = pairs.iter().flat_map(|&(a, b)| [a.0, b.0]).collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 200);
}

#[test]
fn base_random_ot_on_threads_gives_the_same_keys() {
    // Same seeds, any thread count on either side: the same keys (which hash both parties'
    // points, so the messages were the same too).
    let choices = random_choices(128, 7);
    let run = |send_threads: usize, receive_threads: usize| {
        run_pair(
            |ch| {
                base::send_random_threads(ch, 128, &mut Prg::from_seed(Block(70)), send_threads)
                    .unwrap()
            },
            |ch| {
                base::receive_random_threads(
                    ch,
                    &choices,
                    &mut Prg::from_seed(Block(71)),
                    receive_threads,
                )
                .unwrap()
            },
        )
    };
    let one = run(1, 1);
    for (s, r) in [(4, 1), (1, 3), (16, 16), (200, 5)] {
        assert_eq!(run(s, r), one, "{s} sending and {r} receiving threads");
    }
    // And the IKNP set-up on threads extends to the same correlated OTs.
    let delta = test_delta(72);
    let iknp = |threads: usize| {
        run_pair(
            |ch| {
                let mut s =
                    IknpSender::setup_threads(ch, delta, &mut Prg::from_seed(Block(73)), threads)
                        .unwrap();
                s.send_correlated(ch, 300).unwrap()
            },
            |ch| {
                let mut r =
                    IknpReceiver::setup_threads(ch, &mut Prg::from_seed(Block(74)), threads)
                        .unwrap();
                r.receive_correlated(ch, &choices[..100].repeat(3)).unwrap()
            },
        )
    };
    assert_eq!(iknp(1), iknp(8));
}

#[test]
fn base_chosen_ot_delivers_the_chosen_messages() {
    let choices = random_choices(64, 2);
    let messages = random_pairs(64, 3);
    let ((), got) = run_pair(
        |ch| base::send_chosen(ch, &messages, &mut Prg::from_seed(Block(12))).unwrap(),
        |ch| base::receive_chosen(ch, &choices, &mut Prg::from_seed(Block(13))).unwrap(),
    );
    for (j, ((&(m0, m1), &m), &c)) in messages.iter().zip(&got).zip(&choices).enumerate() {
        assert_eq!(m, if c { m1 } else { m0 }, "OT {j}");
    }
}

#[test]
fn base_ot_with_zero_transfers() {
    let (pairs, got) = run_pair(
        |ch| base::send_random(ch, 0, &mut Prg::from_seed(Block(1))).unwrap(),
        |ch| base::receive_random(ch, &[], &mut Prg::from_seed(Block(2))).unwrap(),
    );
    assert!(pairs.is_empty() && got.is_empty());
}

/// Encodings a receiver must refuse: not canonical (high bit set, field element ≥ p) and
/// the identity (all zeros).
const BAD_POINTS: [[u8; 32]; 3] = [[0xff; 32], [0xee; 32], [0; 32]];

#[test]
fn receiver_refuses_an_invalid_sender_point() {
    for bad in BAD_POINTS {
        let ((), result) = run_pair(
            |ch| {
                ch.send_frame(&bad).unwrap();
                ch.flush().unwrap();
            },
            |ch| base::receive_random(ch, &[true, false], &mut Prg::from_seed(Block(4))),
        );
        assert!(
            matches!(result, Err(OtError::InvalidPoint { index: 0 })),
            "{result:?}"
        );
    }
}

#[test]
fn sender_refuses_an_invalid_receiver_point() {
    for bad in BAD_POINTS {
        let (result, ()) = run_pair(
            |ch| base::send_random(ch, 5, &mut Prg::from_seed(Block(5))),
            |ch| {
                let _sender_point = ch.recv_frame(32).unwrap();
                // Four good points (the base point's encoding), then a bad one.
                let good = curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED.to_bytes();
                let mut msg = Vec::new();
                for _ in 0..4 {
                    msg.extend_from_slice(&good);
                }
                msg.extend_from_slice(&bad);
                ch.send_frame(&msg).unwrap();
                ch.flush().unwrap();
            },
        );
        assert!(
            matches!(result, Err(OtError::InvalidPoint { index: 4 })),
            "{result:?}"
        );
    }
}

#[test]
fn base_ot_refuses_wrong_message_sizes() {
    // Too short and too long lists of receiver points.
    for len in [32 * 3, 32 * 5, 1 << 20] {
        let (result, ()) = run_pair(
            |ch| base::send_random(ch, 4, &mut Prg::from_seed(Block(6))),
            |ch| {
                ch.recv_frame(32).unwrap();
                // Announce `len` bytes; send only a few (the sender must stop at the header).
                ch.send(&(len as u32).to_le_bytes()).unwrap();
                ch.send(&vec![0u8; len.min(32 * 5)]).unwrap();
                ch.flush().unwrap();
            },
        );
        match result {
            Err(OtError::Protocol(msg)) => {
                assert!(msg.contains("expected 128 bytes"), "{msg}");
                assert!(msg.contains(&format!("got {len}")), "{msg}");
            }
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }
}

/// Sets up IKNP on both sides and runs `sender` and `receiver` with the parties.
fn with_iknp<A: Send, B: Send>(
    delta: Block,
    sender: impl FnOnce(&mut MemoryChannel, &mut IknpSender) -> A + Send,
    receiver: impl FnOnce(&mut MemoryChannel, &mut IknpReceiver) -> B + Send,
) -> (A, B) {
    run_pair(
        move |ch| {
            let mut s = IknpSender::setup(ch, delta, &mut Prg::from_seed(Block(100))).unwrap();
            sender(ch, &mut s)
        },
        move |ch| {
            let mut r = IknpReceiver::setup(ch, &mut Prg::from_seed(Block(101))).unwrap();
            receiver(ch, &mut r)
        },
    )
}

const SIZES: [usize; 5] = [1, 127, 128, 129, 10_000];

#[test]
fn iknp_correlated_ot_is_correct_over_consecutive_calls() {
    let delta = test_delta(7);
    // The sizes twice over, plus one call spanning several batches.
    let sizes: Vec<usize> = SIZES
        .iter()
        .chain(&SIZES)
        .copied()
        .chain([2 * pgc_ot::iknp::BATCH_OTS + 77])
        .collect();
    let choices: Vec<Vec<bool>> = sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| random_choices(n, 1000 + k as u128))
        .collect();
    let (sent, received) = with_iknp(
        delta,
        |ch, s| {
            assert_eq!(s.delta(), delta);
            sizes
                .iter()
                .map(|&n| s.send_correlated(ch, n).unwrap())
                .collect::<Vec<_>>()
        },
        |ch, r| {
            choices
                .iter()
                .map(|c| r.receive_correlated(ch, c).unwrap())
                .collect::<Vec<_>>()
        },
    );
    let mut seen = std::collections::HashSet::new();
    for (call, ((x0, got), c)) in sent.iter().zip(&received).zip(&choices).enumerate() {
        assert_eq!(x0.len(), sizes[call]);
        assert_eq!(got.len(), sizes[call]);
        for (j, ((&x, &t), &r)) in x0.iter().zip(got).zip(c).enumerate() {
            assert_eq!(t, x ^ delta.select(r), "call {call}, OT {j}");
            // Fresh randomness in every call: no x0 ever repeats.
            assert!(seen.insert(x.0), "call {call}, OT {j}: repeated x0");
        }
    }
}

#[test]
fn iknp_correlated_into_matches_and_checks_lengths() {
    let delta = test_delta(8);
    let choices = random_choices(300, 9);
    let (x0, (t, err)) = with_iknp(
        delta,
        |ch, s| {
            let mut out = vec![Block::ZERO; 300];
            s.send_correlated_into(ch, &mut out).unwrap();
            out
        },
        |ch, r| {
            let mut out = vec![Block::ZERO; 300];
            r.receive_correlated_into(ch, &choices, &mut out).unwrap();
            let err = r
                .receive_correlated_into(ch, &choices, &mut [Block::ZERO; 3])
                .unwrap_err();
            (out, err)
        },
    );
    for ((&x, &t), &c) in x0.iter().zip(&t).zip(&choices) {
        assert_eq!(t, x ^ delta.select(c));
    }
    assert!(matches!(err, OtError::BadArgument(_)), "{err:?}");
}

#[test]
fn iknp_random_ot_is_correct() {
    let delta = test_delta(10);
    let choices: Vec<Vec<bool>> = SIZES
        .iter()
        .enumerate()
        .map(|(k, &n)| random_choices(n, 2000 + k as u128))
        .collect();
    let (pairs, got) = with_iknp(
        delta,
        |ch, s| {
            // A correlated call in between must not disturb the others.
            s.send_correlated(ch, 50).unwrap();
            SIZES
                .iter()
                .map(|&n| s.send_random(ch, n).unwrap())
                .collect::<Vec<_>>()
        },
        |ch, r| {
            r.receive_correlated(ch, &[true; 50]).unwrap();
            choices
                .iter()
                .map(|c| r.receive_random(ch, c).unwrap())
                .collect::<Vec<_>>()
        },
    );
    let mut seen = std::collections::HashSet::new();
    for (call, ((p, g), c)) in pairs.iter().zip(&got).zip(&choices).enumerate() {
        assert_eq!(p.len(), SIZES[call]);
        for (j, ((&(m0, m1), &m), &r)) in p.iter().zip(g).zip(c).enumerate() {
            assert_ne!(m0, m1, "call {call}, OT {j}");
            // Hashing removes the correlation.
            assert_ne!(m0 ^ m1, delta, "call {call}, OT {j}");
            assert_eq!(m, if r { m1 } else { m0 }, "call {call}, OT {j}");
            assert!(seen.insert(m0.0) && seen.insert(m1.0), "repeated message");
        }
    }
}

#[test]
fn iknp_chosen_ot_is_correct() {
    let delta = test_delta(11);
    let n = 1000;
    let choices = random_choices(n, 12);
    let messages = random_pairs(n, 13);
    let ((), got) = with_iknp(
        delta,
        |ch, s| {
            s.send_chosen(ch, &messages[..1]).unwrap();
            s.send_chosen(ch, &messages).unwrap();
        },
        |ch, r| {
            let first = r.receive_chosen(ch, &choices[..1]).unwrap();
            (first, r.receive_chosen(ch, &choices).unwrap())
        },
    );
    let (first, all) = got;
    assert_eq!(
        first[0],
        if choices[0] {
            messages[0].1
        } else {
            messages[0].0
        }
    );
    for (j, ((&(m0, m1), &m), &c)) in messages.iter().zip(&all).zip(&choices).enumerate() {
        assert_eq!(m, if c { m1 } else { m0 }, "OT {j}");
    }
}

#[test]
fn iknp_sender_refuses_a_wrong_sized_matrix() {
    // 128 OTs need a 128 × 16-byte matrix: 2048 bytes.
    for len in [2047usize, 2049, 100 << 20] {
        let (result, ()) = with_iknp(
            test_delta(14),
            |ch, s| s.send_correlated(ch, 128),
            |ch, _r| {
                ch.send(&(len as u32).to_le_bytes()).unwrap();
                ch.send(&vec![0u8; len.min(4096)]).unwrap();
                ch.flush().unwrap();
            },
        );
        match result {
            Err(OtError::Protocol(msg)) => {
                assert!(msg.contains("expected 2048 bytes"), "{msg}");
                assert!(msg.contains(&format!("got {len}")), "{msg}");
            }
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }
}

#[test]
fn iknp_sender_reports_a_truncated_matrix() {
    // The right length is announced, but the peer leaves after part of the payload.
    let (result, ()) = with_iknp(
        test_delta(14),
        |ch, s| s.send_correlated(ch, 128),
        |ch, _r| {
            ch.send(&2048u32.to_le_bytes()).unwrap();
            ch.send(&[0u8; 1000]).unwrap();
            let (dead, _) = MemoryChannel::pair();
            drop(std::mem::replace(ch, dead));
        },
    );
    assert!(
        matches!(result, Err(OtError::Net(NetError::Closed))),
        "{result:?}"
    );
}

#[test]
fn iknp_receiver_refuses_a_wrong_sized_chosen_message() {
    let (_, result) = with_iknp(
        test_delta(15),
        |ch, s| {
            s.send_correlated(ch, 10).unwrap(); // the correlated part of a chosen OT
            ch.send_frame(&[0u8; 32 * 10 - 1]).unwrap();
            ch.flush().unwrap();
        },
        |ch, r| r.receive_chosen(ch, &[false; 10]),
    );
    assert!(
        matches!(&result, Err(OtError::Protocol(m)) if m.contains("expected 320 bytes, got 319")),
        "{result:?}"
    );
}

#[test]
fn disconnect_mid_protocol_is_an_error_not_a_hang() {
    let start = Instant::now();
    // The receiver vanishes after setup: the sender waits for a matrix that never comes.
    let (result, ()) = with_iknp(
        test_delta(16),
        |ch, s| s.send_correlated(ch, 1000),
        |ch, _r| {
            let (dead, _) = MemoryChannel::pair();
            // Replace our end by an unrelated one; dropping the real end closes the channel.
            drop(std::mem::replace(ch, dead));
        },
    );
    assert!(
        matches!(result, Err(OtError::Net(NetError::Closed))),
        "{result:?}"
    );
    // The sender vanishes in the middle of the base OTs.
    let ((), result) = run_pair(
        |ch| {
            let (dead, _) = MemoryChannel::pair();
            drop(std::mem::replace(ch, dead));
        },
        |ch| IknpSender::setup(ch, test_delta(17), &mut Prg::from_seed(Block(1))).map(|_| ()),
    );
    assert!(
        matches!(result, Err(OtError::Net(NetError::Closed))),
        "{result:?}"
    );
    // A chosen-OT sender that stops after the correlated part.
    let (_, result) = with_iknp(
        test_delta(18),
        |ch, s| {
            s.send_correlated(ch, 10).unwrap();
            let (dead, _) = MemoryChannel::pair();
            drop(std::mem::replace(ch, dead));
        },
        |ch, r| r.receive_chosen(ch, &[true; 10]),
    );
    assert!(
        matches!(result, Err(OtError::Net(NetError::Closed))),
        "{result:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn errors_do_not_reveal_choices() {
    let (_, result) = with_iknp(
        test_delta(19),
        |ch, _s| {
            let (dead, _) = MemoryChannel::pair();
            drop(std::mem::replace(ch, dead));
        },
        // Chosen OT: the receiver must hear from the (gone) sender, so it always fails. (A
        // random-OT receiver only sends, and could finish before the sender's side is gone.)
        |ch, r| r.receive_chosen(ch, &[true, false, true]),
    );
    let err = result.unwrap_err();
    let text = format!("{err:?} {err}");
    assert!(!text.contains("true") && !text.contains("false"), "{text}");
}

#[test]
fn iknp_over_loopback_tcp() {
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().to_string();
    let delta = test_delta(20);
    let n = 20_000;
    let choices = random_choices(n, 21);
    let messages = random_pairs(n, 22);
    let (x0, (t, chosen)) = thread::scope(|s| {
        let sender = s.spawn(|| {
            let mut ch = listener.accept(Duration::from_secs(10)).unwrap();
            let mut ot = IknpSender::setup(&mut ch, delta, &mut Prg::from_seed(Block(30))).unwrap();
            let x0 = ot.send_correlated(&mut ch, n).unwrap();
            ot.send_chosen(&mut ch, &messages).unwrap();
            x0
        });
        let receiver = s.spawn(|| {
            let mut ch = TcpChannel::connect(&addr, Duration::from_secs(10)).unwrap();
            let mut ot = IknpReceiver::setup(&mut ch, &mut Prg::from_seed(Block(31))).unwrap();
            let t = ot.receive_correlated(&mut ch, &choices).unwrap();
            let chosen = ot.receive_chosen(&mut ch, &choices).unwrap();
            (t, chosen)
        });
        (sender.join().unwrap(), receiver.join().unwrap())
    });
    for (j, (((&x, &t), &c), (&(m0, m1), &m))) in x0
        .iter()
        .zip(&t)
        .zip(&choices)
        .zip(messages.iter().zip(&chosen))
        .enumerate()
    {
        assert_eq!(t, x ^ delta.select(c), "OT {j}");
        assert_eq!(m, if c { m1 } else { m0 }, "OT {j}");
    }
}

#[test]
fn iknp_works_through_dyn_channel() {
    let delta = test_delta(23);
    let choices = random_choices(200, 24);
    let (x0, t) = run_pair(
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut s = IknpSender::setup(ch, delta, &mut Prg::from_seed(Block(1))).unwrap();
            s.send_correlated(ch, 200).unwrap()
        },
        |ch| {
            let ch: &mut dyn Channel = ch;
            let mut r = IknpReceiver::setup(ch, &mut Prg::from_seed(Block(2))).unwrap();
            r.receive_correlated(ch, &choices).unwrap()
        },
    );
    for ((&x, &t), &c) in x0.iter().zip(&t).zip(&choices) {
        assert_eq!(t, x ^ delta.select(c));
    }
}
