//! Slice on small models built in Rust: bounds known at import time become
//! a `create_view`, bounds computed when the model runs the `slice` op,
//! and both give ONNX's slice.

use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, Options};
use vigil_testkit::onnx::*;

fn i64s(v: &[i64]) -> Tensor {
    Tensor::from_vec(&[v.len()], v.to_vec()).unwrap()
}

fn ops_of(m: &onnx_protobuf::ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

/// `y = Slice(x, starts, ends, axes, steps)` on a `[3, 5]` x, the bounds
/// either constants or graph inputs.
fn slice_model(fed: bool, bounds: [&[i64]; 4]) -> onnx_protobuf::ModelProto {
    let names = ["starts", "ends", "axes", "steps"];
    let (inputs, inits) = if fed {
        let mut ins = vec![value("x", DType::F32, &[3, 5])];
        ins.extend(
            names
                .iter()
                .zip(bounds)
                .map(|(n, b)| value(n, DType::I64, &[b.len() as i64])),
        );
        (ins, vec![])
    } else {
        let inits = names
            .iter()
            .zip(bounds)
            .map(|(n, b)| tensor(n, &i64s(b)))
            .collect();
        (vec![value("x", DType::F32, &[3, 5])], inits)
    };
    model(
        13,
        vec![node(
            "Slice",
            "s",
            &["x", "starts", "ends", "axes", "steps"],
            &["y"],
            vec![],
        )],
        inputs,
        inits,
        vec![value("y", DType::F32, &[-1, -1])],
    )
}

#[test]
fn constant_bounds_are_a_view_and_fed_bounds_the_slice_op_with_the_same_result() {
    let x = f32s(&[3, 5], &(0..15).map(|v| v as f32).collect::<Vec<_>>());
    let cases: [([&[i64]; 4], Vec<f64>); 4] = [
        // Rows 2 and 1 backwards, every other column from 1.
        (
            [&[-1, 1], &[0, i64::MAX], &[0, -1], &[-1, 2]],
            vec![11., 13., 6., 8.],
        ),
        // Backwards from past the end to before the start: all of it.
        ([&[i64::MAX], &[i64::MIN], &[1], &[-1]], {
            (0..3)
                .flat_map(|r| (0..5).rev().map(move |c| (r * 5 + c) as f64))
                .collect()
        }),
        // ONNX clamps a start before the axis to element 0 going
        // backwards (numpy would keep nothing).
        ([&[-100], &[i64::MIN], &[1], &[-1]], vec![0., 5., 10.]),
        // A start past the end going forwards: nothing.
        ([&[1000], &[i64::MAX], &[0], &[1]], vec![]),
    ];
    for (bounds, want) in cases {
        let folded = slice_model(false, bounds);
        assert_eq!(ops_of(&folded), ["create_view"]);
        let out = run(&folded, &[("x", x.clone())]);
        assert_eq!(vals(&out[0].1), want, "folded {bounds:?}");

        let fed = slice_model(true, bounds);
        assert_eq!(ops_of(&fed), ["slice"]);
        let mut feeds = vec![("x", x.clone())];
        feeds.extend(
            ["starts", "ends", "axes", "steps"]
                .into_iter()
                .zip(bounds.map(i64s)),
        );
        let out = run(&fed, &feeds);
        assert_eq!(vals(&out[0].1), want, "fed {bounds:?}");
    }
}

#[test]
fn run_time_bounds_without_axes_and_steps_slice_the_leading_axes() {
    // starts computed from x's data: Shape would fold, an input does not.
    let m = model(
        13,
        vec![
            node("Neg", "n", &["e"], &["ne"], vec![]),
            node("Slice", "s", &["x", "b", "ne"], &["y"], vec![]),
        ],
        vec![
            value("x", DType::F32, &[4]),
            value("b", DType::I32, &[1]),
            value("e", DType::I32, &[1]),
        ],
        vec![],
        vec![value("y", DType::F32, &[-1])],
    );
    assert_eq!(ops_of(&m), ["neg", "slice"]);
    let i32s = |v: i32| Tensor::from_vec(&[1], vec![v]).unwrap();
    let x = f32s(&[4], &[1., 2., 3., 4.]);
    let out = run(&m, &[("x", x), ("b", i32s(1)), ("e", i32s(1))]);
    assert_eq!(vals(&out[0].1), [2., 3.]);
}
