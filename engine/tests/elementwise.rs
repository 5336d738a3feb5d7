//! Elementwise ops against hand-computed values, on contiguous, transposed,
//! negative-stride, offset, broadcast (zero-stride) and empty inputs.

mod common;

use common::*;
use vigil_engine::ops::elementwise::{BinKind, Binary, Cast, CmpKind, Compare, UnKind, Unary, Where};
use vigil_engine::{DType, Element, IndexSpec, Op, OpCtx, OpRegistry, Tensor, TypeInfo};

fn run(op: &dyn Op, inputs: &[Tensor]) -> vigil_engine::Result<Tensor> {
    let mut out = op.compute(inputs, &mut OpCtx::new("n"))?;
    assert_eq!(out.len(), 1);
    Ok(out.pop().unwrap())
}

fn vals<T: Element>(t: &Tensor) -> Vec<T> {
    t.to_array::<T>().unwrap().iter().copied().collect()
}

/// Equal, with NaN equal to NaN, within a relative tolerance.
fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * w.abs().max(1.0);
        assert!(ok, "{what}: element {i} is {g}, expected {w} (all: {got:?})");
    }
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

/// The same logical (2, 3) values in several layouts of `dtype`.
fn layouts(dtype: DType, v: &[f64; 6]) -> Vec<(&'static str, Tensor)> {
    let make = |shape: &[usize], data: Vec<f64>| Tensor::from_vec(shape, data).unwrap().cast(dtype).unwrap();
    let contiguous = make(&[2, 3], v.to_vec());
    // Stored transposed, viewed back.
    let tr: Vec<f64> = (0..3).flat_map(|j| (0..2).map(move |i| v[i * 3 + j])).collect();
    let transposed = make(&[3, 2], tr).t(None).unwrap();
    // Stored reversed, viewed through [::-1, ::-1].
    let rev: Vec<f64> = v.iter().rev().copied().collect();
    let r = IndexSpec::range(-1, -1000, -1);
    let reversed = make(&[2, 3], rev).slice(&[r, r]).unwrap();
    // Embedded at [1:3, 1:4] of a (4, 5) buffer.
    let mut big = vec![-99.0; 20];
    for i in 0..2 {
        for j in 0..3 {
            big[(i + 1) * 5 + j + 1] = v[i * 3 + j];
        }
    }
    let offset = make(&[4, 5], big)
        .slice(&[IndexSpec::range(1, 3, 1), IndexSpec::range(1, 4, 1)])
        .unwrap();
    assert!(!transposed.is_contiguous() && !reversed.is_contiguous() && !offset.is_contiguous());
    assert!(reversed.strides().iter().all(|&s| s < 0));
    let out = vec![
        ("contiguous", contiguous),
        ("transposed", transposed),
        ("reversed", reversed),
        ("offset", offset),
    ];
    for (name, t) in &out {
        assert_close(
            &as_f64(t),
            &t.cast(DType::F64).unwrap().to_f64_vec().unwrap(),
            0.0,
            name,
        );
        assert_close(&as_f64(t), &contiguous_ref(dtype, v), 0.0, name);
    }
    out
}

/// `v` as stored in `dtype`, back as f64.
fn contiguous_ref(dtype: DType, v: &[f64; 6]) -> Vec<f64> {
    Tensor::from_vec(&[6], v.to_vec())
        .unwrap()
        .cast(dtype)
        .unwrap()
        .to_f64_vec()
        .unwrap()
}

// ----- binary arithmetic ---------------------------------------------------------

const FA: [f64; 6] = [1.0, 2.0, 3.0, 4.0, -5.0, 6.0];
const FB: [f64; 6] = [2.0, -1.0, 0.5, 3.0, 2.0, -2.0];

fn float_expected(kind: BinKind) -> [f64; 6] {
    match kind {
        BinKind::Add => [3.0, 1.0, 3.5, 7.0, -3.0, 4.0],
        BinKind::Sub => [-1.0, 3.0, 2.5, 1.0, -7.0, 8.0],
        BinKind::Mul => [2.0, -2.0, 1.5, 12.0, -10.0, -12.0],
        BinKind::Div => [0.5, -2.0, 6.0, 4.0 / 3.0, -2.5, -3.0],
        BinKind::Pow => [1.0, 0.5, 1.7320508075688772, 64.0, 25.0, 1.0 / 36.0],
        BinKind::Maximum => [2.0, 2.0, 3.0, 4.0, 2.0, 6.0],
        BinKind::Minimum => [1.0, -1.0, 0.5, 3.0, -5.0, -2.0],
    }
}

const IA: [f64; 6] = [7.0, -7.0, 3.0, 0.0, 5.0, -2.0];
const IB: [f64; 6] = [2.0, 2.0, -3.0, 4.0, 1.0, 3.0];

fn int_expected(kind: BinKind) -> [f64; 6] {
    match kind {
        BinKind::Add => [9.0, -5.0, 0.0, 4.0, 6.0, 1.0],
        BinKind::Sub => [5.0, -9.0, 6.0, -4.0, 4.0, -5.0],
        BinKind::Mul => [14.0, -14.0, -9.0, 0.0, 5.0, -6.0],
        // numpy's true division of integers gives float64.
        BinKind::Div => [3.5, -3.5, -1.0, 0.0, 5.0, -2.0 / 3.0],
        // 3 ** -3 is 0 here (numpy raises for negative integer powers).
        BinKind::Pow => [49.0, 49.0, 0.0, 0.0, 5.0, -8.0],
        BinKind::Maximum => [7.0, 2.0, 3.0, 4.0, 5.0, 3.0],
        BinKind::Minimum => [2.0, -7.0, -3.0, 0.0, 1.0, -2.0],
    }
}

#[test]
fn binary_ops_on_every_layout_and_dtype() {
    for kind in BinKind::ALL {
        let op = Binary::new(kind, false);
        assert_eq!(op.name(), kind.name());
        for (dtype, a, b, want, tol) in [
            (DType::F64, &FA, &FB, float_expected(kind), 1e-15),
            (DType::F32, &FA, &FB, float_expected(kind), 1e-6),
            (DType::I64, &IA, &IB, int_expected(kind), 1e-15),
            (DType::I32, &IA, &IB, int_expected(kind), 1e-15),
        ] {
            let out_dtype = if kind == BinKind::Div && !dtype.is_float() {
                DType::F64
            } else {
                dtype
            };
            for (la, ta) in layouts(dtype, a) {
                for (lb, tb) in layouts(dtype, b) {
                    let out = run(&op, &[ta.clone(), tb]).unwrap();
                    assert_eq!(out.dtype(), out_dtype);
                    assert_eq!(out.shape(), &[2, 3]);
                    assert!(!out.same_buffer(&ta));
                    assert_close(
                        &as_f64(&out),
                        &want,
                        tol,
                        &format!("{} {dtype} {la} {lb}", kind.name()),
                    );
                }
            }
        }
    }
}

