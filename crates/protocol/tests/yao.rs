//! The semi-honest Yao protocol against outside oracles: every Bristol circuit and
//! known-answer vector in ../shared/circuits, over the in-memory channel and over TCP, plus
//! random circuits against cleartext evaluation and the failure cases a user can run into.

use std::io::Write;
use std::time::{Duration, Instant};

use pgc_circuit::analysis::{assign_slots, levelize};
use pgc_circuit::bristol::read_circuit_file;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::random_circuit;
use pgc_circuit::testdata::{load_vectors, vector_file};
use pgc_circuit::value::{format_value, parse_value};
use pgc_circuit::{Circuit, GateSource};
use pgc_net::{Channel, MemoryChannel, TcpChannel};
use pgc_protocol::{
    LocalTcpOptions, Outcome, Party, ProtocolError, Visibility, run_evaluator,
    run_evaluator_with_visibility, run_garbler, run_garbler_with_visibility, run_local_tcp,
    run_local_tcp_with, split_inputs,
};

/// Runs both parties over an in-memory channel on two threads, every output to both.
fn run_in_memory<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    values: &[Vec<bool>],
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
) {
    let all = pgc_protocol::yao::all_visible(circuit.layout());
    run_with_visibility(circuit, owners, &all, &all, values)
}

fn default_owners(n: usize) -> Vec<Party> {
    (0..n)
        .map(|i| if i == 0 { Party::A } else { Party::B })
        .collect()
}

fn prepared(c: &Circuit) -> Circuit {
    assign_slots(&levelize(c).unwrap())
}

#[test]
fn every_shared_circuit_and_vector_over_memory_channel() {
    let files = load_vectors();
    assert!(
        files.len() >= 58,
        "expected the full shared circuit set, found {}",
        files.len()
    );
    let mut runs = 0;
    for f in &files {
        let c = prepared(&read_circuit_file(&f.path, Some(f.format)).unwrap());
        let owners = default_owners(c.layout.input_widths.len());
        for v in &f.vectors {
            let values: Vec<Vec<bool>> = v
                .inputs
                .iter()
                .zip(&c.layout.input_widths)
                .map(|(t, &w)| parse_value(t, w, f.bit_order).unwrap())
                .collect();
            let (a, b) = run_in_memory(&c, &owners, &values);
            let (a, b) = (a.unwrap(), b.unwrap());
            let got: Vec<String> = b
                .all_outputs()
                .unwrap()
                .iter()
                .map(|o| format_value(o, f.bit_order))
                .collect();
            assert_eq!(got, v.outputs, "{} on inputs {:?}", f.rel, v.inputs);
            assert_eq!(
                a.outputs, b.outputs,
                "{}: both parties learn the same outputs",
                f.rel
            );
            runs += 1;
        }
    }
    assert!(runs >= 400, "only {runs} vectors ran");
}

#[test]
fn shared_circuits_over_loopback_tcp() {
    for f in load_vectors().iter().filter(|f| {
        [
            "bristol_fashion/aes_128.txt",
            "bristol_fashion_mand/sha256.txt",
            "bristol_format/AES-non-expanded.txt",
            "bristol_fashion/ModAdd512.txt",
        ]
        .contains(&f.rel.as_str())
    }) {
        let c = prepared(&read_circuit_file(&f.path, Some(f.format)).unwrap());
        let owners = default_owners(c.layout.input_widths.len());
        let v = &f.vectors[0];
        let values: Vec<Vec<bool>> = v
            .inputs
            .iter()
            .zip(&c.layout.input_widths)
            .map(|(t, &w)| parse_value(t, w, f.bit_order).unwrap())
            .collect();
        let a = split_inputs(&owners, &values, Party::A);
        let b = split_inputs(&owners, &values, Party::B);
        let (oa, ob) =
            run_local_tcp(&c, &owners, &a, &b, Duration::from_secs(30), &mut |_| {}).unwrap();
        let got: Vec<String> = ob
            .all_outputs()
            .unwrap()
            .iter()
            .map(|o| format_value(o, f.bit_order))
            .collect();
        assert_eq!(got, v.outputs, "{}", f.rel);
        assert_eq!(oa.outputs, ob.outputs);
        assert!(
            ob.stats.bytes_received >= 32 * c.and_count(),
            "tables were streamed"
        );
    }
}

