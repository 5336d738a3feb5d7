//! f16 and bf16 ops that combine several roundings (a sum, a normalization, a
//! convolution) compute in f32 and round each output once: numpy's float16
//! loops widen to float the same way, and one rounding per op is what the
//! ONNX tests expect. Elementwise f16 kernels need none of this: half's
//! arithmetic already computes each element in f32 and rounds it once.

use crate::dtype::DType;
use crate::error::Result;
use crate::ops::{Op, OpCtx};
use crate::tensor::Tensor;

/// Whether `op` should run through [`compute_in_f32`]: some input is f16.
pub(crate) fn wants_f32(inputs: &[Tensor]) -> bool {
    inputs.iter().any(|t| is_half(t.dtype()))
}

/// The 16-bit floats, which compute in f32.
fn is_half(d: DType) -> bool {
    matches!(d, DType::F16 | DType::BF16)
}

/// `op` on f32 copies of its f16 and bf16 inputs (other inputs as they
/// are); every f32 output is rounded into an output of the first such
/// input's dtype: the input it destroys for an
/// in-place op, else one from `ctx` (so a caller's preallocated buffer is
/// honoured). Other outputs are passed through. For ops without views.
pub(crate) fn compute_in_f32(op: &dyn Op, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
    let half = inputs
        .iter()
        .map(Tensor::dtype)
        .find(|&d| is_half(d))
        .unwrap_or(DType::F16);
    let wide = inputs
        .iter()
        .map(|t| match t.dtype() {
            d if is_half(d) => t.cast(DType::F32),
            _ => Ok(t.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    let outs = op.compute(&wide, &mut OpCtx::new(ctx.node()))?;
    let destroyed = op.destroy_map();
    outs.into_iter()
        .enumerate()
        .map(|(i, o)| {
            if o.dtype() != DType::F32 {
                return Ok(o);
            }
            let narrow = match destroyed.iter().find(|&&(out, _)| out == i) {
                Some(&(_, input)) => inputs[input].clone(),
                None => ctx.output(i, half, o.shape())?,
            };
            o.cast_into(&narrow)?;
            Ok(narrow)
        })
        .collect()
}
