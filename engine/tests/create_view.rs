//! `create_view` (basic indexing in the CreateView encoding) against an
//! independent numpy reference (tests/common), plus its error cases.

mod common;

use std::collections::HashMap;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use vigil_engine::ops::view::CreateView;
use vigil_engine::{assert_cause, DType, Error, Executor, GraphBuilder, IndexSpec, Op, OpCtx, Tensor};

/// The index vectors of `idx` as `create_view`'s extra inputs.
fn index_inputs(idx: &[IndexSpec]) -> Vec<Tensor> {
    idx.iter().map(|i| Tensor::from_i64s(&i.encode())).collect()
}

fn create_view_op(x: &Tensor, idx: &[IndexSpec]) -> vigil_engine::Result<Tensor> {
    let mut inputs = vec![x.clone()];
    inputs.extend(index_inputs(idx));
    let mut out = CreateView.compute(&inputs, &mut OpCtx::new("cv"))?;
    assert_eq!(out.len(), 1);
    Ok(out.pop().unwrap())
}

/// Checks `base[idx]` (through `Tensor::slice` and through the op) against the
/// reference: same error-ness, and for a view the shape, strides, offset,
/// buffer and elements. `values` are `base`'s elements.
fn check_view(base: &Tensor, values: &ndarray::ArrayD<i64>, idx: &[IndexSpec]) -> Result<(), TestCaseError> {
    for &i in idx {
        prop_assert_eq!(IndexSpec::decode(&i.encode(), 0).unwrap(), i);
    }
    let want = select(base.shape(), idx);
    let got = base.slice(idx);
    let via_op = create_view_op(base, idx);
    match (&want, &got) {
        (Err(_), Err(_)) => {
            prop_assert!(via_op.is_err(), "op accepted what slice refused: {:?}", idx);
            return Ok(());
        }
        (Err(why), Ok(v)) => {
            return Err(TestCaseError::fail(format!(
                "engine made a view {v:?} of shape {:?} with {idx:?}; numpy refuses: {why}",
                base.shape()
            )))
        }
        (Ok(sel), Err(e)) => {
            return Err(TestCaseError::fail(format!(
                "engine refused {idx:?} on shape {:?} ({e}); numpy gives shape {:?}",
                base.shape(),
                sel.shape()
            )))
        }
        (Ok(_), Ok(_)) => {}
    }
    let (sel, v) = (want.unwrap(), got.unwrap());
    let (shape, strides, offset) = sel.expected_layout(base.layout());
    prop_assert_eq!(v.shape(), &shape[..], "shape of {:?} on {:?}", idx, base.shape());
    for (ax, (&s, w)) in v.strides().iter().zip(&strides).enumerate() {
        if let Some(w) = w {
            prop_assert_eq!(s, *w, "stride of axis {} of {:?} on {:?}", ax, idx, base.shape());
        }
    }
    prop_assert_eq!(v.offset(), offset, "offset of {:?} on {:?}", idx, base.shape());
    prop_assert!(v.same_buffer(base));
    let expected = gather(values, idx).unwrap();
    prop_assert_eq!(
        v.to_array::<i64>().unwrap(),
        expected,
        "elements of {:?} on {:?}",
        idx,
        base.shape()
    );
    let o = via_op.map_err(|e| TestCaseError::fail(format!("op failed where slice worked: {e}")))?;
    prop_assert_eq!(o.layout(), v.layout());
    prop_assert!(o.same_buffer(base));
    Ok(())
}

fn check_on_arange(shape: &[usize], idx: &[IndexSpec]) -> Result<(), TestCaseError> {
    let base = arange_i64(shape);
    let values = base.to_array::<i64>().unwrap();
    check_view(&base, &values, idx)
}

