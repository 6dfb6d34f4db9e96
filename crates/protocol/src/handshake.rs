//! The first message of every run: both parties send a [`Hello`] at once, read the peer's,
//! and stop with the same clear error on any mismatch (wrong program, version, circuit,
//! the form the circuit is held in (sequential, streamed, compact, parallel), input assignment, output visibility, roles, or how values are read and printed: the typed
//! interface's C types, the bit order of untyped values) before any secret-dependent message
//! is sent.

use pgc_circuit::{BitOrder, CircuitForm, ValueFormat, Visibility};
use pgc_garble::Garbling;
use pgc_net::Channel;

use crate::choice::ProtocolChoice;
use crate::malicious::Security;
use crate::yao::{Party, ProtocolError};

/// Bumped whenever the messages of the protocol change (2: output visibility in the hello,
/// permute bits instead of output bits from B; 3: the parallel protocol's mode agreement,
/// worker streams and inter-party role transfers; 4: the end-of-tables frame and the
/// completion ("done") messages before any output, see [`crate::completion`]; the value
/// format in the hello; 5: the security level in the hello, the malicious and
/// dual-execution protocols; 6: the two-party protocol in the hello, GMW and the `auto`
/// link probe; 7: the garbling scheme in the hello, three-halves tables; 8: the cluster's
/// rank count in the hello; 9: the circuit's form in the hello; 10: chunk headers on the
/// worker streams, region instances claimed as the garbler's threads go).
pub const PROTOCOL_VERSION: u32 = 10;

const MAGIC: &[u8; 8] = b"pgc-yao\0";
/// A hello is small; a peer announcing more is not a pgc party.
const MAX_HELLO: usize = 1 << 20;

/// What a party states about itself and the computation before anything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub version: u32,
    pub party: Party,
    /// Digest of the circuit's layout and gate sequence.
    pub fingerprint: [u8; 32],
    /// Owner of each input value, in circuit order.
    pub input_owners: Vec<Party>,
    pub input_widths: Vec<u32>,
    pub output_widths: Vec<u32>,
    /// Who learns each output value, in circuit order.
    pub output_visibility: Vec<Visibility>,
    /// How this party reads its inputs and prints its outputs.
    pub value_format: ValueFormat,
    /// The security level this party runs (both must run the same).
    pub security: Security,
    /// The two-party protocol this party runs (both must give the same; `auto` is followed
    /// by the link probe of [`crate::choice`] and a second hello naming the one chosen).
    pub protocol: ProtocolChoice,
    /// The garbling scheme this party runs (both must give the same; half-gates wherever
    /// no garbled tables move).
    pub garbling: Garbling,
    /// 0 for one process, K for a cluster of K MPI ranks (`--cluster`): both parties must
    /// run alike.
    pub cluster_ranks: u32,
    /// How this party holds the circuit: the same program in two forms has two
    /// fingerprints, and saying the form lets a mismatch name its cause.
    pub form: CircuitForm,
}

/// The garbling scheme's byte in the hello (and in `auto`'s decision, [`crate::choice`]).
pub(crate) fn garbling_byte(g: Garbling) -> u8 {
    match g {
        Garbling::HalfGates => 0,
        Garbling::ThreeHalves => 1,
    }
}

pub(crate) fn garbling_from_byte(b: u8) -> Option<Garbling> {
    match b {
        0 => Some(Garbling::HalfGates),
        1 => Some(Garbling::ThreeHalves),
        _ => None,
    }
}

fn visibility_byte(v: Visibility) -> u8 {
    match v {
        Visibility::Both => 0,
        Visibility::A => 1,
        Visibility::B => 2,
    }
}

fn visibility_from_byte(b: u8) -> Option<Visibility> {
    match b {
        0 => Some(Visibility::Both),
        1 => Some(Visibility::A),
        2 => Some(Visibility::B),
        _ => None,
    }
}

fn visibility_name(v: Visibility) -> &'static str {
    match v {
        Visibility::Both => "both",
        Visibility::A => "A",
        Visibility::B => "B",
    }
}

