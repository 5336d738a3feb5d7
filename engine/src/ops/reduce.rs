//! Reductions with numpy semantics: `sum`, `prod`, `mean`, `max`, `min` over the
//! attr `axes` (a list of ints, negative allowed, default every axis) with
//! `keepdims` (default false), and `argmax` over the attr `axis` (default:
//! the flattened array) with `keepdims`, giving i64.
//!
//! - `sum`, `prod`, `max` and `min` keep the input dtype; integer sums and
//!   products wrap on overflow (numpy's behaviour) instead of panicking.
//! - `mean` takes float inputs only (cast integers first).
//! - bool inputs are rejected by every reduction (cast them first).
//! - `axes: []` reduces nothing (the output is a copy, as numpy's
//!   `axis=()`); a repeated axis is an error, as in numpy.
//! - The sum of an empty reduction is 0, its product 1 and its mean NaN; `max`, `min`
//!   and `argmax` over a zero-length reduced axis are errors (numpy raises),
//!   even when the output itself is empty.
//! - NaN propagates through `max`/`min`; `argmax` returns the index of the
//!   first NaN, else of the first maximum (ties give the first index).
//! - `argmax` with an `axis` attr on a 0-d input is an error (the axis is
//!   out of range); without `axis` it returns 0.

use std::sync::Arc;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, Zip};

use crate::dtype::{DType, Element, Float, Num};
use crate::error::{op_err, Error, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::layout::resolve_axis;
use crate::tensor::Tensor;

/// Which reduction a [`Reduce`] op computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
}

impl ReduceKind {
    pub const ALL: [ReduceKind; 5] = [
        ReduceKind::Sum,
        ReduceKind::Prod,
        ReduceKind::Mean,
        ReduceKind::Max,
        ReduceKind::Min,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Prod => "prod",
            ReduceKind::Mean => "mean",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
        }
    }

    /// Reductions without an identity fail on empty reduced axes.
    fn needs_nonempty(self) -> bool {
        matches!(self, ReduceKind::Max | ReduceKind::Min)
    }
}

// ----- shared helpers ---------------------------------------------------

/// Per-axis flags: true for the axes `axes` names (all when `None`).
fn axis_flags(op: &str, attr: &str, axes: Option<&[i64]>, ndim: usize) -> Result<Vec<bool>> {
    let Some(axes) = axes else {
        return Ok(vec![true; ndim]);
    };
    let mut flags = vec![false; ndim];
    for &a in axes {
        let i = resolve_axis(a, ndim).map_err(|e| Error::Op(format!("op '{op}': attr '{attr}': {e}")))?;
        if std::mem::replace(&mut flags[i], true) {
            return op_err(format!(
                "op '{op}': attr '{attr}': axis {a} is repeated (axis {i} of {ndim} dimensions)"
            ));
        }
    }
    Ok(flags)
}

/// The shape after reducing the flagged axes.
fn reduced_shape<D: Copy>(shape: &[D], flags: &[bool], keepdims: bool, one: D) -> Vec<D> {
    shape
        .iter()
        .zip(flags)
        .filter_map(|(&d, &f)| match (f, keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(one),
            (true, false) => None,
        })
        .collect()
}

/// Fails when a flagged axis has length 0 (a reduction without identity).
fn check_nonempty(op: &str, shape: &[usize], flags: &[bool]) -> Result<()> {
    if let Some(ax) = flags.iter().zip(shape).position(|(&f, &d)| f && d == 0) {
        return op_err(format!(
            "op '{op}': zero-size reduction over axis {ax} of input shape {shape:?} has no identity"
        ));
    }
    Ok(())
}

/// Static-shape counterpart of [`check_nonempty`].
fn check_nonempty_static(op: &str, shape: &[i64], flags: &[bool], s: &TypeInfo) -> Result<()> {
    if let Some(ax) = flags.iter().zip(shape).position(|(&f, &d)| f && d == 0) {
        return op_err(format!(
            "op '{op}': zero-size reduction over axis {ax} of input shape {} has no identity",
            s.shape_string()
        ));
    }
    Ok(())
}

