//! LinearAttention, CausalConvWithState, FlexAttention, DeformConv,
//! RoiAlign, MaxUnpool and MelWeightMatrix on small models built in Rust:
//! what they import to, the values they give, and their refusals.

use onnx_protobuf::OperatorSetIdProto;
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

fn refusal(m: &onnx_protobuf::ModelProto) -> ImportError {
    import(&round_trip(m), &Options::default()).unwrap_err()
}

/// The linear rule, one head, two tokens: o_1 = q_1·k_1 v_1 and o_2 =
/// q_2·(k_1 v_1 + k_2 v_2), the state Σ k ⊗ v; scale 1.
#[test]
fn linear_attention_runs_the_recurrence_and_binds_the_state() {
    let m = model(
        27,
        vec![node(
            "LinearAttention",
            "la",
            &["q", "k", "v"],
            &["y", "state"],
            vec![
                ("q_num_heads", A::I(1)),
                ("kv_num_heads", A::I(1)),
                ("update_rule", A::S("linear")),
                ("scale", A::F(1.0)),
            ],
        )],
        vec![
            value("q", DType::F32, &[1, 2, 1]),
            value("k", DType::F32, &[1, 2, 1]),
            value("v", DType::F32, &[1, 2, 1]),
        ],
        vec![],
        vec![
            value("y", DType::F32, &[1, 2, 1]),
            value("state", DType::F32, &[1, 1, 1, 1]),
        ],
    );
    assert_eq!(ops_of(&m), ["linear_attention"]);
    let outs = run(
        &m,
        &[
            ("q", f32s(&[1, 2, 1], &[2.0, 3.0])),
            ("k", f32s(&[1, 2, 1], &[1.0, 2.0])),
            ("v", f32s(&[1, 2, 1], &[5.0, 7.0])),
        ],
    );
    // state after token 1: 5; after token 2: 5 + 14 = 19.
    assert_eq!(vals(out(&outs, "y")), [10.0, 57.0]);
    assert_eq!(vals(out(&outs, "state")), [19.0]);
    // The default rule (gated_delta) needs decay and beta: refused, naming the attr.
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().node[0]
        .attribute
        .retain(|a| a.name != "update_rule");
    let e = refusal(&bad);
    assert!(
        matches!(&e, ImportError::BadAttr { node, attr, .. } if node == "la" && attr == "update_rule"),
        "{e}"
    );
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().node[0].attribute[2].s = b"mamba".to_vec();
    assert!(matches!(refusal(&bad), ImportError::BadAttr { attr, .. } if attr == "update_rule"));
}

/// k = 2 with a past: y_t = w0·p_{t−1} + w1·x_t; the present state is
/// the last input.
#[test]
fn causal_conv_with_state_carries_the_last_positions() {
    let m = model(
        27,
        vec![node(
            "CausalConvWithState",
            "cc",
            &["x", "w", "", "past"],
            &["y", "present"],
            vec![],
        )],
        vec![
            value("x", DType::F32, &[1, 1, 2]),
            value("past", DType::F32, &[1, 1, 1]),
        ],
        vec![tensor("w", &f32s(&[1, 1, 2], &[10.0, 1.0]))],
        vec![
            value("y", DType::F32, &[1, 1, 2]),
            value("present", DType::F32, &[1, 1, 1]),
        ],
    );
    assert_eq!(ops_of(&m), ["causal_conv_with_state"]);
    let outs = run(
        &m,
        &[
            ("x", f32s(&[1, 1, 2], &[2.0, 3.0])),
            ("past", f32s(&[1, 1, 1], &[4.0])),
        ],
    );
    assert_eq!(vals(out(&outs, "y")), [42.0, 23.0]);
    assert_eq!(vals(out(&outs, "present")), [3.0]);
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().node[0].attribute.push({
        let mut a = onnx_protobuf::AttributeProto::new();
        a.name = "activation".into();
        a.s = b"gelu".to_vec();
        a.type_ = onnx_protobuf::attribute_proto::AttributeType::STRING.into();
        a
    });
    assert!(
        matches!(refusal(&bad), ImportError::BadAttr { node, attr, .. } if node == "cc" && attr == "activation")
    );
}

