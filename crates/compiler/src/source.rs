//! Preprocessing with the system `cpp` and mapping byte offsets of the preprocessed text back
//! to `file:line:col` of the user's source (through the `# line "file"` markers cpp emits).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{CompileError, Options, SourcePos};

/// Most bytes of preprocessed text pgc reads from `cpp`: a few macros that each expand to
/// two uses of the next one expand exponentially (40 of them to terabytes), and the text is
/// held in memory and parsed. Real programs preprocess to kilobytes or a few megabytes.
const MAX_PREPROCESSED_BYTES: u64 = crate::MAX_SOURCE_BYTES;

/// Most address space the preprocessor may take (Unix): `#include "/dev/zero"` makes it read
/// an endless file into memory, which would otherwise exhaust the machine's.
const CPP_MEMORY_BYTES: u64 = 2 << 30;

/// Longest `cpp` may run: `$PGC_CPP_TIMEOUT` seconds, else 120 (an include of a device or
/// pipe that never ends, or never delivers).
fn cpp_time_limit() -> Result<Duration, CompileError> {
    env_seconds("PGC_CPP_TIMEOUT", 120)
}

/// A time limit in whole seconds from the environment variable `var` (at least 1), else
/// `default`; a value that is not a number is an error rather than silently the default,
/// so a mistyped limit does not go unnoticed.
pub(crate) fn env_seconds(var: &str, default: u64) -> Result<Duration, CompileError> {
    let secs = match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => {
            v.trim().parse::<u64>().map_err(|_| CompileError::Source {
                pos: None,
                message: format!("{var}={v} is not a number of seconds (e.g. {var}=600)"),
            })?
        }
        _ => default,
    };
    Ok(Duration::from_secs(secs.max(1)))
}

/// What the preprocessor may take: address space, wall-clock time, and bytes of output.
#[derive(Clone, Copy, Debug)]
struct CppLimits {
    memory: u64,
    time: Duration,
    output: u64,
}

/// Runs the C preprocessor over `source`; `name` is the file name positions should show.
/// `dir` (the source's directory) is searched for `#include "…"` like a compiler would.
/// The preprocessor runs in bounded time, memory and output (see [`MAX_PREPROCESSED_BYTES`]).
pub fn preprocess(
    source: &str,
    name: &str,
    dir: Option<&Path>,
    opts: &Options,
) -> Result<String, CompileError> {
    let limits = CppLimits {
        memory: CPP_MEMORY_BYTES,
        time: cpp_time_limit()?,
        output: MAX_PREPROCESSED_BYTES,
    };
    preprocess_within(source, name, dir, opts, limits)
}

fn preprocess_within(
    source: &str,
    name: &str,
    dir: Option<&Path>,
    opts: &Options,
    limits: CppLimits,
) -> Result<String, CompileError> {
    let mut cmd = Command::new("cpp");
    // -std=gnu11 matches gcc's default dialect closely enough for the subset; __PGC__ lets a
    // program tell pgc from gcc when it needs to.
    cmd.arg("-std=gnu11").arg("-D__PGC__=1");
    if let Some(dir) = dir {
        cmd.arg("-I").arg(dir);
    }
    for d in &opts.defines {
        cmd.arg(format!("-D{d}"));
    }
    for i in &opts.include_dirs {
        cmd.arg("-I").arg(i);
    }
    cmd.arg("-");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    limit_memory(&mut cmd, limits.memory);
    let mut child = cmd.spawn().map_err(|e| {
        CompileError::Preprocessor(format!(
            "cannot start `cpp` (the system C preprocessor; install gcc or cpp): {e}"
        ))
    })?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let text = source.to_string();
    // Write and read on threads so a large output cannot deadlock against a full pipe.
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let read_capped = |pipe: Option<Box<dyn Read + Send>>, cap: u64| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(p) = pipe {
                let _ = p.take(cap + 1).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read_capped(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        limits.output,
    );
    let stderr = read_capped(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        1 << 20,
    );
    let too_large = || {
        CompileError::Preprocessor(format!(
            "{name}: the preprocessed program is larger than {} MiB (a macro that expands \
             to several uses of another, repeatedly?)",
            limits.output >> 20
        ))
    };
    let limit = limits.time;
    let deadline = Instant::now() + limit;
    let mut stdout = Some(stdout);
    let mut out = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if stdout.as_ref().is_some_and(|t| t.is_finished()) => {
                let bytes = stdout.take().expect("checked").join().unwrap_or_default();
                if bytes.len() as u64 > limits.output {
                    // The reader stopped at the cap; cpp would block on the full pipe.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(too_large());
                }
                out = Some(bytes);
            }
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CompileError::Preprocessor(format!(
                    "{name}: the preprocessor did not finish within {} s (set PGC_CPP_TIMEOUT to \
                     allow more): an #include of a device or pipe that never ends?",
                    limit.as_secs()
                )));
            }
            Err(e) => return Err(CompileError::Preprocessor(format!("cpp failed: {e}"))),
        }
    };
    let _ = writer.join();
    let out = match (out, stdout) {
        (Some(bytes), _) => bytes,
        (None, Some(reader)) => reader.join().unwrap_or_default(),
        (None, None) => Vec::new(),
    };
    let err = stderr.join().unwrap_or_default();
    if out.len() as u64 > limits.output {
        return Err(too_large());
    }
    if !status.success() {
        let msg = String::from_utf8_lossy(&err).replace("<stdin>", name);
        let msg = msg.trim_end();
        // cc1 names no file when its memory runs out; say what the usual cause is.
        if msg.is_empty() || msg.contains("out of memory") {
            return Err(CompileError::Preprocessor(format!(
                "{name}: the preprocessor ran out of its {} MiB of memory (an #include of an \
                 endless file such as /dev/zero?){}{msg}",
                limits.memory >> 20,
                if msg.is_empty() { "" } else { ": " }
            )));
        }
        return Err(CompileError::Preprocessor(msg.to_string()));
    }
    String::from_utf8(out).map_err(|e| not_utf8(e.as_bytes(), e.utf8_error(), name, source))
}

