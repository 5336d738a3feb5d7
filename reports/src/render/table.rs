//! A terminal table: one row per finding and per case that could not run
//! (its message, key detail and what to do in the last column), then what
//! the run checked and the summary line.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, Color, ColumnConstraint, ContentArrangement, Table, Width};

use super::{coverage_line, rows};
use crate::{Report, Severity};

/// Width used when the output is not a terminal, so that files and CI logs
/// get the same bytes every time.
pub const FILE_WIDTH: u16 = 140;

/// The order in which columns give way when the table is too wide, each
/// down to its floor: the case path first, down to its longest path
/// segment (so it wraps only after a `/`), then the message, then the case
/// path down to 16 (a long segment then wraps after a `_`), then (in a very
/// narrow terminal) the kind, op and node names. Severity never wraps.
fn give_way(longest_segment: usize) -> [(usize, usize); 6] {
    [
        (0, longest_segment.max(16)),
        (5, 24),
        (0, 16),
        (3, 12),
        (2, 10),
        (1, 10),
    ]
}

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
        // Paths lose the directory all rows share, said once above the table.
        let prefix = common_dir(rows.iter().map(|r| r.case.path.as_str()));
        if !prefix.is_empty() {
            out.push_str(&format!("cases under {prefix}\n"));
        }
        let paths: Vec<&str> = rows.iter().map(|r| &r.case.path[prefix.len()..]).collect();
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        if color {
            t.enforce_styling();
        } else {
            t.force_no_tty();
        }
        t.set_width(width);
        let header = [
            "case",
            "node",
            "op",
            "kind",
            "severity",
            "message, key detail, what to do",
        ];
        t.set_header(header.to_vec());
        let texts: Vec<String> = rows
            .iter()
            .map(|r| {
                let mut text = r.message.to_string();
                if !r.detail.is_empty() {
                    text.push_str(&format!("\n[{}]", r.detail));
                }
                if let Some(h) = r.hint {
                    text.push_str(&format!("\n→ {h}"));
                }
                text
            })
            .collect();
        let mut content = header.map(text_width);
        let mut segment = 0;
        for ((r, text), path) in rows.iter().zip(&texts).zip(&paths) {
            let cells = [path, r.node, r.op, r.kind, r.severity.name(), text];
            for (w, cell) in content.iter_mut().zip(cells) {
                *w = (*w).max(text_width(cell));
            }
            let longest = path.split_inclusive('/').map(|s| s.chars().count()).max();
            segment = segment.max(longest.unwrap_or(0));
        }
        let widths = fit(&content, &give_way(segment), width as usize);
        for (c, w) in t.column_iter_mut().zip(widths) {
            // The fixed width includes the column's two padding spaces.
            let w = u16::try_from(w + 2).unwrap_or(u16::MAX);
            c.set_constraint(ColumnConstraint::Absolute(Width::Fixed(w)));
        }
        for ((r, text), path) in rows.iter().zip(texts).zip(&paths) {
            let severity = Cell::new(r.severity.name());
            let severity = match (color, r.severity) {
                (false, _) => severity,
                (true, Severity::Error) => severity.fg(Color::Red),
                (true, Severity::Warning) => severity.fg(Color::Yellow),
            };
            t.add_row(vec![
                Cell::new(wrap_path(path, widths[0])),
                Cell::new(r.node),
                Cell::new(r.op),
                Cell::new(r.kind),
                severity,
                Cell::new(text),
            ]);
        }
        out.push_str(&t.to_string());
        out.push('\n');
        let mut anchors: Vec<&str> = Vec::new();
        for r in &rows {
            if let Some(d) = r.docs.as_deref() {
                if let Some((_, anchor)) = d.split_once('#') {
                    if !anchors.contains(&anchor) {
                        anchors.push(anchor);
                    }
                }
            }
        }
        if !anchors.is_empty() {
            let line = format!(
                "each kind explained: {} (#{})",
                vigil_findings::DOCS_FILE,
                anchors.join(", #")
            );
            out.push_str(&wrap_words(&line, width as usize));
        }
    }
    out.push_str(&coverage_line(report));
    out.push('\n');
    out.push_str(&report.summary().line());
    out.push('\n');
    out
}

/// The directory (ending in `/`) to cut from every path: the one they
/// all start with, or, when they all sit directly in it (one suite), its
/// parent, so that each row still names its suite. Empty when they share
/// none.
fn common_dir<'a>(paths: impl Iterator<Item = &'a str> + Clone) -> &'a str {
    let mut all = paths.clone();
    let Some(first) = all.next() else {
        return "";
    };
    let mut len = first.rfind('/').map_or(0, |i| i + 1);
    for p in all {
        while len > 0 && !(p.len() > len && p.as_bytes()[..len] == first.as_bytes()[..len]) {
            len = first[..len - 1].rfind('/').map_or(0, |i| i + 1);
        }
    }
    let one_suite = paths
        .into_iter()
        .all(|p| p.rfind('/').map_or(0, |i| i + 1) == len);
    if one_suite && len > 0 {
        len = first[..len - 1].rfind('/').map_or(0, |i| i + 1);
    }
    &first[..len]
}

