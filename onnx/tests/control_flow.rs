//! If, Loop and Scan on small models built in Rust: each subgraph becomes
//! a body graph of one node, the outer values it reads become the node's
//! inputs, a condition known at import time inlines its branch, and the
//! imported case runs as ONNX says. A data set's input values reach the
//! shape arithmetic inside a body.

use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, Options};
use vigil_testkit::onnx::*;

fn ops_of(m: &onnx_protobuf::ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

fn cond(c: bool) -> Tensor {
    Tensor::from_vec(&[], vec![c]).unwrap()
}

/// `y = If(c)`: then `y = nx + k` (nx = Neg(x) computed outside, k an
/// initializer outside), else `y = x * big` (big an outer initializer too
/// large to copy into the body). `c` is a graph input, or a constant.
fn if_model(c: Option<bool>) -> onnx_protobuf::ModelProto {
    let then_g = graph(
        "then",
        vec![node("Add", "add", &["nx", "k"], &["t"], vec![])],
        vec![],
        vec![],
        vec![value("t", DType::F32, &[-1])],
    );
    let else_g = graph(
        "else",
        vec![node("Mul", "mul", &["x", "big"], &["e"], vec![])],
        vec![],
        vec![],
        vec![value("e", DType::F32, &[-1])],
    );
    let mut inputs = vec![value("x", DType::F32, &[5000])];
    let mut inits = vec![
        tensor("k", &f32s(&[1], &[10.])),
        tensor("big", &f32s(&[5000], &vec![2.; 5000])),
    ];
    match c {
        None => inputs.push(value("c", DType::Bool, &[])),
        Some(v) => inits.push(tensor("c", &cond(v))),
    }
    model(
        13,
        vec![
            node("Neg", "neg", &["x"], &["nx"], vec![]),
            node(
                "If",
                "pick",
                &["c"],
                &["y"],
                vec![
                    ("then_branch", A::G(Box::new(then_g))),
                    ("else_branch", A::G(Box::new(else_g))),
                ],
            ),
        ],
        inputs,
        inits,
        vec![value("y", DType::F32, &[5000])],
    )
}

#[test]
fn both_branches_become_bodies_reading_outer_values_through_the_node() {
    let m = if_model(None);
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["neg", "if"]);
    // cond, then the run-time values and the large constant the bodies
    // read; the small constant k is copied into the then body.
    let pick = &imported.file.nodes[1];
    assert_eq!(pick.inputs, ["c", "nx", "x", "big"]);
    let then_b = &pick.attrs.0["then_branch"];
    assert_eq!(then_b["inputs"].as_array().unwrap().len(), 3);
    assert_eq!(then_b["constants"][0]["name"], "k");

    let x = f32s(&[5000], &(0..5000).map(|v| v as f32).collect::<Vec<_>>());
    let out = run(&m, &[("c", cond(true)), ("x", x.clone())]);
    assert_eq!(vals(&out[0].1)[..3], [10., 9., 8.]);
    let out = run(&m, &[("c", cond(false)), ("x", x)]);
    assert_eq!(vals(&out[0].1)[..3], [0., 2., 4.]);
}

#[test]
fn a_constant_condition_imports_the_branch_it_takes() {
    // y is the branch's output under another name: a copy, as for any alias.
    assert_eq!(ops_of(&if_model(Some(true))), ["neg", "add", "copy"]);
    // Neg stays: the outer graph computes nx whichever branch reads it.
    assert_eq!(ops_of(&if_model(Some(false))), ["neg", "mul", "copy"]);
    let x = f32s(&[5000], &vec![1.; 5000]);
    let out = run(&if_model(Some(true)), &[("x", x)]);
    assert_eq!(vals(&out[0].1)[..2], [9., 9.]);
}

