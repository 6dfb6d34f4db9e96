//! Version 2 `.pgc` files: parallel circuits round trip with one template per distinct
//! instance body, stay small as instances are added, and every malformation is a clean error.

use pgc_circuit::blocks::{add, lt_unsigned, mul, mux_word};
use pgc_circuit::generate::SplitMix64;
use pgc_circuit::pgcfile::{
    PgcContents, PgcErrorKind, PgcReader, read_pgc, read_pgc_contents, read_pgc_from,
    read_pgc_parallel, read_pgc_parallel_from, write_pgc, write_pgc_parallel,
    write_pgc_parallel_file,
};
use pgc_circuit::testdata::{assert_byte_flips_are_detected, assert_truncations_are_clear};
use pgc_circuit::{
    CType, Circuit, GateSource, Gates, InputPort, Interface, NetBuilder, OptimizeFor, OutputPort,
    Owner, ParallelCircuit, Phase, RegionSpan, Visibility, eval_bits, validate,
};

/// `n` pairs of `w`-bit inputs. Region 10: products a[i]·b[i] (even i) or sums a[i]+b[i]
/// (odd i), so two templates; their total is output. Region 20: a[i] + b[i] + 3 for every
/// i, reduced to a minimum after the region. Region 30: a[i] XOR b[i], each output directly.
fn build(n: usize, w: u32) -> (Circuit, Vec<RegionSpan>) {
    let mut g = NetBuilder::new(OptimizeFor::Size);
    let a: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    let b: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    assert!(g.begin_region(10));
    let mut results = Vec::new();
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        results.push(if i % 2 == 0 {
            mul(&mut g, &a[i], &b[i])
        } else {
            add(&mut g, &a[i], &b[i])
        });
    }
    assert!(g.end_region());
    let mut total = results[0].clone();
    for r in &results[1..] {
        total = add(&mut g, &total, r);
    }
    g.output(&total);
    let three = pgc_circuit::blocks::constant_word(3, w as usize);
    assert!(g.begin_region(20));
    let mut sums = Vec::new();
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        let s = add(&mut g, &a[i], &b[i]);
        sums.push(add(&mut g, &s, &three));
    }
    assert!(g.end_region());
    let mut best = sums[0].clone();
    for s in &sums[1..] {
        let lt = lt_unsigned(&mut g, s, &best);
        best = mux_word(&mut g, lt, s, &best);
    }
    g.output(&best);
    assert!(g.begin_region(30));
    let mut xors = Vec::new();
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        xors.push(
            a[i].iter()
                .zip(&b[i])
                .map(|(&x, &y)| g.xor(x, y))
                .collect::<Vec<_>>(),
        );
    }
    assert!(g.end_region());
    for x in &xors {
        g.output(x);
    }
    let prepared = g.prepare().unwrap();
    let spans = prepared.region_spans().to_vec();
    let (c, _) = prepared.into_circuit().unwrap();
    (c, spans)
}

fn parallel(n: usize, w: u32) -> (Circuit, ParallelCircuit) {
    let (c, spans) = build(n, w);
    let pc = ParallelCircuit::from_flat(&c, &spans).unwrap();
    (c, pc)
}

/// A typed interface for `layout`: unsigned integers of each value's width.
fn interface_for(c: &Circuit) -> Interface {
    let int = |bits: u32| CType::int(bits, false);
    Interface {
        inputs: (c.layout.input_widths.iter().enumerate())
            .map(|(i, &bits)| InputPort {
                name: format!("INPUT_{}_v{i}", if i % 2 == 0 { "A" } else { "B" }),
                owner: if i % 2 == 0 { Owner::A } else { Owner::B },
                ctype: int(bits),
            })
            .collect(),
        outputs: (c.layout.output_widths.iter().enumerate())
            .map(|(i, &bits)| OutputPort {
                name: format!("OUTPUT_r{i}"),
                visibility: Visibility::Both,
                ctype: int(bits),
            })
            .collect(),
    }
}

fn to_bytes(pc: &ParallelCircuit, iface: &Interface) -> Vec<u8> {
    write_pgc_parallel(Vec::new(), pc, iface).unwrap()
}

