//! The memory budget: how much memory an operation on a circuit may take, and the check
//! that refuses one needing more *before* anything is allocated.
//!
//! Sizes in a circuit file (wire counts, input widths) are cheap to write and expensive to
//! honour: a 1 KB file may declare 2^30 wires, i.e. 16 GiB of garbling labels. Readers bound
//! every count by what the rest of the file justifies; what remains legitimate but large is
//! compared with a [`MemoryLimit`] here, so that pgc stops with a clear error instead of
//! being killed by the allocator.
//!
//! The limit in force is [`MemoryLimit::current`]: a limit set for the current thread with
//! [`MemoryLimit::scoped`] (tests), else the process-wide one set with
//! [`MemoryLimit::set_process_wide`] (the CLI's `--max-memory`), else
//! [`MemoryLimit::machine_default`] (half the machine's physical memory).

use std::cell::Cell;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of one garbling label (a 128-bit block), per wire for each party.
pub const LABEL_BYTES: u64 = 16;

/// Used when the machine's memory cannot be read (not Linux, or no `/proc`).
const FALLBACK_LIMIT: u64 = 4 << 30;

/// A memory budget in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemoryLimit(u64);

/// The process-wide limit; 0 = not set (use the machine default).
static PROCESS_LIMIT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD_LIMIT: Cell<Option<MemoryLimit>> = const { Cell::new(None) };
}

impl MemoryLimit {
    pub const fn from_bytes(bytes: u64) -> Self {
        MemoryLimit(bytes)
    }

    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// Half of the machine's physical memory (`MemTotal` of `/proc/meminfo`), or 4 GiB
    /// where that cannot be read.
    pub fn machine_default() -> Self {
        static DEFAULT: OnceLock<MemoryLimit> = OnceLock::new();
        *DEFAULT.get_or_init(|| {
            MemoryLimit(physical_memory().map_or(FALLBACK_LIMIT, |total| total / 2))
        })
    }

    /// The limit in force on this thread (see the module documentation).
    pub fn current() -> Self {
        if let Some(limit) = THREAD_LIMIT.with(Cell::get) {
            return limit;
        }
        match PROCESS_LIMIT.load(Ordering::Relaxed) {
            0 => MemoryLimit::machine_default(),
            bytes => MemoryLimit(bytes),
        }
    }

    /// Makes this the limit of every thread that has no [scoped](MemoryLimit::scoped) one.
    pub fn set_process_wide(self) {
        PROCESS_LIMIT.store(self.0.max(1), Ordering::Relaxed);
    }

    /// Runs `f` with this limit in force on the current thread (other threads keep theirs).
    pub fn scoped<T>(self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<MemoryLimit>);
        impl Drop for Restore {
            fn drop(&mut self) {
                THREAD_LIMIT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(THREAD_LIMIT.with(|c| c.replace(Some(self))));
        f()
    }

    /// Refuses `need` if it is more than this limit.
    pub fn check(self, need: &MemoryNeed) -> Result<(), MemoryError> {
        if need.bytes > self.0 {
            return Err(MemoryError {
                need: need.clone(),
                limit: self,
            });
        }
        Ok(())
    }
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

impl std::str::FromStr for MemoryLimit {
    type Err = String;

    /// A size: bytes (`1073741824`), or a number with a binary unit: `512K`, `512M`, `8G`,
    /// `1T` (also `KiB`/`MiB`/`GiB`/`TiB`, `KB`/`MB`/`GB`/`TB`, any case; all powers of
    /// 1024), with an optional fraction (`1.5G`).
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{text}' is not a memory size: give bytes or a number with a unit, e.g. \
                 512M, 8G, 8GiB"
            )
        };
        let s = text.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (number, unit) = s.split_at(split);
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            _ => return Err(bad()),
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() {
            return Err(bad());
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad())?
        };
        let mut bytes = whole.checked_mul(1 << shift).ok_or_else(bad)?;
        if !fraction.is_empty() {
            // Up to 9 decimals; exact enough for a budget.
            let digits = &fraction[..fraction.len().min(9)];
            let frac: u64 = digits.parse().map_err(|_| bad())?;
            let scale = 10u64.pow(digits.len() as u32);
            let part = (frac as u128 * (1u128 << shift)) / scale as u128;
            bytes = bytes.checked_add(part as u64).ok_or_else(bad)?;
        }
        if bytes == 0 {
            return Err(format!("'{text}': the memory limit must be more than 0"));
        }
        Ok(MemoryLimit(bytes))
    }
}

