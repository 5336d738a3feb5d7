use super::*;
use crate::assert_cause;
use crate::dtype::Element;
use crate::tensor::IndexSpec;

/// ln 3
const LN3: f64 = 1.0986122886681098;

fn t<T: Element>(shape: &[usize], data: Vec<T>) -> Tensor {
    Tensor::from_vec(shape, data).unwrap()
}

fn rev0(x: &Tensor) -> Tensor {
    x.slice(&[IndexSpec::range(-1, i64::MIN, -1)]).unwrap()
}

fn op(name: &str, attrs: Attrs) -> Arc<dyn Op> {
    OpRegistry::builtin().make(name, &attrs).unwrap()
}

fn run(op: &dyn Op, inputs: &[Tensor]) -> Result<Tensor> {
    Ok(op.compute(inputs, &mut OpCtx::new("n"))?.remove(0))
}

fn vals(x: &Tensor) -> (Vec<usize>, Vec<f64>) {
    (x.shape().to_vec(), x.to_f64_vec().unwrap())
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol;
        assert!(ok, "{got:?} vs {want:?}");
    }
}

fn softmax() -> Arc<dyn Op> {
    op("softmax", Attrs::new())
}

fn log_softmax() -> Arc<dyn Op> {
    op("log_softmax", Attrs::new())
}

#[test]
fn softmax_of_known_lanes() {
    let x = t(&[2, 2], vec![0.0, LN3, 1.0, 1.0]);
    let (shape, got) = vals(&run(&*softmax(), std::slice::from_ref(&x)).unwrap());
    assert_eq!(shape, vec![2, 2]);
    close(&got, &[0.25, 0.75, 0.5, 0.5], 1e-15);
    // log(1/4) = -ln 4, log(3/4) = ln 3 - ln 4
    let got = vals(&run(&*log_softmax(), &[x]).unwrap()).1;
    close(
        &got,
        &[
            -1.3862943611198906,
            -0.2876820724517809,
            -std::f64::consts::LN_2,
            -std::f64::consts::LN_2,
        ],
        1e-15,
    );
    // f32 too.
    let x = t(&[2], vec![0.0f32, LN3 as f32]);
    let out = run(&*softmax(), &[x]).unwrap();
    assert_eq!(out.dtype(), DType::F32);
    close(&vals(&out).1, &[0.25, 0.75], 1e-7);
}

#[test]
fn softmax_is_stable_for_large_logits() {
    // 1 / (1 + e) and e / (1 + e); log(1 + e) = 1.3132616875182228
    let x = t(&[2], vec![1000.0f64, 1001.0]);
    close(
        &vals(&run(&*softmax(), std::slice::from_ref(&x)).unwrap()).1,
        &[0.2689414213699951, 0.7310585786300049],
        1e-15,
    );
    close(
        &vals(&run(&*log_softmax(), &[x]).unwrap()).1,
        &[-1.3132616875182228, -0.3132616875182228],
        1e-13,
    );
    let x = t(&[2], vec![-1000.0f32, -1000.0]);
    close(&vals(&run(&*softmax(), &[x]).unwrap()).1, &[0.5, 0.5], 0.0);
}

#[test]
fn softmax_infinities_and_nan() {
    let x = t(
        &[3, 2],
        vec![
            f64::NEG_INFINITY,
            0.0,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1.0,
        ],
    );
    let got = vals(&run(&*softmax(), std::slice::from_ref(&x)).unwrap()).1;
    close(&got, &[0.0, 1.0, f64::NAN, f64::NAN, f64::NAN, f64::NAN], 0.0);
    let got = vals(&run(&*log_softmax(), &[x]).unwrap()).1;
    close(
        &got,
        &[f64::NEG_INFINITY, 0.0, f64::NAN, f64::NAN, f64::NAN, f64::NAN],
        0.0,
    );
}