/// `path` broken into lines of at most `width` characters after a `/`,
/// or, inside a segment longer than `width`, after a `_` (a piece longer
/// than `width` even so stays whole).
fn wrap_path(path: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for seg in path.split_inclusive('/') {
        let pieces: Vec<&str> = if seg.chars().count() > width {
            seg.split_inclusive('_').collect()
        } else {
            vec![seg]
        };
        for piece in pieces {
            let n = piece.chars().count();
            if line > 0 && line + n > width {
                out.push('\n');
                line = 0;
            }
            out.push_str(piece);
            line += n;
        }
    }
    out
}

/// `text` in lines of at most `width` characters, broken at spaces, each
/// line ending in a newline.
fn wrap_words(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out.push('\n');
    out
}

/// Widest line of a cell, in characters.
fn text_width(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Text widths of the columns, whose content needs `content` characters,
/// so that the table fits in `width`: columns give way in the order of
/// `floors` (as [`give_way`]), each only as much as needed.
fn fit(content: &[usize; 6], floors: &[(usize, usize)], width: usize) -> [usize; 6] {
    // "│ " before each column, " " after, and the closing "│".
    let borders = 3 * content.len() + 1;
    let mut widths = *content;
    for &(col, floor) in floors {
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
        assert_eq!(fit(&content, &give_way(0), 159), content);
        // 10 too wide: the case alone gives way.
        assert_eq!(fit(&content, &give_way(0), 149), [40, 5, 5, 12, 8, 60]);
        // The case reaches its floor of 16, then the message gives way.
        assert_eq!(fit(&content, &give_way(0), 125), [16, 5, 5, 12, 8, 60]);
        assert_eq!(fit(&content, &give_way(0), 100), [16, 5, 5, 12, 8, 35]);
        // Then the names, and below every floor the table overflows.
        assert_eq!(fit(&content, &give_way(0), 76), [16, 5, 5, 12, 8, 24]);
        assert_eq!(fit(&content, &give_way(0), 60), [16, 5, 5, 12, 8, 24]);
        let long_names = [50, 30, 30, 30, 8, 60];
        assert_eq!(fit(&long_names, &give_way(0), 100), [16, 11, 10, 12, 8, 24]);
        // Short content keeps its own width as its floor.
        assert_eq!(fit(&[4, 1, 1, 1, 8, 3], &give_way(0), 10), [4, 1, 1, 1, 8, 3]);
    }

    #[test]
    fn paths_wrap_only_after_a_slash() {
        assert_eq!(
            wrap_path("suites/broken/broken_accumulate", 20),
            "suites/broken/\nbroken_accumulate"
        );
        assert_eq!(wrap_path("a/b/c", 20), "a/b/c");
        assert_eq!(wrap_path("averyveryverylongname", 5), "averyveryverylongname");
        assert_eq!(
            wrap_path("broken/broken_identity_read_after_destroy", 16),
            "broken/broken_\nidentity_read_\nafter_destroy"
        );
    }

    #[test]
    fn the_case_column_keeps_whole_segments_before_the_message_gives_way() {
        // case, node, op, kind, severity, message; borders take 19.
        let content = [50, 5, 5, 12, 8, 60];
        // The longest segment is 30: the case stops there, the message
        // gives way, and only then does the case go down to 16.
        assert_eq!(fit(&content, &give_way(30), 144), [35, 5, 5, 12, 8, 60]);
        assert_eq!(fit(&content, &give_way(30), 120), [30, 5, 5, 12, 8, 41]);
        assert_eq!(fit(&content, &give_way(30), 90), [17, 5, 5, 12, 8, 24]);
    }

    #[test]
    fn the_shared_directory_is_cut_but_the_suite_stays() {
        let paths = ["suites/broken/a_x", "suites/broken/b_y"];
        assert_eq!(common_dir(paths.into_iter()), "suites/");
        assert_eq!(common_dir(["suites/broken/a"].into_iter()), "suites/");
        assert_eq!(
            common_dir(["suites/ops/a", "suites/views/b"].into_iter()),
            "suites/"
        );
        assert_eq!(
            common_dir(["suites/ops/a", "suites/ops/x/b"].into_iter()),
            "suites/ops/"
        );
        assert_eq!(common_dir(["x/a", "y/b"].into_iter()), "");
        assert_eq!(common_dir(["a"].into_iter()), "");
    }
}
