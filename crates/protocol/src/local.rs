//! Both parties in one process, talking over a real loopback TCP connection: for `pgc local`,
//! `pgc demo`, benchmarks and tests. The connection is TLS with fresh keys by default, as
//! between two machines ([`LocalSecurity`]); plaintext on request, to compare. The
//! sequential protocol runs at any [`Security`] level ([`run_local_tcp_with`]); the
//! parallel one is semi-honest only.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use pgc_circuit::{GateSource, ParallelCircuit, Visibility};
use pgc_net::connect::{accept_peer, connect_peer, no_notes};
use pgc_net::tcp::DEFAULT_TCP_TIMEOUT;
use pgc_net::{ChannelSecurity, LinkShape, NetError, SharedLink, TcpChannel};

use crate::gmw::{GmwConfig, run_gmw};
use crate::gpu::Device;
use crate::malicious::{Security, run_secured};
use crate::parallel::{ParallelConfig, TcpAcceptStreams, TcpConnectStreams, run_parallel};
use crate::yao::{Outcome, Party, ProtocolError, RunOptions, all_visible};
use pgc_garble::Garbling;

/// How the two parties of a local run connect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LocalSecurity {
    /// TLS 1.3 with fresh keys for each run, each party pinning the other's.
    #[default]
    Tls,
    /// Plain TCP (to measure what TLS costs).
    Plaintext,
}

impl LocalSecurity {
    /// (A's, B's) settings for one run.
    fn settings(self) -> Result<(ChannelSecurity, ChannelSecurity), NetError> {
        match self {
            LocalSecurity::Tls => ChannelSecurity::loopback_pair(),
            LocalSecurity::Plaintext => {
                Ok((ChannelSecurity::Plaintext, ChannelSecurity::Plaintext))
            }
        }
    }
}

/// Runs the garbler and the evaluator on two threads connected through 127.0.0.1 (TLS);
/// both learn every output. `progress` follows the evaluator. Returns (A's outcome, B's outcome).
pub fn run_local_tcp<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    a_inputs: &[Vec<bool>],
    b_inputs: &[Vec<bool>],
    timeout: Duration,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<(Outcome, Outcome), ProtocolError> {
    let visibility = all_visible(circuit.layout());
    let options = LocalTcpOptions {
        timeout,
        ..LocalTcpOptions::default()
    };
    run_local_tcp_with(
        circuit,
        owners,
        &visibility,
        a_inputs,
        b_inputs,
        options,
        progress,
    )
}

/// How [`run_local_tcp_with`] connects and runs the two parties; the default is
/// [`run_local_tcp`]'s: TLS, semi-honest Yao, one thread, half-gates, both on the CPU, an
/// unshaped link, [`DEFAULT_TCP_TIMEOUT`].
#[derive(Clone, Copy, Debug)]
pub struct LocalTcpOptions {
    /// Each connection's timeout per operation.
    pub timeout: Duration,
    /// TLS or plaintext on the loopback connection.
    pub channel: LocalSecurity,
    /// Security against a cheating peer: each side runs [`run_secured`].
    pub level: Security,
    /// Worker threads per party (a compact circuit's calls, the malicious protocols'
    /// circuit copies).
    pub threads: usize,
    /// Semi-honest Yao's garbling scheme.
    pub garbling: Garbling,
    /// A's device and B's.
    pub devices: [Device; 2],
    /// Each party's sends go through its own simulated link of this rate and one-way
    /// latency, as if the parties were on a WAN.
    pub shape: LinkShape,
}

impl Default for LocalTcpOptions {
    fn default() -> Self {
        LocalTcpOptions {
            timeout: DEFAULT_TCP_TIMEOUT,
            channel: LocalSecurity::Tls,
            level: Security::SemiHonest,
            threads: 1,
            garbling: Garbling::HalfGates,
            devices: [Device::Cpu; 2],
            shape: LinkShape::default(),
        }
    }
}

