//! The `vigil-graph/1` JSON format (see docs/graph-format.md).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::graph::{Graph, NodeSpec, VarKind, VarSpec};
use crate::ops::{Attrs, OpRegistry, TypeInfo};
use crate::tensor::{limit, Tensor};

pub const FORMAT: &str = "vigil-graph/1";

/// A node attr that records where the node came from (an importer puts the
/// original ONNX op and name there). Ops never see it.
pub const SOURCE_ATTR: &str = "source";

/// The file as written on disk.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphFile {
    pub format: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub inputs: Vec<InputDecl>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<ValueDecl>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<ValueDecl>,
    pub nodes: Vec<NodeDecl>,
    pub outputs: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputDecl {
    pub name: String,
    pub dtype: DType,
    /// `None` for any rank; `-1` for a dynamic dimension.
    #[serde(default)]
    pub shape: Option<Vec<i64>>,
    #[serde(default)]
    pub mutable: bool,
}

/// A constant or parameter: inline `data` (flat, C order), an `npy` file,
/// or one `fill` value repeated over `shape` (a ConstantOfShape result of a
/// million elements is one line, not a million numbers).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueDecl {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<DType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDecl {
    pub name: String,
    pub op: String,
    #[serde(default)]
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Attrs::is_empty")]
    pub attrs: Attrs,
}

/// `data` (or, with `fill` set, the one `fill` value) as a tensor of `shape`.
fn parse_data<T: Element>(name: &str, data: &[Value], shape: &[usize], fill: bool) -> Result<Tensor> {
    let bad = |i: usize, v: &Value| {
        let field = if fill {
            "fill".to_string()
        } else {
            format!("data[{i}]")
        };
        Error::Graph(format!("constant '{name}': {field} is {v}, not a {}", T::DTYPE))
    };
    let mut out = Vec::with_capacity(data.len());
    for (i, v) in data.iter().enumerate() {
        // Exact: integers must be integers in range, bools true/false;
        // floats also take "nan", "inf" and "-inf".
        let x = match (T::DTYPE, v) {
            (DType::Bool, Value::Bool(b)) => T::from_scalar(crate::Scalar::Bool(*b)),
            (dt, Value::Number(n)) if dt.is_int() => {
                let x = n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
                T::from_scalar(
                    x.and_then(|x| crate::Scalar::from_i128(dt, x))
                        .ok_or_else(|| bad(i, v))?,
                )
            }
            (dt, Value::Number(n)) if dt.is_float() => T::from_f64(n.as_f64().ok_or_else(|| bad(i, v))?),
            (dt, Value::String(s)) if dt.is_float() && matches!(s.as_str(), "nan" | "inf" | "-inf") => {
                T::from_f64(s.parse::<f64>().map_err(|_| bad(i, v))?)
            }
            _ => return Err(bad(i, v)),
        };
        out.push(x);
    }
    Tensor::from_vec(shape, out).map_err(|e| Error::Graph(format!("constant '{name}': {e}")))
}

impl ValueDecl {
    fn load(&self, base: Option<&Path>) -> Result<(TypeInfo, Tensor)> {
        let given = [self.data.is_some(), self.npy.is_some(), self.fill.is_some()];
        let t = match (&self.data, &self.npy, &self.fill) {
            _ if given.iter().filter(|&&g| g).count() > 1 => {
                return Err(Error::Graph(format!(
                    "constant '{}': give one of 'data', 'npy' or 'fill', not several",
                    self.name
                )))
            }
            (None, None, None) => {
                return Err(Error::Graph(format!(
                    "constant '{}': needs 'data', 'npy' or 'fill'",
                    self.name
                )))
            }
            (None, None, Some(v)) => self.load_fill(v)?,
            (Some(data), _, _) => {
                let dtype = self.dtype.ok_or_else(|| {
                    Error::Graph(format!("constant '{}': inline data needs 'dtype'", self.name))
                })?;
                let shape = self.shape.clone().unwrap_or_else(|| vec![data.len()]);
                crate::dispatch_all!(dtype, T => parse_data::<T>(&self.name, data, &shape, false)?)
            }
            (None, Some(rel), _) => {
                let path = match base {
                    Some(b) => b.join(rel),
                    None => rel.into(),
                };
                Tensor::read_npy(&path)?
            }
        };
        if let Some(d) = self.dtype {
            if d != t.dtype() {
                return Err(Error::Graph(format!(
                    "constant '{}': declared {d}, the value is {}",
                    self.name,
                    t.dtype()
                )));
            }
        }
        if let Some(s) = &self.shape {
            if s.as_slice() != t.shape() {
                return Err(Error::Graph(format!(
                    "constant '{}': declared shape {s:?}, the value has {:?}",
                    self.name,
                    t.shape()
                )));
            }
        }
        Ok((TypeInfo::of_constant(&t), t))
    }

