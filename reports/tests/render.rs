//! Each renderer on the shared fixture: real content, escaping, counts.

mod common;

use std::collections::BTreeMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};
use vigil_reports::{render, Format, OutputComparison, Report};

use common::{report, NASTY};

#[test]
fn table_lists_findings_and_error_cases_then_the_summary_line() {
    let width = render(&report(), Format::Table, false)
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    assert!(width <= 140, "table is {width} wide");
    // Wide enough that no cell wraps, so rows can be matched line by line.
    let out = vigil_reports::render::table::render_width(&report(), false, 400);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"5 cases: 2 passed, 2 failed, 1 error, 2 warnings")
    );
    assert!(!out.contains('\x1b'), "no colour when not a terminal");
    // The directory every path shares is said once, above the table.
    assert!(out.starts_with("cases under suites/\n"), "{out}");
    for needle in [
        "views/transpose_inplace",
        "destroyed_input",
        "→ declare it in destroy_map",
        "each kind explained: docs/findings.md (#",
        "#destroyed_input,",
        "[input 0, view hash",
        "9f86d081→2c26b46b]",
        "max abs err 0.75",
        "frobnicate",
    ] {
        assert!(out.contains(needle), "table lacks {needle:?}:\n{out}");
    }
    let row = |case: &str, kind: &str| out.lines().any(|l| l.contains(case) && l.contains(kind));
    assert!(row("views/bad_graph", "case_error"), "error cases get a row");
    assert!(row("views/relu_declared", "declared_destroy_unused"));
    assert!(row("numerics/log_zero", "non_finite"));
    // Passing cases with no findings get no row.
    assert!(!out.contains("add_two_views"));
}

#[test]
fn table_paths_wrap_only_at_a_slash_or_underscore() {
    let r = wide_report();
    let paths: Vec<&str> = r.cases().iter().map(|c| c.path.as_str()).collect();
    for width in [100u16, 120, 140, 220] {
        let out = vigil_reports::render::table::render_width(&r, false, width);
        // Each line of the case column ends a path, or breaks after a `/`
        // (or, in a narrow column, after a `_`): never inside a word.
        for line in out.lines().filter(|l| l.starts_with('│')) {
            let cell = line
                .trim_start_matches('│')
                .split(['┆', '│'])
                .next()
                .unwrap()
                .trim();
            if cell.is_empty() || cell == "case" {
                continue;
            }
            assert!(
                cell.ends_with(['/', '_']) || paths.iter().any(|p| p.ends_with(cell)),
                "{width}: the path broke inside a word: {cell:?}\n{out}"
            );
        }
        if width >= 140 {
            // Wide enough for the longest segment: breaks only after a `/`.
            assert!(out.contains("│ generated/"), "{out}");
        }
    }
    // The case: a path of one suite at 220 columns.
    let case = vigil_reports::Case::new("broken_accumulate", "suites/broken/broken_accumulate")
        .with_finding(vigil_reports::Finding::error("destroyed_input", "x".repeat(300)));
    let out = vigil_reports::render::table::render_width(&Report::new("debug", vec![case]), false, 220);
    assert!(
        out.contains("│ broken/ ") && out.contains("│ broken_accumulate "),
        "{out}"
    );
}

#[test]
fn table_colours_severity_only_when_asked() {
    let out = render(&report(), Format::Table, true);
    assert!(out.contains("\x1b["), "expected ANSI colour codes");
    assert!(out.ends_with("5 cases: 2 passed, 2 failed, 1 error, 2 warnings\n"));
}

/// The fixture plus a case with a long path and a long message: the
/// shape that made the table wider than the terminal.
fn wide_report() -> Report {
    let mut cases = common::cases();
    cases.push(
        vigil_reports::Case::new("k", "suites/generated/a_rather_long_directory_name/case_with_a_long_name_too")
            .with_finding(
                vigil_reports::Finding::error(
                    "declared_destroy_unused",
                    "the op declares that it destroys input 1 but never wrote a single element of it during the run",
                )
                .at("node_with_a_long_name", "some_inplace_op")
                .with_input(1),
            ),
    );
    Report::new("validate", cases)
}

