//! The object of --inputs FILE.json (named inputs) for a fixed interface, with a width check.
//! The entry point is pgc_fuzz::inputs_json (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::inputs_json(data));
