//! `deform_conv(x, w, offset, [b], [mask])` (ONNX DeformConv, 2-D): a
//! convolution whose kernel taps read the input at learned offsets. x is
//! `[N, C, H, W]`, w `[M, C/group, kH, kW]`, offset `[N, og·kH·kW·2, oH,
//! oW]` (per offset group, tap and output position: a `(dy, dx)` pair),
//! b `[M]`, mask `[N, og·kH·kW, oH, oW]` (each tap's sample scaled by it;
//! 1 without one); attrs `bias` and `mask` say which optional inputs are
//! given. `oH, oW` follow from the window attrs as for `conv` (floor) and
//! must be offset's spatial dims.
//!
//! `y[n, m, i, j] = b[m] + Σ_{c in m's group} Σ_{a, e} w[m, c', a, e] ·
//! mask[n, g, a, e, i, j] · x̃[n, c](i·sH − padT + a·dH + dy, j·sW − padL +
//! e·dW + dx)`, with `g` the offset group of channel c (`offset_group`
//! groups of consecutive channels), `(dy, dx) = offset[n, g, a, e, :, i,
//! j]`, and `x̃` the bilinear sample (corners outside the map count 0), as
//! ONNX's reference samples it with GridSample. Attrs `strides`,
//! `dilations` (1s), `pads` (`[top, left, bottom, right]`, 0s), `group`,
//! `offset_group` (1), `kernel_shape` (w's when absent; else must match).
//! Float dtypes, computed in f64, one rounding per output.

use std::sync::Arc;

use crate::error::{attr_err, dtype_err, rank_err, shape_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "deform_conv";

/// The `deform_conv` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeformConv {
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [usize; 4],
    pub group: usize,
    pub offset_group: usize,
    /// Checked against w's when given.
    pub kernel: Option<[usize; 2]>,
    pub bias: bool,
    pub mask: bool,
}

/// The sizes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    m: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
}

/// `(in + pads − dilated kernel) / stride + 1`, or `None` when the dilated
/// kernel does not fit.
fn out_len(input: usize, pads: usize, k: usize, d: usize, s: usize) -> Option<usize> {
    let span = (k - 1) * d + 1;
    (input + pads).checked_sub(span).map(|r| r / s + 1)
}

impl DeformConv {
    fn n_inputs(&self) -> usize {
        3 + self.bias as usize + self.mask as usize
    }

    fn check_types(&self, ins: &[TypeInfo]) -> Result<()> {
        if ins.len() != self.n_inputs() {
            return crate::error::arity_err(format!(
                "op '{NAME}' with bias {} and mask {} takes {} inputs, got {}",
                self.bias,
                self.mask,
                self.n_inputs(),
                ins.len()
            ));
        }
        let dt = ins[0].dtype;
        if !dt.is_float() {
            return dtype_err(format!("op '{NAME}': x must be a float tensor, got {dt}"));
        }
        let mut what = vec![("x", 4), ("w", 4), ("offset", 4)];
        if self.bias {
            what.push(("b", 1));
        }
        if self.mask {
            what.push(("mask", 4));
        }
        for (i, (t, (name, rank))) in ins.iter().zip(what).enumerate() {
            if t.dtype != dt {
                return dtype_err(format!(
                    "op '{NAME}': {name} (input {i}) is {}, x is {dt}",
                    t.dtype
                ));
            }
            if t.rank().is_some_and(|r| r != rank) {
                return rank_err(format!(
                    "op '{NAME}': {name} must be {rank}-D (2-D deformable convolution), got {}",
                    t.shape_string()
                ));
            }
        }
        Ok(())
    }

    /// The output's spatial dims for x `[.., h, w]` and kernel `[kh, kw]`.
    fn out_dims(&self, h: usize, w: usize, kh: usize, kw: usize) -> Option<(usize, usize)> {
        let [st, sl] = self.strides;
        let [dh, dw] = self.dilations;
        let [pt, pl, pb, pr] = self.pads;
        Some((out_len(h, pt + pb, kh, dh, st)?, out_len(w, pl + pr, kw, dw, sl)?))
    }

