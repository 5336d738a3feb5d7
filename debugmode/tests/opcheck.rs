//! `opcheck`: an op alone on proptest samples of inputs and attributes
//! under every check.

use vigil_debugmode::{broken, opcheck, opcheck_with, Kind, OpcheckConfig};
use vigil_engine::ops::OpRegistry;
use vigil_engine::Tensor;

fn registry() -> OpRegistry {
    let mut r = vigil_listeners::broken::registry();
    broken::register(&mut r);
    r
}

fn cfg(cases: usize) -> OpcheckConfig {
    OpcheckConfig {
        cases,
        ..OpcheckConfig::default()
    }
}

#[test]
fn built_in_ops_pass_on_every_kind_of_sample() {
    let r = registry();
    for op in ["add", "mul", "exp", "neg", "relu", "sum", "transpose"] {
        let rep = opcheck_with(&r, op, &cfg(12)).unwrap();
        assert!(rep.passed(), "{op}: {:#?} on {:?}", rep.findings, rep.failing);
        assert!(rep.ran > 0, "{op}: every sample refused");
    }
    // exp has a gradient rule: some samples got the gradient check.
    let rep = opcheck_with(&r, "exp", &cfg(12)).unwrap();
    assert!(rep.gradient_checked > 0, "{rep:?}");
}

#[test]
fn ops_that_need_attributes_get_them() {
    let r = registry();
    for op in ["reshape", "cast", "max_pool", "pad", "einsum", "top_k", "full"] {
        let rep = opcheck_with(&r, op, &cfg(6)).unwrap();
        assert!(rep.passed(), "{op}: {:#?} on {:?}", rep.findings, rep.failing);
        assert!(rep.ran > rep.errors, "{op}: no sample ran: {rep:?}");
    }
}

#[test]
fn a_stride_ignoring_op_fails_shrunk_and_its_twin_passes() {
    let r = registry();
    let bad = opcheck_with(&r, "broken_memory_order", &cfg(12)).unwrap();
    assert!(
        bad.findings
            .iter()
            .any(|f| f.kind == Kind::LAYOUT_DEPENDENT && f.op == "broken_memory_order"),
        "{:#?} after {} samples",
        bad.findings,
        bad.ran
    );
    let s = bad.failing.unwrap();
    // Proptest shrank it: one input, 1-D, at most two elements.
    assert_eq!(s.inputs.len(), 1, "{s:?}");
    let shape = s.shape(0);
    assert_eq!(shape.len(), 1, "1-D only, shrunk: {s:?}");
    assert!(shape[0] <= 2, "shrunk to a small dimension: {s:?}");
    let good = opcheck_with(&r, "fixed_memory_order", &cfg(6)).unwrap();
    assert!(good.passed(), "{:#?}", good.findings);
}

#[test]
fn a_failing_sample_is_written_as_a_case_directory() {
    let dir = tempfile::tempdir().unwrap();
    let c = OpcheckConfig {
        out: Some(dir.path().to_path_buf()),
        ..cfg(6)
    };
    let rep = opcheck_with(&registry(), "broken_jitter", &c).unwrap();
    assert!(
        rep.findings.iter().any(|f| f.kind == Kind::NONDETERMINISTIC),
        "{:#?}",
        rep.findings
    );
    let case = rep.case_dir.unwrap();
    assert!(case.join("graph.json").is_file());
    assert!(case.join("inputs").join("x0.npy").is_file());
}

/// A view input is written as its whole buffer and its layout, which give
/// back the sample's tensor exactly, strides and offset included.
#[test]
fn a_view_input_is_written_with_its_layout() {
    let dir = tempfile::tempdir().unwrap();
    let base = Tensor::from_vec(&[9], (0..9).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let view = base
        .with_layout(vigil_engine::Layout::new(vec![2, 2], vec![-3, 2], 6))
        .unwrap();
    let b = vigil_engine::GraphBuilder::new("g");
    let x = b.input("x0", vigil_engine::DType::F32, &[2, 2]);
    let g = b.build(&[&x.neg().unwrap()]).unwrap();
    let feeds = std::collections::HashMap::from([("x0".to_string(), view.clone())]);
    vigil_debugmode::opcheck::case::write(dir.path(), &g, &feeds).unwrap();
    let layout: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs/x0.layout.json")).unwrap())
            .unwrap();
    assert_eq!(
        layout,
        serde_json::json!({"shape": [2, 2], "strides": [-3, 2], "offset": 6})
    );
    let buffer = Tensor::read_npy(dir.path().join("inputs/x0.npy")).unwrap();
    assert_eq!(buffer.shape(), &[9]);
    assert_eq!(buffer.to_f64_vec().unwrap(), base.to_f64_vec().unwrap());
    // A plain tensor is written as it is, with no layout file.
    let plain = std::collections::HashMap::from([("x0".to_string(), view.to_contiguous().unwrap())]);
    let dir2 = tempfile::tempdir().unwrap();
    vigil_debugmode::opcheck::case::write(dir2.path(), &g, &plain).unwrap();
    assert!(!dir2.path().join("inputs/x0.layout.json").exists());
}

#[test]
fn an_op_the_registry_lacks_is_not_checked() {
    let rep = opcheck(&registry(), "no_such_op").unwrap();
    assert!(!rep.passed());
    assert!(rep.not_checked.unwrap().contains("unknown op"));
}
