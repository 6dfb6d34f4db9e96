//! The CUDA engine: [`GpuDevice`] (the driver, the kernels compiled by NVRTC), and
//! [`GpuGarbler`] / [`GpuEvaluator`], which take windows of gates with the API of
//! `pgc_garble::Garbler::garble` / `Evaluator::evaluate` and run them level by level on the
//! GPU, the wire labels resident in GPU memory (see the crate doc).
//!
//! cudarc loads libcuda and libnvrtc when first asked; [`GpuDevice::open`] checks for both
//! before anything else touches them, so a machine without them gets an error naming what
//! is missing, never a panic.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    DeviceRepr, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use pgc_circuit::Gate;
use pgc_crypto::Block;

use crate::GpuError;
use crate::reference::AesMaterial;
use crate::schedule::{Schedule, Scheduler};

const KERNEL_SOURCE: &str = concat!(
    include_str!("device/halfgates.h"),
    "\n",
    include_str!("device/kernels.cu")
);

/// Threads per block: 8 warps, enough to hide the shared-memory latency of the T-tables
/// while leaving room for several blocks per SM.
const BLOCK_THREADS: u32 = 256;

/// Threads of the one block that runs a run of narrow levels (`pgc_*_levels_narrow`): a
/// level whose gates need at most this many threads joins the run instead of taking a
/// launch of its own (measured: a launch costs several µs, a narrow level a fraction).
const NARROW_THREADS: u32 = 512;

/// A 16-byte kernel argument (`uint4`).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default)]
struct Uint4([u32; 4]);

// SAFETY: plain old data of the size and alignment of CUDA's uint4.
unsafe impl DeviceRepr for Uint4 {}

impl From<Block> for Uint4 {
    fn from(b: Block) -> Uint4 {
        let w: [u32; 4] = bytemuck::cast(b.0.to_le_bytes());
        Uint4(w.map(u32::from_le))
    }
}

/// One GPU, its compiled kernels and what the user is told about it.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    _module: Arc<CudaModule>,
    garble_level: CudaFunction,
    evaluate_level: CudaFunction,
    garble_levels_narrow: CudaFunction,
    evaluate_levels_narrow: CudaFunction,
    cheap_level: CudaFunction,
    draw_labels: CudaFunction,
    garble_independent: CudaFunction,
    name: String,
    compute_capability: (i32, i32),
    multiprocessors: u32,
    /// Blocks of `BLOCK_THREADS` resident on one SM at once (each block holds 33 KiB of
    /// shared memory: the interleaved T-table copies and the round keys).
    blocks_per_sm: u32,
    total_memory: usize,
}

static DEVICE: OnceLock<Result<Arc<GpuDevice>, GpuError>> = OnceLock::new();
/// Serializes `open` against the panic-hook swap below.
static OPENING: Mutex<()> = Mutex::new(());