#[test]
fn softmax_along_axis_zero_and_strided_inputs() {
    // Columns [0, ln3] and [0, 0].
    let x = t(&[2, 2], vec![0.0, 0.0, LN3, 0.0]);
    let s0 = op("softmax", Attrs::new().with("axis", 0));
    close(
        &vals(&run(&*s0, std::slice::from_ref(&x)).unwrap()).1,
        &[0.25, 0.5, 0.75, 0.5],
        1e-15,
    );
    // Transposed: x.T = [[0, ln3], [0, 0]] along the last axis.
    let xt = x.t(None).unwrap();
    close(
        &vals(&run(&*softmax(), &[xt]).unwrap()).1,
        &[0.25, 0.75, 0.5, 0.5],
        1e-15,
    );
    // Reversed rows: [[1, 1], [0, ln3]][::-1] = [[0, ln3], [1, 1]].
    let r = rev0(&t(&[2, 2], vec![1.0, 1.0, 0.0, LN3]));
    close(
        &vals(&run(&*softmax(), std::slice::from_ref(&r)).unwrap()).1,
        &[0.25, 0.75, 0.5, 0.5],
        1e-15,
    );
    let ls0 = op("log_softmax", Attrs::new().with("axis", -2));
    // Along axis 0 of r: columns [0, 1] and [ln3, 1].
    let got = vals(&run(&*ls0, &[r]).unwrap()).1;
    // log(1/(1+e)) = -1.3132616875182228, log(e/(1+e)) = -0.3132616875182228;
    // column [ln3, 1]: log(3/(3+e)) and log(e/(3+e)).
    let l3e = (3.0 + std::f64::consts::E).ln();
    close(
        &got,
        &[-1.3132616875182228, LN3 - l3e, -0.3132616875182228, 1.0 - l3e],
        1e-14,
    );
    // Broadcast rows: every row is [0, ln3].
    let b = t(&[2], vec![0.0, LN3]).broadcast_to(&[3, 2]).unwrap();
    close(
        &vals(&run(&*softmax(), std::slice::from_ref(&b)).unwrap()).1,
        &[0.25, 0.75, 0.25, 0.75, 0.25, 0.75],
        1e-15,
    );
    // Along the zero-stride axis every element is 1/3.
    close(&vals(&run(&*s0, &[b]).unwrap()).1, &[1.0 / 3.0; 6], 1e-15);
}

#[test]
fn softmax_of_empty_inputs_and_garbage_output() {
    for shape in [[0usize, 3], [2, 0]] {
        let e = t::<f64>(&shape, vec![]);
        assert_eq!(
            vals(&run(&*softmax(), std::slice::from_ref(&e)).unwrap()),
            (shape.to_vec(), vec![])
        );
        assert_eq!(
            vals(&run(&*log_softmax(), &[e]).unwrap()),
            (shape.to_vec(), vec![])
        );
    }
    let g = t(&[2, 2], vec![f64::NAN; 4]).t(None).unwrap();
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(g.clone())]);
    let x = t(&[2, 2], vec![0.0, LN3, 1.0, 1.0]);
    let out = softmax().compute(&[x], &mut ctx).unwrap().remove(0);
    assert!(out.same_buffer(&g));
    close(&vals(&out).1, &[0.25, 0.75, 0.5, 0.5], 1e-15);
}

#[test]
fn softmax_errors() {
    let x = t(&[2, 2], vec![0.0f64; 4]);
    let err = run(
        &*op("softmax", Attrs::new().with("axis", 2)),
        std::slice::from_ref(&x),
    )
    .unwrap_err();
    assert_cause!(err, Attr, "'axis'", "axis 2");
    let err = run(&*softmax(), &[t(&[], vec![1.0f64])]).unwrap_err();
    assert_cause!(err, Attr, "'axis'", "0 dimensions");
    let err = run(&*softmax(), &[t(&[2], vec![1i64, 2])]).unwrap_err();
    assert_cause!(err, DType, "i64");
    assert!(run(&*log_softmax(), &[t(&[1], vec![true])]).is_err());
    assert!(OpRegistry::builtin()
        .make("softmax", &Attrs::new().with("dim", 0))
        .is_err());
    let o = op("log_softmax", Attrs::new().with("axis", 0));
    assert_eq!(o.attrs(), Attrs::new().with("axis", 0));
    assert_eq!(softmax().attrs(), Attrs::new());
    let ti = TypeInfo::new(DType::F32, Some(vec![-1, 3]));
    assert_eq!(o.infer(std::slice::from_ref(&ti)).unwrap(), vec![ti.clone()]);
    assert!(op("softmax", Attrs::new().with("axis", -3)).infer(&[ti]).is_err());
    assert!(o.infer(&[TypeInfo::unknown(DType::I32)]).is_err());
}

fn ce() -> Arc<dyn Op> {
    op("cross_entropy", Attrs::new())
}

#[test]
fn cross_entropy_of_known_rows() {
    // Row 0: -log(3/4) = ln(4/3); row 1: -log(1/2) = ln 2; mean ln(8/3)/2.
    let l = t(&[2, 2], vec![0.0, LN3, 0.0, 0.0]);
    let y = t(&[2], vec![1i64, 0]);
    let (shape, got) = vals(&run(&*ce(), &[l.clone(), y.clone()]).unwrap());
    assert_eq!(shape, Vec::<usize>::new());
    close(&got, &[0.490_414_626_505_863], 1e-15);
    // f32 logits give f32.
    let lf = t(&[2, 2], vec![0.0f32, LN3 as f32, 0.0, 0.0]);
    let out = run(&*ce(), &[lf, y.clone()]).unwrap();
    assert_eq!(out.dtype(), DType::F32);
    close(&vals(&out).1, &[0.490_414_626_505_863], 1e-6);
    // Large logits: -log_softmax([1000, 1001])[0] = ln(1 + e).
    let big = t(&[1, 2], vec![1000.0, 1001.0]);
    close(
        &vals(&run(&*ce(), &[big, t(&[1], vec![0i64])]).unwrap()).1,
        &[1.3132616875182228],
        1e-13,
    );
}

