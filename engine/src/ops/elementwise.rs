//! Elementwise ops with numpy broadcasting: binary arithmetic, comparisons,
//! unary math, `where` and `cast`, and the in-place twins (`add_inplace` is
//! `x += y`: it destroys input 0 and input 1 broadcasts into its shape).

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Zip};

use crate::dtype::{DType, Element, Float, Num};
use crate::error::{dtype_err, refuse_dtype, shape_err, Result};
use crate::kernels::pointwise::Pointwise;
use crate::kernels::pointwise::{binary_inplace, relu, sign, unary_float, BinaryTarget, Repeat, UnaryTarget};
pub use crate::kernels::pointwise::{BinKind, UnKind};
use crate::kernels::pow::{PowLoop, SmallPow};
use crate::kernels::vmath::{par_map, par_map_inplace, VMath};
use crate::kernels::wide_loop;
use crate::kernels::MathFn;
use crate::ops::typeinfo::{broadcast_concrete, broadcast_shapes};
use crate::ops::{check_arity, Arity, Attrs, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use crate::parallel::PASS_CHUNK;
use crate::tensor::small::{self, RoundMode};
use crate::tensor::Tensor;

/// Comparisons, giving bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpKind {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpKind {
    pub const ALL: [CmpKind; 6] = [
        CmpKind::Eq,
        CmpKind::Ne,
        CmpKind::Lt,
        CmpKind::Le,
        CmpKind::Gt,
        CmpKind::Ge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CmpKind::Eq => "eq",
            CmpKind::Ne => "ne",
            CmpKind::Lt => "lt",
            CmpKind::Le => "le",
            CmpKind::Gt => "gt",
            CmpKind::Ge => "ge",
        }
    }
}

fn same_dtype(op: &str, a: &TypeInfo, b: &TypeInfo) -> Result<()> {
    if a.dtype != b.dtype {
        return dtype_err(format!(
            "op '{op}' needs inputs of one dtype, got {} and {} (insert a cast)",
            a.dtype, b.dtype
        ));
    }
    Ok(())
}

/// Broadcasts `x` into `shape` (a view, never a copy).
fn bview(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    x.broadcast_to(shape)
}

/// Rows shorter than this make a view of an output's shape worth copying
/// to C order before an elementwise loop ([`in_c_order`]).
const SHORT_ROW: usize = 32;

/// The C-order copy of `t` when `out` is contiguous and `t` is a view of
/// `out`'s shape with strided or short rows, so that the kernel walks
/// plain slices; `None` leaves `t` as it is. ndarray's zip steps a
/// dynamic-rank index every row, which costs more than the tiled copy when
/// rows are short (a [2, 2, 64, 7] view of a transposed attention key,
/// times a scalar: 14-19 µs walked, 4-5 µs copied first). A view of long
/// contiguous rows is walked as it is.
fn in_c_order(t: &Tensor, out: &Tensor) -> Result<Option<Tensor>> {
    if t.is_contiguous() || t.size() == 0 || t.shape() != out.shape() || !out.is_contiguous() {
        return Ok(None);
    }
    let short =
        t.strides().last().is_some_and(|&s| s != 1) || t.shape().last().is_some_and(|&n| n < SHORT_ROW);
    short.then(|| t.deep_copy()).transpose()
}

