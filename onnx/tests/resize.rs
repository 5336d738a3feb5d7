//! Resize and Upsample import as one `resize` node whose geometry (axes,
//! aspect-ratio policy, roi) is resolved at import time.

use onnx_protobuf::attribute_proto::AttributeType;
use onnx_protobuf::AttributeProto;
use serde_json::json;
use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, Options};
use vigil_testkit::onnx::*;

/// The one node `m` imports to: its op and attrs.
fn only_node(m: &onnx_protobuf::ModelProto) -> (String, serde_json::Map<String, serde_json::Value>) {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    assert_eq!(imported.file.nodes.len(), 1, "{:?}", imported.file.nodes);
    let n = &imported.file.nodes[0];
    (n.op.clone(), n.attrs.0.clone())
}

#[test]
fn resize_imports_with_its_axes_resolved() {
    // Bilinear half-pixel 2x2 -> 4x4 (ONNX's example), scales given for
    // axes [3, 2] only: the node gets a scale per axis and the output shape.
    let m = model(
        19,
        vec![node(
            "Resize",
            "rs",
            &["x", "", "scales"],
            &["y"],
            vec![("mode", A::S("linear")), ("axes", A::Ints(vec![3, -2]))],
        )],
        vec![value("x", DType::F32, &[1, 1, 2, 2])],
        vec![tensor("scales", &f32s(&[2], &[2.0, 2.0]))],
        vec![value("y", DType::F32, &[1, 1, 4, 4])],
    );
    let (op, attrs) = only_node(&m);
    assert_eq!(op, "resize");
    assert_eq!(attrs["sizes"], json!([1, 1, 4, 4]));
    assert_eq!(attrs["scales"], json!([1.0, 1.0, 2.0, 2.0]));
    let out = run(&m, &[("x", f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]))]);
    assert_eq!(out[0].1.shape(), [1, 1, 4, 4]);
    assert_eq!(
        vals(&out[0].1),
        [1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0]
    );
}

#[test]
fn resize_sizes_keep_the_aspect_ratio_and_crop_by_roi() {
    // sizes [7, 8] on 2x2, not_larger: one scale, min(7/2, 8/2) = 3.5, for
    // both axes: 7x7. Nearest (round_prefer_floor, half_pixel).
    let sizes = Tensor::from_i64s(&[7, 8]);
    let m = model(
        18,
        vec![node(
            "Resize",
            "rs",
            &["x", "", "", "sizes"],
            &["y"],
            vec![
                ("axes", A::Ints(vec![2, 3])),
                ("keep_aspect_ratio_policy", A::S("not_larger")),
            ],
        )],
        vec![value("x", DType::F32, &[1, 1, 2, 2])],
        vec![tensor("sizes", &sizes)],
        vec![value("y", DType::F32, &[1, 1, 7, 7])],
    );
    let (_, attrs) = only_node(&m);
    assert_eq!(attrs["sizes"], json!([1, 1, 7, 7]));
    assert_eq!(attrs["scales"], json!([1.0, 1.0, 3.5, 3.5]));
    let out = run(&m, &[("x", f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]))]);
    // Coordinates (o + 0.5)/3.5 - 0.5: positions 0-3 read element 0 (3 sits
    // at exactly 0.5 and rounds down), 4-6 element 1.
    let row = |a: f64, b: f64| [a, a, a, a, b, b, b];
    let want: Vec<f64> = [row(1.0, 2.0); 4]
        .into_iter()
        .chain([row(3.0, 4.0); 3])
        .flatten()
        .collect();
    assert_eq!(vals(&out[0].1), want);

    // tf_crop_and_resize on axis 1 of [1, 4]: roi for that axis only,
    // [0.5, 1.5] of 4 elements samples 1.5, 3 and 4.5 (outside: -1).
    let m = model(
        19,
        vec![node(
            "Resize",
            "crop",
            &["x", "roi", "", "sizes"],
            &["y"],
            vec![
                ("mode", A::S("linear")),
                ("coordinate_transformation_mode", A::S("tf_crop_and_resize")),
                ("extrapolation_value", A::F(-1.0)),
                ("axes", A::Ints(vec![1])),
            ],
        )],
        vec![value("x", DType::F32, &[1, 4])],
        vec![
            tensor("roi", &f32s(&[2], &[0.5, 1.5])),
            tensor("sizes", &Tensor::from_i64s(&[3])),
        ],
        vec![value("y", DType::F32, &[1, 3])],
    );
    let (_, attrs) = only_node(&m);
    assert_eq!(attrs["roi"], json!([0.0, 0.5, 1.0, 1.5]));
    let out = run(&m, &[("x", f32s(&[1, 4], &[1.0, 2.0, 3.0, 4.0]))]);
    assert_eq!(vals(&out[0].1), [2.5, 4.0, -1.0]);
}

