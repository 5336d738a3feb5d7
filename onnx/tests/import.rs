//! The importer on small models built in Rust: translation, folding,
//! names, refusals and the case files.

use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, ImportError, Options};
use vigil_testkit::onnx::*;

#[test]
fn gemm_relu_softmax_matches_a_hand_computation() {
    // y = softmax(relu(x · Wᵀ · 2 + 0.5 · b)), opset 9 (softmax over axis 1 of 2-D).
    let w = f32s(&[2, 3], &[1.0, 0.0, -1.0, 0.5, 0.5, 0.5]);
    let b = f32s(&[2], &[1.0, -4.0]);
    let m = model(
        9,
        vec![
            node(
                "Gemm",
                "fc",
                &["x", "w", "b"],
                &["h"],
                vec![("transB", A::I(1)), ("alpha", A::F(2.0)), ("beta", A::F(0.5))],
            ),
            node("Relu", "act", &["h"], &["r"], vec![]),
            node("Softmax", "prob", &["r"], &["y"], vec![]),
        ],
        vec![value("x", DType::F32, &[1, 3])],
        vec![tensor("w", &w), tensor("b", &b)],
        vec![value("y", DType::F32, &[1, 2])],
    );
    let out = run(&m, &[("x", f32s(&[1, 3], &[1.0, 2.0, 3.0]))]);
    // h = 2·[1-3, 0.5·6] + [0.5, -2] = [-3.5, 4]; relu = [0, 4]; softmax.
    let e = (-4.0f64).exp();
    assert_eq!(out[0].0, "y");
    assert!(
        close(&vals(&out[0].1), &[e / (1.0 + e), 1.0 / (1.0 + e)]),
        "{:?}",
        vals(&out[0].1)
    );
}

#[test]
fn shape_subgraphs_over_constants_fold_at_import_time() {
    // Reshape(x, Concat(Shape(x)[0], ConstantOfShape([1]) = -1)) is folded
    // into one reshape node with a fixed shape; Shape and Concat vanish.
    let fill = tensor("", &Tensor::from_i64s(&[-1]));
    let m = model(
        13,
        vec![
            node("Shape", "s", &["x"], &["sx"], vec![("end", A::I(1))]),
            node(
                "Constant",
                "one",
                &[],
                &["one"],
                vec![("value", A::T(Box::new(tensor("", &Tensor::from_i64s(&[1])))))],
            ),
            node(
                "ConstantOfShape",
                "m1",
                &["one"],
                &["minus1"],
                vec![("value", A::T(Box::new(fill)))],
            ),
            node(
                "Concat",
                "cat",
                &["sx", "minus1"],
                &["shape"],
                vec![("axis", A::I(0))],
            ),
            node("Reshape", "flat", &["x", "shape"], &["y"], vec![]),
        ],
        vec![value("x", DType::F32, &[2, 3, 4])],
        vec![],
        vec![value("y", DType::F32, &[2, 12])],
    );
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["reshape"]);
    assert_eq!(
        imported.file.nodes[0].attrs.0["shape"],
        serde_json::json!([2, -1])
    );
    let x = Tensor::from_vec(&[2, 3, 4], (0..24).map(|v| v as f32).collect()).unwrap();
    let out = run(&m, &[("x", x)]);
    assert_eq!(out[0].1.shape(), &[2, 12]);
}

#[test]
fn a_large_constant_of_shape_folds_into_a_one_line_fill_constant() {
    // x + ConstantOfShape([300, 300]) = 0.5: 90,000 elements, over the
    // 65,536 that used to stay a `full` node.
    let shape = tensor("", &Tensor::from_i64s(&[300, 300]));
    let half = tensor("", &f32s(&[1], &[0.5]));
    let m = model(
        13,
        vec![
            node(
                "Constant",
                "dims",
                &[],
                &["dims"],
                vec![("value", A::T(Box::new(shape)))],
            ),
            node(
                "ConstantOfShape",
                "c",
                &["dims"],
                &["c"],
                vec![("value", A::T(Box::new(half)))],
            ),
            node("Add", "add", &["x", "c"], &["y"], vec![]),
        ],
        vec![value("x", DType::F32, &[300, 300])],
        vec![],
        vec![value("y", DType::F32, &[300, 300])],
    );
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["add"], "the ConstantOfShape folded");
    let decl = &imported.file.constants[0];
    assert_eq!(
        (decl.fill.clone(), decl.shape.clone()),
        (Some(serde_json::json!(0.5)), Some(vec![300, 300]))
    );
    assert!(decl.data.is_none() && decl.npy.is_none());
    // The case holds no constants/ file and graph.json stays small.
    let dir = tempfile::tempdir().unwrap();
    vigil_onnx::write_case(&imported, &vigil_onnx::InputSource::Random(0), dir.path()).unwrap();
    assert!(!dir.path().join("constants").exists());
    assert!(std::fs::metadata(dir.path().join("graph.json")).unwrap().len() < 4096);
    let x = Tensor::from_vec(&[300, 300], (0..90_000).map(|v| v as f32).collect()).unwrap();
    let out = run(&m, &[("x", x)]);
    let y = vals(&out[0].1);
    assert_eq!((y.len(), y[0], y[89_999]), (90_000, 0.5, 89_999.5));
}

