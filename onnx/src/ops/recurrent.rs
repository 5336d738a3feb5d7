//! Recurrent layers: RNN, GRU and LSTM, each one Vigil op with ONNX's
//! inputs, attrs and outputs (Y, Y_h and, for LSTM, Y_c).

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{inputs_up_to, out_n};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("RNN", 7, recurrent),
    Op::new("GRU", 7, recurrent),
    Op::new("LSTM", 7, recurrent),
];

fn recurrent(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (name, max_in, outs) = match c.op_type.as_str() {
        "RNN" => ("rnn", 6, 2),
        "GRU" => ("gru", 6, 2),
        _ => ("lstm", 8, 3),
    };
    let ins = inputs_up_to(imp, c, 3, max_in)?;
    let mut a = Attrs::new();
    if let Some(h) = c.i("hidden_size") {
        a = a.with("hidden_size", h);
    }
    for key in ["direction"] {
        if let Some(s) = c.s(key) {
            a = a.with(key, s);
        }
    }
    if let Some(at) = c.attr("activations") {
        let names: Vec<String> = at
            .strings
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        a = a.with("activations", names);
    }
    for key in ["activation_alpha", "activation_beta"] {
        if let Some(at) = c.attr(key) {
            a = a.with(key, at.floats.iter().map(|&f| f as f64).collect::<Vec<f64>>());
        }
    }
    if let Some(clip) = c.f("clip") {
        a = a.with("clip", clip);
    }
    for key in ["layout", "linear_before_reset", "input_forget"] {
        if let Some(v) = c.i(key) {
            a = a.with(key, v);
        }
    }
    out_n(imp, c, name, a, &ins, outs)
}
