//! A new user's mistakes end in one clear error line naming what and where, never a panic
//! or a silent wait: a C program under another name, inputs that do not fit, an output
//! folder that is not there, a peer that is not there; and the help that should have
//! prevented them says what README and docs/ say.

use std::process::Output;

mod support;
use support::Scratch;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The one `error:` line of a failed command, asserting there is no panic.
fn error_line(out: &Output) -> String {
    let err = stderr(out);
    assert!(!out.status.success(), "must fail: {err}");
    assert!(!err.contains("panicked"), "no panic: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    errors[0].to_string()
}

#[test]
fn a_c_program_under_another_name_is_said_to_have_been_read_as_bristol() {
    let s = Scratch::new("mistakes", "ext");
    let source = "void mpc_main(int INPUT_A_x, int INPUT_B_x, int *OUTPUT_r)\n\
                  { *OUTPUT_r = INPUT_A_x > INPUT_B_x; }\n";
    std::fs::write(s.0.join("prog.cpp"), source).unwrap();
    std::fs::write(s.0.join("notes.txt"), "").unwrap();
    // A .pgc file is known by its contents, not its name.
    std::fs::write(s.0.join("prog.pgc"), source).unwrap();
    for (file, cause) in [
        ("prog.cpp", "malformed first header"),
        ("notes.txt", "file ends before"),
        ("prog.pgc", "malformed first header"),
    ] {
        for cmd in [
            vec!["info", file],
            vec!["eval", file, "--input", "1"],
            vec!["local", file, "--a", "x=1", "--b", "x=2"],
        ] {
            let out = s.pgc().args(&cmd).output().unwrap();
            let line = error_line(&out);
            assert!(
                line.contains(&format!("{file}: line 1: ")),
                "{cmd:?}: {line}"
            );
            assert!(line.contains(cause), "{cmd:?}: {line}");
            assert!(
                line.ends_with(&format!(
                    " ({file} is not a pgc circuit file, and pgc compiles only files named *.c \
                     (C) or *.v, *.sv (Verilog), so it was read as a Bristol circuit)"
                )),
                "{cmd:?}: {line}"
            );
        }
    }
    // A real Bristol file that is wrong further down gets no such hint: its name is not
    // the problem.
    std::fs::write(s.0.join("bad.txt"), "1 3\n2 1 1\n1 1\n\n2 1 0 1 2 FOO\n").unwrap();
    let out = s.pgc().args(["info", "bad.txt"]).output().unwrap();
    let line = error_line(&out);
    assert!(line.contains("bad.txt: line "), "{line}");
    assert!(!line.contains("is not a pgc circuit file"), "{line}");
}

#[test]
fn eval_names_inputs_that_share_a_short_name_in_full() {
    let s = Scratch::new("mistakes", "shared");
    std::fs::write(
        s.0.join("sum.c"),
        "void mpc_main(unsigned char INPUT_A_c, unsigned char INPUT_B_c, int *OUTPUT_r)\n\
         { *OUTPUT_r = INPUT_A_c + INPUT_B_c; }\n",
    )
    .unwrap();
    // `eval` takes both parties' inputs with one flag, so `c` names neither: what the
    // errors suggest must work as given.
    let out = s
        .pgc()
        .args(["eval", "sum.c", "--input", "INPUT_A_c=1", "--input", "z=3"])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(
        line.contains(
            "no input named 'z'; it expects --input INPUT_A_c=VALUE (uint8_t), \
             --input INPUT_B_c=VALUE (uint8_t)"
        ),
        "{line}"
    );
    let out = s
        .pgc()
        .args(["eval", "sum.c", "--input", "INPUT_A_c=1"])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(
        line.contains(
            "missing input INPUT_B_c (uint8_t) of party B (give it with --input INPUT_B_c=VALUE)"
        ),
        "{line}"
    );
    let out = support::run_ok(s.pgc().args([
        "eval",
        "sum.c",
        "--input",
        "INPUT_A_c=1",
        "--input",
        "INPUT_B_c=2",
    ]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "OUTPUT_r = 3\n");
    // Each party's own flag keeps the short name.
    let out = s
        .pgc()
        .args(["local", "sum.c", "--a", "c=1"])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(line.contains("(give it with --b c=VALUE)"), "{line}");
}

#[test]
fn obvious_mistakes_end_in_one_error_line_naming_what_and_where() {
    let s = Scratch::new("mistakes", "obvious");
    std::fs::write(
        s.0.join("chars.c"),
        "void mpc_main(char INPUT_A_c, char INPUT_B_c, int *OUTPUT_r)\n\
         { *OUTPUT_r = INPUT_A_c < INPUT_B_c; }\n",
    )
    .unwrap();
    std::fs::write(s.0.join("cut.json"), "{\"c\": 5").unwrap();
    std::fs::write(
        s.0.join("wide.json"),
        "{\"INPUT_A_c\": 300, \"INPUT_B_c\": 1}",
    )
    .unwrap();
    let cases: [(&[&str], &str); 7] = [
        (
            &["local", "nosuch.c", "--a", "c=1"],
            "cannot read nosuch.c: No such file or directory",
        ),
        (
            &["local", "chars.c", "--inputs"],
            "a value is required for '--inputs <FILE.json>'",
        ),
        (
            &["local", "chars.c", "--inputs", "cut.json"],
            "cut.json is not valid JSON: EOF while parsing an object at line 1",
        ),
        (
            &["local", "chars.c", "--a", "c=300", "--b", "c=1"],
            "INPUT_A_c: the value given is out of range for char (allowed: -128 to 127",
        ),
        (
            &["eval", "chars.c", "--inputs", "wide.json"],
            "in wide.json: INPUT_A_c: the value given is out of range for char",
        ),
        (
            &["local", "chars.c", "--a", "c=1", "--b", "d=1"],
            "--b d=…: the program has no input named 'd'; it expects --b c=VALUE (char)",
        ),
        (
            &["run", "chars.c", "--party", "c", "--listen", "127.0.0.1:0"],
            "invalid value 'c' for '--party <PARTY>'",
        ),
    ];
    for (args, expected) in cases {
        let out = s.pgc().args(args).output().unwrap();
        let line = error_line(&out);
        assert!(line.contains(expected), "{args:?}: {line}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn compiling_into_a_missing_directory_is_refused_before_compiling() {
    let s = Scratch::new("mistakes", "outdir");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/millionaires.c");
    for emit in ["pgc", "bristol"] {
        let out = s
            .pgc()
            .args(["compile", source, "--emit", emit, "-o", "no/such/dir/m.out"])
            .output()
            .unwrap();
        let line = error_line(&out);
        assert_eq!(
            line, "error: cannot write no/such/dir/m.out: there is no directory no/such/dir",
            "{emit}"
        );
        // Refused before compiling: no summary was printed.
        assert!(out.stdout.is_empty(), "{emit}");
    }
}

#[test]
fn connecting_to_a_closed_port_says_where_it_connects_and_gives_up_at_the_timeout() {
    let s = Scratch::new("mistakes", "closed");
    // A port that was free a moment ago and has no listener now.
    let addr = support::loopback_addr();
    let out = s
        .pgc()
        .args([
            "run",
            "builtin:millionaires",
            "--party",
            "b",
            "--input",
            "7",
        ])
        .args(["--connect", &addr, "--insecure-plaintext", "--timeout", "1"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "party B: connecting to {addr} (retrying for up to 1 s, --timeout)"
        )),
        "{err}"
    );
    let line = error_line(&out);
    assert!(
        line.contains(&format!(
            "nobody accepted a connection at {addr} within 1.0 s"
        )),
        "{line}"
    );
    assert!(out.stdout.is_empty(), "no output");
}

#[test]
fn help_texts_teach_what_the_docs_say() {
    let s = Scratch::new("mistakes", "help");
    // The text with its line wrapping undone.
    let help = |args: &[&str]| {
        let out = support::run_ok(s.pgc().args(args));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    // `pgc keygen --help` explains the fingerprint exchange, not only the flags.
    let keygen = help(&["keygen", "--help"]);
    assert!(
        keygen.contains("Give your fingerprint to the other party"),
        "{keygen}"
    );
    // Dual execution's leak is stated as README states it.
    let run = help(&["run", "--help"]);
    assert!(run.contains("a yes/no question of its choosing"), "{run}");
    assert!(run.contains("with --serve, one bit per run"), "{run}");
    // The example's macro is the one examples/biomatch.c reads.
    assert!(run.contains("-D BIOMATCH_N=512"), "{run}");
    let biomatch = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/biomatch.c"
    ))
    .unwrap();
    assert!(biomatch.contains("#ifndef BIOMATCH_N"));
    // Flags README names exist: compile --quiet, bench garbling --repeat.
    let compile = help(&["compile", "--help"]);
    assert!(compile.contains("-q, --quiet"), "{compile}");
    // Defaults stated in the help are the compiler's, and --format lists its values.
    let unroll = pgc_compiler::Options::default().unroll_limit;
    assert!(
        compile.contains(&format!("stops with an error [default: {unroll}]")),
        "{compile}"
    );
    let info = help(&["info", "--help"]);
    assert!(
        info.contains("bristol-fashion (Bristol Fashion, basic or MAND) or bristol"),
        "{info}"
    );
    assert!(help(&["bench", "garbling", "--help"]).contains("[alias: --repeat]"));
}

#[test]
fn a_parallel_mode_on_one_side_only_is_named_as_the_cause_on_both_sides() {
    let s = Scratch::new("mistakes", "forms");
    let program = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/millionaires.c");
    let (a, b) = support::two_parties(
        &s,
        program,
        &["--input", "income=5", "--parallel", "cgp"],
        &["--input", "income=3", "--parallel", "none"],
    );
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for (side, out) in [("A", &a), ("B", &b)] {
        let line = error_line(out);
        assert!(line.contains("different forms"), "party {side}: {line}");
        assert!(line.contains("same --parallel"), "party {side}: {line}");
    }
    assert!(error_line(&a).contains("here phases and regions for --parallel cgp"));
    assert!(error_line(&b).contains("here a gate list for the sequential protocol"));
}

/// A mistyped time limit for the preprocessor or Yosys is an error naming the variable, not
/// silently the default.
#[test]
fn a_time_limit_that_is_not_a_number_is_refused() {
    let s = Scratch::new("mistakes", "timeouts");
    std::fs::write(
        s.0.join("prog.c"),
        "void mpc_main(int INPUT_A_x, int INPUT_B_x, int *OUTPUT_r) { *OUTPUT_r = INPUT_A_x < INPUT_B_x; }\n",
    )
    .unwrap();
    let out = s
        .pgc()
        .args(["compile", "prog.c", "-o", "prog.pgc"])
        .env("PGC_CPP_TIMEOUT", "2min")
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(
        line.contains("PGC_CPP_TIMEOUT=2min is not a number of seconds"),
        "{line}"
    );
    // Unset or empty, the default applies.
    let out = s
        .pgc()
        .args(["compile", "prog.c", "-o", "prog.pgc"])
        .env("PGC_CPP_TIMEOUT", "")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Numbers a run cannot use are refused with the flag's name: a time limit so long that a
/// deadline would overflow (it panicked), a rate that rounds to 0 bit/s (it meant no limit),
/// a delay past the time limit (the run waited out the delay, up to an hour, to fail).
#[test]
fn run_limits_out_of_range_are_refused_by_name() {
    let s = Scratch::new("mistakes", "limits");
    for (flag, value, expected) in [
        (
            "--timeout",
            "1e100",
            "--timeout must be a positive number of seconds, at most 1e9",
        ),
        (
            "--timeout",
            "1e19",
            "--timeout must be a positive number of seconds, at most 1e9",
        ),
        (
            "--timeout",
            "nan",
            "--timeout must be a positive number of seconds",
        ),
        (
            "--rate-limit",
            "1e-7",
            "--rate-limit must be a positive number of megabits per second",
        ),
        // At the default --timeout of 60 s (it ran for the whole delay before failing).
        (
            "--latency",
            "3599999",
            "--latency 3599999 ms delays every message past --timeout 60 s",
        ),
        (
            "--latency",
            "4e6",
            "--latency must be a number of milliseconds",
        ),
    ] {
        let out = s
            .pgc()
            .args([
                "local",
                "builtin:millionaires",
                "--a",
                "1",
                "--b",
                "2",
                flag,
                value,
            ])
            .output()
            .unwrap();
        let line = error_line(&out);
        assert!(line.contains(expected), "{flag} {value}: {line}");
        assert!(out.stdout.is_empty(), "{flag} {value}");
    }
}

/// `--connect`/`--listen` without a port (or with one out of range) is refused as the flag
/// is read, before the program compiles, with the form to use.
#[test]
fn an_address_without_a_port_is_refused_with_the_form_to_use() {
    let s = Scratch::new("mistakes", "address");
    for (flag, addr, expected) in [
        ("--connect", "127.0.0.1", "no port: give HOST:PORT"),
        ("--connect", "[::1]", "no port: give HOST:PORT"),
        (
            "--connect",
            "machine1:0",
            "'0' is not a port number (1 to 65535)",
        ),
        (
            "--listen",
            "0.0.0.0:70000",
            "'70000' is not a port number (0 to 65535)",
        ),
        ("--listen", ":7000", "no host before ':7000'"),
    ] {
        let out = s
            .pgc()
            .args([
                "run",
                "nosuch.c",
                "--party",
                "b",
                "--insecure-plaintext",
                flag,
                addr,
            ])
            .output()
            .unwrap();
        let line = error_line(&out);
        assert!(
            line.contains(&format!("invalid value '{addr}' for '{flag} <ADDR>'")),
            "{line}"
        );
        assert!(line.contains(expected), "{flag} {addr}: {line}");
    }
}

/// Text quoted from a file (a Bristol header, the preprocessor's `#error`) reaches the
/// terminal with its control characters escaped: a hostile file cannot send escape
/// sequences that retitle the terminal or hide the error.
#[test]
fn control_characters_quoted_from_files_are_escaped() {
    let s = Scratch::new("mistakes", "escapes");
    std::fs::write(s.0.join("evil.txt"), "1 3\x1b[2J\x1b]0;owned\x07\u{202e}\n").unwrap();
    std::fs::write(
        s.0.join("evil.c"),
        "#error \x1b]0;owned\x07\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r) { *OUTPUT_r = INPUT_A_x; }\n",
    )
    .unwrap();
    for (file, expected) in [
        ("evil.txt", "found '1 3\\x1b[2J\\x1b]0;owned\\x07\\u{202e}'"),
        ("evil.c", "#error \\x1b]0;owned\\x07"),
    ] {
        let out = s.pgc().args(["info", file]).output().unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "{file}: {err}");
        assert!(err.contains(expected), "{file}: {err}");
        assert!(
            !err.contains(['\x1b', '\x07', '\u{202e}']),
            "{file}: a control character reached stderr: {err:?}"
        );
    }
}

/// A `--psk` file or key that other users of the machine can read is used, with a note that
/// says so and how to fix it; a private one (as `pgc keygen` writes it) gets no note.
#[cfg(unix)]
#[test]
fn a_secret_file_others_can_read_is_noted() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("mistakes", "modes");
    let psk = s.0.join("shared.psk");
    std::fs::write(&psk, format!("pgc-secret1-{}\n", "3c".repeat(32))).unwrap();
    for (mode, noted) in [(0o644, true), (0o640, true), (0o600, false)] {
        std::fs::set_permissions(&psk, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = s
            .pgc()
            .args([
                "run",
                "builtin:millionaires",
                "--party",
                "a",
                "--input",
                "1",
            ])
            .args([
                "--listen",
                "127.0.0.1:0",
                "--psk",
                "shared.psk",
                "--timeout",
                "0.2",
            ])
            .output()
            .unwrap();
        let err = stderr(&out);
        let note = format!(
            "party A: note: shared.psk can be read or changed by other users of this machine \
             (mode {mode:o}): whoever reads it can take either party's place in a run; make it \
             private with chmod 600 shared.psk"
        );
        assert_eq!(err.contains(&note), noted, "mode {mode:o}: {err}");
        // Only the note: the run goes on (and ends waiting for a peer that never comes).
        assert!(error_line(&out).contains("no peer connected"), "{err}");
    }
}

/// A file that never ends (a device, a pipe) named as a circuit, program, inputs file, key or
/// secret is refused at once by what it is, with the default --max-memory and under a 1 GiB
/// address space: a device or pipe is read only as far as such a file can go (and not past
/// a zero byte, which no text file holds), a key or secret only as far as one can be. These
/// used to be read up to --max-memory, half the machine's memory, before being refused.
#[cfg(target_os = "linux")]
/// `pgc eval prog.pgc --inputs /dev/stdin` under the 1 GiB limit, all three streams piped.
fn eval_inputs_from_a_pipe(s: &Scratch) -> std::process::Child {
    s.pgc_in_1gib()
        .args(["eval", "prog.pgc", "--inputs", "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_file_that_never_ends_is_refused_at_once() {
    let s = Scratch::new("mistakes", "endless");
    std::os::unix::fs::symlink("/dev/zero", s.0.join("endless.c")).unwrap();
    std::fs::write(
        s.0.join("prog.c"),
        "void mpc_main(int INPUT_A_x, int *OUTPUT_r) { *OUTPUT_r = INPUT_A_x; }\n",
    )
    .unwrap();
    // Compiled beforehand: the compiler's own stack is larger than the limit below.
    support::run_ok(s.pgc().args(["compile", "prog.c"]));
    let key = support::run_ok(s.pgc().args(["keygen", "--out", "key.pem"]));
    let fingerprint = String::from_utf8_lossy(&key.stdout).trim().to_string();
    let run = [
        "run",
        "builtin:millionaires",
        "--party",
        "a",
        "--listen",
        "127.0.0.1:0",
    ];
    let zero = "is a character device that gave a zero byte at byte 1, which no text file holds";
    let cases: [(Vec<&str>, String); 5] = [
        (
            vec!["info", "/dev/zero"],
            format!("cannot read circuit file /dev/zero: it {zero}"),
        ),
        (
            vec!["eval", "endless.c"],
            format!("cannot read endless.c: it {zero}"),
        ),
        (
            vec!["eval", "prog.pgc", "--inputs", "/dev/zero"],
            format!("cannot read inputs file /dev/zero: it {zero}"),
        ),
        (
            [&run[..], &["--psk", "/dev/zero", "--input", "1"]].concat(),
            "/dev/zero is larger than a shared secret file can be (at most 1024 bytes)".into(),
        ),
        (
            [
                &run[..],
                &[
                    "--peer-key",
                    fingerprint.as_str(),
                    "--key",
                    "/dev/zero",
                    "--input",
                    "1",
                ],
            ]
            .concat(),
            "/dev/zero is larger than a key file can be (at most 65536 bytes)".into(),
        ),
    ];
    for (args, expected) in cases {
        let out = s.pgc_in_1gib().args(&args).output().unwrap();
        let line = error_line(&out);
        assert!(line.contains(&expected), "{args:?}: {line}");
    }

    // Text that never ends through a pipe: read as far as an inputs file for one int can
    // need (1 MiB and 64 bytes per input bit), then refused.
    let mut child = eval_inputs_from_a_pipe(&s);
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let spaces = [b' '; 4096];
        // Until pgc closes the pipe.
        while stdin.write_all(&spaces).is_ok() {}
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let line = error_line(&out);
    assert!(
        line.contains(
            "cannot read inputs file /dev/stdin: it is a pipe that did not end within 1.0 MiB, \
             more than such a file can need here"
        ),
        "{line}"
    );

    // Through a pipe, a real inputs file still works.
    let mut child = eval_inputs_from_a_pipe(&s);
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"{\"x\": 5}\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "OUTPUT_r = 5\n");

    // A regular file is measured before it is read.
    let big = std::fs::File::create(s.0.join("big.txt")).unwrap();
    big.set_len(2 << 20).unwrap();
    let out = s
        .pgc()
        .args(["info", "big.txt", "--max-memory", "1M"])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(
        line.contains(
            "cannot read circuit file big.txt: it is 2.0 MiB (2,097,152 bytes), more than \
             --max-memory 1.0 MiB"
        ),
        "{line}"
    );
}

/// The peer's host name not resolving yet (its container not started) is retried until
/// --timeout, as a refused connection is, with a note, and then named in the error. It used
/// to fail at once. `.invalid` never resolves (RFC 6761).
#[test]
fn a_peer_name_that_does_not_resolve_is_retried_until_the_timeout() {
    let s = Scratch::new("mistakes", "dns");
    let out = s
        .pgc()
        .args([
            "run",
            "builtin:millionaires",
            "--party",
            "b",
            "--connect",
            "nonexistent.invalid:7766",
            "--input",
            "1",
            "--psk",
            &support::test_psk(),
            "--timeout",
            "1",
        ])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(
        line.contains(
            "the host name nonexistent.invalid (of nonexistent.invalid:7766) did not resolve to \
             an address within 1.0 s (last error: "
        ) && line.contains("check the name, or that the other party's machine or container is up"),
        "{line}"
    );
    let err = stderr(&out);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("note: the host name nonexistent.invalid does not resolve yet"))
        .collect();
    assert_eq!(notes.len(), 1, "one note while retrying: {err}");
    assert!(
        notes[0].contains("looking it up again until the timeout"),
        "{err}"
    );
}

/// `--psk` takes only what `pgc keygen --secret` writes: a file of random hex, a password or
/// the pgc executable itself (all "high-entropy" enough before) is refused with the command
/// that makes a secret, and none of the file's content in the message.
#[test]
fn a_psk_file_must_be_what_keygen_writes() {
    let s = Scratch::new("mistakes", "pskformat");
    let hex = "7f3a9c".repeat(11);
    std::fs::write(s.0.join("random.hex"), format!("{hex}\n")).unwrap();
    std::fs::write(
        s.0.join("short.psk"),
        format!("pgc-secret1-{}\n", "ab".repeat(16)),
    )
    .unwrap();
    let exe = env!("CARGO_BIN_EXE_pgc");
    for (file, problem) in [
        (
            "random.hex",
            "it does not start with pgc-secret1- (66 bytes of something else)",
        ),
        (
            "short.psk",
            "pgc-secret1- is followed by 32 characters, not 64",
        ),
        (exe, "is larger than a shared secret file can be"),
    ] {
        let out = s
            .pgc()
            .args([
                "run",
                "builtin:millionaires",
                "--party",
                "a",
                "--listen",
                "127.0.0.1:0",
                "--input",
                "1",
                "--psk",
                file,
            ])
            .output()
            .unwrap();
        let line = error_line(&out);
        assert!(
            line.contains(file) && line.contains(problem),
            "{file}: {line}"
        );
        assert!(
            line.contains("make one with `pgc keygen --secret FILE`"),
            "{file}: {line}"
        );
        assert!(!line.contains("7f3a9c") && !line.contains("abab"), "{line}");
    }
    // One that keygen wrote is taken (the run then waits for a peer: --timeout ends it).
    support::run_ok(s.pgc().args(["keygen", "--secret", "good.psk"]));
    let out = s
        .pgc()
        .args([
            "run",
            "builtin:millionaires",
            "--party",
            "a",
            "--listen",
            "127.0.0.1:0",
            "--input",
            "1",
            "--psk",
            "good.psk",
            "--timeout",
            "1",
        ])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(line.contains("no peer connected"), "{line}");
}

/// Input values are the parties' secrets, and errors end up in logs: a value that does not
/// parse or fit is not echoed; the error names the input, its type and the position.
#[test]
fn input_values_are_not_echoed_in_errors() {
    let s = Scratch::new("mistakes", "redact");
    std::fs::write(
        s.0.join("prog.c"),
        "void mpc_main(int INPUT_A_x, unsigned char INPUT_A_name[4], int *OUTPUT_r) \
         { *OUTPUT_r = INPUT_A_x + INPUT_A_name[0]; }\n",
    )
    .unwrap();
    std::fs::write(s.0.join("and.txt"), "1 3\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n").unwrap();
    std::fs::write(
        s.0.join("inputs.json"),
        "{\"x\": \"98765zz\", \"name\": \"abc\"}\n",
    )
    .unwrap();
    let cases: [(&[&str], &str, &[&str]); 6] = [
        (
            &[
                "eval",
                "prog.c",
                "--input",
                "x=12abc",
                "--input",
                "name=[1,2,3,4]",
            ],
            "INPUT_A_x: cannot read the value given (not shown): a letter in a decimal number \
             at character 3",
            &["12abc"],
        ),
        (
            &[
                "eval",
                "prog.c",
                "--input",
                "x=4294967296",
                "--input",
                "name=[1,2,3,4]",
            ],
            "INPUT_A_x: the value given is out of range for int32_t (allowed: ",
            &["4294967296"],
        ),
        (
            &[
                "eval",
                "prog.c",
                "--input",
                "x=1",
                "--input",
                "name=[1,2,300,4]",
            ],
            "INPUT_A_name[2]: the value given is out of range for uint8_t",
            &["300"],
        ),
        (
            &["eval", "prog.c", "--inputs", "inputs.json"],
            "in inputs.json: INPUT_A_x: cannot read the value given (not shown): a letter in a \
             decimal number at character 6",
            &["98765", "zz"],
        ),
        (
            &["eval", "prog.c", "--input", "x=1", "--input", "31337"],
            "--input (the argument, not shown in case it is a value): a compiled program \
             takes inputs as NAME=VALUE",
            &["31337"],
        ),
        (
            &["eval", "and.txt", "--input", "12z", "--input", "1"],
            "input value 1: the value given (not shown) is not a decimal or 0x-hex number (at \
             character 3)",
            &["12z"],
        ),
    ];
    for (args, expected, secret) in cases {
        let out = s.pgc().args(args).output().unwrap();
        let line = error_line(&out);
        assert!(line.contains(expected), "{args:?}: {line}");
        for piece in secret {
            assert!(
                !stderr(&out).contains(piece),
                "{args:?} echoes {piece}: {line}"
            );
        }
    }
}

/// `--stream` on a circuit that is not a `.pgc` file is refused, as `--format` and
/// `--bit-order` are on the wrong kind; it was silently ignored.
#[test]
fn stream_on_a_circuit_held_in_memory_is_refused() {
    let s = Scratch::new("mistakes", "stream");
    std::fs::write(
        s.0.join("prog.c"),
        "void mpc_main(int INPUT_A_x, int *OUTPUT_r) { *OUTPUT_r = INPUT_A_x; }\n",
    )
    .unwrap();
    std::fs::write(s.0.join("and.txt"), "1 3\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n").unwrap();
    for (args, what) in [
        (&["info", "prog.c"][..], "prog.c is a source file, compiled"),
        (
            &["eval", "and.txt", "--input", "1", "--input", "1"][..],
            "and.txt is a Bristol file",
        ),
        (
            &["local", "builtin:millionaires", "--a", "1", "--b", "2"][..],
            "is a built-in circuit",
        ),
    ] {
        let out = s.pgc().args(args).arg("--stream").output().unwrap();
        let line = error_line(&out);
        assert!(
            line.contains("--stream applies to .pgc files of unrolled circuits")
                && line.contains(what),
            "{args:?}: {line}"
        );
    }
}

/// A C file with a byte that is not UTF-8 (a comment saved as Latin-1) is refused at that
/// byte's line and column, flat or compact, instead of as a whole file.
#[test]
fn a_byte_that_is_not_utf8_is_placed_at_its_line_and_column() {
    let s = Scratch::new("mistakes", "latin1");
    std::fs::write(
        s.0.join("latin1.c"),
        b"void mpc_main(int INPUT_A_x, int *OUTPUT_r) {\n  /* M\xfcller */ *OUTPUT_r = INPUT_A_x; }\n",
    )
    .unwrap();
    for extra in [&[][..], &["--compact", "always"][..]] {
        let out = s
            .pgc()
            .args(["compile", "latin1.c"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            error_line(&out),
            "error: latin1.c:2:7: byte 0xfc is not UTF-8, which pgc reads C source as (convert \
             the file, e.g. iconv -f latin1 -t utf-8)",
            "{extra:?}"
        );
    }
}

/// A byte that is not UTF-8 in an `#include`d file is placed too: its file, line and
/// column (it was "source is not valid UTF-8" with no position).
#[test]
fn a_byte_that_is_not_utf8_in_an_included_file_is_placed() {
    let s = Scratch::new("mistakes", "latin1h");
    std::fs::write(
        s.0.join("names.h"),
        b"/* names */\nstatic const char greeting[8] = \"Gr\xfc\xdf\";\n",
    )
    .unwrap();
    std::fs::write(
        s.0.join("main.c"),
        "#include \"names.h\"\nvoid mpc_main(int INPUT_A_x, int *OUTPUT_r) { *OUTPUT_r = INPUT_A_x; }\n",
    )
    .unwrap();
    let out = s.pgc().args(["compile", "main.c"]).output().unwrap();
    let line = error_line(&out);
    assert!(
        line.ends_with(
            "names.h:2:36: byte 0xfc is not UTF-8, which pgc reads C source as (convert the \
             file, e.g. iconv -f latin1 -t utf-8)"
        ),
        "{line}"
    );
}

/// One command's input flags on another (`--a` on eval or run, `--input` on local) are
/// refused with the flags that command takes; clap suggested `--max-memory` and `--inputs`.
#[test]
fn another_commands_input_flags_name_the_right_ones() {
    let s = Scratch::new("mistakes", "flags");
    let cases: [(&[&str], &str); 3] = [
        (
            &["eval", "builtin:millionaires", "--a", "1", "--b", "2"],
            "error: pgc eval takes every input, both parties', with --input NAME=VALUE",
        ),
        (
            &[
                "run",
                "builtin:millionaires",
                "--party",
                "a",
                "--listen",
                "127.0.0.1:0",
                "--a",
                "1",
            ],
            "error: pgc run takes this party's own inputs with --input NAME=VALUE (--a and --b \
             are pgc local's, which runs both parties)",
        ),
        (
            &[
                "local",
                "builtin:millionaires",
                "--input",
                "1",
                "--input",
                "2",
            ],
            "error: pgc local takes party A's inputs with --a NAME=VALUE and party B's with --b \
             NAME=VALUE",
        ),
    ];
    for (args, expected) in cases {
        let out = s.pgc().args(args).output().unwrap();
        let line = error_line(&out);
        assert!(line.starts_with(expected), "{args:?}: {line}");
    }
    // Hidden: the help lists only the flags each command takes.
    let help = s.pgc().args(["eval", "--help"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("--a <"));
}
