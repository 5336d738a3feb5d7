//! The translations added for the ONNX node tests, on small models built
//! in Rust: Split as views, Pad and Tile with their tensor inputs, a data
//! set's integer inputs standing in for constants, integer Div, CastLike,
//! Size, the composed reductions and ImageDecoder.

use onnx_protobuf::Message;
use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, import_with, ImportError, Options};
use vigil_testkit::onnx::*;

#[test]
fn split_gives_each_output_a_view_of_its_range() {
    // opset 18, no split input and num_outputs 2 over 5: parts of 3 and 2.
    let m = model(
        18,
        vec![node(
            "Split",
            "sp",
            &["x"],
            &["a", "b"],
            vec![("axis", A::I(1)), ("num_outputs", A::I(2))],
        )],
        vec![value("x", DType::F32, &[1, 5])],
        vec![],
        vec![value("a", DType::F32, &[1, 3]), value("b", DType::F32, &[1, 2])],
    );
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["create_view", "create_view"]);
    let out = run(&m, &[("x", f32s(&[1, 5], &[1., 2., 3., 4., 5.]))]);
    assert_eq!(vals(&out[0].1), [1., 2., 3.]);
    assert_eq!(vals(&out[1].1), [4., 5.]);
    // Before opset 18 an uneven equal split is refused.
    let mut m13 = m.clone();
    m13.opset_import[0].version = 13;
    let e = import(&round_trip(&m13), &Options::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "node 'sp' (Split): 5 elements do not split into 2 equal parts"
    );
}

#[test]
fn pad_and_tile_read_their_constant_inputs() {
    let pads = tensor("pads", &Tensor::from_i64s(&[1, 0, 0, 2]));
    let reps = tensor("reps", &Tensor::from_i64s(&[1, 2]));
    let m = model(
        13,
        vec![
            node("Pad", "p", &["x", "pads"], &["px"], vec![("mode", A::S("edge"))]),
            node("Tile", "t", &["px", "reps"], &["y"], vec![]),
        ],
        vec![value("x", DType::F32, &[1, 2])],
        vec![pads, reps],
        vec![value("y", DType::F32, &[2, 8])],
    );
    let out = run(&m, &[("x", f32s(&[1, 2], &[1., 2.]))]);
    let row = [1., 2., 2., 2., 1., 2., 2., 2.];
    assert_eq!(vals(&out[0].1), [row, row].concat());
}

/// A model whose ReduceSum axes are a graph input, as the node tests have.
fn reduce_with_axes_input() -> onnx_protobuf::ModelProto {
    model(
        13,
        vec![node(
            "ReduceSum",
            "rs",
            &["x", "axes"],
            &["y"],
            vec![("keepdims", A::I(0))],
        )],
        vec![value("x", DType::F32, &[2, 2]), value("axes", DType::I64, &[1])],
        vec![],
        vec![value("y", DType::F32, &[2])],
    )
}