    /// A `fill` declaration: `v` (one element, parsed like `data`'s) over
    /// the declared shape, whose size is checked before anything is
    /// allocated.
    fn load_fill(&self, v: &Value) -> Result<Tensor> {
        let bad = |what: &str| Error::Graph(format!("constant '{}': 'fill' needs {what}", self.name));
        let dtype = self.dtype.ok_or_else(|| bad("'dtype'"))?;
        let shape = self.shape.as_ref().ok_or_else(|| bad("'shape'"))?;
        let with_name = |e: Error| Error::Graph(format!("constant '{}': {e}", self.name));
        let n = limit::check_shape(shape).map_err(with_name)?;
        limit::check_alloc(dtype, n).map_err(with_name)?;
        let one = crate::dispatch_all!(dtype, T => parse_data::<T>(&self.name, std::slice::from_ref(v), &[], true)?);
        one.broadcast_to(shape)?.to_contiguous()
    }

    /// A `fill` declaration of `t` when every element of it has the same
    /// bits (and it has any); `None` otherwise.
    pub fn fill_of(name: &str, t: &Tensor) -> Result<Option<ValueDecl>> {
        fn first_if_uniform<T: Element>(v: ndarray::ArrayViewD<'_, T>) -> Option<T> {
            let bits = |x: &T| bytemuck::cast_slice::<T, u8>(std::slice::from_ref(x)).to_vec();
            let first = *v.iter().next()?;
            let b = bits(&first);
            v.iter().all(|x| bits(x) == b).then_some(first)
        }
        let value = crate::dispatch_all!(t.dtype(), T => t
            .read(first_if_uniform::<T>)?
            .map(|x| json_number(x.to_f64(), T::DTYPE, x.to_scalar())));
        Ok(value.map(|fill| ValueDecl {
            name: name.to_string(),
            dtype: Some(t.dtype()),
            shape: Some(t.shape().to_vec()),
            data: None,
            npy: None,
            fill: Some(fill),
        }))
    }

    /// A declaration with the value inline.
    pub fn inline(name: &str, t: &Tensor) -> Result<ValueDecl> {
        let data = crate::dispatch_all!(t.dtype(), T => t.to_array::<T>()?.iter().map(|x| json_number(x.to_f64(), T::DTYPE, x.to_scalar())).collect());
        Ok(ValueDecl {
            name: name.to_string(),
            dtype: Some(t.dtype()),
            shape: Some(t.shape().to_vec()),
            data: Some(data),
            npy: None,
            fill: None,
        })
    }
}

fn json_number(v: f64, dt: DType, s: crate::Scalar) -> Value {
    match (dt, s) {
        (_, crate::Scalar::U64(u)) => Value::from(u),
        (DType::Bool, crate::Scalar::Bool(b)) => Value::from(b),
        _ if s.to_i128().is_some() => Value::from(s.to_i128().and_then(|i| i64::try_from(i).ok())),
        _ if v.is_nan() => Value::from("nan"),
        _ if v.is_infinite() => Value::from(if v > 0.0 { "inf" } else { "-inf" }),
        _ => Value::from(v),
    }
}

impl GraphFile {
    /// Parses the JSON text of a graph file.
    pub fn parse(text: &str) -> Result<GraphFile> {
        let f: GraphFile = serde_json::from_str(text).map_err(|e| Error::Graph(e.to_string()))?;
        if f.format != FORMAT {
            return Err(Error::Graph(format!(
                "format is '{}', expected '{FORMAT}'",
                f.format
            )));
        }
        Ok(f)
    }

