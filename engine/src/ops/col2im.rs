//! `col2im(x, image_shape, block_shape)` (ONNX Col2Im): the inverse of
//! im2col, summing overlapping blocks. x is `[N, C·∏block, L]`: column `l`
//! holds one block position (row-major over the positions), row
//! `c·∏block + k` the block's element `k` (row-major) of channel `c`.
//! The output is `[N, C, image…]`. Attrs as a convolution's: `strides`,
//! `dilations` (default 1s) and `pads` (`[b₁…bᵣ, e₁…eᵣ]`, default 0s).
//! `image_shape` and `block_shape` are i64 inputs, read when the op runs.
//! Float dtypes, summed in f64, rounded once.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `col2im` op.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Col2Im {
    pub strides: Option<Vec<usize>>,
    pub dilations: Option<Vec<usize>>,
    pub pads: Option<Vec<usize>>,
}

/// The geometry of one call.
struct Geometry {
    image: Vec<usize>,
    block: Vec<usize>,
    strides: Vec<usize>,
    dilations: Vec<usize>,
    pad_begin: Vec<usize>,
    /// Block positions per axis.
    positions: Vec<usize>,
}

fn product(v: &[usize]) -> usize {
    v.iter().product()
}

/// Row-major multi-index of `i` in `dims`.
fn unravel(mut i: usize, dims: &[usize], out: &mut [usize]) {
    for (d, o) in dims.iter().zip(out.iter_mut()).rev() {
        *o = i % d;
        i /= d;
    }
}

impl Col2Im {
    fn geometry(&self, x: &[usize], image: &[i64], block: &[i64]) -> Result<Geometry> {
        let r = image.len();
        let bad = |what: String| op_err(format!("op 'col2im': {what}"));
        if block.len() != r || r == 0 {
            return bad(format!(
                "image_shape {image:?} and block_shape {block:?} must have one length per spatial axis"
            ));
        }
        if image.iter().chain(block).any(|&d| d < 1) {
            return bad(format!(
                "image_shape {image:?} and block_shape {block:?} must be positive"
            ));
        }
        let image: Vec<usize> = image.iter().map(|&d| d as usize).collect();
        let block: Vec<usize> = block.iter().map(|&d| d as usize).collect();
        let ones = vec![1; r];
        let strides = self.strides.clone().unwrap_or_else(|| ones.clone());
        let dilations = self.dilations.clone().unwrap_or(ones);
        let pads = self.pads.clone().unwrap_or_else(|| vec![0; 2 * r]);
        if strides.len() != r || dilations.len() != r || pads.len() != 2 * r {
            return bad(format!(
                "strides, dilations and pads must be for {r} spatial axes"
            ));
        }
        let mut positions = Vec::with_capacity(r);
        for d in 0..r {
            let span = dilations[d] * (block[d] - 1) + 1;
            let room = image[d] + pads[d] + pads[d + r];
            if span > room || strides[d] == 0 {
                return bad(format!(
                    "a block spanning {span} does not fit axis {d} of {} (padded to {room})",
                    image[d]
                ));
            }
            positions.push((room - span) / strides[d] + 1);
        }
        let rows = product(&block);
        if x.len() != 3 || !x[1].is_multiple_of(rows) || x[2] != product(&positions) {
            return bad(format!(
                "x of shape {x:?} must be [N, C·{rows}, {}] for these blocks",
                product(&positions)
            ));
        }
        Ok(Geometry {
            image,
            block,
            strides,
            dilations,
            pad_begin: pads[..r].to_vec(),
            positions,
        })
    }
}

fn col2im_kernel(g: &Geometry, x: &Tensor, out: &Tensor) -> Result<()> {
    let v = x.to_f64_vec()?;
    let (n, rows, cols) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let k = product(&g.block);
    let c = rows / k;
    let plane = product(&g.image);
    let r = g.image.len();
    let mut y = vec![0f64; n * c * plane];
    let (mut kb, mut pos) = (vec![0; r], vec![0; r]);
    for b in 0..n {
        for ch in 0..c {
            let dst = &mut y[(b * c + ch) * plane..][..plane];
            for kk in 0..k {
                unravel(kk, &g.block, &mut kb);
                let row = &v[((b * rows) + ch * k + kk) * cols..][..cols];
                'col: for (l, &val) in row.iter().enumerate() {
                    unravel(l, &g.positions, &mut pos);
                    let mut at = 0;
                    for d in 0..r {
                        let p =
                            (pos[d] * g.strides[d] + kb[d] * g.dilations[d]) as i64 - g.pad_begin[d] as i64;
                        if p < 0 || p as usize >= g.image[d] {
                            continue 'col;
                        }
                        at = at * g.image[d] + p as usize;
                    }
                    dst[at] += val;
                }
            }
        }
    }
    out.write_f64s(&y)
}