/// `out[i] = f(a[i], b[i])` with both inputs broadcast to `out`'s shape.
pub(crate) fn zip2<A: Element, B: Element, O: Element>(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    f: impl Fn(A, B) -> O,
) -> Result<()> {
    if let Some((o, order)) = out.in_memory_order() {
        if let (Some(ap), Some(bp)) = (walked(a, &o, &order), walked(b, &o, &order)) {
            return zip2(&ap, &bp, &o, f);
        }
    }
    let (ac, bc) = (in_c_order(a, out)?, in_c_order(b, out)?);
    let (a, b) = (ac.as_ref().unwrap_or(a), bc.as_ref().unwrap_or(b));
    if contiguous_alike(&[a, b], out) {
        a.read_contiguous(|x: &[A]| {
            b.read_contiguous(|y: &[B]| out.write_contiguous(|o: &mut [O]| wide_loop::zip(x, y, o, &f)))
        })???;
        return Ok(());
    }
    // One operand whole, the other repeated over it: plain slice loops.
    if out.size() > 0 && out.is_contiguous() && a.is_contiguous() && b.is_contiguous() {
        let (sa, sb) = (a.shape() == out.shape(), b.shape() == out.shape());
        if let (true, Some(r)) = (sa, Repeat::of(b.shape(), out.shape())) {
            return a.read_contiguous(|x: &[A]| {
                b.read_contiguous(|y: &[B]| out.write_contiguous(|o: &mut [O]| r.zip(x, y, o, &f)))
            })??;
        }
        if let (true, Some(r)) = (sb, Repeat::of(a.shape(), out.shape())) {
            return b.read_contiguous(|y: &[B]| {
                a.read_contiguous(|x: &[A]| {
                    out.write_contiguous(|o: &mut [O]| r.zip(y, x, o, |y, x| f(x, y)))
                })
            })??;
        }
    }
    let (a, b) = (bview(a, out.shape())?, bview(b, out.shape())?);
    a.read(|av: ArrayViewD<'_, A>| {
        b.read(|bv: ArrayViewD<'_, B>| {
            out.write(|mut ov: ArrayViewMutD<'_, O>| {
                Zip::from(&mut ov)
                    .and(&av)
                    .and(&bv)
                    .for_each(|o, &x, &y| *o = f(x, y))
            })
        })
    })???;
    Ok(())
}

/// `x[i] = f(x[i], y[i])` with `y` broadcast into `x`. An operand that shares
/// `x`'s buffer is copied first, as numpy does for `x += x.T`.
pub(crate) fn zip_inplace<T: Element>(x: &Tensor, y: &Tensor, f: impl Fn(T, T) -> T) -> Result<()> {
    let y = if y.same_buffer(x) {
        y.deep_copy()?
    } else {
        y.clone()
    };
    if let Some((xp, yp)) = in_memory_order(x, &y) {
        return zip_inplace(&xp, &yp, f);
    }
    if contiguous_alike(&[&y], x) {
        return y.read_contiguous(|ys: &[T]| {
            x.write_contiguous(|xs: &mut [T]| wide_loop::zip_inplace(xs, ys, &f))
        })?;
    }
    let plain = x.size() > 0 && x.is_contiguous() && y.is_contiguous();
    if let (true, Some(r)) = (plain, Repeat::of(y.shape(), x.shape())) {
        return y
            .read_contiguous(|ys: &[T]| x.write_contiguous(|xs: &mut [T]| r.zip_inplace(xs, 0, ys, &f)))?;
    }
    let y = bview(&y, x.shape()).map_err(|_| {
        crate::error::Error::Shape(format!(
            "input 1 of shape {:?} does not broadcast into the destroyed input's shape {:?}",
            y.shape(),
            x.shape()
        ))
    })?;
    y.read(|yv: ArrayViewD<'_, T>| {
        x.write(|mut xv: ArrayViewMutD<'_, T>| Zip::from(&mut xv).and(&yv).for_each(|a, &b| *a = f(*a, b)))
    })??;
    Ok(())
}

/// `x` and `y` with their axes reordered alike so that `x` is contiguous,
/// when `x` is a permuted view of a contiguous buffer (NHWC data seen as
/// NCHW) and `y`, padded with leading 1s, is contiguous in that order too
/// (the same permutation of its data, or a per-channel scale that becomes
/// a row) and broadcasts into `x` as runs. An elementwise op is the same
/// on any order of the elements, and the reordered operands go through the
/// slice loops instead of ndarray's walk of `x` against its strides. An
/// operand that does not broadcast stays as it is, so the error names the
/// caller's shapes.
fn in_memory_order(x: &Tensor, y: &Tensor) -> Option<(Tensor, Tensor)> {
    if x.size() == 0 || y.ndim() > x.ndim() {
        return None;
    }
    let (xp, order) = x.in_memory_order()?;
    let yp = walked(y, &xp, &order)?;
    Some((xp, yp))
}

