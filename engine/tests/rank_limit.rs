//! Rank is capped at `limit::MAX_RANK` (64, numpy's limit) wherever a user
//! can raise it, and batched matmul no longer recurses once per batch axis
//! (a rank-30000 broadcast used to overflow the stack).

use std::collections::HashMap;
use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};
use vigil_engine::graph::{NodeSpec, VarKind, VarSpec};
use vigil_engine::ops::view::{BroadcastTo, ExpandDims, Reshape};
use vigil_engine::tensor::limit::MAX_RANK;
use vigil_engine::tensor::resolve_reshape;
use vigil_engine::{
    Attrs, DType, Error, Executor, FeedFault, Graph, GraphBuilder, IndexSpec, Layout, Op, OpCtx, OpRegistry,
    Tensor, TypeInfo,
};

fn ones_then(n: usize, tail: &[usize]) -> Vec<usize> {
    let mut v = vec![1; n];
    v.extend_from_slice(tail);
    v
}

#[test]
fn max_rank_is_numpys() {
    assert_eq!(MAX_RANK, 64);
}

#[test]
fn layout_broadcast_to_caps_rank() {
    let l = Layout::contiguous(&[2, 2]);
    let e = l.broadcast_to(&ones_then(30000, &[2, 2])).unwrap_err();
    assert!(matches!(e, Error::Rank(_)), "{e:?}");
    let err = e.to_string();
    assert!(err.contains("rank 30002") && err.contains("64"), "{err}");
    // The message does not print 30000 dimensions.
    assert!(err.len() < 300, "{err}");
    assert!(l.broadcast_to(&ones_then(62, &[2, 2])).is_ok());
    assert!(l.broadcast_to(&ones_then(63, &[2, 2])).is_err());
}

#[test]
fn broadcast_to_op_caps_rank_in_factory_infer_and_compute() {
    let shape = ones_then(30000, &[2, 2]);
    let attrs = Attrs::new().with("shape", shape.clone());
    let err = OpRegistry::builtin()
        .make("broadcast_to", &attrs)
        .expect_err("the factory accepts rank 30002")
        .to_string();
    assert!(
        err.contains("broadcast_to") && err.contains("rank 30002"),
        "{err}"
    );
    let op = BroadcastTo { shape };
    assert!(op.infer(&[TypeInfo::known(DType::F64, &[2, 2])]).is_err());
    assert!(op.infer(&[TypeInfo::unknown(DType::F64)]).is_err());
    let a = Tensor::zeros(DType::F64, &[2, 2]).unwrap();
    assert!(op.compute(&[a], &mut OpCtx::new("b")).is_err());
}

#[test]
fn reshape_targets_cap_rank() {
    let target: Vec<i64> = vec![1; MAX_RANK + 1];
    let e = resolve_reshape(&[1], &target).unwrap_err();
    assert!(matches!(e, Error::Rank(_)), "{e:?}");
    assert!(e.to_string().contains("rank 65"), "{e}");
    assert!(resolve_reshape(&[1], &target[1..]).is_ok());
    let err = OpRegistry::builtin()
        .make("reshape", &Attrs::new().with("shape", target.clone()))
        .expect_err("the factory accepts rank 65")
        .to_string();
    assert!(err.contains("reshape") && err.contains("rank 65"), "{err}");
    let op = Reshape { shape: target };
    assert!(op.infer(&[TypeInfo::unknown(DType::F64)]).is_err());
    assert!(op.infer(&[TypeInfo::known(DType::F64, &[1])]).is_err());
    let t = Tensor::zeros(DType::F64, &[1]).unwrap();
    assert!(op
        .compute(std::slice::from_ref(&t), &mut OpCtx::new("r"))
        .is_err());
    assert!(t.reshape(&[1; 65]).is_err());
}

#[test]
fn expand_dims_caps_rank() {
    let full = ones_then(MAX_RANK - 1, &[2]);
    let l = Layout::contiguous(&full);
    let e = l.expand_dims(0).unwrap_err();
    assert!(matches!(e, Error::Rank(_)), "{e:?}");
    assert!(e.to_string().contains("rank 65"), "{e}");
    let t = Tensor::zeros(DType::F32, &full).unwrap();
    assert!(t.expand_dims(-1).is_err());
    assert!(t.squeeze(None).unwrap().expand_dims(0).is_ok());
    let op = ExpandDims { axis: 0 };
    let ty = TypeInfo::known(DType::F32, &full);
    assert!(op.infer(&[ty]).is_err());
    assert!(op.compute(&[t], &mut OpCtx::new("e")).is_err());
}

