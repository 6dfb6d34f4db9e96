//! The version 3 (compact) .pgc readers: PgcCompactReader and CompactFile with its gate stream; checksums are fixed up first.
//! The entry point is pgc_fuzz::pgc_v3 (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::pgc_v3(data));
