use proptest::prelude::*;

use super::*;
use crate::assert_cause;
use crate::ops::testutil::{op, run_all, t};

fn la(a: Attrs) -> Arc<dyn Op> {
    op(NAME, a)
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "at {i}: {g} vs {w}\n{got:?}\n{want:?}"
        );
    }
}

/// A deterministic pseudo-random vector in [-1, 1).
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The linear and gated rules without the recurrence: output t of query
/// head j sums, over the tokens s ≤ t of its key/value head h, `scale ·
/// Σ_i q_t[i]·exp(Σ_{s<r≤t} g_r[i])·k_s[i] · v_s`.
#[allow(clippy::too_many_arguments)]
fn closed_form(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    g: Option<&[f64]>,
    (b, t, hq, hk, dk, dv): (usize, usize, usize, usize, usize, usize),
    g_per_dim: bool,
    scale: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; b * t * hq * dv];
    let gat = |bb: usize, r: usize, h: usize, i: usize| match g {
        None => 0.0,
        Some(g) if g_per_dim => g[((bb * t + r) * hk + h) * dk + i],
        Some(g) => g[(bb * t + r) * hk + h],
    };
    for bb in 0..b {
        for j in 0..hq {
            let h = j / (hq / hk);
            for tt in 0..t {
                for s in 0..=tt {
                    let mut w = 0.0;
                    for i in 0..dk {
                        let decay: f64 = (s + 1..=tt).map(|r| gat(bb, r, h, i)).sum();
                        w += q[((bb * t + tt) * hq + j) * dk + i]
                            * decay.exp()
                            * k[((bb * t + s) * hk + h) * dk + i];
                    }
                    for m in 0..dv {
                        out[((bb * t + tt) * hq + j) * dv + m] +=
                            scale * w * v[((bb * t + s) * hk + h) * dv + m];
                    }
                }
            }
        }
    }
    out
}

