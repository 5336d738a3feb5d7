//! `resize(x)`: ONNX's Resize (and the Upsample it replaced) on any number
//! of axes, with the geometry fixed by attrs:
//!
//! - `sizes` (the output shape) and/or `scales` (one per axis, > 0): with
//!   only `sizes`, `scale = out / in`; with only `scales`,
//!   `out = floor(in · scale)`; with both (how ONNX's aspect-ratio
//!   policies come out), each is taken as given.
//! - `mode`: `nearest` (default, any dtype: a gather), `linear` or `cubic`
//!   (float dtypes), interpolating separably, one axis after another.
//! - `coordinate_transformation_mode` maps output position `o` of an axis
//!   to input coordinate `x`, with `L = scale · in` (ONNX's `output_width`,
//!   which need not be whole; taken as `out` when within rounding of it):
//!   `half_pixel` (default) `(o + ½)/scale − ½`; `half_pixel_symmetric`
//!   the same shifted by `in/2 · (1 − out/L)`; `pytorch_half_pixel` as
//!   `half_pixel` but 0 when `L ≤ 1`; `align_corners`
//!   `o · (in − 1)/(L − 1)` (0 for one output); `asymmetric` `o/scale`;
//!   `tf_half_pixel_for_nn` `(o + ½)/scale`; `tf_crop_and_resize`
//!   `b·(in − 1) + o·(e − b)·(in − 1)/(L − 1)` for the axis's `roi` `(b, e)`
//!   (`½(b + e)·(in − 1)` when `L ≤ 1`), and a coordinate outside
//!   `[0, in − 1]` gives `extrapolation_value` (default 0).
//! - `nearest_mode`: `round_prefer_floor` (default), `round_prefer_ceil`,
//!   `floor`, `ceil`: which neighbour a fractional `x` takes.
//! - `linear` weighs the two neighbours of `x` by `1 − |d|`, `cubic` the
//!   four by Keys' kernel with `cubic_coeff_a` (default −0.75). `antialias`
//!   stretches the kernel by `1/scale` when downsampling (and renormalizes
//!   it); `exclude_outside` drops neighbours past the edges and
//!   renormalizes (nearest ignores it); otherwise a neighbour past an edge
//!   reads the edge.
//! - `roi`: `[b₀ … bᵣ₋₁, e₀ … eᵣ₋₁]` in the input's normalized coordinates,
//!   used by `tf_crop_and_resize` only (default: the whole input).
//!
//! An axis with scale 1 and as many outputs as inputs (and the whole roi)
//! is left alone, as ONNX's reference does, except under
//! `tf_half_pixel_for_nn`, which shifts it. Per-axis source tables are
//! computed once per call; each interpolated axis is then one pass of
//! weighted row sums over the tensor so far (contiguous rows of whatever
//! follows the axis), in f64, rounded once to the dtype (as ONNX's
//! reference computes). The passes run in the order a cost model finds
//! cheapest: the innermost axis, a gather per element, while the tensor is
//! smallest.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD};
use serde_json::Value as Json;

use crate::dtype::{DType, Element, Num};
use crate::error::{op_err, Error, Result};
use crate::ops::window::odometer;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::limit::{check_alloc, numel};
use crate::tensor::Tensor;

/// How output values are made from input values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Nearest,
    Linear,
    Cubic,
}

/// How an output position maps to an input coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
    TfCropAndResize,
}

/// Which neighbour `nearest` takes for a fractional coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nearest {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

const MODES: [(&str, Mode); 3] = [
    ("nearest", Mode::Nearest),
    ("linear", Mode::Linear),
    ("cubic", Mode::Cubic),
];

const TRANSFORMS: [(&str, Transform); 7] = [
    ("half_pixel", Transform::HalfPixel),
    ("half_pixel_symmetric", Transform::HalfPixelSymmetric),
    ("pytorch_half_pixel", Transform::PytorchHalfPixel),
    ("align_corners", Transform::AlignCorners),
    ("asymmetric", Transform::Asymmetric),
    ("tf_half_pixel_for_nn", Transform::TfHalfPixelForNn),
    ("tf_crop_and_resize", Transform::TfCropAndResize),
];

const NEAREST: [(&str, Nearest); 4] = [
    ("round_prefer_floor", Nearest::RoundPreferFloor),
    ("round_prefer_ceil", Nearest::RoundPreferCeil),
    ("floor", Nearest::Floor),
    ("ceil", Nearest::Ceil),
];

const ATTRS: [&str; 10] = [
    "sizes",
    "scales",
    "roi",
    "mode",
    "coordinate_transformation_mode",
    "nearest_mode",
    "cubic_coeff_a",
    "exclude_outside",
    "extrapolation_value",
    "antialias",
];

const DEFAULT_A: f64 = -0.75;

/// The name `v` has in `table`.
fn name_of<T: PartialEq>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|(_, t)| *t == v).map_or("?", |(n, _)| n)
}

/// String attr `key` looked up in `table`, or `default` when absent.
fn choice<T: Copy>(a: &Attrs, key: &str, table: &[(&'static str, T)], default: T) -> Result<T> {
    match a.0.get(key) {
        None | Some(Json::Null) => Ok(default),
        Some(Json::String(s)) => match table.iter().find(|(n, _)| n == s) {
            Some(&(_, v)) => Ok(v),
            None => op_err(format!(
                "op 'resize': attr '{key}': unknown value '{s}' ({})",
                table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )),
        },
        Some(v) => op_err(format!("op 'resize': attr '{key}': expected a string, got {v}")),
    }
}

/// A list of finite numbers, when given.
fn numbers(a: &Attrs, key: &str) -> Result<Option<Vec<f64>>> {
    let bad = |v: &Json| {
        Error::Op(format!(
            "op 'resize': attr '{key}': expected a list of finite numbers, got {v}"
        ))
    };
    match a.0.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(v @ Json::Array(items)) => items
            .iter()
            .map(|x| x.as_f64().filter(|f| f.is_finite()).ok_or_else(|| bad(v)))
            .collect::<Result<Vec<f64>>>()
            .map(Some),
        Some(v) => Err(bad(v)),
    }
}

/// The op's name on an error from the generic attr getters.
fn named<T>(r: Result<T>) -> Result<T> {
    r.map_err(|e| Error::Op(format!("op 'resize': {e}")))
}

/// The `resize` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Resize {
    /// The output shape.
    pub sizes: Option<Vec<usize>>,
    /// Per-axis scales, each positive.
    pub scales: Option<Vec<f64>>,
    /// `[b₀ … bᵣ₋₁, e₀ … eᵣ₋₁]` for `tf_crop_and_resize`.
    pub roi: Option<Vec<f64>>,
    pub mode: Mode,
    pub transform: Transform,
    pub nearest: Nearest,
    pub cubic_coeff_a: f64,
    pub exclude_outside: bool,
    pub extrapolation_value: f64,
    pub antialias: bool,
}

/// One axis's geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Axis {
    input: usize,
    output: usize,
    scale: f64,
    /// The resized length the transforms divide by: `scale · input`, or
    /// `output` when within rounding of it.
    length: f64,
    /// `(begin, end)` of the roi (`tf_crop_and_resize`).
    roi: (f64, f64),
}

