//! The encrypted channel: TLS 1.3 (RFC 8446, via rustls with the ring provider) over one
//! TCP connection, with mutual authentication by pinned keys.
//!
//! Each party presents a self-signed certificate made from its [`Identity`] and accepts
//! the peer's only if the SHA-256 of its SubjectPublicKeyInfo equals the pinned
//! [`Fingerprint`]; names, dates and issuers play no part. The handshake signatures are
//! still checked with the provider's `verify_tls13_signature`, so only the holder of the
//! pinned key's private half gets through. TLS 1.3 only, AES-128-GCM preferred (fastest
//! with AES-NI), no session tickets or resumption (every connection does a full handshake).
//!
//! What this guarantees: confidentiality and integrity of every byte sent, and that the
//! peer holds the pinned key. What it does not hide: how much is sent and when.
//!
//! [`TlsChannel`] keeps [`TcpChannel`](crate::TcpChannel)'s behaviour: sends are buffered
//! until `flush` or a `recv` that has to wait, the timeout is a deadline per call (and per
//! frame), counters count bytes on the wire (TLS records, so a little more than the
//! payload), and [`split`](TlsChannel::split) gives a reading and a writing half. The TLS
//! state sits behind a mutex held only while encrypting or decrypting, never across a
//! socket read or write, so the halves work in parallel.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, Connection,
    DigitallySignedStruct, DistinguishedName, OtherError, ServerConfig, ServerConnection,
    SignatureScheme,
};

use crate::keys::{Fingerprint, Identity};
use crate::tcp::{READ_BUFFER_BYTES, SocketTimer, WRITE_BUFFER_BYTES, read_by, write_all_by};
use crate::{ByteCounts, Channel, NetError};

/// The name in every certificate and ClientHello; never checked (keys are pinned instead).
const SERVER_NAME: &str = "pgc.invalid";
/// Plaintext encrypted per lock of the TLS state: bounds the ciphertext held at once.
const ENCRYPT_PIECE_BYTES: usize = 256 << 10;
/// First byte of a TLS record carrying a handshake message, and of one carrying an alert.
const TLS_HANDSHAKE: u8 = 0x16;
const TLS_ALERT: u8 = 0x15;

/// What a party needs for TLS: its certificate and key, and the peer's pinned fingerprint.
/// Cheap to clone (the configurations are shared).
#[derive(Clone)]
pub struct TlsSettings {
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    own: Fingerprint,
    peer: Fingerprint,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("own", &self.own)
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// The ring provider, TLS 1.3 suites only, AES-128-GCM first.
fn provider() -> CryptoProvider {
    use rustls::crypto::ring::cipher_suite as suites;
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![
        suites::TLS13_AES_128_GCM_SHA256,
        suites::TLS13_AES_256_GCM_SHA384,
        suites::TLS13_CHACHA20_POLY1305_SHA256,
    ];
    provider
}

impl TlsSettings {
    /// Settings for a party holding `identity` that talks only to the holder of `peer`.
    pub fn new(identity: &Identity, peer: Fingerprint) -> Result<TlsSettings, NetError> {
        let setup = |e: String| NetError::Tls(format!("could not set up TLS: {e}"));
        let key_pair = identity.key_pair().map_err(setup)?;
        let params = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()])
            .map_err(|e| setup(e.to_string()))?;
        let cert = params
            .self_signed(&key_pair)
            .map_err(|e| setup(e.to_string()))?;
        let chain = vec![cert.der().clone()];
        let key = || PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(identity.pkcs8_der().to_vec()));
        let provider = Arc::new(provider());
        let verifier = Arc::new(PinnedPeer {
            expected: peer,
            algorithms: provider.signature_verification_algorithms,
        });

        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| setup(e.to_string()))?
            .with_client_cert_verifier(verifier.clone())
            .with_single_cert(chain.clone(), key())
            .map_err(|e| setup(e.to_string()))?;
        server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        server.send_tls13_tickets = 0;
        server.max_early_data_size = 0;

        let mut client = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| setup(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_auth_cert(chain, key())
            .map_err(|e| setup(e.to_string()))?;
        client.resumption = rustls::client::Resumption::disabled();
        client.enable_early_data = false;

        Ok(TlsSettings {
            server: Arc::new(server),
            client: Arc::new(client),
            own: identity.fingerprint(),
            peer,
        })
    }

    /// This party's fingerprint.
    pub fn own_fingerprint(&self) -> Fingerprint {
        self.own
    }

    /// The fingerprint the peer must present.
    pub fn peer_fingerprint(&self) -> Fingerprint {
        self.peer
    }
}

