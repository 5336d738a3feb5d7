//! Tensors: a shared buffer plus a [`Layout`]. Cloning a tensor, slicing it,
//! permuting it or reshaping it (when the layout allows) makes a view of the
//! same buffer.

pub mod buffer_pool;
pub mod dtype;
mod gather;
pub mod index;
pub mod layout;
pub mod limit;
mod npy;
pub mod overlap;
pub mod region;
pub mod small;
pub mod storage;

use std::rc::Rc;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, ShapeBuilder};

use crate::dtype::{DType, Element, Scalar};
use crate::error::{dtype_err, layout_err, op_err, rank_err, Error, Result};
use gather::{gather_c_order, StridedView};
pub use index::IndexSpec;
pub use layout::Layout;
use storage::{Buffer, BufferId, Storage};

/// A view of a shared, typed buffer.
#[derive(Clone)]
pub struct Tensor {
    storage: Storage,
    layout: Layout,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype())
            .field("buffer", &self.buffer_id())
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("offset", &self.offset())
            .finish()
    }
}

/// How a layout maps onto ndarray's view constructors, which take only
/// non-negative strides: start at the lowest element, use absolute strides,
/// then flip the axes whose strides were negative.
struct NdPlan {
    start: usize,
    strides: layout::Dims,
    flip: layout::Dims,
}

impl NdPlan {
    fn new(l: &Layout) -> Option<NdPlan> {
        let (start, _) = l.span()?;
        let mut plan = NdPlan {
            start,
            strides: layout::Dims::new(),
            flip: layout::Dims::new(),
        };
        for (ax, (&d, &s)) in l.shape().iter().zip(l.strides()).enumerate() {
            // A length-1 axis's stride never matters (and may be huge).
            if d <= 1 {
                plan.strides.push(0);
                continue;
            }
            if s < 0 {
                plan.flip.push(ax);
            }
            plan.strides.push(s.unsigned_abs());
        }
        Some(plan)
    }
}

/// The ndarray view of a buffer's elements `data` through `l`. A broadcast
/// axis keeps its zero stride: a read-only view may overlap itself.
fn view<'a, T: Element>(l: &Layout, data: &'a [T]) -> Result<ArrayViewD<'a, T>> {
    let Some(plan) = NdPlan::new(l) else {
        return ArrayViewD::from_shape(IxDyn(l.shape()), &[]).map_err(shape_err);
    };
    let mut v = ArrayViewD::from_shape(
        IxDyn(l.shape()).strides(IxDyn(&plan.strides)),
        &data[plan.start..],
    )
    .map_err(shape_err)?;
    for &ax in &plan.flip {
        v.invert_axis(Axis(ax));
    }
    Ok(v)
}

/// Fails for a self-overlapping (broadcast) layout, which no write may go
/// through; checked before the buffer is borrowed (which bumps its version).
fn check_writable(l: &Layout) -> Result<()> {
    if l.has_self_overlap() {
        return layout_err(format!(
            "cannot write a broadcast view (shape {:?}, strides {:?})",
            l.shape(),
            l.strides()
        ));
    }
    Ok(())
}

/// The mutable ndarray view of a buffer's elements `data` through `l`, a
/// layout [`check_writable`] passed.
fn view_mut<'a, T: Element>(l: &Layout, data: &'a mut [T]) -> Result<ArrayViewMutD<'a, T>> {
    let Some(plan) = NdPlan::new(l) else {
        return ArrayViewMutD::from_shape(IxDyn(l.shape()), &mut []).map_err(shape_err);
    };
    let mut v = ArrayViewMutD::from_shape(
        IxDyn(l.shape()).strides(IxDyn(&plan.strides)),
        &mut data[plan.start..],
    )
    .map_err(shape_err)?;
    for &ax in &plan.flip {
        v.invert_axis(Axis(ax));
    }
    Ok(v)
}

fn shape_err(e: ndarray::ShapeError) -> Error {
    Error::Layout(format!("layout does not fit its buffer: {e}"))
}

impl Tensor {
    // ----- construction -------------------------------------------------

