//! `vigil run`: run graph suites, in parallel, and write a report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use vigil::runner::{run_case, Mode, RunConfig, Tolerance};
use vigil::suite::{discover, CaseRef, Partition};
use vigil_reports::{render, write_report, Format, Report, Severity, Status};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Warning,
    Error,
}

#[derive(Args)]
pub struct RunArgs {
    /// Suite case directories, suites (walked recursively; `broken/` is
    /// skipped unless named) or graph.json files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "debug")]
    mode: Mode,
    /// With --mode debug: the checks to run, comma-separated (listeners,
    /// lockstep, culprit, poison, orders, prealloc, gradient; default
    /// listeners,lockstep,culprit,poison).
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
    /// Report format (table, json, markdown, html, junit). With --report,
    /// defaults to the file's extension.
    #[arg(long)]
    format: Option<Format>,
    /// Write the report to FILE (atomically); stdout then gets the table.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Parallel cases (default: the number of cores).
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// Run shard K of N (stable hash of the case path).
    #[arg(long, value_name = "K/N")]
    partition: Option<Partition>,
    /// Only cases whose path contains SUBSTR.
    #[arg(long, value_name = "SUBSTR")]
    filter: Option<String>,
    /// Exit 1 on findings of at least this severity.
    #[arg(long, value_enum, default_value = "error")]
    fail_on: FailOn,
    /// No progress and no table on stdout when writing --report.
    #[arg(long, short)]
    quiet: bool,
    /// Relative tolerance for float outputs (default 1e-5 for f32, 1e-12 for f64).
    #[arg(long)]
    rtol: Option<f64>,
    /// Absolute tolerance for float outputs (default 1e-6 for f32, 1e-12 for f64).
    #[arg(long)]
    atol: Option<f64>,
}

fn format_for(path: &std::path::Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Format::ALL
        .into_iter()
        .find(|f| f.extension() == ext || (ext == "md" && *f == Format::Markdown))
}

/// Progress on stderr: a bar on a terminal, plain lines otherwise.
enum Progress {
    Bar(ProgressBar),
    Lines { total: usize, done: AtomicUsize },
    Quiet,
}

impl Progress {
    fn new(total: usize, quiet: bool) -> Progress {
        if quiet {
            Progress::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} cases, {msg} [{elapsed}<{eta}]")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message("0 findings");
            Progress::Bar(bar)
        } else {
            Progress::Lines {
                total,
                done: AtomicUsize::new(0),
            }
        }
    }

    fn case_done(&self, case: &vigil_reports::Case, findings_so_far: usize) {
        match self {
            Progress::Bar(b) => {
                b.set_message(format!("{findings_so_far} findings"));
                b.inc(1);
            }
            Progress::Lines { total, done } => {
                let k = done.fetch_add(1, Ordering::Relaxed) + 1;
                eprintln!(
                    "[{k}/{total}] {} {} ({} ms)",
                    case.status.name(),
                    case.path,
                    case.duration_ms
                );
            }
            Progress::Quiet => {}
        }
    }

    fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}

pub fn run(a: RunArgs) -> Result<ExitCode> {
    for (flag, v) in [("--rtol", a.rtol), ("--atol", a.atol)] {
        if v.is_some_and(|x| !(x >= 0.0 && x.is_finite())) {
            bail!("{flag} must be a non-negative number");
        }
    }
    if a.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let format = match (&a.report, a.format) {
        (_, Some(f)) => f,
        (Some(p), None) => format_for(p).with_context(|| {
            format!(
                "--report {}: cannot tell the format from the extension; give --format",
                p.display()
            )
        })?,
        (None, None) => Format::Table,
    };
    let mut cases: Vec<CaseRef> = discover(&a.paths)?;
    if let Some(f) = &a.filter {
        cases.retain(|c| c.path.contains(f.as_str()));
    }
    if let Some(p) = a.partition {
        cases.retain(|c| p.contains(c));
    }
    let mut cfg = RunConfig::new(
        a.mode,
        Tolerance {
            rtol: a.rtol,
            atol: a.atol,
        },
    );
    if let Some(checks) = &a.checks {
        cfg.debug = cfg.debug.with_checks(checks).context("--checks")?;
    }

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // A second Ctrl-C while finishing still ends the process.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
    }
    super::quiet_panics(true);
    let progress = Progress::new(cases.len(), a.quiet);
    let findings = AtomicUsize::new(0);
    let started = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.jobs.unwrap_or(0))
        .build()?;
    let results: Vec<Option<vigil_reports::Case>> = pool.install(|| {
        cases
            .par_iter()
            .map(|c| {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let r = run_case(c, &cfg);
                let n = findings.fetch_add(r.findings.len(), Ordering::Relaxed) + r.findings.len();
                progress.case_done(&r, n);
                Some(r)
            })
            .collect()
    });
    progress.finish();
    super::quiet_panics(false);
    let interrupted = stop.load(Ordering::Relaxed);
    let report = Report::new(cfg.mode.name(), results.into_iter().flatten().collect())
        .with_vigil_version(env!("CARGO_PKG_VERSION"));
    tracing::info!(
        cases = report.cases().len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "run finished"
    );

    let color = std::io::stdout().is_terminal();
    match &a.report {
        Some(path) => {
            write_report(path, &report, format).with_context(|| path.display().to_string())?;
            if !a.quiet {
                super::emit(&render(&report, Format::Table, color))?;
            }
        }
        None => super::emit(&render(&report, format, color))?,
    }
    if interrupted {
        eprintln!(
            "vigil: interrupted; the report holds the {} cases that finished",
            report.cases().len()
        );
        return Ok(ExitCode::from(130));
    }
    let threshold = match a.fail_on {
        FailOn::Warning => Severity::Warning,
        FailOn::Error => Severity::Error,
    };
    let failed = report.cases().iter().any(|c| {
        c.status == Status::Error
            || c.findings
                .iter()
                .any(|f| f.severity == Severity::Error || threshold == Severity::Warning)
    });
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