#[test]
fn a_nested_if_reads_values_two_scopes_out() {
    // outer: y = If(c) then { z = If(d) then { a = x + 1 } else { b = -x } ; z } else { x2 = x * x }
    let one = tensor("one", &f32s(&[], &[1.]));
    let inner = node(
        "If",
        "inner",
        &["d"],
        &["z"],
        vec![
            (
                "then_branch",
                A::G(Box::new(graph(
                    "a",
                    vec![node("Add", "a", &["x", "one"], &["a"], vec![])],
                    vec![],
                    vec![one],
                    vec![value("a", DType::F32, &[2])],
                ))),
            ),
            (
                "else_branch",
                A::G(Box::new(graph(
                    "b",
                    vec![node("Neg", "b", &["x"], &["b"], vec![])],
                    vec![],
                    vec![],
                    vec![value("b", DType::F32, &[2])],
                ))),
            ),
        ],
    );
    let m = model(
        13,
        vec![node(
            "If",
            "outer",
            &["c"],
            &["y"],
            vec![
                (
                    "then_branch",
                    A::G(Box::new(graph(
                        "t",
                        vec![inner],
                        vec![],
                        vec![],
                        vec![value("z", DType::F32, &[2])],
                    ))),
                ),
                (
                    "else_branch",
                    A::G(Box::new(graph(
                        "e",
                        vec![node("Mul", "sq", &["x", "x"], &["x2"], vec![])],
                        vec![],
                        vec![],
                        vec![value("x2", DType::F32, &[2])],
                    ))),
                ),
            ],
        )],
        vec![
            value("c", DType::Bool, &[]),
            value("d", DType::Bool, &[]),
            value("x", DType::F32, &[2]),
        ],
        vec![],
        vec![value("y", DType::F32, &[2])],
    );
    let x = f32s(&[2], &[3., 4.]);
    for (c, d, want) in [
        (true, true, [4., 5.]),
        (true, false, [-3., -4.]),
        (false, true, [9., 16.]),
    ] {
        let out = run(&m, &[("c", cond(c)), ("d", cond(d)), ("x", x.clone())]);
        assert_eq!(vals(&out[0].1), want, "c={c} d={d}");
    }
}

#[test]
fn a_branch_reading_an_undefined_name_is_refused() {
    let m = model(
        13,
        vec![node(
            "If",
            "pick",
            &["c"],
            &["y"],
            vec![
                (
                    "then_branch",
                    A::G(Box::new(graph(
                        "t",
                        vec![node("Neg", "n", &["nowhere"], &["t"], vec![])],
                        vec![],
                        vec![],
                        vec![value("t", DType::F32, &[1])],
                    ))),
                ),
                (
                    "else_branch",
                    A::G(Box::new(graph(
                        "e",
                        vec![],
                        vec![],
                        vec![],
                        vec![value("c2", DType::F32, &[1])],
                    ))),
                ),
            ],
        )],
        vec![value("c", DType::Bool, &[])],
        vec![],
        vec![value("y", DType::F32, &[1])],
    );
    let e = import(&round_trip(&m), &Options::default()).unwrap_err();
    assert!(matches!(e, vigil_onnx::ImportError::UndefinedInput { .. }), "{e}");
    assert!(e.to_string().contains("nowhere"), "{e}");
}

/// `y, ys = Loop(M, "", y0)` with body `(i, c, y) -> (c, y + nx, y + nx)`,
/// `nx = Neg(x)` computed outside (a captured run-time value).
fn loop_model() -> onnx_protobuf::ModelProto {
    let body = graph(
        "body",
        vec![
            node("Identity", "keep", &["c_in"], &["c_out"], vec![]),
            node("Add", "add", &["y_in", "nx"], &["y_out"], vec![]),
            node("Identity", "scan", &["y_out"], &["s_out"], vec![]),
        ],
        vec![
            value("i", DType::I64, &[]),
            value("c_in", DType::Bool, &[]),
            value("y_in", DType::F32, &[2]),
        ],
        vec![],
        vec![
            value("c_out", DType::Bool, &[]),
            value("y_out", DType::F32, &[2]),
            value("s_out", DType::F32, &[2]),
        ],
    );
    model(
        16,
        vec![
            node("Neg", "neg", &["x"], &["nx"], vec![]),
            node(
                "Loop",
                "lp",
                &["m", "", "y0"],
                &["y", "ys"],
                vec![("body", A::G(Box::new(body)))],
            ),
        ],
        vec![
            value("m", DType::I64, &[]),
            value("x", DType::F32, &[2]),
            value("y0", DType::F32, &[2]),
        ],
        vec![],
        vec![value("y", DType::F32, &[2]), value("ys", DType::F32, &[-1, 2])],
    )
}

