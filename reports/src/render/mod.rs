//! Renderers: the same [`Report`] as a terminal table, JSON, Markdown for
//! pull-request comments, JUnit XML for CI test tabs, or one HTML file.
//! Every renderer is a pure function of the report, so the same report
//! always renders to the same bytes.

pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
mod svg;
pub mod table;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::{Case, Finding, Report, Severity, CASE_ERROR};

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Table,
    Json,
    Markdown,
    Html,
    Junit,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Table,
        Format::Json,
        Format::Markdown,
        Format::Html,
        Format::Junit,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Html => "html",
            Format::Junit => "junit",
        }
    }

    /// The usual file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Table => "txt",
            Format::Json => "json",
            Format::Markdown => "md",
            Format::Html => "html",
            Format::Junit => "xml",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The message names the accepted values, for a CLI error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format '{0}' (expected table, json, markdown, html or junit)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        match s {
            "md" => Ok(Format::Markdown),
            "xml" => Ok(Format::Junit),
            _ => Format::ALL
                .into_iter()
                .find(|f| f.name() == s)
                .ok_or_else(|| UnknownFormat(s.to_string())),
        }
    }
}

/// Renders `report` as `format`. `color` says the output is a terminal:
/// only the table uses it (coloured severities, terminal width).
pub fn render(report: &Report, format: Format, color: bool) -> String {
    match format {
        Format::Table => table::render(report, color),
        Format::Json => json::render(report),
        Format::Markdown => markdown::render(report),
        Format::Html => html::render(report),
        Format::Junit => junit::render(report),
    }
}

/// One line of a findings listing: a finding, or the error of a case that
/// could not run (which the table, Markdown and HTML show as a
/// `case_error` row).
pub(crate) struct Row<'a> {
    pub case: &'a Case,
    pub kind: &'a str,
    pub severity: Severity,
    pub node: &'a str,
    pub op: &'a str,
    pub detail: String,
    pub message: &'a str,
    /// The finding's details; `None` for a case-error row.
    pub details: Option<&'a Value>,
    /// What to do, in one line, and where the docs explain the kind.
    pub hint: Option<&'a str>,
    pub docs: Option<std::borrow::Cow<'a, str>>,
}

/// What to do about a case that could not run.
pub(crate) const CASE_ERROR_HINT: &str =
    "fix the file, node or field the message names; `vigil debug CASE` shows the case alone";

/// Where the docs explain a case that could not run.
pub(crate) fn case_error_docs() -> String {
    format!("{}#{CASE_ERROR}", vigil_findings::DOCS_FILE)
}

/// All rows, cases in report order, a case's own error first, findings in
/// the order they were seen.
pub(crate) fn rows(report: &Report) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for case in report.cases() {
        out.extend(case_rows(case));
    }
    out
}

pub(crate) fn case_rows(case: &Case) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    let has_error_finding = case.findings.iter().any(|f| f.kind == CASE_ERROR);
    if let (Some(msg), false) = (case.error.as_deref(), has_error_finding) {
        out.push(Row {
            case,
            kind: CASE_ERROR,
            severity: Severity::Error,
            node: "",
            op: "",
            detail: String::new(),
            message: msg,
            details: None,
            hint: Some(CASE_ERROR_HINT),
            docs: Some(case_error_docs().into()),
        });
    }
    for f in &case.findings {
        out.push(Row {
            case,
            kind: &f.kind,
            severity: f.severity,
            node: &f.node,
            op: &f.op,
            detail: key_detail(f),
            message: &f.message,
            details: Some(&f.details),
            // A report written before hints existed gets the kind's own.
            hint: f.hint.as_deref().or_else(|| f.kind.hint()),
            docs: f
                .docs
                .as_deref()
                .map(std::borrow::Cow::Borrowed)
                .or_else(|| f.kind.docs().map(std::borrow::Cow::Owned)),
        });
    }
    out
}

/// What the run checked, in one line: the mode, the checks that ran and
/// the counters summed over the cases (DebugMode's values compared,
/// rewrites checked and re-runs; output elements compared with
/// `expected/`), so a clean run says what it is clean of.
pub fn coverage_line(report: &Report) -> String {
    let mut line = format!("mode {}", report.mode());
    match (report.mode(), report.checks()) {
        ("plain", _) => line.push_str(" (outputs only, no checks)"),
        (_, []) => {}
        ("validate", checks) => line.push_str(&format!(" (listeners: {})", checks.join(", "))),
        (_, checks) => line.push_str(&format!(" (checks: {})", checks.join(", "))),
    }
    let sum = |key: &str| -> Option<u64> {
        let mut seen = false;
        let total = report
            .cases()
            .iter()
            .filter_map(|c| c.debug.as_ref()?.get(key)?.as_u64())
            .inspect(|_| seen = true)
            .sum();
        seen.then_some(total)
    };
    let mut counts = Vec::new();
    if let Some(n) = sum("compared") {
        counts.push(format!(
            "{} compared with the pure reference",
            crate::plural(n, "value")
        ));
    }
    if let Some(n) = sum("rewrites") {
        counts.push(format!("{} checked", crate::plural(n, "rewrite")));
    }
    if let Some(n) = sum("reruns") {
        counts.push(crate::plural(n, "re-run"));
    }
    let elements: u64 = report
        .cases()
        .iter()
        .flat_map(|c| &c.outputs)
        .map(|o| o.elements)
        .sum();
    let outputs = report.cases().iter().map(|c| c.outputs.len()).sum::<usize>();
    if outputs > 0 {
        counts.push(format!(
            "{} of {} compared with expected/",
            crate::plural(elements, "element"),
            crate::plural(outputs as u64, "output")
        ));
    }
    if !counts.is_empty() {
        line.push_str(": ");
        line.push_str(&counts.join(", "));
    }
    line
}

