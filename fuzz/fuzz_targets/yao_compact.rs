//! Either party of semi-honest Yao on a compact (.pgc version 3) circuit against a scripted peer: the input is a setup byte and every byte the peer sends.
//! The entry point is pgc_fuzz::yao_compact (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::yao_compact(data));
