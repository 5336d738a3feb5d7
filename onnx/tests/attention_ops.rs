//! Attention, RotaryEmbedding, TensorScatter and SwiGLU on small models
//! built in Rust: what they import to, the values they give, and their
//! refusals.

use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, ImportError, Options};
use vigil_testkit::onnx::*;

fn ops_of(m: &onnx_protobuf::ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

fn out<'a>(outs: &'a [(String, Tensor)], name: &str) -> &'a Tensor {
    &outs.iter().find(|(n, _)| n == name).unwrap().1
}

/// 3-D inputs with two query heads over one key/value head, causal: the
/// heads are split by views, and with equal scores row 0 is value 0 and
/// row 1 the mean of both values, in each head.
#[test]
fn three_d_grouped_causal_attention_splits_and_merges_heads() {
    let m = model(
        23,
        vec![node(
            "Attention",
            "att",
            &["q", "k", "v"],
            &["y"],
            vec![
                ("q_num_heads", A::I(2)),
                ("kv_num_heads", A::I(1)),
                ("is_causal", A::I(1)),
            ],
        )],
        vec![
            value("q", DType::F32, &[1, 2, 2]),
            value("k", DType::F32, &[1, 2, 1]),
            value("v", DType::F32, &[1, 2, 1]),
        ],
        vec![],
        vec![value("y", DType::F32, &[1, 2, 2])],
    );
    let ops = ops_of(&m);
    assert!(
        ops.contains(&"attention".to_string()) && ops.contains(&"transpose".to_string()),
        "{ops:?}"
    );
    let outs = run(
        &m,
        &[
            ("q", f32s(&[1, 2, 2], &[0.0; 4])),
            ("k", f32s(&[1, 2, 1], &[0.0; 2])),
            ("v", f32s(&[1, 2, 1], &[2.0, 4.0])),
        ],
    );
    assert_eq!(vals(out(&outs, "y")), [2.0, 2.0, 3.0, 3.0]);
    // Without the head counts a 3-D Attention is refused, naming the attr.
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().node[0].attribute.clear();
    let e = import(&round_trip(&bad), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::BadAttr { node, attr, .. } if node == "att" && attr == "q_num_heads"),
        "{e}"
    );
}

/// A past of one key: present_key/present_value are the concatenated
/// cache, and qk_matmul_output (mode 3) the probabilities.
#[test]
fn the_cache_outputs_and_the_scores_are_bound_when_named() {
    let m = model(
        23,
        vec![node(
            "Attention",
            "att",
            &["q", "k", "v", "", "pk", "pv"],
            &["y", "present_key", "present_value", "qk"],
            vec![("qk_matmul_output_mode", A::I(3))],
        )],
        vec![
            value("q", DType::F32, &[1, 1, 1, 1]),
            value("k", DType::F32, &[1, 1, 1, 1]),
            value("v", DType::F32, &[1, 1, 1, 1]),
            value("pk", DType::F32, &[1, 1, 1, 1]),
            value("pv", DType::F32, &[1, 1, 1, 1]),
        ],
        vec![],
        vec![
            value("y", DType::F32, &[1, 1, 1, 1]),
            value("present_key", DType::F32, &[1, 1, 2, 1]),
            value("present_value", DType::F32, &[1, 1, 2, 1]),
            value("qk", DType::F32, &[1, 1, 1, 2]),
        ],
    );
    assert_eq!(ops_of(&m), ["attention"]);
    let one = |v: f32| f32s(&[1, 1, 1, 1], &[v]);
    let outs = run(
        &m,
        &[
            ("q", one(0.0)),
            ("k", one(1.0)),
            ("v", one(10.0)),
            ("pk", one(2.0)),
            ("pv", one(20.0)),
        ],
    );
    assert_eq!(vals(out(&outs, "present_key")), [2.0, 1.0]);
    assert_eq!(vals(out(&outs, "present_value")), [20.0, 10.0]);
    assert_eq!(vals(out(&outs, "qk")), [0.5, 0.5]);
    assert_eq!(vals(out(&outs, "y")), [15.0]);
    // past_key without past_value is refused.
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().node[0].input[5] = String::new();
    let e = import(&round_trip(&bad), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::Unsupported { node, .. } if node == "att"),
        "{e}"
    );
}

