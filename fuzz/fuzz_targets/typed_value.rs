//! The typed value parsers (text for --input NAME=VALUE, JSON for --inputs FILE.json), with a format-and-reparse check.
//! The entry point is pgc_fuzz::typed_value (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::typed_value(data));
