//! Running suite cases: one case in a mode gives one report case. Modes
//! that run a case several times (DebugMode) slot in as more [`Mode`]s.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::json;
use vigil_engine::{inplace, DType, Executor, RunOptions, Tensor};
use vigil_listeners::profile::ProfilingListener;
use vigil_listeners::{
    ListenerSet, NonInplaceValidationListener, NumericsListener, Validator, ViewMapValidationListener,
};
use vigil_reports::{Case, ErrorSample, Finding, OutputComparison, TimelineEntry};

use crate::case::{load_expected, load_feeds, load_graph, CasePaths, FeedSource};
use crate::suite::CaseRef;

/// How a case is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Execute, and compare with `expected/`.
    Plain,
    /// Plain, plus the non-in-place, view-map and numerics listeners.
    Validate,
    /// DebugMode: the in-place run (with the listeners) against a pure
    /// reference run in lockstep, culprit bisection, poisoned buffers.
    Debug,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Validate => "validate",
            Mode::Debug => "debug",
        }
    }
}

/// Comparison tolerances; `None` takes the dtype's default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tolerance {
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
}

impl Tolerance {
    /// `(rtol, atol)` for `dtype`: f32 1e-5/1e-6, f64 1e-12/1e-12, exact for
    /// integers and bools (overrides apply to floats only).
    pub fn for_dtype(&self, dtype: DType) -> (f64, f64) {
        let (r, a) = match dtype {
            DType::F32 => (1e-5, 1e-6),
            DType::F64 => (1e-12, 1e-12),
            _ => return (0.0, 0.0),
        };
        (self.rtol.unwrap_or(r), self.atol.unwrap_or(a))
    }
}

#[derive(Clone, Debug)]
pub struct RunConfig {
    pub mode: Mode,
    pub tolerance: Tolerance,
    /// What `--mode debug` checks.
    pub debug: vigil_debugmode::DebugConfig,
}

impl RunConfig {
    pub fn new(mode: Mode, tolerance: Tolerance) -> RunConfig {
        RunConfig {
            mode,
            tolerance,
            debug: vigil_debugmode::DebugConfig::default(),
        }
    }
}

/// Runs one case. Never fails: a broken case (bad graph, op error, panic)
/// becomes a case with status `error`.
pub fn run_case(case: &CaseRef, cfg: &RunConfig) -> Case {
    let start = Instant::now();
    let base = Case::new(case.name(), case.path.clone());
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| run_inner(case, cfg, base.clone())));
    let out = match result {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => base.errored(crate::one_line(&e)),
        Err(p) => base.errored(format!("panic: {}", panic_text(&*p))),
    };
    out.with_duration_ms(start.elapsed().as_millis() as u64)
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".into())
}

fn run_inner(case: &CaseRef, cfg: &RunConfig, mut out: Case) -> Result<Case> {
    let paths = CasePaths::resolve(&case.location)?;
    let graph = load_graph(&paths.graph)?;
    let feeds = load_feeds(&graph, paths.inputs.as_deref(), &[], FeedSource::CaseDir)?;
    let ctx = || paths.graph.display().to_string();
    if cfg.mode == Mode::Debug {
        let report = vigil_debugmode::DebugMode::new(cfg.debug.clone())
            .check(&graph, &feeds)
            .with_context(ctx)?;
        for mut f in report.findings {
            f.case = None;
            out = out.with_finding(f);
        }
        if let Some(dir) = &paths.expected {
            let expected = load_expected(dir)?;
            out = compare_outputs(out, &report.outputs, &expected, &cfg.tolerance)?;
        }
        return Ok(out);
    }
    let graph = inplace::run(&graph).with_context(ctx)?.graph;
    let exec = Executor::new(&graph).with_context(ctx)?;
    let outputs = match cfg.mode {
        Mode::Plain => exec.run(&feeds).with_context(ctx)?.outputs,
        Mode::Debug => unreachable!("handled above"),
        Mode::Validate => {
            let mut noninplace = NonInplaceValidationListener::new();
            noninplace.replay_from(&graph, &feeds).with_context(ctx)?;
            let mut set = ListenerSet::new()
                .with(noninplace)
                .with(ViewMapValidationListener::new())
                .with(NumericsListener::new())
                .with_listener(ProfilingListener::new());
            set.set_case(Some(case.path.clone()));
            let run = exec
                .run_with(&feeds, &mut set, &RunOptions::default())
                .with_context(ctx)?;
            set.collect();
            for f in set.take_findings() {
                out = out.with_finding(f);
            }
            if let Some(p) = set.get::<ProfilingListener>() {
                out = out.with_timeline(
                    p.spans()
                        .iter()
                        .map(|s| TimelineEntry {
                            node: s.node.clone(),
                            op: s.op.clone(),
                            start_us: s.start_us as u64,
                            dur_us: s.dur_us.ceil() as u64,
                        })
                        .collect(),
                );
            }
            run.outputs
        }
    };
    if let Some(dir) = &paths.expected {
        let expected = load_expected(dir)?;
        out = compare_outputs(out, &outputs, &expected, &cfg.tolerance)?;
    }
    Ok(out)
}

