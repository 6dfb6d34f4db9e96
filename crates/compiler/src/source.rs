//! Preprocessing with the system `cpp` and mapping byte offsets of the preprocessed text back
//! to `file:line:col` of the user's source (through the `# line "file"` markers cpp emits).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::{CompileError, Options, SourcePos};

/// Runs the C preprocessor over `source`; `name` is the file name positions should show.
/// `dir` (the source's directory) is searched for `#include "…"` like a compiler would.
pub fn preprocess(
    source: &str,
    name: &str,
    dir: Option<&Path>,
    opts: &Options,
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
    let mut child = cmd.spawn().map_err(|e| {
        CompileError::Preprocessor(format!(
            "cannot start `cpp` (the system C preprocessor; install gcc or cpp): {e}"
        ))
    })?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let text = source.to_string();
    // Write on a thread so a large output cannot deadlock against a full stdin pipe.
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| CompileError::Preprocessor(format!("cpp failed: {e}")))?;
    let _ = writer.join();
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr).replace("<stdin>", name);
        return Err(CompileError::Preprocessor(msg.trim_end().to_string()));
    }
    String::from_utf8(out.stdout)
        .map_err(|_| CompileError::Preprocessor("source is not valid UTF-8".into()))
}

/// Maps offsets in preprocessed text to original positions.
pub struct LineMap {
    /// (offset where the marked line starts, file, line number of that line)
    markers: Vec<(usize, String, u32)>,
    /// Offsets where each line of the preprocessed text starts.
    line_starts: Vec<usize>,
    main_name: String,
}

impl LineMap {
    pub fn new(text: &str, main_name: &str) -> LineMap {
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
        SourcePos {
            file: file.clone(),
            line: mline + (line_idx - marker_line_idx) as u32,
            col,
        }
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
        let map = LineMap::new(text, "main.c");
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
}
