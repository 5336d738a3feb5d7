//! A terminal table: one row per finding and per case that could not run
//! (its message and key detail in the last column), then the summary line.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, Color, ColumnConstraint, ContentArrangement, Table, Width};

use super::rows;
use crate::{Report, Severity};

/// Width used when the output is not a terminal, so that files and CI logs
/// get the same bytes every time.
pub const FILE_WIDTH: u16 = 140;

/// The order in which columns give way when the table is too wide, each
/// down to its floor: the case path first, then the message, then (in a
/// very narrow terminal) the kind, op and node names. Severity never wraps.
const GIVE_WAY: [(usize, usize); 5] = [(0, 16), (5, 24), (3, 12), (2, 10), (1, 10)];

/// `color` says the output is a terminal: severities are coloured and the
/// table fits the terminal's width. Otherwise the text is plain and at most
/// [`FILE_WIDTH`] wide.
pub fn render(report: &Report, color: bool) -> String {
    let width = if color { terminal_width() } else { None };
    render_width(report, color, width.unwrap_or(FILE_WIDTH))
}

/// The width of the terminal on stdout, if it is one.
fn terminal_width() -> Option<u16> {
    Table::new().width().filter(|&w| w > 0)
}

/// [`render`] at most `width` columns wide (unless even the narrowest
/// layout does not fit). When the columns do not fit, they wrap in the
/// order of [`GIVE_WAY`].
pub fn render_width(report: &Report, color: bool, width: u16) -> String {
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
            t.force_no_tty();
        }
        t.set_width(width);
        let header = ["case", "node", "op", "kind", "severity", "message and key detail"];
        t.set_header(header.to_vec());
        let texts: Vec<String> = rows
            .iter()
            .map(|r| {
                if r.detail.is_empty() {
                    r.message.to_string()
                } else {
                    format!("{}\n[{}]", r.message, r.detail)
                }
            })
            .collect();
        let mut content = header.map(text_width);
        for (r, text) in rows.iter().zip(&texts) {
            let cells = [&r.case.path, r.node, r.op, r.kind, r.severity.name(), text];
            for (w, cell) in content.iter_mut().zip(cells) {
                *w = (*w).max(text_width(cell));
            }
        }
        let widths = fit(&content, width as usize);
        for (c, w) in t.column_iter_mut().zip(widths) {
            // The fixed width includes the column's two padding spaces.
            let w = u16::try_from(w + 2).unwrap_or(u16::MAX);
            c.set_constraint(ColumnConstraint::Absolute(Width::Fixed(w)));
        }
        for (r, text) in rows.iter().zip(texts) {
            let severity = Cell::new(r.severity.name());
            let severity = match (color, r.severity) {
                (false, _) => severity,
                (true, Severity::Error) => severity.fg(Color::Red),
                (true, Severity::Warning) => severity.fg(Color::Yellow),
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

/// Widest line of a cell, in characters.
fn text_width(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Text widths of the columns, whose content needs `content` characters,
/// so that the table fits in `width`: columns give way in the order of
/// [`GIVE_WAY`], each only as much as needed.
fn fit(content: &[usize; 6], width: usize) -> [usize; 6] {
    // "│ " before each column, " " after, and the closing "│".
    let borders = 3 * content.len() + 1;
    let mut widths = *content;
    for (col, floor) in GIVE_WAY {
        let total = borders + widths.iter().sum::<usize>();
        let over = total.saturating_sub(width);
        if over == 0 {
            break;
        }
        let floor = floor.min(content[col]);
        widths[col] -= over.min(widths[col].saturating_sub(floor));
    }
    widths.map(|w| w.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_case_column_gives_way_before_the_message() {
        // case, node, op, kind, severity, message; borders take 19.
        let content = [50, 5, 5, 12, 8, 60];
        assert_eq!(fit(&content, 159), content);
        // 10 too wide: the case alone gives way.
        assert_eq!(fit(&content, 149), [40, 5, 5, 12, 8, 60]);
        // The case reaches its floor of 16, then the message gives way.
        assert_eq!(fit(&content, 125), [16, 5, 5, 12, 8, 60]);
        assert_eq!(fit(&content, 100), [16, 5, 5, 12, 8, 35]);
        // Then the names, and below every floor the table overflows.
        assert_eq!(fit(&content, 76), [16, 5, 5, 12, 8, 24]);
        assert_eq!(fit(&content, 60), [16, 5, 5, 12, 8, 24]);
        let long_names = [50, 30, 30, 30, 8, 60];
        assert_eq!(fit(&long_names, 100), [16, 11, 10, 12, 8, 24]);
        // Short content keeps its own width as its floor.
        assert_eq!(fit(&[4, 1, 1, 1, 8, 3], 10), [4, 1, 1, 1, 8, 3]);
    }
}
