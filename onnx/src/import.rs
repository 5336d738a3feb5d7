//! The import driver: walks the ONNX graph in order, asks [`crate::ops`] to
//! translate each node into Vigil nodes, folds what is computable from
//! constants, and collects the `vigil-graph/1` file.

use std::collections::{BTreeMap, HashMap, HashSet};

use onnx_protobuf::{AttributeProto, GraphProto, ModelProto, NodeProto, ValueInfoProto};
use vigil_engine::graph::{GraphFile, InputDecl, NodeDecl, ValueDecl, FORMAT};
use vigil_engine::{Attrs, OpCtx, OpRegistry, Tensor, TypeInfo};

use crate::error::{ImportError, Result};
use crate::model::default_opset;
use crate::tensor::{dtype_of, to_tensor_from};

/// The attr key that carries a node's ONNX origin (`"Conv 'conv1'"`); the
/// graph loader ignores it, so findings can point back at the model.
pub const SOURCE_ATTR: &str = vigil_engine::graph::SOURCE_ATTR;

/// A data set's inputs up to this many elements may stand in for
/// import-time constants (no op needs a larger one).
pub const FOLD_LIMIT: usize = 1 << 16;

/// How initializers enter the graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Initializers {
    /// Protected constants (the default).
    #[default]
    Constants,
    /// Float initializers become parameters (state in-place ops may
    /// update); integer ones (shapes, indices) stay constants.
    Parameters,
}

/// Import options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub initializers: Initializers,
    /// The model file: external data is read relative to its directory
    /// (see [`crate::external`]). Without it, a model with external data is
    /// refused.
    pub model: Option<std::path::PathBuf>,
    /// Concrete shapes for graph inputs, by ONNX name (`--shape`): the
    /// model is specialized on them, as on a data set's input shapes.
    pub shapes: Vec<(String, Vec<usize>)>,
}

/// An imported model.
#[derive(Debug)]
pub struct Imported {
    /// The graph file; constants and parameters named in `values` are
    /// written beside it by [`crate::case`].
    pub file: GraphFile,
    /// Constant and parameter values by variable name.
    pub values: BTreeMap<String, Tensor>,
    /// `(onnx name, vigil name)` of the graph inputs, in ONNX order.
    pub inputs: Vec<(String, String)>,
    /// `(onnx name, vigil name)` of the graph outputs, in ONNX order.
    pub outputs: Vec<(String, String)>,
    /// The declared inputs' types (for generated inputs).
    pub input_types: Vec<TypeInfo>,
}

/// A value of the ONNX graph as the importer sees it.
#[derive(Clone, Debug)]
pub(crate) struct Value {
    /// The Vigil variable name.
    pub var: String,
    pub ty: TypeInfo,
    /// Known at import time (initializers, folded results).
    pub constant: Option<Tensor>,
    /// A graph input or parameter (not foldable, not materialized).
    pub source: bool,
    /// A graph input's value in the test data set named by
    /// [`import_with`]'s `known`: usable where an op needs an import-time
    /// constant (a shape, axes, pads), while the node still reads the input.
    pub fed: Option<Tensor>,
}

impl Value {
    /// The value when it is known at import time.
    pub fn known(&self) -> Option<&Tensor> {
        match &self.constant {
            Some(t) if !self.source => Some(t),
            _ => self.fed.as_ref(),
        }
    }
}

/// Replaces characters that do not belong in a file name, so every variable
/// can be an `.npy` file; an empty name becomes `_`.
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.as_str() {
        "" | "." | ".." => format!("_{s}"),
        _ => s,
    }
}

pub(crate) struct Importer {
    pub opset: i64,
    registry: OpRegistry,
    values: HashMap<String, Value>,
    /// Vigil variable names taken so far.
    taken: HashSet<String>,
    node_names: HashSet<String>,
    nodes: Vec<NodeDecl>,
    params: Vec<String>,
    consts: Vec<String>,
    stored: BTreeMap<String, Tensor>,
    /// Every ONNX value some node or the graph output reads.
    pub used: HashSet<String>,
}

