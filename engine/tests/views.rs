//! Views share their base's buffer: writes through a view (element writes,
//! `assign`, in-place ops directly and through the executor) change exactly
//! the base elements the view selects. Reshape is a view whenever a strided
//! layout can express the result, and a correct copy otherwise.

mod common;

use std::collections::HashMap;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use vigil_engine::dtype::Scalar;
use vigil_engine::ops::elementwise::{BinKind, Binary};
use vigil_engine::ops::view::Reshape;
use vigil_engine::{DType, Executor, GraphBuilder, IndexSpec, Op, OpCtx, Tensor};

/// Distinct, exactly representable new values.
fn new_value(k: usize) -> f64 {
    1000.0 + 3.0 * k as f64
}

fn check_writes(shape: &[usize], idx: &[IndexSpec], picks: &[usize]) -> Result<(), TestCaseError> {
    let flat = selected_flat(shape, idx).unwrap();
    let n = flat.len();
    prop_assert!(n > 0);
    let orig = vals_f64(&arange_f64(shape));
    let vshape = select(shape, idx).unwrap().shape();
    let positions = multi_indices(&vshape);

    // 1. set_at through the view.
    let base = arange_f64(shape);
    let v = base.slice(idx).unwrap();
    prop_assert!(v.same_buffer(&base));
    prop_assert_eq!(v.shape(), &vshape[..]);
    let version = base.version();
    let mut want = orig.clone();
    for (j, &p) in picks.iter().enumerate() {
        let k = p % n;
        v.set_at(&positions[k], Scalar::F64(new_value(j))).unwrap();
        want[flat[k]] = new_value(j);
        prop_assert_eq!(v.at(&positions[k]).unwrap(), Scalar::F64(new_value(j)));
    }
    prop_assert_eq!(vals_f64(&base), want, "set_at through {:?} of {:?}", idx, shape);
    prop_assert!(base.version() > version || picks.is_empty());

    // 2. assign into the view.
    let base = arange_f64(shape);
    let v = base.slice(idx).unwrap();
    let src: Vec<f64> = (0..n).map(new_value).collect();
    v.assign(&f64s(&vshape, &src)).unwrap();
    let mut want = orig.clone();
    for k in 0..n {
        want[flat[k]] = new_value(k);
    }
    prop_assert_eq!(vals_f64(&base), want, "assign through {:?} of {:?}", idx, shape);

    // 3. add_inplace on the view, at the op level.
    let base = arange_f64(shape);
    let v = base.slice(idx).unwrap();
    let c = f64s(&vshape, &src);
    let out = Binary::new(BinKind::Add, true)
        .compute(&[v.clone(), c.clone()], &mut OpCtx::new("add"))
        .unwrap();
    prop_assert!(out[0].same_buffer(&base));
    let mut want = orig.clone();
    for k in 0..n {
        want[flat[k]] += new_value(k);
    }
    prop_assert_eq!(
        vals_f64(&base),
        want.clone(),
        "add_inplace through {:?} of {:?}",
        idx,
        shape
    );

    // 4. add_inplace on a create_view of a mutable graph input, run by the
    //    executor; then neg_inplace of another view of the same input.
    let g = GraphBuilder::new("write_through");
    let shape_i: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let x = g.mutable_input("x", DType::F64, &shape_i);
    let cst = g.constant("c", c.clone());
    let z = x.view(idx).unwrap().add_inplace(&cst).unwrap();
    let graph = g.build(&[&z]).unwrap();
    let feed = arange_f64(shape);
    let run = Executor::new(&graph)
        .unwrap()
        .run(&HashMap::from([("x".to_string(), feed.clone())]))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let zt = run.get(z.name()).unwrap();
    prop_assert!(zt.same_buffer(&feed));
    prop_assert_eq!(
        vals_f64(&feed),
        want.clone(),
        "executor add_inplace through {:?} of {:?}",
        idx,
        shape
    );
    let zv: Vec<f64> = flat.iter().map(|&f| want[f]).collect();
    prop_assert_eq!(vals_f64(zt), zv);

    let g = GraphBuilder::new("neg_through");
    let x = g.mutable_input("x", DType::F64, &shape_i);
    let z = x.view(idx).unwrap().neg_inplace().unwrap();
    let graph = g.build(&[&z]).unwrap();
    let feed = arange_f64(shape);
    Executor::new(&graph)
        .unwrap()
        .run(&HashMap::from([("x".to_string(), feed.clone())]))
        .unwrap();
    let mut want = orig;
    for &f in &flat {
        want[f] = -want[f];
    }
    prop_assert_eq!(
        vals_f64(&feed),
        want,
        "executor neg_inplace through {:?} of {:?}",
        idx,
        shape
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Property 2 with every stride in -3..=3 except 0.
    #[test]
    fn writes_through_a_view_show_in_the_base(
        (shape, idx) in nonempty_view(ALL_NEG),
        picks in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        check_writes(&shape, &idx, &picks)?;
    }
}

// ----- reshape ---------------------------------------------------------------

/// Element offsets of `t` in C order, computed from its layout.
fn offsets(t: &Tensor) -> Vec<i64> {
    multi_indices(t.shape())
        .iter()
        .map(|m| {
            t.offset() as i64
                + m.iter()
                    .zip(t.strides())
                    .map(|(&i, &s)| i as i64 * s as i64)
                    .sum::<i64>()
        })
        .collect()
}

/// Whether some strides make `new_shape` walk `offs` (a C-order element
/// list) exactly: brute force over the unit steps of each axis.
fn strided_layout_exists(offs: &[i64], new_shape: &[usize]) -> bool {
    if offs.is_empty() {
        return true;
    }
    let idx = multi_indices(new_shape);
    let mut strides = vec![0i64; new_shape.len()];
    for ax in 0..new_shape.len() {
        if new_shape[ax] > 1 {
            let k = idx
                .iter()
                .position(|m| m.iter().enumerate().all(|(a, &i)| i == usize::from(a == ax)))
                .unwrap();
            strides[ax] = offs[k] - offs[0];
        }
    }
    idx.iter()
        .zip(offs)
        .all(|(m, &o)| o == offs[0] + m.iter().zip(&strides).map(|(&i, &s)| i as i64 * s).sum::<i64>())
}

fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut p = 2;
    while n > 1 {
        if (n / p) * p != n {
            p += 1;
            continue;
        }
        out.push(p);
        n /= p;
    }
    out
}

