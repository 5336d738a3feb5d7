//! `vigil run`: run graph suites, in parallel, and write a report.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::runner::isolate::{protocol::Job, Outcome, WorkerPool, WorkerPoolConfig};
use crate::runner::{Mode, RunConfig, Suites, ToleranceOverrides};
use crate::suite::{CaseRef, Partition};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use rayon::prelude::*;
use vigil_engine::OpRegistry;
use vigil_reports::{render, write_report, Format, Report, Shard, Summary};

use super::progress::Progress;

/// Exit code when no case is selected (a typo in a path or `--filter`
/// must not pass CI as an empty green run).
pub const EXIT_NO_CASES: u8 = 3;

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
    /// lockstep, culprit, poison, arbitrate, orders, prealloc, gradient,
    /// layouts, threads, or all; default listeners,lockstep,culprit,poison,
    /// arbitrate).
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
    /// Report format (table, json, markdown, html, junit). With --report,
    /// defaults to the file's extension.
    #[arg(long)]
    format: Option<Format>,
    /// Write the report to FILE (atomically); stdout then gets the table.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Threads, 1 to 1,000,000 (default: the number of cores): up to N cases
    /// run at once, and threads no case needs split the large ops of those
    /// that run. Lowered, with a note, to 4x the cores.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    jobs: Option<u64>,
    /// A case that runs longer than SECS (0.001 to 86400) becomes an error
    /// row when it finishes; with --isolate, it is stopped at SECS.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Run cases in worker processes (as many as --jobs, reused across
    /// cases): a case that aborts, crashes, runs out of memory or (with
    /// --timeout) never returns becomes one error row, and the run goes on.
    #[arg(long)]
    isolate: bool,
    /// With --isolate: limit each worker's address space to BYTES
    /// (suffixes K, M, G; 64M to 1T), so that an op allocating without
    /// bound fails in its worker instead of waking the OOM killer.
    #[arg(long, value_name = "BYTES", requires = "isolate", value_parser = parse_worker_mem)]
    worker_mem: Option<u64>,
    /// Leave timing fields out of the report (durations 0, no timelines),
    /// so that the same inputs give byte-identical reports.
    #[arg(long)]
    no_timings: bool,
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
    /// Relative tolerance for float outputs against expected/ (default
    /// per dtype: f16 1e-3, f32 1e-5, f64 1e-12).
    #[arg(long, value_parser = super::parse_tolerance, allow_hyphen_values = true)]
    rtol: Option<f64>,
    /// Absolute tolerance for float outputs against expected/ (default per
    /// dtype: f16 1e-5, f32 1e-6, f64 1e-12).
    #[arg(long, value_parser = super::parse_tolerance, allow_hyphen_values = true)]
    atol: Option<f64>,
    /// ONNX models: specialize on this shape of input NAME (repeatable),
    /// as `vigil import --shape` does: symbolic dims become fixed, and the
    /// shape arithmetic on them folds.
    #[arg(long = "shape", value_name = "NAME=D0,D1,...", value_parser = crate::onnx_suite::parse_shape)]
    shapes: Vec<(String, Vec<usize>)>,
    /// ONNX models: feed inputs generated from SEED (of --shape's shapes;
    /// an unknown dim is 1) instead of the data sets, one case per model
    /// with no expected outputs.
    #[arg(long, value_name = "SEED")]
    random_inputs: Option<u64>,
}

pub(crate) fn format_for(path: &std::path::Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Format::ALL
        .into_iter()
        .find(|f| f.extension() == ext || (ext == "md" && *f == Format::Markdown))
}

