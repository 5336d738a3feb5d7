//! The executor and pass seams that DebugMode builds on: stepping, custom
//! orders, the value-released hook, partial rewrites, purification, typed
//! errors and per-run pool policies.

use std::collections::HashMap;

use proptest::prelude::*;
use vigil_engine::exec::{At, Listener, RunOptions};
use vigil_engine::graph::{Graph, GraphBuilder, VarId};
use vigil_engine::{inplace, BufferPolicy, DType, Error, Executor, Rule, Tensor};

fn feeds(n: usize) -> HashMap<String, Tensor> {
    let v: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 1.0).collect();
    HashMap::from([("x".to_string(), Tensor::from_vec(&[n], v).unwrap())])
}

/// x -> exp -> neg -> add(x) -> relu, plus a side branch sigmoid(x) * 2:
/// several rewrites for the pass, and independent nodes to reorder.
fn chain() -> Graph {
    let b = GraphBuilder::new("chain");
    let x = b.input("x", DType::F32, &[8]);
    let e = x.exp().unwrap();
    let n = e.neg().unwrap();
    let a = n.add(&x).unwrap();
    let r = a.relu().unwrap();
    let s = x.sigmoid().unwrap();
    let t = s.mul(&s).unwrap();
    let u = r.add(&t).unwrap();
    b.build(&[&u]).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

#[test]
fn two_cursors_step_in_lockstep_and_agree_with_run() {
    let g = chain();
    let pass = inplace::run(&g).unwrap();
    let exec_a = Executor::new(&g).unwrap();
    let exec_b = Executor::new(&pass.graph).unwrap();
    let (fa, fb) = (feeds(8), feeds(8));
    let opts = RunOptions::default();
    let mut none = vigil_engine::exec::NoListener;
    let mut none2 = vigil_engine::exec::NoListener;
    let mut a = exec_a.start(&fa, &mut none, &opts).unwrap();
    let mut b = exec_b.start(&fb, &mut none2, &opts).unwrap();
    let mut steps = 0;
    loop {
        let (sa, sb) = (a.step(&mut none).unwrap(), b.step(&mut none2).unwrap());
        match (sa, sb) {
            (None, None) => break,
            (Some(x), Some(y)) => {
                assert_eq!(x.position, steps);
                assert_eq!(x.position, y.position);
                steps += 1;
            }
            _ => panic!("orders of different lengths"),
        }
    }
    assert_eq!(steps, g.nodes().len());
    let (oa, ob) = (a.finish(&mut none).unwrap(), b.finish(&mut none2).unwrap());
    let plain = Executor::new(&g).unwrap().run(&feeds(8)).unwrap();
    assert_eq!(values(&oa.outputs[0].1), values(&plain.outputs[0].1));
    assert_eq!(values(&ob.outputs[0].1), values(&plain.outputs[0].1));
}

#[test]
fn a_cursor_exposes_live_values_between_steps() {
    let g = chain();
    let exec = Executor::new(&g).unwrap();
    let f = feeds(8);
    let opts = RunOptions::default();
    let mut l = vigil_engine::exec::NoListener;
    let mut c = exec.start(&f, &mut l, &opts).unwrap();
    let first = c.next_node().unwrap();
    let step = c.step(&mut l).unwrap().unwrap();
    assert_eq!(step.node, first);
    let out = g.node(first).outputs[0];
    assert!(c.value(out).is_some(), "a value read later is live");
    assert_eq!(c.position(), 1);
}

#[test]
fn with_order_accepts_every_valid_order_and_refuses_invalid_ones() {
    let g = chain();
    let pass = inplace::run(&g).unwrap();
    let ig = &pass.graph;
    let default = Executor::new(ig).unwrap().order().to_vec();
    let want = values(&Executor::new(ig).unwrap().run(&feeds(8)).unwrap().outputs[0].1);
    // The reverse-most valid order: repeatedly take the largest ready node.
    let exec = Executor::new(ig).unwrap();
    let n = ig.nodes().len();
    let mut done = vec![false; n];
    let mut rev = Vec::new();
    while rev.len() < n {
        let next = (0..n)
            .rev()
            .find(|&id| !done[id] && exec.predecessors(id).iter().all(|&p| done[p]))
            .unwrap();
        done[next] = true;
        rev.push(next);
    }
    assert_ne!(rev, default, "the graph has more than one valid order");
    let e = Executor::with_order(ig, rev).unwrap();
    assert_eq!(values(&e.run(&feeds(8)).unwrap().outputs[0].1), want);

    // A node before its producer.
    let mut bad = default.clone();
    bad.swap(0, 1);
    let first_two_independent = exec.predecessors(bad[1]).is_empty() && exec.predecessors(bad[0]).is_empty();
    if !first_two_independent {
        let err = Executor::with_order(ig, bad).err().unwrap();
        assert!(matches!(err, Error::InvalidOrder { .. }), "{err}");
        assert!(err.to_string().contains("must run after"), "{err}");
    }
    let mut dup = default.clone();
    dup[1] = dup[0];
    let err = Executor::with_order(ig, dup).err().unwrap();
    assert!(err.to_string().contains("appears twice"), "{err}");
    let err = Executor::with_order(ig, default[1..].to_vec()).err().unwrap();
    assert!(err.to_string().contains("nodes given"), "{err}");
}

#[test]
fn with_order_refuses_a_destroyer_before_another_reader() {
    // y = exp(x); z = neg_inplace(x_copy) where x_copy = copy(x) is also
    // read by sigmoid: the destroyer must come after sigmoid.
    let b = GraphBuilder::new("d");
    let x = b.input("x", DType::F32, &[4]);
    let c = x.copy().unwrap();
    let s = c.sigmoid().unwrap();
    let d = c.neg_inplace().unwrap();
    let out = s.add(&d).unwrap();
    let g = b.build(&[&out]).unwrap();
    let exec = Executor::new(&g).unwrap();
    let id = |name: &str| {
        g.nodes()
            .iter()
            .position(|n| n.outputs.iter().any(|&o| g.var(o).name == name))
            .unwrap()
    };
    let (nc, ns, nd, no) = (id(c.name()), id(s.name()), id(d.name()), id(out.name()));
    assert!(exec.predecessors(nd).contains(&ns));
    let err = Executor::with_order(&g, vec![nc, nd, ns, no]).err().unwrap();
    assert!(
        err.to_string()
            .contains(&format!("must run after node '{}'", g.node(ns).name)),
        "{err}"
    );
    assert!(Executor::with_order(&g, vec![nc, ns, nd, no]).is_ok());
}

#[derive(Default)]
struct Released(Vec<(VarId, bool)>);
impl Listener for Released {
    fn value_released(&mut self, _: &At, _: &Graph, var: VarId, _: &Tensor, freed: bool) {
        self.0.push((var, freed));
    }
}

#[test]
fn released_values_are_reported_as_their_last_reader_runs() {
    let g = chain();
    let exec = Executor::new(&g).unwrap();
    let mut l = Released::default();
    exec.run_with(&feeds(8), &mut l, &RunOptions::default()).unwrap();
    let out = g.outputs()[0];
    // Every variable but the output is released exactly once.
    let mut vars: Vec<VarId> = l.0.iter().map(|&(v, _)| v).collect();
    vars.sort();
    vars.dedup();
    assert_eq!(vars.len(), l.0.len(), "released once each");
    assert_eq!(vars.len(), g.vars().len() - 1);
    assert!(!vars.contains(&out));
    assert!(
        l.0.iter().all(|&(_, freed)| freed),
        "a pure graph shares no buffers"
    );
    // After the pass, buffers are shared along the chain: some releases do
    // not free memory.
    let ig = inplace::run(&g).unwrap().graph;
    let mut l = Released::default();
    Executor::new(&ig)
        .unwrap()
        .run_with(&feeds(8), &mut l, &RunOptions::default())
        .unwrap();
    assert!(l.0.iter().any(|&(_, freed)| !freed));
}

#[test]
fn purify_maps_in_place_ops_back_to_their_twins() {
    let g = chain();
    let pass = inplace::run(&g).unwrap();
    assert!(pass.accepted() >= 3, "{}", pass.accepted());
    let pure = inplace::purify(&pass.graph).unwrap();
    assert!(pure.nodes().iter().all(|n| n.op.destroy_map().is_empty()));
    for (a, b) in pure.nodes().iter().zip(g.nodes()) {
        assert_eq!(a.op.name(), b.op.name(), "node {}", a.name);
    }
    let want = values(&Executor::new(&g).unwrap().run(&feeds(8)).unwrap().outputs[0].1);
    assert_eq!(
        values(&Executor::new(&pure).unwrap().run(&feeds(8)).unwrap().outputs[0].1),
        want
    );
    // Applying no rewrite gives the pure graph back, all of them the pass's.
    let none = inplace::apply(&g, &[]).unwrap();
    assert!(none.nodes().iter().all(|n| n.op.destroy_map().is_empty()));
    let all = inplace::apply(&g, &pass.rewrites).unwrap();
    let names = |g: &Graph| {
        g.nodes()
            .iter()
            .map(|n| n.op.name().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&all), names(&pass.graph));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Any subset of the accepted rewrites is a legal graph that computes
    /// the same values.
    #[test]
    fn every_subset_of_accepted_rewrites_is_legal(mask in any::<u32>()) {
        let g = chain();
        let pass = inplace::run(&g).unwrap();
        let subset: Vec<_> = pass.rewrites.iter().enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0).map(|(_, r)| r.clone()).collect();
        let sub = inplace::apply(&g, &subset).unwrap();
        let destroyers = sub.nodes().iter().filter(|n| !n.op.destroy_map().is_empty()).count();
        prop_assert_eq!(destroyers, subset.len());
        let exec = Executor::new(&sub).unwrap();
        let want = values(&Executor::new(&g).unwrap().run(&feeds(8)).unwrap().outputs[0].1);
        prop_assert_eq!(values(&exec.run(&feeds(8)).unwrap().outputs[0].1), want);
    }
}

