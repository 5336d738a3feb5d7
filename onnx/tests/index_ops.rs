//! IsNaN/IsInf, Range, CumSum, Trilu, GatherElements, ScatterElements,
//! ReduceProd, Hardmax and LayerNormalization on small models built in
//! Rust: what they import to, the values they give, and their refusals.

use std::collections::HashMap;

use vigil_engine::graph::Graph;
use vigil_engine::{assert_cause, DType, Executor, OpRegistry, Tensor};
use vigil_onnx::{import, ImportError, Options};
use vigil_testkit::onnx::*;

fn i64s(shape: &[usize], v: &[i64]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

fn ops_of(m: &onnx_protobuf::ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

/// Like `vigil_testkit::onnx::run`, but returns the executor's error.
fn try_run(
    m: &onnx_protobuf::ModelProto,
    feeds: &[(&str, Tensor)],
) -> vigil_engine::Result<Vec<(String, Tensor)>> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    vigil_onnx::write_case(&imported, &vigil_onnx::InputSource::Random(0), dir.path()).unwrap();
    let g = Graph::load(dir.path().join("graph.json"), &OpRegistry::builtin()).unwrap();
    let feeds: HashMap<String, Tensor> = feeds.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    Ok(Executor::new(&g)?.run(&feeds)?.outputs)
}

#[test]
fn range_folds_constant_bounds_and_runs_fed_ones() {
    let bounds = |start: i64| {
        vec![
            tensor("s", &Tensor::from_vec(&[], vec![start]).unwrap()),
            tensor("l", &Tensor::from_vec(&[], vec![0i64]).unwrap()),
            tensor("d", &Tensor::from_vec(&[], vec![-3i64]).unwrap()),
        ]
    };
    let m = model(
        11,
        vec![
            node("Range", "r", &["s", "l", "d"], &["seq"], vec![]),
            node("Add", "a", &["seq", "x"], &["y"], vec![]),
        ],
        vec![value("x", DType::I64, &[1])],
        bounds(10),
        vec![value("y", DType::I64, &[4])],
    );
    // The range is a constant: only the add is left.
    assert_eq!(ops_of(&m), ["add"]);
    assert_eq!(vals(&run(&m, &[("x", i64s(&[1], &[1]))])[0].1), [11., 8., 5., 2.]);

    let m = model(
        11,
        vec![node("Range", "r", &["s", "l", "d"], &["y"], vec![])],
        vec![
            value("s", DType::F32, &[]),
            value("l", DType::F32, &[]),
            value("d", DType::F32, &[]),
        ],
        vec![],
        vec![value("y", DType::F32, &[-1])],
    );
    assert_eq!(ops_of(&m), ["range"]);
    let s = |v: f32| Tensor::from_vec(&[], vec![v]).unwrap();
    let out = run(&m, &[("s", s(1.0)), ("l", s(2.0)), ("d", s(0.5))]);
    assert_eq!(vals(&out[0].1), [1.0, 1.5]);
    let e = try_run(&m, &[("s", s(1.0)), ("l", s(2.0)), ("d", s(0.0))]).unwrap_err();
    assert_cause!(e, Op, "'r'", "delta");
}

#[test]
fn cumsum_and_trilu_need_their_axis_and_k_at_import_time() {
    let m = model(
        14,
        vec![node(
            "CumSum",
            "cs",
            &["x", "axis"],
            &["y"],
            vec![("reverse", A::I(1))],
        )],
        vec![value("x", DType::F32, &[2, 2]), value("axis", DType::I32, &[])],
        vec![],
        vec![value("y", DType::F32, &[2, 2])],
    );
    let e = import(&round_trip(&m), &Options::default()).unwrap_err();
    assert!(matches!(e, ImportError::Unsupported { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "node 'cs' (CumSum): input 'axis' must be known at import time (a constant or foldable)"
    );
    let mut m = m;
    if let Some(g) = m.graph.as_mut() {
        g.input.truncate(1);
        g.initializer
            .push(tensor("axis", &Tensor::from_vec(&[], vec![-1i32]).unwrap()));
    }
    let out = run(&m, &[("x", f32s(&[2, 2], &[1., 2., 3., 4.]))]);
    assert_eq!(vals(&out[0].1), [3., 2., 7., 4.]);

    let k = tensor("k", &Tensor::from_vec(&[], vec![-1i64]).unwrap());
    let m = model(
        14,
        vec![node("Trilu", "t", &["x", "k"], &["y"], vec![("upper", A::I(0))])],
        vec![value("x", DType::I64, &[3, 2])],
        vec![k],
        vec![value("y", DType::I64, &[3, 2])],
    );
    let out = run(&m, &[("x", i64s(&[3, 2], &[1, 2, 3, 4, 5, 6]))]);
    assert_eq!(vals(&out[0].1), [0., 0., 3., 0., 5., 6.]);
}

#[test]
fn gather_and_scatter_elements_resolve_indices_at_run_time() {
    let m = model(
        13,
        vec![
            node(
                "GatherElements",
                "ge",
                &["x", "i"],
                &["g"],
                vec![("axis", A::I(1))],
            ),
            node(
                "ScatterElements",
                "se",
                &["x", "i", "g"],
                &["y"],
                vec![("axis", A::I(-1)), ("reduction", A::S("add"))],
            ),
        ],
        vec![value("x", DType::F32, &[2, 2]), value("i", DType::I32, &[2, 1])],
        vec![],
        vec![value("g", DType::F32, &[2, 1]), value("y", DType::F32, &[2, 2])],
    );
    let x = f32s(&[2, 2], &[1., 2., 3., 4.]);
    let idx = |a: i32, b: i32| Tensor::from_vec(&[2, 1], vec![a, b]).unwrap();
    let out = try_run(&m, &[("x", x.clone()), ("i", idx(-1, 0))]).unwrap();
    assert_eq!(vals(&out[0].1), [2., 3.]);
    assert_eq!(vals(&out[1].1), [1., 4., 6., 4.]);
    let e = try_run(&m, &[("x", x), ("i", idx(0, 2))]).unwrap_err();
    assert!(
        matches!(&e, vigil_engine::Error::Node { node, .. } if node == "ge.gather_elements"),
        "{e:?}"
    );
    assert_cause!(e, Index, "index 2", "indices[1, 0]", "axis 1");
    assert!(!e.to_string().contains('\n'), "{e}");
}

#[test]
fn reduce_prod_takes_axes_from_the_attr_or_the_input() {
    let x = || f32s(&[2, 2], &[1., 2., 3., 4.]);
    let attr = model(
        13,
        vec![node(
            "ReduceProd",
            "p",
            &["x"],
            &["y"],
            vec![("axes", A::Ints(vec![-1]))],
        )],
        vec![value("x", DType::F32, &[2, 2])],
        vec![],
        vec![value("y", DType::F32, &[2, 1])],
    );
    assert_eq!(vals(&run(&attr, &[("x", x())])[0].1), [2., 12.]);
    let axes = tensor("axes", &Tensor::from_i64s(&[0]));
    let input = model(
        18,
        vec![node(
            "ReduceProd",
            "p",
            &["x", "axes"],
            &["y"],
            vec![("keepdims", A::I(0))],
        )],
        vec![value("x", DType::F32, &[2, 2])],
        vec![axes],
        vec![value("y", DType::F32, &[2])],
    );
    assert_eq!(vals(&run(&input, &[("x", x())])[0].1), [3., 8.]);
    let noop = model(
        18,
        vec![node(
            "ReduceProd",
            "p",
            &["x"],
            &["y"],
            vec![("noop_with_empty_axes", A::I(1))],
        )],
        vec![value("x", DType::F32, &[2, 2])],
        vec![],
        vec![value("y", DType::F32, &[2, 2])],
    );
    assert_eq!(vals(&run(&noop, &[("x", x())])[0].1), [1., 2., 3., 4.]);
}

#[test]
fn hardmax_follows_softmax_opset_rules() {
    // [2, 2, 2] along axis 1: before opset 13 each batch is one lane of 4.
    let m = |opset| {
        model(
            opset,
            vec![node("Hardmax", "h", &["x"], &["y"], vec![("axis", A::I(1))])],
            vec![value("x", DType::F32, &[2, 2, 2])],
            vec![],
            vec![value("y", DType::F32, &[2, 2, 2])],
        )
    };
    let x = f32s(&[2, 2, 2], &[1., 5., 3., 2., 9., 0., 4., 9.]);
    let y11 = run(&m(11), &[("x", x.clone())]);
    assert_eq!(vals(&y11[0].1), [0., 1., 0., 0., 1., 0., 0., 0.]);
    let y13 = run(&m(13), &[("x", x)]);
    assert_eq!(vals(&y13[0].1), [0., 1., 1., 0., 1., 0., 0., 1.]);
    assert_eq!(ops_of(&m(11)), ["reshape", "hardmax", "reshape"]);
}

#[test]
fn layer_normalization_binds_mean_and_inv_std_dev() {
    let m = |dtype, stash: i64| {
        model(
            17,
            vec![node(
                "LayerNormalization",
                "ln",
                &["x", "w"],
                &["y", "mean", "inv"],
                vec![("epsilon", A::F(0.0)), ("stash_type", A::I(stash))],
            )],
            vec![value("x", dtype, &[2, 2]), value("w", dtype, &[2])],
            vec![],
            vec![
                value("y", dtype, &[2, 2]),
                value("mean", DType::F32, &[2, 1]),
                value("inv", DType::F32, &[2, 1]),
            ],
        )
    };
    let out = run(
        &m(DType::F32, 1),
        &[
            ("x", f32s(&[2, 2], &[1., 3., 2., 6.])),
            ("w", f32s(&[2], &[1., 2.])),
        ],
    );
    assert_eq!(vals(&out[0].1), [-1., 2., -1., 2.]);
    assert_eq!(vals(&out[1].1), [2., 4.]);
    assert_eq!(vals(&out[2].1), [1., 0.5]);
    // f64 with the default stash type: the statistics are cast to f32.
    let x = Tensor::from_vec(&[2, 2], vec![1.0f64, 3., 2., 6.]).unwrap();
    let w = Tensor::from_vec(&[2], vec![1.0f64, 1.]).unwrap();
    let out = run(&m(DType::F64, 1), &[("x", x), ("w", w)]);
    assert_eq!(
        out.iter().map(|(_, t)| t.dtype()).collect::<Vec<_>>(),
        [DType::F64, DType::F32, DType::F32]
    );
    assert_eq!(vals(&out[2].1), [1., 0.5]);
    assert_eq!(ops_of(&m(DType::F64, 1)), ["layer_norm", "cast", "cast"]);
}

#[test]
fn rms_normalization_scales_by_the_root_mean_square() {
    let m = |stash: i64| {
        model(
            23,
            vec![node(
                "RMSNormalization",
                "rms",
                &["x", "w"],
                &["y"],
                vec![
                    ("epsilon", A::F(0.0)),
                    ("axis", A::I(1)),
                    ("stash_type", A::I(stash)),
                ],
            )],
            vec![value("x", DType::F32, &[2, 2]), value("w", DType::F32, &[2])],
            vec![],
            vec![value("y", DType::F32, &[2, 2])],
        )
    };
    // Rows [3, 4] and [1, -1]: mean squares 12.5 and 1.
    let out = run(
        &m(1),
        &[
            ("x", f32s(&[2, 2], &[3., 4., 1., -1.])),
            ("w", f32s(&[2], &[1., 2.])),
        ],
    );
    let r = 12.5f64.sqrt();
    let want = [3. / r, 8. / r, 1., -2.];
    let got = vals(&out[0].1);
    assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6), "{got:?}");
    assert_eq!(ops_of(&m(1)), ["rms_norm"]);
    let e = import(&round_trip(&m(99)), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::UnsupportedDtype { what, dtype }
            if what.contains("node 'rms'") && what.contains("'stash_type'") && dtype.contains("99")),
        "{e:?}"
    );
}