/// A first view (of `base` or its transpose), then a second index list on it.
fn check_view_of_view(
    shape: &[usize],
    idx1: &[IndexSpec],
    transpose: bool,
    idx2: &[IndexSpec],
) -> Result<(), TestCaseError> {
    let mut base = arange_i64(shape);
    if transpose {
        base = base.t(None).unwrap();
    }
    let values = base.to_array::<i64>().unwrap();
    check_view(&base, &values, idx1)?;
    let Ok(first) = base.slice(idx1) else {
        return Ok(());
    };
    let first_values = gather(&values, idx1).unwrap();
    check_view(&first, &first_values, idx2)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 1 with every stride in -3..=3 except 0.
    #[test]
    fn create_view_matches_numpy((shape, idx) in shape_and_indices(ALL_NEG)) {
        check_on_arange(&shape, &idx)?;
    }

    #[test]
    fn view_of_view_matches_numpy(
        (shape, idx1) in shape_and_valid_indices(ALL_NEG),
        transpose in any::<bool>(),
        idx2 in prop::collection::vec(any_index(ALL_NEG), 0..=5),
    ) {
        check_view_of_view(&shape, &idx1, transpose, &idx2)?;
    }

    /// Raw index vectors (any type code, any length, moderate values): the op
    /// never panics, and whatever it decodes behaves like numpy.
    #[test]
    fn raw_index_vectors_never_panic(
        shape in prop::collection::vec(0usize..=5, 0..=3),
        raw in prop::collection::vec(
            (-1i64..=4, prop::collection::vec(-10i64..=10, 0..=7)).prop_map(|(t, mut rest)| { rest.insert(0, t); rest }),
            0..=4,
        ),
    ) {
        let base = arange_i64(&shape);
        let mut inputs = vec![base.clone()];
        inputs.extend(raw.iter().map(|v| Tensor::from_i64s(v)));
        let got = CreateView.compute(&inputs, &mut OpCtx::new("cv"));
        let decoded: Result<Vec<IndexSpec>, _> =
            raw.iter().enumerate().map(|(p, v)| IndexSpec::decode(v, p)).collect();
        match decoded {
            Err(_) => prop_assert!(got.is_err(), "op accepted undecodable {:?}", raw),
            Ok(idx) => {
                prop_assert_eq!(got.is_ok(), select(&shape, &idx).is_ok(), "{:?} on {:?}", idx, shape);
                check_on_arange(&shape, &idx)?;
            }
        }
    }

    /// Extreme starts, ends, strides and points (i64::MIN, i64::MAX, ...)
    /// must neither panic nor differ from numpy.
    #[test]
    fn extreme_index_values_behave_like_numpy(
        shape in prop::collection::vec(0usize..=5, 0..=3),
        idx in prop::collection::vec(extreme_index(), 0..=3),
    ) {
        let base = arange_i64(&shape);
        let values = base.to_array::<i64>().unwrap();
        let want = gather(&values, &idx);
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| base.slice(&idx).and_then(|v| v.to_array::<i64>())));
        let got = got.map_err(|_| TestCaseError::fail(format!("panic on {idx:?} with shape {shape:?}")))?;
        match (want, got) {
            (Ok(w), Ok(g)) => prop_assert_eq!(g, w),
            (Err(_), Err(_)) => {}
            (w, g) => return Err(TestCaseError::fail(format!("{idx:?} on {shape:?}: numpy {w:?}, engine {g:?}"))),
        }
    }
}

fn extreme() -> impl Strategy<Value = i64> {
    prop::sample::select(vec![
        i64::MIN,
        i64::MIN + 1,
        -(1i64 << 62),
        -7,
        -1,
        0,
        1,
        4,
        1 << 62,
        i64::MAX - 1,
        i64::MAX,
    ])
}

fn extreme_index() -> impl Strategy<Value = IndexSpec> {
    prop_oneof![
        extreme().prop_map(IndexSpec::Point),
        (
            extreme(),
            extreme(),
            extreme().prop_filter("stride 0", |s| *s != 0),
            any::<bool>()
        )
            .prop_map(|(start, end, stride, inclusive)| IndexSpec::Interval {
                start,
                end,
                stride,
                inclusive
            }),
        Just(IndexSpec::All),
        Just(IndexSpec::NewAxis),
    ]
}

// ----- hand-checked numpy cases ------------------------------------------------

