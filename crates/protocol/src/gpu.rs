//! Semi-honest Yao with the gate stream garbled or evaluated on a GPU (`--device gpu`).
//!
//! Messages and who learns what: exactly those of [`crate::yao`]. Only step 3 (the garbled
//! tables) runs elsewhere: the party's labels move into GPU memory after the input phase,
//! the gates go to the GPU in windows of [`WINDOW_GATES`] (each levelled on host threads
//! ahead of the GPU and run one kernel launch per level, `pgc_gpu`), and the tables of each window come back
//! in the CPU engine's order and go out in the same frames as [`crate::yao::send_tables`]
//! sends. The labels come back to the host for the output phase. The tables are bit for
//! bit the CPU engine's, so the peer cannot tell, and need not know, which device a party
//! uses.
//!
//! Δ is uploaded to the GPU of the garbler's own machine and never leaves it otherwise.
//! The kernels' T-table AES reads addresses that depend on labels: do not share the GPU
//! with untrusted code (see `pgc_gpu`).

use pgc_circuit::{Gate, GateSource};
use pgc_crypto::Block;
use pgc_garble::{Evaluator, Garbler};
use pgc_net::Channel;

use crate::yao::ProtocolError;

/// Gates per GPU window: each level of a window is one kernel launch (a few µs), so a window
/// must hold many independent gates per level (measured on an H100: AES-128 copies ran at
/// 92 M AND/s in 4 Mi-gate windows, launch-bound); 32 Mi gates keep the records (16 B per
/// gate), tables (32 B per AND) and staging to about 1.5 GiB of GPU and host memory.
pub const WINDOW_GATES: usize = 1 << 25;

/// Where a Yao party garbles or evaluates the gate stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Device {
    /// The CPU engine (`pgc_garble`).
    #[default]
    Cpu,
    /// The GPU engine (`pgc_gpu::cuda`; needs a build with the `gpu` feature).
    Gpu,
}

fn gpu_error(e: pgc_gpu::GpuError) -> ProtocolError {
    ProtocolError::Input(format!("GPU: {e}"))
}

impl From<pgc_gpu::ScheduleError> for ProtocolError {
    fn from(e: pgc_gpu::ScheduleError) -> ProtocolError {
        gpu_error(e.into())
    }
}

/// Cuts `circuit`'s gate stream into windows of [`WINDOW_GATES`] (the last may be shorter),
/// levels them on host threads ([`pgc_gpu::pipeline`]) while `consume` runs the previous
/// ones, and hands each window with its schedule to `consume` in order.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
fn for_each_levelled_window<S: GateSource>(
    circuit: &S,
    consume: impl FnMut(Vec<Gate>, pgc_gpu::Schedule) -> Result<(), ProtocolError>,
) -> Result<(), ProtocolError> {
    let num_wires = circuit.layout().num_wires as usize;
    let window_len = WINDOW_GATES.min(circuit.gate_count().max(1) as usize);
    pgc_gpu::pipeline::level_in_parallel(
        num_wires,
        pgc_gpu::pipeline::levelling_threads(num_wires, window_len),
        |send| {
            let mut buf: Vec<Gate> = Vec::with_capacity(window_len);
            circuit.for_each_chunk(&mut |chunk| -> Result<(), ProtocolError> {
                let mut chunk = chunk;
                while !chunk.is_empty() {
                    let take = (window_len - buf.len()).min(chunk.len());
                    buf.extend_from_slice(&chunk[..take]);
                    chunk = &chunk[take..];
                    if buf.len() == window_len {
                        send(std::mem::replace(&mut buf, Vec::with_capacity(window_len)))?;
                    }
                }
                Ok(())
            })?;
            if !buf.is_empty() {
                send(buf)?;
            }
            Ok(())
        },
        consume,
    )
}

/// [`crate::yao::send_tables`] on the GPU: `garbler` holds the input zero-labels before
/// and every wire's zero-label after; `hash_key` is the run's. Returns the gates garbled
/// and the table blocks sent.
#[cfg_attr(not(feature = "gpu"), allow(unused_variables))]
pub(crate) fn send_tables_gpu<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    garbler: &mut Garbler,
    hash_key: Block,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, u64), ProtocolError> {
    #[cfg(not(feature = "gpu"))]
    {
        Err(gpu_error(pgc_gpu::GpuError::NotBuilt))
    }
    #[cfg(feature = "gpu")]
    {
        use crate::yao::TABLE_FRAME_BLOCKS;
        use pgc_gpu::cuda::{GpuDevice, GpuGarbler};
        let dev = GpuDevice::open().map_err(gpu_error)?;
        let mut gpu = GpuGarbler::new(dev, garbler.zero_labels(), garbler.delta(), hash_key)
            .map_err(gpu_error)?;
        let mut tables: Vec<Block> = Vec::new();
        let (mut gates, mut blocks_sent) = (0u64, 0u64);
        for_each_levelled_window(circuit, |window, schedule| {
            tables.clear();
            gpu.garble_scheduled(&schedule, Some(&mut tables))
                .map_err(gpu_error)?;
            for frame in tables.chunks(TABLE_FRAME_BLOCKS) {
                ch.send_frame(Block::slice_as_bytes(frame))?;
                blocks_sent += frame.len() as u64;
            }
            gates += window.len() as u64;
            progress(gpu.and_gates_done());
            Ok(())
        })?;
        ch.send_frame(&[])?;
        garbler
            .zero_labels_mut()
            .copy_from_slice(&gpu.zero_labels().map_err(gpu_error)?);
        garbler.set_and_index(gpu.and_gates_done());
        Ok((gates, blocks_sent))
    }
}

/// [`crate::yao::receive_tables`] on the GPU: `evaluator` holds the input labels before and
/// every wire's label after. Returns the gates evaluated and the table blocks received
/// (a short or long table stream is left for the completion check, as on the CPU).
#[cfg_attr(not(feature = "gpu"), allow(unused_variables))]
pub(crate) fn receive_tables_gpu<S: GateSource>(
    ch: &mut (impl Channel + ?Sized),
    circuit: &S,
    evaluator: &mut Evaluator,
    hash_key: Block,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, u64), ProtocolError> {
    #[cfg(not(feature = "gpu"))]
    {
        Err(gpu_error(pgc_gpu::GpuError::NotBuilt))
    }
    #[cfg(feature = "gpu")]
    {
        use crate::yao::TableReader;
        use pgc_gpu::cuda::{GpuDevice, GpuEvaluator};
        let dev = GpuDevice::open().map_err(gpu_error)?;
        let mut gpu = GpuEvaluator::new(dev, evaluator.labels(), hash_key).map_err(gpu_error)?;
        let mut reader = TableReader::default();
        let mut gates = 0u64;
        let pass = for_each_levelled_window(circuit, |window, schedule| {
            let tables = reader.take(ch, 2 * schedule.and_gates as usize)?;
            gpu.evaluate_scheduled(&schedule, Some(tables))
                .map_err(gpu_error)?;
            gates += window.len() as u64;
            progress(gpu.and_gates_done());
            Ok(())
        });
        match pass {
            Ok(_) => reader.skip_to_end(ch, 2 * circuit.and_count())?,
            // The garbler's tables ended early: its done message says why.
            Err(_) if reader.ended() => {}
            Err(e) => return Err(e),
        }
        evaluator
            .labels_mut()
            .copy_from_slice(&gpu.labels().map_err(gpu_error)?);
        evaluator.set_and_index(gpu.and_gates_done());
        Ok((gates, reader.consumed() + reader.remaining() as u64))
    }
}