fn widest_line(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn table_fits_its_width_and_wraps_the_case_column_first() {
    let r = wide_report();
    // Not a terminal: the documented 140 columns.
    let out = render(&r, Format::Table, false);
    assert!(widest_line(&out) <= 140, "{} wide:\n{out}", widest_line(&out));
    for width in [100u16, 120, 140, 210] {
        let out = vigil_reports::render::table::render_width(&r, false, width);
        assert!(widest_line(&out) <= width as usize, "{width}:\n{out}");
        if width >= 140 {
            // Names wrap only in very narrow terminals.
            assert!(out.contains("declared_destroy_unused") && out.contains("node_with_a_long_name"));
        }
    }
    // When only one of them can stay whole, the long path wraps (after a
    // `/`) and the long message stays on one line.
    let out = vigil_reports::render::table::render_width(&r, false, 220);
    assert!(
        !out.contains("a_rather_long_directory_name/case_with_a_long_name_too"),
        "{out}"
    );
    assert!(
        out.contains("never wrote a single element of it during the run"),
        "{out}"
    );
    // Wide enough for everything: nothing wraps.
    let out = vigil_reports::render::table::render_width(&r, false, 400);
    assert!(out.contains("generated/a_rather_long_directory_name/case_with_a_long_name_too"));
}

#[test]
fn table_of_a_clean_run_says_what_ran() {
    let mut out = OutputComparison::new("y", 16);
    out.max_abs_err = 0.0;
    let case = vigil_reports::Case::new("a", "s/a").with_output(out);
    let r = Report::new("validate", vec![case.clone()]).with_checks(["non_inplace", "view_map", "numerics"]);
    assert_eq!(
        render(&r, Format::Table, false),
        "no findings\nmode validate (listeners: non_inplace, view_map, numerics): 16 elements of 1 output compared with expected/\n\
         1 case: 1 passed, 0 failed, 0 errors, 0 warnings\n"
    );
    let mut debug = case;
    debug.debug = Some(serde_json::json!({"compared": 7, "rewrites": 1, "reruns": 0}));
    let r = Report::new("debug", vec![debug]).with_checks(["lockstep", "poison"]);
    let text = render(&r, Format::Table, false);
    assert!(
        text.contains(
            "mode debug (checks: lockstep, poison): 7 values compared with the pure reference, 1 rewrite checked, 0 re-runs, 16 elements of 1 output compared with expected/\n"
        ),
        "{text}"
    );
    let r = Report::new("plain", vec![vigil_reports::Case::new("a", "s/a")]);
    assert!(render(&r, Format::Table, false).contains("mode plain (outputs only, no checks)\n"));
}

#[test]
fn json_follows_the_schema() {
    let out = render(&report(), Format::Json, false);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format"], "vigil-report/1");
    assert_eq!(v["vigil_version"], "0.1.0-test");
    assert_eq!(v["mode"], "validate");
    let s = &v["summary"];
    assert_eq!((s["cases"].as_u64(), s["passed"].as_u64()), (Some(5), Some(2)));
    assert_eq!((s["failed"].as_u64(), s["errors"].as_u64()), (Some(2), Some(1)));
    assert_eq!(s["findings_by_kind"]["destroyed_input"], 1);
    assert_eq!(s["findings_by_kind"]["declared_view_not_aliased"], 1);
    let paths: Vec<&str> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "cases sorted by path");
    let bad = &v["cases"][2];
    assert_eq!(bad["status"], "error");
    assert_eq!(bad["error"], "graph.json: node 'n3' uses unknown op 'frobnicate'");
    let t = &v["cases"][4];
    assert_eq!(t["status"], "fail");
    let f = &t["findings"][0];
    for key in [
        "kind", "severity", "node", "op", "input", "output", "message", "details",
    ] {
        assert!(f.get(key).is_some(), "finding lacks {key}");
    }
    assert_eq!(f["input"], 0);
    assert!(f["output"].is_null());
    assert_eq!(t["outputs"][0]["sample"]["step"], 16);
    assert_eq!(
        t["outputs"][0]["sample"]["abs_err"].as_array().unwrap().len(),
        256
    );
    assert_eq!(t["timeline"][1]["node"], "t1");
    assert!(out.ends_with("}\n"));
    assert_eq!(Report::from_json(&out).unwrap(), report());
}

