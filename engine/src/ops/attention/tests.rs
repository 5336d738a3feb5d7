use super::*;
use crate::assert_cause;
use crate::ops::testutil::{op, run_all, t};

fn att(attrs: Attrs) -> Arc<dyn Op> {
    op(NAME, attrs)
}

fn vals(x: &Tensor) -> Vec<f64> {
    x.to_f64_vec().unwrap()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{got:?} vs {want:?}");
    }
}

/// One head, one query `[1, 0]`, keys `[1, 0]` and `[0, 1]`, values
/// `[1, 2]` and `[3, 4]`, scale 1: probabilities `e/(e+1)` and `1/(e+1)`.
#[test]
fn one_query_weights_the_values_by_the_softmax_of_its_scores() {
    let q = t(&[1, 1, 1, 2], vec![1.0f64, 0.0]);
    let k = t(&[1, 1, 2, 2], vec![1.0f64, 0.0, 0.0, 1.0]);
    let v = t(&[1, 1, 2, 2], vec![1.0f64, 2.0, 3.0, 4.0]);
    let out = run_all(
        &*att(Attrs::new().with("scale", 1.0).with("qk_mode", 3)),
        &[q, k, v],
    )
    .unwrap();
    let e = std::f64::consts::E;
    let (p0, p1) = (e / (e + 1.0), 1.0 / (e + 1.0));
    close(&vals(&out[0]), &[p0 + 3.0 * p1, 2.0 * p0 + 4.0 * p1]);
    close(&vals(&out[1]), &[p0, p1]);
    // The default scale is 1/sqrt(head): scores 1/sqrt(2) and 0.
    let q = t(&[1, 1, 1, 2], vec![1.0f64, 0.0]);
    let k = t(&[1, 1, 2, 2], vec![1.0f64, 0.0, 0.0, 1.0]);
    let v = t(&[1, 1, 2, 2], vec![1.0f64, 2.0, 3.0, 4.0]);
    let out = run_all(&*att(Attrs::new().with("qk_mode", 0)), &[q, k, v]).unwrap();
    close(&vals(&out[1]), &[0.5f64.sqrt(), 0.0]);
}

/// Causal: query 0 sees key 0 only, so its output is value 0 exactly;
/// with a past of one key the frontier moves right by one.
#[test]
fn causal_rows_see_keys_up_to_their_position_plus_the_past() {
    let q = || t(&[1, 1, 2, 1], vec![1.0f64, 1.0]);
    let k = || t(&[1, 1, 2, 1], vec![0.0f64, 0.0]);
    let v = || t(&[1, 1, 2, 1], vec![10.0f64, 20.0]);
    let out = run_all(&*att(Attrs::new().with("is_causal", true)), &[q(), k(), v()]).unwrap();
    // Equal scores: row 0 is v0, row 1 the mean.
    close(&vals(&out[0]), &[10.0, 15.0]);
    // A past of one key (value 30): row 0 sees past + key 0, row 1 all three.
    let pk = t(&[1, 1, 1, 1], vec![0.0f64]);
    let pv = t(&[1, 1, 1, 1], vec![30.0f64]);
    let a = Attrs::new().with("is_causal", true).with("past", true);
    let out = run_all(&*att(a), &[q(), k(), v(), pk, pv]).unwrap();
    assert_eq!(out.len(), 3);
    close(&vals(&out[0]), &[20.0, 20.0]);
    assert_eq!(out[1].shape(), &[1, 1, 3, 1]);
    close(&vals(&out[2]), &[30.0, 10.0, 20.0]);
}

/// Four query heads over two key/value heads: heads 0 and 1 read kv head
/// 0, heads 2 and 3 kv head 1.
#[test]
fn grouped_query_heads_share_their_key_value_head() {
    let q = t(&[1, 4, 1, 1], vec![1.0f64; 4]);
    let k = t(&[1, 2, 1, 1], vec![1.0f64, 1.0]);
    let v = t(&[1, 2, 1, 1], vec![5.0f64, 7.0]);
    let out = run_all(&*att(Attrs::new()), &[q, k, v]).unwrap();
    assert_eq!(out[0].shape(), &[1, 4, 1, 1]);
    close(&vals(&out[0]), &[5.0, 5.0, 7.0, 7.0]);
    // Three query heads over two: refused.
    let q = t(&[1, 3, 1, 1], vec![1.0f64; 3]);
    let k = t(&[1, 2, 1, 1], vec![1.0f64, 1.0]);
    let v = t(&[1, 2, 1, 1], vec![5.0f64, 7.0]);
    assert_cause!(
        run_all(&*att(Attrs::new()), &[q, k, v]).unwrap_err(),
        Shape,
        "multiple"
    );
}