    /// A C-contiguous tensor owning `data`.
    pub fn from_vec<T: Element>(shape: &[usize], data: Vec<T>) -> Result<Tensor> {
        let n = limit::check_shape(shape)?;
        if n != data.len() {
            return crate::error::shape_err(format!(
                "shape {shape:?} needs {n} elements, got {}",
                data.len()
            ));
        }
        Ok(Tensor {
            storage: T::wrap(Buffer::from_vec(data)),
            layout: Layout::contiguous(shape),
        })
    }

    /// A C-contiguous copy of an ndarray array. ndarray bounds the element
    /// count but not the rank: callers that take arrays from users check it
    /// (the .npy reader does, and so does the executor for its feeds).
    pub fn from_array<T: Element, S: ndarray::Data<Elem = T>>(a: &ndarray::ArrayBase<S, IxDyn>) -> Tensor {
        let mut data = buffer_pool::take::<T>(a.len());
        let prefix = &mut data[..a.len()];
        match a.as_slice() {
            Some(s) => prefix.copy_from_slice(s),
            None => prefix.iter_mut().zip(a.iter()).for_each(|(d, x)| *d = *x),
        }
        Tensor {
            storage: T::wrap(Buffer::from_pool(data, a.len())),
            layout: Layout::contiguous(a.shape()),
        }
    }

    /// A C-contiguous tensor of zeros (false for bool).
    pub fn zeros(dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let n = limit::check_shape(shape)?;
        limit::check_alloc(dtype, n)?;
        Ok(Tensor {
            storage: Storage::zeros(dtype, n),
            layout: Layout::contiguous(shape),
        })
    }

    /// A C-contiguous tensor whose contents the caller overwrites.
    pub fn uninit(dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let n = limit::check_shape(shape)?;
        limit::check_alloc(dtype, n)?;
        Ok(Tensor {
            storage: Storage::uninit(dtype, n),
            layout: Layout::contiguous(shape),
        })
    }

    /// Like [`Tensor::uninit`], its axes in memory in `order` (slowest
    /// first, see [`Layout::contiguous_in_order`]).
    pub fn uninit_in_order(dtype: DType, shape: &[usize], order: &[usize]) -> Result<Tensor> {
        let n = limit::check_shape(shape)?;
        limit::check_alloc(dtype, n)?;
        Ok(Tensor {
            storage: Storage::uninit(dtype, n),
            layout: Layout::contiguous_in_order(shape, order),
        })
    }

    /// A fresh tensor of `like`'s shape (and `dtype`) laid out as `like`
    /// when `like` is a reordering of a contiguous layout (a channels-last
    /// image), else C-contiguous: an elementwise op's output then walks
    /// memory in the order its input does.
    pub fn uninit_like(dtype: DType, like: &Tensor) -> Result<Tensor> {
        match like.layout.memory_order() {
            Some(order) if !like.is_contiguous() => Tensor::uninit_in_order(dtype, like.shape(), &order),
            _ => Tensor::uninit(dtype, like.shape()),
        }
    }

    /// The view with its axes reordered so that its elements in memory
    /// order are C order, and that order, when [`Layout::memory_order`]
    /// has one and it is not the identity. Kernels that walk a slice use
    /// it on channels-last values.
    pub fn in_memory_order(&self) -> Option<(Tensor, Vec<usize>)> {
        if self.is_contiguous() {
            return None;
        }
        let order = self.layout.memory_order()?;
        Some((self.permute(&order).ok()?, order))
    }

    /// This view with leading axes of length 1 up to `ndim` axes, then
    /// reordered by `order`: an operand broadcast into a value walked in
    /// memory order ([`Tensor::in_memory_order`]), walked alike. `None`
    /// when it has more axes or the padding needs a copy.
    pub fn padded_permute(&self, ndim: usize, order: &[usize]) -> Option<Tensor> {
        let pad = ndim.checked_sub(self.ndim())?;
        let padded: Vec<i64> = std::iter::repeat_n(1, pad)
            .chain(self.shape().iter().map(|&d| d as i64))
            .collect();
        let p = self.reshape(&padded).ok()?.permute(order).ok()?;
        p.same_buffer(self).then_some(p)
    }

    /// A rank-0 tensor.
    pub fn scalar(v: Scalar) -> Tensor {
        crate::dispatch_all!(v.dtype(), T => {
            let t: T = v.cast();
            Tensor { storage: T::wrap(Buffer::from_vec(vec![t])), layout: Layout::contiguous(&[]) }
        })
    }