#[test]
fn markdown_has_summary_escaped_table_rows_and_details() {
    let out = render(&report(), Format::Markdown, false);
    assert!(out.starts_with("### ❌ Vigil validate: failed\n"));
    assert!(out.contains("**5 cases: 2 passed, 2 failed, 1 error, 2 warnings**"));
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| suites/")).collect();
    // 3 findings + 1 case error + 1 finding + 1 warning-only case.
    assert_eq!(rows.len(), 6, "{out}");
    let nasty = rows.iter().find(|r| r.contains("log\\_zero")).unwrap();
    assert!(
        nasty.contains("\\<script\\>alert(1)\\</script\\> \\| x \\& y<br>second line"),
        "{nasty}"
    );
    // Every row has exactly the header's 10 unescaped pipes.
    for r in &rows {
        let unescaped = r.replace("\\|", "");
        assert_eq!(unescaped.matches('|').count(), 10, "{r}");
    }
    assert!(!out.contains("<script>"));
    assert_eq!(
        out.matches("<details>").count(),
        4,
        "one block per case with findings"
    );
    assert_eq!(out.matches("</details>").count(), 4);
    assert!(out.contains("\"view_hash_before\": \"9f86d081884c7d65\""));
    assert!(out.contains("| `y` | 0.75 | 1.5 | 96/4096 |"));
    assert!(
        !out.contains("add\\_two\\_views"),
        "clean passing cases are left out"
    );
}

/// One XML element as the test sees it.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: BTreeMap<String, String>,
    /// Names of the enclosing elements.
    parents: Vec<String>,
}

/// Parses `xml`, failing on anything not well-formed (quick-xml checks
/// that end tags match), and lists its elements in document order.
fn elements(xml: &str) -> Vec<Element> {
    fn element(e: &BytesStart, parents: &[String]) -> Element {
        let attrs = e
            .attributes()
            .map(|a| {
                let a = a.expect("well-formed attribute");
                let key = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
                (
                    key,
                    a.normalized_value(XmlVersion::default())
                        .expect("valid escapes")
                        .into_owned(),
                )
            })
            .collect();
        let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
        Element {
            name,
            attrs,
            parents: parents.to_vec(),
        }
    }
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<String> = Vec::new();
    let mut out = Vec::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) => {
                let el = element(&e, &stack);
                stack.push(el.name.clone());
                out.push(el);
            }
            Event::Empty(e) => out.push(element(&e, &stack)),
            Event::End(_) => {
                stack.pop();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    out
}

