//! Cut-and-choose Yao and dual execution with honest parties, against outside oracles: the
//! shared AES-128 Bristol circuit and its known answer, and a streamed (generated) circuit
//! evaluated in cleartext, with a memory budget small enough that the copies run in
//! several groups.

use pgc_circuit::analysis::{assign_slots, levelize};
use pgc_circuit::bristol::read_circuit_file;
use pgc_circuit::eval::eval_bits;
use pgc_circuit::generate::RandomLayered;
use pgc_circuit::testdata::load_vectors;
use pgc_circuit::value::{format_value, parse_value};
use pgc_circuit::{GateSource, MemoryLimit};
use pgc_net::MemoryChannel;
use pgc_protocol::malicious::run_secured;
use pgc_protocol::{
    Outcome, Party, ProtocolError, RunOptions, Security, all_visible, split_inputs,
};

fn run_both<S: GateSource>(
    c: &S,
    owners: &[Party],
    values: &[Vec<bool>],
    security: Security,
    limit: Option<MemoryLimit>,
) -> (
    Result<Outcome, ProtocolError>,
    Result<Outcome, ProtocolError>,
) {
    let vis = all_visible(c.layout());
    let (mut ca, mut cb) = MemoryChannel::pair();
    let a = split_inputs(owners, values, Party::A);
    let b = split_inputs(owners, values, Party::B);
    let limited = |f: &mut dyn FnMut() -> Result<Outcome, ProtocolError>| match limit {
        Some(l) => l.scoped(f),
        None => f(),
    };
    std::thread::scope(|s| {
        let ha = s.spawn(|| {
            let r = limited(&mut || {
                run_secured(
                    &mut ca,
                    c,
                    owners,
                    &vis,
                    Party::A,
                    &a,
                    security,
                    RunOptions {
                        threads: 2,
                        ..RunOptions::default()
                    },
                    &mut |_| {},
                )
            });
            drop(ca);
            r
        });
        let rb = limited(&mut || {
            run_secured(
                &mut cb,
                c,
                owners,
                &vis,
                Party::B,
                &b,
                security,
                RunOptions {
                    threads: 2,
                    ..RunOptions::default()
                },
                &mut |_| {},
            )
        });
        drop(cb);
        (ha.join().unwrap(), rb)
    })
}

#[test]
fn aes_128_known_answer_in_malicious_mode() {
    let f = load_vectors()
        .into_iter()
        .find(|f| f.rel == "bristol_fashion/aes_128.txt")
        .expect("the shared AES-128 circuit");
    let c = assign_slots(&levelize(&read_circuit_file(&f.path, Some(f.format)).unwrap()).unwrap());
    let owners = [Party::A, Party::B];
    let v = &f.vectors[0];
    let values: Vec<Vec<bool>> = v
        .inputs
        .iter()
        .zip(&c.layout.input_widths)
        .map(|(t, &w)| parse_value(t, w, f.bit_order).unwrap())
        .collect();
    let (a, b) = run_both(
        &c,
        &owners,
        &values,
        Security::Malicious { stat_sec: 4 },
        None,
    );
    for o in [a.unwrap(), b.unwrap()] {
        let got: Vec<String> = o
            .all_outputs()
            .unwrap()
            .iter()
            .map(|x| format_value(x, f.bit_order))
            .collect();
        assert_eq!(got, v.outputs);
    }
}

#[test]
fn a_streamed_circuit_runs_in_copy_groups_within_a_small_memory_budget() {
    // 3 × 512 wire slots: 24 KiB of labels per copy, plus a chunk of tables (512 KiB). A
    // 2 MiB budget holds about 2 copies per half, so the 14 copies of s = 5 run in groups.
    let c = RandomLayered::new(512, 40, 7).unwrap();
    let owners = [Party::A, Party::B];
    let values: Vec<Vec<bool>> = c
        .layout()
        .input_widths
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            (0..w)
                .map(|k| (k as usize * 7 + i).is_multiple_of(3))
                .collect()
        })
        .collect();
    let flat: Vec<bool> = values.iter().flatten().copied().collect();
    let want = eval_bits(&c, &flat);
    let (a, b) = run_both(
        &c,
        &owners,
        &values,
        Security::Malicious { stat_sec: 5 },
        Some(MemoryLimit::from_bytes(2 << 20)),
    );
    for o in [a.unwrap(), b.unwrap()] {
        let got: Vec<bool> = o.all_outputs().unwrap().concat();
        assert_eq!(got, want);
    }
}