    /// Builds the graph; `npy` paths are relative to `base`.
    pub fn to_graph(&self, base: Option<&Path>, registry: &OpRegistry) -> Result<Graph> {
        let mut sources = Vec::new();
        for i in &self.inputs {
            if let Some(s) = &i.shape {
                if s.iter().any(|&d| d < -1) {
                    return Err(Error::Graph(format!(
                        "input '{}': shape {s:?} has a dimension below -1",
                        i.name
                    )));
                }
            }
            sources.push(VarSpec {
                name: i.name.clone(),
                ty: TypeInfo::new(i.dtype, i.shape.clone()),
                kind: VarKind::Input { mutable: i.mutable },
            });
        }
        for (decls, param) in [(&self.constants, false), (&self.parameters, true)] {
            for c in decls {
                let (mut ty, t) = c.load(base)?;
                if param {
                    // Parameters change at run time: no constant value.
                    ty.value = None;
                }
                let kind = if param {
                    VarKind::Parameter(t)
                } else {
                    VarKind::Constant(t)
                };
                sources.push(VarSpec {
                    name: c.name.clone(),
                    ty,
                    kind,
                });
            }
        }
        let nodes = self
            .nodes
            .iter()
            .map(|n| {
                let mut attrs = n.attrs.clone();
                attrs.0.remove(SOURCE_ATTR);
                Ok(NodeSpec {
                    name: n.name.clone(),
                    op: super::control::make(registry, &n.name, &n.op, &attrs)
                        .map_err(|e| e.at_node(&n.name))?,
                    inputs: n.inputs.clone(),
                    outputs: n.outputs.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Graph::new(&self.name, sources, nodes, &self.outputs)
    }

    /// The file form of `g`, with constants and parameters inline.
    pub fn from_graph(g: &Graph) -> Result<GraphFile> {
        let mut f = GraphFile {
            format: FORMAT.to_string(),
            name: g.name().to_string(),
            inputs: Vec::new(),
            constants: Vec::new(),
            parameters: Vec::new(),
            nodes: Vec::new(),
            outputs: g.outputs().iter().map(|&v| g.var(v).name.clone()).collect(),
        };
        for v in g.vars() {
            match &v.kind {
                VarKind::Input { mutable } => f.inputs.push(InputDecl {
                    name: v.name.clone(),
                    dtype: v.ty.dtype,
                    shape: v.ty.shape.clone(),
                    mutable: *mutable,
                }),
                VarKind::Constant(t) => f.constants.push(ValueDecl::inline(&v.name, t)?),
                VarKind::Parameter(t) => f.parameters.push(ValueDecl::inline(&v.name, t)?),
                VarKind::Output { .. } => {}
            }
        }
        for n in g.nodes() {
            f.nodes.push(NodeDecl {
                name: n.name.clone(),
                op: n.op.name().to_string(),
                inputs: n.inputs.iter().map(|&v| g.var(v).name.clone()).collect(),
                outputs: n.outputs.iter().map(|&v| g.var(v).name.clone()).collect(),
                attrs: n.op.attrs(),
            });
        }
        Ok(f)
    }
}

impl Graph {
    /// Loads a graph file. Errors name the file, then the node or field.
    pub fn load(path: impl AsRef<Path>, registry: &OpRegistry) -> Result<Graph> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::file(path, e))?;
        let wrap = |e: Error| match e {
            Error::File { .. } | Error::Npy { .. } => e,
            other => Error::file(path, other),
        };
        let f = GraphFile::parse(&text).map_err(wrap)?;
        f.to_graph(path.parent(), registry).map_err(wrap)
    }

    /// Parses graph JSON text (npy paths relative to the current directory).
    pub fn from_json(text: &str, registry: &OpRegistry) -> Result<Graph> {
        GraphFile::parse(text)?.to_graph(None, registry)
    }

    /// The graph as `vigil-graph/1` JSON, constants inline.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(&GraphFile::from_graph(self)?).map_err(|e| Error::Graph(e.to_string()))
    }
}
