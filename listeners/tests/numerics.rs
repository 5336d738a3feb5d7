//! The numerics listener's deferred mode and the one-pass health and
//! equality DebugMode feeds it with.

mod common;

use common::{builder, feeds, kinds, run_with};
use proptest::prelude::*;
use vigil_engine::exec::{At, Listener};
use vigil_engine::{parallel, DType, Tensor};
use vigil_listeners::{Health, Kind, NumericsListener, Validator};

fn special(i: usize, x: f32) -> f32 {
    match i % 97 {
        3 => f32::NAN,
        5 => f32::INFINITY,
        7 => f32::NEG_INFINITY,
        11 => 0.0,
        13 => -0.0,
        _ => x,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Health::of_compared gives the same health, bit for bit, as
    /// Health::of, and the equality `compare` gives, on lengths around the
    /// block and part sizes, with and without threads.
    #[test]
    fn health_of_compared_matches_health_of(
        len in prop_oneof![0usize..20, 4090usize..4110, 65530usize..65550, 200_000usize..200_010],
        seed in any::<u32>(),
        flip in proptest::option::of(any::<prop::sample::Index>()),
        wide in any::<bool>(),
        threads in any::<bool>(),
    ) {
        parallel::set_intra_op(threads);
        let v: Vec<f32> = (0..len)
            .map(|i| special(i, ((i as u32).wrapping_mul(2654435761) ^ seed) as f32 * 1e-9 - 2.0))
            .collect();
        let mut w = v.clone();
        if let (Some(k), true) = (flip, len > 0) {
            let k = k.index(len);
            w[k] = if w[k] == 1.5 { 2.5 } else { 1.5 };
        }
        let (got, want) = if wide {
            let f = |x: &Vec<f32>| Tensor::from_vec(&[len], x.iter().map(|&y| y as f64).collect::<Vec<_>>()).unwrap();
            (f(&v), f(&w))
        } else {
            (Tensor::from_vec(&[len], v.clone()).unwrap(), Tensor::from_vec(&[len], w.clone()).unwrap())
        };
        let (h, same) = Health::of_compared(&got, &want).unwrap();
        let alone = Health::of(&got).unwrap();
        prop_assert_eq!(format!("{h:?}"), format!("{alone:?}"));
        let exact = vigil_engine::compare::compare(&got, &want, vigil_engine::compare::Tolerance::EXACT)
            .unwrap()
            .is_exact();
        prop_assert_eq!(same, Some(exact));
        parallel::set_intra_op(true);
    }
}

/// The fused kernel compares bits first; bits that differ but mean the
/// same value (another NaN payload, -0 for 0) are still the same, and a
/// NaN against a number is not.
#[test]
fn other_nan_payloads_and_signed_zeros_compare_same() {
    let n = 4096 + 37;
    let v: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut got = v.clone();
    let mut want = v.clone();
    got[100] = f32::NAN;
    want[100] = f32::from_bits(f32::NAN.to_bits() | 0x1234);
    got[4100] = 0.0;
    want[4100] = -0.0;
    let t = |x: &Vec<f32>| Tensor::from_vec(&[n], x.clone()).unwrap();
    assert_eq!(Health::of_compared(&t(&got), &t(&want)).unwrap().1, Some(true));
    want[4120] = f32::NAN;
    assert_eq!(Health::of_compared(&t(&got), &t(&want)).unwrap().1, Some(false));
}

#[test]
fn different_layouts_leave_the_equality_to_the_caller() {
    let a = Tensor::from_vec(&[2, 3], (0..6).map(|i| i as f32).collect()).unwrap();
    let t = a.t(None).unwrap().to_contiguous().unwrap().t(None).unwrap();
    let (h, same) = Health::of_compared(&t, &a).unwrap();
    assert_eq!(same, None);
    assert_eq!(h, Health::of(&t).unwrap());
    let i = Tensor::from_vec(&[2], vec![1i64, 2]).unwrap();
    assert_eq!(Health::of_compared(&i, &i).unwrap().1, Some(true));
}

#[test]
fn deferred_health_gives_the_same_findings_delivered_or_not() {
    let g = builder("nan");
    let x = g.input("x", DType::F32, &[4]);
    let y = x.log().unwrap().exp().unwrap();
    let graph = g.build(&[&y]).unwrap();
    let f = feeds(&[("x", Tensor::from_vec(&[4], vec![1.0f32, 0.0, -1.0, 2.0]).unwrap())]);
    let mut eager = NumericsListener::new();
    let want = run_with(&graph, &f, &mut eager);
    assert_eq!(kinds(&want), vec![Kind::NON_FINITE], "log of 0 and -1");
    // Not delivered: the listener computes the health itself.
    let mut lazy = NumericsListener::new().deferred();
    let got = run_with(&graph, &f, &mut lazy);
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
    assert_eq!(lazy.all_health(), eager.all_health());
}

#[test]
fn deferred_health_is_taken_as_delivered() {
    let g = builder("deliver");
    let x = g.input("x", DType::F32, &[2]);
    let y = x.exp().unwrap();
    let graph = g.build(&[&y]).unwrap();
    let exec = vigil_engine::Executor::new(&graph).unwrap();
    let f = feeds(&[("x", Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap())]);
    let mut l = NumericsListener::new().deferred();
    let opts = vigil_engine::RunOptions::default();
    let mut c = exec.start(&f, &mut l, &opts).unwrap();
    c.step(&mut l).unwrap();
    assert_eq!(l.awaiting().len(), 1);
    // Whatever the caller delivers is what the listener records: here a
    // health that says NaN, so the op is blamed.
    let nan = Tensor::from_vec(&[2], vec![f32::NAN, 1.0]).unwrap();
    l.deliver(vec![Health::of(&nan).unwrap()]);
    assert!(l.awaiting().is_empty());
    c.finish(&mut l).unwrap();
    l.operation_end(&At::default(), &graph);
    assert_eq!(kinds(&l.take_findings()), vec![Kind::NON_FINITE]);
}

#[test]
fn views_of_finite_buffers_count_as_finite_and_views_around_a_nan_are_looked_at() {
    use vigil_engine::IndexSpec;
    // x holds a NaN at [0]; `tail` = x[1:] is finite. log(-tail) makes NaN
    // from finite inputs: blamed. exp(x) only carries x's NaN: not blamed.
    // A transposed view of the finite output `sq` feeds a log of negatives:
    // blamed too, its input known finite from `sq`'s own health.
    let g = builder("views");
    let x = g.input("x", DType::F32, &[4]);
    let tail = x
        .view(&[IndexSpec::Interval {
            start: 1,
            end: 4,
            stride: 1,
            inclusive: false,
        }])
        .unwrap();
    let made = tail.neg().unwrap().log().unwrap();
    let carried = x.exp().unwrap();
    let m = g.input("m", DType::F32, &[2, 3]);
    let sq = m.mul(&m).unwrap();
    let t = sq.transpose(None).unwrap().neg().unwrap().log().unwrap();
    let graph = g.build(&[&made, &carried, &t]).unwrap();
    let f = feeds(&[
        (
            "x",
            Tensor::from_vec(&[4], vec![f32::NAN, 1.0, 2.0, 3.0]).unwrap(),
        ),
        (
            "m",
            Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap(),
        ),
    ]);
    let mut l = NumericsListener::new();
    let found = run_with(&graph, &f, &mut l);
    let blamed: Vec<&str> = found.iter().map(|f| f.op.as_str()).collect();
    assert_eq!(blamed, vec!["log", "log"], "{found:#?}");
    let health = l.all_health();
    let carried_node = health.values().find(|h| h.op == "exp").unwrap();
    assert!(carried_node.propagated && !carried_node.created_non_finite);
    assert!(health
        .values()
        .filter(|h| h.op == "log")
        .all(|h| h.created_non_finite && h.inputs_finite));
}

/// Validate mode's listeners all watch sweeps, so an in-place chain still
/// sweeps under them, and they find what they find node by node: the op
/// that makes NaN (with its first bad element), the same health counts,
/// nothing else.
#[test]
fn a_swept_chain_gets_the_findings_and_health_of_a_node_by_node_run() {
    use vigil_engine::exec::{Executor, RunOptions};
    use vigil_listeners::{
        ListenerSet, NonInplaceValidationListener, ProfilingListener, ViewMapValidationListener,
    };
    let g = builder("swept");
    let x = g.input("x", DType::F32, &[3, 50, 40]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![0.5f32]).unwrap());
    let y = x.mul(&c).unwrap().tanh().unwrap().add(&x).unwrap();
    let y = y.log().unwrap().exp().unwrap().sqrt().unwrap();
    let graph = vigil_engine::inplace::run(&g.build(&[&y]).unwrap())
        .unwrap()
        .graph;
    let n = 3 * 50 * 40;
    let xs: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 / 50.0 - 0.4).collect();
    let f = feeds(&[("x", Tensor::from_vec(&[3, 50, 40], xs).unwrap())]);
    let exec = Executor::new(&graph).unwrap();
    let run = |opts: &RunOptions| {
        let mut set = ListenerSet::new()
            .with(NonInplaceValidationListener::new())
            .with(ViewMapValidationListener::new())
            .with(NumericsListener::new())
            .with_listener(ProfilingListener::new());
        let out = exec.run_with(&f, &mut set, opts).unwrap();
        let findings = set.take_findings();
        let health = set.get::<NumericsListener>().unwrap().all_health().clone();
        let swept = set
            .get::<NonInplaceValidationListener>()
            .unwrap()
            .stats()
            .ops_swept;
        let spans = set.get::<ProfilingListener>().unwrap().spans().len();
        (out, findings, health, swept, spans)
    };
    let (a, fa, ha, swept, spans) = run(&RunOptions::default());
    let stepped = RunOptions {
        node_by_node: true,
        ..RunOptions::default()
    };
    let (b, fb, hb, _, _) = run(&stepped);
    // `x * c`, pure (x is read later), starts a sweep that writes a fresh
    // buffer; tanh, add, log, exp and sqrt run in place on it.
    assert_eq!((a.stats.fused, b.stats.fused, swept, spans), (6, 0, 6, 6));
    assert_eq!(kinds(&fa), vec![Kind::NON_FINITE], "{fa:?}");
    let (one, two) = (&fa[0], &fb[0]);
    assert_eq!((&one.node, &one.message), (&two.node, &two.message));
    assert!(one.message.contains("the first at"), "{}", one.message);
    assert_eq!(kinds(&fb), kinds(&fa));
    assert_eq!(ha.len(), hb.len());
    for (node, h) in &hb {
        let s = &ha[node];
        assert_eq!(
            (s.inputs_finite, s.created_non_finite, s.propagated),
            (h.inputs_finite, h.created_non_finite, h.propagated),
            "{node}"
        );
        let (p, q) = (&s.outputs[0], &h.outputs[0]);
        assert_eq!(
            (p.nan, p.neg_inf, p.pos_inf, p.negative, p.zero, p.positive),
            (q.nan, q.neg_inf, q.pos_inf, q.negative, q.zero, q.positive),
            "{node}"
        );
        assert_eq!((p.min, p.max), (q.min, q.max), "{node}");
        let (m, w) = (p.mean.unwrap_or(0.0), q.mean.unwrap_or(0.0));
        assert!(
            (m - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{node}: mean {m} vs {w}"
        );
    }
}