#[test]
fn names_are_sanitized_and_the_onnx_origin_is_kept() {
    let m = model(
        13,
        vec![node("Relu", "block/relu:0", &["in/x"], &["out/y"], vec![])],
        vec![value("in/x", DType::F32, &[-1, 2])],
        vec![],
        vec![value("out/y", DType::F32, &[-1, 2])],
    );
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let n = &imported.file.nodes[0];
    assert_eq!(n.name, "block_relu_0");
    assert_eq!(n.inputs, ["in_x"]);
    assert_eq!(n.outputs, ["out_y"]);
    assert_eq!(n.attrs.0["source"], serde_json::json!("Relu 'block/relu:0'"));
    assert_eq!(imported.inputs, [("in/x".to_string(), "in_x".to_string())]);
    assert_eq!(imported.file.inputs[0].shape, Some(vec![-1, 2]));
}

#[test]
fn conv_pool_and_batch_norm_import_as_vigil_ops() {
    let w = Tensor::from_vec(&[2, 1, 2, 2], vec![1f32, 0.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5]).unwrap();
    let ones = f32s(&[2], &[1.0, 1.0]);
    let zeros = f32s(&[2], &[0.0, 0.0]);
    let m = model(
        9,
        vec![
            node(
                "Conv",
                "c",
                &["x", "w"],
                &["h"],
                vec![("pads", A::Ints(vec![0, 0, 1, 1]))],
            ),
            node(
                "BatchNormalization",
                "bn",
                &["h", "s", "b", "mu", "var"],
                &["n"],
                vec![("epsilon", A::F(0.0))],
            ),
            node(
                "MaxPool",
                "p",
                &["n"],
                &["y"],
                vec![("kernel_shape", A::Ints(vec![3, 3])), ("auto_pad", A::S("VALID"))],
            ),
        ],
        vec![value("x", DType::F32, &[1, 1, 3, 3])],
        vec![
            tensor("w", &w),
            tensor("s", &ones),
            tensor("b", &zeros),
            tensor("mu", &zeros),
            tensor("var", &ones),
        ],
        vec![value("y", DType::F32, &[1, 2, 1, 1])],
    );
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["conv", "batch_norm", "max_pool"]);
    let x = Tensor::from_vec(&[1, 1, 3, 3], (1..=9).map(|v| v as f32).collect()).unwrap();
    let out = run(&m, &[("x", x)]);
    // Channel 0: x[i,j] + x[i+1,j+1] (zero padded), max 1+5... = 5+9 = 14;
    // channel 1: the 2×2 mean, max (5+6+8+9)/2 = 14.
    assert_eq!(vals(&out[0].1), [14.0, 14.0]);
}

