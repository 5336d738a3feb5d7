//! View ops (transpose, reshape, expand_dims, squeeze, broadcast_to) against
//! hand-computed shapes, strides and values, on contiguous, transposed,
//! negative-stride, broadcast and empty inputs.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::*;
use vigil_engine::ops::view::{BroadcastTo, CreateView, ExpandDims, Reshape, Squeeze, Transpose};
use vigil_engine::{
    Attrs, DType, Executor, GraphBuilder, IndexSpec, Op, OpCtx, OpRegistry, Tensor, TypeInfo, ViewKind,
};

fn run(op: &dyn Op, x: &Tensor) -> vigil_engine::Result<Tensor> {
    let mut out = op.compute(std::slice::from_ref(x), &mut OpCtx::new("n"))?;
    assert_eq!(out.len(), 1);
    Ok(out.pop().unwrap())
}

fn layout(t: &Tensor) -> (Vec<usize>, Vec<isize>, usize) {
    (t.shape().to_vec(), t.strides().to_vec(), t.offset())
}

fn known(shape: &[usize]) -> TypeInfo {
    TypeInfo::known(DType::I64, shape)
}

fn rev() -> IndexSpec {
    IndexSpec::range(-1, -1000, -1)
}

// ----- transpose ---------------------------------------------------------------

#[test]
fn transpose_reverses_axes_as_a_view() {
    let x = arange_i64(&[2, 3, 4]);
    let t = run(&Transpose { perm: None }, &x).unwrap();
    assert!(t.same_buffer(&x));
    assert_eq!(layout(&t), (vec![4, 3, 2], vec![1, 4, 12], 0));
    let want: Vec<i64> = (0..4)
        .flat_map(|k| (0..3).flat_map(move |j| (0..2).map(move |i| i * 12 + j * 4 + k)))
        .collect();
    assert_eq!(vals_i64(&t), want);
    // An explicit permutation.
    let p = run(
        &Transpose {
            perm: Some(vec![1, 0, 2]),
        },
        &x,
    )
    .unwrap();
    assert_eq!(layout(&p), (vec![3, 2, 4], vec![4, 12, 1], 0));
    assert_eq!(vals_i64(&p)[..8], [0, 1, 2, 3, 12, 13, 14, 15]);
    // Transposing twice gives the original layout back.
    assert_eq!(run(&Transpose { perm: None }, &t).unwrap().layout(), x.layout());
    // Infer agrees.
    let op = Transpose {
        perm: Some(vec![2, 0, 1]),
    };
    assert_eq!(op.infer(&[known(&[2, 3, 4])]).unwrap(), vec![known(&[4, 2, 3])]);
    assert_eq!(
        Transpose { perm: None }
            .infer(&[TypeInfo::new(DType::I64, Some(vec![-1, 3]))])
            .unwrap()[0]
            .shape,
        Some(vec![3, -1])
    );
    assert_eq!(op.attrs(), Attrs::new().with("perm", vec![2, 0, 1]));
}

#[test]
fn transpose_of_strided_broadcast_and_empty_inputs() {
    // x[::-1, 1:] of a (3, 4) arange, transposed.
    let v = arange_i64(&[3, 4])
        .slice(&[rev(), IndexSpec::range(1, 1000, 1)])
        .unwrap();
    let t = run(&Transpose { perm: None }, &v).unwrap();
    assert_eq!(layout(&t), (vec![3, 3], vec![1, -4], 9));
    assert_eq!(vals_i64(&t), vec![9, 5, 1, 10, 6, 2, 11, 7, 3]);
    // A broadcast view keeps its zero stride on the moved axis.
    let b = arange_i64(&[3]).broadcast_to(&[2, 3]).unwrap();
    let t = run(&Transpose { perm: None }, &b).unwrap();
    assert_eq!(layout(&t), (vec![3, 2], vec![1, 0], 0));
    assert_eq!(vals_i64(&t), vec![0, 0, 1, 1, 2, 2]);
    // Empty.
    let e = run(&Transpose { perm: None }, &arange_i64(&[0, 3])).unwrap();
    assert_eq!(e.shape(), &[3, 0]);
    // Rank 0 and 1 are unchanged.
    let s = arange_i64(&[]);
    assert_eq!(run(&Transpose { perm: None }, &s).unwrap().layout(), s.layout());
    // The materializing transpose is a contiguous copy.
    let x = arange_i64(&[2, 3]);
    let c = x.transpose(None).unwrap();
    assert!(!c.same_buffer(&x) && c.is_contiguous());
    assert_eq!(vals_i64(&c), vec![0, 3, 1, 4, 2, 5]);
}

