//! Inputs that fuzzing found to crash, hang or exhaust memory in this crate's readers (see
//! docs/fuzzing.md), each kept under `tests/fuzz_regressions/TARGET/` and asserted here to
//! be a clean error. The pgc-fuzz crate's corpus test replays the same files through the
//! fuzz targets' entry points.

use std::path::PathBuf;

use pgc_circuit::pgcfile::{read_pgc_from, read_pgc_parallel_from};

fn input(target: &str, name: &str) -> Vec<u8> {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests/fuzz_regressions",
        target,
        name,
    ]
    .iter()
    .collect();
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// pgc_v1: the 8-bit-per-party millionaires file (158 gates, 64 input wires) with its wire
/// count set to 2^32 - 16 and valid checksums. Checking the circuit allocated a byte per
/// declared wire (4 GB) and converting it to a parallel circuit 4 bytes per wire several
/// times (libFuzzer: out-of-memory, 2134 MB > 2048 MB); now the count is refused against
/// what the inputs and gates can justify, before anything per wire is allocated.
#[test]
fn v1_wire_count_beyond_its_gates_is_refused_before_allocating() {
    let file = input("pgc_v1", "wire-count-beyond-gates.pgc");
    for e in [
        read_pgc_from(&file[..]).map(|_| ()).unwrap_err(),
        read_pgc_parallel_from(&file[..]).map(|_| ()).unwrap_err(),
    ] {
        let e = e.to_string();
        assert!(
            e.contains("declares 4294967280 wires") && e.contains("justify at most"),
            "{e}"
        );
    }
}