#[test]
fn linear_rule_is_causal_attention_without_softmax() {
    let (b, tl, hq, hk, dk, dv) = (2, 3, 4, 2, 3, 2);
    let q = data(b * tl * hq * dk, 1);
    let k = data(b * tl * hk * dk, 2);
    let v = data(b * tl * hk * dv, 3);
    let a = Attrs::new()
        .with("q_num_heads", hq)
        .with("kv_num_heads", hk)
        .with("update_rule", "linear");
    let out = run_all(
        &*la(a),
        &[
            t(&[b, tl, hq * dk], q.clone()),
            t(&[b, tl, hk * dk], k.clone()),
            t(&[b, tl, hk * dv], v.clone()),
        ],
    )
    .unwrap();
    assert_eq!(out[0].shape(), [b, tl, hq * dv]);
    assert_eq!(out[1].shape(), [b, hk, dk, dv]);
    let want = closed_form(
        &q,
        &k,
        &v,
        None,
        (b, tl, hq, hk, dk, dv),
        false,
        1.0 / 3f64.sqrt(),
    );
    close(&out[0].to_f64_vec().unwrap(), &want, 1e-12);
    // The final state is Σ_s k_s ⊗ v_s.
    let st = out[1].to_f64_vec().unwrap();
    for h in 0..hk {
        for i in 0..dk {
            for m in 0..dv {
                let want: f64 = (0..tl)
                    .map(|s| k[(s * hk + h) * dk + i] * v[(s * hk + h) * dv + m])
                    .sum();
                assert!((st[(h * dk + i) * dv + m] - want).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn gated_rule_decays_per_head_or_per_key_dim() {
    let (b, tl, hq, hk, dk, dv) = (1, 4, 2, 2, 2, 3);
    let q = data(b * tl * hq * dk, 4);
    let k = data(b * tl * hk * dk, 5);
    let v = data(b * tl * hk * dv, 6);
    for per_dim in [false, true] {
        let gn = if per_dim { hk * dk } else { hk };
        let g: Vec<f64> = data(b * tl * gn, 7).iter().map(|x| x - 0.5).collect();
        let a = Attrs::new()
            .with("q_num_heads", hq)
            .with("kv_num_heads", hk)
            .with("update_rule", "gated")
            .with("scale", 0.5);
        let out = run_all(
            &*la(a),
            &[
                t(&[b, tl, hq * dk], q.clone()),
                t(&[b, tl, hk * dk], k.clone()),
                t(&[b, tl, hk * dv], v.clone()),
                t(&[b, tl, gn], g.clone()),
            ],
        )
        .unwrap();
        let want = closed_form(&q, &k, &v, Some(&g), (b, tl, hq, hk, dk, dv), per_dim, 0.5);
        close(&out[0].to_f64_vec().unwrap(), &want, 1e-12);
    }
}

/// The delta rules step by step in matrix form, one head, from a past
/// state: with a one-hot key the state's row for that key moves to
/// `β·v + (1 − β)·row` (after the decay for gated_delta).
#[test]
fn delta_rules_move_the_keyed_row_towards_the_value() {
    let past = vec![1.0f64, 2.0, 3.0, 4.0]; // [1, 1, 2, 2]
    let q = t(&[1, 1, 2], vec![1.0f64, 0.0]);
    let k = t(&[1, 1, 2], vec![1.0f64, 0.0]);
    let v = t(&[1, 1, 2], vec![10.0f64, 20.0]);
    let beta = t(&[1, 1, 1], vec![0.25f64]);
    let g = t(&[1, 1, 1], vec![2f64.ln()]);
    let base = Attrs::new()
        .with("q_num_heads", 1)
        .with("kv_num_heads", 1)
        .with("scale", 1.0)
        .with("past", true);
    let out = run_all(
        &*la(base.clone().with("update_rule", "delta")),
        &[
            q.clone(),
            k.clone(),
            v.clone(),
            t(&[1, 1, 2, 2], past.clone()),
            beta.clone(),
        ],
    )
    .unwrap();
    // row 0: 1 + 0.25·(10 − 1) = 3.25, 2 + 0.25·(20 − 2) = 6.5; row 1 kept.
    close(&out[1].to_f64_vec().unwrap(), &[3.25, 6.5, 3.0, 4.0], 1e-12);
    close(&out[0].to_f64_vec().unwrap(), &[3.25, 6.5], 1e-12);
    let out = run_all(
        &*la(base.with("update_rule", "gated_delta")),
        &[q, k, v, t(&[1, 1, 2, 2], past), g, beta],
    )
    .unwrap();
    // decayed ×2: [2, 4, 6, 8]; row 0: 2 + 0.25·8 = 4, 4 + 0.25·16 = 8.
    close(&out[1].to_f64_vec().unwrap(), &[4.0, 8.0, 6.0, 8.0], 1e-12);
}

#[test]
fn f16_and_f32_state_keep_their_dtypes() {
    let h = |v: Vec<f32>, s: &[usize]| t(s, v.into_iter().map(half::f16::from_f32).collect());
    let a = Attrs::new()
        .with("q_num_heads", 1)
        .with("kv_num_heads", 1)
        .with("update_rule", "linear")
        .with("scale", 1.0)
        .with("past", true);
    let out = run_all(
        &*la(a),
        &[
            h(vec![1.0, 1.0], &[1, 1, 2]),
            h(vec![1.0, 0.0], &[1, 1, 2]),
            h(vec![2.0], &[1, 1, 1]),
            t(&[1, 1, 2, 1], vec![0.5f32, 0.25]),
        ],
    )
    .unwrap();
    assert_eq!(out[0].dtype(), DType::F16);
    assert_eq!(out[1].dtype(), DType::F32);
    assert_eq!(out[1].to_f64_vec().unwrap(), [2.5, 0.25]);
    assert_eq!(out[0].to_f64_vec().unwrap(), [2.75]);
}

#[test]
fn bad_shapes_attrs_and_inputs_are_errors() {
    let a = Attrs::new()
        .with("q_num_heads", 2)
        .with("kv_num_heads", 2)
        .with("update_rule", "linear");
    let x = || t(&[1, 1, 4], vec![0.0f32; 4]);
    let e = run_all(&*la(a.clone()), &[x(), t(&[1, 1, 6], vec![0.0f32; 6]), x()]).unwrap_err();
    assert_cause!(e, Shape, "key");
    let e = run_all(&*la(a.clone()), &[x(), x()]).unwrap_err();
    assert_cause!(e, Arity);
    // gated_delta (the default) needs decay and beta: 5 inputs.
    let d = Attrs::new().with("q_num_heads", 2).with("kv_num_heads", 2);
    assert_cause!(run_all(&*la(d.clone()), &[x(), x(), x()]).unwrap_err(), Arity);
    let e = run_all(
        &*la(d),
        &[
            x(),
            x(),
            x(),
            t(&[1, 1, 3], vec![0.0f32; 3]),
            t(&[1, 1, 1], vec![0.0f32]),
        ],
    )
    .unwrap_err();
    assert_cause!(e, Shape, "decay");
    let e = OpRegistry::builtin()
        .make(NAME, &Attrs::new().with("q_num_heads", 3).with("kv_num_heads", 2))
        .unwrap_err();
    assert_cause!(e, Attr, "multiple");
    let e = OpRegistry::builtin()
        .make(NAME, &a.with("update_rule", "mamba"))
        .unwrap_err();
    assert_cause!(e, Attr, "update_rule");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// The gated recurrence equals the closed form for any sizes.
    #[test]
    fn gated_matches_the_closed_form(b in 1usize..3, tl in 1usize..5, hk in 1usize..3, group in 1usize..3,
                                     dk in 1usize..4, dv in 1usize..4, seed in 0u64..1000, per_dim: bool) {
        let hq = hk * group;
        let q = data(b * tl * hq * dk, seed);
        let k = data(b * tl * hk * dk, seed + 1);
        let v = data(b * tl * hk * dv, seed + 2);
        let gn = if per_dim { hk * dk } else { hk };
        let g: Vec<f64> = data(b * tl * gn, seed + 3).iter().map(|x| 0.5 * x - 0.3).collect();
        let a = Attrs::new().with("q_num_heads", hq).with("kv_num_heads", hk).with("update_rule", "gated");
        let out = run_all(&*la(a), &[
            t(&[b, tl, hq * dk], q.clone()),
            t(&[b, tl, hk * dk], k.clone()),
            t(&[b, tl, hk * dv], v.clone()),
            t(&[b, tl, gn], g.clone()),
        ]).unwrap();
        let per = per_dim && gn != hk;
        let want = closed_form(&q, &k, &v, Some(&g), (b, tl, hq, hk, dk, dv), per, 1.0 / (dk as f64).sqrt());
        close(&out[0].to_f64_vec().unwrap(), &want, 1e-10);
    }
}

/// Zero-size heads (dk or dv 0) give empty or zero outputs, no panic.
#[test]
fn empty_heads_run() {
    let a = Attrs::new()
        .with("q_num_heads", 1)
        .with("kv_num_heads", 1)
        .with("update_rule", "linear");
    let e = || t(&[1, 1, 0], Vec::<f32>::new());
    let out = run_all(&*la(a.clone()), &[e(), e(), e()]).unwrap();
    assert_eq!(out[0].shape(), [1, 1, 0]);
    assert_eq!(out[1].shape(), [1, 1, 0, 0]);
    // dk 0: empty dot products (the default scale 1/sqrt(0) would make them NaN, as in ONNX).
    let out = run_all(
        &*la(a.with("scale", 1.0)),
        &[e(), e(), t(&[1, 1, 2], vec![1.0f32, 2.0])],
    )
    .unwrap();
    assert_eq!(out[0].to_f64_vec().unwrap(), [0.0, 0.0]);
}
