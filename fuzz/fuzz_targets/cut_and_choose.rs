//! Either party of cut-and-choose Yao (--security malicious, s = 4) against a scripted cheating peer: the input is a setup byte and every byte the peer sends.
//! The entry point is pgc_fuzz::cut_and_choose (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::cut_and_choose(data));