/// Memory an operation needs, with what it is for ("2^30 wires × 16-byte labels").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryNeed {
    pub bytes: u64,
    pub what: String,
}

impl MemoryNeed {
    pub fn new(bytes: u64, what: impl Into<String>) -> Self {
        MemoryNeed {
            bytes,
            what: what.into(),
        }
    }

    /// `count` things of `size` bytes each, described as `"{count} {things} × {size}-byte
    /// {unit}"` (saturating: a product beyond `u64` is refused by any limit anyway).
    pub fn per_item(count: u64, things: &str, size: u64, unit: &str) -> Self {
        MemoryNeed {
            bytes: count.saturating_mul(size),
            what: format!("{} {things} × {size}-byte {unit}", count_text(count)),
        }
    }

    /// One garbling label per wire: what the garbler and the evaluator each hold.
    pub fn labels(wires: u64) -> Self {
        MemoryNeed::per_item(wires, "wires", LABEL_BYTES, "labels")
    }

    /// Both needs together.
    pub fn plus(self, other: MemoryNeed) -> Self {
        MemoryNeed {
            bytes: self.bytes.saturating_add(other.bytes),
            what: format!("{} + {}", self.what, other.what),
        }
    }

    /// Checks this need against [`MemoryLimit::current`].
    pub fn check(&self) -> Result<(), MemoryError> {
        MemoryLimit::current().check(self)
    }
}

/// An operation needs more memory than the limit allows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "this circuit needs {} ({}), more than --max-memory {}; raise --max-memory if the machine \
     has it",
    format_bytes(.need.bytes),
    .need.what,
    .limit
)]
pub struct MemoryError {
    pub need: MemoryNeed,
    pub limit: MemoryLimit,
}

/// Reads a whole text file that pgc holds in memory (a Bristol circuit, a C program, a JSON
/// file of inputs), refusing one larger than the memory limit in force; see
/// [`read_text_file`].
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    read_text_file(path, u64::MAX)
}

/// Reads a whole text file that pgc holds in memory, failing fast on one it cannot take:
///
/// - a regular file's size is checked against `--max-memory` before anything is read (and
///   the read is bounded by it too, should the file grow meanwhile);
/// - anything else (a device such as `/dev/zero`, a pipe, a terminal), whose metadata says
///   0 bytes and which may never end, is read piece by piece up to `stream_bound` (what a
///   file of this kind can legally be, for the caller to say; never more than
///   `--max-memory`), and refused at its first zero byte, which no text file holds: so
///   `/dev/zero` and `/dev/urandom` stop after one piece instead of filling memory.
///
/// Errors say which of these it was, with the figures; the caller names the file.
pub fn read_text_file(path: &std::path::Path, stream_bound: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let limit = MemoryLimit::current();
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, "it is a directory"));
    }
    let over_limit = |size: String| {
        Error::new(
            ErrorKind::OutOfMemory,
            format!(
                "it is {size}, more than --max-memory {limit} (raise --max-memory if the machine has the memory)"
            ),
        )
    };
    if meta.is_file() {
        if meta.len() > limit.bytes() {
            return Err(over_limit(format!(
                "{} ({} bytes)",
                format_bytes(meta.len()),
                group_digits(meta.len())
            )));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(limit.bytes().saturating_add(1))
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit.bytes() {
            return Err(over_limit("larger than when it was opened".into()));
        }
        return Ok(bytes);
    }
    let kind = special_file_kind(&meta);
    let bound = stream_bound.min(limit.bytes());
    let mut bytes = Vec::new();
    let mut piece = vec![0u8; 64 << 10];
    loop {
        let n = match file.read(&mut piece) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(at) = piece[..n].iter().position(|&b| b == 0) {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!(
                    "it is a {kind} that gave a zero byte at byte {}, which no text file holds \
                     (a device such as /dev/zero?)",
                    group_digits(bytes.len() as u64 + at as u64 + 1)
                ),
            ));
        }
        if (bytes.len() + n) as u64 > bound {
            let within = if bound == limit.bytes() {
                format!("--max-memory {limit}")
            } else {
                format!(
                    "{}, more than such a file can need here",
                    format_bytes(bound)
                )
            };
            return Err(Error::new(
                ErrorKind::FileTooLarge,
                format!(
                    "it is a {kind} that did not end within {within} (a device or a stream \
                     that does not end?)"
                ),
            ));
        }
        bytes.extend_from_slice(&piece[..n]);
    }
}

