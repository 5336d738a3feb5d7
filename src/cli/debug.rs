//! `vigil debug CASE`: DebugMode on one case, every check on by default,
//! with the full findings.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::runner::{Mode, RunConfig, Suites, ToleranceOverrides};
use anyhow::{bail, Context, Result};
use clap::Args;
use vigil_debugmode::DebugConfig;
use vigil_engine::OpRegistry;
use vigil_reports::{render, write_report, Format, Report};

#[derive(Args)]
pub struct DebugArgs {
    /// A suite case directory (graph.json, inputs/, expected/), a graph.json,
    /// or an ONNX model (a .onnx file or its directory).
    case: PathBuf,
    /// The checks to run, comma-separated (listeners, lockstep, culprit,
    /// poison, arbitrate, orders, prealloc, gradient, layouts, threads, or
    /// all; default: all).
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
    /// Report format (table, json, markdown, html, junit). With --report,
    /// defaults to the file's extension.
    #[arg(long)]
    format: Option<Format>,
    /// Write the report to FILE (atomically); stdout then gets the table.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Seed of the random orders and gradient directions.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Relative tolerance for float outputs against expected/ (default
    /// per dtype, as `vigil run`).
    #[arg(long, value_parser = super::parse_tolerance, allow_hyphen_values = true)]
    rtol: Option<f64>,
    /// Absolute tolerance for float outputs against expected/ (default
    /// per dtype, as `vigil run`).
    #[arg(long, value_parser = super::parse_tolerance, allow_hyphen_values = true)]
    atol: Option<f64>,
}

pub fn debug(a: DebugArgs, registry: &OpRegistry) -> Result<ExitCode> {
    let format = match (&a.report, a.format) {
        (_, Some(f)) => f,
        (Some(p), None) => super::run::format_for(p).with_context(|| {
            format!(
                "--report {}: cannot tell the format from the extension; give --format",
                p.display()
            )
        })?,
        (None, None) => Format::Table,
    };
    if let Some(p) = &a.report {
        super::run::check_report_path(p)?;
    }
    // ONNX models are imported as `vigil run` imports them.
    let suites = Suites::discover(std::slice::from_ref(&a.case))?;
    let [case] = suites.cases.as_slice() else {
        bail!(
            "{}: holds {} cases; vigil debug takes one (use vigil run for suites)",
            a.case.display(),
            suites.cases.len()
        );
    };
    let mut cfg = RunConfig::new(
        Mode::Debug,
        ToleranceOverrides {
            rtol: a.rtol,
            atol: a.atol,
        },
    );
    cfg.debug = DebugConfig {
        seed: a.seed,
        ..DebugConfig::all()
    };
    if let Some(checks) = &a.checks {
        cfg.debug = super::with_checks(cfg.debug, checks)?;
    }
    let result = suites.run_case(case, &cfg, registry);
    let failed = result.status != vigil_reports::Status::Pass;
    let report = Report::new(Mode::Debug.name(), vec![result])
        .with_vigil_version(env!("CARGO_PKG_VERSION"))
        .with_checks(super::check_names(Mode::Debug, &cfg.debug));
    let color = std::io::stdout().is_terminal();
    match &a.report {
        Some(path) => {
            write_report(path, &report, format).context("--report")?;
            super::emit(&render(&report, Format::Table, color))?;
        }
        None => super::emit(&render(&report, format, color && format == Format::Table))?,
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
