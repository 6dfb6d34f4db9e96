//! Where a CGP run's wall time goes, thread by thread: the garbler alone (tables dropped),
//! each thread's steps timed from just before the run's set-up. Prints, as medians over the
//! runs: the set-up before the first step, when the threads began their first step (the
//! pool's wake-up), how long they were busy, when the last finished, and the serial steps.
//!
//!     cargo run --release -p pgc-cli --example cgp_trace [app.c] [runs] [threads] [gap_ms] [fixed]
//!
//! `gap_ms` (default 0): sleep between runs, so the workers and their cores go idle first,
//! as they do between the phases of a protocol run or between runs of a server. `fixed`:
//! each thread's instances fixed by the plan ([`Plan::new`]) instead of claimed as the
//! threads go ([`Plan::claimed`], what `pgc` runs).

use std::time::{Duration, Instant};

use pgc_garble::parallel::{Mode, Plan, garble_offline, garble_offline_traced};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/biomatch.c").into()
    });
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8);
    let gap_ms: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let fixed = args.next().is_some_and(|s| s == "fixed");
    let src = std::fs::read_to_string(&path).expect("readable C program");
    let compiled = pgc_compiler::compile_source(&src, &path, &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let pc = compiled.parallel_circuit().expect("regions split");
    let one = Plan::new(&pc, 1, Mode::None, 128);
    let plan = if fixed {
        Plan::new(&pc, threads, Mode::Cgp, 128)
    } else {
        Plan::claimed(&pc, threads, Mode::Cgp, 128)
    };
    garble_offline(&one, &pc);
    garble_offline(&plan, &pc);
    let ms = |s: f64| s * 1e3;
    let (mut none_wall, mut wall, mut setup, mut first_max, mut first_mean) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut busy_mean, mut busy_max, mut last_end, mut serial) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let t0 = Instant::now();
        garble_offline(&one, &pc);
        none_wall.push(t0.elapsed().as_secs_f64());
        std::thread::sleep(Duration::from_millis(gap_ms));
        let (stats, traces) = garble_offline_traced(&plan, &pc);
        std::thread::sleep(Duration::from_millis(gap_ms));
        wall.push(stats.seconds);
        // Steps run by one thread only are serial.
        let mut by_step = std::collections::BTreeMap::<usize, Vec<(f64, f64)>>::new();
        for t in &traces {
            for &(step, a, b) in &t.steps {
                by_step.entry(step).or_default().push((a, b));
            }
        }
        let firsts: Vec<f64> = traces
            .iter()
            .filter_map(|t| t.steps.first().map(|s| s.1))
            .collect();
        let parallel_step = by_step.iter().find(|(_, v)| v.len() > 1).map(|(s, _)| *s);
        setup.push(by_step.values().next().map_or(0.0, |v| v[0].0));
        let starts: Vec<f64> = match parallel_step {
            Some(s) => by_step[&s].iter().map(|x| x.0).collect(),
            None => firsts.clone(),
        };
        first_max.push(starts.iter().cloned().fold(0.0, f64::max));
        first_mean.push(starts.iter().sum::<f64>() / starts.len().max(1) as f64);
        let busy: Vec<f64> = match parallel_step {
            Some(s) => by_step[&s].iter().map(|x| x.1 - x.0).collect(),
            None => vec![0.0],
        };
        busy_mean.push(busy.iter().sum::<f64>() / busy.len() as f64);
        busy_max.push(busy.iter().cloned().fold(0.0, f64::max));
        last_end.push(
            traces
                .iter()
                .flat_map(|t| t.steps.iter().map(|s| s.2))
                .fold(0.0, f64::max),
        );
        serial.push(
            by_step
                .values()
                .filter(|v| v.len() == 1)
                .map(|v| v[0].1 - v[0].0)
                .sum::<f64>(),
        );
    }
    let none = median(none_wall);
    let w = median(wall);
    println!(
        "{path} threads {threads} gap {gap_ms} ms{}: none 1 {:.3} ms, cgp {:.3} ms, speed-up {:.2} \
         (efficiency {:.2})",
        if fixed { " fixed" } else { "" },
        ms(none),
        ms(w),
        none / w,
        none / w / threads as f64
    );
    println!(
        "  medians, ms: set-up before first step {:.3}; parallel step starts mean {:.3} max {:.3}; \
         busy mean {:.3} max {:.3} (ideal {:.3}); serial steps {:.3}; last step end {:.3}",
        ms(median(setup)),
        ms(median(first_mean)),
        ms(median(first_max)),
        ms(median(busy_mean)),
        ms(median(busy_max)),
        ms(none) / threads as f64,
        ms(median(serial)).max(0.0),
        ms(median(last_end)),
    );
}
