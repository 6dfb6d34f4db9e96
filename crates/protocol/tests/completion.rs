//! Completeness before outputs: a gate stream that stops early or reports itself unhealthy
//! on either party, in the sequential protocol and in the parallel one (CGP and IPP), makes
//! both parties fail with the cause, and neither sends anything after its completion
//! message (no decoding or permute bit); a peer reporting other counts is refused too.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pgc_circuit::analysis::{assign_slots, levelize};
use pgc_circuit::blocks::{add, mul};
use pgc_circuit::generate::random_circuit;
use pgc_circuit::limits::group_digits as group;
use pgc_circuit::{Circuit, Gate, GateSource, Layout, NetBuilder, OptimizeFor, ParallelCircuit};
use pgc_net::{Channel, MemoryChannel, NetError};
use pgc_protocol::parallel::{
    MemoryStreams, ParallelConfig, ParallelExtras, ParallelMode, run_parallel_with,
};
use pgc_protocol::{
    Outcome, Party, ProtocolError, Visibility, run_evaluator, run_garbler, split_inputs,
};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A gate source that hands out only the first `limit` gates of `inner` and, if `unhealthy`,
/// says so afterwards (a circuit file that changed mid-run); with `unhealthy` unset it stops
/// silently (the case the gate counts must catch).
struct Flaky<'a> {
    inner: &'a Circuit,
    limit: u64,
    unhealthy: Option<&'static str>,
}

impl GateSource for Flaky<'_> {
    fn layout(&self) -> &Layout {
        self.inner.layout()
    }
    fn gate_count(&self) -> u64 {
        self.inner.gate_count()
    }
    fn and_count(&self) -> u64 {
        GateSource::and_count(self.inner)
    }
    fn fingerprint(&self) -> [u8; 32] {
        self.inner.fingerprint()
    }
    fn for_each_chunk<E>(&self, f: &mut dyn FnMut(&[Gate]) -> Result<(), E>) -> Result<(), E> {
        let mut left = self.limit as usize;
        self.inner.for_each_chunk(&mut |gates: &[Gate]| {
            let n = gates.len().min(left);
            left -= n;
            if n > 0 { f(&gates[..n]) } else { Ok(()) }
        })
    }
    fn check_complete(&self) -> Result<(), String> {
        match self.unhealthy {
            Some(cause) => Err(cause.into()),
            None => Ok(()),
        }
    }
}

type Log = Arc<Mutex<Vec<Vec<u8>>>>;

/// Records every `send` this party makes (a frame is its length, then its payload) and,
/// with `lie`, adds one gate to the count in its completion message.
struct Recorder<C: Channel> {
    inner: C,
    log: Log,
    lie: bool,
}

impl<C: Channel> Channel for Recorder<C> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        let mut bytes = bytes.to_vec();
        if self.lie && bytes.starts_with(b"pgc-done") {
            bytes[9] = bytes[9].wrapping_add(1);
        }
        self.log.lock().unwrap().push(bytes.clone());
        self.inner.send(&bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        self.inner.recv(buf)
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }
    fn counts(&self) -> pgc_net::ByteCounts {
        self.inner.counts()
    }
}

fn recorders(lie: [bool; 2]) -> (Recorder<MemoryChannel>, Recorder<MemoryChannel>, [Log; 2]) {
    let (mut ca, mut cb) = MemoryChannel::pair();
    ca.set_timeout(Some(TIMEOUT));
    cb.set_timeout(Some(TIMEOUT));
    let logs = [Log::default(), Log::default()];
    (
        Recorder {
            inner: ca,
            log: logs[0].clone(),
            lie: lie[0],
        },
        Recorder {
            inner: cb,
            log: logs[1].clone(),
            lie: lie[1],
        },
        logs,
    )
}

/// The party's last message was its completion message: nothing (no output bit) followed.
fn ends_with_done(log: &Log, who: &str) {
    let sends = log.lock().unwrap();
    let last = sends.last().expect("something was sent");
    assert!(
        last.starts_with(b"pgc-done"),
        "{who}: {} bytes were sent after (or instead of) the completion message",
        last.len()
    );
    assert_eq!(
        sends.iter().filter(|s| s.starts_with(b"pgc-done")).count(),
        1,
        "{who}: one completion message"
    );
}