#[test]
fn random_circuits_match_cleartext_evaluation() {
    for seed in 0..40u64 {
        let c = random_circuit(seed, 2 + (seed % 7) as u32, 50 + (seed as usize * 37) % 400);
        for (label, circuit) in [
            ("as generated", c.clone()),
            ("levelized+slots", prepared(&c)),
        ] {
            let n_values = circuit.layout.input_widths.len();
            // Alternate ownership patterns, including all inputs to one party.
            let owners: Vec<Party> = (0..n_values)
                .map(|i| {
                    if (i as u64 + seed).is_multiple_of(3) {
                        Party::A
                    } else {
                        Party::B
                    }
                })
                .collect();
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let values: Vec<Vec<bool>> = circuit
                .layout
                .input_widths
                .iter()
                .map(|&w| {
                    (0..w)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            x & 1 == 1
                        })
                        .collect()
                })
                .collect();
            let all: Vec<bool> = values.iter().flatten().copied().collect();
            let expect = eval_bits(&circuit, &all);
            let (a, b) = run_in_memory(&circuit, &owners, &values);
            let got: Vec<bool> = b.unwrap().all_outputs().unwrap().concat();
            assert_eq!(got, expect, "seed {seed} ({label})");
            assert_eq!(a.unwrap().all_outputs().unwrap().concat(), expect);
        }
    }
}

/// A shared Bristol file, levelized and slotted as `pgc run` prepares it.
fn shared(rel: &str) -> Circuit {
    let f = vector_file(rel);
    prepared(&read_circuit_file(&f.path, Some(f.format)).unwrap())
}

fn adder() -> Circuit {
    shared("bristol_fashion/adder64.txt")
}

#[test]
fn different_circuits_are_refused_at_the_handshake_on_both_sides() {
    let add = adder();
    let sub = shared("bristol_fashion/sub64.txt");
    let owners = [Party::A, Party::B];
    let (mut ca, mut cb) = MemoryChannel::pair();
    let zero = vec![vec![false; 64]];
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| run_garbler(&mut ca, &add, &owners, &zero, &mut |_| {}));
        let rb = run_evaluator(&mut cb, &sub, &owners, &zero, &mut |_| {});
        (h.join().unwrap(), rb)
    });
    for r in [ra, rb] {
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("handshake failed") && e.contains("circuits differ"),
            "{e}"
        );
    }
}

#[test]
fn both_parties_as_a_is_refused() {
    let add = adder();
    let owners = [Party::A, Party::B];
    let (mut ca, mut cb) = MemoryChannel::pair();
    let zero = vec![vec![false; 64]];
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| run_garbler(&mut ca, &add, &owners, &zero, &mut |_| {}));
        let rb = run_garbler(&mut cb, &add, &owners, &zero, &mut |_| {});
        (h.join().unwrap(), rb)
    });
    for r in [ra, rb] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("both parties chose to be party A"), "{e}");
    }
}

#[test]
fn wrong_input_count_or_width_is_refused_before_sending_anything() {
    let add = adder();
    let owners = [Party::A, Party::B];
    let (mut ca, _cb) = MemoryChannel::pair();
    let e = run_garbler(&mut ca, &add, &owners, &[], &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("party A owns 1 input value(s)") && e.contains("0 were given"),
        "{e}"
    );
    let e = run_garbler(&mut ca, &add, &owners, &[vec![true; 63]], &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("64 bits wide") && e.contains("63 bits"), "{e}");
    assert_eq!(
        ca.counts().sent,
        0,
        "nothing may be sent before the inputs are checked"
    );
}

