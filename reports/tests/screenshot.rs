//! Renders the HTML report in headless Chromium and checks a screenshot
//! comes out. Skipped (with a note) when no Chromium is installed. Set
//! VIGIL_SCREENSHOT_OUT to a directory to keep the HTML and PNG for a look.

mod common;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use vigil_reports::{write_report, Format};

fn find_browser() -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// Runs the browser, killing it if it hangs.
fn screenshot(browser: &Path, html: &Path, png: &Path, profile: &Path) -> bool {
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
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,900")
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the browser");
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("wait for the browser") {
            return status.success();
        }
        sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the browser did not finish within 90 s");
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(browser) = find_browser() else {
        println!("note: skipped: no chromium or chromium-browser on PATH");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let png = dir.path().join("report.png");
    write_report(&html, &common::report(), Format::Html).unwrap();
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
