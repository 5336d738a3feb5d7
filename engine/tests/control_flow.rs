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

/// `y, s = loop(M, c, x, w)`: each iteration `y = y + w` and, stacked,
/// `s = y * y`; then `after` squares y in place. `M` and `c` are inputs
/// (possibly empty: absent).
const LOOP: &str = r#"{"format": "vigil-graph/1", "name": "g",
 "inputs": [{"name": "m", "dtype": "i64", "shape": [-1]},
            {"name": "c", "dtype": "bool", "shape": [-1]},
            {"name": "x", "dtype": "f32", "shape": [3]},
            {"name": "w", "dtype": "f32", "shape": [3]}],
 "nodes": [
  {"name": "lp", "op": "loop", "inputs": ["m", "c", "x", "w"], "outputs": ["y", "s"],
   "attrs": {"carried": 1,
    "body": {"format": "vigil-graph/1", "name": "body",
      "inputs": [{"name": "i", "dtype": "i64", "shape": []},
                 {"name": "cond", "dtype": "bool", "shape": []},
                 {"name": "y", "dtype": "f32", "shape": [3]},
                 {"name": "w", "dtype": "f32", "shape": [3]}],
      "nodes": [{"name": "add", "op": "add", "inputs": ["y", "w"], "outputs": ["y2"]},
                {"name": "sq", "op": "mul", "inputs": ["y2", "y2"], "outputs": ["s"]}],
      "outputs": ["cond", "y2", "s"]}}},
  {"name": "after", "op": "mul_inplace", "inputs": ["y", "y"], "outputs": ["yy"]}],
 "outputs": ["yy", "s"]}"#;

fn loop_feeds(m: Option<i64>, c: Option<bool>, x: &Tensor, w: &Tensor) -> HashMap<String, Tensor> {
    [
        (
            "m".to_string(),
            Tensor::from_vec(&[m.iter().count()], m.into_iter().collect()).unwrap(),
        ),
        (
            "c".to_string(),
            Tensor::from_vec(&[c.iter().count()], c.into_iter().collect()).unwrap(),
        ),
        ("x".to_string(), x.clone()),
        ("w".to_string(), w.clone()),
    ]
    .into_iter()
    .collect()
}

#[test]
fn loop_carries_its_values_and_stacks_its_scan_outputs() {
    let g = Graph::from_json(LOOP, &OpRegistry::builtin()).unwrap();
    assert_eq!(g.var(g.outputs()[1]).ty.shape, Some(vec![-1, 3]));
    let (x, w) = (f32s(&[1., 2., 3.]), f32s(&[10., 20., 30.]));
    let exec = Executor::new(&g).unwrap();
    let out = exec.run(&loop_feeds(Some(3), None, &x, &w)).unwrap().outputs;
    // Written out: y1 = x + w, y2 = y1 + w, y3 = y2 + w.
    let (xs, ws) = (vals(&x), vals(&w));
    let ys: Vec<Vec<f32>> = (1..=3)
        .map(|k| xs.iter().zip(&ws).map(|(a, b)| a + k as f32 * b).collect())
        .collect();
    let y3_sq: Vec<f32> = ys[2].iter().map(|v| v * v).collect();
    assert_eq!(vals(&out[0].1), y3_sq);
    assert_eq!(out[1].1.shape(), [3, 3]);
    let stacked: Vec<f32> = ys.iter().flat_map(|y| y.iter().map(|v| v * v)).collect();
    assert_eq!(vals(&out[1].1), stacked);
    // A false condition runs no iteration: y is x (a copy, which the
    // in-place square after the node may overwrite) and s is empty.
    let out = exec
        .run(&loop_feeds(Some(3), Some(false), &x, &w))
        .unwrap()
        .outputs;
    assert_eq!(vals(&out[0].1), [1., 4., 9.]);
    assert_eq!(out[1].1.shape(), [0, 3]);
    assert_eq!(vals(&x), [1., 2., 3.]);
    // So does a trip count of 0.
    let out = exec
        .run(&loop_feeds(Some(0), Some(true), &x, &w))
        .unwrap()
        .outputs;
    assert_eq!(vals(&out[0].1), [1., 4., 9.]);
    assert_eq!(vals(&x), [1., 2., 3.]);
}