fn v1_bytes(c: &Circuit) -> Vec<u8> {
    let mut v = Vec::new();
    write_pgc(&mut v, c, &Interface::default()).unwrap();
    v
}

fn random_bits(rng: &mut SplitMix64, n: usize) -> Vec<bool> {
    (0..n).map(|_| rng.next_bool()).collect()
}

#[test]
fn parallel_circuits_round_trip_with_shared_templates() {
    let (c, pc) = parallel(6, 8);
    let regions = pc.region_info();
    assert_eq!(regions.len(), 3);
    assert_eq!(regions[0].templates, 2, "products and sums");
    assert!(pc.templates.len() >= 4);
    for iface in [interface_for(&c), Interface::default()] {
        let bytes = to_bytes(&pc, &iface);
        assert_eq!(&bytes[8..12], &2u32.to_le_bytes());
        let (pc2, iface2) = read_pgc_parallel_from(&bytes[..]).unwrap();
        assert_eq!(pc2, pc);
        assert_eq!(iface2, iface);
        // The plain reader flattens; the result computes what the original circuit does.
        let (flat, iface3) = read_pgc_from(&bytes[..]).unwrap();
        assert_eq!(iface3, iface);
        assert_eq!(flat, pc.flatten());
        assert_eq!(flat.and_count(), c.and_count());
        let mut rng = SplitMix64::new(11);
        for _ in 0..20 {
            let x = random_bits(&mut rng, c.layout.num_input_wires() as usize);
            assert_eq!(eval_bits(&flat, &x), eval_bits(&c, &x));
        }
    }
}