fn ints(t: &Tensor) -> Result<Vec<i64>> {
    Ok(t.to_f64_vec()?.iter().map(|&v| v as i64).collect())
}

impl Op for Col2Im {
    fn name(&self) -> &str {
        "col2im"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        TypeInfo::common_dtype("col2im", &inputs[..1], "float", DType::is_float)?;
        for k in [1, 2] {
            if inputs[k].dtype != DType::I64 || inputs[k].rank().is_some_and(|r| r != 1) {
                return op_err(format!(
                    "op 'col2im': input {k} must be an i64 vector, got {} {}",
                    inputs[k].dtype,
                    inputs[k].shape_string()
                ));
            }
        }
        let r = inputs[1].shape.as_ref().map(|s| s[0]).filter(|&d| d >= 0);
        let Some(r) = r else {
            return Ok(vec![TypeInfo::new(x.dtype, None)]);
        };
        let xs = x.shape.clone().unwrap_or_else(|| vec![-1; 3]);
        let mut shape = vec![xs[0], -1];
        match (&inputs[1].value, &inputs[2].value) {
            (Some(image), Some(block)) => {
                shape.extend(image);
                let k: i64 = block.iter().product();
                if xs[1] >= 0 && k > 0 {
                    shape[1] = xs[1] / k;
                }
            }
            _ => shape.extend(std::iter::repeat_n(-1, r as usize)),
        }
        Ok(vec![TypeInfo::new(x.dtype, Some(shape))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(&inputs[..1]) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let x = &inputs[0];
        let g = self.geometry(x.shape(), &ints(&inputs[1])?, &ints(&inputs[2])?)?;
        let mut shape = vec![x.shape()[0], x.shape()[1] / product(&g.block)];
        shape.extend(&g.image);
        let out = ctx.output(0, x.dtype(), &shape)?;
        if !x.dtype().is_computable() {
            return op_err("op 'col2im' takes float inputs");
        }
        col2im_kernel(&g, x, &out)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new();
        for (k, v) in [
            ("strides", &self.strides),
            ("dilations", &self.dilations),
            ("pads", &self.pads),
        ] {
            if let Some(v) = v {
                a = a.with(k, v.clone());
            }
        }
        a
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("col2im", |a: &Attrs| {
        a.only("col2im", &["strides", "dilations", "pads"])?;
        Ok(Arc::new(Col2Im {
            strides: a.usize_list("strides")?,
            dilations: a.usize_list("dilations")?,
            pads: a.usize_list("pads")?,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn overlapping_blocks_sum_into_the_image() {
        // A 1x3 image from 1x2 blocks at stride 1: columns are positions 0 and 1.
        // Row k is the block's element k: [[1, 10], [2, 20]] puts 1 at 0, 2 at 1,
        // 10 at 1, 20 at 2.
        let x = t(&[1, 2, 2], vec![1.0f64, 10.0, 2.0, 20.0]);
        let (s, v) = run_vec::<f64>(
            &*op("col2im", Attrs::new()),
            &[x, t(&[2], vec![1i64, 3]), t(&[2], vec![1i64, 2])],
        )
        .unwrap();
        assert_eq!(s, [1, 1, 1, 3]);
        assert_eq!(v, [1.0, 12.0, 20.0]);
    }

    #[test]
    fn pads_drop_what_falls_outside_and_strides_skip() {
        // 1-row image of 2, blocks of 2 with pads [0, 1, 0, 1] and stride 2:
        // padded width 4, positions 0 and 2: block 0 covers -1, 0; block 1 covers 1, 2.
        let x = t(&[1, 2, 2], vec![5.0f64, 7.0, 6.0, 8.0]);
        let o = op(
            "col2im",
            Attrs::new()
                .with("pads", vec![0, 1, 0, 1])
                .with("strides", vec![1, 2]),
        );
        let (_, v) = run_vec::<f64>(&*o, &[x, t(&[2], vec![1i64, 2]), t(&[2], vec![1i64, 2])]).unwrap();
        assert_eq!(v, [6.0, 7.0]);
        let e = run_vec::<f64>(
            &*op("col2im", Attrs::new()),
            &[
                t(&[1, 2, 5], vec![0.0f64; 10]),
                t(&[2], vec![1i64, 3]),
                t(&[2], vec![1i64, 2]),
            ],
        )
        .unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }
}