/// The error for preprocessed text that is not UTF-8 at `error`: the main file was checked
/// when it was read, so the byte comes from an `#include`d file, whose name and line the
/// `# line` markers before it give.
fn not_utf8(out: &[u8], error: std::str::Utf8Error, name: &str, source: &str) -> CompileError {
    let at = error.valid_up_to();
    let before = std::str::from_utf8(&out[..at]).expect("valid up to here");
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    // The line is found by its start: `before` ends inside it.
    let mut pos = LineMap::new(before, name, source).pos(line_start);
    // Columns count characters, as in the compiler's other errors.
    pos.col = 1 + before[line_start..].chars().count() as u32;
    CompileError::Source {
        pos: Some(pos),
        message: format!(
            "byte 0x{:02x} is not UTF-8, which pgc reads C source as (convert the file, e.g. \
             iconv -f latin1 -t utf-8)",
            out[at]
        ),
    }
}

/// Limits the address space of the process `cmd` starts (and of its children: `cpp` runs
/// `cc1`, Yosys runs ABC), so an endless input makes it fail instead of exhausting the
/// machine's memory.
#[cfg(unix)]
pub(crate) fn limit_memory(cmd: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit,
    // which is async-signal-safe; it touches no memory shared with the parent's threads
    // (`limit` is copied into the closure).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
pub(crate) fn limit_memory(_cmd: &mut Command, _bytes: u64) {}

/// Maps offsets in preprocessed text to original positions.
pub struct LineMap {
    /// (offset where the marked line starts, file, line number of that line)
    markers: Vec<(usize, String, u32)>,
    /// Offsets where each line of the preprocessed text starts.
    line_starts: Vec<usize>,
    main_name: String,
    /// The lines of the user's source, to correct columns that macro expansion shifted.
    main_lines: Vec<String>,
    text: String,
}

impl LineMap {
    pub fn new(text: &str, main_name: &str, main_source: &str) -> LineMap {
        let mut markers = Vec::new();
        let mut line_starts = vec![0];
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let next = offset + line.len();
            if let Some((num, file)) = parse_marker(line) {
                let file = if file == "<stdin>" {
                    main_name.to_string()
                } else {
                    file
                };
                markers.push((next, file, num));
            }
            offset = next;
            line_starts.push(offset);
        }
        LineMap {
            markers,
            line_starts,
            main_name: main_name.to_string(),
            main_lines: main_source
                .lines()
                .map(|l| l.trim_end_matches('\r').to_string())
                .collect(),
            text: text.to_string(),
        }
    }

    pub fn pos(&self, offset: usize) -> SourcePos {
        let line_idx = self
            .line_starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let line_start = self.line_starts[line_idx];
        let col = (offset - line_start) as u32 + 1;
        let m = self
            .markers
            .partition_point(|(start, _, _)| *start <= line_start);
        if m == 0 {
            return SourcePos {
                file: self.main_name.clone(),
                line: line_idx as u32 + 1,
                col,
            };
        }
        let (mstart, file, mline) = &self.markers[m - 1];
        let marker_line_idx = self.line_starts.partition_point(|&s| s < *mstart);
        let line = mline + (line_idx - marker_line_idx) as u32;
        let col = if *file == self.main_name {
            self.original_column(line_start, offset, line)
                .unwrap_or(col)
        } else {
            col
        };
        SourcePos {
            file: file.clone(),
            line,
            col,
        }
    }

    /// Where macro expansion changed a line, the column of the same token in the original
    /// line (its k-th occurrence), or the start of the macro use for tokens it produced.
    fn original_column(&self, line_start: usize, offset: usize, line: u32) -> Option<u32> {
        let original = self.main_lines.get(line.checked_sub(1)? as usize)?;
        let end = self.text[line_start..]
            .find('\n')
            .map_or(self.text.len(), |e| line_start + e);
        let expanded = self.text.get(line_start..end)?;
        if expanded == original.as_str() {
            return None;
        }
        let at = offset.checked_sub(line_start)?;
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let rest = expanded.get(at..)?;
        let len = rest.find(|c: char| !word(c)).unwrap_or(rest.len()).max(1);
        let token = rest.get(..len)?;
        let occurrences = |s: &str| -> Vec<usize> {
            s.match_indices(token)
                .filter(|(i, _)| {
                    let before = s[..*i]
                        .chars()
                        .next_back()
                        .is_none_or(|c| !word(c) || !word(token.chars().next().unwrap_or(' ')));
                    let after = s[i + token.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| !word(c) || !word(token.chars().last().unwrap_or(' ')));
                    before && after
                })
                .map(|(i, _)| i)
                .collect()
        };
        let k = occurrences(expanded).iter().position(|&i| i == at)?;
        let in_expanded = occurrences(expanded).len();
        let in_original = occurrences(original);
        if in_original.len() == in_expanded {
            return Some(in_original[k] as u32 + 1);
        }
        // The token came from a macro body: point at the first place the lines differ.
        let common = expanded
            .bytes()
            .zip(original.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let start = original[..common]
            .rfind(|c: char| !word(c))
            .map_or(0, |i| i + 1);
        Some(start as u32 + 1)
    }

    /// Whether `offset` lies in the user's own files rather than a system header.
    pub fn is_system(&self, offset: usize) -> bool {
        let p = self.pos(offset);
        p.file.starts_with("/usr/") || p.file.starts_with('<')
    }
}

/// `# 12 "file.c" 1 3` → (12, "file.c").
fn parse_marker(line: &str) -> Option<(u32, String)> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    let num: u32 = rest[..end].parse().ok()?;
    let rest = rest[end..].trim_start();
    let rest = rest.strip_prefix('"')?;
    let close = rest.find('"')?;
    Some((num, rest[..close].to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_offsets_through_markers() {
        let text = "# 1 \"a.c\"\nint x;\n# 10 \"b.h\" 1\nint y;\n  int z;\n";
        let map = LineMap::new(text, "main.c", "");
        let y = text.find("int y").unwrap();
        assert_eq!(
            map.pos(y),
            SourcePos {
                file: "b.h".into(),
                line: 10,
                col: 1
            }
        );
        let z = text.find("int z").unwrap();
        assert_eq!(
            map.pos(z),
            SourcePos {
                file: "b.h".into(),
                line: 11,
                col: 3
            }
        );
        let x = text.find("int x").unwrap();
        assert_eq!(
            map.pos(x),
            SourcePos {
                file: "a.c".into(),
                line: 1,
                col: 1
            }
        );
    }

    /// Small limits, so that the tests of runaway preprocessing take a second.
    fn small_limits() -> CppLimits {
        CppLimits {
            memory: 256 << 20,
            time: Duration::from_secs(20),
            output: 1 << 20,
        }
    }

    /// Found while adding the `c_program` fuzz target: an include of an endless file made
    /// `cpp` read it into memory until the machine's ran out (and pgc waited for it).
    #[test]
    fn an_endless_include_is_refused_within_the_memory_limit() {
        let src = "#include \"/dev/zero\"\nint x;\n";
        let e = preprocess_within(src, "zero.c", None, &Options::default(), small_limits())
            .unwrap_err()
            .to_string();
        assert!(e.contains("ran out of its 256 MiB of memory"), "{e}");
        assert!(e.contains("zero.c"), "{e}");
    }

    /// A wall-clock limit stops a preprocessor that blocks (here: one whose include never
    /// delivers, a FIFO nobody writes).
    #[cfg(unix)]
    #[test]
    fn a_preprocessor_that_never_finishes_is_stopped() {
        let dir = std::env::temp_dir().join(format!("pgc-cpp-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("never.h");
        let _ = std::fs::remove_file(&fifo);
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let src = format!("#include \"{}\"\nint x;\n", fifo.display());
        let limits = CppLimits {
            time: Duration::from_millis(500),
            ..small_limits()
        };
        let e = preprocess_within(&src, "fifo.c", None, &Options::default(), limits)
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(e.contains("did not finish within"), "{e}");
        assert!(e.contains("fifo.c"), "{e}");
    }

    /// Macros that each expand to two uses of the next: 2^30 tokens from 30 lines. The
    /// output cap stops it after the first megabyte instead of holding gigabytes.
    #[test]
    fn an_exponential_macro_is_refused_at_the_output_cap() {
        let mut src = String::from("#define m0 x\n");
        for i in 1..=30 {
            src.push_str(&format!("#define m{i} m{} m{}\n", i - 1, i - 1));
        }
        src.push_str("m30\n");
        let e = preprocess_within(&src, "bomb.c", None, &Options::default(), small_limits())
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than 1 MiB"), "{e}");
        assert!(e.contains("bomb.c"), "{e}");
    }
}