/// What a file that is neither a regular file nor a directory is, for messages.
fn special_file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
        if t.is_fifo() {
            return "pipe";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    let _ = meta;
    "special file"
}

/// `bytes` for people: `512 B`, `1.5 KiB`, `16.0 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `n` with its digits in groups of three (`1234567` as `1,234,567`), for messages.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count as people read it: `2^30` for large powers of two, else the number.
fn count_text(n: u64) -> String {
    if n >= 1 << 10 && n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn physical_memory() -> Option<u64> {
    proc_kib_field("/proc/meminfo", "MemTotal")
}

/// A `Key:   123 kB` line of a Linux `/proc` file (`/proc/meminfo`, `/proc/PID/status`), in
/// bytes; `None` where the file or the line is missing (another OS, a process gone).
pub fn proc_kib_field(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        let p = |s: &str| s.parse::<MemoryLimit>().map(MemoryLimit::bytes);
        assert_eq!(p("1073741824"), Ok(1 << 30));
        assert_eq!(p("512M"), Ok(512 << 20));
        assert_eq!(p("8G"), Ok(8 << 30));
        assert_eq!(p("8GiB"), Ok(8 << 30));
        assert_eq!(p("8 gb"), Ok(8 << 30));
        assert_eq!(p("1.5G"), Ok(3 << 29));
        assert_eq!(p("2k"), Ok(2048));
        for bad in ["", "G", "8X", "-1G", "0", "1.2.3G", "99999999999T"] {
            assert!(p(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn the_error_says_what_and_how_much() {
        let limit = MemoryLimit::from_bytes(12 << 30);
        let need = MemoryNeed::labels(1 << 30);
        assert!(limit.check(&MemoryNeed::labels(1 << 20)).is_ok());
        let e = limit.check(&need).unwrap_err().to_string();
        assert_eq!(
            e,
            "this circuit needs 16.0 GiB (2^30 wires × 16-byte labels), more than --max-memory \
             12.0 GiB; raise --max-memory if the machine has it"
        );
    }

    #[test]
    fn products_saturate_instead_of_wrapping() {
        let need = MemoryNeed::per_item(u64::MAX / 2, "wires", 16, "labels");
        assert_eq!(need.bytes, u64::MAX);
        assert!(MemoryLimit::from_bytes(u64::MAX - 1).check(&need).is_err());
    }

    #[test]
    fn scoped_limits_apply_to_this_thread_only() {
        let tiny = MemoryLimit::from_bytes(100);
        tiny.scoped(|| {
            assert_eq!(MemoryLimit::current(), tiny);
            let other = std::thread::spawn(MemoryLimit::current).join().unwrap();
            assert_ne!(other, tiny);
        });
        assert_ne!(MemoryLimit::current(), tiny);
        assert!(MemoryLimit::machine_default().bytes() > 0);
    }

    #[test]
    fn bytes_format_for_people() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(16 << 30), "16.0 GiB");
    }
}
