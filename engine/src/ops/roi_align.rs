//! `roi_align(x, rois, batch_indices)` (ONNX RoiAlign): pools each region
//! of interest of a feature map into a fixed `[out_h, out_w]` grid. x is
//! `[N, C, H, W]`, rois `[R, 4]` (`x1, y1, x2, y2` in input coordinates,
//! x's dtype), batch_indices i64 `[R]` (each checked to be below N). The
//! output is `[R, C, out_h, out_w]`.
//!
//! As ONNX's reference computes it (in f64): a roi's corners are scaled
//! by `spatial_scale` and, with attr `half_pixel`, shifted by −0.5 (else
//! its width and height are at least 1). Each bin averages (`mode` avg) a
//! `gh × gw` grid of bilinear samples at the centres of equal sub-cells
//! (`sampling_ratio`, else `ceil(roi size / out size)` per axis); a
//! sample with y or x below −1 or past the map's size counts 0, others are
//! clamped into the map. `mode` max takes, over the samples, the largest
//! of the four weighted corner values `wᵢ·vᵢ` (ONNX's definition, which
//! onnxruntime shares). Float dtypes; one rounding per output.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, index_err, rank_err, shape_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "roi_align";

/// The `roi_align` op.
#[derive(Clone, Debug, PartialEq)]
pub struct RoiAlign {
    /// Max pooling (else average).
    pub max: bool,
    pub out_h: usize,
    pub out_w: usize,
    /// 0: adaptive.
    pub sampling_ratio: usize,
    pub spatial_scale: f64,
    pub half_pixel: bool,
}

/// One bilinear sample: four flat positions in a `[H, W]` map and their
/// weights.
#[derive(Clone, Copy, Default)]
struct Sample {
    pos: [usize; 4],
    w: [f64; 4],
}

fn check(ins: &[TypeInfo]) -> Result<()> {
    let dt = ins[0].dtype;
    if !dt.is_float() || ins[1].dtype != dt {
        return dtype_err(format!(
            "op '{NAME}': x and rois must be one float dtype, got {dt} and {}",
            ins[1].dtype
        ));
    }
    if ins[2].dtype != DType::I64 {
        return dtype_err(format!(
            "op '{NAME}': batch_indices must be i64, got {}",
            ins[2].dtype
        ));
    }
    for (i, (what, r)) in [("x", 4), ("rois", 2), ("batch_indices", 1)]
        .into_iter()
        .enumerate()
    {
        if ins[i].rank().is_some_and(|k| k != r) {
            return rank_err(format!(
                "op '{NAME}': {what} must be {r}-D, got {}",
                ins[i].shape_string()
            ));
        }
    }
    Ok(())
}

impl RoiAlign {
    /// The samples of one roi, bin by bin (row-major), each bin's grid
    /// row-major; and the grid's size.
    fn samples(&self, roi: [f64; 4], h: usize, w: usize) -> (Vec<Sample>, usize, usize) {
        let off = if self.half_pixel { 0.5 } else { 0.0 };
        let [x1, y1, x2, y2] = roi.map(|v| v * self.spatial_scale - off);
        let (mut rw, mut rh) = (x2 - x1, y2 - y1);
        if !self.half_pixel {
            rw = rw.max(1.0);
            rh = rh.max(1.0);
        }
        let (bh, bw) = (rh / self.out_h as f64, rw / self.out_w as f64);
        let grid = |size: f64, n: usize| {
            if self.sampling_ratio > 0 {
                self.sampling_ratio
            } else {
                let g = (size / n as f64).ceil();
                if g > 0.0 {
                    g as usize
                } else {
                    0
                }
            }
        };
        let (gh, gw) = (grid(rh, self.out_h), grid(rw, self.out_w));
        let (hf, wf) = (h as f64, w as f64);
        let mut out = Vec::with_capacity(self.out_h * self.out_w * gh * gw);
        for ph in 0..self.out_h {
            for pw in 0..self.out_w {
                for iy in 0..gh {
                    let yy = y1 + ph as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                    for ix in 0..gw {
                        let xx = x1 + pw as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                        out.push(bilinear(yy, xx, h, w, hf, wf));
                    }
                }
            }
        }
        (out, gh, gw)
    }
}