impl Importer {
    /// An importer of graph `g` (the model's, or a branch's) with nothing
    /// imported yet.
    fn new(opset: i64, registry: OpRegistry, g: &GraphProto) -> Importer {
        Importer {
            opset,
            registry,
            values: HashMap::new(),
            taken: HashSet::new(),
            node_names: HashSet::new(),
            nodes: Vec::new(),
            params: Vec::new(),
            consts: Vec::new(),
            stored: BTreeMap::new(),
            used: reads(g),
        }
    }

    fn unique(&mut self, base: &str) -> String {
        let base = sanitize(base);
        let mut name = base.clone();
        let mut k = 1;
        while self.taken.contains(&name) {
            k += 1;
            name = format!("{base}_{k}");
        }
        self.taken.insert(name.clone());
        name
    }

    pub fn value(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// Binds ONNX name `key` to `v` (an alias when `v` is another name's value).
    pub fn bind(&mut self, key: &str, v: Value) {
        self.values.insert(key.to_string(), v);
    }

    /// A constant value under a fresh variable name derived from `key`.
    pub fn constant(&mut self, key: &str, t: Tensor) -> Value {
        Value {
            var: self.unique(key),
            ty: TypeInfo::of_constant(&t),
            constant: Some(t),
            source: false,
            fed: None,
        }
    }

    /// Makes sure a constant read by an emitted node is declared.
    fn materialize(&mut self, v: &Value) {
        if let Some(t) = &v.constant {
            if !v.source && !self.stored.contains_key(&v.var) {
                self.stored.insert(v.var.clone(), t.clone());
                self.consts.push(v.var.clone());
            }
        }
    }

    /// Applies Vigil op `op` to `inputs`. When every input is known at
    /// import time the op runs now and the result is a constant (shape
    /// folding); otherwise a node is added. `out` names the result.
    pub fn emit(
        &mut self,
        node: &NodeCtx,
        op: &str,
        attrs: Attrs,
        inputs: &[Value],
        out: &str,
    ) -> Result<Value> {
        let mut v = self.emit_n(node, op, attrs, inputs, &[out])?;
        Ok(v.swap_remove(0))
    }

    /// [`Importer::emit`] for an op with several outputs, named `outs`
    /// (one per output of the op, in order).
    pub fn emit_n(
        &mut self,
        node: &NodeCtx,
        op: &str,
        attrs: Attrs,
        inputs: &[Value],
        outs: &[&str],
    ) -> Result<Vec<Value>> {
        let err = |source: vigil_engine::Error| ImportError::Node {
            node: node.onnx_name.clone(),
            op: node.op_type.clone(),
            source,
        };
        let made = vigil_engine::graph::control::make(&self.registry, &node.name, op, &attrs).map_err(err)?;
        let tys: Vec<TypeInfo> = inputs.iter().map(|v| v.ty.clone()).collect();
        vigil_engine::ops::check_arity(made.as_ref(), inputs.len()).map_err(err)?;
        let inferred = made.infer(&tys).map_err(err)?;
        if inferred.len() != outs.len() {
            return Err(node.unsupported(format!(
                "internal: op '{op}' has {} outputs, {} names given",
                inferred.len(),
                outs.len()
            )));
        }
        let foldable = !inputs.is_empty() && inputs.iter().all(|v| v.constant.is_some() && !v.source);
        if foldable {
            let vals: Vec<Tensor> = inputs.iter().filter_map(|v| v.constant.clone()).collect();
            let made = made.compute(&vals, &mut OpCtx::new(&node.name)).map_err(err)?;
            return made
                .into_iter()
                .zip(outs)
                .map(|(t, out)| Ok(self.constant(out, t.to_contiguous().map_err(err)?)))
                .collect();
        }
        for v in inputs {
            self.materialize(v);
        }
        let mut fed = fed_results(made.as_ref(), inputs, &node.name).into_iter();
        let vars: Vec<String> = outs.iter().map(|o| self.unique(o)).collect();
        let mut name = node.name.clone();
        let mut k = 1;
        while !self.node_names.insert(name.clone()) {
            k += 1;
            name = format!(
                "{}.{op}{}",
                node.name,
                if k > 2 { format!("_{k}") } else { String::new() }
            );
        }
        let mut attrs = attrs;
        attrs.0.insert(
            SOURCE_ATTR.into(),
            format!("{} '{}'", node.op_type, node.onnx_name).into(),
        );
        self.nodes.push(NodeDecl {
            name,
            op: op.to_string(),
            inputs: inputs.iter().map(|v| v.var.clone()).collect(),
            outputs: vars.clone(),
            attrs,
        });
        Ok(vars
            .into_iter()
            .zip(inferred)
            .map(|(var, mut ty)| {
                ty.value = None;
                let fed = fed.next().flatten();
                // A rank the op cannot infer (an `if` whose branches give
                // different ranks) is the data set's, as a shape read from
                // a fed value is: the case holds for inputs like it.
                if let (None, Some(t)) = (&ty.shape, &fed) {
                    ty.shape = Some(vec![-1; t.shape().len()]);
                }
                Value {
                    var,
                    ty,
                    constant: None,
                    source: false,
                    fed,
                }
            })
            .collect())
    }

    /// Translates `nodes` in order, binding their outputs; `outputs` are
    /// the outputs of the graph they belong to. The patterns of
    /// [`crate::fold`] become one node each.
    pub(crate) fn import_nodes(&mut self, nodes: &[NodeProto], outputs: &[ValueInfoProto]) -> Result<()> {
        let folds = crate::fold::gelu_tanh(self, nodes, outputs);
        let skipped: HashSet<usize> = folds.values().flat_map(|f| f.members.iter().copied()).collect();
        for (k, n) in nodes.iter().enumerate() {
            if skipped.contains(&k) {
                continue;
            }
            let onnx_name = if n.name.is_empty() {
                format!("{}_{k}", n.op_type)
            } else {
                n.name.clone()
            };
            let name = sanitize(&onnx_name);
            let ctx = NodeCtx {
                proto: n,
                op_type: n.op_type.clone(),
                onnx_name,
                name,
            };
            let op = n.op_type.as_str();
            let preview = n.domain == "ai.onnx.preview" && crate::ops::PREVIEW.contains(&op);
            let ml = crate::ops::ML.contains(&op);
            let default = (n.domain.is_empty() || n.domain == "ai.onnx") && !ml;
            if !(default || preview || (ml && n.domain == "ai.onnx.ml")) {
                return Err(ImportError::UnsupportedOp {
                    node: ctx.onnx_name,
                    op: n.op_type.clone(),
                    domain: n.domain.clone(),
                });
            }
            let out = match folds.get(&k) {
                Some(f) => crate::ops::gelu_tanh_of(self, &ctx, &f.x)?,
                None => crate::ops::import_node(self, &ctx)?,
            };
            for (j, o) in n.output.iter().enumerate() {
                // Multi-output translations (Split) bind their other outputs.
                if j > 0 && !o.is_empty() && self.used.contains(o) && self.value(o).is_none() {
                    return Err(
                        ctx.unsupported(format!("output {j} ('{o}') is used, only output 0 is supported"))
                    );
                }
            }
            if let Some(o) = n.output.first() {
                self.bind(o, out);
            }
        }
        Ok(())
    }

    /// The graph outputs `outs` as `(onnx name, vigil name)` and their
    /// variables: each a node's own result (others get a `copy` node).
    fn graph_outputs(&mut self, outs: &[ValueInfoProto]) -> Result<GraphOutputs> {
        let mut outputs = Vec::new();
        let mut out_vars = Vec::new();
        for o in outs {
            let v = self
                .value(&o.name)
                .cloned()
                .ok_or_else(|| ImportError::BadValue {
                    name: o.name.clone(),
                    msg: "is not computed by any node".into(),
                })?;
            // A graph output must be a node's own result: aliases of inputs,
            // constants or other outputs get a copy.
            let own =
                v.constant.is_none() && !v.source && !out_vars.contains(&v.var) && v.var == sanitize(&o.name);
            let v = if own {
                v
            } else {
                let ctx = NodeCtx {
                    proto: &NodeProto::default(),
                    op_type: "output".into(),
                    onnx_name: o.name.clone(),
                    name: sanitize(&format!("{}.copy", o.name)),
                };
                let out_name = if self.taken.contains(&sanitize(&o.name)) {
                    format!("{}.out", o.name)
                } else {
                    o.name.clone()
                };
                let v = if v.constant.is_some() && !v.source {
                    // A folded output: declare the constant, then copy it.
                    self.materialize(&v);
                    Value { source: true, ..v }
                } else {
                    v
                };
                self.emit(&ctx, "copy", Attrs::new(), &[v], &out_name)?
            };
            out_vars.push(v.var.clone());
            outputs.push((o.name.clone(), v.var));
        }
        Ok((outputs, out_vars))
    }
}

/// The subgraphs among a node's attrs (`g` and `graphs`).
fn subgraphs(n: &NodeProto) -> impl Iterator<Item = &GraphProto> {
    n.attribute
        .iter()
        .flat_map(|a| a.g.as_ref().into_iter().chain(a.graphs.iter()))
}

/// Every value name a node of `g` or of its subgraphs reads, and `g`'s
/// outputs.
pub(crate) fn reads(g: &GraphProto) -> HashSet<String> {
    let mut out: HashSet<String> = g.output.iter().map(|o| o.name.clone()).collect();
    for n in &g.node {
        out.extend(n.input.iter().cloned());
        for sub in subgraphs(n) {
            out.extend(reads(sub));
        }
    }
    out
}

/// The names `g` (or a subgraph of it) reads without defining them: the
/// outer-scope values it uses, in the order first read.
pub(crate) fn free_names(g: &GraphProto) -> Vec<String> {
    let mut defined: HashSet<String> = g
        .input
        .iter()
        .map(|i| i.name.clone())
        .chain(g.initializer.iter().map(|t| t.name.clone()))
        .collect();
    let mut free: Vec<String> = Vec::new();
    let mut read = |n: &str, defined: &HashSet<String>| {
        if !n.is_empty() && !defined.contains(n) && !free.iter().any(|f| f == n) {
            free.push(n.to_string());
        }
    };
    for n in &g.node {
        for i in &n.input {
            read(i, &defined);
        }
        for sub in subgraphs(n) {
            for f in free_names(sub) {
                read(&f, &defined);
            }
        }
        defined.extend(n.output.iter().cloned());
    }
    for o in &g.output {
        read(&o.name, &defined);
    }
    free
}

/// Known inputs up to this many elements carry a data set's value through
/// an op (shape arithmetic on a fed input is small).
const FED_LIMIT: usize = 4096;

/// What `op` gives on `inputs` when one of them is known only from the
/// data set ([`Value::fed`]) and all are known and small: the outputs'
/// values for that data set (`None` past [`FOLD_LIMIT`]), so that shape
/// arithmetic on a fed input folds as on a constant. Empty otherwise, or
/// when the op fails (the run reports that).
fn fed_results(op: &dyn vigil_engine::Op, inputs: &[Value], node: &str) -> Vec<Option<Tensor>> {
    if !inputs.iter().any(|v| v.fed.is_some()) {
        return Vec::new();
    }
    let known: Option<Vec<Tensor>> = inputs
        .iter()
        .map(|v| v.known().filter(|t| t.size() <= FED_LIMIT).cloned())
        .collect();
    let Some(known) = known else {
        return Vec::new();
    };
    match op.compute(&known, &mut OpCtx::new(node)) {
        Ok(outs) => outs
            .into_iter()
            .map(|t| (t.size() <= FOLD_LIMIT).then(|| t.to_contiguous().ok()).flatten())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Outer constants up to this many elements are copied into a body that
/// reads them (so that they fold there); larger ones, and every value
/// computed at run time, become the body's inputs.
const BODY_CONSTANT_LIMIT: usize = 4096;

/// Whether the outer value `v` enters a body as one of its inputs (else as
/// a constant of its own).
pub(crate) fn captured_as_input(v: &Value) -> bool {
    match (&v.constant, v.source) {
        (Some(t), false) => t.size() > BODY_CONSTANT_LIMIT,
        _ => true,
    }
}

impl Importer {
    /// The subgraph `g` of a control node as a graph file of its own. Its
    /// inputs are `own` (the subgraph's ONNX inputs, with their types),
    /// then the values of `outer` (by ONNX name) that
    /// [`captured_as_input`]; the others are its constants. Constants are
    /// inline in the file (the node's attrs carry it).
    pub(crate) fn body(
        &self,
        g: &GraphProto,
        own: &[(String, TypeInfo)],
        outer: &[(String, Value)],
    ) -> Result<GraphFile> {
        let mut sub = Importer::new(self.opset, self.registry.clone(), g);
        let mut inputs = Vec::new();
        let declare = |sub: &mut Importer,
                       inputs: &mut Vec<InputDecl>,
                       name: &str,
                       ty: TypeInfo,
                       fed: Option<Tensor>| {
            let var = sub.unique(name);
            inputs.push(InputDecl {
                name: var.clone(),
                dtype: ty.dtype,
                shape: ty.shape.clone(),
                mutable: false,
            });
            let ty = TypeInfo { value: None, ..ty };
            sub.bind(
                name,
                Value {
                    var,
                    ty,
                    constant: None,
                    source: true,
                    fed,
                },
            );
        };
        for (name, ty) in own {
            declare(&mut sub, &mut inputs, name, ty.clone(), None);
        }
        for (name, v) in outer {
            if captured_as_input(v) {
                // The data set's value goes in with it: shape arithmetic
                // inside folds as outside.
                declare(&mut sub, &mut inputs, name, v.ty.clone(), v.fed.clone());
            } else if let Some(t) = &v.constant {
                let c = sub.constant(name, t.clone());
                sub.bind(name, c);
            }
        }
        for t in &g.initializer {
            let tensor = to_tensor_from(t, "initializer", None)?;
            let v = sub.constant(&t.name, tensor);
            sub.bind(&t.name, v);
        }
        sub.import_nodes(&g.node, &g.output)?;
        let (_, outputs) = sub.graph_outputs(&g.output)?;
        let mut constants = Vec::new();
        for n in &sub.consts {
            if let Some(t) = sub.stored.get(n) {
                let d = match ValueDecl::fill_of(n, t)? {
                    Some(d) if t.size() > 1 => d,
                    _ => ValueDecl::inline(n, t)?,
                };
                constants.push(d);
            }
        }
        Ok(GraphFile {
            format: FORMAT.to_string(),
            name: if g.name.is_empty() {
                "body".into()
            } else {
                g.name.clone()
            },
            inputs,
            constants,
            parameters: Vec::new(),
            nodes: sub.nodes,
            outputs,
        })
    }

    /// Imports the nodes of subgraph `g` into this graph, as if they were
    /// its own (a branch chosen at import time); gives `g`'s outputs.
    pub(crate) fn inline(&mut self, g: &GraphProto) -> Result<Vec<Value>> {
        for t in &g.initializer {
            let tensor = to_tensor_from(t, "initializer", None)?;
            let v = self.constant(&t.name, tensor);
            self.bind(&t.name, v);
        }
        self.import_nodes(&g.node, &g.output)?;
        g.output
            .iter()
            .map(|o| {
                self.value(&o.name).cloned().ok_or_else(|| ImportError::BadValue {
                    name: o.name.clone(),
                    msg: "is not computed by any node".into(),
                })
            })
            .collect()
    }
}

/// A graph's outputs as `(onnx name, vigil name)`, and their variables.
type GraphOutputs = (Vec<(String, String)>, Vec<String>);

/// What an op translation knows about its ONNX node.
pub(crate) struct NodeCtx<'a> {
    pub proto: &'a NodeProto,
    pub op_type: String,
    pub onnx_name: String,
    /// The Vigil node name (sanitized, unique).
    pub name: String,
}

impl NodeCtx<'_> {
    pub fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.proto.attribute.iter().find(|a| a.name == name)
    }

