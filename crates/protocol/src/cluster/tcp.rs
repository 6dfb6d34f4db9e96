//! The TCP connections between rank i of A and rank i of B (i > 0), under the same
//! channel security as the main connection.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use pgc_net::{Channel, ChannelSecurity, RefusalNotes, SharedLink, TcpListenerHandle};

use super::RankLinks;
use crate::parallel::{StreamOpener, TcpAcceptStreams, TcpConnectStreams};
use crate::yao::ProtocolError;

/// A worker rank's side of its rank-pair connections.
pub enum TcpRankLinks {
    /// The listening party: this rank accepts its peer rank's streams on `listener`
    /// (bound at the base port + rank, [`super::rank_port`]).
    Listen {
        listener: TcpListenerHandle,
        security: ChannelSecurity,
        timeout: Duration,
        link: Option<SharedLink>,
        notes: RefusalNotes,
    },
    /// The connecting party: this rank connects to the address its peer rank advertised.
    Connect {
        security: ChannelSecurity,
        timeout: Duration,
        link: Option<SharedLink>,
    },
}

impl RankLinks for TcpRankLinks {
    fn advertise(&mut self, peer_host: &str) -> Result<Option<String>, ProtocolError> {
        match self {
            TcpRankLinks::Listen { listener, .. } => {
                let bound = listener.local_addr();
                let ip = if bound.ip().is_unspecified() {
                    route_toward(peer_host)?
                } else {
                    bound.ip()
                };
                Ok(Some(SocketAddr::new(ip, bound.port()).to_string()))
            }
            TcpRankLinks::Connect { .. } => Ok(None),
        }
    }

    fn open(
        &mut self,
        peer_advert: Option<&str>,
        n: usize,
        token: [u8; 16],
    ) -> Result<Vec<Box<dyn Channel>>, ProtocolError> {
        let streams = match self {
            TcpRankLinks::Listen {
                listener,
                security,
                timeout,
                link,
                notes,
            } => TcpAcceptStreams {
                listener,
                timeout: *timeout,
                link: link.clone(),
                security: security.clone(),
                notes: notes.clone(),
            }
            .open(n, token)?,
            TcpRankLinks::Connect {
                security,
                timeout,
                link,
            } => {
                let addr = peer_advert.ok_or_else(|| {
                    ProtocolError::Peer(
                        "the peer's rank listed no address (both parties connect?)".into(),
                    )
                })?;
                TcpConnectStreams {
                    addr: addr.to_string(),
                    timeout: *timeout,
                    link: link.clone(),
                    security: security.clone(),
                }
                .open(n, token)?
            }
        };
        Ok(streams)
    }
}

/// The local address of the interface that routes toward `host` (a UDP "connect" sends
/// nothing; it only picks the route).
pub fn route_toward(host: &str) -> Result<IpAddr, ProtocolError> {
    let unroutable = |e: std::io::Error| {
        ProtocolError::Input(format!(
            "this rank listens on the unspecified address and cannot tell which of its \
             addresses reaches the peer at {host} ({e}); listen on a specific address"
        ))
    };
    let target: IpAddr = host
        .parse()
        .map_err(|_| unroutable(std::io::Error::other("not an IP address")))?;
    let any = if target.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let socket = UdpSocket::bind(any).map_err(unroutable)?;
    socket.connect((target, 9)).map_err(unroutable)?;
    Ok(socket.local_addr().map_err(unroutable)?.ip())
}
