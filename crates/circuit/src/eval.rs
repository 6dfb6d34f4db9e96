//! Cleartext evaluation, bit-sliced: one `u64` word per wire carries 64 independent input
//! sets (lane `k` = input set `k`), so one pass over the gates evaluates 64 inputs.
//!
//! Wire ids are treated as slots: a gate reads its inputs before writing its output, and a
//! wire id may be written more than once. The evaluator only needs `num_wires` words, so it
//! also runs circuits that never fit in memory whole (any [`GateSource`]).

use crate::ir::{Gate, GateSource, Layout, Op, WireId};
use crate::limits::{MemoryError, MemoryNeed};

/// The memory [`eval_bitsliced`] allocates for `layout`: one 64-bit word per wire.
pub fn memory_needed(layout: &Layout) -> MemoryNeed {
    let wires = (layout.num_wires as u64).max(layout.input_widths.iter().map(|&w| w as u64).sum());
    MemoryNeed::per_item(wires, "wires", 8, "words for evaluating in the clear")
}

/// [`eval_bits`], after checking [`memory_needed`] against the
/// [memory limit](crate::limits::MemoryLimit::current): a circuit too large is refused
/// before anything is allocated.
pub fn eval_bits_checked<S: GateSource>(
    src: &S,
    input_bits: &[bool],
) -> Result<Vec<bool>, MemoryError> {
    memory_needed(src.layout()).check()?;
    Ok(eval_bits(src, input_bits))
}

/// Evaluates `src` on 64 input sets at once.
///
/// `input_lanes` has one word per input wire (wire `i` = `input_lanes[i]`, bit `k` of a word
/// = that wire's value in input set `k`). Returns one word per output wire, in
/// `layout.output_wires` order.
///
/// # Panics
/// If `input_lanes.len()` is not the number of input wires, or if a gate names a wire
/// `>= num_wires` (impossible for circuits from the parser, builder or generators; see
/// [`crate::analysis::validate`] for circuits from elsewhere).
pub fn eval_bitsliced<S: GateSource>(src: &S, input_lanes: &[u64]) -> Vec<u64> {
    let layout = src.layout();
    let n_in = input_lanes.len();
    let declared: u64 = layout.input_widths.iter().map(|&w| w as u64).sum();
    assert_eq!(
        n_in as u64, declared,
        "eval_bitsliced: {n_in} input words for {declared} input wires"
    );
    let mut wires = vec![0u64; (layout.num_wires as usize).max(n_in)];
    wires[..n_in].copy_from_slice(input_lanes);
    let result: Result<(), std::convert::Infallible> = src.for_each_chunk(&mut |gates| {
        run_gates(&mut wires, gates);
        Ok(())
    });
    let Ok(()) = result;
    layout
        .output_wires
        .iter()
        .map(|&w| wires[w as usize])
        .collect()
}

/// The inner loop: one `match` per gate, no allocation.
#[inline]
fn run_gates(wires: &mut [u64], gates: &[Gate]) {
    let at = |w: WireId| w as usize;
    for g in gates {
        let v = match g.op {
            Op::Xor => wires[at(g.a)] ^ wires[at(g.b)],
            Op::And => wires[at(g.a)] & wires[at(g.b)],
            Op::Inv => !wires[at(g.a)],
            Op::Copy => wires[at(g.a)],
            Op::Const => {
                if g.a & 1 == 1 {
                    u64::MAX
                } else {
                    0
                }
            }
        };
        wires[at(g.out)] = v;
    }
}

/// Evaluates `src` on a single input set given as the bits of the input wires; returns the
/// bits of the output wires in `layout.output_wires` order.
///
/// # Panics
/// As [`eval_bitsliced`].
pub fn eval_bits<S: GateSource>(src: &S, input_bits: &[bool]) -> Vec<bool> {
    let lanes: Vec<u64> = input_bits.iter().map(|&b| b as u64).collect();
    eval_bitsliced(src, &lanes)
        .into_iter()
        .map(|w| w & 1 == 1)
        .collect()
}

/// Packs up to 64 input sets (each the bits of all input wires) into lanes for
/// [`eval_bitsliced`].
///
/// # Panics
/// If there are more than 64 sets or they differ in length.
pub fn pack_lanes(sets: &[Vec<bool>]) -> Vec<u64> {
    assert!(sets.len() <= 64, "pack_lanes: at most 64 input sets");
    let n = sets.first().map_or(0, Vec::len);
    let mut lanes = vec![0u64; n];
    for (k, set) in sets.iter().enumerate() {
        assert_eq!(set.len(), n, "pack_lanes: input sets differ in length");
        for (word, &bit) in lanes.iter_mut().zip(set) {
            *word |= (bit as u64) << k;
        }
    }
    lanes
}

/// Extracts lane `k` of bit-sliced words as bits.
pub fn unpack_lane(words: &[u64], k: usize) -> Vec<bool> {
    words.iter().map(|&w| (w >> k) & 1 == 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Circuit, Gate, Layout};

    /// out0 = (a & b) ^ !a, out1 = const 1, out2 = copy(b), with slot 3 reused.
    fn small() -> Circuit {
        Circuit {
            layout: Layout {
                num_wires: 5,
                input_widths: vec![1, 1],
                output_widths: vec![3],
                output_wires: vec![3, 4, 2],
            },
            gates: vec![
                Gate::and(0, 1, 2),
                Gate::inv(0, 3),
                Gate::xor(2, 3, 3), // slot 3 read and rewritten
                Gate::constant(true, 4),
                Gate::copy(1, 2), // slot 2 rewritten after its last read
            ],
        }
    }

    #[test]
    fn truth_table_with_slot_reuse() {
        let c = small();
        for a in [false, true] {
            for b in [false, true] {
                let out = eval_bits(&c, &[a, b]);
                assert_eq!(out, vec![(a & b) ^ !a, true, b], "a={a} b={b}");
            }
        }
    }

    #[test]
    fn lanes_are_independent() {
        let c = small();
        let sets: Vec<Vec<bool>> = (0..4).map(|k| vec![k & 1 == 1, k & 2 == 2]).collect();
        let out = eval_bitsliced(&c, &pack_lanes(&sets));
        for (k, set) in sets.iter().enumerate() {
            assert_eq!(unpack_lane(&out, k), eval_bits(&c, set));
        }
    }

    #[test]
    #[should_panic(expected = "input words")]
    fn wrong_input_count_panics() {
        eval_bitsliced(&small(), &[0]);
    }
}
