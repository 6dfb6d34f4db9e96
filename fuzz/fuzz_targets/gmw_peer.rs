//! A GMW party against a scripted peer: the first byte picks the party, the rest is every byte the peer sends.
//! The entry point is pgc_fuzz::gmw_peer (crates/fuzz); see docs/fuzzing.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pgc_fuzz::gmw_peer(data));