#[test]
fn binary_ops_broadcast_like_numpy() {
    let a = f64s(&[2, 3], &FA);
    let row = f64s(&[3], &[10.0, 20.0, 30.0]);
    let col = f64s(&[2, 1], &[100.0, 200.0]);
    let add = Binary::new(BinKind::Add, false);
    assert_eq!(
        vals_f64(&run(&add, &[a.clone(), row.clone()]).unwrap()),
        vec![11.0, 22.0, 33.0, 14.0, 15.0, 36.0]
    );
    assert_eq!(
        vals_f64(&run(&add, &[row.clone(), a.clone()]).unwrap()),
        vec![11.0, 22.0, 33.0, 14.0, 15.0, 36.0]
    );
    assert_eq!(
        vals_f64(&run(&add, &[a.clone(), col.clone()]).unwrap()),
        vec![101.0, 102.0, 103.0, 204.0, 195.0, 206.0]
    );
    // An outer sum: (3,) + (2, 1) -> (2, 3).
    let outer = run(&add, &[row.clone(), col.clone()]).unwrap();
    assert_eq!(outer.shape(), &[2, 3]);
    assert_eq!(vals_f64(&outer), vec![110.0, 120.0, 130.0, 210.0, 220.0, 230.0]);
    // Rank-0 operands.
    let one = Tensor::from_vec(&[], vec![1.0f64]).unwrap();
    assert_eq!(
        vals_f64(&run(&Binary::new(BinKind::Sub, false), &[a.clone(), one.clone()]).unwrap()),
        vec![0.0, 1.0, 2.0, 3.0, -6.0, 5.0]
    );
    let s = run(&add, &[one.clone(), one.clone()]).unwrap();
    assert_eq!((s.shape().len(), vals_f64(&s)), (0, vec![2.0]));
    // A zero-stride (broadcast) view as an operand.
    let b = row.broadcast_to(&[2, 3]).unwrap();
    assert_eq!(b.strides(), &[0, 1]);
    assert_eq!(
        vals_f64(&run(&Binary::new(BinKind::Mul, false), &[a.clone(), b]).unwrap()),
        vec![10.0, 40.0, 90.0, 40.0, -100.0, 180.0]
    );
    // A broadcast column on the left of a transposed right operand.
    let at = f64s(&[3, 2], &[1.0, 4.0, 2.0, -5.0, 3.0, 6.0]).t(None).unwrap();
    assert_eq!(
        vals_f64(&run(&Binary::new(BinKind::Sub, false), &[col, at]).unwrap()),
        vec![99.0, 98.0, 97.0, 196.0, 205.0, 194.0]
    );
    // Shapes that do not broadcast.
    assert!(run(&add, &[a.clone(), f64s(&[2], &[1.0, 2.0])]).is_err());
    assert!(add
        .infer(&[
            TypeInfo::known(DType::F64, &[2, 3]),
            TypeInfo::known(DType::F64, &[2])
        ])
        .is_err());
}

