//! One self-contained HTML page: summary cards, a sortable findings table,
//! a section per case with findings (details, output comparisons, inline
//! SVG plots) and a list of the passing cases. No external assets and no
//! network, so the file works as a CI artifact opened from disk.
//!
//! Every value from the report goes through [`esc`]; the only script is
//! the fixed sorting code below, which reads no report data.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::svg::{durations_plot, error_plot, timeline_plot, MAX_TIMELINE_ROWS};
use super::{case_rows, coverage_line, esc, fmt_ms, fmt_num, rows, Row};
use crate::{plural, Case, Report, Severity, Status, FORMAT};

const STYLE: &str = r#"
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa;--accent:#0969da;
--pass:#1a7f37;--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--err:#bc4c00;--err-bg:#fff1e5;
--warn:#9a6700;--warn-bg:#fff8c5}
*{box-sizing:border-box}
body{margin:0;background:var(--soft);color:var(--fg);font:14px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",
Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1320px;margin:0 auto;padding:24px 24px 48px}
h1{font-size:22px;margin:0}
h2{font-size:17px;margin:32px 0 12px}
h3{font-size:15px;margin:0;display:flex;align-items:center;gap:10px;flex-wrap:wrap}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,monospace;font-size:12.5px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
.top{display:flex;align-items:center;gap:14px;flex-wrap:wrap}
.meta{color:var(--muted);margin-top:4px}
.verdict{font-weight:600;border-radius:6px;padding:3px 10px;font-size:13px}
.verdict.ok{color:var(--pass);background:var(--pass-bg)}.verdict.bad{color:var(--fail);background:var(--fail-bg)}
.cards{display:grid;grid-template-columns:repeat(5,1fr);gap:12px;margin:20px 0 8px}
.card{background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:12px 16px;border-top-width:4px}
.card .n{font-size:26px;font-weight:600;line-height:1.2}.card .l{color:var(--muted)}
.card.pass{border-top-color:var(--pass)}.card.fail{border-top-color:var(--fail)}
.card.error{border-top-color:var(--err)}.card.warn{border-top-color:var(--warn)}.card.all{border-top-color:var(--accent)}
.line{font-weight:600;margin:12px 0 4px}
.kinds{display:flex;flex-wrap:wrap;gap:6px;margin-top:8px}
.chip{background:var(--bg);border:1px solid var(--line);border-radius:999px;padding:1px 10px;font-size:12.5px}
.chip b{font-weight:600;margin-left:4px}
table{border-collapse:collapse;width:100%;background:var(--bg)}
.frame{border:1px solid var(--line);border-radius:8px;overflow-x:auto;background:var(--bg)}
th,td{text-align:left;padding:6px 9px;border-bottom:1px solid var(--line);vertical-align:baseline}
th{background:var(--soft);font-weight:600;font-size:12.5px;white-space:nowrap;user-select:none}
tbody tr:last-child td{border-bottom:0}tbody tr:hover td{background:#f6f8fa}
table.sortable th{cursor:pointer}table.sortable th:hover{color:var(--accent)}
table.sortable th::after{content:"\2195";color:#b1b9c1;margin-left:4px;font-size:11px}
table.sortable th[aria-sort=ascending]::after{content:"\25B2";color:var(--accent)}
table.sortable th[aria-sort=descending]::after{content:"\25BC";color:var(--accent)}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.msg{min-width:200px;white-space:pre-line;overflow-wrap:anywhere}
#findings td{overflow-wrap:anywhere}#findings td.mono,#findings td.path{overflow-wrap:normal}#findings td.path{min-width:11em}.pill{white-space:nowrap}#findings td.msg{min-width:260px;width:32%}#findings td.detail{min-width:120px}
.pill{display:inline-block;border-radius:999px;padding:0 8px;font-size:12px;font-weight:600;line-height:20px}
.pill.pass{color:var(--pass);background:var(--pass-bg)}.pill.fail,.pill.sev-error{color:var(--fail);
background:var(--fail-bg)}.pill.error{color:var(--err);background:var(--err-bg)}
.pill.sev-warning{color:var(--warn);background:var(--warn-bg)}
.hint{color:var(--muted);font-size:12.5px;margin:6px 2px}
.fix{color:var(--fg);font-size:12.5px;margin-top:3px;white-space:normal}.fix .docs{color:var(--muted);font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11.5px}
figure.wide{flex:1 1 100%}figure.wide svg.plot{max-width:none}
.case{background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:16px 18px;margin:14px 0}
.case .sub{color:var(--muted);font-weight:400;font-size:13px}
.errbox{background:var(--err-bg);border:1px solid #ffd8b5;border-radius:6px;padding:8px 12px;margin:12px 0 0;
white-space:pre-wrap;overflow-wrap:anywhere}
.finding{border-left:3px solid var(--fail);padding:4px 0 4px 12px;margin:12px 0}
.finding.sev-warning{border-left-color:var(--warn)}
.finding .head{display:flex;gap:8px;align-items:center;flex-wrap:wrap}
.finding .msg{margin:2px 0;white-space:pre-line;overflow-wrap:anywhere}
details>summary{cursor:pointer;color:var(--accent);font-size:12.5px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:8px 10px;overflow:auto;
max-height:320px;margin:6px 0}
.outputs{margin-top:14px;display:inline-block;max-width:100%}
.plots{display:flex;flex-wrap:wrap;gap:16px;margin-top:14px}
figure{margin:0;flex:0 1 540px;min-width:0}figcaption{color:var(--muted);font-size:12.5px;margin-bottom:4px}
svg.plot{display:block;max-width:100%;height:auto;background:var(--bg);border:1px solid var(--line);
border-radius:6px;font-family:inherit}
svg .axis{stroke:#8c959f;stroke-width:1}svg .grid{stroke:#eaeef2;stroke-width:1}
svg .tick{fill:#57606a;font-size:11px}svg .axis-title{fill:#57606a;font-size:11.5px}
svg .bar.ok{fill:#54aeff}svg .bar.bad{fill:#cf222e}svg .bar.nonfinite{fill:#82071e}
svg .tol{stroke:#9a6700;stroke-width:1.2;stroke-dasharray:5 4}svg .tol-label{fill:#9a6700}
svg .span{fill:#54aeff}svg .span.bad{fill:#cf222e}
.empty{color:var(--muted);background:var(--bg);border:1px dashed var(--line);border-radius:8px;padding:14px}
footer{color:var(--muted);font-size:12px;margin-top:36px;text-align:center}
@media (max-width:800px){.cards{grid-template-columns:repeat(2,1fr)}}
"#;

/// Sorts a `table.sortable` by the clicked column: numbers numerically
/// (from `data-sort` when present), text naturally; a second click
/// reverses. Reads only the table's own cells.
const SCRIPT: &str = r#"
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  function key(td) {
    var v = td.getAttribute("data-sort");
    if (v === null) v = td.textContent.trim();
    var n = Number(v);
    return v !== "" && !isNaN(n) ? n : v.toLowerCase();
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    th.tabIndex = 0;
    function sort() {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a.cells[i]), y = key(b.cells[i]);
        var c = typeof x === "number" && typeof y === "number" ? x - y
          : String(x).localeCompare(String(y), undefined, { numeric: true });
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
    });
  });
});
"#;

pub fn render(report: &Report) -> String {
    let summary = report.summary();
    let mut h = String::with_capacity(16 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Vigil report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&summary.line())
    );

    let (verdict_class, verdict) = if summary.ok() {
        ("ok", "PASSED")
    } else {
        ("bad", "FAILED")
    };
    let _ = writeln!(
        h,
        "<header><div class=\"top\"><h1>Vigil report</h1><span class=\"verdict {verdict_class}\">{verdict}</span>\
         </div><div class=\"meta\">mode <b>{}</b> · Vigil {} · {FORMAT}</div></header>",
        esc(report.mode()),
        esc(report.vigil_version()),
    );
    h.push_str("<section class=\"cards\">");
    for (class, n, label) in [
        ("all", summary.cases, "cases"),
        ("pass", summary.passed, "passed"),
        ("fail", summary.failed, "failed"),
        ("error", summary.errors, "errors"),
        ("warn", summary.warnings, "warnings"),
    ] {
        let _ = write!(
            h,
            "<div class=\"card {class}\"><div class=\"n\">{n}</div><div class=\"l\">{label}</div></div>"
        );
    }
    h.push_str("</section>\n");
    let _ = writeln!(h, "<p class=\"line\">{}</p>", esc(&summary.line()));
    let _ = writeln!(h, "<p class=\"meta\">{}</p>", esc(&coverage_line(report)));
    if !summary.findings_by_kind.is_empty() {
        h.push_str("<div class=\"kinds\">");
        for (kind, n) in &summary.findings_by_kind {
            let _ = write!(
                h,
                "<span class=\"chip\"><code>{}</code><b>{n}</b></span>",
                esc(kind)
            );
        }
        h.push_str("</div>\n");
    }

    findings_table(&mut h, report);
    durations_plot_section(&mut h, report);

    let flagged: Vec<(usize, &Case)> = report
        .cases()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.status != Status::Pass || !c.findings.is_empty())
        .collect();
    if !flagged.is_empty() {
        h.push_str("<h2>Cases with findings</h2>\n");
        for (i, case) in flagged {
            case_section(&mut h, i, case);
        }
    }
    passed_table(&mut h, report);

    let _ = write!(
        h,
        "<footer>Generated by Vigil {} · {FORMAT} · open the JSON report for every detail</footer>\n\
         </main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        esc(report.vigil_version())
    );
    h
}

