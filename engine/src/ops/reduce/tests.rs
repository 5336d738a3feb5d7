use super::*;
use crate::assert_cause;
use crate::tensor::IndexSpec;

fn t<T: Element>(shape: &[usize], data: Vec<T>) -> Tensor {
    Tensor::from_vec(shape, data).unwrap()
}

/// `[[1, 2, 3], [4, 5, 6]]`.
fn x23() -> Tensor {
    t(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])
}

/// Reverses axis 0 (numpy's `x[::-1]`).
fn rev0(x: &Tensor) -> Tensor {
    x.slice(&[IndexSpec::range(-1, i64::MIN, -1)]).unwrap()
}

fn op(name: &str, attrs: Attrs) -> Arc<dyn Op> {
    OpRegistry::builtin().make(name, &attrs).unwrap()
}

fn run(op: &dyn Op, x: &Tensor) -> Result<Tensor> {
    Ok(op
        .compute(std::slice::from_ref(x), &mut OpCtx::new("n"))?
        .remove(0))
}

fn vals<T: Element>(x: &Tensor) -> (Vec<usize>, Vec<T>) {
    (
        x.shape().to_vec(),
        x.to_array::<T>().unwrap().iter().copied().collect(),
    )
}

fn axes(a: &[i64]) -> Attrs {
    Attrs::new().with("axes", a.to_vec())
}

#[test]
fn sum_over_axes_contiguous() {
    let x = x23();
    assert_eq!(
        vals::<f64>(&run(&*op("sum", Attrs::new()), &x).unwrap()),
        (vec![], vec![21.0])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("sum", axes(&[0])), &x).unwrap()),
        (vec![3], vec![5.0, 7.0, 9.0])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("sum", axes(&[1])), &x).unwrap()),
        (vec![2], vec![6.0, 15.0])
    );
    let kd = op("sum", axes(&[-1]).with("keepdims", true));
    assert_eq!(
        vals::<f64>(&run(&*kd, &x).unwrap()),
        (vec![2, 1], vec![6.0, 15.0])
    );
    let all_kd = op("sum", Attrs::new().with("keepdims", true));
    assert_eq!(vals::<f64>(&run(&*all_kd, &x).unwrap()), (vec![1, 1], vec![21.0]));
    // axes [0, 1] is the full reduction too.
    assert_eq!(
        vals::<f64>(&run(&*op("sum", axes(&[1, 0])), &x).unwrap()),
        (vec![], vec![21.0])
    );
}

#[test]
fn empty_axes_list_reduces_nothing() {
    let x = x23();
    assert_eq!(
        vals::<f64>(&run(&*op("max", axes(&[])), &x).unwrap()),
        (vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    );
    let e = t::<f64>(&[0, 2], vec![]);
    assert_eq!(
        vals::<f64>(&run(&*op("max", axes(&[])), &e).unwrap()),
        (vec![0, 2], vec![])
    );
}

#[test]
fn reductions_of_transposed_input() {
    // x.T = [[1, 4], [2, 5], [3, 6]]
    let xt = x23().t(None).unwrap();
    assert_eq!(
        vals::<f64>(&run(&*op("sum", axes(&[1])), &xt).unwrap()),
        (vec![3], vec![5.0, 7.0, 9.0])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("sum", axes(&[0])), &xt).unwrap()),
        (vec![2], vec![6.0, 15.0])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("max", axes(&[0])), &xt).unwrap()),
        (vec![2], vec![3.0, 6.0])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("min", axes(&[1])), &xt).unwrap()),
        (vec![3], vec![1.0, 2.0, 3.0])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("mean", axes(&[0])), &xt).unwrap()),
        (vec![2], vec![2.0, 5.0])
    );
    // flattened C order of x.T is [1, 4, 2, 5, 3, 6]: the max is at 5.
    let am = op("argmax", Attrs::new());
    assert_eq!(vals::<i64>(&run(&*am, &xt).unwrap()), (vec![], vec![5]));
    let am0 = op("argmax", Attrs::new().with("axis", 0));
    assert_eq!(vals::<i64>(&run(&*am0, &xt).unwrap()), (vec![2], vec![2, 2]));
}

