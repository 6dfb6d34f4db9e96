//! `pgc run … --cluster`: this party is a cluster of MPI ranks, launched with
//! `mpirun -np K` or `srun -n K` (the same K on both sides). Rank 0 connects to the peer's
//! rank 0 as a plain `pgc run` does and coordinates; worker rank i listens on (or connects
//! to the address advertised by the peer's rank i at) the base port + i, under the same
//! channel security. The protocols are `pgc_protocol::cluster` (semi-honest: region
//! instances) and `pgc_protocol::malicious::cluster` (`--security malicious`: cut-and-choose
//! copies); their module docs have the message flows. This file only wires the command line
//! to them. Built only with the cargo
//! feature `mpi`; without it `--cluster` says how to build it.

use anyhow::Result;
use clap::Args;

use super::{PartySession as Session, RunArgs};

/// The `--cluster` flag of `pgc run`.
#[derive(Args, Debug, Default)]
pub struct ClusterArgs {
    /// Run this party as a cluster of MPI ranks: launch the same command with
    /// `mpirun -np K …` or `srun -n K …` (the same K on both sides). Rank 0 talks to the
    /// peer's rank 0 on --listen/--connect's port P; rank i to the peer's rank i on port
    /// P+i of the listening party. Semi-honest: spreads the region instances of a parallel
    /// program over the ranks (and each rank's --threads). `--security malicious`: spreads
    /// the cut-and-choose copies (each rank garbles, checks or evaluates its share; rank 0
    /// keeps the commitments, OT, check set, majority and MAC), with the same guarantee as
    /// one process: a cheating peer succeeds with probability at most 2^-S. Dual execution
    /// is refused. A party's own ranks share its secrets over MPI unencrypted (A: Δ or the
    /// copy seeds; B: its input labels), so its nodes and their network are one trust
    /// domain. A rank silent for --timeout (3 to 10 s) fails the run. Needs pgc built with
    /// `--features mpi`.
    #[arg(long, conflicts_with = "serve", help_heading = "Connection")]
    pub cluster: bool,
}

/// How to get a build with `--cluster`.
const BUILD_HINT: &str = "--cluster needs pgc built with MPI support: install OpenMPI and \
libclang (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev libclang-dev), then \
cargo build --release --features mpi";

#[cfg(not(feature = "mpi"))]
mod imp {
    use super::*;

    /// Never made: without MPI there is no cluster run.
    pub enum Cluster {}

    impl Cluster {
        pub fn is_worker(&self) -> bool {
            match *self {}
        }
    }

    pub fn start(args: &RunArgs) -> Result<Option<Cluster>> {
        if args.cluster.cluster {
            anyhow::bail!("{BUILD_HINT}");
        }
        Ok(None)
    }

    pub fn run(cluster: Cluster, _session: &Session, _args: &RunArgs) -> Result<()> {
        match cluster {}
    }
}

#[cfg(feature = "mpi")]
mod imp {
    use std::sync::atomic::AtomicU64;

    use anyhow::{Context, bail};
    use pgc_net::TcpChannel;
    use pgc_net::connect::{accept_peer, connect_peer_noting};
    use pgc_protocol::cluster::mpi::MpiTeam;
    use pgc_protocol::cluster::{
        TcpRankLinks, Team, WorkerEnd, heartbeat, rank_port, run_coordinator, run_worker,
    };
    use pgc_protocol::malicious::{run_cut_and_choose_coordinator, run_cut_and_choose_worker};
    use pgc_protocol::parallel::{
        ParallelExtras, ParallelMode, StreamOpener, TcpAcceptStreams, TcpConnectStreams,
    };
    use pgc_protocol::{ProtocolChoice, Security};
    use serde_json::json;

    use super::*;

    /// How long a failed worker leaves its rank 0 to report and end the party before it
    /// ends the party itself.
    const ORPHAN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

    /// This process's place in its party's cluster (MPI is initialized).
    pub struct Cluster {
        team: MpiTeam,
    }

    impl Cluster {
        pub fn is_worker(&self) -> bool {
            self.team.rank() != 0
        }
    }

    /// Initializes MPI when `--cluster` is given.
    pub fn start(args: &RunArgs) -> Result<Option<Cluster>> {
        let _ = BUILD_HINT;
        if !args.cluster.cluster {
            return Ok(None);
        }
        let team = MpiTeam::init().context("starting MPI for --cluster")?;
        Ok(Some(Cluster { team }))
    }