/// [`run_local_tcp`] with per-output visibility (see
/// [`run_garbler_with_visibility`](crate::yao::run_garbler_with_visibility)), run as
/// `options` say.
pub fn run_local_tcp_with<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    a_inputs: &[Vec<bool>],
    b_inputs: &[Vec<bool>],
    options: LocalTcpOptions,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<(Outcome, Outcome), ProtocolError> {
    let LocalTcpOptions {
        timeout,
        channel,
        level,
        threads,
        garbling,
        devices,
        shape,
    } = options;
    let (a_security, b_security) = channel.settings()?;
    let listener = TcpChannel::listen("127.0.0.1:0")?;
    let addr = listener.local_addr().to_string();
    let link = || (!shape.is_none()).then(|| SharedLink::new(shape));
    std::thread::scope(|s| {
        let garbler = s.spawn(|| -> Result<Outcome, ProtocolError> {
            let mut ch = accept_peer(&listener, &a_security, timeout, &no_notes())?;
            ch.set_timeout(Some(timeout))?;
            let mut ch = ch.shaped(&link())?;
            run_secured(
                &mut &mut *ch,
                circuit,
                owners,
                visibility,
                Party::A,
                a_inputs,
                level,
                RunOptions {
                    threads,
                    device: devices[0],
                    garbling,
                },
                &mut |_| {},
            )
        });
        let evaluated = (|| -> Result<Outcome, ProtocolError> {
            let mut ch = connect_peer(&addr, &b_security, timeout)?;
            ch.set_timeout(Some(timeout))?;
            let mut ch = ch.shaped(&link())?;
            run_secured(
                &mut &mut *ch,
                circuit,
                owners,
                visibility,
                Party::B,
                b_inputs,
                level,
                RunOptions {
                    threads,
                    device: devices[1],
                    garbling,
                },
                progress,
            )
        })();
        both(garbler.join(), evaluated)
    })
}

/// Both parties of a [GMW](crate::gmw) run in one process over loopback TCP. With `shape`,
/// each party's sends go through its own simulated link of that rate and one-way latency
/// (and a round may then send up to 1 MiB ahead, which the link's forwarding thread takes
/// without waiting). `progress` follows B. Returns (A's outcome, B's outcome).
#[allow(clippy::too_many_arguments)]
pub fn run_local_gmw<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    a_inputs: &[Vec<bool>],
    b_inputs: &[Vec<bool>],
    config: &GmwConfig,
    shape: LinkShape,
    timeout: Duration,
    security: LocalSecurity,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<(Outcome, Outcome), ProtocolError> {
    let (a_security, b_security) = security.settings()?;
    let listener = TcpChannel::listen("127.0.0.1:0")?;
    let addr = listener.local_addr().to_string();
    let link = || (!shape.is_none()).then(|| SharedLink::new(shape));
    let mut config = *config;
    if !shape.is_none() {
        config.send_ahead_bytes = config.send_ahead_bytes.max(SHAPED_SEND_AHEAD_BYTES);
    }
    let config = &config;
    std::thread::scope(|s| {
        let a = s.spawn(|| -> Result<Outcome, ProtocolError> {
            let ch = accept_peer(&listener, &a_security, timeout, &no_notes())?;
            let mut ch = ch;
            ch.set_timeout(Some(timeout))?;
            let mut ch = ch.shaped(&link())?;
            run_gmw(
                &mut *ch,
                circuit,
                owners,
                visibility,
                Party::A,
                a_inputs,
                config,
                &mut |_| {},
            )
        });
        let b = (|| -> Result<Outcome, ProtocolError> {
            let mut ch = connect_peer(&addr, &b_security, timeout)?;
            ch.set_timeout(Some(timeout))?;
            let mut ch = ch.shaped(&link())?;
            run_gmw(
                &mut *ch,
                circuit,
                owners,
                visibility,
                Party::B,
                b_inputs,
                config,
                progress,
            )
        })();
        both(a.join(), b)
    })
}

/// How far a GMW round may send ahead over a shaped link (whose forwarding thread takes at
/// least [`pgc_net::shaping::MIN_IN_FLIGHT_BYTES`] without waiting).
pub const SHAPED_SEND_AHEAD_BYTES: usize = 1 << 20;