#[test]
fn transpose_refuses_bad_permutations() {
    let x = arange_i64(&[2, 3, 4]);
    for p in [vec![0, 0, 1], vec![0, 1], vec![0, 1, 3], vec![0, 1, 2, 3]] {
        let op = Transpose {
            perm: Some(p.clone()),
        };
        assert!(run(&op, &x).is_err(), "{p:?}");
        let e = op.infer(&[known(&[2, 3, 4])]).unwrap_err().to_string();
        assert!(e.contains("perm"), "{e}");
    }
    let r = OpRegistry::builtin();
    assert!(r
        .make("transpose", &Attrs::new().with("perm", vec![-1, 0]))
        .is_err());
    assert!(r
        .make("transpose", &Attrs::new().with("axes", vec![1, 0]))
        .is_err());
}

// ----- reshape -------------------------------------------------------------------

#[test]
fn reshape_of_contiguous_input_is_a_view() {
    let x = arange_i64(&[2, 3]);
    for (spec, shape, strides) in [
        (vec![3, 2], vec![3, 2], vec![2, 1]),
        (vec![-1], vec![6], vec![1]),
        (vec![2, -1, 1], vec![2, 3, 1], vec![3, 1, 1]),
        (vec![1, 6], vec![1, 6], vec![6, 1]),
    ] {
        let r = run(&Reshape { shape: spec.clone() }, &x).unwrap();
        assert!(r.same_buffer(&x), "{spec:?}");
        assert_eq!(r.shape(), &shape[..]);
        for (ax, (&s, &w)) in r.strides().iter().zip(&strides).enumerate() {
            if shape[ax] != 1 {
                assert_eq!(s, w, "{spec:?}");
            }
        }
        assert_eq!(vals_i64(&r), vec![0, 1, 2, 3, 4, 5]);
    }
    // An offset view that is contiguous: x[1:] of (3, 4) -> (8,), offset 4.
    let v = arange_i64(&[3, 4])
        .slice(&[IndexSpec::range(1, 1000, 1)])
        .unwrap();
    let r = run(&Reshape { shape: vec![8] }, &v).unwrap();
    assert_eq!(layout(&r), (vec![8], vec![1], 4));
    assert_eq!(vals_i64(&r), (4..12).collect::<Vec<_>>());
}

