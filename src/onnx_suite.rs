//! ONNX test directories as suite cases: a directory holding `model.onnx`
//! and `test_data_set_*/` is one case per data set, and a `light_X.onnx`
//! with `light_X_output_0.pb` beside it (the onnx package's `light`
//! models) is one case fed ONNX's dummy input. Each is imported into a
//! temporary case directory that lives as long as [`OnnxCases`].

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use vigil_onnx::{import_for, read_model, write_case, InputSource, Options};

use crate::suite::CaseRef;

/// ONNX's backend-test tolerances, used unless `--rtol`/`--atol` say otherwise.
pub const ONNX_RTOL: f64 = 1e-3;
pub const ONNX_ATOL: f64 = 1e-7;

/// One ONNX test to run: where it was found and how it is fed.
#[derive(Clone, Debug)]
pub struct OnnxTest {
    /// Display path: the data set directory, or the light model file.
    pub path: String,
    pub model: PathBuf,
    pub source: InputSource,
}

/// The imported cases, and the tests whose import failed (with the one-line reason).
pub struct OnnxCases {
    pub cases: Vec<CaseRef>,
    pub failed: Vec<(CaseRef, String)>,
    _dir: Option<tempfile::TempDir>,
}

fn light_outputs(model: &Path) -> Option<Vec<PathBuf>> {
    let stem = model.file_stem()?.to_str()?;
    let dir = model.parent()?;
    let v: Vec<PathBuf> = (0..)
        .map(|k| dir.join(format!("{stem}_output_{k}.pb")))
        .take_while(|p| p.is_file())
        .collect();
    (!v.is_empty()).then_some(v)
}

fn walk(p: &Path, out: &mut Vec<OnnxTest>) -> Result<()> {
    if p.is_file() {
        if p.extension().is_some_and(|e| e == "onnx") {
            if let Some(outs) = light_outputs(p) {
                out.push(OnnxTest {
                    path: p.display().to_string(),
                    model: p.to_path_buf(),
                    source: InputSource::Dummy(outs),
                });
            }
        }
        return Ok(());
    }
    if !p.is_dir() {
        return Ok(());
    }
    let model = p.join("model.onnx");
    if model.is_file() {
        for ds in vigil_onnx::data_sets(p) {
            out.push(OnnxTest {
                path: ds.display().to_string(),
                model: model.clone(),
                source: InputSource::DataSet(ds),
            });
        }
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
        .with_context(|| format!("{}: cannot list", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        walk(&e, out)?;
    }
    Ok(())
}

/// Every ONNX test under `paths` (directories walked recursively).
pub fn find(paths: &[PathBuf]) -> Result<Vec<OnnxTest>> {
    let mut out = Vec::new();
    for p in paths {
        walk(p, &mut out)?;
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

/// Imports every test under `paths` into a temporary directory.
pub fn import_all(paths: &[PathBuf]) -> Result<OnnxCases> {
    let tests = find(paths)?;
    if tests.is_empty() {
        return Ok(OnnxCases {
            cases: Vec::new(),
            failed: Vec::new(),
            _dir: None,
        });
    }
    let dir = tempfile::tempdir().context("temporary directory for imported ONNX cases")?;
    let (mut cases, mut failed) = (Vec::new(), Vec::new());
    for (k, t) in tests.iter().enumerate() {
        let location = dir.path().join(format!("{k}"));
        let case = CaseRef {
            path: t.path.clone(),
            location: location.clone(),
        };
        // A data set's inputs may stand in for constants (the node
        // tests feed Reshape's shape or ReduceSum's axes as inputs).
        let done = read_model(&t.model)
            .and_then(|m| import_for(&m, &Options::default(), &t.source))
            .and_then(|m| write_case(&m, &t.source, &location));
        match done {
            Ok(()) => cases.push(case),
            Err(e) => failed.push((case, e.to_string())),
        }
    }
    Ok(OnnxCases {
        cases,
        failed,
        _dir: Some(dir),
    })
}
