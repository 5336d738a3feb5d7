//! Renders the HTML report in headless Chromium and checks a screenshot
//! comes out. Skipped (with a note) when no Chromium is installed. Set
//! VIGIL_SCREENSHOT_OUT to a directory to keep the HTML and PNG for a look.

mod common;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::json;
use vigil_reports::{render, write_report, Case, ErrorSample, Finding, Format, OutputComparison, Report};

/// The browser, or `None` with one skip line. CI sets
/// `VIGIL_REQUIRE_CHROMIUM=1` (after installing it), so there a missing
/// browser fails the test instead of skipping it.
fn find_browser() -> Option<PathBuf> {
    let found = env::var_os("PATH").and_then(|path| {
        ["chromium", "chromium-browser"]
            .iter()
            .flat_map(|name| env::split_paths(&path).map(move |dir| dir.join(name)))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            env::var_os("VIGIL_REQUIRE_CHROMIUM").is_none(),
            "VIGIL_REQUIRE_CHROMIUM is set but no chromium or chromium-browser is on PATH"
        );
        println!("note: skipped: no chromium or chromium-browser on PATH");
    }
    found
}

/// Runs the browser on `html` with `mode` (`--screenshot=FILE` or
/// `--dump-dom`), killing it if it hangs; returns its stdout.
fn browse(browser: &Path, html: &Path, mode: &str, width: u32, profile: &Path) -> Option<String> {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(format!("--window-size={width},900"))
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the browser");
    // The DOM is small; read it on a thread so the pipe never fills.
    let mut pipe = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("wait for the browser") {
            let out = reader.join().unwrap_or_default();
            return status.success().then_some(out);
        }
        sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the browser did not finish within 90 s");
}

fn screenshot(browser: &Path, html: &Path, png: &Path, profile: &Path) -> bool {
    browse(
        browser,
        html,
        &format!("--screenshot={}", png.display()),
        1400,
        profile,
    )
    .is_some()
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(browser) = find_browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let png = dir.path().join("report.png");
    write_report(&html, &layout_report(), Format::Html).unwrap();
    let ok = screenshot(&browser, &html, &png, &dir.path().join("profile"));
    assert!(ok, "the browser failed");
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot is only {size} bytes: likely blank");
    if let Some(out) = env::var_os("VIGIL_SCREENSHOT_OUT") {
        let out = PathBuf::from(out);
        std::fs::copy(&html, out.join("report.html")).unwrap();
        std::fs::copy(&png, out.join("report.png")).unwrap();
    }
}

/// The fixture plus what broke the layout: long runner messages and key
/// details, a case whose timeline has one op, and an error sample whose
/// last values are non-finite and above `atol`.
fn layout_report() -> Report {
    let mut cases = common::cases();
    let mut y = OutputComparison::new("out", 64);
    y.max_abs_err = f64::INFINITY;
    y.max_rel_err = f64::INFINITY;
    y.mismatched = 3;
    y.atol = Some(1e-6);
    y.rtol = Some(1e-5);
    let mut errs = vec![1e-7; 64];
    errs[61] = 0.5;
    errs[62] = f64::NAN;
    errs[63] = 0.75;
    y.sample = Some(ErrorSample::from_errors(&errs));
    cases.push(
        Case::new("one_op_with_a_long_name", "suites/ops/elementwise/one_op_with_a_long_name_f32_strided_broadcast")
            .with_finding(
                Finding::error(
                    "output_mismatch",
                    "output 'out': 3 of 64 elements differ, max abs err inf (first at flat index 61: got 0.50000006, expected 0.0037663159)",
                )
                .with_details(json!({"output": "out", "max_abs_err": "inf", "max_rel_err": "inf",
                    "mismatched": 3, "elements": 64, "first_index": 61})),
            )
            .with_output(y)
            .with_timeline(common::timeline(&[("a_node_with_a_rather_long_name", "elementwise_add_inplace")])),
    );
    Report::new("validate", cases).with_vigil_version("0.1.0-test")
}

/// Measures the page as laid out at 1,400 px: the findings table must fit
/// its frame (no horizontal scrollbar hiding the message), and plots must
/// keep their own size (a lone plot is not stretched to the page width;
/// the durations chart, sized to its case names, is measured by the
/// page-overflow test below).
const MEASURE: &str = r#"<script>
var f = document.getElementById("findings").parentElement;
var plots = Array.prototype.map.call(document.querySelectorAll("svg.plot:not([aria-label='Case durations'])"), function (s) {
  return Math.round(s.getBoundingClientRect().width);
});
var out = document.createElement("pre");
out.id = "layout";
out.textContent = "overflow=" + (f.scrollWidth - f.clientWidth) + " plots=" + plots.join(",");
document.body.appendChild(out);
</script>"#;

#[test]
fn html_layout_fits_at_1400_px() {
    let Some(browser) = find_browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("layout.html");
    let page = render(&layout_report(), Format::Html, false).replace("</body>", &format!("{MEASURE}</body>"));
    std::fs::write(&html, page).unwrap();
    let dom =
        browse(&browser, &html, "--dump-dom", 1400, &dir.path().join("profile")).expect("the browser failed");
    let line = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .expect("the measuring script ran");
    let overflow: i64 = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("overflow="))
        .and_then(|v| v.parse().ok())
        .expect("overflow measured");
    assert!(
        overflow <= 0,
        "the findings table overflows its frame by {overflow} px ({line})"
    );
    let plots: Vec<u32> = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("plots="))
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default();
    assert!(plots.len() >= 2, "{line}");
    assert!(plots.iter().all(|&w| w <= 541), "a plot is stretched: {line}");
}

/// Measures how far the whole page overflows the window horizontally.
const PAGE: &str = r#"<script>
var out = document.createElement("pre");
out.id = "page";
out.textContent = "overflow=" + (document.documentElement.scrollWidth - document.documentElement.clientWidth)
  + " plots=" + document.querySelectorAll("svg.plot").length;
document.body.appendChild(out);
</script>"#;

#[test]
fn a_clean_report_shows_its_durations_without_scrolling_at_1400_px() {
    let Some(browser) = find_browser() else {
        return;
    };
    let cases: Vec<Case> = (0..60)
        .map(|i| {
            Case::new(
                format!("case_with_a_long_descriptive_name_{i}"),
                format!("suites/ops/c{i}"),
            )
            .with_duration_ms(1 + (i * 37) % 90)
        })
        .collect();
    let report = Report::new("debug", cases).with_vigil_version("0.1.0-test");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("clean.html");
    std::fs::write(
        &html,
        render(&report, Format::Html, false).replace("</body>", &format!("{PAGE}</body>")),
    )
    .unwrap();
    let dom =
        browse(&browser, &html, "--dump-dom", 1400, &dir.path().join("profile")).expect("the browser failed");
    let line = dom
        .split("<pre id=\"page\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .expect("the measuring script ran");
    assert!(
        line.contains("overflow=0 ") || line.contains("overflow=-"),
        "{line}"
    );
    assert!(line.ends_with("plots=1"), "the durations plot is drawn: {line}");
}