impl GpuDevice {
    /// The first GPU of this machine with the kernels compiled for it, opened once per
    /// process. Errors name what is missing: the driver (libcuda), a device, NVRTC
    /// (libnvrtc), or the compile log.
    pub fn open() -> Result<Arc<GpuDevice>, GpuError> {
        DEVICE
            .get_or_init(|| {
                let _guard = OPENING.lock().unwrap_or_else(|e| e.into_inner());
                // cudarc panics on a missing symbol; report it as an error instead, and keep
                // the default hook from printing it meanwhile.
                let hook = std::panic::take_hook();
                std::panic::set_hook(Box::new(|_| {}));
                let opened = std::panic::catch_unwind(GpuDevice::open_uncached);
                std::panic::set_hook(hook);
                match opened {
                    Ok(r) => r.map(Arc::new),
                    Err(p) => {
                        let why = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "unknown cause".into());
                        Err(GpuError::Driver(format!(
                            "the CUDA libraries failed to load: {why}"
                        )))
                    }
                }
            })
            .clone()
    }

    fn open_uncached() -> Result<GpuDevice, GpuError> {
        // SAFETY: only tries to dlopen the library under its usual names.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        let count = CudaContext::device_count()
            .map_err(|e| GpuError::Driver(format!("cuInit/cuDeviceGetCount failed: {e:?}")))?;
        if count < 1 {
            return Err(GpuError::NoDevice);
        }
        // SAFETY: as above.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(GpuError::NoNvrtc);
        }
        let ctx = CudaContext::new(0)
            .map_err(|e| GpuError::Driver(format!("creating a context on GPU 0: {e:?}")))?;
        let driver =
            |what: &str, e: cudarc::driver::DriverError| GpuError::Driver(format!("{what}: {e:?}"));
        let name = ctx
            .name()
            .map_err(|e| driver("reading the GPU's name", e))?;
        let compute_capability = ctx
            .compute_capability()
            .map_err(|e| driver("reading the compute capability", e))?;
        let multiprocessors = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| driver("reading the SM count", e))? as u32;
        let total_memory = ctx
            .total_mem()
            .map_err(|e| driver("reading the memory size", e))?;
        let arch: &'static str = Box::leak(
            format!("compute_{}{}", compute_capability.0, compute_capability.1).into_boxed_str(),
        );
        let ptx = compile_ptx_with_opts(
            KERNEL_SOURCE,
            CompileOptions {
                arch: Some(arch),
                name: Some("pgc_halfgates.cu".into()),
                options: vec!["--std=c++17".into()],
                ..Default::default()
            },
        )
        .map_err(|e| GpuError::Compile(format!("{e}")))?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| driver("loading the compiled kernels", e))?;
        let function = |n: &str| {
            module
                .load_function(n)
                .map_err(|e| driver(&format!("finding kernel {n}"), e))
        };
        let garble_level = function("pgc_garble_level")?;
        let evaluate_level = function("pgc_evaluate_level")?;
        // A grid larger than what fits on the SMs at once only queues blocks, and each block
        // stages the tables again: launch at most one resident wave.
        let mut blocks_per_sm = u32::MAX;
        for f in [&garble_level, &evaluate_level] {
            let resident = f
                .occupancy_max_active_blocks_per_multiprocessor(BLOCK_THREADS, 0, None)
                .map_err(|e| driver("reading the kernels' occupancy", e))?;
            blocks_per_sm = blocks_per_sm.min(resident.max(1));
        }
        Ok(GpuDevice {
            garble_level,
            evaluate_level,
            garble_levels_narrow: function("pgc_garble_levels_narrow")?,
            evaluate_levels_narrow: function("pgc_evaluate_levels_narrow")?,
            cheap_level: function("pgc_cheap_level")?,
            draw_labels: function("pgc_draw_labels")?,
            garble_independent: function("pgc_garble_independent")?,
            _module: module,
            ctx,
            name,
            compute_capability,
            multiprocessors,
            blocks_per_sm,
            total_memory,
        })
    }

    /// e.g. "NVIDIA H100 80GB HBM3 (compute 9.0, 132 SMs × 6 blocks, 79.2 GiB)".
    pub fn describe(&self) -> String {
        format!(
            "{} (compute {}.{}, {} SMs × {} blocks, {:.1} GiB)",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.multiprocessors,
            self.blocks_per_sm,
            self.total_memory as f64 / (1u64 << 30) as f64
        )
    }

    /// Free and total GPU memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        self.ctx
            .mem_get_info()
            .map_err(|e| GpuError::Driver(format!("cuMemGetInfo: {e:?}")))
    }

    fn stream(&self) -> Result<Arc<CudaStream>, GpuError> {
        self.ctx
            .new_stream()
            .map_err(|e| GpuError::Driver(format!("creating a stream: {e:?}")))
    }

    fn launch_config(&self, n: u64) -> LaunchConfig {
        let blocks = n.div_ceil(BLOCK_THREADS as u64).max(1);
        let most = self.multiprocessors as u64 * self.blocks_per_sm as u64;
        LaunchConfig {
            grid_dim: (blocks.min(most) as u32, 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

fn drv(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> GpuError {
    move |e| GpuError::Driver(format!("{what}: {e:?}"))
}

/// Grows `buf` to at least `words` (never shrinks: windows reuse it).
fn ensure(
    stream: &Arc<CudaStream>,
    buf: &mut CudaSlice<u32>,
    words: usize,
    what: &'static str,
) -> Result<(), GpuError> {
    if buf.len() < words {
        // SAFETY: every word is written (by a copy or a kernel) before it is read.
        *buf = unsafe { stream.alloc::<u32>(words.max(4)) }.map_err(|e| GpuError::Memory {
            what,
            bytes: words as u64 * 4,
            cause: format!("{e:?}"),
        })?;
    }
    Ok(())
}

/// Grows the page-locked staging buffer to at least `words`.
fn staging<'a>(
    ctx: &Arc<CudaContext>,
    staging: &'a mut Option<PinnedHostSlice<u32>>,
    words: usize,
) -> Result<&'a mut [u32], GpuError> {
    if staging.as_ref().is_none_or(|s| s.len() < words) {
        *staging = None;
        // SAFETY: every word is written (by a copy) before it is read.
        let pinned =
            unsafe { ctx.alloc_pinned_with_flags::<u32>(words.max(4), 0) }.map_err(|e| {
                GpuError::Memory {
                    what: "page-locked staging buffer",
                    bytes: words as u64 * 4,
                    cause: format!("{e:?}"),
                }
            })?;
        *staging = Some(pinned);
    }
    staging
        .as_mut()
        .expect("allocated above")
        .as_mut_slice()
        .map_err(drv("mapping the staging buffer"))
}

/// Where the time of the windows went (copies, kernels), for benchmarks.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuTimes {
    pub upload: Duration,
    pub kernels: Duration,
    pub download: Duration,
    pub levels: u64,
    pub windows: u64,
}

/// State both engines share: the labels on the GPU, the window buffers, the scheduler.
struct Engine {
    dev: Arc<GpuDevice>,
    stream: Arc<CudaStream>,
    /// Made on first use: callers that level windows themselves never pay its memory.
    scheduler: Option<Scheduler>,
    labels: CudaSlice<u32>,
    aes: CudaSlice<u32>,
    records: CudaSlice<u32>,
    /// The schedule's level offsets, for the narrow-level kernels.
    offsets: CudaSlice<u32>,
    tables: CudaSlice<u32>,
    and_done: u64,
    times: GpuTimes,
    /// Page-locked staging for the tables: copies from pageable memory run at a fraction
    /// of the link's speed (measured: 1.7 GB/s on the H100 machine).
    staging: Option<PinnedHostSlice<u32>>,
}

impl Engine {
    /// Copies the first `out.len()` words of the table buffer to `out` through the staging.
    fn download_tables(&mut self, out: &mut [u32]) -> Result<(), GpuError> {
        let n = out.len();
        let stream = &self.stream;
        let staging = staging(&self.dev.ctx, &mut self.staging, n)?;
        let (src, _record) = self.tables.device_ptr(stream);
        // SAFETY: `src` holds at least n words (`upload` sized it for the window's ANDs),
        // `staging` at least n; the stream is synchronized before the words are read.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(&mut staging[..n], src, stream.cu_stream())
        }
        .map_err(drv("downloading garbled tables"))?;
        stream
            .synchronize()
            .map_err(drv("downloading garbled tables"))?;
        out.copy_from_slice(&staging[..n]);
        Ok(())
    }

    /// Copies `words` to the start of the table buffer through the staging.
    fn upload_tables(&mut self, words: &[u32]) -> Result<(), GpuError> {
        let n = words.len();
        let stream = &self.stream;
        let staging = staging(&self.dev.ctx, &mut self.staging, n)?;
        staging[..n].copy_from_slice(words);
        let (dst, _record) = self.tables.device_ptr_mut(stream);
        // SAFETY: `dst` holds at least n words (`upload` sized it), the staging n; the
        // stream is synchronized before the staging is reused.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(dst, &staging[..n], stream.cu_stream())
        }
        .map_err(drv("uploading garbled tables"))?;
        stream
            .synchronize()
            .map_err(drv("uploading garbled tables"))?;
        Ok(())
    }

    fn new(dev: Arc<GpuDevice>, labels: &[Block], hash_key: Block) -> Result<Engine, GpuError> {
        let stream = dev.stream()?;
        let bytes = labels.len() as u64 * 16;
        let (free, _) = dev.memory()?;
        if bytes > free as u64 {
            return Err(GpuError::Memory {
                what: "wire labels",
                bytes,
                cause: format!("the GPU has {free} bytes free"),
            });
        }
        let words: &[u32] = bytemuck::cast_slice(labels);
        let labels = stream.clone_htod(words).map_err(|e| GpuError::Memory {
            what: "wire labels",
            bytes,
            cause: format!("{e:?}"),
        })?;
        let aes = stream
            .clone_htod(AesMaterial::new(hash_key).words())
            .map_err(drv("uploading the AES tables"))?;
        let empty = |s: &Arc<CudaStream>| {
            // SAFETY: a 4-word placeholder, never read before `ensure` replaces it.
            unsafe { s.alloc::<u32>(4) }.map_err(drv("allocating window buffers"))
        };
        Ok(Engine {
            scheduler: None,
            records: empty(&stream)?,
            offsets: empty(&stream)?,
            tables: empty(&stream)?,
            dev,
            stream,
            labels,
            aes,
            and_done: 0,
            times: GpuTimes::default(),
            staging: None,
        })
    }

    fn upload(&mut self, schedule: &Schedule) -> Result<(), GpuError> {
        let t = Instant::now();
        let words: &[u32] = bytemuck::cast_slice(&schedule.records);
        ensure(&self.stream, &mut self.records, words.len(), "gate records")?;
        ensure(
            &self.stream,
            &mut self.tables,
            (schedule.and_gates * 8) as usize,
            "garbled tables",
        )?;
        if !words.is_empty() {
            self.stream
                .memcpy_htod(words, &mut self.records.slice_mut(..words.len()))
                .map_err(drv("uploading gate records"))?;
        }
        ensure(
            &self.stream,
            &mut self.offsets,
            schedule.offsets.len(),
            "level offsets",
        )?;
        if !schedule.offsets.is_empty() {
            self.stream
                .memcpy_htod(
                    &schedule.offsets,
                    &mut self.offsets.slice_mut(..schedule.offsets.len()),
                )
                .map_err(drv("uploading level offsets"))?;
        }
        self.times.upload += t.elapsed();
        Ok(())
    }

    /// Launches the window's levels: one launch per wide level, one single-block launch per
    /// run of narrow levels (kernels.cu). `delta` (the garbler's) picks the kernels.
    fn run_levels(&mut self, schedule: &Schedule, delta: Option<Uint4>) -> Result<(), GpuError> {
        let t = Instant::now();
        // A group of threads per gate (kernels.cu): 4 garbling, 2 evaluating.
        let garbler = delta.is_some();
        let parts: u64 = if garbler { 4 } else { 2 };
        let narrow_gates = NARROW_THREADS as u64 / parts;
        let width = |l: usize| (schedule.offsets[l + 1] - schedule.offsets[l]) as u64;
        let levels = schedule.levels();
        let and_base = self.and_done;
        let mut l = 0;
        while l < levels {
            let mut end = l;
            while end < levels && width(end) <= narrow_gates {
                end += 1;
            }
            let (garble, evaluate) = if end > l + 1 {
                (
                    &self.dev.garble_levels_narrow,
                    &self.dev.evaluate_levels_narrow,
                )
            } else {
                (&self.dev.garble_level, &self.dev.evaluate_level)
            };
            // Garbler and evaluator kernels take the same arguments (kernels.cu); the
            // evaluator ignores `delta`.
            let mut b = self
                .stream
                .launch_builder(if garbler { garble } else { evaluate });
            let delta = delta.unwrap_or_default();
            let launched = if end > l + 1 {
                // Levels l..end are narrow: one block steps through them.
                let (first, last) = (l as u32, end as u32);
                l = end;
                b.arg(&self.records)
                    .arg(&self.offsets)
                    .arg(&first)
                    .arg(&last)
                    .arg(&mut self.labels)
                    .arg(&mut self.tables)
                    .arg(&self.aes)
                    .arg(&delta)
                    .arg(&and_base);
                let cfg = LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (NARROW_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: the arguments match pgc_{garble,evaluate}_levels_narrow; `offsets`
                // holds the window's levels + 1 offsets (`upload`), each within `records`;
                // wires and AND indices are in range as for a wide level (below).
                unsafe { b.launch(cfg) }
            } else {
                let (start, end) = (
                    schedule.offsets[l] as usize,
                    schedule.offsets[l + 1] as usize,
                );
                l += 1;
                let n = (end - start) as u32;
                if n == 0 {
                    continue;
                }
                let records = self.records.slice(4 * start..4 * end);
                // ANDs come first in a level (schedule.rs): a level whose first record is
                // not an AND has none, and takes a thread per gate and no AES tables.
                if schedule.records[start][3] & 7 != 1 {
                    let garbler = garbler as u32;
                    let mut b = self.stream.launch_builder(&self.dev.cheap_level);
                    b.arg(&records)
                        .arg(&n)
                        .arg(&mut self.labels)
                        .arg(&delta)
                        .arg(&garbler);
                    // SAFETY: the arguments match pgc_cheap_level's signature; the level
                    // has no AND (so no table or AES pointer is read) and every record's
                    // wires are below the label count (the scheduler checked them).
                    unsafe { b.launch(self.dev.launch_config(n as u64)) }
                        .map_err(drv("launching a level"))?;
                    continue;
                }
                b.arg(&records)
                    .arg(&n)
                    .arg(&mut self.labels)
                    .arg(&mut self.tables)
                    .arg(&self.aes)
                    .arg(&delta)
                    .arg(&and_base);
                // SAFETY: the arguments match pgc_{garble,evaluate}_level; every record's
                // wires are below the label count (the scheduler checked them against it)
                // and its local AND index below the window's AND count, for which `tables`
                // has room (`upload`).
                unsafe { b.launch(self.dev.launch_config(n as u64 * parts)) }
            };
            launched.map_err(drv("launching a level"))?;
        }
        self.stream
            .synchronize()
            .map_err(drv("running the levels"))?;
        self.times.kernels += t.elapsed();
        self.times.levels += levels as u64;
        self.times.windows += 1;
        Ok(())
    }

    fn labels(&self) -> Result<Vec<Block>, GpuError> {
        let words = self
            .stream
            .clone_dtoh(&self.labels)
            .map_err(drv("downloading the wire labels"))?;
        Ok(bytemuck::cast_slice(&words).to_vec())
    }

    fn schedule(&mut self, gates: &[Gate]) -> Result<Schedule, GpuError> {
        let num_wires = self.labels.len() / 4;
        let s = self
            .scheduler
            .get_or_insert_with(|| Scheduler::new(num_wires))
            .schedule(gates)?;
        Ok(s)
    }
}

