//! Convs that read or write channels-last images (NHWC in memory, NCHW to
//! every op; see `exec::layout`): a 1×1 conv is one GEMM whichever way its
//! plane and output lie, read and written in place as row- or column-major
//! matrices. On a channels-last f32 plane it writes channels-last too,
//! through the packed-weight kernel (`kernels::packed_gemm`, its weight
//! packed once per weight in the conv's cache): the block after it then
//! reads channels-last as well (a residual add keeps the layout), and no
//! 1×1 conv between two depthwise convs converts. An ungrouped im2col conv
//! (a stem) writes its GEMM's output column-major; and a depthwise conv on
//! a channels-last input computes one vector of channels per tap and keeps
//! the layout. Every other conv, and
//! these on dtypes without the kernels, take the C-order path, which
//! copies a channels-last input to C order first.

use crate::dtype::{DType, Float};
use crate::error::Result;
use crate::kernels::depthwise::{Depthwise, DepthwiseElem, Weights};
use crate::kernels::packed_gemm::{self, Product};
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
    /// A 1×1 f32 conv from a channels-last plane to a channels-last output
    /// through the packed-weight kernel, of panels this wide.
    Packed { width: usize },
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
        if let (true, DType::F32, Some(width)) = (x_cl, x.dtype(), packed_gemm::panel_width()) {
            return Some(Path::Packed { width });
        }
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
        Path::Packed { .. } | Path::Depthwise | Path::Im2col => true,
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
    let done = match path {
        Path::Packed { width } => run_packed(conv, d, inputs, &dst, width)?,
        _ => crate::dispatch_float!(dtype, T => run::<T>(path, d, inputs, &dst)?, false),
    };
    if !done {
        return Ok(None);
    }
    if !dst.same_buffer(&out) {
        out.assign(&dst)?;
    }
    Ok(Some(out))
}

/// [`Path::Packed`] into `dst` (channels-last): per image, the plane's
/// `[positions, C]` times the packed weight.
fn run_packed(conv: &Conv, d: &Dims, inputs: &[Tensor], dst: &Tensor, width: usize) -> Result<bool> {
    let (x, w) = (&inputs[0], inputs[1].to_contiguous()?);
    let b = inputs.get(2).map(|b| b.to_array::<f32>()).transpose()?;
    let bias = b.as_ref().and_then(|b| b.as_slice());
    let (Some((xm, _)), Some((om, _))) = (x.in_memory_order(), dst.in_memory_order()) else {
        return Ok(false);
    };
    let (c, m) = (d.c, d.m);
    let packed =
        w.read_contiguous(|ws: &[f32]| conv.packed.get(&inputs[1], || packed_gemm::pack(ws, m, c, width)))?;
    let ip = d.axes[0].input * d.axes[1].input;
    xm.read_contiguous(|xs: &[f32]| {
        om.write_contiguous(|os: &mut [f32]| {
            for (xi, oi) in xs.chunks_exact(c * ip).zip(os.chunks_exact_mut(m * ip)).take(d.n) {
                let p = Product {
                    x: xi,
                    packed: &packed,
                    bias,
                    k: c,
                    m,
                    width,
                };
                packed_gemm::run(p, oi);
            }
        })
    })??;
    Ok(true)
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
