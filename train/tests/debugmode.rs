//! The training step (forward, autodiff backward, in-place Adam updates)
//! under DebugMode: no findings, and the gradient check runs on the
//! gradients autodiff built.

use std::collections::HashMap;

use vigil_autodiff::grad;
use vigil_debugmode::{DebugConfig, DebugMode};
use vigil_engine::{Attrs, DType, Graph, GraphBuilder, Tensor};
use vigil_train::{build_step, parameters, Adam, Optimizer};

fn mlp() -> (Graph, HashMap<String, Tensor>) {
    let b = GraphBuilder::new("mlp");
    let x = b.input("x", DType::F32, &[-1, 3]);
    let labels = b.input("labels", DType::I64, &[-1]);
    let w0 = b.parameter(
        "w0",
        Tensor::from_vec(&[3, 4], (0..12).map(|i| (i as f32 * 0.37).sin()).collect()).unwrap(),
    );
    let b0 = b.parameter(
        "b0",
        Tensor::from_vec(&[4], vec![0.1f32, -0.1, 0.0, 0.05]).unwrap(),
    );
    let w1 = b.parameter(
        "w1",
        Tensor::from_vec(&[4, 2], (0..8).map(|i| (i as f32 * 0.71).cos()).collect()).unwrap(),
    );
    let h = x.matmul(&w0).unwrap().add(&b0).unwrap().relu().unwrap();
    let loss = b
        .apply_named(
            "loss",
            "cross_entropy",
            &[&h.matmul(&w1).unwrap(), &labels],
            Attrs::new(),
        )
        .unwrap()
        .remove(0);
    let feeds = HashMap::from([
        (
            "x".to_string(),
            Tensor::from_vec(&[4, 3], (0..12).map(|i| (i as f32 * 0.53).cos()).collect()).unwrap(),
        ),
        (
            "labels".to_string(),
            Tensor::from_vec(&[4], vec![0i64, 1, 1, 0]).unwrap(),
        ),
    ]);
    (b.build(&[&loss]).unwrap(), feeds)
}

#[test]
fn the_training_step_runs_under_debugmode_with_no_findings() {
    let (forward, mut feeds) = mlp();
    let adam = Adam::new(0.01).weight_decay(0.01);
    let step = build_step(&forward, "loss", &adam).unwrap();
    assert!(step.nodes().iter().any(|n| !n.op.destroy_map().is_empty()));
    feeds.extend(adam.feeds(1).unwrap());
    let report = DebugMode::new(DebugConfig::default())
        .check(&step, &feeds)
        .unwrap();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}

#[test]
fn debugmodes_gradient_check_uses_autodiffs_gradients() {
    let (forward, feeds) = mlp();
    let params = parameters(&forward);
    let wrt: Vec<&str> = params.iter().map(String::as_str).collect();
    let g = grad(&forward, "loss", &wrt).unwrap();
    let cfg = DebugConfig::default().with_checks("gradient").unwrap();
    let report = DebugMode::new(cfg.clone()).check(&g, &feeds).unwrap();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}
