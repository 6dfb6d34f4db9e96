//! The pure parts of a cluster run, testable without MPI: which rank (and which of its
//! threads) gets which region instances, the port and stream token of each rank pair, and
//! the byte format of the messages between a party's rank 0 and its workers.

use std::ops::Range;

use pgc_circuit::{ParallelCircuit, Region, Template};
use pgc_crypto::Block;

use crate::yao::ProtocolError;

/// The most ranks a party may run (each rank pair opens its own connections).
pub const MAX_RANKS: usize = 4096;

/// Linear gates counted as one AND when balancing (free XOR is a few loads and stores; the
/// same ratio as the single-machine engine).
const LINEAR_PER_AND: u64 = 16;

/// The work of one instance of `template`: its ANDs plus its linear gates / 16, at least 1.
pub fn instance_weight(template: &Template) -> u64 {
    let ands = template.and_count();
    let linear = template.gates.len() as u64 - ands;
    (ands + linear / LINEAR_PER_AND).max(1)
}

/// Splits `weights` (in order) into `parts` contiguous runs of about equal total weight:
/// run k ends at the first index where the running total reaches ⌈total·(k+1)/parts⌉.
/// Some runs may be empty (fewer items than parts, or very uneven weights). A pure
/// function of its arguments, so both parties (and all ranks) compute the same split.
pub fn split_by_weight(weights: &[u64], parts: usize) -> Vec<Range<usize>> {
    assert!(parts > 0, "at least one part");
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    let mut out = Vec::with_capacity(parts);
    let mut start = 0usize;
    let mut at = 0usize;
    let mut sum: u128 = 0;
    for k in 0..parts {
        let goal = (total * (k as u128 + 1)).div_ceil(parts as u128);
        while at < weights.len() && (sum < goal || k + 1 == parts) {
            sum += weights[at] as u128;
            at += 1;
        }
        out.push(start..at);
        start = at;
    }
    debug_assert_eq!(start, weights.len());
    out
}

/// The instances of `region` each of `ranks` ranks garbles or evaluates.
pub fn rank_shares(circuit: &ParallelCircuit, region: &Region, ranks: usize) -> Vec<Range<usize>> {
    split_by_weight(&weights(circuit, region, 0..region.instances.len()), ranks)
}

/// How one rank's `share` of `region` is split among its `threads` (thread t: stream t).
pub fn thread_shares(
    circuit: &ParallelCircuit,
    region: &Region,
    share: Range<usize>,
    threads: usize,
) -> Vec<Range<usize>> {
    let start = share.start;
    split_by_weight(&weights(circuit, region, share), threads)
        .into_iter()
        .map(|r| r.start + start..r.end + start)
        .collect()
}

fn weights(circuit: &ParallelCircuit, region: &Region, insts: Range<usize>) -> Vec<u64> {
    region.instances[insts]
        .iter()
        .map(|i| instance_weight(&circuit.templates[i.template as usize]))
        .collect()
}

/// The flat index of the first AND of each instance of `region`, whose first AND is the
/// `and_base`-th of the circuit (the tweak order of [`pgc_garble::parallel`], so the tables
/// are the same for any rank and thread count); one more entry: the region's end.
pub fn instance_and_bases(circuit: &ParallelCircuit, region: &Region, and_base: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(region.instances.len() + 1);
    let mut at = and_base;
    out.push(at);
    for inst in &region.instances {
        at += circuit.templates[inst.template as usize].and_count();
        out.push(at);
    }
    out
}

/// The TCP port rank `rank` uses: the base port (rank 0's `--listen`/`--connect` port)
/// plus the rank. A firewall in front of the listening party opens `base ..= base + K - 1`.
pub fn rank_port(base: u16, rank: usize) -> Result<u16, ProtocolError> {
    u16::try_from(rank)
        .ok()
        .and_then(|r| base.checked_add(r))
        .ok_or_else(|| {
            ProtocolError::Input(format!(
                "rank {rank} would listen on port {base} + {rank}, past 65535: pick a lower base port"
            ))
        })
}