/// Writes `res` (the reduced array, reduced axes removed) into `out`,
/// re-inserting the reduced axes as length 1 when `keepdims`.
fn write_result<T: Element>(out: &Tensor, res: ArrayD<T>, flags: &[bool], keepdims: bool) -> Result<()> {
    let mut rv = res.view();
    if keepdims {
        for (ax, _) in flags.iter().enumerate().filter(|(_, &f)| f) {
            rv = rv.insert_axis(Axis(ax));
        }
    }
    if rv.shape() != out.shape() {
        return op_err(format!(
            "internal: reduced shape {:?} does not match the output shape {:?}",
            rv.shape(),
            out.shape()
        ));
    }
    out.write(|mut o: ArrayViewMutD<'_, T>| o.assign(&rv))
}

/// True for NaN (the only value not equal to itself), for any element type.
fn is_nan<T: PartialOrd>(x: T) -> bool {
    x.partial_cmp(&x).is_none()
}

/// Folds axis `ax` of `v` with `f` starting from `init`, walking the
/// contiguous axis lane by lane and any other axis subview by subview.
fn fold_axis_with<T: Element>(v: &ArrayViewD<'_, T>, ax: usize, init: T, f: impl Fn(T, T) -> T) -> ArrayD<T> {
    let axis = Axis(ax);
    if v.strides().get(ax).is_some_and(|s| s.unsigned_abs() == 1) {
        Zip::from(v.lanes(axis)).map_collect(|lane| lane.fold(init, |a, &b| f(a, b)))
    } else {
        v.fold_axis(axis, init, |&a, &b| f(a, b))
    }
}

/// Per-dtype pieces of the reductions: float sums use ndarray's unrolled
/// summation, integer sums wrap on overflow.
trait Reducible: Num {
    fn sum_all(v: &ArrayViewD<'_, Self>) -> Self;
    fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self>;
}

macro_rules! reducible_float {
    ($t:ty) => {
        impl Reducible for $t {
            fn sum_all(v: &ArrayViewD<'_, Self>) -> Self {
                v.sum()
            }
            fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self> {
                v.sum_axis(Axis(ax))
            }
        }
    };
}
reducible_float!(f32);
reducible_float!(f64);

/// Sums accumulate in f32 and round once, as numpy's float16 reductions.
impl Reducible for half::f16 {
    fn sum_all(v: &ArrayViewD<'_, Self>) -> Self {
        half::f16::from_f32(v.mapv(half::f16::to_f32).sum())
    }
    fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self> {
        v.mapv(half::f16::to_f32)
            .sum_axis(Axis(ax))
            .mapv(half::f16::from_f32)
    }
}

macro_rules! reducible_int {
    ($t:ty) => {
        impl Reducible for $t {
            fn sum_all(v: &ArrayViewD<'_, Self>) -> Self {
                v.fold(0, |a, &b| a.wrapping_add(b))
            }
            fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self> {
                fold_axis_with(v, ax, 0, <$t>::wrapping_add)
            }
        }
    };
}
reducible_int!(i32);
reducible_int!(i64);
reducible_int!(u8);
reducible_int!(i8);
reducible_int!(u16);
reducible_int!(i16);
reducible_int!(u32);
reducible_int!(u64);

/// Reduces the flagged axes of `v` one at a time (highest first, so lower
/// axis numbers stay valid), or all at once for a full reduction.
fn reduce_flagged<T: Element>(
    v: &ArrayViewD<'_, T>,
    flags: &[bool],
    all: impl Fn(&ArrayViewD<'_, T>) -> T,
    along: impl Fn(&ArrayViewD<'_, T>, usize) -> ArrayD<T>,
) -> ArrayD<T> {
    if flags.iter().all(|&f| f) {
        return ArrayD::from_elem(IxDyn(&[]), all(v));
    }
    let mut res: Option<ArrayD<T>> = None;
    for ax in (0..flags.len()).rev().filter(|&ax| flags[ax]) {
        let next = match &res {
            None => along(v, ax),
            Some(r) => along(&r.view(), ax),
        };
        res = Some(next);
    }
    res.unwrap_or_else(|| v.to_owned())
}

fn reduce_num<T: Reducible>(kind: ReduceKind, v: &ArrayViewD<'_, T>, flags: &[bool]) -> ArrayD<T> {
    match kind {
        ReduceKind::Max => reduce_flagged(
            v,
            flags,
            |v| v.fold(T::min_value(), |a, &b| T::maximum(a, b)),
            |v, ax| fold_axis_with(v, ax, T::min_value(), T::maximum),
        ),
        ReduceKind::Min => reduce_flagged(
            v,
            flags,
            |v| v.fold(T::max_value(), |a, &b| T::minimum(a, b)),
            |v, ax| fold_axis_with(v, ax, T::max_value(), T::minimum),
        ),
        ReduceKind::Prod => reduce_flagged(
            v,
            flags,
            |v| v.fold(T::one(), |a, &b| T::mul_w(a, b)),
            |v, ax| fold_axis_with(v, ax, T::one(), T::mul_w),
        ),
        // Mean is handled by `reduce_mean`; sum is its numerator.
        ReduceKind::Sum | ReduceKind::Mean => reduce_flagged(v, flags, T::sum_all, T::sum_along),
    }
}

fn reduce_mean<T: Reducible + Float>(v: &ArrayViewD<'_, T>, flags: &[bool]) -> ArrayD<T> {
    let count: usize = v
        .shape()
        .iter()
        .zip(flags)
        .filter(|(_, &f)| f)
        .map(|(&d, _)| d)
        .product();
    // An empty reduction gives 0 / 0 = NaN, as numpy's mean.
    let n = T::from_f64(count as f64);
    let mut s = reduce_num(ReduceKind::Sum, v, flags);
    s.mapv_inplace(|x| x / n);
    s
}

fn run_reduce<T: Reducible>(
    kind: ReduceKind,
    x: &Tensor,
    flags: &[bool],
    keepdims: bool,
    out: &Tensor,
) -> Result<()> {
    let res = x.read(|v: ArrayViewD<'_, T>| reduce_num(kind, &v, flags))?;
    write_result(out, res, flags, keepdims)
}

fn run_mean<T: Reducible + Float>(x: &Tensor, flags: &[bool], keepdims: bool, out: &Tensor) -> Result<()> {
    let res = x.read(|v: ArrayViewD<'_, T>| reduce_mean(&v, flags))?;
    write_result(out, res, flags, keepdims)
}

// ----- sum / mean / max / min -------------------------------------------

/// `sum`, `mean`, `max` or `min` over `axes` (all when `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduce {
    pub kind: ReduceKind,
    pub axes: Option<Vec<i64>>,
    pub keepdims: bool,
}

impl Reduce {
    pub fn new(kind: ReduceKind, axes: Option<Vec<i64>>, keepdims: bool) -> Reduce {
        Reduce { kind, axes, keepdims }
    }

    fn check_dtype(&self, dtype: DType) -> Result<()> {
        let name = self.kind.name();
        if dtype == DType::Bool {
            return op_err(format!(
                "op '{name}' does not take bool inputs (cast to an integer dtype first)"
            ));
        }
        if self.kind == ReduceKind::Mean && !dtype.is_float() {
            return op_err(format!(
                "op 'mean' takes float inputs, got {dtype} (insert a cast)"
            ));
        }
        Ok(())
    }

    fn flags(&self, ndim: usize) -> Result<Vec<bool>> {
        axis_flags(self.kind.name(), "axes", self.axes.as_deref(), ndim)
    }
}

impl Op for Reduce {
    fn name(&self) -> &str {
        self.kind.name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype)?;
        let shape = match &x.shape {
            None => None,
            Some(s) => {
                let flags = self.flags(s.len())?;
                if self.kind.needs_nonempty() {
                    check_nonempty_static(self.kind.name(), s, &flags, x)?;
                }
                Some(reduced_shape(s, &flags, self.keepdims, 1))
            }
        };
        Ok(vec![TypeInfo::new(x.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let dtype = x.dtype();
        self.check_dtype(dtype)?;
        if self.kind != ReduceKind::Max && self.kind != ReduceKind::Min && widen::wants_f32(inputs) {
            // numpy's float16 sums and products accumulate in f32.
            return widen::compute_in_f32(self, inputs, ctx);
        }
        let flags = self.flags(x.ndim())?;
        if self.kind.needs_nonempty() {
            check_nonempty(self.kind.name(), x.shape(), &flags)?;
        }
        let shape = reduced_shape(x.shape(), &flags, self.keepdims, 1);
        let out = ctx.output(0, dtype, &shape)?;
        let (kind, keepdims) = (self.kind, self.keepdims);
        let bad = || op_err(format!("op '{}' does not take {dtype} inputs", kind.name()));
        if kind == ReduceKind::Mean {
            crate::dispatch_float!(dtype, T => run_mean::<T>(x, &flags, keepdims, &out)?, return bad());
        } else {
            crate::dispatch_num!(dtype, T => run_reduce::<T>(kind, x, &flags, keepdims, &out)?, return bad());
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new();
        if let Some(axes) = &self.axes {
            a = a.with("axes", axes.clone());
        }
        if self.keepdims {
            a = a.with("keepdims", true);
        }
        a
    }
}

// ----- argmax -------------------------------------------------------------

/// Index of the first NaN, else of the first (or with `last`, the last)
/// maximum (or with `min`, minimum); 0 when empty.
fn argmax_of<'a, T: Element>(it: impl Iterator<Item = &'a T>, min: bool, last: bool) -> i64 {
    let mut best: Option<(usize, T)> = None;
    for (i, &x) in it.enumerate() {
        match best {
            None => best = Some((i, x)),
            Some((_, b)) if is_nan(b) => break,
            Some((_, b)) => {
                let better = match (min, last) {
                    (false, false) => x > b,
                    (false, true) => x >= b,
                    (true, false) => x < b,
                    (true, true) => x <= b,
                };
                if better || is_nan(x) {
                    best = Some((i, x));
                }
            }
        }
    }
    best.map_or(0, |(i, _)| i as i64)
}

fn argmax_kernel<T: Element>(
    v: &ArrayViewD<'_, T>,
    axis: Option<usize>,
    min: bool,
    last: bool,
) -> ArrayD<i64> {
    match axis {
        // `iter` walks the logical (C) order whatever the strides.
        None => ArrayD::from_elem(IxDyn(&[]), argmax_of(v.iter(), min, last)),
        Some(ax) => Zip::from(v.lanes(Axis(ax))).map_collect(|lane| argmax_of(lane.iter(), min, last)),
    }
}

/// `argmax` (or, with `min`, `argmin`) over `axis` (the flattened array
/// when `None`), giving i64; ties go to the first index, or the last with
/// `select_last` (ONNX's `select_last_index`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgMax {
    pub axis: Option<i64>,
    pub keepdims: bool,
    pub min: bool,
    pub select_last: bool,
}

impl ArgMax {
    fn check_dtype(&self, dtype: DType) -> Result<()> {
        if dtype == DType::Bool {
            return op_err(format!(
                "op '{}' does not take bool inputs (cast to an integer dtype first)",
                self.name()
            ));
        }
        Ok(())
    }

    /// Flags of the reduced axes and the resolved axis.
    fn flags(&self, ndim: usize) -> Result<(Vec<bool>, Option<usize>)> {
        match self.axis {
            None => Ok((vec![true; ndim], None)),
            Some(a) => {
                let flags = axis_flags(self.name(), "axis", Some(&[a]), ndim)?;
                let ax = flags.iter().position(|&f| f);
                Ok((flags, ax))
            }
        }
    }
}

impl Op for ArgMax {
    fn name(&self) -> &str {
        if self.min {
            "argmin"
        } else {
            "argmax"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype)?;
        let shape = match (&x.shape, self.axis) {
            (None, None) if !self.keepdims => Some(Vec::new()),
            (None, _) => None,
            (Some(s), _) => {
                let (flags, ax) = self.flags(s.len())?;
                let empty = match ax {
                    Some(ax) => s.get(ax) == Some(&0),
                    None => s.contains(&0),
                };
                if empty {
                    return op_err(format!(
                        "op '{0}': attempt to get {0} of an empty sequence (input shape {1})",
                        self.name(),
                        x.shape_string()
                    ));
                }
                Some(reduced_shape(s, &flags, self.keepdims, 1))
            }
        };
        Ok(vec![TypeInfo::new(DType::I64, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype())?;
        let (flags, axis) = self.flags(x.ndim())?;
        let empty = match axis {
            Some(ax) => x.shape().get(ax) == Some(&0),
            None => x.size() == 0,
        };
        if empty {
            return op_err(format!(
                "op '{0}': attempt to get {0} of an empty sequence (input shape {1:?})",
                self.name(),
                x.shape()
            ));
        }
        let shape = reduced_shape(x.shape(), &flags, self.keepdims, 1);
        let out = ctx.output(0, DType::I64, &shape)?;
        let (min, last) = (self.min, self.select_last);
        let res = crate::dispatch_num!(x.dtype(), T => x.read(|v: ArrayViewD<'_, T>| argmax_kernel(&v, axis, min, last))?,
            return op_err(format!("op '{}' does not take bool inputs", self.name())));
        write_result(&out, res, &flags, self.keepdims)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new();
        if let Some(axis) = self.axis {
            a = a.with("axis", axis);
        }
        if self.keepdims {
            a = a.with("keepdims", true);
        }
        if self.select_last {
            a = a.with("select_last", true);
        }
        a
    }
}

pub fn register(r: &mut OpRegistry) {
    for kind in ReduceKind::ALL {
        r.register(kind.name(), move |a: &Attrs| {
            a.only(kind.name(), &["axes", "keepdims"])?;
            let op = Reduce::new(kind, a.i64_list("axes")?, a.bool("keepdims")?.unwrap_or(false));
            Ok(Arc::new(op) as Arc<dyn Op>)
        });
    }
    for (name, min) in [("argmax", false), ("argmin", true)] {
        r.register(name, move |a: &Attrs| {
            a.only(name, &["axis", "keepdims", "select_last"])?;
            let op = ArgMax {
                axis: a.i64("axis")?,
                keepdims: a.bool("keepdims")?.unwrap_or(false),
                min,
                select_last: a.bool("select_last")?.unwrap_or(false),
            };
            Ok(Arc::new(op) as Arc<dyn Op>)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::IndexSpec;

    fn t<T: Element>(shape: &[usize], data: Vec<T>) -> Tensor {
        Tensor::from_vec(shape, data).unwrap()
    }

    /// `[[1, 2, 3], [4, 5, 6]]`.
    fn x23() -> Tensor {
        t(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])
    }

    /// Reverses axis 0 (numpy's `x[::-1]`).
    fn rev0(x: &Tensor) -> Tensor {
        x.slice(&[IndexSpec::range(-1, i64::MIN, -1)]).unwrap()
    }

    fn op(name: &str, attrs: Attrs) -> Arc<dyn Op> {
        OpRegistry::builtin().make(name, &attrs).unwrap()
    }

    fn run(op: &dyn Op, x: &Tensor) -> Result<Tensor> {
        Ok(op
            .compute(std::slice::from_ref(x), &mut OpCtx::new("n"))?
            .remove(0))
    }

    fn vals<T: Element>(x: &Tensor) -> (Vec<usize>, Vec<T>) {
        (
            x.shape().to_vec(),
            x.to_array::<T>().unwrap().iter().copied().collect(),
        )
    }

    fn axes(a: &[i64]) -> Attrs {
        Attrs::new().with("axes", a.to_vec())
    }

    #[test]
    fn sum_over_axes_contiguous() {
        let x = x23();
        assert_eq!(
            vals::<f64>(&run(&*op("sum", Attrs::new()), &x).unwrap()),
            (vec![], vec![21.0])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("sum", axes(&[0])), &x).unwrap()),
            (vec![3], vec![5.0, 7.0, 9.0])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("sum", axes(&[1])), &x).unwrap()),
            (vec![2], vec![6.0, 15.0])
        );
        let kd = op("sum", axes(&[-1]).with("keepdims", true));
        assert_eq!(
            vals::<f64>(&run(&*kd, &x).unwrap()),
            (vec![2, 1], vec![6.0, 15.0])
        );
        let all_kd = op("sum", Attrs::new().with("keepdims", true));
        assert_eq!(vals::<f64>(&run(&*all_kd, &x).unwrap()), (vec![1, 1], vec![21.0]));
        // axes [0, 1] is the full reduction too.
        assert_eq!(
            vals::<f64>(&run(&*op("sum", axes(&[1, 0])), &x).unwrap()),
            (vec![], vec![21.0])
        );
    }

    #[test]
    fn empty_axes_list_reduces_nothing() {
        let x = x23();
        assert_eq!(
            vals::<f64>(&run(&*op("max", axes(&[])), &x).unwrap()),
            (vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        );
        let e = t::<f64>(&[0, 2], vec![]);
        assert_eq!(
            vals::<f64>(&run(&*op("max", axes(&[])), &e).unwrap()),
            (vec![0, 2], vec![])
        );
    }

    #[test]
    fn reductions_of_transposed_input() {
        // x.T = [[1, 4], [2, 5], [3, 6]]
        let xt = x23().t(None).unwrap();
        assert_eq!(
            vals::<f64>(&run(&*op("sum", axes(&[1])), &xt).unwrap()),
            (vec![3], vec![5.0, 7.0, 9.0])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("sum", axes(&[0])), &xt).unwrap()),
            (vec![2], vec![6.0, 15.0])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("max", axes(&[0])), &xt).unwrap()),
            (vec![2], vec![3.0, 6.0])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("min", axes(&[1])), &xt).unwrap()),
            (vec![3], vec![1.0, 2.0, 3.0])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("mean", axes(&[0])), &xt).unwrap()),
            (vec![2], vec![2.0, 5.0])
        );
        // flattened C order of x.T is [1, 4, 2, 5, 3, 6]: the max is at 5.
        let am = op("argmax", Attrs::new());
        assert_eq!(vals::<i64>(&run(&*am, &xt).unwrap()), (vec![], vec![5]));
        let am0 = op("argmax", Attrs::new().with("axis", 0));
        assert_eq!(vals::<i64>(&run(&*am0, &xt).unwrap()), (vec![2], vec![2, 2]));
    }

    #[test]
    fn reductions_of_negative_stride_input() {
        // x[::-1] = [[4, 5, 6], [1, 2, 3]]
        let r = rev0(&x23());
        assert_eq!(r.strides(), &[-3, 1]);
        assert_eq!(
            vals::<f64>(&run(&*op("min", axes(&[1])), &r).unwrap()),
            (vec![2], vec![4.0, 1.0])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("sum", axes(&[1])), &r).unwrap()),
            (vec![2], vec![15.0, 6.0])
        );
        let am0 = op("argmax", Attrs::new().with("axis", 0));
        assert_eq!(vals::<i64>(&run(&*am0, &r).unwrap()), (vec![3], vec![0, 0, 0]));
        // flattened [4, 5, 6, 1, 2, 3]: the max 6 is at 2.
        assert_eq!(
            vals::<i64>(&run(&*op("argmax", Attrs::new()), &r).unwrap()),
            (vec![], vec![2])
        );
        // Reversed 1-D integers: [3, 1, 2][::-1] = [2, 1, 3].
        let v = rev0(&t(&[3], vec![3i64, 1, 2]));
        let am = op("argmax", Attrs::new().with("axis", -1).with("keepdims", true));
        assert_eq!(vals::<i64>(&run(&*am, &v).unwrap()), (vec![1], vec![2]));
        assert_eq!(
            vals::<i64>(&run(&*op("max", Attrs::new()), &v).unwrap()),
            (vec![], vec![3])
        );
    }

    #[test]
    fn reductions_of_broadcast_input() {
        let b = t(&[3], vec![1.0f32, 2.0, 3.0]).broadcast_to(&[4, 3]).unwrap();
        assert_eq!(b.strides(), &[0, 1]);
        assert_eq!(
            vals::<f32>(&run(&*op("sum", axes(&[0])), &b).unwrap()),
            (vec![3], vec![4.0, 8.0, 12.0])
        );
        assert_eq!(
            vals::<f32>(&run(&*op("mean", Attrs::new()), &b).unwrap()),
            (vec![], vec![2.0])
        );
        assert_eq!(
            vals::<f32>(&run(&*op("max", axes(&[1])), &b).unwrap()),
            (vec![4], vec![3.0; 4])
        );
        let am = op("argmax", Attrs::new().with("axis", 0));
        assert_eq!(vals::<i64>(&run(&*am, &b).unwrap()), (vec![3], vec![0, 0, 0]));
        // A column broadcast along the contiguous-looking axis 1.
        let c = t(&[2, 1], vec![5i32, -7]).broadcast_to(&[2, 3]).unwrap();
        assert_eq!(
            vals::<i32>(&run(&*op("sum", axes(&[1])), &c).unwrap()),
            (vec![2], vec![15, -21])
        );
        assert_eq!(
            vals::<i32>(&run(&*op("min", Attrs::new()), &c).unwrap()),
            (vec![], vec![-7])
        );
    }

    #[test]
    fn multi_axis_reduction_of_3d() {
        // np.arange(24).reshape(2, 3, 4)
        let x = t(&[2, 3, 4], (0..24).map(|i| i as f32).collect());
        let s = op("sum", axes(&[0, 2]).with("keepdims", true));
        assert_eq!(
            vals::<f32>(&run(&*s, &x).unwrap()),
            (vec![1, 3, 1], vec![60.0, 92.0, 124.0])
        );
        let m = op("mean", axes(&[2, -3]));
        assert_eq!(
            vals::<f32>(&run(&*m, &x).unwrap()),
            (vec![3], vec![7.5, 11.5, 15.5])
        );
        let mx = op("max", axes(&[1]));
        assert_eq!(
            vals::<f32>(&run(&*mx, &x).unwrap()),
            (vec![2, 4], vec![8.0, 9.0, 10.0, 11.0, 20.0, 21.0, 22.0, 23.0])
        );
        // Same on the fully transposed (4, 3, 2) view: axes 0 and 2 swap roles.
        let xt = x.t(None).unwrap();
        let s = op("sum", axes(&[0, 2]));
        assert_eq!(
            vals::<f32>(&run(&*s, &xt).unwrap()),
            (vec![3], vec![60.0, 92.0, 124.0])
        );
        let am = op("argmax", Attrs::new().with("axis", 1));
        // argmax over j of x.T[k, j, i] = x[i, j, k] is always j = 2.
        assert_eq!(vals::<i64>(&run(&*am, &xt).unwrap()), (vec![4, 2], vec![2; 8]));
    }

    #[test]
    fn empty_inputs() {
        let e = t::<f64>(&[0, 3], vec![]);
        assert_eq!(
            vals::<f64>(&run(&*op("sum", axes(&[0])), &e).unwrap()),
            (vec![3], vec![0.0; 3])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("sum", Attrs::new()), &e).unwrap()),
            (vec![], vec![0.0])
        );
        let (shape, m) = vals::<f64>(&run(&*op("mean", axes(&[0])), &e).unwrap());
        assert_eq!(shape, vec![3]);
        assert!(m.iter().all(|v| v.is_nan()));
        assert!(vals::<f64>(&run(&*op("mean", Attrs::new()), &e).unwrap()).1[0].is_nan());
        // Reducing the non-empty axis of an empty array is fine: empty output.
        assert_eq!(
            vals::<f64>(&run(&*op("max", axes(&[1])), &e).unwrap()),
            (vec![0], vec![])
        );
        let am1 = op("argmax", Attrs::new().with("axis", 1));
        assert_eq!(vals::<i64>(&run(&*am1, &e).unwrap()), (vec![0], vec![]));
        // Reducing the empty axis has no identity.
        let err = run(&*op("max", axes(&[0])), &e).unwrap_err().to_string();
        assert!(
            err.contains("op 'max'") && err.contains("axis 0") && err.contains("[0, 3]"),
            "{err}"
        );
        assert!(run(&*op("min", Attrs::new()), &e).is_err());
        let err = run(&*op("argmax", Attrs::new()), &e).unwrap_err().to_string();
        assert!(err.contains("empty sequence"), "{err}");
        assert!(run(&*op("argmax", Attrs::new().with("axis", 0)), &e).is_err());
        // Integer sum of nothing.
        let ei = t::<i32>(&[2, 0], vec![]);
        let s = op("sum", axes(&[1]).with("keepdims", true));
        assert_eq!(vals::<i32>(&run(&*s, &ei).unwrap()), (vec![2, 1], vec![0, 0]));
    }

    #[test]
    fn nan_propagates_and_argmax_finds_first_nan() {
        let x = t(&[4], vec![1.0f64, f64::NAN, 3.0, f64::NAN]);
        assert!(vals::<f64>(&run(&*op("max", Attrs::new()), &x).unwrap()).1[0].is_nan());
        assert!(vals::<f64>(&run(&*op("min", Attrs::new()), &x).unwrap()).1[0].is_nan());
        assert_eq!(
            vals::<i64>(&run(&*op("argmax", Attrs::new()), &x).unwrap()).1,
            vec![1]
        );
        // NaN first: argmax is 0 even though later values are larger.
        let y = t(&[2, 2], vec![f32::NAN, 5.0, 1.0, 2.0]);
        let am = op("argmax", Attrs::new().with("axis", 1));
        assert_eq!(vals::<i64>(&run(&*am, &y).unwrap()).1, vec![0, 1]);
        let mx = vals::<f32>(&run(&*op("max", axes(&[1])), &y).unwrap()).1;
        assert!(mx[0].is_nan());
        assert_eq!(mx[1], 2.0);
        // Infinities are ordinary values.
        let z = t(
            &[3],
            vec![f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY],
        );
        assert_eq!(
            vals::<f64>(&run(&*op("max", Attrs::new()), &z).unwrap()).1,
            vec![f64::NEG_INFINITY]
        );
    }

    #[test]
    fn argmax_ties_give_first_index() {
        let x = t(&[2, 3], vec![1i32, 3, 3, 7, 7, 0]);
        let am = op("argmax", Attrs::new().with("axis", -1));
        assert_eq!(vals::<i64>(&run(&*am, &x).unwrap()), (vec![2], vec![1, 0]));
        let kd = op("argmax", Attrs::new().with("keepdims", true));
        assert_eq!(vals::<i64>(&run(&*kd, &x).unwrap()), (vec![1, 1], vec![3]));
        // 0-d input without an axis.
        let s = t(&[], vec![4.0f64]);
        assert_eq!(
            vals::<i64>(&run(&*op("argmax", Attrs::new()), &s).unwrap()),
            (vec![], vec![0])
        );
    }

    #[test]
    fn integer_sums_wrap_and_keep_dtype() {
        let x = t(&[2], vec![i32::MAX, 1]);
        let out = run(&*op("sum", Attrs::new()), &x).unwrap();
        assert_eq!(out.dtype(), DType::I32);
        assert_eq!(vals::<i32>(&out).1, vec![i32::MIN]);
        let y = t(&[2, 2], vec![i64::MAX, 1, 2, 3]);
        assert_eq!(
            vals::<i64>(&run(&*op("sum", axes(&[1])), &y).unwrap()).1,
            vec![i64::MIN, 5]
        );
        assert_eq!(
            vals::<i64>(&run(&*op("sum", axes(&[0])), &y).unwrap()).1,
            vec![i64::MIN + 1, 4]
        );
        assert_eq!(
            vals::<i64>(&run(&*op("max", Attrs::new()), &y).unwrap()).1,
            vec![i64::MAX]
        );
        assert_eq!(
            vals::<i64>(&run(&*op("min", axes(&[0])), &y).unwrap()).1,
            vec![2, 1]
        );
    }

    #[test]
    fn output_is_fully_overwritten_in_a_preallocated_strided_buffer() {
        // A reversed (negative-stride) garbage view as the [3] output.
        let garbage = rev0(&t(&[3], vec![99.0f64; 3]));
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(garbage.clone())]);
        let out = op("sum", axes(&[0]))
            .compute(&[x23()], &mut ctx)
            .unwrap()
            .remove(0);
        assert!(out.same_buffer(&garbage));
        assert_eq!(vals::<f64>(&out).1, vec![5.0, 7.0, 9.0]);
        // A transposed garbage buffer for a keepdims output of shape (2, 1).
        let g2 = t(&[1, 2], vec![-1.0f64; 2]).t(None).unwrap();
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(g2)]);
        let kd = op("max", axes(&[1]).with("keepdims", true));
        let out = kd.compute(&[x23()], &mut ctx).unwrap().remove(0);
        assert_eq!(vals::<f64>(&out), (vec![2, 1], vec![3.0, 6.0]));
        // An argmax output.
        let g3 = t(&[3], vec![-5i64; 3]);
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(g3)]);
        let am = op("argmax", Attrs::new().with("axis", 0));
        let out = am.compute(&[rev0(&x23())], &mut ctx).unwrap().remove(0);
        assert_eq!(vals::<i64>(&out).1, vec![0, 0, 0]);
    }

    #[test]
    fn bad_axes_and_dtypes_are_errors() {
        let x = x23();
        let err = run(&*op("sum", axes(&[2])), &x).unwrap_err().to_string();
        assert!(
            err.contains("'axes'") && err.contains("axis 2") && err.contains("2 dimensions"),
            "{err}"
        );
        assert!(run(&*op("max", axes(&[-3])), &x).is_err());
        let err = run(&*op("sum", axes(&[0, -2])), &x).unwrap_err().to_string();
        assert!(err.contains("repeated"), "{err}");
        let err = run(&*op("argmax", Attrs::new().with("axis", 5)), &x)
            .unwrap_err()
            .to_string();
        assert!(err.contains("'axis'") && err.contains("axis 5"), "{err}");
        let err = run(
            &*op("argmax", Attrs::new().with("axis", 0)),
            &t(&[], vec![1.0f64]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("0 dimensions"), "{err}");
        let xi = t(&[2], vec![1i32, 2]);
        let err = run(&*op("mean", Attrs::new()), &xi).unwrap_err().to_string();
        assert!(err.contains("op 'mean'") && err.contains("i32"), "{err}");
        let xb = t(&[2], vec![true, false]);
        for name in ["sum", "mean", "max", "min", "argmax"] {
            let err = run(&*op(name, Attrs::new()), &xb).unwrap_err().to_string();
            assert!(err.contains("bool"), "{name}: {err}");
        }
        assert!(run(&*op("sum", Attrs::new()), &x).is_ok());
        assert!(op("sum", Attrs::new())
            .compute(&[], &mut OpCtx::new("n"))
            .is_err());
    }

    #[test]
    fn registry_validates_attrs_and_round_trips_them() {
        let reg = OpRegistry::builtin();
        let err = reg
            .make("sum", &Attrs::new().with("axis", 0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no attr 'axis'"), "{err}");
        let err = reg
            .make("argmax", &Attrs::new().with("axes", vec![0]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no attr 'axes'"), "{err}");
        assert!(reg.make("max", &Attrs::new().with("keepdims", 1)).is_err());
        assert!(reg.make("min", &Attrs::new().with("axes", 1)).is_err());
        for (name, attrs) in [
            ("sum", axes(&[0, -1]).with("keepdims", true)),
            ("mean", Attrs::new()),
            ("argmax", Attrs::new().with("axis", -1).with("keepdims", true)),
        ] {
            let o = reg.make(name, &attrs).unwrap();
            assert_eq!(o.name(), name);
            assert_eq!(o.attrs(), attrs);
            assert_eq!(reg.make(name, &o.attrs()).unwrap().attrs(), attrs);
        }
    }

    #[test]
    fn infer_shapes() {
        let ti = |s: Vec<i64>| TypeInfo::new(DType::F32, Some(s));
        let sum1 = op("sum", axes(&[1]));
        assert_eq!(sum1.infer(&[ti(vec![2, -1, 4])]).unwrap(), vec![ti(vec![2, 4])]);
        let kd = op("mean", axes(&[1]).with("keepdims", true));
        assert_eq!(kd.infer(&[ti(vec![2, -1, 4])]).unwrap(), vec![ti(vec![2, 1, 4])]);
        assert_eq!(
            sum1.infer(&[TypeInfo::unknown(DType::F32)]).unwrap()[0].shape,
            None
        );
        assert!(sum1.infer(&[ti(vec![3])]).is_err());
        assert!(op("max", Attrs::new()).infer(&[ti(vec![0, 2])]).is_err());
        assert!(op("max", axes(&[1])).infer(&[ti(vec![0, 2])]).is_ok());
        assert!(op("mean", Attrs::new())
            .infer(&[TypeInfo::known(DType::I64, &[2])])
            .is_err());
        assert!(op("sum", Attrs::new())
            .infer(&[TypeInfo::known(DType::Bool, &[2])])
            .is_err());
        let am = op("argmax", Attrs::new());
        assert_eq!(
            am.infer(&[TypeInfo::unknown(DType::F32)]).unwrap(),
            vec![TypeInfo::known(DType::I64, &[])]
        );
        let am1 = op("argmax", Attrs::new().with("axis", 0).with("keepdims", true));
        assert_eq!(
            am1.infer(&[ti(vec![-1, 5])]).unwrap(),
            vec![TypeInfo::new(DType::I64, Some(vec![1, 5]))]
        );
        assert!(am1.infer(&[ti(vec![0, 5])]).is_err());
        assert!(am1.infer(&[ti(vec![])]).is_err());
    }

    #[test]
    fn prod_over_axes_keepdims_empty_axes_wraps_and_nan() {
        let a = |axes: Vec<i64>, keep: bool| Attrs::new().with("axes", axes).with("keepdims", keep);
        let p = op("prod", a(vec![1], false));
        assert_eq!(
            vals::<f64>(&run(&*p, &x23()).unwrap()),
            (vec![2], vec![6.0, 120.0])
        );
        let p = op("prod", a(vec![-2], true));
        assert_eq!(
            vals::<f64>(&run(&*p, &x23()).unwrap()),
            (vec![1, 3], vec![4.0, 10.0, 18.0])
        );
        let all = op("prod", Attrs::new());
        assert_eq!(
            vals::<f64>(&run(&*all, &rev0(&x23())).unwrap()),
            (vec![], vec![720.0])
        );
        // The product of nothing is 1, even over a zero-length axis.
        let p = op("prod", a(vec![1], true));
        let empty = t::<f32>(&[2, 0, 3], vec![]);
        assert_eq!(
            vals::<f32>(&run(&*p, &empty).unwrap()),
            (vec![2, 1, 3], vec![1.0; 6])
        );
        assert_eq!(
            vals::<f64>(&run(&*op("prod", a(vec![], false)), &x23()).unwrap()).1,
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        // Integers wrap: 2^32 · 2^32 = 2^64 ≡ 0 (mod 2^64).
        let big = t(&[2], vec![1i64 << 32, 1i64 << 32]);
        assert_eq!(vals::<i64>(&run(&*all, &big).unwrap()).1, [0]);
        let n = vals::<f32>(&run(&*all, &t(&[3], vec![0.0f32, f32::NAN, 2.0])).unwrap()).1;
        assert!(n[0].is_nan());
        assert!(run(&*all, &t(&[1], vec![true])).is_err());
    }
}
