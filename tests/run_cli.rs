//! End-to-end tests of `vigil run`, `vigil report merge` and `vigil selftest`.

mod common;
use common::{stderr, vigil};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// A case directory with `graph.json` = y = relu(x), x = [-1, 2].
fn relu_case(dir: &Path, expected: Option<&[f32]>) -> PathBuf {
    let graph = r#"{"format": "vigil-graph/1", "name": "relu",
      "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
      "nodes": [{"name": "r", "op": "relu", "inputs": ["x"], "outputs": ["y"]}],
      "outputs": ["y"]}"#;
    std::fs::create_dir_all(dir.join("inputs")).unwrap();
    std::fs::write(dir.join("graph.json"), graph).unwrap();
    let x = vigil::engine::Tensor::from_vec(&[2], vec![-1.0f32, 2.0]).unwrap();
    x.write_npy(dir.join("inputs/x.npy")).unwrap();
    if let Some(e) = expected {
        std::fs::create_dir_all(dir.join("expected")).unwrap();
        let t = vigil::engine::Tensor::from_vec(&[2], e.to_vec()).unwrap();
        t.write_npy(dir.join("expected/y.npy")).unwrap();
    }
    dir.to_path_buf()
}

fn count_cases(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && p.file_name().unwrap() != "broken" {
            n += if p.join("graph.json").is_file() {
                1
            } else {
                count_cases(&p)
            };
        }
    }
    n
}

/// Every op of the library on every shipped suite: no finding in the
/// default mode (debug), with every DebugMode check on, or in validate.
#[test]
fn shipped_suites_give_zero_findings() {
    let all = "--checks=listeners,lockstep,culprit,poison,orders,prealloc,gradient";
    for (args, mode) in [
        (vec![], "debug"),
        (vec![all], "debug"),
        (vec!["--mode", "validate"], "validate"),
    ] {
        let mut a = vec!["run", "suites", "--format", "json", "-q"];
        a.extend(args);
        let o = vigil(&a);
        let r = json_of(&o);
        assert_eq!(o.status.code(), Some(0), "{a:?}: stderr: {}", stderr(&o));
        let s = &r["summary"];
        let n = count_cases(&Path::new(env!("CARGO_MANIFEST_DIR")).join("suites"));
        assert!(n >= 56);
        assert_eq!(s["cases"], n);
        assert_eq!(s["passed"], n, "{}", serde_json::to_string_pretty(s).unwrap());
        assert_eq!(s["findings_by_kind"], serde_json::json!({}), "{a:?}");
        assert_eq!(r["mode"], mode);
    }
}

