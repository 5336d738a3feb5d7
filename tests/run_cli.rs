//! End-to-end tests of `vigil run`, `vigil report merge` and `vigil selftest`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn vigil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run vigil")
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
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

#[test]
fn shipped_suites_give_zero_findings() {
    let o = vigil(&["run", "suites", "--format", "json", "-q"]);
    let r = json_of(&o);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let s = &r["summary"];
    let n = count_cases(&Path::new(env!("CARGO_MANIFEST_DIR")).join("suites"));
    assert!(n >= 56);
    assert_eq!(s["cases"], n);
    assert_eq!(s["passed"], n, "{}", serde_json::to_string_pretty(s).unwrap());
    assert_eq!(s["findings_by_kind"], serde_json::json!({}));
    assert_eq!(r["mode"], "validate");
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
    // Merging a shard with itself names the duplicate.
    let o = vigil(&[
        "report",
        "merge",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "-o",
        all.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("suites/views/"), "{}", stderr(&o));
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
    assert!(cases.len() >= 12);
    for c in cases {
        assert_eq!(c["pass"], true, "{c}");
        match c["expected"].as_str() {
            Some(k) => assert_eq!(c["found"], serde_json::json!([k]), "{c}"),
            None => assert_eq!(c["found"], serde_json::json!([]), "{c}"),
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
        match expect["finding"].as_str() {
            Some(k) => assert_eq!(found, vec![k], "{}", c["path"]),
            None => assert!(found.is_empty(), "{}: {found:?}", c["path"]),
        }
    }
}

#[test]
fn recordings_compare_and_name_the_first_divergent_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let t = |p: &str| tmp.path().join(p).to_str().unwrap().to_string();
    let case = "suites/views/add_two_views";
    for (rec, extra) in [("a", None), ("b", Some("--no-inplace"))] {
        let (out, rec) = (t("out"), t(rec));
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
