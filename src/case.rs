//! Suite cases on disk: a directory with `graph.json`, `inputs/<name>.npy`
//! and optionally `expected/<name>.npy`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use vigil_engine::graph::{Graph, GraphFile, VarKind};
use vigil_engine::{OpRegistry, Tensor};

/// Paths of one suite case.
#[derive(Clone, Debug)]
pub struct CasePaths {
    pub graph: PathBuf,
    pub inputs: Option<PathBuf>,
    pub expected: Option<PathBuf>,
    /// `tolerance.json` beside the graph, when there is one
    /// ([`CaseTolerance`]).
    pub tolerance: Option<PathBuf>,
    /// The temporary case an ONNX model was imported into, kept as long as
    /// these paths are.
    imported: Option<std::sync::Arc<tempfile::TempDir>>,
}

impl CasePaths {
    /// `path` is a case directory or a graph file; a graph file's own
    /// directory supplies `inputs/` and `expected/` when they exist. An
    /// ONNX model (a `.onnx` file, or a directory with `model.onnx`) is
    /// imported on the fly, fed from its first data set
    /// ([`crate::onnx_suite::import_one`]).
    pub fn resolve(path: &Path) -> Result<CasePaths> {
        if !path.exists() {
            bail!("{}: no such file or directory", path.display());
        }
        if crate::onnx_suite::is_onnx(path) {
            let dir = crate::onnx_suite::import_one(path)?;
            let mut paths = CasePaths::resolve(dir.path())?;
            paths.imported = Some(std::sync::Arc::new(dir));
            return Ok(paths);
        }
        let (graph, dir) = if path.is_dir() {
            (path.join("graph.json"), path.to_path_buf())
        } else {
            (
                path.to_path_buf(),
                path.parent().map(Path::to_path_buf).unwrap_or_default(),
            )
        };
        if !graph.is_file() {
            bail!("{}: no such graph file", graph.display());
        }
        let sub = |name: &str| Some(dir.join(name)).filter(|p| p.is_dir());
        Ok(CasePaths {
            graph,
            inputs: sub("inputs"),
            expected: sub("expected"),
            tolerance: Some(dir.join(CaseTolerance::FILE)).filter(|p| p.is_file()),
            imported: None,
        })
    }
}

/// How a case's outputs are compared with its `expected/`, from the case's
/// `tolerance.json` (docs/graph-format.md). Expected outputs that another
/// engine computed differ from Vigil's by that engine's rounding as well
/// as Vigil's, so a case imported from an ONNX model carries ONNX's
/// tolerances and asks for the f64 reference, and runs as the model does.
/// `--rtol`/`--atol` still win over the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseTolerance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtol: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atol: Option<f64>,
    /// Judge float outputs that miss the tolerance against the f64
    /// evaluation of the graph ([`crate::runner::model_atol`]).
    #[serde(default)]
    pub f64_reference: bool,
}

impl CaseTolerance {
    /// The file's name inside a case directory.
    pub const FILE: &'static str = "tolerance.json";

    /// Reads `path`; a tolerance that is negative or not finite is bad
    /// input naming the file and the field.
    pub fn read(path: &Path) -> Result<CaseTolerance> {
        let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
        let t: CaseTolerance = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a tolerance file", path.display()))?;
        for (field, v) in [("rtol", t.rtol), ("atol", t.atol)] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                bail!(
                    "{}: {field} is {v}, not a finite number at least 0",
                    path.display()
                );
            }
        }
        Ok(t)
    }

    /// Writes the file into case directory `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(Self::FILE);
        let text = serde_json::to_string_pretty(self).context("tolerance.json")?;
        std::fs::write(&path, text + "\n").with_context(|| path.display().to_string())
    }
}

/// Where a command takes its inputs from, so that an unfed input is
/// explained in terms of what that command accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedSource {
    /// `vigil exec`: `--input NAME=FILE` flags and an inputs directory.
    Flags,
    /// `vigil run`: only the case's `inputs/` directory.
    CaseDir,
}

