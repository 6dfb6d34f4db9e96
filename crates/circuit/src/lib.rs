//! The circuit IR of pgc: gates, wires, layouts, and everything that reads, writes,
//! analyses or evaluates Boolean circuits in the clear.
//!
//! A circuit is a list of [`Gate`]s in topological order over numbered wires. Input value
//! `i` occupies a consecutive range of the first wires; outputs are an explicit list of
//! wires (see [`Layout`]). Wire ids may be *slots* that are written more than once (a slot
//! is reused once the wire it held is dead), which keeps label memory at the peak number of
//! live wires instead of the number of wires.
//!
//! Modules: [`value`] (numbers as text <-> wire bits), [`eval`] (bit-sliced cleartext
//! evaluation), [`bristol`] (Bristol Fashion / old Bristol files), [`analysis`]
//! (validation, AND-level ordering, slot assignment, statistics), [`builder`] (circuits
//! in code, AES-128), [`generate`] (synthetic circuits), and (hidden) `testdata` (the
//! shared test circuits, for tests).

pub mod analysis;
pub mod bristol;
pub mod builder;
pub mod eval;
pub mod generate;
pub mod ir;
pub mod netlist;
pub mod ports;
#[doc(hidden)]
pub mod testdata;
pub mod value;

pub use analysis::{CircuitError, CircuitStats, assign_slots, levelize, stats, validate};
pub use bristol::{Format, ParseError, parse_circuit, read_circuit_file, write_bristol_fashion};
pub use builder::{Builder, millionaires_circuit};
pub use eval::{eval_bits, eval_bitsliced};
pub use ir::{Circuit, Gate, GateSource, Layout, Op, WireId};
pub use netlist::{Gates, Lit, OptimizeFor};
pub use ports::{CType, InputPort, Interface, OutputPort, Owner, Visibility};
pub use value::{BitOrder, ValueError, decode_outputs, encode_inputs, format_value, parse_value};
