//! ONNX test directories as suite cases: a directory holding `model.onnx`
//! and `test_data_set_*/` is one case per data set, and a `light_X.onnx`
//! with `light_X_output_0.pb` beside it (the onnx package's `light`
//! models) is one case fed ONNX's dummy input. Each is imported into a
//! temporary case directory that lives as long as [`OnnxCases`].

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use vigil_onnx::{write_case, Imported, InputSource, Options};

use crate::case::CaseTolerance;
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

/// How `vigil run` imports the models it finds (`--shape`,
/// `--random-inputs`); the default imports each as it is.
#[derive(Clone, Debug, Default)]
pub struct ImportSettings {
    /// Concrete shapes for graph inputs, by ONNX name: every model is
    /// specialized on them (a model without such an input is an errored
    /// case, as `vigil import` refuses it).
    pub shapes: Vec<(String, Vec<usize>)>,
    /// Feed every model inputs generated from this seed, one case per
    /// model with no expected outputs, instead of its data sets.
    pub random_inputs: Option<u64>,
}

/// The imported cases, and the tests whose import failed (with the one-line reason).
pub struct OnnxCases {
    pub cases: Vec<CaseRef>,
    pub failed: Vec<(CaseRef, String)>,
    _dir: Option<tempfile::TempDir>,
}

/// The tests of one model file: a case per `test_data_set_*/` beside it;
/// without one, ONNX's dummy input when `light` outputs are beside it, or,
/// for a model named on the command line (`top`), inputs from seed 0 and no
/// expected outputs.
fn model_tests(model: &Path, top: bool, out: &mut Vec<OnnxTest>) {
    // Data sets beside a model count for `model.onnx` (ONNX's layout) and
    // for a model named on the command line.
    let sets = if top || model.file_name().is_some_and(|f| f == "model.onnx") {
        vigil_onnx::data_sets(&vigil_onnx::model_dir(model))
    } else {
        Vec::new()
    };
    if !sets.is_empty() {
        out.extend(sets.into_iter().map(|ds| OnnxTest {
            path: ds.display().to_string(),
            model: model.to_path_buf(),
            source: InputSource::DataSet(ds),
        }));
        return;
    }
    let source = match vigil_onnx::case::light_outputs(model) {
        Some(outs) => InputSource::Dummy(outs),
        None if top => InputSource::Random(0),
        None => return,
    };
    out.push(OnnxTest {
        path: model.display().to_string(),
        model: model.to_path_buf(),
        source,
    });
}