#[test]
fn loop_stops_when_its_body_says_so() {
    // No trip count: the body's condition `i < 2` ends the loop after the
    // iteration where it turns false (three iterations).
    let text = LOOP
        .replace(
            r#"{"name": "sq", "op": "mul", "inputs": ["y2", "y2"], "outputs": ["s"]}"#,
            r#"{"name": "sq", "op": "mul", "inputs": ["y2", "y2"], "outputs": ["s"]},
               {"name": "lt", "op": "lt", "inputs": ["i", "two"], "outputs": ["go"]}"#,
        )
        .replace(
            r#""outputs": ["cond", "y2", "s"]"#,
            r#""outputs": ["go", "y2", "s"]"#,
        )
        .replace(
            r#""name": "body","#,
            r#""name": "body", "constants": [{"name": "two", "dtype": "i64", "shape": [], "data": [2]}],"#,
        );
    let g = Graph::from_json(&text, &OpRegistry::builtin()).unwrap();
    let (x, w) = (f32s(&[0., 0., 0.]), f32s(&[1., 1., 1.]));
    let out = Executor::new(&g)
        .unwrap()
        .run(&loop_feeds(None, None, &x, &w))
        .unwrap()
        .outputs;
    assert_eq!(out[1].1.shape(), [3, 3]);
    assert_eq!(vals(&out[0].1), [9., 9., 9.]);
}

#[test]
fn a_listener_sees_the_loop_body_nodes_in_every_iteration() {
    let g = Graph::from_json(LOOP, &OpRegistry::builtin()).unwrap();
    let (x, w) = (f32s(&[1., 2., 3.]), f32s(&[10., 20., 30.]));
    let f = loop_feeds(Some(2), Some(true), &x, &w);
    let mut seen = Seen::default();
    let out = Executor::new(&g)
        .unwrap()
        .run_with(&f, &mut seen, &RunOptions::default())
        .unwrap();
    assert_eq!(
        seen.nodes,
        [
            "lp/body/add",
            "lp/body/sq",
            "lp/body/add",
            "lp/body/sq",
            "lp",
            "after"
        ]
    );
    assert_eq!(seen.runs, 1);
    let plain = Executor::new(&g).unwrap().run(&f).unwrap();
    for (a, b) in out.outputs.iter().zip(&plain.outputs) {
        assert_eq!(vals(&a.1), vals(&b.1));
    }
    // The body round-trips through JSON, its names prefixed once.
    let again = Graph::from_json(&g.to_json().unwrap(), &OpRegistry::builtin()).unwrap();
    let mut seen = Seen::default();
    Executor::new(&again)
        .unwrap()
        .run_with(&f, &mut seen, &RunOptions::default())
        .unwrap();
    assert_eq!(seen.nodes[0], "lp/body/add");
}