#[test]
fn reductions_of_negative_stride_input() {
    // x[::-1] = [[4, 5, 6], [1, 2, 3]]
    let r = rev0(&x23());
    assert_eq!(r.strides(), &[-3, 1]);
    assert_eq!(
        vals::<f64>(&run(&*op("min", axes(&[1])), &r).unwrap()),
        (vec![2], vec![4.0, 1.0])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("sum", axes(&[1])), &r).unwrap()),
        (vec![2], vec![15.0, 6.0])
    );
    let am0 = op("argmax", Attrs::new().with("axis", 0));
    assert_eq!(vals::<i64>(&run(&*am0, &r).unwrap()), (vec![3], vec![0, 0, 0]));
    // flattened [4, 5, 6, 1, 2, 3]: the max 6 is at 2.
    assert_eq!(
        vals::<i64>(&run(&*op("argmax", Attrs::new()), &r).unwrap()),
        (vec![], vec![2])
    );
    // Reversed 1-D integers: [3, 1, 2][::-1] = [2, 1, 3].
    let v = rev0(&t(&[3], vec![3i64, 1, 2]));
    let am = op("argmax", Attrs::new().with("axis", -1).with("keepdims", true));
    assert_eq!(vals::<i64>(&run(&*am, &v).unwrap()), (vec![1], vec![2]));
    assert_eq!(
        vals::<i64>(&run(&*op("max", Attrs::new()), &v).unwrap()),
        (vec![], vec![3])
    );
}

#[test]
fn reductions_of_broadcast_input() {
    let b = t(&[3], vec![1.0f32, 2.0, 3.0]).broadcast_to(&[4, 3]).unwrap();
    assert_eq!(b.strides(), &[0, 1]);
    assert_eq!(
        vals::<f32>(&run(&*op("sum", axes(&[0])), &b).unwrap()),
        (vec![3], vec![4.0, 8.0, 12.0])
    );
    assert_eq!(
        vals::<f32>(&run(&*op("mean", Attrs::new()), &b).unwrap()),
        (vec![], vec![2.0])
    );
    assert_eq!(
        vals::<f32>(&run(&*op("max", axes(&[1])), &b).unwrap()),
        (vec![4], vec![3.0; 4])
    );
    let am = op("argmax", Attrs::new().with("axis", 0));
    assert_eq!(vals::<i64>(&run(&*am, &b).unwrap()), (vec![3], vec![0, 0, 0]));
    // A column broadcast along the contiguous-looking axis 1.
    let c = t(&[2, 1], vec![5i32, -7]).broadcast_to(&[2, 3]).unwrap();
    assert_eq!(
        vals::<i32>(&run(&*op("sum", axes(&[1])), &c).unwrap()),
        (vec![2], vec![15, -21])
    );
    assert_eq!(
        vals::<i32>(&run(&*op("min", Attrs::new()), &c).unwrap()),
        (vec![], vec![-7])
    );
}