    pub fn bad_attr(&self, attr: &str, msg: impl Into<String>) -> ImportError {
        ImportError::BadAttr {
            node: self.onnx_name.clone(),
            op: self.op_type.clone(),
            attr: attr.to_string(),
            msg: msg.into(),
        }
    }

    pub fn unsupported(&self, msg: impl Into<String>) -> ImportError {
        ImportError::Unsupported {
            node: self.onnx_name.clone(),
            op: self.op_type.clone(),
            msg: msg.into(),
        }
    }

    pub fn i(&self, name: &str) -> Option<i64> {
        self.attr(name).map(|a| a.i)
    }

    pub fn f(&self, name: &str) -> Option<f64> {
        self.attr(name).map(|a| a.f as f64)
    }

    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }

    pub fn s(&self, name: &str) -> Option<String> {
        self.attr(name)
            .map(|a| String::from_utf8_lossy(&a.s).into_owned())
    }

    /// The ONNX output 0's name (results are named after it).
    pub fn out(&self) -> &str {
        self.proto.output.first().map_or("", String::as_str)
    }
}

pub(crate) fn value_type(v: &ValueInfoProto) -> Result<TypeInfo> {
    let bad = |msg: &str| ImportError::BadValue {
        name: v.name.clone(),
        msg: msg.to_string(),
    };
    let tt = v
        .type_
        .as_ref()
        .filter(|t| t.has_tensor_type())
        .ok_or_else(|| bad("is not a tensor"))?;
    let tt = tt.tensor_type();
    let dtype = dtype_of(tt.elem_type, &format!("graph input '{}'", v.name))?;
    let shape = tt.shape.as_ref().map(|s| {
        s.dim
            .iter()
            .map(|d| {
                if d.has_dim_value() && d.dim_value() >= 0 {
                    d.dim_value()
                } else {
                    -1
                }
            })
            .collect()
    });
    Ok(TypeInfo::new(dtype, shape))
}

