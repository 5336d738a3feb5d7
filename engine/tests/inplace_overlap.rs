//! In-place ops whose operands overlap the destroyed buffer give numpy's
//! answer: the right-hand side behaves as if it were copied first.

mod common;

use std::collections::HashMap;

use common::*;
use proptest::prelude::*;
use vigil_engine::ops::elementwise::{BinKind, Binary};
use vigil_engine::{DType, Executor, GraphBuilder, IndexSpec, Layout, Op, OpCtx, Tensor};

fn inplace(kind: BinKind, x: &Tensor, y: &Tensor) -> Tensor {
    let mut out = Binary::new(kind, true)
        .compute(&[x.clone(), y.clone()], &mut OpCtx::new("n"))
        .unwrap();
    let out = out.pop().unwrap();
    assert!(out.same_buffer(x) && out.layout() == x.layout());
    out
}

fn r(start: i64, end: i64, stride: i64) -> IndexSpec {
    IndexSpec::range(start, end, stride)
}

fn apply(kind: BinKind, a: f64, b: f64) -> f64 {
    match kind {
        BinKind::Add => a + b,
        BinKind::Sub => a - b,
        BinKind::Mul => a * b,
        BinKind::Div => a / b,
        BinKind::Pow => a.powf(b),
        BinKind::Maximum => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if a >= b {
                a
            } else {
                b
            }
        }
        BinKind::Minimum => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if a <= b {
                a
            } else {
                b
            }
        }
    }
}

#[test]
fn x_plus_equals_x_transpose() {
    // numpy: x = [[1, 2], [3, 4]]; x += x.T -> [[2, 5], [5, 8]]
    let x = f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    inplace(BinKind::Add, &x, &x.t(None).unwrap());
    assert_eq!(vals_f64(&x), vec![2.0, 5.0, 5.0, 8.0]);
    // 3x3: without the copy the lower triangle would read updated values.
    let x = arange_f64(&[3, 3]);
    inplace(BinKind::Add, &x, &x.t(None).unwrap());
    assert_eq!(vals_f64(&x), vec![0.0, 4.0, 8.0, 4.0, 8.0, 12.0, 8.0, 12.0, 16.0]);
    // x -= x.T is antisymmetric.
    let x = arange_f64(&[3, 3]);
    inplace(BinKind::Sub, &x, &x.t(None).unwrap());
    assert_eq!(vals_f64(&x), vec![0.0, -2.0, -4.0, 2.0, 0.0, -2.0, 4.0, 2.0, 0.0]);
}

