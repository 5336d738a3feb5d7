//! Where a tensor's elements sit in its buffer: shape, signed element strides
//! and an element offset, as in numpy's array interface.
//!
//! Shapes from user input are checked where a layout is made from them
//! ([`Layout::broadcast_to`], [`Layout::expand_dims`], [`Layout::reshape`],
//! the tensor constructors and `Tensor::with_layout`): at most
//! [`MAX_RANK`] axes and an element count that fits in `isize` (see
//! [`limit::numel`]). [`Layout::contiguous`] and [`Layout::new`] trust their
//! caller.

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::tensor::limit::{self, shape_str, MAX_RANK};

/// Dimensions, inline up to rank 4 so layouts of typical tensors never
/// allocate (layouts are cloned on every view and op).
pub type Dims = SmallVec<[usize; 4]>;
/// Signed strides, inline up to rank 4.
pub type Strides = SmallVec<[isize; 4]>;

/// Shape, signed strides (in elements) and offset (in elements) of a view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Dims,
    strides: Strides,
    offset: usize,
    /// Whether the view is C-contiguous, decided once when it is made:
    /// kernels ask on every call to pick their slice path.
    c_order: bool,
}

/// C-order strides of `shape`.
pub fn c_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = smallvec::smallvec![0isize; shape.len()];
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1) as isize);
    }
    strides
}

/// Resolves a possibly negative axis against `ndim` axes.
pub fn resolve_axis(axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(Error::Op(format!(
            "axis {axis} is out of range for {ndim} dimensions"
        )));
    }
    Ok(a as usize)
}