/// A permuted view without gaps (an attention key transposed, then
/// reshaped) keeps its layout in a pure op's output, and a scalar or a
/// per-axis operand broadcast into it reaches every element as numpy has it.
#[test]
fn binary_ops_on_a_permuted_view_broadcast_scalars_and_rows() {
    let n = 2 * 2 * 7 * 5;
    let base = f64s(
        &[2, 2, 7, 5],
        &(0..n).map(|i| i as f64 - 30.0).collect::<Vec<_>>(),
    );
    let x = base.permute(&[0, 1, 3, 2]).unwrap();
    assert!(!x.is_contiguous());
    let want_x: Vec<f64> = vals_f64(&x.to_contiguous().unwrap());
    let scalar = Tensor::from_vec(&[], vec![0.5f64]).unwrap();
    let per = f64s(&[7], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    for (a, b, want) in [
        (&x, &scalar, want_x.iter().map(|v| v * 0.5).collect::<Vec<_>>()),
        (&scalar, &x, want_x.iter().map(|v| v * 0.5).collect()),
        (
            &x,
            &per,
            want_x
                .iter()
                .enumerate()
                .map(|(i, v)| v * (1 + i % 7) as f64)
                .collect(),
        ),
    ] {
        let out = run(&Binary::new(BinKind::Mul, false), &[a.clone(), b.clone()]).unwrap();
        assert_eq!(out.shape(), &[2, 2, 5, 7]);
        if a.shape() == x.shape() {
            assert_eq!(out.strides(), x.strides(), "the output keeps the view's layout");
        }
        assert_eq!(vals_f64(&out), want);
    }
}

#[test]
fn binary_ops_on_empty_inputs() {
    let add = Binary::new(BinKind::Add, false);
    let e = Tensor::zeros(DType::F64, &[0, 3]).unwrap();
    let out = run(&add, &[e.clone(), f64s(&[3], &[1.0, 2.0, 3.0])]).unwrap();
    assert_eq!((out.shape(), out.size()), (&[0usize, 3][..], 0));
    let out = run(
        &Binary::new(BinKind::Mul, false),
        &[
            Tensor::zeros(DType::I64, &[2, 0]).unwrap(),
            i64s(&[2, 1], &[1, 2]),
        ],
    )
    .unwrap();
    assert_eq!(out.shape(), &[2, 0]);
    // An empty view of a non-empty buffer.
    let v = arange_f64(&[4]).slice(&[IndexSpec::range(3, 1, 1)]).unwrap();
    let out = run(&add, &[v.clone(), v]).unwrap();
    assert_eq!(out.shape(), &[0]);
    // (0,) does not broadcast with (2,).
    assert!(run(
        &add,
        &[Tensor::zeros(DType::F64, &[0]).unwrap(), f64s(&[2], &[1.0, 2.0])]
    )
    .is_err());
}

#[test]
fn binary_ops_refuse_mixed_dtypes_and_bool() {
    let f = f64s(&[2], &[1.0, 2.0]);
    let g = Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap();
    let bools = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    for kind in BinKind::ALL {
        for inplace in [false, true] {
            let op = Binary::new(kind, inplace);
            assert!(run(&op, &[f.clone(), g.clone()]).is_err(), "{}", op.name());
            assert!(
                run(&op, &[bools.clone(), bools.clone()]).is_err(),
                "{}",
                op.name()
            );
            let e = op
                .infer(&[
                    TypeInfo::known(DType::F64, &[2]),
                    TypeInfo::known(DType::F32, &[2]),
                ])
                .unwrap_err();
            assert!(matches!(e, vigil_engine::Error::DType(_)), "{e:?}");
            assert!(op
                .infer(&[
                    TypeInfo::known(DType::Bool, &[2]),
                    TypeInfo::known(DType::Bool, &[2])
                ])
                .is_err());
        }
    }
    assert_eq!(vals_f64(&f), vec![1.0, 2.0]);
}

#[test]
fn binary_infer_broadcasts_partial_shapes() {
    let add = Binary::new(BinKind::Add, false);
    let out = add
        .infer(&[
            TypeInfo::new(DType::F32, Some(vec![-1, 3])),
            TypeInfo::known(DType::F32, &[3]),
        ])
        .unwrap();
    assert_eq!(out, vec![TypeInfo::new(DType::F32, Some(vec![-1, 3]))]);
    let out = Binary::new(BinKind::Div, false)
        .infer(&[
            TypeInfo::known(DType::I32, &[2]),
            TypeInfo::known(DType::I32, &[1]),
        ])
        .unwrap();
    assert_eq!(out, vec![TypeInfo::known(DType::F64, &[2])]);
    let out = add
        .infer(&[TypeInfo::unknown(DType::I64), TypeInfo::known(DType::I64, &[3])])
        .unwrap();
    assert_eq!(out[0].shape, None);
}

#[test]
fn float_division_by_zero_and_nan_follow_ieee_like_numpy() {
    let div = Binary::new(BinKind::Div, false);
    let out = run(
        &div,
        &[f64s(&[3], &[1.0, -1.0, 0.0]), f64s(&[3], &[0.0, 0.0, 0.0])],
    )
    .unwrap();
    assert_close(
        &vals_f64(&out),
        &[f64::INFINITY, f64::NEG_INFINITY, f64::NAN],
        0.0,
        "div",
    );
    // True division of integers by zero gives inf/nan as numpy does.
    let out = run(&div, &[i64s(&[3], &[1, -1, 0]), i64s(&[3], &[0, 0, 0])]).unwrap();
    assert_close(
        &vals_f64(&out),
        &[f64::INFINITY, f64::NEG_INFINITY, f64::NAN],
        0.0,
        "int div",
    );
    // maximum/minimum propagate NaN from either side.
    let nan = f64s(&[2], &[f64::NAN, 1.0]);
    let one = f64s(&[2], &[1.0, f64::NAN]);
    for kind in [BinKind::Maximum, BinKind::Minimum] {
        let op = Binary::new(kind, false);
        assert!(vals_f64(&run(&op, &[nan.clone(), one.clone()]).unwrap())
            .iter()
            .all(|v| v.is_nan()));
    }
    // Signed-zero ties keep the first operand, as numpy does.
    let pz = f64s(&[1], &[0.0]);
    let nz = f64s(&[1], &[-0.0]);
    let max = Binary::new(BinKind::Maximum, false);
    let min = Binary::new(BinKind::Minimum, false);
    assert!(vals_f64(&run(&max, &[pz.clone(), nz.clone()]).unwrap())[0].is_sign_positive());
    assert!(vals_f64(&run(&max, &[nz.clone(), pz.clone()]).unwrap())[0].is_sign_negative());
    assert!(vals_f64(&run(&min, &[pz.clone(), nz.clone()]).unwrap())[0].is_sign_positive());
    assert!(vals_f64(&run(&min, &[nz, pz]).unwrap())[0].is_sign_negative());
}

#[test]
fn integer_overflow_wraps_like_numpy() {
    let max = i64s(&[2], &[i64::MAX, i64::MIN]);
    let one = i64s(&[2], &[1, 1]);
    let add = run(&Binary::new(BinKind::Add, false), &[max.clone(), one.clone()]).unwrap();
    assert_eq!(vals::<i64>(&add), vec![i64::MIN, i64::MIN + 1]);
    let sub = run(&Binary::new(BinKind::Sub, false), &[max.clone(), one.clone()]).unwrap();
    assert_eq!(vals::<i64>(&sub), vec![i64::MAX - 1, i64::MAX]);
    let mul = run(
        &Binary::new(BinKind::Mul, false),
        &[max.clone(), i64s(&[2], &[2, 2])],
    )
    .unwrap();
    assert_eq!(vals::<i64>(&mul), vec![-2, 0]);
    let x = i32s(&[1], &[i32::MAX]);
    run(&Binary::new(BinKind::Add, true), &[x.clone(), i32s(&[1], &[1])]).unwrap();
    assert_eq!(vals::<i32>(&x), vec![i32::MIN]);
    let neg = run(&Unary::new(UnKind::Neg, false), &[i64s(&[1], &[i64::MIN])]).unwrap();
    assert_eq!(vals::<i64>(&neg), vec![i64::MIN]);
}

fn i32s(shape: &[usize], v: &[i32]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

// ----- in-place twins ----------------------------------------------------------

#[test]
fn inplace_binary_twins_overwrite_input_zero_in_every_layout() {
    for kind in BinKind::ALL {
        let op = Binary::new(kind, true);
        assert_eq!(op.name(), format!("{}_inplace", kind.name()));
        assert_eq!(op.destroy_map(), vec![(0, 0)]);
        assert!(op.tolerates_same_input());
        assert_eq!(op.pure_twin().unwrap().name(), kind.name());
        for (dtype, a, b, want, tol) in [
            (DType::F64, &FA, &FB, float_expected(kind), 1e-15),
            (DType::F32, &FA, &FB, float_expected(kind), 1e-6),
            (DType::I64, &IA, &IB, int_expected(kind), 1e-15),
        ] {
            if kind == BinKind::Div && dtype == DType::I64 {
                continue;
            }
            for ia in 0..4 {
                for (lb, tb) in layouts(dtype, b) {
                    // A fresh destination each time: the op overwrites it.
                    let (la, x) = layouts(dtype, a).swap_remove(ia);
                    let before = x.version();
                    let out = run(&op, &[x.clone(), tb]).unwrap();
                    assert!(
                        out.same_buffer(&x) && out.layout() == x.layout(),
                        "{} {la}",
                        op.name()
                    );
                    assert!(x.version() > before);
                    assert_close(
                        &as_f64(&x),
                        &want,
                        tol,
                        &format!("{} {dtype} {la} {lb}", op.name()),
                    );
                }
            }
        }
    }
}

#[test]
fn inplace_binary_writes_only_the_view_and_broadcasts_into_it() {
    // x[1:3, 1:4] += [10, 20, 30] on a (4, 5) buffer.
    let base = arange_f64(&[4, 5]);
    let x = base
        .slice(&[IndexSpec::range(1, 3, 1), IndexSpec::range(1, 4, 1)])
        .unwrap();
    run(
        &Binary::new(BinKind::Add, true),
        &[x, f64s(&[3], &[10.0, 20.0, 30.0])],
    )
    .unwrap();
    let mut want: Vec<f64> = (0..20).map(|v| v as f64).collect();
    for (i, j) in [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)] {
        want[i * 5 + j] += 10.0 * j as f64;
    }
    assert_eq!(vals_f64(&base), want);
    // A rank-0 operand broadcasts too.
    let x = arange_f64(&[2, 2]);
    run(
        &Binary::new(BinKind::Mul, true),
        &[x.clone(), Tensor::from_vec(&[], vec![-2.0]).unwrap()],
    )
    .unwrap();
    assert_eq!(vals_f64(&x), vec![0.0, -2.0, -4.0, -6.0]);
}

#[test]
fn inplace_binary_refuses_what_numpy_refuses() {
    let add = Binary::new(BinKind::Add, true);
    // The operand must broadcast into x's shape: x (3,) += y (2, 3) fails.
    let x = arange_f64(&[3]);
    let e = run(&add, &[x.clone(), arange_f64(&[2, 3])])
        .unwrap_err()
        .to_string();
    assert!(e.contains("broadcast"), "{e}");
    assert_eq!(vals_f64(&x), vec![0.0, 1.0, 2.0]);
    assert!(add
        .infer(&[
            TypeInfo::known(DType::F64, &[3]),
            TypeInfo::known(DType::F64, &[2, 3])
        ])
        .is_err());
    assert!(add
        .infer(&[
            TypeInfo::known(DType::F64, &[1, 3]),
            TypeInfo::known(DType::F64, &[2, 3])
        ])
        .is_err());
    assert_eq!(
        add.infer(&[
            TypeInfo::known(DType::F64, &[2, 3]),
            TypeInfo::known(DType::F64, &[3])
        ])
        .unwrap(),
        vec![TypeInfo::known(DType::F64, &[2, 3])]
    );
    // A broadcast (self-overlapping) destination cannot be written.
    let b = arange_f64(&[3]).broadcast_to(&[2, 3]).unwrap();
    assert!(run(&add, &[b.clone(), arange_f64(&[2, 3])]).is_err());
    assert_eq!(vals_f64(&b), vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
    // Integer true division cannot be in place.
    let div = Binary::new(BinKind::Div, true);
    assert!(div
        .infer(&[
            TypeInfo::known(DType::I64, &[2]),
            TypeInfo::known(DType::I64, &[2])
        ])
        .is_err());
}

#[test]
fn integer_div_inplace_is_refused_at_compute() {
    let x = i64s(&[2], &[7, 1]);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Binary::new(BinKind::Div, true)
            .compute(&[x.clone(), i64s(&[2], &[2, 0])], &mut OpCtx::new("n"))
            .is_err()
    }));
    assert_eq!(r.ok(), Some(true));
    assert_eq!(vals::<i64>(&x), vec![7, 1]);
}

