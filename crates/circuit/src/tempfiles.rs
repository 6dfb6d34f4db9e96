//! Temporary files (compiler spill files, partial outputs) that a process must not leave
//! behind: not on success, not on error, and not when the user interrupts it.
//!
//! Every such file is a [`TempPath`]: created through [`create_temp_file`] (or adopted with
//! [`TempPath::register`]), listed in a process-wide registry while it exists, and removed
//! when dropped, which covers normal returns and errors. A signal handler (the CLI installs
//! one for SIGINT, SIGTERM and SIGHUP) calls [`remove_all`] before the process exits, since
//! no destructor runs then. A process killed outright (SIGKILL, power loss) cannot clean up;
//! its files carry its process id in their names, so the next process that creates temporary
//! files in the same directory removes them ([`sweep_stale`]) once that process is gone.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Paths of the temporary files this process holds now.
static REGISTRY: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Name prefixes of pgc's temporary files; [`sweep_stale`] touches nothing else.
pub const TEMP_PREFIXES: &[&str] = &[
    "pgc-netlist",
    "pgc-calls",
    "pgc-items",
    "pgc-partial",
    "pgc-yosys",
];

fn registry() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while holding the lock leaves the list intact; keep using it.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary file's path: removed from disk (best effort) when dropped, and by
/// [`remove_all`] while it exists.
#[derive(Debug)]
pub struct TempPath {
    path: PathBuf,
}

impl TempPath {
    /// Takes charge of `path`, a file this process just created: it is removed when the
    /// returned value is dropped, or by [`remove_all`].
    pub fn register(path: PathBuf) -> TempPath {
        registry().push(path.clone());
        TempPath { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the file: it is no longer removed (e.g. after renaming it to its final name).
    pub fn keep(self) -> PathBuf {
        forget(&self.path);
        let path = self.path.clone();
        std::mem::forget(self);
        path
    }
}

fn forget(path: &Path) {
    let mut list = registry();
    if let Some(i) = list.iter().rposition(|p| p == path) {
        list.swap_remove(i);
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        forget(&self.path);
        // Best effort: a file that cannot be removed now cannot be reported from a destructor.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Creates a new, empty temporary file `PREFIX-PID-NANOS-N.tmp` in `dir` for reading and
/// writing, registered for removal. `prefix` must be one of [`TEMP_PREFIXES`]. Stale files
/// that dead pgc processes left in `dir` are swept first.
pub fn create_temp_file(dir: &Path, prefix: &str) -> io::Result<(TempPath, File)> {
    debug_assert!(TEMP_PREFIXES.contains(&prefix), "unknown prefix {prefix}");
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    {
        let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
        if !swept.iter().any(|d| d == dir) {
            sweep_stale(dir);
            swept.push(dir.to_path_buf());
        }
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    loop {
        let path = dir.join(format!(
            "{prefix}-{}-{}-{}.tmp",
            std::process::id(),
            nanos,
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((TempPath::register(path), file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Removes every temporary file this process holds now; for signal handlers, just before
/// the process exits. Returns how many were removed.
pub fn remove_all() -> usize {
    remove_matching(|_| true)
}

/// Removes (and forgets) the registered files whose path `pick` accepts.
fn remove_matching(pick: impl Fn(&Path) -> bool) -> usize {
    let picked: Vec<PathBuf> = {
        let mut list = registry();
        let (picked, kept) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|p| pick(p));
        *list = kept;
        picked
    };
    picked
        .iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count()
}

/// The process id in a pgc temporary file's name (`PREFIX-PID-….tmp`), if it is one.
fn temp_file_pid(name: &str) -> Option<u32> {
    let rest = name.strip_suffix(".tmp")?;
    let prefix = TEMP_PREFIXES
        .iter()
        .find(|p| rest.starts_with(**p) && rest[p.len()..].starts_with('-'))?;
    rest[prefix.len() + 1..].split('-').next()?.parse().ok()
}

/// Whether process `pid` still runs. Where this cannot be told, every process counts as
/// alive, so nothing is removed.
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// Removes pgc temporary files in `dir` whose process has ended (left by a process that was
/// killed outright). Returns how many were removed. Other files are never touched.
pub fn sweep_stale(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_file_pid) else {
            continue;
        };
        if !process_alive(pid) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pgc-tempfiles-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn dropped_and_removed_all() {
        let dir = scratch_dir("drop");
        let (a, _) = create_temp_file(&dir, "pgc-netlist").unwrap();
        let (b, _) = create_temp_file(&dir, "pgc-items").unwrap();
        let (pa, pb) = (a.path().to_path_buf(), b.path().to_path_buf());
        assert!(pa.exists() && pb.exists());
        drop(a);
        assert!(!pa.exists());
        // What a signal handler does (limited to this test's directory, since other tests
        // of this binary hold temporary files too): b is gone although it was never dropped.
        assert_eq!(remove_matching(|p| p.starts_with(&dir)), 1);
        assert!(!pb.exists());
        drop(b);
        let (c, _) = create_temp_file(&dir, "pgc-partial").unwrap();
        let kept = c.keep();
        assert!(kept.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_files_of_dead_processes_are_swept_and_nothing_else() {
        let dir = scratch_dir("sweep");
        // PIDs above the kernel's maximum (2^22) never run.
        let dead = dir.join("pgc-netlist-99999999-5-0.tmp");
        let alive = dir.join(format!("pgc-items-{}-5-0.tmp", std::process::id()));
        let unrelated = [
            dir.join("notes-99999999-1.tmp"),
            dir.join("pgc-netlist-99999999-1.txt"),
            dir.join("pgc-netlistx-99999999-1.tmp"),
        ];
        for p in unrelated.iter().chain([&dead, &alive]) {
            std::fs::write(p, b"x").unwrap();
        }
        assert_eq!(sweep_stale(&dir), 1);
        assert!(!dead.exists());
        assert!(alive.exists());
        assert!(unrelated.iter().all(|p| p.exists()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pid_is_read_from_the_name() {
        assert_eq!(temp_file_pid("pgc-netlist-123-4-5.tmp"), Some(123));
        assert_eq!(temp_file_pid("pgc-partial-7-x.tmp"), Some(7));
        assert_eq!(temp_file_pid("pgc-netlist-abc-4.tmp"), None);
        assert_eq!(temp_file_pid("pgc-netlist-123-4-5"), None);
        assert_eq!(temp_file_pid("other-123.tmp"), None);
    }
}
