//! The non-in-place listener: cost rule (cheap vs thorough), hash reuse,
//! replay in Copy mode, exemptions.

mod common;

use std::sync::Arc;

use common::*;
use vigil_engine::error::op_err;
use vigil_engine::exec::Executor;
use vigil_engine::graph::Graph;
use vigil_engine::ops::{Arity, Op, OpCtx, TypeInfo};
use vigil_engine::{DType, Element, IndexSpec, Result, Tensor};
use vigil_listeners::{
    replay_in_copy_mode, Kind, Mode, NonInplaceConfig, NonInplaceValidationListener, Snapshot,
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
    assert_eq!(kinds(&run_with(&g, &f, &mut l)), vec![Kind::OUT_OF_VIEW_WRITE]);
    assert_eq!((l.stats().outside_checked, l.stats().outside_skipped), (1, 0));

    // 9 elements > 4 x 2: the outside is not hashed, the write goes unseen.
    let (g, f) = increment_on_slice(9);
    let mut l = NonInplaceValidationListener::new();
    assert!(run_with(&g, &f, &mut l).is_empty());
    assert_eq!((l.stats().outside_checked, l.stats().outside_skipped), (0, 1));
    assert_eq!(
        l.stats().bytes_hashed,
        2 * 2 * 4,
        "only the view, before and after"
    );

    // K = 5 admits it again.
    let mut l = NonInplaceValidationListener::new().outside_factor(5);
    assert_eq!(kinds(&run_with(&g, &f, &mut l)), vec![Kind::OUT_OF_VIEW_WRITE]);
}

#[test]
fn thorough_mode_checks_the_outside_of_a_small_view_of_a_huge_buffer() {
    let (g, f) = increment_on_slice(1 << 16);
    let mut cheap = NonInplaceValidationListener::new();
    assert!(run_with(&g, &f, &mut cheap).is_empty());
    let mut thorough = NonInplaceValidationListener::new().thorough(true);
    let found = run_with(&g, &f, &mut thorough);
    assert_eq!(kinds(&found), vec![Kind::OUT_OF_VIEW_WRITE]);
    assert_eq!(found[0].details["view_changed"], true);
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
    assert!(d["view_hash_before"].is_string());
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
    let mut l = NonInplaceValidationListener::new();
    assert!(run_with(&graph, &feeds(&[("x", ramp(&[3, 4]))]), &mut l).is_empty());
    assert_eq!(
        (l.stats().ops_exempt, l.stats().ops_checked, l.stats().failed),
        (1, 2, 0)
    );
}

#[test]
fn copy_mode_reports_the_out_of_view_write_by_buffer_offset() {
    let (g, f) = increment_on_slice(8);
    let mut l = NonInplaceValidationListener::with_config(NonInplaceConfig {
        mode: Mode::Copy,
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