/// The stream token of rank pair `rank`: A's run token hashed with the rank, so that a
/// connection that reaches the wrong rank (a mixed-up address or port) is turned away.
pub fn rank_token(token: [u8; 16], rank: usize) -> [u8; 16] {
    if rank == 0 {
        return token;
    }
    let mut h = blake3::Hasher::new();
    h.update(b"pgc cluster rank token v1\0");
    h.update(&token);
    h.update(&(rank as u64).to_le_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&h.finalize().as_bytes()[..16]);
    out
}

// ---------------------------------------------------------------------------------------
// Messages between a party's rank 0 and its workers (over MPI, inside one party)

/// One message of rank 0 to a worker or back. Labels travel as raw 16-byte blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Rank 0 → worker: the run's parameters. `delta` only within party A.
    Setup {
        threads: u32,
        token: [u8; 16],
        fingerprint: [u8; 32],
        hash_key: Block,
        delta: Option<Block>,
        /// Where rank 0's peer connected from or to (a host the worker may route toward).
        peer_host: String,
    },
    /// Worker → rank 0: set up; the address its peer rank connects to (listening side).
    Ready { advert: Option<String> },
    /// Rank 0 → worker: the peer rank's advertised address (connecting side), then open.
    Peer { advert: Option<String> },
    /// Worker → rank 0: streams open.
    Opened,
    /// Rank 0 → worker: garble/evaluate this rank's share of the region at `phase`; the
    /// labels of the distinct input wires of its instances in increasing wire order
    /// ([`boundary_wires`]; A: zero-labels, B: active labels), each sent once however many
    /// instances read it.
    Region {
        phase: u32,
        and_base: u64,
        labels: Vec<Block>,
    },
    /// Worker → rank 0: the output labels of its instances, in the same order.
    Outputs { labels: Vec<Block> },
    /// Rank 0 → worker: the circuit is done; report your counts.
    Finish,
    /// Worker → rank 0: what it garbled/evaluated and moved.
    Summary(Summary),
    /// Worker → rank 0: it failed (it waits for [`Msg::Stop`]).
    Failed(String),
    /// Rank 0 → worker: the run ended (with an error rank 0 reports); exit.
    Stop,
    /// Either way: a job of cut-and-choose copies or its result, encoded by
    /// [`crate::malicious::cluster`].
    Copies(Vec<u8>),
}

/// What a worker did, for rank 0's completion message and stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub gates: u64,
    pub and_gates: u64,
    pub blocks_sent: u64,
    pub blocks_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

const T_SETUP: u8 = 1;
const T_READY: u8 = 2;
const T_PEER: u8 = 3;
const T_OPENED: u8 = 4;
const T_REGION: u8 = 5;
const T_OUTPUTS: u8 = 6;
const T_FINISH: u8 = 7;
const T_SUMMARY: u8 = 8;
const T_FAILED: u8 = 9;
const T_STOP: u8 = 10;
const T_COPIES: u8 = 11;

