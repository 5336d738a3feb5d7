use super::*;
use crate::assert_cause;
use crate::dtype::Scalar;
use crate::tensor::IndexSpec;

fn f64s(shape: &[usize], v: &[f64]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

/// 0, 1, 2, ... as f64 in `shape`.
fn arange(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    f64s(shape, &(0..n).map(|i| i as f64).collect::<Vec<_>>())
}

fn ix(specs: &[IndexSpec]) -> Vec<Tensor> {
    specs.iter().map(|s| Tensor::from_i64s(&s.encode())).collect()
}

fn run(op: &dyn Op, inputs: &[Tensor]) -> Result<Tensor> {
    Ok(op.compute(inputs, &mut OpCtx::new("n"))?.remove(0))
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

fn rev() -> IndexSpec {
    IndexSpec::range(-1, i64::MIN, -1)
}

fn err(r: Result<Tensor>) -> Error {
    r.unwrap_err()
}

// ----- strided_slice

fn sslice(x: &Tensor, specs: &[IndexSpec]) -> Result<Tensor> {
    let mut inputs = vec![x.clone()];
    inputs.extend(ix(specs));
    run(&StridedSlice, &inputs)
}

#[test]
fn strided_slice_copies_basic_indexing() {
    let x = arange(&[3, 4]);
    let y = sslice(&x, &[IndexSpec::Point(1)]).unwrap();
    assert_eq!(y.shape(), &[4]);
    assert_eq!(vals(&y), [4.0, 5.0, 6.0, 7.0]);
    assert!(!y.same_buffer(&x));
    // x[::2, ::-1]
    let y = sslice(&x, &[IndexSpec::range(0, 3, 2), rev()]).unwrap();
    assert_eq!(y.shape(), &[2, 4]);
    assert_eq!(vals(&y), [3.0, 2.0, 1.0, 0.0, 11.0, 10.0, 9.0, 8.0]);
    assert!(y.is_contiguous());
    // x[None, -1, 1:3]
    let y = sslice(
        &x,
        &[
            IndexSpec::NewAxis,
            IndexSpec::Point(-1),
            IndexSpec::range(1, 3, 1),
        ],
    )
    .unwrap();
    assert_eq!(y.shape(), &[1, 2]);
    assert_eq!(vals(&y), [9.0, 10.0]);
    // Writing the copy leaves x alone.
    y.set_at(&[0, 0], Scalar::F64(-1.0)).unwrap();
    assert_eq!(x.at(&[2, 1]).unwrap(), Scalar::F64(9.0));
}

#[test]
fn strided_slice_of_transposed_reversed_and_broadcast_inputs() {
    // x.T = [[0,4,8],[1,5,9],[2,6,10],[3,7,11]]; x.T[1:3, -1] = [9, 10]
    let xt = arange(&[3, 4]).t(None).unwrap();
    let y = sslice(&xt, &[IndexSpec::range(1, 3, 1), IndexSpec::Point(-1)]).unwrap();
    assert_eq!(vals(&y), [9.0, 10.0]);
    // x[::-1][1:] on arange(5) = [3, 2, 1, 0]
    let xr = arange(&[5]).slice(&[rev()]).unwrap();
    assert_eq!(
        vals(&sslice(&xr, &[IndexSpec::range(1, 5, 1)]).unwrap()),
        [3.0, 2.0, 1.0, 0.0]
    );
    // broadcast_to([0, 1, 2], (2, 3))[:, 1:] = [[1, 2], [1, 2]], writable
    let xb = arange(&[3]).broadcast_to(&[2, 3]).unwrap();
    let y = sslice(&xb, &[IndexSpec::All, IndexSpec::range(1, 3, 1)]).unwrap();
    assert_eq!(vals(&y), [1.0, 2.0, 1.0, 2.0]);
    y.set_at(&[0, 0], Scalar::F64(7.0)).unwrap();
    assert_eq!(vals(&y), [7.0, 2.0, 1.0, 2.0]);
    // Empty selection.
    let y = sslice(&arange(&[3, 4]), &[IndexSpec::range(2, 2, 1)]).unwrap();
    assert_eq!(y.shape(), &[0, 4]);
    // No index: the whole array.
    assert_eq!(vals(&sslice(&arange(&[2]), &[]).unwrap()), [0.0, 1.0]);
}

#[test]
fn strided_slice_fills_a_non_contiguous_preallocated_output() {
    let x = arange(&[3, 4]);
    let pre = Tensor::zeros(DType::F64, &[4, 2]).unwrap().t(None).unwrap(); // (2, 4), strides (1, 2)
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(pre.clone())]);
    let mut inputs = vec![x];
    inputs.extend(ix(&[IndexSpec::range(1, 3, 1)]));
    let y = StridedSlice.compute(&inputs, &mut ctx).unwrap().remove(0);
    assert!(y.same_buffer(&pre));
    assert_eq!(vals(&y), [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]);
}

