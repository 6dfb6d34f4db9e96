//! Levelling windows on several host threads while the GPU works: windows are independent
//! (see [`crate::schedule`]), so window i goes to scheduler i mod K and the schedules come
//! back in order. Bounded channels keep at most two windows per thread in flight.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use pgc_circuit::Gate;

use crate::schedule::{Schedule, ScheduleError, Scheduler};

/// Host memory the levelling threads may hold in all: per-wire state and the windows in
/// flight.
const LEVELLING_MEMORY: usize = 8 << 30;

/// Host threads worth levelling on for a circuit of `num_wires` wires cut into windows of
/// `window_gates`: up to 4, half this machine's cores, and within [`LEVELLING_MEMORY`]: each
/// thread holds 8 bytes per wire and up to three windows (being fed, levelled, handed on) of
/// 36 bytes per gate (the gates, their records and levels).
pub fn levelling_threads(num_wires: usize, window_gates: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = 8 * num_wires + 3 * 36 * window_gates;
    let by_memory = LEVELLING_MEMORY / per_thread.max(1);
    (cores / 2).clamp(1, 4).min(by_memory.max(1))
}

/// Runs `feed`, which hands windows to the function it is given, levels each window on
/// one of `threads` threads, and calls `consume` with every window and its schedule in
/// the order fed. Stops at the first error (`consume`'s first, then a levelling error,
/// then `feed`'s).
pub fn level_in_parallel<E>(
    num_wires: usize,
    threads: usize,
    feed: impl FnOnce(&mut dyn FnMut(Vec<Gate>) -> Result<(), E>) -> Result<(), E> + Send,
    mut consume: impl FnMut(Vec<Gate>, Schedule) -> Result<(), E>,
) -> Result<(), E>
where
    E: From<ScheduleError> + Send,
{
    let threads = threads.max(1);
    type Levelled = Result<(Vec<Gate>, Schedule), ScheduleError>;
    std::thread::scope(|s| {
        let mut inputs: Vec<SyncSender<Vec<Gate>>> = Vec::new();
        let mut outputs: Vec<Receiver<Levelled>> = Vec::new();
        for _ in 0..threads {
            let (to_worker, work) = sync_channel::<Vec<Gate>>(1);
            let (done, from_worker) = sync_channel::<Levelled>(1);
            inputs.push(to_worker);
            outputs.push(from_worker);
            s.spawn(move || {
                let mut scheduler = Scheduler::new(num_wires);
                for window in work {
                    let levelled = scheduler.schedule(&window).map(|sch| (window, sch));
                    let failed = levelled.is_err();
                    if done.send(levelled).is_err() || failed {
                        return;
                    }
                }
            });
        }
        let feeder = s.spawn(move || {
            let mut next = 0usize;
            feed(&mut |window| {
                let k = next % inputs.len();
                next += 1;
                inputs[k]
                    .send(window)
                    .map_err(|_| E::from(ScheduleError::Stopped))
            })
        });
        let mut result = Ok(());
        for i in 0.. {
            match outputs[i % threads].recv() {
                Ok(Ok((window, schedule))) => {
                    if let Err(e) = consume(window, schedule) {
                        result = Err(e);
                        break;
                    }
                }
                Ok(Err(e)) => {
                    result = Err(E::from(e));
                    break;
                }
                // The feeder is done and this worker has nothing more.
                Err(_) => break,
            }
        }
        drop(outputs);
        let fed = feeder
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        result.and(fed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_come_back_in_order_and_match_one_scheduler() {
        let gates: Vec<Gate> = (0..5000u32)
            .map(|i| Gate::and(i % 37, (i * 7) % 41, (i * 13) % 50))
            .collect();
        for threads in [1, 2, 3] {
            let mut got = Vec::new();
            level_in_parallel::<ScheduleError>(
                50,
                threads,
                |send| {
                    for w in gates.chunks(333) {
                        send(w.to_vec())?;
                    }
                    Ok(())
                },
                |w, s| {
                    got.push((w, s));
                    Ok(())
                },
            )
            .unwrap();
            let mut one = Scheduler::new(50);
            assert_eq!(got.len(), gates.chunks(333).count());
            for ((w, s), expect) in got.iter().zip(gates.chunks(333)) {
                assert_eq!(w.as_slice(), expect);
                // Levels are per window, whatever scheduler levelled it.
                let mine = one.schedule(expect).unwrap();
                assert_eq!(s.records, mine.records);
                assert_eq!(s.offsets, mine.offsets);
            }
        }
    }

    #[test]
    fn errors_stop_everything() {
        let bad = vec![Gate::and(0, 99, 1)];
        let r = level_in_parallel::<ScheduleError>(
            4,
            2,
            |send| {
                for _ in 0..10 {
                    send(vec![Gate::and(0, 1, 2)])?;
                    send(bad.clone())?;
                }
                Ok(())
            },
            |_, _| Ok(()),
        );
        assert!(matches!(r, Err(ScheduleError::WireOutOfRange { .. })));
    }
}