fn view_vals(shape: &[usize], idx: &[IndexSpec]) -> (Vec<usize>, Vec<isize>, usize, Vec<i64>) {
    let v = arange_i64(shape).slice(idx).unwrap();
    (v.shape().to_vec(), v.strides().to_vec(), v.offset(), vals_i64(&v))
}

fn incl(start: i64, end: i64, stride: i64) -> IndexSpec {
    IndexSpec::Interval {
        start,
        end,
        stride,
        inclusive: true,
    }
}

#[test]
fn numpy_examples() {
    use IndexSpec::*;
    let r = IndexSpec::range;
    // np.arange(10)[7:2:-2] -> [7, 5, 3]
    assert_eq!(
        view_vals(&[10], &[r(7, 2, -2)]),
        (vec![3], vec![-2], 7, vec![7, 5, 3])
    );
    // np.arange(10)[::-1]
    assert_eq!(
        view_vals(&[10], &[r(-1, -1000, -1)]).3,
        (0..10).rev().collect::<Vec<_>>()
    );
    // np.arange(10)[-3:] and [-100:2]
    assert_eq!(view_vals(&[10], &[r(-3, 1000, 1)]).3, vec![7, 8, 9]);
    assert_eq!(view_vals(&[10], &[r(-100, 2, 1)]).3, vec![0, 1]);
    // np.arange(5)[4:-6:-1] -> [4, 3, 2, 1, 0] (end -6 + 5 = -1: before the start)
    assert_eq!(view_vals(&[5], &[r(4, -6, -1)]).3, vec![4, 3, 2, 1, 0]);
    // inclusive: [0..=-1] is everything, [-1..=0 step -1] is everything reversed
    assert_eq!(view_vals(&[5], &[incl(0, -1, 1)]).3, vec![0, 1, 2, 3, 4]);
    assert_eq!(view_vals(&[5], &[incl(-1, 0, -1)]).3, vec![4, 3, 2, 1, 0]);
    assert_eq!(view_vals(&[5], &[incl(1, 3, 2)]).3, vec![1, 3]);
    // x[1, None, :, ::2] on shape (3, 4, 6): shape (1, 4, 3), strides (0, 6, 2), offset 24
    assert_eq!(
        view_vals(&[3, 4, 6], &[Point(1), NewAxis, All, r(0, 6, 2)]).3,
        vec![24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46]
    );
    let (s, st, off, _) = view_vals(&[3, 4, 6], &[Point(-2), NewAxis, All, r(0, 6, 2)]);
    assert_eq!((s, st, off), (vec![1, 4, 3], vec![0, 6, 2], 24));
    // x[-1, 3:0:-2] on shape (3, 4) -> [11, 9]
    assert_eq!(
        view_vals(&[3, 4], &[Point(-1), r(3, 0, -2)]),
        (vec![2], vec![-2], 11, vec![11, 9])
    );
    // Fewer indices than axes: x[1] of shape (2, 3) is the second row.
    assert_eq!(
        view_vals(&[2, 3], &[Point(1)]),
        (vec![3], vec![1], 3, vec![3, 4, 5])
    );
    // A rank-0 result: x[1, 2] of shape (2, 3)
    assert_eq!(
        view_vals(&[2, 3], &[Point(1), Point(-1)]),
        (vec![], vec![], 5, vec![5])
    );
    // Only new axes on a scalar.
    assert_eq!(
        view_vals(&[], &[NewAxis, NewAxis]),
        (vec![1, 1], vec![0, 0], 0, vec![0])
    );
}

