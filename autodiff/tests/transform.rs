//! The transform as a whole: error cases, a rule the check must catch,
//! users' own rules, the MLP step, and in-place rewriting of the result.

mod common;

use std::collections::HashMap;

use common::{failures_with, param, values, weighted_loss};
use vigil_autodiff::{grad, Autodiff, AutodiffError, GradCheckConfig, GradRegistry};
use vigil_engine::{inplace, Attrs, DType, Executor, GraphBuilder, OpRegistry, Tensor};

#[test]
fn a_wrong_rule_is_caught_by_the_check() {
    let b = GraphBuilder::new("wrong");
    let x = param(&b, "x", &[3]);
    let loss = weighted_loss(&b, &x.exp().unwrap());
    let g = b.build(&[&loss]).unwrap();
    let mut rules = GradRegistry::builtin();
    // d exp(x) = 2 exp(x): wrong by a factor of two.
    rules.register("exp", |c| {
        Ok(vec![Some(
            c.grad()?
                .mul(&c.outputs[0])?
                .add(&c.grad()?.mul(&c.outputs[0])?)?,
        )])
    });
    let g = Autodiff::new(OpRegistry::builtin(), rules)
        .grad(&g, loss.name(), &["x"])
        .unwrap();
    let bad = failures_with(&g, &HashMap::new(), &GradCheckConfig::default());
    assert_eq!(bad.len(), 3, "{bad:?}");
}

#[test]
fn errors_name_the_variable_or_node() {
    let b = GraphBuilder::new("errs");
    let x = param(&b, "x", &[3]);
    let y = x.exp().unwrap();
    let loss = y.sum(None).unwrap();
    let g = b.build(&[&loss, &y]).unwrap();
    assert!(
        matches!(grad(&g, "nope", &["x"]), Err(AutodiffError::UnknownVariable { name, .. }) if name == "nope")
    );
    assert!(matches!(
        grad(&g, y.name(), &["x"]),
        Err(AutodiffError::LossNotScalar { .. })
    ));
    let e = grad(&g, loss.name(), &["missing"]).unwrap_err();
    assert_eq!(e.to_string(), "graph 'errs' has no variable 'missing'");

    let b = GraphBuilder::new("noroute");
    let x = param(&b, "x", &[3]);
    let loss = x.op("dropout", &[], Attrs::new()).unwrap().sum(None).unwrap();
    let g = b.build(&[&loss]).unwrap();
    match grad(&g, loss.name(), &["x"]) {
        Err(AutodiffError::NoRule { op, .. }) => assert_eq!(op, "dropout"),
        other => panic!("expected NoRule, got {:?}", other.map(|_| ())),
    }

    let b = GraphBuilder::new("ints");
    let i = b.parameter("i", Tensor::from_vec(&[2], vec![1i64, 2]).unwrap());
    let loss = i.cast(DType::F64).unwrap().sum(None).unwrap();
    let g = b.build(&[&loss]).unwrap();
    assert!(matches!(
        grad(&g, loss.name(), &["i"]),
        Err(AutodiffError::NotFloat { .. })
    ));
}

#[test]
fn a_users_rule_is_used_for_their_op() {
    // "double" is the users' name for x * 2, built from the built-in mul's rule.
    let b = GraphBuilder::new("users");
    let x = param(&b, "x", &[3]);
    let loss = weighted_loss(&b, &x.op("exp", &[], Attrs::new()).unwrap());
    let g = b.build(&[&loss]).unwrap();
    let mut rules = GradRegistry::empty();
    assert!(matches!(
        Autodiff::new(OpRegistry::builtin(), rules.clone()).grad(&g, loss.name(), &["x"]),
        Err(AutodiffError::NoRule { .. })
    ));
    let builtin = GradRegistry::builtin();
    for op in ["exp", "mul", "sum"] {
        let f = builtin.get(op).unwrap().clone();
        rules.register(op, move |c| f(c));
    }
    let g = Autodiff::new(OpRegistry::builtin(), rules)
        .grad(&g, loss.name(), &["x"])
        .unwrap();
    assert!(failures_with(&g, &HashMap::new(), &GradCheckConfig::default()).is_empty());
}

/// A 4-5-3 tanh/relu MLP with softmax cross-entropy on a batch whose size
/// is only known at run time.
fn mlp() -> (vigil_engine::Graph, String, HashMap<String, Tensor>) {
    let b = GraphBuilder::new("mlp");
    let x = b.input("x", DType::F64, &[-1, 4]);
    let labels = b.input("labels", DType::I64, &[-1]);
    let w0 = param(&b, "w0", &[4, 5]);
    let b0 = param(&b, "b0", &[5]);
    let w1 = param(&b, "w1", &[5, 3]);
    let b1 = param(&b, "b1", &[3]);
    let h = x.matmul(&w0).unwrap().add(&b0).unwrap().tanh().unwrap();
    let logits = h.matmul(&w1).unwrap().add(&b1).unwrap().relu().unwrap();
    let loss = logits.op("cross_entropy", &[&labels], Attrs::new()).unwrap();
    let g = b.build(&[&loss]).unwrap();
    let feeds = HashMap::from([
        (
            "x".to_string(),
            Tensor::from_vec(&[6, 4], values(24, 5, -1.0, 1.0)).unwrap(),
        ),
        (
            "labels".to_string(),
            Tensor::from_vec(&[6], vec![0i64, 1, 2, 2, 1, 0]).unwrap(),
        ),
    ]);
    (g, loss.name().to_string(), feeds)
}

#[test]
fn mlp_step_gradients_match_finite_differences() {
    let (g, loss, feeds) = mlp();
    let g = grad(&g, &loss, &["w0", "b0", "w1", "b1"]).unwrap();
    assert_eq!(g.outputs().len(), 5);
    let bad = failures_with(&g, &feeds, &GradCheckConfig::default());
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn the_inplace_pass_rewrites_backward_nodes_and_results_agree() {
    let (g, loss, feeds) = mlp();
    let g = grad(&g, &loss, &["w0", "b0", "w1", "b1"]).unwrap();
    assert!(
        g.nodes().iter().all(|n| n.op.destroy_map().is_empty()),
        "backward built pure"
    );
    let pass = inplace::run(&g).unwrap();
    assert!(pass.accepted() > 0);
    let pure = Executor::new(&g).unwrap().run(&feeds).unwrap();
    let inpl = Executor::new(&pass.graph).unwrap().run(&feeds).unwrap();
    for (name, t) in &pure.outputs {
        assert_eq!(
            t.to_f64_vec().unwrap(),
            inpl.get(name).unwrap().to_f64_vec().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn an_unreached_parameter_gets_zeros() {
    let b = GraphBuilder::new("unused");
    let x = param(&b, "x", &[3]);
    let _u = param(&b, "u", &[2]);
    let loss = x.sum(None).unwrap();
    let g = grad(&b.build(&[&loss]).unwrap(), loss.name(), &["x", "u"]).unwrap();
    let out = Executor::new(&g).unwrap().run(&HashMap::new()).unwrap();
    assert_eq!(out.get("grad:u").unwrap().to_f64_vec().unwrap(), vec![0.0, 0.0]);
    assert_eq!(out.get("grad:x").unwrap().to_f64_vec().unwrap(), vec![1.0; 3]);
}