#[test]
fn a_data_set_can_supply_axes_given_as_inputs() {
    let m = round_trip(&reduce_with_axes_input());
    let e = import(&m, &Options::default()).unwrap_err();
    assert!(matches!(e, ImportError::Unsupported { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("input 'axes' must be known at import time"),
        "{e}"
    );

    let dir = tempfile::tempdir().unwrap();
    let x = tensor("x", &f32s(&[2, 2], &[1., 2., 3., 4.]));
    let axes = tensor("axes", &Tensor::from_i64s(&[1]));
    std::fs::write(dir.path().join("input_0.pb"), x.write_to_bytes().unwrap()).unwrap();
    std::fs::write(dir.path().join("input_1.pb"), axes.write_to_bytes().unwrap()).unwrap();
    let imported = import_with(&m, &Options::default(), Some(dir.path())).unwrap();
    let sum = imported.file.nodes.iter().find(|n| n.op == "sum").unwrap();
    assert_eq!(sum.attrs.i64_list("axes").unwrap(), Some(vec![1]));
    // The node still reads x, and the axes input stays declared.
    assert_eq!(imported.inputs.len(), 2);
}

#[test]
fn integer_div_truncates_and_castlike_size_follow_their_inputs() {
    let m = model(
        13,
        vec![
            node("Div", "d", &["a", "b"], &["q"], vec![]),
            node("CastLike", "c", &["q", "like"], &["qf"], vec![]),
            node("Size", "s", &["a"], &["n"], vec![]),
        ],
        vec![
            value("a", DType::I32, &[3]),
            value("b", DType::I32, &[3]),
            value("like", DType::F64, &[1]),
        ],
        vec![],
        vec![value("qf", DType::F64, &[3]), value("n", DType::I64, &[])],
    );
    let a = Tensor::from_vec(&[3], vec![-7i32, 7, 9]).unwrap();
    let b = Tensor::from_vec(&[3], vec![2i32, -2, 3]).unwrap();
    let like = Tensor::from_vec(&[1], vec![0.0f64]).unwrap();
    let out = run(&m, &[("a", a), ("b", b), ("like", like)]);
    assert_eq!(out[0].1.dtype(), DType::F64);
    assert_eq!(vals(&out[0].1), [-3., -3., 3.]);
    assert_eq!(vals(&out[1].1), [3.]);
}

#[test]
fn composed_reductions_match_their_definitions() {
    let x = f32s(&[2, 2], &[1., -2., 3., -4.]);
    let expect = [
        ("ReduceL1", [3.0f64, 7.0]),
        ("ReduceL2", [5f64.sqrt(), 5.0]),
        ("ReduceSumSquare", [5.0, 25.0]),
        (
            "ReduceLogSumExp",
            [
                (1f64.exp() + (-2f64).exp()).ln(),
                (3f64.exp() + (-4f64).exp()).ln(),
            ],
        ),
    ];
    for (op, want) in expect {
        let m = model(
            13,
            vec![node(
                op,
                "r",
                &["x"],
                &["y"],
                vec![("axes", A::Ints(vec![1])), ("keepdims", A::I(0))],
            )],
            vec![value("x", DType::F32, &[2, 2])],
            vec![],
            vec![value("y", DType::F32, &[2])],
        );
        let got = vals(&run(&m, &[("x", x.clone())])[0].1);
        assert!(close(&got, &want), "{op}: {got:?} != {want:?}");
    }
}

#[test]
fn activations_and_prelu_import_with_their_attrs() {
    let slope = tensor("slope", &f32s(&[1], &[0.5]));
    let m = model(
        16,
        vec![
            node("Elu", "e", &["x"], &["ex"], vec![("alpha", A::F(2.0))]),
            node("PRelu", "p", &["ex", "slope"], &["y"], vec![]),
        ],
        vec![value("x", DType::F32, &[2])],
        vec![slope],
        vec![value("y", DType::F32, &[2])],
    );
    let out = run(&m, &[("x", f32s(&[2], &[-1.0, 3.0]))]);
    let want = 0.5 * 2.0 * ((-1f64).exp() - 1.0);
    assert!(close(&vals(&out[0].1), &[want, 3.0]), "{:?}", vals(&out[0].1));
}

#[test]
fn empty_max_is_the_identity_and_the_dropout_mask_is_all_true() {
    // Opset 13: ReduceMax takes its axes as an attr (from 18, as an input).
    let m = model(
        13,
        vec![
            node(
                "ReduceMax",
                "mx",
                &["x"],
                &["y"],
                vec![("axes", A::Ints(vec![1]))],
            ),
            node("Dropout", "d", &["z"], &["dz", "mask"], vec![]),
        ],
        vec![value("x", DType::F32, &[2, 0]), value("z", DType::F32, &[2])],
        vec![],
        vec![
            value("y", DType::F32, &[2, 1]),
            value("dz", DType::F32, &[2]),
            value("mask", DType::Bool, &[2]),
        ],
    );
    let x = Tensor::zeros(DType::F32, &[2, 0]).unwrap();
    let out = run(&m, &[("x", x), ("z", f32s(&[2], &[1.0, 2.0]))]);
    assert_eq!(out[0].1.shape(), [2, 1]);
    assert_eq!(vals(&out[0].1), [f64::NEG_INFINITY; 2]);
    assert_eq!(vals(&out[1].1), [1.0, 2.0]);
    assert_eq!(vals(&out[2].1), [1.0, 1.0]);
}

#[test]
fn empty_integer_max_and_min_are_the_dtype_extremes() {
    let reduce = |op: &str, dt: DType| {
        let m = model(
            13,
            vec![node(op, "r", &["x"], &["y"], vec![("axes", A::Ints(vec![1]))])],
            vec![value("x", dt, &[2, 0])],
            vec![],
            vec![value("y", dt, &[2, 1])],
        );
        let out = run(&m, &[("x", Tensor::zeros(dt, &[2, 0]).unwrap())]);
        assert_eq!(out[0].1.dtype(), dt);
        out[0].1.clone()
    };
    // Through f64's -inf an i8 maximum was 0.
    assert_eq!(vals(&reduce("ReduceMax", DType::I8)), [-128.0; 2]);
    assert_eq!(vals(&reduce("ReduceMin", DType::I8)), [127.0; 2]);
    assert_eq!(vals(&reduce("ReduceMax", DType::U16)), [0.0; 2]);
    let min = reduce("ReduceMin", DType::U64);
    assert_eq!(
        min.to_array::<u64>().unwrap().iter().copied().collect::<Vec<_>>(),
        [u64::MAX; 2]
    );
}

#[test]
fn gelu_tanh_follows_its_formula() {
    let m = model(
        20,
        vec![node(
            "Gelu",
            "g",
            &["x"],
            &["y"],
            vec![("approximate", A::S("tanh"))],
        )],
        vec![value("x", DType::F64, &[3])],
        vec![],
        vec![value("y", DType::F64, &[3])],
    );
    let xs = [-1.5f64, 0.0, 2.0];
    let want: Vec<f64> = xs
        .iter()
        .map(|&x| 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh()))
        .collect();
    let got = vals(&run(&m, &[("x", Tensor::from_vec(&[3], xs.to_vec()).unwrap())])[0].1);
    assert!(close(&got, &want), "{got:?} != {want:?}");
}

#[test]
fn bitwise_ops_and_bit_shifts_import_with_their_direction() {
    let m = model(
        18,
        vec![
            node("BitwiseXor", "x", &["a", "b"], &["ab"], vec![]),
            node("BitwiseNot", "n", &["ab"], &["nab"], vec![]),
            node(
                "BitShift",
                "s",
                &["nab", "k"],
                &["y"],
                vec![("direction", A::S("RIGHT"))],
            ),
        ],
        vec![
            value("a", DType::U8, &[3]),
            value("b", DType::U8, &[3]),
            value("k", DType::U8, &[3]),
        ],
        vec![],
        vec![value("y", DType::U8, &[3])],
    );
    let u8s = |v: [u8; 3]| Tensor::from_vec(&[3], v.to_vec()).unwrap();
    let out = run(
        &m,
        &[
            ("a", u8s([0xf0, 1, 0])),
            ("b", u8s([0x0f, 1, 0])),
            ("k", u8s([4, 1, 9])),
        ],
    );
    // !(a ^ b) >> k: !0xff = 0, !0 = 0xff >> 1, and a shift past 8 bits is 0.
    assert_eq!(
        out[0].1.to_array::<u8>().unwrap().as_slice().unwrap(),
        &[0, 0x7f, 0]
    );
    let mut bad = m.clone();
    bad.graph.as_mut().unwrap().node[2].attribute[0].s = b"UP".to_vec();
    let e = import(&round_trip(&bad), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::BadAttr { node, op, attr, msg }
            if node == "s" && op == "BitShift" && attr == "direction" && msg.contains("'UP'")),
        "{e:?}"
    );
}

