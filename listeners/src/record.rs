//! RecordingListener: every activation to `DIR/<step>_<var>.npy` plus an
//! `index.json`, so two runs (even from separate processes) can be compared
//! with [`crate::compare`] or `vigil compare`. The graph's inputs and
//! parameters are recorded too, as their first reader is about to run, so
//! a comparison names a perturbed weight rather than the first activation
//! it reached.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vigil_engine::exec::{At, Listener, OpEvent};
use vigil_engine::graph::{VarId, VarKind};
use vigil_engine::{Graph, Tensor};

/// The name of the index file in a recording directory.
pub const INDEX: &str = "index.json";

/// One recorded activation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// Position in the recording, over all runs.
    pub step: u64,
    pub var: String,
    /// What the variable is: `activation` (an op's output), `input` or
    /// `parameter` (fed to the run). Recordings without it are all
    /// activations.
    #[serde(default = "activation")]
    pub kind: String,
    /// For an activation, the node that computed it; for an input or a
    /// parameter, the first node that read it.
    pub node: String,
    pub op: String,
    pub epoch: usize,
    pub iteration: usize,
    pub dtype: String,
    pub shape: Vec<usize>,
    /// File name inside the recording directory.
    pub file: String,
}

/// `index.json`: what was recorded, in execution order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Index {
    pub format: String,
    pub graph: String,
    pub entries: Vec<Entry>,
}

pub const FORMAT: &str = "vigil-recording/1";

/// [`Entry::kind`] of an op's output.
pub const ACTIVATION: &str = "activation";

fn activation() -> String {
    ACTIVATION.to_string()
}

pub struct RecordingListener {
    dir: PathBuf,
    index: Index,
    error: Option<String>,
    /// Inputs and parameters recorded in the current run.
    sources_seen: HashSet<VarId>,
}

/// A file-name-safe form of a variable name.
fn stem(var: &str) -> String {
    var.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl RecordingListener {
    /// Records into `dir`, which is created if needed.
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<RecordingListener> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(RecordingListener {
            dir,
            index: Index {
                format: FORMAT.into(),
                ..Index::default()
            },
            error: None,
            sources_seen: HashSet::new(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn entries(&self) -> &[Entry] {
        &self.index.entries
    }

    /// The first write error, if any; recording stops at it.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Writes `index.json` (also done at the end of every run).
    pub fn flush(&mut self) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(&self.index)?;
        std::fs::write(self.dir.join(INDEX), json)
    }

    fn record(&mut self, at: &At, ev: &OpEvent, output: usize, value: &Tensor) -> Result<(), String> {
        let var = ev
            .node
            .outputs
            .get(output)
            .map(|&v| ev.graph.var(v).name.clone())
            .unwrap_or_default();
        self.write(at, ev, var, ACTIVATION, value)
    }

    /// The inputs and parameters `ev`'s node reads that this run has not
    /// recorded yet (before the node runs, so before any destroy).
    fn record_sources(&mut self, at: &At, ev: &OpEvent) -> Result<(), String> {
        for (&v, value) in ev.node.inputs.iter().zip(ev.inputs) {
            let var = ev.graph.var(v);
            let kind = match var.kind {
                VarKind::Input { .. } => "input",
                VarKind::Parameter(_) => "parameter",
                VarKind::Constant(_) | VarKind::Output { .. } => continue,
            };
            if self.sources_seen.insert(v) {
                self.write(at, ev, var.name.clone(), kind, value)?;
            }
        }
        Ok(())
    }

    fn write(
        &mut self,
        at: &At,
        ev: &OpEvent,
        var: String,
        kind: &str,
        value: &Tensor,
    ) -> Result<(), String> {
        let step = self.index.entries.len() as u64;
        let file = format!("{step:06}_{}.npy", stem(&var));
        value.write_npy(self.dir.join(&file)).map_err(|e| e.to_string())?;
        self.index.entries.push(Entry {
            step,
            var,
            kind: kind.to_string(),
            node: ev.node.name.clone(),
            op: ev.op_name().to_string(),
            epoch: at.epoch,
            iteration: at.iteration,
            dtype: value.dtype().to_string(),
            shape: value.shape().to_vec(),
            file,
        });
        Ok(())
    }
}

impl Listener for RecordingListener {
    fn operation_start(&mut self, _at: &At, graph: &Graph) {
        self.index.graph = graph.name().to_string();
        self.sources_seen.clear();
    }

    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        if self.error.is_none() {
            if let Err(e) = self.record_sources(at, ev) {
                tracing::warn!(target: "vigil::record", "recording stopped: {e}");
                self.error = Some(e);
            }
        }
    }

    fn activation_available(&mut self, at: &At, ev: &OpEvent, output: usize, value: &Tensor) {
        if self.error.is_none() {
            if let Err(e) = self.record(at, ev, output, value) {
                tracing::warn!(target: "vigil::record", "recording stopped: {e}");
                self.error = Some(e);
            }
        }
    }

    fn operation_end(&mut self, _at: &At, _graph: &Graph) {
        if let Err(e) = self.flush() {
            self.error.get_or_insert(e.to_string());
        }
    }
}
