//! `grid_sample(x, grid)` (ONNX GridSample): samples `x` `[N, C, D1..Dr]`
//! at the points of `grid` `[N, H1..Hr, r]`, giving `[N, C, H1..Hr]`.
//!
//! A grid point holds normalized coordinates in `[-1, 1]`, innermost axis
//! first (`(x, y)` for an image, as torch writes them). Attrs:
//! - `mode`: `linear` (default), `nearest` (rounds half to even, as torch
//!   and ONNX's reference do) or `cubic` (Keys' kernel, `a = -0.75`);
//!   multilinear and cubic weights are separable, one factor per axis.
//! - `align_corners` (default false): `-1` and `1` are the centres of the
//!   edge elements (true) or their outer edges (false).
//! - `padding_mode`: what a point outside the input reads: `zeros`
//!   (default), `border` (the edge element) or `reflection` (mirrored
//!   at the border, repeatedly).
//!
//! The taps and weights of a point are computed once and applied to every
//! channel; sums are in f64, rounded once. Float dtypes; f16 through f32.

use std::sync::Arc;

use crate::dtype::{DType, Element, Float};
use crate::error::{attr_err, op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// How a value is made from the samples around a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleMode {
    Linear,
    Nearest,
    Cubic,
}

/// What a point outside the input reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    Zeros,
    Border,
    Reflection,
}

const MODES: [(&str, SampleMode); 3] = [
    ("linear", SampleMode::Linear),
    ("nearest", SampleMode::Nearest),
    ("cubic", SampleMode::Cubic),
];

const PADDINGS: [(&str, Padding); 3] = [
    ("zeros", Padding::Zeros),
    ("border", Padding::Border),
    ("reflection", Padding::Reflection),
];

/// The `grid_sample` op.
#[derive(Clone, Debug, PartialEq)]
pub struct GridSample {
    pub mode: SampleMode,
    pub padding: Padding,
    pub align_corners: bool,
}

fn pick<T: Copy>(a: &Attrs, key: &str, table: &[(&'static str, T)], default: T) -> Result<T> {
    match a.0.get(key).and_then(|v| v.as_str()) {
        None if a.0.get(key).is_none_or(|v| v.is_null()) => Ok(default),
        Some(s) => match table.iter().find(|(n, _)| *n == s) {
            Some(&(_, v)) => Ok(v),
            None => attr_err(format!(
                "op 'grid_sample': attr '{key}': unknown value '{s}' ({})",
                table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )),
        },
        None => attr_err(format!("op 'grid_sample': attr '{key}' must be a string")),
    }
}

fn name_of<T: PartialEq>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|(_, t)| *t == v).map_or("?", |(n, _)| n)
}

impl GridSample {
    pub fn from_attrs(a: &Attrs) -> Result<GridSample> {
        a.only("grid_sample", &["mode", "padding_mode", "align_corners"])?;
        Ok(GridSample {
            mode: pick(a, "mode", &MODES, SampleMode::Linear)?,
            padding: pick(a, "padding_mode", &PADDINGS, Padding::Zeros)?,
            align_corners: a.bool("align_corners")?.unwrap_or(false),
        })
    }

    /// The output shape, or -1 where unknown.
    fn check(&self, inputs: &[TypeInfo]) -> Result<Option<Vec<i64>>> {
        TypeInfo::common_dtype(self.name(), inputs, "float", DType::is_float)?;
        let (Some(xs), Some(gs)) = (&inputs[0].shape, &inputs[1].shape) else {
            return Ok(None);
        };
        let r = xs.len().saturating_sub(2);
        if xs.len() < 3 || gs.len() != xs.len() || (gs[r + 1] >= 0 && gs[r + 1] != r as i64) {
            return op_err(format!(
                "op 'grid_sample': x must be [N, C, D1..Dr] (r ≥ 1) and grid [N, H1..Hr, r], got {} and {}",
                inputs[0].shape_string(),
                inputs[1].shape_string()
            ));
        }
        if xs[0] >= 0 && gs[0] >= 0 && xs[0] != gs[0] {
            return op_err(format!(
                "op 'grid_sample': x has {} samples and grid {}",
                xs[0], gs[0]
            ));
        }
        let mut out = vec![xs[0].max(gs[0]), xs[1]];
        out.extend(&gs[1..=r]);
        Ok(Some(out))
    }

    /// Input coordinate of normalized `n` on an axis of `len` elements.
    fn denormalize(&self, n: f64, len: usize) -> f64 {
        let d = len as f64;
        if self.align_corners {
            (n + 1.0) / 2.0 * (d - 1.0)
        } else {
            ((n + 1.0) * d - 1.0) / 2.0
        }
    }

    /// The coordinate range inside the input: element centres (aligned)
    /// or outer edges.
    fn bounds(&self, len: usize) -> (f64, f64) {
        if self.align_corners {
            (0.0, len as f64 - 1.0)
        } else {
            (-0.5, len as f64 - 0.5)
        }
    }