#[test]
fn rule_violations_and_refused_outputs_are_typed() {
    let b = GraphBuilder::new("bad");
    let x = b.input("x", DType::F32, &[4]);
    let y = x.relu_inplace().unwrap();
    let g = b.build(&[&y]).unwrap();
    match Executor::new(&g) {
        Err(Error::Rules { violations, .. }) => {
            assert!(
                violations.iter().any(|v| v.rule == Rule::Protected),
                "{violations:?}"
            )
        }
        other => panic!("expected a rule error, got {:?}", other.err()),
    }

    let g = {
        let b = GraphBuilder::new("ok");
        let x = b.input("x", DType::F32, &[4]);
        let y = x.exp().unwrap();
        b.build(&[&y]).unwrap()
    };
    let exec = Executor::new(&g).unwrap();
    let wrong =
        |_: usize, _: &vigil_engine::graph::Node| vec![Some(Tensor::zeros(DType::F32, &[5]).unwrap())];
    let err = exec
        .run_with(
            &feeds(4),
            &mut vigil_engine::exec::NoListener,
            &RunOptions {
                prealloc: Some(&wrong),
                ..RunOptions::default()
            },
        )
        .err()
        .unwrap();
    match &err {
        Error::PreallocRefused {
            node: Some(n),
            output: 0,
            ..
        } => assert_eq!(n, &g.node(0).name),
        other => panic!("expected a refused pre-allocation, got {other:?}"),
    }
    assert!(err.to_string().contains("pre-allocated output 0"), "{err}");
}

