//! ListenerSet (panics, Stop, collection), the view-map and numerics
//! listeners on graphs.

mod common;

use std::cell::Cell;
use std::rc::Rc;

use common::*;
use vigil_engine::exec::{At, Executor, Flow, Listener, OpEvent, Operation, RunOptions};
use vigil_engine::{DType, IndexSpec};
use vigil_listeners::{Kind, ListenerSet, NumericsListener, Validator, ViewMapValidationListener};

/// Panics in its `n`-th `post_op`.
struct Bomb {
    calls: usize,
    n: usize,
}

impl Listener for Bomb {
    fn post_op(&mut self, _at: &At, ev: &OpEvent) {
        self.calls += 1;
        if self.calls == self.n {
            panic!("boom in {}", ev.node.name);
        }
    }
}

/// Counts hooks; shares its counter so the test can read it.
struct Counter {
    post_ops: Rc<Cell<usize>>,
    stop_at_epoch: Option<usize>,
}

impl Listener for Counter {
    fn post_op(&mut self, _at: &At, _ev: &OpEvent) {
        self.post_ops.set(self.post_ops.get() + 1);
    }
    fn epoch_end(&mut self, at: &At) -> Flow {
        if Some(at.epoch) == self.stop_at_epoch {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

fn three_ops() -> (vigil_engine::graph::Graph, Feeds) {
    let g = builder("three");
    let x = g.input("x", DType::F32, &[4]);
    let y = x.exp().unwrap().neg().unwrap().tanh().unwrap();
    (g.build(&[&y]).unwrap(), feeds(&[("x", ramp(&[4]))]))
}

#[test]
fn a_panicking_listener_is_reported_disabled_and_the_run_goes_on() {
    let (graph, f) = three_ops();
    let count = Rc::new(Cell::new(0));
    let mut set = standard_set()
        .with_listener(Bomb { calls: 0, n: 2 })
        .with_listener(Counter {
            post_ops: count.clone(),
            stop_at_epoch: None,
        });
    let exec = Executor::new(&graph).unwrap();
    let out = exec.run_with(&f, &mut set, &RunOptions::default());
    assert!(out.is_ok());
    assert_eq!(count.get(), 3, "members after the bomb still got every hook");
    assert_eq!(set.disabled(), vec!["Bomb"]);
    let found = set.take_findings();
    assert_eq!(kinds(&found), vec![Kind::LISTENER_PANIC]);
    let p = &found[0];
    assert_eq!(p.node, "neg_2");
    assert_eq!(p.op, "neg");
    assert_eq!(p.details["hook"], "post_op");
    assert_eq!(p.details["panic"], "boom in neg_2");
    assert!(p.message.contains("Bomb") && p.message.contains("boom in neg_2"));

    // The bomb stays off on the next run.
    exec.run_with(&f, &mut set, &RunOptions::default()).unwrap();
    assert_eq!(set.get::<Bomb>().map(|b| b.calls), Some(2));
    assert_eq!(count.get(), 6);
    assert!(set.take_findings().is_empty());
}

#[test]
fn epoch_end_stops_when_any_member_says_stop() {
    let count = Rc::new(Cell::new(0));
    let mut set = ListenerSet::new()
        .with_listener(Counter {
            post_ops: count.clone(),
            stop_at_epoch: None,
        })
        .with_listener(Counter {
            post_ops: count.clone(),
            stop_at_epoch: Some(2),
        });
    let mut epochs = 0;
    for epoch in 0..10 {
        epochs += 1;
        if set.epoch_end(&At::new(Operation::Training).epoch(epoch)) == Flow::Stop {
            break;
        }
    }
    assert_eq!(epochs, 3);
    assert_eq!(
        set.validation_done(&At::new(Operation::TrainingValidation), &Default::default()),
        Flow::Continue
    );
}

#[test]
fn findings_are_stamped_with_the_case() {
    let g = builder("case");
    let x = g.input("x", DType::F32, &[4]);
    let y = x.op("broken_identity", &[], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let mut set = standard_set();
    set.set_case(Some("my_case".into()));
    let found = run_with(&graph, &feeds(&[("x", ramp(&[4]))]), &mut set);
    assert_eq!(kinds(&found), vec![Kind::UNDECLARED_VIEW]);
    assert_eq!(found[0].case.as_deref(), Some("my_case"));
}

#[test]
fn interleaved_column_views_returned_together_are_not_aliased() {
    // broken_split's twin returns two disjoint halves of one buffer; a
    // span test alone would call x[:, ::2] and x[:, 1::2] overlapping.
    let g = builder("halves");
    let x = g.input("x", DType::F32, &[4, 6]);
    let even = x.view(&[IndexSpec::All, IndexSpec::range(0, 6, 2)]).unwrap();
    let odd = x.view(&[IndexSpec::All, IndexSpec::range(1, 6, 2)]).unwrap();
    let s = even.add(&odd).unwrap();
    let graph = g.build(&[&s, &even, &odd]).unwrap();
    let mut l = ViewMapValidationListener::new();
    assert!(run_with(&graph, &feeds(&[("x", ramp(&[4, 6]))]), &mut l).is_empty());
}

#[test]
fn an_overlap_search_that_gives_up_counts_as_sharing_and_says_inexact() {
    let g = builder("inexact");
    let x = g.input("x", DType::F32, &[4, 6]);
    let y = x.op("broken_first_row", &[], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let f = feeds(&[("x", ramp(&[4, 6]))]);
    let exact = run_with(&graph, &f, &mut ViewMapValidationListener::new());
    assert_eq!(exact[0].details["exact"], true);
    assert!(exact[0].details["shared_offset"].is_u64());
    let bounded = run_with(&graph, &f, &mut ViewMapValidationListener::new().max_work(0));
    assert_eq!(kinds(&bounded), vec![Kind::UNDECLARED_VIEW]);
    assert_eq!(bounded[0].details["exact"], false);
    assert!(bounded[0].details["shared_offset"].is_null());
}

#[test]
fn only_the_op_that_creates_nan_is_blamed() {
    let g = builder("nan");
    let a = g.input("a", DType::F32, &[4]);
    let b = g.input("b", DType::F32, &[4]);
    let q = a.op("broken_safe_div", &[&b], Default::default()).unwrap();
    let y = q.exp().unwrap().add(&a).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let f = feeds(&[
        ("a", f32s(&[4], &[0.0, 1.0, -1.0, 2.0])),
        ("b", f32s(&[4], &[0.0, 0.0, 0.0, 1.0])),
    ]);
    let mut l = NumericsListener::new();
    let found = run_with(&graph, &f, &mut l);
    assert_eq!(kinds(&found), vec![Kind::NON_FINITE]);
    assert_eq!(found[0].op, "broken_safe_div");
    // 0/0 at index 0 is the first bad element.
    assert!(
        found[0].message.ends_with("the first at [0] (NaN)"),
        "{}",
        found[0].message
    );
    assert_eq!(found[0].details["first"]["index"], serde_json::json!([0]));
    let h = l.health(&found[0].node).unwrap();
    assert!(h.created_non_finite && !h.propagated);
    let o = &h.outputs[0];
    assert_eq!((o.nan, o.pos_inf, o.neg_inf, o.positive), (1, 1, 1, 1));
    assert_eq!((o.min, o.max, o.mean), (Some(2.0), Some(2.0), Some(2.0)));
    for node in ["exp_2", "add_3"] {
        let h = l.health(node).unwrap();
        assert!(h.propagated && !h.created_non_finite, "{node}");
    }
    assert!(l.health("add_3").unwrap().outputs[0].nan >= 1);
}

/// Records the name of every hook it receives.
#[derive(Default)]
struct Names(std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>);

macro_rules! record_hooks {
    ($($(#[doc = $doc:literal])* $name:ident($($arg:ident: $ty:ty),* $(,)?) => $ev:expr;)*) => {
        $(fn $name(&mut self, $(_: $ty),*) {
            self.0.borrow_mut().push(stringify!($name));
        })*
    };
}

impl vigil_engine::exec::Listener for Names {
    vigil_engine::listener_unit_hooks!(record_hooks);
}

#[test]
fn the_set_and_its_adapter_forward_every_hook() {
    use vigil_engine::exec::{At, Listener, Operation};
    let b = vigil_engine::graph::GraphBuilder::new("hooks");
    let x = b.input("x", vigil_engine::DType::F32, &[2]);
    let y = x.exp().unwrap().neg().unwrap();
    let g = b.build(&[&y]).unwrap();
    let feeds = std::collections::HashMap::from([(
        "x".to_string(),
        vigil_engine::Tensor::from_vec(&[2], vec![1f32, 2.0]).unwrap(),
    )]);
    let seen = Names::default();
    let log = seen.0.clone();
    let mut set = ListenerSet::new().with_listener(seen);
    let at = At::new(Operation::Training);
    set.epoch_start(&at);
    set.iteration_start(&at);
    vigil_engine::Executor::new(&g)
        .unwrap()
        .run_with(&feeds, &mut set, &vigil_engine::RunOptions::default())
        .unwrap();
    let t = vigil_engine::Tensor::from_vec(&[2], vec![0f32, 0.0]).unwrap();
    set.pre_update(&at, "w", &t, &t);
    set.iteration_done(&at, Some(0.5));
    let names = log.borrow();
    for hook in [
        "operation_start",
        "operation_end",
        "epoch_start",
        "iteration_start",
        "iteration_done",
        "pre_op",
        "post_op",
        "activation_available",
        "value_released",
        "pre_update",
    ] {
        assert!(names.contains(&hook), "{hook} not forwarded: {names:?}");
    }
}

#[test]
fn a_finding_repeated_across_training_iterations_is_folded_with_its_first_and_last() {
    let g = builder("loop");
    let a = g.mutable_input("a", DType::F32, &[4]);
    let b = g.input("b", DType::F32, &[4]);
    let y = a.op("broken_accumulate", &[&b], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let exec = vigil_engine::Executor::new(&graph).unwrap();
    let mut set = standard_set();
    for epoch in 0..2 {
        for iteration in 0..3 {
            // Fresh feeds each step, as a loop over batches has.
            let f = feeds(&[("a", ramp(&[4])), ("b", ramp(&[4]))]);
            let at = vigil_engine::exec::At {
                epoch,
                iteration,
                operation: vigil_engine::exec::Operation::Training,
                node_index: None,
                in_body: false,
            };
            let opts = vigil_engine::RunOptions {
                at,
                ..Default::default()
            };
            exec.run_with(&f, &mut set, &opts).unwrap();
            set.iteration_done(&at, None);
        }
    }
    let found = set.take_findings();
    assert_eq!(kinds(&found), vec![Kind::DESTROYED_INPUT], "one finding, not six");
    let seen = found[0].seen.expect("stamped in a training loop");
    assert_eq!(seen.count, 6);
    assert_eq!((seen.first.epoch, seen.first.iteration), (0, 0));
    assert_eq!((seen.last.epoch, seen.last.iteration), (1, 2));
    let j = serde_json::to_value(&found[0]).unwrap();
    assert_eq!(j["seen"]["count"], 6);

    // Outside a loop nothing is stamped or folded.
    let mut set = standard_set();
    for _ in 0..2 {
        let f = feeds(&[("a", ramp(&[4])), ("b", ramp(&[4]))]);
        exec.run_with(&f, &mut set, &Default::default()).unwrap();
    }
    let found = set.take_findings();
    assert_eq!(found.len(), 2);
    assert!(found.iter().all(|f| f.seen.is_none()));
    assert!(serde_json::to_value(&found[0]).unwrap().get("seen").is_none());
}
