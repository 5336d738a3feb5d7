//! `vigil opcheck`: ops alone on random samples under every DebugMode check.

mod common;

use common::vigil;

#[test]
fn opcheck_passes_correct_ops_and_names_the_kind_of_a_broken_one() {
    let o = vigil(&["opcheck", "exp", "add", "fixed_scratch", "--cases", "6"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("3 of 3 ops pass"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let o = vigil(&[
        "opcheck",
        "broken_scratch",
        "--cases",
        "6",
        "--seed",
        "3",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("scratch_write at op (broken_scratch)"), "{out}");
    let case = dir.path().join("broken_scratch");
    assert!(case.join("graph.json").is_file(), "{out}");
    // The written case is one `vigil debug` takes and still finds.
    let o = vigil(&["debug", case.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("scratch_write"));
}

#[test]
fn opcheck_of_an_unknown_op_says_so() {
    let o = vigil(&["opcheck", "no_such_op"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no_such_op: not checked: unknown op"), "{out}");
    assert_eq!(o.status.code(), Some(1), "{out}");
}

/// A case input written as a buffer and a layout file is read back as that
/// view: negative strides and an offset give the view's elements, and a
/// layout that does not fit its buffer is bad input naming the file.
#[test]
fn a_case_input_with_a_layout_file_is_read_as_that_view() {
    use vigil_engine::{DType, GraphBuilder, Tensor};
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("case");
    std::fs::create_dir_all(case.join("inputs")).unwrap();
    let b = GraphBuilder::new("g");
    let x = b.input("x0", DType::F32, &[2, 2]);
    let g = b.build(&[&x.neg().unwrap()]).unwrap();
    std::fs::write(case.join("graph.json"), g.to_json().unwrap()).unwrap();
    let buffer = Tensor::from_vec(&[9], (0..9).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    buffer.write_npy(case.join("inputs/x0.npy")).unwrap();
    let layout = case.join("inputs/x0.layout.json");
    std::fs::write(&layout, r#"{"shape": [2, 2], "strides": [-3, 2], "offset": 6}"#).unwrap();
    let out = dir.path().join("out");
    let o = vigil(&["exec", case.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let outputs: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "npy"))
        .collect();
    let y = Tensor::read_npy(&outputs[0]).unwrap();
    // Rows start at 6 and 3, two apart.
    assert_eq!(y.to_f64_vec().unwrap(), vec![-6.0, -8.0, -3.0, -5.0]);

    std::fs::write(&layout, r#"{"shape": [2, 2], "strides": [3, 2], "offset": 6}"#).unwrap();
    let o = vigil(&["exec", case.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn opcheck_generates_attributes_for_ops_that_need_them() {
    let o = vigil(&["opcheck", "reshape", "max_pool", "pad", "--cases", "4"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("3 of 3 ops pass, 0 fail, 0 not checked"), "{out}");
}