#[test]
fn junit_is_well_formed_with_one_suite_per_directory() {
    let xml = render(&report(), Format::Junit, false);
    let els = elements(&xml);
    let root = &els[0];
    assert_eq!(root.name, "testsuites");
    assert_eq!(root.attrs["tests"], "5");
    assert_eq!(root.attrs["failures"], "2");
    assert_eq!(root.attrs["errors"], "1");

    let suites: Vec<&Element> = els.iter().filter(|e| e.name == "testsuite").collect();
    let names: Vec<&str> = suites.iter().map(|s| s.attrs["name"].as_str()).collect();
    assert_eq!(names, ["suites/numerics", "suites/views"]);
    assert_eq!(suites[1].attrs["tests"], "4");

    let cases: Vec<&Element> = els.iter().filter(|e| e.name == "testcase").collect();
    assert_eq!(cases.len(), 5);
    let t = cases
        .iter()
        .find(|c| c.attrs["name"] == "transpose_inplace")
        .unwrap();
    assert_eq!(t.attrs["classname"], "suites/views");
    assert_eq!(t.attrs["time"], "0.042");

    let failures: Vec<&Element> = els.iter().filter(|e| e.name == "failure").collect();
    assert_eq!(failures.len(), 2);
    for f in &failures {
        assert_eq!(f.parents, ["testsuites", "testsuite", "testcase"]);
    }
    assert_eq!(failures[0].attrs["type"], "non_finite");
    assert!(
        failures[0].attrs["message"].contains("<script>alert(1)</script>"),
        "unescaped back"
    );
    assert_eq!(failures[1].attrs["type"], "destroyed_input");
    assert!(failures[1].attrs["message"].starts_with("2 findings; first: input 0 ('x') changed"));

    let errors: Vec<&Element> = els.iter().filter(|e| e.name == "error").collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].attrs["type"], "case_error");
    assert!(errors[0].attrs["message"].contains("frobnicate"));

    // Warnings go to system-out, never to failures.
    let outs: Vec<&Element> = els.iter().filter(|e| e.name == "system-out").collect();
    assert_eq!(outs.len(), 2);
    assert!(xml.contains("<system-out>warning[declared_destroy_unused] node "));
    assert!(!xml.contains("<script>"));
    assert!(els
        .iter()
        .any(|e| e.name == "property" && e.attrs["name"] == "vigil.mode"));
}

#[test]
fn html_is_self_contained_escaped_and_sortable() {
    let html = render(&report(), Format::Html, false);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("5 cases: 2 passed, 2 failed, 1 error, 2 warnings"));
    assert!(
        !html.contains(NASTY) && !html.contains("<script>alert"),
        "report text must be escaped"
    );
    assert!(html.contains("log of &lt;script&gt;alert(1)&lt;/script&gt; | x &amp; y\nsecond line"));
    assert_eq!(html.matches("<script>").count(), 1, "only the sorting script");
    // Nothing fetched: no external URLs besides the SVG namespace name.
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    assert!(!html.contains(" src="));
    assert!(html.contains("<table class=\"sortable\" id=\"findings\">"));
    assert!(html.contains("th.addEventListener(\"click\", sort)"));
    // One findings row per finding, plus the error case's row.
    let body = html
        .split("id=\"findings\"")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(body.matches("<tr>").count() - 1, 6);
    // The run's case durations, then plots only for cases with findings:
    // the transpose case has an error plot and a timeline; the clean
    // case's timeline is not drawn.
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(html.contains("aria-label=\"Case durations\""));
    assert!(html.contains("aria-label=\"Absolute error of output y\""));
    assert!(html.contains("aria-label=\"Op timeline\""));
    assert!(html.contains("id=\"case-4\"") && html.contains("href=\"#case-4\""));
    assert!(html.contains("1 case passed with no findings"));
}

#[test]
fn every_format_renders_identically_twice_and_ignores_input_order() {
    let mut reversed = common::cases();
    reversed.reverse();
    let other = Report::new("validate", reversed).with_vigil_version("0.1.0-test");
    for format in Format::ALL {
        let a = render(&report(), format, false);
        assert_eq!(a, render(&report(), format, false), "{format} not deterministic");
        assert_eq!(a, render(&other, format, false), "{format} depends on case order");
    }
}

/// Writes every format to $VIGIL_REPORT_DUMP (a directory) for a person to
/// look at; does nothing otherwise.
#[test]
fn dump_for_inspection() {
    let Some(dir) = std::env::var_os("VIGIL_REPORT_DUMP") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    for format in Format::ALL {
        let path = dir.join(format!("report.{}", format.extension()));
        vigil_reports::write_report(&path, &report(), format).unwrap();
    }
}

