//! `conv(x, w[, b])`: N-d convolution with ONNX's semantics (cross-correlation,
//! as every framework computes it): `x` is `[N, C, spatial…]`, `w` is
//! `[M, C/group, kernel…]`, the optional bias `b` is `[M]`, and the output
//! `[N, M, out…]`. Attrs: `group` (default 1) and the window attrs
//! (`strides`, `dilations`, `pads`, `auto_pad`; `kernel_shape`, when given,
//! must match `w`).
//!
//! Each (image, group) is one GEMM on the project's matmul path (faer):
//! `out[Mg, O] = w[Mg, Cg·K] · col[Cg·K, O]`, where `col` is the im2col
//! matrix built from [`gather_table`]. A 1×1 kernel with stride 1 and no
//! padding reads the input plane directly as `col`, without copying.

use std::sync::Arc;

use ndarray::{ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD};

use crate::dtype::{DType, Float};
use crate::error::{op_err, Result};
use crate::ops::linalg::MatMulElem;
use crate::ops::window::{gather_table, infer_spatial, Axis1, Window, PAD, WINDOW_ATTRS};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// `conv` with its window and group count.
#[derive(Clone, Debug)]
pub struct Conv {
    pub window: Window,
    pub group: usize,
}

/// Sizes of one convolution, checked against each other.
struct Dims {
    n: usize,
    c: usize,
    m: usize,
    axes: Vec<Axis1>,
}

impl Conv {
    fn dims(&self, x: &[usize], w: &[usize], b: Option<&[usize]>) -> Result<Dims> {
        if x.len() < 3 || w.len() != x.len() {
            return op_err(format!(
                "op 'conv': x must be [N, C, spatial…] and w [M, C/group, kernel…] of the same rank, got {x:?} and {w:?}"
            ));
        }
        let (c, m, g) = (x[1], w[0], self.group);
        if c % g != 0 || m % g != 0 || w[1] * g != c {
            return op_err(format!(
                "op 'conv': group {g} does not fit x {x:?} (C = {c}) and w {w:?} (needs w[1] · group = C and M divisible by group)"
            ));
        }
        if !self.window.kernel.is_empty() && self.window.kernel != w[2..] {
            return op_err(format!(
                "op 'conv': attr 'kernel_shape' {:?} differs from the weight's {:?}",
                self.window.kernel,
                &w[2..]
            ));
        }
        if let Some(b) = b {
            if b != [m] {
                return op_err(format!("op 'conv': bias must be [{m}], got {b:?}"));
            }
        }
        let axes = self.window.resolve("conv", &x[2..], &w[2..])?;
        Ok(Dims { n: x[0], c, m, axes })
    }
}

