//! The report data model, schema `vigil-report/1`. The JSON form is a
//! stable contract (docs/report-format.md): within `/1`, changes are
//! additive only, so readers ignore fields they do not know.
//!
//! The model holds no timestamps or other run-dependent values of its own:
//! the same cases always serialize to the same bytes.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{float, ReportError};

/// The value of the top-level `format` field.
pub const FORMAT: &str = "vigil-report/1";

/// Most values an [`ErrorSample`] holds: enough for a plot, small enough
/// that a report with many outputs stays readable.
pub const MAX_SAMPLE: usize = 256;

/// The kind renderers give the row of a case whose status is `error`.
pub const CASE_ERROR: &str = "case_error";

/// How a case ended. `fail` means it ran and found errors; `error` means it
/// could not run to the end (bad graph, missing input, crash), so its
/// findings may be incomplete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    Error,
}

impl Status {
    /// The serialized name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub use vigil_findings::{Finding, Kind, Severity};

/// Element-wise absolute errors of one output, thinned to at most
/// [`MAX_SAMPLE`] values: `abs_err[i]` is the error at flat index
/// `start + i * step`. Enough to plot where an output diverges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorSample {
    pub start: u64,
    pub step: u64,
    #[serde(with = "float::many")]
    pub abs_err: Vec<f64>,
}

impl ErrorSample {
    /// Takes every n-th error so that at most [`MAX_SAMPLE`] remain.
    pub fn from_errors(errors: &[f64]) -> ErrorSample {
        let step = errors.len().div_ceil(MAX_SAMPLE).max(1);
        ErrorSample {
            start: 0,
            step: step as u64,
            abs_err: errors.iter().step_by(step).copied().collect(),
        }
    }

    /// The flat element index of the `i`-th value.
    pub fn index(&self, i: usize) -> u64 {
        self.start.saturating_add((i as u64).saturating_mul(self.step))
    }
}

/// How one output compared with its expected value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputComparison {
    /// The output variable's name.
    pub name: String,
    #[serde(with = "float::one")]
    pub max_abs_err: f64,
    #[serde(with = "float::one")]
    pub max_rel_err: f64,
    /// Elements outside tolerance.
    pub mismatched: u64,
    /// Elements compared.
    pub elements: u64,
    /// Tolerances used, when the comparison had any.
    #[serde(default, with = "float::opt")]
    pub atol: Option<f64>,
    #[serde(default, with = "float::opt")]
    pub rtol: Option<f64>,
    #[serde(default)]
    pub sample: Option<ErrorSample>,
    /// When the output missed the tolerance and was judged against the f64
    /// evaluation of its graph: how far each side is from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f64_reference: Option<F64Errors>,
}

/// The largest absolute difference of the expected values and of the
/// output from the f64 evaluation of the same graph: the rounding a model's
/// tolerance was judged by (docs/onnx.md, "Tolerances for real models").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct F64Errors {
    #[serde(with = "float::one")]
    pub expected: f64,
    #[serde(with = "float::one")]
    pub output: f64,
}

impl OutputComparison {
    /// A comparison with no tolerances and no sample.
    pub fn new(name: impl Into<String>, elements: u64) -> OutputComparison {
        OutputComparison {
            name: name.into(),
            max_abs_err: 0.0,
            max_rel_err: 0.0,
            mismatched: 0,
            elements,
            atol: None,
            rtol: None,
            sample: None,
            f64_reference: None,
        }
    }

    /// Whether any element was out of tolerance (or the error is NaN).
    pub fn diverged(&self) -> bool {
        self.mismatched > 0 || self.max_abs_err.is_nan()
    }
}

/// When one op ran, relative to the case's start, for timeline plots.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub node: String,
    pub op: String,
    pub start_us: u64,
    pub dur_us: u64,
    /// The op ran in a fused sweep with its neighbours, interleaved a tile
    /// at a time: the sweep's time is split evenly over its nodes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub swept: bool,
}

/// One graph case of a suite run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub name: String,
    /// Where the case lives, with `/` separators; the directory part is the
    /// suite. Unique within a report.
    pub path: String,
    pub status: Status,
    pub duration_ms: u64,
    /// Why the case could not run; set exactly when `status` is `error`.
    #[serde(default)]
    pub error: Option<String>,
    /// In the order they were seen.
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub outputs: Vec<OutputComparison>,
    #[serde(default)]
    pub timeline: Vec<TimelineEntry>,
    /// DebugMode's counters (values compared, exact, rewrites, re-runs,
    /// peak bytes), as evidence of what the check covered; debug mode only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<serde_json::Value>,
}

