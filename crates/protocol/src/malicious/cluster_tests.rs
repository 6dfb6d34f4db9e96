//! Cut-and-choose over a cluster's ranks ([`super::cluster`]) with the ranks as threads
//! ([`MemoryTeam`]) and in-memory rank-pair streams: the same outputs as one process for
//! 1, 2 and 3 ranks per party, and a cheating garbler whose bad copies are garbled on a
//! worker rank still caught.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::random_circuit;
use pgc_circuit::{Circuit, GateSource, Visibility, millionaires_circuit};
use pgc_net::{ByteCounts, Channel, MemoryChannel, NetError};

use super::cluster::{coordinator_with, worker_with};
use super::cut_and_choose::{Cheat, CopyPlan, run_with};
use crate::cluster::{MemoryTeam, RankLinks, Team, WorkerEnd};
use crate::parallel::{MemoryStreams, StreamOpener};
use crate::yao::{Outcome, Party, ProtocolError};

const TIMEOUT: Duration = Duration::from_secs(20);

/// In-memory rank-pair links; with `break_after`, each stream fails once this many bytes
/// moved on it (a link that breaks).
struct MemoryLinks(MemoryStreams, Option<u64>);

impl RankLinks for MemoryLinks {
    fn advertise(&mut self, _peer_host: &str) -> Result<Option<String>, ProtocolError> {
        Ok(None)
    }
    fn open(
        &mut self,
        _peer_advert: Option<&str>,
        n: usize,
        token: [u8; 16],
    ) -> Result<Vec<Box<dyn Channel>>, ProtocolError> {
        let streams = self.0.open(n, token)?;
        Ok(match self.1 {
            None => streams,
            Some(limit) => streams
                .into_iter()
                .map(|inner| Box::new(Breaking { inner, limit }) as Box<dyn Channel>)
                .collect(),
        })
    }
}

struct Breaking {
    inner: Box<dyn Channel>,
    limit: u64,
}

impl Breaking {
    fn check(&mut self, more: usize) -> Result<(), NetError> {
        let c = self.inner.counts();
        if c.sent + c.received + more as u64 > self.limit {
            // Dropping our end closes the link for the peer too.
            self.inner = Box::new(MemoryChannel::pair().0);
            return Err(NetError::Closed);
        }
        Ok(())
    }
}

impl Channel for Breaking {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        self.check(bytes.len())?;
        self.inner.send(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        self.check(buf.len())?;
        self.inner.recv(buf)
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }
    fn counts(&self) -> ByteCounts {
        self.inner.counts()
    }
}

type PartyEnd = (
    Result<Outcome, ProtocolError>,
    Vec<Result<WorkerEnd, ProtocolError>>,
);

fn mine(owners: &[Party], values: &[Vec<bool>], p: Party) -> Vec<Vec<bool>> {
    owners
        .iter()
        .zip(values)
        .filter(|(o, _)| **o == p)
        .map(|(_, v)| v.clone())
        .collect()
}

/// Both parties, each `k` ranks (threads), at statistical security `s`.
fn run_cluster(
    c: &Circuit,
    owners: &[Party],
    visibility: &[Visibility],
    values: &[Vec<bool>],
    s: u32,
    k: usize,
    cheat_a: Cheat,
) -> (PartyEnd, PartyEnd) {
    run_cluster_broken(c, owners, visibility, values, s, k, cheat_a, None)
}