/// True for names that are safe as `<name>.npy` inside a case or output
/// directory: no separators, no `..`, nothing hidden. Checked on reads as
/// on writes, so a graph from an untrusted source cannot make Vigil touch
/// files outside its own directories.
pub fn is_file_stem(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Reads the graph's inputs: `NAME.npy` in `dir` for each graph input, then
/// the explicit `overrides`. Every input must end up fed, and every file
/// must hold the dtype and shape its input declares: a wrong file is
/// reported against the file, not the graph.
pub fn load_feeds(
    graph: &Graph,
    dir: Option<&Path>,
    overrides: &[(String, PathBuf)],
    source: FeedSource,
) -> Result<HashMap<String, Tensor>> {
    let mut feeds = HashMap::new();
    for (name, path) in overrides {
        match graph.var_id(name).map(|v| &graph.var(v).kind) {
            Some(VarKind::Input { .. } | VarKind::Parameter(_)) => {}
            _ => bail!("--input {name}: graph '{}' has no input '{name}'", graph.name()),
        }
        feeds.insert(name.clone(), read_feed(graph, name, path)?);
    }
    for v in graph.inputs() {
        let name = &graph.var(v).name;
        if feeds.contains_key(name) {
            continue;
        }
        if dir.is_some() && !is_file_stem(name) {
            bail!(
                "input '{name}' cannot be read from {}: its name is not a plain file name (letters, digits, '_', '-', '.'; not starting with '.'); give --input {name}=FILE.npy",
                dir.map(|d| d.display().to_string()).unwrap_or_default()
            );
        }
        let file = dir.map(|d| d.join(format!("{name}.npy")));
        match (file, source) {
            (Some(f), _) if f.is_file() => {
                let t = read_feed(graph, name, &f)?;
                feeds.insert(name.clone(), t);
            }
            (_, FeedSource::Flags) => bail!(
                "input '{name}' is not fed: give --input {name}=FILE.npy{}",
                dir.map(|d| format!(" or put {name}.npy in {}", d.display()))
                    .unwrap_or_default()
            ),
            (Some(f), FeedSource::CaseDir) => {
                bail!("input '{name}' is not fed: {} does not exist", f.display())
            }
            (None, FeedSource::CaseDir) => {
                bail!("input '{name}' is not fed: the case has no inputs/ directory (put {name}.npy there)")
            }
        }
    }
    Ok(feeds)
}

/// Reads one input file and checks it against the input's declared dtype
/// and shape.
fn read_feed(graph: &Graph, name: &str, path: &Path) -> Result<Tensor> {
    let t = with_layout_file(Tensor::read_npy(path)?, path)?;
    if let Some(v) = graph.var_id(name) {
        let ty = &graph.var(v).ty;
        if t.dtype() != ty.dtype || !ty.admits(t.shape()) {
            bail!(
                "{}: holds {} {:?}, but input '{name}' of graph '{}' is {} {}",
                path.display(),
                t.dtype(),
                t.shape(),
                graph.name(),
                ty.dtype,
                ty.shape_string()
            );
        }
    }
    Ok(t)
}

/// The ops the `vigil` command knows: the built-in library plus the
/// broken-op corpora (`broken_*` and their `fixed_*` twins), so
/// `suites/broken` loads. A fresh registry each call: add your own ops to
/// it (or start from [`OpRegistry::builtin`]) and pass it on.
pub fn default_registry() -> OpRegistry {
    let mut r = vigil_listeners::broken::registry();
    vigil_debugmode::broken::register(&mut r);
    r
}

/// Loads the graph of a case, making its ops from `registry`. A graph file
/// may come from anyone, so before anything is read on its word: it must
/// fit the allocation limit (see [`MAX_PARSE_GROWTH`]), and every constant
/// or parameter it keeps in an `npy` file must name a file inside the
/// graph's own directory.
pub fn load_graph(path: &Path, registry: &OpRegistry) -> Result<Graph> {
    let wrap = |e: vigil_engine::Error| match e {
        vigil_engine::Error::File { .. } | vigil_engine::Error::Npy { .. } => anyhow::Error::from(e),
        other => anyhow::Error::from(vigil_engine::Error::file(path, other)),
    };
    let limit = vigil_engine::tensor::limit::alloc_limit();
    let size = std::fs::metadata(path)
        .map_err(|e| vigil_engine::Error::file(path, e))?
        .len();
    if size.saturating_mul(MAX_PARSE_GROWTH) > limit {
        bail!(
            "{}: {size} bytes; parsing it could take up to {} bytes, past the allocation limit of {limit} bytes (--max-alloc)",
            path.display(),
            size.saturating_mul(MAX_PARSE_GROWTH)
        );
    }
    let text = std::fs::read_to_string(path).map_err(|e| vigil_engine::Error::file(path, e))?;
    let file = GraphFile::parse(&text).map_err(wrap)?;
    let base = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    for (decl, what) in file
        .constants
        .iter()
        .map(|d| (d, "constant"))
        .chain(file.parameters.iter().map(|d| (d, "parameter")))
    {
        if let Some(rel) = &decl.npy {
            inside(base, rel).map_err(|why| {
                anyhow::anyhow!(
                    "{}: {what} '{}': npy '{rel}' {why}; a graph reads only files of its own directory",
                    path.display(),
                    decl.name
                )
            })?;
        }
    }
    file.to_graph(path.parent(), registry).map_err(wrap)
}

/// How many bytes one byte of graph JSON can take while parsed, at most: a
/// number in inline `data` is two bytes of text (`1,`) and a 32-byte JSON
/// value in one vector.
pub const MAX_PARSE_GROWTH: u64 = 16;

/// Checks that `rel`, a path a graph file names, stays inside `dir`: a
/// relative path of plain components that, once symbolic links are
/// resolved, is still under `dir`. A missing file passes (reading it
/// reports it).
fn inside(dir: &Path, rel: &str) -> std::result::Result<(), &'static str> {
    let p = Path::new(rel);
    if !p
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
    {
        return Err("is not a relative path inside the graph's directory");
    }
    if let (Ok(d), Ok(f)) = (dir.canonicalize(), dir.join(p).canonicalize()) {
        if !f.starts_with(&d) {
            return Err("leads outside the graph's directory through a symbolic link");
        }
    }
    Ok(())
}