    /// A 1-D i64 tensor, e.g. an index vector for `create_view`.
    pub fn from_i64s(v: &[i64]) -> Tensor {
        Tensor {
            storage: i64::wrap(Buffer::from_vec(v.to_vec())),
            layout: Layout::contiguous(&[v.len()]),
        }
    }

    /// Another view of the same buffer. Fails when `layout` reaches outside
    /// it, has more than [`limit::MAX_RANK`] axes or too many elements: every
    /// view op ends here, so a layout made with [`Layout::new`] from user
    /// input (index vectors, say) is checked too.
    pub fn with_layout(&self, layout: Layout) -> Result<Tensor> {
        if layout.ndim() > limit::MAX_RANK {
            return rank_err(format!(
                "a view of rank {} is above the limit of {} dimensions",
                layout.ndim(),
                limit::MAX_RANK
            ));
        }
        limit::numel(layout.shape())?;
        if let Some((lo, hi)) = layout.signed_span() {
            if lo < 0 || hi >= self.storage.len() as i128 {
                return op_err(format!(
                    "view reaches elements {lo}..={hi} of a buffer of {}",
                    self.storage.len()
                ));
            }
        }
        Ok(Tensor {
            storage: self.storage.clone(),
            layout,
        })
    }

    // ----- properties ---------------------------------------------------

    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }
    /// Strides in elements; negative for reversed axes, zero for broadcast ones.
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }
    /// Offset of the first element in the buffer, in elements.
    pub fn offset(&self) -> usize {
        self.layout.offset()
    }
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }
    /// Elements in this view.
    pub fn size(&self) -> usize {
        self.layout.size()
    }
    /// Elements in the underlying buffer.
    pub fn data_size(&self) -> usize {
        self.storage.len()
    }
    /// Bytes of this view's elements (saturating: a broadcast view may
    /// describe more bytes than an address space holds).
    pub fn nbytes(&self) -> usize {
        self.size().saturating_mul(self.dtype().size())
    }
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
    pub fn buffer_id(&self) -> BufferId {
        self.storage.id()
    }
    /// Bumped on every declared in-place write to the buffer.
    pub fn version(&self) -> u64 {
        self.storage.version()
    }
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }
    /// True when both tensors are views of one buffer.
    pub fn same_buffer(&self, other: &Tensor) -> bool {
        self.buffer_id() == other.buffer_id()
    }
    /// True when the element ranges of the two views intersect (a quick,
    /// conservative test: false means they surely do not share memory).
    pub fn may_share_memory(&self, other: &Tensor) -> bool {
        if !self.same_buffer(other) {
            return false;
        }
        match (self.layout.span(), other.layout.span()) {
            (Some((a0, a1)), Some((b0, b1))) => a0 <= b1 && b0 <= a1,
            _ => false,
        }
    }

    // ----- typed access -------------------------------------------------

    fn buffer<T: Element>(&self) -> Result<&Rc<Buffer<T>>> {
        T::buffer(&self.storage)
            .ok_or_else(|| Error::DType(format!("expected a {} tensor, got {}", T::DTYPE, self.dtype())))
    }

    /// Calls `f` with an ndarray view of the elements.
    ///
    /// This and the other closure-taking accessors are `#[inline]`: an
    /// instance per kernel closure is compiled where the kernel is, and
    /// builds its view out of line ([`view`]); else every kernel inlined
    /// into its instance landed in this module's codegen unit, half the
    /// crate's code in one unit that one core optimized alone.
    #[inline]
    pub fn read<T: Element, R>(&self, f: impl FnOnce(ArrayViewD<'_, T>) -> R) -> Result<R> {
        let data = self.buffer::<T>()?.borrow()?;
        Ok(f(view(&self.layout, &data)?))
    }

    /// Calls `f` with the whole buffer this view reads, in storage order,
    /// for a kernel that walks the view's strides itself ([`Tensor::layout`]
    /// gives them): faer reads a matrix whose rows have gaps between them
    /// in place, which an ndarray view cannot hand it as a slice.
    #[inline]
    pub(crate) fn read_buffer<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        let data = self.buffer::<T>()?.borrow()?;
        Ok(f(&data))
    }

    /// Calls `f` with the elements as one slice in C order; fails unless
    /// the layout is contiguous. The elementwise kernels' fast path: no
    /// n-dimensional view to build, which is most of an op's cost on tiny
    /// tensors.
    #[inline]
    pub fn read_contiguous<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        let range = self.contiguous_range()?;
        let data = self.buffer::<T>()?.borrow()?;
        let s = data
            .get(range)
            .ok_or_else(|| Error::Layout("layout reaches past its buffer".into()))?;
        Ok(f(s))
    }

    /// A read guard on a contiguous view's elements in C order, for kernels
    /// that hold several operands at once (fused runs).
    pub(crate) fn borrow_contiguous<T: Element>(&self) -> Result<std::cell::Ref<'_, [T]>> {
        let range = self.contiguous_range()?;
        let data = self.buffer::<T>()?.borrow()?;
        std::cell::Ref::filter_map(data, |d| d.get(range))
            .map_err(|_| Error::Layout("layout reaches past its buffer".into()))
    }

    /// Like [`Tensor::write`] on a contiguous layout, with a slice in C order.
    #[inline]
    pub fn write_contiguous<T: Element, R>(&self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        let range = self.contiguous_range()?;
        let mut data = self.buffer::<T>()?.borrow_mut()?;
        let s = data
            .get_mut(range)
            .ok_or_else(|| Error::Layout("layout reaches past its buffer".into()))?;
        Ok(f(s))
    }

    /// `f` over the elements in C order, whatever the layout: in place when
    /// contiguous, else on a C-order copy written back through the layout.
    /// For kernels that fill a flat slice but may be handed a caller's
    /// output buffer of another layout.
    #[inline]
    pub fn write_c_order<T: Element, R>(&self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        if self.layout.is_contiguous() {
            return self.write_contiguous(f);
        }
        let tmp = self.deep_copy()?;
        let r = tmp.write_contiguous(f)?;
        let src = tmp.to_array::<T>()?;
        self.write(|mut o: ArrayViewMutD<'_, T>| o.assign(&src))?;
        Ok(r)
    }

    fn contiguous_range(&self) -> Result<std::ops::Range<usize>> {
        if !self.layout.is_contiguous() {
            return layout_err(format!(
                "expected a contiguous layout, got shape {:?} strides {:?}",
                self.shape(),
                self.strides()
            ));
        }
        let start = self.layout.offset();
        Ok(start..start + self.size())
    }

    /// Calls `f` with a mutable ndarray view of the elements, and bumps the
    /// buffer's version. Fails for broadcast (self-overlapping) views and
    /// while another view of the buffer is being read.
    #[inline]
    pub fn write<T: Element, R>(&self, f: impl FnOnce(ArrayViewMutD<'_, T>) -> R) -> Result<R> {
        check_writable(&self.layout)?;
        let mut data = self.buffer::<T>()?.borrow_mut()?;
        Ok(f(view_mut(&self.layout, &mut data)?))
    }

    /// The elements as an owned C-order ndarray array.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        if !self.is_contiguous() {
            // The tiled copy: ndarray's own walks a transposed view one
            // cache line per element.
            let mut v = vec![T::default(); self.size()];
            self.gather_into(&mut v)?;
            return ArrayD::from_shape_vec(IxDyn(self.shape()), v).map_err(shape_err);
        }
        self.read(|v: ArrayViewD<'_, T>| v.as_standard_layout().into_owned())
    }

    /// The elements in C order as f64 (for reports and comparisons).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        // A contiguous tensor is read as a slice, without building an
        // n-dimensional view (layer_norm's scale and bias, every run).
        crate::dispatch_all!(self.dtype(), T => if self.is_contiguous() {
            self.read_contiguous(|v: &[T]| v.iter().map(|x| x.to_f64()).collect())
        } else {
            self.read(|v: ArrayViewD<'_, T>| v.iter().map(|x| x.to_f64()).collect())
        })
    }

    /// Writes `vals`, in C order, into the elements, each rounded once into
    /// this tensor's dtype (as `Element::from_f64`); extra values on either
    /// side are left alone. The way out for kernels that compute in f64
    /// whatever their dtype (one rounding per output, as ONNX's reference
    /// does), so none of them needs a typed write of its own.
    pub fn write_f64s(&self, vals: &[f64]) -> Result<()> {
        fn go<T: Element>(out: &Tensor, vals: &[f64]) -> Result<()> {
            out.write_c_order(|o: &mut [T]| o.iter_mut().zip(vals).for_each(|(o, &v)| *o = T::from_f64(v)))
        }
        crate::dispatch_all!(self.dtype(), T => go::<T>(self, vals))
    }

    pub fn at(&self, index: &[usize]) -> Result<Scalar> {
        let off = self.layout.offset_of(index)?;
        crate::dispatch_all!(self.dtype(), T => Ok(self.buffer::<T>()?.borrow()?[off].to_scalar()))
    }

    /// Writes one element (converted to this tensor's dtype).
    pub fn set_at(&self, index: &[usize], v: Scalar) -> Result<()> {
        if self.layout.has_self_overlap() {
            return layout_err("cannot write a broadcast view");
        }
        let off = self.layout.offset_of(index)?;
        crate::dispatch_all!(self.dtype(), T => {
            let buf = self.buffer::<T>()?;
            buf.borrow_mut()?[off] = T::from_scalar(v);
        });
        Ok(())
    }

    /// Copies `src` (broadcast to this shape) into this view's elements. An
    /// overlapping `src` is copied first, as numpy does.
    pub fn assign(&self, src: &Tensor) -> Result<()> {
        if src.dtype() != self.dtype() {
            return dtype_err(format!("cannot assign {} into {}", src.dtype(), self.dtype()));
        }
        if src.shape() == self.shape() && self.copy_c_order(src)? {
            return Ok(());
        }
        let src = if self.same_buffer(src) {
            src.deep_copy()?
        } else {
            src.clone()
        };
        let src = src.broadcast_to(self.shape())?;
        crate::dispatch_all!(self.dtype(), T => src.read(|s: ArrayViewD<'_, T>| self.write(|mut d: ArrayViewMutD<'_, T>| d.assign(&s)))??);
        Ok(())
    }

    // ----- views and copies ---------------------------------------------

    /// A new C-contiguous buffer holding this view's elements.
    pub fn deep_copy(&self) -> Result<Tensor> {
        let out = Tensor::uninit(self.dtype(), self.shape())?;
        if self.is_contiguous() {
            // One memcpy (snapshots copy every parameter per run).
            crate::dispatch_all!(self.dtype(), T => self.read_contiguous(|s: &[T]| out.write_contiguous(|d: &mut [T]| copy_slice(s, d)))??);
            return Ok(out);
        }
        crate::dispatch_all!(self.dtype(), T => out.write_contiguous(|d: &mut [T]| self.gather_into(d))??);
        Ok(out)
    }

    /// Writes `src`'s elements in C order into this tensor's, as one
    /// copy (ndarray's `assign` walks element by element) when this is
    /// C-contiguous, of `src`'s size and dtype, on another buffer; false
    /// (nothing written) otherwise. A reshape that is no view is such a
    /// copy.
    pub(crate) fn copy_c_order(&self, src: &Tensor) -> Result<bool> {
        let fits = self.is_contiguous()
            && src.dtype() == self.dtype()
            && src.size() == self.size()
            && !self.same_buffer(src);
        if !fits {
            return Ok(false);
        }
        if src.is_contiguous() {
            crate::dispatch_all!(self.dtype(), T => src.read_contiguous(|s: &[T]| self.write_contiguous(|d: &mut [T]| copy_slice(s, d)))??);
        } else {
            crate::dispatch_all!(self.dtype(), T => self.write_contiguous(|d: &mut [T]| src.gather_into(d))??);
        }
        Ok(true)
    }

    /// Copies this view's elements in C order into `dst`, of its size
    /// (strided and transposed views by tiles: see [`gather_c_order`]).
    fn gather_into<T: Element>(&self, dst: &mut [T]) -> Result<()> {
        let data = self.buffer::<T>()?.borrow()?;
        let view = StridedView {
            data: &data,
            offset: self.offset(),
            shape: self.shape(),
            strides: self.strides(),
        };
        gather_c_order(view, dst);
        Ok(())
    }

    /// This tensor if it is C-contiguous, else a contiguous copy.
    pub fn to_contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            Ok(self.clone())
        } else {
            self.deep_copy()
        }
    }

    /// Basic indexing (the `create_view` semantics) as a view.
    pub fn slice(&self, indices: &[IndexSpec]) -> Result<Tensor> {
        let l = index::apply(&self.layout, indices)?;
        self.with_layout(l)
    }

    /// Axes reordered as a view; `perm` defaults to reversed.
    pub fn permute(&self, perm: &[usize]) -> Result<Tensor> {
        self.with_layout(self.layout.permute(perm)?)
    }

    /// The transpose as a view (axes reversed, or `axes`).
    pub fn t(&self, axes: Option<&[usize]>) -> Result<Tensor> {
        match axes {
            Some(p) => self.permute(p),
            None => self.with_layout(self.layout.reversed()),
        }
    }

    /// The transpose materialized into a new contiguous buffer.
    pub fn transpose(&self, axes: Option<&[usize]>) -> Result<Tensor> {
        self.t(axes)?.deep_copy()
    }

    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        if shape == self.shape() {
            return Ok(self.clone());
        }
        self.with_layout(self.layout.broadcast_to(shape)?)
    }

    pub fn expand_dims(&self, axis: i64) -> Result<Tensor> {
        self.with_layout(self.layout.expand_dims(axis)?)
    }

    pub fn squeeze(&self, axes: Option<&[i64]>) -> Result<Tensor> {
        self.with_layout(self.layout.squeeze(axes)?)
    }

    /// Reshape as numpy does: a view when the layout allows, else a copy.
    /// One entry may be -1.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = resolve_reshape(self.shape(), shape)?;
        match self.layout.reshape(&shape) {
            Some(l) => self.with_layout(l),
            None => self.deep_copy()?.reshape_contiguous(&shape),
        }
    }

    fn reshape_contiguous(&self, shape: &[usize]) -> Result<Tensor> {
        let l = self
            .layout
            .reshape(shape)
            .ok_or_else(|| Error::Shape("reshape of a contiguous tensor failed".into()))?;
        self.with_layout(l)
    }

    /// Converts to another dtype (a copy), with numpy's `astype` semantics
    /// (float to int truncates; to bool is `!= 0`).
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        let out = Tensor::uninit(dtype, self.shape())?;
        self.cast_into(&out)?;
        Ok(out)
    }

    /// Writes this tensor's elements, converted, into `out` (same shape).
    pub fn cast_into(&self, out: &Tensor) -> Result<()> {
        if out.shape() != self.shape() {
            return crate::error::shape_err(format!(
                "cast into shape {:?} from {:?}",
                out.shape(),
                self.shape()
            ));
        }
        if out.dtype() == self.dtype() {
            return out.assign(self);
        }
        crate::dispatch_all!(self.dtype(), S => crate::dispatch_all!(out.dtype(), D => {
            self.read(|s: ArrayViewD<'_, S>| out.write(|mut d: ArrayViewMutD<'_, D>| {
                ndarray::Zip::from(&mut d).and(&s).for_each(|d, &s| *d = cast_one::<S, D>(s))
            }))??
        }));
        Ok(())
    }

    // ----- files ----------------------------------------------------------

    pub fn read_npy(path: impl AsRef<std::path::Path>) -> Result<Tensor> {
        npy::read(path.as_ref())
    }

    /// Reads a .npy image from memory, with the same checks as
    /// [`Tensor::read_npy`]; errors name `name` as the file.
    pub fn read_npy_bytes(bytes: &[u8], name: impl AsRef<std::path::Path>) -> Result<Tensor> {
        npy::read_bytes(bytes, name.as_ref())
    }

    pub fn write_npy(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        npy::write(self, path.as_ref())
    }
}