#[test]
fn upsample_imports_as_asymmetric_nearest() {
    // Opset 9 (scales input) and opset 7 (scales attr): ONNX's example.
    let want: Vec<f64> = [[1.0, 2.0], [1.0, 2.0], [3.0, 4.0], [3.0, 4.0]]
        .iter()
        .flat_map(|&[a, b]| [a, a, a, b, b, b])
        .collect();
    let scales = [1.0f32, 1.0, 2.0, 3.0];
    let m9 = model(
        9,
        vec![node("Upsample", "up", &["x", "s"], &["y"], vec![])],
        vec![value("x", DType::F32, &[1, 1, 2, 2])],
        vec![tensor("s", &f32s(&[4], &scales))],
        vec![value("y", DType::F32, &[1, 1, 4, 6])],
    );
    let mut up7 = node("Upsample", "up", &["x"], &["y"], vec![("mode", A::S("nearest"))]);
    let mut at = AttributeProto::new();
    at.name = "scales".into();
    at.floats = scales.to_vec();
    at.type_ = AttributeType::FLOATS.into();
    up7.attribute.push(at);
    let m7 = model(
        7,
        vec![up7],
        vec![value("x", DType::F32, &[1, 1, 2, 2])],
        vec![],
        vec![value("y", DType::F32, &[1, 1, 4, 6])],
    );
    for m in [m9, m7] {
        let (op, attrs) = only_node(&m);
        assert_eq!(op, "resize");
        assert_eq!(attrs["coordinate_transformation_mode"], json!("asymmetric"));
        assert_eq!(attrs["nearest_mode"], json!("floor"));
        let out = run(&m, &[("x", f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]))]);
        assert_eq!(vals(&out[0].1), want);
    }
}

#[test]
fn resize_refusals_name_the_node() {
    let refuse = |opset: i64, op: &str, inputs: &[&str], inits, attrs| {
        let m = model(
            opset,
            vec![node(op, "rs", inputs, &["y"], attrs)],
            vec![
                value("x", DType::F32, &[1, 1, 2, 2]),
                value("dyn", DType::F32, &[4]),
            ],
            inits,
            vec![value("y", DType::F32, &[-1, -1, -1, -1])],
        );
        import(&round_trip(&m), &Options::default())
            .unwrap_err()
            .to_string()
    };
    let s = |v: &[f32]| vec![tensor("s", &f32s(&[v.len()], v))];
    assert_eq!(
        refuse(19, "Resize", &["x", "", "dyn"], vec![], vec![]),
        "node 'rs' (Resize): input 'scales' must be known at import time (a constant or foldable)"
    );
    assert_eq!(
        refuse(19, "Resize", &["x", "", "s"], s(&[1.0, 1.0, 0.0, 2.0]), vec![]),
        "node 'rs' (Resize): scales must be 4 positive numbers, got [1.0, 1.0, 0.0, 2.0]"
    );
    assert_eq!(
        refuse(19, "Resize", &["x"], vec![], vec![]),
        "node 'rs' (Resize): needs input 'scales' or 'sizes'"
    );
    assert_eq!(
        refuse(
            19,
            "Resize",
            &["x", "", "s"],
            s(&[2.0, 2.0]),
            vec![("axes", A::Ints(vec![2, 2]))]
        ),
        "node 'rs' (Resize): attr 'axes': [2, 2] is not a list of distinct axes of rank 4"
    );
    let e = refuse(
        19,
        "Resize",
        &["x", "", "s"],
        s(&[1.0; 4]),
        vec![("mode", A::S("area"))],
    );
    assert!(
        e.starts_with("node 'rs' (Resize): op 'resize': attr 'mode': unknown value 'area'"),
        "{e}"
    );
    assert_eq!(
        refuse(9, "Upsample", &["x", "s"], s(&[1.0, 1.0, 0.5, 2.0]), vec![]),
        "node 'rs' (Upsample): Upsample's scales must be at least 1, got [1.0, 1.0, 0.5, 2.0]"
    );
    assert_eq!(
        refuse(10, "Resize", &["x", "s"], s(&[1.0, 1.0, 0.5, 2.0]), vec![]),
        "node 'rs' (Resize): nearest Resize before opset 11 that both up- and downsamples is not supported, scales [1.0, 1.0, 0.5, 2.0]"
    );
}
