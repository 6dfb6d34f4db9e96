//! Worker threads kept between runs, for [`parallel`](crate::parallel)'s steps.
//!
//! A garbling or evaluation of a paper-sized program takes milliseconds on 16 cores, and
//! starting and joining 15 threads for each one (a `clone`, a fresh 2 MiB stack, the
//! thread's first touches of its memory, then the join) is paid by the caller's thread
//! before and after the work, in series. Here a thread, once started, waits on its own
//! condition variable for the next job and goes back to the idle list when done; a run
//! takes as many idle workers as it needs and starts new ones only when there are too few
//! (several runs at once, as both parties of one process, each get their own).
//!
//! With `PGC_WORKER_SPIN_MS=N` an idle worker polls for its next job for N ms before it
//! sleeps ([`idle_poll`]), as OpenMP runtimes do between parallel regions (LLVM's
//! `KMP_BLOCKTIME`, 200 ms by default); a polling worker takes its job without a futex wake
//! and keeps its core awake. The default is 0, sleep at once: on the 16-core device machine
//! a woken worker started within 0.1–0.2 ms, and polling (5, 20 or 200 ms) did not change
//! `pgc bench apps` beyond that machine's run-to-run noise (BENCHMARKS.md, "Where a CGP
//! run's wall time goes"), while it costs a busy CPU per worker after every run. Workers
//! poll only while the pool has fewer workers than the machine has CPUs.
//!
//! [`scoped`] gives the same guarantee as [`std::thread::scope`]: it returns only after
//! every job it handed out has finished, also when the caller's own part or a job panics
//! (a job's panic is resumed on the caller's thread), so the jobs may borrow from the
//! caller's stack.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// One pooled thread: the job it is given next.
struct Worker {
    job: Mutex<Option<(Job, Arc<Latch>)>>,
    ready: Condvar,
    /// Set with `job`, read by the worker while it polls.
    posted: AtomicBool,
    /// Whether the worker sleeps on `ready` (changed and read under `job`'s lock): only
    /// then does the one who posts a job wake it.
    parked: AtomicBool,
}

/// Workers started in this process (none ever ends).
static WORKERS: AtomicUsize = AtomicUsize::new(0);

/// How long an idle worker polls for its next job before it sleeps: `PGC_WORKER_SPIN_MS`
/// (default 0: sleep at once), and nothing while the pool holds as many workers
/// as there are CPUs besides the caller's.
fn idle_poll() -> Duration {
    static POLL: OnceLock<(Duration, usize)> = OnceLock::new();
    let (poll, cpus) = *POLL.get_or_init(|| {
        let ms = std::env::var("PGC_WORKER_SPIN_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        (Duration::from_millis(ms), cpus)
    });
    if WORKERS.load(Ordering::Relaxed) < cpus {
        poll
    } else {
        Duration::ZERO
    }
}

/// Polls `posted` for up to `limit`; true once it is set.
fn poll_for_job(posted: &AtomicBool, limit: Duration) -> bool {
    let since = Instant::now();
    let mut next_yield = Duration::from_micros(100);
    loop {
        // A few microseconds of `pause`s between looks at the clock.
        for _ in 0..128 {
            if posted.load(Ordering::Acquire) {
                return true;
            }
            std::hint::spin_loop();
        }
        let waited = since.elapsed();
        if waited >= limit {
            return false;
        }
        // Every 0.1 ms, let a thread with work have this CPU if one waits for it.
        if waited >= next_yield {
            std::thread::yield_now();
            next_yield = waited + Duration::from_micros(100);
        }
    }
}

/// Idle workers, and the process they belong to: a child made by `fork` has none of its
/// parent's threads, so it must not wait for them (Python's multiprocessing forks).
static IDLE: Mutex<(u32, Vec<Arc<Worker>>)> = Mutex::new((0, Vec::new()));

/// Counts the jobs of one [`scoped`] call still running, and keeps the first panic.
struct Latch {
    state: Mutex<(usize, Option<Box<dyn Any + Send>>)>,
    done: Condvar,
}

impl Latch {
    fn finish(&self, panic: Option<Box<dyn Any + Send>>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 -= 1;
        if state.1.is_none() {
            state.1 = panic;
        }
        if state.0 == 0 {
            self.done.notify_all();
        }
    }

    /// Waits until every job has finished; returns the first panic.
    fn wait(&self) -> Option<Box<dyn Any + Send>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.0 > 0 {
            state = self.done.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.1.take()
    }
}

fn worker_loop(me: Arc<Worker>) {
    loop {
        let poll = idle_poll();
        if !poll.is_zero() {
            poll_for_job(&me.posted, poll);
        }
        let (job, latch) = {
            let mut slot = me.job.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(next) = slot.take() {
                    me.posted.store(false, Ordering::Relaxed);
                    break next;
                }
                me.parked.store(true, Ordering::Relaxed);
                slot = me.ready.wait(slot).unwrap_or_else(|p| p.into_inner());
                me.parked.store(false, Ordering::Relaxed);
            }
        };
        let panic = catch_unwind(AssertUnwindSafe(job)).err();
        // Idle again before the caller can return and start its next run.
        {
            let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
            if idle.0 == std::process::id() {
                idle.1.push(Arc::clone(&me));
            }
        }
        latch.finish(panic);
    }
}

/// An idle worker, or a new one.
fn take_worker() -> std::io::Result<Arc<Worker>> {
    {
        let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        if idle.0 != pid {
            // First use, or a forked child: its parent's workers are not here.
            *idle = (pid, Vec::new());
        }
        if let Some(w) = idle.1.pop() {
            return Ok(w);
        }
    }
    let w = Arc::new(Worker {
        job: Mutex::new(None),
        ready: Condvar::new(),
        posted: AtomicBool::new(false),
        parked: AtomicBool::new(false),
    });
    let me = Arc::clone(&w);
    std::thread::Builder::new()
        .name("pgc-worker".into())
        .spawn(move || worker_loop(me))?;
    WORKERS.fetch_add(1, Ordering::Relaxed);
    Ok(w)
}