#[test]
fn rotary_embedding_rotates_by_the_cached_angles() {
    let m = model(
        23,
        vec![node(
            "RotaryEmbedding",
            "rope",
            &["x", "cos", "sin", "pos"],
            &["y"],
            vec![("interleaved", A::I(1))],
        )],
        vec![
            value("x", DType::F32, &[1, 1, 1, 2]),
            value("pos", DType::I64, &[1, 1]),
        ],
        vec![
            tensor("cos", &f32s(&[2, 1], &[1.0, 0.0])),
            tensor("sin", &f32s(&[2, 1], &[0.0, 1.0])),
        ],
        vec![value("y", DType::F32, &[1, 1, 1, 2])],
    );
    assert_eq!(ops_of(&m), ["rotary_embedding"]);
    let x = f32s(&[1, 1, 1, 2], &[1.0, 2.0]);
    let pos = |p: i64| Tensor::from_vec(&[1, 1], vec![p]).unwrap();
    assert_eq!(
        vals(&run(&m, &[("x", x.clone()), ("pos", pos(1))])[0].1),
        [-2.0, 1.0]
    );
    assert_eq!(vals(&run(&m, &[("x", x), ("pos", pos(0))])[0].1), [1.0, 2.0]);
}

#[test]
fn tensor_scatter_writes_the_cache_and_refuses_unknown_modes() {
    let mk = |mode: &'static str| {
        model(
            24,
            vec![node(
                "TensorScatter",
                "ts",
                &["cache", "u", "w"],
                &["y"],
                vec![("mode", A::S(mode))],
            )],
            vec![
                value("cache", DType::F32, &[1, 3, 1]),
                value("u", DType::F32, &[1, 2, 1]),
                value("w", DType::I64, &[1]),
            ],
            vec![],
            vec![value("y", DType::F32, &[1, 3, 1])],
        )
    };
    assert_eq!(ops_of(&mk("circular")), ["tensor_scatter"]);
    let outs = run(
        &mk("circular"),
        &[
            ("cache", f32s(&[1, 3, 1], &[0.0; 3])),
            ("u", f32s(&[1, 2, 1], &[1.0, 2.0])),
            ("w", Tensor::from_vec(&[1], vec![2i64]).unwrap()),
        ],
    );
    assert_eq!(vals(&outs[0].1), [2.0, 0.0, 1.0]);
    let e = import(&round_trip(&mk("ring")), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::BadAttr { attr, .. } if attr == "mode"),
        "{e}"
    );
}

#[test]
fn swiglu_is_the_swish_gate_times_b() {
    let m = model(
        28,
        vec![node(
            "SwiGLU",
            "sw",
            &["a", "b"],
            &["y"],
            vec![("alpha", A::F(2.0))],
        )],
        vec![value("a", DType::F32, &[2]), value("b", DType::F32, &[2])],
        vec![],
        vec![value("y", DType::F32, &[2])],
    );
    assert_eq!(ops_of(&m), ["mul", "sigmoid", "mul", "mul"]);
    let outs = run(
        &m,
        &[("a", f32s(&[2], &[1.0, -1.0])), ("b", f32s(&[2], &[3.0, 1.0]))],
    );
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    let want = [1.0 * sig(2.0) * 3.0, -sig(-2.0)];
    assert!(close(&vals(&outs[0].1), &want), "{:?}", vals(&outs[0].1));
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().input[1] = value("b", DType::F32, &[3]);
    let e = import(&round_trip(&bad), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::Unsupported { node, .. } if node == "sw"),
        "{e}"
    );
}