/// `out[i] = f(a[i])`; `out` may be `a` itself (in place).
pub(crate) fn map1<T: Element>(a: &Tensor, out: &Tensor, f: impl Fn(T) -> T + Sync) -> Result<()> {
    if out.same_buffer(a) {
        if out.layout() == a.layout() {
            if out.is_contiguous() {
                return out.write_contiguous(|v: &mut [T]| map_slice_inplace(v, &f));
            }
            // A channels-last value: its elements in memory order.
            if let Some((o, _)) = out.in_memory_order() {
                return o.write_contiguous(|v: &mut [T]| map_slice_inplace(v, &f));
            }
            return out.write(|mut v: ArrayViewMutD<'_, T>| v.mapv_inplace(f));
        }
        return map1(&a.deep_copy()?, out, f);
    }
    if let Some((o, order)) = memory_alike(&[a], out) {
        return map1(&a.permute(&order)?, &o, f);
    }
    let copy = in_c_order(a, out)?;
    let a = copy.as_ref().unwrap_or(a);
    if contiguous_alike(&[a], out) {
        a.read_contiguous(|x: &[T]| out.write_contiguous(|o: &mut [T]| map_slice(x, o, &f)))??;
        return Ok(());
    }
    a.read(|av: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| Zip::from(&mut ov).and(&av).for_each(|o, &x| *o = f(x)))
    })??;
    Ok(())
}

/// `dst[i] = f(src[i])`, in chunks across the rayon pool when the slices
/// are long (see [`crate::parallel::split`]), as [`par_map`] does for the
/// [`MathFn`] kernels.
fn map_slice<T: Element>(src: &[T], dst: &mut [T], f: &(impl Fn(T) -> T + Sync)) {
    let each = |(d, s): (&mut [T], &[T])| wide_loop::map(s, d, f);
    if crate::parallel::split(dst.len()) {
        use rayon::prelude::*;
        dst.par_chunks_mut(PASS_CHUNK)
            .zip(src.par_chunks(PASS_CHUNK))
            .for_each(each);
    } else {
        each((dst, src));
    }
}

/// `buf[i] = f(buf[i])`, split as [`map_slice`] is.
fn map_slice_inplace<T: Element>(buf: &mut [T], f: &(impl Fn(T) -> T + Sync)) {
    let each = |b: &mut [T]| wide_loop::map_inplace(b, f);
    if crate::parallel::split(buf.len()) {
        use rayon::prelude::*;
        buf.par_chunks_mut(PASS_CHUNK).for_each(each);
    } else {
        each(buf);
    }
}

/// `out` with its axes in memory order and that order, when `out` is laid
/// out without gaps but not in C order (a channels-last value) and every
/// input has its shape and strides: reordered alike, all are contiguous
/// and the kernels walk plain slices.
fn memory_alike(inputs: &[&Tensor], out: &Tensor) -> Option<(Tensor, Vec<usize>)> {
    let (o, order) = out.in_memory_order()?;
    let alike = inputs
        .iter()
        .all(|t| t.shape() == out.shape() && t.strides() == out.strides());
    alike.then_some((o, order))
}

/// Operand `t` of a value laid out without gaps but not in C order (an
/// output, or an in-place op's destroyed input), reordered as the value is
/// walked in memory order (`o`, axes `order`): when, so reordered, it is
/// contiguous and either of `o`'s shape or repeated over it as runs (a
/// scalar, a per-channel scale), so that the slice loops run. A scalar
/// times a transposed attention key (a `[2, 2, 64, 7]` view whose output
/// keeps its layout) was walked by ndarray's dynamic-rank zip instead:
/// 12 µs for 1,792 elements.
fn walked(t: &Tensor, o: &Tensor, order: &[usize]) -> Option<Tensor> {
    let p = t.padded_permute(o.ndim(), order)?;
    // `Repeat::of` takes `o`'s own shape too (runs of one element).
    (p.is_contiguous() && Repeat::of(p.shape(), o.shape()).is_some()).then_some(p)
}

/// Whether every input has `out`'s shape and all are C-contiguous, so the
/// kernel can walk plain slices.
fn contiguous_alike(inputs: &[&Tensor], out: &Tensor) -> bool {
    out.is_contiguous()
        && inputs
            .iter()
            .all(|t| t.shape() == out.shape() && t.is_contiguous())
}

// ----- binary -------------------------------------------------------------

/// `add`, `sub`, ... and their `_inplace` twins.
#[derive(Clone, Debug)]
pub struct Binary {
    pub kind: BinKind,
    pub inplace: bool,
    name: String,
}

impl Binary {
    pub fn new(kind: BinKind, inplace: bool) -> Binary {
        let name = if inplace {
            format!("{}_inplace", kind.name())
        } else {
            kind.name().to_string()
        };
        Binary { kind, inplace, name }
    }
}

