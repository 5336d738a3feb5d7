//! Subgraphs the importer folds into one Vigil op, as onnxruntime's graph
//! optimizer fuses them: the tanh GELU that PyTorch exports as eight nodes,
//! GPT-2's `0.5·x · (1 + tanh(√(2/π) · (x + 0.044715·x³)))`, becomes one
//! `gelu_tanh` node. It reads x once instead of four times, and keeps 2 ULP
//! where the formula's f32 `1 + tanh` cancels.
//!
//! A fold needs every intermediate value to be read once, by the pattern
//! (not by another node, a subgraph or the graph's outputs), and each
//! constant to be a 0-d one known at import time (an initializer or a
//! `Constant` node) and equal to the formula's, within the rounding of its
//! dtype. Otherwise the nodes are imported one by one.

use std::collections::{HashMap, HashSet};

use onnx_protobuf::{NodeProto, ValueInfoProto};
use vigil_engine::{DType, Tensor};

use crate::import::Importer;
use crate::tensor::to_tensor;

/// A pattern found at a node: the node (its output is the pattern's) and
/// the nodes it replaces, which are skipped.
pub(crate) struct Fold {
    /// The ONNX name of the pattern's input.
    pub x: String,
    /// The other nodes of the pattern, by index.
    pub members: Vec<usize>,
}

/// The tanh GELUs among `nodes`, by the index of each one's last node.
pub(crate) fn gelu_tanh(
    imp: &Importer,
    nodes: &[NodeProto],
    outputs: &[ValueInfoProto],
) -> HashMap<usize, Fold> {
    let g = Nodes::new(imp, nodes, outputs);
    (0..nodes.len())
        .filter_map(|k| g.gelu_tanh_at(k).map(|f| (k, f)))
        .collect()
}

/// `nodes` with who produces and how often something reads each value.
struct Nodes<'a> {
    imp: &'a Importer,
    nodes: &'a [NodeProto],
    producer: HashMap<&'a str, usize>,
    reads: HashMap<&'a str, usize>,
    /// Read by a subgraph or a graph output: never folded away.
    escapes: HashSet<String>,
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