/// The garbler on a GPU: Δ and the zero-labels live in GPU memory.
pub struct GpuGarbler {
    engine: Engine,
    delta: Block,
}

impl GpuGarbler {
    /// A garbler whose zero-labels start as `zero_labels` (one per wire, inputs set), with
    /// offset `delta` (lsb 1) and the run's public hash key.
    pub fn new(
        dev: Arc<GpuDevice>,
        zero_labels: &[Block],
        delta: Block,
        hash_key: Block,
    ) -> Result<GpuGarbler, GpuError> {
        assert!(delta.lsb(), "the garbler's Δ must have lsb 1");
        Ok(GpuGarbler {
            engine: Engine::new(dev, zero_labels, hash_key)?,
            delta,
        })
    }

    /// Garbles the next window of gates; appends exactly 2 blocks per AND to `tables`, in
    /// the order `pgc_garble::Garbler::garble` would.
    pub fn garble(&mut self, gates: &[Gate], tables: &mut Vec<Block>) -> Result<(), GpuError> {
        let schedule = self.engine.schedule(gates)?;
        self.garble_scheduled(&schedule, Some(tables))
    }

    /// [`garble`](Self::garble) of a window scheduled already; `tables: None` leaves the
    /// tables in GPU memory (in-memory benchmarks).
    pub fn garble_scheduled(
        &mut self,
        schedule: &Schedule,
        tables: Option<&mut Vec<Block>>,
    ) -> Result<(), GpuError> {
        self.engine.upload(schedule)?;
        self.engine.run_levels(schedule, Some(self.delta.into()))?;
        if let Some(tables) = tables {
            let t = Instant::now();
            let start = tables.len();
            tables.resize(start + 2 * schedule.and_gates as usize, Block::ZERO);
            let words: &mut [u32] = bytemuck::cast_slice_mut(&mut tables[start..]);
            if !words.is_empty() {
                self.engine.download_tables(words)?;
            }
            self.engine.times.download += t.elapsed();
        }
        self.engine.and_done += schedule.and_gates;
        Ok(())
    }

