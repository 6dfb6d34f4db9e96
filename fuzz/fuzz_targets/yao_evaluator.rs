//! The evaluator (party B) of the sequential protocol against a scripted garbler: the input is every byte the peer sends.
//! The entry point is pgc_fuzz::yao_evaluator (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::yao_evaluator(data));
