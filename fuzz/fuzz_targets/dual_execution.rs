//! Either party of dual execution (--security dual-execution) against a scripted cheating peer: the input is a party byte and every byte the peer sends.
//! The entry point is pgc_fuzz::dual_execution (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::dual_execution(data));