fn run_binary<T: Num>(kind: BinKind, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    match kind {
        BinKind::Add => zip2(a, b, out, T::add_w),
        BinKind::Sub => zip2(a, b, out, T::sub_w),
        BinKind::Mul => zip2(a, b, out, T::mul_w),
        BinKind::Div => {
            if T::DTYPE.is_float() {
                zip2(a, b, out, |x: T, y: T| x / y)
            } else {
                zip2(a, b, out, |x: T, y: T| x.to_f64() / y.to_f64())
            }
        }
        BinKind::Pow => match one_element::<T>(b).and_then(SmallPow::of) {
            Some(p) if a.shape() == out.shape() => p.dispatch::<T, _>(MapPow { a, out }),
            _ => zip2(a, b, out, T::pow),
        },
        BinKind::Maximum => zip2(a, b, out, T::maximum),
        BinKind::Minimum => zip2(a, b, out, T::minimum),
    }
}

/// `out = a ** e` for one exponent `e` with a [`SmallPow`] form.
struct MapPow<'a> {
    a: &'a Tensor,
    out: &'a Tensor,
}

impl<T: Element> PowLoop<T> for MapPow<'_> {
    type Out = Result<()>;
    fn run(self, pow: impl Fn(T) -> T + Copy + Sync) -> Result<()> {
        map1(self.a, self.out, pow)
    }
}

/// `x = f(x, y)` on tensors, `y` broadcast into `x`.
struct InPlace<'a> {
    x: &'a Tensor,
    y: &'a Tensor,
}

impl<T: Element> BinaryTarget<T> for InPlace<'_> {
    type Out = Result<()>;
    fn zip(self, f: impl Fn(T, T) -> T) -> Result<()> {
        zip_inplace(self.x, self.y, f)
    }
    fn scalar(&self) -> Option<T> {
        one_element(self.y)
    }
}

/// `t`'s value when it has one element (a broadcast exponent, say).
fn one_element<T: Element>(t: &Tensor) -> Option<T> {
    (t.size() == 1 && t.dtype() == T::DTYPE)
        .then(|| t.at(&vec![0; t.ndim()]).ok().map(T::from_scalar))
        .flatten()
}

fn run_binary_inplace<T: Num>(kind: BinKind, x: &Tensor, y: &Tensor) -> Result<()> {
    binary_inplace::<T, _>(kind, InPlace { x, y })?
}

