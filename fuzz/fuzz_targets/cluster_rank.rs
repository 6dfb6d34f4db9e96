//! Worker rank 1 of a cluster run (semi-honest or cut-and-choose, either party) against a scripted rank 0 (the plan messages) and a scripted peer rank (its rank-pair stream).
//! The entry point is pgc_fuzz::cluster_rank (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::cluster_rank(data));