/// Compares every expected output; a difference is an `output_mismatch`.
fn compare_outputs(
    mut out: Case,
    outputs: &[(String, Tensor)],
    expected: &HashMap<String, Tensor>,
    tol: &Tolerance,
) -> Result<Case> {
    let mut names: Vec<&String> = expected.keys().collect();
    names.sort();
    for name in names {
        let want = &expected[name];
        let Some((_, got)) = outputs.iter().find(|(n, _)| n == name) else {
            out = out.with_finding(Finding::error(
                "output_mismatch",
                format!("expected/{name}.npy names no output of the graph"),
            ));
            continue;
        };
        if got.dtype() != want.dtype() || got.shape() != want.shape() {
            out = out.with_finding(
                Finding::error(
                    "output_mismatch",
                    format!(
                        "output '{name}' is {} {:?}, expected {} {:?}",
                        got.dtype(),
                        got.shape(),
                        want.dtype(),
                        want.shape()
                    ),
                )
                .with_details(json!({"output": name})),
            );
            continue;
        }
        let (rtol, atol) = tol.for_dtype(got.dtype());
        let (g, w) = (got.to_f64_vec()?, want.to_f64_vec()?);
        // Integers compare exactly (f64 cannot tell values above 2^53 apart).
        let exact_differs: Vec<bool> = match (exact_values(got)?, exact_values(want)?) {
            (Some(a), Some(b)) => a.iter().zip(&b).map(|(x, y)| x != y).collect(),
            _ => Vec::new(),
        };
        let mut cmp = OutputComparison::new(name.clone(), g.len() as u64);
        cmp.rtol = Some(rtol);
        cmp.atol = Some(atol);
        let mut errs = Vec::with_capacity(g.len());
        let mut first_bad = None;
        for (i, (&x, &y)) in g.iter().zip(&w).enumerate() {
            let same = match exact_differs.get(i) {
                Some(&differs) => !differs,
                None => x == y || (x.is_nan() && y.is_nan()),
            };
            let d = if same { 0.0 } else { (x - y).abs() };
            let d = if d.is_nan() { f64::INFINITY } else { d };
            errs.push(d);
            if !same {
                cmp.max_abs_err = cmp.max_abs_err.max(d);
                cmp.max_rel_err = cmp
                    .max_rel_err
                    .max(if y != 0.0 { d / y.abs() } else { f64::INFINITY });
                // Non-finite values match only themselves (checked above);
                // integers match only exactly.
                let bad = !exact_differs.is_empty()
                    || !x.is_finite()
                    || !y.is_finite()
                    || d > atol + rtol * y.abs();
                if bad {
                    cmp.mismatched += 1;
                    first_bad.get_or_insert((i, x, y));
                }
            }
        }
        if let Some((i, x, y)) = first_bad {
            cmp.sample = Some(ErrorSample::from_errors(&errs));
            out = out.with_finding(
                Finding::error(
                    "output_mismatch",
                    format!(
                        "output '{name}': {} of {} elements differ, max abs err {:.3e} (first at flat index {i}: got {}, expected {})",
                        cmp.mismatched, cmp.elements, cmp.max_abs_err,
                        crate::fmt_element(got.dtype(), x), crate::fmt_element(want.dtype(), y)
                    ),
                )
                .with_details(json!({"output": name, "max_abs_err": crate::json_num(cmp.max_abs_err),
                    "max_rel_err": crate::json_num(cmp.max_rel_err), "mismatched": cmp.mismatched,
                    "first_index": i, "rtol": rtol, "atol": atol})),
            );
        }
        out = out.with_output(cmp);
    }
    Ok(out)
}

/// The elements of an integer or bool tensor as i64, exactly; `None` for floats.
fn exact_values(t: &Tensor) -> Result<Option<Vec<i64>>> {
    Ok(match t.dtype() {
        DType::I64 => Some(t.to_array::<i64>()?.iter().copied().collect()),
        DType::I32 => Some(t.to_array::<i32>()?.iter().map(|&x| x as i64).collect()),
        DType::Bool => Some(t.to_array::<bool>()?.iter().map(|&x| x as i64).collect()),
        DType::F32 | DType::F64 => None,
    })
}
