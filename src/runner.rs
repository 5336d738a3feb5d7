//! Running suite cases: one case in a mode gives one report case. Modes
//! that run a case several times (DebugMode) slot in as more [`Mode`]s.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde_json::json;
use vigil_engine::compare::{compare, Tolerance};
use vigil_engine::graph::Graph;
use vigil_engine::{DType, Executor, OpRegistry, Prepared, RunOptions, Tensor};
use vigil_listeners::profile::ProfilingListener;
use vigil_listeners::{
    ListenerSet, NonInplaceValidationListener, NumericsListener, Validator, ViewMapValidationListener,
};
use vigil_reports::{Case, ErrorSample, F64Errors, Finding, OutputComparison, Report, TimelineEntry};

use crate::case::{load_expected, load_feeds, load_graph, CasePaths, CaseTolerance, FeedSource};
use crate::onnx_suite::OnnxCases;
use crate::suite::{discover, CaseRef};

pub mod isolate;

/// How a case is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Run the graph (after the in-place pass), no listeners.
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
pub struct ToleranceOverrides {
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
}

impl ToleranceOverrides {
    /// `(rtol, atol)` for `dtype`: the engine's default for it
    /// ([`vigil_engine::compare::Tolerance::default_for`]: f16 1e-3/1e-5,
    /// f32 1e-5/1e-6, f64 1e-12/1e-12), exact for integers and bools
    /// (overrides apply to floats only).
    ///
    /// bf16 never goes below its default rtol (one step of its 8-bit
    /// mantissa): an op that Vigil computes as several ops rounds at each,
    /// and may land one bf16 step from a reference that rounds once, which
    /// a tighter rtol (ONNX's 1e-3) would call a mismatch.
    pub fn for_dtype(&self, dtype: DType) -> (f64, f64) {
        if !dtype.is_float() {
            return (0.0, 0.0);
        }
        let d = vigil_engine::compare::Tolerance::default_for(dtype);
        let rtol = self.rtol.unwrap_or(d.rtol);
        let rtol = if dtype == DType::BF16 {
            rtol.max(d.rtol)
        } else {
            rtol
        };
        (rtol, self.atol.unwrap_or(d.atol))
    }
}

#[derive(Clone, Debug)]
pub struct RunConfig {
    pub mode: Mode,
    pub tolerance: ToleranceOverrides,
    /// What `--mode debug` checks.
    pub debug: vigil_debugmode::DebugConfig,
    /// Apply the in-place pass before plain and validate runs (default on;
    /// DebugMode always runs both the in-place and the pure graph).
    pub inplace: bool,
    /// Judge float outputs that miss the tolerance against an f64
    /// evaluation of the same graph ([`model_atol`]): what an ONNX model
    /// (not one of ONNX's node tests) gets, see docs/onnx.md.
    pub f64_reference: bool,
}

impl RunConfig {
    pub fn new(mode: Mode, tolerance: ToleranceOverrides) -> RunConfig {
        RunConfig {
            mode,
            tolerance,
            debug: vigil_debugmode::DebugConfig::default(),
            inplace: true,
            f64_reference: false,
        }
    }
}

/// What checking one graph gave.
pub struct Checked {
    /// The graph that ran: after the in-place pass unless
    /// [`RunConfig::inplace`] is off; in debug mode the graph as given
    /// (DebugMode runs both its in-place and its pure form).
    pub graph: Graph,
    pub outputs: Vec<(String, Tensor)>,
    /// Findings of the mode's detectors (none in plain mode).
    pub findings: Vec<Finding>,
    /// Op timings (validate mode).
    pub timeline: Vec<TimelineEntry>,
    /// The caller's listeners after the run, with validate mode's added
    /// (their findings already taken into `findings`).
    pub listeners: ListenerSet,
    /// The executor's peak of live tensor bytes; in debug mode, of the
    /// in-place and pure runs together in lockstep.
    pub peak_live_bytes: usize,
    /// DebugMode's counters (debug mode only).
    pub debug: Option<vigil_debugmode::DebugStats>,
}