impl Msg {
    /// What the message is, for errors (without its contents).
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Setup { .. } => "a set-up",
            Msg::Ready { .. } => "a ready message",
            Msg::Peer { .. } => "a peer address",
            Msg::Opened => "an opened message",
            Msg::Region { .. } => "a region",
            Msg::Outputs { .. } => "output labels",
            Msg::Finish => "a finish message",
            Msg::Summary(_) => "a summary",
            Msg::Failed(_) => "a failure report",
            Msg::Stop => "a stop message",
            Msg::Copies(_) => "a cut-and-choose job or result",
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Msg::Setup {
                threads,
                token,
                fingerprint,
                hash_key,
                delta,
                peer_host,
            } => {
                b.push(T_SETUP);
                b.extend_from_slice(&threads.to_le_bytes());
                b.extend_from_slice(token);
                b.extend_from_slice(fingerprint);
                b.extend_from_slice(&hash_key.to_bytes());
                match delta {
                    Some(d) => {
                        b.push(1);
                        b.extend_from_slice(&d.to_bytes());
                    }
                    None => b.push(0),
                }
                put_str(&mut b, peer_host);
            }
            Msg::Ready { advert } => {
                b.push(T_READY);
                put_opt_str(&mut b, advert.as_deref());
            }
            Msg::Peer { advert } => {
                b.push(T_PEER);
                put_opt_str(&mut b, advert.as_deref());
            }
            Msg::Opened => b.push(T_OPENED),
            Msg::Region {
                phase,
                and_base,
                labels,
            } => {
                b.push(T_REGION);
                b.extend_from_slice(&phase.to_le_bytes());
                b.extend_from_slice(&and_base.to_le_bytes());
                b.extend_from_slice(Block::slice_as_bytes(labels));
            }
            Msg::Outputs { labels } => {
                b.push(T_OUTPUTS);
                b.extend_from_slice(Block::slice_as_bytes(labels));
            }
            Msg::Finish => b.push(T_FINISH),
            Msg::Summary(s) => {
                b.push(T_SUMMARY);
                for v in [
                    s.gates,
                    s.and_gates,
                    s.blocks_sent,
                    s.blocks_received,
                    s.bytes_sent,
                    s.bytes_received,
                ] {
                    b.extend_from_slice(&v.to_le_bytes());
                }
            }
            Msg::Failed(why) => {
                b.push(T_FAILED);
                put_str(&mut b, why);
            }
            Msg::Stop => b.push(T_STOP),
            Msg::Copies(body) => {
                b.push(T_COPIES);
                b.extend_from_slice(body);
            }
        }
        b
    }

    /// Parses a message; `from` names the sender in errors.
    pub fn from_bytes(bytes: &[u8], from: &str) -> Result<Msg, ProtocolError> {
        let bad = |what: &str| ProtocolError::Peer(format!("{from} sent a malformed {what}"));
        let (&tag, rest) = bytes.split_first().ok_or_else(|| bad("empty message"))?;
        let mut r = Reader { rest };
        let msg = match tag {
            T_SETUP => {
                let threads = u32::from_le_bytes(r.array().ok_or_else(|| bad("setup"))?);
                let token = r.array().ok_or_else(|| bad("setup"))?;
                let fingerprint = r.array().ok_or_else(|| bad("setup"))?;
                let hash_key = Block::from_bytes(r.array().ok_or_else(|| bad("setup"))?);
                let delta = match r.byte().ok_or_else(|| bad("setup"))? {
                    0 => None,
                    1 => Some(Block::from_bytes(r.array().ok_or_else(|| bad("setup"))?)),
                    _ => return Err(bad("setup")),
                };
                let peer_host = r.string().ok_or_else(|| bad("setup"))?;
                Msg::Setup {
                    threads,
                    token,
                    fingerprint,
                    hash_key,
                    delta,
                    peer_host,
                }
            }
            T_READY => Msg::Ready {
                advert: r.opt_string().ok_or_else(|| bad("ready message"))?,
            },
            T_PEER => Msg::Peer {
                advert: r.opt_string().ok_or_else(|| bad("peer address"))?,
            },
            T_OPENED => Msg::Opened,
            T_REGION => {
                let phase = u32::from_le_bytes(r.array().ok_or_else(|| bad("region"))?);
                let and_base = u64::from_le_bytes(r.array().ok_or_else(|| bad("region"))?);
                let labels = r.blocks().ok_or_else(|| bad("region labels"))?;
                Msg::Region {
                    phase,
                    and_base,
                    labels,
                }
            }
            T_OUTPUTS => Msg::Outputs {
                labels: r.blocks().ok_or_else(|| bad("output labels"))?,
            },
            T_FINISH => Msg::Finish,
            T_SUMMARY => {
                let mut v = [0u64; 6];
                for x in &mut v {
                    *x = u64::from_le_bytes(r.array().ok_or_else(|| bad("summary"))?);
                }
                Msg::Summary(Summary {
                    gates: v[0],
                    and_gates: v[1],
                    blocks_sent: v[2],
                    blocks_received: v[3],
                    bytes_sent: v[4],
                    bytes_received: v[5],
                })
            }
            T_FAILED => Msg::Failed(r.string().ok_or_else(|| bad("failure message"))?),
            T_STOP => Msg::Stop,
            T_COPIES => Msg::Copies(r.take(r.rest.len()).unwrap_or_default().to_vec()),
            t => {
                return Err(ProtocolError::Peer(format!(
                    "{from} sent unknown message {t}"
                )));
            }
        };
        if !r.rest.is_empty() {
            return Err(bad("message (trailing bytes)"));
        }
        Ok(msg)
    }
}

