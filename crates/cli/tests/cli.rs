//! The `pgc` binary as a user runs it: real processes, real sockets, the shared Bristol
//! circuits and their known-answer vectors as the oracle.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pgc_circuit::testdata::{VectorFile, load_vectors, shared_circuits_dir, vector_file};

mod support;
use support::{json_of, run_ok, test_psk};

fn pgc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgc"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn bit_order(f: &VectorFile) -> &'static str {
    match f.bit_order {
        pgc_circuit::value::BitOrder::Lsb0 => "lsb0",
        pgc_circuit::value::BitOrder::Msb0 => "msb0",
    }
}

/// A free loopback port (bound then released; good enough for a test on one machine).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn eval_and_local_agree_with_every_shared_vector_file() {
    for f in load_vectors() {
        let v = &f.vectors[0];
        let path = f.path.to_str().unwrap();
        let mut eval = pgc();
        eval.args(["eval", path, "--bit-order", bit_order(&f), "--json"]);
        for i in &v.inputs {
            eval.args(["--input", i]);
        }
        let out = json_of(&run_ok(&mut eval));
        assert_eq!(
            out["outputs"],
            serde_json::json!(v.outputs),
            "eval {}",
            f.rel
        );

        let mut local = pgc();
        local.args([
            "local",
            path,
            "--bit-order",
            bit_order(&f),
            "--json",
            "--quiet",
        ]);
        local.args(["--a", &v.inputs[0]]);
        for i in &v.inputs[1..] {
            local.args(["--b", i]);
        }
        let out = json_of(&run_ok(&mut local));
        assert_eq!(
            out["outputs"],
            serde_json::json!(v.outputs),
            "local {}",
            f.rel
        );
    }
}

/// Starts one party; `pgc run` gets the tests' shared secret (TLS with --psk).
fn spawn_party(args: &[&str]) -> Child {
    let mut cmd = pgc();
    cmd.args(args);
    if args.first() == Some(&"run") {
        cmd.args(["--psk", &test_psk()]);
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgc starts")
}

fn finish(child: Child) -> Output {
    child.wait_with_output().expect("pgc finishes")
}

#[test]
fn two_separate_processes_run_aes_over_tcp() {
    let f = vector_file("bristol_fashion/aes_128.txt");
    let v = &f.vectors[0];
    let addr = format!("127.0.0.1:{}", free_port());
    let path = f.path.to_str().unwrap();
    let a = spawn_party(&[
        "run",
        path,
        "--party",
        "a",
        "--listen",
        &addr,
        "--input",
        &v.inputs[0],
        "--json",
    ]);
    let b = spawn_party(&[
        "run",
        path,
        "--party",
        "b",
        "--connect",
        &addr,
        "--input",
        &v.inputs[1],
        "--json",
    ]);
    for (who, out) in [("a", finish(a)), ("b", finish(b))] {
        assert!(out.status.success(), "party {who}: {}", stderr(&out));
        let j = json_of(&out);
        assert_eq!(j["outputs"], serde_json::json!(v.outputs), "party {who}");
    }
}

#[test]
fn inputs_of_a_moves_ownership() {
    // ModAdd512 has three inputs; give A values 0 and 2.
    let f = vector_file("bristol_fashion/ModAdd512.txt");
    let v = &f.vectors[0];
    let out = run_ok(pgc().args([
        "local",
        f.path.to_str().unwrap(),
        "--inputs-of-a",
        "0,2",
        "--json",
        "--quiet",
        "--a",
        &v.inputs[0],
        "--a",
        &v.inputs[2],
        "--b",
        &v.inputs[1],
    ]));
    assert_eq!(json_of(&out)["outputs"], serde_json::json!(v.outputs));
}

#[test]
fn different_circuits_stop_both_parties_with_a_clear_error() {
    let add = vector_file("bristol_fashion/adder64.txt");
    let sub = vector_file("bristol_fashion/sub64.txt");
    let addr = format!("127.0.0.1:{}", free_port());
    let a = spawn_party(&[
        "run",
        add.path.to_str().unwrap(),
        "--party",
        "a",
        "--listen",
        &addr,
        "--input",
        "1",
    ]);
    let b = spawn_party(&[
        "run",
        sub.path.to_str().unwrap(),
        "--party",
        "b",
        "--connect",
        &addr,
        "--input",
        "2",
    ]);
    for out in [finish(a), finish(b)] {
        assert!(!out.status.success());
        let e = stderr(&out);
        assert!(e.contains("circuits differ"), "{e}");
    }
}

#[test]
fn a_peer_killed_mid_protocol_makes_the_other_exit_nonzero_quickly() {
    let addr = format!("127.0.0.1:{}", free_port());
    // ~33 M AND gates: long enough to still be running when B is killed.
    let circuit = "builtin:random:4096x8000";
    let a = spawn_party(&[
        "run", circuit, "--party", "a", "--listen", &addr, "--input", "0", "--quiet",
    ]);
    let mut b = spawn_party(&[
        "run",
        circuit,
        "--party",
        "b",
        "--connect",
        &addr,
        "--input",
        "0",
        "--quiet",
    ]);
    std::thread::sleep(Duration::from_millis(700));
    b.kill().unwrap();
    let _ = b.wait();
    let start = Instant::now();
    let out = finish(a);
    assert!(!out.status.success(), "A must fail when B dies");
    assert!(start.elapsed() < Duration::from_secs(15));
    let e = stderr(&out);
    assert!(
        e.contains("closed") || e.contains("reset") || e.contains("network"),
        "{e}"
    );
}

#[test]
fn garbage_bytes_on_the_socket_are_refused() {
    let addr = format!("127.0.0.1:{}", free_port());
    let f = vector_file("bristol_fashion/adder64.txt");
    let a = spawn_party(&[
        "run",
        f.path.to_str().unwrap(),
        "--party",
        "a",
        "--listen",
        &addr,
        "--input",
        "1",
        "--timeout",
        "3",
    ]);
    let start = Instant::now();
    let mut s = loop {
        match TcpStream::connect(&addr) {
            Ok(s) => break s,
            Err(_) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("party A never listened: {e}"),
        }
    };
    s.write_all(&[0x13, 0x00, 0x00, 0x00]).unwrap();
    s.write_all(b"this is not pgc talk").unwrap();
    let out = finish(a);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("not a pgc hello"), "{e}");
}