/// Runs `graph` on `feeds` the way `vigil run` checks a case in
/// `cfg.mode`, without comparing outputs: plain (the in-place pass, then the
/// executor), validate (plus the non-in-place, view-map and numerics
/// listeners, added to `listeners`) or debug (DebugMode). `listeners` join
/// the run in plain and validate mode; DebugMode runs its own, so it leaves
/// them untouched.
pub fn check(
    graph: &Graph,
    feeds: &HashMap<String, Tensor>,
    cfg: &RunConfig,
    listeners: ListenerSet,
) -> Result<Checked> {
    check_warm(graph, feeds, cfg, listeners, 0)
}

/// [`check`], after `warmup` runs of the same prepared graph with no
/// listeners (plain and validate mode; DebugMode prepares its own runs and
/// takes none): the run that counts reuses the buffers and caches the
/// warm-up runs made, as `vigil bench` times it. Run on a graph prepared
/// again, the run that counts paged its memory back in (the allocator had
/// returned what the warm-up runs freed to the OS by then): most profiles
/// of efficientnet showed its first op at 8-10 ms instead of about 0.6,
/// and the process spent two thirds of its time zeroing fresh pages.
pub fn check_warm(
    graph: &Graph,
    feeds: &HashMap<String, Tensor>,
    cfg: &RunConfig,
    listeners: ListenerSet,
    warmup: usize,
) -> Result<Checked> {
    if cfg.mode == Mode::Debug {
        if !cfg.inplace {
            bail!("DebugMode always runs the in-place pass beside a pure reference; it cannot turn it off");
        }
        let report = vigil_debugmode::DebugMode::new(cfg.debug.clone()).check(graph, feeds)?;
        return Ok(Checked {
            graph: graph.clone(),
            outputs: report.outputs,
            findings: report.findings,
            timeline: Vec::new(),
            listeners,
            peak_live_bytes: report.stats.peak_lockstep_bytes,
            debug: Some(report.stats),
        });
    }
    let prepared = prepare(graph, cfg)?;
    let exec = prepared.executor();
    for k in 0..warmup {
        exec.run(feeds)
            .with_context(|| format!("warm-up run {}", k + 1))?;
    }
    let ran = run_prepared(&prepared, feeds, cfg, listeners)?;
    Ok(Checked {
        graph: prepared.into_graph(),
        outputs: ran.outputs,
        findings: ran.findings,
        timeline: ran.timeline,
        listeners: ran.listeners,
        peak_live_bytes: ran.peak_live_bytes,
        debug: None,
    })
}

/// The graph a plain or validate run of `cfg` runs, prepared once for any
/// number of [`run_prepared`]: after the in-place pass unless
/// [`RunConfig::inplace`] is off, with the executor's plan.
pub fn prepare(graph: &Graph, cfg: &RunConfig) -> Result<Prepared> {
    Ok(if cfg.inplace {
        Prepared::new(graph)?
    } else {
        Prepared::as_given(graph.clone())?
    })
}

/// What one run of a prepared graph gave: [`Checked`] without the graph.
pub struct Ran {
    pub outputs: Vec<(String, Tensor)>,
    pub findings: Vec<Finding>,
    pub timeline: Vec<TimelineEntry>,
    pub listeners: ListenerSet,
    pub peak_live_bytes: usize,
}