/// A FlexAttention model: default opset 26 plus ai.onnx.preview 1.
fn flex_model(attrs: Vec<(&str, A)>, hq: i64, hk: i64) -> onnx_protobuf::ModelProto {
    let mut n = node("FlexAttention", "fa", &["q", "k", "v"], &["y"], attrs);
    n.domain = "ai.onnx.preview".into();
    let mut m = model(
        26,
        vec![n],
        vec![
            value("q", DType::F32, &[1, hq, 1, 2]),
            value("k", DType::F32, &[1, hk, 2, 2]),
            value("v", DType::F32, &[1, hk, 2, 1]),
        ],
        vec![],
        vec![value("y", DType::F32, &[1, hq, 1, 1])],
    );
    let mut o = OperatorSetIdProto::new();
    o.domain = "ai.onnx.preview".into();
    o.version = 1;
    m.opset_import.push(o);
    m
}

/// Equal scores weigh both values alike; a score_mod that adds ln 3 to
/// every score changes nothing, one that masks key 1 (Where on a constant
/// mask) leaves value 0; a prob_mod halving the probabilities halves y.
#[test]
fn flex_attention_inlines_its_score_and_prob_mods() {
    let feeds = |hq: usize, hk: usize| {
        vec![
            ("q", f32s(&[1, hq, 1, 2], &vec![0.0; hq * 2])),
            ("k", f32s(&[1, hk, 2, 2], &vec![1.0; hk * 4])),
            (
                "v",
                f32s(
                    &[1, hk, 2, 1],
                    &(0..hk * 2).map(|i| 2.0 + 4.0 * i as f32).collect::<Vec<_>>(),
                ),
            ),
        ]
    };
    let m = flex_model(vec![], 1, 1);
    assert!(ops_of(&m).contains(&"softmax".to_string()));
    assert_eq!(vals(out(&run(&m, &feeds(1, 1)), "y")), [4.0]);
    // Two query heads over one key/value head: both read it.
    let m = flex_model(vec![], 2, 1);
    assert_eq!(vals(out(&run(&m, &feeds(2, 1)), "y")), [4.0, 4.0]);
    let s_in = || vec![value("s", DType::F32, &[1, 1, 1, 2])];
    let s_out = || vec![value("s_out", DType::F32, &[1, 1, 1, 2])];
    let mask_graph = graph(
        "mask",
        vec![node("Where", "w", &["keep", "s", "ninf"], &["s_out"], vec![])],
        s_in(),
        vec![
            tensor("keep", &Tensor::from_vec(&[2], vec![true, false]).unwrap()),
            tensor("ninf", &f32s(&[], &[f32::NEG_INFINITY])),
        ],
        s_out(),
    );
    let m = flex_model(vec![("score_mod", A::G(Box::new(mask_graph)))], 1, 1);
    assert_eq!(vals(out(&run(&m, &feeds(1, 1)), "y")), [2.0]);
    let half = graph(
        "half",
        vec![node("Mul", "h", &["p", "c"], &["p_out"], vec![])],
        vec![value("p", DType::F32, &[1, 1, 1, 2])],
        vec![tensor("c", &f32s(&[], &[0.5]))],
        vec![value("p_out", DType::F32, &[1, 1, 1, 2])],
    );
    let m = flex_model(vec![("prob_mod", A::G(Box::new(half)))], 1, 1);
    assert_eq!(vals(out(&run(&m, &feeds(1, 1)), "y")), [2.0]);
    // An unknown softmax_precision is refused, naming the attr.
    let m = flex_model(vec![("softmax_precision", A::I(7))], 1, 1);
    assert!(
        matches!(refusal(&m), ImportError::BadAttr { node, attr, .. } if node == "fa" && attr == "softmax_precision")
    );
    // Another op of the preview domain stays refused.
    let mut m = flex_model(vec![], 1, 1);
    m.graph.as_mut().unwrap().node[0].op_type = "FlexConv".into();
    assert!(matches!(refusal(&m), ImportError::UnsupportedOp { domain, .. } if domain == "ai.onnx.preview"));
}