#[test]
fn an_error_inside_a_loop_body_names_the_loop_node_and_the_body_node() {
    // The body gathers x at the iteration number: out of range once i
    // reaches 3.
    let text = r#"{"format": "vigil-graph/1",
     "inputs": [{"name": "m", "dtype": "i64", "shape": []},
                {"name": "x", "dtype": "f32", "shape": [3]}],
     "nodes": [{"name": "lp", "op": "loop", "inputs": ["m", "t", "x"], "outputs": ["s"],
       "attrs": {"carried": 0,
        "body": {"format": "vigil-graph/1",
          "inputs": [{"name": "i", "dtype": "i64", "shape": []}, {"name": "c", "dtype": "bool", "shape": []},
                     {"name": "x", "dtype": "f32", "shape": [3]}],
          "nodes": [{"name": "g", "op": "gather", "inputs": ["x", "i"], "outputs": ["s"]}],
          "outputs": ["c", "s"]}}}],
     "constants": [{"name": "t", "dtype": "bool", "shape": [], "data": [true]}],
     "outputs": ["s"]}"#;
    let g = Graph::from_json(text, &OpRegistry::builtin()).unwrap();
    let x = f32s(&[1., 2., 3.]);
    let run = |m: i64, listen: bool| {
        let f: HashMap<String, Tensor> = [
            ("m".to_string(), Tensor::from_vec(&[], vec![m]).unwrap()),
            ("x".to_string(), x.clone()),
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
    assert_eq!(vals(&run(3, false).unwrap().outputs[0].1), [1., 2., 3.]);
    for listen in [false, true] {
        let Err(e) = run(4, listen) else {
            panic!("an out-of-range gather ran")
        };
        assert!(e.to_string().contains("lp/body/g"), "{e}");
        assert_cause!(e, Index);
    }
}

/// `total, ys = scan(init, xs)` over the rows of xs, last row first:
/// `total = total + x`, and `y = total` stacked along axis 1 in reverse.
const SCAN: &str = r#"{"format": "vigil-graph/1", "name": "g",
 "inputs": [{"name": "init", "dtype": "f32", "shape": [2]},
            {"name": "xs", "dtype": "f32", "shape": [3, 2]}],
 "nodes": [
  {"name": "sc", "op": "scan", "inputs": ["init", "xs"], "outputs": ["total", "ys"],
   "attrs": {"scan_input_axes": [0], "scan_input_directions": [1],
             "scan_output_axes": [1], "scan_output_directions": [1],
    "body": {"format": "vigil-graph/1", "name": "body",
      "inputs": [{"name": "t", "dtype": "f32", "shape": [2]}, {"name": "x", "dtype": "f32", "shape": [2]}],
      "nodes": [{"name": "add", "op": "add", "inputs": ["t", "x"], "outputs": ["t2"]},
                {"name": "y", "op": "copy", "inputs": ["t2"], "outputs": ["y"]}],
      "outputs": ["t2", "y"]}}}],
 "outputs": ["total", "ys"]}"#;

#[test]
fn scan_slices_its_inputs_and_stacks_its_outputs_in_the_directions_asked() {
    let g = Graph::from_json(SCAN, &OpRegistry::builtin()).unwrap();
    assert_eq!(g.var(g.outputs()[1]).ty.shape, Some(vec![2, 3]));
    let init = f32s(&[0., 0.]);
    let xs = Tensor::from_vec(&[3, 2], vec![1f32, 2., 10., 20., 100., 200.]).unwrap();
    let f: HashMap<String, Tensor> = [("init".to_string(), init), ("xs".to_string(), xs)]
        .into_iter()
        .collect();
    let mut seen = Seen::default();
    let out = Executor::new(&g)
        .unwrap()
        .run_with(&f, &mut seen, &RunOptions::default())
        .unwrap()
        .outputs;
    assert_eq!(vals(&out[0].1), [111., 222.]);
    // Rows taken last first: totals 100, 110, 111 (and 200, 220, 222);
    // stacked in reverse along axis 1.
    assert_eq!(out[1].1.shape(), [2, 3]);
    assert_eq!(vals(&out[1].1), [111., 110., 100., 222., 220., 200.]);
    assert_eq!(seen.nodes.len(), 3 * 2 + 1);
    assert_eq!(seen.nodes[0], "sc/body/add");
    let plain = Executor::new(&g).unwrap().run(&f).unwrap().outputs;
    assert_eq!(vals(&plain[1].1), vals(&out[1].1));
}

#[test]
fn bad_loops_and_scans_are_refused() {
    let no_carried = LOOP.replace(r#""carried": 1,"#, "");
    let e = Graph::from_json(&no_carried, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, Attr, "carried");
    let too_many = LOOP.replace(r#""carried": 1,"#, r#""carried": 3,"#);
    let e = Graph::from_json(&too_many, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, Attr, "lp");
    let no_axes = SCAN.replace(r#""scan_input_axes": [0], "scan_input_directions": [1],"#, "");
    let e = Graph::from_json(&no_axes, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, Attr, "scan_input_axes");
    let bad_direction = SCAN.replace(
        r#""scan_output_directions": [1]"#,
        r#""scan_output_directions": [2]"#,
    );
    let e = Graph::from_json(&bad_direction, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, Attr, "scan_output_directions");
    // Rows of the wrong length for the body's state.
    let wide = SCAN.replace(
        r#"{"name": "xs", "dtype": "f32", "shape": [3, 2]}"#,
        r#"{"name": "xs", "dtype": "f32", "shape": [3, 4]}"#,
    );
    let e = Graph::from_json(&wide, &OpRegistry::builtin()).unwrap_err();
    assert_cause!(e, DType, "sc");
}