    /// Every wire's zero-label, copied back from the GPU (after the last window).
    pub fn zero_labels(&self) -> Result<Vec<Block>, GpuError> {
        self.engine.labels()
    }

    pub fn and_gates_done(&self) -> u64 {
        self.engine.and_done
    }

    pub fn times(&self) -> GpuTimes {
        self.engine.times
    }
}

/// The evaluator on a GPU: the active labels live in GPU memory.
pub struct GpuEvaluator {
    engine: Engine,
}

impl GpuEvaluator {
    pub fn new(
        dev: Arc<GpuDevice>,
        labels: &[Block],
        hash_key: Block,
    ) -> Result<GpuEvaluator, GpuError> {
        Ok(GpuEvaluator {
            engine: Engine::new(dev, labels, hash_key)?,
        })
    }

    /// Evaluates the next window with its tables (2 blocks per AND, sequential order).
    pub fn evaluate(&mut self, gates: &[Gate], tables: &[Block]) -> Result<(), GpuError> {
        let schedule = self.engine.schedule(gates)?;
        self.evaluate_scheduled(&schedule, Some(tables))
    }

    /// [`evaluate`](Self::evaluate) of a scheduled window; `tables: None` evaluates on the
    /// tables already in GPU memory (in-memory benchmarks, after a garbler's window).
    pub fn evaluate_scheduled(
        &mut self,
        schedule: &Schedule,
        tables: Option<&[Block]>,
    ) -> Result<(), GpuError> {
        if let Some(tables) = tables
            && tables.len() as u64 != 2 * schedule.and_gates
        {
            return Err(GpuError::TableCount {
                expected: 2 * schedule.and_gates,
                got: tables.len() as u64,
            });
        }
        self.engine.upload(schedule)?;
        if let Some(tables) = tables
            && !tables.is_empty()
        {
            let t = Instant::now();
            self.engine.upload_tables(bytemuck::cast_slice(tables))?;
            self.engine.times.upload += t.elapsed();
        }
        self.engine.run_levels(schedule, None)?;
        self.engine.and_done += schedule.and_gates;
        Ok(())
    }

