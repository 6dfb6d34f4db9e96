//! The Bristol Fashion / MAND / old Bristol readers (first byte: the format), with a write-and-reparse check.
//! The entry point is pgc_fuzz::bristol (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::bristol(data));