#[test]
fn strided_slice_errors_name_the_index() {
    let x = arange(&[2, 3]);
    let e = err(sslice(&x, &[IndexSpec::All, IndexSpec::Point(3)]));
    assert_cause!(e, Index, "point 3", "axis 1", "length 3");
    let e = err(run(
        &StridedSlice,
        &[x.clone(), f64s(&[4], &[2.0, 0.0, 1.0, 1.0])],
    ));
    assert_cause!(e, DType, "index 0", "i64");
    let e = err(sslice(&x, &[IndexSpec::All, IndexSpec::All, IndexSpec::All]));
    assert_cause!(e, Rank, "3 indices", "2 dimensions");
    let e = StridedSlice.infer(&[
        TypeInfo::known(DType::F32, &[2]),
        TypeInfo::known(DType::F32, &[4]),
    ]);
    assert_cause!(e.unwrap_err(), DType, "index 0");
}

// ----- gather

fn gather(x: &Tensor, ind: &Tensor, axis: i64) -> Result<Tensor> {
    run(&Gather { axis }, &[x.clone(), ind.clone()])
}

fn i64s(shape: &[usize], v: &[i64]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

#[test]
fn gather_rows_and_columns_with_negative_indices() {
    let x = arange(&[3, 4]);
    let y = gather(&x, &i64s(&[3], &[2, -1, 0]), 0).unwrap();
    assert_eq!(y.shape(), &[3, 4]);
    assert_eq!(
        vals(&y),
        [8.0, 9.0, 10.0, 11.0, 8.0, 9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0]
    );
    // take(x, [[0, 3], [1, 1]], axis=1) -> shape (3, 2, 2)
    let y = gather(&x, &i64s(&[2, 2], &[0, 3, 1, 1]), 1).unwrap();
    assert_eq!(y.shape(), &[3, 2, 2]);
    assert_eq!(
        vals(&y),
        [0.0, 3.0, 1.0, 1.0, 4.0, 7.0, 5.0, 5.0, 8.0, 11.0, 9.0, 9.0]
    );
    let y2 = gather(&x, &i64s(&[2, 2], &[0, -1, 1, -3]), -1).unwrap();
    assert_eq!(vals(&y2), vals(&y));
}

#[test]
fn gather_wide_slabs_and_scalar_index() {
    // Rows of 8 take the slab path.
    let x = arange(&[3, 8]);
    let y = gather(&x, &i64s(&[2], &[-1, 1]), 0).unwrap();
    let want: Vec<f64> = (16..24).chain(8..16).map(|v| v as f64).collect();
    assert_eq!(vals(&y), want);
    // A 0-d index drops the axis: take(x, 2, axis=1) = x[:, 2]
    let y = gather(&x, &i64s(&[], &[2]), 1).unwrap();
    assert_eq!(y.shape(), &[3]);
    assert_eq!(vals(&y), [2.0, 10.0, 18.0]);
}

#[test]
fn gather_from_transposed_reversed_and_broadcast_inputs() {
    // x.T = [[0,4,8],[1,5,9],[2,6,10],[3,7,11]]
    let xt = arange(&[3, 4]).t(None).unwrap();
    let y = gather(&xt, &i64s(&[2], &[3, 0]), 0).unwrap();
    assert_eq!(vals(&y), [3.0, 7.0, 11.0, 0.0, 4.0, 8.0]);
    let y = gather(&xt, &i64s(&[2], &[2, 0]), 1).unwrap();
    assert_eq!(vals(&y), [8.0, 0.0, 9.0, 1.0, 10.0, 2.0, 11.0, 3.0]);
    // arange(5)[::-1] = [4, 3, 2, 1, 0]
    let xr = arange(&[5]).slice(&[rev()]).unwrap();
    assert_eq!(
        vals(&gather(&xr, &i64s(&[3], &[0, -1, 1]), 0).unwrap()),
        [4.0, 0.0, 3.0]
    );
    // broadcast_to([10, 20], (3, 2))
    let xb = f64s(&[2], &[10.0, 20.0]).broadcast_to(&[3, 2]).unwrap();
    let y = gather(&xb, &i64s(&[3], &[1, 1, 0]), 1).unwrap();
    assert_eq!(y.shape(), &[3, 3]);
    assert_eq!(vals(&y), [20.0, 20.0, 10.0, 20.0, 20.0, 10.0, 20.0, 20.0, 10.0]);
}

#[test]
fn gather_empty_indices_and_empty_axis() {
    let x = arange(&[3, 4]);
    let y = gather(&x, &i64s(&[0], &[]), 0).unwrap();
    assert_eq!(y.shape(), &[0, 4]);
    let y = gather(&x, &i64s(&[2, 0], &[]), 1).unwrap();
    assert_eq!(y.shape(), &[3, 2, 0]);
    let empty = Tensor::zeros(DType::I32, &[0, 2]).unwrap();
    let y = gather(&empty, &i64s(&[0], &[]), 0).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[0usize, 2][..], DType::I32));
    let e = err(gather(&empty, &i64s(&[1], &[0]), 0));
    assert_cause!(e, Index, "index 0", "axis 0", "length 0");
}