#[test]
fn multi_axis_reduction_of_3d() {
    // np.arange(24).reshape(2, 3, 4)
    let x = t(&[2, 3, 4], (0..24).map(|i| i as f32).collect());
    let s = op("sum", axes(&[0, 2]).with("keepdims", true));
    assert_eq!(
        vals::<f32>(&run(&*s, &x).unwrap()),
        (vec![1, 3, 1], vec![60.0, 92.0, 124.0])
    );
    let m = op("mean", axes(&[2, -3]));
    assert_eq!(
        vals::<f32>(&run(&*m, &x).unwrap()),
        (vec![3], vec![7.5, 11.5, 15.5])
    );
    let mx = op("max", axes(&[1]));
    assert_eq!(
        vals::<f32>(&run(&*mx, &x).unwrap()),
        (vec![2, 4], vec![8.0, 9.0, 10.0, 11.0, 20.0, 21.0, 22.0, 23.0])
    );
    // Same on the fully transposed (4, 3, 2) view: axes 0 and 2 swap roles.
    let xt = x.t(None).unwrap();
    let s = op("sum", axes(&[0, 2]));
    assert_eq!(
        vals::<f32>(&run(&*s, &xt).unwrap()),
        (vec![3], vec![60.0, 92.0, 124.0])
    );
    let am = op("argmax", Attrs::new().with("axis", 1));
    // argmax over j of x.T[k, j, i] = x[i, j, k] is always j = 2.
    assert_eq!(vals::<i64>(&run(&*am, &xt).unwrap()), (vec![4, 2], vec![2; 8]));
}

#[test]
fn empty_inputs() {
    let e = t::<f64>(&[0, 3], vec![]);
    assert_eq!(
        vals::<f64>(&run(&*op("sum", axes(&[0])), &e).unwrap()),
        (vec![3], vec![0.0; 3])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("sum", Attrs::new()), &e).unwrap()),
        (vec![], vec![0.0])
    );
    let (shape, m) = vals::<f64>(&run(&*op("mean", axes(&[0])), &e).unwrap());
    assert_eq!(shape, vec![3]);
    assert!(m.iter().all(|v| v.is_nan()));
    assert!(vals::<f64>(&run(&*op("mean", Attrs::new()), &e).unwrap()).1[0].is_nan());
    // Reducing the non-empty axis of an empty array is fine: empty output.
    assert_eq!(
        vals::<f64>(&run(&*op("max", axes(&[1])), &e).unwrap()),
        (vec![0], vec![])
    );
    let am1 = op("argmax", Attrs::new().with("axis", 1));
    assert_eq!(vals::<i64>(&run(&*am1, &e).unwrap()), (vec![0], vec![]));
    // Reducing the empty axis has no identity.
    let err = run(&*op("max", axes(&[0])), &e).unwrap_err();
    assert_cause!(err, Shape, "'max'", "axis 0", "[0, 3]");
    assert!(run(&*op("min", Attrs::new()), &e).is_err());
    let err = run(&*op("argmax", Attrs::new()), &e).unwrap_err();
    assert_cause!(err, Shape);
    assert!(run(&*op("argmax", Attrs::new().with("axis", 0)), &e).is_err());
    // Integer sum of nothing.
    let ei = t::<i32>(&[2, 0], vec![]);
    let s = op("sum", axes(&[1]).with("keepdims", true));
    assert_eq!(vals::<i32>(&run(&*s, &ei).unwrap()), (vec![2, 1], vec![0, 0]));
}

#[test]
fn nan_propagates_and_argmax_finds_first_nan() {
    let x = t(&[4], vec![1.0f64, f64::NAN, 3.0, f64::NAN]);
    assert!(vals::<f64>(&run(&*op("max", Attrs::new()), &x).unwrap()).1[0].is_nan());
    assert!(vals::<f64>(&run(&*op("min", Attrs::new()), &x).unwrap()).1[0].is_nan());
    assert_eq!(
        vals::<i64>(&run(&*op("argmax", Attrs::new()), &x).unwrap()).1,
        vec![1]
    );
    // NaN first: argmax is 0 even though later values are larger.
    let y = t(&[2, 2], vec![f32::NAN, 5.0, 1.0, 2.0]);
    let am = op("argmax", Attrs::new().with("axis", 1));
    assert_eq!(vals::<i64>(&run(&*am, &y).unwrap()).1, vec![0, 1]);
    let mx = vals::<f32>(&run(&*op("max", axes(&[1])), &y).unwrap()).1;
    assert!(mx[0].is_nan());
    assert_eq!(mx[1], 2.0);
    // Infinities are ordinary values.
    let z = t(
        &[3],
        vec![f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY],
    );
    assert_eq!(
        vals::<f64>(&run(&*op("max", Attrs::new()), &z).unwrap()).1,
        vec![f64::NEG_INFINITY]
    );
}