fn walk(p: &Path, top: bool, out: &mut Vec<OnnxTest>) -> Result<()> {
    if p.is_file() {
        if p.extension().is_some_and(|e| e == "onnx") {
            model_tests(p, top, out);
        }
        return Ok(());
    }
    if !p.is_dir() || p.join("graph.json").is_file() {
        return Ok(());
    }
    let model = p.join("model.onnx");
    if model.is_file() {
        model_tests(&model, top, out);
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
        .with_context(|| format!("{}: cannot list", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        walk(&e, false, out)?;
    }
    Ok(())
}

/// True for one of ONNX's own backend tests, which keep ONNX's tolerances:
/// their model's directory is named `test_*` (every test the onnx package
/// ships or generates is). Other models' outputs are also judged against an
/// f64 evaluation (docs/onnx.md, "Tolerances").
pub fn is_backend_test(model: &Path) -> bool {
    let dir = vigil_onnx::model_dir(model);
    let dir = dir.canonicalize().unwrap_or(dir);
    dir.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("test_"))
}

/// True for a path that [`find`] reads as ONNX: a `.onnx` file, or a
/// directory holding `model.onnx` and no `graph.json`.
pub fn is_onnx(p: &Path) -> bool {
    (p.is_file() && p.extension().is_some_and(|e| e == "onnx"))
        || (p.is_dir() && !p.join("graph.json").is_file() && p.join("model.onnx").is_file())
}

/// `NAME=D0,D1,...` (`--shape`): an input's concrete shape; `NAME=` is a
/// scalar.
pub fn parse_shape(s: &str) -> std::result::Result<(String, Vec<usize>), String> {
    let bad = || format!("'{s}' is not NAME=D0,D1,... (dims are non-negative integers)");
    let (name, dims) = s.split_once('=').filter(|(n, _)| !n.is_empty()).ok_or_else(bad)?;
    let dims = match dims.trim() {
        "" => Vec::new(),
        d => d
            .split(',')
            .map(|x| x.trim().parse::<usize>().map_err(|_| bad()))
            .collect::<std::result::Result<_, _>>()?,
    };
    Ok((name.to_string(), dims))
}

/// Imports the model a single-case command (`exec`, `explain`, `debug`,
/// `minimize`) was given, as [`find`] reads it (the first of its tests),
/// into a temporary case directory that lives as long as the value.
pub fn import_one(path: &Path) -> Result<tempfile::TempDir> {
    let test = find(&[path.to_path_buf()])?
        .into_iter()
        .next()
        .with_context(|| format!("{}: no ONNX model found", path.display()))?;
    let dir = tempfile::tempdir().context("temporary directory for the imported ONNX case")?;
    vigil_onnx::import_path(&test.model, &Options::default(), &test.source)
        .map_err(anyhow::Error::from)
        .and_then(|m| write_test_case(&m, &test.source, &test.model, dir.path()))
        .with_context(|| format!("{}: import", test.model.display()))?;
    Ok(dir)
}

/// Writes an imported test of `model` into case directory `dir`:
/// [`write_case`], plus the `tolerance.json` its expected outputs are
/// compared with ([`CaseTolerance`]): ONNX's tolerances, and for a model
/// that is not one of ONNX's own backend tests ([`is_backend_test`]) the
/// f64 reference, since another engine computed its expected outputs.
pub fn write_test_case(m: &Imported, source: &InputSource, model: &Path, dir: &Path) -> Result<()> {
    write_case(m, source, dir)?;
    CaseTolerance {
        rtol: Some(ONNX_RTOL),
        atol: Some(ONNX_ATOL),
        f64_reference: !is_backend_test(model),
    }
    .write(dir)
}

/// Every ONNX test under `paths` (directories walked recursively).
pub fn find(paths: &[PathBuf]) -> Result<Vec<OnnxTest>> {
    let mut out = Vec::new();
    for p in paths {
        walk(p, true, &mut out)?;
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

/// Imports every test under `paths` into a temporary directory.
pub fn import_all(paths: &[PathBuf]) -> Result<OnnxCases> {
    import_all_with(paths, &ImportSettings::default())
}

/// [`find`], with every model fed from `seed` (one test per model, named
/// after the model file) when given.
fn find_with(paths: &[PathBuf], seed: Option<u64>) -> Result<Vec<OnnxTest>> {
    let mut tests = find(paths)?;
    if let Some(seed) = seed {
        tests.dedup_by(|a, b| a.model == b.model);
        for t in &mut tests {
            t.path = t.model.display().to_string();
            t.source = InputSource::Random(seed);
        }
    }
    Ok(tests)
}

/// [`import_all`] with `settings` (`vigil run --shape`, `--random-inputs`).
pub fn import_all_with(paths: &[PathBuf], settings: &ImportSettings) -> Result<OnnxCases> {
    let tests = find_with(paths, settings.random_inputs)?;
    if tests.is_empty() {
        return Ok(OnnxCases {
            cases: Vec::new(),
            failed: Vec::new(),
            _dir: None,
        });
    }
    let dir = tempfile::tempdir().context("temporary directory for imported ONNX cases")?;
    let opts = Options {
        shapes: settings.shapes.clone(),
        ..Options::default()
    };
    let (mut cases, mut failed) = (Vec::new(), Vec::new());
    for (k, t) in tests.iter().enumerate() {
        let location = dir.path().join(format!("{k}"));
        let case = CaseRef {
            path: t.path.clone(),
            location: location.clone(),
        };
        // A data set's inputs may stand in for constants (the node
        // tests feed Reshape's shape or ReduceSum's axes as inputs).
        let done = vigil_onnx::import_path(&t.model, &opts, &t.source)
            .map_err(anyhow::Error::from)
            .and_then(|m| write_test_case(&m, &t.source, &t.model, &location));
        match done {
            Ok(()) => cases.push(case),
            Err(e) => failed.push((case, format!("{e:#}"))),
        }
    }
    Ok(OnnxCases {
        cases,
        failed,
        _dir: Some(dir),
    })
}
