//! `vigil report merge`: combine shard reports from `--partition K/N` runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use vigil_reports::{merge, write_report, Format, Report};

#[derive(Subcommand)]
pub enum ReportCommand {
    /// Merge JSON reports (shards of one run) into one.
    Merge(MergeArgs),
}

#[derive(Args)]
pub struct MergeArgs {
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// The merged report (JSON).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

pub fn run(c: ReportCommand) -> Result<ExitCode> {
    let ReportCommand::Merge(a) = c;
    let mut reports = Vec::new();
    for p in &a.reports {
        let text = std::fs::read_to_string(p).with_context(|| format!("{}: cannot read", p.display()))?;
        reports.push(Report::from_json(&text).with_context(|| p.display().to_string())?);
    }
    let merged = merge(reports)?;
    // The error names the file already.
    write_report(&a.output, &merged, Format::Json).context("-o")?;
    Ok(ExitCode::SUCCESS)
}
