//! Where compile time goes: a stopwatch that records each phase's wall time and the CPU
//! time of the thread that ran it (so a figure taken on a loaded machine still says how
//! much work the phase was). Printed by `pgc compile --stats`.

use std::time::{Duration, Instant};

use serde::Serialize;

/// One phase of a compilation.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseTime {
    pub name: &'static str,
    #[serde(serialize_with = "crate::secs", rename = "wall_seconds")]
    pub wall: Duration,
    /// CPU time of the thread that ran the phase (`None` where the platform has no
    /// per-thread clock).
    #[serde(serialize_with = "opt_secs", rename = "cpu_seconds")]
    pub cpu: Option<Duration>,
}

fn opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// Times consecutive phases on one thread: [`Stopwatch::lap`] ends the current phase and
/// starts the next.
pub struct Stopwatch {
    wall: Instant,
    cpu: Option<Duration>,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu: thread_cpu_time(),
        }
    }

    /// Records the phase that ran since the last lap (or the start) as `name`.
    pub fn lap(&mut self, name: &'static str, into: &mut Vec<PhaseTime>) {
        let now = Stopwatch::start();
        into.push(PhaseTime {
            name,
            wall: now.wall - self.wall,
            cpu: now.cpu.zip(self.cpu).map(|(b, a)| b.saturating_sub(a)),
        });
        *self = now;
    }
}

/// CPU time used so far by the calling thread (`None` where the platform gives none): on a
/// shared machine it leaves out the time other processes held the core, which wall time
/// counts.
#[cfg(unix)]
pub fn thread_cpu_time() -> Option<Duration> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; clock_gettime only writes to it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    (rc == 0).then(|| Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

#[cfg(not(unix))]
pub fn thread_cpu_time() -> Option<Duration> {
    None
}
