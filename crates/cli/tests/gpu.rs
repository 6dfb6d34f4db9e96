//! `--device`: where a GPU is usable, `--device gpu` gives the CPU's results; where it is not
//! (no driver, no GPU, no NVRTC, a build without `--features gpu`), it is a clear error naming
//! what is missing, never a crash; runs the GPU does not cover are refused before anything
//! connects; `--device auto` always runs.

use std::process::{Command, Output};

fn pgc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(args)
        .output()
        .expect("pgc starts")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const INPUTS: [&str; 4] = ["--a", "0x0123456789abcdef", "--b", "0xfedcba9876543210"];

fn local(device: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "local",
        "builtin:random:64x8",
        "--quiet",
        "--device",
        device,
    ];
    args.extend(INPUTS);
    args.extend(extra);
    pgc(&args)
}

#[test]
fn device_gpu_matches_the_cpu_or_names_what_is_missing() {
    let cpu = local("cpu", &[]);
    assert!(cpu.status.success(), "{}", stderr(&cpu));
    let gpu = local("gpu", &[]);
    if gpu.status.success() {
        assert_eq!(gpu.stdout, cpu.stdout, "the GPU computed another result");
    } else {
        let err = stderr(&gpu);
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains("error: --device gpu:"), "{err}");
        let names_the_cause = [
            "built without GPU support",
            "no NVIDIA driver",
            "no GPU",
            "NVRTC",
        ]
        .iter()
        .any(|cause| err.contains(cause));
        assert!(
            names_the_cause,
            "the error does not say what is missing: {err}"
        );
    }
    let auto = local("auto", &[]);
    assert!(auto.status.success(), "{}", stderr(&auto));
    assert_eq!(auto.stdout, cpu.stdout);
}

#[test]
fn runs_the_gpu_does_not_take_are_refused_with_the_reason() {
    let malicious = local("gpu", &["--security", "malicious"]);
    assert!(!malicious.status.success());
    assert!(
        stderr(&malicious).contains("semi-honest Yao only"),
        "{}",
        stderr(&malicious)
    );
    let gmw = local("gpu", &["--protocol", "gmw"]);
    assert!(!gmw.status.success());
    assert!(stderr(&gmw).contains("not GMW"), "{}", stderr(&gmw));
    // A parallel program under a parallel mode: the GPU takes the sequential stream only.
    let mvmul = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mvmul.c");
    let out = pgc(&[
        "local",
        mvmul,
        "-D",
        "MVMUL_M=4",
        "--quiet",
        "--device",
        "gpu",
        "--parallel",
        "cgp",
        "--threads",
        "2",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--parallel none"), "{}", stderr(&out));
    // ... and auto falls back to the CPU there, saying why.
    let row = format!("[{}]", ["3"; 16].join(","));
    let matrix = format!("matrix=[{}]", [row.as_str(); 4].join(","));
    let vector = format!("vector=[{}]", ["2"; 16].join(","));
    let out = pgc(&[
        "local",
        mvmul,
        "-D",
        "MVMUL_M=4",
        "--device",
        "auto",
        "--parallel",
        "cgp",
        "--threads",
        "2",
        "--a",
        &matrix,
        "--b",
        &vector,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--device auto chose cpu"),
        "{}",
        stderr(&out)
    );
}