/// Imports a decoded model.
/// A data set's input as the importer uses it: its shape (to specialize
/// the model on) and, up to [`FOLD_LIMIT`] elements, its value.
#[derive(Default)]
struct Known {
    shape: Option<Vec<usize>>,
    value: Option<Tensor>,
}

/// The data set's `input_K.pb` files, by K. One that does not read gives
/// nothing (writing the case reads it again and reports it).
fn known_inputs(dir: &std::path::Path) -> Vec<Known> {
    crate::case::numbered(dir, "input")
        .iter()
        .map(|f| {
            let Ok(p) = crate::model::read_tensor_file(f) else {
                return Known::default();
            };
            let shape = p.dims.iter().map(|&d| usize::try_from(d).ok()).collect();
            let n: Option<usize> = p
                .dims
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?));
            let value = n
                .filter(|&n| n <= FOLD_LIMIT)
                .and_then(|_| crate::tensor::to_tensor(&p, &f.display().to_string()).ok());
            Known { shape, value }
        })
        .collect()
}

/// `ty` with its shape replaced by `want`, which must fit it: the same
/// rank, and every fixed dim equal. This is how a model with symbolic dims
/// (a batch, a sequence length) is specialized on one set of inputs, so
/// that `Shape` and the arithmetic on it fold at import time.
fn specialize(name: &str, ty: &TypeInfo, want: &[usize]) -> Result<TypeInfo> {
    if let Some(s) = &ty.shape {
        let fits = s.len() == want.len() && s.iter().zip(want).all(|(&d, &w)| d < 0 || d as usize == w);
        if !fits {
            return Err(ImportError::BadShape {
                input: name.to_string(),
                msg: format!(
                    "shape {want:?} does not fit its declared shape {}",
                    ty.shape_string()
                ),
            });
        }
    }
    Ok(TypeInfo::new(
        ty.dtype,
        Some(want.iter().map(|&d| d as i64).collect()),
    ))
}