impl Op for Binary {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (a, b) = (&inputs[0], &inputs[1]);
        same_dtype(&self.name, a, b)?;
        if !a.dtype.is_computable() {
            return refuse_dtype(&self.name, a.dtype);
        }
        if self.inplace {
            if !a.dtype.is_float() && self.kind == BinKind::Div {
                return dtype_err(format!("op '{}' needs float inputs", self.name));
            }
            // The output is input 0; input 1 must broadcast into it.
            let s = broadcast_shapes(&a.shape, &b.shape)?;
            if let (Some(s), Some(sa)) = (&s, &a.shape) {
                if s.len() != sa.len() || s.iter().zip(sa).any(|(&x, &y)| x >= 0 && y >= 0 && x != y) {
                    return shape_err(format!(
                        "op '{}': input 1 {} does not broadcast into input 0 {}",
                        self.name,
                        b.shape_string(),
                        a.shape_string()
                    ));
                }
            }
            return Ok(vec![a.clone()]);
        }
        Ok(vec![TypeInfo::new(
            self.kind.out_dtype(a.dtype),
            broadcast_shapes(&a.shape, &b.shape)?,
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        if a.dtype() != b.dtype() {
            return dtype_err(format!("inputs are {} and {}", a.dtype(), b.dtype()));
        }
        let kind = self.kind;
        if self.inplace {
            crate::dispatch_num!(a.dtype(), T => run_binary_inplace::<T>(kind, a, b)?,
                return refuse_dtype(&self.name, a.dtype()));
            return Ok(vec![a.clone()]);
        }
        let shape = broadcast_concrete(a.shape(), b.shape())?;
        // Laid out as the operand of the output's shape (`a` first), as an
        // in-place twin writing into that operand would leave it: the ops
        // after read one layout either way.
        let out = match [a, b].into_iter().find(|t| t.shape() == shape.as_slice()) {
            Some(like) => ctx.output_like(0, kind.out_dtype(a.dtype()), like)?,
            None => ctx.output(0, kind.out_dtype(a.dtype()), &shape)?,
        };
        crate::dispatch_num!(a.dtype(), T => run_binary::<T>(kind, a, b, &out)?,
            return refuse_dtype(&self.name, a.dtype()));
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    fn tolerates_same_input(&self) -> bool {
        self.inplace
    }
    fn pointwise(&self) -> Option<Pointwise> {
        self.inplace.then_some(Pointwise::Binary(self.kind))
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        let op: Arc<dyn Op> = Arc::new(Binary::new(self.kind, true));
        let mut v = vec![InplaceVariant {
            op: op.clone(),
            inputs: vec![0, 1],
        }];
        if self.kind.commutative() {
            v.push(InplaceVariant {
                op,
                inputs: vec![1, 0],
            });
        }
        v
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Binary::new(self.kind, false)) as Arc<dyn Op>)
    }
}

// ----- comparisons --------------------------------------------------------

#[derive(Clone, Debug)]
pub struct Compare {
    pub kind: CmpKind,
}

fn run_compare<T: Element>(kind: CmpKind, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    match kind {
        CmpKind::Eq => zip2(a, b, out, |x: T, y: T| x == y),
        CmpKind::Ne => zip2(a, b, out, |x: T, y: T| x != y),
        CmpKind::Lt => zip2(a, b, out, |x: T, y: T| x < y),
        CmpKind::Le => zip2(a, b, out, |x: T, y: T| x <= y),
        CmpKind::Gt => zip2(a, b, out, |x: T, y: T| x > y),
        CmpKind::Ge => zip2(a, b, out, |x: T, y: T| x >= y),
    }
}

impl Op for Compare {
    fn name(&self) -> &str {
        self.kind.name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        same_dtype(self.name(), &inputs[0], &inputs[1])?;
        Ok(vec![TypeInfo::new(
            DType::Bool,
            broadcast_shapes(&inputs[0].shape, &inputs[1].shape)?,
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let shape = broadcast_concrete(a.shape(), b.shape())?;
        let out = ctx.output(0, DType::Bool, &shape)?;
        crate::dispatch_all!(a.dtype(), T => run_compare::<T>(self.kind, a, b, &out)?);
        Ok(vec![out])
    }
}

// ----- where ----------------------------------------------------------------

/// `where(cond, a, b)`: `a` where `cond` is true, else `b`, broadcast.
#[derive(Clone, Debug)]
pub struct Where;

impl Op for Where {
    fn name(&self) -> &str {
        "where"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if inputs[0].dtype != DType::Bool {
            return dtype_err(format!(
                "op 'where': input 0 must be bool, got {}",
                inputs[0].dtype
            ));
        }
        same_dtype("where", &inputs[1], &inputs[2])?;
        let s = broadcast_shapes(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![TypeInfo::new(
            inputs[1].dtype,
            broadcast_shapes(&s, &inputs[2].shape)?,
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (c, a, b) = (&inputs[0], &inputs[1], &inputs[2]);
        let shape = broadcast_concrete(&broadcast_concrete(c.shape(), a.shape())?, b.shape())?;
        let out = ctx.output(0, a.dtype(), &shape)?;
        // Operands that are contiguous in the output's shape, or single
        // elements (a scalar fill such as relu's backward `where(m, g, 0)`),
        // walk plain slices.
        let plain = |t: &Tensor| t.size() == 1 || (t.shape() == shape.as_slice() && t.is_contiguous());
        if out.is_contiguous() && plain(c) && plain(a) && plain(b) {
            crate::dispatch_all!(a.dtype(), T => where_slices::<T>(c, a, b, &out)?);
            return Ok(vec![out]);
        }
        let (c, a, b) = (bview(c, &shape)?, bview(a, &shape)?, bview(b, &shape)?);
        crate::dispatch_all!(a.dtype(), T => {
            c.read(|cv: ArrayViewD<'_, bool>| a.read(|av: ArrayViewD<'_, T>| b.read(|bv: ArrayViewD<'_, T>| {
                out.write(|mut ov: ArrayViewMutD<'_, T>| {
                    Zip::from(&mut ov).and(&cv).and(&av).and(&bv).for_each(|o, &c, &x, &y| *o = if c { x } else { y })
                })
            })))????
        });
        Ok(vec![out])
    }
}

/// `out[i] = c[i] ? a[i] : b[i]` over contiguous slices, an operand of one
/// element standing for every position.
fn where_slices<T: Element>(c: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    c.read_contiguous(|cs: &[bool]| {
        a.read_contiguous(|xs: &[T]| {
            b.read_contiguous(|ys: &[T]| {
                out.write_contiguous(|os: &mut [T]| {
                    // One loop per shape of operands, each branch-free
                    // inside, so that the select vectorizes.
                    let one = |s: &[T]| (s.len() == 1).then(|| s[0]);
                    match (cs, one(xs), one(ys)) {
                        ([c], ..) => {
                            let src = if *c { xs } else { ys };
                            match one(src) {
                                Some(v) => os.fill(v),
                                None => os.copy_from_slice(src),
                            }
                        }
                        (_, None, None) => select(os, cs, xs.iter().copied(), ys.iter().copied()),
                        (_, Some(x), None) => select(os, cs, std::iter::repeat(x), ys.iter().copied()),
                        (_, None, Some(y)) => select(os, cs, xs.iter().copied(), std::iter::repeat(y)),
                        (_, Some(x), Some(y)) => select(os, cs, std::iter::repeat(x), std::iter::repeat(y)),
                    }
                })
            })
        })
    })????;
    Ok(())
}

/// `os[i] = if cs[i] { xs[i] } else { ys[i] }`.
#[inline(always)]
fn select<T: Copy>(os: &mut [T], cs: &[bool], xs: impl Iterator<Item = T>, ys: impl Iterator<Item = T>) {
    for (((o, &c), x), y) in os.iter_mut().zip(cs).zip(xs).zip(ys) {
        *o = if c { x } else { y };
    }
}

// ----- unary --------------------------------------------------------------

/// `neg`, `exp`, ... and their `_inplace` twins.
#[derive(Clone, Debug)]
pub struct Unary {
    pub kind: UnKind,
    pub inplace: bool,
    name: String,
}

impl Unary {
    pub fn new(kind: UnKind, inplace: bool) -> Unary {
        let name = if inplace {
            format!("{}_inplace", kind.name())
        } else {
            kind.name().to_string()
        };
        Unary { kind, inplace, name }
    }
}

fn run_unary_num<T: Num>(kind: UnKind, a: &Tensor, out: &Tensor) -> Result<()> {
    match kind {
        UnKind::Neg => map1(a, out, T::neg_w),
        UnKind::Abs => map1(a, out, T::abs),
        UnKind::Relu => map1(a, out, relu::<T>),
        UnKind::Sign => map1(a, out, sign::<T>),
        _ => dtype_err(format!(
            "op '{}' takes float inputs, got {}",
            kind.name(),
            T::DTYPE
        )),
    }
}

/// `out = f(a)` through the slice kernels of [`VMath`] when both views
/// cover their elements contiguously in one memory order (or `out` is `a`);
/// other layouts apply the same function element by element.
fn map_math<T: Element + VMath>(f: MathFn, a: &Tensor, out: &Tensor) -> Result<()> {
    if out.same_buffer(a) {
        if out.layout() == a.layout() {
            // ndarray finds the memory order of C- and F-order views only.
            if let Some((o, _)) = out.in_memory_order() {
                return o.write_contiguous(|s: &mut [T]| par_map_inplace(f, s));
            }
            return out.write(
                |mut v: ArrayViewMutD<'_, T>| match v.as_slice_memory_order_mut() {
                    Some(s) => par_map_inplace(f, s),
                    None => v.mapv_inplace(|x| T::one(f, x)),
                },
            );
        }
        return map_math::<T>(f, &a.deep_copy()?, out);
    }
    if let Some((o, order)) = memory_alike(&[a], out) {
        return map_math::<T>(f, &a.permute(&order)?, &o);
    }
    let copy = in_c_order(a, out)?;
    let a = copy.as_ref().unwrap_or(a);
    a.read(|av: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            let same_order = av.strides() == ov.strides();
            match (av.as_slice_memory_order(), ov.as_slice_memory_order_mut()) {
                (Some(src), Some(dst)) if same_order => par_map(f, src, dst),
                _ => Zip::from(&mut ov).and(&av).for_each(|o, &x| *o = T::one(f, x)),
            }
        })
    })??;
    Ok(())
}