#[test]
fn empty_slices_point_at_the_axis_start_with_the_original_stride() {
    let r = IndexSpec::range;
    // np.arange(5)[3:1]: shape (0,), offset 0, stride 1
    assert_eq!(view_vals(&[5], &[r(3, 1, 1)]), (vec![0], vec![1], 0, vec![]));
    // np.arange(5)[1:3:-2]: empty, offset unchanged, stride 1 (not -2)
    assert_eq!(view_vals(&[5], &[r(1, 3, -2)]), (vec![0], vec![1], 0, vec![]));
    // x[1, 3:1] of shape (3, 4): offset 4 from the point only, stride 1
    assert_eq!(
        view_vals(&[3, 4], &[IndexSpec::Point(1), r(3, 1, 1)]),
        (vec![0], vec![1], 4, vec![])
    );
    // x[:, 5:] of shape (3, 4): (3, 0), strides (4, 1)
    assert_eq!(
        view_vals(&[3, 4], &[IndexSpec::All, r(5, 1000, 1)]),
        (vec![3, 0], vec![4, 1], 0, vec![])
    );
    // Views of an empty array.
    assert_eq!(
        view_vals(&[0, 3], &[IndexSpec::All, IndexSpec::Point(1)]).0,
        vec![0]
    );
    assert_eq!(view_vals(&[0, 3], &[r(-1, -1000, -1)]).0, vec![0, 3]);
}

#[test]
fn negative_strides_longer_than_one_match_numpy() {
    let r = IndexSpec::range;
    // np.arange(10)[8:2:-2] -> [8, 6, 4]
    assert_eq!(view_vals(&[10], &[r(8, 2, -2)]).3, vec![8, 6, 4]);
    // np.arange(10)[9:0:-3] -> [9, 6, 3]
    assert_eq!(view_vals(&[10], &[r(9, 0, -3)]).3, vec![9, 6, 3]);
    // np.arange(6)[4:0:-2] -> [4, 2]
    assert_eq!(view_vals(&[6], &[r(4, 0, -2)]).3, vec![4, 2]);
    // np.arange(10)[::-2] -> [9, 7, 5, 3, 1]; a length formula that rounds
    // the wrong way makes a 6-element view starting before the buffer.
    let v = arange_i64(&[10]).slice(&[r(-1, -1000, -2)]);
    assert_eq!(v.unwrap().shape(), &[5]);
}

#[test]
fn huge_strides_and_bounds_behave_like_numpy() {
    let r = IndexSpec::range;
    // np.arange(5)[::2**62] -> [0]; [4::-2**62] -> [4]
    assert_eq!(view_vals(&[5], &[r(0, 1000, 1 << 62)]).3, vec![0]);
    assert_eq!(view_vals(&[5], &[r(4, -1000, -(1 << 62))]).3, vec![4]);
    // An inclusive end of i64::MAX is "to the end".
    assert_eq!(view_vals(&[5], &[incl(1, i64::MAX, 1)]).3, vec![1, 2, 3, 4]);
    assert_eq!(view_vals(&[5], &[incl(i64::MIN, i64::MAX, i64::MAX)]).3, vec![0]);
    assert_eq!(
        view_vals(&[5], &[r(i64::MAX, i64::MIN, -1)]).3,
        vec![4, 3, 2, 1, 0]
    );
}

#[test]
fn length_one_axis_with_stride_i64_min_reads() {
    // np.arange(5)[4::-2**63] -> [4]
    let v = arange_i64(&[5])
        .slice(&[IndexSpec::range(4, i64::MIN, i64::MIN)])
        .unwrap();
    assert_eq!(v.shape(), &[1]);
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        v.to_array::<i64>().map(|a| a.iter().copied().collect::<Vec<_>>())
    }));
    assert_eq!(got.ok().and_then(|r| r.ok()), Some(vec![4]));
}

#[test]
fn decode_reads_the_point_from_slot_three_and_both_new_axis_forms() {
    // The seed's defect read the point from the wrong slot.
    assert_eq!(
        IndexSpec::decode(&[0, 1, 1, 3, 1], 0).unwrap(),
        IndexSpec::Point(3)
    );
    assert_eq!(
        IndexSpec::decode(&[0, 1, 1, 3, 0], 0).unwrap(),
        IndexSpec::Point(3)
    );
    let v = create_view_op(&arange_i64(&[5]), &[IndexSpec::Point(3)]).unwrap();
    assert_eq!(vals_i64(&v), vec![3]);
    assert_eq!(IndexSpec::decode(&[3, 1, 10, 1], 0).unwrap(), IndexSpec::NewAxis);
    assert_eq!(
        IndexSpec::decode(&[3, 1, 1, 0, 1], 0).unwrap(),
        IndexSpec::NewAxis
    );
    assert_eq!(IndexSpec::decode(&[2, 0, 1, 1], 0).unwrap(), IndexSpec::All);
    assert_eq!(
        IndexSpec::decode(&[1, 2, 1, -3, 7, -2, 1], 0).unwrap(),
        IndexSpec::Interval {
            start: -3,
            end: 7,
            stride: -2,
            inclusive: true
        }
    );
    // The encoding of the seeds' table.
    assert_eq!(IndexSpec::Point(4).encode(), vec![0, 1, 1, 4, 1]);
    assert_eq!(IndexSpec::range(1, 5, 2).encode(), vec![1, 2, 1, 1, 5, 2, 0]);
    assert_eq!(IndexSpec::All.encode(), vec![2, 0, 1, 1]);
    assert_eq!(IndexSpec::NewAxis.encode(), vec![3, 1, 10, 1]);
}

