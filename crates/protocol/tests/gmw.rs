//! GMW against outside oracles: every Bristol circuit and known-answer vector in
//! ../shared/circuits, random circuits against cleartext evaluation (in windows, with slot
//! reuse and triple refills), what each party's bytes reveal, and the failure cases.

use std::time::{Duration, Instant};

use pgc_circuit::analysis::{assign_slots, levelize};
use pgc_circuit::bristol::read_circuit_file;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::random_circuit;
use pgc_circuit::testdata::{load_vectors, vector_file};
use pgc_circuit::value::{format_value, parse_value};
use pgc_circuit::{Circuit, Gate, GateSource, Layout};
use pgc_net::{Channel, LinkShape, MemoryChannel, NetError, RecordingChannel};
use pgc_protocol::{
    GmwConfig, LocalSecurity, Outcome, Party, ProtocolError, Visibility, run_evaluator, run_gmw,
    run_local_gmw, split_inputs,
};

type Results = (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
);

/// Both parties over an in-memory channel on two threads.
fn run_in_memory<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    values: &[Vec<bool>],
    config: &GmwConfig,
) -> Results {
    let (mut ca, mut cb) = MemoryChannel::pair();
    run_over(
        &mut ca, &mut cb, circuit, owners, visibility, values, config,
    )
}

fn run_over<S: GateSource>(
    ca: &mut (impl Channel + ?Sized),
    cb: &mut (impl Channel + ?Sized),
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    values: &[Vec<bool>],
    config: &GmwConfig,
) -> Results {
    let a = split_inputs(owners, values, Party::A);
    let b = split_inputs(owners, values, Party::B);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            run_gmw(
                ca,
                circuit,
                owners,
                visibility,
                Party::A,
                &a,
                config,
                &mut |_| {},
            )
        });
        let rb = run_gmw(
            cb,
            circuit,
            owners,
            visibility,
            Party::B,
            &b,
            config,
            &mut |_| {},
        );
        (h.join().unwrap(), rb)
    })
}

fn default_owners(n: usize) -> Vec<Party> {
    (0..n)
        .map(|i| if i == 0 { Party::A } else { Party::B })
        .collect()
}

fn all(layout: &Layout) -> Vec<Visibility> {
    pgc_protocol::all_visible(layout)
}

/// Small windows and a small triple pool: many windows and refills on small circuits.
fn tiny() -> GmwConfig {
    GmwConfig {
        window_gates: 97,
        send_ahead_bytes: 16 << 10,
        pool_triples: 50,
    }
}

#[test]
fn every_shared_circuit_and_vector() {
    let files = load_vectors();
    assert!(
        files.len() >= 58,
        "the full shared set, found {}",
        files.len()
    );
    let mut runs = 0;
    for f in &files {
        let raw = read_circuit_file(&f.path, Some(f.format)).unwrap();
        // As read (single assignment, stream order) and as `pgc run` streams it (levelized,
        // slots reused).
        let slotted = assign_slots(&levelize(&raw).unwrap());
        let owners = default_owners(raw.layout.input_widths.len());
        for (i, v) in f.vectors.iter().enumerate() {
            let c = if i % 2 == 0 { &raw } else { &slotted };
            let values: Vec<Vec<bool>> = v
                .inputs
                .iter()
                .zip(&c.layout.input_widths)
                .map(|(t, &w)| parse_value(t, w, f.bit_order).unwrap())
                .collect();
            let (a, b) = run_in_memory(c, &owners, &all(&c.layout), &values, &GmwConfig::default());
            let (a, b) = (a.unwrap(), b.unwrap());
            let got: Vec<String> = b
                .all_outputs()
                .unwrap()
                .iter()
                .map(|o| format_value(o, f.bit_order))
                .collect();
            assert_eq!(got, v.outputs, "{} on inputs {:?}", f.rel, v.inputs);
            assert_eq!(a.outputs, b.outputs, "{}", f.rel);
            let stats = b.stats.gmw.as_ref().unwrap();
            assert_eq!(stats.triples, c.and_count());
            runs += 1;
        }
    }
    assert!(runs >= 400, "only {runs} vectors ran");
}

#[test]
fn rounds_equal_the_and_depth_when_the_circuit_fits_one_window() {
    let f = vector_file("bristol_fashion/aes_128.txt");
    let c = read_circuit_file(&f.path, Some(f.format)).unwrap();
    let levels = pgc_circuit::analysis::stats(&c).and_levels;
    let owners = default_owners(2);
    let values = vec![vec![false; 128]; 2];
    let (_, b) = run_in_memory(&c, &owners, &all(&c.layout), &values, &GmwConfig::default());
    assert_eq!(b.unwrap().stats.gmw.unwrap().rounds, levels);
    assert_eq!(
        pgc_protocol::choice::circuit_shape(&c).and_depth,
        levels,
        "the streaming depth count agrees"
    );
}

fn random_values(layout: &Layout, seed: u64) -> Vec<Vec<bool>> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    layout
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
        .collect()
}

