//! Element counts that overflow are errors, never wrapped products: layouts,
//! `broadcast_to`, `reshape`, tensor constructors and the memory plan.
//!
//! An element count is the numpy/ndarray one: the product of the non-zero
//! dimensions must fit in `isize` even when another dimension is 0 (numpy
//! refuses `np.empty((0, 2**32, 2**32, 2**32, 2**32))`: "array is too big"),
//! so an empty shape can never turn into a huge non-empty one (by a reduction
//! over its zero axis, say).

use std::collections::HashMap;

use vigil_engine::memory;
use vigil_engine::ops::view::{BroadcastTo, Reshape};
use vigil_engine::tensor::limit::numel;
use vigil_engine::tensor::resolve_reshape;
use vigil_engine::{
    assert_cause, Attrs, DType, Executor, GraphBuilder, Layout, Op, OpCtx, OpRegistry, Tensor, TypeInfo,
};

const G: usize = 1 << 32;

#[test]
fn numel_checks_the_non_zero_dims_even_when_a_dim_is_zero() {
    assert_eq!(numel(&[]).unwrap(), 1);
    assert_eq!(numel(&[2, 3]).unwrap(), 6);
    assert_eq!(numel(&[0, 5]).unwrap(), 0);
    assert_eq!(numel(&[G, G / 4]).unwrap(), 1 << 62);
    let err = numel(&[G, G]).unwrap_err();
    assert_cause!(err, Shape);
    // numpy: "array is too big".
    assert!(numel(&[0, G, G, G, G]).is_err());
    assert!(numel(&[G, G, 0]).is_err());
    // More elements than isize::MAX cannot be indexed with signed strides
    // (ndarray refuses such views too).
    assert!(numel(&[G, G / 2]).is_err());
}

#[test]
fn layout_size_never_wraps() {
    let l = Layout::new(vec![G, G], vec![0, 0], 0);
    assert_eq!(l.size(), usize::MAX);
    let l = Layout::new(vec![0, G, G, G], vec![0, 0, 0, 0], 0);
    assert_eq!(l.size(), 0);
    assert_eq!(Layout::contiguous(&[2, 3, 4]).size(), 24);
}

#[test]
fn layout_broadcast_to_rejects_overflowing_shapes() {
    let one = Layout::contiguous(&[1]);
    let err = one.broadcast_to(&[G, G]).unwrap_err();
    assert_cause!(err, Shape);
    assert!(one.broadcast_to(&[0, G, G, G, G]).is_err());
    assert!(one.broadcast_to(&[G, G / 4]).is_ok());
    let t = Tensor::from_vec(&[1], vec![1.0f32]).unwrap();
    assert!(t.broadcast_to(&[G, G]).is_err());
    assert!(t.broadcast_to(&[0, G, G, G, G]).is_err());
}

#[test]
fn layout_reshape_does_not_accept_a_wrapped_product() {
    // 2^32 * 2^32 wraps to 0 in release builds; an empty layout must not
    // "reshape" into it.
    let empty = Layout::contiguous(&[0]);
    assert_eq!(empty.reshape(&[G, G]), None);
    assert_eq!(empty.reshape(&[0, G, G, G]), None);
    assert!(empty.reshape(&[0, 3]).is_some());
}

#[test]
fn tensor_constructors_reject_zero_sized_overflowing_shapes() {
    assert!(Tensor::zeros(DType::F32, &[0, G, G, G, G]).is_err());
    assert!(Tensor::uninit(DType::F64, &[G, G, 0]).is_err());
    assert!(Tensor::from_vec::<f32>(&[0, G, G, G, G], vec![]).is_err());
    assert!(Tensor::zeros(DType::F32, &[0, 3]).is_ok());
}

#[test]
fn broadcast_to_op_rejects_overflow_in_factory_infer_and_compute() {
    let attrs = Attrs::new().with("shape", vec![G, G]);
    let err = OpRegistry::builtin()
        .make("broadcast_to", &attrs)
        .expect_err("the factory accepts an overflowing shape");
    assert_cause!(err, Attr, "broadcast_to", "too many elements");

    let op = BroadcastTo { shape: vec![G, G] };
    let err = op.infer(&[TypeInfo::known(DType::F32, &[1])]).unwrap_err();
    assert_cause!(err, Shape);
    // Also with an input of unknown shape.
    assert!(op.infer(&[TypeInfo::unknown(DType::F32)]).is_err());
    let a = Tensor::from_vec(&[1], vec![1.0f32]).unwrap();
    assert!(op
        .compute(std::slice::from_ref(&a), &mut OpCtx::new("b"))
        .is_err());
    let op = BroadcastTo {
        shape: vec![0, G, G, G, G],
    };
    assert!(op.infer(&[TypeInfo::known(DType::F32, &[1])]).is_err());
    assert!(op.compute(&[a], &mut OpCtx::new("b")).is_err());
}