#[test]
fn shifted_slices_read_the_old_values() {
    // numpy: x = [1, 2, 3, 4, 5]; x[1:] += x[:-1] -> [1, 3, 5, 7, 9]
    // (not the running sum [1, 3, 6, 10, 15] an element-by-element loop gives).
    let x = f64s(&[5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
    inplace(
        BinKind::Add,
        &x.slice(&[r(1, 1000, 1)]).unwrap(),
        &x.slice(&[r(0, -1, 1)]).unwrap(),
    );
    assert_eq!(vals_f64(&x), vec![1.0, 3.0, 5.0, 7.0, 9.0]);
    // The other direction: x[:-1] += x[1:] -> [3, 5, 7, 9, 5]
    let x = f64s(&[5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
    inplace(
        BinKind::Add,
        &x.slice(&[r(0, -1, 1)]).unwrap(),
        &x.slice(&[r(1, 1000, 1)]).unwrap(),
    );
    assert_eq!(vals_f64(&x), vec![3.0, 5.0, 7.0, 9.0, 5.0]);
    // Rows: x[1:] *= x[:-1] on a (3, 2) array.
    let x = f64s(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    inplace(
        BinKind::Mul,
        &x.slice(&[r(1, 1000, 1)]).unwrap(),
        &x.slice(&[r(0, -1, 1)]).unwrap(),
    );
    assert_eq!(vals_f64(&x), vec![1.0, 2.0, 3.0, 8.0, 15.0, 24.0]);
    // Integers too.
    let x = i64s(&[4], &[1, 10, 100, 1000]);
    inplace(
        BinKind::Sub,
        &x.slice(&[r(1, 1000, 1)]).unwrap(),
        &x.slice(&[r(0, -1, 1)]).unwrap(),
    );
    assert_eq!(vals_i64(&x), vec![1, 9, 90, 900]);
}

#[test]
fn x_minus_equals_x_and_x_times_equals_reversed_x() {
    let x = f64s(&[2, 3], &[1.0, -2.0, 3.5, 0.0, 7.0, -1.0]);
    inplace(BinKind::Sub, &x, &x);
    assert_eq!(vals_f64(&x), vec![0.0; 6]);
    let x = f64s(&[3], &[1.0, 2.0, 4.0]);
    inplace(BinKind::Div, &x, &x.clone());
    assert_eq!(vals_f64(&x), vec![1.0; 3]);
    // numpy: x = [1, 2, 3, 4]; x *= x[::-1] -> [4, 6, 6, 4]
    let x = f64s(&[4], &[1.0, 2.0, 3.0, 4.0]);
    inplace(BinKind::Mul, &x, &x.slice(&[r(-1, -1000, -1)]).unwrap());
    assert_eq!(vals_f64(&x), vec![4.0, 6.0, 6.0, 4.0]);
    // x += x[0] broadcasts the old first row into every row.
    let x = f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    inplace(BinKind::Add, &x, &x.slice(&[IndexSpec::Point(0)]).unwrap());
    assert_eq!(vals_f64(&x), vec![2.0, 4.0, 4.0, 6.0]);
    // x[::2] = x[1::2] + ..., via maximum: x[::2] max= x[1::2] on [5, 1, 2, 7]
    let x = f64s(&[4], &[5.0, 1.0, 2.0, 7.0]);
    inplace(
        BinKind::Maximum,
        &x.slice(&[r(0, 1000, 2)]).unwrap(),
        &x.slice(&[r(1, 1000, 2)]).unwrap(),
    );
    assert_eq!(vals_f64(&x), vec![5.0, 1.0, 7.0, 7.0]);
}

#[test]
fn assign_of_an_overlapping_source_copies_it_first() {
    let x = f64s(&[5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
    x.slice(&[r(1, 1000, 1)])
        .unwrap()
        .assign(&x.slice(&[r(0, -1, 1)]).unwrap())
        .unwrap();
    assert_eq!(vals_f64(&x), vec![1.0, 1.0, 2.0, 3.0, 4.0]);
    let x = arange_f64(&[3, 3]);
    x.assign(&x.t(None).unwrap()).unwrap();
    assert_eq!(vals_f64(&x), vec![0.0, 3.0, 6.0, 1.0, 4.0, 7.0, 2.0, 5.0, 8.0]);
    let x = arange_f64(&[4]);
    x.assign(&x.slice(&[r(-1, -1000, -1)]).unwrap()).unwrap();
    assert_eq!(vals_f64(&x), vec![3.0, 2.0, 1.0, 0.0]);
}

#[test]
fn graphs_tolerate_x_plus_x_but_refuse_x_plus_x_transpose() {
    let g = GraphBuilder::new("overlap");
    let x = g.mutable_input("x", DType::F64, &[2, 2]);
    let d = g
        .apply_named("double", "add_inplace", &[&x, &x], Default::default())
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&d]).unwrap();
    let feed = f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let out = Executor::new(&graph)
        .unwrap()
        .run(&HashMap::from([("x".to_string(), feed.clone())]))
        .unwrap();
    assert_eq!(vals_f64(out.get("double").unwrap()), vec![2.0, 4.0, 6.0, 8.0]);
    assert!(out.get("double").unwrap().same_buffer(&feed));

    // Rule c: the explicit graph x += x.T is refused before running; the op
    // itself (above) computes numpy's answer.
    let g = GraphBuilder::new("overlap_t");
    let x = g.mutable_input("x", DType::F64, &[2, 2]);
    let t = x.transpose(None).unwrap();
    let d = g
        .apply_named("sym", "add_inplace", &[&x, &t], Default::default())
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&d]).unwrap();
    let e = err_msg(Executor::new(&graph));
    assert!(e.contains("node 'sym'") && e.contains("reads_destroyed"), "{e}");
}

// ----- properties ----------------------------------------------------------------

fn kind() -> impl Strategy<Value = BinKind> {
    prop::sample::select(vec![
        BinKind::Add,
        BinKind::Sub,
        BinKind::Mul,
        BinKind::Maximum,
        BinKind::Minimum,
    ])
}

/// Small integers: every result is exact.
fn data(n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((-6i32..=6).prop_map(f64::from), n)
}

fn positions(n: usize, st: isize, off: usize) -> Vec<usize> {
    (0..n)
        .map(|k| (off as isize + k as isize * st) as usize)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// x op= x.T on random square matrices.
    #[test]
    fn x_op_equals_x_transpose(n in 1usize..=6, k in kind(), seed in any::<u64>()) {
        let x0: Vec<f64> = (0..n * n).map(|i| ((seed >> (i % 60)) % 13) as f64 - 6.0).collect();
        let x = f64s(&[n, n], &x0);
        inplace(k, &x, &x.t(None).unwrap());
        let want: Vec<f64> = (0..n * n).map(|p| apply(k, x0[p], x0[(p % n) * n + p / n])).collect();
        prop_assert_eq!(vals_f64(&x), want);
    }

    /// Two overlapping 1-D strided views of one buffer: dst op= src gives the
    /// copy-first answer, and nothing outside dst changes.
    #[test]
    fn overlapping_strided_views_behave_as_if_copied_first(
        (len, x0) in (1usize..=12).prop_flat_map(|len| (Just(len), data(len))),
        k in kind(),
        l in any::<prop::sample::Index>(),
        d in any::<prop::sample::Index>(),
        s in any::<prop::sample::Index>(),
        dst_st in prop::sample::select(vec![-3isize, -2, -1, 1, 2, 3]),
        src_st in prop::sample::select(vec![-3isize, -2, -1, 1, 2, 3]),
    ) {
        // Pick a common length and offsets that keep both views inside.
        let fit = |st: isize| (len - 1) / st.unsigned_abs() + 1;
        let n = fit(dst_st).min(fit(src_st));
        let n = 1 + l.index(n);
        let place = |st: isize, i: &prop::sample::Index| -> usize {
            let reach = (n - 1) * st.unsigned_abs();
            let first = i.index(len - reach);
            if st < 0 { first + reach } else { first }
        };
        let (doff, soff) = (place(dst_st, &d), place(src_st, &s));
        let buf = f64s(&[len], &x0);
        let dst = buf.with_layout(Layout::new(vec![n], vec![dst_st], doff)).unwrap();
        let src = buf.with_layout(Layout::new(vec![n], vec![src_st], soff)).unwrap();
        let src_old = vals_f64(&src);
        inplace(k, &dst, &src);
        let mut want = x0.clone();
        for (j, p) in positions(n, dst_st, doff).into_iter().enumerate() {
            want[p] = apply(k, x0[p], src_old[j]);
        }
        prop_assert_eq!(vals_f64(&buf), want, "dst {:?} src {:?}", (n, dst_st, doff), (n, src_st, soff));
    }

    /// Square views that permute or reverse the same matrix.
    #[test]
    fn overlapping_square_views_behave_as_if_copied_first(
        (n, x0) in (1usize..=5).prop_flat_map(|n| (Just(n), data(n * n))),
        k in kind(),
        dv in 0usize..6,
        sv in 0usize..6,
    ) {
        let buf = f64s(&[n, n], &x0);
        let view = |v: usize| -> Tensor {
            let rv = r(-1, -1000, -1);
            match v {
                0 => buf.clone(),
                1 => buf.t(None).unwrap(),
                2 => buf.slice(&[rv]).unwrap(),
                3 => buf.slice(&[IndexSpec::All, rv]).unwrap(),
                4 => buf.t(None).unwrap().slice(&[rv, rv]).unwrap(),
                _ => buf.slice(&[rv, rv]).unwrap(),
            }
        };
        // Where each view's element (i, j) lives in the buffer.
        let idx = arange_i64(&[n, n]);
        let map = |v: usize| -> Vec<usize> {
            let t = idx.with_layout(view(v).layout().clone()).unwrap();
            vals_i64(&t).into_iter().map(|p| p as usize).collect()
        };
        let (dmap, smap) = (map(dv), map(sv));
        inplace(k, &view(dv), &view(sv));
        let mut want = x0.clone();
        for q in 0..n * n {
            want[dmap[q]] = apply(k, x0[dmap[q]], x0[smap[q]]);
        }
        prop_assert_eq!(vals_f64(&buf), want);
    }
}
