//! End-to-end tests of `vigil exec --mode validate|debug` (findings like
//! `vigil run`, exit code 1) and of `vigil compare` placing the first
//! divergence: the node and op of an activation, or a perturbed weight
//! named as the cause.

mod common;

use std::path::Path;

use common::{json_of, stderr, vigil};
use serde_json::Value;
use vigil::engine::{DType, GraphBuilder, Tensor};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn finding_kinds(report: &Value) -> Vec<String> {
    report["cases"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn exec_validate_and_debug_report_findings_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    for mode in ["validate", "debug"] {
        let out = tmp.path().join(format!("broken-{mode}"));
        let o = vigil(&[
            "exec",
            "suites/broken/broken_accumulate",
            "--out",
            s(&out),
            "--mode",
            mode,
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(1), "{mode}: {}", stderr(&o));
        let report = json_of(&o);
        assert_eq!(report["mode"], mode);
        assert!(
            finding_kinds(&report).contains(&"destroyed_input".to_string()),
            "{mode}: {report}"
        );
        let f = &report["cases"][0]["findings"][0];
        assert_eq!(f["op"], "broken_accumulate", "{mode}");
        assert!(stderr(&o).contains("destroyed_input"), "{}", stderr(&o));
        // The outputs are still written: they help find the bug.
        assert!(out.join("broken_accumulate_1.npy").is_file(), "{mode}");
        assert!(out.join("manifest.json").is_file(), "{mode}");

        let out = tmp.path().join(format!("fixed-{mode}"));
        let o = vigil(&[
            "exec",
            "suites/broken/fixed_accumulate",
            "--out",
            s(&out),
            "--mode",
            mode,
        ]);
        assert_eq!(o.status.code(), Some(0), "{mode}: {}", stderr(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("no findings"),
            "{mode}"
        );
    }
    // Plain stays the default: no findings looked for; stdout says what
    // was written.
    let out = tmp.path().join("plain");
    let o = vigil(&["exec", "suites/broken/broken_accumulate", "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with(&format!(
            "wrote 1 output to {}: broken_accumulate_1.npy (f32 [",
            out.display()
        )),
        "{text}"
    );
    assert!(text.trim_end().ends_with("manifest.json"), "{text}");
    assert!(!text.contains("finding"), "{text}");
}

#[test]
fn exec_refuses_an_output_or_recording_directory_that_holds_files() {
    let tmp = tempfile::tempdir().unwrap();
    let stale = tmp.path().join("stale");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("sigmoid_5.npy"), b"old").unwrap();
    let case = "suites/broken/fixed_accumulate";
    for (flag, args) in [
        ("--out", vec!["exec", case, "--out", s(&stale)]),
        (
            "--record",
            vec![
                "exec",
                case,
                "--out",
                s(&tmp.path().join("fresh")),
                "--record",
                s(&stale),
            ],
        ),
    ] {
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(&format!("{flag} {}", stale.display())), "{err}");
        assert!(err.contains("not an empty directory"), "{err}");
        // Nothing was written, and the old file is left alone.
        assert!(!tmp.path().join("fresh").exists(), "{flag}");
        assert_eq!(std::fs::read_dir(&stale).unwrap().count(), 1, "{flag}");
    }
    // An empty directory is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = vigil(&["exec", case, "--out", s(&empty)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn exec_validate_findings_agree_with_run() {
    let tmp = tempfile::tempdir().unwrap();
    let case = "suites/broken/broken_first_row";
    let o = vigil(&[
        "exec",
        case,
        "--out",
        s(&tmp.path().join("o")),
        "--mode",
        "validate",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let exec_kinds = finding_kinds(&json_of(&o));
    let o = vigil(&["run", case, "--mode", "validate", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(exec_kinds, finding_kinds(&json_of(&o)));
    assert_eq!(exec_kinds, ["undeclared_view"]);
}

#[test]
fn exec_debug_refuses_flags_it_cannot_honour_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let rec = tmp.path().join("r");
    for extra in [
        vec!["--record", s(&rec)],
        vec!["--no-inplace"],
        vec!["--profile", "p.json"],
        vec!["--warmup", "1"],
    ] {
        let mut args = vec![
            "exec",
            "suites/broken/fixed_accumulate",
            "--out",
            s(&out),
            "--mode",
            "debug",
        ];
        args.extend(&extra);
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(extra[0]) && err.contains("not debug"), "{err}");
        assert!(!out.exists() && !rec.exists());
    }
    let o = vigil(&[
        "exec",
        "suites/broken/fixed_accumulate",
        "--out",
        s(&out),
        "--checks",
        "lockstep",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--checks works with --mode debug"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn exec_warmup_runs_are_left_out_of_the_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let events = |warmup: &str| {
        let (out, prof) = (
            tmp.path().join(format!("o{warmup}")),
            tmp.path().join(format!("p{warmup}.json")),
        );
        let o = vigil(&[
            "exec",
            "suites/broken/broken_accumulate",
            "--out",
            s(&out),
            "--profile",
            s(&prof),
            "--warmup",
            warmup,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let trace: Value = serde_json::from_str(&std::fs::read_to_string(&prof).unwrap()).unwrap();
        trace["traceEvents"].as_array().unwrap().len()
    };
    let cold = events("0");
    assert!(cold > 0);
    assert_eq!(events("3"), cold, "one event per node of the counted run");
}

/// A profiled run fuses as the plain run does: the nodes `vigil explain`
/// says sweep with the one before (and those they sweep with) are the ones
/// the profile marks swept, so the times are those of the run a user gets.
#[test]
fn exec_profiles_the_sweeps_of_the_plain_run() {
    let case = "suites/inplace/chain128_f64";
    let o = vigil(&["explain", case, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = json_of(&o);
    let nodes = e["nodes"].as_array().unwrap();
    let name = |k: usize| nodes[k]["name"].as_str().unwrap().to_string();
    let mut want: Vec<String> = (1..nodes.len())
        .filter(|&k| nodes[k]["sweeps_with_previous"] == true)
        .flat_map(|k| [name(k - 1), name(k)])
        .collect();
    want.sort();
    want.dedup();
    assert!(!want.is_empty(), "the chain sweeps");
    let tmp = tempfile::tempdir().unwrap();
    let (out, prof) = (tmp.path().join("o"), tmp.path().join("p.json"));
    let o = vigil(&["exec", case, "--out", s(&out), "--profile", s(&prof)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&prof).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert_eq!(events.len(), nodes.len(), "one event per node");
    let mut got: Vec<String> = events
        .iter()
        .filter(|ev| ev["args"]["swept"] == true)
        .map(|ev| ev["args"]["node"].as_str().unwrap().to_string())
        .collect();
    got.sort();
    assert_eq!(got, want);
}

/// A two-layer case: h = relu(x @ w1), y = h @ w2; w2 a parameter.
fn two_layer_case(dir: &Path) {
    let b = GraphBuilder::new("two_layer");
    let x = b.input("x", DType::F32, &[2, 3]);
    let w1 = b.input("w1", DType::F32, &[3, 4]);
    let w2 = b.parameter(
        "w2",
        Tensor::from_vec(&[4, 2], (0..8).map(|i| i as f32 * 0.25 - 1.0).collect()).unwrap(),
    );
    let h = b
        .apply_named("layer1", "matmul", &[&x, &w1], Default::default())
        .unwrap()
        .remove(0);
    let h = b
        .apply_named("act1", "relu", &[&h], Default::default())
        .unwrap()
        .remove(0);
    let y = b
        .apply_named("layer2", "matmul", &[&h, &w2], Default::default())
        .unwrap()
        .remove(0);
    let g = b.build(&[&y]).unwrap();
    std::fs::create_dir_all(dir.join("inputs")).unwrap();
    std::fs::write(dir.join("graph.json"), g.to_json().unwrap()).unwrap();
    let vals = |n: usize, k: f32| (0..n).map(|i| (i as f32 - 2.0) * k).collect::<Vec<f32>>();
    Tensor::from_vec(&[2, 3], vals(6, 0.5))
        .unwrap()
        .write_npy(dir.join("inputs/x.npy"))
        .unwrap();
    Tensor::from_vec(&[3, 4], vals(12, 0.125))
        .unwrap()
        .write_npy(dir.join("inputs/w1.npy"))
        .unwrap();
}

#[test]
fn compare_names_a_perturbed_weight_as_the_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    two_layer_case(&case);
    // w1 with one element changed.
    let w1 = Tensor::read_npy(case.join("inputs/w1.npy")).unwrap();
    let bumped = w1.deep_copy().unwrap();
    bumped.set_at(&[1, 2], vigil::engine::Scalar::F32(7.0)).unwrap();
    let bumped_file = tmp.path().join("w1_bumped.npy");
    bumped.write_npy(&bumped_file).unwrap();

    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let o = vigil(&[
        "exec",
        s(&case),
        "--out",
        s(&tmp.path().join("oa")),
        "--record",
        s(&a),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let feed = format!("w1={}", s(&bumped_file));
    let o = vigil(&[
        "exec",
        s(&case),
        "--out",
        s(&tmp.path().join("ob")),
        "--record",
        s(&b),
        "--input",
        &feed,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // The recording holds the inputs and the parameter, each once.
    let index: Value = serde_json::from_str(&std::fs::read_to_string(a.join("index.json")).unwrap()).unwrap();
    let recorded: Vec<(String, String)> = index["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["var"].as_str().unwrap().into(),
                e["kind"].as_str().unwrap().into(),
            )
        })
        .collect();
    for (var, kind) in [
        ("x", "input"),
        ("w1", "input"),
        ("w2", "parameter"),
        ("layer2", "activation"),
    ] {
        assert_eq!(
            recorded.iter().filter(|(v, k)| v == var && k == kind).count(),
            1,
            "{var}: {recorded:?}"
        );
    }

    let o = vigil(&["compare", s(&a), s(&b), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let c = json_of(&o);
    assert_eq!(c["first_divergent"], "w1");
    let d = &c["first_divergence"];
    assert_eq!(
        (d["kind"].as_str(), d["node"].as_str(), d["op"].as_str()),
        (Some("input"), Some("layer1"), Some("matmul"))
    );

    let o = vigil(&["compare", s(&a), s(&b)]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("first divergent variable: w1, an input fed to the run (first read by node 'layer1', op 'matmul')"),
        "{text}"
    );
}

#[test]
fn compare_names_the_node_and_op_of_a_divergent_activation() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    two_layer_case(&case);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for rec in [&a, &b] {
        let o = vigil(&[
            "exec",
            s(&case),
            "--out",
            s(&rec.with_extension("out")),
            "--record",
            s(rec),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // B's relu output changed, as a faulty kernel would.
    let index: Value = serde_json::from_str(&std::fs::read_to_string(b.join("index.json")).unwrap()).unwrap();
    let entry = index["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["var"] == "act1")
        .unwrap()
        .clone();
    let file = b.join(entry["file"].as_str().unwrap());
    let t = Tensor::read_npy(&file).unwrap();
    t.set_at(&[0, 0], vigil::engine::Scalar::F32(100.0)).unwrap();
    t.write_npy(&file).unwrap();

    let o = vigil(&["compare", s(&a), s(&b), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d = &json_of(&o)["first_divergence"];
    assert_eq!(
        (
            d["var"].as_str(),
            d["kind"].as_str(),
            d["node"].as_str(),
            d["op"].as_str()
        ),
        // The in-place pass ran relu in place on layer1's dead result.
        (
            Some("act1"),
            Some("activation"),
            Some("act1"),
            Some("relu_inplace")
        )
    );
    let o = vigil(&["compare", s(&a), s(&b)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("first divergent variable: act1, output of node 'act1' (op 'relu_inplace')"),
        "{text}"
    );
}