#[test]
fn create_view_never_copies_into_a_preallocated_output() {
    // The seed's second defect: a pre-allocated output turned the view into a copy.
    let x = arange_i64(&[3, 4]);
    let idx = [IndexSpec::Point(1), IndexSpec::range(0, 4, 2)];
    let mut inputs = vec![x.clone()];
    inputs.extend(index_inputs(&idx));
    let pre = Tensor::zeros(DType::I64, &[2]).unwrap();
    let out = CreateView
        .compute(&inputs, &mut OpCtx::with_prealloc("cv", vec![Some(pre.clone())]))
        .unwrap();
    assert!(out[0].same_buffer(&x));
    assert!(!out[0].same_buffer(&pre));
    assert_eq!(vals_i64(&out[0]), vec![4, 6]);
    assert_eq!(vals_i64(&pre), vec![0, 0]);
    assert_eq!(CreateView.view_map(), vec![(0, 0)]);
    assert!(CreateView.exempt_from_inplace_check());
}

// ----- errors ------------------------------------------------------------------

#[test]
fn out_of_range_points_are_errors() {
    let x = arange_i64(&[3]);
    for p in [3, 4, -4, -100, i64::MAX, i64::MIN] {
        let e = x.slice(&[IndexSpec::Point(p)]).unwrap_err();
        assert_cause!(e, Index, &format!("point {p}"), "length 3");
        assert!(create_view_op(&x, &[IndexSpec::Point(p)]).is_err());
    }
    assert_eq!(vals_i64(&x.slice(&[IndexSpec::Point(-3)]).unwrap()), vec![0]);
    assert!(arange_i64(&[0]).slice(&[IndexSpec::Point(0)]).is_err());
    assert!(arange_i64(&[0]).slice(&[IndexSpec::Point(-1)]).is_err());
    let e = arange_i64(&[2, 3])
        .slice(&[IndexSpec::All, IndexSpec::Point(5)])
        .unwrap_err();
    assert_cause!(e, Index, "axis 1");
}

#[test]
fn zero_stride_is_an_error() {
    let x = arange_i64(&[4]);
    let e = IndexSpec::decode(&[1, 2, 1, 0, 3, 0, 0], 2).unwrap_err();
    assert_cause!(e, IndexEncoding, "index 2", "stride (slot 5) is 0");
    assert!(x.slice(&[IndexSpec::range(0, 3, 0)]).is_err());
    assert!(create_view_op(&x, &[IndexSpec::range(0, 3, 0)]).is_err());
}

#[test]
fn too_many_indices_are_an_error_but_new_axes_do_not_count() {
    use IndexSpec::*;
    assert!(arange_i64(&[2]).slice(&[All, All]).is_err());
    assert!(arange_i64(&[2, 3])
        .slice(&[Point(0), Point(0), Point(0)])
        .is_err());
    assert!(arange_i64(&[]).slice(&[All]).is_err());
    assert!(create_view_op(&arange_i64(&[2]), &[Point(0), All]).is_err());
    let v = arange_i64(&[2]).slice(&[NewAxis, All, NewAxis]).unwrap();
    assert_eq!(v.shape(), &[1, 2, 1]);
}