#[test]
fn random_circuits_match_cleartext_in_windows_with_refills_and_private_outputs() {
    for seed in 0..30u64 {
        let c = random_circuit(seed, 2 + (seed % 7) as u32, 50 + (seed as usize * 37) % 400);
        let slotted = assign_slots(&levelize(&c).unwrap());
        for (label, circuit, config) in [
            ("as generated", &c, GmwConfig::default()),
            ("slots, tiny windows", &slotted, tiny()),
            ("as generated, tiny windows", &c, tiny()),
        ] {
            let n = circuit.layout.input_widths.len();
            let owners: Vec<Party> = (0..n)
                .map(|i| {
                    if (i as u64 + seed).is_multiple_of(3) {
                        Party::A
                    } else {
                        Party::B
                    }
                })
                .collect();
            let outs = circuit.layout.output_widths.len();
            let visibility: Vec<Visibility> = (0..outs)
                .map(|j| match (j as u64 + seed) % 3 {
                    0 => Visibility::Both,
                    1 => Visibility::A,
                    _ => Visibility::B,
                })
                .collect();
            let values = random_values(&circuit.layout, seed);
            let flat: Vec<bool> = values.iter().flatten().copied().collect();
            let expect = eval_bits(circuit, &flat);
            let (a, b) = run_in_memory(circuit, &owners, &visibility, &values, &config);
            let (a, b) = (a.unwrap(), b.unwrap());
            let mut at = 0;
            for (j, &w) in circuit.layout.output_widths.iter().enumerate() {
                let want = &expect[at..at + w as usize];
                at += w as usize;
                for (party, o) in [(Party::A, &a), (Party::B, &b)] {
                    if pgc_protocol::sees(visibility[j], party) {
                        assert_eq!(
                            o.outputs[j].as_deref(),
                            Some(want),
                            "seed {seed} ({label}), output {j}, party {party:?}"
                        );
                    } else {
                        assert!(o.outputs[j].is_none(), "seed {seed}: output {j} hidden");
                    }
                }
            }
        }
    }
}

fn pack(bits: &[bool]) -> Vec<u8> {
    bits.chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (i, &x)| b | (x as u8) << i)
        })
        .collect()
}

/// A circuit of `width` independent 64-bit lanes, `depth` AND levels deep: lane values
/// x ← (x ∧ y) ⊕ z at each level, every level `width` ANDs wide.
fn layered(width: u32, depth: u32) -> Circuit {
    let inputs = 3 * width;
    let mut gates = Vec::new();
    let mut next = inputs;
    let mut x: Vec<u32> = (0..width).collect();
    for _ in 0..depth {
        for (i, xi) in x.iter_mut().enumerate() {
            let t = next;
            gates.push(Gate::and(*xi, width + i as u32, t));
            gates.push(Gate::xor(t, 2 * width + i as u32, t + 1));
            *xi = t + 1;
            next += 2;
        }
    }
    Circuit {
        layout: Layout {
            num_wires: next,
            input_widths: vec![width, 2 * width],
            output_widths: vec![width],
            output_wires: x,
        },
        gates,
    }
}

#[test]
fn transcripts_hold_no_intermediate_value_only_masked_shares() {
    // Every level's AND inputs, packed, are what a party would send if it opened its
    // values instead of masked shares: none may appear in either transcript (nor their
    // complement). With all-zero inputs every intermediate value is 0 or a fixed pattern,
    // so unmasked sends would also show as long runs of equal bytes.
    let c = layered(256, 12);
    let owners = vec![Party::A, Party::B];
    for zero in [true, false] {
        let values = if zero {
            vec![vec![false; 256], vec![false; 512]]
        } else {
            random_values(&c.layout, 99)
        };
        let flat: Vec<bool> = values.iter().flatten().copied().collect();
        // Cleartext wire values, level by level.
        let mut v = vec![false; c.layout.num_wires as usize];
        v[..flat.len()].copy_from_slice(&flat);
        let mut patterns = Vec::new();
        for level in c.gates.chunks(2 * 256) {
            let xs: Vec<bool> = level.iter().step_by(2).map(|g| v[g.a as usize]).collect();
            if xs.iter().any(|&b| b) {
                patterns.push(pack(&xs));
            }
            for g in level {
                v[g.out as usize] = match g.op {
                    pgc_circuit::Op::And => v[g.a as usize] & v[g.b as usize],
                    _ => v[g.a as usize] ^ v[g.b as usize],
                };
            }
        }
        let (ca, cb) = MemoryChannel::pair();
        let mut ta = RecordingChannel::new(ca);
        let mut tb = RecordingChannel::new(cb);
        let logs = [ta.log().clone(), tb.log().clone()];
        let (a, b) = run_over(
            &mut ta,
            &mut tb,
            &c,
            &owners,
            &all(&c.layout),
            &values,
            &GmwConfig::default(),
        );
        assert_eq!(a.unwrap().outputs, b.unwrap().outputs);
        for log in &logs {
            let t = log.lock().unwrap();
            assert!(t.len() > 12 * 64, "a real transcript");
            for p in &patterns {
                let complement: Vec<u8> = p.iter().map(|b| !b).collect();
                for q in [p, &complement] {
                    assert!(
                        !t.windows(q.len()).any(|w| w == q.as_slice()),
                        "an intermediate value appears in the clear"
                    );
                }
            }
            // The online rounds' bytes are uniform: about half the bits set, even for
            // all-zero inputs (the last 12 rounds × 128 bytes, before the done message).
            let tail = &t[t.len().saturating_sub(3000)..];
            let ones: u32 = tail.iter().map(|b| b.count_ones()).sum();
            let bits = 8 * tail.len() as u32;
            assert!(
                ones > bits * 2 / 5 && ones < bits * 3 / 5,
                "{ones} of {bits} bits set"
            );
        }
    }
}

