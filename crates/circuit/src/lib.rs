//! The circuit IR of pgc: gates, wires, layouts, and everything that reads, writes,
//! analyses or evaluates Boolean circuits in the clear.
//!
//! A circuit is a list of [`Gate`]s in topological order over numbered wires. Input value
//! `i` occupies a consecutive range of the first wires; outputs are an explicit list of
//! wires (see [`Layout`]). Wire ids may be *slots* that are written more than once (a slot
//! is reused once the wire it held is dead), which keeps label memory at the peak number of
//! live wires instead of the number of wires.
//!
//! Modules: [`value`] (numbers as text <-> wire bits), [`float_text`] (IEEE-754 values as
//! text, exactly rounded), [`eval`] (bit-sliced cleartext
//! evaluation), [`limits`] (the memory budget checked before large allocations),
//! [`bristol`] (Bristol Fashion / old Bristol files), [`analysis`]
//! (validation, AND-level ordering, slot assignment, statistics), [`builder`] (circuits
//! in code, AES-128), [`typed`] (C-typed port values as text and JSON), [`pgcfile`] (pgc's
//! binary circuit format), [`netlist`] (gate emission for compilers: literals, the
//! simplifying [`NetBuilder`]), [`blocks`] (word-level arithmetic, comparisons, shifts and
//! selection over any [`Gates`]; IEEE-754 floating point in [`blocks::float`]), [`generate`] (synthetic circuits), and (hidden) `testdata`
//! (the shared test circuits, for tests).

pub mod analysis;
pub mod blocks;
pub mod bristol;
pub mod builder;
pub mod compact;
pub mod eval;
pub mod float_text;
pub mod generate;
pub mod ir;
pub mod limits;
pub mod netlist;
pub mod parallel;
pub mod pgcfile;
pub mod ports;
pub mod tempfiles;
#[doc(hidden)]
pub mod testdata;
pub mod typed;
pub mod value;

pub use analysis::{
    CircuitError, CircuitStats, assign_slots, levelize, levelize_into_slots, levelize_with_slots,
    stats, validate,
};
pub use bristol::{Format, ParseError, parse_circuit, read_circuit_file, write_bristol_fashion};
pub use builder::{Builder, millionaires_circuit};
pub use eval::{eval_bits, eval_bitsliced};
pub use ir::{Circuit, CircuitForm, Gate, GateSource, Layout, Op, WireId, WithValueFormat};
pub use limits::{MemoryError, MemoryLimit, MemoryNeed};
pub use netlist::{BuildStats, Gates, Lit, NetBuilder, NetlistError, OptimizeFor};
pub use parallel::{
    Instance, ParallelCircuit, ParallelError, Phase, Region, RegionInfo, RegionSpan, Template,
};
pub use pgcfile::{PgcContents, PgcFileError, read_pgc, read_pgc_contents, write_pgc};
pub use ports::{CType, InputPort, Interface, OutputPort, Owner, ValueFormat, Visibility};
pub use typed::{TypedError, format_port_value, parse_port_value};
pub use value::{BitOrder, ValueError, decode_outputs, encode_inputs, format_value, parse_value};