#[test]
fn loop_imports_as_one_node_carrying_its_values() {
    let m = loop_model();
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["neg", "loop"]);
    let lp = &imported.file.nodes[1];
    // M, the absent cond (an empty constant), y0, then the captured nx.
    assert_eq!(lp.inputs.len(), 4);
    assert_eq!(lp.inputs[3], "nx");
    assert_eq!(lp.attrs.i64("carried").unwrap(), Some(1));
    assert_eq!(imported.values[&lp.inputs[1]].shape(), [0]);
    let x = f32s(&[2], &[1., 2.]);
    let y0 = f32s(&[2], &[10., 20.]);
    let m3 = Tensor::from_vec(&[], vec![3i64]).unwrap();
    let out = run(&m, &[("m", m3), ("x", x.clone()), ("y0", y0.clone())]);
    // Written out: y0 - x, y0 - 2x, y0 - 3x.
    assert_eq!(vals(&out[0].1), [7., 14.]);
    assert_eq!(out[1].1.shape(), [3, 2]);
    assert_eq!(vals(&out[1].1), [9., 18., 8., 16., 7., 14.]);
    let m0 = Tensor::from_vec(&[], vec![0i64]).unwrap();
    let out = run(&m, &[("m", m0), ("x", x), ("y0", y0)]);
    assert_eq!(vals(&out[0].1), [10., 20.]);
    assert_eq!(out[1].1.shape(), [0, 2]);
}

/// `total, ys = Scan(init, xs)` over the columns of xs (axis 1), last
/// column first, `ys` stacked in reverse.
fn scan_model(opset: i64) -> onnx_protobuf::ModelProto {
    let body = graph(
        "body",
        vec![
            node("Add", "add", &["t_in", "x"], &["t_out"], vec![]),
            node("Identity", "y", &["t_out"], &["y"], vec![]),
        ],
        vec![value("t_in", DType::F32, &[2]), value("x", DType::F32, &[2])],
        vec![],
        vec![value("t_out", DType::F32, &[2]), value("y", DType::F32, &[2])],
    );
    model(
        opset,
        vec![node(
            "Scan",
            "sc",
            &["init", "xs"],
            &["total", "ys"],
            vec![
                ("body", A::G(Box::new(body))),
                ("num_scan_inputs", A::I(1)),
                ("scan_input_axes", A::Ints(vec![1])),
                ("scan_input_directions", A::Ints(vec![1])),
                ("scan_output_directions", A::Ints(vec![1])),
            ],
        )],
        vec![value("init", DType::F32, &[2]), value("xs", DType::F32, &[2, 3])],
        vec![],
        vec![value("total", DType::F32, &[2]), value("ys", DType::F32, &[3, 2])],
    )
}

#[test]
fn scan_imports_with_every_axis_and_direction() {
    let m = scan_model(11);
    let imported = import(&round_trip(&m), &Options::default()).unwrap();
    let sc = &imported.file.nodes[0];
    assert_eq!(sc.op, "scan");
    assert_eq!(sc.attrs.i64_list("scan_input_axes").unwrap(), Some(vec![1]));
    assert_eq!(sc.attrs.i64_list("scan_output_axes").unwrap(), Some(vec![0]));
    assert_eq!(
        sc.attrs.i64_list("scan_output_directions").unwrap(),
        Some(vec![1])
    );
    let init = f32s(&[2], &[0., 0.]);
    let xs = f32s(&[2, 3], &[1., 10., 100., 2., 20., 200.]);
    let out = run(&m, &[("init", init), ("xs", xs)]);
    assert_eq!(vals(&out[0].1), [111., 222.]);
    // Columns last first: totals (100, 200), (110, 220), (111, 222),
    // stacked in reverse.
    assert_eq!(vals(&out[1].1), [111., 222., 110., 220., 100., 200.]);
}

