//! The geometry of a resize: each axis's extent and scale, the input
//! coordinate of an output position under each transform, and the taps
//! (neighbours and weights) of an interpolated axis.

use crate::error::{attr_err, shape_err, Result};

use super::kernel::normalize;
use super::{Interpolation, Nearest, Resize, Transform};

/// One axis's geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Axis {
    pub(super) input: usize,
    pub(super) output: usize,
    pub(super) scale: f64,
    /// The resized length the transforms divide by: `scale · input`, or
    /// `output` when within rounding of it.
    pub(super) length: f64,
    /// `(begin, end)` of the roi (`tf_crop_and_resize`).
    pub(super) roi: (f64, f64),
}

/// Marks an output position that takes the extrapolation value.
pub(super) const OUTSIDE: usize = usize::MAX;

/// One interpolated axis: output position `o` is
/// `Σₖ w[o·n + k] · x[idx[o·n + k]]`, or the extrapolation value when
/// `outside[o]`.
pub(super) struct Taps {
    pub(super) output: usize,
    pub(super) n: usize,
    pub(super) idx: Vec<usize>,
    pub(super) w: Vec<f64>,
    pub(super) outside: Vec<bool>,
}

impl Resize {
    /// Output extent and scale of axis `d` of `input` elements.
    pub(super) fn extent(&self, d: usize, input: usize) -> (usize, f64) {
        match (&self.sizes, &self.scales) {
            (Some(s), Some(c)) => (s[d], c[d]),
            (Some(s), None) if input == 0 => (s[d], 1.0),
            (Some(s), None) => (s[d], s[d] as f64 / input as f64),
            (None, Some(c)) => ((input as f64 * c[d]).floor() as usize, c[d]),
            (None, None) => (input, 1.0),
        }
    }

    /// Every axis's geometry for an input of `shape`.
    pub(super) fn axes(&self, shape: &[usize]) -> Result<Vec<Axis>> {
        let r = shape.len();
        if r != self.rank() {
            return attr_err(format!(
                "op 'resize': the input has rank {r}, the attrs are for rank {}",
                self.rank()
            ));
        }
        (0..r)
            .map(|d| {
                let input = shape[d];
                let (output, scale) = self.extent(d, input);
                if input == 0 && output > 0 {
                    return shape_err(format!(
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
    pub(super) fn is_identity(&self, a: &Axis) -> bool {
        let close = |v: f64, to: f64| (v - to).abs() <= 1e-9 * v.abs().max(to.abs());
        self.transform != Transform::TfHalfPixelForNn
            && a.output == a.input
            && close(a.scale, 1.0)
            && (self.transform != Transform::TfCropAndResize || (a.roi.0 == 0.0 && close(a.roi.1, 1.0)))
    }

    /// The input coordinate of output position `o`, and whether it falls
    /// outside the input (`tf_crop_and_resize` only).
    pub(super) fn source(&self, a: &Axis, o: usize) -> (f64, bool) {
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
    pub(super) fn nearest_map(&self, a: &Axis, stride: usize) -> Vec<usize> {
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
    pub(super) fn kernel(&self, d: f64) -> f64 {
        let d = d.abs();
        match self.mode {
            Interpolation::Cubic => {
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
    pub(super) fn taps(&self, a: &Axis) -> Taps {
        let support = if self.mode == Interpolation::Cubic {
            2.0
        } else {
            1.0
        };
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
}
