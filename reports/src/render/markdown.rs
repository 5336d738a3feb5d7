//! Markdown for pull-request comments: a summary line, a table of the
//! findings, and a collapsed `<details>` block per case for the long part.
//! Output is capped to stay well under a comment's size limit.

use std::fmt::Write;

use super::{case_rows, coverage_line, fmt_ms, fmt_num, Row};
use crate::{plural, Case, Report, Status};

/// Most table rows; past it, a note points to the full report.
const MAX_ROWS: usize = 100;
/// Longest `details` JSON shown for one finding.
const MAX_DETAILS_CHARS: usize = 4_000;
/// Stop adding `<details>` blocks past this size (GitHub refuses comments
/// over 65,536 characters).
const BUDGET_CHARS: usize = 50_000;

pub fn render(report: &Report) -> String {
    let summary = report.summary();
    let mut out = String::new();
    let (icon, verdict) = if !summary.ok() {
        ("❌", "failed")
    } else if summary.warnings > 0 {
        ("⚠️", "passed with warnings")
    } else {
        ("✅", "passed")
    };
    let _ = writeln!(out, "### {icon} Vigil {}: {verdict}\n", md_text(report.mode()));
    let _ = write!(out, "**{}**", summary.line());
    let _ = writeln!(out, " · Vigil {}\n", md_text(report.vigil_version()));
    let _ = writeln!(out, "{}\n", md_text(&coverage_line(report)));
    if !summary.findings_by_kind.is_empty() {
        let kinds: Vec<String> = summary
            .findings_by_kind
            .iter()
            .map(|(k, n)| format!("{} × {n}", code(k)))
            .collect();
        let _ = writeln!(out, "Findings by kind: {}\n", kinds.join(", "));
    }

    let shown: Vec<&Case> = report
        .cases()
        .iter()
        .filter(|c| c.status != Status::Pass || !c.findings.is_empty())
        .collect();
    let rows: Vec<Row> = shown.iter().flat_map(|c| case_rows(c)).collect();
    if rows.is_empty() {
        return out;
    }
    out.push_str("| case | status | node | op | kind | severity | detail | message | what to do |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for r in rows.iter().take(MAX_ROWS) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md_text(&r.case.path),
            r.case.status,
            code(r.node),
            code(r.op),
            code(r.kind),
            r.severity,
            md_text(&r.detail),
            md_text(r.message),
            what_to_do(r),
        );
    }
    if rows.len() > MAX_ROWS {
        let _ = writeln!(
            out,
            "\n_{} more rows not shown; see the full report._",
            rows.len() - MAX_ROWS
        );
    }
    out.push('\n');

    for (i, case) in shown.iter().enumerate() {
        if out.len() > BUDGET_CHARS {
            let _ = writeln!(
                out,
                "_Details of {} more cases not shown; see the full report._",
                shown.len() - i
            );
            break;
        }
        case_details(&mut out, case);
    }
    out
}

/// The hint and a link to the kind's docs; empty for a kind with neither.
fn what_to_do(r: &Row) -> String {
    let hint = r.hint.map(md_text).unwrap_or_default();
    match r.docs.as_deref() {
        Some(d) if hint.is_empty() => format!("[docs]({d})"),
        Some(d) => format!("{hint} ([docs]({d}))"),
        None => hint,
    }
}

/// One collapsed block: the case's error, each finding with its details,
/// and the output comparisons.
fn case_details(out: &mut String, case: &Case) {
    let _ = writeln!(
        out,
        "<details><summary><code>{}</code>: {}, {}, {}</summary>\n",
        html_text(&case.path),
        case.status,
        plural(case.findings.len() as u64, "finding"),
        fmt_ms(case.duration_ms),
    );
    let rows = case_rows(case);
    if let Some(e) = &case.error {
        let _ = writeln!(out, "**Error:**\n\n{}", fenced("text", e));
        if let Some(r) = rows.iter().find(|r| r.details.is_none()) {
            let _ = writeln!(out, "What to do: {}\n", what_to_do(r));
        }
    }
    for (f, r) in case
        .findings
        .iter()
        .zip(rows.iter().filter(|r| r.details.is_some()))
    {
        let at = if f.node.is_empty() {
            String::new()
        } else {
            format!(" at {} ({})", code(&f.node), code(&f.op))
        };
        let _ = writeln!(
            out,
            "- **{}** {}{at}: {}",
            f.severity,
            code(&f.kind),
            md_text(&f.message)
        );
        let todo = what_to_do(r);
        if !todo.is_empty() {
            let _ = writeln!(out, "  What to do: {todo}");
        }
        let has_details = !(f.details.is_null() || f.details.as_object().is_some_and(|m| m.is_empty()));
        if has_details {
            let mut json = serde_json::to_string_pretty(&f.details).unwrap_or_default();
            if json.len() > MAX_DETAILS_CHARS {
                let cut = (0..=MAX_DETAILS_CHARS)
                    .rev()
                    .find(|&i| json.is_char_boundary(i))
                    .unwrap_or(0);
                json.truncate(cut);
                json.push_str("\n… (truncated)");
            }
            out.push('\n');
            for line in fenced("json", &json).lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    if !case.outputs.is_empty() {
        out.push_str("\n| output | max abs err | max rel err | mismatched |\n|---|---|---|---|\n");
        for o in &case.outputs {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}/{} |",
                code(&o.name),
                fmt_num(o.max_abs_err),
                fmt_num(o.max_rel_err),
                o.mismatched,
                o.elements
            );
        }
    }
    out.push_str("\n</details>\n\n");
}

/// Text safe in a table cell or paragraph: Markdown punctuation is
/// backslash-escaped (so `|` cannot end a cell and `<script>` is literal)
/// and line breaks become `<br>` (a newline would end the row).
pub(crate) fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("<br>");
            }
            '\n' => out.push_str("<br>"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A code span, or escaped text when the value cannot sit in one (a
/// backtick, a pipe, a line break). Empty stays empty.
fn code(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else if s.contains(['`', '|', '\n', '\r']) {
        md_text(s)
    } else {
        format!("`{s}`")
    }
}

/// Text inside raw HTML (the `<summary>` line), where Markdown escapes do
/// not apply.
fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

/// A fenced code block whose fence is longer than any backtick run inside.
fn fenced(lang: &str, body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{body}\n{fence}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_pipes_newlines_and_html() {
        assert_eq!(md_text("a|b\nc\r\nd"), "a\\|b<br>c<br>d");
        assert_eq!(md_text("<script>"), "\\<script\\>");
        assert_eq!(code("x|y"), "x\\|y");
        assert_eq!(code("relu"), "`relu`");
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert!(fenced("text", "a ```` b").starts_with("`````text\n"));
        assert!(fenced("json", "{}").starts_with("```json\n"));
    }
}