#[test]
fn peer_disconnecting_mid_protocol_ends_the_run_quickly() {
    // The garbler's peer completes the handshake, then vanishes.
    let add = adder();
    let owners = [Party::A, Party::B];
    let (mut ca, mut cb) = MemoryChannel::pair();
    let start = Instant::now();
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| run_garbler(&mut ca, &add, &owners, &[vec![true; 64]], &mut |_| {}));
        let hello = pgc_protocol::Hello {
            version: pgc_protocol::PROTOCOL_VERSION,
            party: Party::B,
            fingerprint: add.fingerprint(),
            input_owners: owners.to_vec(),
            input_widths: add.layout.input_widths.clone(),
            output_widths: add.layout.output_widths.clone(),
            output_visibility: pgc_protocol::all_visible(&add.layout),
            value_format: add.value_format(),
            security: pgc_protocol::Security::SemiHonest,
            protocol: pgc_protocol::ProtocolChoice::Yao,
            garbling: Default::default(),
            cluster_ranks: 0,
            form: pgc_circuit::CircuitForm::Gates,
        };
        cb.send_frame(&hello.to_bytes()).unwrap();
        cb.flush().unwrap();
        let _ = cb.recv_frame(1 << 20);
        drop(cb);
        h.join().unwrap()
    });
    let e = r.unwrap_err().to_string();
    assert!(e.contains("closed"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn garbage_on_the_socket_is_refused_with_a_clear_error() {
    let add = adder();
    let owners = [Party::A, Party::B];
    let listener = TcpChannel::listen("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut ch = listener.accept(Duration::from_secs(10)).unwrap();
            ch.set_timeout(Some(Duration::from_secs(10))).unwrap();
            run_garbler(&mut ch, &add, &owners, &[vec![false; 64]], &mut |_| {})
        });
        let mut raw = std::net::TcpStream::connect(addr).unwrap();
        raw.write_all(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n")
            .unwrap();
        let r = h.join().unwrap();
        drop(raw);
        r
    });
    let e = r.unwrap_err().to_string();
    assert!(e.contains("not a pgc hello"), "{e}");
}

/// Both parties over an in-memory channel with per-output visibility; each side may be
/// given its own visibility list (to test disagreement).
fn run_with_visibility<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    vis_a: &[Visibility],
    vis_b: &[Visibility],
    values: &[Vec<bool>],
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
) {
    let (mut ca, mut cb) = MemoryChannel::pair();
    let a = split_inputs(owners, values, Party::A);
    let b = split_inputs(owners, values, Party::B);
    std::thread::scope(|s| {
        let ga = s.spawn(move || {
            run_garbler_with_visibility(&mut ca, circuit, owners, vis_a, &a, &mut |_| {})
        });
        let rb = run_evaluator_with_visibility(&mut cb, circuit, owners, vis_b, &b, &mut |_| {});
        drop(cb);
        (ga.join().unwrap(), rb)
    })
}

/// x (A, 8 bits), y (B, 8 bits) -> [x + y, x & y, x ^ y, !x], levelized and slotted.
fn four_outputs() -> Circuit {
    let (mut b, inputs) = pgc_circuit::Builder::new(&[8, 8]);
    let (x, y) = (&inputs[0], &inputs[1]);
    let sum = b.add(x, y);
    let and = b.and_word(x, y);
    let xor = b.xor_word(x, y);
    let not = b.not_word(x);
    for o in [&sum, &and, &xor, &not] {
        b.output(o);
    }
    prepared(&b.finish())
}

fn byte(v: u8) -> Vec<bool> {
    (0..8).map(|i| v >> i & 1 == 1).collect()
}

#[test]
fn outputs_reach_only_the_parties_that_may_see_them() {
    use Visibility::{A, B, Both};
    let c = four_outputs();
    let owners = [Party::A, Party::B];
    for (x, y) in [(0u8, 0u8), (200, 100), (0x5a, 0xc3), (255, 1)] {
        let expect = [byte(x.wrapping_add(y)), byte(x & y), byte(x ^ y), byte(!x)];
        for vis in [
            [Both, Both, Both, Both],
            [Both, A, B, A],
            [A, A, A, A],
            [B, B, B, B],
            [B, Both, A, B],
        ] {
            let (ra, rb) = run_with_visibility(&c, &owners, &vis, &vis, &[byte(x), byte(y)]);
            let (oa, ob) = (ra.unwrap(), rb.unwrap());
            for (j, v) in vis.iter().enumerate() {
                let (want_a, want_b) = match v {
                    Both => (true, true),
                    A => (true, false),
                    B => (false, true),
                };
                let shown = |o: &Outcome| o.outputs[j].clone();
                assert_eq!(
                    shown(&oa),
                    want_a.then(|| expect[j].clone()),
                    "A, output {j}, {vis:?}"
                );
                assert_eq!(
                    shown(&ob),
                    want_b.then(|| expect[j].clone()),
                    "B, output {j}, {vis:?}"
                );
            }
            assert_eq!(oa.all_outputs().is_some(), !vis.contains(&B));
            assert_eq!(ob.all_outputs().is_some(), !vis.contains(&A));
        }
    }
}

