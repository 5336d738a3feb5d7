//! `vigil bench CASE...`: what each mode costs on the user's own cases, so
//! they can tell what their CI can afford. Modes are timed in one process,
//! alternating rep by rep, so that load on a shared machine falls on every
//! mode alike; the ratio to plain is the figure to trust, not the times.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use vigil_engine::OpRegistry;
use vigil_listeners::ListenerSet;
use vigil_reports::Status;

use super::run::EXIT_NO_CASES;
use crate::runner::{
    check, load_case, prepare, run_prepared, LoadedCase, Mode, RunConfig, Suites, ToleranceOverrides,
};
use crate::suite::CaseRef;

/// The JSON schema name of the output.
pub const BENCH_FORMAT: &str = "vigil-bench/2";

/// Largest `--reps`: beyond it a typo (`--reps 5000000`) would run for days.
const MAX_REPS: u32 = 10_000;

/// Default `--warmup`: on a 2-core Xeon VM the rounds after the first few
/// were within noise of each other, the first ones up to 2x slower
/// (docs/bench-format.md).
const DEFAULT_WARMUP: u32 = 3;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchFormat {
    Table,
    Json,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Suite case directories, suites (walked like `vigil run`) or graph.json files.
    #[arg(required = true)]
    cases: Vec<PathBuf>,
    /// The modes to time, comma-separated, each once (plain, validate, debug).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "plain,validate,debug"
    )]
    modes: Vec<Mode>,
    /// Timed reps per case and mode, 1 to 10000.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=MAX_REPS as i64))]
    reps: u32,
    /// Untimed rounds of the timed reps first, 0 to 10000: a loaded case's
    /// first runs are slower than its later ones (its weights and buffers
    /// are not yet in cache).
    #[arg(long, default_value_t = DEFAULT_WARMUP, value_parser = clap::value_parser!(u32).range(0..=MAX_REPS as i64))]
    warmup: u32,
    /// With the debug mode: its checks, comma-separated (as `vigil run --checks`).
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
    /// table or json (`vigil-bench/2`, see docs/bench-format.md).
    #[arg(long, value_enum, default_value = "table")]
    format: BenchFormat,
}

/// One case in one mode.
#[derive(Serialize)]
struct ModeResult {
    mode: &'static str,
    /// The warm-up run's status, as `vigil run` would report it.
    status: &'static str,
    /// Why the case could not run in this mode (then there are no times).
    error: Option<String>,
    /// Each rep's preparation (the in-place pass and the executor's plan);
    /// empty in debug mode, which prepares inside its run.
    prepare_ms: Vec<f64>,
    prepare_median_ms: Option<f64>,
    /// Each rep's run of the prepared graph (debug mode: the whole check).
    times_ms: Vec<f64>,
    median_ms: Option<f64>,
    min_ms: Option<f64>,
    max_ms: Option<f64>,
    /// Preparation and run medians together, over plain's: what a `vigil
    /// run` of the case costs against plain's. `None` without a plain time.
    vs_plain: Option<f64>,
    peak_live_bytes: Option<u64>,
}

#[derive(Serialize)]
struct CaseResult {
    case: String,
    path: String,
    results: Vec<ModeResult>,
}

#[derive(Serialize)]
struct LoadAverage {
    before: f64,
    after: f64,
}

#[derive(Serialize)]
struct BenchReport {
    format: &'static str,
    vigil_version: &'static str,
    reps: u32,
    warmup: u32,
    modes: Vec<&'static str>,
    /// One-minute load average before and after (Linux only): how busy
    /// the machine was while timing.
    load_average: Option<LoadAverage>,
    cases: Vec<CaseResult>,
}