fn check_float(dtypes: &[DType]) -> Result<()> {
    if !dtypes[0].is_float() || dtypes.iter().any(|&d| d != dtypes[0]) {
        return op_err(format!(
            "op 'conv' needs float inputs of one dtype, got {}",
            dtypes
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// True when the window is the identity map of each plane (1×1, stride 1,
/// no padding), so the input plane is already the im2col matrix.
fn pointwise(axes: &[Axis1]) -> bool {
    axes.iter()
        .all(|a| a.kernel == 1 && a.stride == 1 && a.pad_begin == 0 && a.pad_end == 0)
}

/// The convolution of contiguous `x` and `w` into contiguous `out`.
fn conv_kernel<T: Float + MatMulElem>(
    d: &Dims,
    group: usize,
    x: &[T],
    w: &[T],
    b: Option<&[T]>,
    out: &mut [T],
) -> Result<()> {
    let plane: usize = d.axes.iter().map(|a| a.input).product();
    let k: usize = d.axes.iter().map(|a| a.kernel).product();
    let o: usize = d.axes.iter().map(|a| a.output).product();
    let (cg, mg) = (d.c / group, d.m / group);
    let direct = pointwise(&d.axes);
    let table = if direct {
        Vec::new()
    } else {
        gather_table(&d.axes)?
    };
    let mut col = vec![T::zero(); if direct { 0 } else { cg * k * o }];
    let shape_err = |e: ndarray::ShapeError| crate::error::Error::Op(format!("internal: conv block: {e}"));
    for n in 0..d.n {
        for g in 0..group {
            let xg = &x[(n * d.c + g * cg) * plane..(n * d.c + (g + 1) * cg) * plane];
            if !direct {
                for (c, xc) in xg.chunks_exact(plane).enumerate() {
                    for kk in 0..k {
                        let row = &mut col[(c * k + kk) * o..(c * k + kk + 1) * o];
                        let t = &table[kk * o..(kk + 1) * o];
                        for (dst, &off) in row.iter_mut().zip(t) {
                            *dst = if off == PAD { T::zero() } else { xc[off as usize] };
                        }
                    }
                }
            }
            let cols = if direct { xg } else { &col[..] };
            let a = ArrayView2::from_shape((mg, cg * k), &w[g * mg * cg * k..(g + 1) * mg * cg * k])
                .map_err(shape_err)?;
            let bm = ArrayView2::from_shape((cg * k, o), cols).map_err(shape_err)?;
            let dst = &mut out[(n * d.m + g * mg) * o..(n * d.m + (g + 1) * mg) * o];
            let mut cm = ArrayViewMut2::from_shape((mg, o), dst).map_err(shape_err)?;
            T::gemm(&a, &bm, &mut cm);
        }
        if let Some(b) = b {
            for (m, row) in out[n * d.m * o..(n + 1) * d.m * o]
                .chunks_exact_mut(o)
                .enumerate()
            {
                row.iter_mut().for_each(|v| *v += b[m]);
            }
        }
    }
    Ok(())
}

fn run_conv<T: Float + MatMulElem>(d: &Dims, group: usize, inputs: &[Tensor], out: &Tensor) -> Result<()> {
    let b = inputs.get(2).map(|b| b.to_array::<T>()).transpose()?;
    let bs = b.as_ref().and_then(|b| b.as_slice());
    // Operands already in C order are read in place (no copy of the weights).
    inputs[0].read(|xv: ArrayViewD<'_, T>| {
        let xc = xv.as_standard_layout();
        inputs[1].read(|wv: ArrayViewD<'_, T>| {
            let wc = wv.as_standard_layout();
            let (Some(xs), Some(ws)) = (xc.as_slice(), wc.as_slice()) else {
                return op_err("internal: conv operands are not contiguous");
            };
            out.write(|mut ov: ArrayViewMutD<'_, T>| match ov.as_slice_mut() {
                Some(s) => conv_kernel(d, group, xs, ws, bs, s),
                None => {
                    // A caller-supplied buffer with another layout: compute, then copy.
                    let mut tmp = vec![T::zero(); ov.len()];
                    conv_kernel(d, group, xs, ws, bs, &mut tmp)?;
                    let tmp = ArrayViewD::from_shape(ov.shape(), &tmp[..])
                        .map_err(|e| crate::error::Error::Op(format!("internal: conv output: {e}")))?;
                    ov.assign(&tmp);
                    Ok(())
                }
            })?
        })?
    })?
}

impl Op for Conv {
    fn name(&self) -> &str {
        "conv"
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_float(&inputs.iter().map(|t| t.dtype).collect::<Vec<_>>())?;
        let (x, w) = (&inputs[0], &inputs[1]);
        let Some(ws) = w.static_shape() else {
            return Ok(vec![TypeInfo::new(x.dtype, x.rank().map(|r| vec![-1; r]))]);
        };
        if let Some(xs) = x.static_shape() {
            let b = inputs.get(2).and_then(|b| b.static_shape());
            let d = self.dims(&xs, &ws, b.as_deref())?;
            let mut out = vec![d.n as i64, d.m as i64];
            out.extend(d.axes.iter().map(|a| a.output as i64));
            return Ok(vec![TypeInfo::known(
                x.dtype,
                &out.iter().map(|&v| v as usize).collect::<Vec<_>>(),
            )]);
        }
        let kernel = ws.get(2..).unwrap_or_default().to_vec();
        Ok(vec![TypeInfo::new(
            x.dtype,
            infer_spatial("conv", &self.window, &x.shape, &kernel, ws[0] as i64)?,
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        check_float(&inputs.iter().map(|t| t.dtype()).collect::<Vec<_>>())?;
        let d = self.dims(
            inputs[0].shape(),
            inputs[1].shape(),
            inputs.get(2).map(|b| b.shape()),
        )?;
        let mut shape = vec![d.n, d.m];
        shape.extend(d.axes.iter().map(|a| a.output));
        let dtype = inputs[0].dtype();
        let out = ctx.output(0, dtype, &shape)?;
        crate::dispatch_float!(dtype, T => run_conv::<T>(&d, self.group, inputs, &out)?,
            return op_err("op 'conv' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let a = if self.group == 1 {
            Attrs::new()
        } else {
            Attrs::new().with("group", self.group)
        };
        self.window.to_attrs(a)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("conv", |a: &Attrs| {
        let mut known = WINDOW_ATTRS.to_vec();
        known.push("group");
        a.only("conv", &known)?;
        let window = Window::from_attrs(a)?;
        if window.ceil_mode {
            return op_err("op 'conv' has no attr 'ceil_mode'");
        }
        let group = a.i64("group")?.unwrap_or(1);
        if group < 1 {
            return op_err(format!("op 'conv': attr 'group' must be positive, got {group}"));
        }
        Ok(Arc::new(Conv {
            window,
            group: group as usize,
        }) as Arc<dyn Op>)
    });
}
