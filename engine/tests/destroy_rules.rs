//! The destroy handler's refusals, after the cases in Theano's own test
//! suite, and the in-place pass's decisions on them.

use std::collections::HashMap;
use std::sync::Arc;

use vigil_engine::ops::elementwise::{BinKind, Binary};
use vigil_engine::ops::{check_arity, Arity, InplaceVariant, TypeInfo};
use vigil_engine::{
    inplace, Attrs, DType, DestroyHandler, Executor, GraphBuilder, Op, OpCtx, OpRegistry, Rule, Tensor,
};

fn rules(g: &vigil_engine::Graph) -> Vec<Rule> {
    let dh = DestroyHandler::new(g);
    let mut r: Vec<Rule> = dh.check().iter().map(|v| v.rule).collect();
    if let Err(v) = dh.schedule() {
        r.push(v.rule);
    }
    r
}

/// `add_inplace` that does not declare it tolerates reading the destroyed
/// variable on its other input.
struct StrictAddInplace;
impl Op for StrictAddInplace {
    fn name(&self) -> &str {
        "strict_add_inplace"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> vigil_engine::Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> vigil_engine::Result<Vec<Tensor>> {
        Binary::new(BinKind::Add, true).compute(inputs, ctx)
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
}

fn registry() -> OpRegistry {
    let mut r = OpRegistry::builtin();
    r.register_op(Arc::new(StrictAddInplace));
    r.register_op(Arc::new(TwoOut { inplace: false }));
    r.register_op(Arc::new(TwoOut { inplace: true }));
    r
}

#[test]
fn add_inplace_x_x_needs_declared_tolerance() {
    let g = GraphBuilder::with_registry("t", registry());
    let x = g.mutable_input("x", DType::F32, &[3]);
    let y = x.add_inplace(&x).unwrap();
    assert!(rules(&g.build(&[&y]).unwrap()).is_empty());

    let g = GraphBuilder::with_registry("t", registry());
    let x = g.mutable_input("x", DType::F32, &[3]);
    let y = x.op("strict_add_inplace", &[&x], Attrs::new()).unwrap();
    assert_eq!(rules(&g.build(&[&y]).unwrap()), vec![Rule::ReadsDestroyed]);
}

#[test]
fn add_inplace_x_transpose_x_is_refused() {
    let g = GraphBuilder::new("t");
    let x = g.mutable_input("x", DType::F32, &[3, 3]);
    let xt = x.transpose(None).unwrap();
    let y = x.add_inplace(&xt).unwrap();
    let graph = g.build(&[&y]).unwrap();
    assert_eq!(rules(&graph), vec![Rule::ReadsDestroyed]);
    let e = Executor::new(&graph).err().expect("refused").to_string();
    assert!(e.contains("add_inplace_") && e.contains("reads_destroyed"), "{e}");
}

#[test]
fn reading_x_after_it_was_destroyed_is_a_cycle() {
    // mul(add_inplace(x, z), x): mul reads x, so the destroyer must run after
    // it, but mul needs the destroyer's output.
    let g = GraphBuilder::new("t");
    let x = g.mutable_input("x", DType::F32, &[2, 2]);
    let z = g.input("z", DType::F32, &[2, 2]);
    let y = x.add_inplace(&z).unwrap().mul(&x).unwrap();
    assert_eq!(rules(&g.build(&[&y]).unwrap()), vec![Rule::Cycle]);
}

#[test]
fn two_destroyers_of_one_variable_are_refused() {
    let g = GraphBuilder::new("t");
    let x = g.mutable_input("x", DType::F32, &[3]);
    let a = x.relu_inplace().unwrap();
    let b = x.neg_inplace().unwrap();
    let graph = g.build(&[&a, &b]).unwrap();
    assert!(rules(&graph).contains(&Rule::TwoDestroyers));
    // Also through two views of one root.
    let g = GraphBuilder::new("t");
    let x = g.mutable_input("x", DType::F32, &[3, 3]);
    let a = x.transpose(None).unwrap().relu_inplace().unwrap();
    let b = x.reshape(&[9]).unwrap().neg_inplace().unwrap();
    assert!(rules(&g.build(&[&a, &b]).unwrap()).contains(&Rule::TwoDestroyers));
}

#[test]
fn mutual_destroyers_cannot_coexist() {
    let g = GraphBuilder::new("t");
    let x = g.mutable_input("x", DType::F32, &[3]);
    let y = g.mutable_input("y", DType::F32, &[3]);
    let a = x.add_inplace(&y).unwrap();
    let b = y.add_inplace(&x).unwrap();
    assert_eq!(rules(&g.build(&[&a, &b]).unwrap()), vec![Rule::Cycle]);
}

#[test]
fn destroying_protected_values_is_refused_even_through_a_view() {
    let g = GraphBuilder::new("t");
    let x = g.input("x", DType::F32, &[3, 3]);
    let y = x.relu_inplace().unwrap();
    assert_eq!(rules(&g.build(&[&y]).unwrap()), vec![Rule::Protected]);

    let g = GraphBuilder::new("t");
    let x = g.input("x", DType::F32, &[3, 3]);
    let v = x.view(&[vigil_engine::IndexSpec::Point(1)]).unwrap();
    let y = v.neg_inplace().unwrap();
    let graph = g.build(&[&y]).unwrap();
    assert_eq!(rules(&graph), vec![Rule::Protected]);
    let e = Executor::new(&graph).err().expect("refused").to_string();
    assert!(e.contains("protected input 'x'") && e.contains("through"), "{e}");

    // A constant, and a graph output that views the destroyed root.
    let g = GraphBuilder::new("t");
    let c = g.constant("c", Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap());
    let y = c.exp_inplace().unwrap();
    assert_eq!(rules(&g.build(&[&y]).unwrap()), vec![Rule::Protected]);
    let g = GraphBuilder::new("t");
    let x = g.mutable_input("x", DType::F32, &[2, 2]);
    let t = x.transpose(None).unwrap();
    let y = x.exp_inplace().unwrap();
    assert!(rules(&g.build(&[&t, &y]).unwrap()).contains(&Rule::Protected));
}

#[test]
fn chains_of_inplace_ops_are_legal() {
    let g = GraphBuilder::new("t");
    let x = g.mutable_input("x", DType::F32, &[4]);
    let y = x
        .relu_inplace()
        .unwrap()
        .neg_inplace()
        .unwrap()
        .exp_inplace()
        .unwrap();
    let graph = g.build(&[&y]).unwrap();
    assert!(rules(&graph).is_empty());
    let xt = Tensor::from_vec(&[4], vec![-1.0f32, 0.0, 1.0, 2.0]).unwrap();
    let out = Executor::new(&graph)
        .unwrap()
        .run(&HashMap::from([("x".into(), xt.clone())]))
        .unwrap();
    let y = out.get(y.name()).unwrap();
    assert!(y.same_buffer(&xt), "the chain works in the input's buffer");
    let v = y.to_f64_vec().unwrap();
    let want = [1.0, 1.0, (-1.0f64).exp(), (-2.0f64).exp()];
    for (a, b) in v.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{v:?}");
    }
}

/// Two outputs: `(a * 2, b * 2)`. Its in-place variant overwrites `b` with
/// output 1 and leaves `a` alone.
struct TwoOut {
    inplace: bool,
}
impl Op for TwoOut {
    fn name(&self) -> &str {
        if self.inplace {
            "two_out_inplace1"
        } else {
            "two_out"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[TypeInfo]) -> vigil_engine::Result<Vec<TypeInfo>> {
        Ok(vec![inputs[0].clone(), inputs[1].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> vigil_engine::Result<Vec<Tensor>> {
        let a = Binary::new(BinKind::Add, false).compute(&[inputs[0].clone(), inputs[0].clone()], ctx)?;
        let b = if self.inplace {
            Binary::new(BinKind::Add, true).compute(&[inputs[1].clone(), inputs[1].clone()], ctx)?
        } else {
            let mut c2 = OpCtx::new("two_out.1");
            Binary::new(BinKind::Add, false).compute(&[inputs[1].clone(), inputs[1].clone()], &mut c2)?
        };
        Ok(vec![a[0].clone(), b[0].clone()])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(1, 1)]
        } else {
            vec![]
        }
    }
    fn tolerates_same_input(&self) -> bool {
        true
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return vec![];
        }
        vec![InplaceVariant {
            op: Arc::new(TwoOut { inplace: true }),
            inputs: vec![0, 1],
        }]
    }
}

#[test]
fn two_output_op_works_in_place_on_one_input_only() {
    let g = GraphBuilder::with_registry("t", registry());
    let a = g.input("a", DType::F32, &[2]);
    let b = g.input("b", DType::F32, &[2]);
    let s = a.add(&b).unwrap(); // an intermediate the pass may destroy
    let outs = g.apply_named("two", "two_out", &[&a, &s], Attrs::new()).unwrap();
    let graph = g.build(&[&outs[0], &outs[1]]).unwrap();
    let pass = inplace::run(&graph).unwrap();
    let two = pass.graph.node(pass.graph.node_id("two").unwrap());
    assert_eq!(two.op.name(), "two_out_inplace1");
    assert!(rules(&pass.graph).is_empty());
    let feeds = HashMap::from([
        (
            "a".to_string(),
            Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap(),
        ),
        (
            "b".to_string(),
            Tensor::from_vec(&[2], vec![10.0f32, 20.0]).unwrap(),
        ),
    ]);
    let out = Executor::new(&pass.graph).unwrap().run(&feeds).unwrap();
    assert_eq!(out.get("two.0").unwrap().to_f64_vec().unwrap(), vec![2.0, 4.0]);
    assert_eq!(out.get("two.1").unwrap().to_f64_vec().unwrap(), vec![22.0, 44.0]);
    // `a` was read, not destroyed.
    assert_eq!(feeds["a"].to_f64_vec().unwrap(), vec![1.0, 2.0]);
}
