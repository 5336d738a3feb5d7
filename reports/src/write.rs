//! Writing report files so that a reader (CI, a browser, a merge step)
//! never sees a half-written one, even if Vigil is killed mid-write.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::render::{render, Format};
use crate::{Report, ReportError};

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory (so the rename cannot cross file systems), flushed to disk,
/// then renamed over `path`. On failure the temporary file is removed and
/// `path` is left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let tmp = temp_path(path)?;
    let written = write_synced(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(ReportError::io(path, e));
    }
    sync_dir(path);
    Ok(())
}

/// Checks that [`write_atomic`] could write `path`, without touching it:
/// creates and removes the temporary file it would use. Lets a command
/// refuse a bad output path before doing long work.
pub fn probe(path: &Path) -> Result<(), ReportError> {
    let tmp = temp_path(path)?;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| ReportError::io(path, e))?;
    let _ = fs::remove_file(&tmp);
    Ok(())
}

/// Renders `report` in `format` (without colour: files are not terminals)
/// and writes it with [`write_atomic`].
pub fn write_report(path: &Path, report: &Report, format: Format) -> Result<(), ReportError> {
    write_atomic(path, render(report, format, false).as_bytes())
}

/// `.NAME.tmp-PID-N` beside `path`: hidden, and unique per process and
/// call so that parallel writers never share one.
fn temp_path(path: &Path) -> Result<PathBuf, ReportError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        ReportError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"),
        )
    })?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp_name = format!(".{}.tmp-{}-{n}", name.to_string_lossy(), std::process::id());
    Ok(path.with_file_name(tmp_name))
}

fn write_synced(tmp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Makes the rename itself durable. Best effort: some platforms and file
/// systems cannot open or sync a directory, and the data is already safe.
fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