/// `out = f(a)` on tensors.
struct OnTensors<'a> {
    a: &'a Tensor,
    out: &'a Tensor,
}

impl<T: Element + VMath> UnaryTarget<T> for OnTensors<'_> {
    type Out = Result<()>;
    fn math(self, f: MathFn) -> Result<()> {
        map_math::<T>(f, self.a, self.out)
    }
    fn map(self, g: impl Fn(T) -> T + Sync) -> Result<()> {
        map1(self.a, self.out, g)
    }
}

fn run_unary_float<T: Float + VMath>(kind: UnKind, a: &Tensor, out: &Tensor) -> Result<()> {
    unary_float::<T, _>(kind, OnTensors { a, out })
}

impl Op for Unary {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let a = &inputs[0];
        if !a.dtype.is_computable() || (self.kind.float_only() && !a.dtype.is_float()) {
            return refuse_dtype(&self.name, a.dtype);
        }
        Ok(vec![a.clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let a = &inputs[0];
        let out = if self.inplace {
            a.clone()
        } else {
            ctx.output_like(0, a.dtype(), a)?
        };
        let kind = self.kind;
        crate::dispatch_float!(a.dtype(), T => run_unary_float::<T>(kind, a, &out)?,
            crate::dispatch_num!(a.dtype(), T => run_unary_num::<T>(kind, a, &out)?,
                return refuse_dtype(&self.name, a.dtype())));
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    fn pointwise(&self) -> Option<Pointwise> {
        self.inplace.then_some(Pointwise::Unary(self.kind))
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(Unary::new(self.kind, true)),
            inputs: vec![0],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Unary::new(self.kind, false)) as Arc<dyn Op>)
    }
}

