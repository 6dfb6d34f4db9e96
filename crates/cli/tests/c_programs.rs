//! C programs through the `pgc` binary as a user runs it: `compile`, and `info`/`eval`/
//! `local`/`run` on `.c` and `.pgc` files with named, typed inputs and outputs revealed to
//! both parties or to one.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::json;

mod support;
use support::{json_of, run_ok};

/// A scratch directory (removed on drop) that is also the compile cache.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pgc-c-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
    fn cache(&self) -> PathBuf {
        self.0.join("cache")
    }
    fn pgc(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pgc"));
        c.env("XDG_CACHE_HOME", self.cache());
        c
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fails(cmd: &mut Command) -> String {
    let out = cmd.output().expect("pgc starts");
    assert!(
        !out.status.success(),
        "pgc should have failed; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const MILLIONAIRES: &str = "\
void mpc_main(int INPUT_A_income, int INPUT_B_income, int *OUTPUT_result)
{
    *OUTPUT_result = INPUT_A_income > INPUT_B_income;
}
";

/// Arrays, a struct, a 64-bit input and outputs revealed to both, to A only, to B only.
const MIXED: &str = "\
struct pt { int x; unsigned char y[2]; };
void mpc_main(int INPUT_A_v[3], struct pt INPUT_B_p, long INPUT_B_k,
              int *OUTPUT_sum, int *OUTPUT_A_dot, _Bool *OUTPUT_B_big, int OUTPUT_grid[2][2])
{
    *OUTPUT_sum = INPUT_A_v[0] + INPUT_A_v[1] + INPUT_A_v[2] + INPUT_B_p.x;
    *OUTPUT_A_dot = INPUT_A_v[0] * INPUT_B_p.y[0] + INPUT_A_v[1] * INPUT_B_p.y[1];
    *OUTPUT_B_big = INPUT_B_k > 1000;
    OUTPUT_grid[0][0] = -1;
    OUTPUT_grid[0][1] = INPUT_A_v[2];
    OUTPUT_grid[1][0] = N;
    OUTPUT_grid[1][1] = INPUT_B_p.x;
}
";

#[test]
fn compile_writes_pgc_next_to_the_source_and_info_describes_it() {
    let s = Scratch::new("compile");
    let src = s.file("millionaires.c", MILLIONAIRES);
    let out = run_ok(s.pgc().args(["compile", &src, "--stats"]));
    let text = stdout(&out);
    assert!(text.contains("millionaires.pgc"), "{text}");
    assert!(text.contains("int32_t INPUT_A_income"), "{text}");
    assert!(text.contains("removed"), "--stats lists the passes: {text}");
    let pgc = s.path("millionaires.pgc");
    assert!(Path::new(&pgc).exists());

    let info = json_of(&run_ok(s.pgc().args(["info", &pgc, "--json"])));
    for key in ["and_gates", "xor_gates", "and_depth", "gates"] {
        assert!(info[key].is_u64(), "info --json has {key}: {info}");
    }
    assert_eq!(
        info["and_gates"], 32,
        "a 32-bit signed comparison costs 32 ANDs"
    );
    assert_eq!(
        info["inputs"],
        json!([
            {"name": "INPUT_A_income", "short_name": "income", "owner": "A", "type": "int32_t", "bits": 32},
            {"name": "INPUT_B_income", "short_name": "income", "owner": "B", "type": "int32_t", "bits": 32},
        ])
    );
    assert_eq!(
        info["outputs"],
        json!([{"name": "OUTPUT_result", "revealed_to": "both", "type": "int32_t", "bits": 32}])
    );
    // The .c file directly gives the same circuit.
    let from_c = json_of(&run_ok(s.pgc().args(["info", &src, "--json"])));
    assert_eq!(from_c["fingerprint"], info["fingerprint"]);

    let j = json_of(&run_ok(s.pgc().args([
        "compile",
        &src,
        "-o",
        &s.path("m2.pgc"),
        "--json",
        "--stats",
    ])));
    assert_eq!(j["and_gates"], 32);
    assert!(j["stats"]["passes"].is_array(), "{j}");
    assert!(j["compile_seconds"].as_f64().unwrap() >= 0.0);
}

#[test]
fn local_and_eval_on_c_and_pgc_with_typed_inputs() {
    let s = Scratch::new("local");
    let src = s.file("millionaires.c", MILLIONAIRES);
    run_ok(s.pgc().args(["compile", &src]));
    let pgc = s.path("millionaires.pgc");
    for (a, b, want) in [("5000", "7000", 0), ("7000", "5000", 1), ("-1", "-2", 1)] {
        for circuit in [&src, &pgc] {
            let out = run_ok(s.pgc().args([
                "local",
                circuit,
                "--a",
                &format!("income={a}"),
                "--b",
                &format!("INPUT_B_income={b}"),
                "--quiet",
            ]));
            assert_eq!(stdout(&out), format!("OUTPUT_result = {want}\n"));
            let e = json_of(&run_ok(s.pgc().args([
                "eval",
                circuit,
                "--input",
                &format!("INPUT_A_income={a}"),
                "--input",
                &format!("INPUT_B_income={b}"),
                "--json",
            ])));
            assert_eq!(e["outputs"], json!({"OUTPUT_result": want}));
        }
    }
}

#[test]
fn arrays_structs_and_one_sided_outputs() {
    let s = Scratch::new("mixed");
    let src = s.file("mixed.c", MIXED);
    let expected = json!({
        "OUTPUT_sum": 10, "OUTPUT_A_dot": 512, "OUTPUT_B_big": 1,
        "OUTPUT_grid": [[-1, -3], [7, 10]],
    });
    let e = json_of(&run_ok(s.pgc().args([
        "eval",
        &src,
        "-D",
        "N=7",
        "--input",
        "v=[1, 2, -3]",
        "--input",
        "p={x: 10, y: [2, 0xff]}",
        "--input",
        "k=5000",
        "--json",
    ])));
    assert_eq!(e["outputs"], expected);

    // local shows every output (both parties run here).
    let l = json_of(&run_ok(s.pgc().args([
        "local",
        &src,
        "-D",
        "N=7",
        "--a",
        "v=[1,2,-3]",
        "--b",
        "p={.x = 10, .y = {2, 255}}",
        "--b",
        "INPUT_B_k=5000",
        "--json",
    ])));
    assert_eq!(l["outputs"], expected);

    // Inputs from a JSON file, command line taking precedence.
    let inputs = s.file(
        "inputs.json",
        r#"{"v": [1, 2, -3], "INPUT_B_p": {"x": 10, "y": [2, 255]}, "k": "0x10"}"#,
    );
    let l = json_of(&run_ok(s.pgc().args([
        "local", &src, "-D", "N=7", "--inputs", &inputs, "--b", "k=1001", "--json",
    ])));
    assert_eq!(l["outputs"], expected);
    let text = stdout(&run_ok(
        s.pgc()
            .args(["local", &src, "-D", "N=7", "--inputs", &inputs, "-q"]),
    ));
    assert_eq!(
        text,
        "OUTPUT_sum = 10\nOUTPUT_A_dot = 512\nOUTPUT_B_big = 0\nOUTPUT_grid = [[-1, -3], [7, 10]]\n"
    );
}

/// The float example of the README.
const NEAR: &str = "\
/* near.c: are two points closer than 10? */
#include <math.h>
void mpc_main(double INPUT_A_x, double INPUT_A_y, double INPUT_B_x, double INPUT_B_y,
              double *OUTPUT_A_distance, _Bool *OUTPUT_near)
{
    double dx = INPUT_A_x - INPUT_B_x, dy = INPUT_A_y - INPUT_B_y;
    *OUTPUT_A_distance = sqrt(dx * dx + dy * dy);
    *OUTPUT_near = *OUTPUT_A_distance < 10.0;
}
";

/// Float inputs in every notation and outputs that read back to the same bits.
const ECHO: &str = "\
void mpc_main(float INPUT_A_f, double INPUT_B_d[3], float *OUTPUT_f, double OUTPUT_d[3],
              double *OUTPUT_sum)
{
    *OUTPUT_f = INPUT_A_f;
    for (int i = 0; i < 3; i++)
        OUTPUT_d[i] = INPUT_B_d[i];
    *OUTPUT_sum = INPUT_A_f + INPUT_B_d[0];
}
";

#[test]
fn floats_in_and_out_as_the_readme_shows() {
    let s = Scratch::new("floats");
    let near = s.file("near.c", NEAR);
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    assert!(
        readme.contains(&NEAR.replace('\n', "\n    ")[..200]),
        "the README shows this program"
    );
    let out = run_ok(s.pgc().args([
        "local", &near, "--a", "x=1.5", "--a", "y=-2", "--b", "x=4.5", "--b", "y=2", "-q",
    ]));
    assert_eq!(stdout(&out), "OUTPUT_A_distance = 5.0\nOUTPUT_near = 1\n");
    let l = json_of(&run_ok(s.pgc().args([
        "local", &near, "--a", "x=nan", "--a", "y=0", "--b", "x=0", "--b", "y=0", "--json",
    ])));
    assert_eq!(
        l["outputs"],
        json!({"OUTPUT_A_distance": "nan", "OUTPUT_near": 0})
    );

    let echo = s.file("echo.c", ECHO);
    let out = run_ok(s.pgc().args([
        "eval",
        &echo,
        "--input",
        "f=0x7fc00001",
        "--input",
        "d=[-0.0, 1e-320, 0x1.8p1]",
    ]));
    assert_eq!(
        stdout(&out),
        // The float NaN's payload moves up into the double's (cvtss2sd), and the sum keeps it.
        "OUTPUT_f = 0x7fc00001\nOUTPUT_d = [-0.0, 1e-320, 3.0]\nOUTPUT_sum = 0x7ff8000020000000\n"
    );
    // Printed values read back to the same bits, through text and through JSON.
    for (f, d) in [
        ("0.1", "[inf, -nan, 2.2250738585072014e-308]"),
        ("-3.4028235e38", "[5e-324, 0x7ff0000000000001, -0.0]"),
    ] {
        let first = json_of(&run_ok(s.pgc().args([
            "eval",
            &echo,
            "--input",
            &format!("f={f}"),
            "--input",
            &format!("d={d}"),
            "--json",
        ])));
        let outs = &first["outputs"];
        let inputs = s.file(
            "again.json",
            &json!({"f": outs["OUTPUT_f"], "d": outs["OUTPUT_d"]}).to_string(),
        );
        let again = json_of(&run_ok(
            s.pgc().args(["eval", &echo, "--inputs", &inputs, "--json"]),
        ));
        assert_eq!(again["outputs"], first["outputs"], "{f} {d}");
        let text = stdout(&run_ok(s.pgc().args([
            "eval",
            &echo,
            "--input",
            &format!("f={f}"),
            "--input",
            &format!("d={d}"),
        ])));
        let f_text = text
            .lines()
            .next()
            .unwrap()
            .strip_prefix("OUTPUT_f = ")
            .unwrap();
        let d_text = text
            .lines()
            .nth(1)
            .unwrap()
            .strip_prefix("OUTPUT_d = ")
            .unwrap();
        let back = stdout(&run_ok(s.pgc().args([
            "eval",
            &echo,
            "--input",
            &format!("f={f_text}"),
            "--input",
            &format!("d={d_text}"),
        ])));
        assert_eq!(back, text);
    }
    let e = fails(
        s.pgc()
            .args(["eval", &echo, "--input", "f=1.5.5", "--input", "d=[0,0,0]"]),
    );
    // Named and placed, the value itself not shown (inputs are secret).
    assert!(
        e.contains(
            "INPUT_A_f: cannot read the value given (not shown): not a number at character 1"
        ) && !e.contains("1.5.5"),
        "{e}"
    );
    let info = json_of(&run_ok(s.pgc().args(["info", &echo, "--json"])));
    assert_eq!(info["inputs"][0]["type"], "float");
    assert_eq!(info["inputs"][1]["type"], "double[3]");
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgc starts")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn two_processes_each_see_only_their_outputs() {
    let s = Scratch::new("run");
    let src = s.file("mixed.c", MIXED);
    run_ok(s.pgc().args(["compile", &src, "-D", "N=7"]));
    let pgc = s.path("mixed.pgc");
    let addr = format!("127.0.0.1:{}", free_port());
    let a_inputs = s.file("a.json", r#"{"v": [1, 2, -3]}"#);
    let psk = support::test_psk();
    let a = spawn(s.pgc().args([
        "run", &pgc, "--party", "a", "--listen", &addr, "--inputs", &a_inputs, "--json", "--psk",
        &psk,
    ]));
    // B compiles the source itself with the same options: the same circuit.
    let b = spawn(s.pgc().args([
        "run",
        &src,
        "-D",
        "N=7",
        "--party",
        "b",
        "--connect",
        &addr,
        "--input",
        "p={x: 10, y: [2, 255]}",
        "--input",
        "k=5000",
        "--json",
        "--psk",
        &psk,
    ]));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for (who, out) in [("a", &a), ("b", &b)] {
        assert!(
            out.status.success(),
            "party {who}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (ja, jb) = (json_of(&a), json_of(&b));
    assert_eq!(
        ja["outputs"],
        json!({"OUTPUT_sum": 10, "OUTPUT_A_dot": 512, "OUTPUT_grid": [[-1, -3], [7, 10]]})
    );
    assert_eq!(
        jb["outputs"],
        json!({"OUTPUT_sum": 10, "OUTPUT_B_big": 1, "OUTPUT_grid": [[-1, -3], [7, 10]]})
    );
    assert_eq!(ja["party"], "A");
}

#[test]
fn input_mistakes_are_clear_errors() {
    let s = Scratch::new("errors");
    let src = s.file("millionaires.c", MILLIONAIRES);
    let e = fails(s.pgc().args(["local", &src, "--a", "income=1"]));
    assert!(
        e.contains("missing input INPUT_B_income (int32_t) of party B"),
        "{e}"
    );
    let e = fails(
        s.pgc()
            .args(["local", &src, "--a", "income=3000000000", "--b", "income=1"]),
    );
    assert!(
        e.contains("INPUT_A_income: the value given is out of range for int32_t")
            && !e.contains("3000000000")
            && e.contains("-2147483648 to 2147483647"),
        "{e}"
    );
    let e = fails(s.pgc().args(["eval", &src, "--input", "income=1"]));
    assert!(e.contains("ambiguous"), "{e}");
    let e = fails(s.pgc().args([
        "run",
        &src,
        "--party",
        "a",
        "--listen",
        "127.0.0.1:0",
        "--input",
        "INPUT_B_income=4",
        "--insecure-plaintext",
    ]));
    assert!(e.contains("INPUT_B_income is an input of party B"), "{e}");
    let e = fails(s.pgc().args(["local", &src, "--a", "5", "--b", "6"]));
    assert!(e.contains("NAME=VALUE"), "{e}");
}

#[test]
fn compile_errors_name_file_line_and_column() {
    let s = Scratch::new("syntax");
    let src = s.file(
        "bad.c",
        "void mpc_main(int INPUT_A_x, int *OUTPUT_r)\n{\n    *OUTPUT_r = INPUT_A_x +;\n}\n",
    );
    for cmd in [vec!["compile", &src], vec!["local", &src, "--a", "x=1"]] {
        let e = fails(s.pgc().args(&cmd));
        assert!(e.contains("bad.c:3:"), "{e}");
    }
    assert!(!Path::new(&s.path("bad.pgc")).exists());
}

#[test]
fn bristol_export_computes_the_same() {
    let s = Scratch::new("bristol");
    let src = s.file("millionaires.c", MILLIONAIRES);
    let out = run_ok(s.pgc().args(["compile", &src, "--emit", "bristol"]));
    assert!(stdout(&out).contains("millionaires.txt"));
    let txt = s.path("millionaires.txt");
    // 7 > 5 in 32-bit lsb0: output value 1.
    let j = json_of(&run_ok(
        s.pgc()
            .args(["eval", &txt, "--input", "7", "--input", "5", "--json"]),
    ));
    assert_eq!(j["outputs"], json!(["0x00000001"]));
    let j = json_of(&run_ok(s.pgc().args([
        "local",
        &txt,
        "--a",
        "0xffffffff",
        "--b",
        "0",
        "--json",
        "-q",
    ])));
    assert_eq!(j["outputs"], json!(["0x00000000"]), "-1 > 0 is false");
}

#[test]
fn compiled_programs_are_cached_and_damaged_files_refused() {
    let s = Scratch::new("cache");
    let src = s.file("millionaires.c", MILLIONAIRES);
    let entries = || {
        std::fs::read_dir(s.cache().join("pgc"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    run_ok(
        s.pgc()
            .args(["local", &src, "--a", "income=1", "--b", "income=2", "-q"]),
    );
    assert_eq!(entries(), 1);
    run_ok(s.pgc().args(["info", &src]));
    assert_eq!(entries(), 1, "same source and options: a cache hit");
    run_ok(s.pgc().args(["info", &src, "--optimize", "depth"]));
    assert_eq!(entries(), 2, "other options: another entry");
    run_ok(s.pgc().args(["info", &src, "-D", "UNUSED=1", "--no-cache"]));
    assert_eq!(
        entries(),
        2,
        "--no-cache neither reads nor writes the cache"
    );

    run_ok(s.pgc().args(["compile", &src]));
    let pgc = s.path("millionaires.pgc");
    let mut bytes = std::fs::read(&pgc).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0x55;
    std::fs::write(&pgc, &bytes).unwrap();
    let e = fails(s.pgc().args(["info", &pgc]));
    assert!(e.contains("millionaires.pgc") && e.contains("byte"), "{e}");
    std::fs::write(&pgc, &bytes[..n / 2]).unwrap();
    let e = fails(s.pgc().args(["info", &pgc]));
    assert!(e.contains("truncated"), "{e}");
}

#[test]
fn demo_includes_the_compiled_c_example() {
    let out = run_ok(Command::new(env!("CARGO_BIN_EXE_pgc")).args(["demo", "--json"]));
    let j = json_of(&out);
    let c = j["demos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "millionaires.c")
        .expect("the C example ran");
    assert_eq!(c["OUTPUT_result"], 0);
    assert_eq!(c["correct"], true);
    let compact = j["demos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "edit_distance_large.c --compact always")
        .expect("the compact example ran");
    assert_eq!(compact["correct"], true);
    assert!(compact["OUTPUT_distance"].as_u64().unwrap() <= 200);
}

/// Runs A (listening) and B (connecting) with these argument lists, over plaintext (what
/// is tested here is the handshake's content, not the channel); returns their outputs.
fn run_pair(s: &Scratch, a: &[&str], b: &[&str]) -> (Output, Output) {
    let addr = format!("127.0.0.1:{}", free_port());
    let pa = spawn(
        s.pgc()
            .args([
                "run",
                "--party",
                "a",
                "--listen",
                &addr,
                "--insecure-plaintext",
            ])
            .args(a),
    );
    let pb = spawn(
        s.pgc()
            .args([
                "run",
                "--party",
                "b",
                "--connect",
                &addr,
                "--insecure-plaintext",
            ])
            .args(b),
    );
    (
        pa.wait_with_output().unwrap(),
        pb.wait_with_output().unwrap(),
    )
}

fn both_fail_with(a: &Output, b: &Output, here_a: &str, here_b: &str) {
    for (who, out, want) in [("a", a, here_a), ("b", b, here_b)] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "party {who} must fail");
        assert!(out.stdout.is_empty(), "party {who} printed {}", stdout(out));
        assert!(err.contains(want), "party {who}: {err}");
    }
}

#[test]
fn parties_reading_values_differently_are_refused_at_the_handshake() {
    let s = Scratch::new("reading");
    // The same gates (a 32-bit addition), but B reads its input as unsigned.
    let signed = s.file(
        "signed.c",
        "void mpc_main(int INPUT_A_x, int INPUT_B_x, int *OUTPUT_s) { *OUTPUT_s = INPUT_A_x + INPUT_B_x; }\n",
    );
    let unsigned = s.file(
        "unsigned.c",
        "void mpc_main(int INPUT_A_x, unsigned INPUT_B_x, int *OUTPUT_s) { *OUTPUT_s = INPUT_A_x + INPUT_B_x; }\n",
    );
    for mode in ["none", "auto"] {
        let (a, b) = run_pair(
            &s,
            &[&signed, "--input", "x=5", "--parallel", mode],
            &[&unsigned, "--input", "x=7", "--parallel", mode],
        );
        both_fail_with(
            &a,
            &b,
            "the programs' interfaces differ: INPUT_B_x is int32_t here, uint32_t at the peer",
            "the programs' interfaces differ: INPUT_B_x is uint32_t here, int32_t at the peer",
        );
        // A Bristol circuit: the same gates, bits read in another order.
        let (a, b) = run_pair(
            &s,
            &[
                "builtin:millionaires",
                "--input",
                "5",
                "--bit-order",
                "msb0",
                "--parallel",
                mode,
            ],
            &["builtin:millionaires", "--input", "7", "--parallel", mode],
        );
        both_fail_with(
            &a,
            &b,
            "the parties read values differently: bit order msb0 here, lsb0 at the peer",
            "the parties read values differently: bit order lsb0 here, msb0 at the peer",
        );
    }
}

/// Text in and out: `char` ports are named `char` and print as characters and strings,
/// `unsigned char`/`signed char` ports as `uint8_t`/`int8_t` numbers.
const NAMES: &str = "\
/* names.c: which name sorts first (bytes compared as char), and the first letters. */
void mpc_main(char INPUT_A_name[8], char INPUT_B_name[8], char OUTPUT_first[8],
              char *OUTPUT_initial, unsigned char OUTPUT_bytes[2], signed char *OUTPUT_n)
{
    int a_first = 1, decided = 0;
    for (int i = 0; i < 8; i++)
        if (!decided && INPUT_A_name[i] != INPUT_B_name[i]) {
            a_first = INPUT_A_name[i] < INPUT_B_name[i];
            decided = 1;
        }
    for (int i = 0; i < 8; i++)
        OUTPUT_first[i] = a_first ? INPUT_A_name[i] : INPUT_B_name[i];
    *OUTPUT_initial = OUTPUT_first[0];
    OUTPUT_bytes[0] = INPUT_A_name[0];
    OUTPUT_bytes[1] = INPUT_B_name[0];
    *OUTPUT_n = -1;
}
";

#[test]
fn char_ports_are_char_and_print_as_text() {
    let s = Scratch::new("chars");
    let src = s.file("names.c", NAMES);
    let info = json_of(&run_ok(s.pgc().args(["info", &src, "--json"])));
    let types = |ports: &serde_json::Value| -> Vec<String> {
        let ports = ports.as_array().unwrap();
        ports
            .iter()
            .map(|p| p["type"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(types(&info["inputs"]), ["char[8]", "char[8]"]);
    assert_eq!(
        types(&info["outputs"]),
        ["char[8]", "char", "uint8_t[2]", "int8_t"]
    );
    let text = stdout(&run_ok(s.pgc().args(["info", &src])));
    assert!(text.contains("char[8] INPUT_A_name"), "{text}");
    assert!(text.contains("char OUTPUT_initial"), "{text}");

    let local = |a: &str, b: &str| {
        stdout(&run_ok(s.pgc().args([
            "local",
            &src,
            "--a",
            &format!("name={a}"),
            "--b",
            &format!("name={b}"),
            "-q",
        ])))
    };
    assert_eq!(
        local("\"kitten\"", "\"kite\""),
        "OUTPUT_first = \"kite\"\nOUTPUT_initial = 'k'\nOUTPUT_bytes = [107, 107]\nOUTPUT_n = -1\n"
    );
    // Bytes that are not printable ASCII print escaped (none reaches the terminal raw),
    // inner zero bytes as \0, and what prints reads back as the same value.
    let out = local("\"a\\x1b\\0b\\xff\"", "\"b\"");
    assert_eq!(
        out,
        "OUTPUT_first = \"a\\x1b\\0b\\xff\"\nOUTPUT_initial = 'a'\nOUTPUT_bytes = [97, 98]\nOUTPUT_n = -1\n"
    );
    let printed = out
        .lines()
        .next()
        .unwrap()
        .strip_prefix("OUTPUT_first = ")
        .unwrap();
    assert_eq!(
        local(printed, "\"b\""),
        out,
        "the printed string is the value given"
    );
    let last = local("[120, 0, 0, 0, 0, 0, 0, 0x80]", "\"y\"");
    assert!(
        last.starts_with("OUTPUT_first = \"x\\0\\0\\0\\0\\0\\0\\x80\"\n"),
        "{last}"
    );

    // --json keeps numbers, as for any integer.
    let j = json_of(&run_ok(s.pgc().args([
        "local",
        &src,
        "--a",
        "name=\"kitten\"",
        "--b",
        "name=\"kite\"",
        "--json",
    ])));
    assert_eq!(
        j["outputs"],
        json!({
            "OUTPUT_first": [107, 105, 116, 101, 0, 0, 0, 0],
            "OUTPUT_initial": 107,
            "OUTPUT_bytes": [107, 107],
            "OUTPUT_n": -1,
        })
    );

    // Errors name the type as char.
    let err = fails(s.pgc().args([
        "local",
        &src,
        "--a",
        "name=\"kittens!!\"",
        "--b",
        "name=\"kite\"",
    ]));
    assert!(
        err.contains("expected a string of at most 8 byte(s) for char[8]"),
        "{err}"
    );

    // Two processes with the same program agree on its interface; a peer whose port is
    // `signed char` (the same bits) is told apart.
    let (a, b) = run_pair(
        &s,
        &[&src, "--input", "name=\"kitten\""],
        &[&src, "--input", "name=\"kite\""],
    );
    for out in [&a, &b] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout(out).contains("OUTPUT_first = \"kite\""),
            "{}",
            stdout(out)
        );
    }
    let signed = s.file(
        "signed.c",
        &NAMES.replace("char INPUT_B_name", "signed char INPUT_B_name"),
    );
    let (a, b) = run_pair(
        &s,
        &[&src, "--input", "name=\"kitten\""],
        &[&signed, "--input", "name=\"kite\""],
    );
    both_fail_with(
        &a,
        &b,
        "INPUT_B_name is char[8] here, int8_t[8] at the peer",
        "INPUT_B_name is int8_t[8] here, char[8] at the peer",
    );
}

/// The commands of examples/README.md on lines containing `needle`, each with the answer
/// its line states as `(here N)`.
fn readme_commands<'r>(readme: &'r str, needle: &str) -> Vec<(&'r str, i64)> {
    readme
        .lines()
        .filter(|l| l.contains(needle))
        .map(|line| {
            let cmd = line.split('`').nth(1).unwrap();
            let want = line
                .split("(here ")
                .nth(1)
                .and_then(|h| h.split(')').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no `(here N)` in {line}"));
            (cmd, want)
        })
        .collect()
}

/// The floating-point commands in examples/README.md (private proximity testing) print the
/// answers it states, and the inputs they give are what the examples' own PREPARE_INPUTS
/// code prints for the stated positions.
#[test]
fn examples_readme_proximity_commands() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("examples/README.md")).unwrap();
    let s = Scratch::new("proximity-readme");
    let mut checked = 0;
    for (cmd, want) in readme_commands(&readme, "`pgc local examples/proximity_") {
        let args: Vec<&str> = cmd.split_whitespace().skip(1).collect();
        let out = run_ok(s.pgc().current_dir(&root).args(&args).arg("--quiet"));
        let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(got, format!("OUTPUT_near = {want}"), "{cmd}");
        checked += 1;
    }
    assert_eq!(checked, 3, "UTM, ECEF and haversine each have a command");

    // The ECEF and haversine inputs come from the examples' local preparation.
    if Command::new("gcc").arg("--version").output().is_err() {
        eprintln!("gcc not found: the PREPARE_INPUTS check is skipped");
        return;
    }
    for (file, args, flag) in [
        ("proximity_ecef.c", ["49.0069", "8.4037", ""], "--a"),
        ("proximity_ecef.c", ["49.0100", "8.4100", ""], "--b"),
        ("proximity_haversine.c", ["49.0069", "8.4037", "a"], "--a"),
        ("proximity_haversine.c", ["49.0100", "8.4100", "b"], "--b"),
    ] {
        let exe = s.path(&format!("prepare-{file}"));
        run_ok(Command::new("gcc").args([
            "-D",
            "PREPARE_INPUTS",
            "-o",
            &exe,
            root.join("examples").join(file).to_str().unwrap(),
            "-lm",
        ]));
        let printed = run_ok(Command::new(&exe).args(args.iter().filter(|a| !a.is_empty())));
        let printed = String::from_utf8_lossy(&printed.stdout);
        for kv in printed.split_whitespace() {
            assert!(
                readme.contains(&format!("{flag} {kv}")),
                "examples/README.md should give `{flag} {kv}` ({file} {args:?})"
            );
        }
    }
}

/// The edit-distance commands of examples/README.md (strings as `'text="kitten"'`, shell
/// quoting included) print the distance they state.
#[test]
fn examples_readme_edit_distance_commands() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("examples/README.md")).unwrap();
    let s = Scratch::new("edit-distance-readme");
    let mut checked = 0;
    for (cmd, want) in readme_commands(&readme, "`pgc local examples/edit_distance") {
        // Through the shell, as a user pastes it: the quotes are part of the example.
        let args = cmd.strip_prefix("pgc ").unwrap();
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("\"$PGC\" {args} --quiet"))
            .current_dir(&root)
            .env("PGC", env!("CARGO_BIN_EXE_pgc"))
            .env("XDG_CACHE_HOME", s.cache())
            .output()
            .expect("sh starts");
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = stdout(&out);
        let value = got.trim().rsplit(" = ").next().unwrap_or_default();
        assert_eq!(value, want.to_string(), "{cmd}: {got}");
        checked += 1;
    }
    assert_eq!(
        checked, 3,
        "edit_distance, _textbook and _large each have a command"
    );
}

/// AES's rounds: a parallel S-box loop per round and XOR-only loops between them. The
/// listing shows the repeated region once with its count and the AND-free ones on one line,
/// not a line per region (examples/aes128.c printed 64).
#[test]
fn repeated_and_xor_only_regions_are_listed_once() {
    let s = Scratch::new("regions");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/aes128.c");
    let src = src.to_str().unwrap();
    let text = stdout(&run_ok(s.pgc().args([
        "compile",
        src,
        "-o",
        &s.path("a.pgc"),
    ])));
    let region_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("region")).collect();
    assert_eq!(region_lines.len(), 2, "{text}");
    assert!(
        region_lines[0].contains("16 independent instances × 104 ANDs, 8 such regions"),
        "{text}"
    );
    assert!(region_lines[1].contains("without AND gates"), "{text}");
    let info = stdout(&run_ok(s.pgc().args(["info", &s.path("a.pgc")])));
    assert!(info.contains("; 8 such regions"), "{info}");
    assert!(info.contains("without AND gates"), "{info}");
}