#[test]
fn max_pool_indices_are_imported_when_used_in_either_storage_order() {
    let mk = |order: i64, used: bool| {
        let outs: &[&str] = if used { &["y", "i"] } else { &["y"] };
        let mut graph_outs = vec![value("y", DType::F32, &[1, 2, 1, 2])];
        if used {
            graph_outs.push(value("i", DType::I64, &[1, 2, 1, 2]));
        }
        model(
            12,
            vec![node(
                "MaxPool",
                "p",
                &["x"],
                outs,
                vec![
                    ("kernel_shape", A::Ints(vec![2, 2])),
                    ("storage_order", A::I(order)),
                ],
            )],
            vec![value("x", DType::F32, &[1, 2, 2, 3])],
            vec![],
            graph_outs,
        )
    };
    // Channel 0 [[1 6 2] [5 3 4]], channel 1 [[0 0 9] [7 8 0]] (offset 6):
    // the maxima sit at (0, 1), (0, 1), (1, 1), (0, 2); row-major h·3 + w,
    // column-major h + w·2.
    let x = f32s(&[1, 2, 2, 3], &[1., 6., 2., 5., 3., 4., 0., 0., 9., 7., 8., 0.]);
    for (order, want) in [(0, [1.0, 1.0, 10.0, 8.0]), (1, [2.0, 2.0, 9.0, 10.0])] {
        let out = run(&mk(order, true), &[("x", x.clone())]);
        assert_eq!(vals(&out[0].1), [6.0, 6.0, 8.0, 9.0]);
        assert_eq!(out[1].1.dtype(), DType::I64);
        assert_eq!(vals(&out[1].1), want, "storage_order {order}");
    }
    // Unused, the indices are not asked for and the order does not matter.
    let imported = import(&round_trip(&mk(1, false)), &Options::default()).unwrap();
    assert!(imported.file.nodes[0].attrs.bool("indices").unwrap().is_none());
    let e = import(&round_trip(&mk(2, true)), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::BadAttr { attr, .. } if attr == "storage_order"),
        "{e}"
    );
}

#[test]
fn conv_transpose_imports_with_its_output_geometry() {
    // x = [[0 1 2] [3 4 5] [6 7 8]], one 3x3 kernel of ones for each of two
    // output channels, strides [3, 2], pads [1, 2, 1, 2]: each output
    // element sums the inputs whose windows cover it (ONNX's own example).
    let w = Tensor::from_vec(&[1, 2, 3, 3], vec![1f32; 18]).unwrap();
    let m = model(
        11,
        vec![node(
            "ConvTranspose",
            "ct",
            &["x", "w"],
            &["y"],
            vec![
                ("strides", A::Ints(vec![3, 2])),
                ("pads", A::Ints(vec![1, 2, 1, 2])),
            ],
        )],
        vec![value("x", DType::F32, &[1, 1, 3, 3])],
        vec![tensor("w", &w)],
        vec![value("y", DType::F32, &[1, 2, 7, 3])],
    );
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["conv_transpose"]);
    let x = Tensor::from_vec(&[1, 1, 3, 3], (0..9).map(|v| v as f32).collect()).unwrap();
    let out = run(&m, &[("x", x)]);
    assert_eq!(out[0].1.shape(), [1, 2, 7, 3]);
    let channel: [f64; 21] = [
        1.0, 1.0, 3.0, 1.0, 1.0, 3.0, 7.0, 4.0, 9.0, 7.0, 4.0, 9.0, 7.0, 4.0, 9.0, 13.0, 7.0, 15.0, 13.0,
        7.0, 15.0,
    ];
    assert_eq!(vals(&out[0].1), [channel, channel].concat());
}

#[test]
fn unsupported_things_are_refused_naming_node_and_op() {
    let m = model(
        13,
        vec![node("Bernoulli", "uq", &["x"], &["y"], vec![])],
        vec![value("x", DType::F32, &[2])],
        vec![],
        vec![value("y", DType::F32, &[2])],
    );
    let e = import(&round_trip(&m), &Options::default()).unwrap_err();
    assert!(matches!(e, ImportError::UnsupportedOp { .. }));
    assert_eq!(e.to_string(), "node 'uq' (Bernoulli): unsupported op (domain '')");

    let m = model(29, vec![], vec![], vec![], vec![]);
    let e = import(&round_trip(&m), &Options::default()).unwrap_err();
    assert!(
        matches!(e, ImportError::UnsupportedOpset { version: 29, .. }),
        "{e}"
    );

    let m = model(
        13,
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![value("x", DType::F32, &[2])],
        vec![],
        vec![value("y", DType::F32, &[2])],
    );
    let mut m16 = m.clone();
    if let Some(g) = m16.graph.as_mut() {
        g.input[0] = value("x", DType::F32, &[2]);
        if let Some(t) = g.input[0].type_.as_mut() {
            t.mut_tensor_type().elem_type = 14; // complex64
        }
    }
    let e = import(&round_trip(&m16), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::UnsupportedDtype { dtype, .. } if dtype.contains("complex64")),
        "{e:?}"
    );

    let m = model(
        13,
        vec![node(
            "BatchNormalization",
            "bn",
            &["x", "s", "s", "s", "s"],
            &["y"],
            vec![("training_mode", A::I(1))],
        )],
        vec![value("x", DType::F32, &[1, 2])],
        vec![tensor("s", &f32s(&[2], &[1.0, 1.0]))],
        vec![value("y", DType::F32, &[1, 2])],
    );
    let e = import(&round_trip(&m), &Options::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "node 'bn' (BatchNormalization): attr 'training_mode': only inference (0) is supported"
    );
}