/// Marks an output position that takes the extrapolation value.
const OUTSIDE: usize = usize::MAX;

/// One interpolated axis: output position `o` is
/// `Σₖ w[o·n + k] · x[idx[o·n + k]]`, or the extrapolation value when
/// `outside[o]`.
struct Taps {
    output: usize,
    n: usize,
    idx: Vec<usize>,
    w: Vec<f64>,
    outside: Vec<bool>,
}

impl Resize {
    pub fn from_attrs(a: &Attrs) -> Result<Resize> {
        a.only("resize", &ATTRS)?;
        let sizes = named(a.usize_list("sizes"))?;
        let scales = numbers(a, "scales")?;
        let roi = numbers(a, "roi")?;
        let rank = match (&sizes, &scales) {
            (None, None) => return op_err("op 'resize' needs attr 'sizes' or 'scales'"),
            (Some(s), Some(c)) if s.len() != c.len() => {
                return op_err(format!(
                    "op 'resize': attr 'sizes' has {} values and 'scales' {}",
                    s.len(),
                    c.len()
                ))
            }
            (Some(s), _) => s.len(),
            (None, Some(c)) => c.len(),
        };
        if let Some(c) = &scales {
            if c.iter().any(|&s| s <= 0.0) {
                return op_err(format!("op 'resize': attr 'scales' must be positive, got {c:?}"));
            }
        }
        if let Some(r) = &roi {
            if r.len() != 2 * rank {
                return op_err(format!(
                    "op 'resize': attr 'roi' has {} values, {rank} axes need {}",
                    r.len(),
                    2 * rank
                ));
            }
        }
        let number = |key: &str, default: f64| -> Result<f64> {
            match named(a.f64(key))? {
                None => Ok(default),
                Some(v) if v.is_finite() => Ok(v),
                Some(v) => op_err(format!("op 'resize': attr '{key}' must be finite, got {v}")),
            }
        };
        let op = Resize {
            sizes,
            scales,
            roi,
            mode: choice(a, "mode", &MODES, Mode::Nearest)?,
            transform: choice(
                a,
                "coordinate_transformation_mode",
                &TRANSFORMS,
                Transform::HalfPixel,
            )?,
            nearest: choice(a, "nearest_mode", &NEAREST, Nearest::RoundPreferFloor)?,
            cubic_coeff_a: number("cubic_coeff_a", DEFAULT_A)?,
            exclude_outside: named(a.bool("exclude_outside"))?.unwrap_or(false),
            extrapolation_value: number("extrapolation_value", 0.0)?,
            antialias: named(a.bool("antialias"))?.unwrap_or(false),
        };
        if op.antialias && op.mode == Mode::Nearest {
            return op_err("op 'resize': attr 'antialias' needs mode 'linear' or 'cubic'");
        }
        Ok(op)
    }

    /// The rank the attrs are for.
    fn rank(&self) -> usize {
        self.sizes
            .as_ref()
            .map_or_else(|| self.scales.as_ref().map_or(0, Vec::len), Vec::len)
    }

    fn check_input(&self, dtype: DType, rank: Option<usize>) -> Result<()> {
        if self.mode != Mode::Nearest && !dtype.is_float() {
            return op_err(format!(
                "op 'resize': mode '{}' takes float inputs (f32, f16, f64), got {dtype}",
                name_of(&MODES, self.mode)
            ));
        }
        match rank {
            Some(r) if r != self.rank() => op_err(format!(
                "op 'resize': the input has rank {r}, attr '{}' is for rank {}",
                if self.sizes.is_some() { "sizes" } else { "scales" },
                self.rank()
            )),
            _ => Ok(()),
        }
    }

    /// Output extent and scale of axis `d` of `input` elements.
    fn extent(&self, d: usize, input: usize) -> (usize, f64) {
        match (&self.sizes, &self.scales) {
            (Some(s), Some(c)) => (s[d], c[d]),
            (Some(s), None) if input == 0 => (s[d], 1.0),
            (Some(s), None) => (s[d], s[d] as f64 / input as f64),
            (None, Some(c)) => ((input as f64 * c[d]).floor() as usize, c[d]),
            (None, None) => (input, 1.0),
        }
    }

    /// Every axis's geometry for an input of `shape`.
    fn axes(&self, shape: &[usize]) -> Result<Vec<Axis>> {
        let r = shape.len();
        if r != self.rank() {
            return op_err(format!(
                "op 'resize': the input has rank {r}, the attrs are for rank {}",
                self.rank()
            ));
        }
        (0..r)
            .map(|d| {
                let input = shape[d];
                let (output, scale) = self.extent(d, input);
                if input == 0 && output > 0 {
                    return op_err(format!(
                        "op 'resize': axis {d} is empty and cannot be resized to {output}"
                    ));
                }
                let mut length = scale * input as f64;
                if (length - output as f64).abs() <= 1e-12 * output as f64 {
                    length = output as f64;
                }
                let roi = self.roi.as_ref().map_or((0.0, 1.0), |v| (v[d], v[r + d]));
                Ok(Axis {
                    input,
                    output,
                    scale,
                    length,
                    roi,
                })
            })
            .collect()
    }

    /// Whether axis `a` maps every position to itself (ONNX's reference
    /// skips such axes: scale 1 within rounding, as many outputs as
    /// inputs, the whole roi).
    fn is_identity(&self, a: &Axis) -> bool {
        let close = |v: f64, to: f64| (v - to).abs() <= 1e-9 * v.abs().max(to.abs());
        self.transform != Transform::TfHalfPixelForNn
            && a.output == a.input
            && close(a.scale, 1.0)
            && (self.transform != Transform::TfCropAndResize || (a.roi.0 == 0.0 && close(a.roi.1, 1.0)))
    }

    /// The input coordinate of output position `o`, and whether it falls
    /// outside the input (`tf_crop_and_resize` only).
    fn source(&self, a: &Axis, o: usize) -> (f64, bool) {
        let (o, input, s) = (o as f64, a.input as f64, a.scale);
        let x = match self.transform {
            Transform::HalfPixel => (o + 0.5) / s - 0.5,
            Transform::HalfPixelSymmetric => {
                let adjustment = a.output as f64 / a.length;
                let offset = input / 2.0 * (1.0 - adjustment);
                offset + (o + 0.5) / s - 0.5
            }
            Transform::PytorchHalfPixel if a.length > 1.0 => (o + 0.5) / s - 0.5,
            Transform::PytorchHalfPixel => 0.0,
            Transform::AlignCorners if a.output == 1 => 0.0,
            Transform::AlignCorners => o * (input - 1.0) / (a.length - 1.0),
            Transform::Asymmetric => o / s,
            Transform::TfHalfPixelForNn => (o + 0.5) / s,
            Transform::TfCropAndResize => {
                let (b, e) = a.roi;
                let x = if a.length > 1.0 {
                    o * (e - b) * (input - 1.0) / (a.length - 1.0)
                } else {
                    (e - b) * (input - 1.0) / 2.0
                } + b * (input - 1.0);
                return (x, x < 0.0 || x > input - 1.0);
            }
        };
        (x, false)
    }

