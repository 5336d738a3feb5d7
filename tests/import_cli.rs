//! `vigil import` end to end on small ONNX models written by the test.

mod common;

use std::path::Path;

use common::{stderr, vigil};
use onnx_protobuf::Message;
use vigil::engine::{DType, Tensor};
use vigil_testkit::onnx as onnx_support;
use vigil_testkit::onnx::{f32s, model, node, tensor, value};

/// `Reshape(x, shape)` with `shape` a graph input, and a data set feeding
/// `shape = [3, 2]`.
fn reshape_fed_shape(dir: &Path) -> std::path::PathBuf {
    reshape_expecting(dir, 1.0)
}

/// [`reshape_fed_shape`] whose data set expects the output times `scale`,
/// as another engine's rounding would leave it.
fn reshape_expecting(dir: &Path, scale: f32) -> std::path::PathBuf {
    let m = model(
        13,
        vec![node("Reshape", "flat", &["x", "shape"], &["y"], vec![])],
        vec![value("x", DType::F32, &[2, 3]), value("shape", DType::I64, &[2])],
        vec![],
        vec![value("y", DType::F32, &[3, 2])],
    );
    let path = dir.join("model.onnx");
    std::fs::write(&path, m.write_to_bytes().unwrap()).unwrap();
    let set = dir.join("test_data_set_0");
    std::fs::create_dir_all(&set).unwrap();
    let x: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let shape = Tensor::from_vec(&[2], vec![3i64, 2]).unwrap();
    for (file, name, t) in [
        ("input_0.pb", "x", f32s(&[2, 3], &x)),
        ("input_1.pb", "shape", shape),
        (
            "output_0.pb",
            "y",
            f32s(&[3, 2], &x.iter().map(|v| v * scale).collect::<Vec<_>>()),
        ),
    ] {
        std::fs::write(set.join(file), tensor(name, &t).write_to_bytes().unwrap()).unwrap();
    }
    path
}

fn run_status(case: &Path, extra: &[&str]) -> Option<i32> {
    let mut args = vec!["run", case.to_str().unwrap(), "--mode", "plain"];
    args.extend(extra);
    vigil(&args).status.code()
}

