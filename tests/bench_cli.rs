//! End-to-end tests of `vigil bench`: the `vigil-bench/2` structure, the
//! modes asked for in the order asked, the ratio to plain, the table, and
//! bad input refused with one line and exit code 2. No timing thresholds:
//! the machine is shared.

mod common;

use std::process::Output;

use common::{json_of, stderr, vigil};
use serde_json::Value;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn modes_of(case: &Value) -> Vec<&str> {
    case["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["mode"].as_str().unwrap())
        .collect()
}

#[test]
fn json_has_every_mode_with_reps_medians_ratios_and_peaks() {
    let o = vigil(&[
        "bench",
        "suites/ops/abs_f32",
        "suites/inplace/chain32_f32_protected_input",
        "--modes",
        "plain,validate,debug",
        "--reps",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json_of(&o);
    assert_eq!(r["format"], "vigil-bench/2");
    assert_eq!(r["reps"], 3);
    assert_eq!(r["warmup"], 3);
    assert_eq!(r["modes"], serde_json::json!(["plain", "validate", "debug"]));
    let cases = r["cases"].as_array().unwrap();
    let paths: Vec<&str> = cases.iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        ["suites/inplace/chain32_f32_protected_input", "suites/ops/abs_f32"]
    );
    assert_eq!(cases[1]["case"], "abs_f32");
    for case in cases {
        assert_eq!(modes_of(case), ["plain", "validate", "debug"]);
        let results = case["results"].as_array().unwrap();
        // A check is its preparation and its run.
        let total =
            |m: &Value| m["median_ms"].as_f64().unwrap() + m["prepare_median_ms"].as_f64().unwrap_or(0.0);
        let plain = total(&results[0]);
        for m in results {
            assert_eq!(m["status"], "pass", "{m}");
            assert!(m["error"].is_null(), "{m}");
            let times: Vec<f64> = m["times_ms"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_f64().unwrap())
                .collect();
            assert_eq!(times.len(), 3, "{m}");
            let mut sorted = times.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(m["median_ms"].as_f64().unwrap(), sorted[1], "{m}");
            assert_eq!(m["min_ms"].as_f64().unwrap(), sorted[0], "{m}");
            assert_eq!(m["max_ms"].as_f64().unwrap(), sorted[2], "{m}");
            assert!(sorted[0] > 0.0, "{m}");
            let prepare: Vec<f64> = m["prepare_ms"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_f64().unwrap())
                .collect();
            if m["mode"] == "debug" {
                // DebugMode prepares inside its run.
                assert!(prepare.is_empty() && m["prepare_median_ms"].is_null(), "{m}");
            } else {
                assert_eq!(prepare.len(), 3, "{m}");
                let mut p = prepare.clone();
                p.sort_by(f64::total_cmp);
                assert!(p[0] > 0.0, "{m}");
                assert_eq!(m["prepare_median_ms"].as_f64().unwrap(), p[1], "{m}");
            }
            let ratio = m["vs_plain"].as_f64().unwrap();
            assert_eq!(ratio, total(m) / plain, "{m}");
            assert!(m["peak_live_bytes"].as_u64().unwrap() > 0, "{m}");
        }
        assert_eq!(results[0]["vs_plain"].as_f64(), Some(1.0));
        // DebugMode holds the in-place and the pure run's values at once.
        assert!(
            results[2]["peak_live_bytes"].as_u64() >= results[0]["peak_live_bytes"].as_u64(),
            "{case}"
        );
    }
}

#[test]
fn without_plain_there_is_no_ratio_and_modes_keep_their_order() {
    let o = vigil(&[
        "bench",
        "suites/ops/abs_f32",
        "--modes",
        "debug,validate",
        "--reps",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json_of(&o);
    assert_eq!(r["modes"], serde_json::json!(["debug", "validate"]));
    let case = &r["cases"][0];
    assert_eq!(modes_of(case), ["debug", "validate"]);
    for m in case["results"].as_array().unwrap() {
        assert!(m["vs_plain"].is_null(), "{m}");
        assert_eq!(m["times_ms"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn table_has_a_row_per_case_and_mode() {
    let o = vigil(&[
        "bench",
        "suites/ops/abs_f32",
        "--modes",
        "plain,validate",
        "--reps",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0]
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "case",
            "mode",
            "prepare ms",
            "run ms",
            "vs plain",
            "peak live",
            "status"
        ]
    );
    let plain: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(plain[..2], ["suites/ops/abs_f32", "plain"]);
    assert_eq!(plain[4], "1.00x", "{text}");
    assert_eq!(*plain.last().unwrap(), "pass");
    assert!(lines[2].contains(" validate "), "{text}");
    assert!(lines[3].starts_with("2 reps per mode"), "{text}");
    assert_eq!(lines.len(), 4, "{text}");
}

#[test]
fn warmup_rounds_run_untimed() {
    for (warmup, reps) in [("0", 2), ("4", 1)] {
        let o = vigil(&[
            "bench",
            "suites/ops/abs_f32",
            "--modes",
            "plain,debug",
            "--reps",
            &reps.to_string(),
            "--warmup",
            warmup,
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r = json_of(&o);
        assert_eq!(r["warmup"].to_string(), warmup);
        for m in r["cases"][0]["results"].as_array().unwrap() {
            assert_eq!(m["times_ms"].as_array().unwrap().len(), reps, "{m}");
        }
    }
    let o = vigil(&[
        "bench",
        "suites/ops/abs_f32",
        "--modes",
        "plain",
        "--reps",
        "1",
        "--warmup",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 reps per mode, alternated in one process after 0 untimed round(s)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_failing_case_is_timed_and_exits_1() {
    let o = vigil(&[
        "bench",
        "suites/broken/broken_accumulate",
        "--modes",
        "plain,validate",
        "--reps",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json_of(&o);
    let results = r["cases"][0]["results"].as_array().unwrap();
    // Validation catches the broken op; the plain run cannot.
    assert_eq!(results[1]["mode"], "validate");
    assert_eq!(results[1]["status"], "fail");
    assert!(results[1]["median_ms"].as_f64().is_some());
}

#[test]
fn a_case_that_cannot_run_is_an_error_row_without_times() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("bad");
    std::fs::create_dir(&case).unwrap();
    std::fs::write(case.join("graph.json"), "{ not json").unwrap();
    let o = vigil(&[
        "bench",
        case.to_str().unwrap(),
        "--modes",
        "plain",
        "--reps",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json_of(&o);
    let m = &r["cases"][0]["results"][0];
    assert_eq!(m["status"], "error", "{m}");
    assert!(m["error"].as_str().unwrap().contains("graph.json"), "{m}");
    assert!(m["median_ms"].is_null() && m["vs_plain"].is_null(), "{m}");
    assert!(m["prepare_median_ms"].is_null(), "{m}");
    assert_eq!(m["times_ms"].as_array().unwrap().len(), 0);
    assert_eq!(m["prepare_ms"].as_array().unwrap().len(), 0);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 10] = [
        (&["--reps", "0"], "--reps"),
        (&["--warmup", "10001"], "--warmup"),
        (&["--warmup", "-1"], "-1"),
        (&["--reps", "10001"], "--reps"),
        (&["--reps", "many"], "--reps"),
        (&["--modes", "plain,plain"], "'plain' given twice"),
        (&["--modes", "plain,fast"], "fast"),
        (&["--format", "xml"], "xml"),
        (&["--modes", "plain", "--checks", "lockstep"], "--checks"),
        (&["--checks", "nonsense"], "--checks"),
    ];
    for (flags, says) in cases {
        let mut args = vec!["bench", "suites/ops/abs_f32"];
        args.extend_from_slice(flags);
        let o = vigil(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(o.stdout.is_empty(), "{flags:?}");
    }
    let o = vigil(&["bench", "suites/no_such_case"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("no_such_case"), "{}", stderr(&o));
    let o = vigil(&["bench"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_path_with_no_case_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let o = vigil(&["bench", tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no case"), "{}", stderr(&o));
}
