//! A progress bar for long runs: it appears only after a second, only on a terminal, and
//! never with `--quiet` or `--json`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    enabled: bool,
    shown: bool,
}

impl Progress {
    /// A bar counting AND gates up to `total`.
    pub fn new(total: u64, quiet: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} AND gates ({rate}, {eta} left)",
            )
            .expect("valid template")
            .with_key("rate", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.1} M AND/s", state.per_sec() / 1e6);
            }),
        );
        Progress {
            bar,
            start: Instant::now(),
            enabled: !quiet && std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// A counter of gates made by a compilation (no total is known until it ends, so it
    /// shows the count and the rate, not the time left).
    pub fn compiling(quiet: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] compiling: {human_pos} gates ({rate}){msg}",
            )
            .expect("valid template")
            .with_key(
                "rate",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.1} M gates/s", state.per_sec() / 1e6);
                },
            ),
        );
        Progress {
            bar,
            start: Instant::now(),
            enabled: !quiet && std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    pub fn set(&mut self, ands_done: u64) {
        if self.enabled && !self.shown && self.start.elapsed() > Duration::from_secs(1) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_position(ands_done);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Tells a watcher thread to stop when dropped, also when `work` panics: the scope joins
/// the watcher before the panic goes on, so without it the process would wait forever.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs `work` while a bar follows `counter` (AND gates done, updated by worker threads).
pub fn watch<T>(total: u64, quiet: bool, counter: &AtomicU64, work: impl FnOnce() -> T) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut bar = Progress::new(total, quiet);
            while !done.load(Ordering::Acquire) {
                bar.set(counter.load(Ordering::Relaxed).min(total));
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish();
        });
        let _stop = StopOnDrop(&done);
        work()
    })
}

/// Runs a compilation while a counter follows `progress` (gates made so far); once the
/// compilation has run [`SHOW_STEPS_FROM`] loop iterations and calls, the line also says how
/// many, against `step_limit`: a program whose loops make no gates is seen to be working,
/// and how far it may go.
pub fn watch_compile<T>(
    quiet: bool,
    progress: &pgc_compiler::Progress,
    step_limit: u64,
    work: impl FnOnce() -> T,
) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut bar = Progress::compiling(quiet);
            while !done.load(Ordering::Acquire) {
                let steps = progress.steps.load(Ordering::Relaxed);
                if steps >= SHOW_STEPS_FROM {
                    bar.bar.set_message(steps_message(steps, step_limit));
                }
                bar.set(progress.gates.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish();
        });
        let _stop = StopOnDrop(&done);
        work()
    })
}

/// Loop iterations and calls from which the compiling line counts them too.
pub const SHOW_STEPS_FROM: u64 = 1 << 16;

/// ", loop steps 12.3 M / 1073.7 M": loop iterations and calls, of the most
/// the compilation may run (`--step-limit`).
fn steps_message(steps: u64, limit: u64) -> String {
    format!(
        ", loop steps {:.1} M / {:.1} M",
        steps as f64 / 1e6,
        limit as f64 / 1e6
    )
}

/// Runs `work` while a spinner says `message` (after a second, on a terminal, unless
/// `quiet`), for long steps that count nothing, such as checking a large circuit file.
pub fn spin<T>(quiet: bool, message: &str, work: impl FnOnce() -> T) -> T {
    spin_then_count(quiet, message, None, work)
}

/// [`spin`], whose message gives way to the count of gates made once `counter` (where
/// given) is nonzero: a compilation that first waits on another program (Yosys).
pub fn spin_then_count<T>(
    quiet: bool,
    message: &str,
    counter: Option<&AtomicU64>,
    work: impl FnOnce() -> T,
) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            let enabled = !quiet && std::io::stderr().is_terminal();
            let mut bar: Option<ProgressBar> = None;
            while !done.load(Ordering::Acquire) {
                if enabled && bar.is_none() && start.elapsed() > Duration::from_secs(1) {
                    let b = ProgressBar::new_spinner();
                    b.set_style(
                        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                            .expect("valid template"),
                    );
                    b.set_message(message.to_string());
                    bar = Some(b);
                }
                if let Some(b) = &bar {
                    match counter.map_or(0, |c| c.load(Ordering::Relaxed)) {
                        0 => {}
                        gates => b.set_message(format!(
                            "compiling: {} gates",
                            indicatif::HumanCount(gates)
                        )),
                    }
                    b.tick();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
        });
        let _stop = StopOnDrop(&done);
        work()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic in the work reaches the caller instead of leaving the process waiting for
    /// the watcher thread (which it did before the watcher was stopped on drop).
    #[test]
    fn a_panicking_work_does_not_hang_its_watcher() {
        let counter = AtomicU64::new(0);
        let watched = std::panic::catch_unwind(|| watch(10, true, &counter, || panic!("work")));
        assert!(watched.is_err());
        let progress = pgc_compiler::Progress::default();
        let compiled =
            std::panic::catch_unwind(|| watch_compile(true, &progress, 1, || panic!("c")));
        assert!(compiled.is_err());
        let spun = std::panic::catch_unwind(|| spin(true, "checking", || panic!("spin")));
        assert!(spun.is_err());
        let counted = std::panic::catch_unwind(|| {
            spin_then_count(true, "compiling", Some(&counter), || panic!("count"))
        });
        assert!(counted.is_err());
        assert_eq!(watch(10, true, &counter, || 7), 7);
    }

    #[test]
    fn steps_are_told_in_millions_against_the_limit() {
        assert_eq!(
            steps_message(12_345_678, pgc_compiler::DEFAULT_STEP_LIMIT),
            ", loop steps 12.3 M / 1073.7 M"
        );
    }
}