#[test]
fn nothing_is_sent_for_outputs_the_receiver_may_not_see() {
    use Visibility::{A, B, Both};
    let c = four_outputs();
    let owners = [Party::A, Party::B];
    let values = [byte(7), byte(9)];
    let sent = |vis: [Visibility; 4]| {
        let (ra, rb) = run_with_visibility(&c, &owners, &vis, &vis, &values);
        (ra.unwrap().stats.bytes_sent, rb.unwrap().stats.bytes_sent)
    };
    let (a_both, b_both) = sent([Both; 4]);
    let (a_only_a, b_only_a) = sent([A; 4]);
    let (a_only_b, b_only_b) = sent([B; 4]);
    // 32 output wires = 4 bytes of decoding bits (A -> B) or permute bits (B -> A).
    assert_eq!(
        a_only_a,
        a_both - 4,
        "A sends no decoding bits for A-only outputs"
    );
    assert_eq!(
        b_only_a, b_both,
        "B sends the permute bits of A-only outputs"
    );
    assert_eq!(
        a_only_b, a_both,
        "A sends the decoding bits of B-only outputs"
    );
    assert_eq!(
        b_only_b,
        b_both - 4,
        "B sends nothing back for B-only outputs"
    );
}

#[test]
fn disagreeing_on_output_visibility_is_refused_on_both_sides() {
    use Visibility::{A, B, Both};
    let c = four_outputs();
    let owners = [Party::A, Party::B];
    let (ra, rb) = run_with_visibility(
        &c,
        &owners,
        &[Both, A, B, Both],
        &[Both, B, B, Both],
        &[byte(1), byte(2)],
    );
    for r in [ra, rb] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("disagree on who learns which output"), "{e}");
    }
    let (mut ca, _cb) = MemoryChannel::pair();
    let e = run_garbler_with_visibility(&mut ca, &c, &owners, &[Both], &[byte(1)], &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("4 output value(s) but a visibility was given for 1"),
        "{e}"
    );
    assert_eq!(ca.counts().sent, 0);
}

#[test]
fn visibility_over_loopback_tcp() {
    use Visibility::{A, B, Both};
    let c = four_outputs();
    let owners = [Party::A, Party::B];
    let (oa, ob) = run_local_tcp_with(
        &c,
        &owners,
        &[A, B, Both, A],
        &[byte(3)],
        &[byte(5)],
        LocalTcpOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        oa.outputs,
        [Some(byte(8)), None, Some(byte(6)), Some(byte(!3))]
    );
    assert_eq!(ob.outputs, [None, Some(byte(1)), Some(byte(6)), None]);
}

/// The sequential protocol over loopback TLS (the default) and over plaintext, which stays
/// available to compare: both compute the adder.
#[test]
fn sequential_protocol_over_tls_and_plaintext() {
    use pgc_protocol::{LocalSecurity, all_visible};
    let c = adder();
    let owners = default_owners(c.layout.input_widths.len());
    let vis = all_visible(&c.layout);
    let bits = |v: u64| (0..64).map(|i| (v >> i) & 1 == 1).collect::<Vec<bool>>();
    for security in [LocalSecurity::Tls, LocalSecurity::Plaintext] {
        let options = LocalTcpOptions {
            channel: security,
            ..LocalTcpOptions::default()
        };
        let (oa, ob) = run_local_tcp_with(
            &c,
            &owners,
            &vis,
            &[bits(40_000_000_000)],
            &[bits(2_000_000_001)],
            options,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(oa.outputs, ob.outputs, "{security:?}");
        assert_eq!(
            ob.all_outputs().unwrap()[0],
            bits(42_000_000_001),
            "{security:?}"
        );
    }
}