impl Hello {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64 + 5 * self.input_widths.len());
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(&self.version.to_le_bytes());
        v.push(self.party as u8);
        v.extend_from_slice(&self.security.to_bytes());
        v.push(self.protocol.to_byte());
        v.push(garbling_byte(self.garbling));
        v.extend_from_slice(&self.cluster_ranks.to_le_bytes());
        v.push(self.form as u8);
        v.extend_from_slice(&self.fingerprint);
        v.extend_from_slice(&(self.input_widths.len() as u32).to_le_bytes());
        for (w, o) in self.input_widths.iter().zip(&self.input_owners) {
            v.extend_from_slice(&w.to_le_bytes());
            v.push(*o as u8);
        }
        v.extend_from_slice(&(self.output_widths.len() as u32).to_le_bytes());
        for (w, vis) in self.output_widths.iter().zip(&self.output_visibility) {
            v.extend_from_slice(&w.to_le_bytes());
            v.push(visibility_byte(*vis));
        }
        match &self.value_format {
            ValueFormat::Bits => v.push(0),
            ValueFormat::Untyped(order) => {
                v.push(1);
                v.push(match order {
                    BitOrder::Lsb0 => 0,
                    BitOrder::Msb0 => 1,
                });
            }
            ValueFormat::Typed(ports) => {
                v.push(2);
                v.extend_from_slice(&(ports.len() as u32).to_le_bytes());
                for (name, ctype) in ports {
                    put_str(&mut v, name);
                    put_str(&mut v, ctype);
                }
            }
        }
        v
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Hello, ProtocolError> {
        let garbage = || {
            ProtocolError::Handshake(
                "the peer's first message is not a pgc hello (is the other side a pgc party \
                 of a compatible version?)"
                    .into(),
            )
        };
        let mut r = Reader { bytes, pos: 0 };
        if r.take(8).ok_or_else(garbage)? != MAGIC {
            return Err(garbage());
        }
        let version = r.u32().ok_or_else(garbage)?;
        if version != PROTOCOL_VERSION {
            return Err(ProtocolError::Handshake(format!(
                "the peer speaks pgc protocol version {version}, this build speaks version \
                 {PROTOCOL_VERSION}: run the same pgc version on both sides"
            )));
        }
        let party = Party::from_byte(r.u8().ok_or_else(garbage)?).ok_or_else(garbage)?;
        let security_tag = r.u8().ok_or_else(garbage)?;
        let security =
            Security::from_bytes(security_tag, r.u32().ok_or_else(garbage)?).ok_or_else(garbage)?;
        let protocol =
            ProtocolChoice::from_byte(r.u8().ok_or_else(garbage)?).ok_or_else(garbage)?;
        let garbling = garbling_from_byte(r.u8().ok_or_else(garbage)?).ok_or_else(garbage)?;
        let cluster_ranks = r.u32().ok_or_else(garbage)?;
        let form = CircuitForm::from_byte(r.u8().ok_or_else(garbage)?).ok_or_else(garbage)?;
        let fingerprint: [u8; 32] = r.take(32).ok_or_else(garbage)?.try_into().unwrap();
        let n_in = r.u32().ok_or_else(garbage)? as usize;
        if n_in > bytes.len() {
            return Err(garbage());
        }
        let mut input_widths = Vec::with_capacity(n_in);
        let mut input_owners = Vec::with_capacity(n_in);
        for _ in 0..n_in {
            input_widths.push(r.u32().ok_or_else(garbage)?);
            input_owners.push(Party::from_byte(r.u8().ok_or_else(garbage)?).ok_or_else(garbage)?);
        }
        let n_out = r.u32().ok_or_else(garbage)? as usize;
        if n_out > bytes.len() {
            return Err(garbage());
        }
        let mut output_widths = Vec::with_capacity(n_out);
        let mut output_visibility = Vec::with_capacity(n_out);
        for _ in 0..n_out {
            output_widths.push(r.u32().ok_or_else(garbage)?);
            output_visibility
                .push(visibility_from_byte(r.u8().ok_or_else(garbage)?).ok_or_else(garbage)?);
        }
        let value_format = match r.u8().ok_or_else(garbage)? {
            0 => ValueFormat::Bits,
            1 => ValueFormat::Untyped(match r.u8().ok_or_else(garbage)? {
                0 => BitOrder::Lsb0,
                1 => BitOrder::Msb0,
                _ => return Err(garbage()),
            }),
            2 => {
                let n = r.u32().ok_or_else(garbage)? as usize;
                if n > bytes.len() {
                    return Err(garbage());
                }
                let mut ports = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = r.string().ok_or_else(garbage)?;
                    let ctype = r.string().ok_or_else(garbage)?;
                    ports.push((name, ctype));
                }
                ValueFormat::Typed(ports)
            }
            _ => return Err(garbage()),
        };
        if r.pos != bytes.len() {
            return Err(garbage());
        }
        Ok(Hello {
            version,
            party,
            fingerprint,
            input_owners,
            input_widths,
            output_widths,
            output_visibility,
            value_format,
            security,
            protocol,
            garbling,
            cluster_ranks,
            form,
        })
    }

    /// Checks that `peer` describes the same computation from the other side. The check is
    /// symmetric, so both parties reach the same verdict.
    pub fn check_peer(&self, peer: &Hello) -> Result<(), ProtocolError> {
        let fail = |m: String| Err(ProtocolError::Handshake(m));
        if peer.party == self.party {
            return fail(format!(
                "both parties chose to be party {}: one must run with --party a and the other \
                 with --party b",
                self.party.letter()
            ));
        }
        if peer.security != self.security {
            return fail(format!(
                "the parties run different security levels: {} here, {} at the peer (give \
                 both the same --security and --stat-sec)",
                self.security, peer.security
            ));
        }
        if peer.protocol != self.protocol {
            return fail(format!(
                "the parties run different protocols: --protocol {} here, {} at the peer \
                 (give both the same --protocol)",
                self.protocol, peer.protocol
            ));
        }
        if peer.garbling != self.garbling {
            return fail(format!(
                "the parties garble differently: --garbling {} here, {} at the peer (give \
                 both the same --garbling)",
                self.garbling, peer.garbling
            ));
        }
        if peer.cluster_ranks != self.cluster_ranks {
            let runs = |k: u32| match k {
                0 => "as one process (no --cluster)".to_string(),
                1 => "as a cluster of 1 rank (--cluster)".to_string(),
                k => format!("as a cluster of {k} ranks (--cluster)"),
            };
            return fail(format!(
                "this party runs {} but the peer runs {}: start both with --cluster under \
                 mpirun/srun with the same rank count, or neither",
                runs(self.cluster_ranks),
                runs(peer.cluster_ranks)
            ));
        }
        if peer.input_widths != self.input_widths || peer.output_widths != self.output_widths {
            return fail(format!(
                "the circuits differ: this side has input widths {:?} and output widths {:?}, \
                 the peer {:?} and {:?}",
                self.input_widths, self.output_widths, peer.input_widths, peer.output_widths
            ));
        }
        if peer.form != self.form {
            return fail(format!(
                "the parties hold the circuit in different forms: here {}, at the peer {} \
                 (give both the same --parallel, and --stream on both sides or neither)",
                self.form.describe(),
                peer.form.describe()
            ));
        }
        if peer.fingerprint != self.fingerprint {
            return fail(format!(
                "the circuits differ: fingerprint {} here, {} at the peer (both sides must load \
                 the same circuit or program with the same options, both run --parallel none \
                 or both a parallel mode, and both stream a .pgc file with --stream or neither)",
                hex(&self.fingerprint[..8]),
                hex(&peer.fingerprint[..8])
            ));
        }
        if peer.input_owners != self.input_owners {
            let show = |o: &[Party]| {
                o.iter()
                    .map(|p| p.letter().to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            return fail(format!(
                "the parties disagree on who owns which input: here [{}], at the peer [{}] \
                 (use the same --inputs-of-a on both sides)",
                show(&self.input_owners),
                show(&peer.input_owners)
            ));
        }
        if peer.output_visibility != self.output_visibility {
            let show = |v: &[Visibility]| {
                v.iter()
                    .map(|&x| visibility_name(x))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            return fail(format!(
                "the parties disagree on who learns which output: here [{}], at the peer [{}]",
                show(&self.output_visibility),
                show(&peer.output_visibility)
            ));
        }
        check_value_formats(&self.value_format, &peer.value_format)
    }
}

/// Both parties must read and print values the same way; the error names the first
/// difference.
fn check_value_formats(mine: &ValueFormat, peer: &ValueFormat) -> Result<(), ProtocolError> {
    if mine == peer {
        return Ok(());
    }
    let fail = |m: String| Err(ProtocolError::Handshake(m));
    match (mine, peer) {
        (ValueFormat::Untyped(here), ValueFormat::Untyped(there)) => fail(format!(
            "the parties read values differently: bit order {here} here, {there} at the peer \
             (use the same --bit-order on both sides)"
        )),
        (ValueFormat::Typed(here), ValueFormat::Typed(there)) => {
            for (i, ((name, ctype), (peer_name, peer_ctype))) in here.iter().zip(there).enumerate()
            {
                if name != peer_name {
                    return fail(format!(
                        "the programs' interfaces differ: value {} is {name} here, {peer_name} \
                         at the peer (both sides must run the same program)",
                        i + 1
                    ));
                }
                if ctype != peer_ctype {
                    return fail(format!(
                        "the programs' interfaces differ: {name} is {ctype} here, {peer_ctype} \
                         at the peer (both sides must run the same program)"
                    ));
                }
            }
            fail(format!(
                "the programs' interfaces differ: {} inputs and outputs here, {} at the peer",
                here.len(),
                there.len()
            ))
        }
        _ => fail(format!(
            "the parties read values differently: {} here, {} at the peer (both sides must \
             load the same program or circuit the same way)",
            describe(mine),
            describe(peer)
        )),
    }
}

fn describe(f: &ValueFormat) -> String {
    match f {
        ValueFormat::Bits => "raw bits".into(),
        ValueFormat::Untyped(order) => format!("untyped values in bit order {order}"),
        ValueFormat::Typed(_) => "a compiled program's typed values".into(),
    }
}

/// A string of at most 64 KiB: its u16 length, then its UTF-8 bytes (a longer one is cut
/// at a character boundary; names and types are far shorter).
fn put_str(v: &mut Vec<u8>, s: &str) {
    let mut cut = s.len().min(u16::MAX as usize);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    v.extend_from_slice(&(cut as u16).to_le_bytes());
    v.extend_from_slice(&s.as_bytes()[..cut]);
}

/// Sends our hello, reads the peer's and checks it.
pub fn exchange(ch: &mut (impl Channel + ?Sized), ours: &Hello) -> Result<Hello, ProtocolError> {
    ch.send_frame(&ours.to_bytes())?;
    ch.flush()?;
    let bytes = ch.recv_frame(MAX_HELLO).map_err(|e| match e {
        pgc_net::NetError::FrameTooLarge { .. } => ProtocolError::Handshake(
            "the peer's first message is not a pgc hello (is the other side a pgc party?)".into(),
        ),
        e => e.into(),
    })?;
    let peer = Hello::from_bytes(&bytes)?;
    ours.check_peer(&peer)?;
    Ok(peer)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    }
    /// A port name or C type: UTF-8 without control characters, or the hello is refused.
    /// pgc only sends printable names; anything else is not a pgc party, and refusing it
    /// (rather than repairing it) keeps terminal escapes from the peer out of this party's
    /// error messages and keeps a decoded hello equal to the bytes that were sent.
    fn string(&mut self) -> Option<String> {
        let len = self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))? as usize;
        let text = std::str::from_utf8(self.take(len)?).ok()?;
        (!text.chars().any(char::is_control)).then(|| text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(party: Party) -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            party,
            fingerprint: [7; 32],
            input_owners: vec![Party::A, Party::B],
            input_widths: vec![64, 64],
            output_widths: vec![64, 8],
            output_visibility: vec![Visibility::Both, Visibility::B],
            value_format: ValueFormat::Typed(vec![
                ("INPUT_A_x".into(), "int32_t".into()),
                ("INPUT_B_x".into(), "int32_t".into()),
                ("OUTPUT_s".into(), "int64_t".into()),
                ("OUTPUT_B_t".into(), "struct t { uint8_t c; }".into()),
            ]),
            security: Security::SemiHonest,
            protocol: ProtocolChoice::Yao,
            garbling: Garbling::HalfGates,
            cluster_ranks: 0,
            form: CircuitForm::Gates,
        }
    }

    #[test]
    fn a_cluster_on_one_side_only_is_named() {
        let a = hello(Party::A);
        let mut b = hello(Party::B);
        b.cluster_ranks = 4;
        assert_eq!(Hello::from_bytes(&b.to_bytes()).unwrap(), b);
        let e = a.check_peer(&b).unwrap_err().to_string();
        assert!(
            e.contains(
                "this party runs as one process (no --cluster) but the peer runs as a \
                 cluster of 4 ranks"
            ),
            "{e}"
        );
        let e = b.check_peer(&a).unwrap_err().to_string();
        assert!(e.contains("this party runs as a cluster of 4 ranks"), "{e}");
        let mut c = hello(Party::A);
        c.cluster_ranks = 1;
        let e = c.check_peer(&b).unwrap_err().to_string();
        assert!(
            e.contains("cluster of 1 rank (--cluster) but the peer runs as a cluster of 4"),
            "{e}"
        );
    }

    #[test]
    fn garbling_schemes_must_match() {
        let a = hello(Party::A);
        let mut b = hello(Party::B);
        b.garbling = Garbling::ThreeHalves;
        assert_eq!(Hello::from_bytes(&b.to_bytes()).unwrap(), b);
        let e = a.check_peer(&b).unwrap_err().to_string();
        assert!(
            e.contains("--garbling half-gates here, three-halves at the peer"),
            "{e}"
        );
        let e = b.check_peer(&a).unwrap_err().to_string();
        assert!(
            e.contains("--garbling three-halves here, half-gates at the peer"),
            "{e}"
        );
    }

    #[test]
    fn protocols_must_match() {
        let a = hello(Party::A);
        let mut b = hello(Party::B);
        b.protocol = ProtocolChoice::Gmw;
        assert_eq!(Hello::from_bytes(&b.to_bytes()).unwrap(), b);
        let e = a.check_peer(&b).unwrap_err().to_string();
        assert!(e.contains("--protocol yao here, gmw at the peer"), "{e}");
    }

    #[test]
    fn circuit_forms_must_match_and_the_error_names_both() {
        let a = hello(Party::A);
        let mut b = hello(Party::B);
        b.form = CircuitForm::Parallel;
        // Different forms also have different fingerprints: the form is named first.
        b.fingerprint[0] ^= 1;
        assert_eq!(Hello::from_bytes(&b.to_bytes()).unwrap(), b);
        let e = a.check_peer(&b).unwrap_err().to_string();
        assert!(e.contains("different forms"), "{e}");
        assert!(
            e.contains("--parallel none") && e.contains("cgp, fgp or ipp"),
            "{e}"
        );
        // A form byte no pgc writes is not a hello.
        let mut bytes = b.to_bytes();
        assert_eq!(bytes[form_offset()], CircuitForm::Parallel as u8);
        bytes[form_offset()] = 9;
        assert!(Hello::from_bytes(&bytes).is_err());
    }

    /// Where the form byte sits: magic, version, party, security (tag and value),
    /// protocol, garbling, cluster ranks.
    fn form_offset() -> usize {
        MAGIC.len() + 4 + 1 + hello(Party::A).security.to_bytes().len() + 1 + 1 + 4
    }

    #[test]
    fn security_levels_must_match() {
        let a = hello(Party::A);
        let mut b = hello(Party::B);
        b.security = Security::Malicious { stat_sec: 40 };
        assert_eq!(Hello::from_bytes(&b.to_bytes()).unwrap(), b);
        let e = a.check_peer(&b).unwrap_err().to_string();
        assert!(
            e.contains("semi-honest here, malicious (s = 40) at the peer"),
            "{e}"
        );
        let mut a40 = a.clone();
        a40.security = Security::Malicious { stat_sec: 41 };
        let e = a40.check_peer(&b).unwrap_err().to_string();
        assert!(e.contains("--stat-sec"), "{e}");
    }

    #[test]
    fn round_trip_and_checks() {
        let a = hello(Party::A);
        assert_eq!(Hello::from_bytes(&a.to_bytes()).unwrap(), a);
        let b = hello(Party::B);
        a.check_peer(&b).unwrap();
        b.check_peer(&a).unwrap();
        let e = a.check_peer(&hello(Party::A)).unwrap_err().to_string();
        assert!(e.contains("both parties chose to be party A"), "{e}");
        let mut other = hello(Party::B);
        other.fingerprint[0] = 1;
        let e = a.check_peer(&other).unwrap_err().to_string();
        assert!(e.contains("circuits differ"), "{e}");
        let mut other = hello(Party::B);
        other.input_owners = vec![Party::A, Party::A];
        let e = a.check_peer(&other).unwrap_err().to_string();
        assert!(e.contains("who owns which input"), "{e}");
        let mut other = hello(Party::B);
        other.output_visibility[1] = Visibility::A;
        let e = a.check_peer(&other).unwrap_err().to_string();
        assert!(
            e.contains("who learns which output: here [both,B], at the peer [both,A]"),
            "{e}"
        );
        let mut bits = a.clone();
        bits.value_format = ValueFormat::Bits;
        let mut v = bits.to_bytes();
        *v.last_mut().unwrap() = 3;
        assert!(Hello::from_bytes(&v).is_err(), "unknown value format");
        let mut v = bits.to_bytes();
        let n = v.len();
        v[n - 2] = 3;
        assert!(Hello::from_bytes(&v).is_err(), "unknown visibility byte");
    }

    #[test]
    fn the_value_format_is_compared_and_the_difference_named() {
        let a = hello(Party::A);
        for f in [
            ValueFormat::Bits,
            ValueFormat::Untyped(BitOrder::Msb0),
            ValueFormat::Untyped(BitOrder::Lsb0),
        ] {
            let mut h = a.clone();
            h.value_format = f;
            assert_eq!(Hello::from_bytes(&h.to_bytes()).unwrap(), h);
        }
        let with = |f: ValueFormat| {
            let mut h = hello(Party::B);
            h.value_format = f;
            h
        };
        let mut msb = hello(Party::A);
        msb.value_format = ValueFormat::Untyped(BitOrder::Msb0);
        let e = msb
            .check_peer(&with(ValueFormat::Untyped(BitOrder::Lsb0)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "the parties read values differently: bit order msb0 here, lsb0 at the peer"
            ),
            "{e}"
        );
        let ValueFormat::Typed(mut ports) = a.value_format.clone() else {
            unreachable!()
        };
        ports[1].1 = "uint32_t".into();
        let e = a
            .check_peer(&with(ValueFormat::Typed(ports.clone())))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "the programs' interfaces differ: INPUT_B_x is int32_t here, uint32_t at the peer"
            ),
            "{e}"
        );
        ports[1] = ("INPUT_B_y".into(), "int32_t".into());
        let e = a
            .check_peer(&with(ValueFormat::Typed(ports.clone())))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("value 2 is INPUT_B_x here, INPUT_B_y at the peer"),
            "{e}"
        );
        let e = a
            .check_peer(&with(ValueFormat::Untyped(BitOrder::Lsb0)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a compiled program's typed values here, untyped values in bit order lsb0 at the peer"),
            "{e}"
        );
        // A type name with a terminal escape, or a name that is not UTF-8, is refused.
        let evil = with(ValueFormat::Typed(vec![(
            "INPUT_A_x".into(),
            "\x1b[2J".into(),
        )]));
        assert!(Hello::from_bytes(&evil.to_bytes()).is_err());
        let mut bytes =
            with(ValueFormat::Typed(vec![("INPUT_A_x".into(), "int".into())])).to_bytes();
        let at = bytes.len() - 1;
        bytes[at] = 0xff;
        assert!(Hello::from_bytes(&bytes).is_err(), "invalid UTF-8");
    }

    #[test]
    fn garbage_is_refused_not_panicking() {
        let good = hello(Party::A).to_bytes();
        for cut in 0..good.len() {
            assert!(Hello::from_bytes(&good[..cut]).is_err());
        }
        assert!(Hello::from_bytes(b"GET / HTTP/1.1\r\n\r\n").is_err());
        let mut v = good.clone();
        v[8] = 99; // version
        let e = Hello::from_bytes(&v).unwrap_err().to_string();
        assert!(e.contains("protocol version 99"), "{e}");
    }
}