#[test]
fn cross_entropy_of_strided_inputs() {
    // Transposed logits: [[0, 0], [ln3, 0]].T = [[0, ln3], [0, 0]].
    let lt = t(&[2, 2], vec![0.0, 0.0, LN3, 0.0]).t(None).unwrap();
    let y = t(&[2], vec![1i64, 0]);
    close(
        &vals(&run(&*ce(), &[lt.clone(), y]).unwrap()).1,
        &[0.490_414_626_505_863],
        1e-15,
    );
    // Reversed labels: [0, 1][::-1] = [1, 0].
    let yr = rev0(&t(&[2], vec![0i64, 1]));
    close(
        &vals(&run(&*ce(), &[lt, yr.clone()]).unwrap()).1,
        &[0.490_414_626_505_863],
        1e-15,
    );
    // Broadcast logits rows [0, ln3]: (ln(4/3) + ln 4) / 2 = ln(16/3) / 2.
    let lb = t(&[2], vec![0.0, LN3]).broadcast_to(&[2, 2]).unwrap();
    close(
        &vals(&run(&*ce(), &[lb, yr]).unwrap()).1,
        &[0.8369882167858356],
        1e-15,
    );
    // Broadcast labels: both rows pick class 1 of reversed logits.
    let lr = rev0(&t(&[2, 2], vec![0.0, 0.0, 0.0, LN3])); // [[0, ln3], [0, 0]]
    let yb = t(&[1], vec![1i64]).broadcast_to(&[2]).unwrap();
    // ln(4/3) and ln 2 again.
    close(
        &vals(&run(&*ce(), &[lr, yb]).unwrap()).1,
        &[0.490_414_626_505_863],
        1e-15,
    );
}

#[test]
fn cross_entropy_empty_and_errors() {
    let got = vals(&run(&*ce(), &[t::<f64>(&[0, 3], vec![]), t::<i64>(&[0], vec![])]).unwrap()).1;
    assert!(got[0].is_nan());
    let l = t(&[2, 2], vec![0.0f64; 4]);
    let err = run(&*ce(), &[l.clone(), t(&[2], vec![0i64, 2])]).unwrap_err();
    assert_cause!(err, Index, "label 2", "row 1", "2 classes");
    let err = run(&*ce(), &[l.clone(), t(&[2], vec![-1i64, 0])]).unwrap_err();
    assert_cause!(err, Index, "label -1", "row 0");
    let err = run(&*ce(), &[t::<f64>(&[1, 0], vec![]), t(&[1], vec![0i64])]).unwrap_err();
    assert_cause!(err, Index, "label 0", "0 classes");
    let err = run(&*ce(), &[l.clone(), t(&[3], vec![0i64; 3])]).unwrap_err();
    assert_cause!(err, Shape, "[2, 2]", "[3]");
    assert!(run(&*ce(), &[t(&[4], vec![0.0f64; 4]), t(&[4], vec![0i64; 4])]).is_err());
    let err = run(&*ce(), &[l.clone(), t(&[2], vec![0i32, 1])]).unwrap_err();
    assert_cause!(err, DType, "i64", "i32");
    assert!(run(&*ce(), &[t(&[1, 2], vec![0i64, 1]), t(&[1], vec![0i64])]).is_err());
    // Infer.
    let f = |s: Vec<i64>| TypeInfo::new(DType::F32, Some(s));
    let i = |s: Vec<i64>| TypeInfo::new(DType::I64, Some(s));
    assert_eq!(
        ce().infer(&[f(vec![-1, 5]), i(vec![4])]).unwrap(),
        vec![TypeInfo::known(DType::F32, &[])]
    );
    assert!(ce().infer(&[f(vec![3, 5]), i(vec![4])]).is_err());
    assert!(ce().infer(&[f(vec![3]), i(vec![3])]).is_err());
    assert!(ce()
        .infer(&[f(vec![3, 2]), TypeInfo::known(DType::I32, &[3])])
        .is_err());
}

fn mse() -> Arc<dyn Op> {
    op("mse", Attrs::new())
}