/// The peer presented a key other than the pinned one (carried inside rustls' error).
#[derive(Debug)]
struct KeyMismatch {
    presented: Fingerprint,
}

impl std::fmt::Display for KeyMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the peer presented key {}", self.presented)
    }
}

impl std::error::Error for KeyMismatch {}

/// Accepts exactly the pinned key, as server or client certificate.
#[derive(Debug)]
struct PinnedPeer {
    expected: Fingerprint,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedPeer {
    fn check(&self, cert: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        let parsed = webpki::EndEntityCert::try_from(cert)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let presented = Fingerprint::of_spki(parsed.subject_public_key_info().as_ref());
        if presented != self.expected {
            return Err(rustls::Error::InvalidCertificate(CertificateError::Other(
                OtherError(Arc::new(KeyMismatch { presented })),
            )));
        }
        Ok(())
    }

    fn verify13(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }
}

impl ServerCertVerifier for PinnedPeer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Only TLS 1.3 is enabled, so this is never reached; refuse if it were.
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls13RequiredForQuic,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verify13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

impl ClientCertVerifier for PinnedPeer {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls13RequiredForQuic,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verify13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }
}

/// Turns a rustls error into what a user can act on: whose key was wrong, and which.
fn tls_error(e: rustls::Error, settings: &TlsSettings) -> NetError {
    use rustls::Error as E;
    match &e {
        E::InvalidCertificate(CertificateError::Other(OtherError(inner))) => {
            if let Some(m) = inner.downcast_ref::<KeyMismatch>() {
                return NetError::PeerKeyMismatch {
                    expected: settings.peer.to_string(),
                    presented: m.presented.to_string(),
                };
            }
        }
        E::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRequired
            | AlertDescription::DecryptError,
        ) => {
            return NetError::KeyRefusedByPeer {
                ours: settings.own.to_string(),
            };
        }
        E::NoCertificatesPresented => {
            return NetError::Tls("the peer presented no key".into());
        }
        _ => {}
    }
    NetError::Tls(e.to_string())
}

/// Closes our direction and reads what the peer still sends for a moment, so that a
/// last message (an alert, a refusal) reaches it instead of being lost to a reset, which
/// closing with unread data would cause.
pub(crate) fn linger_close(stream: &TcpStream) {
    let until = Instant::now() + Duration::from_millis(250);
    let _ = stream.shutdown(Shutdown::Write);
    let mut sink = [0u8; 4096];
    let mut reader = stream;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        if stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .is_err()
        {
            break;
        }
        match reader.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

fn lock(conn: &Mutex<Connection>) -> Result<MutexGuard<'_, Connection>, NetError> {
    conn.lock()
        .map_err(|_| NetError::Tls("the TLS state was poisoned by a panic".into()))
}

/// A [`Channel`] over TLS 1.3 on one TCP connection (see the module docs).
pub struct TlsChannel {
    stream: TcpStream,
    conn: Arc<Mutex<Connection>>,
    /// Plaintext sent but not yet encrypted.
    write_buf: Vec<u8>,
    /// Ciphertext read from the socket, not yet handed to rustls: `cipher_in[pos..len]`.
    cipher_in: Box<[u8]>,
    cipher_pos: usize,
    cipher_len: usize,
    /// Scratch space for ciphertext on its way out.
    cipher_out: Vec<u8>,
    counts: ByteCounts,
    timer: SocketTimer,
    /// False for the reading half of a split: only one half may write to the socket, or
    /// records could interleave out of order.
    writes: bool,
    settings: TlsSettings,
}