impl Case {
    /// A passing case with nothing recorded yet.
    pub fn new(name: impl Into<String>, path: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            path: path.into(),
            status: Status::Pass,
            duration_ms: 0,
            error: None,
            findings: Vec::new(),
            outputs: Vec::new(),
            timeline: Vec::new(),
            debug: None,
        }
    }

    pub fn with_duration_ms(mut self, ms: u64) -> Case {
        self.duration_ms = ms;
        self
    }

    /// Adds a finding; an error finding turns a passing case into a failing
    /// one, so status and findings cannot disagree.
    pub fn with_finding(mut self, finding: Finding) -> Case {
        if finding.is_error() && self.status == Status::Pass {
            self.status = Status::Fail;
        }
        self.findings.push(finding);
        self
    }

    /// Adds a comparison. It does not change the status: the runner reports
    /// a divergence as an `output_mismatch` finding.
    pub fn with_output(mut self, output: OutputComparison) -> Case {
        self.outputs.push(output);
        self
    }

    pub fn with_timeline(mut self, timeline: Vec<TimelineEntry>) -> Case {
        self.timeline = timeline;
        self
    }

    /// Marks the case as not run to the end.
    pub fn errored(mut self, message: impl Into<String>) -> Case {
        self.status = Status::Error;
        self.error = Some(message.into());
        self
    }

    /// The suite: the directory part of `path` (`.` when there is none).
    pub fn suite(&self) -> &str {
        match self.path.trim_end_matches('/').rsplit_once('/') {
            Some(("", _)) => "/",
            Some((dir, _)) => dir,
            None => ".",
        }
    }

    /// Findings of error severity.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.is_error())
    }

    /// Findings of warning severity.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| !f.is_error())
    }

    /// The first output that diverged and has a sample to plot.
    pub fn first_divergent_sample(&self) -> Option<(&OutputComparison, &ErrorSample)> {
        self.outputs
            .iter()
            .filter(|o| o.diverged())
            .find_map(|o| o.sample.as_ref().map(|s| (o, s)))
    }

    /// The error sample of the first finding that carries one in its
    /// details (DebugMode's `value_mismatch`: `var`, `sample`, `atol`), as
    /// the comparison of that variable.
    pub fn first_finding_sample(&self) -> Option<(OutputComparison, ErrorSample)> {
        self.findings.iter().find_map(|f| {
            let d = f.details.as_object()?;
            let sample: ErrorSample = serde_json::from_value(d.get("sample")?.clone()).ok()?;
            if sample.abs_err.is_empty() {
                return None;
            }
            let var = d.get("var").and_then(|v| v.as_str()).unwrap_or(&f.node);
            let elements = d.get("elements").and_then(|v| v.as_u64()).unwrap_or(0);
            let mut o = OutputComparison::new(var, elements);
            o.atol = d.get("atol").and_then(|v| v.as_f64());
            o.rtol = d.get("rtol").and_then(|v| v.as_f64());
            o.mismatched = d.get("mismatched").and_then(|v| v.as_u64()).unwrap_or(0);
            Some((o, sample))
        })
    }
}

/// Counts derived from the cases; see [`Summary::of`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub cases: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// Warning-severity findings over all cases (they do not fail a case).
    pub warnings: usize,
    /// Findings of each kind over all cases, both severities.
    pub findings_by_kind: BTreeMap<String, usize>,
}

impl Summary {
    /// Counts `cases`. The summary is always computed, never stored, so it
    /// cannot drift from the cases it describes.
    pub fn of(cases: &[Case]) -> Summary {
        let mut s = Summary {
            cases: cases.len(),
            ..Summary::default()
        };
        for c in cases {
            match c.status {
                Status::Pass => s.passed += 1,
                Status::Fail => s.failed += 1,
                Status::Error => s.errors += 1,
            }
            for f in &c.findings {
                *s.findings_by_kind.entry(f.kind.to_string()).or_default() += 1;
                if !f.is_error() {
                    s.warnings += 1;
                }
            }
        }
        s
    }

    /// Whether every case passed (warnings allowed): what CI gates on.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.errors == 0
    }

    /// `N cases: P passed, F failed, E errors, W warnings` (singular for
    /// one: `1 case`, `1 error`, `1 warning`), a fixed form that scripts
    /// may match. Warnings are counted because `--fail-on warning` can
    /// fail a run in which every case passed.
    pub fn line(&self) -> String {
        format!(
            "{}: {} passed, {} failed, {}, {}",
            plural(self.cases as u64, "case"),
            self.passed,
            self.failed,
            plural(self.errors as u64, "error"),
            plural(self.warnings as u64, "warning")
        )
    }
}

/// `1 case`, `0 cases`, `3 cases`.
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Which shard of a `--partition K/N` run a report holds (1 <= k <= n).
/// Recorded so that merging can tell a missing or repeated shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub k: u64,
    pub n: u64,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// A whole run: its cases sorted by path, and how it ran. Serializes to