#[test]
fn top_k_takes_k_from_the_attr_or_input_and_binds_both_outputs() {
    let x = f32s(&[2, 3], &[1., 9., 4., 7., 0., 7.]);
    // Opset 11: K as an initializer, the smallest two of each row.
    let m11 = model(
        11,
        vec![node(
            "TopK",
            "tk",
            &["x", "k"],
            &["v", "i"],
            vec![("largest", A::I(0))],
        )],
        vec![value("x", DType::F32, &[2, 3])],
        vec![tensor("k", &i64s(&[1], &[2]))],
        vec![value("v", DType::F32, &[2, 2]), value("i", DType::I64, &[2, 2])],
    );
    let out = run(&m11, &[("x", x.clone())]);
    assert_eq!(vals(&out[0].1), [1., 4., 0., 7.]);
    assert_eq!(vals(&out[1].1), [0., 2., 1., 0.]);
    assert_eq!(ops_of(&m11), ["top_k"]);
    // Opset 1: k as an attr, along axis 0, the largest.
    let m1 = model(
        1,
        vec![node(
            "TopK",
            "tk",
            &["x"],
            &["v", "i"],
            vec![("k", A::I(1)), ("axis", A::I(0))],
        )],
        vec![value("x", DType::F32, &[2, 3])],
        vec![],
        vec![value("v", DType::F32, &[1, 3]), value("i", DType::I64, &[1, 3])],
    );
    let out = run(&m1, &[("x", x)]);
    assert_eq!(vals(&out[0].1), [7., 9., 7.]);
    assert_eq!(vals(&out[1].1), [1., 0., 1.]);
}

#[test]
fn isnan_and_isinf_give_bool() {
    let m = model(
        20,
        vec![
            node("IsNaN", "n", &["x"], &["a"], vec![]),
            node("IsInf", "i", &["x"], &["b"], vec![("detect_negative", A::I(0))]),
        ],
        vec![value("x", DType::F32, &[3])],
        vec![],
        vec![value("a", DType::Bool, &[3]), value("b", DType::Bool, &[3])],
    );
    let x = f32s(&[3], &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
    let out = run(&m, &[("x", x)]);
    assert_eq!(vals(&out[0].1), [1., 0., 0.]);
    assert_eq!(vals(&out[1].1), [0., 1., 0.]);
}