/// Opset 8's `total, ys = Scan(lens, init, xs)`: a leading batch axis of
/// 2, xs `[2, 3, 2]` scanned in reverse; `lens` an initializer when given.
fn scan8_model(lens: Option<&[i64]>) -> onnx_protobuf::ModelProto {
    let body = graph(
        "body",
        vec![
            node("Add", "add", &["t_in", "x"], &["t_out"], vec![]),
            node("Identity", "y", &["t_out"], &["y"], vec![]),
        ],
        vec![value("t_in", DType::F32, &[2]), value("x", DType::F32, &[2])],
        vec![],
        vec![value("t_out", DType::F32, &[2]), value("y", DType::F32, &[2])],
    );
    model(
        8,
        vec![node(
            "Scan",
            "sc",
            &[if lens.is_some() { "lens" } else { "" }, "init", "xs"],
            &["total", "ys"],
            vec![
                ("body", A::G(Box::new(body))),
                ("num_scan_inputs", A::I(1)),
                ("directions", A::Ints(vec![1])),
            ],
        )],
        vec![
            value("init", DType::F32, &[2, 2]),
            value("xs", DType::F32, &[2, 3, 2]),
        ],
        lens.map(|l| tensor("lens", &Tensor::from_i64s(l)))
            .into_iter()
            .collect(),
        vec![
            value("total", DType::F32, &[2, 2]),
            value("ys", DType::F32, &[2, 3, 2]),
        ],
    )
}

#[test]
fn opset_8_scan_runs_each_batch_entry() {
    let init = f32s(&[2, 2], &[0., 0., 100., 100.]);
    let xs = f32s(
        &[2, 3, 2],
        &[1., 10., 2., 20., 3., 30., 4., 40., 5., 50., 6., 60.],
    );
    for lens in [None, Some(&[3i64, 3][..])] {
        let m = scan8_model(lens);
        let out = run(&m, &[("init", init.clone()), ("xs", xs.clone())]);
        assert_eq!(out[0].1.shape(), [2, 2]);
        assert_eq!(vals(&out[0].1), [6., 60., 115., 250.]);
        // Written out: each entry's running sums, last row first, in the
        // order the rows are visited.
        assert_eq!(out[1].1.shape(), [2, 3, 2]);
        assert_eq!(
            vals(&out[1].1),
            [3., 30., 5., 50., 6., 60., 106., 160., 111., 210., 115., 250.]
        );
    }
    let e = import(&round_trip(&scan8_model(Some(&[3, 2]))), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, vigil_onnx::ImportError::Unsupported { node, msg, .. } if node == "sc" && msg.contains("sequence_lens")),
        "{e}"
    );
}

/// `z = Unsqueeze(If(c), -1)`: the then branch gives a 0-d value, the else
/// branch x `[2]` negated, so the If's rank depends on c.
fn rank_by_branch_model() -> onnx_protobuf::ModelProto {
    let branch = |name: &str, from: &str| {
        graph(
            name,
            vec![node("Neg", "neg", &[from], &[name], vec![])],
            vec![],
            vec![],
            vec![value(name, DType::F32, &[])],
        )
    };
    model(
        13,
        vec![
            node(
                "If",
                "pick",
                &["c"],
                &["y"],
                vec![
                    ("then_branch", A::G(Box::new(branch("t", "k")))),
                    ("else_branch", A::G(Box::new(branch("e", "x")))),
                ],
            ),
            node("Unsqueeze", "unsq", &["y", "axes"], &["z"], vec![]),
        ],
        vec![value("c", DType::Bool, &[]), value("x", DType::F32, &[2])],
        vec![
            tensor("k", &f32s(&[], &[5.])),
            tensor("axes", &Tensor::from_i64s(&[-1])),
        ],
        vec![value("z", DType::F32, &[-1, 1])],
    )
}