/// The slowest cases' durations (every case up to the cap, those under a
/// millisecond included), drawn for every run with timings, clean or not:
/// where a suite's time goes is worth a look either way. Names are case
/// paths without the directory they all share.
fn durations_plot_section(h: &mut String, report: &Report) {
    if report.cases().iter().all(|c| c.duration_ms == 0) {
        return;
    }
    let mut cases: Vec<&Case> = report.cases().iter().collect();
    cases.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then(a.path.cmp(&b.path)));
    let shown = cases.len().min(MAX_TIMELINE_ROWS);
    let prefix = shared_dir(cases.iter().map(|c| c.path.as_str()));
    let bars: Vec<(String, u64, bool)> = cases[..shown]
        .iter()
        .map(|c| {
            (
                c.path[prefix.len()..].to_string(),
                c.duration_ms,
                c.status != Status::Pass,
            )
        })
        .collect();
    let more = if cases.len() > shown {
        format!("; the slowest {shown} of {}", cases.len())
    } else {
        String::new()
    };
    let under = if prefix.is_empty() {
        String::new()
    } else {
        format!(", paths under <code>{}</code>", esc(prefix))
    };
    let _ = writeln!(
        h,
        "<div class=\"plots\"><figure class=\"wide\"><figcaption>Case durations (red: failed or errored{under}{more})</figcaption>{}</figure></div>",
        durations_plot(&bars, "Case durations"),
    );
}

