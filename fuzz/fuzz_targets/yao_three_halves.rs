//! Either party of semi-honest Yao with three-halves garbling against a scripted peer: the input is a party byte and every byte the peer sends.
//! The entry point is pgc_fuzz::yao_three_halves (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::yao_three_halves(data));