#[test]
fn wide_levels_stream_over_loopback_tcp_without_deadlock() {
    // 2^17 ANDs per level: a 64 KiB round each way, in pieces, both parties sending at
    // once over real sockets (TLS), with and without a shaped link.
    let c = layered(1 << 17, 3);
    let owners = vec![Party::A, Party::B];
    let values = random_values(&c.layout, 5);
    let flat: Vec<bool> = values.iter().flatten().copied().collect();
    let expect = eval_bits(&c, &flat);
    let a = split_inputs(&owners, &values, Party::A);
    let b = split_inputs(&owners, &values, Party::B);
    for shape in [
        LinkShape::default(),
        LinkShape {
            rate_bits_per_sec: None,
            latency: Duration::from_millis(2),
        },
    ] {
        let (oa, ob) = run_local_gmw(
            &c,
            &owners,
            &all(&c.layout),
            &a,
            &b,
            &GmwConfig::default(),
            shape,
            Duration::from_secs(30),
            LocalSecurity::Tls,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(ob.all_outputs().unwrap().concat(), expect);
        assert_eq!(oa.outputs, ob.outputs);
        assert_eq!(ob.stats.gmw.unwrap().rounds, 3);
    }
}

#[test]
fn a_yao_peer_is_refused_at_the_handshake() {
    let f = vector_file("bristol_fashion/adder64.txt");
    let c = read_circuit_file(&f.path, Some(f.format)).unwrap();
    let owners = [Party::A, Party::B];
    let (mut ca, mut cb) = MemoryChannel::pair();
    let zero = vec![vec![false; 64]];
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            run_gmw(
                &mut ca,
                &c,
                &owners,
                &all(&c.layout),
                Party::A,
                &zero,
                &GmwConfig::default(),
                &mut |_| {},
            )
        });
        let rb = run_evaluator(&mut cb, &c, &owners, &zero, &mut |_| {});
        (h.join().unwrap(), rb)
    });
    for r in [ra.map(|_| ()), rb.map(|_| ())] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("different protocols"), "{e}");
    }
}

/// A channel that fails (as a vanished peer does) after `budget` bytes were sent.
struct Vanishing<C> {
    inner: Option<C>,
    budget: usize,
}

impl<C: Channel> Channel for Vanishing<C> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        if bytes.len() > self.budget {
            self.inner = None; // drop: the peer sees the connection close
            return Err(NetError::Closed);
        }
        self.budget -= bytes.len();
        self.inner.as_mut().ok_or(NetError::Closed)?.send(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        self.inner.as_mut().ok_or(NetError::Closed)?.recv(buf)
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.as_mut().ok_or(NetError::Closed)?.flush()
    }
    fn counts(&self) -> pgc_net::ByteCounts {
        self.inner.as_ref().map(|c| c.counts()).unwrap_or_default()
    }
}

#[test]
fn a_peer_vanishing_in_either_phase_stops_both_cleanly() {
    let c = layered(512, 40);
    let owners = vec![Party::A, Party::B];
    let values = random_values(&c.layout, 3);
    // Find the byte counts of a whole run: setup is the bulk, the online rounds the rest.
    let (ok, _) = run_in_memory(&c, &owners, &all(&c.layout), &values, &GmwConfig::default());
    let stats = ok.unwrap().stats;
    let setup = stats.gmw.as_ref().unwrap().setup_bytes_sent as usize;
    let total = stats.bytes_sent as usize;
    assert!(total > setup + 40 * 128, "online rounds follow the setup");
    for (phase, budget) in [("setup", setup / 2), ("online", (setup + total) / 2)] {
        for vanishing in [Party::A, Party::B] {
            let (ca, cb) = MemoryChannel::pair();
            let mut ca = Vanishing {
                inner: Some(ca),
                budget: if vanishing == Party::A {
                    budget
                } else {
                    usize::MAX
                },
            };
            let mut cb = Vanishing {
                inner: Some(cb),
                budget: if vanishing == Party::B {
                    budget
                } else {
                    usize::MAX
                },
            };
            let start = Instant::now();
            let (a, b) = run_over(
                &mut ca,
                &mut cb,
                &c,
                &owners,
                &all(&c.layout),
                &values,
                &GmwConfig::default(),
            );
            assert!(
                a.is_err() && b.is_err(),
                "{phase}, {vanishing:?} vanishes: both fail"
            );
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{phase}: the run ended promptly"
            );
        }
    }
}
