//! Writes preprocessed random C programs (`pgc_compiler::randprog`: integer, dynamic-
//! programming loops over ranged cells, floating point; free of undefined behaviour) as
//! inputs of the `c_semantics` target, each under one of its four variants, so a campaign
//! starts from programs that use most of the C subset (see `fuzz/seed_corpus.sh`).
//!
//! Usage: `cargo run -p pgc-fuzz --example random_c_seeds -- DIR COUNT [FIRST_SEED]`

use std::path::PathBuf;

use pgc_compiler::randprog::{self, Config};
use pgc_compiler::{Options, preprocess_file};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let (Some(dir), Some(count)) = (args.next().map(PathBuf::from), args.next()) else {
        eprintln!("usage: random_c_seeds DIR COUNT [FIRST_SEED]");
        std::process::exit(2);
    };
    let count: u64 = count.to_string_lossy().parse()?;
    let first: u64 = match args.next() {
        Some(s) => s.to_string_lossy().parse()?,
        None => 1,
    };
    std::fs::create_dir_all(&dir)?;
    let scratch = dir.join(".random_c_seeds.c");
    for seed in first..first + count {
        let (kind, program) = match seed % 3 {
            0 => (
                "int",
                randprog::generate(seed, &format!("p{seed}"), &Config::default()),
            ),
            1 => (
                "ranged",
                randprog::ranged::generate(seed, &format!("r{seed}")),
            ),
            _ => (
                "float",
                randprog::floats::generate(
                    seed,
                    &format!("f{seed}"),
                    &randprog::floats::Config::default(),
                ),
            ),
        };
        std::fs::write(&scratch, &program.source)?;
        let text = preprocess_file(&scratch, &Options::default())?;
        let variant = (seed / 3 % 4) as u8;
        let mut bytes = vec![variant];
        bytes.extend_from_slice(text.as_bytes());
        std::fs::write(dir.join(format!("random-{kind}-{seed}")), bytes)?;
    }
    std::fs::remove_file(&scratch)?;
    Ok(())
}