#[test]
fn initializers_can_be_parameters_and_aliased_outputs_get_a_copy() {
    let w = f32s(&[2], &[1.0, 2.0]);
    let m = model(
        13,
        vec![
            node("Add", "add", &["x", "w"], &["y"], vec![]),
            node("Identity", "id", &["x"], &["z"], vec![]),
        ],
        vec![value("x", DType::F32, &[2])],
        vec![tensor("w", &w)],
        vec![value("y", DType::F32, &[2]), value("z", DType::F32, &[2])],
    );
    let opts = Options {
        initializers: vigil_onnx::Initializers::Parameters,
        ..Options::default()
    };
    let imported = import(&round_trip(&m), &opts).unwrap();
    assert_eq!(imported.file.parameters.len(), 1);
    assert!(imported.file.constants.is_empty());
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["add", "copy"]);
    let out = run(&m, &[("x", f32s(&[2], &[3.0, 4.0]))]);
    assert_eq!(vals(&out[0].1), [4.0, 6.0]);
    assert_eq!(vals(&out[1].1), [3.0, 4.0]);
}

#[test]
fn a_data_set_becomes_inputs_and_expected_files() {
    let m = model(
        13,
        vec![node("Neg", "n", &["x"], &["y"], vec![])],
        vec![value("x", DType::F32, &[2])],
        vec![],
        vec![value("y", DType::F32, &[2])],
    );
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("test_data_set_0");
    std::fs::create_dir_all(&ds).unwrap();
    use onnx_protobuf::Message;
    let x = tensor("x", &f32s(&[2], &[1.0, -2.0]));
    let y = tensor("y", &f32s(&[2], &[-1.0, 2.0]));
    std::fs::write(ds.join("input_0.pb"), x.write_to_bytes().unwrap()).unwrap();
    std::fs::write(ds.join("output_0.pb"), y.write_to_bytes().unwrap()).unwrap();
    assert_eq!(vigil_onnx::data_sets(dir.path()), vec![ds.clone()]);
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let case = dir.path().join("case");
    vigil_onnx::write_case(&imported, &vigil_onnx::InputSource::DataSet(ds), &case).unwrap();
    let x = Tensor::read_npy(case.join("inputs/x.npy")).unwrap();
    let y = Tensor::read_npy(case.join("expected/y.npy")).unwrap();
    assert_eq!(vals(&x), [1.0, -2.0]);
    assert_eq!(vals(&y), [-1.0, 2.0]);
}

#[test]
fn reduce_max_and_min_take_bool_inputs() {
    let m = model(
        18,
        vec![
            node("ReduceMax", "any", &["x"], &["y"], vec![("keepdims", A::I(0))]),
            node("ReduceMin", "all", &["x"], &["z"], vec![("keepdims", A::I(0))]),
        ],
        vec![value("x", DType::Bool, &[2, 2])],
        vec![],
        vec![value("y", DType::Bool, &[]), value("z", DType::Bool, &[])],
    );
    let x = Tensor::from_vec(&[2, 2], vec![true, false, true, true]).unwrap();
    let out = run(&m, &[("x", x)]);
    assert_eq!(out[0].1.dtype(), DType::Bool);
    assert_eq!(
        out[0]
            .1
            .to_array::<bool>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [true]
    );
    assert_eq!(
        out[1]
            .1
            .to_array::<bool>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [false]
    );
}

#[test]
fn opset_6_broadcast_with_axis_aligns_b_at_the_axis() {
    let m = model(
        6,
        vec![node(
            "Add",
            "add",
            &["x", "b"],
            &["y"],
            vec![("broadcast", A::I(1)), ("axis", A::I(1))],
        )],
        vec![value("x", DType::F32, &[1, 2, 2])],
        vec![tensor("b", &f32s(&[2], &[10.0, 20.0]))],
        vec![value("y", DType::F32, &[1, 2, 2])],
    );
    let out = run(&m, &[("x", f32s(&[1, 2, 2], &[1.0, 2.0, 3.0, 4.0]))]);
    assert_eq!(vals(&out[0].1), [11.0, 12.0, 23.0, 24.0]);
}