    fn dims(&self, ins: &[Tensor]) -> Result<Dims> {
        let (x, wt, off) = (ins[0].shape(), ins[1].shape(), ins[2].shape());
        let [n, c, h, w] = [x[0], x[1], x[2], x[3]];
        let [m, cg, kh, kw] = [wt[0], wt[1], wt[2], wt[3]];
        let (g, og) = (self.group, self.offset_group);
        if cg * g != c || !m.is_multiple_of(g) || kh == 0 || kw == 0 {
            return shape_err(format!(
                "op '{NAME}': w {wt:?} does not fit x {x:?} with group {g} (w must be [M, C/group, kH, kW], M a multiple of group)"
            ));
        }
        if !c.is_multiple_of(og) {
            return shape_err(format!(
                "op '{NAME}': x's {c} channels are not a multiple of offset_group {og}"
            ));
        }
        if let Some(k) = self.kernel {
            if k != [kh, kw] {
                return shape_err(format!(
                    "op '{NAME}': attr 'kernel_shape' {k:?} is not w's [{kh}, {kw}]"
                ));
            }
        }
        let Some((oh, ow)) = self.out_dims(h, w, kh, kw) else {
            return shape_err(format!(
                "op '{NAME}': the dilated kernel [{kh}, {kw}] does not fit x {x:?} with pads {:?}",
                self.pads
            ));
        };
        if off != [n, og * kh * kw * 2, oh, ow] {
            return shape_err(format!(
                "op '{NAME}': offset {off:?} must be [{n}, {}, {oh}, {ow}]",
                og * kh * kw * 2
            ));
        }
        if self.bias && ins[3].shape() != [m] {
            return shape_err(format!("op '{NAME}': b {:?} must be [{m}]", ins[3].shape()));
        }
        if self.mask {
            let s = ins[self.n_inputs() - 1].shape();
            if s != [n, og * kh * kw, oh, ow] {
                return shape_err(format!(
                    "op '{NAME}': mask {s:?} must be [{n}, {}, {oh}, {ow}]",
                    og * kh * kw
                ));
            }
        }
        Ok(Dims {
            n,
            c,
            h,
            w,
            m,
            kh,
            kw,
            oh,
            ow,
        })
    }
}

/// The bilinear sample of the `h × w` map at `(y, x)`, corners outside
/// it counting 0.
fn sample(map: &[f64], h: usize, w: usize, y: f64, x: f64) -> f64 {
    let (y0, x0) = (y.floor(), x.floor());
    let (ly, lx) = (y - y0, x - x0);
    let mut v = 0.0;
    for (dy, wy) in [(0.0, 1.0 - ly), (1.0, ly)] {
        for (dx, wx) in [(0.0, 1.0 - lx), (1.0, lx)] {
            let (yy, xx) = (y0 + dy, x0 + dx);
            if yy >= 0.0 && xx >= 0.0 && yy < h as f64 && xx < w as f64 {
                v += wy * wx * map[yy as usize * w + xx as usize];
            }
        }
    }
    v
}

