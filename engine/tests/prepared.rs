//! Prepared graphs: the in-place pass and the plan done once, then many
//! runs that give what a fresh pass and executor give, at any shape the
//! graph's declared types admit; feeds they do not admit are refused.

use std::collections::HashMap;

use vigil_engine::{
    inplace, Attrs, DType, Error, Executor, FeedFault, Graph, GraphBuilder, Prepared, Tensor,
};

/// `tanh(exp(x * c) + x)`: pure nodes the in-place pass rewrites, on an
/// input of any length.
fn graph() -> Graph {
    let g = GraphBuilder::new("chain");
    let x = g.input("x", DType::F32, &[-1]);
    let c = g.constant("c", Tensor::from_vec(&[1], vec![0.5f32]).unwrap());
    let y = x.op("mul", &[&c], Attrs::new()).unwrap();
    let y = y.op("exp", &[], Attrs::new()).unwrap();
    let y = y.op("add", &[&x], Attrs::new()).unwrap();
    let y = y.op("tanh", &[], Attrs::new()).unwrap();
    g.build(&[&y]).unwrap()
}

fn feeds(n: usize, seed: usize) -> HashMap<String, Tensor> {
    let v: Vec<f32> = (0..n)
        .map(|i| (((i + seed) * 7919) % 2003) as f32 / 1000.0 - 1.0)
        .collect();
    HashMap::from([("x".to_string(), Tensor::from_vec(&[n], v).unwrap())])
}

fn values(t: &Tensor) -> Vec<u64> {
    t.to_f64_vec().unwrap().iter().map(|x| x.to_bits()).collect()
}

#[test]
fn runs_of_a_prepared_graph_match_a_fresh_pass_and_executor_each_time() {
    let g = graph();
    let prepared = Prepared::new(&g).unwrap();
    assert!(prepared.rewrites() > 0, "the pass rewrites the chain in place");
    let fresh = inplace::run(&g).unwrap().graph;
    for seed in 0..4 {
        let f = feeds(1000, seed);
        let want = Executor::new(&fresh).unwrap().run(&f).unwrap();
        let got = prepared.run(&f).unwrap();
        assert_eq!(values(&got.outputs[0].1), values(&want.outputs[0].1));
        // The feed was not overwritten: the next run starts from it again.
        assert_eq!(values(&f["x"]), values(&feeds(1000, seed)["x"]));
    }
}

#[test]
fn a_prepared_graph_runs_every_shape_its_types_admit() {
    let prepared = Prepared::new(&graph()).unwrap();
    for n in [1, 17, 4096, 3] {
        let f = feeds(n, 1);
        let want = Executor::new(&graph()).unwrap().run(&f).unwrap();
        let got = prepared.run(&f).unwrap();
        assert_eq!(got.outputs[0].1.shape(), [n]);
        assert_eq!(values(&got.outputs[0].1), values(&want.outputs[0].1));
    }
}

#[test]
fn a_feed_the_declared_types_do_not_admit_is_refused_by_the_run() {
    let prepared = Prepared::new(&graph()).unwrap();
    let f = HashMap::from([("x".to_string(), Tensor::from_vec(&[2, 2], vec![0f32; 4]).unwrap())]);
    assert!(matches!(
        prepared.run(&f),
        Err(Error::Feed {
            fault: FeedFault::Mismatch,
            ..
        })
    ));
    let f = HashMap::from([("x".to_string(), Tensor::from_vec(&[4], vec![0f64; 4]).unwrap())]);
    assert!(matches!(
        prepared.run(&f),
        Err(Error::Feed {
            fault: FeedFault::Mismatch,
            ..
        })
    ));
    // The prepared graph still runs what it admits.
    assert!(prepared.run(&feeds(8, 0)).is_ok());
}

#[test]
fn as_given_runs_the_graph_without_the_pass() {
    let g = graph();
    let prepared = Prepared::as_given(g.clone()).unwrap();
    assert_eq!(prepared.rewrites(), 0);
    assert_eq!(prepared.graph().nodes().len(), g.nodes().len());
    for (a, b) in prepared.graph().nodes().iter().zip(g.nodes()) {
        assert_eq!(a.op.name(), b.op.name());
    }
    let f = feeds(64, 2);
    let want = Executor::new(&g).unwrap().run(&f).unwrap();
    assert_eq!(
        values(&prepared.run(&f).unwrap().outputs[0].1),
        values(&want.outputs[0].1)
    );
}
