//! Semi-honest Yao with three-halves garbling (`--garbling three-halves`): every shared
//! Bristol circuit and known-answer vector decoded correctly, tables smaller than
//! half-gates' on the wire, and a scheme mismatch refused at the handshake on both sides.

use pgc_circuit::analysis::{assign_slots, levelize};
use pgc_circuit::bristol::read_circuit_file;
use pgc_circuit::testdata::{load_vectors, vector_file};
use pgc_circuit::value::{format_value, parse_value};
use pgc_circuit::{Circuit, GateSource};
use pgc_net::MemoryChannel;
use pgc_protocol::malicious::run_secured;
use pgc_protocol::{Device, Garbling, Outcome, Party, ProtocolError, RunOptions, Security};

fn prepared(c: &Circuit) -> Circuit {
    assign_slots(&levelize(c).unwrap())
}

fn default_owners(n: usize) -> Vec<Party> {
    (0..n)
        .map(|i| if i == 0 { Party::A } else { Party::B })
        .collect()
}

/// Both parties over an in-memory channel, A garbling with `schemes[0]` and B with
/// `schemes[1]`.
fn run<S: GateSource>(
    circuit: &S,
    owners: &[Party],
    values: &[Vec<bool>],
    schemes: [Garbling; 2],
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
) {
    let (a_in, b_in): (Vec<_>, Vec<_>) = values
        .iter()
        .zip(owners)
        .partition(|(_, o)| **o == Party::A);
    let a_in: Vec<Vec<bool>> = a_in.into_iter().map(|(v, _)| v.clone()).collect();
    let b_in: Vec<Vec<bool>> = b_in.into_iter().map(|(v, _)| v.clone()).collect();
    let all = pgc_protocol::all_visible(circuit.layout());
    let (mut ca, mut cb) = MemoryChannel::pair();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            run_secured(
                &mut ca,
                circuit,
                owners,
                &all,
                Party::A,
                &a_in,
                Security::SemiHonest,
                RunOptions {
                    threads: 1,
                    device: Device::Cpu,
                    garbling: schemes[0],
                },
                &mut |_| {},
            )
        });
        let rb = run_secured(
            &mut cb,
            circuit,
            owners,
            &all,
            Party::B,
            &b_in,
            Security::SemiHonest,
            RunOptions {
                threads: 1,
                device: Device::Cpu,
                garbling: schemes[1],
            },
            &mut |_| {},
        );
        (h.join().unwrap(), rb)
    })
}

#[test]
fn every_shared_circuit_and_vector_decodes_correctly() {
    let files = load_vectors();
    assert!(files.len() >= 58, "expected the full shared circuit set");
    let mut runs = 0;
    for f in &files {
        let c = prepared(&read_circuit_file(&f.path, Some(f.format)).unwrap());
        let owners = default_owners(c.layout.input_widths.len());
        // The first two vectors of each file (the AES and SHA circuits are large for a
        // debug build; the garble crate's tests cover random circuits exhaustively).
        for v in f.vectors.iter().take(2) {
            let values: Vec<Vec<bool>> = v
                .inputs
                .iter()
                .zip(&c.layout.input_widths)
                .map(|(t, &w)| parse_value(t, w, f.bit_order).unwrap())
                .collect();
            let (a, b) = run(&c, &owners, &values, [Garbling::ThreeHalves; 2]);
            let (a, b) = (a.unwrap(), b.unwrap());
            let got: Vec<String> = b
                .all_outputs()
                .unwrap()
                .iter()
                .map(|o| format_value(o, f.bit_order))
                .collect();
            assert_eq!(got, v.outputs, "{} on inputs {:?}", f.rel, v.inputs);
            assert_eq!(a.outputs, b.outputs, "{}", f.rel);
            runs += 1;
        }
    }
    assert!(runs >= 100, "only {runs} vectors ran");
}

#[test]
fn aes_tables_take_three_quarters_of_the_half_gates_bytes_and_a_bit() {
    let f = vector_file("bristol_fashion/aes_128.txt");
    let c = prepared(&read_circuit_file(&f.path, Some(f.format)).unwrap());
    let owners = default_owners(c.layout.input_widths.len());
    let v = &f.vectors[0];
    let values: Vec<Vec<bool>> = v
        .inputs
        .iter()
        .zip(&c.layout.input_widths)
        .map(|(t, &w)| parse_value(t, w, f.bit_order).unwrap())
        .collect();
    let sent = |scheme| {
        let (a, b) = run(&c, &owners, &values, [scheme; 2]);
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.outputs, b.outputs);
        a.stats.bytes_sent
    };
    let (half, three) = (sent(Garbling::HalfGates), sent(Garbling::ThreeHalves));
    let ands = c.and_count();
    // Everything else A sends (input labels, OT, frames) is the same under both schemes:
    // the difference is the tables, 32 − 197/8 bytes per AND but for frame padding.
    let saved = half - three;
    let per_and = 32.0 - 197.0 / 8.0;
    assert!(
        (saved as f64 - per_and * ands as f64).abs() <= 8.0,
        "saved {saved} bytes on {ands} ANDs (half-gates {half}, three-halves {three})"
    );
}

#[test]
fn different_schemes_are_refused_at_the_handshake_on_both_sides() {
    let f = vector_file("bristol_fashion/adder64.txt");
    let c = prepared(&read_circuit_file(&f.path, Some(f.format)).unwrap());
    let owners = [Party::A, Party::B];
    let zero = vec![vec![false; 64]; 2];
    let (ra, rb) = run(
        &c,
        &owners,
        &zero,
        [Garbling::ThreeHalves, Garbling::HalfGates],
    );
    let ea = ra.unwrap_err().to_string();
    let eb = rb.unwrap_err().to_string();
    assert!(
        ea.contains("--garbling three-halves here, half-gates at the peer"),
        "{ea}"
    );
    assert!(
        eb.contains("--garbling half-gates here, three-halves at the peer"),
        "{eb}"
    );
}

#[test]
fn three_halves_is_refused_against_cheaters_and_on_the_gpu() {
    let f = vector_file("bristol_fashion/adder64.txt");
    let c = prepared(&read_circuit_file(&f.path, Some(f.format)).unwrap());
    let owners = [Party::A, Party::B];
    let all = pgc_protocol::all_visible(c.layout());
    let (mut ca, _cb) = MemoryChannel::pair();
    let e = run_secured(
        &mut ca,
        &c,
        &owners,
        &all,
        Party::A,
        &[vec![false; 64]],
        Security::DualExecution,
        RunOptions {
            threads: 1,
            device: Device::Cpu,
            garbling: Garbling::ThreeHalves,
        },
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("semi-honest Yao") && e.contains("dual-execution"),
        "{e}"
    );
    let e = run_secured(
        &mut ca,
        &c,
        &owners,
        &all,
        Party::A,
        &[vec![false; 64]],
        Security::SemiHonest,
        RunOptions {
            threads: 1,
            device: Device::Gpu,
            garbling: Garbling::ThreeHalves,
        },
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("CPU only"), "{e}");
}
