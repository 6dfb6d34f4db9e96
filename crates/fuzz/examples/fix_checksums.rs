//! Rewrites the two BLAKE3 checksums of a `.pgc` file in place (as the fuzz targets do
//! before reading), so that a hand-edited file reaches the decoders: for regression inputs.
//!
//! Usage: `cargo run -p pgc-fuzz --example fix_checksums -- FILE`

fn main() -> std::io::Result<()> {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: fix_checksums FILE.pgc   (rewrites its checksums in place)");
        std::process::exit(2);
    };
    let mut file = std::fs::read(&path)?;
    pgc_fuzz::fix_pgc_checksums(&mut file);
    std::fs::write(&path, file)
}
