//! A netlist in Yosys' JSON format through the Verilog mapper, with a check that the circuit evaluates.
//! The entry point is pgc_fuzz::yosys_json (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::yosys_json(data));