    /// Every wire's active label, copied back from the GPU.
    pub fn labels(&self) -> Result<Vec<Block>, GpuError> {
        self.engine.labels()
    }

    pub fn and_gates_done(&self) -> u64 {
        self.engine.and_done
    }

    pub fn times(&self) -> GpuTimes {
        self.engine.times
    }
}

/// A window's tables (2 blocks per AND) and corrections (1 per gate).
pub type TablesAndCorrections = (Vec<Block>, Vec<Block>);

/// The seed's independent garbling on the GPU (see `halfgates.h`), for the measured
/// comparison with level-wise half gates: draws every wire's zero-label with a PRF, then
/// garbles all `schedule`'s records in one launch. Returns (label drawing + garbling time,
/// tables, corrections) with the results copied back only if `download`.
pub fn garble_independent(
    dev: &Arc<GpuDevice>,
    schedule: &Schedule,
    num_wires: usize,
    label_key: Block,
    hash_key: Block,
    delta: Block,
    download: bool,
) -> Result<(Duration, Option<TablesAndCorrections>), GpuError> {
    let stream = dev.stream()?;
    let alloc = |words: usize, what: &'static str| {
        // SAFETY: written by the kernels before any read.
        unsafe { stream.alloc::<u32>(words.max(4)) }.map_err(|e| GpuError::Memory {
            what,
            bytes: words as u64 * 4,
            cause: format!("{e:?}"),
        })
    };
    let mut labels = alloc(4 * num_wires, "wire labels")?;
    let mut tables = alloc(8 * schedule.and_gates as usize, "garbled tables")?;
    let mut corrections = alloc(4 * schedule.records.len(), "corrections")?;
    let records = stream
        .clone_htod(bytemuck::cast_slice::<_, u32>(&schedule.records))
        .map_err(drv("uploading gate records"))?;
    let label_aes = stream
        .clone_htod(AesMaterial::new(label_key).words())
        .map_err(drv("uploading AES tables"))?;
    let hash_aes = stream
        .clone_htod(AesMaterial::new(hash_key).words())
        .map_err(drv("uploading AES tables"))?;
    stream.synchronize().map_err(drv("syncing"))?;
    let t = Instant::now();
    let count = num_wires as u64;
    let mut b = stream.launch_builder(&dev.draw_labels);
    b.arg(&mut labels).arg(&count).arg(&label_aes);
    // SAFETY: matches pgc_draw_labels; `labels` holds `count` blocks.
    unsafe { b.launch(dev.launch_config(count)) }.map_err(drv("launching pgc_draw_labels"))?;
    let n = schedule.records.len() as u64;
    let (d, base) = (Uint4::from(delta), 0u64);
    let mut b = stream.launch_builder(&dev.garble_independent);
    b.arg(&records)
        .arg(&n)
        .arg(&labels)
        .arg(&mut tables)
        .arg(&mut corrections)
        .arg(&hash_aes)
        .arg(&d)
        .arg(&base);
    // SAFETY: matches pgc_garble_independent; wires below num_wires (scheduler-checked),
    // AND indices below and_gates, one correction per record.
    unsafe { b.launch(dev.launch_config(n)) }.map_err(drv("launching pgc_garble_independent"))?;
    stream.synchronize().map_err(drv("running the kernels"))?;
    let elapsed = t.elapsed();
    if !download {
        return Ok((elapsed, None));
    }
    let fetch = |s: &CudaSlice<u32>, words: usize| -> Result<Vec<Block>, GpuError> {
        let v = stream
            .clone_dtoh(&s.slice(..words))
            .map_err(drv("downloading results"))?;
        Ok(bytemuck::cast_slice(&v).to_vec())
    };
    Ok((
        elapsed,
        Some((
            fetch(&tables, 8 * schedule.and_gates as usize)?,
            fetch(&corrections, 4 * schedule.records.len())?,
        )),
    ))
}