#[test]
fn an_if_whose_rank_depends_on_its_branch_takes_the_data_sets() {
    use onnx_protobuf::Message;
    let m = round_trip(&rank_by_branch_model());
    let e = import(&m, &Options::default()).unwrap_err();
    assert!(
        matches!(&e, vigil_onnx::ImportError::Unsupported { node, .. } if node == "unsq"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let x = f32s(&[2], &[1.5, -2.]);
    std::fs::write(
        dir.path().join("input_0.pb"),
        tensor("c", &cond(false)).write_to_bytes().unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("input_1.pb"),
        tensor("x", &x).write_to_bytes().unwrap(),
    )
    .unwrap();
    // The else branch: -x, a trailing axis added.
    let z = tensor("z", &f32s(&[2, 1], &[-1.5, 2.]));
    std::fs::write(dir.path().join("output_0.pb"), z.write_to_bytes().unwrap()).unwrap();
    let imported = vigil_onnx::import_with(&m, &Options::default(), Some(dir.path())).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    // The If stays a node (c still decides when it runs).
    assert_eq!(ops, ["if", "expand_dims"]);
    let case = dir.path().join("case");
    vigil_onnx::write_case(
        &imported,
        &vigil_onnx::InputSource::DataSet(dir.path().into()),
        &case,
    )
    .unwrap();
    let g = vigil_engine::Graph::load(case.join("graph.json"), &vigil_engine::OpRegistry::builtin()).unwrap();
    let feeds = [("c".to_string(), cond(false)), ("x".to_string(), x)]
        .into_iter()
        .collect();
    let out = vigil_engine::Executor::new(&g)
        .unwrap()
        .run(&feeds)
        .unwrap()
        .outputs;
    assert_eq!(out[0].1.shape(), [2, 1]);
    assert_eq!(vals(&out[0].1), [-1.5, 2.]);
}

/// `z = If(c)` with both branches `ConstantOfShape(n + 1)`: the shape is
/// a graph input, known only from the data set, read inside a body.
fn shape_in_branch_model() -> onnx_protobuf::ModelProto {
    let branch = |name: &str, v: f32| {
        graph(
            name,
            vec![node(
                "ConstantOfShape",
                "fill",
                &["n1"],
                &["z"],
                vec![("value", A::T(Box::new(tensor("v", &f32s(&[1], &[v])))))],
            )],
            vec![],
            vec![],
            vec![value("z", DType::F32, &[-1])],
        )
    };
    model(
        13,
        vec![
            node("Add", "inc", &["n", "one"], &["n1"], vec![]),
            node(
                "If",
                "pick",
                &["c"],
                &["z"],
                vec![
                    ("then_branch", A::G(Box::new(branch("t", 1.)))),
                    ("else_branch", A::G(Box::new(branch("e", 2.)))),
                ],
            ),
        ],
        vec![value("c", DType::Bool, &[]), value("n", DType::I64, &[1])],
        vec![tensor("one", &Tensor::from_i64s(&[1]))],
        vec![value("z", DType::F32, &[-1])],
    )
}

#[test]
fn a_data_sets_value_reaches_shape_arithmetic_inside_a_body() {
    use onnx_protobuf::Message;
    let m = round_trip(&shape_in_branch_model());
    let e = import(&m, &Options::default()).unwrap_err();
    assert!(matches!(e, vigil_onnx::ImportError::Unsupported { .. }), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let c = tensor("c", &cond(false));
    let n = tensor("n", &Tensor::from_i64s(&[3]));
    std::fs::write(dir.path().join("input_0.pb"), c.write_to_bytes().unwrap()).unwrap();
    std::fs::write(dir.path().join("input_1.pb"), n.write_to_bytes().unwrap()).unwrap();
    let z = tensor("z", &f32s(&[4], &[2.; 4]));
    std::fs::write(dir.path().join("output_0.pb"), z.write_to_bytes().unwrap()).unwrap();
    // n + 1 is computed by a node that still reads n, and its value for
    // this data set is known inside both branches.
    let imported = vigil_onnx::import_with(&m, &Options::default(), Some(dir.path())).unwrap();
    let ops: Vec<&str> = imported.file.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["add", "if"]);
    let case = dir.path().join("case");
    vigil_onnx::write_case(
        &imported,
        &vigil_onnx::InputSource::DataSet(dir.path().into()),
        &case,
    )
    .unwrap();
    let g = vigil_engine::Graph::load(case.join("graph.json"), &vigil_engine::OpRegistry::builtin()).unwrap();
    let feeds = [
        ("c".to_string(), cond(false)),
        ("n".to_string(), Tensor::from_i64s(&[3])),
    ]
    .into_iter()
    .collect();
    let out = vigil_engine::Executor::new(&g)
        .unwrap()
        .run(&feeds)
        .unwrap()
        .outputs;
    assert_eq!(vals(&out[0].1), [2., 2., 2., 2.]);
}