#[test]
fn argmax_ties_give_first_index() {
    let x = t(&[2, 3], vec![1i32, 3, 3, 7, 7, 0]);
    let am = op("argmax", Attrs::new().with("axis", -1));
    assert_eq!(vals::<i64>(&run(&*am, &x).unwrap()), (vec![2], vec![1, 0]));
    let kd = op("argmax", Attrs::new().with("keepdims", true));
    assert_eq!(vals::<i64>(&run(&*kd, &x).unwrap()), (vec![1, 1], vec![3]));
    // 0-d input without an axis.
    let s = t(&[], vec![4.0f64]);
    assert_eq!(
        vals::<i64>(&run(&*op("argmax", Attrs::new()), &s).unwrap()),
        (vec![], vec![0])
    );
}

#[test]
fn integer_sums_wrap_and_keep_dtype() {
    let x = t(&[2], vec![i32::MAX, 1]);
    let out = run(&*op("sum", Attrs::new()), &x).unwrap();
    assert_eq!(out.dtype(), DType::I32);
    assert_eq!(vals::<i32>(&out).1, vec![i32::MIN]);
    let y = t(&[2, 2], vec![i64::MAX, 1, 2, 3]);
    assert_eq!(
        vals::<i64>(&run(&*op("sum", axes(&[1])), &y).unwrap()).1,
        vec![i64::MIN, 5]
    );
    assert_eq!(
        vals::<i64>(&run(&*op("sum", axes(&[0])), &y).unwrap()).1,
        vec![i64::MIN + 1, 4]
    );
    assert_eq!(
        vals::<i64>(&run(&*op("max", Attrs::new()), &y).unwrap()).1,
        vec![i64::MAX]
    );
    assert_eq!(
        vals::<i64>(&run(&*op("min", axes(&[0])), &y).unwrap()).1,
        vec![2, 1]
    );
}

#[test]
fn output_is_fully_overwritten_in_a_preallocated_strided_buffer() {
    // A reversed (negative-stride) garbage view as the [3] output.
    let garbage = rev0(&t(&[3], vec![99.0f64; 3]));
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(garbage.clone())]);
    let out = op("sum", axes(&[0]))
        .compute(&[x23()], &mut ctx)
        .unwrap()
        .remove(0);
    assert!(out.same_buffer(&garbage));
    assert_eq!(vals::<f64>(&out).1, vec![5.0, 7.0, 9.0]);
    // A transposed garbage buffer for a keepdims output of shape (2, 1).
    let g2 = t(&[1, 2], vec![-1.0f64; 2]).t(None).unwrap();
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(g2)]);
    let kd = op("max", axes(&[1]).with("keepdims", true));
    let out = kd.compute(&[x23()], &mut ctx).unwrap().remove(0);
    assert_eq!(vals::<f64>(&out), (vec![2, 1], vec![3.0, 6.0]));
    // An argmax output.
    let g3 = t(&[3], vec![-5i64; 3]);
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(g3)]);
    let am = op("argmax", Attrs::new().with("axis", 0));
    let out = am.compute(&[rev0(&x23())], &mut ctx).unwrap().remove(0);
    assert_eq!(vals::<i64>(&out).1, vec![0, 0, 0]);
}

