//! The version 1 .pgc readers (whole file, parallel view, streaming PgcReader); checksums are fixed up first.
//! The entry point is pgc_fuzz::pgc_v1 (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::pgc_v1(data));
