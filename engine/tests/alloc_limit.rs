//! The allocation limit. It is process-global, so this file is its own test
//! binary with a single test that restores the default when it ends.

use std::collections::HashMap;

use vigil_engine::error::Error;
use vigil_engine::tensor::limit::{alloc_limit, set_alloc_limit};
use vigil_engine::{DType, Executor, GraphBuilder, Tensor};

/// Restores the default limit even when an assertion fails.
struct Restore;
impl Drop for Restore {
    fn drop(&mut self) {
        set_alloc_limit(0);
    }
}

#[test]
fn allocations_over_the_limit_are_errors_naming_the_node_and_size() {
    let _restore = Restore;
    let default = alloc_limit();
    assert!(default > 1 << 20);
    set_alloc_limit(1000);
    assert_eq!(alloc_limit(), 1000);

    // Outside a graph: no node, the exact byte count.
    match Tensor::zeros(DType::F64, &[200]) {
        Err(Error::AllocTooLarge {
            node: None,
            bytes: 1600,
            limit: 1000,
        }) => {}
        other => panic!("expected AllocTooLarge, got {other:?}"),
    }
    assert!(Tensor::zeros(DType::F64, &[125]).is_ok());
    assert!(Tensor::uninit(DType::Bool, &[1001]).is_err());
    // A shape whose element count overflows is an error, not a panic.
    assert!(Tensor::zeros(DType::F32, &[usize::MAX, 2]).is_err());

    // In a graph: an outer sum of two 100-element vectors needs 80000 bytes.
    let feeds = HashMap::from([
        (
            "a".to_string(),
            Tensor::from_vec(&[100, 1], vec![1.0f64; 100]).unwrap(),
        ),
        (
            "b".to_string(),
            Tensor::from_vec(&[1, 100], vec![2.0f64; 100]).unwrap(),
        ),
    ]);
    // A broadcast view of that size allocates nothing.
    let g = GraphBuilder::new("limit_view");
    let a = g.input("a", DType::F64, &[100, 1]);
    let _b = g.input("b", DType::F64, &[1, 100]);
    let wide = g
        .apply_named(
            "wide",
            "broadcast_to",
            &[&a],
            vigil_engine::Attrs::new().with("shape", vec![100, 100]),
        )
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&wide]).unwrap();
    let out = Executor::new(&graph).unwrap().run(&feeds).unwrap();
    assert_eq!(out.get("wide").unwrap().shape(), &[100, 100]);

    let g = GraphBuilder::new("limit");
    let a = g.input("a", DType::F64, &[100, 1]);
    let b = g.input("b", DType::F64, &[1, 100]);
    let outer = g
        .apply_named("outer", "add", &[&a, &b], Default::default())
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&outer]).unwrap();
    let err = match Executor::new(&graph).unwrap().run(&feeds) {
        Ok(_) => panic!("the outer sum should exceed the limit"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(
        matches!(&err, Error::AllocTooLarge { node: Some(n), bytes: 80000, limit: 1000 } if n == "outer"),
        "{err:?}"
    );
    assert_eq!(
        msg,
        "node 'outer': allocation of 78.1 KiB (80000 bytes) exceeds the limit of 1000 bytes"
    );

    // A reshape that must copy is refused the same way; one that can be a
    // view is not.
    let reshape = |spec: Vec<i64>, transpose: bool| {
        let g = GraphBuilder::new("limit_reshape");
        let x = g.input("x", DType::F64, &[20, 10]);
        let src = if transpose { x.transpose(None).unwrap() } else { x };
        let r = g
            .apply_named(
                "flat",
                "reshape",
                &[&src],
                vigil_engine::Attrs::new().with("shape", spec),
            )
            .unwrap()
            .pop()
            .unwrap();
        let graph = g.build(&[&r]).unwrap();
        let feeds = HashMap::from([(
            "x".to_string(),
            Tensor::from_vec(&[20, 10], vec![0.5f64; 200]).unwrap(),
        )]);
        Executor::new(&graph)
            .unwrap()
            .run(&feeds)
            .map(|o| o.outputs.len())
    };
    assert_eq!(reshape(vec![10, 20], false).unwrap(), 1);
    assert_eq!(reshape(vec![-1], false).unwrap(), 1);
    let msg = reshape(vec![-1], true).unwrap_err().to_string();
    assert!(
        msg.starts_with("node 'flat': allocation of") && msg.contains("(1600 bytes)"),
        "{msg}"
    );

    // 0 restores the default.
    set_alloc_limit(0);
    assert_eq!(alloc_limit(), default);
    assert!(Tensor::zeros(DType::F64, &[200]).is_ok());
}
