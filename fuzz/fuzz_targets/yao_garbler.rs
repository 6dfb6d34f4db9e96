//! The garbler (party A) of the sequential protocol against a scripted evaluator: the input is every byte the peer sends.
//! The entry point is pgc_fuzz::yao_garbler (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::yao_garbler(data));
