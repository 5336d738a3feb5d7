//! Signal processing: DFT, STFT, the windows STFT takes (HannWindow,
//! HammingWindow, BlackmanWindow) and MelWeightMatrix. Lengths and axes
//! given as inputs are read when the model runs; an optional input left
//! out before a given one becomes an empty constant, which the ops read as
//! absent.

use vigil_engine::{Attrs, DType};

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, inputs_up_to, out};
use super::Op;
use crate::tensor::dtype_of;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("HannWindow", 17, window),
    Op::new("HammingWindow", 17, window),
    Op::new("BlackmanWindow", 17, window),
    Op::new("MelWeightMatrix", 17, mel_weight_matrix),
    Op::new("DFT", 17, dft),
    Op::new("STFT", 17, stft),
];

/// `spectral_window`; ONNX's `output_datatype` defaults to float.
fn window(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let size = input(imp, c, 0)?;
    let kind = match c.op_type.as_str() {
        "HannWindow" => "hann",
        "HammingWindow" => "hamming",
        _ => "blackman",
    };
    let what = format!("node '{}' ({}): attr 'output_datatype'", c.onnx_name, c.op_type);
    let dtype = match c.i("output_datatype") {
        Some(e) => dtype_of(e as i32, &what)?,
        None => DType::F32,
    };
    let a = Attrs::new()
        .with("kind", kind)
        .with("periodic", c.i("periodic").unwrap_or(1) != 0)
        .with("dtype", dtype.name());
    out(imp, c, "spectral_window", a, &[size])
}

/// MelWeightMatrix (opset 17): `mel_weight_matrix` of its five scalar
/// inputs, read when it runs; `output_datatype` (default float) as `dtype`.
fn mel_weight_matrix(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..5).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let what = format!("node '{}' ({}): attr 'output_datatype'", c.onnx_name, c.op_type);
    let dtype = match c.i("output_datatype") {
        Some(e) => dtype_of(e as i32, &what)?,
        None => DType::F32,
    };
    out(
        imp,
        c,
        "mel_weight_matrix",
        Attrs::new().with("dtype", dtype.name()),
        &ins,
    )
}

/// `dft`: opset 17 takes the axis as an attr (default 1), opset 20 as
/// input 2 (default -2).
fn dft(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = inputs_up_to(imp, c, 1, 3)?;
    let axis = if imp.opset < 20 {
        c.i("axis").unwrap_or(1)
    } else {
        -2
    };
    let a = Attrs::new()
        .with("axis", axis)
        .with("inverse", c.i("inverse").unwrap_or(0) != 0)
        .with("onesided", c.i("onesided").unwrap_or(0) != 0);
    out(imp, c, "dft", a, &ins)
}

fn stft(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = inputs_up_to(imp, c, 2, 4)?;
    let a = Attrs::new().with("onesided", c.i("onesided").unwrap_or(1) != 0);
    out(imp, c, "stft", a, &ins)
}
