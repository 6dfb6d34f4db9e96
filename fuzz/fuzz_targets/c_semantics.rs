//! A preprocessed C program compiled flat and one other way (compact, without value ranges,
//! depth-optimized, compact without replayed bounds): both circuits must compute the same outputs.
//! The entry point is pgc_fuzz::c_semantics (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::c_semantics(data));