/// Packs the labels of the inputs of `insts` (instance after instance) with `label_of`.
pub fn pack_inputs(
    region: &Region,
    insts: Range<usize>,
    label_of: impl Fn(pgc_circuit::WireId) -> Block,
) -> Vec<Block> {
    region.instances[insts]
        .iter()
        .flat_map(|i| i.inputs.iter().map(|&w| label_of(w)))
        .collect()
}

/// The distinct global wires the instances `insts` of `region` read, sorted: what a
/// worker needs the labels of (a wire every instance reads, like BioMatch's sample, once).
pub fn boundary_wires(region: &Region, insts: Range<usize>) -> Vec<pgc_circuit::WireId> {
    let mut wires: Vec<_> = region.instances[insts]
        .iter()
        .flat_map(|i| i.inputs.iter().copied())
        .collect();
    wires.sort_unstable();
    wires.dedup();
    wires
}

/// How many labels [`pack_inputs`] (or the outputs) of `insts` hold.
pub fn boundary_len(region: &Region, insts: Range<usize>, outputs: bool) -> usize {
    region.instances[insts]
        .iter()
        .map(|i| {
            if outputs {
                i.outputs.len()
            } else {
                i.inputs.len()
            }
        })
        .sum()
}

pub(crate) fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

fn put_opt_str(b: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            b.push(1);
            put_str(b, s);
        }
        None => b.push(0),
    }
}

/// Reads the fields of a message in order; `None` when it runs short.
pub(crate) struct Reader<'a> {
    pub(crate) rest: &'a [u8],
}