#[test]
fn pure_ops_offer_their_inplace_variants() {
    let v = Binary::new(BinKind::Add, false).inplace_variants();
    assert_eq!(
        v.iter()
            .map(|v| (v.op.name().to_string(), v.inputs.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("add_inplace".to_string(), vec![0, 1]),
            ("add_inplace".to_string(), vec![1, 0])
        ]
    );
    let v = Binary::new(BinKind::Sub, false).inplace_variants();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].inputs, vec![0, 1]);
    assert!(Binary::new(BinKind::Add, true).inplace_variants().is_empty());
    assert!(Binary::new(BinKind::Add, false).pure_twin().is_none());
    let u = Unary::new(UnKind::Exp, false).inplace_variants();
    assert_eq!((u[0].op.name(), u[0].inputs.clone()), ("exp_inplace", vec![0]));
    assert_eq!(Unary::new(UnKind::Exp, true).pure_twin().unwrap().name(), "exp");
    assert_eq!(Unary::new(UnKind::Exp, true).destroy_map(), vec![(0, 0)]);
    assert!(Unary::new(UnKind::Exp, false).destroy_map().is_empty());
}

#[test]
fn registry_has_every_elementwise_op() {
    let r = OpRegistry::builtin();
    for kind in BinKind::ALL {
        assert!(r.contains(kind.name()) && r.contains(&format!("{}_inplace", kind.name())));
    }
    for kind in UnKind::ALL {
        assert!(r.contains(kind.name()) && r.contains(&format!("{}_inplace", kind.name())));
    }
    for kind in CmpKind::ALL {
        assert!(r.contains(kind.name()));
    }
    assert!(r.contains("where") && r.contains("cast"));
    let e = r
        .make("add", &vigil_engine::Attrs::new().with("axis", 1))
        .unwrap_err();
    assert!(matches!(e, vigil_engine::Error::Attr(_)), "{e:?}");
    assert!(e.to_string().contains("'axis'"), "{e}");
    let e = r.make("cast", &vigil_engine::Attrs::new()).unwrap_err();
    assert!(matches!(e, vigil_engine::Error::Attr(_)), "{e:?}");
    let e = r
        .make("cast", &vigil_engine::Attrs::new().with("dtype", "f128"))
        .unwrap_err();
    assert!(matches!(e, vigil_engine::Error::Attr(_)), "{e:?}");
    assert!(e.to_string().contains("f128"), "{e}");
}

// ----- comparisons and where ------------------------------------------------------

#[test]
fn comparisons_give_bool_on_every_layout() {
    let a = [1.0, 2.0, 3.0, f64::NAN, -1.0, 0.0];
    let b = [3.0, 2.0, 1.0, f64::NAN, -1.0, -0.0];
    let want = |k: CmpKind| -> Vec<bool> {
        match k {
            CmpKind::Eq => vec![false, true, false, false, true, true],
            CmpKind::Ne => vec![true, false, true, true, false, false],
            CmpKind::Lt => vec![true, false, false, false, false, false],
            CmpKind::Le => vec![true, true, false, false, true, true],
            CmpKind::Gt => vec![false, false, true, false, false, false],
            CmpKind::Ge => vec![false, true, true, false, true, true],
        }
    };
    for kind in CmpKind::ALL {
        let op = Compare { kind };
        for (la, ta) in layouts(DType::F64, &a) {
            for (lb, tb) in layouts(DType::F64, &b) {
                let out = run(&op, &[ta.clone(), tb]).unwrap();
                assert_eq!(out.dtype(), DType::Bool);
                assert_eq!(vals::<bool>(&out), want(kind), "{} {la} {lb}", kind.name());
            }
        }
        // Integers (NaN becomes 0 in the cast, so compare the first three only).
        let ia = Tensor::from_vec(&[3], vec![1i32, 2, 3]).unwrap();
        let ib = Tensor::from_vec(&[3], vec![3i32, 2, 1]).unwrap();
        assert_eq!(
            vals::<bool>(&run(&op, &[ia, ib]).unwrap()),
            want(kind)[..3].to_vec()
        );
        assert_eq!(
            op.infer(&[
                TypeInfo::known(DType::I64, &[2, 1]),
                TypeInfo::known(DType::I64, &[3])
            ])
            .unwrap(),
            vec![TypeInfo::known(DType::Bool, &[2, 3])]
        );
        assert!(op
            .infer(&[
                TypeInfo::known(DType::I64, &[2]),
                TypeInfo::known(DType::F64, &[2])
            ])
            .is_err());
    }
    // Booleans compare as false < true, and broadcast.
    let t = Tensor::from_vec(&[2, 1], vec![true, false]).unwrap();
    let u = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    assert_eq!(
        vals::<bool>(&run(&Compare { kind: CmpKind::Lt }, &[t.clone(), u.clone()]).unwrap()),
        vec![false, false, true, false]
    );
    assert_eq!(
        vals::<bool>(&run(&Compare { kind: CmpKind::Eq }, &[t, u]).unwrap()),
        vec![true, false, false, true]
    );
    // Mixed dtypes fail at compute time too.
    assert!(run(
        &Compare { kind: CmpKind::Eq },
        &[f64s(&[1], &[1.0]), i64s(&[1], &[1])]
    )
    .is_err());
    // Empty.
    let e = run(
        &Compare { kind: CmpKind::Gt },
        &[Tensor::zeros(DType::F64, &[0]).unwrap(), f64s(&[1], &[0.0])],
    )
    .unwrap();
    assert_eq!((e.dtype(), e.shape()), (DType::Bool, &[0usize][..]));
}

