//! Control flow: an `if` node loads from JSON with its branches as graphs,
//! runs the branch its condition picks, hands out outputs it owns, and,
//! under a listener, runs the branch node by node through the listener's
//! hooks, each body node named after the `if` node.

use std::collections::HashMap;

use vigil_engine::exec::OpEvent;
use vigil_engine::{assert_cause, At, Executor, Graph, Listener, OpRegistry, RunOptions, Tensor};

/// `y, z = if(c, x, w)`: then `y = -x, z = x + w`, else `y = x, z = w`
/// (body outputs that are inputs, which the node must hand out as copies).
const GRAPH: &str = r#"{"format": "vigil-graph/1", "name": "g",
 "inputs": [{"name": "c", "dtype": "bool", "shape": []},
            {"name": "x", "dtype": "f32", "shape": [3]},
            {"name": "w", "dtype": "f32", "shape": [3]}],
 "nodes": [
  {"name": "pick", "op": "if", "inputs": ["c", "x", "w"], "outputs": ["y", "z"],
   "attrs": {
    "then_branch": {"format": "vigil-graph/1", "name": "then",
      "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}, {"name": "w", "dtype": "f32", "shape": [3]}],
      "nodes": [{"name": "neg", "op": "neg", "inputs": ["x"], "outputs": ["y"]},
                {"name": "add", "op": "add", "inputs": ["x", "w"], "outputs": ["z"]}],
      "outputs": ["y", "z"]},
    "else_branch": {"format": "vigil-graph/1", "name": "else",
      "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}, {"name": "w", "dtype": "f32", "shape": [3]}],
      "nodes": [],
      "outputs": ["x", "w"]}}},
  {"name": "after", "op": "mul_inplace", "inputs": ["z", "z"], "outputs": ["zz"]}],
 "outputs": ["y", "zz"]}"#;

fn f32s(v: &[f32]) -> Tensor {
    Tensor::from_vec(&[v.len()], v.to_vec()).unwrap()
}

fn feeds(c: bool, x: &Tensor, w: &Tensor) -> HashMap<String, Tensor> {
    [
        ("c".to_string(), Tensor::from_vec(&[], vec![c]).unwrap()),
        ("x".to_string(), x.clone()),
        ("w".to_string(), w.clone()),
    ]
    .into_iter()
    .collect()
}

fn vals(t: &Tensor) -> Vec<f32> {
    t.to_array::<f32>().unwrap().iter().copied().collect()
}

/// Records the nodes whose `post_op` fired, and how many runs started.
#[derive(Default)]
struct Seen {
    nodes: Vec<String>,
    runs: usize,
}

impl Listener for Seen {
    fn operation_start(&mut self, _: &At, _: &Graph) {
        self.runs += 1;
    }
    fn post_op(&mut self, _: &At, ev: &OpEvent) {
        self.nodes.push(ev.node.name.clone());
    }
}

#[test]
fn if_runs_the_branch_its_condition_picks() {
    let g = Graph::from_json(GRAPH, &OpRegistry::builtin()).unwrap();
    let (x, w) = (f32s(&[1., 2., 3.]), f32s(&[10., 20., 30.]));
    let exec = Executor::new(&g).unwrap();
    let out = exec.run(&feeds(true, &x, &w)).unwrap().outputs;
    assert_eq!(vals(&out[0].1), [-1., -2., -3.]);
    assert_eq!(vals(&out[1].1), [121., 484., 1089.]);
    // The else branch hands out its inputs: as copies, so that the
    // in-place square after the node leaves w alone.
    let out = exec.run(&feeds(false, &x, &w)).unwrap().outputs;
    assert_eq!(vals(&out[0].1), [1., 2., 3.]);
    assert_eq!(vals(&out[1].1), [100., 400., 900.]);
    assert_eq!(vals(&w), [10., 20., 30.]);
    assert!(!out[0].1.same_buffer(&x));
}

