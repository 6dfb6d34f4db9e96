//! Half-gates garbling and evaluation on an NVIDIA GPU, interoperable with the CPU engine.
//!
//! # Conventions (shared with `pgc_garble`)
//!
//! The GPU garbles exactly what `pgc_garble::Garbler` garbles: half gates (Zahur, Rosulek,
//! Evans, EUROCRYPT 2015) with free XOR, the TMMO hash over fixed-key AES under the run's
//! public key (Guo, Katz, Wang, Yu, S&P 2020, §7.4), and the j-th AND gate of the circuit's
//! flat order hashing with tweaks 2j and 2j + 1. Its tables come out in the CPU engine's
//! order and are bit-for-bit the CPU engine's, so a GPU garbler and a CPU evaluator (or the
//! reverse) run one protocol: the wire format does not change, and either party may use a
//! GPU without the other knowing.
//!
//! # How the work is laid out
//!
//! The circuit arrives in *windows* of consecutive gates. The host levels each window
//! ([`schedule`]: read-after-write, write-after-read and write-after-write on the wire
//! slots; within a level ANDs first), uploads the gate records, and the GPU runs the levels
//! (the seed paper's layout, Husted et al., ACSAC 2013, §6 and §7.4): a wide level is one
//! launch over the whole GPU, a run of narrow levels one launch of one block with a barrier
//! between levels. Four threads garble an AND (one hash each) and two evaluate it, gathered
//! by warp shuffles, so that a level offers the GPU four times its gates. The labels stay
//! resident in GPU memory for the whole run; the tables of a window then go to the host in
//! sequential order. AES runs from one T-table staged in shared memory as 32 interleaved
//! copies, one per lane, so that no lookup waits on a bank conflict (Tezcan, IEEE Access
//! 2021; `device/halfgates.h`).
//!
//! The seed paper instead draws every wire's label up front and sends a correction per XOR
//! gate so that all gates garble at once, independent of their level (§7.2–7.3). That
//! changes the wire format (a correction block per gate, 48 instead of 32 bytes per AND),
//! so pgc keeps level-wise half gates; `pgc bench gpu` measures both on the same circuits
//! (BENCHMARKS.md, "GPU").
//!
//! # Side channels
//!
//! T-table AES reads tables at addresses that depend on the labels. Since every lane reads
//! its own copy of the table, in its own shared-memory bank, those reads take the same
//! time whatever the addresses (no bank conflicts), which closes the timing channel that
//! code sharing the GPU could otherwise use. The addresses themselves still depend on
//! secrets, so as a matter of care run `--device gpu` on a GPU no untrusted tenant shares.
//!
//! # Building
//!
//! The CUDA engine ([`cuda`]) is behind the `cuda` feature. cudarc loads libcuda and
//! libnvrtc at run time, so a build with the feature still runs (on the CPU) where there is
//! no GPU; [`probe`] says what is missing. The scheduler and the CPU reference
//! ([`reference`], the per-gate C code the kernels run, compiled for the CPU) are always
//! built and tested.

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod pipeline;
pub mod reference;
pub mod schedule;

pub use schedule::{Schedule, ScheduleError, Scheduler};

/// Why the GPU engine cannot run. Messages say what is missing and what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    #[error(
        "this pgc was built without GPU support: rebuild with `cargo build --release -p pgc-cli --features gpu` \
         (needs no CUDA at build time; at run time an NVIDIA driver and NVRTC)"
    )]
    NotBuilt,
    #[error(
        "no NVIDIA driver: libcuda.so could not be loaded (install the NVIDIA driver, or add the \
         directory holding libcuda.so.1 to LD_LIBRARY_PATH)"
    )]
    NoDriver,
    #[error("the NVIDIA driver reports no GPU on this machine")]
    NoDevice,
    #[error(
        "NVRTC, the CUDA runtime compiler pgc compiles its kernels with, is missing: libnvrtc.so \
         could not be loaded (install the CUDA toolkit, or add its lib64 directory to LD_LIBRARY_PATH)"
    )]
    NoNvrtc,
    #[error("compiling the GPU kernels failed: {0}")]
    Compile(String),
    #[error("CUDA: {0}")]
    Driver(String),
    #[error("not enough GPU memory for the {what} ({bytes} bytes): {cause}")]
    Memory {
        what: &'static str,
        bytes: u64,
        cause: String,
    },
    #[error("garbled tables hold {got} blocks, but the window's AND gates need {expected}")]
    TableCount { expected: u64, got: u64 },
    #[error("{0}")]
    Schedule(#[from] ScheduleError),
}

/// The GPU this process would use, described ("NVIDIA H100 … (compute 9.0, 132 SMs, …)"),
/// or why there is none.
pub fn probe() -> Result<String, GpuError> {
    #[cfg(feature = "cuda")]
    {
        cuda::GpuDevice::open().map(|d| d.describe())
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(GpuError::NotBuilt)
    }
}
