//! `vigil exec`: run one graph, write its outputs and a manifest; with
//! `--mode validate|debug`, also check it as `vigil run` does and print
//! the findings.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;

use std::io::IsTerminal;

use crate::case::{load_feeds, load_graph, CasePaths, FeedSource};
use crate::runner::{check_warm, Mode, RunConfig, ToleranceOverrides};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use vigil_engine::graph::VarKind;
use vigil_engine::{DType, OpRegistry, Tensor};
use vigil_listeners::{ListenerSet, ProfilingListener, RecordingListener, TracingListener};
use vigil_reports::Format;

use super::output::OutputDir;

#[derive(Args)]
pub struct ExecArgs {
    /// A graph.json, or a suite case directory (its inputs/ is used).
    graph: PathBuf,
    /// Feed input NAME from FILE.npy (repeatable).
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = parse_input)]
    inputs: Vec<(String, PathBuf)>,
    /// Read each input NAME from DIR/NAME.npy.
    #[arg(long, value_name = "DIR")]
    inputs_dir: Option<PathBuf>,
    /// Directory for <output>.npy files and manifest.json (must not exist,
    /// or be empty).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Run the graph as written, without the in-place pass.
    #[arg(long)]
    no_inplace: bool,
    /// Record every activation to DIR/<step>_<var>.npy plus index.json
    /// (compare two recordings with `vigil compare`; DIR must not exist,
    /// or be empty).
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// Write a Chrome trace-event file of op timings (opens in Perfetto).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Runs the graph N times with no listeners before the run that
    /// counts, so `--profile` times a warm run (buffers reused, constants
    /// paged in) as `vigil bench` does, not the first one.
    #[arg(long, value_name = "N", default_value_t = 0)]
    warmup: usize,
    /// plain runs the graph and writes its outputs (nothing is compared);
    /// validate adds the non-in-place, view-map and numerics listeners and
    /// debug runs DebugMode, as `vigil run` does: their findings go to
    /// stdout, and an error finding makes the exit code 1.
    #[arg(long, value_enum, default_value = "plain")]
    mode: Mode,
    /// With --mode debug: the checks to run (as `vigil run --checks`).
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
    /// How findings are printed with --mode validate or debug (table, json,
    /// markdown, html, junit).
    #[arg(long, default_value = "table")]
    format: Format,
}

fn parse_input(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((n, f)) if !n.is_empty() && !f.is_empty() => Ok((n.to_string(), PathBuf::from(f))),
        _ => Err(format!("'{s}' is not NAME=FILE.npy")),
    }
}

#[derive(Serialize)]
struct OutputEntry {
    dtype: DType,
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
    view_of: Option<String>,
}

#[derive(Serialize)]
struct Manifest {
    graph: String,
    outputs: BTreeMap<String, OutputEntry>,
}

/// Refuses a directory that holds files: old outputs would mix with the new.
fn check_empty(flag: &str, dir: &std::path::Path) -> Result<()> {
    if dir.exists() && dir.read_dir().map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{flag} {}: exists and is not an empty directory", dir.display());
    }
    Ok(())
}

