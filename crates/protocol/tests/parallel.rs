//! The parallel protocol (FGP, CGP, auto, IPP) against cleartext evaluation, over in-memory
//! and TCP streams, for several thread counts; and what crosses the wire under IPP.

mod common;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use pgc_circuit::generate::SplitMix64;
use pgc_circuit::{ParallelCircuit, Visibility, eval_bits};
use pgc_net::{Channel, MemoryChannel};
use pgc_protocol::parallel::{
    MemoryStreams, ParallelConfig, ParallelMode, StreamOpener, run_parallel,
};
use pgc_protocol::{Outcome, Party, ProtocolError};

use common::{mixed_circuit, random_inputs};

fn owners(n: usize) -> Vec<Party> {
    let mut o = vec![Party::A; n];
    o.extend(vec![Party::B; n]);
    o
}

fn run_memory(
    pc: &ParallelCircuit,
    owners: &[Party],
    a_in: &[Vec<bool>],
    b_in: &[Vec<bool>],
    config: ParallelConfig,
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
) {
    run_memory_with(pc, owners, a_in, b_in, config, |streams| streams)
}

/// [`run_memory`], A's worker streams opened through `a_streams`. When B fails, its
/// channels close at once (as its process would exit), so A is not left waiting on them.
fn run_memory_with<O: StreamOpener>(
    pc: &ParallelCircuit,
    owners: &[Party],
    a_in: &[Vec<bool>],
    b_in: &[Vec<bool>],
    config: ParallelConfig,
    a_streams: impl FnOnce(MemoryStreams) -> O,
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
) {
    let timeout = Duration::from_secs(20);
    let (mut ca, mut cb) = MemoryChannel::pair();
    ca.set_timeout(Some(timeout));
    cb.set_timeout(Some(timeout));
    let (oa, mut ob) = MemoryStreams::pair(timeout);
    let mut oa = a_streams(oa);
    let vis = vec![Visibility::Both; pc.layout.output_widths.len()];
    let (pa, pb) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        let ha = s.spawn(|| {
            run_parallel(
                Party::A,
                &mut ca,
                &mut oa,
                pc,
                owners,
                &vis,
                a_in,
                &config,
                &pa,
            )
        });
        let rb = run_parallel(
            Party::B,
            &mut cb,
            &mut ob,
            pc,
            owners,
            &vis,
            b_in,
            &config,
            &pb,
        );
        if rb.is_err() {
            drop((cb, ob));
        }
        (ha.join().unwrap(), rb)
    })
}

#[test]
fn every_mode_and_thread_count_matches_cleartext() {
    let n = 6;
    let w = 8;
    let pc = mixed_circuit(n, w);
    assert_eq!(pc.region_info().len(), 2);
    let owners = owners(n);
    let mut rng = SplitMix64::new(11);
    for mode in [
        ParallelMode::None,
        ParallelMode::Fgp,
        ParallelMode::Cgp,
        ParallelMode::Auto,
        ParallelMode::Ipp,
    ] {
        for threads in [1, 2, 3, 8] {
            let a_in = random_inputs(&mut rng, n, w);
            let b_in = random_inputs(&mut rng, n, w);
            let all: Vec<bool> = a_in.iter().chain(&b_in).flatten().copied().collect();
            let expect = eval_bits(&pc, &all);
            let config = ParallelConfig {
                mode,
                threads,
                tau: 2,
            };
            let (ra, rb) = run_memory(&pc, &owners, &a_in, &b_in, config);
            let (oa, ob) = (ra.unwrap(), rb.unwrap());
            let got_a: Vec<bool> = oa.all_outputs().unwrap().concat();
            let got_b: Vec<bool> = ob.all_outputs().unwrap().concat();
            assert_eq!(got_a, expect, "{mode:?} with {threads} threads (A)");
            assert_eq!(got_b, expect, "{mode:?} with {threads} threads (B)");
        }
    }
}