fn incomplete(r: Result<Outcome, ProtocolError>, who: &str) -> String {
    match r {
        Err(e @ ProtocolError::Incomplete(_)) => e.to_string(),
        Err(e) => panic!("{who}: not a completion error: {e}"),
        Ok(_) => panic!("{who}: the run succeeded and revealed its outputs"),
    }
}

fn big_circuit() -> Circuit {
    // Several chunks of gates, so a source stopping early stops mid-pass.
    let c = random_circuit(7, 24, 40_000);
    assign_slots(&levelize(&c).unwrap())
}

fn sequential(
    garbler_source: &impl GateSource,
    evaluator_source: &impl GateSource,
    lie: [bool; 2],
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
    [Log; 2],
) {
    let layout = garbler_source.layout();
    let owners = vec![Party::A, Party::B];
    let values: Vec<Vec<bool>> = layout
        .input_widths
        .iter()
        .map(|&w| (0..w).map(|i| i % 3 == 1).collect())
        .collect();
    let a = split_inputs(&owners, &values, Party::A);
    let b = split_inputs(&owners, &values, Party::B);
    let (mut ca, mut cb, logs) = recorders(lie);
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let r = run_garbler(&mut ca, garbler_source, &owners, &a, &mut |_| {});
            drop(ca);
            r
        });
        let rb = run_evaluator(&mut cb, evaluator_source, &owners, &b, &mut |_| {});
        drop(cb);
        (h.join().unwrap(), rb)
    });
    (ra, rb, logs)
}

#[test]
fn sequential_runs_still_complete_and_end_with_the_outputs() {
    let c = big_circuit();
    let (ra, rb, logs) = sequential(&c, &c, [false, false]);
    assert_eq!(ra.unwrap().outputs, rb.unwrap().outputs);
    // The outputs follow the completion messages.
    for log in &logs {
        let sends = log.lock().unwrap();
        assert!(sends.iter().any(|s| s.starts_with(b"pgc-done")));
        assert!(!sends.last().unwrap().starts_with(b"pgc-done"));
    }
}

#[test]
fn a_garbler_stream_stopping_early_reveals_nothing_on_either_side() {
    let c = big_circuit();
    let total = c.gate_count();
    for unhealthy in [None, Some("c.pgc: the file changed since it was opened")] {
        let flaky = Flaky {
            inner: &c,
            limit: 20_000,
            unhealthy,
        };
        let (ra, rb, logs) = sequential(&flaky, &c, [false, false]);
        let (ea, eb) = (incomplete(ra, "A"), incomplete(rb, "B"));
        for e in [&ea, &eb] {
            assert!(
                e.contains(&format!("processed 20,000 of {} gates", group(total)))
                    && e.ends_with("no output was revealed"),
                "{e}"
            );
            if let Some(cause) = unhealthy {
                assert!(e.contains(cause), "{e}");
            }
        }
        assert!(ea.contains("party A (the garbler, this party)"), "{ea}");
        assert!(eb.contains("party A (the garbler, the peer)"), "{eb}");
        ends_with_done(&logs[0], "A");
        ends_with_done(&logs[1], "B");
    }
}

#[test]
fn an_evaluator_stream_stopping_early_reveals_nothing_on_either_side() {
    let c = big_circuit();
    for unhealthy in [None, Some("c.pgc: it ends inside the main body")] {
        let flaky = Flaky {
            inner: &c,
            limit: 17_000,
            unhealthy,
        };
        let (ra, rb, logs) = sequential(&c, &flaky, [false, false]);
        let (ea, eb) = (incomplete(ra, "A"), incomplete(rb, "B"));
        for e in [&ea, &eb] {
            assert!(e.contains("party B (the evaluator"), "{e}");
            assert!(e.contains("processed 17,000 of"), "{e}");
        }
        ends_with_done(&logs[0], "A");
        ends_with_done(&logs[1], "B");
    }
    // Unhealthy although every gate came: the health check alone stops the run.
    let flaky = Flaky {
        inner: &c,
        limit: u64::MAX,
        unhealthy: Some("the file could not be read"),
    };
    let (ra, rb, logs) = sequential(&c, &flaky, [false, false]);
    for e in [incomplete(ra, "A"), incomplete(rb, "B")] {
        assert!(e.contains("the file could not be read"), "{e}");
    }
    ends_with_done(&logs[0], "A");
    ends_with_done(&logs[1], "B");
}

