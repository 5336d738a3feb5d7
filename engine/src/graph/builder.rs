//! Building graphs from Rust:
//!
//! ```
//! use vigil_engine::{graph::GraphBuilder, DType};
//! let g = GraphBuilder::new("demo");
//! let x = g.input("x", DType::F32, &[-1, 4]);
//! let b = g.input("b", DType::F32, &[4]);
//! let y = x.add(&b)?.relu()?;
//! let graph = g.build(&[&y])?;
//! assert_eq!(graph.nodes().len(), 2);
//! # Ok::<(), vigil_engine::Error>(())
//! ```

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{Graph, NodeSpec, VarKind, VarSpec};
use crate::ops::{Attrs, OpRegistry, TypeInfo};
use crate::tensor::{IndexSpec, Tensor};

struct State {
    name: String,
    registry: OpRegistry,
    sources: Vec<VarSpec>,
    nodes: Vec<NodeSpec>,
    types: HashMap<String, TypeInfo>,
    node_names: HashSet<String>,
    counter: usize,
}

/// Builds a graph one op at a time; each op is type-checked when added.
#[derive(Clone)]
pub struct GraphBuilder {
    state: Rc<RefCell<State>>,
}

/// A variable of a graph under construction.
#[derive(Clone)]
pub struct Sym {
    state: Rc<RefCell<State>>,
    name: String,
}

impl std::fmt::Debug for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sym({})", self.name)
    }
}

impl GraphBuilder {
    pub fn new(name: &str) -> GraphBuilder {
        GraphBuilder::with_registry(name, OpRegistry::builtin())
    }

    /// A builder that makes ops from `registry` (to use your own ops).
    pub fn with_registry(name: &str, registry: OpRegistry) -> GraphBuilder {
        GraphBuilder {
            state: Rc::new(RefCell::new(State {
                name: name.to_string(),
                registry,
                sources: Vec::new(),
                nodes: Vec::new(),
                types: HashMap::new(),
                node_names: HashSet::new(),
                counter: 0,
            })),
        }
    }

    /// A builder that starts from `graph`: its variables and nodes are kept,
    /// and new ops can read them (through [`GraphBuilder::var`]). Graph
    /// transforms (autodiff, optimizers) append nodes this way.
    pub fn from_graph(graph: &Graph) -> GraphBuilder {
        GraphBuilder::from_graph_with_registry(graph, OpRegistry::builtin())
    }

    /// Like [`GraphBuilder::from_graph`], making new ops from `registry`.
    pub fn from_graph_with_registry(graph: &Graph, registry: OpRegistry) -> GraphBuilder {
        let (sources, nodes, _) = graph.to_specs();
        let types = graph
            .vars()
            .iter()
            .map(|v| (v.name.clone(), v.ty.clone()))
            .collect();
        let node_names = nodes.iter().map(|n| n.name.clone()).collect();
        GraphBuilder {
            state: Rc::new(RefCell::new(State {
                name: graph.name().to_string(),
                registry,
                sources,
                nodes,
                types,
                node_names,
                counter: 0,
            })),
        }
    }

    /// The variable `name` of this builder (a source, or a node's output).
    pub fn var(&self, name: &str) -> Option<Sym> {
        self.state.borrow().types.contains_key(name).then(|| Sym {
            state: self.state.clone(),
            name: name.to_string(),
        })
    }

    fn source(&self, name: &str, ty: TypeInfo, kind: VarKind) -> Sym {
        let mut s = self.state.borrow_mut();
        s.types.insert(name.to_string(), ty.clone());
        s.sources.push(VarSpec {
            name: name.to_string(),
            ty,
            kind,
        });
        Sym {
            state: self.state.clone(),
            name: name.to_string(),
        }
    }

    /// A protected graph input; `-1` in `shape` is a dynamic dimension.
    pub fn input(&self, name: &str, dtype: DType, shape: &[i64]) -> Sym {
        self.source(
            name,
            TypeInfo::new(dtype, Some(shape.to_vec())),
            VarKind::Input { mutable: false },
        )
    }

    /// A graph input that in-place ops may overwrite.
    pub fn mutable_input(&self, name: &str, dtype: DType, shape: &[i64]) -> Sym {
        self.source(
            name,
            TypeInfo::new(dtype, Some(shape.to_vec())),
            VarKind::Input { mutable: true },
        )
    }

    pub fn constant(&self, name: &str, value: Tensor) -> Sym {
        self.source(name, TypeInfo::of_constant(&value), VarKind::Constant(value))
    }

    pub fn parameter(&self, name: &str, value: Tensor) -> Sym {
        self.source(
            name,
            TypeInfo::known(value.dtype(), value.shape()),
            VarKind::Parameter(value),
        )
    }

    /// An i64 index-vector constant for `create_view`.
    pub fn index(&self, ix: IndexSpec) -> Sym {
        let name = self.fresh("idx");
        self.constant(&name, Tensor::from_i64s(&ix.encode()))
    }

    /// A name no variable or node of this builder uses yet.
    pub fn fresh(&self, prefix: &str) -> String {
        let mut s = self.state.borrow_mut();
        loop {
            s.counter += 1;
            let n = format!("{prefix}_{}", s.counter);
            if !s.types.contains_key(&n) && !s.node_names.contains(&n) {
                return n;
            }
        }
    }

    /// Applies op `op` to `inputs`; returns its outputs.
    pub fn apply(&self, op: &str, inputs: &[&Sym], attrs: Attrs) -> Result<Vec<Sym>> {
        let name = self.fresh(op);
        self.apply_named(&name, op, inputs, attrs)
    }