#[test]
fn resolve_reshape_uses_checked_products() {
    // The source count itself overflows.
    let err = resolve_reshape(&[G, G], &[-1]).unwrap_err();
    assert_cause!(err, Shape);
    // The target's known dims overflow though the count is 0.
    assert!(resolve_reshape(&[0], &[0, G as i64, G as i64, G as i64]).is_err());
    assert!(resolve_reshape(&[0], &[G as i64, G as i64, 0]).is_err());
    assert!(resolve_reshape(&[2], &[G as i64, G as i64, -1]).is_err());
    // Unchanged behaviour for sane shapes.
    assert_eq!(resolve_reshape(&[2, 3], &[-1]).unwrap(), vec![6]);
    assert_eq!(resolve_reshape(&[0, 3], &[3, -1, 1]).unwrap(), vec![3, 0, 1]);
    assert_eq!(resolve_reshape(&[0, 3], &[0, 5]).unwrap(), vec![0, 5]);
    assert!(resolve_reshape(&[0, 3], &[0, -1]).is_err());
    // The Reshape op's inference goes through the same checks.
    let op = Reshape {
        shape: vec![0, G as i64, G as i64, G as i64],
    };
    assert!(op.infer(&[TypeInfo::known(DType::F32, &[0])]).is_err());
    let op = Reshape { shape: vec![-1] };
    assert!(op.infer(&[TypeInfo::known(DType::F32, &[G, G])]).is_err());
}

/// A reproduction: `broadcast_to(a[1], [2^32, 2^32])` then
/// `reshape([-1])` used to run and give a (0,) output.
#[test]
fn broadcast_then_reshape_of_an_overflowing_shape_is_an_error() {
    let g = GraphBuilder::new("overflow");
    let a = g.input("a", DType::F32, &[1]);
    let built = (|| {
        let b = g
            .apply_named("b", "broadcast_to", &[&a], Attrs::new().with("shape", vec![G, G]))?
            .pop()
            .unwrap();
        let r = g
            .apply_named("r", "reshape", &[&b], Attrs::new().with("shape", vec![-1i64]))?
            .pop()
            .unwrap();
        let graph = g.build(&[&r])?;
        let feeds = HashMap::from([("a".to_string(), Tensor::from_vec(&[1], vec![1.0f32]).unwrap())]);
        Executor::new(&graph)?
            .run(&feeds)
            .map(|o| o.get("r").unwrap().shape().to_vec())
    })();
    let err = built.expect_err("an overflowing broadcast ran");
    assert_cause!(err, Attr, "'b'", "too many elements");
}

/// A graph whose static shapes are valid (at most isize::MAX elements) but
/// whose byte counts do not fit in u64.
#[test]
fn memory_plan_treats_overflowing_byte_counts_as_unknown() {
    let g = GraphBuilder::new("plan");
    let a = g.input("a", DType::F64, &[1]);
    // 2^62 elements of 8 bytes: 2^65 bytes.
    let huge = g
        .apply_named(
            "huge",
            "broadcast_to",
            &[&a],
            Attrs::new().with("shape", vec![G, G / 4]),
        )
        .unwrap()
        .pop()
        .unwrap();
    let n = g
        .apply_named("n", "neg", &[&huge], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    // 2^60 elements of 8 bytes each: 2^63 bytes, two of them live at once.
    let big = g
        .apply_named(
            "big",
            "broadcast_to",
            &[&a],
            Attrs::new().with("shape", vec![G, G / 16]),
        )
        .unwrap()
        .pop()
        .unwrap();
    let p = g
        .apply_named("p", "neg", &[&big], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    let q = g
        .apply_named("q", "exp", &[&big], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&n, &p, &q]).unwrap();
    let order: Vec<usize> = (0..graph.nodes().len()).collect();
    let plan = memory::plan(&graph, &order);
    let by_owner = |name: &str| plan.buffers.iter().find(|b| b.owner == name).unwrap().bytes;
    assert_eq!(by_owner("n"), None);
    assert_eq!(by_owner("p"), Some(1 << 63));
    assert_eq!(plan.unknown_buffers, 1);
    // Two buffers of 2^63 bytes: the peak saturates instead of wrapping.
    assert_eq!(plan.peak_bytes, u64::MAX);
}