#[test]
fn a_peer_reporting_other_counts_is_refused() {
    let c = big_circuit();
    // B claims one gate more than it processed: A refuses and reveals nothing.
    let (ra, rb, logs) = sequential(&c, &c, [false, true]);
    let ea = incomplete(ra, "A");
    assert!(
        ea.contains("party B (the evaluator, the peer) processed"),
        "{ea}"
    );
    ends_with_done(&logs[0], "A");
    assert!(rb.is_err(), "B gets no decoding bits");
    // A claims more: B refuses and never sends its permute bits.
    let (_, rb, logs) = sequential(&c, &c, [true, false]);
    let eb = incomplete(rb, "B");
    assert!(
        eb.contains("party A (the garbler, the peer) processed"),
        "{eb}"
    );
    ends_with_done(&logs[1], "B");
}

/// A's n values, B's n values: a region of products and their sum.
fn region_circuit(n: usize, w: u32) -> ParallelCircuit {
    let mut g = NetBuilder::new(OptimizeFor::Size);
    let a: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    let b: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    g.begin_region(1);
    let mut products = Vec::new();
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        products.push(mul(&mut g, &a[i], &b[i]));
    }
    assert!(g.end_region());
    let mut sum = products[0].clone();
    for p in &products[1..] {
        sum = add(&mut g, &sum, p);
    }
    g.output(&sum);
    let prepared = g.prepare().unwrap();
    let spans = prepared.region_spans().to_vec();
    let (c, _) = prepared.into_circuit().unwrap();
    ParallelCircuit::from_flat(&c, &spans).unwrap()
}

type Check = Result<(), String>;

fn parallel(
    mode: ParallelMode,
    checks: [Check; 2],
    lie: [bool; 2],
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
    [Log; 2],
) {
    let (n, w) = (6, 12);
    let pc = region_circuit(n, w);
    let mut owners = vec![Party::A; n];
    owners.extend(vec![Party::B; n]);
    let inputs = vec![vec![true; w as usize]; n];
    let vis = vec![Visibility::Both];
    let config = ParallelConfig {
        mode,
        threads: 2,
        tau: 2,
    };
    let (mut ca, mut cb, logs) = recorders(lie);
    let (mut oa, mut ob) = MemoryStreams::pair(TIMEOUT);
    let (pa, pb) = (AtomicU64::new(0), AtomicU64::new(0));
    let [check_a, check_b] = checks;
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let r = run_parallel_with(
                Party::A,
                &mut ca,
                &mut oa,
                &pc,
                &owners,
                &vis,
                &inputs,
                &config,
                &pa,
                &ParallelExtras {
                    check_complete: &|| check_a.clone(),
                    ..ParallelExtras::default()
                },
            );
            drop(ca);
            r
        });
        let rb = run_parallel_with(
            Party::B,
            &mut cb,
            &mut ob,
            &pc,
            &owners,
            &vis,
            &inputs,
            &config,
            &pb,
            &ParallelExtras {
                check_complete: &|| check_b.clone(),
                ..ParallelExtras::default()
            },
        );
        drop(cb);
        (h.join().unwrap(), rb)
    });
    (ra, rb, logs)
}

#[test]
fn parallel_modes_check_completeness_before_outputs() {
    for mode in [ParallelMode::Cgp, ParallelMode::Ipp] {
        let (ra, rb, logs) = parallel(mode, [Ok(()), Ok(())], [false, false]);
        assert_eq!(ra.unwrap().outputs, rb.unwrap().outputs, "{mode:?}");
        assert!(
            logs[0]
                .lock()
                .unwrap()
                .iter()
                .any(|s| s.starts_with(b"pgc-done"))
        );

        for (bad, who) in [(0, "party A"), (1, "party B")] {
            let mut checks = [Ok(()), Ok(())];
            checks[bad] = Err("circuit.pgc changed while running".to_string());
            let (ra, rb, logs) = parallel(mode, checks, [false, false]);
            for e in [incomplete(ra, "A"), incomplete(rb, "B")] {
                assert!(
                    e.contains(who) && e.contains("circuit.pgc changed while running"),
                    "{mode:?}: {e}"
                );
            }
            ends_with_done(&logs[0], "A");
            ends_with_done(&logs[1], "B");
        }

        let (ra, _, logs) = parallel(mode, [Ok(()), Ok(())], [false, true]);
        let ea = incomplete(ra, "A");
        assert!(ea.contains("party B") && ea.contains("processed"), "{ea}");
        ends_with_done(&logs[0], "A");
    }
}
