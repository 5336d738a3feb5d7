//! `vigil import` end to end on small ONNX models written by the test.

mod common;
#[path = "../onnx/tests/support/mod.rs"]
mod onnx_support;

use std::path::Path;

use common::{stderr, vigil};
use onnx_protobuf::Message;
use onnx_support::{f32s, model, node, tensor, value};
use vigil::engine::{DType, Tensor};

/// `Reshape(x, shape)` with `shape` a graph input, and a data set feeding
/// `shape = [3, 2]`.
fn reshape_fed_shape(dir: &Path) -> std::path::PathBuf {
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
        ("output_0.pb", "y", f32s(&[3, 2], &x)),
    ] {
        std::fs::write(set.join(file), tensor(name, &t).write_to_bytes().unwrap()).unwrap();
    }
    path
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
