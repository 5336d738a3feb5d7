//! Builds small ONNX models in Rust (the crate's protobuf types), so the
//! importer's tests need no Python and no checked-in binaries.

use std::collections::HashMap;
use std::path::Path;

use onnx_protobuf::attribute_proto::AttributeType;
use onnx_protobuf::tensor_shape_proto::Dimension;
use onnx_protobuf::{
    type_proto, AttributeProto, GraphProto, Message, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use vigil_engine::graph::Graph;
use vigil_engine::{DType, Executor, OpRegistry, Tensor};

pub enum A {
    I(i64),
    F(f32),
    Ints(Vec<i64>),
    S(&'static str),
    T(Box<TensorProto>),
    /// A subgraph (If's branches, Loop's and Scan's bodies).
    G(Box<GraphProto>),
}

pub fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<(&str, A)>) -> NodeProto {
    let mut n = NodeProto::new();
    n.op_type = op.into();
    n.name = name.into();
    n.input = inputs.iter().map(|s| s.to_string()).collect();
    n.output = outputs.iter().map(|s| s.to_string()).collect();
    for (k, v) in attrs {
        let mut a = AttributeProto::new();
        a.name = k.into();
        match v {
            A::I(i) => {
                a.i = i;
                a.type_ = AttributeType::INT.into();
            }
            A::F(f) => {
                a.f = f;
                a.type_ = AttributeType::FLOAT.into();
            }
            A::Ints(v) => {
                a.ints = v;
                a.type_ = AttributeType::INTS.into();
            }
            A::S(s) => {
                a.s = s.as_bytes().to_vec();
                a.type_ = AttributeType::STRING.into();
            }
            A::T(t) => {
                a.t = Some(*t).into();
                a.type_ = AttributeType::TENSOR.into();
            }
            A::G(g) => {
                a.g = Some(*g).into();
                a.type_ = AttributeType::GRAPH.into();
            }
        }
        n.attribute.push(a);
    }
    n
}

pub fn value(name: &str, dtype: DType, shape: &[i64]) -> ValueInfoProto {
    let mut v = ValueInfoProto::new();
    v.name = name.into();
    let mut tt = type_proto::Tensor::new();
    tt.elem_type = vigil_onnx::tensor::elem_of(dtype);
    let mut s = TensorShapeProto::new();
    for &d in shape {
        let mut dim = Dimension::new();
        if d >= 0 {
            dim.set_dim_value(d);
        } else {
            dim.set_dim_param("N".into());
        }
        s.dim.push(dim);
    }
    tt.shape = Some(s).into();
    let mut t = TypeProto::new();
    t.set_tensor_type(tt);
    v.type_ = Some(t).into();
    v
}

pub fn tensor(name: &str, t: &Tensor) -> TensorProto {
    vigil_onnx::tensor::to_proto(t, name).unwrap()
}

pub fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

/// A graph (a model's, or a subgraph for [`A::G`]).
pub fn graph(
    name: &str,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
    outputs: Vec<ValueInfoProto>,
) -> GraphProto {
    let mut g = GraphProto::new();
    g.name = name.into();
    g.node = nodes;
    g.input = inputs;
    g.initializer = inits;
    g.output = outputs;
    g
}

pub fn model(
    opset: i64,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
    outputs: Vec<ValueInfoProto>,
) -> ModelProto {
    let g = graph("test", nodes, inputs, inits, outputs);
    let mut m = ModelProto::new();
    m.ir_version = 8;
    let mut o = OperatorSetIdProto::new();
    o.version = opset;
    m.opset_import.push(o);
    m.graph = Some(g).into();
    m
}

/// Encodes and decodes `m` (so the tests go through the wire format).
pub fn round_trip(m: &ModelProto) -> ModelProto {
    let bytes = m.write_to_bytes().unwrap();
    vigil_onnx::decode_model(&bytes, Path::new("test.onnx")).unwrap()
}

/// Imports `m`, writes the case, loads it back and runs it on `feeds`.
pub fn run(m: &ModelProto, feeds: &[(&str, Tensor)]) -> Vec<(String, Tensor)> {
    let imported = vigil_onnx::import(&round_trip(m), &vigil_onnx::Options::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    vigil_onnx::write_case(&imported, &vigil_onnx::InputSource::Random(0), dir.path()).unwrap();
    let g = Graph::load(dir.path().join("graph.json"), &OpRegistry::builtin()).unwrap();
    let feeds: HashMap<String, Tensor> = feeds
        .iter()
        .map(|(k, v)| (vigil_onnx::sanitize(k), v.clone()))
        .collect();
    Executor::new(&g).unwrap().run(&feeds).unwrap().outputs
}

pub fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

pub fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-5 * (1.0 + y.abs()))
}