#[test]
fn mismatched_modes_are_refused_on_both_sides() {
    let pc = mixed_circuit(2, 4);
    let owners = owners(2);
    let timeout = Duration::from_secs(10);
    let (mut ca, mut cb) = MemoryChannel::pair();
    ca.set_timeout(Some(timeout));
    cb.set_timeout(Some(timeout));
    let (mut oa, mut ob) = MemoryStreams::pair(timeout);
    let vis = vec![Visibility::Both; 2];
    let inputs = vec![vec![false; 4]; 2];
    let (pa, pb) = (AtomicU64::new(0), AtomicU64::new(0));
    let (ra, rb) = std::thread::scope(|s| {
        let ha = s.spawn(|| {
            let config = ParallelConfig {
                mode: ParallelMode::Ipp,
                threads: 2,
                tau: 8,
            };
            run_parallel(
                Party::A,
                &mut ca,
                &mut oa,
                &pc,
                &owners,
                &vis,
                &inputs,
                &config,
                &pa,
            )
        });
        let config = ParallelConfig {
            mode: ParallelMode::Cgp,
            threads: 2,
            tau: 8,
        };
        let rb = run_parallel(
            Party::B,
            &mut cb,
            &mut ob,
            &pc,
            &owners,
            &vis,
            &inputs,
            &config,
            &pb,
        );
        (ha.join().unwrap(), rb)
    });
    for r in [ra, rb] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("--parallel"), "{e}");
    }
}

type Log = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// A channel that records every byte this party sends (if `log`) and fails once it has
/// received `recv_budget` bytes (a peer vanishing mid-run).
struct Tap<C: Channel> {
    inner: C,
    log: Option<Log>,
    recv_budget: usize,
}

impl<C: Channel> Channel for Tap<C> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), pgc_net::NetError> {
        if let Some(log) = &self.log {
            log.lock().unwrap().extend_from_slice(bytes);
        }
        self.inner.send(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), pgc_net::NetError> {
        if buf.len() > self.recv_budget {
            return Err(pgc_net::NetError::Closed);
        }
        self.recv_budget -= buf.len();
        self.inner.recv(buf)
    }
    fn flush(&mut self) -> Result<(), pgc_net::NetError> {
        self.inner.flush()
    }
    fn counts(&self) -> pgc_net::ByteCounts {
        self.inner.counts()
    }
}

/// Worker streams wrapped in [`Tap`]s with the same log and budget.
struct TapStreams {
    inner: MemoryStreams,
    log: Option<Log>,
    recv_budget: usize,
}

impl pgc_protocol::parallel::StreamOpener for TapStreams {
    fn open(
        &mut self,
        n: usize,
        token: [u8; 16],
    ) -> Result<Vec<Box<dyn Channel>>, pgc_net::NetError> {
        Ok(self
            .inner
            .open(n, token)?
            .into_iter()
            .map(|s| {
                Box::new(Tap {
                    inner: s,
                    log: self.log.clone(),
                    recv_budget: self.recv_budget,
                }) as Box<dyn Channel>
            })
            .collect())
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

#[test]
fn ipp_sends_no_region_boundary_value_in_the_clear() {
    // Both regions' outputs cross between the parties' labels (B garbles every odd
    // instance); with the naive "open the circuit" switch these values would be sent as
    // plain bits. Their packed bits (24 bytes) must appear nowhere in either party's
    // transcript, nor their complement.
    let (n, w) = (12, 16);
    let pc = mixed_circuit(n, w);
    let owners = owners(n);
    let mut rng = SplitMix64::new(5);
    let a_in = random_inputs(&mut rng, n, w);
    let b_in = random_inputs(&mut rng, n, w);
    // The boundary values, computed in cleartext from the flat circuit's instance outputs.
    let flat_inputs: Vec<bool> = a_in.iter().chain(&b_in).flatten().copied().collect();
    let values = boundary_values(&pc, &flat_inputs);
    assert!(
        values.len() >= 2 * 6 * w as usize,
        "odd-instance outputs of both regions"
    );
    let pattern = pack(&values);
    let complement: Vec<u8> = pattern.iter().map(|b| !b).collect();

    let timeout = Duration::from_secs(20);
    let (ca, cb) = MemoryChannel::pair();
    let logs: Vec<_> = (0..2)
        .map(|_| std::sync::Arc::new(std::sync::Mutex::new(Vec::new())))
        .collect();
    let mut ra = Tap {
        inner: ca,
        log: Some(logs[0].clone()),
        recv_budget: usize::MAX,
    };
    let mut rb = Tap {
        inner: cb,
        log: Some(logs[1].clone()),
        recv_budget: usize::MAX,
    };
    ra.inner.set_timeout(Some(timeout));
    rb.inner.set_timeout(Some(timeout));
    let (ma, mb) = MemoryStreams::pair(timeout);
    let mut oa = TapStreams {
        inner: ma,
        log: Some(logs[0].clone()),
        recv_budget: usize::MAX,
    };
    let mut ob = TapStreams {
        inner: mb,
        log: Some(logs[1].clone()),
        recv_budget: usize::MAX,
    };
    let vis = vec![Visibility::Both; 2];
    let config = ParallelConfig {
        mode: ParallelMode::Ipp,
        threads: 2,
        tau: 8,
    };
    let (pa, pb) = (AtomicU64::new(0), AtomicU64::new(0));
    let (oa_out, ob_out) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            run_parallel(
                Party::A,
                &mut ra,
                &mut oa,
                &pc,
                &owners,
                &vis,
                &a_in,
                &config,
                &pa,
            )
        });
        let b = run_parallel(
            Party::B,
            &mut rb,
            &mut ob,
            &pc,
            &owners,
            &vis,
            &b_in,
            &config,
            &pb,
        );
        (h.join().unwrap().unwrap(), b.unwrap())
    });
    assert_eq!(oa_out.all_outputs(), ob_out.all_outputs());
    for log in &logs {
        let t = log.lock().unwrap();
        assert!(t.len() > 10_000, "a real transcript");
        for p in [&pattern, &complement] {
            assert!(
                !t.windows(p.len()).any(|win| win == p.as_slice()),
                "a boundary value appears in the clear"
            );
        }
    }
}