#[test]
fn bad_axes_and_dtypes_are_errors() {
    let x = x23();
    let err = run(&*op("sum", axes(&[2])), &x).unwrap_err();
    assert_cause!(err, Attr, "'axes'", "axis 2", "2 dimensions");
    assert!(run(&*op("max", axes(&[-3])), &x).is_err());
    let err = run(&*op("sum", axes(&[0, -2])), &x).unwrap_err();
    assert_cause!(err, Attr, "'axes'");
    let err = run(&*op("argmax", Attrs::new().with("axis", 5)), &x).unwrap_err();
    assert_cause!(err, Attr, "'axis'", "axis 5");
    let err = run(
        &*op("argmax", Attrs::new().with("axis", 0)),
        &t(&[], vec![1.0f64]),
    )
    .unwrap_err();
    assert_cause!(err, Attr, "'axis'", "0 dimensions");
    let xi = t(&[2], vec![1i32, 2]);
    let err = run(&*op("mean", Attrs::new()), &xi).unwrap_err();
    assert_cause!(err, DType, "'mean'", "i32");
    let xb = t(&[2], vec![true, false]);
    for name in ["sum", "mean", "max", "min", "argmax"] {
        let err = run(&*op(name, Attrs::new()), &xb).unwrap_err();
        assert_cause!(err, DType, "bool");
    }
    assert!(run(&*op("sum", Attrs::new()), &x).is_ok());
    assert!(op("sum", Attrs::new())
        .compute(&[], &mut OpCtx::new("n"))
        .is_err());
}

#[test]
fn registry_validates_attrs_and_round_trips_them() {
    let reg = OpRegistry::builtin();
    let err = reg.make("sum", &Attrs::new().with("axis", 0)).unwrap_err();
    assert_cause!(err, Attr, "'axis'");
    let err = reg
        .make("argmax", &Attrs::new().with("axes", vec![0]))
        .unwrap_err();
    assert_cause!(err, Attr, "'axes'");
    assert!(reg.make("max", &Attrs::new().with("keepdims", 1)).is_err());
    assert!(reg.make("min", &Attrs::new().with("axes", 1)).is_err());
    for (name, attrs) in [
        ("sum", axes(&[0, -1]).with("keepdims", true)),
        ("mean", Attrs::new()),
        ("argmax", Attrs::new().with("axis", -1).with("keepdims", true)),
    ] {
        let o = reg.make(name, &attrs).unwrap();
        assert_eq!(o.name(), name);
        assert_eq!(o.attrs(), attrs);
        assert_eq!(reg.make(name, &o.attrs()).unwrap().attrs(), attrs);
    }
}

#[test]
fn infer_shapes() {
    let ti = |s: Vec<i64>| TypeInfo::new(DType::F32, Some(s));
    let sum1 = op("sum", axes(&[1]));
    assert_eq!(sum1.infer(&[ti(vec![2, -1, 4])]).unwrap(), vec![ti(vec![2, 4])]);
    let kd = op("mean", axes(&[1]).with("keepdims", true));
    assert_eq!(kd.infer(&[ti(vec![2, -1, 4])]).unwrap(), vec![ti(vec![2, 1, 4])]);
    assert_eq!(
        sum1.infer(&[TypeInfo::unknown(DType::F32)]).unwrap()[0].shape,
        None
    );
    assert!(sum1.infer(&[ti(vec![3])]).is_err());
    assert!(op("max", Attrs::new()).infer(&[ti(vec![0, 2])]).is_err());
    assert!(op("max", axes(&[1])).infer(&[ti(vec![0, 2])]).is_ok());
    assert!(op("mean", Attrs::new())
        .infer(&[TypeInfo::known(DType::I64, &[2])])
        .is_err());
    assert!(op("sum", Attrs::new())
        .infer(&[TypeInfo::known(DType::Bool, &[2])])
        .is_err());
    let am = op("argmax", Attrs::new());
    assert_eq!(
        am.infer(&[TypeInfo::unknown(DType::F32)]).unwrap(),
        vec![TypeInfo::known(DType::I64, &[])]
    );
    let am1 = op("argmax", Attrs::new().with("axis", 0).with("keepdims", true));
    assert_eq!(
        am1.infer(&[ti(vec![-1, 5])]).unwrap(),
        vec![TypeInfo::new(DType::I64, Some(vec![1, 5]))]
    );
    assert!(am1.infer(&[ti(vec![0, 5])]).is_err());
    assert!(am1.infer(&[ti(vec![])]).is_err());
}