/// A bool mask that allows nothing in row 1: that row's output and its
/// probabilities are zero, not NaN; a float mask adds to the scores; a
/// mask shorter than the keys is padded with false.
#[test]
fn masks_bool_float_short_and_fully_masked_rows() {
    let q = || t(&[1, 1, 2, 1], vec![0.0f64, 0.0]);
    let k = || t(&[1, 1, 3, 1], vec![0.0f64; 3]);
    let v = || t(&[1, 1, 3, 1], vec![1.0f64, 2.0, 4.0]);
    let a = Attrs::new().with("mask", true).with("qk_mode", 3);
    let m = t(&[2, 3], vec![true, false, true, false, false, false]);
    let out = run_all(&*att(a.clone()), &[q(), k(), v(), m]).unwrap();
    close(&vals(&out[0]), &[2.5, 0.0]);
    close(&vals(&out[1]), &[0.5, 0.0, 0.5, 0.0, 0.0, 0.0]);
    // Short mask [2]: key 2 is padding for every row.
    let m = t(&[2], vec![true, true]);
    let out = run_all(&*att(a.clone()), &[q(), k(), v(), m]).unwrap();
    close(&vals(&out[0]), &[1.5, 1.5]);
    // Float mask: ln 3 on key 2 makes its weight 3 of 5.
    let m = t(&[1, 3], vec![0.0f64, 0.0, 3.0f64.ln()]);
    let out = run_all(&*att(a.clone()), &[q(), k(), v(), m]).unwrap();
    close(&vals(&out[0]), &[(1.0 + 2.0 + 12.0) / 5.0; 2]);
    // qk_mode 2 shows the bias: -inf where the bool mask forbids.
    let a2 = Attrs::new().with("mask", true).with("qk_mode", 2);
    let m = t(&[2, 3], vec![true, false, true, false, false, false]);
    let out = run_all(&*att(a2), &[q(), k(), v(), m]).unwrap();
    let s = vals(&out[1]);
    assert_eq!(s[0], 0.0);
    assert!(s[1] == f64::NEG_INFINITY && s[3..].iter().all(|&x| x == f64::NEG_INFINITY));
}

/// nonpad_kv_seqlen: keys at or after it are ignored, and with is_causal
/// the frontier is `nonpad - q_len`; a negative frontier masks the row.
#[test]
fn nonpad_lengths_pad_keys_and_set_the_causal_offset() {
    let q = || t(&[2, 1, 1, 1], vec![0.0f64, 0.0]);
    let k = || t(&[2, 1, 3, 1], vec![0.0f64; 6]);
    let v = || t(&[2, 1, 3, 1], vec![1.0f64, 2.0, 4.0, 1.0, 2.0, 4.0]);
    let n = || t(&[2], vec![2i64, 0]);
    let out = run_all(&*att(Attrs::new().with("nonpad", true)), &[q(), k(), v(), n()]).unwrap();
    // Batch 0 sees keys 0 and 1; batch 1 sees none: a zero row.
    close(&vals(&out[0]), &[1.5, 0.0]);
    let a = Attrs::new().with("nonpad", true).with("is_causal", true);
    let out = run_all(&*att(a), &[q(), k(), v(), t(&[2], vec![1i64, 3])]).unwrap();
    // Offsets 0 and 2: batch 0 sees key 0, batch 1 keys 0 to 2.
    close(&vals(&out[0]), &[1.0, 7.0 / 3.0]);
}

/// left_window 1 with is_causal: each query sees itself and the key before.
#[test]
fn a_sliding_window_limits_the_keys_on_each_side() {
    let q = || t(&[1, 1, 3, 1], vec![0.0f64; 3]);
    let k = || t(&[1, 1, 3, 1], vec![0.0f64; 3]);
    let v = || t(&[1, 1, 3, 1], vec![1.0f64, 2.0, 4.0]);
    let a = Attrs::new().with("is_causal", true).with("left_window", 1);
    let out = run_all(&*att(a), &[q(), k(), v()]).unwrap();
    close(&vals(&out[0]), &[1.0, 1.5, 3.0]);
    let a = Attrs::new().with("left_window", 0).with("right_window", 1);
    let out = run_all(&*att(a), &[q(), k(), v()]).unwrap();
    close(&vals(&out[0]), &[1.5, 3.0, 4.0]);
}

