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

use serde_json::Value as Json;

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, Error, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

mod geometry;
mod kernel;
#[cfg(test)]
mod tests;

use kernel::{run_nearest, saturate};

/// How output values are made from input values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
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

const INTERPOLATIONS: [(&str, Interpolation); 3] = [
    ("nearest", Interpolation::Nearest),
    ("linear", Interpolation::Linear),
    ("cubic", Interpolation::Cubic),
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
            None => attr_err(format!(
                "op 'resize': attr '{key}': unknown value '{s}' ({})",
                table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )),
        },
        Some(v) => attr_err(format!("op 'resize': attr '{key}': expected a string, got {v}")),
    }
}

/// A list of finite numbers, when given.
fn numbers(a: &Attrs, key: &str) -> Result<Option<Vec<f64>>> {
    let bad = |v: &Json| {
        Error::Attr(format!(
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
    pub mode: Interpolation,
    pub transform: Transform,
    pub nearest: Nearest,
    pub cubic_coeff_a: f64,
    pub exclude_outside: bool,
    pub extrapolation_value: f64,
    pub antialias: bool,
}

impl Resize {
    pub fn from_attrs(a: &Attrs) -> Result<Resize> {
        a.only("resize", &ATTRS)?;
        let sizes = named(a.usize_list("sizes"))?;
        let scales = numbers(a, "scales")?;
        let roi = numbers(a, "roi")?;
        let rank = match (&sizes, &scales) {
            (None, None) => return attr_err("op 'resize' needs attr 'sizes' or 'scales'"),
            (Some(s), Some(c)) if s.len() != c.len() => {
                return attr_err(format!(
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
                return attr_err(format!("op 'resize': attr 'scales' must be positive, got {c:?}"));
            }
        }
        if let Some(r) = &roi {
            if r.len() != 2 * rank {
                return attr_err(format!(
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
                Some(v) => attr_err(format!("op 'resize': attr '{key}' must be finite, got {v}")),
            }
        };
        let op = Resize {
            sizes,
            scales,
            roi,
            mode: choice(a, "mode", &INTERPOLATIONS, Interpolation::Nearest)?,
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
        if op.antialias && op.mode == Interpolation::Nearest {
            return attr_err("op 'resize': attr 'antialias' needs mode 'linear' or 'cubic'");
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
        if self.mode != Interpolation::Nearest && !dtype.is_float() {
            return dtype_err(format!(
                "op 'resize': mode '{}' takes float inputs (f32, f16, f64), got {dtype}",
                name_of(&INTERPOLATIONS, self.mode)
            ));
        }
        match rank {
            Some(r) if r != self.rank() => attr_err(format!(
                "op 'resize': the input has rank {r}, attr '{}' is for rank {}",
                if self.sizes.is_some() { "sizes" } else { "scales" },
                self.rank()
            )),
            _ => Ok(()),
        }
    }
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
        if self.mode == Interpolation::Nearest {
            let mut stride = 1;
            let mut maps = vec![Vec::new(); axes.len()];
            for (d, a) in axes.iter().enumerate().rev() {
                maps[d] = self.nearest_map(a, stride);
                stride *= a.input;
            }
            crate::dispatch_num!(dtype, T => run_nearest::<T>(x, &out, &maps, &shape, saturate::<T>(e))?,
                crate::dispatch_all!(dtype, T => run_nearest::<T>(x, &out, &maps, &shape, <T as crate::Element>::from_f64(e))?));
        } else {
            crate::dispatch_float!(dtype, T => self.interpolate_as::<T>(x, &axes, &out)?,
                return dtype_err(format!("op 'resize' takes float inputs in mode '{}'", name_of(&INTERPOLATIONS, self.mode))));
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
        a = a.with("mode", name_of(&INTERPOLATIONS, self.mode)).with(
            "coordinate_transformation_mode",
            name_of(&TRANSFORMS, self.transform),
        );
        if self.mode == Interpolation::Nearest {
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