/// Both parties' results: A's from its thread, B's from this one. When both failed, the
/// cause is reported, not the other side's "peer closed the connection".
fn both(
    a: std::thread::Result<Result<Outcome, ProtocolError>>,
    b: Result<Outcome, ProtocolError>,
) -> Result<(Outcome, Outcome), ProtocolError> {
    let a = a.unwrap_or_else(|_| Err(ProtocolError::Peer("party A's thread panicked".into())));
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(e), Err(ProtocolError::Net(NetError::Closed))) | (Err(e), Ok(_)) => Err(e),
        (_, Err(e)) => Err(e),
    }
}

/// Input values owned by `party`, picked from all values in circuit order.
pub fn split_inputs(owners: &[Party], values: &[Vec<bool>], party: Party) -> Vec<Vec<bool>> {
    owners
        .iter()
        .zip(values)
        .filter(|(o, _)| **o == party)
        .map(|(_, v)| v.clone())
        .collect()
}

/// Both parties of the [parallel protocol](crate::parallel) in one process over loopback
/// TCP (one main connection plus the worker streams). With `shape`, each party's sends
/// (main channel and streams together) go through its own simulated link of that rate and
/// one-way latency, as if the parties were on a WAN. `progress` counts the AND gates B has
/// garbled or evaluated so far. Returns (A's outcome, B's outcome).
#[allow(clippy::too_many_arguments)]
pub fn run_local_parallel(
    circuit: &ParallelCircuit,
    owners: &[Party],
    visibility: &[Visibility],
    a_inputs: &[Vec<bool>],
    b_inputs: &[Vec<bool>],
    config: &ParallelConfig,
    shape: LinkShape,
    timeout: Duration,
    progress: &AtomicU64,
) -> Result<(Outcome, Outcome), ProtocolError> {
    run_local_parallel_secured(
        circuit,
        owners,
        visibility,
        a_inputs,
        b_inputs,
        config,
        shape,
        timeout,
        LocalSecurity::Tls,
        progress,
    )
}

/// [`run_local_parallel`] with the connections' security chosen.
#[allow(clippy::too_many_arguments)]
pub fn run_local_parallel_secured(
    circuit: &ParallelCircuit,
    owners: &[Party],
    visibility: &[Visibility],
    a_inputs: &[Vec<bool>],
    b_inputs: &[Vec<bool>],
    config: &ParallelConfig,
    shape: LinkShape,
    timeout: Duration,
    security: LocalSecurity,
    progress: &AtomicU64,
) -> Result<(Outcome, Outcome), ProtocolError> {
    let (a_security, b_security) = security.settings()?;
    let listener = TcpChannel::listen("127.0.0.1:0")?;
    let addr = listener.local_addr().to_string();
    let link = |_| (!shape.is_none()).then(|| SharedLink::new(shape));
    let a_progress = AtomicU64::new(0);
    std::thread::scope(|s| {
        let garbler = s.spawn(|| -> Result<Outcome, ProtocolError> {
            let a_link = link(Party::A);
            let mut ch = accept_peer(&listener, &a_security, timeout, &no_notes())?;
            ch.set_timeout(Some(timeout))?;
            let mut ch = ch.shaped(&a_link)?;
            let mut streams = TcpAcceptStreams {
                listener: &listener,
                timeout,
                link: a_link,
                security: a_security.clone(),
                notes: no_notes(),
            };
            run_parallel(
                Party::A,
                &mut *ch,
                &mut streams,
                circuit,
                owners,
                visibility,
                a_inputs,
                config,
                &a_progress,
            )
        });
        let evaluated = (|| -> Result<Outcome, ProtocolError> {
            let b_link = link(Party::B);
            let mut ch = connect_peer(&addr, &b_security, timeout)?;
            ch.set_timeout(Some(timeout))?;
            let mut ch = ch.shaped(&b_link)?;
            let mut streams = TcpConnectStreams {
                addr: addr.clone(),
                timeout,
                link: b_link,
                security: b_security.clone(),
            };
            run_parallel(
                Party::B,
                &mut *ch,
                &mut streams,
                circuit,
                owners,
                visibility,
                b_inputs,
                config,
                progress,
            )
        })();
        both(garbler.join(), evaluated)
    })
}