impl TlsChannel {
    /// Runs the server side of the handshake on an accepted connection, by `deadline`.
    pub fn accept(
        stream: TcpStream,
        settings: &TlsSettings,
        deadline: Instant,
    ) -> Result<TlsChannel, NetError> {
        let conn =
            ServerConnection::new(settings.server.clone()).map_err(|e| tls_error(e, settings))?;
        TlsChannel::handshake(stream, Connection::Server(conn), settings, deadline)
    }

    /// Runs the client side of the handshake on a connected socket, by `deadline`.
    pub fn connect(
        stream: TcpStream,
        settings: &TlsSettings,
        deadline: Instant,
    ) -> Result<TlsChannel, NetError> {
        let name = ServerName::try_from(SERVER_NAME).expect("a valid DNS name");
        let conn = ClientConnection::new(settings.client.clone(), name)
            .map_err(|e| tls_error(e, settings))?;
        TlsChannel::handshake(stream, Connection::Client(conn), settings, deadline)
    }

    fn handshake(
        stream: TcpStream,
        mut conn: Connection,
        settings: &TlsSettings,
        deadline: Instant,
    ) -> Result<TlsChannel, NetError> {
        stream.set_nodelay(true)?;
        let socket = socket2::SockRef::from(&stream);
        let _ = socket.set_send_buffer_size(crate::tcp::SOCKET_BUFFER_BYTES);
        let _ = socket.set_recv_buffer_size(crate::tcp::SOCKET_BUFFER_BYTES);
        // Each sends as much as it will, so no size limit is needed on rustls' buffer; the
        // pieces are bounded by [`ENCRYPT_PIECE_BYTES`] instead.
        conn.set_buffer_limit(None);
        let mut channel = TlsChannel {
            stream,
            conn: Arc::new(Mutex::new(conn)),
            write_buf: Vec::with_capacity(WRITE_BUFFER_BYTES),
            cipher_in: vec![0u8; READ_BUFFER_BYTES].into_boxed_slice(),
            cipher_pos: 0,
            cipher_len: 0,
            cipher_out: Vec::new(),
            counts: ByteCounts::default(),
            timer: SocketTimer::default(),
            writes: true,
            settings: settings.clone(),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        channel.timer.set(&channel.stream, Some(left))?;
        let is_client = matches!(&*lock(&channel.conn)?, Connection::Client(_));
        let mut first_read = true;
        loop {
            let handshaking = channel.take_tls_output()?;
            channel.write_cipher_out(Some(deadline))?;
            if !handshaking {
                break;
            }
            let k = read_by(
                &mut channel.stream,
                &mut channel.timer,
                &mut channel.cipher_in,
                Some(deadline),
            )?;
            channel.counts.received += k as u64;
            // A server answers a ClientHello with a handshake record or an alert; anything
            // else means the peer does not speak TLS.
            if is_client && first_read && !matches!(channel.cipher_in[0], TLS_HANDSHAKE | TLS_ALERT)
            {
                return Err(NetError::NotTls);
            }
            first_read = false;
            channel.cipher_pos = 0;
            channel.cipher_len = k;
            if let Err(e) = channel.feed_cipher() {
                // Tell the peer why (rustls queued an alert), best effort.
                if channel.take_tls_output().is_ok() {
                    let _ = channel.write_cipher_out(Some(deadline));
                }
                linger_close(&channel.stream);
                return Err(e);
            }
        }
        Ok(channel)
    }

    /// Moves the TLS records rustls has ready into `cipher_out`; returns whether the
    /// handshake is still going on.
    fn take_tls_output(&mut self) -> Result<bool, NetError> {
        let conn = self.conn.clone();
        let mut conn = lock(&conn)?;
        self.cipher_out.clear();
        while conn.wants_write() {
            conn.write_tls(&mut self.cipher_out)?;
        }
        Ok(conn.is_handshaking())
    }

    /// How long each call may take; `None` waits forever.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<(), NetError> {
        self.timer.set(&self.stream, timeout)
    }

