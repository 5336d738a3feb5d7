//! Parametrised activations on float inputs, with ONNX's formulas and
//! default parameters, and `_inplace` twins that overwrite their input:
//!
//! | op | attrs (default) | y |
//! |---|---|---|
//! | `elu` | `alpha` (1) | `x < 0 ? alpha·(exp(x) − 1) : x` |
//! | `celu` | `alpha` (1) | `max(0, x) + min(0, alpha·(exp(x/alpha) − 1))` |
//! | `selu` | `alpha` (1.67326…), `gamma` (1.05070…) | `x <= 0 ? gamma·alpha·(exp(x) − 1) : gamma·x` |
//! | `hard_sigmoid` | `alpha` (0.2), `beta` (0.5) | `max(0, min(1, alpha·x + beta))` |
//! | `softsign` | | `x / (1 + abs(x))` |
//! | `thresholded_relu` | `alpha` (1) | `x > alpha ? x : 0` |
//! | `mish` | | `x · tanh(softplus(x))` |
//!
//! and `prelu(x, slope)`: `x < 0 ? slope·x : x`, `slope` broadcast into
//! `x`'s shape (ONNX's unidirectional broadcast), any numeric dtype.
//!
//! NaN inputs give NaN, as the formulas do in numpy.

use std::sync::Arc;

use crate::dtype::{DType, Element, Float, Num};
use crate::error::{dtype_err, refuse_dtype, shape_err, Result};
use crate::ops::elementwise::{map1, zip2, zip_inplace};
use crate::ops::{check_arity, Arity, Attrs, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// ONNX Selu's defaults (the float32 values the spec gives).
const SELU_ALPHA: f64 = 1.673_263_192_176_818_8;
const SELU_GAMMA: f64 = 1.050_701_022_148_132_3;

/// Which activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActKind {
    Elu,
    Celu,
    Selu,
    HardSigmoid,
    Softsign,
    ThresholdedRelu,
    Mish,
}

impl ActKind {
    pub const ALL: [ActKind; 7] = [
        ActKind::Elu,
        ActKind::Celu,
        ActKind::Selu,
        ActKind::HardSigmoid,
        ActKind::Softsign,
        ActKind::ThresholdedRelu,
        ActKind::Mish,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ActKind::Elu => "elu",
            ActKind::Celu => "celu",
            ActKind::Selu => "selu",
            ActKind::HardSigmoid => "hard_sigmoid",
            ActKind::Softsign => "softsign",
            ActKind::ThresholdedRelu => "thresholded_relu",
            ActKind::Mish => "mish",
        }
    }

    /// The attrs this kind takes, with their defaults.
    fn params(self) -> &'static [(&'static str, f64)] {
        match self {
            ActKind::Elu | ActKind::Celu | ActKind::ThresholdedRelu => &[("alpha", 1.0)],
            ActKind::Selu => &[("alpha", SELU_ALPHA), ("gamma", SELU_GAMMA)],
            ActKind::HardSigmoid => &[("alpha", 0.2), ("beta", 0.5)],
            ActKind::Softsign | ActKind::Mish => &[],
        }
    }
}

/// An activation with its parameters (in `params()` order).
#[derive(Clone, Debug)]
pub struct Activation {
    pub kind: ActKind,
    pub p: [f64; 2],
    pub inplace: bool,
    name: String,
}

impl Activation {
    pub fn new(kind: ActKind, p: [f64; 2], inplace: bool) -> Activation {
        let name = if inplace {
            format!("{}_inplace", kind.name())
        } else {
            kind.name().to_string()
        };
        Activation {
            kind,
            p,
            inplace,
            name,
        }
    }

    fn from_attrs(kind: ActKind, inplace: bool, a: &Attrs) -> Result<Activation> {
        let params = kind.params();
        let names: Vec<&str> = params.iter().map(|(k, _)| *k).collect();
        let act = Activation::new(kind, [0.0; 2], inplace);
        a.only(&act.name, &names)?;
        let mut p = [0.0; 2];
        for (slot, (k, default)) in p.iter_mut().zip(params) {
            *slot = a.f64(k)?.unwrap_or(*default);
        }
        Ok(Activation { p, ..act })
    }
}

/// The destroy_map of an op that overwrites x (input 0) when `inplace`.
fn destroys_x(inplace: bool) -> Vec<(usize, usize)> {
    if inplace {
        vec![(0, 0)]
    } else {
        Vec::new()
    }
}

/// A pure op's one in-place variant, `twin()`, taking its `n` inputs in order.
fn in_place_twin(inplace: bool, twin: impl Fn() -> Arc<dyn Op>, n: usize) -> Vec<InplaceVariant> {
    if inplace {
        return Vec::new();
    }
    vec![InplaceVariant {
        op: twin(),
        inputs: (0..n).collect(),
    }]
}