/// The cleartext values of the outputs of every odd instance (B's under IPP), in order.
fn boundary_values(pc: &ParallelCircuit, inputs: &[bool]) -> Vec<bool> {
    use pgc_circuit::Phase;
    // Evaluate the global wires phase by phase.
    let mut v = vec![false; pc.layout.num_wires as usize];
    v[..inputs.len()].copy_from_slice(inputs);
    let mut out = Vec::new();
    let gate = |v: &mut Vec<bool>, g: &pgc_circuit::Gate| {
        use pgc_circuit::Op;
        let x = match g.op {
            Op::Xor => v[g.a as usize] ^ v[g.b as usize],
            Op::And => v[g.a as usize] & v[g.b as usize],
            Op::Inv => !v[g.a as usize],
            Op::Copy => v[g.a as usize],
            Op::Const => g.a == 1,
        };
        v[g.out as usize] = x;
    };
    for phase in &pc.phases {
        match phase {
            Phase::Sequential(gates) => gates.iter().for_each(|g| gate(&mut v, g)),
            Phase::Region(r) => {
                for (k, inst) in r.instances.iter().enumerate() {
                    let t = &pc.templates[inst.template as usize];
                    let mut local = vec![false; t.num_wires() as usize];
                    for (i, &w) in inst.inputs.iter().enumerate() {
                        local[i] = v[w as usize];
                    }
                    t.gates.iter().for_each(|g| gate(&mut local, g));
                    for (&lw, &gw) in t.outputs.iter().zip(&inst.outputs) {
                        v[gw as usize] = local[lw as usize];
                        if k % 2 == 1 {
                            out.push(local[lw as usize]);
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn a_peer_vanishing_mid_run_stops_both_parties_with_errors() {
    let (n, w) = (8, 16);
    let pc = mixed_circuit(n, w);
    let owners = owners(n);
    let inputs = vec![vec![true; w as usize]; n];
    for mode in [ParallelMode::Cgp, ParallelMode::Fgp, ParallelMode::Ipp] {
        let timeout = Duration::from_secs(20);
        let (mut ca, mut cb) = MemoryChannel::pair();
        ca.set_timeout(Some(timeout));
        cb.set_timeout(Some(timeout));
        let (ma, mb) = MemoryStreams::pair(timeout);
        let mut oa = ma;
        // B's worker streams break after a few kilobytes; its threads stop and drop their
        // streams, so A's threads see the peer gone.
        let mut ob = TapStreams {
            inner: mb,
            log: None,
            recv_budget: 4096,
        };
        let vis = vec![Visibility::Both; 2];
        let config = ParallelConfig {
            mode,
            threads: 3,
            tau: 2,
        };
        let (pa, pb) = (AtomicU64::new(0), AtomicU64::new(0));
        let start = std::time::Instant::now();
        let (ra, rb) = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let r = run_parallel(
                    Party::A,
                    &mut ca,
                    &mut oa,
                    &pc,
                    &owners,
                    &vis,
                    &inputs,
                    &config,
                    &pa,
                );
                drop(ca);
                r
            });
            let b = run_parallel(
                Party::B,
                &mut cb,
                &mut ob,
                &pc,
                &owners,
                &vis,
                &inputs,
                &config,
                &pb,
            );
            drop(cb);
            (h.join().unwrap(), b)
        });
        assert!(rb.is_err(), "{mode:?}: B must fail");
        assert!(ra.is_err(), "{mode:?}: A must fail too");
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "{mode:?}: no waiting for timeouts"
        );
    }
}

/// The parallel protocol over loopback TCP, main channel and every stream through TLS with
/// pinned keys (the default) and, to compare, plaintext.
#[test]
fn parallel_modes_over_tls_and_plaintext_streams_match_cleartext() {
    use pgc_net::LinkShape;
    use pgc_protocol::{LocalSecurity, run_local_parallel_secured};
    let (n, w) = (4, 8);
    let pc = mixed_circuit(n, w);
    let owners = owners(n);
    let vis = vec![Visibility::Both; pc.layout.output_widths.len()];
    let mut rng = SplitMix64::new(29);
    for security in [LocalSecurity::Tls, LocalSecurity::Plaintext] {
        for mode in [ParallelMode::Cgp, ParallelMode::Ipp] {
            let a_in = random_inputs(&mut rng, n, w);
            let b_in = random_inputs(&mut rng, n, w);
            let all: Vec<bool> = a_in.iter().chain(&b_in).flatten().copied().collect();
            let config = ParallelConfig {
                mode,
                threads: 2,
                tau: 2,
            };
            let (oa, ob) = run_local_parallel_secured(
                &pc,
                &owners,
                &vis,
                &a_in,
                &b_in,
                &config,
                LinkShape::default(),
                Duration::from_secs(20),
                security,
                &AtomicU64::new(0),
            )
            .unwrap();
            let expect = eval_bits(&pc, &all);
            assert_eq!(
                oa.all_outputs().unwrap().concat(),
                expect,
                "{security:?} {mode:?}"
            );
            assert_eq!(
                ob.all_outputs().unwrap().concat(),
                expect,
                "{security:?} {mode:?}"
            );
        }
    }
}

/// A worker stream of a garbler that rewrites the first chunk header it sends to name a
/// chunk far beyond any region (what a modified garbler could do): the payload of every
/// frame is scanned for the header tag, 16-byte block by block.
struct RenamingFirstChunk {
    inner: Box<dyn Channel>,
    done: bool,
}

impl Channel for RenamingFirstChunk {
    fn send(&mut self, bytes: &[u8]) -> Result<(), pgc_net::NetError> {
        self.inner.send(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), pgc_net::NetError> {
        self.inner.recv(buf)
    }
    fn flush(&mut self) -> Result<(), pgc_net::NetError> {
        self.inner.flush()
    }
    fn counts(&self) -> pgc_net::ByteCounts {
        self.inner.counts()
    }
    fn send_frame(&mut self, payload: &[u8]) -> Result<(), pgc_net::NetError> {
        let mut payload = payload.to_vec();
        if !self.done {
            for block in payload.chunks_exact_mut(16) {
                // "pgc-chnk" big-endian in the high 64 bits of a little-endian block.
                let high = u64::from_le_bytes(block[8..].try_into().unwrap());
                let low = u64::from_le_bytes(block[..8].try_into().unwrap());
                if high == u64::from_be_bytes(*b"pgc-chnk") && low != u64::MAX {
                    block[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                    self.done = true;
                    break;
                }
            }
        }
        self.inner.send_frame(&payload)
    }
}

/// Opens the garbler's worker streams, each renaming the first chunk it carries (which
/// thread claims which chunk depends on timing; some thread claims some chunk).
struct TamperingOpener(MemoryStreams);

impl StreamOpener for TamperingOpener {
    fn open(
        &mut self,
        n: usize,
        token: [u8; 16],
    ) -> Result<Vec<Box<dyn Channel>>, pgc_net::NetError> {
        let streams = self.0.open(n, token)?;
        Ok(streams
            .into_iter()
            .map(|inner| Box::new(RenamingFirstChunk { inner, done: false }) as Box<dyn Channel>)
            .collect())
    }
}

#[test]
fn a_garbler_naming_a_chunk_that_does_not_exist_is_caught_before_any_output() {
    let n = 6;
    let w = 8;
    let pc = mixed_circuit(n, w);
    let owners = owners(n);
    let mut rng = SplitMix64::new(5);
    let a_in = random_inputs(&mut rng, n, w);
    let b_in = random_inputs(&mut rng, n, w);
    for mode in [ParallelMode::Cgp, ParallelMode::Auto] {
        let config = ParallelConfig {
            mode,
            threads: 3,
            tau: 2,
        };
        let (ra, rb) = run_memory_with(&pc, &owners, &a_in, &b_in, config, TamperingOpener);
        let e = rb.expect_err("B must refuse the renamed chunk").to_string();
        assert!(
            e.contains("names chunk 1099511627776, but the region has"),
            "{mode:?}: {e}"
        );
        assert!(ra.is_err(), "{mode:?}: A learns no output either");
    }
}