    /// For every output position of axis `a`, the input position `nearest`
    /// reads, times `stride`, or [`OUTSIDE`].
    fn nearest_map(&self, a: &Axis, stride: usize) -> Vec<usize> {
        if self.is_identity(a) {
            return (0..a.output).map(|o| o * stride).collect();
        }
        let last = a.input as i64 - 1;
        (0..a.output)
            .map(|o| {
                let (x, outside) = self.source(a, o);
                if outside {
                    return OUTSIDE;
                }
                let f = x.floor();
                let frac = x - f;
                let up = frac != 0.0
                    && match self.nearest {
                        Nearest::RoundPreferFloor => frac > 0.5,
                        Nearest::RoundPreferCeil => frac >= 0.5,
                        Nearest::Floor => false,
                        Nearest::Ceil => true,
                    };
                (f as i64).saturating_add(up as i64).clamp(0, last) as usize * stride
            })
            .collect()
    }

    /// The weight of a neighbour at signed distance `d` (in input steps,
    /// already scaled by antialiasing).
    fn kernel(&self, d: f64) -> f64 {
        let d = d.abs();
        match self.mode {
            Mode::Cubic => {
                let a = self.cubic_coeff_a;
                if d <= 1.0 {
                    ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
                } else if d < 2.0 {
                    ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
                } else {
                    0.0
                }
            }
            _ => (1.0 - d).max(0.0),
        }
    }

    /// The neighbours and weights of every output position of axis `a`.
    ///
    /// With `x = f + r`, `r` in `(0, 1]` (a whole `x` counts as `r = 1`
    /// from the position below), neighbour `f + i` for `i` in
    /// `start ..= 1 − start` weighs `kernel((i − r) · s)`; `s` is
    /// `min(scale, 1)` with antialiasing, else 1, and
    /// `start = ⌊−support/s⌋ + 1` (support 1 for linear, 2 for cubic).
    fn taps(&self, a: &Axis) -> Taps {
        let support = if self.mode == Mode::Cubic { 2.0 } else { 1.0 };
        let s = if self.antialias { a.scale.min(1.0) } else { 1.0 };
        let start = (-support / s).floor() as i64 + 1;
        let n = (2 - 2 * start) as usize;
        let last = a.input as i64 - 1;
        let mut t = Taps {
            output: a.output,
            n,
            idx: Vec::with_capacity(a.output * n),
            w: Vec::with_capacity(a.output * n),
            outside: Vec::with_capacity(a.output),
        };
        let mut w = vec![0.0f64; n];
        let mut j = vec![0i64; n];
        for o in 0..a.output {
            let (x, outside) = self.source(a, o);
            t.outside.push(outside);
            let (mut f, mut r) = (x.floor(), x - x.floor());
            if r == 0.0 {
                f -= 1.0;
                r = 1.0;
            }
            for k in 0..n {
                let i = start + k as i64;
                w[k] = self.kernel((i as f64 - r) * s);
                j[k] = (f as i64).saturating_add(i);
            }
            if self.antialias {
                normalize(&mut w);
            }
            if self.exclude_outside {
                for (wk, &jk) in w.iter_mut().zip(&j) {
                    if jk < 0 || jk > last {
                        *wk = 0.0;
                    }
                }
                normalize(&mut w);
            }
            t.w.extend_from_slice(&w);
            t.idx.extend(j.iter().map(|&v| v.clamp(0, last) as usize));
        }
        t
    }

    /// Linear or cubic interpolation of contiguous `x` (of the axes'
    /// input shape) into contiguous `out`, an axis at a time.
    fn interpolate(&self, x: &[f64], axes: &[Axis], out: &mut [f64]) -> Result<()> {
        let passes: Vec<(usize, Taps)> = axes
            .iter()
            .enumerate()
            .filter(|(_, a)| !self.is_identity(a))
            .map(|(d, a)| (d, self.taps(a)))
            .collect();
        if passes.is_empty() {
            out.copy_from_slice(x);
            return Ok(());
        }
        let fill = self.extrapolation_value;
        let mut shape: Vec<usize> = axes.iter().map(|a| a.input).collect();
        let order = pass_order(&shape, &passes);
        let mut held: Vec<f64> = Vec::new();
        for (k, (d, taps)) in order.iter().map(|&p| &passes[p]).enumerate() {
            let outer: usize = shape[..*d].iter().product();
            let inner: usize = shape[d + 1..].iter().product();
            let n_in = shape[*d];
            shape[*d] = taps.output;
            let src: &[f64] = if k == 0 { x } else { &held };
            if k + 1 == passes.len() {
                resample(src, outer, n_in, inner, taps, fill, out);
            } else {
                let len = numel(&shape)?;
                check_alloc(DType::F64, len)?;
                let mut next = vec![0.0; len];
                resample(src, outer, n_in, inner, taps, fill, &mut next);
                held = next;
            }
        }
        Ok(())
    }
}

