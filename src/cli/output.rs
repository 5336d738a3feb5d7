//! Writing result files all-or-nothing: on any failure, the files written so
//! far (and a directory this run created) are removed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Files written into one output directory by one command.
pub struct OutputDir {
    dir: PathBuf,
    created: bool,
    written: Vec<PathBuf>,
    done: bool,
}

impl OutputDir {
    pub fn create(dir: &Path) -> Result<OutputDir> {
        let created = !dir.exists();
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
        Ok(OutputDir {
            dir: dir.to_path_buf(),
            created,
            written: Vec::new(),
            done: false,
        })
    }

    /// Writes `name` through `f`, via a temporary file renamed into place.
    pub fn write(&mut self, name: &str, f: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let path = self.dir.join(name);
        self.written.push(tmp.clone());
        f(&tmp)?;
        std::fs::rename(&tmp, &path).with_context(|| format!("{}: cannot write", path.display()))?;
        self.written.pop();
        self.written.push(path);
        Ok(())
    }

    /// Keeps the files.
    pub fn commit(mut self) {
        self.done = true;
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        for p in &self.written {
            let _ = std::fs::remove_file(p);
        }
        if self.created {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}
