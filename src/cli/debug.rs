//! `vigil debug CASE`: DebugMode on one case, every check on by default,
//! with the full findings.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::runner::{Mode, RunConfig, Suites, Tolerance};
use anyhow::{bail, Context, Result};
use clap::Args;
use vigil_debugmode::DebugConfig;
use vigil_engine::OpRegistry;
use vigil_reports::{render, Format, Report};

#[derive(Args)]
pub struct DebugArgs {
    /// A suite case directory (graph.json, inputs/, expected/) or a graph.json.
    case: PathBuf,
    /// The checks to run, comma-separated (listeners, lockstep, culprit,
    /// poison, arbitrate, orders, prealloc, gradient, or all; default: all).
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
    /// table, json, markdown, html or junit.
    #[arg(long, default_value = "table")]
    format: Format,
    /// Seed of the random orders and gradient directions.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn debug(a: DebugArgs, registry: &OpRegistry) -> Result<ExitCode> {
    // ONNX models are imported as `vigil run` imports them.
    let suites = Suites::discover(std::slice::from_ref(&a.case))?;
    let [case] = suites.cases.as_slice() else {
        bail!(
            "{}: holds {} cases; vigil debug takes one (use vigil run for suites)",
            a.case.display(),
            suites.cases.len()
        );
    };
    let mut cfg = RunConfig::new(Mode::Debug, Tolerance::default());
    cfg.debug = DebugConfig {
        seed: a.seed,
        ..DebugConfig::all()
    };
    if let Some(checks) = &a.checks {
        cfg.debug = cfg.debug.with_checks(checks).context("--checks")?;
    }
    let result = suites.run_case(case, &cfg, registry);
    let failed = result.status != vigil_reports::Status::Pass;
    let report = Report::new(Mode::Debug.name(), vec![result]);
    super::emit(&render(&report, a.format, false))?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