#[test]
fn html_plots_a_debugmode_value_mismatch_from_its_details() {
    use vigil_reports::{Case, Finding};
    let details = serde_json::json!({
        "var": "h<1>", "elements": 8, "mismatched": 2, "atol": 1e-5, "rtol": 1e-5,
        "sample": {"start": 0, "step": 2, "abs_err": [0.0, 0.5, "inf", 0.0]},
    });
    let case = Case::new("mlp", "suites/x/mlp").with_finding(
        Finding::error(
            "value_mismatch",
            "output 0 'h<1>' differs from the pure reference",
        )
        .at("n1", "scale6")
        .with_details(details),
    );
    let (o, s) = case.first_finding_sample().expect("the finding carries a sample");
    assert_eq!(
        (o.name.as_str(), o.atol, s.step, s.abs_err.len()),
        ("h<1>", Some(1e-5), 2, 4)
    );
    assert!(s.abs_err[2].is_infinite());
    let html = render(&Report::new("debug", vec![case]), Format::Html, false);
    assert!(html.contains("aria-label=\"Absolute error of output h&lt;1&gt;\""));
    assert!(html.contains("against the pure reference, 1 in 2 elements"));
    // A finding without a sample draws nothing.
    let plain = Case::new("c", "p").with_finding(Finding::error("destroyed_input", "x"));
    assert!(plain.first_finding_sample().is_none());
}

#[test]
fn html_of_a_clean_run_still_draws_the_case_durations() {
    use vigil_reports::Case;
    let cases: Vec<Case> = (0..3)
        .map(|i| Case::new(format!("c{i}"), format!("s/c{i}")).with_duration_ms(10 * (i + 1)))
        .collect();
    let html = render(&Report::new("debug", cases), Format::Html, false);
    assert!(html.contains("PASSED"));
    assert_eq!(html.matches("<svg").count(), 1, "one plot: the durations");
    assert!(html.contains("aria-label=\"Case durations\""));
    let slowest = html.find(">c2</text>").expect("the slowest case is labelled");
    assert!(slowest < html.find(">c0</text>").unwrap(), "slowest first");
    // Without timings there is nothing to draw.
    let html = render(
        &Report::new("debug", vec![Case::new("c", "s/c")]),
        Format::Html,
        false,
    );
    assert_eq!(html.matches("<svg").count(), 0);
}

#[test]
fn every_format_says_what_to_do_about_a_finding() {
    let r = report();
    let hint = vigil_reports::Finding::error("destroyed_input", "m")
        .hint
        .unwrap();
    assert!(hint.contains("destroy_map"));
    let md = render(&r, Format::Markdown, false);
    assert!(md.contains("| what to do |"), "{md}");
    assert!(md.contains("([docs](docs/findings.md#destroyed_input))"), "{md}");
    assert!(md.contains("What to do: "), "{md}");
    let html = render(&r, Format::Html, false);
    assert!(
        html.contains("class=\"fix\">→ declare it in destroy_map"),
        "{html}"
    );
    assert!(html.contains("docs/findings.md#destroyed_input"));
    // A case that could not run says what to do too.
    assert!(html.contains("docs/findings.md#case_error"));
    let json: serde_json::Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    let f = &json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "transpose_inplace")
        .unwrap()["findings"][0];
    assert_eq!(f["hint"], hint.as_str());
    assert_eq!(f["docs"], "docs/findings.md#destroyed_input");
}

#[test]
fn html_durations_chart_draws_every_case_with_its_whole_path() {
    let html = render(&report(), Format::Html, false);
    let start = html.find("Case durations").expect("a durations chart");
    let chart = &html[start..html[start..].find("</figure>").unwrap() + start];
    let cases = report().cases().len();
    assert_eq!(chart.matches("<rect").count(), cases, "{chart}");
    assert!(chart.contains("wall time of the case"), "{chart}");
    assert!(!chart.contains('…'), "no name is cut: {chart}");
}
