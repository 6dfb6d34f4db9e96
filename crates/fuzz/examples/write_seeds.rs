//! Records the seeds of the protocol fuzz targets from honest in-memory runs and writes
//! them under `DIR/TARGET/NAME` (see `fuzz/seed_corpus.sh`): what each party received, for
//! the sequential protocol and for every parallel mode and thread count, and both hellos.
//!
//! Usage: `cargo run -p pgc-fuzz --example write_seeds -- DIR`

use std::path::{Path, PathBuf};

use pgc_protocol::Party;

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: write_seeds DIR   (writes DIR/TARGET/NAME for the protocol targets)");
        std::process::exit(2);
    };
    let write = |target: &str, name: &str, bytes: &[u8]| -> std::io::Result<()> {
        let folder = dir.join(target);
        std::fs::create_dir_all(&folder)?;
        std::fs::write(Path::new(&folder).join(name), bytes)
    };
    let (to_a, to_b) = pgc_fuzz::yao_transcripts();
    write("yao_garbler", "honest", &to_a)?;
    write("yao_evaluator", "honest", &to_b)?;
    for party in [Party::A, Party::B] {
        let name = party.letter().to_string();
        write("hello", &name, &pgc_fuzz::yao_hello(party).to_bytes())?;
    }
    for (name, seed) in pgc_fuzz::parallel_transcripts() {
        write("parallel_peer", &name, &seed)?;
    }
    for (name, seed) in pgc_fuzz::gmw_transcripts() {
        write("gmw_peer", &name, &seed)?;
    }
    // These targets replay their own entropy in fuzzing builds only: record them in one
    // (`RUSTFLAGS="--cfg fuzzing"`, see docs/fuzzing.md), or they stop at the first check
    // that depends on the honest party's random choices.
    if !cfg!(fuzzing) {
        eprintln!(
            "note: not a --cfg fuzzing build: the seeds of cut_and_choose, dual_execution, \
             yao_three_halves, yao_compact and cluster_rank will not match the fuzz build's \
             entropy"
        );
    }
    let more = [
        (
            "cluster_rank",
            pgc_fuzz::cluster::cluster_rank_transcripts(),
        ),
        (
            "cut_and_choose",
            pgc_fuzz::malicious::cut_and_choose_transcripts(),
        ),
        (
            "dual_execution",
            pgc_fuzz::malicious::dual_execution_transcripts(),
        ),
        (
            "yao_three_halves",
            pgc_fuzz::yao_variants::yao_three_halves_transcripts(),
        ),
        (
            "yao_compact",
            pgc_fuzz::yao_variants::yao_compact_transcripts(),
        ),
    ];
    for (target, seeds) in more {
        for (name, seed) in seeds {
            write(target, &name, &seed)?;
        }
    }
    Ok(())
}