impl Reader<'_> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Some(a)
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).map(|s| s.try_into().expect("N bytes"))
    }
    pub(crate) fn byte(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }
    pub(crate) fn string(&mut self) -> Option<String> {
        let n = u32::from_le_bytes(self.array()?) as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    pub(crate) fn opt_string(&mut self) -> Option<Option<String>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some(self.string()?)),
            _ => None,
        }
    }
    pub(crate) fn blocks(&mut self) -> Option<Vec<Block>> {
        let all = std::mem::take(&mut self.rest);
        if !all.len().is_multiple_of(16) {
            return None;
        }
        Some(
            all.chunks_exact(16)
                .map(|c| Block::from_bytes(c.try_into().expect("16 bytes")))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgc_circuit::{Gate, Instance, Op};

    #[test]
    fn split_by_weight_covers_everything_in_order_and_balances() {
        let weights: Vec<u64> = (0..100).map(|i| 1 + (i * 7919 % 13)).collect();
        for parts in [1, 2, 3, 7, 100, 150] {
            let split = split_by_weight(&weights, parts);
            assert_eq!(split.len(), parts);
            let mut at = 0;
            for r in &split {
                assert_eq!(r.start, at);
                at = r.end;
            }
            assert_eq!(at, weights.len());
            // No part is heavier than its fair share plus one item.
            let total: u64 = weights.iter().sum();
            let max_item = *weights.iter().max().unwrap();
            for r in &split {
                let w: u64 = weights[r.clone()].iter().sum();
                assert!(w <= total.div_ceil(parts as u64) + max_item, "{parts}: {w}");
            }
        }
        assert_eq!(split_by_weight(&[], 3), vec![0..0, 0..0, 0..0]);
        assert_eq!(split_by_weight(&[5], 2), vec![0..1, 1..1]);
        assert_eq!(split_by_weight(&[1, 1, 1, 1], 2), vec![0..2, 2..4]);
    }

    #[test]
    fn ports_and_tokens_per_rank() {
        assert_eq!(rank_port(7000, 0).unwrap(), 7000);
        assert_eq!(rank_port(7000, 63).unwrap(), 7063);
        assert_eq!(rank_port(65535, 0).unwrap(), 65535);
        let e = rank_port(65530, 6).unwrap_err().to_string();
        assert!(e.contains("past 65535"), "{e}");
        assert!(rank_port(1, 70000).is_err());
        let t = [7u8; 16];
        assert_eq!(rank_token(t, 0), t);
        assert_ne!(rank_token(t, 1), t);
        assert_ne!(rank_token(t, 1), rank_token(t, 2));
        assert_eq!(rank_token(t, 5), rank_token(t, 5));
    }

    fn sample() -> Vec<Msg> {
        vec![
            Msg::Setup {
                threads: 3,
                token: [9; 16],
                fingerprint: [4; 32],
                hash_key: Block::new(77),
                delta: Some(Block::new(1 | (5 << 64))),
                peer_host: "192.0.2.1".into(),
            },
            Msg::Setup {
                threads: 1,
                token: [0; 16],
                fingerprint: [0; 32],
                hash_key: Block::new(1),
                delta: None,
                peer_host: String::new(),
            },
            Msg::Ready {
                advert: Some("[::1]:7001".into()),
            },
            Msg::Ready { advert: None },
            Msg::Peer {
                advert: Some("10.0.0.2:7002".into()),
            },
            Msg::Opened,
            Msg::Region {
                phase: 4,
                and_base: 1 << 40,
                labels: vec![Block::new(3), Block::new(u128::MAX)],
            },
            Msg::Outputs { labels: vec![] },
            Msg::Finish,
            Msg::Summary(Summary {
                gates: 1,
                and_gates: 2,
                blocks_sent: 3,
                blocks_received: 4,
                bytes_sent: 5,
                bytes_received: 6,
            }),
            Msg::Failed("rank 3: closed".into()),
            Msg::Stop,
            Msg::Copies(vec![1, 2, 3]),
        ]
    }

    #[test]
    fn messages_round_trip_and_truncations_are_errors() {
        for m in sample() {
            let b = m.to_bytes();
            assert_eq!(Msg::from_bytes(&b, "t").unwrap(), m);
            // Every proper prefix is refused (never a panic), except where a shorter
            // message is itself valid: a Region/Outputs cut at a block boundary, and the
            // opaque body of Copies (whose own decoder refuses a cut body:
            // `malicious::cluster`'s tests).
            for cut in 0..b.len() {
                let r = Msg::from_bytes(&b[..cut], "t");
                if let Ok(short) = r {
                    assert!(
                        matches!(
                            short,
                            Msg::Region { .. } | Msg::Outputs { .. } | Msg::Copies(_)
                        ),
                        "{m:?} cut at {cut} parsed as {short:?}"
                    );
                }
            }
            let mut longer = b.clone();
            longer.push(0);
            if !matches!(m, Msg::Region { .. } | Msg::Outputs { .. } | Msg::Copies(_)) {
                assert!(Msg::from_bytes(&longer, "t").is_err(), "{m:?} + 1 byte");
            }
        }
        assert!(Msg::from_bytes(&[], "t").is_err());
        let e = Msg::from_bytes(&[200], "rank 3").unwrap_err().to_string();
        assert!(e.contains("rank 3") && e.contains("unknown"), "{e}");
    }

    #[test]
    fn boundary_labels_pack_instance_after_instance() {
        let t = Template {
            num_inputs: 2,
            gates: vec![Gate {
                op: Op::And,
                a: 0,
                b: 1,
                out: 2,
            }],
            outputs: vec![2],
        };
        let region = Region {
            line: 1,
            instances: (0..4)
                .map(|i| Instance {
                    template: 0,
                    inputs: vec![10 + i, 20 + i],
                    outputs: vec![30 + i],
                })
                .collect(),
        };
        let packed = pack_inputs(&region, 1..3, |w| Block::new(w as u128));
        let want: Vec<Block> = [11, 21, 12, 22].map(Block::new).to_vec();
        assert_eq!(packed, want);
        assert_eq!(boundary_len(&region, 1..3, false), 4);
        assert_eq!(boundary_wires(&region, 1..3), vec![11, 12, 21, 22]);
        // A wire every instance reads is listed once.
        let mut shared = region.clone();
        for inst in &mut shared.instances {
            inst.inputs[1] = 5;
        }
        assert_eq!(boundary_wires(&shared, 0..4), vec![5, 10, 11, 12, 13]);
        assert_eq!(boundary_len(&region, 1..3, true), 2);
        assert_eq!(instance_weight(&t), 1);
    }
}
