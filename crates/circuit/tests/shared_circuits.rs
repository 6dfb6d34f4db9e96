//! Every circuit of `shared/circuits/vectors.json`: parsing (stated format and detected),
//! header facts, statistics, known-answer vectors (as parsed, after levelize + slot
//! assignment, and after a write/parse round trip).

use pgc_circuit::analysis::{assign_slots, levelize, stats, validate};
use pgc_circuit::bristol::{parse_circuit, read_circuit_file, write_bristol_fashion};
use pgc_circuit::eval::{eval_bitsliced, pack_lanes, unpack_lane};
use pgc_circuit::testdata::{VectorFile, load_vectors};
use pgc_circuit::value::{decode_outputs, encode_inputs, format_value, parse_value};
use pgc_circuit::{Circuit, Op};

/// Evaluates all vectors of `file` in one bit-sliced pass and compares the outputs.
fn check_vectors(c: &Circuit, file: &VectorFile, what: &str) {
    assert!(file.vectors.len() <= 64);
    let sets: Vec<Vec<bool>> = file
        .vectors
        .iter()
        .map(|v| {
            let values: Vec<Vec<bool>> = v
                .inputs
                .iter()
                .zip(&file.input_widths)
                .map(|(text, &w)| parse_value(text, w, file.bit_order).unwrap())
                .collect();
            encode_inputs(&c.layout, &values).unwrap()
        })
        .collect();
    let out = eval_bitsliced(c, &pack_lanes(&sets));
    for (k, v) in file.vectors.iter().enumerate() {
        let got: Vec<String> = decode_outputs(&c.layout, &unpack_lane(&out, k))
            .iter()
            .map(|bits| format_value(bits, file.bit_order))
            .collect();
        let want: Vec<String> = v.outputs.iter().map(|s| s.to_ascii_lowercase()).collect();
        assert_eq!(got, want, "{} ({what}), vector {k} ({})", file.rel, v.note);
    }
}

/// In AND-level order, no AND of a run of consecutive ANDs reads a wire written earlier in
/// the run.
fn assert_and_runs_independent(c: &Circuit, rel: &str) {
    let mut stamp = vec![u32::MAX; c.layout.num_wires as usize];
    let mut run = 0u32;
    let mut in_run = false;
    for (i, g) in c.gates.iter().enumerate() {
        if g.op != Op::And {
            in_run = false;
            continue;
        }
        if !in_run {
            run += 1;
            in_run = true;
        }
        assert!(
            stamp[g.a as usize] != run && stamp[g.b as usize] != run,
            "{rel}: gate {i} depends on an AND of its own run"
        );
        stamp[g.out as usize] = run;
    }
}

#[test]
fn all_shared_circuits() {
    let files = load_vectors();
    assert_eq!(files.len(), 58, "vectors.json lists 58 circuits");
    let mut vectors = 0;
    for file in &files {
        let c = read_circuit_file(&file.path, Some(file.format)).unwrap_or_else(|e| panic!("{e}"));
        let detected = read_circuit_file(&file.path, None).unwrap();
        assert_eq!(detected, c, "{}: detection disagrees", file.rel);
        assert_eq!(c.layout.num_wires, file.wires, "{}", file.rel);
        assert_eq!(c.layout.input_widths, file.input_widths, "{}", file.rel);
        assert_eq!(c.layout.output_widths, file.output_widths, "{}", file.rel);
        if !file.extended {
            assert_eq!(c.gates.len() as u64, file.gates, "{}", file.rel);
        }
        validate(&c).unwrap();

        let s = stats(&c);
        assert_eq!(s.and_gates, file.and_count, "{}", file.rel);
        assert_eq!(s.and_depth, file.and_depth as u64, "{}", file.rel);
        check_vectors(&c, file, "as parsed");

        let lev = levelize(&c).unwrap();
        assert_and_runs_independent(&lev, &file.rel);
        assert_eq!(stats(&lev).and_depth, file.and_depth as u64, "{}", file.rel);
        let slotted = assign_slots(&lev);
        assert_eq!(
            slotted.layout.num_wires as u64,
            stats(&lev).peak_live_wires,
            "{}",
            file.rel
        );
        assert!(
            slotted.layout.num_wires < c.layout.num_wires,
            "{}",
            file.rel
        );
        assert_and_runs_independent(&slotted, &file.rel);
        check_vectors(&slotted, file, "levelized and slotted");

        let mut text = Vec::new();
        write_bristol_fashion(&slotted, &mut text, true).unwrap();
        let back = parse_circuit(&text, None).unwrap();
        assert_eq!(back.and_count(), file.and_count, "{}", file.rel);
        check_vectors(&back, file, "written as MAND and parsed back");
        vectors += file.vectors.len();
    }
    // The README says 433; vectors.json holds 413.
    assert_eq!(vectors, 413);
}

