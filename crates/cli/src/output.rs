//! How the CLI ends when its surroundings go away: standard output closed by the reader
//! (`pgc info … | head`) and the user interrupting a run or compile.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe returns an error and `println!` would
//! panic. pgc cannot simply restore the default SIGPIPE action, because it writes into the
//! C preprocessor's stdin, where an early exit of `cpp` must stay an error, not kill pgc.
//! Instead every write to standard output goes through [`outln!`]/[`out!`], which treat a
//! closed pipe as the Unix tools do: stop quietly, with the status a process killed by
//! SIGPIPE reports (141).
//!
//! SIGINT, SIGTERM and SIGHUP remove the temporary files of the process (compiler spill
//! files can take many gigabytes; see `pgc_circuit::tempfiles`) before exiting, since no
//! destructor runs on a signal.

use std::io::Write;

/// Exit status after a closed standard output: 128 + SIGPIPE, as a shell shows for tools
/// the signal ended.
const EXIT_CLOSED_PIPE: i32 = 128 + 13;
/// Exit status after an interrupt: 128 + SIGINT.
const EXIT_INTERRUPTED: i32 = 128 + 2;

/// Writes to standard output; on a closed pipe, leaves quietly (see the module doc).
pub fn write_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| {
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            pgc_circuit::tempfiles::remove_all();
            std::process::exit(EXIT_CLOSED_PIPE);
        }
        Err(e) => {
            pgc_circuit::tempfiles::remove_all();
            eprintln!("error: cannot write to standard output: {e}");
            std::process::exit(1);
        }
    }
}

/// `println!` for the CLI's results: a closed pipe ends pgc quietly instead of panicking.
#[macro_export]
macro_rules! outln {
    () => { $crate::output::write_stdout(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*), true) };
}

/// `print!` for the CLI's results (see [`outln!`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*), false) };
}

/// On SIGINT, SIGTERM or SIGHUP: remove this process's temporary files, say so, and exit.
/// The handler runs on its own thread (not in signal context), so it may lock and unlink.
pub fn remove_temp_files_on_interrupt() {
    let installed = ctrlc::set_handler(|| {
        let removed = pgc_circuit::tempfiles::remove_all();
        if removed > 0 {
            eprintln!("\npgc: interrupted; removed {removed} temporary file(s)");
        } else {
            eprintln!("\npgc: interrupted");
        }
        std::process::exit(EXIT_INTERRUPTED);
    });
    // Without a handler pgc still works; only an interrupt would leave files behind.
    if let Err(e) = installed {
        eprintln!(
            "warning: cannot watch for interrupts ({e}); an interrupted compile may leave temporary files"
        );
    }
}
