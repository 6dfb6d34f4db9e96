//! The version 2 (parallel regions) .pgc readers, as a parallel circuit and flattened; checksums are fixed up first.
//! The entry point is pgc_fuzz::pgc_v2 (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::pgc_v2(data));
