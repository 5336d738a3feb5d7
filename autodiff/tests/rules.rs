//! Finite-difference checks (f64) of every built-in gradient rule.

mod common;

use std::collections::HashMap;

use common::{assert_grads, assert_grads_with, param, positive};
use vigil_autodiff::GradCheckConfig;
use vigil_engine::{Attrs, DType, GraphBuilder, IndexSpec, Sym, Tensor};

fn attrs() -> Attrs {
    Attrs::new()
}

#[test]
fn binary_ops_with_broadcasting() {
    for op in ["add", "sub", "mul", "div", "maximum", "minimum"] {
        for (sa, sb) in [
            (&[2usize, 3][..], &[3usize][..]),
            (&[2, 3], &[2, 1]),
            (&[1, 3], &[2, 1]),
            (&[], &[2, 2]),
        ] {
            let b = GraphBuilder::new(op);
            let a = param(&b, "a", sa);
            let c = param(&b, "c", sb);
            let y = a.op(op, &[&c], attrs()).unwrap();
            assert_grads(&b, &y, &["a", "c"]);
        }
    }
}

#[test]
fn pow_on_positive_bases() {
    let b = GraphBuilder::new("pow");
    let a = positive(&b, "a", &[2, 3]);
    let e = param(&b, "e", &[3]);
    assert_grads(&b, &a.pow(&e).unwrap(), &["a", "e"]);
}

#[test]
fn unary_ops() {
    for op in ["neg", "abs", "relu", "exp", "tanh", "sigmoid", "copy"] {
        let b = GraphBuilder::new(op);
        let x = param(&b, "x", &[2, 3]);
        assert_grads(&b, &x.op(op, &[], attrs()).unwrap(), &["x"]);
    }
    for op in ["log", "sqrt"] {
        let b = GraphBuilder::new(op);
        let x = positive(&b, "x", &[2, 3]);
        assert_grads(&b, &x.op(op, &[], attrs()).unwrap(), &["x"]);
    }
}

#[test]
fn where_routes_each_side() {
    let b = GraphBuilder::new("where");
    let cond = b.constant(
        "cond",
        Tensor::from_vec(&[2, 3], vec![true, false, true, false, false, true]).unwrap(),
    );
    let x = param(&b, "x", &[2, 3]);
    let y = param(&b, "y", &[3]);
    assert_grads(&b, &cond.op("where", &[&x, &y], attrs()).unwrap(), &["x", "y"]);
}

#[test]
fn cast_round_trip() {
    let b = GraphBuilder::new("cast");
    let x = param(&b, "x", &[4]);
    let y = x.cast(DType::F32).unwrap().cast(DType::F64).unwrap();
    // f32 rounding: a wide step keeps the difference quotient accurate.
    let cfg = GradCheckConfig {
        eps: 1e-2,
        atol: 1e-4,
        ..GradCheckConfig::default()
    };
    assert_grads_with(&b, &y, &["x"], &HashMap::new(), &cfg);
}

#[test]
fn matmul_numpy_rules() {
    let cases: [(&[usize], &[usize]); 7] = [
        (&[2, 3], &[3, 4]),
        (&[3], &[3, 4]),
        (&[2, 3], &[3]),
        (&[3], &[3]),
        (&[2, 2, 3], &[3, 4]),
        (&[3], &[2, 3, 2]),
        (&[2, 1, 2, 3], &[3, 3, 2]),
    ];
    for (sa, sb) in cases {
        let b = GraphBuilder::new("matmul");
        let a = param(&b, "a", sa);
        let c = param(&b, "c", sb);
        let y = a.matmul(&c).unwrap();
        let y = if y.ty().rank() == Some(0) {
            y.reshape(&[1]).unwrap()
        } else {
            y
        };
        assert_grads(&b, &y, &["a", "c"]);
    }
}