pub fn run(a: ExecArgs, registry: &OpRegistry) -> Result<ExitCode> {
    check_empty("--out", &a.out)?;
    if let Some(r) = &a.record {
        check_empty("--record", r)?;
    }
    if a.mode == Mode::Debug {
        // DebugMode runs the graph several times with its own listeners.
        for (flag, set) in [
            ("--record", a.record.is_some()),
            ("--profile", a.profile.is_some()),
            ("--no-inplace", a.no_inplace),
            ("--warmup", a.warmup > 0),
        ] {
            if set {
                bail!("{flag} works with --mode plain or validate, not debug");
            }
        }
    } else if a.checks.is_some() {
        bail!("--checks works with --mode debug");
    }
    let mut cfg = RunConfig::new(a.mode, ToleranceOverrides::default());
    cfg.inplace = !a.no_inplace;
    if let Some(checks) = &a.checks {
        cfg.debug = super::with_checks(cfg.debug, checks)?;
    }
    let case = CasePaths::resolve(&a.graph)?;
    let graph = load_graph(&case.graph, registry)?;
    let dir = a.inputs_dir.clone().or(case.inputs.clone());
    if let Some(d) = &a.inputs_dir {
        if !d.is_dir() {
            bail!("--inputs-dir {}: no such directory", d.display());
        }
    }
    for &o in graph.outputs() {
        let name = &graph.var(o).name;
        if !crate::case::is_file_stem(name) {
            bail!(
                "{}: output '{name}' cannot be a file name (use letters, digits, '_', '-', '.')",
                case.graph.display()
            );
        }
    }
    let feeds = load_feeds(&graph, dir.as_deref(), &a.inputs, FeedSource::Flags)?;
    let mut set = ListenerSet::new().with_listener(TracingListener::new());
    set.set_case(Some(a.graph.display().to_string()));
    if a.profile.is_some() {
        set.push_listener(ProfilingListener::new());
    }
    // A recording directory this command creates is removed if it fails.
    let record_guard = match &a.record {
        Some(dir) => {
            let guard = RemoveOnFailure::new(dir);
            let r = RecordingListener::new(dir).with_context(|| format!("--record {}", dir.display()))?;
            set.push_listener(r);
            Some(guard)
        }
        None => None,
    };
    let checked =
        check_warm(&graph, &feeds, &cfg, set, a.warmup).with_context(|| case.graph.display().to_string())?;
    let (graph, set) = (checked.graph, checked.listeners);
    if let Some(r) = set.get::<RecordingListener>() {
        if let Some(e) = r.error() {
            bail!("--record {}: {e}", r.dir().display());
        }
    }

    // Which source variable's buffer each output shares.
    let mut sources: HashMap<u64, String> = HashMap::new();
    for v in graph.vars() {
        let t: Option<&Tensor> = match &v.kind {
            VarKind::Input { .. } => feeds.get(&v.name),
            VarKind::Parameter(t) => feeds.get(&v.name).or(Some(t)),
            VarKind::Constant(t) => Some(t),
            VarKind::Output { .. } => None,
        };
        if let Some(t) = t {
            sources.entry(t.buffer_id()).or_insert_with(|| v.name.clone());
        }
    }
    let mut manifest = Manifest {
        graph: graph.name().to_string(),
        outputs: BTreeMap::new(),
    };
    let mut dirw = OutputDir::create(&a.out)?;
    for (name, t) in &checked.outputs {
        dirw.write(&format!("{name}.npy"), |p| Ok(t.write_npy(p)?))?;
        manifest.outputs.insert(
            name.clone(),
            OutputEntry {
                dtype: t.dtype(),
                shape: t.shape().to_vec(),
                strides: t.strides().to_vec(),
                offset: t.offset(),
                view_of: sources.get(&t.buffer_id()).cloned(),
            },
        );
    }
    let json = serde_json::to_string_pretty(&manifest)?;
    dirw.write("manifest.json", |p| {
        std::fs::write(p, &json).with_context(|| format!("{}: cannot write", p.display()))
    })?;
    if let (Some(path), Some(p)) = (&a.profile, set.get::<ProfilingListener>()) {
        let json = serde_json::to_vec(&p.chrome_trace())?;
        vigil_reports::write_atomic(path, &json).with_context(|| format!("--profile {}", path.display()))?;
    }
    dirw.commit();
    if let Some(g) = record_guard {
        g.keep();
    }
    let wrote = written_line(&a, &manifest);
    if a.mode == Mode::Plain {
        super::emit(&wrote)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Machine-readable findings keep stdout to themselves.
    if a.format == Format::Table {
        super::emit(&wrote)?;
    } else {
        eprint!("{wrote}");
    }
    // The findings, as `vigil run` reports a case.
    let name = if case.graph.file_name().is_some_and(|f| f == "graph.json") {
        case.graph.parent().and_then(std::path::Path::file_name)
    } else {
        case.graph.file_stem()
    }
    .map_or_else(
        || a.graph.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut result = vigil_reports::Case::new(name, a.graph.display().to_string());
    for mut f in checked.findings {
        if a.mode == Mode::Debug {
            f.case = None;
        }
        result = result.with_finding(f);
    }
    let report = vigil_reports::Report::new(a.mode.name(), vec![result])
        .with_vigil_version(env!("CARGO_PKG_VERSION"))
        .with_checks(super::check_names(a.mode, &cfg.debug));
    super::emit(&vigil_reports::render(
        &report,
        a.format,
        a.format == Format::Table && std::io::stdout().is_terminal(),
    ))?;
    let summary = report.summary();
    if !summary.ok() {
        let kinds: Vec<&String> = summary.findings_by_kind.keys().collect();
        eprintln!(
            "vigil: exec found errors under --mode {}: {}",
            a.mode.name(),
            kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `exec` wrote: each output with its dtype and shape, the manifest,
/// and the recording and profile when asked for.
fn written_line(a: &ExecArgs, manifest: &Manifest) -> String {
    let outs: Vec<String> = manifest
        .outputs
        .iter()
        .map(|(name, o)| format!("{name}.npy ({} {:?})", o.dtype, o.shape))
        .collect();
    let mut s = format!(
        "wrote {} to {}: {}, manifest.json\n",
        vigil_reports::plural(outs.len() as u64, "output"),
        a.out.display(),
        outs.join(", ")
    );
    if let Some(r) = &a.record {
        s.push_str(&format!("recorded every value to {} (index.json)\n", r.display()));
    }
    if let Some(p) = &a.profile {
        s.push_str(&format!("wrote the op profile to {}\n", p.display()));
    }
    s
}

/// Removes a directory this command created unless told to keep it.
struct RemoveOnFailure {
    dir: Option<PathBuf>,
}

impl RemoveOnFailure {
    fn new(dir: &std::path::Path) -> RemoveOnFailure {
        RemoveOnFailure {
            dir: (!dir.exists()).then(|| dir.to_path_buf()),
        }
    }

    fn keep(mut self) {
        self.dir = None;
    }
}

impl Drop for RemoveOnFailure {
    fn drop(&mut self) {
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