/// The directory (ending in `/`) every path starts with, or `""`.
fn shared_dir<'a>(mut paths: impl Iterator<Item = &'a str>) -> &'a str {
    let Some(first) = paths.next() else {
        return "";
    };
    let mut len = first.rfind('/').map_or(0, |i| i + 1);
    for p in paths {
        while len > 0 && !(p.len() > len && p.as_bytes()[..len] == first.as_bytes()[..len]) {
            len = first[..len - 1].rfind('/').map_or(0, |i| i + 1);
        }
    }
    &first[..len]
}

fn findings_table(h: &mut String, report: &Report) {
    h.push_str("<h2>Findings</h2>\n");
    if rows(report).is_empty() {
        h.push_str("<p class=\"empty\">No findings.</p>\n");
        return;
    }
    h.push_str(
        "<div class=\"frame\"><table class=\"sortable\" id=\"findings\"><thead><tr><th>Case</th><th>Status</th><th>Node</th>\
         <th>Op</th><th>Kind</th><th>Severity</th><th>Detail</th><th>Message</th></tr></thead>\n<tbody>\n",
    );
    for (index, r) in report
        .cases()
        .iter()
        .enumerate()
        .flat_map(|(i, c)| case_rows(c).into_iter().map(move |r| (i, r)))
    {
        let _ = writeln!(
            h,
            "<tr><td class=\"path\"><a href=\"#case-{}\">{}</a></td><td data-sort=\"{}\">{}</td><td class=\"mono\">{}</td>\
             <td class=\"mono\">{}</td><td class=\"mono\">{}</td><td data-sort=\"{}\">{}</td><td class=\"detail\">{}</td>\
             <td class=\"msg\">{}{}</td></tr>",
            index,
            path_html(&r.case.path),
            status_rank(r.case.status),
            status_pill(r.case.status),
            name_html(r.node),
            name_html(r.op),
            name_html(r.kind),
            severity_rank(r.severity),
            severity_pill(r.severity),
            esc(&r.detail),
            esc(r.message),
            fix_html(&r),
        );
    }
    h.push_str("</tbody></table></div>\n<p class=\"hint\">Click a column header to sort.</p>\n");
}

