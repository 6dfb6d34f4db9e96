//! `pgc run --cluster`: with the `mpi` feature, both parties launched under
//! `mpirun --oversubscribe -np K` on loopback (K = 2 and 4; semi-honest and malicious) give
//! `pgc local`'s outputs, a worker rank that stops answering fails both parties naming it, and
//! parties launched with different K, or with `--cluster` on one side only, both fail saying
//! so; without the feature, `--cluster` says how to build it.

use std::path::PathBuf;
use std::process::Command;

mod support;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    repo()
        .join("examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

#[cfg(not(feature = "mpi"))]
#[test]
fn cluster_without_the_mpi_feature_says_how_to_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_pgc"))
        .args(["run", &example("biomatch.c"), "--party", "a"])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--insecure-plaintext",
            "--cluster",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--features mpi") && err.contains("libopenmpi-dev"),
        "{err}"
    );
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::*;
    use serde_json::Value;
    use std::net::TcpListener;
    use std::process::{Child, Output, Stdio};
    use support::{json_of, run_ok, test_psk};

    const DB: &str = "db=[[1,2,3,4],[9,9,9,9],[0,0,0,0],[1,2,3,5],[-7,1,1,1],[4,4,4,4],[2,3,4,5]]";
    const SAMPLE: &str = "sample=[1,2,3,6]";

    /// The tests of this file run one at a time (each launches 2 × K processes on
    /// loopback, and they must not meet each other's parties).
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A base port P with P ..= P+k-1 free on loopback (just now), a different one for
    /// each call in this process.
    fn free_base(k: u16) -> u16 {
        static CALLS: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = (std::process::id() % 2000) as u16;
        for start in (20000 + seed * 7 + call * 211..60000).step_by(97) {
            let all: Vec<_> = (0..k)
                .map(|i| TcpListener::bind(("127.0.0.1", start + i)))
                .collect();
            if all.iter().all(|l| l.is_ok()) {
                return start;
            }
        }
        panic!("no {k} free consecutive ports");
    }

    fn cache(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("pgc-cluster-{name}-{}", std::process::id()))
    }

    /// `mpirun -np k` for one party, with a session directory of its own: two mpiruns
    /// started at once race to create the shared default (`/tmp/ompi.HOST.UID`, "File
    /// exists"; seen in CI).
    fn mpirun(k: usize, party: &str) -> Command {
        static LAUNCHES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let session = cache("ompi").join(format!("{party}-{n}"));
        std::fs::create_dir_all(&session).unwrap();
        let mut cmd = Command::new("mpirun");
        cmd.args([
            "--oversubscribe",
            "--allow-run-as-root",
            "-np",
            &k.to_string(),
        ])
        .env("OMPI_MCA_orte_tmpdir_base", &session);
        cmd
    }

    /// One party: `mpirun -np k pgc run biomatch … --cluster`.
    fn party(k: usize, party: &str, endpoint: &[&str], input: &str, extra: &[&str]) -> Child {
        party_env(k, party, endpoint, input, extra, &[])
    }

    fn party_env(
        k: usize,
        party: &str,
        endpoint: &[&str],
        input: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Child {
        mpirun(k, party)
            .arg(env!("CARGO_BIN_EXE_pgc"))
            .args(["run", &example("biomatch.c"), "-D", "BIOMATCH_N=7"])
            .args(["--party", party, "--input", input, "--psk", &test_psk()])
            .args(["--parallel", "cgp", "--json", "--cluster"])
            .args(if extra.contains(&"--timeout") {
                &[][..]
            } else {
                &["--timeout", "60"][..]
            })
            .args(endpoint)
            .args(extra)
            .env("XDG_CACHE_HOME", cache("run"))
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mpirun starts (install openmpi-bin)")
    }

    fn both(ka: usize, kb: usize, extra: &[&str]) -> (Output, Output) {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let base = free_base(ka.max(kb) as u16);
        let listen = format!("127.0.0.1:{base}");
        let a = party(ka, "a", &["--listen", &listen], DB, extra);
        let b = party(kb, "b", &["--connect", &listen], SAMPLE, extra);
        (a.wait_with_output().unwrap(), b.wait_with_output().unwrap())
    }

    fn outputs_of(out: &Output) -> Value {
        json_of(out)["outputs"].clone()
    }

    #[test]
    fn cluster_runs_give_pgc_locals_outputs() {
        let local = run_ok(
            Command::new(env!("CARGO_BIN_EXE_pgc"))
                .args(["local", &example("biomatch.c"), "-D", "BIOMATCH_N=7"])
                .args(["--a", DB, "--b", SAMPLE, "--json"])
                .env("XDG_CACHE_HOME", cache("local")),
        );
        let expect = outputs_of(&local);
        assert_eq!(expect["OUTPUT_min_dist"], 1);
        for (k, threads) in [(2, "1"), (4, "2")] {
            let (a, b) = both(k, k, &["--threads", threads]);
            for (name, out) in [("A", &a), ("B", &b)] {
                assert!(
                    out.status.success(),
                    "party {name}, {k} ranks: {}\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                // Only rank 0 prints.
                let v = json_of(out);
                assert_eq!(v["outputs"], expect, "party {name}, {k} ranks");
                assert_eq!(v["cluster_ranks"], k, "party {name}");
            }
        }
    }

    /// Options a cluster cannot run are refused before anything is described or connected:
    /// stderr holds the refusal alone (no "connection:" or "security level:" lines first).
    #[test]
    fn options_a_cluster_refuses_print_only_the_refusal() {
        for (extra, says) in [
            (
                &["--security", "dual-execution"][..],
                "dual execution has neither",
            ),
            (&["--parallel", "ipp"][..], "not ipp"),
        ] {
            let out = mpirun(1, "a")
                .arg(env!("CARGO_BIN_EXE_pgc"))
                .args(["run", &example("biomatch.c"), "-D", "BIOMATCH_N=7"])
                .args(["--party", "a", "--input", DB, "--psk", &test_psk()])
                .args(["--cluster", "--listen", "127.0.0.1:1"])
                .args(extra)
                .env("XDG_CACHE_HOME", cache("refuse"))
                .output()
                .expect("mpirun starts (install openmpi-bin)");
            assert!(!out.status.success(), "{extra:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(says), "{extra:?}: {err}");
            assert!(
                !err.contains("connection:") && !err.contains("security level:"),
                "{extra:?}: described before refusing: {err}"
            );
        }
    }

    #[test]
    fn parties_with_different_rank_counts_both_fail_saying_so() {
        let (a, b) = both(2, 1, &["--threads", "1"]);
        for (name, out) in [("A", &a), ("B", &b)] {
            assert!(!out.status.success(), "party {name} succeeded");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("cluster of 2 ranks") && err.contains("cluster of 1 rank "),
                "party {name}: {err}"
            );
        }
    }

    /// `--cluster` on one side only (A under mpirun, B a plain `pgc run`): both fail at
    /// the handshake saying which side runs what, for semi-honest and malicious runs.
    #[test]
    fn a_cluster_against_a_single_process_both_fail_saying_so() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        for malicious in [false, true] {
            let base = free_base(2);
            let listen = format!("127.0.0.1:{base}");
            let (a, program, b_input, b_flags): (_, _, _, &[&str]) = if malicious {
                (
                    malicious_party(2, "a", &["--listen", &listen], "income=7000"),
                    example("millionaires.c"),
                    "income=5000",
                    &["--security", "malicious", "--stat-sec", "8"],
                )
            } else {
                (
                    party(2, "a", &["--listen", &listen], DB, &["--threads", "1"]),
                    example("biomatch.c"),
                    SAMPLE,
                    &["-D", "BIOMATCH_N=7", "--parallel", "cgp"],
                )
            };
            let b = Command::new(env!("CARGO_BIN_EXE_pgc"))
                .args(["run", &program, "--party", "b", "--input", b_input])
                .args(["--psk", &test_psk(), "--threads", "1", "--json"])
                .args(["--timeout", "60", "--connect", &listen])
                .args(b_flags)
                .env("XDG_CACHE_HOME", cache("run"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
            for (name, out, mine) in [
                ("A", &a, "this party runs as a cluster of 2 ranks"),
                ("B", &b, "this party runs as one process (no --cluster)"),
            ] {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    !out.status.success(),
                    "malicious {malicious}: {name} succeeded"
                );
                assert!(
                    err.contains(mine),
                    "malicious {malicious}, party {name}: {err}"
                );
            }
        }
    }

    /// A worker rank that stops answering (the test hook `PGC_TEST_SILENT_RANK` makes A's
    /// rank 1 sleep instead of running) fails both parties, A's error naming the rank,
    /// within the silence bound (`--timeout 4` here), instead of hanging.
    #[test]
    fn a_silent_worker_rank_fails_both_parties_naming_it() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let base = free_base(2);
        let listen = format!("127.0.0.1:{base}");
        let extra = ["--threads", "1", "--timeout", "4"];
        let a = party_env(
            2,
            "a",
            &["--listen", &listen],
            DB,
            &extra,
            &[("PGC_TEST_SILENT_RANK", "1")],
        );
        let b = party(2, "b", &["--connect", &listen], SAMPLE, &extra);
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let err_a = String::from_utf8_lossy(&a.stderr);
        assert!(!a.status.success() && !b.status.success(), "{err_a}");
        assert!(
            err_a.contains("party A rank 1 (of 2) failed")
                && err_a.contains("not even a heartbeat"),
            "{err_a}"
        );
    }

    /// One party of `pgc run millionaires.c --security malicious --cluster` under
    /// `mpirun -np k`.
    fn malicious_party(k: usize, party: &str, endpoint: &[&str], input: &str) -> Child {
        mpirun(k, party)
            .arg(env!("CARGO_BIN_EXE_pgc"))
            .args(["run", &example("millionaires.c")])
            .args(["--party", party, "--input", input, "--psk", &test_psk()])
            .args(["--security", "malicious", "--stat-sec", "8"])
            .args(["--threads", "1", "--json", "--timeout", "60", "--cluster"])
            .args(endpoint)
            .env("XDG_CACHE_HOME", cache("run"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mpirun starts (install openmpi-bin)")
    }

    /// Cut-and-choose with the copies spread over 2 and 4 ranks per party gives
    /// `pgc local`'s outputs on both sides.
    #[test]
    fn malicious_cluster_runs_give_pgc_locals_outputs() {
        let (ia, ib) = ("income=7000", "income=5000");
        let local = run_ok(
            Command::new(env!("CARGO_BIN_EXE_pgc"))
                .args(["local", &example("millionaires.c")])
                .args(["--a", ia, "--b", ib, "--json"])
                .env("XDG_CACHE_HOME", cache("local")),
        );
        let expect = outputs_of(&local);
        assert_eq!(expect["OUTPUT_result"], 1);
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        for k in [2, 4] {
            let base = free_base(k as u16);
            let listen = format!("127.0.0.1:{base}");
            let a = malicious_party(k, "a", &["--listen", &listen], ia);
            let b = malicious_party(k, "b", &["--connect", &listen], ib);
            let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
            for (name, out) in [("A", &a), ("B", &b)] {
                assert!(
                    out.status.success(),
                    "party {name}, {k} ranks: {}\nA: {}\nB: {}",
                    out.status,
                    String::from_utf8_lossy(&a.stderr),
                    String::from_utf8_lossy(&b.stderr)
                );
                let v = json_of(out);
                assert_eq!(v["outputs"], expect, "party {name}, {k} ranks");
                assert_eq!(v["cluster_ranks"], k, "party {name}");
            }
        }
    }
}