/// Waits for the latch when dropped (also while unwinding), so that no job outlives the
/// borrows of [`scoped`]'s caller.
struct WaitOnDrop(Arc<Latch>, bool);

impl Drop for WaitOnDrop {
    fn drop(&mut self) {
        let panic = self.0.wait();
        if let Some(p) = panic
            && !std::thread::panicking()
            && self.1
        {
            resume_unwind(p);
        }
    }
}

/// Runs each of `jobs` on a pooled thread and `own` on the caller's thread, and returns
/// `own`'s result once all of them have finished. A panic of a job is resumed here (after
/// all have finished), as is one of `own`.
///
/// # Panics
/// If the operating system refuses a new thread (as [`std::thread::scope`]'s spawn).
pub(crate) fn scoped<'a, T>(
    jobs: Vec<Box<dyn FnOnce() + Send + 'a>>,
    own: impl FnOnce() -> T,
) -> T {
    let latch = Arc::new(Latch {
        state: Mutex::new((jobs.len(), None)),
        done: Condvar::new(),
    });
    let mut guard = WaitOnDrop(Arc::clone(&latch), false);
    let count = jobs.len();
    for (k, job) in jobs.into_iter().enumerate() {
        // SAFETY: the job borrows data that lives for 'a, which outlives this call; this
        // call does not return (nor unwind past `guard`) before the latch counts the job
        // finished, and a worker drops its job (and with it every borrow) before it
        // counts it finished.
        let job: Job = unsafe {
            std::mem::transmute::<Box<dyn FnOnce() + Send + 'a>, Box<dyn FnOnce() + Send + 'static>>(
                job,
            )
        };
        match take_worker() {
            Ok(w) => {
                let mut slot = w.job.lock().unwrap_or_else(|p| p.into_inner());
                *slot = Some((job, Arc::clone(&latch)));
                w.posted.store(true, Ordering::Release);
                // A polling worker sees `posted`; only a sleeping one needs the futex.
                if w.parked.load(Ordering::Relaxed) {
                    w.ready.notify_one();
                }
            }
            Err(e) => {
                // The jobs not handed out will never run: count them finished, then wait
                // for the others before panicking.
                drop(job);
                for _ in k..count {
                    latch.finish(None);
                }
                drop(guard);
                panic!("failed to start a worker thread: {e}");
            }
        }
    }
    let out = own();
    guard.1 = true;
    drop(guard);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_sees_a_job_posted_and_gives_up_in_time() {
        let posted = AtomicBool::new(false);
        let since = Instant::now();
        assert!(!poll_for_job(&posted, Duration::from_millis(3)));
        assert!(since.elapsed() >= Duration::from_millis(3));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(2));
                posted.store(true, Ordering::Release);
            });
            assert!(poll_for_job(&posted, Duration::from_secs(30)));
        });
    }

    #[test]
    fn jobs_borrow_and_all_finish_before_return() {
        for round in 0..50 {
            let mut cells = [0usize; 9];
            let sum = AtomicUsize::new(0);
            {
                let (first, rest) = cells.split_first_mut().unwrap();
                let sum = &sum;
                let jobs: Vec<Box<dyn FnOnce() + Send + '_>> = rest
                    .iter_mut()
                    .enumerate()
                    .map(|(k, c)| {
                        Box::new(move || {
                            *c = k + 1 + round;
                            sum.fetch_add(k + 1, Ordering::Relaxed);
                        }) as Box<dyn FnOnce() + Send>
                    })
                    .collect();
                let r = scoped(jobs, || {
                    *first = round;
                    7
                });
                assert_eq!(r, 7);
            }
            assert_eq!(sum.load(Ordering::Relaxed), (1..=8).sum::<usize>());
            for (k, &c) in cells.iter().enumerate() {
                assert_eq!(c, k + round);
            }
        }
    }

    #[test]
    fn a_job_panic_is_resumed_after_all_finished() {
        let done = AtomicUsize::new(0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let done = &done;
            let mut jobs: Vec<Box<dyn FnOnce() + Send + '_>> = Vec::new();
            jobs.push(Box::new(|| panic!("job failed")));
            for _ in 0..3 {
                jobs.push(Box::new(move || {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    done.fetch_add(1, Ordering::SeqCst);
                }));
            }
            scoped(jobs, || ());
        }));
        let payload = result.expect_err("the job's panic comes back");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"job failed"));
        assert_eq!(
            done.load(Ordering::SeqCst),
            3,
            "returned before the others finished"
        );
        // The pool still works afterwards.
        let n = AtomicUsize::new(0);
        let n_ref = &n;
        let jobs: Vec<Box<dyn FnOnce() + Send + '_>> = (0..4)
            .map(|_| {
                Box::new(move || {
                    n_ref.fetch_add(1, Ordering::SeqCst);
                }) as Box<dyn FnOnce() + Send>
            })
            .collect();
        scoped(jobs, || ());
        assert_eq!(n.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn the_callers_panic_waits_for_the_jobs() {
        let done = AtomicUsize::new(0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let done = &done;
            let jobs: Vec<Box<dyn FnOnce() + Send + '_>> = vec![Box::new(move || {
                std::thread::sleep(std::time::Duration::from_millis(30));
                done.fetch_add(1, Ordering::SeqCst);
            })];
            scoped(jobs, || panic!("caller failed"));
        }));
        assert!(result.is_err());
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }
}