/// An op that returns its output buffer without writing it: what it
/// returns is whatever the pool handed out.
mod lazy {
    use vigil_engine::ops::{Arity, Op, OpCtx, TypeInfo};
    use vigil_engine::{Result, Tensor};
    pub struct Lazy;
    impl Op for Lazy {
        fn name(&self) -> &str {
            "lazy"
        }
        fn arity(&self) -> Arity {
            Arity::exactly(1)
        }
        fn infer(&self, i: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
            Ok(vec![i[0].clone()])
        }
        fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
            Ok(vec![ctx.output(0, i[0].dtype(), i[0].shape())?])
        }
    }
}

#[test]
fn the_pool_policy_is_per_run() {
    let mut reg = vigil_engine::OpRegistry::builtin();
    reg.register_op(std::sync::Arc::new(lazy::Lazy));
    let b = GraphBuilder::with_registry("lazy", reg);
    let x = b.input("x", DType::F32, &[4099]);
    let y = x.op("lazy", &[], Default::default()).unwrap();
    let g = b.build(&[&y]).unwrap();
    let exec = Executor::new(&g).unwrap();
    let run = |buffers| {
        let opts = RunOptions {
            buffers,
            ..RunOptions::default()
        };
        values(
            &exec
                .run_with(&feeds(4099), &mut vigil_engine::exec::NoListener, &opts)
                .unwrap()
                .outputs[0]
                .1,
        )
    };
    assert!(run(BufferPolicy::Poison).iter().all(|x| x.is_nan()));
    assert!(run(BufferPolicy::Zero).iter().all(|&x| x == 0.0));
    assert!(run(BufferPolicy::Fresh).iter().all(|&x| x == 0.0));
}

/// Records every `pre_update` with the old and new values; with `.1`, it
/// lets runs sweep.
#[derive(Default)]
struct Updates(Vec<(String, Vec<f64>, Vec<f64>)>, bool);