/// A one-node ImageDecoder model (opset 20) over a u8 stream of `n` bytes.
fn image_decoder(n: usize, pixel_format: Option<&'static str>) -> onnx_protobuf::ModelProto {
    let attrs = pixel_format.map_or_else(Vec::new, |p| vec![("pixel_format", A::S(p))]);
    let c = if pixel_format == Some("Grayscale") { 1 } else { 3 };
    model(
        20,
        vec![node("ImageDecoder", "dec", &["x"], &["y"], attrs)],
        vec![value("x", DType::U8, &[n as i64])],
        vec![],
        vec![value("y", DType::U8, &[-1, -1, c])],
    )
}

#[test]
fn image_decoder_decodes_when_it_runs_and_refuses_what_it_cannot() {
    // A binary PPM, 2 wide and 2 high.
    let px: [u8; 12] = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120];
    let mut ppm = b"P6\n2 2\n255\n".to_vec();
    ppm.extend_from_slice(&px);
    let x = Tensor::from_vec(&[ppm.len()], ppm.clone()).unwrap();
    let m = image_decoder(ppm.len(), None);
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["image_decoder"]);
    let out = run(&m, &[("x", x.clone())]);
    assert_eq!(out[0].1.shape(), [2, 2, 3]);
    assert_eq!(out[0].1.dtype(), DType::U8);
    let want: Vec<f64> = px.iter().map(|&v| v as f64).collect();
    assert_eq!(vals(&out[0].1), want);

    let out = run(&image_decoder(ppm.len(), Some("BGR")), &[("x", x.clone())]);
    let bgr: Vec<f64> = px
        .chunks(3)
        .flat_map(|p| [p[2], p[1], p[0]])
        .map(f64::from)
        .collect();
    assert_eq!(vals(&out[0].1), bgr);

    let out = run(&image_decoder(ppm.len(), Some("Grayscale")), &[("x", x)]);
    assert_eq!(out[0].1.shape(), [2, 2, 1]);
    // (299·R + 587·G + 114·B) / 1000, rounded: no pixel here is near a tie.
    let luma: Vec<f64> = px
        .chunks(3)
        .map(|p| ((299 * p[0] as u32 + 587 * p[1] as u32 + 114 * p[2] as u32 + 500) / 1000) as f64)
        .collect();
    assert_eq!(luma, [18.0, 48.0, 78.0, 108.0]);
    assert_eq!(vals(&out[0].1), luma);

    let e = import(&round_trip(&image_decoder(4, Some("HSV"))), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::BadAttr { node, attr, .. } if node == "dec" && attr == "pixel_format"),
        "{e}"
    );

    // Bytes that are no image import (the stream is data) and fail the run,
    // naming the ONNX node.
    let garbage = b"not an image".to_vec();
    let m = image_decoder(garbage.len(), None);
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    vigil_onnx::write_case(&imported, &vigil_onnx::InputSource::Random(0), dir.path()).unwrap();
    let g = vigil_engine::Graph::load(
        dir.path().join("graph.json"),
        &vigil_engine::OpRegistry::builtin(),
    )
    .unwrap();
    let feeds = std::collections::HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[garbage.len()], garbage).unwrap(),
    )]);
    let Err(e) = vigil_engine::Executor::new(&g).unwrap().run(&feeds) else {
        panic!("a stream that is no image ran");
    };
    assert!(
        matches!(&e, vigil_engine::Error::Node { node, .. } if node == "dec"),
        "{e}"
    );
    assert!(matches!(e.cause(), vigil_engine::Error::Op(_)), "{e}");
}
