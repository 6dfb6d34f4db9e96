//! The circuit IR of pgc: gates, wires, layouts, and everything that reads, writes,
//! analyses or evaluates Boolean circuits in the clear.
//!
//! A circuit is a list of [`Gate`]s in topological order over numbered wires. Input value
//! `i` occupies a consecutive range of the first wires; outputs are an explicit list of
//! wires (see [`Layout`]). Wire ids may be *slots* that are written more than once (a slot
//! is reused once the wire it held is dead), which keeps label memory at the peak number of
//! live wires instead of the number of wires.

pub mod ir;

pub use ir::{Circuit, Gate, GateSource, Layout, Op, WireId};