#[test]
fn gather_into_a_preallocated_output_that_cannot_be_flattened() {
    let x = arange(&[3, 4]);
    // (3, 2, 2) with strides (1, 3, 6): no flat (3, 4) view of it exists.
    let pre = Tensor::zeros(DType::F64, &[2, 2, 3]).unwrap().t(None).unwrap();
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(pre.clone())]);
    let y = Gather { axis: 1 }
        .compute(&[x, i64s(&[2, 2], &[0, 3, 1, 1])], &mut ctx)
        .unwrap()
        .remove(0);
    assert!(y.same_buffer(&pre));
    assert_eq!(
        vals(&y),
        [0.0, 3.0, 1.0, 1.0, 4.0, 7.0, 5.0, 5.0, 8.0, 11.0, 9.0, 9.0]
    );
}

#[test]
fn gather_errors_name_value_axis_and_length() {
    let x = arange(&[3, 4]);
    let e = err(gather(&x, &i64s(&[2], &[1, 3]), 0));
    assert_cause!(e, Index, "'gather'", "index 3", "axis 0", "length 3");
    let e = err(gather(&x, &i64s(&[1], &[-5]), 1));
    assert_cause!(e, Index, "index -5", "axis 1", "length 4");
    let e = err(gather(&x, &i64s(&[1], &[i64::MIN]), 1));
    assert_cause!(e, Index, &i64::MIN.to_string());
    let e = err(gather(&x, &i64s(&[1], &[0]), 2));
    assert_cause!(e, Attr, "'axis'", "axis 2");
    let e = err(gather(&x, &f64s(&[1], &[0.0]), 0));
    assert_cause!(e, DType, "i64", "f64");
    let e = err(gather(&f64s(&[], &[1.0]), &i64s(&[1], &[0]), 0));
    assert_cause!(e, Rank, "0-d");
}

#[test]
fn gather_infers_shapes() {
    let g = Gather { axis: -1 };
    let t = g
        .infer(&[
            TypeInfo::new(DType::F32, Some(vec![2, -1, 5])),
            TypeInfo::known(DType::I64, &[3, 4]),
        ])
        .unwrap();
    assert_eq!(t[0], TypeInfo::new(DType::F32, Some(vec![2, -1, 3, 4])));
    let t = g
        .infer(&[TypeInfo::known(DType::F32, &[2]), TypeInfo::unknown(DType::I64)])
        .unwrap();
    assert_eq!(t[0].shape, None);
    assert!(g
        .infer(&[
            TypeInfo::known(DType::F32, &[2]),
            TypeInfo::known(DType::I32, &[1])
        ])
        .is_err());
    assert!(Gather { axis: 1 }
        .infer(&[
            TypeInfo::known(DType::F32, &[2]),
            TypeInfo::known(DType::I64, &[1])
        ])
        .is_err());
}

// ----- concat

fn concat(xs: &[Tensor], axis: i64) -> Result<Tensor> {
    run(&Concat { axis }, xs)
}

