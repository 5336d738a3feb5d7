//! JUnit XML, which CI systems show in their test tabs.
//!
//! Mapping: one `<testsuite>` per suite directory; one `<testcase>` per
//! case (`classname` = suite path, `name` = case name, `time` = duration);
//! a failing case gets one `<failure>` listing its error findings; a case
//! that could not run gets `<error>`; warnings go to the test case's
//! `<system-out>` because JUnit has no notion of a passing test with notes.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use crate::{Case, Finding, Report, Status, CASE_ERROR};

pub fn render(report: &Report) -> String {
    let mut suites: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for c in report.cases() {
        suites.entry(c.suite()).or_default().push(c);
    }
    let mut junit = quick_junit::Report::new("vigil");
    for (name, cases) in suites {
        let mut suite = TestSuite::new(name);
        suite.add_property(Property::new("vigil.mode", report.mode()));
        suite.add_property(Property::new("vigil.version", report.vigil_version()));
        suite.set_time(Duration::from_millis(cases.iter().map(|c| c.duration_ms).sum()));
        suite.add_test_cases(cases.into_iter().map(test_case));
        junit.add_test_suite(suite);
    }
    match junit.to_string() {
        Ok(xml) => xml,
        // Not reachable: the writer is a Vec and quick-junit strips the
        // characters XML cannot hold. Still well-formed XML, never a panic.
        Err(e) => fallback(&e.to_string()),
    }
}

fn test_case(case: &Case) -> TestCase {
    let status = match case.status {
        Status::Pass => TestCaseStatus::success(),
        Status::Fail => {
            let errors: Vec<&Finding> = case.errors().collect();
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            match errors.as_slice() {
                [] => s.set_message("case failed").set_type("fail"),
                [one] => s.set_message(one.message.as_str()).set_type(one.kind.as_str()),
                [first, ..] => s
                    .set_message(format!("{} findings; first: {}", errors.len(), first.message))
                    .set_type(first.kind.as_str()),
            };
            s.set_description(describe(&errors));
            s
        }
        Status::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            let msg = case.error.as_deref().unwrap_or("the case could not run");
            s.set_message(msg).set_type(CASE_ERROR);
            let errors: Vec<&Finding> = case.errors().collect();
            if errors.is_empty() {
                s.set_description(msg);
            } else {
                s.set_description(format!(
                    "{msg}\n\nfindings before the error:\n{}",
                    describe(&errors)
                ));
            }
            s
        }
    };
    let mut tc = TestCase::new(case.name.as_str(), status);
    tc.set_classname(case.suite())
        .set_time(Duration::from_millis(case.duration_ms));
    let warnings: Vec<&Finding> = case.warnings().collect();
    if !warnings.is_empty() {
        tc.set_system_out(describe(&warnings));
    }
    tc
}

/// One block per finding: `severity[kind] node 'n' (op): message`, then
/// its details as JSON.
fn describe(findings: &[&Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let _ = write!(out, "{}[{}]", f.severity, f.kind);
        if !f.node.is_empty() {
            let _ = write!(out, " node '{}' ({})", f.node, f.op);
        }
        let _ = writeln!(out, ": {}", f.message);
        if !(f.details.is_null() || f.details.as_object().is_some_and(|m| m.is_empty())) {
            let _ = writeln!(out, "  details: {}", f.details);
        }
    }
    out
}

/// A minimal well-formed report carrying the serializer's error.
fn fallback(message: &str) -> String {
    let msg = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"vigil\" tests=\"1\" errors=\"1\">\
         <testsuite name=\"vigil\" tests=\"1\" errors=\"1\"><testcase name=\"junit\">\
         <error message=\"{msg}\" type=\"render_error\"/></testcase></testsuite></testsuites>\n"
    )
}