/// [`run_cluster`] where rank pair `broken` (> 0), if any, breaks after 1 KiB (seen from
/// both ends).
#[allow(clippy::too_many_arguments)]
fn run_cluster_broken(
    c: &Circuit,
    owners: &[Party],
    visibility: &[Visibility],
    values: &[Vec<bool>],
    s: u32,
    k: usize,
    cheat_a: Cheat,
    broken: Option<usize>,
) -> (PartyEnd, PartyEnd) {
    let teams = [MemoryTeam::new(k, TIMEOUT), MemoryTeam::new(k, TIMEOUT)];
    let (mut links_a, mut links_b): (Vec<_>, Vec<_>) = (0..k)
        .map(|r| {
            let (a, b) = MemoryStreams::pair(TIMEOUT);
            let cut = (broken == Some(r)).then_some(1024);
            (Some(MemoryLinks(a, cut)), Some(MemoryLinks(b, cut)))
        })
        .unzip();
    let (ca, cb) = MemoryChannel::pair();
    let chans = [Some(ca), Some(cb)];
    let mut chans = chans.into_iter();
    let party = |me: Party,
                 team: &[MemoryTeam],
                 links: &mut [Option<MemoryLinks>],
                 ch: Option<MemoryChannel>|
     -> PartyEnd {
        let mut ch = ch.expect("one channel per party");
        ch.set_timeout(Some(TIMEOUT));
        let cheat = if me == Party::A {
            cheat_a
        } else {
            Cheat::Honest
        };
        let inputs = mine(owners, values, me);
        std::thread::scope(|sc| {
            let workers: Vec<_> = team[1..]
                .iter()
                .zip(links[1..].iter_mut())
                .map(|(t, l)| {
                    let mut l = l.take().expect("links");
                    sc.spawn(move || worker_with(me, t, c, &mut l, &AtomicU64::new(0), cheat))
                })
                .collect();
            let out = coordinator_with(
                &team[0],
                "127.0.0.1",
                &mut ch,
                c,
                owners,
                visibility,
                me,
                &inputs,
                s,
                2,
                &AtomicU64::new(0),
                cheat,
            );
            if out.is_err() {
                team[0].abort(1);
            }
            drop(ch);
            let ends = workers.into_iter().map(|h| h.join().unwrap()).collect();
            (out, ends)
        })
    };
    let (ta, tb) = (&teams[0], &teams[1]);
    let (cha, chb) = (chans.next().unwrap(), chans.next().unwrap());
    std::thread::scope(|sc| {
        let la = &mut links_a;
        let ha = sc.spawn(|| party(Party::A, ta, la, cha));
        let b = party(Party::B, tb, &mut links_b, chb);
        (ha.join().unwrap(), b)
    })
}

/// One process per party, as [`super::run_cut_and_choose`].
fn run_single(
    c: &Circuit,
    owners: &[Party],
    visibility: &[Visibility],
    values: &[Vec<bool>],
    s: u32,
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
) {
    let (mut ca, mut cb) = MemoryChannel::pair();
    let (va, vb) = (
        mine(owners, values, Party::A),
        mine(owners, values, Party::B),
    );
    std::thread::scope(|sc| {
        let ha = sc.spawn(|| {
            let r = run_with(
                &mut ca,
                c,
                owners,
                visibility,
                Party::A,
                &va,
                s,
                2,
                &mut |_| {},
                Cheat::Honest,
                None,
            );
            drop(ca);
            r
        });
        let rb = run_with(
            &mut cb,
            c,
            owners,
            visibility,
            Party::B,
            &vb,
            s,
            2,
            &mut |_| {},
            Cheat::Honest,
            None,
        );
        drop(cb);
        (ha.join().unwrap(), rb)
    })
}

fn bits(v: u64, n: usize) -> Vec<bool> {
    (0..n).map(|i| v >> i & 1 == 1).collect()
}

fn flat(o: &Outcome) -> Vec<bool> {
    o.all_outputs().expect("outputs").concat()
}