    /// A second handle on the socket, e.g. for a watchdog that shuts the connection down.
    pub fn try_clone_socket(&self) -> Result<TcpStream, NetError> {
        Ok(self.stream.try_clone()?)
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr, NetError> {
        Ok(self.stream.peer_addr()?)
    }

    /// The negotiated TLS version and cipher suite, e.g. "TLSv1_3 TLS13_AES_128_GCM_SHA256".
    pub fn protocol_description(&self) -> String {
        let Ok(conn) = lock(&self.conn) else {
            return "unknown".into();
        };
        format!(
            "{:?} {:?}",
            conn.protocol_version(),
            conn.negotiated_cipher_suite().map(|s| s.suite())
        )
    }

    /// The fingerprint the peer presented (and that was pinned).
    pub fn peer_fingerprint(&self) -> Fingerprint {
        self.settings.peer
    }

    /// Splits into a reading half and a writing half, `(reader, writer)`, as
    /// [`TcpChannel::split`](crate::TcpChannel::split) does: both share the socket and the
    /// TLS state; unflushed sends move to the writer, ciphertext read ahead and the counters
    /// so far stay with the reader.
    pub fn split(mut self) -> Result<(TlsChannel, TlsChannel), NetError> {
        let mut writer = TlsChannel {
            stream: self.stream.try_clone()?,
            conn: self.conn.clone(),
            write_buf: std::mem::take(&mut self.write_buf),
            cipher_in: Box::default(),
            cipher_pos: 0,
            cipher_len: 0,
            cipher_out: Vec::new(),
            counts: ByteCounts::default(),
            timer: SocketTimer::default(),
            writes: true,
            settings: self.settings.clone(),
        };
        writer.timer.set(&writer.stream, self.timer.timeout)?;
        self.timer.set(&self.stream, self.timer.timeout)?;
        self.writes = false;
        Ok((self, writer))
    }

    /// Writes `cipher_out` to the socket by `deadline`, counting it.
    fn write_cipher_out(&mut self, deadline: Option<Instant>) -> Result<(), NetError> {
        let counts = &mut self.counts;
        let result = write_all_by(
            &mut self.stream,
            &mut self.timer,
            &self.cipher_out,
            deadline,
            |k| counts.sent += k as u64,
        );
        self.cipher_out.clear();
        result
    }

    /// Encrypts `plaintext` and writes it out by `deadline`.
    fn encrypt_and_write(
        &mut self,
        plaintext: &[u8],
        deadline: Option<Instant>,
    ) -> Result<(), NetError> {
        debug_assert!(self.writes);
        for piece in plaintext.chunks(ENCRYPT_PIECE_BYTES) {
            {
                let conn = self.conn.clone();
                let mut conn = lock(&conn)?;
                conn.writer().write_all(piece)?;
                while conn.wants_write() {
                    conn.write_tls(&mut self.cipher_out)?;
                }
            }
            self.write_cipher_out(deadline)?;
        }
        Ok(())
    }

    fn flush_write_buf(&mut self, deadline: Option<Instant>) -> Result<(), NetError> {
        if self.write_buf.is_empty() || !self.writes {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.write_buf);
        let result = self.encrypt_and_write(&buf, deadline);
        self.write_buf = buf;
        self.write_buf.clear();
        result
    }

    /// Hands the ciphertext read ahead to rustls until it is used up or rustls holds as
    /// much plaintext as it will (then the caller reads that first).
    fn feed_cipher(&mut self) -> Result<(), NetError> {
        let conn = self.conn.clone();
        let mut conn = lock(&conn)?;
        while self.cipher_pos < self.cipher_len {
            let mut rest = &self.cipher_in[self.cipher_pos..self.cipher_len];
            let fed = match conn.read_tls(&mut rest) {
                Ok(0) => break,
                Ok(k) => k,
                // rustls' plaintext buffer is full: let the caller take from it first.
                Err(e) if e.kind() == std::io::ErrorKind::Other => break,
                Err(e) => return Err(NetError::Tls(format!("bad data from the peer: {e}"))),
            };
            self.cipher_pos += fed;
            conn.process_new_packets()
                .map_err(|e| tls_error(e, &self.settings))?;
        }
        Ok(())
    }

    /// `recv` by `deadline`.
    fn recv_by(&mut self, buf: &mut [u8], deadline: Option<Instant>) -> Result<(), NetError> {
        let mut filled = 0;
        while filled < buf.len() {
            let (got, peer_closed) = {
                let mut conn = lock(&self.conn)?;
                match conn.reader().read(&mut buf[filled..]) {
                    Ok(0) => (0, true),
                    Ok(k) => (k, false),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => (0, false),
                    // The connection ended without TLS's close_notify.
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => (0, true),
                    Err(e) => return Err(NetError::Io(e)),
                }
            };
            if peer_closed {
                return Err(NetError::Closed);
            }
            if got > 0 {
                filled += got;
                continue;
            }
            if self.cipher_pos < self.cipher_len {
                self.feed_cipher()?;
                continue;
            }
            // About to block: push out what we hold so the peer is not left waiting.
            match self.flush_write_buf(deadline) {
                Ok(()) | Err(NetError::Closed) => {}
                Err(e) => return Err(e),
            }
            if self.cipher_in.is_empty() {
                self.cipher_in = vec![0u8; READ_BUFFER_BYTES].into_boxed_slice();
            }
            let k = match read_by(
                &mut self.stream,
                &mut self.timer,
                &mut self.cipher_in,
                deadline,
            ) {
                Ok(k) => k,
                Err(NetError::Closed) => {
                    // Let rustls see the end, so it reports a clean or unclean close.
                    let mut conn = lock(&self.conn)?;
                    let _ = conn.read_tls(&mut &[][..]);
                    return Err(NetError::Closed);
                }
                Err(e) => return Err(e),
            };
            self.counts.received += k as u64;
            self.cipher_pos = 0;
            self.cipher_len = k;
            self.feed_cipher()?;
        }
        Ok(())
    }
}

impl Channel for TlsChannel {
    fn send(&mut self, bytes: &[u8]) -> Result<(), NetError> {
        if !self.writes {
            return Err(NetError::Tls(
                "sent on the reading half of a split channel".into(),
            ));
        }
        if self.write_buf.len() + bytes.len() <= WRITE_BUFFER_BYTES {
            self.write_buf.extend_from_slice(bytes);
            return Ok(());
        }
        let deadline = self.timer.deadline();
        self.flush_write_buf(deadline)?;
        if bytes.len() >= WRITE_BUFFER_BYTES {
            self.encrypt_and_write(bytes, deadline)
        } else {
            self.write_buf.extend_from_slice(bytes);
            Ok(())
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<(), NetError> {
        let deadline = self.timer.deadline();
        self.recv_by(buf, deadline)
    }

    /// One deadline for the length and the payload together: the timeout is per message.
    fn recv_frame_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<(), NetError> {
        let deadline = self.timer.deadline();
        let mut len = [0u8; 4];
        self.recv_by(&mut len, deadline)?;
        let len = crate::check_frame_len(len, max_len)?;
        crate::resize_for_frame(buf, len);
        self.recv_by(buf, deadline)
    }

    fn flush(&mut self) -> Result<(), NetError> {
        let deadline = self.timer.deadline();
        self.flush_write_buf(deadline)
    }

    fn counts(&self) -> ByteCounts {
        self.counts
    }
}

impl Drop for TlsChannel {
    fn drop(&mut self) {
        if !self.writes {
            return;
        }
        // Data sent before dropping must still reach the peer, then a close_notify so it
        // can tell an orderly end from a cut connection; errors no longer matter.
        let deadline = self.timer.deadline();
        let _ = self.flush_write_buf(deadline);
        if let Ok(mut conn) = self.conn.lock() {
            conn.send_close_notify();
            self.cipher_out.clear();
            while conn.wants_write() && conn.write_tls(&mut self.cipher_out).is_ok() {}
        }
        let _ = self.write_cipher_out(deadline);
        // Only the writer closes its direction: the reader half may still be reading.
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

impl std::fmt::Debug for TlsChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsChannel")
            .field("peer", &self.stream.peer_addr().ok())
            .field("peer_key", &self.settings.peer)
            .field("counts", &self.counts)
            .field("timeout", &self.timer.timeout)
            .finish_non_exhaustive()
    }
}