    /// Like [`GraphBuilder::apply`] with a chosen node name.
    pub fn apply_named(&self, node: &str, op: &str, inputs: &[&Sym], attrs: Attrs) -> Result<Vec<Sym>> {
        let op = super::control::make(&self.state.borrow().registry, node, op, &attrs)
            .map_err(|e| e.at_node(node))?;
        let tys = {
            let s = self.state.borrow();
            inputs
                .iter()
                .map(|i| {
                    s.types.get(&i.name).cloned().ok_or_else(|| {
                        Error::node(
                            node,
                            Error::Graph(format!("input '{}' is not defined in this builder", i.name)),
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?
        };
        crate::ops::check_arity(op.as_ref(), inputs.len()).map_err(|e| e.at_node(node))?;
        let out_tys = op.infer(&tys).map_err(|e| e.at_node(node))?;
        let outputs: Vec<String> = if out_tys.len() == 1 {
            vec![node.to_string()]
        } else {
            (0..out_tys.len()).map(|k| format!("{node}.{k}")).collect()
        };
        let mut s = self.state.borrow_mut();
        for (o, mut t) in outputs.iter().zip(out_tys) {
            t.value = None;
            s.types.insert(o.clone(), t);
        }
        s.node_names.insert(node.to_string());
        s.nodes.push(NodeSpec {
            name: node.to_string(),
            op,
            inputs: inputs.iter().map(|i| i.name.clone()).collect(),
            outputs: outputs.clone(),
        });
        drop(s);
        Ok(outputs
            .into_iter()
            .map(|name| Sym {
                state: self.state.clone(),
                name,
            })
            .collect())
    }

    /// Validates and returns the graph with the given outputs.
    pub fn build(&self, outputs: &[&Sym]) -> Result<Graph> {
        let s = self.state.borrow();
        let outs: Vec<String> = outputs.iter().map(|o| o.name.clone()).collect();
        Graph::new(&s.name, s.sources.clone(), s.nodes.clone(), &outs)
    }
}

macro_rules! binary_methods {
    ($($m:ident => $op:literal),* $(,)?) => {
        $(
            #[doc = concat!("`", $op, "(self, other)`")]
            pub fn $m(&self, other: &Sym) -> Result<Sym> {
                self.op($op, &[other], Attrs::new())
            }
        )*
    };
}

macro_rules! unary_methods {
    ($($m:ident => $op:literal),* $(,)?) => {
        $(
            #[doc = concat!("`", $op, "(self)`")]
            pub fn $m(&self) -> Result<Sym> {
                self.op($op, &[], Attrs::new())
            }
        )*
    };
}

impl Sym {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn ty(&self) -> TypeInfo {
        self.state.borrow().types[&self.name].clone()
    }

    fn builder(&self) -> GraphBuilder {
        GraphBuilder {
            state: self.state.clone(),
        }
    }

    /// Applies a one-output op with `self` as input 0.
    pub fn op(&self, op: &str, rest: &[&Sym], attrs: Attrs) -> Result<Sym> {
        let mut inputs = vec![self];
        inputs.extend_from_slice(rest);
        let mut out = self.builder().apply(op, &inputs, attrs)?;
        out.pop()
            .ok_or_else(|| Error::Op(format!("op '{op}' has no output")))
    }

    binary_methods!(
        add => "add", sub => "sub", mul => "mul", div => "div", pow => "pow",
        maximum => "maximum", minimum => "minimum", matmul => "matmul",
        add_inplace => "add_inplace", sub_inplace => "sub_inplace", mul_inplace => "mul_inplace",
        eq => "eq", lt => "lt", gt => "gt", mse => "mse",
    );

    unary_methods!(
        neg => "neg", abs => "abs", exp => "exp", log => "log", sqrt => "sqrt",
        tanh => "tanh", sigmoid => "sigmoid", relu => "relu", copy => "copy",
        relu_inplace => "relu_inplace", neg_inplace => "neg_inplace", exp_inplace => "exp_inplace",
    );

    /// `transpose` with `perm` (reversed when `None`).
    pub fn transpose(&self, perm: Option<&[usize]>) -> Result<Sym> {
        let attrs = match perm {
            Some(p) => Attrs::new().with("perm", p.to_vec()),
            None => Attrs::new(),
        };
        self.op("transpose", &[], attrs)
    }

    pub fn reshape(&self, shape: &[i64]) -> Result<Sym> {
        self.op("reshape", &[], Attrs::new().with("shape", shape.to_vec()))
    }

    pub fn cast(&self, dtype: DType) -> Result<Sym> {
        self.op("cast", &[], Attrs::new().with("dtype", dtype.name()))
    }

    /// `sum` over `axes` (all when `None`).
    pub fn sum(&self, axes: Option<&[i64]>) -> Result<Sym> {
        let attrs = match axes {
            Some(a) => Attrs::new().with("axes", a.to_vec()),
            None => Attrs::new(),
        };
        self.op("sum", &[], attrs)
    }

    /// `create_view` with constant index vectors.
    pub fn view(&self, indices: &[IndexSpec]) -> Result<Sym> {
        let b = self.builder();
        let idx: Vec<Sym> = indices.iter().map(|&i| b.index(i)).collect();
        let refs: Vec<&Sym> = idx.iter().collect();
        self.op("create_view", &refs, Attrs::new())
    }
}
