//! GroupNormalization, LpNormalization, OneHot, Compress and NonZero on small models
//! built in Rust: what they import to, the values they give, and their
//! refusals.

use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, ImportError, Options};
use vigil_testkit::onnx::*;

fn ops_of(m: &onnx_protobuf::ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

#[test]
fn group_norm_takes_per_group_or_per_channel_affine() {
    let x = f32s(&[1, 4, 1], &[1.0, 3.0, 2.0, 6.0]);
    for (opset, scale, bias, want) in [
        (18, vec![1.0f32, 2.0], vec![0.0f32, 1.0], [-1.0, 1.0, -1.0, 3.0]),
        (
            21,
            vec![1.0, 2.0, 3.0, 4.0],
            vec![0.0, 0.0, 0.0, 10.0],
            [-1.0, 2.0, -3.0, 14.0],
        ),
    ] {
        let n = scale.len();
        let m = model(
            opset,
            vec![node(
                "GroupNormalization",
                "gn",
                &["x", "s", "b"],
                &["y"],
                vec![("num_groups", A::I(2)), ("epsilon", A::F(0.0))],
            )],
            vec![value("x", DType::F32, &[1, 4, 1])],
            vec![tensor("s", &f32s(&[n], &scale)), tensor("b", &f32s(&[n], &bias))],
            vec![value("y", DType::F32, &[1, 4, 1])],
        );
        assert_eq!(ops_of(&m), ["group_norm"]);
        assert_eq!(vals(&run(&m, &[("x", x.clone())])[0].1), want);
    }
}

#[test]
fn lp_normalization_divides_by_the_norm_and_refuses_other_p() {
    let mk = |p: i64| {
        model(
            1,
            vec![node(
                "LpNormalization",
                "lp",
                &["x"],
                &["y"],
                vec![("p", A::I(p)), ("axis", A::I(1))],
            )],
            vec![value("x", DType::F32, &[2, 2])],
            vec![],
            vec![value("y", DType::F32, &[2, 2])],
        )
    };
    let out = run(&mk(1), &[("x", f32s(&[2, 2], &[-1.0, 3.0, 0.0, 0.0]))]);
    assert_eq!(vals(&out[0].1), [-0.25, 0.75, 0.0, 0.0]);
    let e = import(&round_trip(&mk(3)), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::BadAttr { node, attr, .. } if node == "lp" && attr == "p"),
        "{e}"
    );
}

#[test]
fn one_hot_needs_its_depth_at_import_time() {
    let mk = |depth_known: bool| {
        let depth = tensor("depth", &Tensor::from_vec(&[], vec![3.0f32]).unwrap());
        let mut inputs = vec![value("i", DType::I64, &[2])];
        let mut inits = vec![tensor("v", &f32s(&[2], &[0.0, 5.0]))];
        if depth_known {
            inits.push(depth);
        } else {
            inputs.push(value("depth", DType::F32, &[]));
        }
        model(
            11,
            vec![node(
                "OneHot",
                "oh",
                &["i", "depth", "v"],
                &["y"],
                vec![("axis", A::I(0))],
            )],
            inputs,
            inits,
            vec![value("y", DType::F32, &[3, 2])],
        )
    };
    let i = Tensor::from_vec(&[2], vec![1i64, -1]).unwrap();
    assert_eq!(vals(&run(&mk(true), &[("i", i)])[0].1), [0., 0., 5., 0., 0., 5.]);
    let e = import(&round_trip(&mk(false)), &Options::default()).unwrap_err();
    assert!(
        matches!(&e, ImportError::Unsupported { node, .. } if node == "oh"),
        "{e}"
    );
}

