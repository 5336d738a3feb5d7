//! `vigil run --isolate`: ops that take their process down (abort, stack
//! overflow, unbounded allocation, a spin, SIGSEGV) cost one error row
//! each, and the run goes on to pass its healthy cases and write its
//! report. The ops live in the `vigil-crash-ops` test binary
//! (tests/support/crash_ops.rs), the vigil CLI with them registered: its
//! workers are itself, as a kernel author's binary's would be.

mod common;
use common::{stderr, vigil};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn crash_ops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil-crash-ops"))
        .args(args)
        // Workers inherit it, and a crash must still be described by its
        // cause, not by the backtrace lines it adds.
        .env("RUST_BACKTRACE", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run vigil-crash-ops")
}

/// A case `dir/<op>` running `op` once on a small f32 input.
fn crash_case(dir: &Path, op: &str) {
    let case = dir.join(op);
    std::fs::create_dir_all(case.join("inputs")).unwrap();
    std::fs::write(
        case.join("graph.json"),
        format!(
            r#"{{"format": "vigil-graph/1", "name": "{op}",
                "inputs": [{{"name": "x", "dtype": "f32", "shape": [4]}}],
                "nodes": [{{"name": "n", "op": "{op}", "inputs": ["x"], "outputs": ["y"]}}],
                "outputs": ["y"]}}"#
        ),
    )
    .unwrap();
    let x = vigil::engine::Tensor::from_vec(&[4], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    x.write_npy(case.join("inputs/x.npy")).unwrap();
}

const CRASHES: [(&str, &[&str]); 5] = [
    ("crash_abort", &["worker killed by SIGABRT"]),
    // Rust's stack-overflow handler says so on stderr, then aborts.
    ("crash_stack", &["worker killed by SIG", "stack overflow"]),
    // The worker's address-space limit (--worker-mem) makes the allocator
    // fail, and Rust aborts on a failed allocation.
    (
        "crash_alloc",
        &["worker killed by SIGABRT", "memory allocation of"],
    ),
    ("crash_spin", &["timed out after 2 s"]),
    ("crash_segv", &["worker killed by SIGSEGV"]),
];

#[test]
fn each_crash_is_one_error_row_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("crashes");
    for (op, _) in CRASHES {
        crash_case(&suite, op);
    }
    let report = tmp.path().join("r.json");
    let started = Instant::now();
    let o = crash_ops(&[
        "run",
        suite.to_str().unwrap(),
        "suites/views",
        "--isolate",
        "--jobs",
        "2",
        "--timeout",
        "2",
        "--worker-mem",
        "256M",
        "--quiet",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("run failed: 0 failed and 5 errored cases"),
        "{}",
        stderr(&o)
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let cases = r["cases"].as_array().unwrap();
    let views = vigil(&["run", "suites/views", "--format", "json", "--mode", "plain"]);
    let views: Value = serde_json::from_slice(&views.stdout).unwrap();
    let healthy = views["cases"].as_array().unwrap().len();
    assert!(healthy > 5);
    assert_eq!(cases.len(), CRASHES.len() + healthy, "every case has its row");
    for (op, words) in CRASHES {
        let rows: Vec<&Value> = cases.iter().filter(|c| c["name"] == op).collect();
        assert_eq!(rows.len(), 1, "{op}");
        assert_eq!(rows[0]["status"], "error", "{op}: {}", rows[0]);
        let error = rows[0]["error"].as_str().unwrap();
        for w in words {
            assert!(error.contains(w), "{op}: '{error}' does not say '{w}'");
        }
    }
    for c in cases
        .iter()
        .filter(|c| !c["name"].as_str().unwrap().starts_with("crash_"))
    {
        assert_eq!(c["status"], "pass", "{c}");
    }
}

#[test]
fn isolated_reports_match_in_process_runs_byte_for_byte() {
    let run = |isolate: bool| {
        let mut args = vec![
            "run",
            "suites",
            "suites/broken",
            "--no-timings",
            "--format",
            "json",
            "--jobs",
            "2",
        ];
        if isolate {
            args.push("--isolate");
        }
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(1), "the broken suite fails: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let (inproc, isolated) = (run(false), run(true));
    let r: Value = serde_json::from_str(&inproc).unwrap();
    assert!(r["cases"].as_array().unwrap().len() > 50);
    // Line by line, so a failure shows the first differing line.
    for (a, b) in inproc.lines().zip(isolated.lines()) {
        assert_eq!(a, b, "in-process and --isolate reports differ");
    }
    assert_eq!(inproc.len(), isolated.len());
}

#[test]
fn a_worker_that_runs_out_of_memory_is_replaced() {
    // Three allocation crashes with one worker at a time: each needs a
    // fresh worker, and the healthy case after them still runs.
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..3 {
        crash_case(&tmp.path().join(format!("a{i}")), "crash_alloc");
    }
    let o = crash_ops(&[
        "run",
        tmp.path().to_str().unwrap(),
        "suites/views/add_two_views",
        "--isolate",
        "--jobs",
        "1",
        "--worker-mem",
        "256M",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let status: Vec<&str> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["error", "error", "error", "pass"]);
}

#[test]
fn worker_flags_are_checked() {
    for args in [
        vec!["run", "suites/views", "--worker-mem", "1G"],
        vec!["run", "suites/views", "--isolate", "--worker-mem", "1M"],
        vec!["run", "suites/views", "--isolate", "--worker-mem", "2T"],
    ] {
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
    // The worker subcommand is not on the help page.
    let help = vigil(&["--help"]);
    assert!(!String::from_utf8_lossy(&help.stdout).contains("__worker"));
}