/// The contiguous fast path picks a loop per operand shape: every mix of
/// full and single-element condition, `a` and `b` gives the broadcast select.
#[test]
fn where_over_slices_matches_the_select_for_every_mix_of_scalars() {
    let n = 37;
    let cs: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
    let xs: Vec<i64> = (0..n as i64).collect();
    let ys: Vec<i64> = (0..n as i64).map(|i| -100 - i).collect();
    for mask in 0..8 {
        let pick = |bit: usize| mask & (1 << bit) != 0;
        let c = if pick(0) {
            Tensor::from_vec(&[1], vec![false]).unwrap()
        } else {
            Tensor::from_vec(&[n], cs.clone()).unwrap()
        };
        let a = if pick(1) {
            i64s(&[1], &[7])
        } else {
            i64s(&[n], &xs)
        };
        let b = if pick(2) {
            i64s(&[1], &[-7])
        } else {
            i64s(&[n], &ys)
        };
        let out = run(&Where, &[c, a, b]).unwrap();
        let want: Vec<i64> = (0..n)
            .map(|i| {
                let c = if pick(0) { false } else { cs[i] };
                let x = if pick(1) { 7 } else { xs[i] };
                let y = if pick(2) { -7 } else { ys[i] };
                if c {
                    x
                } else {
                    y
                }
            })
            .collect();
        // All three single elements: a one-element result.
        let want = if mask == 7 { vec![-7] } else { want };
        assert_eq!(vals::<i64>(&out), want, "mask {mask}");
    }
}

#[test]
fn where_selects_and_broadcasts() {
    let cond = Tensor::from_vec(&[2, 3], vec![true, false, true, false, true, false]).unwrap();
    for (la, a) in layouts(DType::F64, &FA) {
        for (lb, b) in layouts(DType::F64, &FB) {
            let out = run(&Where, &[cond.clone(), a.clone(), b]).unwrap();
            assert_eq!(vals_f64(&out), vec![1.0, -1.0, 3.0, 3.0, -5.0, -2.0], "{la} {lb}");
        }
    }
    // Condition transposed, a row broadcast, b a scalar.
    let ct = Tensor::from_vec(&[3, 2], vec![true, false, false, true, true, false])
        .unwrap()
        .t(None)
        .unwrap();
    let row = i64s(&[3], &[1, 2, 3]);
    let s = Tensor::from_vec(&[], vec![-9i64]).unwrap();
    let out = run(&Where, &[ct, row.clone(), s.clone()]).unwrap();
    assert_eq!(
        (out.shape(), vals::<i64>(&out)),
        (&[2usize, 3][..], vec![1, -9, 3, -9, 2, -9])
    );
    // Contiguous condition and b, a single-element a of higher rank (the
    // slice fast path's scalar).
    let one = Tensor::from_vec(&[1, 1], vec![7i64]).unwrap();
    let c2 = Tensor::from_vec(&[2, 3], vec![true, false, true, false, false, true]).unwrap();
    let b2 = i64s(&[2, 3], &[10, 20, 30, 40, 50, 60]);
    let out = run(&Where, &[c2, one, b2]).unwrap();
    assert_eq!(
        (out.shape(), vals::<i64>(&out)),
        (&[2usize, 3][..], vec![7, 20, 7, 40, 50, 7])
    );
    // A column condition broadcasts across a row.
    let col = Tensor::from_vec(&[2, 1], vec![false, true]).unwrap();
    let out = run(&Where, &[col, row, s]).unwrap();
    assert_eq!(vals::<i64>(&out), vec![-9, -9, -9, 1, 2, 3]);
    // Empty.
    let out = run(
        &Where,
        &[
            Tensor::zeros(DType::Bool, &[0]).unwrap(),
            f64s(&[1], &[1.0]),
            f64s(&[1], &[2.0]),
        ],
    )
    .unwrap();
    assert_eq!(out.shape(), &[0]);
    // The condition must be bool and a, b one dtype.
    let bi = [
        TypeInfo::known(DType::Bool, &[2]),
        TypeInfo::known(DType::F64, &[2]),
        TypeInfo::known(DType::F64, &[2]),
    ];
    assert_eq!(Where.infer(&bi).unwrap(), vec![TypeInfo::known(DType::F64, &[2])]);
    assert!(Where
        .infer(&[TypeInfo::known(DType::F64, &[2]), bi[1].clone(), bi[2].clone()])
        .is_err());
    assert!(Where
        .infer(&[bi[0].clone(), bi[1].clone(), TypeInfo::known(DType::F32, &[2])])
        .is_err());
    assert!(run(
        &Where,
        &[f64s(&[1], &[1.0]), f64s(&[1], &[1.0]), f64s(&[1], &[2.0])]
    )
    .is_err());
}

// ----- unary ------------------------------------------------------------------

const UX: [f64; 6] = [-2.0, -0.5, 0.0, 1.0, 4.0, f64::NAN];

fn unary_expected(kind: UnKind) -> Vec<f64> {
    UX.iter()
        .map(|&x: &f64| match kind {
            UnKind::Neg => -x,
            UnKind::Abs => x.abs(),
            UnKind::Exp => x.exp(),
            UnKind::Log => x.ln(),
            UnKind::Sqrt => x.sqrt(),
            UnKind::Tanh => x.tanh(),
            UnKind::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnKind::Relu => {
                if x.is_nan() || x > 0.0 {
                    x
                } else {
                    0.0
                }
            }
            k => math_expected(k, x),
        })
        .collect()
}

#[test]
fn unary_float_ops_on_every_layout() {
    // Hand values for the cheap ones.
    assert_eq!(&unary_expected(UnKind::Relu)[..5], &[0.0, 0.0, 0.0, 1.0, 4.0]);
    assert!(unary_expected(UnKind::Log)[0].is_nan() && unary_expected(UnKind::Log)[2] == f64::NEG_INFINITY);
    assert!(unary_expected(UnKind::Sqrt)[1].is_nan() && unary_expected(UnKind::Sqrt)[4] == 2.0);
    assert_eq!(unary_expected(UnKind::Sigmoid)[2], 0.5);
    for kind in UnKind::ALL {
        let op = Unary::new(kind, false);
        for (dtype, tol) in [(DType::F64, 1e-15), (DType::F32, 1e-6)] {
            for (l, t) in layouts(dtype, &UX) {
                let out = run(&op, std::slice::from_ref(&t)).unwrap();
                assert!(!out.same_buffer(&t));
                assert_eq!((out.dtype(), out.shape()), (dtype, &[2usize, 3][..]));
                assert_close(
                    &as_f64(&out),
                    &unary_expected(kind),
                    tol,
                    &format!("{} {dtype} {l}", kind.name()),
                );
                assert_close(&as_f64(&t), &UX, 0.0, "input unchanged");
            }
        }
        // Empty and broadcast inputs.
        let e = run(&op, &[Tensor::zeros(DType::F64, &[3, 0]).unwrap()]).unwrap();
        assert_eq!(e.shape(), &[3, 0]);
        let b = f64s(&[3], &[1.0, 4.0, 0.5]).broadcast_to(&[2, 3]).unwrap();
        let out = run(&op, &[b]).unwrap();
        let one: Vec<f64> = [1.0f64, 4.0, 0.5]
            .iter()
            .map(|&x| match kind {
                UnKind::Neg => -x,
                UnKind::Abs | UnKind::Relu => x,
                UnKind::Exp => x.exp(),
                UnKind::Log => x.ln(),
                UnKind::Sqrt => x.sqrt(),
                UnKind::Tanh => x.tanh(),
                UnKind::Sigmoid => 1.0 / (1.0 + (-x).exp()),
                k => math_expected(k, x),
            })
            .collect();
        assert_close(&vals_f64(&out), &[one.clone(), one].concat(), 1e-15, kind.name());
    }
}

