//! Convs that read or write channels-last images (NHWC in memory, NCHW to
//! every op; see `exec::layout`): a 1×1 conv is one GEMM whichever way its
//! plane and output lie, read and written in place as row- or column-major
//! matrices; an ungrouped im2col conv (a stem) writes its GEMM's output
//! column-major; and a depthwise conv on a channels-last input computes one
//! vector of channels per tap and keeps the layout. Every other conv, and
//! these on dtypes without the kernels, take the C-order path, which
//! copies a channels-last input to C order first.

use crate::dtype::{DType, Float};
use crate::error::Result;
use crate::kernels::depthwise::{Depthwise, DepthwiseElem, Weights};
use crate::ops::linalg::MatMulElem;
use crate::ops::window::planar;
use crate::ops::OpCtx;
use crate::tensor::Tensor;

use super::{axis_taps, conv_kernel, pointwise, winograd_tiles, Conv, Dims, COL_BLOCK};
use crate::parallel::PARALLEL_MACS;

/// An `[N, C, H, W]` image's axes slowest first when channels-last.
const NHWC: [usize; 4] = [0, 2, 3, 1];

/// Whether `t` is a 4-D value laid out channels-last without gaps.
fn is_channels_last(t: &Tensor) -> bool {
    t.ndim() == 4 && !t.is_contiguous() && t.layout().memory_order().as_deref() == Some(&NHWC[..])
}

/// Which channels-last path a conv call takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// A 1×1 conv: one GEMM per image; `x_cl` and `out_cl` say which of
    /// the plane and the output are channels-last.
    OneByOne { x_cl: bool, out_cl: bool },
    /// A depthwise conv (one input channel per output) on a channels-last
    /// input, writing a channels-last output.
    Depthwise,
    /// An ungrouped conv through im2col blocks (not Winograd), writing a
    /// channels-last output from a C-order input.
    Im2col,
}

fn path(conv: &Conv, d: &Dims, x: &Tensor, hint: bool) -> Option<Path> {
    if d.axes.len() != 2 || !matches!(x.dtype(), DType::F32 | DType::F64) {
        return None;
    }
    let x_cl = is_channels_last(x);
    if conv.group == 1 && pointwise(&d.axes) && (x_cl || hint) {
        return Some(Path::OneByOne { x_cl, out_cl: hint });
    }
    let depthwise = conv.group > 1 && conv.group == d.c && d.m == d.c && planar(&d.axes).is_some();
    if depthwise && x_cl {
        return Some(Path::Depthwise);
    }
    let im2col = conv.group == 1 && !pointwise(&d.axes) && winograd_tiles(&d.axes, 1, d.c, d.m).is_none();
    (im2col && hint).then_some(Path::Im2col)
}

/// The conv of `inputs` (already checked: `d`) on a channels-last path, or
/// `None` when it takes none.
pub(super) fn compute(
    conv: &Conv,
    d: &Dims,
    inputs: &[Tensor],
    ctx: &mut OpCtx,
    shape: &[usize],
) -> Result<Option<Tensor>> {
    let x = &inputs[0];
    let Some(path) = path(conv, d, x, ctx.prefers_channels_last()) else {
        return Ok(None);
    };
    let out_cl = match path {
        Path::OneByOne { out_cl, .. } => out_cl,
        Path::Depthwise | Path::Im2col => true,
    };
    let dtype = x.dtype();
    let out = if out_cl {
        ctx.output_in_order(0, dtype, shape, &NHWC)?
    } else {
        ctx.output(0, dtype, shape)?
    };
    // A caller's buffer in another layout gets the result copied in.
    let laid_out = if out_cl {
        is_channels_last(&out)
    } else {
        out.is_contiguous()
    };
    let dst = if laid_out && out.offset() == 0 {
        out.clone()
    } else if out_cl {
        Tensor::uninit_in_order(dtype, shape, &NHWC)?
    } else {
        Tensor::uninit(dtype, shape)?
    };
    let done = crate::dispatch_float!(dtype, T => run::<T>(path, d, inputs, &dst)?, false);
    if !done {
        return Ok(None);
    }
    if !dst.same_buffer(&out) {
        out.assign(&dst)?;
    }
    Ok(Some(out))
}

/// `path` into `dst` (laid out as the path writes). False when the dtype
/// has no such kernel.
fn run<T: Float + MatMulElem + DepthwiseElem>(
    path: Path,
    d: &Dims,
    inputs: &[Tensor],
    dst: &Tensor,
) -> Result<bool> {
    let (x, w) = (&inputs[0], inputs[1].to_contiguous()?);
    let b = inputs.get(2).map(|b| b.to_array::<T>()).transpose()?;
    let bias = b.as_ref().and_then(|b| b.as_slice());
    // Both layouts as slices in memory order; im2col reads C order.
    let xm = match x.in_memory_order() {
        Some((xm, _)) if path != Path::Im2col => xm,
        _ => x.to_contiguous()?,
    };
    let om = match dst.in_memory_order() {
        Some((om, _)) => om,
        None => dst.clone(),
    };
    let (c, m) = (d.c, d.m);
    let (ip, op) = (
        d.axes[0].input * d.axes[1].input,
        d.axes[0].output * d.axes[1].output,
    );
    let (h, wa) = (axis_taps(&d.axes[0]), axis_taps(&d.axes[1]));
    let done = xm.read_contiguous(|xs: &[T]| {
        w.read_contiguous(|ws: &[T]| {
            om.write_contiguous(|os: &mut [T]| -> Result<bool> {
                if path == Path::Im2col {
                    conv_kernel(d, 1, xs, ws, bias, os, None, COL_BLOCK, PARALLEL_MACS, true)?;
                    return Ok(true);
                }
                for n in 0..d.n {
                    let (xi, oi) = (
                        &xs[n * c * ip..(n + 1) * c * ip],
                        &mut os[n * m * op..(n + 1) * m * op],
                    );
                    if let Path::OneByOne { x_cl, out_cl } = path {
                        if !T::gemm_major(ws, (m, c, op), (xi, x_cl), (oi, out_cl)) {
                            return Ok(false);
                        }
                        super::add_bias(bias, m, op, out_cl, oi);
                        continue;
                    }
                    let conv = Depthwise {
                        x: xi,
                        wts: Weights { taps: ws, bias },
                        per: 1,
                        h: &h,
                        w: &wa,
                    };
                    T::depthwise_channels_last(conv, oi);
                }
                Ok(true)
            })
        })
    })????;
    Ok(done)
}
