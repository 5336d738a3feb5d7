//! Random ops: `random_uniform` and `random_normal` (no inputs, attr
//! `shape`) and inverted `dropout(x)`.
//!
//! Each call draws from a `ChaCha8Rng` whose key comes from the node's name
//! (`OpCtx::node_seed`) and whose stream is the `seed` attr: re-running a
//! node is bit-identical, two nodes (or two seeds) draw different values.
//! Values are drawn in the output's logical C order, so a pre-allocated
//! output of any layout receives the same values as a fresh one, and
//! dropout's mask does not depend on its input's strides.
//!
//! Sampling follows numpy: `low + (high - low) * u` with `u` in `[0, 1)`,
//! `mean + std * z` with `z` standard normal (both computed in the output
//! dtype), and dropout `x * (mask / (1 - p))`, keeping an element when a
//! uniform f64 draw is `>= p` (the mask is the same for f32 and f64).

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::dtype::{DType, Element, Float};
use crate::error::{attr_err, dtype_err, Error, Result};
use crate::ops::copy::detach;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The generator of one call: keyed by the node, on stream `seed`.
fn rng_for(ctx: &OpCtx, seed: i64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(ctx.node_seed());
    rng.set_stream(seed as u64);
    rng
}

/// Overwrites every element of `out`, in logical C order, with `next()`.
fn fill<T: Element>(out: &Tensor, mut next: impl FnMut() -> T) -> Result<()> {
    out.write(|mut v: ArrayViewMutD<'_, T>| v.iter_mut().for_each(|x| *x = next()))
}

fn need<T>(op: &str, attr: &str, v: Option<T>) -> Result<T> {
    v.ok_or_else(|| Error::Attr(format!("op '{op}' needs attr '{attr}'")))
}

fn float_dtype(op: &str, a: &Attrs) -> Result<DType> {
    let dtype = a.dtype("dtype")?.unwrap_or(DType::F32);
    if !dtype.is_float() {
        return attr_err(format!(
            "op '{op}': attr 'dtype' must be f16, f32 or f64, got {dtype}"
        ));
    }
    Ok(dtype)
}

/// `v` is finite, also once rounded to `dtype`.
fn finite_in(v: f64, dtype: DType) -> bool {
    match dtype {
        DType::F32 => (v as f32).is_finite(),
        DType::F16 => crate::dtype::f16_from_f64(v).is_finite(),
        DType::BF16 => crate::dtype::bf16_from_f64(v).is_finite(),
        _ => v.is_finite(),
    }
}

// ----- random_uniform -------------------------------------------------------

/// `random_uniform()`: values in `[low, high)` of attr `shape` and float
/// `dtype`. As in numpy, `low >= high` is allowed (the interval is then
/// `(high, low]`, or the constant `low`).
#[derive(Clone, Debug)]
pub struct RandomUniform {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub low: f64,
    pub high: f64,
    pub seed: i64,
}

impl RandomUniform {
    pub fn new(shape: Vec<usize>, dtype: DType, low: f64, high: f64, seed: i64) -> Result<RandomUniform> {
        if !dtype.is_float() {
            return attr_err(format!(
                "op 'random_uniform': attr 'dtype' must be f16, f32 or f64, got {dtype}"
            ));
        }
        let range_ok = match dtype {
            DType::F32 => ((high as f32) - (low as f32)).is_finite(),
            DType::F16 => (crate::dtype::f16_from_f64(high) - crate::dtype::f16_from_f64(low)).is_finite(),
            DType::BF16 => (crate::dtype::bf16_from_f64(high) - crate::dtype::bf16_from_f64(low)).is_finite(),
            _ => (high - low).is_finite(),
        };
        if !finite_in(low, dtype) || !finite_in(high, dtype) || !range_ok {
            return attr_err(format!(
                "op 'random_uniform': attrs 'low' = {low:?} and 'high' = {high:?} must be finite with a finite range in {dtype}"
            ));
        }
        Ok(RandomUniform {
            shape,
            dtype,
            low,
            high,
            seed,
        })
    }

    fn from_attrs(a: &Attrs) -> Result<RandomUniform> {
        const OP: &str = "random_uniform";
        a.only(OP, &["shape", "dtype", "low", "high", "seed"])?;
        RandomUniform::new(
            need(OP, "shape", a.usize_list("shape")?)?,
            float_dtype(OP, a)?,
            a.f64("low")?.unwrap_or(0.0),
            a.f64("high")?.unwrap_or(1.0),
            a.i64("seed")?.unwrap_or(0),
        )
    }
}

/// Floats the random ops draw: f32 and f64 from their own distributions,
/// f16 as an f32 draw rounded (rand has no f16).
trait Draw: Float {
    fn standard(rng: &mut ChaCha8Rng) -> Self;
    fn standard_normal(rng: &mut ChaCha8Rng) -> Self;
}

macro_rules! draw {
    ($($t:ty),*) => {$(
        impl Draw for $t {
            fn standard(rng: &mut ChaCha8Rng) -> Self {
                rng.gen::<$t>()
            }
            fn standard_normal(rng: &mut ChaCha8Rng) -> Self {
                rng.sample::<$t, _>(StandardNormal)
            }
        }
    )*};
}
draw!(f32, f64);

macro_rules! draw_half {
    ($($t:ty),*) => {$(
        impl Draw for $t {
            fn standard(rng: &mut ChaCha8Rng) -> Self {
                <$t>::from_f32(f32::standard(rng))
            }
            fn standard_normal(rng: &mut ChaCha8Rng) -> Self {
                <$t>::from_f32(f32::standard_normal(rng))
            }
        }
    )*};
}
draw_half!(half::f16, half::bf16);

fn uniform_kernel<T: Draw>(out: &Tensor, rng: &mut ChaCha8Rng, low: f64, high: f64) -> Result<()> {
    let (low, high) = (T::from_f64(low), T::from_f64(high));
    let span = high - low;
    fill(out, || low + span * T::standard(rng))
}

impl Op for RandomUniform {
    fn name(&self) -> &str {
        "random_uniform"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![TypeInfo::known(self.dtype, &self.shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let out = ctx.output(0, self.dtype, &self.shape)?;
        let mut rng = rng_for(ctx, self.seed);
        crate::dispatch_float!(self.dtype, T => uniform_kernel::<T>(&out, &mut rng, self.low, self.high)?,
            return dtype_err(format!("op 'random_uniform': dtype {} is not a float", self.dtype)));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("shape", self.shape.clone())
            .with("dtype", self.dtype.name())
            .with("low", self.low)
            .with("high", self.high)
            .with("seed", self.seed)
    }
}

// ----- random_normal --------------------------------------------------------

/// `random_normal()`: normal values with attrs `mean` and `std` (`std` 0
/// gives the constant `mean`).
#[derive(Clone, Debug)]
pub struct RandomNormal {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub mean: f64,
    pub std: f64,
    pub seed: i64,
}

impl RandomNormal {
    pub fn new(shape: Vec<usize>, dtype: DType, mean: f64, std: f64, seed: i64) -> Result<RandomNormal> {
        if !dtype.is_float() {
            return attr_err(format!(
                "op 'random_normal': attr 'dtype' must be f16, f32 or f64, got {dtype}"
            ));
        }
        if !finite_in(mean, dtype) {
            return attr_err(format!(
                "op 'random_normal': attr 'mean': expected a finite number in {dtype}, got {mean:?}"
            ));
        }
        if std < 0.0 || !finite_in(std, dtype) {
            return attr_err(format!(
                "op 'random_normal': attr 'std': expected a finite non-negative number in {dtype}, got {std:?}"
            ));
        }
        Ok(RandomNormal {
            shape,
            dtype,
            mean,
            std,
            seed,
        })
    }

    fn from_attrs(a: &Attrs) -> Result<RandomNormal> {
        const OP: &str = "random_normal";
        a.only(OP, &["shape", "dtype", "mean", "std", "seed"])?;
        RandomNormal::new(
            need(OP, "shape", a.usize_list("shape")?)?,
            float_dtype(OP, a)?,
            a.f64("mean")?.unwrap_or(0.0),
            a.f64("std")?.unwrap_or(1.0),
            a.i64("seed")?.unwrap_or(0),
        )
    }
}

fn normal_kernel<T: Draw>(out: &Tensor, rng: &mut ChaCha8Rng, mean: f64, std: f64) -> Result<()> {
    let (mean, std) = (T::from_f64(mean), T::from_f64(std));
    fill(out, || mean + std * T::standard_normal(rng))
}

impl Op for RandomNormal {
    fn name(&self) -> &str {
        "random_normal"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![TypeInfo::known(self.dtype, &self.shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let out = ctx.output(0, self.dtype, &self.shape)?;
        let mut rng = rng_for(ctx, self.seed);
        crate::dispatch_float!(self.dtype, T => normal_kernel::<T>(&out, &mut rng, self.mean, self.std)?,
            return dtype_err(format!("op 'random_normal': dtype {} is not a float", self.dtype)));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("shape", self.shape.clone())
            .with("dtype", self.dtype.name())
            .with("mean", self.mean)
            .with("std", self.std)
            .with("seed", self.seed)
    }
}

// ----- dropout --------------------------------------------------------------

/// `dropout(x)`: inverted dropout. Each element is kept with probability
/// `1 - p` and scaled by `1 / (1 - p)`, else zeroed (NaN and inf inputs
/// stay NaN where dropped, as numpy's `x * mask / (1 - p)`).
#[derive(Clone, Debug)]
pub struct Dropout {
    pub p: f64,
    pub seed: i64,
}

impl Dropout {
    pub fn new(p: f64, seed: i64) -> Result<Dropout> {
        if !(0.0..1.0).contains(&p) {
            return attr_err(format!(
                "op 'dropout': attr 'p': expected a probability in [0, 1), got {p:?}"
            ));
        }
        Ok(Dropout { p, seed })
    }

    fn from_attrs(a: &Attrs) -> Result<Dropout> {
        a.only("dropout", &["p", "seed"])?;
        Dropout::new(a.f64("p")?.unwrap_or(0.5), a.i64("seed")?.unwrap_or(0))
    }
}

fn dropout_kernel<T: Float>(x: &Tensor, out: &Tensor, rng: &mut ChaCha8Rng, p: f64) -> Result<()> {
    let scale = T::from_f64(1.0 / (1.0 - p));
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            for (o, &v) in ov.iter_mut().zip(xv.iter()) {
                let m = if rng.gen::<f64>() >= p { scale } else { T::zero() };
                *o = v * m;
            }
        })
    })??;
    Ok(())
}

impl Op for Dropout {
    fn name(&self) -> &str {
        "dropout"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if !inputs[0].dtype.is_float() {
            return dtype_err(format!(
                "op 'dropout' takes float inputs, got {}",
                inputs[0].dtype
            ));
        }
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        if !x.dtype().is_float() {
            return dtype_err(format!("op 'dropout' takes float inputs, got {}", x.dtype()));
        }
        let out = ctx.output(0, x.dtype(), x.shape())?;
        let x = detach(x, &out)?;
        let mut rng = rng_for(ctx, self.seed);
        crate::dispatch_float!(x.dtype(), T => dropout_kernel::<T>(&x, &out, &mut rng, self.p)?,
            return dtype_err(format!("op 'dropout' takes float inputs, got {}", x.dtype())));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("p", self.p).with("seed", self.seed)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("random_uniform", |a: &Attrs| {
        Ok(Arc::new(RandomUniform::from_attrs(a)?) as Arc<dyn Op>)
    });
    r.register("random_normal", |a: &Attrs| {
        Ok(Arc::new(RandomNormal::from_attrs(a)?) as Arc<dyn Op>)
    });
    r.register("dropout", |a: &Attrs| {
        Ok(Arc::new(Dropout::from_attrs(a)?) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::tensor::IndexSpec;

    fn run(op: &dyn Op, inputs: &[Tensor], node: &str) -> Tensor {
        op.compute(inputs, &mut OpCtx::new(node)).unwrap().remove(0)
    }

    fn vals(t: &Tensor) -> Vec<f64> {
        t.to_f64_vec().unwrap()
    }

    fn mean_std(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
        (m, var.sqrt())
    }

    fn uniform(shape: &[usize], dtype: DType, low: f64, high: f64, seed: i64) -> RandomUniform {
        RandomUniform::new(shape.to_vec(), dtype, low, high, seed).unwrap()
    }

    #[test]
    fn uniform_is_deterministic_per_node_and_seed() {
        let op = uniform(&[4, 5], DType::F32, 0.0, 1.0, 0);
        let a = run(&op, &[], "n");
        let b = run(&op, &[], "n");
        assert_eq!((a.shape(), a.dtype()), (&[4usize, 5][..], DType::F32));
        assert_eq!(a.to_array::<f32>().unwrap(), b.to_array::<f32>().unwrap());
        assert!(!a.same_buffer(&b));
        assert_ne!(vals(&a), vals(&run(&op, &[], "m")));
        assert_ne!(
            vals(&a),
            vals(&run(&uniform(&[4, 5], DType::F32, 0.0, 1.0, 1), &[], "n"))
        );
    }

    #[test]
    fn uniform_statistics_and_bounds() {
        for dtype in [DType::F32, DType::F64] {
            let v = vals(&run(&uniform(&[100, 100], dtype, 2.0, 4.0, 7), &[], "u"));
            let (m, s) = mean_std(&v);
            // mean 3, std 2 / sqrt(12) = 0.577; the mean's standard error is 0.006
            assert!((m - 3.0).abs() < 0.03, "{dtype}: mean {m}");
            assert!((s - 0.577).abs() < 0.02, "{dtype}: std {s}");
            assert!(v.iter().all(|&x| (2.0..4.0).contains(&x)), "{dtype}");
        }
        // low == high is the constant low; low > high draws from (high, low].
        assert!(vals(&run(&uniform(&[10], DType::F64, 1.5, 1.5, 0), &[], "u"))
            .iter()
            .all(|&x| x == 1.5));
        let v = vals(&run(&uniform(&[1000], DType::F64, 1.0, -1.0, 0), &[], "u"));
        assert!(v.iter().all(|&x| x > -1.0 && x <= 1.0));
        assert_eq!(
            run(&uniform(&[0, 3], DType::F32, 0.0, 1.0, 0), &[], "u").shape(),
            &[0, 3]
        );
        assert_eq!(run(&uniform(&[], DType::F32, 0.0, 1.0, 0), &[], "u").size(), 1);
    }

    #[test]
    fn random_values_follow_logical_order_in_any_output_layout() {
        let op = uniform(&[3, 4], DType::F64, 0.0, 1.0, 3);
        let fresh = run(&op, &[], "n");
        let pre = Tensor::zeros(DType::F64, &[4, 3]).unwrap().t(None).unwrap();
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(pre.clone())]);
        let y = op.compute(&[], &mut ctx).unwrap().remove(0);
        assert!(y.same_buffer(&pre));
        assert_eq!(vals(&y), vals(&fresh));
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(Tensor::zeros(DType::F32, &[3, 4]).unwrap())]);
        assert!(op.compute(&[], &mut ctx).is_err());
    }

    #[test]
    fn normal_statistics_and_determinism() {
        for dtype in [DType::F32, DType::F64] {
            let op = RandomNormal::new(vec![10_000], dtype, 1.0, 2.0, 0).unwrap();
            let v = vals(&run(&op, &[], "g"));
            let (m, s) = mean_std(&v);
            // standard error of the mean: 2 / 100 = 0.02
            assert!((m - 1.0).abs() < 0.1, "{dtype}: mean {m}");
            assert!((s - 2.0).abs() < 0.1, "{dtype}: std {s}");
            assert_eq!(v, vals(&run(&op, &[], "g")));
            assert_ne!(v, vals(&run(&op, &[], "h")));
        }
        let op = RandomNormal::new(vec![5], DType::F64, -3.0, 0.0, 0).unwrap();
        assert_eq!(vals(&run(&op, &[], "g")), [-3.0; 5]);
    }

    fn ones(n: usize) -> Tensor {
        Tensor::from_vec(&[n], vec![1.0f32; n]).unwrap()
    }

    #[test]
    fn dropout_keep_rate_scaling_and_determinism() {
        let op = Dropout::new(0.3, 0).unwrap();
        let x = ones(10_000);
        let y = run(&op, std::slice::from_ref(&x), "d");
        let scale = (1.0 / 0.7f64) as f32;
        let v = y.to_array::<f32>().unwrap();
        assert!(v.iter().all(|&e| e == 0.0 || e == scale));
        let kept = v.iter().filter(|&&e| e != 0.0).count() as f64 / 10_000.0;
        assert!((kept - 0.7).abs() < 0.03, "keep rate {kept}");
        // The expectation is preserved: mean(y) ~ 1.
        let (m, _) = mean_std(&vals(&y));
        assert!((m - 1.0).abs() < 0.05, "mean {m}");
        assert_eq!(vals(&y), vals(&run(&op, std::slice::from_ref(&x), "d")));
        assert_ne!(vals(&y), vals(&run(&op, std::slice::from_ref(&x), "e")));
        assert_ne!(vals(&y), vals(&run(&Dropout::new(0.3, 1).unwrap(), &[x], "d")));
        // p = 0 is the identity.
        let x = Tensor::from_vec(&[3], vec![1.5f64, -2.0, 0.25]).unwrap();
        assert_eq!(
            vals(&run(&Dropout::new(0.0, 0).unwrap(), &[x], "d")),
            [1.5, -2.0, 0.25]
        );
    }

    #[test]
    fn dropout_mask_is_independent_of_the_input_layout() {
        // The same logical values as contiguous, transposed, reversed and
        // broadcast inputs give the same output.
        let op = Dropout::new(0.5, 0).unwrap();
        let base = Tensor::from_vec(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let want = vals(&run(&op, std::slice::from_ref(&base), "d"));
        assert!(want
            .iter()
            .zip(1..)
            .all(|(&y, x)| y == 0.0 || y == 2.0 * x as f64));
        let t = Tensor::from_vec(&[3, 2], vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0])
            .unwrap()
            .t(None)
            .unwrap();
        assert_eq!(vals(&run(&op, &[t], "d")), want);
        let r = Tensor::from_vec(&[2, 3], vec![6.0f64, 5.0, 4.0, 3.0, 2.0, 1.0])
            .unwrap()
            .slice(&[
                IndexSpec::range(-1, i64::MIN, -1),
                IndexSpec::range(-1, i64::MIN, -1),
            ])
            .unwrap();
        assert_eq!(vals(&run(&op, &[r], "d")), want);
        // broadcast_to([7], (2, 3)): every element is 0 or 14
        let b = Tensor::from_vec(&[1], vec![7.0f64])
            .unwrap()
            .broadcast_to(&[2, 3])
            .unwrap();
        let y = vals(&run(&op, &[b], "d"));
        assert_eq!(
            y.iter().map(|&v| v != 0.0).collect::<Vec<_>>(),
            want.iter().map(|&v| v != 0.0).collect::<Vec<_>>()
        );
        assert!(y.iter().all(|&v| v == 0.0 || v == 14.0));
        let e = Tensor::zeros(DType::F32, &[0]).unwrap();
        assert_eq!(run(&op, &[e], "d").shape(), &[0]);
    }

    #[test]
    fn attr_validation_names_the_attr() {
        let mut r = OpRegistry::empty();
        register(&mut r);
        let err = |name: &str, a: Attrs| r.make(name, &a).unwrap_err();
        assert_cause!(
            err("random_uniform", Attrs::new()),
            Attr,
            "'random_uniform'",
            "'shape'"
        );
        let e = err(
            "random_uniform",
            Attrs::new().with("shape", vec![2]).with("dtype", "i64"),
        );
        assert_cause!(e, Attr, "'dtype'", "i64");
        let e = err(
            "random_uniform",
            Attrs::new().with("shape", vec![2]).with("high", 1e300),
        );
        assert_cause!(e, Attr, "'high'", "1e300", "f32");
        assert!(r
            .make(
                "random_uniform",
                &Attrs::new()
                    .with("shape", vec![2])
                    .with("high", 1e300)
                    .with("dtype", "f64")
            )
            .is_ok());
        let e = err("random_uniform", Attrs::new().with("shape", vec![-2]));
        assert_cause!(e, Attr, "'shape'");
        let e = err(
            "random_normal",
            Attrs::new().with("shape", vec![2]).with("std", -1.0),
        );
        assert_cause!(e, Attr, "'std'", "-1");
        let e = err(
            "random_normal",
            Attrs::new().with("shape", vec![2]).with("sigma", 1.0),
        );
        assert_cause!(e, Attr, "'sigma'");
        assert_cause!(err("dropout", Attrs::new().with("p", 1.0)), Attr, "'p'", "1.0");
        assert_cause!(err("dropout", Attrs::new().with("p", -0.1)), Attr, "'p'");
        assert_cause!(err("dropout", Attrs::new().with("seed", 1.5)), Attr, "'seed'");
        let e = run_err(&Dropout::new(0.5, 0).unwrap(), &[Tensor::from_i64s(&[1, 2])]);
        assert_cause!(e, DType, "'dropout'", "i64");
        assert!(Dropout::new(0.5, 0)
            .unwrap()
            .infer(&[TypeInfo::known(DType::I32, &[2])])
            .is_err());
    }

    fn run_err(op: &dyn Op, inputs: &[Tensor]) -> Error {
        op.compute(inputs, &mut OpCtx::new("n")).unwrap_err()
    }

    #[test]
    fn inference_and_attr_round_trip() {
        let mut r = OpRegistry::empty();
        register(&mut r);
        let a = Attrs::new()
            .with("shape", vec![2, 3])
            .with("dtype", "f64")
            .with("low", -1.0)
            .with("seed", 5);
        let op = r.make("random_uniform", &a).unwrap();
        assert_eq!(op.infer(&[]).unwrap(), vec![TypeInfo::known(DType::F64, &[2, 3])]);
        assert_eq!(r.make("random_uniform", &op.attrs()).unwrap().attrs(), op.attrs());
        assert_eq!(op.attrs().f64("high").unwrap(), Some(1.0));
        let op = r
            .make("random_normal", &Attrs::new().with("shape", vec![4]))
            .unwrap();
        assert_eq!(op.infer(&[]).unwrap(), vec![TypeInfo::known(DType::F32, &[4])]);
        assert!(op.infer(&[TypeInfo::known(DType::F32, &[4])]).is_err());
        let op = r.make("dropout", &Attrs::new()).unwrap();
        assert_eq!(op.attrs(), Attrs::new().with("p", 0.5).with("seed", 0));
        let x = TypeInfo::new(DType::F32, Some(vec![-1, 3]));
        assert_eq!(op.infer(std::slice::from_ref(&x)).unwrap(), vec![x]);
        for op in [
            op,
            r.make("random_normal", &Attrs::new().with("shape", vec![1]))
                .unwrap(),
        ] {
            assert!(op.view_map().is_empty() && op.destroy_map().is_empty());
        }
    }
}
