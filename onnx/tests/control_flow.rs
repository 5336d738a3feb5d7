//! If on small models built in Rust: both branches become body graphs of
//! one `if` node, the outer values they read become its inputs, a
//! condition known at import time inlines its branch, and the imported
//! case runs the branch its condition picks.

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