#[test]
fn udivide64_depth_to_outputs_vs_levels() {
    let file = pgc_circuit::testdata::vector_file("bristol_fashion/udivide64.txt");
    let c = read_circuit_file(&file.path, None).unwrap();
    let s = stats(&c);
    assert_eq!(s.and_depth, 2204);
    assert_eq!(s.and_levels, 2205);
    assert_eq!(s.wires, 17080);
    assert_eq!(s.input_wires, 128);
    assert_eq!(s.output_wires, 64);
    let hist_levels: u64 = s.width_histogram.iter().map(|b| b.levels).sum();
    assert_eq!(hist_levels, 2205);
    let ands: f64 = s.mean_width * s.and_levels as f64;
    assert!((ands - 4285.0).abs() < 1e-6);
}

#[test]
fn mand_files_equal_basic_files() {
    let files = load_vectors();
    for file in files.iter().filter(|f| f.extended) {
        let basic_rel = file
            .rel
            .replace("bristol_fashion_mand/", "bristol_fashion/");
        let basic = files.iter().find(|f| f.rel == basic_rel).unwrap();
        let m = read_circuit_file(&file.path, None).unwrap();
        let b = read_circuit_file(&basic.path, None).unwrap();
        assert_eq!(m.layout, b.layout, "{}", file.rel);
        assert_eq!(m.gates.len(), b.gates.len(), "{}", file.rel);
        let sm = stats(&m);
        let sb = stats(&b);
        assert_eq!(
            (sm.and_gates, sm.xor_gates, sm.inv_gates),
            (sb.and_gates, sb.xor_gates, sb.inv_gates)
        );
    }
}

/// Prints parse time of sha256.txt and peak live wires of aes_128.txt; run with
/// `cargo test --release -p pgc-circuit --test shared_circuits -- --ignored --nocapture`.
#[test]
#[ignore = "timing; run in release"]
fn report_parse_time_and_live_wires() {
    let file = pgc_circuit::testdata::vector_file("bristol_fashion/sha256.txt");
    let text = std::fs::read(&file.path).unwrap();
    let mut best = f64::MAX;
    for _ in 0..10 {
        let start = std::time::Instant::now();
        let c = parse_circuit(&text, None).unwrap();
        best = best.min(start.elapsed().as_secs_f64());
        assert_eq!(c.gates.len(), 135_073);
    }
    println!(
        "sha256.txt ({} bytes): parse {:.1} ms (best of 10)",
        text.len(),
        best * 1e3
    );
    let aes = pgc_circuit::testdata::vector_file("bristol_fashion/aes_128.txt");
    let c = read_circuit_file(&aes.path, None).unwrap();
    let as_parsed = stats(&c).peak_live_wires;
    let lev = levelize(&c).unwrap();
    let slotted = assign_slots(&lev);
    let slotted_direct = assign_slots(&c);
    println!(
        "aes_128.txt: {} wires; peak live as parsed {as_parsed}, levelized {}, after \
         levelize+assign_slots num_wires {}, assign_slots alone {}",
        c.layout.num_wires,
        stats(&lev).peak_live_wires,
        slotted.layout.num_wires,
        slotted_direct.layout.num_wires
    );
    let ours = pgc_circuit::builder::aes::aes128_circuit();
    let s = stats(&ours);
    println!(
        "builder aes128_circuit: {} gates, {} AND, {} XOR, {} INV, AND depth {}, wires {}, \
         peak live {}, after assign_slots {}",
        s.gates,
        s.and_gates,
        s.xor_gates,
        s.inv_gates,
        s.and_depth,
        s.wires,
        s.peak_live_wires,
        assign_slots(&ours).layout.num_wires
    );
}