#[test]
fn unary_integer_ops_and_refusals() {
    let x = i64s(&[5], &[-3, -1, 0, 2, i64::MIN + 1]);
    assert_eq!(
        vals::<i64>(&run(&Unary::new(UnKind::Neg, false), std::slice::from_ref(&x)).unwrap()),
        vec![3, 1, 0, -2, i64::MAX]
    );
    assert_eq!(
        vals::<i64>(&run(&Unary::new(UnKind::Abs, false), std::slice::from_ref(&x)).unwrap()),
        vec![3, 1, 0, 2, i64::MAX]
    );
    assert_eq!(
        vals::<i64>(&run(&Unary::new(UnKind::Relu, false), std::slice::from_ref(&x)).unwrap()),
        vec![0, 0, 0, 2, 0]
    );
    // numpy: abs(INT_MIN) is INT_MIN.
    assert_eq!(
        vals::<i64>(&run(&Unary::new(UnKind::Abs, false), &[i64s(&[1], &[i64::MIN])]).unwrap()),
        vec![i64::MIN]
    );
    let y = i32s(&[3], &[-4, 0, 5]).t(None).unwrap();
    assert_eq!(
        vals::<i32>(&run(&Unary::new(UnKind::Relu, false), &[y]).unwrap()),
        vec![0, 0, 5]
    );
    for kind in UnKind::ALL {
        let op = Unary::new(kind, false);
        let float_only = !matches!(kind, UnKind::Neg | UnKind::Abs | UnKind::Relu | UnKind::Sign);
        assert_eq!(
            run(&op, std::slice::from_ref(&x)).is_err(),
            float_only,
            "{}",
            kind.name()
        );
        assert_eq!(
            op.infer(&[TypeInfo::known(DType::I64, &[2])]).is_err(),
            float_only,
            "{}",
            kind.name()
        );
        assert!(op.infer(&[TypeInfo::known(DType::Bool, &[2])]).is_err());
        assert!(run(&op, &[Tensor::from_vec(&[1], vec![true]).unwrap()]).is_err());
        assert!(run(
            &Unary::new(kind, true),
            &[Tensor::from_vec(&[1], vec![true]).unwrap()]
        )
        .is_err());
    }
    assert_eq!(vals::<i64>(&x), vec![-3, -1, 0, 2, i64::MIN + 1]);
}

#[test]
fn neg_flips_the_sign_of_zero_like_numpy() {
    let out = run(&Unary::new(UnKind::Neg, false), &[f64s(&[2], &[0.0, -0.0])]).unwrap();
    let v = vals_f64(&out);
    assert!(v[0].is_sign_negative() && v[1].is_sign_positive(), "{v:?}");
}

#[test]
fn inplace_unary_twins_overwrite_their_input_in_every_layout() {
    for kind in UnKind::ALL {
        let op = Unary::new(kind, true);
        for (l, t) in layouts(DType::F64, &UX) {
            let out = run(&op, std::slice::from_ref(&t)).unwrap();
            assert!(
                out.same_buffer(&t) && out.layout() == t.layout(),
                "{} {l}",
                op.name()
            );
            assert_close(
                &as_f64(&t),
                &unary_expected(kind),
                1e-15,
                &format!("{} {l}", op.name()),
            );
        }
        // Only the view's elements change.
        let base = arange_f64(&[3, 3]);
        let v = base
            .slice(&[IndexSpec::Point(1), IndexSpec::range(-1, -1000, -1)])
            .unwrap();
        run(&op, &[v]).unwrap();
        let got = vals_f64(&base);
        for (i, g) in got.iter().enumerate() {
            let x = i as f64;
            let want = if (3..6).contains(&i) {
                unary_expected_one(kind, x)
            } else {
                x
            };
            assert_close(&[*g], &[want], 1e-15, &format!("{} element {i}", op.name()));
        }
        // Writing a broadcast view is refused.
        let b = arange_f64(&[3]).broadcast_to(&[2, 3]).unwrap();
        assert!(run(&op, &[b]).is_err());
    }
    let x = i64s(&[3], &[-1, 0, 1]);
    run(&Unary::new(UnKind::Relu, true), std::slice::from_ref(&x)).unwrap();
    assert_eq!(vals::<i64>(&x), vec![0, 0, 1]);
}

fn unary_expected_one(kind: UnKind, x: f64) -> f64 {
    match kind {
        UnKind::Neg => -x,
        UnKind::Abs => x.abs(),
        UnKind::Exp => x.exp(),
        UnKind::Log => x.ln(),
        UnKind::Sqrt => x.sqrt(),
        UnKind::Tanh => x.tanh(),
        UnKind::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnKind::Relu => x.max(0.0),
        k => math_expected(k, x),
    }
}

/// The unary math ops added for ONNX, by the standard library (and libm's erf).
fn math_expected(kind: UnKind, x: f64) -> f64 {
    match kind {
        UnKind::Sin => x.sin(),
        UnKind::Cos => x.cos(),
        UnKind::Tan => x.tan(),
        UnKind::Asin => x.asin(),
        UnKind::Acos => x.acos(),
        UnKind::Atan => x.atan(),
        UnKind::Sinh => x.sinh(),
        UnKind::Cosh => x.cosh(),
        UnKind::Asinh => x.asinh(),
        UnKind::Acosh => x.acosh(),
        UnKind::Atanh => x.atanh(),
        UnKind::Erf => libm::erf(x),
        UnKind::Floor => x.floor(),
        UnKind::Ceil => x.ceil(),
        UnKind::Round => x.round_ties_even(),
        UnKind::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        }
        UnKind::Reciprocal => 1.0 / x,
        UnKind::Log1p => x.ln_1p(),
        UnKind::Expm1 => x.exp_m1(),
        UnKind::Softplus => x.max(0.0) + (-x.abs()).exp().ln_1p(),
        UnKind::Gelu => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
        // `x/2 · (1 + tanh(u))` without the cancellation of `1 + tanh(u)`.
        UnKind::GeluTanh => {
            let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3));
            x / (1.0 + (-2.0 * u).exp())
        }
        UnKind::HardSwish => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
        _ => unreachable!("covered by the caller"),
    }
}

// ----- cast --------------------------------------------------------------------