    /// `host:port` with the port moved up by `rank`.
    fn rank_address(addr: &str, rank: usize) -> Result<String> {
        let (host, port) = addr
            .rsplit_once(':')
            .with_context(|| format!("--listen {addr}: expected HOST:PORT"))?;
        let port: u16 = port
            .parse()
            .with_context(|| format!("--listen {addr}: the port is not a number"))?;
        if port == 0 {
            bail!(
                "--listen {addr}: a cluster run needs a fixed base port (rank i listens on \
                 port + i), not 0"
            );
        }
        Ok(format!("{host}:{}", rank_port(port, rank)?))
    }

    pub fn run(mut cluster: Cluster, session: &Session, args: &RunArgs) -> Result<()> {
        // A rank silent (not even heartbeats) for this long is lost: the run fails. A worker
        // still starting (loading the program) has the network timeout to say its first word.
        let silence = heartbeat::silence_bound(session.timeout);
        cluster
            .team
            .set_silence_bound(silence, session.timeout.max(silence));
        let team = &cluster.team;
        let (rank, k) = (team.rank(), team.size());
        let me = session.me;
        let who = format!("party {} rank {rank} (of {k})", me.letter());
        let result = check(session).and_then(|what| {
            // After the check, so options a cluster refuses print only the refusal.
            session.describe_on_stderr();
            if rank == 0 {
                coordinate(team, session, args, what)
            } else {
                work(team, session, args, what)
            }
        });
        match result {
            Ok(()) => Ok(()),
            // A rank that fails (rank 0, or a worker before it could tell rank 0, e.g. its
            // port is taken) reports and ends its whole party, so that no rank waits
            // forever; a worker's failure in the run is reported by rank 0 as well.
            Err(e) => {
                eprintln!("error: {who}: {}", pgc_engine::error_text(&e));
                team.abort(1);
                Err(e)
            }
        }
    }

    /// What the ranks spread.
    #[derive(Clone, Copy)]
    enum Spread<'a> {
        /// Semi-honest: the region instances of the program's parallel form.
        Regions(&'a pgc_circuit::ParallelCircuit),
        /// `--security malicious`: the cut-and-choose copies.
        Copies { stat_sec: u32 },
    }