#[test]
fn files_round_trip_and_name_themselves() {
    let dir = std::env::temp_dir().join(format!("pgcfile-parallel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, pc) = parallel(4, 6);
    let iface = interface_for(&c);
    let path = dir.join("p.pgc");
    write_pgc_parallel_file(&path, &pc, &iface).unwrap();
    assert_eq!(
        read_pgc_parallel(&path).unwrap(),
        (pc.clone(), iface.clone())
    );
    assert_eq!(read_pgc(&path).unwrap(), (pc.flatten(), iface));
    let e = read_pgc_parallel(dir.join("none.pgc"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("none.pgc"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `n` products a[i]·b[i] of `w`-bit inputs in one region, each product an output.
fn products(n: usize, w: u32) -> ParallelCircuit {
    let mut g = NetBuilder::new(OptimizeFor::Size);
    let a: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    let b: Vec<_> = (0..n).map(|_| g.input(w)).collect();
    assert!(g.begin_region(1));
    for i in 0..n {
        if i > 0 {
            g.next_instance();
        }
        let p = mul(&mut g, &a[i], &b[i]);
        g.output(&p);
    }
    assert!(g.end_region());
    let prepared = g.prepare().unwrap();
    let spans = prepared.region_spans().to_vec();
    let (c, _) = prepared.into_circuit().unwrap();
    ParallelCircuit::from_flat(&c, &spans).unwrap()
}

/// File bytes after the header (whose layout lists every input and output).
fn body_len(bytes: &[u8]) -> usize {
    bytes.len() - header_len(bytes)
}

#[test]
fn the_file_grows_by_far_less_than_the_gates_it_adds() {
    let small = products(16, 8);
    let large = products(64, 8);
    assert_eq!(large.templates.len(), 1);
    let body_small = body_len(&to_bytes(&small, &Interface::default()));
    let body_large = body_len(&to_bytes(&large, &Interface::default()));
    let gates_added = large.gate_count() - small.gate_count();
    let bytes_added = (body_large - body_small) as u64;
    let flat_large = body_len(&v1_bytes(&large.flatten()));
    eprintln!(
        "16 -> 64 products: +{gates_added} gates, +{bytes_added} bytes; after the header: \
         v2 {body_large} bytes, the flattened circuit as v1 {flat_large}"
    );
    // Instances in a stride cost a byte per input (16) and one for the template index.
    assert!(
        bytes_added <= 48 * 17,
        "{bytes_added} bytes for 48 instances"
    );
    assert!(
        bytes_added * 5 < gates_added,
        "{bytes_added} bytes for {gates_added} gates"
    );
    assert!(body_large * 4 < flat_large, "{body_large} vs {flat_large}");

    // With sequential code between regions, that code is what grows the file.
    let (_, small) = parallel(8, 8);
    let (_, large) = parallel(32, 8);
    let bytes_small = to_bytes(&small, &Interface::default()).len();
    let bytes_large = to_bytes(&large, &Interface::default()).len();
    let flat_large = v1_bytes(&large.flatten()).len();
    eprintln!("three regions, 32 instances each: v2 {bytes_large} bytes, v1 {flat_large}");
    assert!(bytes_small < bytes_large && bytes_large * 2 < flat_large);
}

#[test]
fn version_1_files_still_read_and_circuits_without_regions_write_version_1() {
    let (c, _) = build(3, 5);
    let bytes = v1_bytes(&c);
    let (pc, iface) = read_pgc_parallel_from(&bytes[..]).unwrap();
    assert_eq!(pc, ParallelCircuit::sequential(&c).unwrap());
    assert_eq!(iface, Interface::default());
    assert_eq!(read_pgc_from(&bytes[..]).unwrap().0, c);

    // No regions: written as version 1, exactly what write_pgc writes for the flat circuit.
    let seq = ParallelCircuit::sequential(&c).unwrap();
    let written = to_bytes(&seq, &Interface::default());
    assert_eq!(&written[8..12], &1u32.to_le_bytes());
    assert_eq!(written, v1_bytes(&seq.flatten()));
    assert_eq!(read_pgc_parallel_from(&written[..]).unwrap().0, seq);
}

#[test]
fn the_streaming_reader_refuses_version_2_clearly() {
    let (_, pc) = parallel(2, 4);
    let bytes = to_bytes(&pc, &Interface::default());
    let e = PgcReader::new(&bytes[..]).err().expect("must refuse");
    assert!(matches!(e.kind, PgcErrorKind::ParallelNotStreamable));
    assert!(e.to_string().contains("read_pgc_parallel"), "{e}");
}

#[test]
fn every_truncation_is_a_clear_error() {
    let (c, pc) = parallel(3, 4);
    let bytes = to_bytes(&pc, &interface_for(&c));
    assert_truncations_are_clear(&bytes, |b| read_pgc_parallel_from(b));
    // The flat reader meets the same cut files.
    assert_truncations_are_clear(&bytes, |b| read_pgc_from(b));
}

#[test]
fn every_byte_flip_is_detected_without_panicking() {
    let (c, pc) = parallel(3, 4);
    let bytes = to_bytes(&pc, &interface_for(&c));
    let mut rng = SplitMix64::new(0x5eed);
    // A version 2 file whose version reads 1 goes to the streaming reader, so
    // `ParallelNotStreamable` never happens: it is not among the accepted kinds.
    assert_byte_flips_are_detected(
        &bytes,
        3,
        || rng.next_u64() as u8,
        |b| read_pgc_parallel_from(b),
        |_| false,
    );
}

/// Flips bytes after the header and fixes the final checksum, so that the decoder's own
/// checks (not the checksum) must catch each corruption: the result is a clean error naming
/// an offset inside the file, or a circuit that is still valid.
#[test]
fn corrupted_records_with_a_valid_checksum_never_get_past_the_checks() {
    let (c, pc) = parallel(3, 4);
    let bytes = to_bytes(&pc, &interface_for(&c));
    let header_end = header_len(&bytes);
    let mut rng = SplitMix64::new(0xc0ffee);
    let (mut rejected, mut accepted) = (0, 0);
    for i in header_end..bytes.len() - 32 {
        for _ in 0..4 {
            let mut v = bytes.clone();
            v[i] ^= (rng.next_u64() as u8) | 1;
            let body = v.len() - 32;
            let digest = *blake3::hash(&v[..body]).as_bytes();
            v[body..].copy_from_slice(&digest);
            match read_pgc_parallel_from(&v[..]) {
                Ok((pc2, _)) => {
                    accepted += 1;
                    validate(&pc2.flatten()).unwrap();
                }
                Err(e) => {
                    rejected += 1;
                    let text = e.to_string();
                    match e.kind {
                        PgcErrorKind::Malformed { offset, .. } => {
                            assert!(offset < v.len() as u64, "{text}");
                            assert!(text.starts_with(&format!("byte {offset}: ")), "{text}");
                        }
                        PgcErrorKind::Truncated { .. } => {}
                        ref k => panic!("flip at {i}: unexpected {k}"),
                    }
                }
            }
        }
    }
    eprintln!("{rejected} rejected, {accepted} still valid");
    assert!(rejected > 10 * accepted);
}

/// Bytes up to and including the header checksum.
fn header_len(bytes: &[u8]) -> usize {
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let layout_len = word(16);
    let json_len = word(20 + layout_len);
    24 + layout_len + json_len + 32
}

#[test]
fn hostile_counts_cannot_force_huge_allocations() {
    let (_, pc) = parallel(2, 4);
    let bytes = to_bytes(&pc, &Interface::default());
    let header = &bytes[..header_len(&bytes)];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // Four billion templates, then the end of the file.
        (
            [u32::MAX.to_le_bytes().as_slice(), &[0; 40]].concat(),
            "a template header",
        ),
        // A template of 2^32 - 2 gates in blocks that never come.
        (
            [1u32, 0, u32::MAX - 1, 0, 65536, 65536 * 16]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
            "a gate block",
        ),
        // A region of 4 billion instances with a 4 GiB instance block.
        (
            // One empty template (no inputs, gates or outputs; empty output list).
            [1u32, 0, 0, 0, 0]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .chain([1u8])
                .chain(
                    [5u32, u32::MAX, 65536, u32::MAX]
                        .iter()
                        .flat_map(|x| x.to_le_bytes()),
                )
                .chain([0u8; 100])
                .collect(),
            "an instance block",
        ),
    ];
    for (body, what) in cases {
        let file = [header, &body].concat();
        let e = read_pgc_parallel_from(&file[..]).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "the file ends at byte {}, inside {what} (truncated?)",
                file.len()
            )
        );
    }
}

#[test]
fn a_lying_gate_count_in_the_end_record_is_a_clean_error_when_read_whole() {
    // read_pgc_contents sizes its gate list from the end record before reading: a count
    // far beyond the file (here 2^64 - 1) must neither abort the process nor pass.
    let dir = std::env::temp_dir().join(format!("pgcfile-lying-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, _) = build(3, 5);
    let path = dir.join("plain.pgc");
    let mut bytes = v1_bytes(&c);
    std::fs::write(&path, &bytes).unwrap();
    let Ok((PgcContents::Plain(read), _)) = read_pgc_contents(&path) else {
        panic!("a version 1 file reads as a plain circuit")
    };
    assert_eq!(read, c);
    let at = bytes.len() - 48;
    bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let e = read_pgc_contents(&path)
        .err()
        .expect("a wrong count is refused");
    assert!(e.to_string().contains("plain.pgc"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_writer_refuses_what_a_reader_would_refuse() {
    let (c, pc) = parallel(3, 4);
    let mut iface = interface_for(&c);
    iface.outputs.pop();
    let e = write_pgc_parallel(Vec::new(), &pc, &iface)
        .unwrap_err()
        .to_string();
    assert!(e.contains("output ports but the circuit has"), "{e}");

    type Change = fn(&mut ParallelCircuit);
    let cases: [(Change, &str); 5] = [
        (|pc| first_region(pc).instances.clear(), "has no instances"),
        (
            |pc| {
                let r = first_region(pc);
                let w = r.instances[0].outputs[0];
                r.instances[1].inputs[0] = w;
            },
            "which another instance of the same region sets",
        ),
        (
            |pc| {
                let t = &mut pc.templates[0];
                t.outputs.push(t.outputs[0]);
            },
            "listed twice",
        ),
        (
            |pc| pc.templates[0].outputs[0] = 0,
            "not one of the template's gate wires",
        ),
        (
            |pc| pc.layout.num_wires += 1,
            "neither inputs nor set by any phase",
        ),
    ];
    for (change, expected) in cases {
        let mut bad = pc.clone();
        change(&mut bad);
        let e = write_pgc_parallel(Vec::new(), &bad, &Interface::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(expected), "{e}");
    }
}

fn first_region(pc: &mut ParallelCircuit) -> &mut pgc_circuit::Region {
    pc.phases
        .iter_mut()
        .find_map(|p| match p {
            Phase::Region(r) => Some(r),
            Phase::Sequential(_) => None,
        })
        .unwrap()
}