#[test]
fn a_listener_sees_each_body_node_named_after_the_if_node() {
    let g = Graph::from_json(GRAPH, &OpRegistry::builtin()).unwrap();
    let (x, w) = (f32s(&[1., 2., 3.]), f32s(&[10., 20., 30.]));
    let mut seen = Seen::default();
    let out = Executor::new(&g)
        .unwrap()
        .run_with(&feeds(true, &x, &w), &mut seen, &RunOptions::default())
        .unwrap();
    assert_eq!(
        seen.nodes,
        ["pick/then_branch/neg", "pick/then_branch/add", "pick", "after"]
    );
    assert_eq!(seen.runs, 1);
    // The same values as without the listener.
    assert_eq!(vals(&out.outputs[1].1), [121., 484., 1089.]);
}

#[test]
fn the_branches_round_trip_through_json() {
    let g = Graph::from_json(GRAPH, &OpRegistry::builtin()).unwrap();
    let again = Graph::from_json(&g.to_json().unwrap(), &OpRegistry::builtin()).unwrap();
    let (x, w) = (f32s(&[1., 2., 3.]), f32s(&[10., 20., 30.]));
    let mut seen = Seen::default();
    let out = Executor::new(&again)
        .unwrap()
        .run_with(&feeds(true, &x, &w), &mut seen, &RunOptions::default())
        .unwrap();
    assert_eq!(vals(&out.outputs[0].1), [-1., -2., -3.]);
    // Names already prefixed are not prefixed again.
    assert_eq!(seen.nodes[0], "pick/then_branch/neg");
}

#[test]
fn bad_branches_and_conditions_are_refused() {
    let no_else = GRAPH.replace("\"else_branch\"", "\"other\"");
    let e = Graph::from_json(&no_else, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, Attr, "pick");
    let one_output = GRAPH.replace(r#""outputs": ["x", "w"]}"#, r#""outputs": ["x"]}"#);
    let e = Graph::from_json(&one_output, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, Attr, "else_branch");
    let int_cond = GRAPH.replace(
        r#""name": "c", "dtype": "bool""#,
        r#""name": "c", "dtype": "i64""#,
    );
    let e = Graph::from_json(&int_cond, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, DType, "cond");
}

#[test]
fn an_error_inside_a_body_names_the_if_node_and_the_body_node() {
    let text = r#"{"format": "vigil-graph/1",
     "inputs": [{"name": "c", "dtype": "bool", "shape": [1]},
                {"name": "x", "dtype": "f32", "shape": [3]},
                {"name": "i", "dtype": "i64", "shape": [1]}],
     "nodes": [{"name": "pick", "op": "if", "inputs": ["c", "x", "i"], "outputs": ["y"],
       "attrs": {
        "then_branch": {"format": "vigil-graph/1",
          "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}, {"name": "i", "dtype": "i64", "shape": [1]}],
          "nodes": [{"name": "g", "op": "gather", "inputs": ["x", "i"], "outputs": ["y"]}],
          "outputs": ["y"]},
        "else_branch": {"format": "vigil-graph/1",
          "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}, {"name": "i", "dtype": "i64", "shape": [1]}],
          "nodes": [{"name": "n", "op": "neg", "inputs": ["x"], "outputs": ["y"]}],
          "outputs": ["y"]}}}],
     "outputs": ["y"]}"#;
    let g = Graph::from_json(text, &OpRegistry::builtin()).unwrap();
    // The branches disagree on y's length: unknown until the node runs.
    assert_eq!(g.var(g.outputs()[0]).ty.shape, Some(vec![-1]));
    let x = f32s(&[1., 2., 3.]);
    let run = |c: bool, i: i64, listen: bool| {
        let f: HashMap<String, Tensor> = [
            ("c".to_string(), Tensor::from_vec(&[1], vec![c]).unwrap()),
            ("x".to_string(), x.clone()),
            ("i".to_string(), Tensor::from_vec(&[1], vec![i]).unwrap()),
        ]
        .into_iter()
        .collect();
        let exec = Executor::new(&g).unwrap();
        if listen {
            exec.run_with(&f, &mut Seen::default(), &RunOptions::default())
        } else {
            exec.run(&f)
        }
    };
    assert_eq!(vals(&run(true, 2, false).unwrap().outputs[0].1), [3.]);
    assert_eq!(vals(&run(false, 9, false).unwrap().outputs[0].1), [-1., -2., -3.]);
    for listen in [false, true] {
        let Err(e) = run(true, 9, listen) else {
            panic!("an out-of-range gather ran")
        };
        assert!(e.to_string().contains("pick/then_branch/g"), "{e}");
        assert_cause!(e, Index);
    }
}
