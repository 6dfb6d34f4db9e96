//! `pgc bench width | apps | ipp` (the seed paper's experiments) at tiny sizes, through the
//! binary: the JSON they print, the files they write, and the checks they make.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod support;
use support::{json_of, run_ok};

/// A fresh directory for one test (cache and --out).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pgc-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn pgc(dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgc"));
    c.env("XDG_CACHE_HOME", dir.join("cache"));
    c
}

fn assert_svg(path: &std::path::Path, must_contain: &[&str]) {
    let svg = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} not written: {e}", path.display()));
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for s in must_contain {
        assert!(svg.contains(s), "{} lacks {s:?}", path.display());
    }
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn width_measures_every_width_and_thread_count() {
    let dir = scratch("width");
    let out = dir.join("plots");
    let o = run_ok(
        pgc(&dir)
            .args([
                "bench",
                "width",
                "--threads",
                "2",
                "--depth",
                "20",
                "--widths",
                "64,16",
                "--repeat",
                "1",
                "--json",
                "--out",
            ])
            .arg(&out),
    );
    let j = json_of(&o);
    assert_eq!(j["widths"], serde_json::json!([16, 64]));
    assert_eq!(
        j["threads"],
        serde_json::json!([1, 2]),
        "1 is added as the baseline"
    );
    let m = j["measurements"].as_array().unwrap();
    assert_eq!(m.len(), 4);
    for row in m {
        assert_eq!(num(&row["ands"]), 20.0 * num(&row["width"]));
        assert!(num(&row["seconds"]) > 0.0 && num(&row["efficiency"]) > 0.0);
        if row["threads"] == 1 {
            assert!((num(&row["speedup"]) - 1.0).abs() < 1e-9);
        }
    }
    // τ is either not derived (no width sped up here) or saved where later runs read it.
    match j["tau"]["value"].as_u64() {
        None => assert!(j["tau"]["saved_to"].is_null()),
        Some(tau) => {
            let saved = std::fs::read_to_string(dir.join("cache/pgc/fgp-tau")).unwrap();
            assert_eq!(saved.trim(), tau.to_string());
        }
    }
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("width.json")).unwrap()).unwrap();
    assert_eq!(written["measurements"], j["measurements"]);
    assert_svg(
        &out.join("fig5_width_efficiency.svg"),
        &["2 threads", "ideal"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn apps_reports_tables_and_figures_for_the_seed_applications() {
    let dir = scratch("apps");
    let out = dir.join("plots");
    let o = run_ok(
        pgc(&dir)
            .args([
                "bench",
                "apps",
                "--small",
                "-D",
                "BIOMATCH_N=4",
                "--threads",
                "1,2",
                "--json",
                "--out",
            ])
            .arg(&out),
    );
    let j = json_of(&o);
    let apps = j["apps"].as_array().unwrap();
    let names: Vec<&str> = apps.iter().map(|a| a["app"].as_str().unwrap()).collect();
    assert_eq!(names, ["biomatch", "mexp", "mvmul"]);
    // Input bits follow from the sizes: BioMatch 4 × 4 × 64 / 4 × 64, MExp 2 × 32 each,
    // MVMul 4 × 4 × 64 / 4 × 64.
    let bits: Vec<(u64, u64)> = apps
        .iter()
        .map(|a| {
            let t = &a["table2"];
            (
                t["input_bits_a"].as_u64().unwrap(),
                t["input_bits_b"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(bits, [(1024, 256), (64, 64), (1024, 256)]);
    for a in apps {
        let t2 = &a["table2"];
        let ands = t2["and_gates"].as_u64().unwrap();
        assert!(ands > 0 && ands < t2["gates"].as_u64().unwrap());
        assert!(
            t2["regions"].as_u64().unwrap() >= 1,
            "{}: the loop is a region",
            a["app"]
        );
        // Every AND sits on exactly one level.
        let per_level: u64 = a["level_widths"]["per_level"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_u64().unwrap())
            .sum();
        assert_eq!(per_level, ands);
        let offline = a["offline"].as_array().unwrap();
        assert_eq!(offline.len(), 4, "FGP and CGP at 1 and 2 threads");
        assert!(offline.iter().all(|r| num(&r["speedup"]) > 0.0));
        let seq = &a["online"]["sequential"];
        assert_eq!(seq["and_gates"].as_u64().unwrap(), ands);
        assert!(num(&seq["bandwidth_gbit_per_sec"]) > 0.0);
        // A sends at least the half-gates tables: two blocks per AND.
        assert!(seq["bytes_a_to_b"].as_u64().unwrap() >= 32 * ands);
        let cgp = a["online"]["cgp"].as_array().unwrap();
        assert_eq!(cgp.len(), 2);
        // The phases of every thread count, within the run's time.
        for r in cgp {
            let (input, circuit) = (num(&r["input_seconds"]), num(&r["circuit_seconds"]));
            assert!(input > 0.0 && circuit > 0.0, "{r}");
            assert!(input + circuit <= num(&r["seconds"]) + 1e-6, "{r}");
        }
    }
    assert_svg(
        &out.join("fig6_offline_speedup.svg"),
        &["BioMatch - FGP", "MVMul - CGP"],
    );
    assert_svg(&out.join("fig7_level_widths.svg"), &["MExp", "median"]);
    assert_svg(
        &out.join("fig8_online_speedup.svg"),
        &["MExp - CGP", "ideal"],
    );
    assert!(out.join("apps.json").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn apps_prints_readable_tables() {
    let dir = scratch("apps-text");
    let o = run_ok(pgc(&dir).args([
        "bench",
        "apps",
        "--small",
        "--apps",
        "mvmul",
        "--threads",
        "1,3",
        "--offline-only",
    ]));
    let text = String::from_utf8_lossy(&o.stdout);
    for want in ["Table 2", "Fig. 6", "Fig. 7", "MVMul FGP", "MVMul CGP"] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    assert!(!text.contains("Table 3"), "--offline-only runs no protocol");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn apps_prints_the_phases_of_each_thread_count() {
    let dir = scratch("apps-phases");
    let o = run_ok(pgc(&dir).args([
        "bench",
        "apps",
        "--small",
        "--apps",
        "mexp",
        "--threads",
        "1,2",
    ]));
    let text = String::from_utf8_lossy(&o.stdout);
    let table = text
        .split("Fig. 8 by phase")
        .nth(1)
        .unwrap_or_else(|| panic!("no phase table in:\n{text}"));
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("MExp CGP"))
        .unwrap_or_else(|| panic!("no MExp row in:\n{table}"));
    // "input / circuit" for threads 1 and 2.
    assert_eq!(row.matches(" / ").count(), 2, "{row}");
    assert!(table.contains("Table 3's `none`: MExp"), "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ipp_compares_with_the_sequential_protocol_and_over_a_shaped_link() {
    let dir = scratch("ipp");
    let o = run_ok(pgc(&dir).args([
        "bench",
        "ipp",
        "--small",
        "--apps",
        "mexp",
        "--threads",
        "1,2",
        "--rate-limit",
        "200",
        "--latency",
        "1",
        "--json",
    ]));
    let j = json_of(&o);
    let configs: Vec<(String, u64)> = j["table4"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["mode"].as_str().unwrap().to_string(),
                r["threads"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [("none", 1), ("ipp", 1), ("cgp", 2), ("ipp", 2)];
    assert_eq!(configs.len(), want.len());
    for ((m, t), (wm, wt)) in configs.iter().zip(want) {
        assert_eq!((m.as_str(), *t), (wm, wt));
    }
    let t5 = &j["table5"];
    assert_eq!(t5["rate_bits_per_sec"].as_u64(), Some(200_000_000));
    let rows = t5["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    // Under IPP both parties garble, so B sends tables too.
    assert!(
        rows[0]["ipp"]["bytes_b_to_a"].as_u64().unwrap()
            > rows[0]["cgp"]["bytes_b_to_a"].as_u64().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_are_refused_clearly() {
    let dir = scratch("bad");
    for (args, want) in [
        (
            vec!["bench", "apps", "--apps", "sha256"],
            "unknown application",
        ),
        (
            vec!["bench", "width", "--threads", "0"],
            "not a thread count",
        ),
        (
            vec!["bench", "ipp", "--small", "--rate-limit=0"],
            "--rate-limit",
        ),
    ] {
        let o = pgc(&dir).args(&args).output().unwrap();
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