#[test]
fn reductions() {
    let axes_cases: [Option<Vec<i64>>; 5] = [
        None,
        Some(vec![0]),
        Some(vec![-1]),
        Some(vec![0, 2]),
        Some(vec![]),
    ];
    for op in ["sum", "mean", "max", "min"] {
        for axes in &axes_cases {
            for keepdims in [false, true] {
                let b = GraphBuilder::new(op);
                let x = param(&b, "x", &[2, 3, 2]);
                let mut a = attrs().with("keepdims", keepdims);
                if let Some(ax) = axes {
                    a = a.with("axes", ax.clone());
                }
                let y = x.op(op, &[], a).unwrap();
                let y = if y.ty().rank() == Some(0) {
                    y.reshape(&[1]).unwrap()
                } else {
                    y
                };
                assert_grads(&b, &y, &["x"]);
            }
        }
    }
}

#[test]
fn softmax_family() {
    for op in ["softmax", "log_softmax"] {
        for axis in [0i64, -1] {
            let b = GraphBuilder::new(op);
            let x = param(&b, "x", &[3, 4]);
            assert_grads(&b, &x.op(op, &[], attrs().with("axis", axis)).unwrap(), &["x"]);
        }
    }
}

#[test]
fn cross_entropy_and_mse() {
    let b = GraphBuilder::new("ce");
    let x = param(&b, "x", &[4, 3]);
    let labels = b.constant("labels", Tensor::from_vec(&[4], vec![0i64, 2, 1, 2]).unwrap());
    let y = x
        .op("cross_entropy", &[&labels], attrs())
        .unwrap()
        .reshape(&[1])
        .unwrap();
    assert_grads(&b, &y, &["x"]);

    let b = GraphBuilder::new("mse");
    let p = param(&b, "p", &[2, 3]);
    let t = param(&b, "t", &[3]);
    let y = p.mse(&t).unwrap().reshape(&[1]).unwrap();
    assert_grads(&b, &y, &["p", "t"]);
}

#[test]
fn shape_ops() {
    let b = GraphBuilder::new("shape");
    let x = param(&b, "x", &[2, 3, 1]);
    let y = x.reshape(&[3, -1]).unwrap();
    assert_grads(&b, &y, &["x"]);
    let b = GraphBuilder::new("shape");
    let x = param(&b, "x", &[2, 3, 4]);
    assert_grads(&b, &x.transpose(Some(&[1, 2, 0])).unwrap(), &["x"]);
    assert_grads(&b, &x.transpose(None).unwrap(), &["x"]);
    let b = GraphBuilder::new("shape");
    let x = param(&b, "x", &[2, 3]);
    assert_grads(
        &b,
        &x.op("expand_dims", &[], attrs().with("axis", -1)).unwrap(),
        &["x"],
    );
    let b = GraphBuilder::new("shape");
    let x = param(&b, "x", &[2, 1, 3, 1]);
    assert_grads(&b, &x.op("squeeze", &[], attrs()).unwrap(), &["x"]);
    assert_grads(
        &b,
        &x.op("squeeze", &[], attrs().with("axes", vec![-1])).unwrap(),
        &["x"],
    );
    let b = GraphBuilder::new("shape");
    let x = param(&b, "x", &[3, 1]);
    let y = x
        .op("broadcast_to", &[], attrs().with("shape", vec![2, 3, 4]))
        .unwrap();
    assert_grads(&b, &y, &["x"]);
}

/// Every index kind, negative points and strides, inclusive ends, new axes.
fn index_cases() -> Vec<Vec<IndexSpec>> {
    use IndexSpec::*;
    vec![
        vec![Point(1)],
        vec![Point(-1), Point(-2)],
        vec![IndexSpec::range(1, 3, 1)],
        vec![IndexSpec::range(-1, -5, -2)],
        vec![All, IndexSpec::range(4, 0, -1)],
        vec![
            All,
            Interval {
                start: 0,
                end: 2,
                stride: 2,
                inclusive: true,
            },
        ],
        vec![NewAxis, Point(0), All, NewAxis],
        vec![IndexSpec::range(0, -1, 1), NewAxis, IndexSpec::range(-1, -6, -3)],
    ]
}

