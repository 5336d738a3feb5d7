//! Finding suite cases on disk, filtering them, and sharding them across
//! CI machines.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Directories skipped when walking a parent directory: their cases are
/// meant to fail (`vigil selftest` runs them). Naming one as a PATH runs it.
pub const SKIPPED_DIRS: [&str; 1] = ["broken"];

/// One case to run: the directory holding `graph.json` (or the graph file
/// itself when it stands alone) and a display path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CaseRef {
    /// Path as the user will read it (relative to the current directory
    /// when the case was found under a relative path).
    pub path: String,
    pub location: PathBuf,
}

impl CaseRef {
    /// The case's name: its directory name (or the graph file's stem);
    /// an ONNX data set is `TEST/test_data_set_N`, a model file its stem.
    pub fn name(&self) -> String {
        let p = Path::new(&self.path);
        let p = if p.file_name().is_some_and(|f| f == "graph.json") {
            p.parent().unwrap_or(p)
        } else {
            p
        };
        let file = p.file_name().map(|f| f.to_string_lossy().into_owned());
        match (file, p.parent().and_then(Path::file_name)) {
            (Some(f), Some(test)) if f.starts_with("test_data_set_") => {
                format!("{}/{f}", test.to_string_lossy())
            }
            (Some(f), _) => f.strip_suffix(".onnx").map_or(f.clone(), str::to_string),
            (None, _) => self.path.clone(),
        }
    }
}

impl CaseRef {
    /// A case at `location`, shown without `.` components, so that
    /// `./suites/x` and `suites/x` read (and shard) the same.
    fn at(location: &Path) -> CaseRef {
        let tidy: PathBuf = location
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect();
        let path = if tidy.as_os_str().is_empty() {
            ".".to_string()
        } else {
            tidy.display().to_string()
        };
        CaseRef {
            path,
            location: location.to_path_buf(),
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<CaseRef>) -> Result<()> {
    if dir.join("graph.json").is_file() {
        out.push(CaseRef::at(dir));
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for e in entries {
        let name = e
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if SKIPPED_DIRS.contains(&name.as_str()) || name.starts_with('.') {
            continue;
        }
        walk(&e, out)?;
    }
    Ok(())
}

/// The cases under `paths`: case directories, suites (walked recursively)
/// or graph files. Sorted by path, each once: a case reached twice (the
/// same suite spelled two ways, a suite and one of its cases, a symlink)
/// keeps the first name it was found under.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<CaseRef>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_file() && p.extension().is_some_and(|e| e == "onnx") {
            // ONNX models are found by `onnx_suite::find`.
            continue;
        } else if p.is_file() {
            out.push(CaseRef::at(p));
        } else if p.is_dir() {
            walk(p, &mut out)?;
        } else {
            bail!("{}: no such file or directory", p.display());
        }
    }
    let mut seen = HashSet::new();
    out.retain(|c| {
        let graph = if c.location.is_dir() {
            c.location.join("graph.json")
        } else {
            c.location.clone()
        };
        seen.insert(std::fs::canonicalize(&graph).unwrap_or(graph))
    });
    out.sort();
    Ok(out)
}

/// `K/N`: this machine runs shard K (1-based) of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub k: u64,
    pub n: u64,
}

impl std::str::FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> Result<Partition, String> {
        let bad = || format!("'{s}' is not K/N with 1 <= K <= N");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (k, n): (u64, u64) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Partition { k, n })
    }
}

impl Partition {
    /// A stable hash of the case path (FNV-1a), so every machine of a CI
    /// matrix agrees on the shards without talking to each other.
    pub fn contains(&self, case: &CaseRef) -> bool {
        let mut h: u64 = 0xcbf29ce484222325;
        for b in case.path.replace('\\', "/").bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h % self.n == self.k - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_cover_every_case_exactly_once() {
        let cases: Vec<CaseRef> = (0..500)
            .map(|i| CaseRef {
                path: format!("suites/x/case_{i}"),
                location: PathBuf::new(),
            })
            .collect();
        let n = 4;
        let mut counts = vec![0; n as usize];
        for c in &cases {
            let owners: Vec<u64> = (1..=n).filter(|&k| Partition { k, n }.contains(c)).collect();
            assert_eq!(owners.len(), 1);
            counts[(owners[0] - 1) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 80), "{counts:?}");
    }

    #[test]
    fn a_case_named_twice_runs_once_under_a_tidy_name() {
        let tmp = tempfile::tempdir().unwrap();
        let case = tmp.path().join("s/c");
        std::fs::create_dir_all(&case).unwrap();
        std::fs::write(case.join("graph.json"), "{}").unwrap();
        let s = tmp.path().join("s");
        let dotted = tmp.path().join(".").join("s").join(".");
        let found = discover(&[dotted, s.clone(), case.clone(), case.join("graph.json")]).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, case.display().to_string());
        assert_eq!(CaseRef::at(Path::new("./a/./b")).path, "a/b");
        assert_eq!(CaseRef::at(Path::new(".")).path, ".");
    }

    #[test]
    fn partition_parses_and_rejects() {
        assert_eq!("2/3".parse::<Partition>(), Ok(Partition { k: 2, n: 3 }));
        for bad in ["0/3", "4/3", "1", "a/b", "1/0"] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
    }
}