/// One plain or validate run of `prepared` (from [`prepare`]) on `feeds`,
/// as [`check`] runs it; refuses debug mode, which prepares its own runs.
pub fn run_prepared(
    prepared: &Prepared,
    feeds: &HashMap<String, Tensor>,
    cfg: &RunConfig,
    mut listeners: ListenerSet,
) -> Result<Ran> {
    if cfg.mode == Mode::Debug {
        bail!("DebugMode runs its own in-place and pure graphs; it takes no prepared graph");
    }
    let exec = prepared.executor();
    if cfg.mode == Mode::Plain {
        let run = exec.run_with(feeds, &mut listeners, &RunOptions::default())?;
        return Ok(Ran {
            peak_live_bytes: run.stats.peak_live_bytes,
            outputs: run.outputs,
            findings: Vec::new(),
            timeline: Vec::new(),
            listeners,
        });
    }
    let mut noninplace = NonInplaceValidationListener::new();
    noninplace.replay_from(prepared.graph(), feeds)?;
    listeners
        .push(noninplace)
        .push(ViewMapValidationListener::new())
        .push(NumericsListener::new())
        .push_listener(ProfilingListener::new());
    let run = exec.run_with(feeds, &mut listeners, &RunOptions::default())?;
    listeners.collect();
    let findings = listeners.take_findings();
    let timeline = listeners
        .get::<ProfilingListener>()
        .map(|p| {
            p.spans()
                .iter()
                .map(|s| TimelineEntry {
                    node: s.node.clone(),
                    op: s.op.clone(),
                    start_us: s.start_us as u64,
                    dur_us: s.dur_us.ceil() as u64,
                    swept: s.swept,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Ran {
        peak_live_bytes: run.stats.peak_live_bytes,
        outputs: run.outputs,
        findings,
        timeline,
        listeners,
    })
}

/// Runs one case. Never fails: a broken case (bad graph, op error, panic)
/// becomes a case with status `error`. Graphs load with `registry`.
pub fn run_case(case: &CaseRef, cfg: &RunConfig, registry: &OpRegistry) -> Case {
    let start = Instant::now();
    let base = Case::new(case.name(), case.path.clone());
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| run_inner(case, cfg, registry, base.clone())));
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

/// A case read from disk, ready for [`check`].
pub struct LoadedCase {
    pub paths: CasePaths,
    pub graph: Graph,
    pub feeds: HashMap<String, Tensor>,
}

/// Reads a case's graph (ops from `registry`) and its `inputs/`, as
/// [`run_case`] does before checking it.
pub fn load_case(case: &CaseRef, registry: &OpRegistry) -> Result<LoadedCase> {
    let paths = CasePaths::resolve(&case.location)?;
    let graph = load_graph(&paths.graph, registry)?;
    let feeds = load_feeds(&graph, paths.inputs.as_deref(), &[], FeedSource::CaseDir)?;
    Ok(LoadedCase { paths, graph, feeds })
}

fn run_inner(case: &CaseRef, cfg: &RunConfig, registry: &OpRegistry, mut out: Case) -> Result<Case> {
    let LoadedCase { paths, graph, feeds } = load_case(case, registry)?;
    let file = match &paths.tolerance {
        Some(p) => CaseTolerance::read(p)?,
        None => CaseTolerance::default(),
    };
    let mut listeners = ListenerSet::new();
    listeners.set_case(Some(case.path.clone()));
    let checked = check(&graph, &feeds, cfg, listeners).with_context(|| paths.graph.display().to_string())?;
    for mut f in checked.findings {
        if cfg.mode == Mode::Debug {
            // DebugMode's findings name no case; the report's row does.
            f.case = None;
        }
        out = out.with_finding(f);
    }
    if !checked.timeline.is_empty() {
        out = out.with_timeline(checked.timeline);
    }
    out.debug = checked.debug.as_ref().and_then(|s| serde_json::to_value(s).ok());
    if let Some(dir) = &paths.expected {
        let expected = load_expected(dir)?;
        let f64_reference = cfg.f64_reference || file.f64_reference;
        let mut exact = Exact::new(f64_reference.then_some((&graph, &feeds)));
        let tol = ToleranceOverrides {
            rtol: cfg.tolerance.rtol.or(file.rtol),
            atol: cfg.tolerance.atol.or(file.atol),
        };
        out = compare_outputs(out, &checked.outputs, &expected, &tol, &mut exact)?;
    }
    Ok(out)
}

/// The cases under some paths, as `vigil run` finds them: directories are
/// walked (`broken/` is skipped unless named) and ONNX tests are imported
/// into temporary cases, which live as long as this value.
pub struct Suites {
    /// Sorted by path, each once.
    pub cases: Vec<CaseRef>,
    import_errors: HashMap<String, String>,
    _imported: OnnxCases,
}

impl Suites {
    pub fn discover(paths: &[PathBuf]) -> Result<Suites> {
        Suites::discover_with(paths, &crate::onnx_suite::ImportSettings::default())
    }

    /// [`Suites::discover`], importing ONNX models with `settings`.
    pub fn discover_with(paths: &[PathBuf], settings: &crate::onnx_suite::ImportSettings) -> Result<Suites> {
        let mut cases = discover(paths)?;
        let imported = crate::onnx_suite::import_all_with(paths, settings)?;
        let import_errors = imported
            .failed
            .iter()
            .map(|(c, e)| (c.path.clone(), e.clone()))
            .collect();
        cases.extend(imported.cases.iter().cloned());
        cases.extend(imported.failed.iter().map(|(c, _)| c.clone()));
        cases.sort();
        Ok(Suites {
            cases,
            import_errors,
            _imported: imported,
        })
    }

    /// Runs one of these cases with [`run_case`]; an ONNX test whose import
    /// failed is an errored case. (An imported ONNX test compares with
    /// ONNX's tolerances, from the `tolerance.json` its import wrote,
    /// unless `cfg` sets its own.)
    pub fn run_case(&self, case: &CaseRef, cfg: &RunConfig, registry: &OpRegistry) -> Case {
        self.import_error(case)
            .unwrap_or_else(|| run_case(case, cfg, registry))
    }

    /// The errored case when `case` is an ONNX test whose import failed;
    /// `run --isolate` reports it without sending the case to a worker.
    pub fn import_error(&self, case: &CaseRef) -> Option<Case> {
        let e = self.import_errors.get(&case.path)?;
        Some(Case::new(case.name(), case.path.clone()).errored(format!("import: {e}")))
    }
}

/// Runs every case under `paths` the way `vigil run` does, in parallel on
/// the current rayon pool (`ThreadPool::install` to bound it), with graphs
/// loaded through `registry`, and returns the report. The `vigil run`
/// command adds progress, `--filter`, `--partition`, `--timeout` and the
/// exit code on top.
///
/// ```no_run
/// use vigil::runner::{run_suites, Mode, RunConfig, ToleranceOverrides};
/// let mut registry = vigil::default_registry();
/// // my_ops::register(&mut registry);
/// let cfg = RunConfig::new(Mode::Validate, ToleranceOverrides::default());
/// let report = run_suites(&["suites".into()], &cfg, &registry)?;
/// assert!(report.summary().ok(), "{}", report.summary().line());
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn run_suites(paths: &[PathBuf], cfg: &RunConfig, registry: &OpRegistry) -> Result<Report> {
    let suites = Suites::discover(paths)?;
    let cases: Vec<Case> = suites
        .cases
        .par_iter()
        .map(|c| suites.run_case(c, cfg, registry))
        .collect();
    Ok(Report::new(cfg.mode.name(), cases).with_vigil_version(env!("CARGO_PKG_VERSION")))
}

/// How many times the reference's own error (against the f64 evaluation)
/// Vigil's own error counts for in a model output's tolerance: two correct
/// f32 engines round differently (Winograd's transforms round more than a
/// direct dot product), so neither one's error bounds the other's. The
/// same factor DebugMode's arbitration allows an in-place kernel.
pub const F64_REFERENCE_FACTOR: f64 = 2.0;

/// How many times the engine's own rounding error (or the dtype's unit
/// roundoff times the output's scale, if larger) the reference's error may
/// be and still count as rounding. A larger one is a different result, not
/// rounding, and loosens nothing.
pub const ROUNDING_RATIO: f64 = 64.0;

/// The graph's outputs evaluated in f64 (every f32 input, constant and
/// parameter widened; [`vigil_debugmode::widen`]), computed at most once,
/// when an output first needs it.
pub struct Exact<'a> {
    source: Option<(&'a Graph, &'a HashMap<String, Tensor>)>,
    outputs: Option<Option<Vec<(String, Tensor)>>>,
}

impl<'a> Exact<'a> {
    /// `source` is the graph and feeds to evaluate; `None` turns the f64
    /// reference off.
    pub fn new(source: Option<(&'a Graph, &'a HashMap<String, Tensor>)>) -> Exact<'a> {
        Exact {
            source,
            outputs: None,
        }
    }

    /// Output `name` in f64, or `None` when off or when the graph does not
    /// run widened (an op that takes only f32).
    fn output(&mut self, name: &str) -> Option<&Tensor> {
        let (g, feeds) = self.source?;
        let outs = self.outputs.get_or_insert_with(|| {
            let wide = vigil_debugmode::widen(g).ok()?;
            let feeds: HashMap<String, Tensor> = feeds
                .iter()
                .map(|(k, t)| {
                    let t = if t.dtype() == DType::F32 {
                        t.cast(DType::F64)?
                    } else {
                        t.deep_copy()?
                    };
                    Ok((k.clone(), t))
                })
                .collect::<vigil_engine::Result<_>>()
                .ok()?;
            let run = Executor::new(&wide).ok()?.run(&feeds).ok()?;
            Some(run.outputs)
        });
        outs.as_ref()?.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

/// The absolute tolerance for a model output `got` that missed `atol`,
/// given the f64 evaluation `exact` of the same graph. With the
/// reference's own error `e_ref = max |want − exact|` and the engine's
/// `e_own = max |got − exact|`: when `e_ref` is rounding, at most
/// [`ROUNDING_RATIO`] times `max(e_own, u·max|exact|)` (`u` the dtype's unit
/// roundoff), the tolerance is `max(atol, e_ref + min(e_own, 2·e_ref))`
/// ([`F64_REFERENCE_FACTOR`]): the two errors can add, and Vigil's counts
/// up to twice the reference's. Else `atol` stays. A correct engine rounds
/// about as much as the reference, so it passes. A wrong one fails: a
/// wrong op makes the f64 evaluation wrong too, so its difference from the
/// reference is far past its own rounding and loosens nothing.
pub fn model_atol(got: &Tensor, want: &Tensor, exact: &Tensor, atol: f64) -> Result<ModelTolerance> {
    let (g, w, e) = (got.to_f64_vec()?, want.to_f64_vec()?, exact.to_f64_vec()?);
    let max_diff = |a: &[f64]| {
        a.iter()
            .zip(&e)
            .map(|(p, q)| (p - q).abs())
            .filter(|d| d.is_finite())
            .fold(0.0f64, f64::max)
    };
    let (e_ref, e_own) = (max_diff(&w), max_diff(&g));
    let scale = e
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let unit = match got.dtype() {
        DType::F16 => f64::powi(2.0, -11),
        DType::BF16 => f64::powi(2.0, -8),
        // The float8 formats: E5M2's 2 mantissa bits, the coarsest.
        d if d.is_small_float() => f64::powi(2.0, -3),
        DType::F32 => f64::powi(2.0, -24),
        _ => f64::powi(2.0, -53),
    };
    let rounding = e_ref <= ROUNDING_RATIO * e_own.max(unit * scale);
    Ok(ModelTolerance {
        atol: if rounding {
            atol.max(e_ref + e_own.min(F64_REFERENCE_FACTOR * e_ref))
        } else {
            atol
        },
        errors: F64Errors {
            expected: e_ref,
            output: e_own,
        },
        rounding,
    })
}

/// What [`model_atol`] judged: the tolerance, both errors (which the
/// report keeps) and whether the reference's error counted as rounding.
#[derive(Clone, Copy, Debug)]
pub struct ModelTolerance {
    pub atol: f64,
    pub errors: F64Errors,
    pub rounding: bool,
}

/// Compares every expected output; a difference is an `output_mismatch`.
/// A float output that misses the tolerance is compared again with
/// [`model_atol`] when `exact` holds the f64 evaluation.
fn compare_outputs(
    mut out: Case,
    outputs: &[(String, Tensor)],
    expected: &HashMap<String, Tensor>,
    tol: &ToleranceOverrides,
    exact: &mut Exact,
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
        let (rtol, mut atol) = tol.for_dtype(got.dtype());
        let mut c = compare(got, want, Tolerance::new(rtol, atol))?;
        let mut judged = None;
        if c.mismatched > 0 && got.dtype().is_float() {
            if let Some(e) = exact.output(name).filter(|e| e.shape() == want.shape()) {
                let m = model_atol(got, want, e, atol)?;
                (atol, judged) = (m.atol, Some(m));
                c = compare(got, want, Tolerance::new(rtol, atol))?;
            }
        }
        let mut cmp = OutputComparison::new(name.clone(), c.elements as u64);
        cmp.f64_reference = judged.map(|m| m.errors);
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
            // Why the tolerance is what it is, when the f64 reference judged it.
            let judged = judged.map_or(String::new(), |m| {
                let verdict = if m.rounding {
                    format!("so atol is {atol:.3e}")
                } else {
                    "the expected values are not that graph's result up to rounding, so atol stays".into()
                };
                format!(
                    "; against the f64 evaluation the expected values are off by {:.3e} and the output by {:.3e}: {verdict}",
                    m.errors.expected, m.errors.output
                )
            });
            out = out.with_finding(
                Finding::error(
                    "output_mismatch",
                    format!(
                        "output '{name}': {} of {} elements differ, max abs err {:.3e} (first at {:?}: got {}, expected {}){judged}",
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