fn case_section(h: &mut String, index: usize, case: &Case) {
    let _ = writeln!(
        h,
        "<section class=\"case\" id=\"case-{index}\"><h3>{} <span class=\"mono\">{}</span>\
         <span class=\"sub\">{} · {}</span></h3>",
        status_pill(case.status),
        esc(&case.path),
        esc(&case.name),
        fmt_ms(case.duration_ms),
    );
    for r in case_rows(case) {
        let sev = r.severity.name();
        let at = if r.node.is_empty() {
            String::new()
        } else {
            format!(
                " at <code>{}</code> <span class=\"sub\">({})</span>",
                esc(r.node),
                esc(r.op)
            )
        };
        let _ = write!(
            h,
            "<div class=\"finding sev-{sev}\"><div class=\"head\">{} <code>{}</code>{at}</div>",
            severity_pill(r.severity),
            esc(r.kind),
        );
        match r.details {
            None => {
                let _ = write!(
                    h,
                    "<div class=\"errbox\">{}</div>{}",
                    esc(r.message),
                    fix_html(&r)
                );
            }
            Some(d) => {
                let _ = write!(h, "<div class=\"msg\">{}</div>{}", esc(r.message), fix_html(&r));
                if !r.detail.is_empty() {
                    let _ = write!(h, "<div class=\"sub mono\">{}</div>", esc(&r.detail));
                }
                if !(d.is_null() || d.as_object().is_some_and(|m| m.is_empty())) {
                    let json = serde_json::to_string_pretty(d).unwrap_or_default();
                    let _ = write!(
                        h,
                        "<details><summary>details</summary><pre>{}</pre></details>",
                        esc(&json)
                    );
                }
            }
        }
        h.push_str("</div>\n");
    }
    outputs_table(h, case);
    let mut plots = String::new();
    let from_finding = case.first_finding_sample();
    let divergent = case
        .first_divergent_sample()
        .map(|(o, s)| (o, s, "first divergent output"))
        .or(from_finding
            .as_ref()
            .map(|(o, s)| (o, s, "first divergent value, against the pure reference")));
    if let Some((output, sample, what)) = divergent {
        let every = if sample.step > 1 {
            format!(", 1 in {} elements", sample.step)
        } else {
            String::new()
        };
        let _ = writeln!(
            plots,
            "<figure><figcaption>Absolute error of <code>{}</code> ({what}{every})\
             </figcaption>{}</figure>",
            esc(&output.name),
            error_plot(output, sample),
        );
    }
    if !case.timeline.is_empty() {
        let nodes: BTreeSet<&str> = case.findings.iter().map(|f| f.node.as_str()).collect();
        let more = case.timeline.len().saturating_sub(MAX_TIMELINE_ROWS);
        let note = if more > 0 {
            format!("; {more} later ops not shown")
        } else {
            String::new()
        };
        let _ = writeln!(
            plots,
            "<figure><figcaption>Op timeline (red: nodes with findings{note})</figcaption>{}</figure>",
            timeline_plot(&case.timeline, &nodes, "Op timeline"),
        );
    }
    if !plots.is_empty() {
        let _ = writeln!(h, "<div class=\"plots\">{plots}</div>");
    }
    h.push_str("</section>\n");
}