/// The bilinear sample at `(y, x)` of an `h × w` map.
fn bilinear(y: f64, x: f64, h: usize, w: usize, hf: f64, wf: f64) -> Sample {
    if y < -1.0 || y > hf || x < -1.0 || x > wf || h == 0 || w == 0 {
        return Sample::default();
    }
    let (mut y, mut x) = (y.max(0.0), x.max(0.0));
    let (mut yl, mut xl) = (y as usize, x as usize);
    let yh = if yl >= h - 1 {
        yl = h - 1;
        y = yl as f64;
        yl
    } else {
        yl + 1
    };
    let xh = if xl >= w - 1 {
        xl = w - 1;
        x = xl as f64;
        xl
    } else {
        xl + 1
    };
    let (ly, lx) = (y - yl as f64, x - xl as f64);
    let (hy, hx) = (1.0 - ly, 1.0 - lx);
    Sample {
        pos: [yl * w + xl, yl * w + xh, yh * w + xl, yh * w + xh],
        w: [hy * hx, hy * lx, ly * hx, ly * lx],
    }
}

impl Op for RoiAlign {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check(inputs)?;
        let dim = |t: &TypeInfo, i: usize| t.shape.as_ref().map_or(-1, |s| s[i]);
        let r = dim(&inputs[2], 0).max(dim(&inputs[1], 0));
        Ok(vec![TypeInfo::new(
            inputs[0].dtype,
            Some(vec![r, dim(&inputs[0], 1), self.out_h as i64, self.out_w as i64]),
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        check(&tys)?;
        let (x, rois, bi) = (&inputs[0], &inputs[1], &inputs[2]);
        let [n, c, h, w] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
        let r = bi.shape()[0];
        if rois.shape() != [r, 4] {
            return shape_err(format!(
                "op '{NAME}': rois {:?} must be [{r}, 4] for {r} batch indices",
                rois.shape()
            ));
        }
        let xv = x.to_f64_vec()?;
        let rv = rois.to_f64_vec()?;
        let idx: Vec<i64> = bi.to_array::<i64>()?.iter().copied().collect();
        let (oh, ow) = (self.out_h, self.out_w);
        let mut y = vec![0.0f64; r * c * oh * ow];
        for (k, &b) in idx.iter().enumerate() {
            let Some(b) = usize::try_from(b).ok().filter(|&b| b < n) else {
                return index_err(format!(
                    "op '{NAME}': batch index {b} of roi {k} is out of range for {n} images"
                ));
            };
            let roi = [rv[4 * k], rv[4 * k + 1], rv[4 * k + 2], rv[4 * k + 3]];
            let (samples, gh, gw) = self.samples(roi, h, w);
            let per_bin = gh * gw;
            let count = per_bin.max(1) as f64;
            for ch in 0..c {
                let map = &xv[(b * c + ch) * h * w..][..h * w];
                let out = &mut y[(k * c + ch) * oh * ow..][..oh * ow];
                for (bin, o) in out.iter_mut().enumerate() {
                    let s = &samples[bin * per_bin..][..per_bin];
                    *o = if self.max {
                        s.iter()
                            .map(|p| {
                                (0..4)
                                    .map(|i| p.w[i] * map.get(p.pos[i]).copied().unwrap_or(0.0))
                                    .fold(f64::NEG_INFINITY, f64::max)
                            })
                            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                            .unwrap_or(0.0)
                    } else {
                        s.iter()
                            .map(|p| {
                                (0..4)
                                    .map(|i| p.w[i] * map.get(p.pos[i]).copied().unwrap_or(0.0))
                                    .sum::<f64>()
                            })
                            .sum::<f64>()
                            / count
                    };
                }
            }
        }
        let out = ctx.output(0, x.dtype(), &[r, c, oh, ow])?;
        out.write_f64s(&y)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("mode", if self.max { "max" } else { "avg" })
            .with("output_height", self.out_h)
            .with("output_width", self.out_w)
            .with("sampling_ratio", self.sampling_ratio)
            .with("spatial_scale", self.spatial_scale)
            .with("half_pixel", self.half_pixel)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(
            NAME,
            &[
                "mode",
                "output_height",
                "output_width",
                "sampling_ratio",
                "spatial_scale",
                "half_pixel",
            ],
        )?;
        let max = match a.str("mode")?.unwrap_or("avg") {
            "avg" => false,
            "max" => true,
            m => return attr_err(format!("op '{NAME}': attr 'mode' must be avg or max, got '{m}'")),
        };
        // The defaults are the minima: 1, 1 and 0 (adaptive).
        let count = |k: &str, min: i64| -> Result<usize> {
            let v = a.i64(k)?.unwrap_or(min);
            if v < min {
                return attr_err(format!("op '{NAME}': attr '{k}' must be at least {min}, got {v}"));
            }
            Ok(v as usize)
        };
        Ok(Arc::new(RoiAlign {
            max,
            out_h: count("output_height", 1)?,
            out_w: count("output_width", 1)?,
            sampling_ratio: count("sampling_ratio", 0)?,
            spatial_scale: a.f64("spatial_scale")?.unwrap_or(1.0),
            half_pixel: a.bool("half_pixel")?.unwrap_or(true),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};

    fn ra(a: Attrs) -> Arc<dyn Op> {
        op(NAME, a)
    }

    /// On a map that is linear in x and y, bilinear sampling is exact, so
    /// the average of a bin is the map at the bin's centre.
    #[test]
    fn average_of_a_linear_map_is_its_value_at_bin_centres() {
        let (h, w) = (6usize, 8usize);
        let map: Vec<f64> = (0..h * w)
            .map(|i| (i / w) as f64 * 10.0 + (i % w) as f64)
            .collect();
        let x = t(&[1, 1, h, w], map);
        let rois = t(&[1, 4], vec![1.0f64, 1.0, 5.0, 3.0]);
        let bi = t(&[1], vec![0i64]);
        let a = Attrs::new()
            .with("output_height", 2)
            .with("output_width", 2)
            .with("sampling_ratio", 2);
        let (shape, v) = run_vec::<f64>(&*ra(a.clone()), &[x.clone(), rois.clone(), bi.clone()]).unwrap();
        assert_eq!(shape, [1, 1, 2, 2]);
        // half_pixel: the roi spans x 0.5..4.5, y 0.5..2.5; bins of 2 by 1.
        let at = |y: f64, x: f64| y * 10.0 + x;
        let want = [at(1.0, 1.5), at(1.0, 3.5), at(2.0, 1.5), at(2.0, 3.5)];
        for (g, w) in v.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{v:?} vs {want:?}");
        }
        // Without the half-pixel shift: x 1..5, y 1..3.
        let (_, v) = run_vec::<f64>(&*ra(a.with("half_pixel", false)), &[x, rois, bi]).unwrap();
        let want = [at(1.5, 2.0), at(1.5, 4.0), at(2.5, 2.0), at(2.5, 4.0)];
        for (g, w) in v.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{v:?} vs {want:?}");
        }
    }

    /// One sample at the centre of a 2×2 map: max takes the largest
    /// weighted corner (each weight 1/4), avg the mean.
    #[test]
    fn max_mode_takes_the_largest_weighted_corner() {
        let x = t(&[1, 1, 2, 2], vec![1.0f32, 2.0, 3.0, 8.0]);
        let rois = t(&[1, 4], vec![0.0f32, 0.0, 1.0, 1.0]);
        let bi = t(&[1], vec![0i64]);
        let a = Attrs::new().with("sampling_ratio", 1).with("half_pixel", false);
        let (_, v) = run_vec::<f32>(
            &*ra(a.clone().with("mode", "max")),
            &[x.clone(), rois.clone(), bi.clone()],
        )
        .unwrap();
        assert_eq!(v, [2.0]);
        let (_, v) = run_vec::<f32>(&*ra(a), &[x, rois, bi]).unwrap();
        assert_eq!(v, [3.5]);
    }

    #[test]
    fn bad_indices_shapes_and_attrs_are_errors() {
        let x = t(&[1, 1, 2, 2], vec![0.0f32; 4]);
        let rois = t(&[1, 4], vec![0.0f32; 4]);
        let e = run_vec::<f32>(
            &*ra(Attrs::new()),
            &[x.clone(), rois.clone(), t(&[1], vec![1i64])],
        )
        .unwrap_err();
        assert_cause!(e, Index, "batch index 1");
        let e = run_vec::<f32>(&*ra(Attrs::new()), &[x.clone(), rois, t(&[2], vec![0i64, 0])]).unwrap_err();
        assert_cause!(e, Shape, "rois");
        let e = run_vec::<f32>(
            &*ra(Attrs::new()),
            &[x, t(&[1, 4], vec![0.0f64; 4]), t(&[1], vec![0i64])],
        )
        .unwrap_err();
        assert_cause!(e, DType, "rois");
        let e = OpRegistry::builtin()
            .make(NAME, &Attrs::new().with("mode", "sum"))
            .unwrap_err();
        assert_cause!(e, Attr, "mode");
        let e = OpRegistry::builtin()
            .make(NAME, &Attrs::new().with("output_width", 0))
            .unwrap_err();
        assert_cause!(e, Attr, "output_width");
    }
}