fn cast_one<S: Element, D: Element>(s: S) -> D {
    match s.to_scalar() {
        // Integer sources convert exactly (i64 above 2^53 included) and
        // wrap into narrower integers, as numpy's astype does.
        Scalar::I64(v) => D::from_i64_wrapping(v),
        Scalar::I32(v) => D::from_i64_wrapping(v as i64),
        Scalar::I16(v) => D::from_i64_wrapping(v as i64),
        Scalar::I8(v) => D::from_i64_wrapping(v as i64),
        Scalar::U32(v) => D::from_i64_wrapping(v as i64),
        Scalar::U16(v) => D::from_i64_wrapping(v as i64),
        Scalar::U8(v) => D::from_i64_wrapping(v as i64),
        Scalar::I4(v) => D::from_i64_wrapping(v.get()),
        Scalar::U4(v) => D::from_i64_wrapping(v.get()),
        Scalar::I2(v) => D::from_i64_wrapping(v.get()),
        Scalar::U2(v) => D::from_i64_wrapping(v.get()),
        // Above i64::MAX a u64 is not an i64: floats round it once.
        Scalar::U64(v) if D::DTYPE == DType::F32 => D::from_scalar(Scalar::F32(v as f32)),
        Scalar::U64(v) if D::DTYPE.is_float() => D::from_f64(v as f64),
        Scalar::U64(v) => D::from_i64_wrapping(v as i64),
        // numpy casts float16 to uint32 through C's float to 64-bit integer
        // conversion (every finite f16 fits): NaN and infinities give 0,
        // where f32 and f64 sources give 2^31 for NaN and -inf.
        Scalar::F16(v) if D::DTYPE == DType::U32 => {
            let x = v.to_f64();
            D::from_i64_wrapping(if x.is_finite() { x as i64 } else { i64::MIN })
        }
        _ => D::from_f64(s.to_f64()),
    }
}