#[test]
fn vigil_debug_catches_a_kept_workspace() {
    let o = vigil(&["debug", "suites/broken/broken_cached_double", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let r = json_of(&o);
    let findings = r["cases"][0]["findings"].as_array().unwrap();
    let alias = findings
        .iter()
        .find(|f| f["kind"] == "undeclared_alias")
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert_eq!(alias["op"], "broken_cached_double");
    assert!(findings
        .iter()
        .any(|f| f["kind"] == "value_mismatch" && f["details"]["changed_after_production"] == true));
    let o = vigil(&["debug", "suites/broken/fixed_cached_double"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
}

#[test]
fn vigil_debug_shows_one_case_and_refuses_unknown_checks() {
    let o = vigil(&["debug", "suites/broken/broken_accumulate", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let r = json_of(&o);
    assert_eq!(r["mode"], "debug");
    let kinds: Vec<&str> = r["cases"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["destroyed_input"]);
    let o = vigil(&["debug", "suites/broken/fixed_accumulate"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let o = vigil(&[
        "debug",
        "suites/broken/fixed_accumulate",
        "--checks",
        "lockstep,frobnicate",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown check 'frobnicate'"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    let o = vigil(&["debug", "suites/broken"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("vigil debug takes one"), "{}", stderr(&o));
}

#[test]
fn a_broken_case_is_an_error_row_and_the_rest_still_runs() {
    let tmp = tempfile::tempdir().unwrap();
    relu_case(&tmp.path().join("good"), Some(&[0.0, 2.0]));
    std::fs::create_dir_all(tmp.path().join("bad")).unwrap();
    std::fs::write(tmp.path().join("bad/graph.json"), "{ not json").unwrap();
    relu_case(&tmp.path().join("wrong"), Some(&[0.0, 3.0]));
    let dir = tmp.path().to_str().unwrap();
    let o = vigil(&["run", dir, "--format", "json", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    let r = json_of(&o);
    let cases = r["cases"].as_array().unwrap();
    let status: Vec<(&str, &str)> = cases
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        vec![("bad", "error"), ("good", "pass"), ("wrong", "fail")]
    );
    assert!(cases[0]["error"].as_str().unwrap().contains("graph.json"));
    let f = &cases[2]["findings"][0];
    assert_eq!(f["kind"], "output_mismatch");
    assert!(
        f["message"].as_str().unwrap().contains("1 of 2 elements differ"),
        "{f}"
    );
    assert_eq!(r["summary"]["findings_by_kind"]["output_mismatch"], 1);
}

#[test]
fn tolerances_can_be_overridden() {
    let tmp = tempfile::tempdir().unwrap();
    relu_case(&tmp.path().join("close"), Some(&[0.0, 2.001]));
    let dir = tmp.path().to_str().unwrap();
    assert_eq!(
        vigil(&["run", dir, "-q", "--format", "json"]).status.code(),
        Some(1)
    );
    assert_eq!(
        vigil(&["run", dir, "-q", "--format", "json", "--atol", "0.01"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn partitions_merge_back_into_the_full_run() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.json");
    let b = tmp.path().join("b.json");
    let all = tmp.path().join("all.json");
    for (k, f) in [("1/2", &a), ("2/2", &b)] {
        let o = vigil(&[
            "run",
            "suites/views",
            "--partition",
            k,
            "--report",
            f.to_str().unwrap(),
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = vigil(&[
        "report",
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        all.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&all).unwrap()).unwrap();
    let full = json_of(&vigil(&["run", "suites/views", "--format", "json", "-q"]));
    let paths = |r: &Value| -> Vec<String> {
        r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(paths(&merged), paths(&full));
    let shard: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    assert!(!paths(&shard).is_empty() && paths(&shard).len() < paths(&full).len());
    // Merging a shard with itself names the repeated shard.
    let o = vigil(&[
        "report",
        "merge",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "-o",
        all.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("shard 1/2 is given more than once"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn report_formats_are_written_by_extension() {
    let tmp = tempfile::tempdir().unwrap();
    for (file, needle) in [
        ("r.html", "<html"),
        ("r.xml", "<testsuite"),
        ("r.md", "passed, 0 failed"),
        ("r.json", "\"vigil-report/1\""),
    ] {
        let path = tmp.path().join(file);
        let o = vigil(&[
            "run",
            "suites/views",
            "--filter",
            "point",
            "--report",
            path.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(needle), "{file}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("cases: ") && out.contains("passed"),
            "table on stdout: {out}"
        );
    }
    let o = vigil(&[
        "run",
        "suites/views",
        "--report",
        tmp.path().join("r.weird").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_flags_and_paths_exit_2_with_one_line() {
    for args in [
        vec!["run", "no/such/suite"],
        vec!["run", "suites", "--partition", "3/2"],
        vec!["run", "suites", "--jobs", "0"],
        vec!["run", "suites", "--mode", "nope"],
        vec!["run", "suites", "--rtol", "-1"],
    ] {
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn selftest_passes_and_lists_every_case() {
    let o = vigil(&["selftest", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    let r = json_of(&o);
    assert_eq!(r["pass"], true);
    let cases = r["cases"].as_array().unwrap();
    assert!(cases.len() >= 30);
    let mut covered = std::collections::BTreeSet::new();
    for c in cases {
        assert_eq!(c["pass"], true, "{c}");
        let mut want: Vec<&str> = c["expected"].as_str().into_iter().collect();
        want.extend(c["also"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()));
        let mut found: Vec<&str> = c["found"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        want.sort();
        found.sort();
        assert_eq!(found, want, "{c}");
        covered.extend(found);
    }
    // Every built-in kind a graph can show has a case (output_mismatch is
    // the runner's comparison with expected/).
    for k in vigil::findings::Kind::BUILTIN {
        if *k != "output_mismatch" {
            assert!(covered.contains(k.as_str()), "no selftest case shows {k}");
        }
    }
}

#[test]
fn broken_suite_is_skipped_by_default_and_caught_when_named() {
    let all = json_of(&vigil(&["run", "suites", "--format", "json", "-q"]));
    let paths: Vec<&str> = all["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.iter().all(|p| !p.contains("broken")),
        "suites/broken must be skipped"
    );

    let o = vigil(&[
        "run",
        "suites/broken",
        "--format",
        "json",
        "-q",
        "--fail-on",
        "warning",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let r = json_of(&o);
    let cases = r["cases"].as_array().unwrap();
    assert!(cases.len() >= 16);
    for c in cases {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(c["path"].as_str().unwrap());
        let expect: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expect.json")).unwrap()).unwrap();
        let found: Vec<&str> = c["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = expect["finding"].as_str().into_iter().collect();
        want.extend(
            expect["also"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|k| k.as_str().unwrap()),
        );
        let mut found = found;
        found.sort();
        found.dedup();
        want.sort();
        assert_eq!(found, want, "{}", c["path"]);
    }
}

#[test]
fn recordings_compare_and_name_the_first_divergent_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let t = |p: &str| tmp.path().join(p).to_str().unwrap().to_string();
    let case = "suites/views/add_two_views";
    for (rec, extra) in [("a", None), ("b", Some("--no-inplace"))] {
        let (out, rec) = (t(&format!("out_{rec}")), t(rec));
        let mut args = vec!["exec", case, "--out", &out, "--record", &rec];
        args.extend(extra);
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = vigil(&["compare", &t("a"), &t("b"), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_of(&o)["first_divergent"], Value::Null);
    // Perturb the second recorded activation of B.
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("b/index.json")).unwrap()).unwrap();
    let entry = &index["entries"][1];
    let file = tmp.path().join("b").join(entry["file"].as_str().unwrap());
    let v = vigil::engine::Tensor::read_npy(&file).unwrap();
    let bumped = v.cast(vigil::engine::DType::F64).unwrap();
    bumped
        .set_at(&vec![0; v.ndim()], vigil::engine::Scalar::F64(1e9))
        .unwrap();
    bumped.cast(v.dtype()).unwrap().write_npy(&file).unwrap();
    let o = vigil(&["compare", &t("a"), &t("b"), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_of(&o)["first_divergent"], entry["var"]);
    let o = vigil(&["compare", &t("a"), &t("nope")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("index.json"), "{}", stderr(&o));
}

#[test]
fn large_integers_compare_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i64case");
    std::fs::create_dir_all(dir.join("inputs")).unwrap();
    std::fs::create_dir_all(dir.join("expected")).unwrap();
    std::fs::write(
        dir.join("graph.json"),
        r#"{"format": "vigil-graph/1", "name": "big",
          "inputs": [{"name": "x", "dtype": "i64", "shape": [1]}],
          "nodes": [{"name": "c", "op": "copy", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]}"#,
    )
    .unwrap();
    let t = |v: i64| vigil::engine::Tensor::from_vec(&[1], vec![v]).unwrap();
    t(9_007_199_254_740_993)
        .write_npy(dir.join("inputs/x.npy"))
        .unwrap();
    // Equal as f64, different as i64.
    t(9_007_199_254_740_992)
        .write_npy(dir.join("expected/y.npy"))
        .unwrap();
    let o = vigil(&["run", dir.to_str().unwrap(), "--format", "json", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_of(&o)["cases"][0]["findings"][0]["kind"], "output_mismatch");
}

#[test]
fn explain_marks_the_nodes_that_sweep_with_the_one_before() {
    let o = vigil(&["explain", "suites/inplace/chain128_f64", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = json_of(&o);
    let nodes = e["nodes"].as_array().unwrap();
    let swept: Vec<usize> = (0..nodes.len())
        .filter(|&k| nodes[k]["sweeps_with_previous"] == true)
        .collect();
    assert!(!swept.is_empty(), "a chain of in-place elementwise nodes sweeps");
    assert_eq!(e["nodes_swept"], swept.len());
    for k in swept {
        // It overwrites its input, and reads what the node before wrote
        // (in place, or pure where the sweep starts).
        assert!(k > 0 && nodes[k]["inplace"] == true);
        assert!(nodes[k - 1]["inplace"] == true || nodes[k - 1]["sweeps_with_previous"] == false);
        assert_eq!(nodes[k]["inputs"][0], nodes[k - 1]["outputs"][0]["name"]);
    }
    let t = vigil(&["explain", "suites/inplace/chain128_f64"]);
    assert!(
        stdout(&t).contains("one sweep with the node above"),
        "{}",
        stdout(&t)
    );
}

/// SiLU as exported (`sigmoid`, then `x *= s`): the pure sigmoid starts a
/// sweep, folded into the `mul` that overwrites its input.
#[test]
fn explain_marks_a_sweep_that_starts_at_a_pure_node() {
    let tmp = tempfile::tempdir().unwrap();
    let graph = r#"{"format": "vigil-graph/1", "name": "silu",
      "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
      "nodes": [{"name": "scale", "op": "add", "inputs": ["x", "x"], "outputs": ["h"]},
                {"name": "gate", "op": "sigmoid", "inputs": ["h"], "outputs": ["s"]},
                {"name": "silu", "op": "mul", "inputs": ["h", "s"], "outputs": ["y"]}],
      "outputs": ["y"]}"#;
    std::fs::write(tmp.path().join("graph.json"), graph).unwrap();
    let o = vigil(&[
        "explain",
        tmp.path().join("graph.json").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = json_of(&o);
    let nodes = e["nodes"].as_array().unwrap();
    let row = |name: &str| nodes.iter().find(|n| n["name"] == name).unwrap().clone();
    let silu = row("silu");
    assert_eq!(
        (silu["op"].as_str(), silu["inputs"][0].as_str()),
        (Some("mul_inplace"), Some("h"))
    );
    assert_eq!(silu["sweeps_with_previous"], true);
    assert_eq!(row("gate")["sweeps_with_previous"], false);
    assert_eq!(row("gate")["inplace"], false);
    assert_eq!(e["nodes_swept"], 1);
}

/// Validate mode keeps plain mode's sweeps: the timeline marks the swept
/// nodes (their time a share of their sweep's), and the explain counts
/// agree with the run.
#[test]
fn validate_mode_sweeps_and_its_timeline_says_so() {
    let case = "suites/inplace/chain128_f64";
    let o = vigil(&["run", case, "--mode", "validate", "--format", "json", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = &json_of(&o)["cases"][0];
    assert_eq!(c["status"], "pass");
    let timeline = c["timeline"].as_array().unwrap();
    let swept = timeline.iter().filter(|e| e["swept"] == true).count();
    let e = json_of(&vigil(&["explain", case, "--format", "json"]));
    // Explain marks the nodes after each sweep's first; the timeline marks
    // every swept node.
    let nodes = e["nodes"].as_array().unwrap();
    let joins = |k: usize| nodes[k]["sweeps_with_previous"] == true;
    let starts = (0..nodes.len() - 1)
        .filter(|&k| !joins(k) && joins(k + 1))
        .count();
    assert!(starts > 0);
    assert_eq!(swept, e["nodes_swept"].as_u64().unwrap() as usize + starts);
    assert_eq!(timeline.len(), nodes.len());
    assert!(timeline
        .iter()
        .all(|e| e["swept"] == true || e.get("swept").is_none()));
}

#[test]
fn a_closed_stdout_pipe_is_not_an_error() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["explain", "suites/inplace/chain128_f64", "--format", "json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then close the pipe
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn a_failed_exec_leaves_no_recording_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("c");
    std::fs::create_dir_all(case.join("inputs")).unwrap();
    std::fs::write(
        case.join("graph.json"),
        r#"{"format": "vigil-graph/1", "name": "t",
          "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}, {"name": "i", "dtype": "i64", "shape": [5]}],
          "nodes": [{"name": "r", "op": "relu", "inputs": ["x"], "outputs": ["a"]},
                    {"name": "v", "op": "create_view", "inputs": ["a", "i"], "outputs": ["y"]}],
          "outputs": ["y"]}"#,
    )
    .unwrap();
    vigil::engine::Tensor::from_vec(&[3], vec![1.0f32, 2.0, 3.0])
        .unwrap()
        .write_npy(case.join("inputs/x.npy"))
        .unwrap();
    vigil::engine::Tensor::from_i64s(&[0, 1, 1, 7, 1])
        .write_npy(case.join("inputs/i.npy"))
        .unwrap();
    let (rec, prof, out) = (
        tmp.path().join("rec"),
        tmp.path().join("p.json"),
        tmp.path().join("out"),
    );
    let o = vigil(&[
        "exec",
        case.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--record",
        rec.to_str().unwrap(),
        "--profile",
        prof.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("point 7"), "{}", stderr(&o));
    for p in [&rec, &prof, &out] {
        assert!(!p.exists(), "{} left behind", p.display());
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A report without the fields that are measurements (they differ from
/// run to run).
fn without_timings(mut r: Value) -> Value {
    for c in r["cases"].as_array_mut().unwrap() {
        let c = c.as_object_mut().unwrap();
        c.remove("duration_ms");
        c.remove("timeline");
    }
    r
}

#[test]
fn merging_keeps_every_byte_and_refuses_missing_or_repeated_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let t = |p: &str| tmp.path().join(p).to_str().unwrap().to_string();
    // The ops suite's output comparisons hold many small errors such as
    // 5.960464477539063e-8 that an approximate float parser changes.
    let o = vigil(&["run", "suites/ops", "-q", "--report", &t("all.json")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = vigil(&["report", "merge", &t("all.json"), "-o", &t("m.json")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (all, merged) = (
        std::fs::read_to_string(t("all.json")).unwrap(),
        std::fs::read_to_string(t("m.json")).unwrap(),
    );
    assert!(all.contains("e-8"), "the suite should have small errors");
    assert!(all == merged, "merging one whole report changed it");

    // Shards record K/N; merged, they are the unsharded report.
    for k in 1..=3 {
        let part = format!("{k}/3");
        let o = vigil(&[
            "run",
            "suites/ops",
            "-q",
            "--partition",
            &part,
            "--report",
            &t(&format!("{k}.json")),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(
        read_json(&tmp.path().join("2.json"))["partition"],
        serde_json::json!({"k": 2, "n": 3})
    );
    assert_eq!(read_json(&tmp.path().join("all.json"))["partition"], Value::Null);
    let o = vigil(&[
        "report",
        "merge",
        &t("3.json"),
        &t("1.json"),
        &t("2.json"),
        "-o",
        &t("s.json"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        without_timings(read_json(&tmp.path().join("s.json"))),
        without_timings(read_json(&tmp.path().join("all.json")))
    );

    for (files, says) in [
        (vec!["1.json", "3.json"], "missing shards: 2/3"),
        (
            vec!["1.json", "2.json", "2.json", "3.json"],
            "shard 2/3 is given more than once",
        ),
        (vec!["1.json", "2.json", "3.json", "all.json"], "whole-run report"),
    ] {
        let mut args = vec!["report".to_string(), "merge".to_string()];
        args.extend(files.iter().map(|f| t(f)));
        args.extend(["-o".to_string(), t("bad.json")]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{files:?}");
        assert!(stderr(&o).contains(says), "{files:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1);
        assert!(!tmp.path().join("bad.json").exists());
    }
}

#[test]
fn a_bad_report_path_is_refused_before_any_case_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // A failing case: had it run, its progress line would be on stderr.
    relu_case(&tmp.path().join("bad"), Some(&[5.0, 5.0]));
    let dir = tmp.path().to_str().unwrap();
    let missing = tmp.path().join("no/such/dir/r.json");
    let file = tmp.path().join("bad/graph.json");
    std::fs::create_dir(tmp.path().join("d.json")).unwrap();
    for (report, says) in [
        (tmp.path().join("out.noext"), "cannot tell the format".to_string()),
        (
            missing.clone(),
            format!("directory {} does not exist", missing.parent().unwrap().display()),
        ),
        (tmp.path().join("d.json"), "is a directory".to_string()),
        (file.join("r.json"), "is not a directory".to_string()),
    ] {
        let r = report.to_str().unwrap();
        let o = vigil(&["run", dir, "--report", r]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{r}: {err}");
        assert_eq!(err.lines().count(), 1, "{r}: a case ran first: {err}");
        assert!(err.contains(&says), "{r}: {err}");
        assert_eq!(err.matches(r).count(), 1, "{r}: path repeated: {err}");
        assert!(o.stdout.is_empty());
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        2,
        "no file written"
    );
}

#[test]
fn selecting_no_case_is_an_error_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (args, says) in [
        (
            vec!["run", "suites/views", "--filter", "typo"],
            "--filter 'typo' matches none of the",
        ),
        (vec!["run", empty.to_str().unwrap()], "no case found in"),
    ] {
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1);
        assert!(o.stdout.is_empty());
    }
    // A shard that gets no case is not a typo: it writes its empty report.
    relu_case(&tmp.path().join("s/only"), Some(&[0.0, 2.0]));
    let s = tmp.path().join("s");
    let mut empty_shards = 0;
    for k in 1..=4 {
        let report = tmp.path().join(format!("{k}.json"));
        let part = format!("{k}/4");
        let o = vigil(&[
            "run",
            s.to_str().unwrap(),
            "--partition",
            &part,
            "-q",
            "--report",
            report.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{part}: {}", stderr(&o));
        if read_json(&report)["summary"]["cases"] == 0 {
            empty_shards += 1;
        }
    }
    assert_eq!(empty_shards, 3);
}

#[test]
fn a_suite_named_twice_runs_each_case_once() {
    let n = count_cases(&Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/views"));
    let o = vigil(&[
        "run",
        "./suites/views",
        "suites/views",
        "suites/views/",
        "--format",
        "json",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json_of(&o);
    assert_eq!(r["summary"]["cases"], n);
    for c in r["cases"].as_array().unwrap() {
        assert!(c["path"].as_str().unwrap().starts_with("suites/views/"), "{c}");
    }
}

#[test]
fn failing_on_warnings_says_so() {
    let o = vigil(&[
        "run",
        "suites/broken",
        "--filter",
        "lazy_scale",
        "--fail-on",
        "warning",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.ends_with("2 cases: 2 passed, 0 failed, 0 errors, 1 warning\n"),
        "{out}"
    );
    assert!(
        stderr(&o).contains("vigil: run failed: 1 warning (--fail-on warning)"),
        "{}",
        stderr(&o)
    );
    // The same run passes at the default threshold.
    let o = vigil(&[
        "run",
        "suites/broken",
        "--filter",
        "lazy_scale",
        "-q",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn input_errors_name_the_file_and_a_way_that_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let case = relu_case(&tmp.path().join("wrong_dtype"), None);
    let x = vigil::engine::Tensor::from_vec(&[2], vec![-1.0f64, 2.0]).unwrap();
    x.write_npy(case.join("inputs/x.npy")).unwrap();
    let bare = relu_case(&tmp.path().join("no_inputs"), None);
    std::fs::remove_dir_all(bare.join("inputs")).unwrap();
    let r = json_of(&vigil(&[
        "run",
        tmp.path().to_str().unwrap(),
        "--format",
        "json",
        "-q",
    ]));
    let error_of = |name: &str| -> String {
        let c = r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap();
        c["error"].as_str().unwrap().to_string()
    };
    let e = error_of("wrong_dtype");
    assert!(
        e.contains("inputs/x.npy") && e.contains("f64") && e.contains("f32"),
        "{e}"
    );
    assert!(!e.contains("graph.json"), "{e}");
    let e = error_of("no_inputs");
    assert!(e.contains("inputs/") && !e.contains("--input"), "{e}");
}

#[test]
fn f32_values_print_at_f32_precision() {
    let tmp = tempfile::tempdir().unwrap();
    relu_case(&tmp.path().join("c"), Some(&[0.003_766_316, 2.0]));
    let r = json_of(&vigil(&[
        "run",
        tmp.path().to_str().unwrap(),
        "--format",
        "json",
        "-q",
    ]));
    let m = r["cases"][0]["findings"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(m.contains("got 0, expected 0.003766316)"), "{m}");
}

#[test]
fn logs_without_a_terminal_show_failures_not_every_case() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..6 {
        relu_case(&tmp.path().join(format!("passing_case_{i}")), Some(&[0.0, 2.0]));
    }
    relu_case(&tmp.path().join("the_failing_case"), Some(&[0.0, 3.0]));
    let o = vigil(&["run", tmp.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(!err.contains("passing_case_"), "{err}");
    let bad: Vec<&str> = err.lines().filter(|l| l.contains("the_failing_case")).collect();
    assert_eq!(bad.len(), 1, "{err}");
    assert!(
        bad[0].contains("fail") && bad[0].contains("output_mismatch"),
        "{err}"
    );
}

#[test]
fn minimize_writes_a_small_runnable_case_with_the_same_finding() {
    use vigil::engine::{DType, GraphBuilder, Tensor};
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("long");
    std::fs::create_dir_all(case.join("inputs")).unwrap();
    let b = GraphBuilder::with_registry("long", vigil::default_registry());
    let x = b.input("x", DType::F32, &[8]);
    let mut y = x.exp().unwrap();
    for i in 0..30 {
        y = if i == 15 {
            y.op("broken_stencil", &[], Default::default()).unwrap()
        } else {
            y.neg().unwrap()
        };
    }
    let g = b.build(&[&y]).unwrap();
    std::fs::write(case.join("graph.json"), g.to_json().unwrap()).unwrap();
    Tensor::from_vec(&[8], (0..8).map(|i| i as f32 * 0.1).collect::<Vec<_>>())
        .unwrap()
        .write_npy(case.join("inputs/x.npy"))
        .unwrap();
    let out = tmp.path().join("min");
    let (c, o) = (case.to_str().unwrap(), out.to_str().unwrap());
    let r = vigil(&[
        "minimize",
        c,
        "--out",
        o,
        "--kind",
        "bad_rewrite",
        "--checks",
        "lockstep,culprit",
    ]);
    assert_eq!(r.status.code(), Some(0), "stderr: {}", stderr(&r));
    let said = String::from_utf8_lossy(&r.stdout).to_string();
    assert!(
        said.contains("31 nodes -> ") && said.contains("DebugMode runs"),
        "{said}"
    );
    let expect: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("expect.json")).unwrap()).unwrap();
    assert_eq!(expect["finding"], "bad_rewrite");
    assert_eq!(expect["op"], "broken_stencil");
    assert!(std::fs::read_to_string(out.join("README.md"))
        .unwrap()
        .contains("vigil debug"));
    let graph: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("graph.json")).unwrap()).unwrap();
    assert!(graph["nodes"].as_array().unwrap().len() <= 2, "{graph}");
    // The written case runs and fails the same way.
    let d = vigil(&["debug", o, "--format", "json", "--checks", "lockstep,culprit"]);
    assert_eq!(d.status.code(), Some(1), "stderr: {}", stderr(&d));
    assert!(json_of(&d)["cases"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "bad_rewrite"));
    // An existing, non-empty --out is refused before any work.
    let again = vigil(&["minimize", c, "--out", o]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("not an empty directory"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_nan_expected_value_is_an_infinite_error_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    relu_case(&tmp.path().join("c"), Some(&[f32::NAN, 2.5]));
    let r = json_of(&vigil(&[
        "run",
        tmp.path().to_str().unwrap(),
        "--format",
        "json",
        "-q",
        "--mode",
        "plain",
    ]));
    let out = &r["cases"][0]["outputs"][0];
    assert_eq!(out["max_abs_err"], "inf", "{out}");
    assert_eq!(out["max_rel_err"], "inf", "{out}");
    assert_eq!(out["mismatched"], 2, "{out}");
    let f = &r["cases"][0]["findings"][0];
    assert_eq!(f["details"]["first_index"], 0, "{f}");
    assert_eq!(f["details"]["first_at"], serde_json::json!([0]), "{f}");
    assert_eq!(out["sample"]["abs_err"], serde_json::json!(["inf", 0.5]), "{out}");
}

#[test]
fn debug_mode_names_the_element_an_out_of_view_write_changed() {
    let o = vigil(&["debug", "suites/broken/broken_row_sum", "--format", "json"]);
    let r = json_of(&o);
    let f = r["cases"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "out_of_view_write")
        .unwrap_or_else(|| panic!("{r}"));
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("1 element past the end of the view, at x[1, 0] (row 1)"),
        "{m}"
    );
    assert!(f["details"]["replay"].is_object(), "{f}");
}

#[test]
fn bare_vigil_prints_the_help_on_stderr_and_exits_2() {
    let o = vigil(&[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("Usage: vigil") && err.contains("Commands:"), "{err}");
    assert!(!err.contains('\x1b'), "no colour into a pipe: {err:?}");
    assert!(o.stdout.is_empty());
}

#[test]
fn flag_errors_name_the_flag_and_every_accepted_value() {
    let o = vigil(&["run", "suites/views", "--rtol", "-1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("'-1' must be a non-negative number"),
        "{}",
        stderr(&o)
    );
    let o = vigil(&["compare", "a", "b", "--atol", "-0.5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("must be a non-negative number"),
        "{}",
        stderr(&o)
    );
    let o = vigil(&["run", "suites/views", "--checks", "lockstep,bogus"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("unknown check 'bogus'") && err.contains(", or all)"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn help_describes_each_flag_in_the_terms_of_its_command() {
    let help = |cmd: &[&str]| String::from_utf8_lossy(&vigil(cmd).stdout).into_owned();
    let compare = help(&["compare", "--help"]);
    assert!(!compare.contains("RecordingListener"), "{compare}");
    // A flag's help text: what follows `--flag <VALUE>` on its line,
    // before clap's `[default: ...]`.
    let described = |h: &str, flag: &str| -> String {
        let line = h.lines().find(|l| l.trim_start().starts_with(flag)).unwrap_or("");
        let rest = line.trim_start()[flag.len()..].trim_start();
        let text = rest.split_once(' ').map_or("", |(_, t)| t);
        text.split('[').next().unwrap_or("").trim().to_string()
    };
    assert!(
        described(&compare, "--atol").starts_with("Absolute tolerance"),
        "{compare}"
    );
    let exec = help(&["exec", "--help"]);
    assert!(!exec.contains("compare with"), "{exec}");
    assert!(help(&["import", "--help"]).contains("--out <DIR>"));
    for cmd in ["explain", "compare", "selftest", "debug"] {
        let h = help(&[cmd, "--help"]);
        assert!(
            !described(&h, "--format").is_empty(),
            "{cmd}: --format has no description:\n{h}"
        );
    }
    let debug = help(&["debug", "--help"]);
    for flag in ["--report <FILE>", "--rtol <RTOL>", "--atol <ATOL>"] {
        assert!(debug.contains(flag), "{flag}: {debug}");
    }
}

#[test]
fn debug_writes_a_report_file_and_a_minimized_case_is_named_after_its_case() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("r.html");
    let o = vigil(&[
        "debug",
        "suites/broken/broken_stencil",
        "--report",
        html.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html).unwrap().contains("bad_rewrite"));
    let out = tmp.path().join("small");
    let o = vigil(&[
        "minimize",
        "suites/broken/broken_stencil",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let g: Value = serde_json::from_str(&std::fs::read_to_string(out.join("graph.json")).unwrap()).unwrap();
    assert_eq!(g["name"], "broken_stencil");
}
