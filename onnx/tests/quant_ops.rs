//! The quantized ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
//! MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv) on small models
//! built in Rust: what they import to, the values they give, and their
//! refusals.

use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, ImportError, Options};
use vigil_testkit::onnx::*;

fn ops_of(m: &onnx_protobuf::ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

fn t<T: vigil_engine::Element>(shape: &[usize], v: Vec<T>) -> Tensor {
    Tensor::from_vec(shape, v).unwrap()
}

#[test]
fn quantize_then_dequantize_per_channel_round_trips_to_the_grid() {
    let m = model(
        13,
        vec![
            node(
                "QuantizeLinear",
                "q",
                &["x", "s", "z"],
                &["xq"],
                vec![("axis", A::I(1))],
            ),
            node(
                "DequantizeLinear",
                "dq",
                &["xq", "s", "z"],
                &["y"],
                vec![("axis", A::I(1))],
            ),
        ],
        vec![value("x", DType::F32, &[2, 2])],
        vec![
            tensor("s", &f32s(&[2], &[0.5, 0.25])),
            tensor("z", &t(&[2], vec![-2i8, 3])),
        ],
        vec![value("y", DType::F32, &[2, 2])],
    );
    assert_eq!(ops_of(&m), ["quantize_linear", "dequantize_linear"]);
    // Column 0: grid 0.5 from -2; column 1: grid 0.25 from 3 (saturating at 127).
    let out = run(&m, &[("x", f32s(&[2, 2], &[0.74, 0.3, -65.0, 40.0]))]);
    assert_eq!(vals(&out[0].1), [0.5, 0.25, -63.0, 31.0]);
}

/// What `onnxruntime.quantization.quantize_dynamic` writes for a MatMul:
/// the activation quantized at run time, an integer product, and the
/// scales multiplied back in.
#[test]
fn dynamic_quantized_matmul_is_close_to_the_float_product() {
    let w = t(&[2, 2], vec![10i8, -20, 30, 40]);
    let m = model(
        13,
        vec![
            node("DynamicQuantizeLinear", "dq", &["x"], &["xq", "xs", "xz"], vec![]),
            node("MatMulInteger", "mm", &["xq", "w", "xz"], &["acc"], vec![]),
            node("Cast", "c", &["acc"], &["accf"], vec![("to", A::I(1))]),
            node("Mul", "sc", &["xs", "ws"], &["s"], vec![]),
            node("Mul", "y", &["accf", "s"], &["y"], vec![]),
        ],
        vec![value("x", DType::F32, &[1, 2])],
        vec![tensor("w", &w), tensor("ws", &f32s(&[], &[0.01]))],
        vec![value("y", DType::F32, &[1, 2])],
    );
    let ops = ops_of(&m);
    assert_eq!(&ops[..2], ["dynamic_quantize_linear", "matmul_integer"]);
    let out = run(&m, &[("x", f32s(&[1, 2], &[1.0, -0.5]))]);
    // Float: [1, -0.5] · [[0.1, -0.2], [0.3, 0.4]] = [-0.05, -0.4].
    let y = vals(&out[0].1);
    assert!((y[0] + 0.05).abs() < 0.01 && (y[1] + 0.4).abs() < 0.01, "{y:?}");
}

#[test]
fn qlinear_matmul_matches_onnx_example() {
    let m = model(
        10,
        vec![node(
            "QLinearMatMul",
            "qmm",
            &["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
            &["y"],
            vec![],
        )],
        vec![value("a", DType::U8, &[2, 4])],
        vec![
            tensor("as", &f32s(&[1], &[0.0066])),
            tensor("az", &t(&[1], vec![113u8])),
            tensor(
                "b",
                &t(
                    &[4, 3],
                    vec![152u8, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247],
                ),
            ),
            tensor("bs", &f32s(&[1], &[0.00705])),
            tensor("bz", &t(&[1], vec![114u8])),
            tensor("ys", &f32s(&[1], &[0.0107])),
            tensor("yz", &t(&[1], vec![118u8])),
        ],
        vec![value("y", DType::U8, &[2, 3])],
    );
    let ops = ops_of(&m);
    assert_eq!(ops.first().map(String::as_str), Some("matmul_integer"));
    assert_eq!(ops.last().map(String::as_str), Some("quantize_linear"));
    let a = t(&[2, 4], vec![208u8, 236, 0, 238, 3, 214, 255, 29]);
    let out = run(&m, &[("a", a)]);
    assert_eq!(out[0].1.dtype(), DType::U8);
    assert_eq!(vals(&out[0].1), [168., 115., 255., 1., 66., 151.]);
}

#[test]
fn qlinear_conv_adds_the_bias_and_scales_per_channel() {
    // 1×1 kernels, two output channels with their own scales; x = 10 − 2 = 8.
    let m = model(
        10,
        vec![node(
            "QLinearConv",
            "qc",
            &["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
            &["y"],
            vec![],
        )],
        vec![value("x", DType::U8, &[1, 1, 1, 2])],
        vec![
            tensor("xs", &f32s(&[], &[0.5])),
            tensor("xz", &t(&[], vec![2u8])),
            tensor("w", &t(&[2, 1, 1, 1], vec![3u8, 5])),
            tensor("ws", &f32s(&[2], &[1.0, 2.0])),
            tensor("wz", &t(&[2], vec![1u8, 1])),
            tensor("ys", &f32s(&[], &[1.0])),
            tensor("yz", &t(&[], vec![10u8])),
            tensor("b", &t(&[2], vec![4i32, -40])),
        ],
        vec![value("y", DType::U8, &[1, 2, 1, 2])],
    );
    let out = run(&m, &[("x", t(&[1, 1, 1, 2], vec![10u8, 2]))]);
    // Channel 0: (8·2 + 4)·0.5 + 10 = 20, (0 + 4)·0.5 + 10 = 12;
    // channel 1: (8·4 − 40)·1 + 10 = 2, (0 − 40)·1 + 10 → 0 (saturated).
    assert_eq!(vals(&out[0].1), [20., 12., 2., 0.]);
}

#[test]
fn integer_ops_fill_absent_zero_points_and_refuse_mixed_dtypes() {
    let m = model(
        10,
        vec![node(
            "ConvInteger",
            "ci",
            &["x", "w"],
            &["y"],
            vec![("pads", A::Ints(vec![1, 1, 1, 1]))],
        )],
        vec![value("x", DType::U8, &[1, 1, 1, 1])],
        vec![tensor("w", &t(&[1, 1, 1, 1], vec![2u8]))],
        vec![value("y", DType::I32, &[1, 1, 3, 3])],
    );
    let out = run(&m, &[("x", t(&[1, 1, 1, 1], vec![7u8]))]);
    assert_eq!(vals(&out[0].1), [0., 0., 0., 0., 14., 0., 0., 0., 0.]);

    let m = model(
        10,
        vec![node("MatMulInteger", "mi", &["a", "b", "az"], &["y"], vec![])],
        vec![value("a", DType::U8, &[1, 1])],
        vec![
            tensor("b", &t(&[1, 1], vec![1u8])),
            tensor("az", &t(&[], vec![1i8])),
        ],
        vec![value("y", DType::I32, &[1, 1])],
    );
    let e = import(&round_trip(&m), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::Node { node, source: vigil_engine::Error::DType(_), .. } if node == "mi"),
        "{e}"
    );
}