#[test]
fn reshape_is_a_view_of_uniform_strided_runs_and_a_copy_otherwise() {
    // x[:, ::2] of a (4, 6) array is one uniform stride-2 run.
    let x = arange_i64(&[4, 6]);
    let v = x.slice(&[IndexSpec::All, IndexSpec::range(0, 6, 2)]).unwrap();
    let r = run(&Reshape { shape: vec![12] }, &v).unwrap();
    assert!(r.same_buffer(&x));
    assert_eq!(layout(&r), (vec![12], vec![2], 0));
    assert_eq!(vals_i64(&r), (0..12).map(|k| 2 * k).collect::<Vec<_>>());
    // x[:, :3] has a gap after every row: flattening copies...
    let v = x.slice(&[IndexSpec::All, IndexSpec::range(0, 3, 1)]).unwrap();
    let r = run(&Reshape { shape: vec![-1] }, &v).unwrap();
    assert!(!r.same_buffer(&x) && r.is_contiguous());
    assert_eq!(vals_i64(&r), vec![0, 1, 2, 6, 7, 8, 12, 13, 14, 18, 19, 20]);
    // ...but splitting the rows is still a view.
    let r = run(&Reshape { shape: vec![2, 2, 3] }, &v).unwrap();
    assert!(r.same_buffer(&x));
    assert_eq!(r.strides(), &[12, 6, 1]);
    // A transposed input flattens to a copy in C order of the view.
    let t = arange_i64(&[2, 3]).t(None).unwrap();
    let r = run(&Reshape { shape: vec![6] }, &t).unwrap();
    assert!(!r.same_buffer(&t));
    assert_eq!(vals_i64(&r), vec![0, 3, 1, 4, 2, 5]);
    // A reversed input splits as a view with negative strides.
    let v = arange_i64(&[6]).slice(&[rev()]).unwrap();
    let r = run(&Reshape { shape: vec![2, 3] }, &v).unwrap();
    assert!(r.same_buffer(&v));
    assert_eq!(layout(&r), (vec![2, 3], vec![-3, -1], 5));
    assert_eq!(vals_i64(&r), vec![5, 4, 3, 2, 1, 0]);
    // A broadcast input: splitting keeps the zero stride, flattening copies.
    let b = arange_i64(&[4]).broadcast_to(&[3, 4]).unwrap();
    let r = run(&Reshape { shape: vec![3, 2, 2] }, &b).unwrap();
    assert!(r.same_buffer(&b));
    assert_eq!(r.strides(), &[0, 2, 1]);
    let r = run(&Reshape { shape: vec![12] }, &b).unwrap();
    assert!(!r.same_buffer(&b));
    assert_eq!(vals_i64(&r), vec![0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
    // The copy goes into a pre-allocated output; a view ignores it.
    let pre = Tensor::zeros(DType::I64, &[6]).unwrap();
    let out = Reshape { shape: vec![6] }
        .compute(
            std::slice::from_ref(&t),
            &mut OpCtx::with_prealloc("r", vec![Some(pre.clone())]),
        )
        .unwrap();
    assert!(out[0].same_buffer(&pre));
    assert_eq!(vals_i64(&pre), vec![0, 3, 1, 4, 2, 5]);
    let pre = Tensor::zeros(DType::I64, &[3, 2]).unwrap();
    let x = arange_i64(&[2, 3]);
    let out = Reshape { shape: vec![3, 2] }
        .compute(
            std::slice::from_ref(&x),
            &mut OpCtx::with_prealloc("r", vec![Some(pre.clone())]),
        )
        .unwrap();
    assert!(out[0].same_buffer(&x));
    assert_eq!(vals_i64(&pre), vec![0; 6]);
}

#[test]
fn reshape_errors_and_empty_inputs() {
    let x = arange_i64(&[2, 3]);
    for spec in [vec![-1, -1], vec![4], vec![7, -1], vec![-2, -3], vec![0, -1]] {
        assert!(run(&Reshape { shape: spec.clone() }, &x).is_err(), "{spec:?}");
        assert!(
            Reshape { shape: spec.clone() }.infer(&[known(&[2, 3])]).is_err(),
            "{spec:?}"
        );
    }
    let e = arange_i64(&[0, 3]);
    assert_eq!(run(&Reshape { shape: vec![3, 0] }, &e).unwrap().shape(), &[3, 0]);
    assert_eq!(run(&Reshape { shape: vec![-1] }, &e).unwrap().shape(), &[0]);
    // numpy: an array of size 0 cannot be reshaped to (0, -1).
    assert!(run(&Reshape { shape: vec![0, -1] }, &e).is_err());
    // Infer resolves -1 when the input shape is known, and keeps the
    // attribute as is otherwise.
    let op = Reshape { shape: vec![-1, 2] };
    assert_eq!(op.infer(&[known(&[3, 4])]).unwrap(), vec![known(&[6, 2])]);
    assert_eq!(
        op.infer(&[TypeInfo::new(DType::I64, Some(vec![-1, 4]))]).unwrap()[0].shape,
        Some(vec![-1, 2])
    );
    assert_eq!(op.view_kind(), ViewKind::May);
    assert_eq!(op.attrs(), Attrs::new().with("shape", vec![-1, 2]));
    let r = OpRegistry::builtin();
    assert!(r
        .make("reshape", &Attrs::new())
        .unwrap_err()
        .to_string()
        .contains("shape"));
}

// ----- expand_dims and squeeze -----------------------------------------------------

#[test]
fn expand_dims_adds_a_length_one_axis() {
    let x = arange_i64(&[2, 3]);
    for (axis, shape) in [
        (0, vec![1, 2, 3]),
        (1, vec![2, 1, 3]),
        (2, vec![2, 3, 1]),
        (-1, vec![2, 3, 1]),
        (-3, vec![1, 2, 3]),
    ] {
        let op = ExpandDims { axis };
        let e = run(&op, &x).unwrap();
        assert!(e.same_buffer(&x));
        assert_eq!(e.shape(), &shape[..], "axis {axis}");
        assert_eq!(vals_i64(&e), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(op.infer(&[known(&[2, 3])]).unwrap(), vec![known(&shape)]);
    }
    assert_eq!(
        layout(&run(&ExpandDims { axis: 1 }, &x).unwrap()),
        (vec![2, 1, 3], vec![3, 0, 1], 0)
    );
    for axis in [3, -4, 100] {
        assert!(run(&ExpandDims { axis }, &x).is_err(), "axis {axis}");
        assert!(
            ExpandDims { axis }.infer(&[known(&[2, 3])]).is_err(),
            "axis {axis}"
        );
    }
    // Scalars, reversed and empty inputs.
    assert_eq!(
        run(&ExpandDims { axis: 0 }, &arange_i64(&[])).unwrap().shape(),
        &[1]
    );
    let v = arange_i64(&[3]).slice(&[rev()]).unwrap();
    let e = run(&ExpandDims { axis: 0 }, &v).unwrap();
    assert_eq!(layout(&e), (vec![1, 3], vec![0, -1], 2));
    assert_eq!(vals_i64(&e), vec![2, 1, 0]);
    assert_eq!(
        run(&ExpandDims { axis: -1 }, &arange_i64(&[0])).unwrap().shape(),
        &[0, 1]
    );
    // The new axis is writable (length 1, not a broadcast).
    let x = arange_f64(&[2]);
    let e = run(&ExpandDims { axis: 0 }, &x).unwrap();
    e.set_at(&[0, 1], vigil_engine::Scalar::F64(9.0)).unwrap();
    assert_eq!(vals_f64(&x), vec![0.0, 9.0]);
    assert!(OpRegistry::builtin().make("expand_dims", &Attrs::new()).is_err());
}

#[test]
fn squeeze_removes_length_one_axes() {
    let x = arange_i64(&[1, 3, 1]);
    let s = run(&Squeeze { axes: None }, &x).unwrap();
    assert!(s.same_buffer(&x));
    assert_eq!(layout(&s), (vec![3], vec![1], 0));
    assert_eq!(
        run(&Squeeze { axes: Some(vec![-1]) }, &x).unwrap().shape(),
        &[1, 3]
    );
    assert_eq!(
        run(
            &Squeeze {
                axes: Some(vec![0, 2])
            },
            &x
        )
        .unwrap()
        .shape(),
        &[3]
    );
    assert!(run(&Squeeze { axes: Some(vec![1]) }, &x).is_err());
    assert!(run(&Squeeze { axes: Some(vec![3]) }, &x).is_err());
    assert_eq!(
        run(&Squeeze { axes: None }, &arange_i64(&[1, 1]))
            .unwrap()
            .shape(),
        &[] as &[usize]
    );
    // A squeezed view keeps offset and negative strides.
    let v = arange_i64(&[2, 1, 3])
        .slice(&[IndexSpec::range(1, 2, 1), IndexSpec::All, rev()])
        .unwrap();
    let s = run(&Squeeze { axes: None }, &v).unwrap();
    assert_eq!(layout(&s), (vec![3], vec![-1], 5));
    assert_eq!(vals_i64(&s), vec![5, 4, 3]);
    // Empty axes are not squeezed.
    assert_eq!(
        run(&Squeeze { axes: None }, &arange_i64(&[1, 0]))
            .unwrap()
            .shape(),
        &[0]
    );
    // Infer: known shapes, and unknown dims make the result unknown.
    assert_eq!(
        Squeeze { axes: None }.infer(&[known(&[1, 3, 1])]).unwrap(),
        vec![known(&[3])]
    );
    assert_eq!(
        Squeeze { axes: Some(vec![0]) }.infer(&[known(&[1, 3])]).unwrap(),
        vec![known(&[3])]
    );
    assert!(Squeeze { axes: Some(vec![1]) }.infer(&[known(&[1, 3])]).is_err());
    assert_eq!(
        Squeeze { axes: None }
            .infer(&[TypeInfo::new(DType::I64, Some(vec![-1, 3]))])
            .unwrap()[0]
            .shape,
        None
    );
}

// ----- broadcast_to ------------------------------------------------------------------

#[test]
fn broadcast_to_is_a_read_only_zero_stride_view() {
    let x = arange_f64(&[3]);
    let op = BroadcastTo { shape: vec![2, 3] };
    let b = run(&op, &x).unwrap();
    assert!(b.same_buffer(&x));
    assert_eq!(layout(&b), (vec![2, 3], vec![0, 1], 0));
    assert_eq!(vals_f64(&b), vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
    // Writes are refused, both element writes and in-place ops.
    assert!(b.set_at(&[1, 1], vigil_engine::Scalar::F64(5.0)).is_err());
    assert!(b.write(|_: ndarray::ArrayViewMutD<'_, f64>| ()).is_err());
    assert_eq!(vals_f64(&x), vec![0.0, 1.0, 2.0]);
    // (3, 1) -> (2, 3, 4)
    let c = arange_i64(&[3, 1]);
    let b = run(&BroadcastTo { shape: vec![2, 3, 4] }, &c).unwrap();
    assert_eq!(layout(&b), (vec![2, 3, 4], vec![0, 1, 0], 0));
    assert_eq!(vals_i64(&b)[..12], [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    // A reversed input keeps its negative stride.
    let v = arange_i64(&[3]).slice(&[rev()]).unwrap();
    let b = run(&BroadcastTo { shape: vec![2, 3] }, &v).unwrap();
    assert_eq!(layout(&b), (vec![2, 3], vec![0, -1], 2));
    assert_eq!(vals_i64(&b), vec![2, 1, 0, 2, 1, 0]);
    // Scalars and empty shapes.
    let s = run(&BroadcastTo { shape: vec![2, 2] }, &arange_i64(&[])).unwrap();
    assert_eq!(vals_i64(&s), vec![0; 4]);
    assert_eq!(
        run(&BroadcastTo { shape: vec![0, 3] }, &arange_i64(&[3]))
            .unwrap()
            .shape(),
        &[0, 3]
    );
    assert_eq!(
        run(&BroadcastTo { shape: vec![0] }, &arange_i64(&[1]))
            .unwrap()
            .shape(),
        &[0]
    );
    // Shapes that do not broadcast.
    for (from, to) in [(vec![3], vec![4]), (vec![2, 3], vec![3]), (vec![2], vec![2, 3])] {
        assert!(
            run(&BroadcastTo { shape: to.clone() }, &arange_i64(&from)).is_err(),
            "{from:?} -> {to:?}"
        );
        assert!(
            BroadcastTo { shape: to.clone() }.infer(&[known(&from)]).is_err(),
            "{from:?} -> {to:?}"
        );
    }
    assert_eq!(
        BroadcastTo { shape: vec![2, 3] }
            .infer(&[known(&[1, 3])])
            .unwrap(),
        vec![known(&[2, 3])]
    );
}

// ----- common to all view ops -------------------------------------------------------

fn all_view_ops() -> Vec<(Arc<dyn Op>, Vec<usize>)> {
    vec![
        (Arc::new(Transpose { perm: None }), vec![2, 3]),
        (
            Arc::new(Transpose {
                perm: Some(vec![1, 0]),
            }),
            vec![2, 3],
        ),
        (Arc::new(Reshape { shape: vec![3, 2] }), vec![2, 3]),
        (Arc::new(ExpandDims { axis: 1 }), vec![2, 3]),
        (Arc::new(Squeeze { axes: None }), vec![1, 3]),
        (Arc::new(BroadcastTo { shape: vec![2, 3] }), vec![1, 3]),
        (Arc::new(CreateView), vec![2, 3]),
    ]
}

#[test]
fn view_ops_declare_view_maps_and_never_copy_into_a_preallocated_output() {
    for (op, shape) in all_view_ops() {
        assert_eq!(op.view_map(), vec![(0, 0)], "{}", op.name());
        assert!(op.destroy_map().is_empty());
        let want_kind = if op.name() == "reshape" {
            ViewKind::May
        } else {
            ViewKind::Must
        };
        assert_eq!(op.view_kind(), want_kind);
        let x = arange_i64(&shape);
        let plain = run(op.as_ref(), &x).unwrap();
        let pre = Tensor::zeros(DType::I64, plain.shape()).unwrap();
        let out = op
            .compute(
                std::slice::from_ref(&x),
                &mut OpCtx::with_prealloc("v", vec![Some(pre.clone())]),
            )
            .unwrap();
        assert!(out[0].same_buffer(&x), "{}", op.name());
        assert_eq!(out[0].layout(), plain.layout());
        assert_eq!(
            vals_i64(&pre),
            vec![0; pre.size()],
            "{} wrote its pre-allocated output",
            op.name()
        );
        assert_eq!(x.version(), 0, "{} wrote its input", op.name());
    }
}

#[test]
fn view_ops_in_a_graph_return_views_of_the_fed_input() {
    let g = GraphBuilder::new("views");
    let x = g.input("x", DType::I64, &[2, 3]);
    let t = x.transpose(None).unwrap();
    let r = t.reshape(&[6]).unwrap(); // a copy: t is not contiguous
    let e = x.op("expand_dims", &[], Attrs::new().with("axis", 0)).unwrap();
    let s = e.op("squeeze", &[], Attrs::new()).unwrap();
    let b = x
        .view(&[IndexSpec::Point(1), IndexSpec::NewAxis])
        .unwrap()
        .op("broadcast_to", &[], Attrs::new().with("shape", vec![2, 1, 3]))
        .unwrap();
    let graph = g.build(&[&t, &r, &s, &b]).unwrap();
    let feed = arange_i64(&[2, 3]);
    let out = Executor::new(&graph)
        .unwrap()
        .run(&HashMap::from([("x".to_string(), feed.clone())]))
        .unwrap();
    let get = |s: &vigil_engine::Sym| out.get(s.name()).unwrap().clone();
    assert!(get(&t).same_buffer(&feed) && get(&s).same_buffer(&feed) && get(&b).same_buffer(&feed));
    assert!(!get(&r).same_buffer(&feed));
    assert_eq!(vals_i64(&get(&t)), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(vals_i64(&get(&r)), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(get(&r).shape(), &[6]);
    assert_eq!(layout(&get(&s)), (vec![2, 3], vec![3, 1], 0));
    assert_eq!(layout(&get(&b)), (vec![2, 1, 3], vec![0, 0, 1], 3));
    assert_eq!(vals_i64(&get(&b)), vec![3, 4, 5, 3, 4, 5]);
}