/// `vigil import MODEL --out DIR/case`, which must succeed; returns the
/// case directory and the tolerance.json it wrote.
fn import_case(model: &Path, dir: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let out = dir.join("case");
    let o = vigil(&["import", model.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(out.join("tolerance.json")).unwrap();
    (out, serde_json::from_str(&text).unwrap())
}

#[test]
fn an_imported_model_compares_with_onnx_tolerances_as_the_model_does() {
    let tmp = tempfile::tempdir().unwrap();
    // Off by 5e-4 relative: within ONNX's rtol 1e-3, past Vigil's own f32
    // default of 1e-5.
    let model = reshape_expecting(tmp.path(), 1.0 + 5e-4);
    assert_eq!(run_status(&model, &[]), Some(0));
    let (out, file) = import_case(&model, tmp.path());
    assert_eq!(
        file,
        serde_json::json!({"rtol": 1e-3, "atol": 1e-7, "f64_reference": true})
    );
    assert_eq!(run_status(&out, &[]), Some(0));
    // --rtol still wins over the file.
    assert_eq!(run_status(&out, &["--rtol", "1e-5"]), Some(1));
    // Without the file the case compares with Vigil's own defaults.
    std::fs::remove_file(out.join("tolerance.json")).unwrap();
    assert_eq!(run_status(&out, &[]), Some(1));
}

#[test]
fn an_imported_onnx_backend_test_gets_no_f64_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("test_reshape");
    std::fs::create_dir_all(&dir).unwrap();
    let model = reshape_fed_shape(&dir);
    let (_, file) = import_case(&model, tmp.path());
    assert_eq!(file["f64_reference"], false, "{file}");
}

#[test]
fn a_bad_tolerance_file_errors_the_case_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let model = reshape_fed_shape(tmp.path());
    let (out, _) = import_case(&model, tmp.path());
    for (bad, field) in [(r#"{"rtol": -1}"#, "rtol"), (r#"{"atol": 1, "tol": 2}"#, "tol")] {
        std::fs::write(out.join("tolerance.json"), bad).unwrap();
        let o = vigil(&["run", out.to_str().unwrap(), "--format", "json"]);
        assert_eq!(o.status.code(), Some(1), "{bad}: {}", stderr(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let case = &report["cases"][0];
        assert_eq!(case["status"], "error", "{report}");
        let msg = case["error"].as_str().unwrap();
        assert!(msg.contains("tolerance.json") && msg.contains(field), "{msg}");
    }
}

#[test]
fn import_takes_import_time_constants_from_the_data_set() {
    let tmp = tempfile::tempdir().unwrap();
    let model = reshape_fed_shape(tmp.path());
    let out = tmp.path().join("case");
    let o = vigil(&["import", model.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The node still reads the input, and the case runs clean on the data
    // set's values.
    let graph = std::fs::read_to_string(out.join("graph.json")).unwrap();
    assert!(graph.contains("\"reshape\""), "{graph}");
    let y = Tensor::read_npy(out.join("expected/y.npy")).unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    let o = vigil(&["run", out.to_str().unwrap(), "--mode", "validate"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
}

#[test]
fn import_with_random_inputs_still_needs_the_constant() {
    let tmp = tempfile::tempdir().unwrap();
    let model = reshape_fed_shape(tmp.path());
    let out = tmp.path().join("case");
    let o = vigil(&[
        "import",
        model.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--random-inputs",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("'flat'") && e.contains("Reshape"), "{e}");
}

/// Runs `vigil args...` in `dir`.
fn vigil_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run vigil")
}

/// `y = Reshape(x * w, Shape(x)[0] x 3)` where x has a symbolic batch dim,
/// w is stored in `model.onnx.data` at offset 8 (as torch writes it), and a
/// data set feeds a batch of 2.
fn external_symbolic(dir: &Path, location: &str) -> std::path::PathBuf {
    use onnx_protobuf::tensor_proto::DataLocation;
    use onnx_protobuf::StringStringEntryProto;
    let wv = [0.5f32, -2.0, 4.0];
    let mut bytes = vec![0u8; 8];
    bytes.extend(wv.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.join("model.onnx.data"), &bytes).unwrap();
    let mut w = tensor("w", &f32s(&[3], &wv));
    w.raw_data.clear();
    w.data_location = DataLocation::EXTERNAL.into();
    for (k, v) in [("location", location), ("offset", "8"), ("length", "12")] {
        let mut e = StringStringEntryProto::new();
        e.key = k.into();
        e.value = v.into();
        w.external_data.push(e);
    }
    let three = tensor("three", &Tensor::from_vec(&[1], vec![3i64]).unwrap());
    let m = model(
        18,
        vec![
            node("Mul", "scale", &["x", "w"], &["xw"], vec![]),
            node("Shape", "shape", &["x"], &["s"], vec![]),
            node("Slice", "batch", &["s", "zero", "one"], &["n"], vec![]),
            node(
                "Concat",
                "dims",
                &["n", "three"],
                &["dims"],
                vec![("axis", onnx_support::A::I(0))],
            ),
            node("Reshape", "out", &["xw", "dims"], &["y"], vec![]),
        ],
        vec![value("x", DType::F32, &[-1, 3])],
        vec![
            w,
            three,
            tensor("zero", &Tensor::from_vec(&[1], vec![0i64]).unwrap()),
            tensor("one", &Tensor::from_vec(&[1], vec![1i64]).unwrap()),
        ],
        vec![value("y", DType::F32, &[-1, 3])],
    );
    let path = dir.join("model.onnx");
    std::fs::write(&path, m.write_to_bytes().unwrap()).unwrap();
    let set = dir.join("test_data_set_0");
    std::fs::create_dir_all(&set).unwrap();
    let x = [1.0f32, 1.0, 1.0, 2.0, 0.0, -1.0];
    let y: Vec<f32> = x.iter().enumerate().map(|(i, v)| v * wv[i % 3]).collect();
    for (file, name, t) in [
        ("input_0.pb", "x", f32s(&[2, 3], &x)),
        ("output_0.pb", "y", f32s(&[2, 3], &y)),
    ] {
        std::fs::write(set.join(file), tensor(name, &t).write_to_bytes().unwrap()).unwrap();
    }
    path
}

#[test]
fn a_model_with_external_weights_and_a_symbolic_batch_imports_by_its_bare_name() {
    let tmp = tempfile::tempdir().unwrap();
    external_symbolic(tmp.path(), "model.onnx.data");
    // From the model's own directory: the data set beside a bare file name
    // is found, the weights are read from model.onnx.data, and Shape of the
    // symbolic input folds on the data set's batch of 2.
    let o = vigil_in(tmp.path(), &["import", "model.onnx", "--out", "case"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("case/graph.json")).unwrap()).unwrap();
    assert_eq!(graph["inputs"][0]["shape"], serde_json::json!([2, 3]), "{graph}");
    // Shape, Slice and Concat folded: the reshape's shape is an attr.
    let ops: Vec<&str> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["mul", "reshape"], "{graph}");
    let o = vigil_in(tmp.path(), &["run", "case", "--mode", "validate"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    // --shape specializes random inputs; a shape that does not fit is one line.
    let o = vigil_in(
        tmp.path(),
        &[
            "import",
            "model.onnx",
            "--out",
            "r",
            "--random-inputs",
            "3",
            "--shape",
            "x=4,3",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let x = Tensor::read_npy(tmp.path().join("r/inputs/x.npy")).unwrap();
    assert_eq!(x.shape(), &[4, 3]);
    for bad in ["x=4,2", "nope=1,3", "x=4"] {
        let o = vigil_in(
            tmp.path(),
            &["import", "model.onnx", "--out", "b", "--shape", bad],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
}

#[test]
fn external_data_outside_the_model_directory_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let inner = tmp.path().join("m");
    std::fs::create_dir(&inner).unwrap();
    external_symbolic(&inner, "../model.onnx.data");
    std::fs::copy(inner.join("model.onnx.data"), tmp.path().join("model.onnx.data")).unwrap();
    let model = inner.join("model.onnx");
    let out = tmp.path().join("case");
    let o = vigil(&["import", model.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("model.onnx") && e.contains("tensor 'w'") && e.contains("../model.onnx.data"),
        "{e}"
    );
}

#[test]
fn every_case_command_takes_an_onnx_model() {
    let tmp = tempfile::tempdir().unwrap();
    let model = external_symbolic(tmp.path(), "model.onnx.data");
    let m = model.to_str().unwrap();
    let d = tmp.path().to_str().unwrap();
    let out = tmp.path().join("exec_out");
    let runs: Vec<Vec<&str>> = vec![
        vec!["run", m, "--mode", "validate"],
        vec!["run", d, "--mode", "debug"],
        vec!["debug", m],
        vec!["exec", m, "--out", out.to_str().unwrap()],
        vec!["explain", d],
    ];
    for args in runs {
        let o = vigil(&args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(&o)
        );
    }
    assert!(out.join("y.npy").is_file());
    // From the model's directory, by its bare name.
    let o = vigil_in(tmp.path(), &["run", "model.onnx", "--mode", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A missing model says so, in one line.
    for args in [
        &["run", "missing.onnx"][..],
        &["debug", "missing.onnx"],
        &["exec", "missing.onnx", "--out", "x"],
        &["explain", "missing.onnx"],
        &["import", "missing.onnx", "--out", "x"],
    ] {
        let cmd = args[0];
        let o = vigil_in(tmp.path(), args);
        let e = stderr(&o);
        assert_ne!(o.status.code(), Some(0), "{cmd}");
        assert!(
            e.contains("missing.onnx") && e.to_lowercase().contains("no such"),
            "{cmd}: {e}"
        );
    }
}