#[test]
fn cast_follows_numpy_astype() {
    let f = f64s(&[5], &[1.7, -1.7, 2.5, -0.0, 1e10]);
    let c = |t: &Tensor, d: DType| run(&Cast::to(d), std::slice::from_ref(t)).unwrap();
    // Float to int truncates toward zero.
    assert_eq!(vals::<i64>(&c(&f, DType::I64)), vec![1, -1, 2, 0, 10_000_000_000]);
    assert_eq!(
        vals::<i32>(&c(&f64s(&[2], &[3.9, -3.9]), DType::I32)),
        vec![3, -3]
    );
    // To bool is != 0 (NaN is true).
    assert_eq!(
        vals::<bool>(&c(&f64s(&[4], &[0.0, -0.0, 0.5, f64::NAN]), DType::Bool)),
        vec![false, false, true, true]
    );
    assert_eq!(
        vals::<bool>(&c(&i64s(&[3], &[0, -3, 1]), DType::Bool)),
        vec![false, true, true]
    );
    // From bool is 0/1.
    let b = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    assert_eq!(vals::<f32>(&c(&b, DType::F32)), vec![1.0, 0.0]);
    assert_eq!(vals::<i64>(&c(&b, DType::I64)), vec![1, 0]);
    // Integers widen exactly, beyond f64's 53 bits too.
    let big = i64s(&[2], &[(1 << 53) + 1, -(1 << 62) - 1]);
    assert_eq!(
        vals::<i64>(&c(&big, DType::I64)),
        vec![(1 << 53) + 1, -(1 << 62) - 1]
    );
    assert_eq!(
        vals::<i64>(&c(&i32s(&[2], &[i32::MIN, 7]), DType::I64)),
        vec![i32::MIN as i64, 7]
    );
    assert_eq!(
        vals::<i32>(&c(&i64s(&[2], &[-5, 123456]), DType::I32)),
        vec![-5, 123456]
    );
    assert_eq!(vals_f64(&c(&i64s(&[1], &[-3]), DType::F64)), vec![-3.0]);
    // f64 -> f32 rounds.
    assert_eq!(vals::<f32>(&c(&f64s(&[1], &[0.1]), DType::F32)), vec![0.1f32]);
    // A cast is always a new C-contiguous buffer, and keeps logical order.
    let t = arange_f64(&[2, 3]).t(None).unwrap();
    let out = c(&t, DType::F64);
    assert!(!out.same_buffer(&t) && out.is_contiguous());
    assert_eq!(vals_f64(&out), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let out = c(
        &arange_i64(&[4])
            .slice(&[IndexSpec::range(-1, -1000, -1)])
            .unwrap(),
        DType::F32,
    );
    assert_eq!(vals::<f32>(&out), vec![3.0, 2.0, 1.0, 0.0]);
    let out = c(
        &f64s(&[2], &[1.5, 2.5]).broadcast_to(&[2, 2]).unwrap(),
        DType::I32,
    );
    assert_eq!(vals::<i32>(&out), vec![1, 2, 1, 2]);
    assert_eq!(
        c(&Tensor::zeros(DType::F64, &[0, 2]).unwrap(), DType::Bool).shape(),
        &[0, 2]
    );
    // The attr and the inferred type.
    let op = Cast::to(DType::I32);
    assert_eq!(op.attrs(), vigil_engine::Attrs::new().with("dtype", "i32"));
    assert_eq!(
        op.infer(&[TypeInfo::new(DType::F64, Some(vec![-1, 2]))]).unwrap(),
        vec![TypeInfo::new(DType::I32, Some(vec![-1, 2]))]
    );
}

#[test]
fn cast_i64_to_i32_wraps_like_numpy() {
    let out = run(
        &Cast::to(DType::I32),
        &[i64s(&[3], &[1 << 31, -(1 << 31) - 1, (1 << 32) + 5])],
    )
    .unwrap();
    assert_eq!(vals::<i32>(&out), vec![i32::MIN, i32::MAX, 5]);
}

/// `a op b` by the definition: every output index, its operands' indices
/// found by numpy's broadcasting rules.
fn broadcast_definition(kind: BinKind, a: &Tensor, b: &Tensor, out_shape: &[usize]) -> Vec<f64> {
    let (av, bv) = (as_f64(a), as_f64(b));
    let n: usize = out_shape.iter().product();
    let flat = |shape: &[usize], idx: &[usize]| {
        let pad = idx.len() - shape.len();
        shape
            .iter()
            .enumerate()
            .fold(0, |acc, (i, &d)| acc * d + if d == 1 { 0 } else { idx[pad + i] })
    };
    (0..n)
        .map(|mut k| {
            let mut idx = vec![0; out_shape.len()];
            for (i, &d) in out_shape.iter().enumerate().rev() {
                idx[i] = k % d;
                k /= d;
            }
            let (x, y) = (av[flat(a.shape(), &idx)], bv[flat(b.shape(), &idx)]);
            match kind {
                BinKind::Add => x + y,
                BinKind::Sub => x - y,
                BinKind::Mul => x * y,
                BinKind::Div => x / y,
                BinKind::Maximum => x.max(y),
                _ => x.min(y),
            }
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    /// Broadcasting in every pattern (per-block scales `[N, C, 1, 1]`,
    /// repeated rows `[C]`, and the mixed ones that take the general
    /// path), either operand broadcast, pure and in place.
    #[test]
    fn broadcast_binary_ops_match_the_definition(
        out_shape in proptest::collection::vec(1usize..5, 1..5),
        ones in proptest::collection::vec(proptest::bool::ANY, 4),
        drop in 0usize..3,
        kind in proptest::sample::select(vec![
            BinKind::Add, BinKind::Sub, BinKind::Mul, BinKind::Div, BinKind::Maximum, BinKind::Minimum,
        ]),
        swap in proptest::bool::ANY,
    ) {
        let y_shape: Vec<usize> = out_shape
            .iter()
            .zip(&ones)
            .map(|(&d, &one)| if one { 1 } else { d })
            .skip(drop.min(out_shape.len() - 1))
            .collect();
        let values = |shape: &[usize], seed: usize| {
            let n: usize = shape.iter().product();
            let v: Vec<f64> = (0..n).map(|i| ((i * 37 + seed) % 23) as f64 / 4.0 - 2.5).collect();
            Tensor::from_vec(shape, v).unwrap()
        };
        let (x, y) = (values(&out_shape, 1), values(&y_shape, 5));
        let (a, b) = if swap { (y.clone(), x.clone()) } else { (x.clone(), y.clone()) };
        // Bits, every NaN alike (0 / 0 gives NaN, which equals nothing).
        let bits = |v: Vec<f64>| -> Vec<u64> {
            v.iter().map(|x| if x.is_nan() { f64::NAN.to_bits() } else { x.to_bits() }).collect()
        };
        let want = bits(broadcast_definition(kind, &a, &b, &out_shape));
        let got = run(&Binary::new(kind, false), &[a, b]).unwrap();
        proptest::prop_assert_eq!(got.shape(), &out_shape[..]);
        proptest::prop_assert_eq!(bits(as_f64(&got)), want.clone());
        if !swap {
            // In place: x (the output's shape) is overwritten.
            let x = x.deep_copy().unwrap();
            let got = run(&Binary::new(kind, true), &[x.clone(), y]).unwrap();
            proptest::prop_assert!(got.same_buffer(&x));
            proptest::prop_assert_eq!(bits(as_f64(&got)), want);
        }
    }

    /// In place on a permuted view of a contiguous buffer (NHWC data seen
    /// as NCHW), with an operand permuted alike, contiguous, or one axis
    /// broadcast: the values are the definition's, written through the
    /// view into its buffer.
    #[test]
    fn inplace_ops_on_permuted_views_match_the_definition(
        shape in proptest::collection::vec(1usize..6, 2..5),
        turn in 0usize..4,
        flip in proptest::bool::ANY,
        y_kind in 0usize..3,
        kind in proptest::sample::select(vec![
            BinKind::Add, BinKind::Sub, BinKind::Mul, BinKind::Div, BinKind::Maximum,
        ]),
    ) {
        let n = shape.len();
        let mut perm: Vec<usize> = (0..n).collect();
        perm.rotate_left(turn % n);
        if flip {
            perm.reverse();
        }
        let mut inverse = vec![0; n];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i;
        }
        // A buffer stored in `perm` order, viewed back in `shape` order.
        let stored = |seed: usize| {
            let dims: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            let size: usize = dims.iter().product();
            let v: Vec<f64> = (0..size).map(|i| ((i * 37 + seed) % 23) as f64 / 4.0 - 2.5).collect();
            Tensor::from_vec(&dims, v).unwrap().permute(&inverse).unwrap()
        };
        let x = stored(1);
        let y = match y_kind {
            0 => stored(5),
            1 => {
                let size: usize = shape.iter().product();
                Tensor::from_vec(&shape, (0..size).map(|i| i as f64 / 8.0 + 0.5).collect()).unwrap()
            }
            _ => {
                let k = turn % n;
                let dims: Vec<usize> = (0..n).map(|a| if a == k { shape[a] } else { 1 }).collect();
                Tensor::from_vec(&dims, (0..shape[k]).map(|i| i as f64 - 1.5).collect()).unwrap()
            }
        };
        let bits = |v: Vec<f64>| -> Vec<u64> {
            v.iter().map(|x| if x.is_nan() { f64::NAN.to_bits() } else { x.to_bits() }).collect()
        };
        let want = bits(broadcast_definition(kind, &x, &y, &shape));
        let got = run(&Binary::new(kind, true), &[x.clone(), y]).unwrap();
        proptest::prop_assert!(got.same_buffer(&x));
        proptest::prop_assert_eq!(bits(as_f64(&x)), want);
    }
}

/// Views with short strided rows (copied to C order before the loop) and
/// with long contiguous rows (walked as they are) give, bit for bit, what
/// their contiguous copies give, for binary, unary math and plain unary ops.
#[test]
fn views_with_short_or_long_rows_match_their_contiguous_copies() {
    let data = |n: usize| -> Vec<f32> { (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect() };
    // An attention key [2, 7, 2, 64] viewed as [2, 2, 64, 7] (rows of 7
    // elements 128 apart), and a [4, 40] window of a [6, 50] buffer.
    let key = Tensor::from_vec(&[2, 7, 2, 64], data(2 * 7 * 2 * 64))
        .unwrap()
        .permute(&[0, 2, 3, 1])
        .unwrap();
    let window = Tensor::from_vec(&[6, 50], data(300))
        .unwrap()
        .slice(&[IndexSpec::range(1, 5, 1), IndexSpec::range(5, 45, 1)])
        .unwrap();
    for view in [key, window] {
        assert!(!view.is_contiguous());
        let copy = view.deep_copy().unwrap();
        let scalar = Tensor::from_vec(&[], vec![0.35f32]).unwrap();
        let bits = |t: &Tensor| vals::<f32>(t).iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let ops: Vec<(Box<dyn Op>, bool)> = vec![
            (Box::new(Binary::new(BinKind::Mul, false)), true),
            (Box::new(Binary::new(BinKind::Sub, false)), true),
            (Box::new(Unary::new(UnKind::Exp, false)), false),
            (Box::new(Unary::new(UnKind::Neg, false)), false),
        ];
        for (op, binary) in ops {
            let (on_view, on_copy) = if binary {
                (
                    run(op.as_ref(), &[view.clone(), scalar.clone()]).unwrap(),
                    run(op.as_ref(), &[copy.clone(), scalar.clone()]).unwrap(),
                )
            } else {
                (
                    run(op.as_ref(), std::slice::from_ref(&view)).unwrap(),
                    run(op.as_ref(), std::slice::from_ref(&copy)).unwrap(),
                )
            };
            assert_eq!(
                bits(&on_view),
                bits(&on_copy),
                "{} on {:?}",
                op.name(),
                view.shape()
            );
        }
        // The view on the right of a binary op, against a contiguous left.
        let left = Tensor::from_vec(view.shape(), data(view.size())).unwrap();
        let add = Binary::new(BinKind::Add, false);
        let on_view = run(&add, &[left.clone(), view.clone()]).unwrap();
        let on_copy = run(&add, &[left, copy]).unwrap();
        assert_eq!(bits(&on_view), bits(&on_copy));
    }
}

/// `pow` with one exponent of each multiply-or-square-root form, pure and
/// in place, on f32 and f64: each element is `powf`'s within the kernel's
/// bound (see engine/src/kernels/pow.rs), special values alike.
#[test]
fn pow_by_a_small_exponent_is_powf_for_each_form() {
    let xs: Vec<f64> = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.5,
        -3.25,
        1e-3,
        7.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ]
    .into_iter()
    .chain((0..40).map(|i| (i as f64 - 20.0) * 0.37))
    .collect();
    for e in [0.0, 1.0, 2.0, 3.0, 4.0, -1.0, -2.0, 0.5, -0.5] {
        for dtype in [DType::F32, DType::F64] {
            let x = Tensor::from_vec(&[xs.len()], xs.clone())
                .unwrap()
                .cast(dtype)
                .unwrap();
            let ex = Tensor::from_vec(&[1], vec![e]).unwrap().cast(dtype).unwrap();
            let pure = run(&Binary::new(BinKind::Pow, false), &[x.clone(), ex.clone()]).unwrap();
            let inplace = run(&Binary::new(BinKind::Pow, true), &[x.deep_copy().unwrap(), ex]).unwrap();
            let want: Vec<f64> = as_f64(&x)
                .iter()
                .map(|&v| match dtype {
                    DType::F32 => (v as f32).powf(e as f32) as f64,
                    _ => v.powf(e),
                })
                .collect();
            let tol = if dtype == DType::F32 {
                2.0 * f32::EPSILON as f64
            } else {
                4.0 * f64::EPSILON
            };
            assert_close(&as_f64(&pure), &want, tol, &format!("{dtype} x ** {e}"));
            assert_close(
                &as_f64(&inplace),
                &want,
                tol,
                &format!("{dtype} x ** {e} in place"),
            );
        }
    }
}

/// Inputs long enough to split across the pool in chunks: every element
/// still gets the function, in place and into a fresh output.
#[test]
fn long_unary_maps_split_across_the_pool_reach_every_element() {
    let n = 3 * vigil_engine::parallel::PARALLEL_ELEMS + 17;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1013) as f32 / 64.0 - 8.0).collect();
    for kind in [UnKind::Relu, UnKind::HardSwish, UnKind::Neg] {
        let want: Vec<f64> = xs
            .iter()
            .map(|&x| {
                let x = x as f64;
                match kind {
                    UnKind::Relu => x.max(0.0),
                    UnKind::Neg => -x,
                    _ => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
                }
            })
            .collect();
        let t = Tensor::from_vec(&[n], xs.clone()).unwrap();
        let out = run(&Unary::new(kind, false), std::slice::from_ref(&t)).unwrap();
        assert_close(&as_f64(&out), &want, 1e-6, kind.name());
        run(&Unary::new(kind, true), std::slice::from_ref(&t)).unwrap();
        assert_close(&as_f64(&t), &want, 1e-6, &format!("{}_inplace", kind.name()));
    }
}
