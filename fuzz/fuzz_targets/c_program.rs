//! A C program through the compiler (first byte: flat or compact), with small limits and a check that the circuit evaluates.
//! The entry point is pgc_fuzz::c_program (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::c_program(data));
