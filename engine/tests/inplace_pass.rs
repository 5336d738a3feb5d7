//! The in-place pass on random pure graphs: the rewritten graph stays valid
//! and computes exactly what the pure graph computes.

use std::collections::HashMap;

use proptest::prelude::*;
use vigil_engine::{inplace, DType, DestroyHandler, Executor, GraphBuilder, Tensor};

use vigil_testkit::random_graph::{build, feeds, step};

fn bits(t: &Tensor) -> Vec<u64> {
    t.to_f64_vec().unwrap().into_iter().map(f64::to_bits).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pass_keeps_graphs_valid_and_results_identical(
        mutable in prop::collection::vec(any::<bool>(), 1..4),
        steps in prop::collection::vec(step(), 1..24),
        extra in prop::collection::vec(any::<usize>(), 0..3),
        seed in 0u64..100,
    ) {
        let case = build(&mutable, &steps, &extra, seed);
        let pure = Executor::new(&case.graph).unwrap().run(&feeds(&case)).unwrap();
        let pass = inplace::run(&case.graph).unwrap();
        prop_assert!(DestroyHandler::new(&pass.graph).validate().is_ok());
        let fed = feeds(&case);
        let rewritten = Executor::new(&pass.graph).unwrap().run(&fed).unwrap();
        for (name, t) in &pure.outputs {
            let r = rewritten.get(name).expect("same outputs");
            prop_assert_eq!(t.shape(), r.shape());
            prop_assert_eq!(bits(t), bits(r), "output {}", name);
        }
        // Protected inputs are untouched by the rewritten run, and a second
        // run (parameters included) gives the same outputs.
        for (name, data, mutable) in &case.inputs {
            if !mutable {
                prop_assert_eq!(fed[name].to_f64_vec().unwrap(), data.clone());
            }
        }
        let again = Executor::new(&pass.graph).unwrap().run(&feeds(&case)).unwrap();
        for (name, t) in &pure.outputs {
            prop_assert_eq!(bits(t), bits(again.get(name).unwrap()), "second run, output {}", name);
        }
    }
}

#[test]
fn pass_rewrites_a_chain_into_one_buffer() {
    let g = GraphBuilder::new("chain");
    let x = g.input("x", DType::F32, &[1000]);
    let mut y = x.exp().unwrap();
    for _ in 0..15 {
        y = y.tanh().unwrap();
    }
    let graph = g.build(&[&y]).unwrap();
    let pass = inplace::run(&graph).unwrap();
    assert_eq!(
        pass.accepted(),
        15,
        "all but the first op, which reads the protected input"
    );
    let first = &pass.decisions[0];
    assert_eq!(first.rewritten_to, None);
    assert_eq!(first.candidates[0].refused.as_ref().unwrap().code(), "protected");
    let feeds = HashMap::from([("x".to_string(), Tensor::zeros(DType::F32, &[1000]).unwrap())]);
    let opts = vigil_engine::RunOptions {
        record_frees: true,
        ..Default::default()
    };
    let mut none = vigil_engine::exec::NoListener;
    let pure = Executor::new(&graph)
        .unwrap()
        .run_with(&feeds, &mut none, &opts)
        .unwrap();
    let rewritten = Executor::new(&pass.graph)
        .unwrap()
        .run_with(&feeds, &mut none, &opts)
        .unwrap();
    // The executor frees eagerly either way, so both peak at two buffers;
    // the pass saves the 15 allocations (and frees) of the intermediates.
    assert_eq!(pure.stats.peak_live_bytes, 8000);
    assert_eq!(rewritten.stats.peak_live_bytes, 8000);
    assert_eq!(pure.stats.frees.len(), 16, "x and 15 intermediates");
    assert_eq!(
        rewritten.stats.frees.len(),
        1,
        "only x: one buffer carries the chain"
    );
    let plan = vigil_engine::memory::plan(&pass.graph, &DestroyHandler::new(&pass.graph).validate().unwrap());
    assert_eq!(plan.peak_bytes, 8000);
}

#[test]
fn last_reader_destroys_and_earlier_readers_run_first() {
    // t feeds neg, exp and (last) relu: only one of them may destroy t, and
    // it must run after the other two.
    let g = GraphBuilder::new("fan");
    let x = g.input("x", DType::F64, &[3]);
    let t = x.add(&x).unwrap();
    let a = t.neg().unwrap();
    let b = t.exp().unwrap();
    let c = t.relu().unwrap();
    let graph = g.build(&[&a, &b, &c]).unwrap();
    let pass = inplace::run(&graph).unwrap();
    let rewritten: Vec<_> = pass
        .decisions
        .iter()
        .filter(|d| d.rewritten_to.is_some())
        .collect();
    assert_eq!(rewritten.len(), 1);
    let refused: Vec<&str> = pass
        .decisions
        .iter()
        .filter(|d| d.rewritten_to.is_none() && d.op != "add")
        .map(|d| d.candidates[0].refused.as_ref().unwrap().code())
        .collect();
    assert_eq!(refused, vec!["two_destroyers", "two_destroyers"]);
    let feeds = HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[3], vec![-1.0, 0.0, 2.0]).unwrap(),
    )]);
    let out = Executor::new(&pass.graph).unwrap().run(&feeds).unwrap();
    assert_eq!(
        out.get(a.name()).unwrap().to_f64_vec().unwrap(),
        vec![2.0, 0.0, -4.0]
    );
    assert_eq!(
        out.get(c.name()).unwrap().to_f64_vec().unwrap(),
        vec![0.0, 0.0, 4.0]
    );
    let e = out.get(b.name()).unwrap().to_f64_vec().unwrap();
    assert!((e[2] - 4f64.exp()).abs() < 1e-9);
}
