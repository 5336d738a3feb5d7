//! What the parent and a worker say to each other: one [`Job`] per line on
//! the worker's stdin, one [`Reply`] per line on its stdout. A reply line
//! starts with [`MARKER`], so that whatever an op prints to stdout is told
//! apart from the protocol (the parent passes such lines on to stderr).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use vigil_reports::Case;

use crate::runner::{Mode, RunConfig, ToleranceOverrides};
use crate::suite::CaseRef;

/// Starts every reply line.
pub const MARKER: &str = "\u{1e}vigil-worker ";

/// One case to run, with the configuration to run it in.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// The case as the report names it.
    pub path: String,
    /// Where it lives on disk.
    pub location: PathBuf,
    pub mode: Mode,
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
    /// `--checks`, as given.
    pub checks: Option<String>,
    pub inplace: bool,
    /// [`RunConfig::f64_reference`].
    #[serde(default)]
    pub f64_reference: bool,
}

impl Job {
    /// `case` in `cfg`; `checks` is the `--checks` list `cfg.debug` was
    /// made from.
    pub fn new(case: &CaseRef, cfg: &RunConfig, checks: Option<&str>) -> Job {
        Job {
            path: case.path.clone(),
            location: case.location.clone(),
            mode: cfg.mode,
            rtol: cfg.tolerance.rtol,
            atol: cfg.tolerance.atol,
            checks: checks.map(str::to_string),
            inplace: cfg.inplace,
            f64_reference: cfg.f64_reference,
        }
    }

    pub fn case(&self) -> CaseRef {
        CaseRef {
            path: self.path.clone(),
            location: self.location.clone(),
        }
    }

    /// The run configuration back, as the parent had it.
    pub fn config(&self) -> anyhow::Result<RunConfig> {
        let mut cfg = RunConfig::new(
            self.mode,
            ToleranceOverrides {
                rtol: self.rtol,
                atol: self.atol,
            },
        );
        cfg.inplace = self.inplace;
        cfg.f64_reference = self.f64_reference;
        if let Some(checks) = &self.checks {
            cfg.debug = cfg.debug.with_checks(checks)?;
        }
        Ok(cfg)
    }
}

/// A worker's answer to one [`Job`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reply {
    /// The case's result, exactly as an in-process run gives it.
    Case(Box<Case>),
    /// The job line could not be read (a bug: parent and worker are the
    /// same executable).
    Refused(String),
}