impl Layout {
    /// A C-contiguous layout at offset 0.
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            shape: Dims::from_slice(shape),
            strides: c_strides(shape),
            offset: 0,
            c_order: true,
        }
    }

    /// A Fortran-order (first axis fastest) layout at offset 0: the
    /// column-major twin of [`Layout::contiguous`], for re-laying values
    /// out to check that a kernel honours strides.
    pub fn f_contiguous(shape: &[usize]) -> Layout {
        let mut strides = Vec::with_capacity(shape.len());
        let mut s = 1isize;
        for &len in shape {
            strides.push(s);
            s *= len.max(1) as isize;
        }
        Layout::new(shape.to_vec(), strides, 0)
    }

    /// A layout of `shape` with no gaps whose axes lie in memory in
    /// `order`, slowest first: `[0, 2, 3, 1]` lays an `[N, C, H, W]` image
    /// out channels-last (NHWC in memory, NCHW to every op).
    pub fn contiguous_in_order(shape: &[usize], order: &[usize]) -> Layout {
        let mut strides = vec![0isize; shape.len()];
        let mut s = 1isize;
        for &a in order.iter().rev() {
            strides[a] = s;
            s = s.saturating_mul(shape[a].max(1) as isize);
        }
        Layout::new(shape.to_vec(), strides, 0)
    }

    /// The axes slowest first when this layout is a reordering of a
    /// contiguous one (every element once, no gaps), as
    /// [`Layout::contiguous_in_order`] makes: then the elements in memory
    /// order are one slice, which elementwise kernels can walk whatever
    /// the axis order. `None` for views with gaps, repeats or negative
    /// strides. A C-contiguous layout gives the identity.
    pub fn memory_order(&self) -> Option<Vec<usize>> {
        let mut order: Vec<usize> = (0..self.ndim()).collect();
        if self.c_order {
            return Some(order);
        }
        if self.strides.iter().any(|&s| s < 0) {
            return None;
        }
        // Stable: axes of length 1 (any stride) keep their place among
        // equal strides.
        order.sort_by_key(|&a| std::cmp::Reverse(self.strides[a]));
        self.permute(&order).ok()?.c_order.then_some(order)
    }

    /// A layout from raw parts. The caller checks that it fits its buffer.
    pub fn new(shape: impl Into<Dims>, strides: impl Into<Strides>, offset: usize) -> Layout {
        let (shape, strides) = (shape.into(), strides.into());
        assert_eq!(shape.len(), strides.len(), "shape and strides differ in rank");
        Layout::make(shape, strides, offset)
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements in the view. Saturates at `usize::MAX` instead of
    /// wrapping for a layout built unchecked with [`Layout::new`] (every
    /// checked path keeps it at most `isize::MAX`); 0 when any axis is empty.
    pub fn size(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        self.shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d))
    }

    /// True when the elements are in C order with no gaps (axes of length 1
    /// may have any stride).
    pub fn is_contiguous(&self) -> bool {
        self.c_order
    }

    /// A layout from its parts, with its contiguity worked out.
    fn make(shape: Dims, strides: Strides, offset: usize) -> Layout {
        let mut l = Layout {
            shape,
            strides,
            offset,
            c_order: false,
        };
        l.c_order = l.compute_c_order();
        l
    }

    fn compute_c_order(&self) -> bool {
        if self.size() == 0 {
            return true;
        }
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 {
                if s != expected {
                    return false;
                }
                expected = expected.saturating_mul(isize::try_from(d).unwrap_or(isize::MAX));
            }
        }
        true
    }

    /// The smallest and largest element offsets the view touches, or `None`
    /// for an empty view.
    pub fn span(&self) -> Option<(usize, usize)> {
        let (lo, hi) = self.signed_span()?;
        Some((lo.max(0) as usize, hi.max(0) as usize))
    }

    /// Like [`Layout::span`] in signed arithmetic, so a layout reaching
    /// before its buffer shows a negative start.
    pub fn signed_span(&self) -> Option<(i128, i128)> {
        if self.size() == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.offset as i128, self.offset as i128);
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let reach = (d as i128 - 1) * s as i128;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        Some((lo, hi))
    }

    /// True when two indices reach the same element (a zero stride on an axis
    /// longer than one, as a broadcast makes). Such a view cannot be written.
    pub fn has_self_overlap(&self) -> bool {
        self.size() > 1
            && self
                .shape
                .iter()
                .zip(&self.strides)
                .any(|(&d, &s)| d > 1 && s == 0)
    }

    /// Element offset of a multi-index, or an error when it is out of range.
    pub fn offset_of(&self, index: &[usize]) -> Result<usize> {
        if index.len() != self.ndim() {
            return Err(Error::Op(format!(
                "index {index:?} has {} entries for {} dimensions",
                index.len(),
                self.ndim()
            )));
        }
        let mut off = self.offset as isize;
        for (axis, ((&i, &d), &s)) in index.iter().zip(&self.shape).zip(&self.strides).enumerate() {
            if i >= d {
                return Err(Error::Index(format!(
                    "index {i} is out of range for axis {axis} of length {d}"
                )));
            }
            off += i as isize * s;
        }
        Ok(off as usize)
    }

    /// Element offsets of the view in C (logical) order.
    pub fn offsets(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.size();
        let mut idx = vec![0usize; self.ndim()];
        let mut off = self.offset as isize;
        (0..n).map(move |k| {
            if k > 0 {
                for ax in (0..idx.len()).rev() {
                    idx[ax] += 1;
                    off += self.strides[ax];
                    if idx[ax] < self.shape[ax] {
                        break;
                    }
                    off -= self.strides[ax] * self.shape[ax] as isize;
                    idx[ax] = 0;
                }
            }
            off as usize
        })
    }

    /// Axes reordered: axis `i` of the result is axis `perm[i]` of `self`.
    pub fn permute(&self, perm: &[usize]) -> Result<Layout> {
        let n = self.ndim();
        let mut seen = vec![false; n];
        if perm.len() != n
            || perm
                .iter()
                .any(|&p| p >= n || std::mem::replace(&mut seen[p], true))
        {
            return Err(Error::Op(format!(
                "perm {perm:?} is not a permutation of {n} axes"
            )));
        }
        Ok(Layout::make(
            perm.iter().map(|&p| self.shape[p]).collect(),
            perm.iter().map(|&p| self.strides[p]).collect(),
            self.offset,
        ))
    }

    /// The axes in reverse order.
    pub fn reversed(&self) -> Layout {
        let mut l = self.clone();
        l.shape.reverse();
        l.strides.reverse();
        l.c_order = l.compute_c_order();
        l
    }

    /// numpy broadcasting of this view to `target` (zero strides on the new
    /// and stretched axes).
    pub fn broadcast_to(&self, target: &[usize]) -> Result<Layout> {
        check_target("broadcast", target)?;
        let n = self.ndim();
        if target.len() < n {
            return Err(Error::Shape(format!(
                "cannot broadcast shape {:?} to {target:?}",
                self.shape
            )));
        }
        let lead = target.len() - n;
        let mut strides: Strides = smallvec::smallvec![0isize; target.len()];
        for (i, (&d, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            let t = target[lead + i];
            if d == t {
                strides[lead + i] = s;
            } else if d != 1 {
                return Err(Error::Shape(format!(
                    "cannot broadcast shape {:?} to {target:?}",
                    self.shape
                )));
            }
        }
        Ok(Layout::make(Dims::from_slice(target), strides, self.offset))
    }

    /// A new axis of length 1 at `axis` (negative counts from the end).
    pub fn expand_dims(&self, axis: i64) -> Result<Layout> {
        if self.ndim() >= MAX_RANK {
            return Err(Error::Rank(format!(
                "cannot add an axis to shape {}: rank {} is above the limit of {MAX_RANK} dimensions",
                shape_str(&self.shape),
                self.ndim() + 1
            )));
        }
        let a = resolve_axis(axis, self.ndim() + 1)?;
        let mut l = self.clone();
        l.shape.insert(a, 1);
        l.strides.insert(a, 0);
        Ok(l)
    }

    /// Removes the given axes (all length-1 axes when `axes` is `None`).
    pub fn squeeze(&self, axes: Option<&[i64]>) -> Result<Layout> {
        let n = self.ndim();
        let mut drop = vec![false; n];
        match axes {
            None => {
                for (i, &d) in self.shape.iter().enumerate() {
                    drop[i] = d == 1;
                }
            }
            Some(axes) => {
                for &a in axes {
                    let a = resolve_axis(a, n)?;
                    if self.shape[a] != 1 {
                        return Err(Error::Shape(format!(
                            "cannot squeeze axis {a} of length {}",
                            self.shape[a]
                        )));
                    }
                    drop[a] = true;
                }
            }
        }
        let keep = |i: &usize| !drop[*i];
        Ok(Layout::make(
            (0..n).filter(keep).map(|i| self.shape[i]).collect(),
            (0..n).filter(keep).map(|i| self.strides[i]).collect(),
            self.offset,
        ))
    }

    /// The same elements in C order under `new_shape`, without copying, when
    /// the strides allow it (numpy's no-copy reshape); `None` otherwise,
    /// and for a `new_shape` that is too big or of a rank above
    /// [`MAX_RANK`] (check it with `resolve_reshape` to get an error).
    pub fn reshape(&self, new_shape: &[usize]) -> Option<Layout> {
        if limit::check_shape(new_shape).ok()? != self.size() {
            return None;
        }
        if self.size() == 0 || self.is_contiguous() {
            return Some(Layout::make(
                Dims::from_slice(new_shape),
                c_strides(new_shape),
                self.offset,
            ));
        }
        // Axes of length 1 carry no stride information.
        let old: Vec<(usize, isize)> = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(&d, _)| d != 1)
            .map(|(&d, &s)| (d, s))
            .collect();
        let mut strides: Strides = smallvec::smallvec![0isize; new_shape.len()];
        let (mut oi, mut ni) = (0usize, 0usize);
        while oi < old.len() && ni < new_shape.len() {
            // Grow a group of old axes and a group of new axes until their
            // element counts agree.
            let (mut oj, mut nj) = (oi + 1, ni + 1);
            let (mut op, mut np) = (old[oi].0, new_shape[ni]);
            while op != np {
                if np < op {
                    np *= *new_shape.get(nj)?;
                    nj += 1;
                } else {
                    op *= old.get(oj)?.0;
                    oj += 1;
                }
            }
            // The old group must be one contiguous run.
            for k in oi..oj - 1 {
                if old[k].1 != old[k + 1].1 * old[k + 1].0 as isize {
                    return None;
                }
            }
            strides[nj - 1] = old[oj - 1].1;
            for k in (ni + 1..nj).rev() {
                strides[k - 1] = strides[k] * new_shape[k] as isize;
            }
            oi = oj;
            ni = nj;
        }
        // Remaining new axes have length 1; give them a harmless stride.
        for s in strides.iter_mut().skip(ni) {
            *s = 0;
        }
        Some(Layout::make(Dims::from_slice(new_shape), strides, self.offset))
    }
}