/// A reshape target on its own: the dims with the -1 (if any) read as 1,
/// the position of the -1 and the element count of the known dims. At most
/// [`limit::MAX_RANK`] axes, one -1, no other negative dim, and the known
/// dims must have a valid element count (see [`limit::numel`]; a 0 does not
/// excuse an overflowing product).
fn parse_reshape_target(shape: &[i64]) -> Result<(Vec<usize>, Option<usize>, usize)> {
    if shape.len() > limit::MAX_RANK {
        return rank_err(format!(
            "reshape target {} is above the limit of {} dimensions",
            limit::shape_str(shape),
            limit::MAX_RANK
        ));
    }
    let mut unknown = None;
    let mut out = Vec::with_capacity(shape.len());
    for (i, &d) in shape.iter().enumerate() {
        match d {
            -1 if unknown.is_none() => {
                unknown = Some(i);
                out.push(1);
            }
            -1 => return crate::error::shape_err(format!("reshape {shape:?} has more than one -1")),
            d if d < 0 => {
                return crate::error::shape_err(format!("reshape {shape:?} has a negative dimension"))
            }
            d => out.push(
                usize::try_from(d)
                    .map_err(|_| Error::Shape(format!("reshape {shape:?}: dimension {d} is too large")))?,
            ),
        }
    }
    let known = limit::numel(&out).map_err(|_| {
        Error::Shape(format!(
            "reshape target {shape:?} has too many elements (more than {})",
            isize::MAX
        ))
    })?;
    Ok((out, unknown, known))
}