    /// A coordinate outside the input brought in, for border and
    /// reflection padding (zeros padding leaves it).
    fn bring_in(&self, x: f64, len: usize) -> f64 {
        let (lo, hi) = self.bounds(len);
        if x >= lo && x <= hi {
            return x;
        }
        match self.padding {
            Padding::Zeros => x,
            Padding::Border => x.clamp(0.0, len as f64 - 1.0),
            Padding::Reflection => reflect(x, lo, hi),
        }
    }

    /// The element an integer tap reads on an axis, or `None` (a zero).
    fn tap(&self, i: i64, len: usize) -> Option<usize> {
        let n = len as i64;
        match self.padding {
            Padding::Zeros => (0..n).contains(&i).then_some(i as usize),
            Padding::Border => Some(i.clamp(0, n - 1) as usize),
            Padding::Reflection => {
                let (lo, hi) = self.bounds(len);
                Some((reflect(i as f64, lo, hi) as i64).clamp(0, n - 1) as usize)
            }
        }
    }

    /// The taps of one axis: `(element, weight)` pairs, `None` for a zero.
    fn axis_taps(&self, n: f64, len: usize) -> Vec<(Option<usize>, f64)> {
        let mut x = self.denormalize(n, len);
        if self.mode == SampleMode::Nearest {
            x = x.round_ties_even();
        }
        let x = self.bring_in(x, len);
        match self.mode {
            SampleMode::Nearest => vec![(self.tap(x as i64, len), 1.0)],
            SampleMode::Linear => {
                let x0 = x.floor();
                let f = x - x0;
                let i = x0 as i64;
                vec![(self.tap(i, len), 1.0 - f), (self.tap(i + 1, len), f)]
            }
            SampleMode::Cubic => {
                let x0 = x.floor();
                let i = x0 as i64;
                cubic_weights(x - x0)
                    .iter()
                    .enumerate()
                    .map(|(k, &w)| (self.tap(i - 1 + k as i64, len), w))
                    .collect()
            }
        }
    }
}

/// `x` mirrored into `[lo, hi]` as often as it takes.
fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let range = hi - lo;
    if range <= 0.0 {
        return lo;
    }
    let (dx, from_lo) = if x < lo {
        (lo - x, true)
    } else if x > hi {
        (x - hi, false)
    } else {
        return x;
    };
    let flips = (dx / range).floor();
    let r = dx - flips * range;
    let even = flips as i64 % 2 == 0;
    if even == from_lo {
        lo + r
    } else {
        hi - r
    }
}

