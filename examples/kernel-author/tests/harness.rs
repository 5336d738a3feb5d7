//! The harness binary catches the broken op with the right finding and
//! exit code, and gives the correct op no finding; the library entry point
//! agrees.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("suite")
}

fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernel-vigil"))
        .args(args)
        .output()
        .expect("run kernel-vigil")
}

/// `run SUITE --mode MODE --format json`: the exit code and the report.
fn run(mode: &str, path: &Path) -> (Option<i32>, Value) {
    let o = harness(&["run", path.to_str().unwrap(), "--mode", mode, "--format", "json"]);
    let report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), report)
}

fn case<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name} in {report}"))
}

fn kinds(case: &Value) -> Vec<(String, String, String)> {
    case["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["node"].as_str().unwrap().to_string(),
                f["op"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_broken_op_is_caught_and_the_correct_one_is_clean_in_validate_and_debug() {
    for mode in ["validate", "debug"] {
        let (code, report) = run(mode, &suite());
        assert_eq!(code, Some(1), "{mode}: {report}");
        let broken = case(&report, "fast_softmax");
        assert_eq!(broken["status"], "fail", "{mode}");
        let found = kinds(broken);
        assert!(
            found.contains(&("destroyed_input".into(), "probs".into(), "fast_softmax".into())),
            "{mode}: {found:?}"
        );
        let good = case(&report, "axpy");
        assert_eq!(good["status"], "pass", "{mode}: {good}");
        assert!(kinds(good).is_empty(), "{mode}: {good}");
    }
}

#[test]
fn outputs_alone_do_not_show_the_defect() {
    // Softmax is shift-invariant, so the broken op's output is right: only
    // the validation listeners see that it overwrote its input.
    let (code, report) = run("plain", &suite());
    assert_eq!(code, Some(0), "{report}");
}

#[test]
fn the_correct_op_alone_passes_and_runs_in_place() {
    let (code, report) = run("validate", &suite().join("axpy"));
    assert_eq!(code, Some(0), "{report}");
    let o = harness(&[
        "explain",
        suite().join("axpy").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success());
    let explain: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ops: Vec<&str> = explain["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["neg", "axpy_inplace"]);
}

#[test]
fn an_unregistered_op_is_one_line_naming_the_node() {
    let tmp = std::env::temp_dir().join(format!("kernel-vigil-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let graph = tmp.join("graph.json");
    let text = std::fs::read_to_string(suite().join("axpy/graph.json"))
        .unwrap()
        .replace("\"axpy\"", "\"axpy2\"");
    std::fs::write(&graph, text).unwrap();
    let o = harness(&["explain", graph.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    std::fs::remove_dir_all(&tmp).unwrap();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("node 'out'") && err.contains("unknown op 'axpy2'"),
        "{err}"
    );
}

#[test]
fn the_library_runs_the_suite_with_the_same_registry() {
    use vigil::runner::{run_suites, Mode, RunConfig, ToleranceOverrides};
    let mut registry = vigil::default_registry();
    kernel_author::register(&mut registry);
    let cfg = RunConfig::new(Mode::Validate, ToleranceOverrides::default());
    let report = run_suites(&[suite()], &cfg, &registry).unwrap();
    let summary = report.summary();
    assert_eq!((summary.passed, summary.failed), (1, 1), "{}", summary.line());
    assert_eq!(summary.findings_by_kind.get("destroyed_input"), Some(&1));

    // Without the author's ops, the graphs do not load: errored cases.
    let report = run_suites(&[suite()], &cfg, &vigil::default_registry()).unwrap();
    assert_eq!(report.summary().errors, 2);
}
