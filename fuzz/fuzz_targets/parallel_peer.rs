//! One party of the parallel protocol (every mode) against a scripted peer on the main connection and the worker streams.
//! The entry point is pgc_fuzz::parallel_peer (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::parallel_peer(data));