/// Keys' cubic convolution weights (a = -0.75) of the taps at offsets
/// -1, 0, 1, 2 from the floor, for fraction `t`.
fn cubic_weights(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

fn sample_kernel<T: Float>(op: &GridSample, inputs: &[Tensor], out: &Tensor) -> Result<()> {
    let x = inputs[0].to_contiguous()?;
    let xa = x.to_array::<T>()?;
    let xs = xa.as_slice().unwrap_or_default();
    let grid: Vec<f64> = inputs[1].to_f64_vec()?;
    let shape = x.shape();
    let (n, c, dims) = (shape[0], shape[1], &shape[2..]);
    let r = dims.len();
    let plane: usize = dims.iter().product();
    let points: usize = inputs[1].shape()[1..=r].iter().product();
    let mut y = vec![0f64; n * c * points];
    let mut taps: Vec<(usize, f64)> = Vec::new();
    for b in 0..n {
        for p in 0..points {
            let g = &grid[(b * points + p) * r..][..r];
            // One axis's taps after another, outermost first; the grid
            // holds the innermost axis first.
            taps.clear();
            taps.push((0, 1.0));
            let mut zero = false;
            for (d, &len) in dims.iter().enumerate() {
                let axis = op.axis_taps(g[r - 1 - d], len);
                let mut next = Vec::with_capacity(taps.len() * axis.len());
                for &(off, w) in &taps {
                    for &(e, v) in &axis {
                        if let Some(e) = e {
                            next.push((off * len + e, w * v));
                        }
                    }
                }
                zero |= next.is_empty();
                taps = next;
            }
            if zero {
                continue;
            }
            for ch in 0..c {
                let src = &xs[(b * c + ch) * plane..][..plane];
                y[(b * c + ch) * points + p] = taps.iter().map(|&(e, w)| w * Element::to_f64(src[e])).sum();
            }
        }
    }
    out.write_f64s(&y)
}

impl Op for GridSample {
    fn name(&self) -> &str {
        "grid_sample"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let shape = self.check(inputs)?;
        Ok(vec![TypeInfo::new(inputs[0].dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        let shape = self.check(&tys)?.unwrap_or_default();
        let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let out = ctx.output(0, inputs[0].dtype(), &shape)?;
        if out.size() == 0 {
            return Ok(vec![out]);
        }
        crate::dispatch_float!(inputs[0].dtype(), T => sample_kernel::<T>(self, inputs, &out)?,
            return op_err("op 'grid_sample' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("mode", name_of(&MODES, self.mode))
            .with("padding_mode", name_of(&PADDINGS, self.padding))
            .with("align_corners", self.align_corners)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("grid_sample", |a: &Attrs| {
        Ok(Arc::new(GridSample::from_attrs(a)?) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    fn gs(mode: &str, padding: &str, align: bool) -> Arc<dyn Op> {
        op(
            "grid_sample",
            Attrs::new()
                .with("mode", mode)
                .with("padding_mode", padding)
                .with("align_corners", align),
        )
    }

    /// x = [[0, 1, 2], [3, 4, 5]] (2 rows, 3 columns).
    fn image() -> Tensor {
        t(&[1, 1, 2, 3], vec![0.0f64, 1.0, 2.0, 3.0, 4.0, 5.0])
    }

    fn at(points: &[(f64, f64)]) -> Tensor {
        let v: Vec<f64> = points.iter().flat_map(|&(x, y)| [x, y]).collect();
        t(&[1, 1, points.len(), 2], v)
    }

    #[test]
    fn aligned_corners_hit_the_corner_elements_and_midpoints_interpolate() {
        let (s, v) = run_vec::<f64>(
            &*gs("linear", "zeros", true),
            &[image(), at(&[(-1.0, -1.0), (1.0, 1.0), (0.0, 0.0), (-0.5, 1.0)])],
        )
        .unwrap();
        assert_eq!(s, [1, 1, 1, 4]);
        // (0, 0) is column 1, row 0.5: (1 + 4) / 2; (-0.5, 1) column 0.5 of row 1.
        assert_eq!(v, [0.0, 5.0, 2.5, 3.5]);
    }

    #[test]
    fn unaligned_edges_and_padding_modes() {
        // Unaligned, x = 1 is column 2.5: half of column 2 and half outside.
        let p = at(&[(1.0, -1.0)]);
        let zeros = run_vec::<f64>(&*gs("linear", "zeros", false), &[image(), p.clone()]).unwrap();
        // Row -0.5: a quarter of element (0, 2) = 0.5.
        assert_eq!(zeros.1, [0.5]);
        let border = run_vec::<f64>(&*gs("linear", "border", false), &[image(), p.clone()]).unwrap();
        assert_eq!(border.1, [2.0]);
        // Reflection mirrors 2.5 back to 2.5 (the edge) and -0.5 likewise.
        let refl = run_vec::<f64>(&*gs("linear", "reflection", false), &[image(), p]).unwrap();
        assert_eq!(refl.1, [2.0]);
        // Far outside with zeros padding reads nothing at all.
        let far = run_vec::<f64>(&*gs("nearest", "zeros", true), &[image(), at(&[(5.0, 5.0)])]).unwrap();
        assert_eq!(far.1, [0.0]);
    }

    #[test]
    fn nearest_rounds_half_to_even() {
        // Aligned, x = -0.5 is column 0.5 -> 0; x = 0.5 is column 1.5 -> 2.
        let (_, v) = run_vec::<f64>(
            &*gs("nearest", "zeros", true),
            &[image(), at(&[(-0.5, -1.0), (0.5, -1.0)])],
        )
        .unwrap();
        assert_eq!(v, [0.0, 2.0]);
    }

    #[test]
    fn cubic_weights_sum_to_one_interpolate_and_are_symmetric() {
        for t in [0.0, 0.25, 0.5, 0.9] {
            let w = cubic_weights(t);
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            // The weights of 1 − t are those of t, mirrored.
            let m = cubic_weights(1.0 - t);
            for k in 0..4 {
                assert!((w[k] - m[3 - k]).abs() < 1e-12, "{t}: {w:?} {m:?}");
            }
        }
        assert_eq!(cubic_weights(0.0), [0.0, 1.0, 0.0, 0.0]);
        // At an element's centre, cubic sampling reads that element.
        let (_, v) = run_vec::<f64>(
            &*gs("cubic", "border", true),
            &[
                t(&[1, 1, 1, 6], (0..6).map(f64::from).collect()),
                t(&[1, 1, 1, 2], vec![-0.2f64, 0.0]),
            ],
        )
        .unwrap();
        assert!((v[0] - 2.0).abs() < 1e-12, "{v:?}");
    }

    #[test]
    fn reflect_mirrors_repeatedly() {
        assert_eq!(reflect(-1.0, 0.0, 3.0), 1.0);
        assert_eq!(reflect(4.0, 0.0, 3.0), 2.0);
        assert_eq!(reflect(7.0, 0.0, 3.0), 1.0);
        assert_eq!(reflect(-4.0, 0.0, 3.0), 2.0);
        assert_eq!(reflect(1.5, 0.0, 3.0), 1.5);
    }

    #[test]
    fn shapes_must_agree() {
        let e = run_vec::<f64>(
            &*gs("linear", "zeros", false),
            &[image(), t(&[1, 1, 1, 3], vec![0.0f64; 3])],
        )
        .unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
        assert!(crate::ops::OpRegistry::builtin()
            .make("grid_sample", &Attrs::new().with("mode", "bilinear"))
            .is_err());
    }
}
