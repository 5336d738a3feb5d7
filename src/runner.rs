//! Running suite cases: one case in a mode gives one report case. Modes
//! that run a case several times (DebugMode) slot in as more [`Mode`]s.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::json;
use vigil_engine::compare::{compare, Tolerance as Within};
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
        let c = compare(got, want, Within::new(rtol, atol))?;
        let mut cmp = OutputComparison::new(name.clone(), c.elements as u64);
        cmp.rtol = Some(rtol);
        cmp.atol = Some(atol);
        cmp.max_abs_err = c.max_abs;
        cmp.max_rel_err = c.max_rel;
        cmp.mismatched = c.mismatched as u64;
        if let Some(m) = c.first.first() {
            cmp.sample = Some(ErrorSample {
                start: 0,
                step: c.sample_step as u64,
                abs_err: c.sample.clone(),
            });
            let dtype = got.dtype();
            out = out.with_finding(
                Finding::error(
                    "output_mismatch",
                    format!(
                        "output '{name}': {} of {} elements differ, max abs err {:.3e} (first at {:?}: got {}, expected {})",
                        cmp.mismatched, cmp.elements, cmp.max_abs_err, m.index,
                        crate::fmt_element(dtype, m.got), crate::fmt_element(dtype, m.want)
                    ),
                )
                .with_details(json!({"output": name, "max_abs_err": crate::json_num(cmp.max_abs_err),
                    "max_rel_err": crate::json_num(cmp.max_rel_err), "mismatched": cmp.mismatched,
                    "first_index": flat_index(&m.index, want.shape()), "first_at": m.index,
                    "rtol": rtol, "atol": atol})),
            );
        }
        out = out.with_output(cmp);
    }
    Ok(out)
}

/// The logical (C-order) flat index of `index` in `shape`.
fn flat_index(index: &[usize], shape: &[usize]) -> usize {
    index.iter().zip(shape).fold(0, |flat, (&i, &n)| flat * n + i)
}
