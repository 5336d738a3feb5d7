//! The destroy handler reasons about variables, so two bound values that
//! share one buffer, one of them overwritten in place, would give wrong
//! results. The executor refuses such feeds before running anything.

use std::collections::HashMap;

use vigil_engine::{Attrs, DType, Error, Executor, FeedFault, Graph, GraphBuilder, IndexSpec, Tensor};

/// The input a run refused for sharing a buffer, and the message.
fn refused_as_shared<T>(r: vigil_engine::Result<T>) -> (String, String) {
    match r.map(|_| ()) {
        Err(Error::Feed {
            input,
            fault: FeedFault::Shared,
            msg,
        }) => (input, msg),
        other => panic!("not refused as a shared buffer: {other:?}"),
    }
}

fn f64s(shape: &[usize], v: &[f64]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

fn feeds(pairs: &[(&str, &Tensor)]) -> HashMap<String, Tensor> {
    pairs.iter().map(|(n, t)| (n.to_string(), (*t).clone())).collect()
}

/// z = add_inplace(x, c) destroys mutable input x; w = neg(y) reads y.
fn destroy_and_read() -> Graph {
    let g = GraphBuilder::new("alias");
    let x = g.mutable_input("x", DType::F64, &[3]);
    let y = g.input("y", DType::F64, &[3]);
    let c = g.constant("c", f64s(&[3], &[10.0, 20.0, 30.0]));
    let z = g
        .apply_named("z", "add_inplace", &[&x, &c], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    let w = g
        .apply_named("w", "neg", &[&y], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    g.build(&[&z, &w]).unwrap()
}

#[test]
fn one_buffer_fed_as_a_destroyed_and_a_read_input_is_refused() {
    let graph = destroy_and_read();
    let exec = Executor::new(&graph).unwrap();
    let t = f64s(&[3], &[1.0, 2.0, 3.0]);
    let (input, msg) = refused_as_shared(exec.run(&feeds(&[("x", &t), ("y", &t)])));
    assert_eq!(input, "x");
    assert!(msg.contains("inputs 'x' and 'y'"), "{msg}");
    // Nothing ran: the fed buffer is untouched.
    assert_eq!(vals(&t), vec![1.0, 2.0, 3.0]);

    // Views of one buffer share it too, even when the elements differ.
    let base = f64s(&[6], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let lo = base.slice(&[IndexSpec::range(0, 3, 1)]).unwrap();
    let hi = base.slice(&[IndexSpec::range(3, 6, 1)]).unwrap();
    let (input, msg) = refused_as_shared(exec.run(&feeds(&[("x", &hi), ("y", &lo)])));
    assert_eq!(input, "x");
    assert!(msg.contains("'x'") && msg.contains("'y'"), "{msg}");

    // Separate copies run, with the right numbers.
    let out = exec
        .run(&feeds(&[("x", &t.deep_copy().unwrap()), ("y", &t)]))
        .unwrap();
    assert_eq!(vals(out.get("z").unwrap()), vec![11.0, 22.0, 33.0]);
    assert_eq!(vals(out.get("w").unwrap()), vec![-1.0, -2.0, -3.0]);
}

#[test]
fn one_buffer_fed_to_inputs_nobody_destroys_is_fine() {
    let g = GraphBuilder::new("shared_reads");
    let x = g.mutable_input("x", DType::F64, &[3]);
    let y = g.input("y", DType::F64, &[3]);
    let s = g
        .apply_named("s", "add", &[&x, &y], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&s]).unwrap();
    let t = f64s(&[3], &[1.0, 2.0, 3.0]);
    let out = Executor::new(&graph)
        .unwrap()
        .run(&feeds(&[("x", &t), ("y", &t)]))
        .unwrap();
    assert_eq!(vals(out.get("s").unwrap()), vec![2.0, 4.0, 6.0]);
}

#[test]
fn a_destroyed_parameter_sharing_a_buffer_with_a_feed_is_refused() {
    let g = GraphBuilder::new("param");
    let p = g.parameter("p", f64s(&[3], &[0.0; 3]));
    let y = g.input("y", DType::F64, &[3]);
    let c = g.constant("c", f64s(&[3], &[1.0; 3]));
    let z = g
        .apply_named("z", "add_inplace", &[&p, &c], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    let w = g
        .apply_named("w", "neg", &[&y], Attrs::new())
        .unwrap()
        .pop()
        .unwrap();
    let graph = g.build(&[&z, &w]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let t = f64s(&[3], &[1.0, 2.0, 3.0]);
    // Fed explicitly under both names.
    let (input, msg) = refused_as_shared(exec.run(&feeds(&[("p", &t), ("y", &t)])));
    assert_eq!(input, "p");
    assert!(msg.contains("parameter 'p' and input 'y'"), "{msg}");
    // The parameter's own value fed as another input.
    let stored = match &graph.var(graph.var_id("p").unwrap()).kind {
        vigil_engine::graph::VarKind::Parameter(t) => t.clone(),
        _ => unreachable!(),
    };
    let (input, msg) = refused_as_shared(exec.run(&feeds(&[("y", &stored)])));
    assert_eq!(input, "p");
    assert!(msg.contains("'p'") && msg.contains("'y'"), "{msg}");
    assert!(exec.run(&feeds(&[("y", &t)])).is_ok());
}