// ----- cast ---------------------------------------------------------------

/// `cast` to the `dtype` attr, with numpy's `astype` semantics. Into the
/// small float formats it rounds to nearest even and, with `saturate`
/// (the default), clamps to the largest finite value instead of giving
/// NaN or infinity; F8E8M0 rounds by `round_mode` (see `tensor::small`).
#[derive(Clone, Debug)]
pub struct Cast {
    pub dtype: DType,
    pub saturate: bool,
    pub round_mode: RoundMode,
}

impl Cast {
    /// A cast with the default rounding.
    pub fn to(dtype: DType) -> Cast {
        Cast {
            dtype,
            saturate: true,
            round_mode: RoundMode::Up,
        }
    }
}

impl Op for Cast {
    fn name(&self) -> &str {
        "cast"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![TypeInfo::new(self.dtype, inputs[0].shape.clone())])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let out = ctx.output(0, self.dtype, inputs[0].shape())?;
        let default = self.saturate && self.round_mode == RoundMode::Up;
        if self.dtype.is_small_float() && !default && inputs[0].dtype() != self.dtype {
            small::write_f64s(&out, &inputs[0].to_f64_vec()?, self.saturate, self.round_mode)?;
        } else {
            inputs[0].cast_into(&out)?;
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new().with("dtype", self.dtype.name());
        if !self.saturate {
            a = a.with("saturate", false);
        }
        if self.round_mode != RoundMode::Up {
            a = a.with("round_mode", self.round_mode.name());
        }
        a
    }
}

pub fn register(r: &mut OpRegistry) {
    for kind in BinKind::ALL {
        r.register_op(Arc::new(Binary::new(kind, false)));
        r.register_op(Arc::new(Binary::new(kind, true)));
    }
    for kind in CmpKind::ALL {
        r.register_op(Arc::new(Compare { kind }));
    }
    for kind in UnKind::ALL {
        r.register_op(Arc::new(Unary::new(kind, false)));
        r.register_op(Arc::new(Unary::new(kind, true)));
    }
    r.register_op(Arc::new(Where));
    r.register("cast", |a: &Attrs| {
        a.only("cast", &["dtype", "saturate", "round_mode"])?;
        let dtype = a
            .dtype("dtype")?
            .ok_or_else(|| crate::error::Error::Attr("op 'cast' needs attr 'dtype'".into()))?;
        let round_mode = match a.str("round_mode")? {
            None => RoundMode::Up,
            Some(m) => RoundMode::parse(m).ok_or_else(|| {
                crate::error::Error::Attr(format!(
                    "op 'cast': attr 'round_mode' must be up, down or nearest, got '{m}'"
                ))
            })?,
        };
        Ok(Arc::new(Cast {
            dtype,
            saturate: a.bool("saturate")?.unwrap_or(true),
            round_mode,
        }) as Arc<dyn Op>)
    });
}