#[test]
fn concat_along_each_axis() {
    let a = arange(&[2, 2]);
    let b = f64s(&[1, 2], &[8.0, 9.0]);
    let y = concat(&[a.clone(), b], 0).unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(vals(&y), [0.0, 1.0, 2.0, 3.0, 8.0, 9.0]);
    let c = f64s(&[2, 1], &[8.0, 9.0]);
    let y = concat(&[a.clone(), c, a.clone()], -1).unwrap();
    assert_eq!(y.shape(), &[2, 5]);
    assert_eq!(vals(&y), [0.0, 1.0, 8.0, 0.0, 1.0, 2.0, 3.0, 9.0, 2.0, 3.0]);
    // A single input is a copy.
    let y = concat(std::slice::from_ref(&a), 0).unwrap();
    assert!(!y.same_buffer(&a));
    assert_eq!(vals(&y), [0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn concat_transposed_reversed_broadcast_and_empty_inputs() {
    // x.T = [[0, 2], [1, 3]]; x[::-1] = [[2, 3], [0, 1]]
    let x = arange(&[2, 2]);
    let xt = x.t(None).unwrap();
    let xr = x.slice(&[rev()]).unwrap();
    let xb = f64s(&[2], &[5.0, 6.0]).broadcast_to(&[2, 2]).unwrap();
    let empty = Tensor::zeros(DType::F64, &[0, 2]).unwrap();
    let y = concat(&[xt, empty.clone(), xr, xb], 0).unwrap();
    assert_eq!(y.shape(), &[6, 2]);
    assert_eq!(
        vals(&y),
        [0.0, 2.0, 1.0, 3.0, 2.0, 3.0, 0.0, 1.0, 5.0, 6.0, 5.0, 6.0]
    );
    let y = concat(&[empty.clone(), empty], 0).unwrap();
    assert_eq!(y.shape(), &[0, 2]);
    // bool and the same tensor twice
    let b = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    let y = concat(&[b.clone(), b], 0).unwrap();
    assert_eq!(
        y.to_array::<bool>().unwrap().into_raw_vec_and_offset().0,
        [true, false, true, false]
    );
}

#[test]
fn concat_copies_an_input_aliasing_the_preallocated_output() {
    // out = buffer of a, pre-allocated; concat([a[::-1], a[::-1]]) in numpy
    // terms: [3, 2, 1, 0, 3, 2, 1, 0]
    let a = arange(&[8]);
    let half = a.slice(&[IndexSpec::range(3, i64::MIN, -1)]).unwrap();
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(a.clone())]);
    let y = Concat { axis: 0 }
        .compute(&[half.clone(), half], &mut ctx)
        .unwrap()
        .remove(0);
    assert!(y.same_buffer(&a));
    assert_eq!(vals(&y), [3.0, 2.0, 1.0, 0.0, 3.0, 2.0, 1.0, 0.0]);
}

#[test]
fn concat_errors_name_inputs_and_shapes() {
    let a = arange(&[2, 2]);
    let e = err(concat(&[a.clone(), arange(&[2, 3])], 0));
    assert_cause!(e, Shape, "'concat'", "input 1", "[2, 3]", "[2, 2]", "axis 0");
    let e = err(concat(&[a.clone(), arange(&[4])], 0));
    assert_cause!(e, Shape, "input 1", "[4]");
    let e = err(concat(&[a.clone(), a.cast(DType::F32).unwrap()], 0));
    assert_cause!(e, DType, "input 1", "f32", "f64");
    let e = err(concat(std::slice::from_ref(&a), 2));
    assert_cause!(e, Attr, "'axis'");
    let e = err(concat(&[f64s(&[], &[1.0])], 0));
    assert_cause!(e, Rank, "0-d");
    assert_cause!(err(concat(&[], 0)), Arity, "at least 1");
}

#[test]
fn concat_infers_partial_shapes() {
    let c = Concat { axis: 1 };
    let t = c
        .infer(&[
            TypeInfo::new(DType::F32, Some(vec![-1, 2])),
            TypeInfo::new(DType::F32, Some(vec![3, 4])),
        ])
        .unwrap();
    assert_eq!(t[0].shape, Some(vec![3, 6]));
    let t = c
        .infer(&[
            TypeInfo::new(DType::F32, Some(vec![3, -1])),
            TypeInfo::unknown(DType::F32),
        ])
        .unwrap();
    assert_eq!(t[0].shape, Some(vec![3, -1]));
    assert!(c
        .infer(&[
            TypeInfo::known(DType::F32, &[3, 1]),
            TypeInfo::known(DType::F32, &[2, 1])
        ])
        .is_err());
    assert!(c
        .infer(&[
            TypeInfo::known(DType::F32, &[3, 1]),
            TypeInfo::known(DType::F64, &[3, 1])
        ])
        .is_err());
    assert_eq!(
        c.infer(&[TypeInfo::unknown(DType::I32)]).unwrap()[0],
        TypeInfo::unknown(DType::I32)
    );
}

// ----- stack

fn stack(xs: &[Tensor], axis: i64) -> Result<Tensor> {
    run(&Stack { axis }, xs)
}

#[test]
fn stack_inserts_the_new_axis() {
    let a = arange(&[2, 2]);
    let b = f64s(&[2, 2], &[4.0, 5.0, 6.0, 7.0]);
    let y = stack(&[a.clone(), b.clone()], 0).unwrap();
    assert_eq!(y.shape(), &[2, 2, 2]);
    assert_eq!(vals(&y), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let y = stack(&[a.clone(), b.clone()], 1).unwrap();
    assert_eq!(y.shape(), &[2, 2, 2]);
    assert_eq!(vals(&y), [0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 6.0, 7.0]);
    let y = stack(&[a.clone(), b.clone()], -1).unwrap();
    assert_eq!(vals(&y), [0.0, 4.0, 1.0, 5.0, 2.0, 6.0, 3.0, 7.0]);
    let y = stack(&[f64s(&[], &[1.0]), f64s(&[], &[2.0]), f64s(&[], &[3.0])], -1).unwrap();
    assert_eq!(y.shape(), &[3]);
    assert_eq!(vals(&y), [1.0, 2.0, 3.0]);
}

#[test]
fn stack_transposed_reversed_broadcast_and_empty_inputs() {
    let x = arange(&[2, 2]);
    let xt = x.t(None).unwrap(); // [[0, 2], [1, 3]]
    let xr = x.slice(&[IndexSpec::All, rev()]).unwrap(); // [[1, 0], [3, 2]]
    let xb = f64s(&[2], &[5.0, 6.0]).broadcast_to(&[2, 2]).unwrap();
    let y = stack(&[xt, xr, xb], 1).unwrap();
    assert_eq!(y.shape(), &[2, 3, 2]);
    assert_eq!(
        vals(&y),
        [0.0, 2.0, 1.0, 0.0, 5.0, 6.0, 1.0, 3.0, 3.0, 2.0, 5.0, 6.0]
    );
    let e = Tensor::zeros(DType::I64, &[0]).unwrap();
    let y = stack(&[e.clone(), e], 1).unwrap();
    assert_eq!(y.shape(), &[0, 2]);
}

#[test]
fn stack_errors_and_inference() {
    let a = arange(&[2]);
    let e = err(stack(&[a.clone(), arange(&[3])], 0));
    assert_cause!(e, Shape, "'stack'", "input 1", "[3]", "[2]");
    assert_cause!(err(stack(std::slice::from_ref(&a), 2)), Attr, "'axis'");
    assert_cause!(err(stack(std::slice::from_ref(&a), -3)), Attr, "'axis'");
    assert_eq!(stack(std::slice::from_ref(&a), -2).unwrap().shape(), &[1, 2]);
    let s = Stack { axis: -1 };
    let t = s
        .infer(&[
            TypeInfo::new(DType::F32, Some(vec![-1, 3])),
            TypeInfo::new(DType::F32, Some(vec![2, -1])),
        ])
        .unwrap();
    assert_eq!(t[0].shape, Some(vec![2, 3, 2]));
    assert!(s
        .infer(&[
            TypeInfo::known(DType::F32, &[2]),
            TypeInfo::known(DType::F32, &[2, 1])
        ])
        .is_err());
}

// ----- copy and the registry

#[test]
fn copy_makes_a_contiguous_copy() {
    let xt = arange(&[2, 3]).t(None).unwrap();
    let y = run(&CopyOp, std::slice::from_ref(&xt)).unwrap();
    assert!(!y.same_buffer(&xt) && y.is_contiguous());
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(vals(&y), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let xb = f64s(&[1], &[2.0]).broadcast_to(&[3]).unwrap();
    assert_eq!(vals(&run(&CopyOp, &[xb]).unwrap()), [2.0, 2.0, 2.0]);
    let e = Tensor::zeros(DType::Bool, &[0, 3]).unwrap();
    assert_eq!(run(&CopyOp, &[e]).unwrap().shape(), &[0, 3]);
}

#[test]
fn registry_builds_validates_and_round_trips_attrs() {
    let mut r = OpRegistry::empty();
    register(&mut r);
    for name in ["strided_slice", "gather", "concat", "stack", "copy"] {
        assert!(r.contains(name), "{name}");
    }
    let op = r.make("gather", &Attrs::new().with("axis", -1)).unwrap();
    assert_eq!(op.attrs(), Attrs::new().with("axis", -1));
    assert_eq!(
        r.make("concat", &Attrs::new()).unwrap().attrs(),
        Attrs::new().with("axis", 0)
    );
    let e = r.make("stack", &Attrs::new().with("axes", 1)).unwrap_err();
    assert_cause!(e, Attr, "'axes'");
    let e = r.make("gather", &Attrs::new().with("axis", "x")).unwrap_err();
    assert_cause!(e, Attr, "'axis'");
    for name in ["strided_slice", "copy", "gather"] {
        let op = r.make(name, &Attrs::new()).unwrap();
        assert!(op.view_map().is_empty() && op.destroy_map().is_empty());
    }
}