pub fn run(a: BenchArgs, registry: &OpRegistry) -> Result<ExitCode> {
    for (i, m) in a.modes.iter().enumerate() {
        if a.modes[..i].contains(m) {
            bail!("--modes: '{}' given twice", m.name());
        }
    }
    if a.checks.is_some() && !a.modes.contains(&Mode::Debug) {
        bail!("--checks works when --modes includes debug");
    }
    let configs: Vec<RunConfig> = a
        .modes
        .iter()
        .map(|&m| {
            let mut cfg = RunConfig::new(m, ToleranceOverrides::default());
            if let (Mode::Debug, Some(list)) = (m, &a.checks) {
                cfg.debug = cfg.debug.with_checks(list).context("--checks")?;
            }
            Ok(cfg)
        })
        .collect::<Result<_>>()?;
    let suites = Suites::discover(&a.cases)?;
    if suites.cases.is_empty() {
        let paths: Vec<String> = a.cases.iter().map(|p| p.display().to_string()).collect();
        eprintln!(
            "vigil: error: no case selected: no case found in {}",
            paths.join(", ")
        );
        return Ok(ExitCode::from(EXIT_NO_CASES));
    }
    super::quiet_panics(true);
    let before = load_average();
    let cases: Vec<CaseResult> = suites
        .cases
        .iter()
        .map(|c| bench_case(&suites, c, &configs, (a.warmup, a.reps), registry))
        .collect();
    let load_average = before
        .zip(load_average())
        .map(|(before, after)| LoadAverage { before, after });
    let all_pass = cases
        .iter()
        .flat_map(|c| &c.results)
        .all(|r| r.status == Status::Pass.name());
    let report = BenchReport {
        format: BENCH_FORMAT,
        vigil_version: env!("CARGO_PKG_VERSION"),
        reps: a.reps,
        warmup: a.warmup,
        modes: a.modes.iter().map(|m| m.name()).collect(),
        load_average,
        cases,
    };
    let text = match a.format {
        BenchFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        BenchFormat::Table => table(&report),
    };
    super::emit(&text)?;
    Ok(if all_pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Times one case: a run per mode through [`Suites::run_case`] (which
/// also compares with `expected/`), then `warmup` untimed and `reps` timed
/// rounds of [`check`] on the case loaded once, each round running every
/// mode once, starting one mode later each round.
fn bench_case(
    suites: &Suites,
    case: &CaseRef,
    configs: &[RunConfig],
    (warmup, reps): (u32, u32),
    registry: &OpRegistry,
) -> CaseResult {
    let mut results: Vec<ModeResult> = configs
        .iter()
        .map(|cfg| {
            let warm = suites.run_case(case, cfg, registry);
            ModeResult {
                mode: cfg.mode.name(),
                status: warm.status.name(),
                error: warm.error,
                prepare_ms: Vec::new(),
                prepare_median_ms: None,
                times_ms: Vec::new(),
                median_ms: None,
                min_ms: None,
                max_ms: None,
                vs_plain: None,
                peak_live_bytes: None,
            }
        })
        .collect();
    let loaded = match load_case(case, registry) {
        Ok(l) => Some(l),
        Err(e) => {
            let msg = crate::one_line(&e);
            for r in results.iter_mut().filter(|r| r.error.is_none()) {
                r.status = Status::Error.name();
                r.error = Some(msg.clone());
            }
            None
        }
    };
    if let Some(loaded) = &loaded {
        let n = configs.len();
        // The pool's other workers poll for work from run to run, as in a
        // loop that runs a graph again and again (a training loop), instead
        // of falling asleep between runs and waking late for the first ops.
        let _awake = vigil_engine::parallel::KeepAwake::start();
        for rep in 0..(warmup + reps) as usize {
            let timed = rep >= warmup as usize;
            for k in 0..n {
                let i = (rep + k) % n;
                if results[i].error.is_some() {
                    continue;
                }
                match time_check(loaded, &configs[i]) {
                    Ok(_) if !timed => {}
                    Ok(Timed {
                        prepare_ms,
                        run_ms,
                        peak,
                    }) => {
                        results[i].prepare_ms.extend(prepare_ms);
                        results[i].times_ms.push(run_ms);
                        let p = results[i].peak_live_bytes.get_or_insert(0);
                        *p = (*p).max(peak);
                    }
                    Err(e) => {
                        results[i].status = Status::Error.name();
                        results[i].error = Some(e);
                        results[i].times_ms.clear();
                        results[i].prepare_ms.clear();
                        results[i].peak_live_bytes = None;
                    }
                }
            }
        }
    }
    for r in &mut results {
        let mut t = r.times_ms.clone();
        t.sort_by(f64::total_cmp);
        r.median_ms = median(&t);
        r.min_ms = t.first().copied();
        r.max_ms = t.last().copied();
        let mut p = r.prepare_ms.clone();
        p.sort_by(f64::total_cmp);
        r.prepare_median_ms = median(&p);
    }
    // A check is its preparation and its run.
    let total = |r: &ModeResult| r.median_ms.map(|m| m + r.prepare_median_ms.unwrap_or(0.0));
    let plain = results
        .iter()
        .find(|r| r.mode == Mode::Plain.name())
        .and_then(total)
        .filter(|&p| p > 0.0);
    for r in &mut results {
        r.vs_plain = plain.zip(total(r)).map(|(p, m)| m / p);
    }
    CaseResult {
        case: case.name(),
        path: case.path.clone(),
        results,
    }
}

/// One timed rep of a mode.
struct Timed {
    /// The preparation ([`prepare`]); `None` in debug mode.
    prepare_ms: Option<f64>,
    /// The run of the prepared graph ([`run_prepared`]), or in debug mode
    /// the whole [`check`].
    run_ms: f64,
    peak: u64,
}

/// One timed rep: in plain and validate mode the preparation (the in-place
/// pass and the executor's plan) and the run with the mode's listeners,
/// timed apart; in debug mode one [`check`] (DebugMode prepares its runs
/// itself). Loading and comparing with `expected/` are left out. A panic is
/// an error, as in `vigil run`.
fn time_check(loaded: &LoadedCase, cfg: &RunConfig) -> Result<Timed, String> {
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<Timed> {
        if cfg.mode == Mode::Debug {
            let start = Instant::now();
            let c = check(&loaded.graph, &loaded.feeds, cfg, ListenerSet::new())?;
            return Ok(Timed {
                prepare_ms: None,
                run_ms: start.elapsed().as_secs_f64() * 1e3,
                peak: c.peak_live_bytes as u64,
            });
        }
        let start = Instant::now();
        let prepared = prepare(&loaded.graph, cfg)?;
        let prepare_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let ran = run_prepared(&prepared, &loaded.feeds, cfg, ListenerSet::new())?;
        let run_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(Timed {
            prepare_ms: Some(prepare_ms),
            run_ms,
            peak: ran.peak_live_bytes as u64,
        })
    }));
    match result {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(format!(
            "{}: {}",
            loaded.paths.graph.display(),
            crate::one_line(&e)
        )),
        Err(_) => Err("panic while timing".into()),
    }
}

/// The median of sorted `t` (the mean of the middle two for an even count).
fn median(t: &[f64]) -> Option<f64> {
    let n = t.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(t[n / 2]),
        _ => Some((t[n / 2 - 1] + t[n / 2]) / 2.0),
    }
}