    /// What a cluster run needs from the program and options.
    fn check(session: &Session) -> Result<Spread<'_>> {
        if session.protocol != ProtocolChoice::Yao {
            bail!("--cluster runs Yao's protocol: add --protocol yao");
        }
        match session.level {
            Security::SemiHonest => {}
            Security::Malicious { stat_sec } => return Ok(Spread::Copies { stat_sec }),
            Security::DualExecution => bail!(
                "--cluster spreads region instances (semi-honest) or cut-and-choose copies \
                 (--security malicious); dual execution has neither (two circuits, one per \
                 party): drop --cluster or use --security malicious"
            ),
        }
        if session.config.mode == ParallelMode::Ipp {
            bail!(
                "--cluster spreads region instances over the ranks (CGP): use --parallel cgp or auto, not ipp"
            );
        }
        session.parallel.as_ref().map(Spread::Regions).context(
            "--cluster spreads the region instances of a parallel program over the ranks, \
             and this program has no parallel form under these options (use a compiled \
             program with parallel loops, unrolled, with --parallel cgp or auto)",
        )
    }

    fn coordinate(team: &MpiTeam, session: &Session, args: &RunArgs, what: Spread) -> Result<()> {
        let me = session.me;
        let listener = match &args.listen {
            Some(addr) => Some(TcpChannel::listen(addr)?),
            None => None,
        };
        let mut ch = match (&listener, &args.connect) {
            (Some(l), _) => {
                if !session.quiet {
                    eprintln!(
                        "party {}: rank 0 of {}: waiting for the peer on {}",
                        me.letter(),
                        team.size(),
                        l.local_addr()
                    );
                }
                accept_peer(l, &session.security, session.timeout, &session.notes)?
            }
            (None, Some(addr)) => {
                connect_peer_noting(addr, &session.security, session.timeout, &session.notes)?
            }
            (None, None) => unreachable!("clap requires --listen or --connect"),
        };
        ch.set_timeout(Some(session.timeout))?;
        let peer_host = ch.peer_addr()?.ip().to_string();
        let mut ch = ch.shaped(&session.link)?;
        let mut opener: Box<dyn StreamOpener + '_> = match (&listener, &args.connect) {
            (Some(l), _) => Box::new(TcpAcceptStreams {
                listener: l,
                timeout: session.timeout,
                link: session.link.clone(),
                security: session.security.clone(),
                notes: session.notes.clone(),
            }),
            (None, Some(addr)) => Box::new(TcpConnectStreams {
                addr: addr.clone(),
                timeout: session.timeout,
                link: session.link.clone(),
                security: session.security.clone(),
            }),
            (None, None) => unreachable!("clap requires --listen or --connect"),
        };
        let value_format = match &session.program.interface {
            Some(iface) => pgc_circuit::ValueFormat::typed(iface),
            None => pgc_circuit::ValueFormat::Untyped(session.bit_order),
        };
        let extras = ParallelExtras {
            value_format: value_format.clone(),
            ..ParallelExtras::default()
        };
        let progress = AtomicU64::new(0);
        let pc = match what {
            Spread::Regions(pc) => pc,
            Spread::Copies { stat_sec } => {
                let outcome = run_cut_and_choose_coordinator(
                    team,
                    &peer_host,
                    &mut ch,
                    &pgc_circuit::WithValueFormat::new(&session.program.circuit, value_format),
                    &session.owners,
                    &session.visibility,
                    me,
                    &session.inputs,
                    stat_sec,
                    session.config.threads,
                    &progress,
                )?;
                crate::commands::print_party(
                    session,
                    &outcome,
                    args,
                    json!({ "cluster_ranks": team.size() }),
                );
                return Ok(());
            }
        };
        let outcome = run_coordinator(
            me,
            team,
            &peer_host,
            &mut *ch,
            &mut *opener,
            pc,
            &session.owners,
            &session.visibility,
            &session.inputs,
            &session.config,
            &progress,
            &extras,
        )?;
        crate::commands::print_party(
            session,
            &outcome,
            args,
            json!({ "cluster_ranks": team.size() }),
        );
        Ok(())
    }

    fn work(team: &MpiTeam, session: &Session, args: &RunArgs, what: Spread) -> Result<()> {
        let rank = team.rank();
        let mut links = match &args.listen {
            Some(addr) => {
                let addr = rank_address(addr, rank)?;
                TcpRankLinks::Listen {
                    listener: TcpChannel::listen(&addr)
                        .with_context(|| format!("rank {rank} listening on {addr}"))?,
                    security: session.security.clone(),
                    timeout: session.timeout,
                    link: session.link.clone(),
                    notes: session.notes.clone(),
                }
            }
            None => TcpRankLinks::Connect {
                security: session.security.clone(),
                timeout: session.timeout,
                link: session.link.clone(),
            },
        };
        let progress = AtomicU64::new(0);
        if std::env::var("PGC_TEST_SILENT_RANK").is_ok_and(|r| r == rank.to_string()) {
            // Test hook (tests/cluster.rs): this rank stops answering, as a stopped process
            // would; its party must fail naming it and end it (MPI_Abort).
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
        let end = match what {
            Spread::Regions(pc) => run_worker(session.me, team, pc, &mut links, &progress),
            Spread::Copies { .. } => run_cut_and_choose_worker(
                session.me,
                team,
                &session.program.circuit,
                &mut links,
                &progress,
            ),
        };
        match end {
            Ok(WorkerEnd::Finished(_)) => Ok(()),
            // Rank 0 reports the failure (naming this rank if it failed here) and ends the
            // party (MPI_Abort), which ends this rank too, waiting in MPI_Finalize.
            Ok(WorkerEnd::Stopped) => Ok(()),
            Err(e) => {
                eprintln!(
                    "error: party {} rank {rank} (of {}): {e}",
                    session.me.letter(),
                    team.size()
                );
                // Rank 0 ends the party once it has reported; if it cannot (it is the one
                // lost), this rank does, so that no rank of the party hangs.
                std::thread::sleep(ORPHAN_GRACE);
                team.abort(1);
                Ok(())
            }
        }
    }
}

pub use imp::{run, start};