/// the `vigil-report/1` JSON object (summary included); deserializing
/// checks the format and re-sorts.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "ReportFile")]
pub struct Report {
    vigil_version: String,
    mode: String,
    checks: Vec<String>,
    partition: Option<Shard>,
    cases: Vec<Case>,
}

impl Report {
    /// A report of `cases` run in `mode` (e.g. `validate`), stamped with
    /// this crate's version, which is the workspace's.
    pub fn new(mode: impl Into<String>, cases: Vec<Case>) -> Report {
        Report::build(env!("CARGO_PKG_VERSION").to_string(), mode.into(), cases)
    }

    fn build(vigil_version: String, mode: String, mut cases: Vec<Case>) -> Report {
        // Sorted so that the order of execution (threads, shards) never
        // shows in the output.
        cases.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.name.cmp(&b.name)));
        Report {
            vigil_version,
            mode,
            checks: Vec::new(),
            partition: None,
            cases,
        }
    }

    /// Overrides the version stamp (a runner built separately, or tests
    /// that need fixed bytes across releases).
    pub fn with_vigil_version(mut self, version: impl Into<String>) -> Report {
        self.vigil_version = version.into();
        self
    }

    /// Records which checks ran (DebugMode's checks, or validate mode's
    /// listeners), so that a clean report says what it is clean of.
    pub fn with_checks<S: Into<String>>(mut self, checks: impl IntoIterator<Item = S>) -> Report {
        self.checks = checks.into_iter().map(Into::into).collect();
        self
    }

    /// The checks that ran, as recorded by [`Report::with_checks`].
    pub fn checks(&self) -> &[String] {
        &self.checks
    }

    /// Marks the report as shard `shard` of a partitioned run.
    pub fn with_partition(mut self, shard: Shard) -> Report {
        self.partition = Some(shard);
        self
    }

    /// The shard this report holds; `None` for a whole run (or a merge).
    pub fn partition(&self) -> Option<Shard> {
        self.partition
    }

    pub fn vigil_version(&self) -> &str {
        &self.vigil_version
    }

    pub fn mode(&self) -> &str {
        &self.mode
    }

    /// Sorted by path, then name.
    pub fn cases(&self) -> &[Case] {
        &self.cases
    }

    pub fn into_cases(self) -> Vec<Case> {
        self.cases
    }

    pub fn summary(&self) -> Summary {
        Summary::of(&self.cases)
    }

    /// Reads a report. The stored summary is ignored and recomputed.
    pub fn from_json(json: &str) -> Result<Report, ReportError> {
        let file: ReportFile = serde_json::from_str(json)?;
        Report::try_from(file)
    }

    /// Pretty JSON, with a trailing newline.
    pub fn to_json(&self) -> String {
        match serde_json::to_string_pretty(self) {
            Ok(mut s) => {
                s.push('\n');
                s
            }
            // Not reachable: every map key is a string and every float is
            // written by `float`. Still a valid JSON document, never a panic.
            Err(e) => serde_json::json!({"format": FORMAT, "render_error": e.to_string()}).to_string() + "\n",
        }
    }
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ReportOut {
            format: FORMAT,
            vigil_version: &self.vigil_version,
            mode: &self.mode,
            checks: &self.checks,
            partition: self.partition,
            summary: self.summary(),
            cases: &self.cases,
        }
        .serialize(s)
    }
}

impl TryFrom<ReportFile> for Report {
    type Error = ReportError;

    fn try_from(file: ReportFile) -> Result<Report, ReportError> {
        if file.format != FORMAT {
            return Err(ReportError::UnsupportedFormat(file.format));
        }
        let mut r = Report::build(file.vigil_version, file.mode, file.cases);
        r.partition = file.partition;
        r.checks = file.checks;
        Ok(r)
    }
}

/// The serialized shape of [`Report`]; field order is the file's order.
#[derive(Serialize)]
struct ReportOut<'a> {
    format: &'a str,
    vigil_version: &'a str,
    mode: &'a str,
    checks: &'a [String],
    partition: Option<Shard>,
    summary: Summary,
    cases: &'a [Case],
}

/// What [`Report`] is read from; `summary` and unknown fields are
/// skipped.
#[derive(Deserialize)]
pub(crate) struct ReportFile {
    format: String,
    #[serde(default)]
    vigil_version: String,
    mode: String,
    #[serde(default)]
    checks: Vec<String>,
    #[serde(default)]
    partition: Option<Shard>,
    cases: Vec<Case>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_is_the_directory_of_the_path() {
        assert_eq!(Case::new("a", "suites/views/a").suite(), "suites/views");
        assert_eq!(Case::new("a", "suites/views/a/").suite(), "suites/views");
        assert_eq!(Case::new("a", "a").suite(), ".");
        assert_eq!(Case::new("a", "/a").suite(), "/");
    }

