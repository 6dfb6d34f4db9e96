//! Cluster runs (each party K ranks, `pgc_protocol::cluster`) without MPI: the ranks are
//! threads ([`MemoryTeam`]), the rank pairs in-memory or TCP streams. Outputs against
//! cleartext evaluation for several rank and thread counts; a rank pair whose link breaks
//! makes both parties fail naming the rank.

mod common;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use pgc_circuit::generate::SplitMix64;
use pgc_circuit::{GateSource, ParallelCircuit, Visibility, eval_bits};
use pgc_net::{ByteCounts, Channel, ChannelSecurity, MemoryChannel, NetError, TcpChannel};
use pgc_protocol::cluster::{
    MemoryTeam, Msg, RankLinks, TcpRankLinks, Team, WorkerEnd, run_coordinator, run_worker,
};
use pgc_protocol::parallel::{
    MemoryStreams, ParallelConfig, ParallelExtras, ParallelMode, StreamOpener, TcpAcceptStreams,
    TcpConnectStreams,
};
use pgc_protocol::{Outcome, Party, ProtocolError};

use common::{mixed_circuit, random_inputs};

const TIMEOUT: Duration = Duration::from_secs(20);

/// Rank pair links in memory: one [`MemoryStreams`] pair per rank pair.
struct MemoryLinks {
    opener: MemoryStreams,
    /// Streams that fail once this many bytes were received (a broken link).
    break_after: Option<u64>,
}

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
        let streams = self.opener.open(n, token)?;
        Ok(match self.break_after {
            None => streams,
            Some(limit) => streams
                .into_iter()
                .map(|inner| Box::new(Breaking { inner, limit }) as Box<dyn Channel>)
                .collect(),
        })
    }
}

/// A channel cut (its inner end dropped) once `limit` bytes were sent or received: a
/// link that breaks, seen from one end.
struct Breaking {
    inner: Box<dyn Channel>,
    limit: u64,
}

