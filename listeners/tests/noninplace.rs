//! The non-in-place listener: cost rule (cheap vs thorough), guard bands,
//! hash reuse, replay in Copy mode, exemptions.

mod common;

use std::sync::Arc;

use common::*;
use vigil_engine::error::op_err;
use vigil_engine::exec::Executor;
use vigil_engine::graph::Graph;
use vigil_engine::ops::{Arity, Op, OpCtx, TypeInfo};
use vigil_engine::{DType, Element, IndexSpec, Result, Tensor};
use vigil_listeners::{
    replay_in_copy_mode, Kind, NonInplaceConfig, NonInplaceValidationListener, Remember, Snapshot,
};

/// `broken_increment` on `x[2:4]` of a buffer of `n` elements: it writes
/// `x[4]`, outside the 2-element view.
fn increment_on_slice(n: usize) -> (Graph, Feeds) {
    let g = builder("slice");
    let x = g.mutable_input("x", DType::F32, &[n as i64]);
    let v = x.view(&[IndexSpec::range(2, 4, 1)]).unwrap();
    let y = v.op("broken_increment", &[], Default::default()).unwrap();
    (g.build(&[&y]).unwrap(), feeds(&[("x", ramp(&[n]))]))
}

#[test]
fn cheap_mode_checks_the_outside_only_when_the_buffer_is_at_most_k_views() {
    // 8 elements <= 4 x 2: checked and caught.
    let (g, f) = increment_on_slice(8);
    let mut l = NonInplaceValidationListener::new();
    let found = run_with(&g, &f, &mut l);
    assert_eq!(kinds(&found), vec![Kind::OUT_OF_VIEW_WRITE]);
    assert!(
        found[0]
            .message
            .contains("input 0 ('create_view_2', a view of 'x')"),
        "names the user's variable: {}",
        found[0].message
    );
    assert_eq!((l.stats().outside_checked, l.stats().guard_checked), (1, 0));

    // 9 elements > 4 x 2: only the guard band is hashed (the view x[2:4]
    // is one run of 2, so 2 elements on each side: x[0:2] and x[4:6]),
    // and the write into x[4] lands there.
    let (g, f) = increment_on_slice(9);
    let mut l = NonInplaceValidationListener::new();
    assert_eq!(kinds(&run_with(&g, &f, &mut l)), vec![Kind::OUT_OF_VIEW_WRITE]);
    assert_eq!((l.stats().outside_checked, l.stats().guard_checked), (0, 1));
    assert_eq!(
        l.stats().bytes_hashed,
        2 * 4 * 4,
        "its band of 4, before and after; the view is declared destroyed, so not hashed"
    );

    // K = 5 admits the whole outside (7 elements) again.
    let mut l = NonInplaceValidationListener::new().outside_factor(5);
    assert_eq!(kinds(&run_with(&g, &f, &mut l)), vec![Kind::OUT_OF_VIEW_WRITE]);
    assert_eq!((l.stats().outside_checked, l.stats().guard_checked), (1, 0));
    assert_eq!(l.stats().bytes_hashed, 2 * 7 * 4);
}

/// Writes `x[at]` of the buffer of its input (an absolute offset), after
/// declaring it destroys the input: a store outside the view is the only
/// possible finding.
struct Poke {
    at: usize,
}