impl Op for DeformConv {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity { min: 3, max: Some(5) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check_types(inputs)?;
        let dim = |t: &TypeInfo, i: usize| t.shape.as_ref().map_or(-1, |s| s[i]);
        let (x, w) = (&inputs[0], &inputs[1]);
        let (mut oh, mut ow) = (-1, -1);
        if let (Some(xs), Some(ws)) = (&x.shape, &w.shape) {
            if xs[2..].iter().chain(&ws[2..]).all(|&d| d >= 0) && ws[2] > 0 && ws[3] > 0 {
                if let Some((a, b)) =
                    self.out_dims(xs[2] as usize, xs[3] as usize, ws[2] as usize, ws[3] as usize)
                {
                    (oh, ow) = (a as i64, b as i64);
                }
            }
        }
        Ok(vec![TypeInfo::new(
            x.dtype,
            Some(vec![dim(x, 0), dim(w, 0), oh, ow]),
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check_types(&tys)?;
        let d = self.dims(inputs)?;
        let x = inputs[0].to_f64_vec()?;
        let wt = inputs[1].to_f64_vec()?;
        let off = inputs[2].to_f64_vec()?;
        let bias = if self.bias {
            Some(inputs[3].to_f64_vec()?)
        } else {
            None
        };
        let mask = if self.mask {
            Some(inputs[self.n_inputs() - 1].to_f64_vec()?)
        } else {
            None
        };
        let (g, og) = (self.group, self.offset_group);
        let (cg, mg, c_per_og) = (d.c / g, d.m / g, d.c / og);
        let (taps, plane) = (d.kh * d.kw, d.oh * d.ow);
        let [st, sl] = self.strides;
        let [dh, dw] = self.dilations;
        let (pt, pl) = (self.pads[0] as f64, self.pads[1] as f64);
        let mut y = vec![0.0; d.n * d.m * plane];
        for n in 0..d.n {
            for mo in 0..d.m {
                let grp = mo / mg;
                let out = &mut y[(n * d.m + mo) * plane..][..plane];
                out.fill(bias.as_ref().map_or(0.0, |b| b[mo]));
                for ci in 0..cg {
                    let c = grp * cg + ci;
                    let og_i = c / c_per_og;
                    let map = &x[(n * d.c + c) * d.h * d.w..][..d.h * d.w];
                    for tap in 0..taps {
                        let (a, e) = (tap / d.kw, tap % d.kw);
                        let wv = wt[((mo * cg + ci) * d.kh + a) * d.kw + e];
                        // offset [n, og, kh, kw, 2, oh, ow]; mask [n, og, kh, kw, oh, ow].
                        let oy = &off[(((n * og + og_i) * taps + tap) * 2) * plane..][..plane];
                        let ox = &off[(((n * og + og_i) * taps + tap) * 2 + 1) * plane..][..plane];
                        let mk = mask
                            .as_ref()
                            .map(|mk| &mk[((n * og + og_i) * taps + tap) * plane..][..plane]);
                        for (p, o) in out.iter_mut().enumerate() {
                            let (i, j) = (p / d.ow, p % d.ow);
                            let yy = (i * st + a * dh) as f64 - pt + oy[p];
                            let xx = (j * sl + e * dw) as f64 - pl + ox[p];
                            let s = sample(map, d.h, d.w, yy, xx);
                            *o += wv * s * mk.map_or(1.0, |mk| mk[p]);
                        }
                    }
                }
            }
        }
        let out = ctx.output(0, inputs[0].dtype(), &[d.n, d.m, d.oh, d.ow])?;
        out.write_f64s(&y)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let l = |v: &[usize]| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
        let mut a = Attrs::new()
            .with("strides", l(&self.strides))
            .with("dilations", l(&self.dilations))
            .with("pads", l(&self.pads))
            .with("group", self.group)
            .with("offset_group", self.offset_group)
            .with("bias", self.bias)
            .with("mask", self.mask);
        if let Some(k) = self.kernel {
            a = a.with("kernel_shape", l(&k));
        }
        a
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(
            NAME,
            &[
                "strides",
                "dilations",
                "pads",
                "group",
                "offset_group",
                "kernel_shape",
                "bias",
                "mask",
            ],
        )?;
        let list = |k: &str, n: usize, default: usize, positive: bool| -> Result<Vec<usize>> {
            let v = a.usize_list(k)?.unwrap_or_else(|| vec![default; n]);
            if v.len() != n || (positive && v.contains(&0)) {
                return attr_err(format!(
                    "op '{NAME}': attr '{k}' must hold {n} {} values (2-D), got {v:?}",
                    if positive { "positive" } else { "non-negative" }
                ));
            }
            Ok(v)
        };
        let (s, dl, p) = (
            list("strides", 2, 1, true)?,
            list("dilations", 2, 1, true)?,
            list("pads", 4, 0, false)?,
        );
        let kernel = match a.usize_list("kernel_shape")? {
            None => None,
            Some(k) if k.len() == 2 => Some([k[0], k[1]]),
            Some(k) => {
                return attr_err(format!(
                    "op '{NAME}': attr 'kernel_shape' must hold 2 values (2-D), got {k:?}"
                ))
            }
        };
        let count = |k: &str| -> Result<usize> {
            match a.i64(k)?.unwrap_or(1) {
                v if v >= 1 => Ok(v as usize),
                v => attr_err(format!("op '{NAME}': attr '{k}' must be at least 1, got {v}")),
            }
        };
        Ok(Arc::new(DeformConv {
            strides: [s[0], s[1]],
            dilations: [dl[0], dl[1]],
            pads: [p[0], p[1], p[2], p[3]],
            group: count("group")?,
            offset_group: count("offset_group")?,
            kernel,
            bias: a.bool("bias")?.unwrap_or(false),
            mask: a.bool("mask")?.unwrap_or(false),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};

    fn dc(a: Attrs) -> Arc<dyn Op> {
        op(NAME, a)
    }

    fn seq(n: usize, at: f64) -> Vec<f64> {
        (0..n).map(|i| ((i as f64 + at) * 0.61).sin()).collect()
    }

    /// Zero offsets and no mask: exactly `conv` (grouped, strided,
    /// dilated, padded).
    #[test]
    fn zero_offsets_are_a_plain_convolution() {
        let (n, c, h, w, m, g) = (2, 4, 5, 6, 4, 2);
        let x = t(&[n, c, h, w], seq(n * c * h * w, 0.0));
        let wt = t(&[m, c / g, 2, 3], seq(m * (c / g) * 6, 1.0));
        let b = t(&[m], seq(m, 2.0));
        let window = Attrs::new()
            .with("strides", vec![2i64, 1])
            .with("dilations", vec![1i64, 2])
            .with("pads", vec![1i64, 0, 0, 1])
            .with("group", g);
        let (cs, cv) =
            run_vec::<f64>(&*op("conv", window.clone()), &[x.clone(), wt.clone(), b.clone()]).unwrap();
        let (oh, ow) = (cs[2], cs[3]);
        let off = t(&[n, 2 * 6 * 2, oh, ow], vec![0.0f64; n * 24 * oh * ow]);
        let a = window.with("offset_group", 2).with("bias", true);
        let (ds, dv) = run_vec::<f64>(&*dc(a), &[x, wt, off, b]).unwrap();
        assert_eq!(ds, cs);
        for (p, q) in dv.iter().zip(&cv) {
            assert!((p - q).abs() < 1e-12, "{dv:?} vs {cv:?}");
        }
    }

    /// A 1×1 kernel with offset (0.5, 0.25) samples between pixels; a
    /// sample half outside the map keeps only its inside corners; the mask
    /// scales each tap.
    #[test]
    fn offsets_sample_bilinearly_and_the_mask_scales() {
        let x = t(&[1, 1, 2, 2], vec![0.0f64, 4.0, 8.0, 12.0]);
        let wt = t(&[1, 1, 1, 1], vec![1.0f64]);
        let mut off = vec![0.0f64; 8];
        // Output (0, 0): dy 0.5, dx 0.25 → 0.5·(0·.75 + 4·.25) + 0.5·(8·.75 + 12·.25) = 5.
        off[0] = 0.5;
        off[4] = 0.25;
        // Output (1, 1): dx 0.5 → halfway past the right edge: 0.5·12.
        off[4 + 3] = 0.5;
        let off = t(&[1, 2, 2, 2], off);
        let (_, v) = run_vec::<f64>(&*dc(Attrs::new()), &[x.clone(), wt.clone(), off.clone()]).unwrap();
        assert_eq!(v, [5.0, 4.0, 8.0, 6.0]);
        let mask = t(&[1, 1, 2, 2], vec![2.0f64, 1.0, 0.0, 1.0]);
        let (_, v) = run_vec::<f64>(&*dc(Attrs::new().with("mask", true)), &[x, wt, off, mask]).unwrap();
        assert_eq!(v, [10.0, 4.0, 0.0, 6.0]);
    }

    #[test]
    fn bad_shapes_and_attrs_are_errors() {
        let x = t(&[1, 2, 3, 3], vec![0.0f32; 18]);
        let wt = t(&[1, 2, 2, 2], vec![0.0f32; 8]);
        let e = run_vec::<f32>(
            &*dc(Attrs::new()),
            &[x.clone(), wt.clone(), t(&[1, 8, 1, 1], vec![0.0f32; 8])],
        )
        .unwrap_err();
        assert_cause!(e, Shape, "offset");
        let e = run_vec::<f32>(
            &*dc(Attrs::new().with("offset_group", 3)),
            &[x.clone(), wt.clone(), t(&[1, 24, 2, 2], vec![0.0f32; 96])],
        )
        .unwrap_err();
        assert_cause!(e, Shape, "offset_group");
        let e = run_vec::<f32>(
            &*dc(Attrs::new().with("group", 2)),
            &[x.clone(), wt, t(&[1, 8, 2, 2], vec![0.0f32; 32])],
        )
        .unwrap_err();
        assert_cause!(e, Shape, "group");
        let e = run_vec::<f32>(
            &*dc(Attrs::new()),
            &[
                x,
                t(&[1, 2, 4, 4], vec![0.0f32; 32]),
                t(&[1, 32, 1, 1], vec![0.0f32; 32]),
            ],
        )
        .unwrap_err();
        assert_cause!(e, Shape, "fit");
        let e = OpRegistry::builtin()
            .make(NAME, &Attrs::new().with("strides", vec![1i64, 1, 1]))
            .unwrap_err();
        assert_cause!(e, Attr, "strides");
    }
}