/// The `expected/*.npy` tensors of a case, by output name.
pub fn load_expected(dir: &Path) -> Result<HashMap<String, Tensor>> {
    let mut out = HashMap::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?;
    for e in entries {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "npy") {
            let name = p.file_stem().unwrap_or_default().to_string_lossy().to_string();
            out.insert(name, Tensor::read_npy(&p)?);
        }
    }
    Ok(out)
}

/// The view `NAME.layout.json` beside `NAME.npy` describes, when there is
/// one: the `.npy` holds the whole buffer (1-D) and the layout file the
/// view's `shape`, `strides` (in elements, negative or zero too) and
/// `offset` (see docs/graph-format.md). `vigil opcheck` writes these.
fn with_layout_file(t: Tensor, npy: &Path) -> Result<Tensor> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ViewFile {
        shape: Vec<usize>,
        strides: Vec<isize>,
        offset: usize,
    }
    let file = npy.with_extension("layout.json");
    if !file.is_file() {
        return Ok(t);
    }
    let text = std::fs::read_to_string(&file).with_context(|| file.display().to_string())?;
    let v: ViewFile =
        serde_json::from_str(&text).with_context(|| format!("{}: not a view layout", file.display()))?;
    if t.ndim() != 1 {
        bail!(
            "{}: with a layout file the .npy must hold the whole buffer as one dimension, it has shape {:?}",
            npy.display(),
            t.shape()
        );
    }
    if v.shape.len() != v.strides.len() {
        bail!(
            "{}: shape has {} dimensions and strides {}",
            file.display(),
            v.shape.len(),
            v.strides.len()
        );
    }
    t.with_layout(vigil_engine::Layout::new(v.shape, v.strides, v.offset))
        .with_context(|| {
            format!(
                "{}: the view does not fit the buffer of {}",
                file.display(),
                npy.display()
            )
        })
}