/// Checks a reshape target without a source shape (see
/// [`resolve_reshape`]).
pub fn check_reshape_target(shape: &[i64]) -> Result<()> {
    parse_reshape_target(shape).map(|_| ())
}

/// Resolves a reshape target with at most one -1 against `from`, in checked
/// arithmetic: a source or target with too many elements, or a target of a
/// rank above [`limit::MAX_RANK`], is an error.
pub fn resolve_reshape(from: &[usize], shape: &[i64]) -> Result<Vec<usize>> {
    let total = limit::numel(from)?;
    let (mut out, unknown, known) = parse_reshape_target(shape)?;
    if let Some(i) = unknown {
        if known == 0 || !total.is_multiple_of(known) {
            return crate::error::shape_err(format!("cannot reshape {from:?} into {shape:?}"));
        }
        out[i] = total / known;
    } else if known != total {
        return crate::error::shape_err(format!(
            "cannot reshape {from:?} ({total} elements) into {shape:?}"
        ));
    }
    Ok(out)
}

/// `d.copy_from_slice(s)`, split across the rayon pool for long slices: a
/// lone core does not reach the memory bandwidth a copy could use.
fn copy_slice<T: Element>(s: &[T], d: &mut [T]) {
    use rayon::prelude::*;
    if !crate::parallel::split(s.len()) {
        return d.copy_from_slice(s);
    }
    d.par_chunks_mut(crate::parallel::PASS_CHUNK)
        .zip(s.par_chunks(crate::parallel::PASS_CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}