impl<'a> Nodes<'a> {
    fn new(imp: &'a Importer, nodes: &'a [NodeProto], outputs: &'a [ValueInfoProto]) -> Nodes<'a> {
        let mut producer = HashMap::new();
        let mut reads: HashMap<&str, usize> = HashMap::new();
        let mut escapes: HashSet<String> = outputs.iter().map(|o| o.name.clone()).collect();
        for (k, n) in nodes.iter().enumerate() {
            for o in &n.output {
                producer.insert(o.as_str(), k);
            }
            for i in &n.input {
                *reads.entry(i.as_str()).or_default() += 1;
            }
            for a in &n.attribute {
                for sub in a.g.iter().chain(&a.graphs) {
                    escapes.extend(crate::import::reads(sub));
                }
            }
        }
        Nodes {
            imp,
            nodes,
            producer,
            reads,
            escapes,
        }
    }

    /// The node of type `op` that produces `value`, when the pattern is
    /// the only reader of `value`.
    fn inner(&self, value: &str, op: &str) -> Option<(usize, &'a NodeProto)> {
        let k = *self.producer.get(value)?;
        let n = &self.nodes[k];
        let arity = if op == "Tanh" { 1 } else { 2 };
        let fits = default_domain(n) && n.op_type == op && n.output.len() == 1 && n.input.len() == arity;
        let once = self.reads.get(value) == Some(&1) && !self.escapes.contains(value);
        (fits && once).then_some((k, n))
    }

    /// The two inputs of `n` in both orders.
    fn orders(n: &NodeProto) -> [(&str, &str); 2] {
        let (a, b) = (n.input[0].as_str(), n.input[1].as_str());
        [(a, b), (b, a)]
    }

    /// Whether `name` is a 0-d constant equal to `want` within its dtype's
    /// rounding (a 0-d one leaves the pattern's shape x's, as the folded
    /// node's is).
    fn is_const(&self, name: &str, want: f64) -> bool {
        let Some(t) = self.known(name) else { return false };
        let eps = match t.dtype() {
            DType::F16 => 1.0 / 1024.0,
            DType::BF16 => 1.0 / 128.0,
            _ => 1e-6,
        };
        t.shape().is_empty()
            && t.to_f64_vec()
                .is_ok_and(|v| (v[0] - want).abs() <= eps * want.abs())
    }

    /// The value of `name` when known at import time: an initializer or
    /// folded value, or a `Constant` node of these nodes.
    fn known(&self, name: &str) -> Option<Tensor> {
        // Not `Value::known`: a data set's value of a graph input is no
        // constant of the pattern.
        if let Some(t) = self
            .imp
            .value(name)
            .filter(|v| !v.source)
            .and_then(|v| v.constant.as_ref())
        {
            return Some(t.clone());
        }
        let n = &self.nodes[*self.producer.get(name)?];
        if n.op_type != "Constant" {
            return None;
        }
        let a = n
            .attribute
            .iter()
            .find(|a| a.name == "value" || a.name == "value_float")?;
        match a.t.as_ref() {
            Some(t) => to_tensor(t, name).ok(),
            None => Tensor::from_vec(&[], vec![a.f]).ok(),
        }
    }

    /// The tanh GELU ending at node `k` (`h · o`, in either order).
    fn gelu_tanh_at(&self, k: usize) -> Option<Fold> {
        let f = &self.nodes[k];
        if f.op_type != "Mul" || f.input.len() != 2 || !default_domain(f) {
            return None;
        }
        Self::orders(f)
            .into_iter()
            .find_map(|(h, o)| self.gelu_tanh_of(h, o))
    }

    /// `h = x · 0.5` and `o = 1 + tanh(√(2/π) · (x + 0.044715 · x³))`.
    fn gelu_tanh_of(&self, h: &str, o: &str) -> Option<Fold> {
        let (ko, add_one) = self.inner(o, "Add")?;
        let t = Self::orders(add_one)
            .into_iter()
            .find_map(|(t, one)| self.is_const(one, 1.0).then_some(t))?;
        let (kt, tanh) = self.inner(t, "Tanh")?;
        let (ks, scale) = self.inner(tanh.input.first()?, "Mul")?;
        let a = Self::orders(scale)
            .into_iter()
            .find_map(|(a, s)| self.is_const(s, SQRT_2_OVER_PI).then_some(a))?;
        let (ka, add) = self.inner(a, "Add")?;
        let (x, cube) = Self::orders(add)
            .into_iter()
            .find_map(|(x, m)| self.cube_term(x, m).map(|c| (x, c)))?;
        let (kh, half) = self.inner(h, "Mul")?;
        if !Self::orders(half)
            .into_iter()
            .any(|(hx, c)| hx == x && self.is_const(c, 0.5))
        {
            return None;
        }
        let mut members = vec![ko, kt, ks, ka, kh];
        members.extend(cube);
        Some(Fold {
            x: x.to_string(),
            members,
        })
    }

    /// The nodes of `m = x³ · 0.044715`, with `x³` as `Pow(x, 3)`.
    fn cube_term(&self, x: &str, m: &str) -> Option<Vec<usize>> {
        let (km, mul) = self.inner(m, "Mul")?;
        let p = Self::orders(mul)
            .into_iter()
            .find_map(|(p, k)| self.is_const(k, 0.044_715).then_some(p))?;
        let (kp, pow) = self.inner(p, "Pow")?;
        (pow.input[0] == x && self.is_const(&pow.input[1], 3.0)).then(|| vec![km, kp])
    }
}

fn default_domain(n: &NodeProto) -> bool {
    n.domain.is_empty() || n.domain == "ai.onnx"
}