pub fn import(model: &ModelProto, opts: &Options) -> Result<Imported> {
    import_with(model, opts, None)
}

/// [`import`], where the inputs of the test data set `known` (its
/// `input_K.pb`) may stand in where an op needs a constant (Reshape's
/// shape, ReduceSum's axes, Pad's pads and fill value). The nodes still read the inputs;
/// the case is valid for inputs with those values, as a case made from
/// that data set is.
pub fn import_with(model: &ModelProto, opts: &Options, known: Option<&std::path::Path>) -> Result<Imported> {
    let opset = default_opset(model)?;
    let g = model.graph.as_ref().ok_or(ImportError::NoGraph)?;
    let mut imp = Importer::new(opset, OpRegistry::builtin(), g);
    let mut external = opts.model.as_deref().map(crate::external::ExternalData::new);
    for t in &g.initializer {
        let tensor = to_tensor_from(t, "initializer", external.as_mut())?;
        let param = opts.initializers == Initializers::Parameters && tensor.dtype().is_float();
        let mut v = imp.constant(&t.name, tensor.clone());
        if param {
            v.source = true;
            v.ty.value = None;
            imp.stored.insert(v.var.clone(), tensor);
            imp.params.push(v.var.clone());
        }
        imp.bind(&t.name, v);
    }
    let mut inputs = Vec::new();
    let mut input_decls = Vec::new();
    let mut input_types = Vec::new();
    let mut fed = match known {
        Some(dir) => known_inputs(dir),
        None => Vec::new(),
    };
    let graph_inputs = g
        .input
        .iter()
        .filter(|i| !imp.values.contains_key(&i.name)) // initializers listed as inputs (IR < 4)
        .collect::<Vec<_>>();
    if let Some((n, _)) = opts
        .shapes
        .iter()
        .find(|(n, _)| !graph_inputs.iter().any(|i| &i.name == n))
    {
        return Err(ImportError::BadShape {
            input: n.clone(),
            msg: "the model has no such input".into(),
        });
    }
    fed.resize_with(graph_inputs.len(), Known::default);
    for (k, i) in graph_inputs.into_iter().enumerate() {
        let mut ty = value_type(i)?;
        let given = opts.shapes.iter().find(|(n, _)| n == &i.name).map(|(_, s)| s);
        if let Some(want) = given.or(fed[k].shape.as_ref()) {
            ty = specialize(&i.name, &ty, want)?;
        }
        let var = imp.unique(&i.name);
        input_decls.push(InputDecl {
            name: var.clone(),
            dtype: ty.dtype,
            shape: ty.shape.clone(),
            mutable: false,
        });
        input_types.push(ty.clone());
        inputs.push((i.name.clone(), var.clone()));
        imp.bind(
            &i.name,
            Value {
                var,
                ty,
                constant: None,
                source: true,
                fed: fed[k].value.take(),
            },
        );
    }
    imp.import_nodes(&g.node, &g.output)?;
    let (outputs, out_vars) = imp.graph_outputs(&g.output)?;
    let file = GraphFile {
        format: FORMAT.to_string(),
        name: if g.name.is_empty() {
            "onnx".into()
        } else {
            g.name.clone()
        },
        inputs: input_decls,
        constants: Vec::new(),
        parameters: Vec::new(),
        nodes: imp.nodes,
        outputs: out_vars,
    };
    let mut values = BTreeMap::new();
    let mut file = file;
    for (names, param) in [(&imp.consts, false), (&imp.params, true)] {
        for n in names {
            if let Some(t) = imp.stored.get(n) {
                let decl = crate::case::value_decl(n, t, param)?;
                if param {
                    file.parameters.push(decl);
                } else {
                    file.constants.push(decl);
                }
                values.insert(n.clone(), t.clone());
            }
        }
    }
    // Parameters nobody reads are left out.
    let read: HashSet<&String> = file.nodes.iter().flat_map(|n| n.inputs.iter()).collect();
    file.parameters.retain(|p| read.contains(&p.name));
    values.retain(|k, _| read.contains(k));
    Ok(Imported {
        file,
        values,
        inputs,
        outputs,
        input_types,
    })
}