#[test]
fn prod_over_axes_keepdims_empty_axes_wraps_and_nan() {
    let a = |axes: Vec<i64>, keep: bool| Attrs::new().with("axes", axes).with("keepdims", keep);
    let p = op("prod", a(vec![1], false));
    assert_eq!(
        vals::<f64>(&run(&*p, &x23()).unwrap()),
        (vec![2], vec![6.0, 120.0])
    );
    let p = op("prod", a(vec![-2], true));
    assert_eq!(
        vals::<f64>(&run(&*p, &x23()).unwrap()),
        (vec![1, 3], vec![4.0, 10.0, 18.0])
    );
    let all = op("prod", Attrs::new());
    assert_eq!(
        vals::<f64>(&run(&*all, &rev0(&x23())).unwrap()),
        (vec![], vec![720.0])
    );
    // The product of nothing is 1, even over a zero-length axis.
    let p = op("prod", a(vec![1], true));
    let empty = t::<f32>(&[2, 0, 3], vec![]);
    assert_eq!(
        vals::<f32>(&run(&*p, &empty).unwrap()),
        (vec![2, 1, 3], vec![1.0; 6])
    );
    assert_eq!(
        vals::<f64>(&run(&*op("prod", a(vec![], false)), &x23()).unwrap()).1,
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    // Integers wrap: 2^32 · 2^32 = 2^64 ≡ 0 (mod 2^64).
    let big = t(&[2], vec![1i64 << 32, 1i64 << 32]);
    assert_eq!(vals::<i64>(&run(&*all, &big).unwrap()).1, [0]);
    let n = vals::<f32>(&run(&*all, &t(&[3], vec![0.0f32, f32::NAN, 2.0])).unwrap()).1;
    assert!(n[0].is_nan());
    assert!(run(&*all, &t(&[1], vec![true])).is_err());
}

/// `sum` and `mean` over the trailing axes of `x` (shape `[a, b, c, d]`,
/// C order), by the definition: one accumulation per output element.
fn trailing_by_definition(x: &[f64], shape: [usize; 4], from: usize, mean: bool) -> Vec<f64> {
    let len: usize = shape[from..].iter().product();
    x.chunks(len)
        .map(|run| {
            let s: f64 = run.iter().sum();
            if mean {
                s / len as f64
            } else {
                s
            }
        })
        .collect()
}

#[test]
fn reductions_over_trailing_axes_sum_each_run() {
    let shape = [2, 3, 4, 5];
    let data: Vec<f64> = (0..120).map(|i| ((i * 37) % 11) as f64 - 5.5).collect();
    let x = t(&shape, data.clone());
    for (from, ax) in [
        (1, vec![1, 2, 3]),
        (2, vec![2, 3]),
        (2, vec![-1, -2]),
        (3, vec![3]),
    ] {
        for (name, mean) in [("sum", false), ("mean", true)] {
            let want = trailing_by_definition(&data, shape, from, mean);
            let got = vals::<f64>(&run(&*op(name, axes(&ax)), &x).unwrap());
            assert_eq!(got, (shape[..from].to_vec(), want.clone()), "{name} over {ax:?}");
            let kept = op(name, axes(&ax).with("keepdims", true));
            let (kshape, kvals) = vals::<f64>(&run(&*kept, &x).unwrap());
            let mut want_shape = shape.to_vec();
            want_shape[from..].fill(1);
            assert_eq!(
                (kshape, kvals),
                (want_shape, want),
                "{name} over {ax:?}, keepdims"
            );
        }
    }
    // The same reduction of a strided view (axis 0 reversed) walks the
    // axes one at a time and agrees.
    let r = rev0(&x);
    let mut rdata = data[60..].to_vec();
    rdata.extend_from_slice(&data[..60]);
    let got = vals::<f64>(&run(&*op("mean", axes(&[2, 3])), &r).unwrap());
    assert_eq!(got, (vec![2, 3], trailing_by_definition(&rdata, shape, 2, true)));
}

#[test]
fn trailing_reductions_of_empty_runs_and_integers() {
    // Runs of zero elements: sums 0, means NaN (0 / 0), as numpy.
    let e = t(&[2, 0], Vec::<f32>::new());
    assert_eq!(
        vals::<f32>(&run(&*op("sum", axes(&[1])), &e).unwrap()),
        (vec![2], vec![0.0, 0.0])
    );
    let m = vals::<f32>(&run(&*op("mean", axes(&[1])), &e).unwrap());
    assert!(m.1.len() == 2 && m.1.iter().all(|v| v.is_nan()));
    // Integer sums wrap, as numpy's.
    let i = t(&[2, 2], vec![i32::MAX, 1, 5, 6]);
    assert_eq!(
        vals::<i32>(&run(&*op("sum", axes(&[1])), &i).unwrap()),
        (vec![2], vec![i32::MIN, 11])
    );
}

/// `[N, C, H, W]` values laid out channels-last (NHWC in memory).
fn channels_last(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let c = t(
        shape,
        (0..n).map(|i| ((i * 37) % 101) as f64 / 8.0 - 6.0).collect(),
    );
    let out = Tensor::uninit_in_order(DType::F64, shape, &[0, 2, 3, 1]).unwrap();
    out.assign(&c).unwrap();
    out
}

#[test]
fn mean_and_sum_over_the_planes_of_a_channels_last_image_match_c_order() {
    let x = channels_last(&[2, 5, 3, 4]);
    assert!(middle_run(
        &x,
        &[false, false, true, true],
        &Tensor::uninit(DType::F64, &[2, 5, 1, 1]).unwrap()
    )
    .is_some());
    for (name, ax, keep) in [
        ("mean", vec![2i64, 3], true),
        ("mean", vec![-1, -2], false),
        ("sum", vec![2, 3], true),
    ] {
        let o = op(name, axes(&ax).with("keepdims", keep));
        let got = run(o.as_ref(), &x).unwrap();
        let want = run(o.as_ref(), &x.to_contiguous().unwrap()).unwrap();
        let (gs, gv) = vals::<f64>(&got);
        let (ws, wv) = vals::<f64>(&want);
        assert_eq!(gs, ws, "{name} {ax:?}");
        for (g, w) in gv.iter().zip(&wv) {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "{name} {ax:?}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn axes_that_are_no_block_in_memory_take_the_general_path() {
    let x = channels_last(&[2, 5, 3, 4]);
    let out = |shape: &[usize]| Tensor::uninit(DType::F64, shape).unwrap();
    // H alone: W and C stay, but C comes after W in memory, not before.
    assert!(middle_run(&x, &[false, false, true, false], &out(&[2, 5, 4])).is_none());
    // C and H: not next to each other in memory (W between them).
    assert!(middle_run(&x, &[false, true, true, false], &out(&[2, 4])).is_none());
    // C and W are: the trailing block in memory.
    assert_eq!(
        middle_run(&x, &[false, true, false, true], &out(&[2, 3])).map(|r| r.1),
        Some((6, 20, 1))
    );
    let o = op("sum", axes(&[2]));
    let (gs, gv) = vals::<f64>(&run(o.as_ref(), &x).unwrap());
    let (ws, wv) = vals::<f64>(&run(o.as_ref(), &x.to_contiguous().unwrap()).unwrap());
    assert_eq!(gs, ws);
    assert!(gv
        .iter()
        .zip(&wv)
        .all(|(g, w)| (g - w).abs() <= 1e-12 * (1.0 + w.abs())));
}