/// A broadcast or reshape target: at most [`MAX_RANK`] axes and an element
/// count that fits (see [`limit::numel`]).
pub(crate) fn check_target(what: &str, target: &[usize]) -> Result<()> {
    if target.len() > MAX_RANK {
        return Err(Error::Rank(format!(
            "cannot {what} to shape {}: above the limit of {MAX_RANK} dimensions",
            shape_str(target)
        )));
    }
    if limit::numel(target).is_err() {
        return Err(Error::Shape(format!(
            "cannot {what} to shape {}: too many elements (more than {})",
            shape_str(target),
            isize::MAX
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_strides_are_c_order() {
        let l = Layout::contiguous(&[2, 3, 4]);
        assert_eq!(l.strides(), &[12, 4, 1]);
        assert!(l.is_contiguous());
        assert_eq!(l.span(), Some((0, 23)));
    }

    #[test]
    fn channels_last_layout_has_its_memory_order_and_views_with_gaps_have_none() {
        let nhwc = Layout::contiguous_in_order(&[2, 3, 4, 5], &[0, 2, 3, 1]);
        assert_eq!(nhwc.strides(), &[60, 1, 15, 3]);
        assert!(!nhwc.is_contiguous());
        assert_eq!(nhwc.memory_order(), Some(vec![0, 2, 3, 1]));
        assert!(nhwc.permute(&[0, 2, 3, 1]).unwrap().is_contiguous());
        assert_eq!(Layout::contiguous(&[2, 3]).memory_order(), Some(vec![0, 1]));
        // Every element once, but with a gap (a column slice), repeated
        // (broadcast) or walked backwards: no slice holds it in memory order.
        assert_eq!(Layout::new(vec![4, 3], vec![6, 2], 0).memory_order(), None);
        assert_eq!(
            Layout::contiguous(&[1, 3])
                .broadcast_to(&[2, 3])
                .unwrap()
                .memory_order(),
            None
        );
        assert_eq!(Layout::new(vec![3], vec![-1], 2).memory_order(), None);
        // Axes of length 1 keep their place whatever their stride.
        let one = Layout::contiguous_in_order(&[1, 4, 1, 2], &[0, 2, 3, 1]);
        assert!(one.permute(&one.memory_order().unwrap()).unwrap().is_contiguous());
    }

    #[test]
    fn permuted_layout_is_not_contiguous_and_reshape_of_it_fails() {
        let l = Layout::contiguous(&[2, 3]).permute(&[1, 0]).unwrap();
        assert_eq!(l.shape(), &[3, 2]);
        assert_eq!(l.strides(), &[1, 3]);
        assert!(!l.is_contiguous());
        assert_eq!(l.reshape(&[6]), None);
        // Splitting one axis of a transposed view is still a view.
        let r = l.reshape(&[3, 2, 1]).unwrap();
        assert_eq!(r.strides()[..2], [1, 3]);
    }

    #[test]
    fn reshape_of_strided_view_merges_only_uniform_runs() {
        // x[:, ::2] of a (4, 6) array is one uniform stride-2 run.
        let l = Layout::new(vec![4, 3], vec![6, 2], 0);
        assert_eq!(l.reshape(&[12]).unwrap().strides(), &[2]);
        // x[:, :3] of a (4, 6) array has a gap after every row.
        let l = Layout::new(vec![4, 3], vec![6, 1], 0);
        assert_eq!(l.reshape(&[12]), None);
        let r = l.reshape(&[2, 2, 3]).unwrap();
        assert_eq!(r.strides(), &[12, 6, 1]);
    }

    #[test]
    fn offsets_follow_negative_strides() {
        let l = Layout::new(vec![3], vec![-2], 4);
        assert_eq!(l.offsets().collect::<Vec<_>>(), vec![4, 2, 0]);
        assert_eq!(l.span(), Some((0, 4)));
    }

    #[test]
    fn broadcast_uses_zero_strides_and_is_self_overlapping() {
        let l = Layout::contiguous(&[3, 1]).broadcast_to(&[2, 3, 4]).unwrap();
        assert_eq!(l.strides(), &[0, 1, 0]);
        assert!(l.has_self_overlap());
        assert!(Layout::contiguous(&[3]).broadcast_to(&[4]).is_err());
    }

    #[test]
    fn squeeze_rejects_non_unit_axis() {
        let l = Layout::contiguous(&[1, 3, 1]);
        assert_eq!(l.squeeze(None).unwrap().shape(), &[3]);
        assert_eq!(l.squeeze(Some(&[-1])).unwrap().shape(), &[1, 3]);
        assert!(l.squeeze(Some(&[1])).is_err());
    }
}