#[test]
fn malformed_circuit_files_name_the_line() {
    let dir = std::env::temp_dir().join(format!("pgc-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "2 5\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n2 1 2 9 4 XOR\n").unwrap();
    let out = pgc()
        .args(["info", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("line 6"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn wrong_input_count_and_width_are_clear_errors() {
    let f = vector_file("bristol_fashion/adder64.txt");
    let p = f.path.to_str().unwrap();
    let out = pgc().args(["eval", p, "--input", "1"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("2 input value(s)"),
        "{}",
        stderr(&out)
    );
    let out = pgc()
        .args(["eval", p, "--input", "1", "--input", "0x1ffffffffffffffff"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("does not fit in 64 bits"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn info_json_has_the_documented_keys() {
    let f = vector_file("bristol_fashion/aes_128.txt");
    let j = json_of(&run_ok(pgc().args([
        "info",
        f.path.to_str().unwrap(),
        "--json",
    ])));
    assert_eq!(j["and_gates"], 6400);
    assert_eq!(j["xor_gates"], 28176);
    assert_eq!(j["inv_gates"], 2087);
    assert_eq!(j["wires"], 36919);
    assert_eq!(j["and_depth"], 60);
    assert!(j["peak_live_wires"].as_u64().unwrap() > 0);
}

#[test]
fn bench_json_has_the_documented_keys() {
    let j = json_of(&run_ok(
        pgc().args(["bench", "garble", "--ands", "200000", "--json"]),
    ));
    assert!(j["garble_and_per_sec"].as_f64().unwrap() > 0.0);
    assert!(j["eval_and_per_sec"].as_f64().unwrap() > 0.0);
    // Per second of CPU time, where the platform tells it.
    #[cfg(unix)]
    for key in ["garble_and_per_cpu_sec", "eval_and_per_cpu_sec"] {
        assert!(j[key].as_f64().unwrap() > 0.0, "{key}");
    }
    let j = json_of(&run_ok(pgc().args([
        "bench",
        "garble",
        "--circuit",
        "builtin:aes128",
        "--ands",
        "12800",
        "--json",
    ])));
    assert_eq!(
        j["and_gates"], 12800,
        "two repetitions of the 6,400-AND AES circuit"
    );
    let j = json_of(&run_ok(
        pgc().args(["bench", "ot", "--ots", "10000", "--json"]),
    ));
    assert!(j["ots_per_sec"].as_f64().unwrap() > 0.0);
    let j = json_of(&run_ok(
        pgc().args(["bench", "run", "--ands", "200000", "--json"]),
    ));
    assert_eq!(j["and_gates"], 200704);
    assert!(j["seconds"].as_f64().unwrap() > 0.0);
    assert!(j["and_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn demo_runs_and_checks_itself() {
    let out = run_ok(pgc().arg("demo"));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("0x69c4e0d86a7b0430d8cdb78070b4c55a"), "{s}");
    assert!(s.contains("All results correct"), "{s}");
}

#[test]
fn shared_dir_is_present() {
    assert!(shared_circuits_dir().join("vectors.json").exists());
}

/// A scratch directory with its own config home, so keys never touch the user's.
struct KeyHome(std::path::PathBuf);

impl KeyHome {
    fn new(name: &str) -> KeyHome {
        let dir = std::env::temp_dir().join(format!("pgc-cli-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        KeyHome(dir)
    }

    fn pgc(&self) -> Command {
        let mut cmd = pgc();
        cmd.env("XDG_CONFIG_HOME", &self.0);
        cmd
    }

    /// `pgc keygen --out NAME.pem`: returns (key path, fingerprint printed).
    fn keygen(&self, name: &str) -> (String, String) {
        let path = self.0.join(format!("{name}.pem"));
        let path = path.to_str().unwrap().to_string();
        let out = run_ok(self.pgc().args(["keygen", "--out", &path]));
        let fingerprint = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert!(fingerprint.starts_with("pgc1-"), "{fingerprint}");
        (path, fingerprint)
    }
}

impl Drop for KeyHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the adder as two processes, each with its own extra flags; returns both outputs.
fn adder_pair(a_extra: &[&str], b_extra: &[&str]) -> (Output, Output) {
    let f = vector_file("bristol_fashion/adder64.txt");
    let path = f.path.to_str().unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let party = |args: &[&str], extra: &[&str]| {
        pgc()
            .args(args)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = party(
        &[
            "run", path, "--party", "a", "--listen", &addr, "--input", "40", "--json",
        ],
        a_extra,
    );
    let b = party(
        &[
            "run",
            path,
            "--party",
            "b",
            "--connect",
            &addr,
            "--input",
            "2",
            "--json",
            "--timeout",
            "5",
        ],
        b_extra,
    );
    (finish(a), finish(b))
}

fn assert_adder_ok(a: &Output, b: &Output) {
    for (who, out) in [("a", a), ("b", b)] {
        assert!(out.status.success(), "party {who}: {}", stderr(out));
        assert_eq!(
            json_of(out)["outputs"],
            serde_json::json!(["0x000000000000002a"]),
            "party {who}"
        );
    }
}

#[test]
fn keygen_writes_a_private_key_and_refuses_to_overwrite_it() {
    let home = KeyHome::new("keygen");
    let out = run_ok(home.pgc().arg("keygen"));
    let fingerprint = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        fingerprint.starts_with("pgc1-") && fingerprint.len() == 69,
        "{fingerprint}"
    );
    let key = home.0.join("pgc").join("identity.pem");
    assert!(
        stderr(&out).contains(key.to_str().unwrap()),
        "{}",
        stderr(&out)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let again = home.pgc().arg("keygen").output().unwrap();
    assert!(!again.status.success());
    let e = stderr(&again);
    assert!(e.contains("--force") && e.contains(&fingerprint), "{e}");
    let secret = home.0.join("shared.psk");
    run_ok(
        home.pgc()
            .args(["keygen", "--secret", secret.to_str().unwrap()]),
    );
    let first = std::fs::read_to_string(&secret).unwrap();
    assert!(first.starts_with("pgc-secret1-"), "{first}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    // A secret is not replaced without --force, and is with it.
    let again = home
        .pgc()
        .args(["keygen", "--secret", secret.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(stderr(&again).contains("add --force"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), first);
    run_ok(
        home.pgc()
            .args(["keygen", "--force", "--secret", secret.to_str().unwrap()]),
    );
    assert_ne!(std::fs::read_to_string(&secret).unwrap(), first);
}

/// A typo in the directory of --out or --secret is an error naming the directory; no
/// directory tree is made (keygen used to create it silently, hiding the key there).
#[test]
fn keygen_refuses_a_directory_that_does_not_exist() {
    let home = KeyHome::new("typo");
    let typo = home.0.join("sercrets").join("team");
    for flag in ["--out", "--secret"] {
        let path = typo.join("key");
        let out = home
            .pgc()
            .args(["keygen", flag, path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{flag}");
        let e = stderr(&out);
        assert!(
            e.contains(&format!("the directory {} does not exist", typo.display()))
                && e.contains("mkdir -p"),
            "{flag}: {e}"
        );
        assert!(!home.0.join("sercrets").exists(), "{flag} made a directory");
    }
}

#[test]
fn run_without_a_security_flag_names_the_flag_and_this_partys_fingerprint() {
    let home = KeyHome::new("missing");
    let args = [
        "run",
        "builtin:millionaires",
        "--party",
        "a",
        "--listen",
        "127.0.0.1:0",
        "--input",
        "1",
    ];
    // No key yet: the error says to run pgc keygen.
    let out = home.pgc().args(args).output().unwrap();
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("run `pgc keygen`") && e.contains("--insecure-plaintext"),
        "{e}"
    );
    let fingerprint = String::from_utf8(run_ok(home.pgc().arg("keygen")).stdout).unwrap();
    let out = home.pgc().args(args).output().unwrap();
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "error: the connection is encrypted and authenticated by default; add --peer-key \
             <the other party's fingerprint from `pgc keygen`> (yours is {}), or --psk FILE, or \
             --insecure-plaintext to run unprotected",
            fingerprint.trim()
        )
    );
}

#[test]
fn two_processes_with_pinned_keys_and_a_wrong_key_is_refused() {
    let home = KeyHome::new("pinned");
    let (a_key, a_fp) = home.keygen("a");
    let (b_key, b_fp) = home.keygen("b");
    let (a, b) = adder_pair(
        &["--key", &a_key, "--peer-key", &b_fp],
        &["--key", &b_key, "--peer-key", &a_fp],
    );
    assert_adder_ok(&a, &b);
    // The fingerprint may also come from a file.
    let a_fp_file = home.0.join("a.fingerprint");
    std::fs::write(&a_fp_file, format!("{a_fp}\n")).unwrap();
    let (a, b) = adder_pair(
        &["--key", &a_key, "--peer-key", &b_fp],
        &["--key", &b_key, "--peer-key", a_fp_file.to_str().unwrap()],
    );
    assert_adder_ok(&a, &b);
    // B pins a stranger: B stops with both fingerprints; A notes it and times out.
    let (_, stranger_fp) = home.keygen("stranger");
    let (a, b) = adder_pair(
        &["--key", &a_key, "--peer-key", &b_fp, "--timeout", "2"],
        &["--key", &b_key, "--peer-key", &stranger_fp],
    );
    assert!(!a.status.success() && !b.status.success());
    let eb = stderr(&b);
    assert!(eb.contains(&a_fp) && eb.contains(&stranger_fp), "{eb}");
    let ea = stderr(&a);
    assert!(ea.contains("note: turned away a connection"), "{ea}");
    assert!(ea.contains("refused this party's key"), "{ea}");
}

#[test]
fn insecure_plaintext_works_and_meeting_tls_is_a_clear_error() {
    let (a, b) = adder_pair(&["--insecure-plaintext"], &["--insecure-plaintext"]);
    assert_adder_ok(&a, &b);
    let psk = test_psk();
    let (a, b) = adder_pair(
        &["--psk", &psk, "--timeout", "2"],
        &["--insecure-plaintext"],
    );
    assert!(!a.status.success() && !b.status.success());
    let eb = stderr(&b);
    assert!(
        eb.contains("the peer uses TLS") && eb.contains("both sides must agree"),
        "{eb}"
    );
    let ea = stderr(&a);
    assert!(
        ea.contains(
            "the peer is not using TLS: did it run with --insecure-plaintext? Both sides must agree"
        ),
        "{ea}"
    );
}