#[test]
fn create_view_every_index_kind() {
    for idx in index_cases() {
        let b = GraphBuilder::new("view");
        let x = param(&b, "x", &[4, 5]);
        let y = x.view(&idx).unwrap();
        let y = if y.ty().rank() == Some(0) {
            y.reshape(&[1]).unwrap()
        } else {
            y
        };
        assert_grads(&b, &y, &["x"]);
    }
}

#[test]
fn strided_slice_every_index_kind() {
    for idx in index_cases() {
        let b = GraphBuilder::new("slice");
        let x = param(&b, "x", &[4, 5]);
        let ix: Vec<Sym> = idx.iter().map(|&i| b.index(i)).collect();
        let refs: Vec<&Sym> = ix.iter().collect();
        let y = x.op("strided_slice", &refs, attrs()).unwrap();
        let y = if y.ty().rank() == Some(0) {
            y.reshape(&[1]).unwrap()
        } else {
            y
        };
        assert_grads(&b, &y, &["x"]);
    }
}

#[test]
fn gather_with_negative_and_repeated_indices() {
    for axis in [0i64, 1, -1] {
        let b = GraphBuilder::new("gather");
        let x = param(&b, "x", &[3, 4]);
        let idx = b.constant("idx", Tensor::from_vec(&[2, 2], vec![0i64, -1, 2, 0]).unwrap());
        assert_grads(
            &b,
            &x.op("gather", &[&idx], attrs().with("axis", axis)).unwrap(),
            &["x"],
        );
    }
}

#[test]
fn concat_and_stack() {
    for axis in [0i64, 1] {
        let b = GraphBuilder::new("concat");
        let x = param(&b, "x", &[2, 3]);
        let y = param(&b, "y", &[2, 3]);
        let z = param(&b, "z", &[2, 3]);
        assert_grads(
            &b,
            &x.op("concat", &[&y, &z], attrs().with("axis", axis)).unwrap(),
            &["x", "y", "z"],
        );
        assert_grads(
            &b,
            &x.op("stack", &[&y], attrs().with("axis", axis)).unwrap(),
            &["x", "y"],
        );
    }
}

#[test]
fn set_and_inc_subtensor() {
    for op in ["set_subtensor", "inc_subtensor"] {
        for idx in [
            vec![IndexSpec::Point(1)],
            vec![IndexSpec::All, IndexSpec::range(3, 0, -2)],
        ] {
            let b = GraphBuilder::new(op);
            let x = param(&b, "x", &[3, 4]);
            let v = param(&b, "v", &[2]);
            let ix: Vec<Sym> = idx.iter().map(|&i| b.index(i)).collect();
            let mut inputs = vec![&v];
            inputs.extend(ix.iter());
            let v_shaped = if idx.len() == 1 {
                // A point selects a row of 4: broadcast a [1] value into it.
                let w = param(&b, "w", &[1]);
                let mut inputs = vec![&w];
                inputs.extend(ix.iter());
                x.op(op, &inputs, attrs()).unwrap()
            } else {
                x.op(op, &inputs, attrs()).unwrap()
            };
            let params: &[&str] = if idx.len() == 1 { &["x", "w"] } else { &["x", "v"] };
            assert_grads(&b, &v_shaped, params);
        }
    }
}

/// A variable read by several nodes sums its contributions.
#[test]
fn fan_out_accumulates() {
    let b = GraphBuilder::new("fan");
    let x = param(&b, "x", &[3]);
    let y = x
        .mul(&x)
        .unwrap()
        .add(&x.exp().unwrap())
        .unwrap()
        .mul(&x)
        .unwrap();
    assert_grads(&b, &y, &["x"]);
}