/// MaxUnpool with and without output_shape; RoiAlign's opset-16 default
/// shifts by half a pixel and opset 10 does not; MelWeightMatrix's shape
/// comes from its inputs.
#[test]
fn max_unpool_roi_align_and_mel_weight_matrix_import() {
    let m = model(
        22,
        vec![node(
            "MaxUnpool",
            "mu",
            &["x", "i"],
            &["y"],
            vec![("kernel_shape", A::Ints(vec![2])), ("strides", A::Ints(vec![2]))],
        )],
        vec![
            value("x", DType::F32, &[1, 1, 2]),
            value("i", DType::I64, &[1, 1, 2]),
        ],
        vec![],
        vec![value("y", DType::F32, &[1, 1, 4])],
    );
    assert_eq!(ops_of(&m), ["max_unpool"]);
    let i = Tensor::from_vec(&[1, 1, 2], vec![1i64, 2]).unwrap();
    let outs = run(&m, &[("x", f32s(&[1, 1, 2], &[5.0, 6.0])), ("i", i)]);
    assert_eq!(vals(out(&outs, "y")), [0.0, 5.0, 6.0, 0.0]);
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().node[0].attribute.remove(0);
    assert!(matches!(refusal(&bad), ImportError::BadAttr { attr, .. } if attr == "kernel_shape"));

    // A 2×2 map linear in x: the one bin of roi (0, 0)–(2, 2) averages it.
    let roi = |opset: i64, attrs: Vec<(&str, A)>| {
        model(
            opset,
            vec![node("RoiAlign", "ra", &["x", "rois", "bi"], &["y"], attrs)],
            vec![value("x", DType::F32, &[1, 1, 2, 2])],
            vec![
                tensor("rois", &f32s(&[1, 4], &[0.0, 0.0, 2.0, 2.0])),
                tensor("bi", &Tensor::from_vec(&[1], vec![0i64]).unwrap()),
            ],
            vec![value("y", DType::F32, &[1, 1, 1, 1])],
        )
    };
    let x = || f32s(&[1, 1, 2, 2], &[0.0, 1.0, 0.0, 1.0]);
    let a = || vec![("sampling_ratio", A::I(1))];
    // opset 16: roi −0.5..1.5, sample at 0.5: 0.5. opset 10: 0..2, sample at 1 (clamped): 1.
    assert_eq!(vals(out(&run(&roi(16, a()), &[("x", x())]), "y")), [0.5]);
    assert_eq!(vals(out(&run(&roi(10, a()), &[("x", x())]), "y")), [1.0]);
    let e = refusal(&roi(
        16,
        vec![("coordinate_transformation_mode", A::S("align_corners"))],
    ));
    assert!(matches!(e, ImportError::BadAttr { attr, .. } if attr == "coordinate_transformation_mode"));

    let int = |n: &str, v: i64| tensor(n, &Tensor::from_vec(&[], vec![v]).unwrap());
    let m = model(
        17,
        vec![node(
            "MelWeightMatrix",
            "mel",
            &["m", "d", "r", "lo", "hi"],
            &["y"],
            vec![],
        )],
        vec![value("hi", DType::F32, &[])],
        vec![
            int("m", 3),
            int("d", 16),
            int("r", 8000),
            tensor("lo", &f32s(&[], &[0.0])),
        ],
        vec![value("y", DType::F32, &[9, 3])],
    );
    let outs = run(&m, &[("hi", f32s(&[], &[4000.0]))]);
    let y = out(&outs, "y");
    assert_eq!(y.shape(), [9, 3]);
    // Each band peaks at 1.
    let v = vals(y);
    for band in 0..3 {
        let peak = (0..9).map(|r| v[r * 3 + band]).fold(0.0, f64::max);
        assert_eq!(peak, 1.0);
    }
}

/// DeformConv with zero offsets is Conv; X of rank 3 is refused.
#[test]
fn deform_conv_with_zero_offsets_is_conv() {
    let m = model(
        19,
        vec![node(
            "DeformConv",
            "dc",
            &["x", "w", "off"],
            &["y"],
            vec![("pads", A::Ints(vec![0, 0, 0, 0]))],
        )],
        vec![value("x", DType::F32, &[1, 1, 2, 2])],
        vec![
            tensor("w", &f32s(&[1, 1, 1, 2], &[1.0, 10.0])),
            tensor("off", &f32s(&[1, 4, 2, 1], &[0.0; 8])),
        ],
        vec![value("y", DType::F32, &[1, 1, 2, 1])],
    );
    assert_eq!(ops_of(&m), ["deform_conv"]);
    let outs = run(&m, &[("x", f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]))]);
    assert_eq!(vals(out(&outs, "y")), [21.0, 43.0]);
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().input[0] = value("x", DType::F32, &[1, 1, 4]);
    assert!(matches!(refusal(&bad), ImportError::Unsupported { node, .. } if node == "dc"));
}