impl Op for Poke {
    fn name(&self) -> &str {
        "poke"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let one = x.with_layout(vigil_engine::Layout::new(vec![1], vec![1], self.at))?;
        let old = one.at(&[0])?.to_f64();
        one.set_at(&[0], vigil_engine::Scalar::F32(old as f32 + 1.0))?;
        Ok(vec![x.clone()])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
}

/// Runs `poke` at buffer offset `at` on `view` fed as a mutable input.
fn poke(view: &Tensor, at: usize, l: &mut NonInplaceValidationListener) -> Vec<vigil_listeners::Finding> {
    let mut r = vigil_listeners::broken::registry();
    r.register_op(Arc::new(Poke { at }));
    let g = vigil_engine::GraphBuilder::with_registry("poke", r);
    let dims: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
    let x = g.mutable_input("x", DType::F32, &dims);
    let y = x.op("poke", &[], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    run_with(&graph, &feeds(&[("x", view.clone())]), l)
}

#[test]
fn a_store_far_from_a_small_view_needs_thorough() {
    let x = ramp(&[1 << 16]);
    let view = x.slice(&[IndexSpec::range(2, 4, 1)]).unwrap();
    // Next to the view: the guard band sees it; far away: only thorough.
    assert_eq!(
        kinds(&poke(&view, 4, &mut NonInplaceValidationListener::new())),
        vec![Kind::OUT_OF_VIEW_WRITE]
    );
    let mut cheap = NonInplaceValidationListener::new();
    assert!(poke(&view, 60_000, &mut cheap).is_empty());
    let mut thorough = NonInplaceValidationListener::new().thorough(true);
    assert_eq!(
        kinds(&poke(&view, 60_000, &mut thorough)),
        vec![Kind::OUT_OF_VIEW_WRITE]
    );
    assert!(thorough.stats().bytes_hashed > 100 * cheap.stats().bytes_hashed);
}

#[test]
fn off_by_one_row_store_on_a_large_base_names_the_element_and_its_row() {
    let g = builder("row");
    let x = g.input("x", DType::F32, &[100, 64]);
    let row = x.view(&[IndexSpec::Point(0)]).unwrap();
    let s = row.op("broken_row_sum", &[], Default::default()).unwrap();
    let graph = g.build(&[&s]).unwrap();
    let base = Tensor::from_vec(&[100, 64], (0..6400).map(|i| i as f32).collect()).unwrap();
    let f = feeds(&[("x", base)]);
    let mut l = NonInplaceValidationListener::new();
    l.replay_from(&graph, &f).unwrap();
    let found = run_with(&graph, &f, &mut l);
    assert_eq!(kinds(&found), vec![Kind::OUT_OF_VIEW_WRITE]);
    // With a replay at hand nothing is hashed: the buffer's version moved,
    // and the replay in Copy mode found where.
    assert_eq!(l.stats().inputs_deferred, 1);
    assert_eq!(l.stats().deferred_replayed, 1);
    assert_eq!(l.stats().bytes_hashed, 0);
    let d = &found[0].details;
    assert_eq!(d["detected_by"], "version");
    assert_eq!(d["replay"]["outside"]["part"], "guard_band");
    assert_eq!(d["replay"]["guard_band"], 64, "one row on each side");
    let first = &d["replay"]["outside"]["first_changed"];
    assert_eq!(first["offset"], 64);
    assert_eq!(first["old"], 64.0);
    assert_eq!(first["new"], 2016.0, "the row's sum, 0 + 1 + ... + 63");
    assert_eq!(first["where"], "1 element past the end of the view");
    assert_eq!(first["base_index"], serde_json::json!([1, 0]));
    let m = &found[0].message;
    assert!(
        m.contains("buffer element 64, 1 element past the end of the view, at x[1, 0] (row 1), went from 64.0 to 2016.0"),
        "{m}"
    );
}

#[test]
fn thorough_mode_checks_the_outside_of_a_small_view_of_a_huge_buffer() {
    let (g, f) = increment_on_slice(1 << 16);
    let mut cheap = NonInplaceValidationListener::new();
    let found = run_with(&g, &f, &mut cheap);
    assert_eq!(kinds(&found), vec![Kind::OUT_OF_VIEW_WRITE], "in the guard band");
    assert_eq!(found[0].details["outside_checked"], false);
    let mut thorough = NonInplaceValidationListener::new().thorough(true);
    let found = run_with(&g, &f, &mut thorough);
    assert_eq!(kinds(&found), vec![Kind::OUT_OF_VIEW_WRITE]);
    assert!(
        found[0].details["view_changed"].is_null(),
        "a declared destroyed view is not hashed"
    );
    assert_eq!(found[0].details["outside_checked"], true);
    assert!(thorough.stats().bytes_hashed > 100 * cheap.stats().bytes_hashed);
}

/// A graph where `x` is read by several ops: its hashes can be reused.
fn fan_out() -> (Graph, Feeds) {
    let g = builder("fan_out");
    let x = g.input("x", DType::F32, &[64, 64]);
    let a = x.exp().unwrap();
    let b = x.tanh().unwrap();
    let c = x.neg().unwrap();
    let s = a.add(&b).unwrap().add(&c).unwrap().mul(&x).unwrap();
    (g.build(&[&s]).unwrap(), feeds(&[("x", ramp(&[64, 64]))]))
}

#[test]
fn hashes_are_reused_while_buffer_version_and_layout_are_unchanged() {
    let (g, f) = fan_out();
    let mut on = NonInplaceValidationListener::new();
    let mut off = NonInplaceValidationListener::new().reuse(false);
    assert!(run_with(&g, &f, &mut on).is_empty());
    assert!(run_with(&g, &f, &mut off).is_empty());
    let (on, off) = (on.stats(), off.stats());
    assert_eq!(on.ops_checked, 6);
    assert_eq!(off.hashes_reused, 0);
    // Without reuse: every input is hashed before and after its op (each
    // view covers its buffer, so there is no outside to hash).
    assert_eq!(off.hashes_computed, 2 * on.inputs_checked);
    // With reuse: each (buffer, version, layout) part is hashed once.
    assert!(on.hashes_reused > 0);
    assert_eq!(on.hashes_computed + on.hashes_reused, off.hashes_computed);
    assert_eq!(on.bytes_hashed + on.bytes_not_rehashed, off.bytes_hashed);
    // x (16 KiB) is read by 4 ops, the 3 intermediates and the two partial
    // sums by one each: 6 distinct values, each hashed once.
    assert_eq!(on.hashes_computed, 6);
    assert_eq!(on.bytes_hashed * 3, off.bytes_hashed);
}

#[test]
fn reuse_does_not_hide_writes_that_bump_the_version() {
    let g = builder("inplace");
    let x = g.mutable_input("x", DType::F32, &[8]);
    let y = g.input("y", DType::F32, &[8]);
    let a = x.exp().unwrap(); // reads x: its hash gets cached
    let b = a.add_inplace(&y).unwrap();
    let c = b.op("broken_accumulate", &[&y], Default::default()).unwrap();
    let graph = g.build(&[&c]).unwrap();
    let f = feeds(&[("x", ramp(&[8])), ("y", ramp(&[8]))]);
    let mut l = NonInplaceValidationListener::new();
    let found = run_with(&graph, &f, &mut l);
    assert_eq!(kinds(&found), vec![Kind::DESTROYED_INPUT]);
    assert_eq!(found[0].node, "broken_accumulate_3");
}

/// Zeroes element 0 of its input through `Buffer::borrow_mut`, the lowest
/// level write there is; it bumps the version too.
struct SneakyZero;

impl Op for SneakyZero {
    fn name(&self) -> &str {
        "sneaky_zero"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let Some(buf) = <f32 as Element>::buffer(inputs[0].storage()) else {
            return op_err("f32 only");
        };
        buf.borrow_mut()?[0] = 0.0;
        inputs[0].deep_copy().map(|t| vec![t])
    }
}

#[test]
fn raw_buffer_writes_are_seen_with_and_without_hash_reuse() {
    let mut r = vigil_listeners::broken::registry();
    r.register_op(Arc::new(SneakyZero));
    let g = vigil_engine::GraphBuilder::with_registry("sneaky", r);
    let x = g.input("x", DType::F32, &[4]);
    let y = x.op("sneaky_zero", &[], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let run = |reuse: bool| {
        let f = feeds(&[("x", f32s(&[4], &[1.0, 2.0, 3.0, 4.0]))]);
        run_with(&graph, &f, &mut NonInplaceValidationListener::new().reuse(reuse))
    };
    assert_eq!(kinds(&run(true)), vec![Kind::DESTROYED_INPUT]);
    assert_eq!(kinds(&run(false)), vec![Kind::DESTROYED_INPUT]);
}

#[test]
fn with_a_replay_at_hand_inputs_are_judged_by_version_and_replay_not_hashed() {
    let mut r = vigil_listeners::broken::registry();
    r.register_op(Arc::new(SneakyZero));
    let g = vigil_engine::GraphBuilder::with_registry("deferred", r);
    let x = g.input("x", DType::F32, &[4]);
    let e = x.exp().unwrap();
    let y = x.op("sneaky_zero", &[], Default::default()).unwrap();
    let graph = g.build(&[&y, &e]).unwrap();
    let run = |x0: f32, replay: bool| {
        let f = feeds(&[("x", f32s(&[4], &[x0, 2.0, 3.0, 4.0]))]);
        let mut l = NonInplaceValidationListener::new();
        if replay {
            l.replay_from(&graph, &f).unwrap();
        }
        let found = run_with(&graph, &f, &mut l);
        (found, l.stats().clone())
    };
    // Eager: every input hashed before and after.
    let (found, eager) = run(1.0, false);
    assert_eq!(kinds(&found), vec![Kind::DESTROYED_INPUT]);
    assert!(eager.bytes_hashed > 0);
    assert_eq!(eager.inputs_deferred, 0);
    // Deferred: nothing hashed; the write moved the version, the replay
    // says what changed.
    let (found, deferred) = run(1.0, true);
    assert_eq!(kinds(&found), vec![Kind::DESTROYED_INPUT]);
    assert_eq!(
        (
            deferred.bytes_hashed,
            deferred.inputs_deferred,
            deferred.deferred_replayed
        ),
        (0, 2, 1)
    );
    assert_eq!(
        (deferred.passed, deferred.failed),
        (1, 1),
        "the confirmed op counts as failed once"
    );
    assert!(
        found[0]
            .message
            .contains("1 of 4 elements changed, first at [0]: 1.0 → 0.0"),
        "{}",
        found[0].message
    );
    assert_eq!(found[0].details["replay"]["view"]["changed"], 1);
    // Writing the value it already held changes nothing, but the op still
    // borrowed an input it declares pure for writing: scratch_write, found
    // by the replay and by hashing alike.
    let (found, deferred) = run(0.0, true);
    assert_eq!(kinds(&found), vec![Kind::SCRATCH_WRITE], "{found:#?}");
    assert_eq!(found[0].input, Some(0));
    assert!(found[0].message.contains("destroy_map"), "{}", found[0].message);
    assert_eq!(deferred.deferred_replayed, 1);
    assert_eq!((deferred.passed, deferred.failed), (1, 1));
    assert_eq!(kinds(&run(0.0, false).0), vec![Kind::SCRATCH_WRITE]);
}

#[test]
fn hash_mode_findings_carry_the_copy_mode_diff_by_replay() {
    let g = builder("replay");
    let a = g.input("a", DType::F32, &[4]);
    let b = g.input("b", DType::F32, &[4]);
    let c = a.exp().unwrap();
    let y = a.op("broken_accumulate", &[&b], Default::default()).unwrap();
    let graph = g.build(&[&y, &c]).unwrap();
    let f = feeds(&[
        ("a", f32s(&[4], &[1.0, 2.0, 3.0, 4.0])),
        ("b", f32s(&[4], &[0.0, 10.0, 0.0, 0.0])),
    ]);

    // Automatic: snapshot before the run, replay when it ends.
    let mut l = NonInplaceValidationListener::new();
    l.replay_from(&graph, &f).unwrap();
    let found = run_with(&graph, &f, &mut l);
    assert_eq!(kinds(&found), vec![Kind::DESTROYED_INPUT]);
    let d = &found[0].details;
    assert_eq!(d["mode"], "hash");
    assert_eq!(d["detected_by"], "version", "deferred: nothing was hashed");
    let replay = &d["replay"];
    assert_eq!(replay["mode"], "copy");
    assert_eq!(replay["view"]["changed"], 1);
    assert_eq!(replay["view"]["first"][0]["flat"], 1);
    assert_eq!(
        replay["view"]["first"][0]["old"], 2.0,
        "the replay saw the pristine feed"
    );
    assert_eq!(replay["view"]["first"][0]["new"], 12.0);
    // The run itself destroyed the caller's feed.
    assert_eq!(f["a"].to_f64_vec().unwrap(), vec![1.0, 12.0, 3.0, 4.0]);

    // By hand: replay a snapshot; the snapshot stays pristine.
    let fresh = feeds(&[
        ("a", f32s(&[4], &[1.0, 2.0, 3.0, 4.0])),
        ("b", f32s(&[4], &[0.0, 10.0, 0.0, 0.0])),
    ]);
    let snap = Snapshot::take(&graph, &fresh).unwrap();
    let exec = Executor::new(snap.graph()).unwrap();
    let pos = exec
        .order()
        .iter()
        .position(|&n| snap.graph().node(n).op.name() == "broken_accumulate")
        .unwrap();
    for _ in 0..2 {
        let r = replay_in_copy_mode(snap.graph(), snap.feeds(), pos, &NonInplaceConfig::default()).unwrap();
        assert_eq!(kinds(&r), vec![Kind::DESTROYED_INPUT]);
        assert_eq!(r[0].details["view"]["first"][0]["old"], 2.0);
    }
    assert_eq!(snap.feeds()["a"].to_f64_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    assert!(replay_in_copy_mode(snap.graph(), snap.feeds(), 99, &NonInplaceConfig::default()).is_err());
}

#[test]
fn exempt_ops_and_declared_destroyers_are_not_blamed() {
    let g = builder("exempt");
    let a = g.mutable_input("a", DType::F32, &[4]);
    let b = g.input("b", DType::F32, &[4]);
    let y = a.op("broken_accumulate", &[&b], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let f = || feeds(&[("a", ramp(&[4])), ("b", ramp(&[4]))]);
    let mut l = NonInplaceValidationListener::new().exempt_op("broken_accumulate");
    assert!(run_with(&graph, &f(), &mut l).is_empty());
    assert_eq!((l.stats().ops_exempt, l.stats().ops_checked), (1, 0));

    // create_view is exempt by design; add_inplace declares its destroy.
    let g = builder("declared");
    let x = g.mutable_input("x", DType::F32, &[3, 4]);
    let row = x.view(&[IndexSpec::Point(1)]).unwrap();
    let z = row.add_inplace(&row).unwrap().relu_inplace().unwrap();
    let graph = g.build(&[&z]).unwrap();
    // Node by node: run as usual, add and relu would be one sweep, which is
    // counted, not hashed.
    for (stepped, checked, swept) in [(true, 2, 0), (false, 0, 2)] {
        let mut l = NonInplaceValidationListener::new();
        let opts = vigil_engine::exec::RunOptions {
            node_by_node: stepped,
            ..Default::default()
        };
        vigil_engine::Executor::new(&graph)
            .unwrap()
            .run_with(&feeds(&[("x", ramp(&[3, 4]))]), &mut l, &opts)
            .unwrap();
        assert!(vigil_listeners::Validator::take_findings(&mut l).is_empty());
        let s = l.stats();
        assert_eq!(
            (s.ops_exempt, s.ops_checked, s.ops_swept, s.failed),
            (1, checked, swept, 0)
        );
    }
}

#[test]
fn copy_mode_reports_the_out_of_view_write_by_buffer_offset() {
    let (g, f) = increment_on_slice(8);
    let mut l = NonInplaceValidationListener::with_config(NonInplaceConfig {
        mode: Remember::Copy,
        ..Default::default()
    });
    let found = run_with(&g, &f, &mut l);
    assert_eq!(kinds(&found), vec![Kind::OUT_OF_VIEW_WRITE]);
    let out = &found[0].details["outside"];
    assert_eq!(out["changed"], 1);
    assert_eq!(out["first"][0]["offset"], 4);
    assert_eq!(out["first"][0]["old"], 0.0);
    assert_eq!(out["first"][0]["new"], 1.0);
    assert!(l.stats().bytes_copied > 0 && l.stats().bytes_hashed == 0);
}

mod guard_band {
    //! Random views of random buffers (up to 1,000 times the view): a
    //! store anywhere in the guard band is reported, a store inside the
    //! view never is.

    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use vigil_engine::Layout;

    /// A random strided layout and a buffer 1 to 1,000 times its span.
    fn view() -> impl Strategy<Value = (Layout, usize)> {
        (1usize..=3)
            .prop_flat_map(|rank| {
                (
                    proptest::collection::vec(1usize..=5, rank),
                    proptest::collection::vec(1isize..=4, rank),
                    proptest::collection::vec(any::<bool>(), rank),
                    1usize..=1000,
                    any::<u32>(),
                )
            })
            .prop_map(|(shape, mut strides, flip, times, pick)| {
                // C-ordered strides, each axis at least as wide as the next
                // (a strided view of a larger array), some reversed.
                let mut inner = 1isize;
                for (k, s) in strides.iter_mut().enumerate().rev() {
                    *s *= inner;
                    inner = *s * shape[k] as isize;
                }
                let (mut neg, mut pos) = (0usize, 0usize);
                for ((&d, s), &f) in shape.iter().zip(strides.iter_mut()).zip(&flip) {
                    if f {
                        *s = -*s;
                        neg += (d - 1) * s.unsigned_abs();
                    } else {
                        pos += (d - 1) * s.unsigned_abs();
                    }
                }
                let span = neg + pos + 1;
                let elems: usize = shape.iter().product();
                let n = (elems * times).max(span);
                let offset = neg + pick as usize % (n - span + 1);
                (Layout::new(shape, strides, offset), n)
            })
    }

    /// The guard band as the rule guarantees at least: the gaps inside
    /// the span, and on each side the longer of the innermost axis' extent
    /// and the largest stride (at most 16 KiB of f32). (Merging contiguous
    /// axes only widens the real band.)
    fn band_of(l: &Layout, n: usize) -> Vec<usize> {
        let own: BTreeSet<usize> = l.offsets().collect();
        let (lo, hi) = (*own.first().unwrap(), *own.last().unwrap());
        let kept: Vec<(usize, usize)> = l
            .shape()
            .iter()
            .zip(l.strides())
            .filter(|(&d, &s)| d > 1 && s != 0)
            .map(|(&d, &s)| (d, s.unsigned_abs()))
            .collect();
        let run = kept.last().map_or(1, |&(d, s)| d * s);
        let largest = kept.iter().map(|&(_, s)| s).max().unwrap_or(1);
        let b = run.max(largest).clamp(1, 4096);
        (lo.saturating_sub(b)..(hi + 1 + b).min(n))
            .filter(|o| !own.contains(o))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        #[test]
        fn stores_in_the_guard_band_are_reported_and_stores_inside_never(
            (layout, n) in view(),
            pick in any::<u32>(),
        ) {
            let buffer = Tensor::from_vec(&[n], (0..n).map(|i| i as f32).collect()).unwrap();
            let view = buffer.with_layout(layout.clone()).unwrap();
            let band = band_of(&layout, n);
            if !band.is_empty() {
                let at = band[pick as usize % band.len()];
                let found = poke(&view, at, &mut NonInplaceValidationListener::new());
                prop_assert_eq!(kinds(&found), vec![Kind::OUT_OF_VIEW_WRITE], "{:?} n={} at={}", layout, n, at);
            }
            let own: Vec<usize> = layout.offsets().collect();
            let at = own[pick as usize % own.len()];
            let found = poke(&view, at, &mut NonInplaceValidationListener::new());
            prop_assert!(found.is_empty(), "{:?} n={} at={}: {:?}", layout, n, at, found);
        }
    }
}

#[test]
fn a_destroyed_input_says_how_many_elements_changed_and_the_first() {
    let g = builder("acc");
    let a = g.mutable_input("a", DType::F32, &[2, 2]);
    let b = g.input("b", DType::F32, &[2, 2]);
    let y = a.op("broken_accumulate", &[&b], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let f = feeds(&[("a", ramp(&[2, 2])), ("b", ramp(&[2, 2]))]);
    // Copy mode directly, and Hash mode through its replay.
    let mut copy = NonInplaceValidationListener::new().mode(vigil_listeners::Remember::Copy);
    let mut hash = NonInplaceValidationListener::new();
    hash.replay_from(&graph, &f).unwrap();
    for l in [&mut copy, &mut hash] {
        let found = run_with(&graph, &f, l);
        assert_eq!(kinds(&found), vec![Kind::DESTROYED_INPUT]);
        assert!(
            found[0]
                .message
                .ends_with("changed, but the op's destroy_map does not declare it: 4 of 4 elements changed, first at [0, 0]: -1.0 → -2.0"),
            "{}",
            found[0].message
        );
    }
}