fn outputs_table(h: &mut String, case: &Case) {
    if case.outputs.is_empty() {
        return;
    }
    h.push_str(
        "<div class=\"outputs frame\"><table><thead><tr><th>Output</th><th>Max abs err</th><th>Max rel err</th>\
         <th>Mismatched</th><th>Tolerance</th></tr></thead><tbody>",
    );
    for o in &case.outputs {
        let tol = match (o.atol, o.rtol) {
            (None, None) => "–".to_string(),
            (a, r) => format!(
                "atol {} · rtol {}",
                a.map_or("–".into(), fmt_num),
                r.map_or("–".into(), fmt_num)
            ),
        };
        let class = if o.diverged() {
            " style=\"color:var(--fail);font-weight:600\""
        } else {
            ""
        };
        let _ = write!(
            h,
            "<tr><td class=\"mono\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\"{class}>{} / {}</td><td>{}</td></tr>",
            esc(&o.name),
            fmt_num(o.max_abs_err),
            fmt_num(o.max_rel_err),
            o.mismatched,
            o.elements,
            esc(&tol),
        );
    }
    h.push_str("</tbody></table></div>\n");
}

fn passed_table(h: &mut String, report: &Report) {
    let passed: Vec<&Case> = report
        .cases()
        .iter()
        .filter(|c| c.status == Status::Pass && c.findings.is_empty())
        .collect();
    if passed.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h2>Passed cases</h2>\n<details><summary>{} passed with no findings</summary>\
         <div class=\"frame\"><table class=\"sortable\"><thead><tr><th>Case</th><th>Name</th><th>Duration</th><th>Outputs</th>\
         <th>Max abs err</th></tr></thead><tbody>\n",
        plural(passed.len() as u64, "case")
    );
    for c in passed {
        let worst = c
            .outputs
            .iter()
            .map(|o| o.max_abs_err)
            .fold(None, |m: Option<f64>, x| {
                Some(m.map_or(x, |m| if x.is_nan() || x > m { x } else { m }))
            });
        let _ = writeln!(
            h,
            "<tr><td class=\"mono\">{}</td><td>{}</td><td class=\"num\" data-sort=\"{}\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&c.path),
            esc(&c.name),
            c.duration_ms,
            fmt_ms(c.duration_ms),
            c.outputs.len(),
            worst.map_or("–".into(), fmt_num),
        );
    }
    h.push_str("</tbody></table></div></details>\n");
}

/// What to do about a row, and the docs heading that explains its kind.
fn fix_html(r: &Row) -> String {
    match (r.hint, r.docs.as_deref()) {
        (None, None) => String::new(),
        (hint, docs) => format!(
            "<div class=\"fix\">{}{}</div>",
            hint.map(|t| format!("→ {}", esc(t))).unwrap_or_default(),
            docs.map(|d| format!(" <span class=\"docs\">({})</span>", esc(d)))
                .unwrap_or_default(),
        ),
    }
}

/// An escaped path that may wrap after each `/` (and, inside a long name,
/// after each `_`), never inside a word, so long paths do not widen the
/// table.
fn path_html(path: &str) -> String {
    path.split('/').map(name_html).collect::<Vec<_>>().join("/<wbr>")
}

/// An escaped snake_case name that may wrap after each `_`, so a narrow
/// column breaks `declared_view_not_aliased` between words, not inside.
fn name_html(name: &str) -> String {
    name.split('_').map(esc).collect::<Vec<_>>().join("_<wbr>")
}

fn status_pill(s: Status) -> String {
    format!("<span class=\"pill {0}\">{0}</span>", s.name())
}

fn severity_pill(s: Severity) -> String {
    format!("<span class=\"pill sev-{0}\">{0}</span>", s.name())
}

/// Sort keys that put the worst first when ascending.
fn status_rank(s: Status) -> u8 {
    match s {
        Status::Error => 0,
        Status::Fail => 1,
        Status::Pass => 2,
    }
}

fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
    }
}