/// The one-minute load average, where the system says.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

fn table(r: &BenchReport) -> String {
    let mut rows = vec![[
        "case".to_string(),
        "mode".into(),
        "prepare ms".into(),
        "run ms".into(),
        "vs plain".into(),
        "peak live".into(),
        "status".into(),
    ]];
    let mut errors = Vec::new();
    for c in &r.cases {
        for m in &c.results {
            rows.push([
                c.path.clone(),
                m.mode.into(),
                m.prepare_median_ms.map_or("-".into(), |x| format!("{x:.3}")),
                m.median_ms.map_or("-".into(), |x| format!("{x:.3}")),
                m.vs_plain.map_or("-".into(), |x| format!("{x:.2}x")),
                m.peak_live_bytes.map_or("-".into(), bytes),
                m.status.into(),
            ]);
            if let Some(e) = &m.error {
                errors.push(format!("{} ({}): {e}", c.path, m.mode));
            }
        }
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| match i {
                // Numbers right-aligned, words left.
                2..=5 => format!("{cell:>w$}"),
                _ => format!("{cell:<w$}"),
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    let load = r.load_average.as_ref().map_or(String::new(), |l| {
        format!("; load average {:.2} -> {:.2}", l.before, l.after)
    });
    out.push_str(&format!(
        "{} reps per mode, alternated in one process after {} untimed round(s); medians; vs plain compares prepare + run (debug: its run prepares){load}\n",
        r.reps, r.warmup
    ));
    for e in errors {
        out.push_str(&format!("error: {e}\n"));
    }
    out
}