#[test]
fn malformed_index_vectors_are_errors_naming_the_index() {
    let x = arange_i64(&[4, 4]);
    let bad: Vec<Vec<i64>> = vec![
        vec![],
        vec![7, 0, 1, 1],
        vec![-1, 0, 1, 1],
        vec![0, 1, 1, 2],
        vec![0, 1, 1, 2, 1, 0],
        vec![1, 2, 1, 0, 3, 1],
        vec![1, 2, 1, 0, 3, 1, 0, 0],
        vec![2, 0, 1],
        vec![2, 0, 1, 1, 1],
        vec![3, 1],
        vec![3, 1, 1, 0, 1, 9],
    ];
    for v in bad {
        let inputs = vec![x.clone(), Tensor::from_i64s(&[2, 0, 1, 1]), Tensor::from_i64s(&v)];
        let e = CreateView.compute(&inputs, &mut OpCtx::new("cv")).unwrap_err();
        assert_cause!(e, IndexEncoding, "index 1");
    }
    // Index inputs must be 1-D i64 vectors.
    let not_vectors = [
        Tensor::from_vec(&[4], vec![2.0f64, 0.0, 1.0, 1.0]).unwrap(),
        Tensor::from_vec(&[4], vec![2i32, 0, 1, 1]).unwrap(),
        Tensor::from_vec(&[2, 2], vec![2i64, 0, 1, 1]).unwrap(),
        Tensor::from_vec(&[], vec![2i64]).unwrap(),
    ];
    for t in not_vectors {
        let e = CreateView
            .compute(&[x.clone(), t.clone()], &mut OpCtx::new("cv"))
            .unwrap_err();
        assert_cause!(e, DType, "index 0", "1-D i64");
    }
    // With no index at all, create_view is the whole array, as a view.
    let v = CreateView
        .compute(std::slice::from_ref(&x), &mut OpCtx::new("cv"))
        .unwrap();
    assert!(v[0].same_buffer(&x));
    assert_eq!(v[0].layout(), x.layout());
}

#[test]
fn create_view_in_a_graph_is_a_view_of_the_fed_input_and_errors_name_the_node() {
    let g = GraphBuilder::new("cv");
    let x = g.input("x", DType::I64, &[3, 4]);
    let v = x
        .view(&[IndexSpec::Point(-1), IndexSpec::range(3, 0, -2)])
        .unwrap();
    let graph = g.build(&[&v]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let feed = arange_i64(&[3, 4]);
    let out = exec
        .run(&HashMap::from([("x".to_string(), feed.clone())]))
        .unwrap();
    let t = out.get(v.name()).unwrap();
    assert_eq!(vals_i64(t), vec![11, 9]);
    assert!(t.same_buffer(&feed));

    // Indices are resolved at run time, against the fed shape.
    let g = GraphBuilder::new("cv_dyn");
    let x = g.input("x", DType::I64, &[-1]);
    let idx = g.index(IndexSpec::Point(-1));
    let v = g
        .apply_named("last", "create_view", &[&x, &idx], Default::default())
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&v]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let out = exec
        .run(&HashMap::from([("x".to_string(), arange_i64(&[7]))]))
        .unwrap();
    assert_eq!(vals_i64(out.get("last").unwrap()), vec![6]);
    let Err(e) = exec.run(&HashMap::from([("x".to_string(), arange_i64(&[0]))])) else {
        panic!("point -1 of an empty axis was taken");
    };
    assert!(matches!(&e, Error::Node { node, .. } if node == "last"), "{e:?}");
    assert_cause!(e, Index);

    // A non-i64 index is refused when the graph is built, naming the node.
    let g = GraphBuilder::new("cv_bad");
    let x = g.input("x", DType::I64, &[3]);
    let bad = g.constant(
        "bad",
        Tensor::from_vec(&[4], vec![2.0f32, 0.0, 1.0, 1.0]).unwrap(),
    );
    let e = g
        .apply_named("cv", "create_view", &[&x, &bad], Default::default())
        .unwrap_err();
    assert!(matches!(&e, Error::Node { node, .. } if node == "cv"), "{e:?}");
    assert_cause!(e, DType, "index 0");
}