/// The order to run `passes` (axis, taps) in on a tensor of `shape`: the
/// cheapest of every order (up to six passes; more keep theirs) by a cost
/// model where a pass costs its output size times its taps, four times as
/// much when its rows are shorter than a vector (a gather per element).
/// Upsampling 2x in H and W, that runs W first, on the smaller tensor.
/// Only rounding depends on the order (in f64, below what an f32 or f16
/// output keeps); a `tf_crop_and_resize` position outside on any axis
/// still gets the extrapolation value.
fn pass_order(shape: &[usize], passes: &[(usize, Taps)]) -> Vec<usize> {
    let natural: Vec<usize> = (0..passes.len()).collect();
    if passes.len() > 6 {
        return natural;
    }
    let cost = |order: &[usize]| -> f64 {
        let mut s: Vec<f64> = shape.iter().map(|&v| v as f64).collect();
        let mut total = 0.0;
        for &p in order {
            let (d, taps) = &passes[p];
            s[*d] = taps.output as f64;
            let inner: f64 = s[d + 1..].iter().product();
            let size: f64 = s.iter().product();
            total += size * taps.n as f64 * if inner < 8.0 { 4.0 } else { 1.0 };
        }
        total
    };
    let mut best = (cost(&natural), natural.clone());
    let mut order = natural;
    // Heap's algorithm: every permutation, one swap apart.
    let mut c = vec![0usize; order.len()];
    let mut i = 1;
    while i < order.len() {
        if c[i] < i {
            order.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
            let k = cost(&order);
            if k < best.0 {
                best = (k, order.clone());
            }
            c[i] += 1;
            i = 1;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    best.1
}

/// Scales `w` to sum to 1 (left alone when it sums to 0).
fn normalize(w: &mut [f64]) {
    let sum: f64 = w.iter().sum();
    if sum != 0.0 {
        w.iter_mut().for_each(|v| *v /= sum);
    }
}

/// One axis of `src` (`[outer, n_in, inner]`) resampled into `dst`
/// (`[outer, taps.output, inner]`).
fn resample(src: &[f64], outer: usize, n_in: usize, inner: usize, taps: &Taps, fill: f64, dst: &mut [f64]) {
    let (out, n) = (taps.output, taps.n);
    for b in 0..outer {
        let s = &src[b * n_in * inner..(b + 1) * n_in * inner];
        let d = &mut dst[b * out * inner..(b + 1) * out * inner];
        if inner == 1 {
            match n {
                2 => gather_row::<2>(s, taps, fill, d),
                4 => gather_row::<4>(s, taps, fill, d),
                _ => gather_row::<0>(s, taps, fill, d),
            }
            continue;
        }
        for (o, row) in d.chunks_exact_mut(inner).enumerate() {
            if taps.outside[o] {
                row.fill(fill);
                continue;
            }
            let (idx, w) = (&taps.idx[o * n..][..n], &taps.w[o * n..][..n]);
            let first = &s[idx[0] * inner..][..inner];
            for (y, &v) in row.iter_mut().zip(first) {
                *y = w[0] * v;
            }
            for (&i, &wk) in idx.iter().zip(w).skip(1) {
                let from = &s[i * inner..][..inner];
                for (y, &v) in row.iter_mut().zip(from) {
                    *y += wk * v;
                }
            }
        }
    }
}

/// One row of an innermost axis: `d[o] = Σₖ w·s[idx]` over output `o`'s
/// taps. `N` is the tap count when it is 2 or 4 (so the sum unrolls), 0
/// for any other count.
fn gather_row<const N: usize>(s: &[f64], taps: &Taps, fill: f64, d: &mut [f64]) {
    let n = if N == 0 { taps.n } else { N };
    let rows = taps.idx.chunks_exact(n).zip(taps.w.chunks_exact(n));
    for ((y, (idx, w)), &outside) in d.iter_mut().zip(rows).zip(&taps.outside) {
        *y = if outside {
            fill
        } else if N == 0 {
            idx.iter().zip(w).fold(0.0, |acc, (&i, &wk)| acc + wk * s[i])
        } else {
            let mut acc = 0.0;
            for k in 0..N {
                acc += w[k] * s[idx[k]];
            }
            acc
        };
    }
}

/// `out[o] = x[Σ maps[d][o_d]]` over the output's multi-index (the maps
/// hold offsets into contiguous `x`), or `fill` where some map is
/// [`OUTSIDE`].
fn gather<T: Copy>(x: &[T], maps: &[Vec<usize>], shape: &[usize], fill: T, out: &mut [T]) {
    let Some((last, rows)) = maps.split_last() else {
        out.copy_from_slice(&x[..out.len()]);
        return;
    };
    let width = last.len();
    if width == 0 || out.is_empty() {
        return;
    }
    let mut idx = vec![0usize; rows.len()];
    for row in out.chunks_exact_mut(width) {
        let base = idx.iter().zip(rows).try_fold(0usize, |acc, (&i, m)| {
            let v = m[i];
            (v != OUTSIDE).then(|| acc + v)
        });
        match base {
            None => row.fill(fill),
            Some(base) => {
                for (y, &m) in row.iter_mut().zip(last) {
                    *y = if m == OUTSIDE { fill } else { x[base + m] };
                }
            }
        }
        odometer(&mut idx, shape[..rows.len()].iter().copied());
    }
}

/// `v` as an element of `T` the way ONNX's reference stores its float
/// result: integers rounded half to even and saturated.
fn saturate<T: Num>(v: f64) -> T {
    if T::DTYPE.is_float() {
        return T::from_f64(v);
    }
    let (lo, hi) = (T::min_value(), T::max_value());
    let r = v.round_ties_even();
    if r <= lo.to_f64() {
        lo
    } else if r >= hi.to_f64() {
        hi
    } else {
        T::from_f64(r)
    }
}

/// Runs `kernel` on `x`'s elements in C order and `out`'s (through a
/// scratch buffer when `out` is not contiguous).
fn run<T: Element>(
    x: &Tensor,
    out: &Tensor,
    kernel: impl FnOnce(&[T], &mut [T]) -> Result<()>,
) -> Result<()> {
    x.read(|xv: ArrayViewD<'_, T>| {
        let xc = xv.as_standard_layout();
        let Some(xs) = xc.as_slice() else {
            return op_err("internal: resize input is not contiguous");
        };
        out.write(|mut ov: ArrayViewMutD<'_, T>| match ov.as_slice_mut() {
            Some(s) => kernel(xs, s),
            None => {
                let mut tmp = vec![T::default(); ov.len()];
                kernel(xs, &mut tmp)?;
                let tmp = ArrayViewD::from_shape(ov.shape(), &tmp[..])
                    .map_err(|e| Error::Op(format!("internal: resize output: {e}")))?;
                ov.assign(&tmp);
                Ok(())
            }
        })?
    })?
}

impl Resize {
    /// Linear or cubic interpolation of `x` into `out`: f64 directly, f32
    /// and f16 widened to f64 and rounded once on the way out, as ONNX's
    /// reference computes (an output near 0 from inputs that cancel keeps
    /// its digits).
    fn interpolate_as<T: Element>(&self, x: &Tensor, axes: &[Axis], out: &Tensor) -> Result<()> {
        if T::DTYPE == DType::F64 {
            return run::<f64>(x, out, |xs, o| self.interpolate(xs, axes, o));
        }
        let xs: Vec<f64> = x.read(|v: ArrayViewD<'_, T>| {
            let c = v.as_standard_layout();
            match c.as_slice() {
                Some(s) => s.iter().map(|e| e.to_f64()).collect(),
                None => c.iter().map(|e| e.to_f64()).collect(),
            }
        })?;
        check_alloc(DType::F64, out.size())?;
        let mut y = vec![0.0; out.size()];
        self.interpolate(&xs, axes, &mut y)?;
        out.write(|mut ov: ArrayViewMutD<'_, T>| match ov.as_slice_mut() {
            Some(o) => o.iter_mut().zip(&y).for_each(|(o, &v)| *o = T::from_f64(v)),
            None => ov.iter_mut().zip(&y).for_each(|(o, &v)| *o = T::from_f64(v)),
        })
    }
}

/// [`gather`] from `x` into `out`.
fn run_nearest<T: Element>(
    x: &Tensor,
    out: &Tensor,
    maps: &[Vec<usize>],
    shape: &[usize],
    fill: T,
) -> Result<()> {
    run::<T>(x, out, |xs, o| {
        gather(xs, maps, shape, fill, o);
        Ok(())
    })
}

