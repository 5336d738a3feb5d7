//! Merging shard reports and writing report files.

mod common;

use std::fs;

use vigil_reports::{merge, write_atomic, write_report, Case, Finding, Format, Report, ReportError};

fn shard(mode: &str, cases: Vec<Case>) -> Report {
    Report::new(mode, cases).with_vigil_version("0.1.0-test")
}

#[test]
fn merge_concatenates_sorts_and_recounts() {
    let mut cases = common::cases();
    let b = cases.split_off(2);
    let merged = merge([shard("validate", b), shard("validate", cases)]).unwrap();
    assert_eq!(merged, common::report());
    assert_eq!(
        merged.summary().line(),
        "5 cases: 2 passed, 2 failed, 1 error, 2 warnings"
    );
    let paths: Vec<&str> = merged.cases().iter().map(|c| c.path.as_str()).collect();
    assert!(paths.windows(2).all(|w| w[0] < w[1]), "{paths:?}");
    assert_eq!(render_json(&merged), render_json(&common::report()));
}

fn render_json(r: &Report) -> String {
    vigil_reports::render(r, Format::Json, false)
}

#[test]
fn merge_of_one_report_is_that_report() {
    assert_eq!(merge([common::report()]).unwrap(), common::report());
}

#[test]
fn merge_rejects_a_case_in_two_shards_naming_its_path() {
    let a = shard(
        "validate",
        vec![Case::new("x", "suites/views/x"), Case::new("y", "suites/views/y")],
    );
    let b = shard(
        "validate",
        vec![Case::new("x", "suites/views/x").with_finding(Finding::error("destroyed_input", "m"))],
    );
    let err = merge([a, b]).unwrap_err();
    assert!(matches!(&err, ReportError::DuplicateCase(p) if p == "suites/views/x"));
    assert_eq!(
        err.to_string(),
        "case 'suites/views/x' appears in more than one report"
    );
}

#[test]
fn merge_rejects_mixed_modes_versions_and_nothing() {
    let err = merge([shard("validate", vec![]), shard("debug", vec![])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot merge reports of different modes: 'validate' and 'debug'"
    );
    let other = Report::new("validate", vec![]).with_vigil_version("9.9.9");
    let err = merge([shard("validate", vec![]), other]).unwrap_err();
    assert!(matches!(err, ReportError::VersionMismatch { .. }));
    assert!(matches!(merge(Vec::new()), Err(ReportError::NothingToMerge)));
}

#[test]
fn merged_shards_read_back_from_json() {
    let mut cases = common::cases();
    let b = cases.split_off(3);
    let a = Report::from_json(&render_json(&shard("validate", cases))).unwrap();
    let b = Report::from_json(&render_json(&shard("validate", b))).unwrap();
    assert_eq!(merge([a, b]).unwrap(), common::report());
}

/// Names in `dir` other than `keep`.
fn stray_files(dir: &std::path::Path, keep: &[&str]) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect()
}

#[test]
fn atomic_write_replaces_the_file_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    fs::write(&path, "old").unwrap();
    write_report(&path, &common::report(), Format::Json).unwrap();
    let back = Report::from_json(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(back, common::report());
    write_atomic(&path, b"second").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second");
    assert!(stray_files(dir.path(), &["report.json"]).is_empty());
}

#[test]
fn failed_atomic_write_removes_its_temp_file_and_keeps_the_target() {
    let dir = tempfile::tempdir().unwrap();
    // The target is a non-empty directory: the rename must fail.
    let target = dir.path().join("report.html");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("keep"), "x").unwrap();
    let err = write_atomic(&target, b"<html>").unwrap_err();
    assert!(err.to_string().contains("report.html"), "{err}");
    assert!(stray_files(dir.path(), &["report.html"]).is_empty());
    assert!(target.join("keep").is_file());

    // A missing directory fails before any file is made.
    let err = write_atomic(&dir.path().join("no/such/dir/r.json"), b"{}").unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }));
}
