//! Random pure graphs for property tests (shared by the engine's in-place
//! pass tests and DebugMode's false-positive tests): elementwise chains,
//! views with negative strides, partial views, read-only broadcasts,
//! set/inc_subtensor, mutable inputs and a parameter.

use std::collections::HashMap;

use proptest::prelude::*;
use vigil_engine::{DType, GraphBuilder, IndexSpec, Sym, Tensor};

#[derive(Clone, Debug)]
pub enum Step {
    Bin(u8, usize, usize),
    Un(u8, usize),
    View(u8, usize),
    Sub(u8, usize, usize),
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..5, any::<usize>(), any::<usize>()).prop_map(|(k, a, b)| Step::Bin(k, a, b)),
        (0u8..4, any::<usize>()).prop_map(|(k, a)| Step::Un(k, a)),
        (0u8..7, any::<usize>()).prop_map(|(k, a)| Step::View(k, a)),
        (0u8..2, any::<usize>(), any::<usize>()).prop_map(|(k, a, b)| Step::Sub(k, a, b)),
    ]
}

pub struct RandomGraph {
    pub graph: vigil_engine::Graph,
    /// Name, data and whether the input is mutable.
    pub inputs: Vec<(String, Vec<f64>, bool)>,
}

pub fn build(mutable: &[bool], steps: &[Step], extra_outputs: &[usize], seed: u64) -> RandomGraph {
    let g = GraphBuilder::new("random");
    let mut vars: Vec<Sym> = Vec::new();
    let mut inputs = Vec::new();
    for (i, &m) in mutable.iter().enumerate() {
        let name = format!("in{i}");
        let data: Vec<f64> = (0..16)
            .map(|k| (((k as u64 * 7 + i as u64 * 13 + seed) % 11) as f64) - 5.0)
            .collect();
        if i == 2 {
            // The third source is a parameter: state the pass must not destroy.
            vars.push(g.parameter(&name, Tensor::from_vec(&[4, 4], data).unwrap()));
            continue;
        }
        vars.push(if m {
            g.mutable_input(&name, DType::F64, &[4, 4])
        } else {
            g.input(&name, DType::F64, &[4, 4])
        });
        inputs.push((name, data, m));
    }
    for s in steps {
        let pick = |i: usize| vars[i % vars.len()].clone();
        let v = match s {
            Step::Bin(k, a, b) => {
                let (a, b) = (pick(*a), pick(*b));
                match k {
                    0 => a.add(&b),
                    1 => a.sub(&b),
                    2 => a.mul(&b),
                    3 => a.maximum(&b),
                    _ => a.minimum(&b),
                }
            }
            Step::Un(k, a) => {
                let a = pick(*a);
                match k {
                    0 => a.relu(),
                    1 => a.neg(),
                    2 => a.tanh(),
                    _ => a.abs(),
                }
            }
            Step::View(k, a) => {
                let a = pick(*a);
                let rank = a.ty().rank().unwrap_or(0);
                match (k, rank) {
                    (0, _) => a.transpose(None),
                    (1, r) if r >= 1 => a.view(&[IndexSpec::range(-1, i64::MIN, -1)]),
                    (2, 2) => a.transpose(None).and_then(|t| t.reshape(&[4, 4])),
                    // A row (or element) of `a`: a partial view.
                    (3, r) if r >= 1 => a.view(&[IndexSpec::Point(1)]),
                    // Broadcasts are read-only views.
                    (4, r) if r <= 2 => a.op(
                        "broadcast_to",
                        &[],
                        vigil_engine::Attrs::new().with("shape", vec![4, 4]),
                    ),
                    // Reversed columns: a strided view feeding an op.
                    (5, 2) => a
                        .view(&[IndexSpec::All, IndexSpec::range(-1, i64::MIN, -1)])
                        .and_then(|v| v.exp()),
                    _ => a.neg(),
                }
            }
            Step::Sub(k, a, b) => {
                // x[1] = v or x[1] += v on a 2-D x, v broadcast into the row.
                let (x, v) = (pick(*a), pick(*b));
                if x.ty().rank() != Some(2) || v.ty().rank().unwrap_or(0) > 1 {
                    x.relu()
                } else {
                    let op = if *k == 0 { "set_subtensor" } else { "inc_subtensor" };
                    let idx = g.index(IndexSpec::Point(1));
                    x.op(op, &[&v, &idx], vigil_engine::Attrs::new())
                }
            }
        }
        .expect("op");
        vars.push(v);
    }
    let mut outs: Vec<&Sym> = vec![vars.last().expect("a var")];
    for &o in extra_outputs {
        let v = &vars[o % vars.len()];
        if !outs.iter().any(|x| x.name() == v.name()) {
            outs.push(v);
        }
    }
    RandomGraph {
        graph: g.build(&outs).expect("graph"),
        inputs,
    }
}

pub fn feeds(c: &RandomGraph) -> HashMap<String, Tensor> {
    c.inputs
        .iter()
        .map(|(n, d, _)| (n.clone(), Tensor::from_vec(&[4, 4], d.clone()).unwrap()))
        .collect()
}