impl Op for Resize {
    fn name(&self) -> &str {
        "resize"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_input(x.dtype, x.rank())?;
        if let Some(s) = x.static_shape() {
            let out: Vec<usize> = self.axes(&s)?.iter().map(|a| a.output).collect();
            return Ok(vec![TypeInfo::known(x.dtype, &out)]);
        }
        let dims = (0..self.rank())
            .map(|d| match (&self.sizes, x.shape.as_ref().map(|s| s[d])) {
                (Some(s), _) => s[d] as i64,
                (None, Some(i)) if i >= 0 => self.extent(d, i as usize).0 as i64,
                _ => -1,
            })
            .collect();
        Ok(vec![TypeInfo::new(x.dtype, Some(dims))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let dtype = x.dtype();
        self.check_input(dtype, Some(x.ndim()))?;
        let axes = self.axes(x.shape())?;
        let shape: Vec<usize> = axes.iter().map(|a| a.output).collect();
        let out = ctx.output(0, dtype, &shape)?;
        if out.size() == 0 {
            return Ok(vec![out]);
        }
        let e = self.extrapolation_value;
        if self.mode == Mode::Nearest {
            let mut stride = 1;
            let mut maps = vec![Vec::new(); axes.len()];
            for (d, a) in axes.iter().enumerate().rev() {
                maps[d] = self.nearest_map(a, stride);
                stride *= a.input;
            }
            crate::dispatch_num!(dtype, T => run_nearest::<T>(x, &out, &maps, &shape, saturate::<T>(e))?,
                run_nearest::<bool>(x, &out, &maps, &shape, e != 0.0)?);
        } else {
            crate::dispatch_float!(dtype, T => self.interpolate_as::<T>(x, &axes, &out)?,
                return op_err(format!("op 'resize' takes float inputs in mode '{}'", name_of(&MODES, self.mode))));
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new();
        if let Some(s) = &self.sizes {
            a = a.with("sizes", s.clone());
        }
        if let Some(s) = &self.scales {
            a = a.with("scales", s.clone());
        }
        if let Some(r) = &self.roi {
            a = a.with("roi", r.clone());
        }
        a = a.with("mode", name_of(&MODES, self.mode)).with(
            "coordinate_transformation_mode",
            name_of(&TRANSFORMS, self.transform),
        );
        if self.mode == Mode::Nearest {
            a = a.with("nearest_mode", name_of(&NEAREST, self.nearest));
        }
        if self.cubic_coeff_a != DEFAULT_A {
            a = a.with("cubic_coeff_a", self.cubic_coeff_a);
        }
        if self.exclude_outside {
            a = a.with("exclude_outside", true);
        }
        if self.extrapolation_value != 0.0 {
            a = a.with("extrapolation_value", self.extrapolation_value);
        }
        if self.antialias {
            a = a.with("antialias", true);
        }
        a
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("resize", |a: &Attrs| {
        Ok(Arc::new(Resize::from_attrs(a)?) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};
    use proptest::prelude::*;

    fn resize(attrs: Attrs) -> Resize {
        Resize::from_attrs(&attrs).unwrap()
    }

    /// Output shape and values of `resize(attrs)` on f64 `x`.
    fn apply(attrs: Attrs, shape: &[usize], x: Vec<f64>) -> (Vec<usize>, Vec<f64>) {
        run_vec::<f64>(&resize(attrs), &[t(shape, x)]).unwrap()
    }

    fn assert_close(got: &[f64], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()),
                "element {i}: {g} vs {w} ({got:?})"
            );
        }
    }

    #[test]
    fn bilinear_half_pixel_2x2_to_4x4() {
        // Rows and columns sample at -0.25, 0.25, 0.75, 1.25: the ends read
        // the edge, the middle mixes 3:1 and 1:3 (ONNX's own example).
        let want = [
            1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0,
        ];
        let a = Attrs::new()
            .with("scales", vec![1.0, 1.0, 2.0, 2.0])
            .with("mode", "linear");
        let (shape, got) = apply(a.clone(), &[1, 1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(shape, [1, 1, 4, 4]);
        assert_eq!(got, want);
        // f32 and f16 (through f64, rounded once): every value is exact.
        let (_, got) =
            run_vec::<f32>(&resize(a.clone()), &[t(&[1, 1, 2, 2], vec![1f32, 2.0, 3.0, 4.0])]).unwrap();
        assert_eq!(got, want.map(|v| v as f32));
        let x16: Vec<half::f16> = [1.0, 2.0, 3.0, 4.0]
            .iter()
            .map(|&v| half::f16::from_f64(v))
            .collect();
        let (_, got) = run_vec::<half::f16>(&resize(a), &[t(&[1, 1, 2, 2], x16)]).unwrap();
        assert_eq!(got, want.map(half::f16::from_f64));
    }

    #[test]
    fn f32_accumulates_in_f64_and_rounds_once() {
        // Half-pixel 2x: output 1 is 0.75·x₀ + 0.25·x₁, which for 1.1 and
        // -3.3 (as f32) nearly cancels: 2.98e-8 in f64 (ONNX's reference),
        // 5.96e-8 if each f32 product were rounded first.
        let a = Attrs::new().with("scales", vec![2.0]).with("mode", "linear");
        let (a0, a1) = (1.1f32, -3.3f32);
        let (_, y) = run_vec::<f32>(&resize(a), &[t(&[2], vec![a0, a1])]).unwrap();
        assert_eq!(y[1], (0.75 * a0 as f64 + 0.25 * a1 as f64) as f32);
        assert_eq!(y[1], 2.980_232_2e-8);
    }

    #[test]
    fn nearest_modes_round_as_named() {
        // Asymmetric, scale 4 on [10, 20]: coordinates 0, .25, .5, .75, 1,
        // 1.25, 1.5, 1.75; past the last element reads the last.
        let cases = [
            ("round_prefer_floor", [10, 10, 10, 20, 20, 20, 20, 20]),
            ("round_prefer_ceil", [10, 10, 20, 20, 20, 20, 20, 20]),
            ("floor", [10, 10, 10, 10, 20, 20, 20, 20]),
            ("ceil", [10, 20, 20, 20, 20, 20, 20, 20]),
        ];
        for (mode, want) in cases {
            let a = Attrs::new()
                .with("scales", vec![4.0])
                .with("coordinate_transformation_mode", "asymmetric")
                .with("nearest_mode", mode);
            let (_, got) = run_vec::<i32>(&resize(a.clone()), &[t(&[2], vec![10i32, 20])]).unwrap();
            assert_eq!(got, want, "{mode}");
            let (_, got) = run_vec::<u8>(&resize(a), &[t(&[2], vec![10u8, 20])]).unwrap();
            assert_eq!(got, want.map(|v| v as u8), "{mode}");
        }
        // Default half_pixel, 2 → 3: coordinates -1/6, 1/2 (a tie, down),
        // 7/6.
        let a = Attrs::new().with("sizes", vec![3]);
        let (_, got) = run_vec::<i64>(&resize(a.clone()), &[t(&[2], vec![7i64, 9])]).unwrap();
        assert_eq!(got, [7, 7, 9]);
        let (_, got) = run_vec::<bool>(&resize(a), &[t(&[2], vec![true, false])]).unwrap();
        assert_eq!(got, [true, true, false]);
    }

    #[test]
    fn align_corners_keeps_the_corners() {
        let x: Vec<f64> = (0..15).map(|i| ((i * 7) % 11) as f64 - 3.5).collect();
        for mode in ["linear", "cubic", "nearest"] {
            for sizes in [vec![7, 4], vec![2, 9], vec![3, 5]] {
                let a = Attrs::new()
                    .with("sizes", sizes.clone())
                    .with("mode", mode)
                    .with("coordinate_transformation_mode", "align_corners");
                let (shape, y) = apply(a, &[3, 5], x.clone());
                assert_eq!(shape, sizes);
                let (h, w) = (sizes[0], sizes[1]);
                let got = [y[0], y[w - 1], y[(h - 1) * w], y[h * w - 1]];
                assert_close(&got, &[x[0], x[4], x[10], x[14]], 1e-12);
            }
        }
    }

    #[test]
    fn tf_crop_and_resize_extrapolates() {
        // roi [0.5, 1.5] of 4 elements: coordinates 1.5, 3 and 4.5, the
        // last past the end.
        let a = Attrs::new()
            .with("sizes", vec![3])
            .with("mode", "linear")
            .with("coordinate_transformation_mode", "tf_crop_and_resize")
            .with("roi", vec![0.5, 1.5])
            .with("extrapolation_value", -1.0);
        let (_, y) = apply(a.clone(), &[4], vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(y, [2.5, 4.0, -1.0]);
        let (_, y) = run_vec::<i32>(
            &resize(a.with("mode", "nearest")),
            &[t(&[4], vec![1i32, 2, 3, 4])],
        )
        .unwrap();
        // 1.5 rounds down (round_prefer_floor).
        assert_eq!(y, [2, 4, -1]);
        // In 2-D a row outside fills whole; a column outside fills its
        // column. Rows: roi [-0.5, 0.5] of 3 → -1, 0, 1; columns: roi
        // [0, 1] of 2 → 0, 1.
        let a = Attrs::new()
            .with("sizes", vec![3, 2])
            .with("mode", "cubic")
            .with("coordinate_transformation_mode", "tf_crop_and_resize")
            .with("roi", vec![-0.5, 0.0, 0.5, 1.0])
            .with("extrapolation_value", 9.0);
        let (_, y) = apply(a, &[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_close(&y, &[9.0, 9.0, 1.0, 2.0, 3.0, 4.0], 1e-12);
    }

    #[test]
    fn cubic_weights_by_hand() {
        // Asymmetric, scale 2 on [1, 2, 4, 8]: output 1 sits at 0.5 and
        // output 3 at 1.5, with weights -0.09375, 0.59375, 0.59375,
        // -0.09375 (a = -0.75); output 2 sits on element 1.
        let a = Attrs::new()
            .with("scales", vec![2.0])
            .with("mode", "cubic")
            .with("coordinate_transformation_mode", "asymmetric");
        let x = vec![1.0, 2.0, 4.0, 8.0];
        let (_, y) = apply(a.clone(), &[4], x.clone());
        // At 0.5 the neighbour at -1 reads the edge (1).
        assert_close(&y[1..4], &[1.3125, 2.0, 2.71875], 1e-12);
        // exclude_outside drops it and renormalizes: (45/32) / (35/32).
        let (_, y) = apply(a.clone().with("exclude_outside", true), &[4], x.clone());
        assert_close(&y[1..4], &[9.0 / 7.0, 2.0, 2.71875], 1e-12);
        // a = -0.5: weights -0.0625, 0.5625, 0.5625, -0.0625 at 1.5.
        let (_, y) = apply(a.with("cubic_coeff_a", -0.5), &[4], x);
        assert_close(
            &y[3..4],
            &[-0.0625 + 0.5625 * 2.0 + 0.5625 * 4.0 - 0.0625 * 8.0],
            1e-12,
        );
    }

    #[test]
    fn antialias_widens_the_kernel_when_downsampling() {
        // Half-pixel, scale 0.5 on [0, 4, 8, 12]: outputs sit at 0.5 and
        // 2.5. Plain linear reads the two neighbours; antialiased, the
        // kernel spans four with weights 1, 3, 3, 1 (/8).
        let a = Attrs::new().with("scales", vec![0.5]).with("mode", "linear");
        let x = vec![0.0, 4.0, 8.0, 12.0];
        let (_, y) = apply(a.clone(), &[4], x.clone());
        assert_close(&y, &[2.0, 10.0], 1e-12);
        let (_, y) = apply(a.with("antialias", true), &[4], x);
        assert_close(&y, &[2.5, 9.5], 1e-12);
    }

    #[test]
    fn the_gather_pass_runs_on_the_smaller_tensor() {
        // The innermost axis is a gather per element: upsampling, it goes
        // first; downsampling, last.
        let shape = [1, 3, 224, 224];
        for (scale, want) in [(2.0, [1, 0]), (0.5, [0, 1])] {
            let r = resize(
                Attrs::new()
                    .with("scales", vec![1.0, 1.0, scale, scale])
                    .with("mode", "linear"),
            );
            let axes = r.axes(&shape).unwrap();
            let passes: Vec<(usize, Taps)> = [2, 3].iter().map(|&d| (d, r.taps(&axes[d]))).collect();
            assert_eq!(pass_order(&shape, &passes), want, "scale {scale}");
        }
    }

    #[test]
    fn pytorch_half_pixel_reads_position_zero_for_one_output() {
        // One output: coordinate 0 (half_pixel would give 1.5).
        let a = Attrs::new()
            .with("sizes", vec![1])
            .with("mode", "cubic")
            .with("coordinate_transformation_mode", "pytorch_half_pixel");
        assert_eq!(apply(a.clone(), &[4], vec![5.0, 1.0, 1.0, 1.0]).1, [5.0]);
        let half = a.with("coordinate_transformation_mode", "half_pixel");
        assert_close(&apply(half, &[4], vec![0.0, 0.0, 8.0, 8.0]).1, &[4.0], 1e-12);
    }

    #[test]
    fn layouts_and_identity_axes() {
        // A transposed input gives what its contiguous copy gives.
        let x = t(&[3, 4], (0..12).map(|v| v as f64 * 1.5).collect::<Vec<_>>());
        let xt = x.permute(&[1, 0]).unwrap();
        let a = Attrs::new().with("sizes", vec![7, 2]).with("mode", "cubic");
        let r = resize(a);
        let want = run_vec::<f64>(&r, &[xt.to_contiguous().unwrap()]).unwrap();
        assert_eq!(run_vec::<f64>(&r, &[xt]).unwrap(), want);
        // Scale 1 everywhere copies; an empty output is fine.
        let same = resize(Attrs::new().with("scales", vec![1.0, 1.0]).with("mode", "linear"));
        assert_eq!(
            run_vec::<f64>(&same, std::slice::from_ref(&x)).unwrap().1,
            x.to_f64_vec().unwrap()
        );
        let none = resize(Attrs::new().with("sizes", vec![0, 5]));
        assert_eq!(run_vec::<f64>(&none, &[x]).unwrap(), (vec![0, 5], vec![]));
    }

    #[test]
    fn infer_and_attrs_round_trip() {
        let a = Attrs::new()
            .with("scales", vec![1.0, 2.5])
            .with("mode", "cubic")
            .with("cubic_coeff_a", -0.5)
            .with("antialias", true)
            .with("exclude_outside", true);
        let r = resize(a);
        assert_eq!(Resize::from_attrs(&r.attrs()).unwrap(), r);
        let ty = |s: Vec<i64>| TypeInfo::new(DType::F32, Some(s));
        assert_eq!(
            r.infer(&[ty(vec![3, 5])]).unwrap()[0],
            TypeInfo::known(DType::F32, &[3, 12])
        );
        assert_eq!(r.infer(&[ty(vec![-1, 4])]).unwrap()[0].shape, Some(vec![-1, 10]));
        let s = resize(
            Attrs::new()
                .with("sizes", vec![2, 6])
                .with("roi", vec![0.0, 0.1, 1.0, 0.9]),
        );
        assert_eq!(Resize::from_attrs(&s.attrs()).unwrap(), s);
        assert_eq!(s.infer(&[ty(vec![-1, -1])]).unwrap()[0].shape, Some(vec![2, 6]));
        assert_eq!(
            s.infer(&[TypeInfo::unknown(DType::I8)]).unwrap()[0].shape,
            Some(vec![2, 6])
        );
    }

    #[test]
    fn bad_attrs_and_inputs_are_errors() {
        let err = |a: Attrs| match OpRegistry::builtin().make("resize", &a) {
            Ok(_) => panic!("{a:?} was accepted"),
            Err(e) => e.to_string(),
        };
        let s = || Attrs::new().with("scales", vec![1.0, 2.0]);
        for (a, want) in [
            (Attrs::new(), "needs attr 'sizes' or 'scales'"),
            (
                s().with("mode", "bilinear"),
                "attr 'mode': unknown value 'bilinear'",
            ),
            (
                s().with("coordinate_transformation_mode", "half"),
                "attr 'coordinate_transformation_mode': unknown value 'half'",
            ),
            (
                s().with("nearest_mode", "round"),
                "attr 'nearest_mode': unknown value 'round'",
            ),
            (s().with("mode", 1), "attr 'mode': expected a string"),
            (
                Attrs::new().with("scales", vec![1.0, 0.0]),
                "'scales' must be positive",
            ),
            (
                Attrs::new().with("scales", vec![-2.0]),
                "'scales' must be positive",
            ),
            (
                Attrs::new().with("scales", vec![f64::NAN]),
                "expected a list of finite numbers",
            ),
            (Attrs::new().with("sizes", vec![-2]), "op 'resize': attr 'sizes'"),
            (
                s().with("sizes", vec![1, 2, 3]),
                "'sizes' has 3 values and 'scales' 2",
            ),
            (
                s().with("roi", vec![0.0, 1.0]),
                "'roi' has 2 values, 2 axes need 4",
            ),
            (
                s().with("antialias", true),
                "'antialias' needs mode 'linear' or 'cubic'",
            ),
            (s().with("antialias", 1), "op 'resize': attr 'antialias'"),
            (s().with("scale", 1), "has no attr 'scale'"),
        ] {
            let e = err(a);
            assert!(e.contains(want), "{e}");
        }
        // Ranks and dtypes, at inference and when run.
        let r = op(
            "resize",
            Attrs::new().with("sizes", vec![2, 2]).with("mode", "linear"),
        );
        let e = r.infer(&[TypeInfo::new(DType::F32, Some(vec![4]))]).unwrap_err();
        assert!(
            e.to_string().contains("rank 1, attr 'sizes' is for rank 2"),
            "{e}"
        );
        let e = run_vec::<f32>(r.as_ref(), &[t(&[4], vec![0f32; 4])]).unwrap_err();
        assert!(e.to_string().contains("rank 1"), "{e}");
        let e = run_vec::<i32>(r.as_ref(), &[t(&[2, 2], vec![0i32; 4])]).unwrap_err();
        assert!(e.to_string().contains("mode 'linear' takes float inputs"), "{e}");
        let grow = op("resize", Attrs::new().with("sizes", vec![3]));
        let e = run_vec::<f32>(grow.as_ref(), &[t(&[0], Vec::<f32>::new())]).unwrap_err();
        assert!(e.to_string().contains("axis 0 is empty"), "{e}");
    }

    /// How the proptest picks a transform, mode and the rest.
    #[derive(Clone, Debug)]
    struct Case {
        shape: Vec<usize>,
        /// Per axis: output extent and scale as the op gets them.
        sizes: Option<Vec<usize>>,
        scales: Option<Vec<f64>>,
        roi: Vec<f64>,
        mode: usize,
        transform: usize,
        antialias: bool,
        exclude: bool,
        a: f64,
    }

    impl Case {
        fn attrs(&self) -> Attrs {
            let (mode, nearest) = match self.mode {
                m @ 0..=3 => ("nearest", NEAREST[m].0),
                4 => ("linear", "floor"),
                _ => ("cubic", "floor"),
            };
            let mut a = Attrs::new()
                .with("mode", mode)
                .with("coordinate_transformation_mode", TRANSFORMS[self.transform].0)
                .with("roi", self.roi.clone())
                .with("cubic_coeff_a", self.a)
                .with("extrapolation_value", -7.5);
            if mode == "nearest" {
                a = a.with("nearest_mode", nearest);
            } else {
                a = a
                    .with("antialias", self.antialias)
                    .with("exclude_outside", self.exclude);
            }
            if let Some(s) = &self.sizes {
                a = a.with("sizes", s.clone());
            }
            if let Some(s) = &self.scales {
                a = a.with("scales", s.clone());
            }
            a
        }
    }

    fn case() -> impl Strategy<Value = Case> {
        let scale = prop::sample::select(vec![0.25, 0.4, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0]);
        (1usize..=3)
            .prop_flat_map(move |r| {
                (
                    prop::collection::vec(1usize..=5, r),
                    prop::collection::vec(1usize..=7, r),
                    prop::collection::vec(scale.clone(), r),
                    prop::collection::vec((-0.3f64..0.6, 0.4f64..1.4), r),
                    0usize..3,
                    0usize..6,
                    0usize..7,
                    any::<bool>(),
                    any::<bool>(),
                    -1.0f64..-0.3,
                )
            })
            .prop_map(
                |(shape, outs, scales, roi, path, mode, transform, antialias, exclude, a)| {
                    let r = shape.len();
                    let from_scales: Vec<usize> = shape
                        .iter()
                        .zip(&scales)
                        .map(|(&i, &s)| ((i as f64 * s).floor() as usize).max(1))
                        .collect();
                    let (sizes, scales) = match path {
                        // Sizes alone, scales alone (bumped up where floor would
                        // give an empty axis), or both as given.
                        0 => (Some(outs), None),
                        1 => {
                            let s = shape
                                .iter()
                                .zip(&scales)
                                .map(|(&i, &s)| if (i as f64 * s) < 1.0 { 1.0 } else { s })
                                .collect();
                            (None, Some(s))
                        }
                        _ => (Some(from_scales), Some(scales)),
                    };
                    let roi = (0..2 * r)
                        .map(|k| if k < r { roi[k].0 } else { roi[k - r].1 })
                        .collect();
                    Case {
                        shape,
                        sizes,
                        scales,
                        roi,
                        mode,
                        transform,
                        antialias,
                        exclude,
                        a,
                    }
                },
            )
    }

    /// `(input position, weight)` pairs of one output position on one axis.
    type Neighbours = Vec<(usize, f64)>;

    /// The definition, one output element at a time: each axis maps the
    /// output position to a coordinate by ONNX's formula, picks its
    /// neighbours and weights, and the element is the sum over every
    /// combination of neighbours of the product of their weights times the
    /// input there (or the extrapolation value if any axis falls outside).
    fn definition(c: &Case, x: &[f64]) -> (Vec<usize>, Vec<f64>) {
        let r = c.shape.len();
        let mut out_shape = Vec::new();
        // Per axis, per output position: None (outside) or (index, weight) pairs.
        let mut per_axis: Vec<Vec<Option<Neighbours>>> = Vec::new();
        for d in 0..r {
            let n = c.shape[d];
            let fin = n as f64;
            let (out, scale) = match (&c.sizes, &c.scales) {
                (Some(s), Some(k)) => (s[d], k[d]),
                (Some(s), None) => (s[d], s[d] as f64 / fin),
                (None, Some(k)) => ((fin * k[d]).floor() as usize, k[d]),
                (None, None) => unreachable!(),
            };
            out_shape.push(out);
            let mut len = scale * fin;
            if (len - out as f64).abs() <= 1e-12 * out as f64 {
                len = out as f64;
            }
            let (b, e) = (c.roi[d], c.roi[r + d]);
            let tf = TRANSFORMS[c.transform].1;
            let identity = tf != Transform::TfHalfPixelForNn
                && out == n
                && scale == 1.0
                && (tf != Transform::TfCropAndResize || (b == 0.0 && e == 1.0));
            let mut axis = Vec::new();
            for o in 0..out {
                let y = o as f64;
                if identity {
                    axis.push(Some(vec![(o, 1.0)]));
                    continue;
                }
                let xo = match tf {
                    Transform::HalfPixel => (y + 0.5) / scale - 0.5,
                    Transform::HalfPixelSymmetric => {
                        fin / 2.0 * (1.0 - out as f64 / len) + (y + 0.5) / scale - 0.5
                    }
                    Transform::PytorchHalfPixel => {
                        if len > 1.0 {
                            (y + 0.5) / scale - 0.5
                        } else {
                            0.0
                        }
                    }
                    Transform::AlignCorners => {
                        if out == 1 {
                            0.0
                        } else {
                            y * (fin - 1.0) / (len - 1.0)
                        }
                    }
                    Transform::Asymmetric => y / scale,
                    Transform::TfHalfPixelForNn => (y + 0.5) / scale,
                    Transform::TfCropAndResize => {
                        if len > 1.0 {
                            y * (e - b) * (fin - 1.0) / (len - 1.0) + b * (fin - 1.0)
                        } else {
                            (b + e) / 2.0 * (fin - 1.0)
                        }
                    }
                };
                if tf == Transform::TfCropAndResize && (xo < 0.0 || xo > fin - 1.0) {
                    axis.push(None);
                    continue;
                }
                let edge = |j: i64| j.clamp(0, n as i64 - 1) as usize;
                if c.mode < 4 {
                    let (lo, frac) = (xo.floor(), xo - xo.floor());
                    let pick = match NEAREST[c.mode].1 {
                        Nearest::RoundPreferFloor if frac <= 0.5 => lo,
                        Nearest::RoundPreferCeil if frac < 0.5 => lo,
                        Nearest::Floor => lo,
                        _ => xo.ceil(),
                    };
                    axis.push(Some(vec![(edge(pick as i64), 1.0)]));
                    continue;
                }
                // Every position within the (stretched) kernel's reach.
                let (support, cubic) = if c.mode == 5 { (2.0, true) } else { (1.0, false) };
                let s = if c.antialias { scale.min(1.0) } else { 1.0 };
                let k = |dist: f64| {
                    let t = dist.abs();
                    if !cubic {
                        (1.0 - t).max(0.0)
                    } else if t <= 1.0 {
                        (c.a + 2.0) * t.powi(3) - (c.a + 3.0) * t * t + 1.0
                    } else if t < 2.0 {
                        c.a * t.powi(3) - 5.0 * c.a * t * t + 8.0 * c.a * t - 4.0 * c.a
                    } else {
                        0.0
                    }
                };
                let reach = support / s;
                let mut taps: Vec<(i64, f64)> = ((xo - reach).floor() as i64..=(xo + reach).ceil() as i64)
                    .map(|j| (j, k((j as f64 - xo) * s)))
                    .filter(|&(_, w)| w != 0.0)
                    .collect();
                if c.exclude {
                    taps.retain(|&(j, _)| j >= 0 && j < n as i64);
                }
                let total: f64 = taps.iter().map(|t| t.1).sum();
                if (c.antialias || c.exclude) && total != 0.0 {
                    taps.iter_mut().for_each(|t| t.1 /= total);
                }
                axis.push(Some(taps.into_iter().map(|(j, w)| (edge(j), w)).collect()));
            }
            per_axis.push(axis);
        }
        let total: usize = out_shape.iter().product();
        let mut y = Vec::with_capacity(total);
        let mut idx = vec![0usize; r];
        for _ in 0..total {
            let chosen: Option<Vec<&Neighbours>> = (0..r).map(|d| per_axis[d][idx[d]].as_ref()).collect();
            y.push(match chosen {
                None => -7.5,
                // exclude_outside left an axis no neighbour: all weights 0.
                Some(lists) if lists.iter().any(|l| l.is_empty()) => 0.0,
                Some(lists) => {
                    // Sum over the product of the axes' neighbour lists.
                    let mut acc = 0.0;
                    let mut pick = vec![0usize; r];
                    loop {
                        let (mut flat, mut w) = (0usize, 1.0);
                        for d in 0..r {
                            let (j, wd) = lists[d][pick[d]];
                            flat = flat * c.shape[d] + j;
                            w *= wd;
                        }
                        acc += w * x[flat];
                        let mut d = r;
                        loop {
                            if d == 0 {
                                break;
                            }
                            d -= 1;
                            pick[d] += 1;
                            if pick[d] < lists[d].len() {
                                break;
                            }
                            pick[d] = 0;
                        }
                        if pick.iter().all(|&p| p == 0) {
                            break;
                        }
                    }
                    acc
                }
            });
            odometer(&mut idx, out_shape.iter().copied());
        }
        (out_shape, y)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The separable kernel (tables per axis, one pass per axis) gives
        /// the per-element definition, for every mode, transform and
        /// option, in 1 to 3 axes; nearest on integers gives it exactly.
        #[test]
        fn separable_passes_match_the_definition(c in case()) {
            let n: usize = c.shape.iter().product();
            let x: Vec<f64> = (0..n).map(|i| ((i * 37 + 11) % 23) as f64 * 0.75 - 8.0).collect();
            let (want_shape, want) = definition(&c, &x);
            let r = Resize::from_attrs(&c.attrs()).unwrap();
            let (shape, got) = run_vec::<f64>(&r, &[t(&c.shape, x.clone())]).unwrap();
            prop_assert_eq!(&shape, &want_shape);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                prop_assert!((g - w).abs() <= 1e-9 * (1.0 + w.abs()), "element {}: {} vs {} ({:?})", i, g, w, r);
            }
            if c.mode < 4 {
                let xi: Vec<i32> = x.iter().map(|&v| (v * 4.0) as i32).collect();
                let (_, got) = run_vec::<i32>(&r, &[t(&c.shape, xi)]).unwrap();
                // The extrapolation value -7.5 rounds half to even.
                let want: Vec<i32> = want.iter().map(|&v| if v == -7.5 { -8 } else { (v * 4.0) as i32 }).collect();
                prop_assert_eq!(got, want);
            } else {
                // f32 (whose inputs here are exact) is the f64 result
                // rounded once.
                let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let (_, got32) = run_vec::<f32>(&r, &[t(&c.shape, xf)]).unwrap();
                let once: Vec<f32> = got.iter().map(|&v| v as f32).collect();
                prop_assert_eq!(got32, once);
            }
        }
    }
}
