//! Parameters are state the pass never destroys,
//! constant values do not leak through ops into shape inference, constant
//! data is exact, graph outputs are listed once, float-to-int casts follow
//! numpy on x86-64.

use std::collections::HashMap;

use vigil_engine::{inplace, DType, Executor, Graph, GraphBuilder, OpRegistry, Tensor};

#[test]
fn the_pass_never_destroys_a_parameter() {
    let g = GraphBuilder::new("p");
    let w = g.parameter("w", Tensor::from_vec(&[3], vec![-1.0f32, 2.0, -3.0]).unwrap());
    let y = w.neg().unwrap();
    let graph = g.build(&[&y]).unwrap();
    let pass = inplace::run(&graph).unwrap();
    assert_eq!(pass.accepted(), 0);
    assert_eq!(
        pass.decisions[0].candidates[0].refused.as_ref().unwrap().code(),
        "protected"
    );
    let exec = Executor::new(&pass.graph).unwrap();
    for _ in 0..3 {
        let out = exec.run(&HashMap::new()).unwrap();
        assert_eq!(
            out.get(y.name()).unwrap().to_f64_vec().unwrap(),
            vec![1.0, -2.0, 3.0]
        );
    }
}

fn load(json: &str) -> vigil_engine::Result<Graph> {
    Graph::from_json(json, &OpRegistry::builtin())
}

#[test]
fn an_ops_output_does_not_carry_the_constant_it_read() {
    // i = relu(c) is [0, 1, 1, 0, 1] at run time, a valid point index; the
    // constant's own -9 must not be used to infer create_view's shape.
    let g = load(
        r#"{"format": "vigil-graph/1", "name": "t",
        "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
        "constants": [{"name": "c", "dtype": "i64", "data": [0, 1, 1, -9, 1]}],
        "nodes": [{"name": "r", "op": "relu", "inputs": ["c"], "outputs": ["i"]},
                  {"name": "v", "op": "create_view", "inputs": ["x", "i"], "outputs": ["y"]}],
        "outputs": ["y"]}"#,
    )
    .unwrap();
    let x = Tensor::from_vec(&[4], vec![10.0f32, 11.0, 12.0, 13.0]).unwrap();
    let out = Executor::new(&g)
        .unwrap()
        .run(&HashMap::from([("x".to_string(), x)]))
        .unwrap();
    assert_eq!(out.get("y").unwrap().to_f64_vec().unwrap(), vec![10.0]);
    // A constant index is checked at load time.
    let e = load(
        r#"{"format": "vigil-graph/1", "name": "t",
        "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
        "constants": [{"name": "c", "dtype": "i64", "data": [0, 1, 1, -9, 1]}],
        "nodes": [{"name": "v", "op": "create_view", "inputs": ["x", "c"], "outputs": ["y"]}],
        "outputs": ["y"]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("node 'v'") && e.contains("point -9"), "{e}");
}

#[test]
fn constant_data_is_exact() {
    for (dtype, data, bad) in [
        ("i64", "[1.7, 2]", "data[0] is 1.7"),
        ("i32", "[3000000000]", "data[0] is 3000000000"),
        ("bool", "[1, 0]", "data[0] is 1"),
        ("f32", "[\"x\"]", "data[0] is \"x\""),
    ] {
        let json = format!(
            r#"{{"format": "vigil-graph/1", "name": "t", "inputs": [],
            "constants": [{{"name": "c", "dtype": "{dtype}", "data": {data}}}],
            "nodes": [{{"name": "n", "op": "copy", "inputs": ["c"], "outputs": ["y"]}}], "outputs": ["y"]}}"#
        );
        let e = load(&json).unwrap_err().to_string();
        assert!(e.contains("constant 'c'") && e.contains(bad), "{dtype}: {e}");
    }
    let ok = r#"{"format": "vigil-graph/1", "name": "t", "inputs": [],
        "constants": [{"name": "c", "dtype": "f64", "data": [1, 2.5, "nan", "-inf"]}],
        "nodes": [{"name": "n", "op": "copy", "inputs": ["c"], "outputs": ["y"]}], "outputs": ["y"]}"#;
    assert!(load(ok).is_ok());
}

#[test]
fn graph_outputs_are_listed_once() {
    let e = load(
        r#"{"format": "vigil-graph/1", "name": "t", "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
        "nodes": [{"name": "n", "op": "neg", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y", "y"]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("'y' is listed twice"), "{e}");
}

#[test]
fn float_to_int_casts_follow_numpy_on_x86_64() {
    let x = Tensor::from_vec(
        &[6],
        vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 3e9, -2.7, 2.7],
    )
    .unwrap();
    let i32s = x.cast(DType::I32).unwrap().to_array::<i32>().unwrap();
    assert_eq!(
        i32s.as_slice().unwrap(),
        &[i32::MIN, i32::MIN, i32::MIN, i32::MIN, -2, 2]
    );
    let i64s = x.cast(DType::I64).unwrap().to_array::<i64>().unwrap();
    assert_eq!(
        i64s.as_slice().unwrap(),
        &[i64::MIN, i64::MIN, i64::MIN, 3_000_000_000, -2, 2]
    );
}

#[test]
fn an_output_viewing_a_constant_cannot_change_the_constant() {
    let g = GraphBuilder::new("c");
    let c = g.constant(
        "c",
        Tensor::from_vec(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap(),
    );
    let t = c.transpose(None).unwrap();
    let n = c.neg().unwrap();
    let graph = g.build(&[&t, &n]).unwrap();
    let exec = Executor::new(&graph).unwrap();
    let first = exec.run(&HashMap::new()).unwrap();
    let out = first.get(t.name()).unwrap();
    assert_eq!(out.to_f64_vec().unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
    out.set_at(&[0, 0], vigil_engine::Scalar::F32(-99.0)).unwrap();
    let second = exec.run(&HashMap::new()).unwrap();
    assert_eq!(
        second.get(n.name()).unwrap().to_f64_vec().unwrap(),
        vec![-1.0, -2.0, -3.0, -4.0]
    );
}