pub fn run(a: RunArgs, registry: &OpRegistry) -> Result<ExitCode> {
    if let Some(t) = a.timeout {
        if !(0.001..=86_400.0).contains(&t) {
            bail!("--timeout must be between 0.001 and 86400 seconds");
        }
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
    if let Some(p) = &a.report {
        check_report_path(p)?;
    }
    // ONNX test directories and light models are imported into temporary
    // cases that live as long as `suites`; failed imports become errored cases.
    let settings = crate::onnx_suite::ImportSettings {
        shapes: a.shapes.clone(),
        random_inputs: a.random_inputs,
    };
    let suites = Suites::discover_with(&a.paths, &settings)?;
    let mut cases: Vec<CaseRef> = suites.cases.clone();
    let found = cases.len();
    if let Some(f) = &a.filter {
        cases.retain(|c| c.path.contains(f.as_str()));
    }
    let selected = cases.len();
    if selected == 0 {
        let paths: Vec<String> = a.paths.iter().map(|p| p.display().to_string()).collect();
        let why = match &a.filter {
            Some(f) if found > 0 => format!("--filter '{f}' matches none of the {found} cases found"),
            _ => format!(
                "no case found in {} (a case is a directory with graph.json, or an ONNX model.onnx with test_data_set_*)",
                paths.join(", ")
            ),
        };
        eprintln!("vigil: error: no case selected: {why}");
        return Ok(ExitCode::from(EXIT_NO_CASES));
    }
    if let Some(p) = a.partition {
        cases.retain(|c| p.contains(c));
        // A shard may be empty when there are few cases; it still writes
        // its (empty) report so that the merge sees every shard.
        if cases.is_empty() {
            eprintln!(
                "vigil: note: shard {}/{} holds none of the {selected} cases",
                p.k, p.n
            );
        }
    }
    let mut cfg = RunConfig::new(
        a.mode,
        ToleranceOverrides {
            rtol: a.rtol,
            atol: a.atol,
        },
    );
    if let Some(checks) = &a.checks {
        cfg.debug = super::with_checks(cfg.debug, checks)?;
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
    let progress = Progress::new(cases.len(), a.quiet, std::io::stderr().is_terminal());
    let findings = AtomicUsize::new(0);
    let started = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs(a.jobs))
        .build()?;
    let timeout = a.timeout.map(std::time::Duration::from_secs_f64);
    let workers = match a.isolate {
        true => Some(WorkerPool::new(WorkerPoolConfig {
            max_alloc: vigil_engine::tensor::limit::alloc_limit(),
            worker_mem: a.worker_mem,
            timeout,
        })?),
        false => None,
    };
    let run_one = |c: &CaseRef| -> Option<vigil_reports::Case> {
        let Some(workers) = &workers else {
            let began = Instant::now();
            let r = suites.run_case(c, &cfg, registry);
            return Some(match timeout.filter(|&l| began.elapsed() > l) {
                Some(limit) => r.errored(format!(
                    "ran {:.3} s, past --timeout {} s",
                    began.elapsed().as_secs_f64(),
                    limit.as_secs_f64()
                )),
                None => r,
            });
        };
        if let Some(errored) = suites.import_error(c) {
            return Some(errored);
        }
        match workers.run(&Job::new(c, &cfg, a.checks.as_deref())) {
            Outcome::Done(r) => Some(r),
            Outcome::Interrupted => {
                stop.store(true, Ordering::SeqCst);
                None
            }
        }
    };
    let results: Vec<Option<vigil_reports::Case>> = pool.install(|| {
        cases
            .par_iter()
            .map(|c| {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let mut r = run_one(c)?;
                if a.no_timings {
                    r.duration_ms = 0;
                    r.timeline.clear();
                }
                let n = findings.fetch_add(r.findings.len(), Ordering::Relaxed) + r.findings.len();
                progress.case_done(&r, n);
                Some(r)
            })
            .collect()
    });
    progress.finish();
    super::quiet_panics(false);
    let interrupted = stop.load(Ordering::Relaxed);
    let mut report = Report::new(cfg.mode.name(), results.into_iter().flatten().collect())
        .with_vigil_version(env!("CARGO_PKG_VERSION"))
        .with_checks(super::check_names(cfg.mode, &cfg.debug));
    if let Some(p) = a.partition {
        report = report.with_partition(Shard { k: p.k, n: p.n });
    }
    tracing::info!(
        cases = report.cases().len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "run finished"
    );

    let color = std::io::stdout().is_terminal();
    match &a.report {
        Some(path) => {
            // The error names the file already.
            write_report(path, &report, format).context("--report")?;
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
    let summary = report.summary();
    Ok(match failure(&summary, a.fail_on) {
        Some(why) => {
            eprintln!("vigil: run failed: {why}");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    })
}

/// The pool's thread count: `--jobs` (default the cores), lowered to 4x the
/// cores with a note. It is not lowered to the number of cases: threads no
/// case needs run the intra-op splits of the cases that run (one case alone
/// on a 1-thread pool ran every op on one core).
fn jobs(asked: Option<u64>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let Some(asked) = asked else {
        return cores;
    };
    let cap = 4 * cores;
    if asked as usize > cap {
        eprintln!("vigil: note: --jobs {asked} lowered to {cap} ({cores} cores)");
        return cap;
    }
    asked as usize
}

/// `--worker-mem`: a byte count from 64 MiB (less cannot start a worker)
/// to 1 TiB.
fn parse_worker_mem(s: &str) -> Result<u64, String> {
    let b = super::parse_bytes(s)?;
    if !((64 << 20)..=(1 << 40)).contains(&b) {
        return Err(format!("'{s}' is outside 64M to 1T"));
    }
    Ok(b)
}

/// Why the run fails at `fail_on`, or `None` when it passes.
fn failure(s: &Summary, fail_on: FailOn) -> Option<String> {
    if !s.ok() {
        return Some(format!(
            "{} failed and {} errored cases (--fail-on {})",
            s.failed,
            s.errors,
            fail_on.name()
        ));
    }
    if fail_on == FailOn::Warning && s.warnings > 0 {
        return Some(format!(
            "{} (--fail-on warning)",
            vigil_reports::plural(s.warnings as u64, "warning")
        ));
    }
    None
}

impl FailOn {
    fn name(self) -> &'static str {
        match self {
            FailOn::Warning => "warning",
            FailOn::Error => "error",
        }
    }
}

/// Refuses a report path that cannot be written, before any case runs:
/// a missing directory, a directory as the file, or no permission.
pub(crate) fn check_report_path(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if dir.is_file() {
        bail!(
            "--report {}: {} is not a directory",
            path.display(),
            dir.display()
        );
    }
    if !dir.is_dir() {
        bail!(
            "--report {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        bail!("--report {}: is a directory", path.display());
    }
    if let Err(e) = vigil_reports::write::probe(path) {
        let why = match &e {
            vigil_reports::ReportError::Io { source, .. } => source.to_string(),
            e => e.to_string(),
        };
        bail!("--report {}: cannot write there: {why}", path.display());
    }
    Ok(())
}