#[test]
fn compress_output_length_is_decided_when_it_runs() {
    let m = model(
        11,
        vec![node(
            "Compress",
            "c",
            &["x", "cond"],
            &["y"],
            vec![("axis", A::I(0))],
        )],
        vec![value("x", DType::F32, &[3, 2]), value("cond", DType::Bool, &[3])],
        vec![],
        vec![value("y", DType::F32, &[-1, 2])],
    );
    assert_eq!(ops_of(&m), ["compress"]);
    let x = f32s(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let cond = Tensor::from_vec(&[3], vec![true, false, true]).unwrap();
    let out = run(&m, &[("x", x), ("cond", cond)]);
    assert_eq!(out[0].1.shape(), [2, 2]);
    assert_eq!(vals(&out[0].1), [1.0, 2.0, 5.0, 6.0]);
}

#[test]
fn non_zero_indices_feed_a_gather_nd_as_masks_do() {
    // NonZero -> Transpose -> GatherND: the nonzero values, in C order.
    let m = model(
        13,
        vec![
            node("NonZero", "nz", &["mask"], &["idx"], vec![]),
            node(
                "Transpose",
                "t",
                &["idx"],
                &["idx_t"],
                vec![("perm", A::Ints(vec![1, 0]))],
            ),
            node("GatherND", "g", &["x", "idx_t"], &["y"], vec![]),
        ],
        vec![
            value("x", DType::F32, &[2, 3]),
            value("mask", DType::Bool, &[2, 3]),
        ],
        vec![],
        vec![value("idx", DType::I64, &[2, -1]), value("y", DType::F32, &[-1])],
    );
    assert_eq!(ops_of(&m), ["non_zero", "transpose", "gather_nd"]);
    let x = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let mask = Tensor::from_vec(&[2, 3], vec![false, true, false, true, false, true]).unwrap();
    let out = run(&m, &[("x", x.clone()), ("mask", mask)]);
    let idx = &out.iter().find(|(n, _)| n == "idx").unwrap().1;
    assert_eq!(idx.shape(), [2, 3]);
    assert_eq!(vals(idx), [0.0, 1.0, 1.0, 1.0, 0.0, 2.0]);
    let y = &out.iter().find(|(n, _)| n == "y").unwrap().1;
    assert_eq!(vals(y), [2.0, 4.0, 6.0]);
    // An all-false mask: no indices, nothing gathered.
    let none = Tensor::from_vec(&[2, 3], vec![false; 6]).unwrap();
    let out = run(&m, &[("x", x), ("mask", none)]);
    assert_eq!(out.iter().find(|(n, _)| n == "idx").unwrap().1.shape(), [2, 0]);
    assert_eq!(out.iter().find(|(n, _)| n == "y").unwrap().1.shape(), [0]);
}

#[test]
fn shape_and_size_of_a_run_time_shape_are_read_when_they_run() {
    let m = model(
        15,
        vec![
            node("NonZero", "nz", &["mask"], &["idx"], vec![]),
            node("Shape", "s", &["idx"], &["n"], vec![("start", A::I(-1))]),
            node("Shape", "r", &["idx"], &["rank"], vec![("end", A::I(1))]),
            node("Size", "z", &["idx"], &["count"], vec![]),
        ],
        vec![value("mask", DType::I32, &[4])],
        vec![],
        vec![
            value("n", DType::I64, &[1]),
            value("rank", DType::I64, &[1]),
            value("count", DType::I64, &[]),
        ],
    );
    // The rank is known at import time (folded); the count is not.
    let ops = ops_of(&m);
    assert_eq!(ops.iter().filter(|o| *o == "shape").count(), 1, "{ops:?}");
    assert!(ops.iter().any(|o| o == "size"), "{ops:?}");
    let mask = Tensor::from_vec(&[4], vec![3i32, 0, 0, -1]).unwrap();
    let out = run(&m, &[("mask", mask)]);
    let get = |name: &str| vals(&out.iter().find(|(n, _)| n == name).unwrap().1);
    assert_eq!(get("n"), [2.0]);
    // A folded graph output is a copy of its constant, under its own name.
    assert_eq!(get("rank.out"), [1.0]);
    assert_eq!(get("count"), [2.0]);
}
