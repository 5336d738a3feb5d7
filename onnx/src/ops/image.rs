//! Image codecs: ImageDecoder.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, out};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[Op::new("ImageDecoder", 20, image_decoder)];

/// `image_decoder` with `pixel_format` (RGB, BGR or Grayscale; RGB when
/// absent). The output's height and width are decided when the node runs;
/// a stream that cannot be decoded fails the run, naming the node.
fn image_decoder(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let pf = c.s("pixel_format").unwrap_or_else(|| "RGB".into());
    if !matches!(pf.as_str(), "RGB" | "BGR" | "Grayscale") {
        return Err(c.bad_attr(
            "pixel_format",
            format!("must be RGB, BGR or Grayscale, got '{pf}'"),
        ));
    }
    out(
        imp,
        c,
        "image_decoder",
        Attrs::new().with("pixel_format", pf),
        &[x],
    )
}