#[test]
fn views_and_constructors_cap_rank() {
    // New axes through create_view.
    let t = Tensor::zeros(DType::F32, &[2]).unwrap();
    let idx = vec![IndexSpec::NewAxis; MAX_RANK];
    let e = t.slice(&idx).unwrap_err();
    assert!(matches!(e, Error::Rank(_)), "{e:?}");
    assert!(e.to_string().contains("rank 65"), "{e}");
    assert!(t.slice(&idx[1..]).is_ok());
    assert!(Tensor::zeros(DType::F32, &[1; 65]).is_err());
    assert!(Tensor::from_vec(&[1; 65], vec![0i64]).is_err());
    assert!(Tensor::from_vec(&[1; 64], vec![0i64]).is_ok());
}

/// A reproduction: `broadcast_to(a[2,2], [1]*30000+[2,2])` then
/// `matmul(v, v)` overflowed the stack.
#[test]
fn deep_broadcast_then_matmul_is_an_error_not_a_stack_overflow() {
    let g = GraphBuilder::new("deep");
    let a = g.input("a", DType::F64, &[2, 2]);
    let built = (|| {
        let v = g
            .apply_named(
                "v",
                "broadcast_to",
                &[&a],
                Attrs::new().with("shape", ones_then(30000, &[2, 2])),
            )?
            .pop()
            .unwrap();
        let m = g
            .apply_named("m", "matmul", &[&v, &v], Attrs::new())?
            .pop()
            .unwrap();
        let graph = g.build(&[&m])?;
        let feeds = HashMap::from([("a".to_string(), Tensor::zeros(DType::F64, &[2, 2]).unwrap())]);
        Executor::new(&graph)?.run(&feeds).map(|_| ())
    })();
    let err = built.expect_err("rank 30002 ran").to_string();
    assert!(err.contains("'v'") && err.contains("rank"), "{err}");
}

/// A matmul with the full 62 batch axes still works (and gives the right
/// numbers through broadcast and stretched batch axes).
#[test]
fn matmul_at_the_rank_limit() {
    let a = Tensor::from_vec(&[2, 2], vec![1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let mut shape = ones_then(MAX_RANK - 3, &[3, 2, 2]);
    let v = a.broadcast_to(&shape).unwrap();
    let m = Tensor::from_vec(&[2, 2], vec![0.0f64, 1.0, 1.0, 0.0]).unwrap();
    let op = OpRegistry::builtin().make("matmul", &Attrs::new()).unwrap();
    let out = op.compute(&[v, m], &mut OpCtx::new("m")).unwrap().remove(0);
    assert_eq!(out.shape(), shape.as_slice());
    let got: Vec<f64> = out.to_array::<f64>().unwrap().iter().copied().collect();
    assert_eq!(got, [2.0, 1.0, 4.0, 3.0].repeat(3));
    // Integer path, batch axes from both sides.
    shape[0] = 2;
    let ai = Tensor::from_vec(&[2, 2], vec![1i64, 2, 3, 4])
        .unwrap()
        .broadcast_to(&shape)
        .unwrap();
    // Block j of b is the column [j + 1, j + 1]: a · b_j = [3, 7] * (j + 1).
    let bi = Tensor::from_vec(&[3, 2, 1], vec![1i64, 1, 2, 2, 3, 3]).unwrap();
    let out = op.compute(&[ai, bi], &mut OpCtx::new("m")).unwrap().remove(0);
    let mut want_shape = shape.clone();
    want_shape[MAX_RANK - 1] = 1;
    assert_eq!(out.shape(), want_shape.as_slice());
    let got: Vec<i64> = out.to_array::<i64>().unwrap().iter().copied().collect();
    assert_eq!(got, [3, 7, 6, 14, 9, 21].repeat(2));
}

#[test]
fn executor_refuses_a_fed_tensor_above_the_rank_limit() {
    // An input of any rank; the tensor is built through ndarray, which
    // has no rank limit.
    let sources = vec![VarSpec {
        name: "x".into(),
        ty: TypeInfo::unknown(DType::F64),
        kind: VarKind::Input { mutable: false },
    }];
    let neg = OpRegistry::builtin().make("neg", &Attrs::new()).unwrap();
    let nodes = vec![NodeSpec {
        name: "y".into(),
        op: Arc::clone(&neg),
        inputs: vec!["x".into()],
        outputs: vec!["y".into()],
    }];
    let graph = Graph::new("any_rank", sources, nodes, &["y".to_string()]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let deep = Tensor::from_array(&ArrayD::<f64>::zeros(IxDyn(&[1; 65])));
    let err = exec
        .run(&HashMap::from([("x".to_string(), deep)]))
        .map(|_| ())
        .expect_err("a rank-65 feed ran");
    assert!(
        matches!(&err, Error::Feed { input, fault: FeedFault::Rank, .. } if input == "x"),
        "{err:?}"
    );
    assert!(err.to_string().contains("rank 65"), "{err}");
    let ok = Tensor::from_array(&ArrayD::<f64>::zeros(IxDyn(&[1; 64])));
    assert!(exec.run(&HashMap::from([("x".to_string(), ok)])).is_ok());
}
