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
            "INPUT_A_c: 300 is out of range for char (allowed: -128 to 127",
        ),
        (
            &["eval", "chars.c", "--inputs", "wide.json"],
            "in wide.json: INPUT_A_c: 300 is out of range for char",
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

/// A file that never ends (a device, a pipe) is read only up to --max-memory, or the size a
/// key can have, then refused by name; it used to be read until memory ran out.
#[cfg(target_os = "linux")]
#[test]
fn a_file_that_never_ends_is_refused_at_the_memory_limit() {
    let s = Scratch::new("mistakes", "endless");
    let run = [
        "run",
        "builtin:millionaires",
        "--party",
        "a",
        "--listen",
        "127.0.0.1:0",
    ];
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec!["info", "/dev/zero", "--max-memory", "1M"],
            "cannot read circuit file /dev/zero: it holds more than --max-memory 1.0 MiB",
        ),
        (
            [&run[..], &["--psk", "/dev/zero", "--input", "1"]].concat(),
            "/dev/zero is larger than a key or secret file can be",
        ),
        (
            vec![
                "run",
                "prog.c",
                "--party",
                "a",
                "--listen",
                "127.0.0.1:0",
                "--insecure-plaintext",
                "--inputs",
                "/dev/zero",
                "--max-memory",
                "1M",
            ],
            "cannot read inputs file /dev/zero: it holds more than --max-memory 1.0 MiB",
        ),
        (
            vec!["eval", "endless.c", "--max-memory", "1M"],
            "cannot read endless.c: it holds more than --max-memory 1.0 MiB",
        ),
    ];
    std::os::unix::fs::symlink("/dev/zero", s.0.join("endless.c")).unwrap();
    std::fs::write(
        s.0.join("prog.c"),
        "void mpc_main(int INPUT_A_x, int *OUTPUT_r) { *OUTPUT_r = INPUT_A_x; }\n",
    )
    .unwrap();
    for (args, expected) in cases {
        let out = s.pgc().args(&args).output().unwrap();
        let line = error_line(&out);
        assert!(line.contains(expected), "{args:?}: {line}");
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
