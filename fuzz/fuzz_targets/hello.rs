//! The handshake's Hello decoder and peer check.
//! The entry point is pgc_fuzz::hello (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::hello(data));
