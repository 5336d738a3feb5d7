//! `vigil exec`: run one graph, write its outputs and a manifest.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::case::{load_feeds, load_graph, CasePaths, FeedSource};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use vigil_engine::graph::VarKind;
use vigil_engine::{DType, Executor, OpRegistry, RunOptions, Tensor};
use vigil_listeners::{ListenerSet, ProfilingListener, RecordingListener, TracingListener};

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
    /// Directory for <output>.npy files and manifest.json.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Run the graph as written, without the in-place pass.
    #[arg(long)]
    no_inplace: bool,
    /// Record every activation to DIR/<step>_<var>.npy plus index.json
    /// (compare two recordings with `vigil compare`).
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// Write a Chrome trace-event file of op timings (opens in Perfetto).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
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

pub fn run(a: ExecArgs, registry: &OpRegistry) -> Result<ExitCode> {
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
    let graph = if a.no_inplace {
        graph
    } else {
        vigil_engine::inplace::run(&graph)
            .with_context(|| case.graph.display().to_string())?
            .graph
    };
    let exec = Executor::new(&graph).with_context(|| case.graph.display().to_string())?;
    let mut set = ListenerSet::new().with_listener(TracingListener::new());
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
    let out = exec
        .run_with(&feeds, &mut set, &RunOptions::default())
        .with_context(|| case.graph.display().to_string())?;
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
    for (name, t) in &out.outputs {
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
    Ok(ExitCode::SUCCESS)
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