#[test]
fn any_rank_count_gives_the_single_process_outputs() {
    let mill = millionaires_circuit(8);
    let mut cases: Vec<(Circuit, Vec<Party>, Vec<Vec<bool>>)> = vec![(
        mill,
        vec![Party::A, Party::B],
        vec![bits(200, 8), bits(3, 8)],
    )];
    for seed in [1u64, 2] {
        let c = random_circuit(seed, 16, 200);
        let owners: Vec<Party> = (0..c.layout.input_widths.len())
            .map(|i| if i % 2 == 0 { Party::A } else { Party::B })
            .collect();
        let values = c
            .layout
            .input_widths
            .iter()
            .enumerate()
            .map(|(i, &w)| bits(seed.wrapping_mul(0x9E37) ^ (i as u64 * 0x55), w as usize))
            .collect();
        cases.push((c, owners, values));
    }
    for (c, owners, values) in &cases {
        let vis = crate::yao::all_visible(c.layout());
        let flat_in: Vec<bool> = values.iter().flatten().copied().collect();
        let want = eval_bits(c, &flat_in);
        let (sa, sb) = run_single(c, owners, &vis, values, 4);
        assert_eq!(flat(&sa.unwrap()), want);
        assert_eq!(flat(&sb.unwrap()), want);
        for k in [1, 2, 3] {
            let ((ra, wa), (rb, wb)) = run_cluster(c, owners, &vis, values, 4, k, Cheat::Honest);
            assert_eq!(flat(&ra.unwrap()), want, "A, {k} ranks");
            assert_eq!(flat(&rb.unwrap()), want, "B, {k} ranks");
            for w in wa.iter().chain(&wb) {
                assert!(matches!(w, Ok(WorkerEnd::Finished(_))), "{k} ranks: {w:?}");
            }
            // The workers' rank pairs carried the tables of their evaluated copies.
            if k > 1 {
                let Ok(WorkerEnd::Finished(sum)) = &wb[0] else {
                    unreachable!()
                };
                assert!(sum.bytes_received > 0, "{k} ranks");
            }
        }
    }
}

#[test]
fn a_garbler_cheating_in_copies_garbled_by_a_worker_is_caught() {
    // With 2 ranks, A's rank 1 garbles (step 5) the odd copies; corrupt every one of them.
    // More copies are checked than there are even ones, so some checked copy is always
    // bad, whichever of B's ranks checks it.
    let s = 4;
    let plan = CopyPlan::for_stat_sec(s);
    assert!(plan.checked > plan.copies.div_ceil(2), "{plan:?}");
    let odd: u128 = (0..plan.copies)
        .filter(|j| j % 2 == 1)
        .fold(0, |m, j| m | 1 << j);
    let mill = millionaires_circuit(8);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    let values = [bits(17, 8), bits(99, 8)];
    for _ in 0..3 {
        let ((ra, _), (rb, _)) = run_cluster(
            &mill,
            &owners,
            &vis,
            &values,
            s,
            2,
            Cheat::CorruptTable { copies: odd },
        );
        let e = rb.unwrap_err();
        let ProtocolError::CheatDetected(why) = &e else {
            panic!("B did not catch the cheat: {e}");
        };
        assert!(why.contains("checked copy"), "{why}");
        // The copy named is one the worker garbled.
        let copy: usize = why
            .split_whitespace()
            .skip_while(|w| *w != "copy")
            .nth(1)
            .and_then(|w| w.trim_end_matches([',', '\'', 's']).parse().ok())
            .expect("the error names the copy");
        assert_eq!(copy % 2, 1, "{why}");
        assert!(ra.is_err());
    }
}

#[test]
fn a_broken_rank_pair_fails_both_parties_naming_the_rank() {
    // 64 ANDs: 2 KiB of tables per evaluated copy, and rank 2 of 3 streams at least one.
    let mill = millionaires_circuit(64);
    assert!(CopyPlan::for_stat_sec(4).evaluated() >= 3);
    let owners = [Party::A, Party::B];
    let vis = crate::yao::all_visible(mill.layout());
    let values = [bits(17, 64), bits(99, 64)];
    let ((ra, _), (rb, wb)) =
        run_cluster_broken(&mill, &owners, &vis, &values, 4, 3, Cheat::Honest, Some(2));
    let (ea, eb) = (ra.unwrap_err().to_string(), rb.unwrap_err().to_string());
    assert!(eb.contains("party B rank 2 (of 3) failed"), "{eb}");
    assert!(ea.contains("party A rank 2 (of 3) failed"), "{ea}");
    assert!(wb[1].is_err(), "{:?}", wb[1]);
}

#[test]
fn jobs_and_results_round_trip_and_refuse_truncation() {
    use super::cluster::{codec_samples, reencode};
    for bytes in codec_samples() {
        assert_eq!(reencode(&bytes).as_ref(), Some(&bytes));
        for cut in 0..bytes.len() {
            assert!(reencode(&bytes[..cut]).is_none(), "{bytes:?} cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(reencode(&longer).is_none(), "{bytes:?} + 1 byte");
    }
}