/// The few facts of a finding worth a column: which input or output, the
/// error size, the hashes that changed. Everything else stays in
/// `details`.
pub(crate) fn key_detail(f: &Finding) -> String {
    let mut parts = Vec::new();
    if let Some(i) = f.input {
        parts.push(format!("input {i}"));
    }
    if let Some(k) = f.output {
        parts.push(format!("output {k}"));
    }
    let d = &f.details;
    for (key, label) in [("max_abs_err", "max abs err"), ("max_rel_err", "max rel err")] {
        if let Some(x) = number(&d[key]) {
            parts.push(format!("{label} {}", fmt_num(x)));
        }
    }
    if let Some(n) = d["mismatched"].as_u64() {
        match d["elements"].as_u64() {
            Some(total) => parts.push(format!("{n}/{total} mismatched")),
            None => parts.push(format!("{n} mismatched")),
        }
    }
    if let Some(i) = d["first_index"].as_u64() {
        parts.push(format!("first at index {i}"));
    }
    for part in ["view", "outside"] {
        let before = d[format!("{part}_hash_before")].as_str();
        let after = d[format!("{part}_hash_after")].as_str();
        if let (Some(b), Some(a)) = (before, after) {
            parts.push(format!("{part} hash {}→{}", short(b), short(a)));
        }
        if let Some(n) = d[part]["changed"].as_u64() {
            parts.push(format!("{part}: {n} changed"));
        }
    }
    if let Some(l) = d["listener"].as_str() {
        parts.push(format!("listener {l}"));
    }
    parts.join(", ")
}

/// A JSON number, or one of the strings the report uses for non-finite
/// values.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// The first 8 characters of a hash: enough to tell two apart at a glance.
fn short(hash: &str) -> &str {
    hash.char_indices().nth(8).map_or(hash, |(i, _)| &hash[..i])
}

/// A short, readable number: `0`, `0.0312`, `1.5e-7`, `NaN`, `inf`.
pub(crate) fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-3..1e5).contains(&a) {
        // Four significant digits.
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{x:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{x:.2e}")
    }
}

/// Text safe in HTML and SVG, in element content and quoted attributes.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `1.25 s`, `340 ms`.
pub(crate) fn fmt_ms(ms: u64) -> String {
    if ms >= 1000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_parse_from_their_names() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert_eq!("md".parse::<Format>(), Ok(Format::Markdown));
        assert!("pdf".parse::<Format>().unwrap_err().to_string().contains("'pdf'"));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(0.031_214), "0.03121");
        assert_eq!(fmt_num(12_345.6), "12346");
        assert_eq!(fmt_num(12_340.0), "12340");
        assert_eq!(fmt_num(2.0), "2");
        assert_eq!(fmt_num(1.5e-7), "1.50e-7");
        assert_eq!(fmt_num(f64::NAN), "NaN");
        assert_eq!(fmt_num(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_ms(1250), "1.25 s");
    }

    #[test]
    fn key_detail_picks_index_errors_and_hashes() {
        let f = Finding::error("destroyed_input", "m")
            .with_input(1)
            .with_details(json!({
                "view_hash_before": "0123456789abcdef", "view_hash_after": "fedcba9876543210",
            }));
        assert_eq!(key_detail(&f), "input 1, view hash 01234567→fedcba98");
        let f = Finding::error("output_mismatch", "m")
            .with_output(0)
            .with_details(json!({"max_abs_err": 0.5, "max_rel_err": "inf", "mismatched": 3, "elements": 8}));
        assert_eq!(
            key_detail(&f),
            "output 0, max abs err 0.5, max rel err inf, 3/8 mismatched"
        );
        let f = Finding::error("destroyed_input", "m").with_details(json!({"view": {"changed": 2}}));
        assert_eq!(key_detail(&f), "view: 2 changed");
        assert_eq!(
            key_detail(&Finding::error("x", "m").with_details(Value::Null)),
            ""
        );
    }
}
