//! Outputs that reuse a buffer something else still holds: within a run
//! (a live value) and across runs (an output an earlier run returned).

mod common;

use common::*;
use vigil_engine::exec::{Executor, RunOptions};
use vigil_engine::graph::Graph;
use vigil_engine::DType;
use vigil_listeners::{Kind, Validator, ViewMapValidationListener};

/// `a = op(x); b = op(y); s = a + b`.
/// Returns the graph, feeds and the names of `a` and `b`.
fn two_calls(op: &str) -> (Graph, Feeds, String, String) {
    let g = builder("two_calls");
    let x = g.input("x", DType::F32, &[4]);
    let y = g.input("y", DType::F32, &[4]);
    let a = g
        .apply_named("make_a", op, &[&x], Default::default())
        .unwrap()
        .remove(0);
    let b = g
        .apply_named("make_b", op, &[&y], Default::default())
        .unwrap()
        .remove(0);
    let s = a.add(&b).unwrap();
    let (an, bn) = (a.name().to_string(), b.name().to_string());
    (
        g.build(&[&s]).unwrap(),
        feeds(&[
            ("x", f32s(&[4], &[1.0, 2.0, 3.0, 4.0])),
            ("y", f32s(&[4], &[10.0, 20.0, 30.0, 40.0])),
        ]),
        an,
        bn,
    )
}

#[test]
fn a_kept_workspace_overwriting_a_live_result_is_undeclared_alias() {
    let (g, f, a, b) = two_calls("broken_cached_double");
    let mut set = standard_set();
    let out = Executor::new(&g)
        .unwrap()
        .run_with(&f, &mut set, &RunOptions::default())
        .unwrap();
    // The bug is real: a was overwritten by b, so s = 2·(2y).
    assert_eq!(
        out.outputs[0].1.to_f64_vec().unwrap(),
        vec![40.0, 80.0, 120.0, 160.0]
    );
    let found = set.take_findings();
    assert_eq!(kinds(&found), vec![Kind::UNDECLARED_ALIAS], "{found:#?}");
    let d = &found[0].details;
    assert_eq!(found[0].op, "broken_cached_double");
    assert_eq!(found[0].node, "make_b");
    assert_eq!(d["output_var"], b.as_str());
    assert_eq!(d["other_var"], a.as_str());
    assert_eq!(d["other_node"], "make_a");
    assert_eq!(d["overlap"], serde_json::json!({ "first": 0, "last": 3 }));
    assert_eq!(d["across_runs"], false);
    assert!(
        found[0].message.contains("buffer elements 0..=3"),
        "{}",
        found[0].message
    );
}

#[test]
fn the_twin_with_a_fresh_output_is_quiet() {
    let (g, f, _, _) = two_calls("fixed_cached_double");
    let mut set = standard_set();
    let out = Executor::new(&g)
        .unwrap()
        .run_with(&f, &mut set, &RunOptions::default())
        .unwrap();
    assert_eq!(
        out.outputs[0].1.to_f64_vec().unwrap(),
        vec![22.0, 44.0, 66.0, 88.0]
    );
    assert!(set.take_findings().is_empty());
}

/// `a = op(x)`, `a` returned.
fn one_call(op: &str) -> (Graph, Feeds) {
    let g = builder("one_call");
    let x = g.input("x", DType::F32, &[4]);
    let a = x.op(op, &[], Default::default()).unwrap();
    (
        g.build(&[&a]).unwrap(),
        feeds(&[("x", f32s(&[4], &[1.0, 2.0, 3.0, 4.0]))]),
    )
}

#[test]
fn a_second_run_overwriting_the_first_runs_output_is_undeclared_alias() {
    let (g, f) = one_call("broken_cached_double");
    let exec = Executor::new(&g).unwrap();
    let mut l = ViewMapValidationListener::new();
    let first = exec.run_with(&f, &mut l, &RunOptions::default()).unwrap();
    assert!(
        l.take_findings().is_empty(),
        "one call per run: nothing live to clash with"
    );
    let f2 = feeds(&[("x", f32s(&[4], &[5.0, 6.0, 7.0, 8.0]))]);
    let second = exec.run_with(&f2, &mut l, &RunOptions::default()).unwrap();
    // The caller's first result changed under it.
    assert_eq!(
        first.outputs[0].1.to_f64_vec().unwrap(),
        second.outputs[0].1.to_f64_vec().unwrap()
    );
    let found = l.take_findings();
    assert_eq!(kinds(&found), vec![Kind::UNDECLARED_ALIAS], "{found:#?}");
    let d = &found[0].details;
    assert_eq!(d["across_runs"], true);
    assert_eq!((d["other_run"].as_u64(), d["run"].as_u64()), (Some(1), Some(2)));
    assert_eq!(d["other_var"], g.var(g.outputs()[0]).name.as_str());
}

#[test]
fn repeated_runs_of_correct_ops_and_outputs_fed_back_are_quiet() {
    let (g, f) = one_call("fixed_cached_double");
    let exec = Executor::new(&g).unwrap();
    let mut l = ViewMapValidationListener::new();
    for _ in 0..3 {
        exec.run_with(&f, &mut l, &RunOptions::default()).unwrap();
    }
    assert!(l.take_findings().is_empty());

    // A training-loop shape: the output of one run is the next run's
    // input, updated in place (a declared destroy of that buffer).
    let g = builder("loop");
    let w = g.mutable_input("w", DType::F32, &[4]);
    let d = g.input("d", DType::F32, &[4]);
    let w2 = w.add_inplace(&d).unwrap();
    let graph = g.build(&[&w2]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let mut l = ViewMapValidationListener::new();
    let mut cur = f32s(&[4], &[0.0; 4]);
    for _ in 0..3 {
        let fs = feeds(&[("w", cur.clone()), ("d", f32s(&[4], &[1.0; 4]))]);
        cur = exec
            .run_with(&fs, &mut l, &RunOptions::default())
            .unwrap()
            .outputs[0]
            .1
            .clone();
    }
    assert_eq!(cur.to_f64_vec().unwrap(), vec![3.0; 4]);
    assert!(l.take_findings().is_empty());
}