fn run<T: Float>(kind: ActKind, p: [f64; 2], x: &Tensor, out: &Tensor) -> Result<()> {
    let c = |v: f64| <T as Element>::from_f64(v);
    let (zero, one) = (T::zero(), T::one());
    let (a, b) = (c(p[0]), c(p[1]));
    match kind {
        ActKind::Elu => map1(x, out, move |v: T| if v < zero { a * (v.exp() - one) } else { v }),
        ActKind::Celu => map1(x, out, move |v: T| {
            v.max(zero) + (a * ((v / a).exp() - one)).min(zero)
        }),
        ActKind::Selu => map1(
            x,
            out,
            move |v: T| {
                if v <= zero {
                    b * (a * v.exp() - a)
                } else {
                    b * v
                }
            },
        ),
        ActKind::HardSigmoid => map1(x, out, move |v: T| clamp01(a * v + b)),
        ActKind::Softsign => map1(x, out, move |v: T| v / (one + v.abs())),
        ActKind::ThresholdedRelu => map1(x, out, move |v: T| if v > a { v } else { zero }),
        ActKind::Mish => map1(x, out, move |v: T| {
            let sp = v.max(zero) + (-v.abs()).exp().ln_1p();
            v * sp.tanh()
        }),
    }
}

/// `max(0, min(1, v))`, NaN staying NaN.
fn clamp01<T: Float>(v: T) -> T {
    if v.is_nan() {
        v
    } else {
        v.max(T::zero()).min(T::one())
    }
}

impl Op for Activation {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if !inputs[0].dtype.is_float() {
            return dtype_err(format!(
                "op '{}' takes float inputs, got {} (insert a cast)",
                self.name, inputs[0].dtype
            ));
        }
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let out = if self.inplace {
            x.clone()
        } else {
            ctx.output(0, x.dtype(), x.shape())?
        };
        let (kind, p) = (self.kind, self.p);
        crate::dispatch_float!(x.dtype(), T => run::<T>(kind, p, x, &out)?,
            return dtype_err(format!("op '{}' takes float inputs, got {}", self.name, x.dtype())));
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        destroys_x(self.inplace)
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        in_place_twin(
            self.inplace,
            || Arc::new(Activation::new(self.kind, self.p, true)),
            1,
        )
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Activation::new(self.kind, self.p, false)) as Arc<dyn Op>)
    }
    fn attrs(&self) -> Attrs {
        self.kind
            .params()
            .iter()
            .zip(self.p)
            .fold(Attrs::new(), |a, ((k, _), v)| a.with(k, v))
    }
}

// ----- prelu --------------------------------------------------------------

/// `prelu(x, slope)` and `prelu_inplace` (overwrites `x`).
#[derive(Clone, Debug)]
pub struct Prelu {
    pub inplace: bool,
}

fn prelu_of<T: Num>(v: T, s: T) -> T {
    if v < T::zero() {
        T::mul_w(s, v)
    } else {
        v
    }
}

impl Op for Prelu {
    fn name(&self) -> &str {
        if self.inplace {
            "prelu_inplace"
        } else {
            "prelu"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (x, s) = (&inputs[0], &inputs[1]);
        if x.dtype != s.dtype || x.dtype == DType::Bool {
            return dtype_err(format!(
                "op '{}' needs numeric inputs of one dtype, got {} and {}",
                self.name(),
                x.dtype,
                s.dtype
            ));
        }
        if let (Some(xs), Some(ss)) = (x.static_shape(), s.static_shape()) {
            let fits = ss.len() <= xs.len()
                && ss
                    .iter()
                    .rev()
                    .zip(xs.iter().rev())
                    .all(|(&a, &b)| a == b || a == 1);
            if !fits {
                return shape_err(format!(
                    "op '{}': slope of shape {ss:?} does not broadcast into x's shape {xs:?}",
                    self.name()
                ));
            }
        }
        Ok(vec![x.clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (x, s) = (&inputs[0], &inputs[1]);
        if self.inplace {
            crate::dispatch_num!(x.dtype(), T => zip_inplace::<T>(x, s, prelu_of::<T>)?,
                return refuse_dtype("prelu_inplace", x.dtype()));
            return Ok(vec![x.clone()]);
        }
        let out = ctx.output(0, x.dtype(), x.shape())?;
        crate::dispatch_num!(x.dtype(), T => zip2::<T, T, T>(x, s, &out, prelu_of::<T>)?,
            return refuse_dtype("prelu", x.dtype()));
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        destroys_x(self.inplace)
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        in_place_twin(self.inplace, || Arc::new(Prelu { inplace: true }), 2)
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Prelu { inplace: false }) as Arc<dyn Op>)
    }
}

pub fn register(r: &mut OpRegistry) {
    for kind in ActKind::ALL {
        for inplace in [false, true] {
            let name = Activation::new(kind, [0.0; 2], inplace).name;
            r.register(&name, move |a: &Attrs| {
                Ok(Arc::new(Activation::from_attrs(kind, inplace, a)?) as Arc<dyn Op>)
            });
        }
    }
    r.register_op(Arc::new(Prelu { inplace: false }));
    r.register_op(Arc::new(Prelu { inplace: true }));
}