#[test]
fn mse_values_and_broadcasting() {
    let a = t(&[3], vec![1.0f64, 2.0, 3.0]);
    let b = t(&[3], vec![1.0f64; 3]);
    close(
        &vals(&run(&*mse(), &[a.clone(), b]).unwrap()).1,
        &[5.0 / 3.0],
        1e-15,
    );
    // [[1, 2, 3], [4, 5, 6]] vs [1, 2, 3]: squared diffs 0, 0, 0, 9, 9, 9 -> 27 / 6.
    let m = t(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let out = run(&*mse(), &[m.clone(), a.clone()]).unwrap();
    assert_eq!(vals(&out), (vec![], vec![4.5]));
    // Operand order does not matter.
    assert_eq!(vals(&run(&*mse(), &[a.clone(), m.clone()]).unwrap()).1, vec![4.5]);
    // Transposed: m.T [3, 2] against the column [[1], [2], [3]].
    let col = t(&[3, 1], vec![1.0f64, 2.0, 3.0]);
    assert_eq!(
        vals(&run(&*mse(), &[m.t(None).unwrap(), col]).unwrap()).1,
        vec![4.5]
    );
    // Reversed rows: [[4, 5, 6], [1, 2, 3]] against [1, 2, 3].
    assert_eq!(vals(&run(&*mse(), &[rev0(&m), a.clone()]).unwrap()).1, vec![4.5]);
    // An explicit zero-stride view, f32.
    let af = t(&[3], vec![1.0f32, 2.0, 3.0]).broadcast_to(&[2, 3]).unwrap();
    let bf = t(&[2, 3], vec![0.0f32, 0.0, 0.0, 1.0, 2.0, 3.0]);
    let out = run(&*mse(), &[af, bf]).unwrap();
    assert_eq!(out.dtype(), DType::F32);
    // (1 + 4 + 9 + 0 + 0 + 0) / 6
    close(&vals(&out).1, &[14.0 / 6.0], 1e-6);
    // Empty broadcast shape: NaN.
    let e = t::<f64>(&[0, 3], vec![]);
    assert!(vals(&run(&*mse(), &[e, a]).unwrap()).1[0].is_nan());
}

#[test]
fn mse_errors_and_garbage_output() {
    let a = t(&[2], vec![1.0f64, 2.0]);
    let err = run(&*mse(), &[a.clone(), t(&[3], vec![0.0f64; 3])]).unwrap_err();
    assert_cause!(err, Shape, "[2]", "[3]");
    let err = run(&*mse(), &[a.clone(), t(&[2], vec![0.0f32; 2])]).unwrap_err();
    assert_cause!(err, DType, "f64", "f32");
    assert!(run(&*mse(), &[t(&[2], vec![1i32, 2]), t(&[2], vec![1i32, 2])]).is_err());
    let f = |s: Vec<i64>| TypeInfo::new(DType::F64, Some(s));
    assert_eq!(
        mse().infer(&[f(vec![2, 3]), f(vec![3])]).unwrap(),
        vec![TypeInfo::known(DType::F64, &[])]
    );
    assert!(mse().infer(&[f(vec![2]), f(vec![3])]).is_err());
    let g = t(&[], vec![f64::NAN]);
    let mut ctx = OpCtx::with_prealloc("n", vec![Some(g.clone())]);
    let out = mse()
        .compute(&[a, t(&[2], vec![0.0f64; 2])], &mut ctx)
        .unwrap()
        .remove(0);
    assert!(out.same_buffer(&g));
    assert_eq!(vals(&out).1, vec![2.5]);
}

#[test]
fn hardmax_marks_the_first_maximum_or_nan_of_each_lane() {
    let hm = |axis: i64| op("hardmax", Attrs::new().with("axis", axis));
    let vals = |x: Tensor| x.to_array::<f32>().unwrap().iter().copied().collect::<Vec<_>>();
    let x = t(&[2, 3], vec![1.0f32, 3.0, 3.0, -1.0, f32::NAN, 5.0]);
    assert_eq!(
        vals(run(&*hm(-1), std::slice::from_ref(&x)).unwrap()),
        [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    );
    // Columns [1, -1], [3, NaN], [3, 5].
    assert_eq!(
        vals(run(&*hm(0), std::slice::from_ref(&x)).unwrap()),
        [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    );
    // A reversed view: lanes are [-1, NaN, 5] then [1, 3, 3].
    assert_eq!(
        vals(run(&*hm(1), &[rev0(&x)]).unwrap()),
        [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    );
    let inf = t(&[3], vec![f64::NEG_INFINITY; 3]);
    let y = run(&*hm(0), &[inf]).unwrap().to_array::<f64>().unwrap();
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), [1.0, 0.0, 0.0]);
    let empty = run(&*hm(1), &[t::<f32>(&[2, 0], vec![])]).unwrap();
    assert_eq!(empty.shape(), &[2, 0]);
    assert!(run(&*hm(2), &[x]).is_err());
    assert!(run(&*hm(0), &[t(&[2], vec![1i64, 2])]).is_err());
}