/// softcap bounds the scores at c; f16 inputs compute in f32.
#[test]
fn softcap_and_f16() {
    let q = t(&[1, 1, 1, 1], vec![100.0f32]);
    let k = t(&[1, 1, 2, 1], vec![1.0f32, -1.0]);
    let v = t(&[1, 1, 2, 1], vec![1.0f32, 0.0]);
    let a = Attrs::new()
        .with("scale", 1.0)
        .with("softcap", 2.0)
        .with("qk_mode", 1);
    let out = run_all(&*att(a), &[q, k, v]).unwrap();
    let s = vals(&out[1]);
    assert!(
        (s[0] - 2.0 * 50.0f64.tanh()).abs() < 1e-6 && (s[1] + 2.0).abs() < 1e-6,
        "{s:?}"
    );
    let h = |x: Vec<f32>, s: &[usize]| t(s, x.into_iter().map(half::f16::from_f32).collect());
    let out = run_all(
        &*att(Attrs::new()),
        &[
            h(vec![1.0], &[1, 1, 1, 1]),
            h(vec![0.0, 0.0], &[1, 1, 2, 1]),
            h(vec![1.0, 2.0], &[1, 1, 2, 1]),
        ],
    )
    .unwrap();
    assert_eq!(out[0].dtype(), DType::F16);
    close(&vals(&out[0]), &[1.5]);
}

#[test]
fn bad_inputs_and_attrs_are_refused() {
    let q = t(&[1, 1, 1, 2], vec![1.0f32, 0.0]);
    let k = t(&[1, 1, 2, 3], vec![0.0f32; 6]);
    let v = t(&[1, 1, 2, 2], vec![0.0f32; 4]);
    assert_cause!(
        run_all(&*att(Attrs::new()), &[q.clone(), k, v.clone()]).unwrap_err(),
        Shape,
        "head size"
    );
    let k = t(&[1, 1, 2, 2], vec![0.0f32; 4]);
    let m = t(&[2], vec![1i64, 1]);
    let e = run_all(
        &*att(Attrs::new().with("mask", true)),
        &[q.clone(), k.clone(), v.clone(), m],
    );
    assert_cause!(e.unwrap_err(), DType, "mask");
    let m = t(&[3], vec![0.0f32; 3]);
    let e = run_all(
        &*att(Attrs::new().with("mask", true)),
        &[q.clone(), k.clone(), v.clone(), m],
    );
    assert_cause!(e.unwrap_err(), Shape, "mask");
    assert_cause!(run_all(&*att(Attrs::new()), &[q, k]).unwrap_err(), Arity);
    let reg = OpRegistry::builtin();
    assert!(reg.make(NAME, &Attrs::new().with("qk_mode", 4)).is_err());
    assert!(reg.make(NAME, &Attrs::new().with("left_window", -2)).is_err());
    assert!(reg.make(NAME, &Attrs::new().with("bogus", 1)).is_err());
}

#[test]
fn infer_gives_every_output_shape() {
    let f = |s: &[usize]| TypeInfo::known(DType::F32, s);
    let a = att(Attrs::new().with("past", true).with("qk_mode", 0));
    let got = a
        .infer(&[
            f(&[2, 4, 3, 8]),
            f(&[2, 2, 5, 8]),
            f(&[2, 2, 5, 6]),
            f(&[2, 2, 7, 8]),
            f(&[2, 2, 7, 6]),
        ])
        .unwrap();
    assert_eq!(
        got,
        vec![
            f(&[2, 4, 3, 6]),
            f(&[2, 2, 12, 8]),
            f(&[2, 2, 12, 6]),
            f(&[2, 4, 3, 12])
        ]
    );
    assert_cause!(
        a.infer(&[
            f(&[2, 4, 3]),
            f(&[2, 2, 5, 8]),
            f(&[2, 2, 5, 6]),
            f(&[2, 2, 7, 8]),
            f(&[2, 2, 7, 6])
        ])
        .unwrap_err(),
        Rank
    );
}