impl Breaking {
    fn check(&mut self, more: usize) -> Result<(), NetError> {
        let c = self.inner.counts();
        if c.sent + c.received + more as u64 > self.limit {
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

type PartyResult = (
    Result<Outcome, ProtocolError>,
    Vec<Result<WorkerEnd, ProtocolError>>,
);

/// Both parties, each K ranks (threads), in memory; `broken` is a rank pair (> 0) whose
/// streams break after 1 KiB on both ends.
fn run_cluster_memory(
    pc: &ParallelCircuit,
    inputs: (&[Vec<bool>], &[Vec<bool>]),
    k: usize,
    threads: usize,
    broken: Option<usize>,
) -> (PartyResult, PartyResult) {
    run_cluster_memory_with(pc, inputs, k, threads, broken, None, TIMEOUT)
}

/// [`run_cluster_memory`] where A's rank `silent_a` (> 0), if any, never answers (its
/// team member exists but nothing runs on it, as a stopped process), and every team has
/// the silence bound `silence`.
fn run_cluster_memory_with(
    pc: &ParallelCircuit,
    inputs: (&[Vec<bool>], &[Vec<bool>]),
    k: usize,
    threads: usize,
    broken: Option<usize>,
    silent_a: Option<usize>,
    silence: Duration,
) -> (PartyResult, PartyResult) {
    let n_in = pc.layout.input_widths.len();
    let owners: Vec<Party> = (0..n_in)
        .map(|i| if i < n_in / 2 { Party::A } else { Party::B })
        .collect();
    let vis = vec![Visibility::Both; pc.layout.output_widths.len()];
    let config = ParallelConfig {
        mode: ParallelMode::Cgp,
        threads,
        tau: 2,
    };
    let teams_a = MemoryTeam::new(k, silence);
    let teams_b = MemoryTeam::new(k, silence);
    // Rank pair r: openers for A's and B's rank r.
    let (mut links_a, mut links_b): (Vec<_>, Vec<_>) = (0..k)
        .map(|r| {
            let (a, b) = MemoryStreams::pair(TIMEOUT);
            let break_b = (broken == Some(r)).then_some(1024);
            (
                MemoryLinks {
                    opener: a,
                    break_after: break_b,
                },
                MemoryLinks {
                    opener: b,
                    break_after: break_b,
                },
            )
        })
        .unzip();
    let (mut ca, mut cb) = MemoryChannel::pair();
    ca.set_timeout(Some(TIMEOUT));
    cb.set_timeout(Some(TIMEOUT));
    let progress: Vec<AtomicU64> = (0..2 * k).map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|s| {
        let party = |me: Party,
                     team: Vec<MemoryTeam>,
                     links: Vec<MemoryLinks>,
                     ch: MemoryChannel,
                     inputs: &[Vec<bool>],
                     progress: &[AtomicU64]|
         -> PartyResult {
            let mut team = team.into_iter();
            let mut links = links.into_iter();
            let team0 = team.next().unwrap();
            let mut links0 = links.next().unwrap();
            let (owners, vis, config) = (&owners, &vis, &config);
            let mut held = Vec::new();
            std::thread::scope(|s| {
                let mut workers = Vec::new();
                for (r, ((t, mut l), p)) in team.zip(links).zip(&progress[1..]).enumerate() {
                    if me == Party::A && silent_a == Some(r + 1) {
                        held.push(t);
                        workers.push(None);
                        continue;
                    }
                    workers.push(Some(s.spawn(move || run_worker(me, &t, pc, &mut l, p))));
                }
                let mut ch = ch;
                let out = run_coordinator(
                    me,
                    &team0,
                    "127.0.0.1",
                    &mut ch,
                    &mut links0.opener,
                    pc,
                    owners,
                    vis,
                    inputs,
                    config,
                    &progress[0],
                    &ParallelExtras::default(),
                );
                if out.is_err() {
                    team0.abort(1);
                }
                let done = workers
                    .into_iter()
                    .map(|h| match h {
                        Some(h) => h.join().unwrap(),
                        None => Err(ProtocolError::Incomplete("held silent".into())),
                    })
                    .collect();
                (out, done)
            })
        };
        let links_a: Vec<MemoryLinks> = std::mem::take(&mut links_a);
        let progress = &progress;
        let ha = s.spawn(move || party(Party::A, teams_a, links_a, ca, inputs.0, &progress[..k]));
        let rb = party(
            Party::B,
            teams_b,
            std::mem::take(&mut links_b),
            cb,
            inputs.1,
            &progress[k..],
        );
        (ha.join().unwrap(), rb)
    })
}

#[test]
fn every_rank_and_thread_count_matches_cleartext() {
    let (n, w) = (7, 8);
    let pc = mixed_circuit(n, w);
    let mut rng = SplitMix64::new(15);
    for k in [1, 2, 3, 4, 8] {
        for threads in [1, 2, 3] {
            let a_in = random_inputs(&mut rng, n, w);
            let b_in = random_inputs(&mut rng, n, w);
            let all: Vec<bool> = a_in.iter().chain(&b_in).flatten().copied().collect();
            let expect = eval_bits(&pc, &all);
            let ((ra, wa), (rb, wb)) = run_cluster_memory(&pc, (&a_in, &b_in), k, threads, None);
            let (oa, ob) = (ra.unwrap(), rb.unwrap());
            assert_eq!(
                oa.all_outputs().unwrap().concat(),
                expect,
                "A, {k} ranks × {threads}"
            );
            assert_eq!(
                ob.all_outputs().unwrap().concat(),
                expect,
                "B, {k} ranks × {threads}"
            );
            // Every worker finished; with more instances than ranks, each did some work.
            for (r, (sa, sb)) in wa.into_iter().zip(wb).enumerate() {
                let (Ok(WorkerEnd::Finished(sa)), Ok(WorkerEnd::Finished(sb))) = (sa, sb) else {
                    panic!("rank {} did not finish", r + 1);
                };
                assert_eq!(sa.blocks_sent, sb.blocks_received, "rank {}", r + 1);
                assert_eq!(sa.and_gates, sb.and_gates, "rank {}", r + 1);
                if k <= n {
                    assert!(sa.and_gates > 0, "rank {} of {k} got no instance", r + 1);
                }
            }
            // Rank 0's stats count the workers' streams too: A sent ≥ 32 bytes per AND.
            assert!(oa.stats.bytes_sent >= 32 * pc.and_count(), "{k} ranks");
        }
    }
}

#[test]
fn a_broken_rank_pair_fails_both_parties_naming_the_rank() {
    let (n, w) = (6, 16);
    let pc = mixed_circuit(n, w);
    let mut rng = SplitMix64::new(3);
    let a_in = random_inputs(&mut rng, n, w);
    let b_in = random_inputs(&mut rng, n, w);
    let ((ra, wa), (rb, wb)) = run_cluster_memory(&pc, (&a_in, &b_in), 3, 2, Some(2));
    let ea = ra.unwrap_err().to_string();
    let eb = rb.unwrap_err().to_string();
    assert!(eb.contains("party B rank 2 (of 3) failed"), "{eb}");
    assert!(ea.contains("party A rank 2 (of 3) failed"), "{ea}");
    // The failed ranks report their own error; the others were stopped (or saw the
    // party's abort first).
    assert!(wb[1].is_err() && wa[1].is_err());
    for end in [&wa[0], &wb[0]] {
        match end {
            Ok(WorkerEnd::Stopped) => {}
            Err(e) => assert!(e.to_string().contains("aborted"), "{e}"),
            Ok(other) => panic!("a worker of a failed run ended with {other:?}"),
        }
    }
}

#[test]
fn different_rank_counts_are_refused() {
    // A runs 1 rank, B 2: both rank 0s refuse at the handshake, before any worker is set
    // up, and B's worker is told to stop.
    let pc = mixed_circuit(2, 4);
    let owners = vec![Party::A, Party::A, Party::B, Party::B];
    let vis = vec![Visibility::Both; 2];
    let inputs = vec![vec![false; 4]; 2];
    let config = ParallelConfig {
        mode: ParallelMode::Cgp,
        threads: 1,
        tau: 2,
    };
    let team_a = MemoryTeam::new(1, TIMEOUT);
    let team_b = MemoryTeam::new(2, TIMEOUT);
    let (mut oa, mut ob) = MemoryStreams::pair(TIMEOUT);
    let (mut ca, mut cb) = MemoryChannel::pair();
    ca.set_timeout(Some(TIMEOUT));
    cb.set_timeout(Some(TIMEOUT));
    let (pa, pb) = (AtomicU64::new(0), AtomicU64::new(0));
    let (ra, rb) = std::thread::scope(|s| {
        let ha = s.spawn(|| {
            run_coordinator(
                Party::A,
                &team_a[0],
                "127.0.0.1",
                &mut ca,
                &mut oa,
                &pc,
                &owners,
                &vis,
                &inputs,
                &config,
                &pa,
                &ParallelExtras::default(),
            )
        });
        let rb = run_coordinator(
            Party::B,
            &team_b[0],
            "127.0.0.1",
            &mut cb,
            &mut ob,
            &pc,
            &owners,
            &vis,
            &inputs,
            &config,
            &pb,
            &ParallelExtras::default(),
        );
        (ha.join().unwrap(), rb)
    });
    for e in [ra.unwrap_err(), rb.unwrap_err()] {
        let e = e.to_string();
        assert!(
            e.contains("cluster of 1 rank") && e.contains("cluster of 2 ranks"),
            "{e}"
        );
    }
    // Rank 0's pump sends heartbeats (empty messages) too.
    let worker = loop {
        let m = team_b[1].recv(0).unwrap();
        if !m.is_empty() {
            break Msg::from_bytes(&m, "rank 0").unwrap();
        }
    };
    assert_eq!(worker, Msg::Stop);
}

/// Over real TCP with TLS on every rank pair (the same keys as the main connection):
/// A listens (rank 0 on one port, each worker on its own), B connects to the advertised
/// addresses.
#[test]
fn tcp_rank_pairs_under_tls_match_cleartext() {
    let (n, w) = (5, 8);
    let pc = mixed_circuit(n, w);
    let k = 3;
    let owners: Vec<Party> = (0..2 * n)
        .map(|i| if i < n { Party::A } else { Party::B })
        .collect();
    let vis = vec![Visibility::Both; 2];
    let mut rng = SplitMix64::new(8);
    let a_in = random_inputs(&mut rng, n, w);
    let b_in = random_inputs(&mut rng, n, w);
    let all: Vec<bool> = a_in.iter().chain(&b_in).flatten().copied().collect();
    let expect = eval_bits(&pc, &all);
    let config = ParallelConfig {
        mode: ParallelMode::Cgp,
        threads: 2,
        tau: 2,
    };
    let (sec_a, sec_b) = ChannelSecurity::loopback_pair().unwrap();
    assert!(sec_a.is_tls());
    let listeners: Vec<_> = (0..k)
        .map(|_| TcpChannel::listen("127.0.0.1:0").unwrap())
        .collect();
    let main_addr = listeners[0].local_addr().to_string();
    let teams_a = MemoryTeam::new(k, TIMEOUT);
    let teams_b = MemoryTeam::new(k, TIMEOUT);
    let notes = pgc_net::connect::no_notes();
    let (pa, pb) = (AtomicU64::new(0), AtomicU64::new(0));
    let (ra, rb) = std::thread::scope(|s| {
        let mut listeners = listeners.into_iter();
        let main_listener = listeners.next().unwrap();
        let mut team_a = teams_a.into_iter();
        let team_a0 = team_a.next().unwrap();
        for (t, l) in team_a.zip(listeners) {
            let mut links = TcpRankLinks::Listen {
                listener: l,
                security: sec_a.clone(),
                timeout: TIMEOUT,
                link: None,
                notes: notes.clone(),
            };
            let pc = &pc;
            s.spawn(move || run_worker(Party::A, &t, pc, &mut links, &AtomicU64::new(0)).unwrap());
        }
        let mut team_b = teams_b.into_iter();
        let team_b0 = team_b.next().unwrap();
        for t in team_b {
            let mut links = TcpRankLinks::Connect {
                security: sec_b.clone(),
                timeout: TIMEOUT,
                link: None,
            };
            let pc = &pc;
            s.spawn(move || run_worker(Party::B, &t, pc, &mut links, &AtomicU64::new(0)).unwrap());
        }
        let (pc, owners, vis, a_in, config, pa, sec_a, notes) =
            (&pc, &owners, &vis, &a_in, &config, &pa, &sec_a, &notes);
        let ha = s.spawn(move || {
            let mut ch =
                pgc_net::connect::accept_peer(&main_listener, sec_a, TIMEOUT, notes).unwrap();
            ch.set_timeout(Some(TIMEOUT)).unwrap();
            let peer = ch.peer_addr().unwrap().ip().to_string();
            let mut opener = TcpAcceptStreams {
                listener: &main_listener,
                timeout: TIMEOUT,
                link: None,
                security: sec_a.clone(),
                notes: notes.clone(),
            };
            run_coordinator(
                Party::A,
                &team_a0,
                &peer,
                &mut ch,
                &mut opener,
                pc,
                owners,
                vis,
                a_in,
                config,
                pa,
                &ParallelExtras::default(),
            )
        });
        let mut ch = pgc_net::connect::connect_peer(&main_addr, &sec_b, TIMEOUT).unwrap();
        ch.set_timeout(Some(TIMEOUT)).unwrap();
        let peer = ch.peer_addr().unwrap().ip().to_string();
        let mut opener = TcpConnectStreams {
            addr: main_addr.clone(),
            timeout: TIMEOUT,
            link: None,
            security: sec_b.clone(),
        };
        let rb = run_coordinator(
            Party::B,
            &team_b0,
            &peer,
            &mut ch,
            &mut opener,
            pc,
            owners,
            vis,
            &b_in,
            config,
            &pb,
            &ParallelExtras::default(),
        );
        (ha.join().unwrap(), rb)
    });
    assert_eq!(ra.unwrap().all_outputs().unwrap().concat(), expect);
    assert_eq!(rb.unwrap().all_outputs().unwrap().concat(), expect);
}

/// The AND indices (hash tweaks) each rank's threads use, concatenated phase by phase, rank
/// by rank, thread by thread, are the circuit's flat order 0..N, which is what the
/// single-machine engine's sequential plan uses: the tables are the same for any K and T.
#[test]
fn every_and_keeps_its_flat_tweak_for_any_rank_and_thread_count() {
    use pgc_circuit::Phase;
    use pgc_garble::parallel::{Mode, Plan};
    use pgc_protocol::cluster::plan::{instance_and_bases, rank_shares, thread_shares};

    let pc = mixed_circuit(9, 6);
    let sequential = Plan::new(&pc, 1, Mode::None, 1).stream_and_indices(&pc, 0);
    assert_eq!(sequential, (0..pc.and_count()).collect::<Vec<_>>());
    for k in [1, 2, 3, 5, 16] {
        for t in [1, 2, 4] {
            let mut tweaks = Vec::new();
            let mut and_base = 0u64;
            for phase in &pc.phases {
                match phase {
                    Phase::Sequential(gates) => {
                        let ands = gates
                            .iter()
                            .filter(|g| g.op == pgc_circuit::Op::And)
                            .count() as u64;
                        tweaks.extend(and_base..and_base + ands);
                        and_base += ands;
                    }
                    Phase::Region(region) => {
                        let bases = instance_and_bases(&pc, region, and_base);
                        for share in rank_shares(&pc, region, k) {
                            for part in thread_shares(&pc, region, share, t) {
                                for i in part {
                                    tweaks.extend(bases[i]..bases[i + 1]);
                                }
                            }
                        }
                        and_base = *bases.last().unwrap();
                    }
                }
            }
            assert_eq!(tweaks, sequential, "{k} ranks × {t} threads");
        }
    }
}

/// A worker of A that stops answering (a stopped process: its team member exists, nothing
/// runs on it) makes A's rank 0 fail naming it once the silence bound has passed, and B
/// then fails too, instead of both waiting forever.
#[test]
fn a_silent_worker_fails_both_parties_naming_the_rank() {
    let (n, w) = (4, 8);
    let pc = mixed_circuit(n, w);
    let mut rng = SplitMix64::new(21);
    let a_in = random_inputs(&mut rng, n, w);
    let b_in = random_inputs(&mut rng, n, w);
    let bound = Duration::from_millis(1500);
    let ((ra, _), (rb, wb)) =
        run_cluster_memory_with(&pc, (&a_in, &b_in), 3, 1, None, Some(2), bound);
    let ea = ra.unwrap_err().to_string();
    assert!(
        ea.contains("party A rank 2 (of 3) failed") && ea.contains("not even a heartbeat"),
        "{ea}"
    );
    assert!(rb.is_err());
    assert!(wb.iter().all(|w| !matches!(w, Ok(WorkerEnd::Finished(_)))));
}

/// A rank 0 that computes for longer than the silence bound keeps its worker waiting (its
/// pump sends heartbeats meanwhile); a rank 0 that falls silent fails the worker once the
/// bound has passed.
#[test]
fn heartbeats_tell_a_busy_rank_from_a_silent_one() {
    use pgc_protocol::cluster::heartbeat::{Clock, pumped};
    let bound = Duration::from_millis(1000);
    let pc = mixed_circuit(2, 4);
    // Busy: rank 0 "computes" for 3 bounds, then stops the worker.
    let team = MemoryTeam::new(2, bound);
    let (busy, worker) = std::thread::scope(|s| {
        let (t0, t1) = (&team[0], &team[1]);
        let pc = &pc;
        let worker = s.spawn(move || {
            let (opener, _) = MemoryStreams::pair(TIMEOUT);
            let mut links = MemoryLinks {
                opener,
                break_after: None,
            };
            run_worker(Party::B, t1, pc, &mut links, &AtomicU64::new(0))
        });
        let busy = pumped(t0, &[1], Clock::FromStart, "rank 0", |t| {
            std::thread::sleep(3 * bound);
            t.send(1, &Msg::Stop.to_bytes())
        });
        (busy, worker.join().unwrap())
    });
    busy.unwrap();
    assert_eq!(worker.unwrap(), WorkerEnd::Stopped);
    // Silent: rank 0 sends one heartbeat (it has reached its peer and started pumping),
    // then nothing more, as a process stopped mid-run.
    let team = MemoryTeam::new(2, bound);
    team[0].send(1, &[]).unwrap();
    let (opener, _) = MemoryStreams::pair(TIMEOUT);
    let mut links = MemoryLinks {
        opener,
        break_after: None,
    };
    let e = run_worker(Party::B, &team[1], &pc, &mut links, &AtomicU64::new(0)).unwrap_err();
    assert!(
        e.to_string()
            .contains("rank 0 sent nothing, not even a heartbeat"),
        "{e}"
    );
}

/// A worker that has finished (and sends nothing more) is released by rank 0: rank 0 may
/// then go on for longer than the silence bound (its completion check and outputs with the
/// peer) without its pump declaring the worker lost and ending the party.
#[test]
fn a_released_worker_may_fall_silent() {
    use pgc_protocol::cluster::heartbeat::{Clock, pumped};
    let bound = Duration::from_millis(600);
    let team = MemoryTeam::new(2, bound);
    let (t0, t1) = (&team[0], &team[1]);
    std::thread::scope(|s| {
        s.spawn(move || {
            pumped(t1, &[0], Clock::FromFirstMessage, "worker", |t| {
                t.send(0, b"done").unwrap()
            })
        });
        pumped(t0, &[1], Clock::FromStart, "rank 0", |t| {
            assert_eq!(t.recv(1).unwrap(), b"done");
            t.release(1);
            std::thread::sleep(4 * bound);
        });
    });
    // Without the release the pump would have aborted the party (the team's poll fails).
    assert!(team[0].poll(1).is_ok());
}

/// Rank 0 starts pumping only once it has reached its peer, which may take longer than
/// the silence bound (the peer's cluster starts later): its workers wait for its first
/// message without counting.
#[test]
fn workers_wait_for_rank_0_to_reach_its_peer() {
    use pgc_protocol::cluster::heartbeat::{Clock, pumped};
    let bound = Duration::from_millis(500);
    let pc = mixed_circuit(2, 4);
    let team = MemoryTeam::new(2, bound);
    let (t0, t1) = (&team[0], &team[1]);
    let worker = std::thread::scope(|s| {
        let pc = &pc;
        let worker = s.spawn(move || {
            let (opener, _) = MemoryStreams::pair(TIMEOUT);
            let mut links = MemoryLinks {
                opener,
                break_after: None,
            };
            run_worker(Party::A, t1, pc, &mut links, &AtomicU64::new(0))
        });
        // "Waiting for the peer" for 4 bounds, then the run (here: stopped at once).
        std::thread::sleep(4 * bound);
        pumped(t0, &[1], Clock::FromStart, "rank 0", |t| {
            t.send(1, &Msg::Stop.to_bytes())
        })
        .unwrap();
        worker.join().unwrap()
    });
    assert_eq!(worker.unwrap(), WorkerEnd::Stopped);
}

/// Runs worker rank 1 of party A (of 2) on `pc`, with this thread as its rank 0 sending
/// `messages` (each answered by the worker), until the worker reports a failure: what it
/// reported to rank 0 and what it returned once stopped.
fn worker_a_refuses(pc: &ParallelCircuit, messages: &[Msg]) -> (String, String) {
    let team = MemoryTeam::new(2, TIMEOUT);
    let (t0, t1) = (&team[0], &team[1]);
    // The next message of the worker that is not a heartbeat.
    let hear = || loop {
        let m = t0.recv(1).expect("the worker answers");
        if !m.is_empty() {
            return Msg::from_bytes(&m, "the worker").expect("a message");
        }
    };
    std::thread::scope(|s| {
        let worker = s.spawn(move || {
            // The peer rank's end stays open: the worker's streams are made, never used.
            let (opener, _peer) = MemoryStreams::pair(TIMEOUT);
            let mut links = MemoryLinks {
                opener,
                break_after: None,
            };
            run_worker(Party::A, t1, pc, &mut links, &AtomicU64::new(0))
        });
        for m in messages {
            t0.send(1, &m.to_bytes()).unwrap();
            if let Msg::Failed(why) = hear() {
                t0.send(1, &Msg::Stop.to_bytes()).unwrap();
                let end = worker.join().unwrap();
                return (why, end.expect_err("the worker fails").to_string());
            }
        }
        panic!("the worker accepted every message");
    })
}

/// Rank 0's set-up of a garbling worker, with Δ = `delta`.
fn setup_a(pc: &ParallelCircuit, delta: u128) -> Msg {
    Msg::Setup {
        threads: 1,
        token: [7; 16],
        fingerprint: pc.fingerprint(),
        hash_key: pgc_crypto::Block(11),
        delta: Some(pgc_crypto::Block(delta)),
        peer_host: "127.0.0.1".into(),
    }
}

/// A region whose first AND is not where the circuit puts it (fuzz finding 3 of
/// docs/fuzzing.md, `cluster_rank`: an index near 2^64 overflowed the tweak arithmetic):
/// the worker refuses it by name, tells rank 0, and returns the failure once stopped.
#[test]
fn a_worker_refuses_a_region_at_another_and_index() {
    use pgc_circuit::Phase;
    let pc = mixed_circuit(2, 4);
    let phase = pc
        .phases
        .iter()
        .position(|p| matches!(p, Phase::Region(_)))
        .expect("the circuit has a region");
    let region = Msg::Region {
        phase: phase as u32,
        and_base: u64::MAX - 2,
        labels: Vec::new(),
    };
    let messages = [setup_a(&pc, 13), Msg::Peer { advert: None }, region];
    let (reported, returned) = worker_a_refuses(&pc, &messages);
    assert!(reported.contains("starts at AND"), "{reported}");
    assert!(
        returned.contains(&format!("phase {phase} starting at AND")),
        "{returned}"
    );
}

/// A garbling worker's Δ must have lsb 1 (point-and-permute; fuzz finding 4 of
/// docs/fuzzing.md, `cluster_rank`: the garbling kernel asserted it); the worker refuses
/// one without at the set-up, without showing it.
#[test]
fn a_worker_refuses_a_delta_without_its_permute_bit() {
    let pc = mixed_circuit(2, 4);
    let delta = 0x1234_5678_9abc_def0_u128;
    let (reported, returned) = worker_a_refuses(&pc, &[setup_a(&pc, delta)]);
    assert!(reported.contains("lowest bit"), "{reported}");
    assert!(returned.contains("lowest bit"), "{returned}");
    assert!(
        !returned.contains("1234"),
        "Δ stays out of the error: {returned}"
    );
}