    #[test]
    fn sample_is_thinned_to_the_limit() {
        let errs: Vec<f64> = (0..1000).map(f64::from).collect();
        let s = ErrorSample::from_errors(&errs);
        assert!(s.abs_err.len() <= MAX_SAMPLE);
        assert_eq!(s.step, 4);
        assert_eq!(s.index(10), 40);
        assert_eq!(s.abs_err[10], 40.0);
        assert_eq!(ErrorSample::from_errors(&[1.0, 2.0]).abs_err, vec![1.0, 2.0]);
        assert!(ErrorSample::from_errors(&[]).abs_err.is_empty());
    }

    #[test]
    fn non_finite_errors_round_trip_as_strings() {
        let mut o = OutputComparison::new("y", 4);
        o.max_abs_err = f64::INFINITY;
        o.max_rel_err = f64::NAN;
        o.sample = Some(ErrorSample {
            start: 0,
            step: 1,
            abs_err: vec![0.5, f64::NEG_INFINITY],
        });
        let j = serde_json::to_value(&o).unwrap();
        assert_eq!(j["max_abs_err"], "inf");
        assert_eq!(j["max_rel_err"], "NaN");
        assert_eq!(j["sample"]["abs_err"][1], "-inf");
        let back: OutputComparison = serde_json::from_value(j).unwrap();
        assert!(back.max_rel_err.is_nan());
        assert_eq!(back.sample.unwrap().abs_err[1], f64::NEG_INFINITY);
    }

    #[test]
    fn error_finding_fails_a_passing_case_but_warning_does_not() {
        let c = Case::new("a", "s/a").with_finding(Finding::warning("declared_view_not_aliased", "copy"));
        assert_eq!(c.status, Status::Pass);
        let c = c.with_finding(Finding::error("destroyed_input", "changed"));
        assert_eq!(c.status, Status::Fail);
        let c = Case::new("b", "s/b")
            .errored("no graph")
            .with_finding(Finding::error("non_finite", "nan"));
        assert_eq!(c.status, Status::Error);
    }

    #[test]
    fn summary_counts_statuses_and_kinds() {
        let cases = vec![
            Case::new("a", "s/a"),
            Case::new("b", "s/b")
                .with_finding(Finding::error("destroyed_input", "x"))
                .with_finding(Finding::warning("declared_destroy_unused", "y")),
            Case::new("c", "s/c").errored("boom"),
        ];
        let s = Summary::of(&cases);
        assert_eq!(
            (s.cases, s.passed, s.failed, s.errors, s.warnings),
            (3, 1, 1, 1, 1)
        );
        assert_eq!(s.findings_by_kind["destroyed_input"], 1);
        assert_eq!(s.line(), "3 cases: 1 passed, 1 failed, 1 error, 1 warning");
        assert_eq!(
            Summary::of(&cases[..1]).line(),
            "1 case: 1 passed, 0 failed, 0 errors, 0 warnings"
        );
        assert!(!s.ok());
    }

    #[test]
    fn reading_rejects_other_formats_and_recomputes_the_summary() {
        let err = Report::from_json(r#"{"format":"vigil-report/2","mode":"validate","cases":[]}"#);
        assert!(matches!(err, Err(ReportError::UnsupportedFormat(f)) if f == "vigil-report/2"));
        let r = Report::from_json(
            r#"{"format":"vigil-report/1","mode":"validate","summary":{"cases":99},"future_field":1,
                "cases":[{"name":"b","path":"s/b","status":"pass","duration_ms":1},
                         {"name":"a","path":"s/a","status":"error","duration_ms":2,"error":"x"}]}"#,
        )
        .unwrap();
        assert_eq!(r.summary().cases, 2);
        assert_eq!(r.cases()[0].path, "s/a");
    }

    #[test]
    fn null_details_become_an_empty_object() {
        let f = Finding::error("listener_panic", "m").with_details(serde_json::Value::Null);
        assert_eq!(
            serde_json::to_value(&f).unwrap()["details"],
            serde_json::json!({})
        );
    }

    #[test]
    fn json_round_trips() {
        let r = Report::new(
            "validate",
            vec![Case::new("a", "s/a").with_finding(
                Finding::error("destroyed_input", "m")
                    .at("n", "relu")
                    .with_input(0),
            )],
        );
        let back = Report::from_json(&r.to_json()).unwrap();
        assert_eq!(back, r);
        let value = serde_json::to_value(&r).unwrap();
        assert_eq!(value["summary"]["failed"], 1);
        assert_eq!(serde_json::from_value::<Report>(value).unwrap(), r);
        let other = serde_json::json!({"format": "other/1", "mode": "m", "cases": []});
        assert!(serde_json::from_value::<Report>(other)
            .unwrap_err()
            .to_string()
            .contains("other/1"));
    }
}
