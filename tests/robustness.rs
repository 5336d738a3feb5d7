//! The harness stays up and honest under hostile input and flags: resource
//! bounds on flags, timeouts, Ctrl-C, untrusted names, determinism.

mod common;
use common::{stderr, vigil};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[test]
fn jobs_are_capped_and_out_of_range_numbers_refused() {
    let o = vigil(&["run", "suites/views", "--jobs", "100000", "-q", "--mode", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("--jobs 100000 lowered to"), "{}", stderr(&o));
    for args in [
        vec!["run", "suites/views", "--jobs", "0"],
        vec!["run", "suites/views", "--jobs", "2000000"],
        vec!["run", "suites/views", "--timeout", "0"],
        vec!["run", "suites/views", "--timeout", "nan"],
        vec!["run", "suites/views", "--rtol", "-1"],
    ] {
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_case_past_its_timeout_is_an_error_row() {
    let o = vigil(&["run", "suites/inplace", "--timeout", "0.001", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let late: Vec<&Value> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "error")
        .collect();
    assert!(!late.is_empty());
    assert!(
        late[0]["error"]
            .as_str()
            .unwrap()
            .contains("past --timeout 0.001 s"),
        "{}",
        late[0]
    );
}

#[test]
fn an_input_name_cannot_reach_outside_the_case() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    std::fs::create_dir_all(case.join("inputs")).unwrap();
    // A file beside the case that a name like '../x' would read.
    let t = vigil::engine::Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap();
    t.write_npy(case.join("x.npy")).unwrap();
    std::fs::write(
        case.join("graph.json"),
        r#"{"format": "vigil-graph/1", "name": "evil",
            "inputs": [{"name": "../x", "dtype": "f32", "shape": [2]}],
            "nodes": [{"name": "r", "op": "relu", "inputs": ["../x"], "outputs": ["y"]}],
            "outputs": ["y"]}"#,
    )
    .unwrap();
    for args in [
        vec![
            "exec",
            case.to_str().unwrap(),
            "--out",
            tmp.path().join("o").to_str().unwrap(),
        ],
        vec!["run", case.to_str().unwrap(), "--format", "json"],
    ] {
        let o = vigil(&args);
        let text = format!("{}{}", stderr(&o), String::from_utf8_lossy(&o.stdout));
        assert!(text.contains("is not a plain file name"), "{args:?}: {text}");
        assert_ne!(o.status.code(), Some(0), "{args:?}");
    }
    assert!(!tmp.path().join("o").exists(), "no partial output");
}

#[test]
fn reports_are_byte_identical_across_runs_and_job_counts() {
    let run = |jobs: &str| {
        let o = vigil(&[
            "run",
            "suites/broken",
            "--no-timings",
            "--format",
            "json",
            "--jobs",
            jobs,
        ]);
        assert_eq!(o.status.code(), Some(1), "the broken suite fails: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let one = run("1");
    assert!(one.len() > 1000);
    // Compared line by line, so a failure shows the first differing line.
    for (jobs, other) in [("1", run("1")), ("2", run("2"))] {
        for (a, b) in one.lines().zip(other.lines()) {
            assert_eq!(a, b, "--jobs 1 and --jobs {jobs} differ");
        }
        assert_eq!(one.len(), other.len());
    }
    let r: Value = serde_json::from_str(&one).unwrap();
    assert!(r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["duration_ms"] == 0));
}

/// `n` cases that each take a while (a 20-op chain over 200k f32) and fail
/// (their expected output is zeros), so each prints a line as it finishes.
fn slow_failing_suite(dir: &Path, n: usize) {
    let mut nodes = Vec::new();
    let mut prev = "x".to_string();
    for i in 0..20 {
        let op = if i % 2 == 0 { "tanh" } else { "exp" };
        nodes.push(format!(
            r#"{{"name": "n{i}", "op": "{op}", "inputs": ["{prev}"], "outputs": ["v{i}"]}}"#
        ));
        prev = format!("v{i}");
    }
    let graph = format!(
        r#"{{"format": "vigil-graph/1", "name": "slow",
            "inputs": [{{"name": "x", "dtype": "f32", "shape": [200000]}}],
            "nodes": [{}], "outputs": ["{prev}"]}}"#,
        nodes.join(",")
    );
    let x = vigil::engine::Tensor::from_vec(&[200_000], vec![0.5f32; 200_000]).unwrap();
    let zeros = vigil::engine::Tensor::zeros(vigil::engine::DType::F32, &[200_000]).unwrap();
    for i in 0..n {
        let case = dir.join(format!("slow_{i:02}"));
        std::fs::create_dir_all(case.join("inputs")).unwrap();
        std::fs::create_dir_all(case.join("expected")).unwrap();
        std::fs::write(case.join("graph.json"), &graph).unwrap();
        x.write_npy(case.join("inputs/x.npy")).unwrap();
        zeros
            .write_npy(case.join(format!("expected/{prev}.npy")))
            .unwrap();
    }
}

#[cfg(unix)]
#[test]
fn ctrl_c_writes_the_finished_cases_and_exits_130() {
    interrupt_a_run(&[]);
}

#[cfg(unix)]
#[test]
fn ctrl_c_with_isolate_writes_the_finished_cases_and_exits_130() {
    interrupt_a_run(&["--isolate"]);
}

/// Sends SIGINT to a `vigil run` once its first case has finished, and
/// checks that it writes the finished cases' report and exits 130.
#[cfg(unix)]
fn interrupt_a_run(flags: &[&str]) {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    slow_failing_suite(&suite, 40);
    let report = tmp.path().join("r.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["run", suite.to_str().unwrap(), "--jobs", "1", "--report"])
        .arg(&report)
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first case has finished (its failure is printed).
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().expect("a progress line").unwrap();
    assert!(first.contains("fail"), "{first}");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "vigil did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("interrupted")), "{rest:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let done = r["cases"].as_array().unwrap().len();
    assert!(done > 0 && done < 40, "{done} of 40 cases in the report");
}

/// A case whose graph keeps constant `w` in the file `npy` (relative to the
/// case directory), added to its input `x`.
fn case_with_npy_constant(case: &Path, npy: &str) {
    std::fs::create_dir_all(case.join("inputs")).unwrap();
    let x = vigil::engine::Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap();
    x.write_npy(case.join("inputs/x.npy")).unwrap();
    let graph = serde_json::json!({
        "format": "vigil-graph/1", "name": "c",
        "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
        "constants": [{"name": "w", "npy": npy}],
        "nodes": [{"name": "a", "op": "add", "inputs": ["x", "w"], "outputs": ["y"]}],
        "outputs": ["y"]
    });
    std::fs::write(case.join("graph.json"), graph.to_string()).unwrap();
}

#[test]
fn a_constant_file_cannot_be_read_from_outside_the_case() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret.npy");
    let w = vigil::engine::Tensor::from_vec(&[2], vec![10.0f32, 20.0]).unwrap();
    w.write_npy(&secret).unwrap();
    // The same file inside the case is read (the check refuses no more than it must).
    let good = tmp.path().join("good");
    case_with_npy_constant(&good, "constants/w.npy");
    std::fs::create_dir_all(good.join("constants")).unwrap();
    w.write_npy(good.join("constants/w.npy")).unwrap();
    let o = vigil(&[
        "exec",
        good.to_str().unwrap(),
        "--out",
        tmp.path().join("good_out").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let mut evil = vec![
        ("dotdot", "../secret.npy".to_string()),
        ("absolute", secret.display().to_string()),
    ];
    #[cfg(unix)]
    {
        let linked = tmp.path().join("symlink");
        std::fs::create_dir_all(linked.join("constants")).unwrap();
        std::os::unix::fs::symlink(&secret, linked.join("constants/w.npy")).unwrap();
        evil.push(("symlink", "constants/w.npy".to_string()));
    }
    for (name, npy) in evil {
        let case = tmp.path().join(name);
        case_with_npy_constant(&case, &npy);
        let out = tmp.path().join(format!("{name}_out"));
        let o = vigil(&["exec", case.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("constant 'w'"), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("reads only files of its own directory"),
            "{name}: {}",
            stderr(&o)
        );
        assert_eq!(stderr(&o).lines().count(), 1, "{name}");
        assert!(!out.exists(), "{name}: no output");
        let o = vigil(&[
            "run",
            case.to_str().unwrap(),
            "--format",
            "json",
            "--mode",
            "plain",
        ]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        let error = r["cases"][0]["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("reads only files of its own directory"),
            "{name}: {error}"
        );
    }
}

#[test]
fn a_graph_file_is_read_only_within_the_allocation_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    std::fs::create_dir_all(case.join("inputs")).unwrap();
    let x = vigil::engine::Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap();
    x.write_npy(case.join("inputs/x.npy")).unwrap();
    let graph = r#"{"format": "vigil-graph/1", "name": "g",
        "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
        "nodes": [{"name": "r", "op": "relu", "inputs": ["x"], "outputs": ["y"]}],
        "outputs": ["y"]}"#;
    let exec = |out: &str| {
        let out = tmp.path().join(out).display().to_string();
        vigil(&[
            "--max-alloc",
            "64K",
            "exec",
            case.to_str().unwrap(),
            "--out",
            &out,
        ])
    };
    std::fs::write(case.join("graph.json"), graph).unwrap();
    let o = exec("o1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // 8 KiB of JSON could take 16x that while parsed: past 64 KiB.
    std::fs::write(case.join("graph.json"), format!("{graph}{}", " ".repeat(8192))).unwrap();
    let o = exec("o2");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("past the allocation limit of 65536 bytes (--max-alloc)"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("graph.json"), "{}", stderr(&o));
}

#[test]
fn an_onnx_model_is_read_only_within_the_allocation_limit() {
    let tmp = tempfile::tempdir().unwrap();
    // 7,746 bytes of protobuf could decode to 8x that in one allocation.
    let model = "fuzz/corpus/onnx_import/seed_test_operator_conv.onnx";
    let import = |limit: &str, out: &str| {
        let out = tmp.path().join(out);
        let o = vigil(&[
            "--max-alloc",
            limit,
            "import",
            model,
            "--out",
            out.to_str().unwrap(),
            "--random-inputs",
            "1",
        ]);
        (o, out)
    };
    let (o, out) = import("1M", "ok");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.join("graph.json").exists());
    let (o, out) = import("32K", "refused");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("seed_test_operator_conv.onnx: 7746 bytes"), "{e}");
    assert!(
        e.contains("past the allocation limit of 32768 bytes (--max-alloc)"),
        "{e}"
    );
    assert!(!out.exists(), "no partial output");
}
