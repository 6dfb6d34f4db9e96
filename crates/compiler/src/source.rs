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
}
