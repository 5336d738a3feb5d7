//! A terminal table: one row per finding and per case that could not run
//! (its message and key detail in the last column), then the summary line.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, Color, ColumnConstraint, ContentArrangement, Table, Width};

use super::rows;
use crate::{Report, Severity};

/// Width used when the output is not a terminal, so that files and CI logs
/// get the same bytes every time.
const FILE_WIDTH: u16 = 140;

/// `color` says the output is a terminal: severities are coloured and the
/// table fits the terminal's width. Otherwise the text is plain and
/// [`FILE_WIDTH`] wide.
pub fn render(report: &Report, color: bool) -> String {
    let rows = rows(report);
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str("no findings\n");
    } else {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        if color {
            t.enforce_styling();
        } else {
            t.force_no_tty().set_width(FILE_WIDTH);
        }
        t.set_header(vec![
            "case",
            "node",
            "op",
            "kind",
            "severity",
            "message and key detail",
        ]);
        // Paths, names and kinds are what people search for: never wrap
        // them; the prose column takes the wrapping instead.
        let constraints = [
            (0, ColumnConstraint::ContentWidth),
            (1, ColumnConstraint::ContentWidth),
            (2, ColumnConstraint::ContentWidth),
            (3, ColumnConstraint::ContentWidth),
            (4, ColumnConstraint::ContentWidth),
            (5, ColumnConstraint::LowerBoundary(Width::Fixed(32))),
        ];
        for (i, constraint) in constraints {
            if let Some(c) = t.column_mut(i) {
                c.set_constraint(constraint);
            }
        }
        for r in &rows {
            let severity = Cell::new(r.severity.name());
            let severity = match (color, r.severity) {
                (false, _) => severity,
                (true, Severity::Error) => severity.fg(Color::Red),
                (true, Severity::Warning) => severity.fg(Color::Yellow),
            };
            let text = if r.detail.is_empty() {
                r.message.to_string()
            } else {
                format!("{}\n[{}]", r.message, r.detail)
            };
            t.add_row(vec![
                Cell::new(&r.case.path),
                Cell::new(r.node),
                Cell::new(r.op),
                Cell::new(r.kind),
                severity,
                Cell::new(text),
            ]);
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out.push_str(&report.summary().line());
    out.push('\n');
    out
}