/// A view (of an arange, maybe permuted) and a target shape of the same size.
fn view_and_target() -> impl Strategy<Value = (Vec<usize>, Vec<IndexSpec>, Vec<usize>, Vec<i64>)> {
    shape_and_valid_indices(ALL_NEG).prop_flat_map(|(shape, idx)| {
        let vshape = select(&shape, &idx).unwrap().shape();
        let n: usize = vshape.iter().product();
        let factors = prime_factors(n);
        let rank = vshape.len();
        (
            Just(shape),
            Just(idx),
            Just((0..rank).collect::<Vec<usize>>()).prop_shuffle(),
            prop::collection::vec(0usize..4, factors.len()),
            prop::collection::vec(0usize..=4, 0..=2),
            any::<bool>(),
            Just((n, factors)),
        )
            .prop_map(|(shape, idx, perm, buckets, ones, minus_one, (n, factors))| {
                let mut dims = vec![1usize; 4];
                for (f, b) in factors.iter().zip(&buckets) {
                    dims[*b] *= f;
                }
                let mut target: Vec<usize> = dims.into_iter().filter(|&d| d > 1).collect();
                if n == 0 {
                    target = vec![0, 2];
                }
                for o in ones {
                    let o = o.min(target.len());
                    target.insert(o, 1);
                }
                let mut spec: Vec<i64> = target.iter().map(|&d| d as i64).collect();
                if minus_one && n > 0 && !spec.is_empty() {
                    let k = buckets.first().copied().unwrap_or(0) % spec.len();
                    spec[k] = -1;
                }
                (shape, idx, perm, spec)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reshape_is_a_view_exactly_when_strides_allow_and_keeps_c_order(
        (shape, idx, perm, spec) in view_and_target(),
    ) {
        let base = arange_i64(&shape);
        let v = base.slice(&idx).unwrap().permute(&perm).unwrap();
        let n = v.size();
        let r = v.reshape(&spec).map_err(|e| TestCaseError::fail(format!("{e}: {:?} -> {spec:?}", v)))?;
        let want_shape: Vec<usize> = spec
            .iter()
            .map(|&d| if d < 0 { n / spec.iter().filter(|&&x| x >= 0).product::<i64>() as usize } else { d as usize })
            .collect();
        prop_assert_eq!(r.shape(), &want_shape[..]);
        prop_assert_eq!(vals_i64(&r), vals_i64(&v), "{:?} reshaped to {:?}", v, spec);
        let possible = strided_layout_exists(&offsets(&v), &want_shape);
        prop_assert_eq!(r.same_buffer(&v), possible, "{:?} -> {:?}: view {:?}", v, want_shape, r);
        if v.is_contiguous() {
            prop_assert!(r.same_buffer(&v));
        }
        if r.same_buffer(&v) && n > 0 {
            // The view walks the same elements: a write shows in v.
            let last = multi_indices(r.shape()).pop().unwrap();
            r.set_at(&last, Scalar::I64(-7)).unwrap();
            prop_assert_eq!(*vals_i64(&v).last().unwrap(), -7);
        }
        // The reshape op agrees: a view when the layout allows, else a copy
        // into the pre-allocated output.
        let pre = Tensor::zeros(DType::I64, &want_shape).unwrap();
        let op = Reshape { shape: spec.clone() };
        let out = op.compute(std::slice::from_ref(&v), &mut OpCtx::with_prealloc("reshape", vec![Some(pre.clone())])).unwrap();
        prop_assert_eq!(vals_i64(&out[0]), vals_i64(&v));
        prop_assert_eq!(out[0].same_buffer(&v), possible);
        prop_assert_eq!(out[0].same_buffer(&pre), !possible);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// `assign` of any view gives its elements in C order, into a fresh
    /// contiguous tensor (one copy) and into a transposed one.
    #[test]
    fn assign_writes_a_views_elements_in_c_order(
        (shape, idx, perm, _spec) in view_and_target(),
    ) {
        let v = arange_i64(&shape).slice(&idx).unwrap().permute(&perm).unwrap();
        let dst = Tensor::zeros(DType::I64, v.shape()).unwrap();
        dst.assign(&v).unwrap();
        prop_assert_eq!(vals_i64(&dst), vals_i64(&v));
        let rev: Vec<usize> = (0..v.ndim()).rev().collect();
        let flipped: Vec<usize> = rev.iter().map(|&k| v.shape()[k]).collect();
        let dst = Tensor::zeros(DType::I64, &flipped).unwrap().permute(&rev).unwrap();
        dst.assign(&v).unwrap();
        prop_assert_eq!(vals_i64(&dst), vals_i64(&v));
    }
}

#[test]
fn set_at_refuses_broadcast_views_and_out_of_range_indices() {
    let base = arange_f64(&[3]);
    let b = base.broadcast_to(&[2, 3]).unwrap();
    assert!(b.set_at(&[0, 0], Scalar::F64(1.0)).is_err());
    assert!(b.assign(&f64s(&[2, 3], &[0.0; 6])).is_err());
    let v = base.slice(&[IndexSpec::range(0, 3, 2)]).unwrap();
    assert!(v.set_at(&[2], Scalar::F64(1.0)).is_err());
    assert!(v.set_at(&[0, 0], Scalar::F64(1.0)).is_err());
    assert_eq!(vals_f64(&base), vec![0.0, 1.0, 2.0]);
    // A length-1 new axis has stride 0 but is writable.
    let n = base.slice(&[IndexSpec::NewAxis, IndexSpec::Point(1)]).unwrap();
    n.set_at(&[0], Scalar::F64(9.0)).unwrap();
    assert_eq!(vals_f64(&base), vec![0.0, 9.0, 2.0]);
}

#[test]
fn set_at_converts_the_scalar_to_the_tensor_dtype() {
    let t = arange_i64(&[2, 2]);
    let v = t.t(None).unwrap();
    v.set_at(&[1, 0], Scalar::F64(7.9)).unwrap();
    assert_eq!(vals_i64(&t), vec![0, 7, 2, 3]);
    v.set_at(&[0, 1], Scalar::I64(i64::MAX)).unwrap();
    assert_eq!(vals_i64(&t), vec![0, 7, i64::MAX, 3]);
}

#[test]
fn a_view_of_a_view_writes_the_root_buffer() {
    // x[1:, ::-1][:, 1] on a (3, 4) arange selects base elements 6 and 10.
    let base = arange_f64(&[3, 4]);
    let v = base
        .slice(&[IndexSpec::range(1, 1000, 1), IndexSpec::range(-1, -1000, -1)])
        .unwrap();
    let w = v.slice(&[IndexSpec::All, IndexSpec::Point(1)]).unwrap();
    assert_eq!(vals_f64(&w), vec![6.0, 10.0]);
    w.assign(&f64s(&[2], &[-1.0, -2.0])).unwrap();
    let mut want: Vec<f64> = (0..12).map(|v| v as f64).collect();
    want[6] = -1.0;
    want[10] = -2.0;
    assert_eq!(vals_f64(&base), want);
    assert_eq!(vals_f64(&v), vec![7.0, -1.0, 5.0, 4.0, 11.0, -2.0, 9.0, 8.0]);
}

#[test]
fn with_layout_refuses_layouts_outside_the_buffer() {
    use vigil_engine::Layout;
    let t = arange_i64(&[5]);
    // Reaching before the start: offset 1, three elements going down by 2.
    assert!(t.with_layout(Layout::new(vec![3], vec![-2], 1)).is_err());
    // Reaching past the end.
    assert!(t.with_layout(Layout::new(vec![3], vec![2], 1)).is_err());
    assert!(t.with_layout(Layout::new(vec![1], vec![1], 5)).is_err());
    // Exactly fitting, both directions, and empty views anywhere.
    assert_eq!(
        vals_i64(&t.with_layout(Layout::new(vec![3], vec![-2], 4)).unwrap()),
        vec![4, 2, 0]
    );
    assert_eq!(
        vals_i64(&t.with_layout(Layout::new(vec![2, 2], vec![1, 2], 1)).unwrap()),
        vec![1, 3, 2, 4]
    );
    assert!(t.with_layout(Layout::new(vec![2, 2], vec![1, 3], 1)).is_err());
    assert_eq!(
        t.with_layout(Layout::new(vec![0, 3], vec![1, 1], 9))
            .unwrap()
            .size(),
        0
    );
}

#[test]
fn contiguous_slices_cover_exactly_the_view_and_refuse_other_layouts() {
    let base = Tensor::from_vec(&[3, 4], (0..12).map(|i| i as f32).collect()).unwrap();
    // Row 1: contiguous, at offset 4 of the buffer.
    let row = base.slice(&[IndexSpec::Point(1), IndexSpec::All]).unwrap();
    assert_eq!(
        row.read_contiguous(|s: &[f32]| s.to_vec()).unwrap(),
        vec![4.0, 5.0, 6.0, 7.0]
    );
    let before = row.version();
    row.write_contiguous(|s: &mut [f32]| s.iter_mut().for_each(|x| *x = -*x))
        .unwrap();
    assert!(row.version() > before, "a write bumps the buffer's version");
    assert_eq!(
        base.to_f64_vec().unwrap(),
        vec![0.0, 1.0, 2.0, 3.0, -4.0, -5.0, -6.0, -7.0, 8.0, 9.0, 10.0, 11.0],
        "only the row's elements changed"
    );
    // A transposed view and a column are not contiguous: refused, not misread.
    let t = base.t(None).unwrap();
    assert!(t.read_contiguous(|s: &[f32]| s.len()).is_err());
    let col = base.slice(&[IndexSpec::All, IndexSpec::Point(0)]).unwrap();
    assert!(col.write_contiguous(|s: &mut [f32]| s.len()).is_err());
    assert!(base.read_contiguous(|s: &[i32]| s.len()).is_err(), "wrong dtype");
}