impl Listener for Updates {
    fn watches_sweeps(&self) -> vigil_engine::exec::SweepWatch {
        if self.1 {
            vigil_engine::exec::SweepWatch::Edges
        } else {
            vigil_engine::exec::SweepWatch::No
        }
    }
    fn pre_update(&mut self, _: &At, param: &str, old: &Tensor, new: &Tensor) {
        self.0.push((
            param.to_string(),
            old.to_f64_vec().unwrap(),
            new.to_f64_vec().unwrap(),
        ));
    }
}

#[test]
fn an_in_place_op_that_overwrites_a_parameter_fires_pre_update_before_the_write() {
    // w -= x, then w *= 2 (a chain of updates starting at the parameter),
    // and an in-place op on an input, which is not an update.
    // The parameter keeps its updates across runs: a graph per case.
    let graph = || {
        let b = GraphBuilder::new("sgd");
        let w = b.parameter("w", Tensor::from_vec(&[2], vec![1f32, 2.0]).unwrap());
        let x = b.input("x", DType::F32, &[2]);
        let two = b.constant("two", Tensor::from_vec(&[2], vec![2f32, 2.0]).unwrap());
        let w1 = w.sub_inplace(&x).unwrap().mul_inplace(&two).unwrap();
        let y = x.exp().unwrap().neg_inplace().unwrap();
        b.build(&[&w1, &y]).unwrap()
    };
    let feeds = HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[2], vec![0.25f32, 0.5]).unwrap(),
    )]);
    // A listener that watches sweeps still sees each update: `w -= x` and
    // `w *= 2` would otherwise sweep.
    for watch in [false, true] {
        let mut l = Updates(Vec::new(), watch);
        let g = graph();
        let exec = Executor::new(&g).unwrap();
        for _ in 0..2 {
            let out = exec.run_with(&feeds, &mut l, &RunOptions::default()).unwrap();
            // The updates step alone; `exp x` and the neg after it sweep
            // when the listener lets them.
            assert_eq!(out.stats.fused, if watch { 2 } else { 0 });
        }
        let w = |v: &[f64]| v.to_vec();
        assert_eq!(
            l.0,
            vec![
                ("w".into(), w(&[1.0, 2.0]), w(&[0.75, 1.5])),
                ("w".into(), w(&[0.75, 1.5]), w(&[1.5, 3.0])),
                // The second run starts from the updated parameter.
                ("w".into(), w(&[1.5, 3.0]), w(&[1.25, 2.5])),
                ("w".into(), w(&[1.25, 2.5]), w(&[2.5, 5.0])),
            ]
        );
    }
    // Nobody watching, the updates sweep, and so do `exp x` (pure: x is an
    // input) and the neg that overwrites its result.
    let out = Executor::new(&graph()).unwrap().run(&feeds).unwrap();
    assert_eq!(out.stats.fused, 4);
}

#[test]
fn lent_values_refuse_writes_until_every_lender_is_done() {
    use vigil_engine::exec::Lent;
    let b = vigil_engine::GraphBuilder::new("lend");
    let x = b.input("x", DType::F32, &[3]);
    let w = b.parameter("w", Tensor::from_vec(&[3], vec![1f32, 2., 3.]).unwrap());
    let y = x.add(&w).unwrap();
    let g = b.build(&[&y]).unwrap();
    let feeds = HashMap::from([("x".to_string(), Tensor::from_vec(&[3], vec![0f32; 3]).unwrap())]);
    let write = |t: &Tensor| t.write_contiguous(|s: &mut [f32]| s[0] = 9.0);
    let param = match &g.var(g.var_id("w").unwrap()).kind {
        vigil_engine::graph::VarKind::Parameter(t) => t.clone(),
        _ => unreachable!(),
    };
    {
        let _outer = Lent::new(&g, &feeds);
        {
            let _inner = Lent::new(&g, &feeds);
            assert!(matches!(write(&feeds["x"]), Err(Error::ReadOnly { .. })));
        }
        // Still lent to the outer lender.
        assert!(matches!(write(&param), Err(Error::ReadOnly { .. })));
        // Reading and running are fine: the run writes only its own outputs.
        let out = Executor::new(&g).unwrap().run(&feeds).unwrap();
        assert_eq!(out.outputs[0].1.to_f64_vec().unwrap(), vec![1., 2., 3.]);
    }
    assert_eq!(param.to_f64_vec().unwrap(), vec![1., 2., 3.]);
    write(&feeds["x"]).unwrap();
    write(&param).unwrap();
    assert_eq!(feeds["x"].to_f64_vec().unwrap(), vec![9., 0., 0.]);
}
