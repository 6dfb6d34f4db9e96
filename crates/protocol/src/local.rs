//! Both parties in one process, talking over a real loopback TCP connection: for `pgc local`,
//! `pgc demo`, benchmarks and tests.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use pgc_circuit::{GateSource, ParallelCircuit, Visibility};
use pgc_net::{Channel, LinkShape, NetError, ShapedChannel, SharedLink, TcpChannel};

use crate::parallel::{ParallelConfig, TcpAcceptStreams, TcpConnectStreams, run_parallel};
use crate::yao::{
    Outcome, Party, ProtocolError, all_visible, run_evaluator_with_visibility,
    run_garbler_with_visibility,
};

/// Runs the garbler and the evaluator on two threads connected through 127.0.0.1; both
/// learn every output. `progress` follows the evaluator. Returns (A's outcome, B's outcome).
pub fn run_local_tcp<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    a_inputs: &[Vec<bool>],
    b_inputs: &[Vec<bool>],
    timeout: Duration,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<(Outcome, Outcome), ProtocolError> {
    let visibility = all_visible(circuit.layout());
    run_local_tcp_with_visibility(
        circuit,
        owners,
        &visibility,
        a_inputs,
        b_inputs,
        timeout,
        progress,
    )
}

/// [`run_local_tcp`] with per-output visibility (see
/// [`run_garbler_with_visibility`](crate::yao::run_garbler_with_visibility)).
pub fn run_local_tcp_with_visibility<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    visibility: &[Visibility],
    a_inputs: &[Vec<bool>],
    b_inputs: &[Vec<bool>],
    timeout: Duration,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<(Outcome, Outcome), ProtocolError> {
    let listener = TcpChannel::listen("127.0.0.1:0")?;
    let addr = listener.local_addr().to_string();
    std::thread::scope(|s| {
        let garbler = s.spawn(|| -> Result<Outcome, ProtocolError> {
            let mut ch = listener.accept(timeout)?;
            ch.set_timeout(Some(timeout))?;
            run_garbler_with_visibility(&mut ch, circuit, owners, visibility, a_inputs, &mut |_| {})
        });
        let evaluated = (|| -> Result<Outcome, ProtocolError> {
            let mut ch = TcpChannel::connect(&addr, timeout)?;
            ch.set_timeout(Some(timeout))?;
            run_evaluator_with_visibility(&mut ch, circuit, owners, visibility, b_inputs, progress)
        })();
        let garbled = garbler
            .join()
            .unwrap_or_else(|_| Err(ProtocolError::Peer("the garbler thread panicked".into())));
        match (garbled, evaluated) {
            (Ok(a), Ok(b)) => Ok((a, b)),
            // Report the cause, not the other side's "peer closed the connection".
            (Err(e), Err(ProtocolError::Net(NetError::Closed))) | (Err(e), Ok(_)) => Err(e),
            (_, Err(e)) => Err(e),
        }
    })
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
    let listener = TcpChannel::listen("127.0.0.1:0")?;
    let addr = listener.local_addr().to_string();
    let link = |_| (!shape.is_none()).then(|| SharedLink::new(shape));
    let wrap = |ch: TcpChannel, link: &Option<SharedLink>| -> Result<Box<dyn Channel>, NetError> {
        Ok(match link {
            Some(l) => Box::new(ShapedChannel::wrap_tcp(ch, l.clone())?),
            None => Box::new(ch),
        })
    };
    let a_progress = AtomicU64::new(0);
    std::thread::scope(|s| {
        let garbler = s.spawn(|| -> Result<Outcome, ProtocolError> {
            let a_link = link(Party::A);
            let mut ch = listener.accept(timeout)?;
            ch.set_timeout(Some(timeout))?;
            let mut ch = wrap(ch, &a_link)?;
            let mut streams = TcpAcceptStreams {
                listener: &listener,
                timeout,
                link: a_link,
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
            let mut ch = TcpChannel::connect(&addr, timeout)?;
            ch.set_timeout(Some(timeout))?;
            let mut ch = wrap(ch, &b_link)?;
            let mut streams = TcpConnectStreams {
                addr: addr.clone(),
                timeout,
                link: b_link,
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
        let garbled = garbler
            .join()
            .unwrap_or_else(|_| Err(ProtocolError::Peer("the garbler thread panicked".into())));
        match (garbled, evaluated) {
            (Ok(a), Ok(b)) => Ok((a, b)),
            (Err(e), Err(ProtocolError::Net(NetError::Closed))) | (Err(e), Ok(_)) => Err(e),
            (_, Err(e)) => Err(e),
        }
    })
}
