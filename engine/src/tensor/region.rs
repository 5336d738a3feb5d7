//! The elements a view reaches, walked in logical order as few, long runs.
//!
//! A [`Region`] is a layout with its length-1 and broadcast (zero-stride)
//! axes dropped and its mergeable neighbours merged: a C-contiguous view,
//! whatever its rank, becomes one run, and a broadcast view is walked over its
//! distinct elements only.

use crate::tensor::Layout;

/// Receives bytes in order (a hasher or a copy).
pub trait Sink {
    fn push(&mut self, bytes: &[u8]);

    /// Pushes `n` elements of `es` bytes, the first at element `first`,
    /// `stride` elements apart.
    fn push_strided(&mut self, data: &[u8], first: isize, n: usize, stride: isize, es: usize) {
        for j in 0..n as isize {
            let a = (first + j * stride) as usize * es;
            self.push(&data[a..a + es]);
        }
    }
}

impl Sink for Vec<u8> {
    fn push(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn push_strided(&mut self, data: &[u8], first: isize, n: usize, stride: isize, es: usize) {
        gather(self, data, first, n, stride, es);
    }
}

/// Appends strided elements to `out`: one resize, then fixed-size copies
/// (the element size is a constant in each arm, so each copy is one move).
pub fn gather(out: &mut Vec<u8>, data: &[u8], first: isize, n: usize, stride: isize, es: usize) {
    fn fixed<const ES: usize>(out: &mut Vec<u8>, data: &[u8], first: isize, n: usize, stride: isize) {
        let start = out.len();
        out.resize(start + n * ES, 0);
        for (j, dst) in out[start..].chunks_exact_mut(ES).enumerate() {
            let a = (first + j as isize * stride) as usize * ES;
            dst.copy_from_slice(&data[a..a + ES]);
        }
    }
    match es {
        1 => fixed::<1>(out, data, first, n, stride),
        4 => fixed::<4>(out, data, first, n, stride),
        8 => fixed::<8>(out, data, first, n, stride),
        _ => {
            for j in 0..n as isize {
                let a = (first + j * stride) as usize * es;
                out.extend_from_slice(&data[a..a + es]);
            }
        }
    }
}

/// A view's distinct elements, in logical order.
#[derive(Clone, Debug)]
pub struct Region {
    dims: Vec<usize>,
    strides: Vec<isize>,
    /// Offset of the first element in logical order.
    start: isize,
    /// Kept axes before merging, as (length, C-order stride in the original
    /// view), to map walk positions back to the view's flat indices.
    kept: Vec<(usize, usize)>,
    /// Elements walked (0 for an empty view).
    len: usize,
    /// The largest stride of the view's own axes, before merging.
    max_stride: usize,
}

impl Region {
    pub fn new(l: &Layout) -> Region {
        if l.size() == 0 {
            return Region {
                dims: Vec::new(),
                strides: Vec::new(),
                start: 0,
                kept: Vec::new(),
                len: 0,
                max_stride: 1,
            };
        }
        let shape = l.shape();
        let mut c_stride = vec![1usize; shape.len()];
        for ax in (0..shape.len().saturating_sub(1)).rev() {
            c_stride[ax] = c_stride[ax + 1] * shape[ax + 1];
        }
        let (mut dims, mut strides, mut kept) = (Vec::new(), Vec::<isize>::new(), Vec::new());
        for (ax, (&d, &s)) in shape.iter().zip(l.strides()).enumerate() {
            if d == 1 || s == 0 {
                continue;
            }
            kept.push((d, c_stride[ax]));
            match (dims.last_mut(), strides.last_mut()) {
                (Some(pd), Some(ps)) if *ps == s * d as isize => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    dims.push(d);
                    strides.push(s);
                }
            }
        }
        let len = dims.iter().product();
        let max_stride = shape
            .iter()
            .zip(l.strides())
            .filter(|&(&d, &s)| d > 1 && s != 0)
            .map(|(_, s)| s.unsigned_abs())
            .max()
            .unwrap_or(1);
        Region {
            max_stride,
            dims,
            strides,
            start: l.offset() as isize,
            kept,
            len,
        }
    }

    /// Number of elements walked: the view's distinct positions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `(first offset, count)` when the walk is one stride-1 run.
    pub fn contiguous(&self) -> Option<(usize, usize)> {
        match (self.len, self.dims.as_slice(), self.strides.as_slice()) {
            (0, _, _) => Some((0, 0)),
            (_, [], _) => Some((self.start as usize, 1)),
            (_, [d], [1]) => Some((self.start as usize, *d)),
            _ => None,
        }
    }

    /// Lowest and highest offsets reached, `None` when empty.
    pub fn span(&self) -> Option<(usize, usize)> {
        if self.len == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.start, self.start);
        for (&d, &s) in self.dims.iter().zip(&self.strides) {
            let reach = (d as isize - 1) * s;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        Some((lo as usize, hi as usize))
    }

    /// True when the elements fill their span with no gaps and no repeats
    /// (C-contiguous, transposed or reversed views).
    pub fn is_dense(&self) -> bool {
        let mut axes: Vec<(usize, usize)> = self
            .dims
            .iter()
            .zip(&self.strides)
            .map(|(&d, &s)| (s.unsigned_abs(), d))
            .collect();
        axes.sort_unstable();
        let mut expected = 1usize;
        for (s, d) in axes {
            if s != expected {
                return false;
            }
            expected = expected.saturating_mul(d);
        }
        true
    }

    /// Calls `f(first offset, count, stride)` for each innermost run, in
    /// logical order.
    pub fn for_each_run(&self, mut f: impl FnMut(isize, usize, isize)) {
        if self.len == 0 {
            return;
        }
        let (Some(&inner_d), Some(&inner_s)) = (self.dims.last(), self.strides.last()) else {
            f(self.start, 1, 1);
            return;
        };
        let outer = self.dims.len() - 1;
        let mut idx = vec![0usize; outer];
        let mut off = self.start;
        loop {
            f(off, inner_d, inner_s);
            let mut ax = outer;
            loop {
                if ax == 0 {
                    return;
                }
                ax -= 1;
                idx[ax] += 1;
                off += self.strides[ax];
                if idx[ax] < self.dims[ax] {
                    break;
                }
                off -= self.strides[ax] * self.dims[ax] as isize;
                idx[ax] = 0;
            }
        }
    }

    /// Element offsets in walk order.
    pub fn offsets(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.len);
        self.for_each_run(|o, n, s| out.extend((0..n as isize).map(|j| (o + j * s) as usize)));
        out
    }

    /// The view's flat (C-order) index of walk position `k`; for broadcast
    /// views, of the first index that reaches the element.
    pub fn flat_index(&self, mut k: usize) -> usize {
        let mut flat = 0;
        for &(d, cs) in self.kept.iter().rev() {
            flat += (k % d) * cs;
            k /= d;
        }
        flat
    }

    /// True when every offset fits a buffer of `n` elements.
    pub fn fits(&self, n: usize) -> bool {
        self.span().is_none_or(|(_, hi)| hi < n)
    }

    /// Pushes the view's elements (each `es` bytes) in walk order.
    pub fn feed_view(&self, data: &[u8], es: usize, sink: &mut impl Sink) {
        self.for_each_run(|o, n, s| {
            if s == 1 {
                let a = o as usize * es;
                sink.push(&data[a..a + n * es]);
            } else {
                sink.push_strided(data, o, n, s, es);
            }
        });
    }

    /// Which buffer elements the view reaches, `None` when empty.
    pub fn mask(&self) -> Option<Mask> {
        let (lo, hi) = self.span()?;
        if self.is_dense() {
            return Some(Mask { lo, hi, bits: None });
        }
        let mut bits = vec![0u64; (hi - lo) / 64 + 1];
        self.for_each_run(|o, n, s| {
            for j in 0..n as isize {
                let e = (o + j * s) as usize - lo;
                bits[e / 64] |= 1 << (e % 64);
            }
        });
        Some(Mask {
            lo,
            hi,
            bits: Some(bits),
        })
    }

    /// Guard band width on each side of the span, in elements: one
    /// innermost run's extent or the largest stride, whichever is longer
    /// (an off-by-one or wrong-stride store lands that close), at least one
    /// element and at most [`MAX_BAND_BYTES`].
    pub fn band(&self, es: usize) -> usize {
        let run = match (self.dims.last(), self.strides.last()) {
            (Some(&d), Some(&s)) => d * s.unsigned_abs(),
            _ => 1,
        };
        run.max(self.max_stride)
            .clamp(1, (MAX_BAND_BYTES / es.max(1)).max(1))
    }

    /// Calls `f(start, end)` (end exclusive, increasing) for the buffer
    /// elements of `n` the view does not reach, limited to `band` elements
    /// on each side of the span (`None`: the whole buffer). The gaps inside
    /// the span always count. An empty view's outside is the whole buffer.
    pub fn for_each_outside_range(&self, n: usize, band: Option<usize>, mut f: impl FnMut(usize, usize)) {
        let Some(mask) = self.mask() else {
            f(0, n);
            return;
        };
        let band = band.unwrap_or(n);
        let before = mask.lo.saturating_sub(band);
        if before < mask.lo {
            f(before, mask.lo);
        }
        mask.for_each_gap(&mut f);
        let after = (mask.hi + 1).saturating_add(band).min(n);
        if mask.hi + 1 < after {
            f(mask.hi + 1, after);
        }
    }

    /// Pushes the buffer elements the view does not reach (within `band`
    /// of the span, or all with `None`), in increasing offset order: the
    /// part before the span, the gaps inside it, and the part after.
    /// Returns how many elements that was.
    pub fn feed_outside(&self, data: &[u8], es: usize, band: Option<usize>, sink: &mut impl Sink) -> usize {
        let mut count = 0;
        self.for_each_outside_range(data.len() / es, band, |a, b| {
            sink.push(&data[a * es..b * es]);
            count += b - a;
        });
        count
    }
}

/// Upper bound of one side of the guard band.
pub const MAX_BAND_BYTES: usize = 16 * 1024;

/// The set of buffer offsets a view reaches.
pub struct Mask {
    lo: usize,
    hi: usize,
    /// One bit per offset in `lo..=hi`; `None` when every offset is reached.
    bits: Option<Vec<u64>>,
}

impl Mask {
    /// Calls `f(start, end)` for each run of unreached offsets inside the
    /// span (end exclusive), in order. Runs are found a 64-bit word at a
    /// time; a run that crosses a word boundary comes in two calls.
    pub fn for_each_gap(&self, mut f: impl FnMut(usize, usize)) {
        let Some(bits) = &self.bits else { return };
        let len = self.hi - self.lo + 1;
        for (w, &word) in bits.iter().enumerate() {
            let base = w * 64;
            let valid = if len - base >= 64 {
                u64::MAX
            } else {
                (1u64 << (len - base)) - 1
            };
            let mut free = !word & valid;
            while free != 0 {
                let start = free.trailing_zeros() as usize;
                let run = (free >> start).trailing_ones() as usize;
                f(self.lo + base + start, self.lo + base + start + run);
                if start + run >= 64 {
                    break;
                }
                free &= !(((1u64 << run) - 1) << start);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(l: &Layout) -> Vec<usize> {
        l.offsets().collect()
    }

    #[test]
    fn contiguous_views_are_one_run_whatever_their_rank() {
        let l = Layout::contiguous(&[2, 3, 4]);
        let r = Region::new(&l);
        assert_eq!(r.contiguous(), Some((0, 24)));
        assert!(r.is_dense());
        // x[1:3, :] of a (4, 5) array.
        let l = Layout::new(vec![2, 5], vec![5, 1], 5);
        assert_eq!(Region::new(&l).contiguous(), Some((5, 10)));
    }

    #[test]
    fn walks_follow_logical_order() {
        for l in [
            Layout::contiguous(&[3, 4]).permute(&[1, 0]).unwrap(),
            Layout::new(vec![4, 3], vec![6, 2], 1),
            Layout::new(vec![3, 2], vec![-4, 1], 8),
            Layout::new(vec![2, 1, 3], vec![3, 7, -1], 2),
        ] {
            let r = Region::new(&l);
            assert_eq!(r.offsets(), brute(&l), "{l:?}");
            for (k, _) in brute(&l).iter().enumerate() {
                assert_eq!(r.flat_index(k), k);
            }
        }
    }

    #[test]
    fn broadcast_axes_are_walked_once() {
        let l = Layout::contiguous(&[3]).broadcast_to(&[4, 3]).unwrap();
        let r = Region::new(&l);
        assert_eq!(r.offsets(), vec![0, 1, 2]);
        assert_eq!(r.flat_index(2), 2);
        let l = Layout::contiguous(&[3, 1]).broadcast_to(&[3, 4]).unwrap();
        let r = Region::new(&l);
        assert_eq!(r.offsets(), vec![0, 1, 2]);
        assert_eq!(r.flat_index(1), 4);
    }

    #[test]
    fn gaps_are_found_across_word_boundaries() {
        for (shape, strides, off) in [
            (vec![40], vec![3], 1usize),
            (vec![3, 30], vec![70, 1], 2),
            (vec![100], vec![2], 0),
        ] {
            let l = Layout::new(shape, strides, off);
            let r = Region::new(&l);
            let m = r.mask().unwrap();
            let mut gaps = Vec::new();
            m.for_each_gap(|a, b| gaps.extend(a..b));
            let (lo, hi) = r.span().unwrap();
            let want: Vec<usize> = (lo..=hi).filter(|o| !l.offsets().any(|x| x == *o)).collect();
            assert_eq!(gaps, want, "{l:?}");
        }
    }

    #[test]
    fn guard_band_is_the_gaps_and_a_run_or_stride_on_each_side() {
        let ranges = |l: &Layout, n: usize| {
            let r = Region::new(l);
            let mut v = Vec::new();
            r.for_each_outside_range(n, Some(r.band(4)), |a, b| v.push((a, b)));
            (r.band(4), v)
        };
        // Row 1 of a 100 x 64 matrix: one row on each side.
        let row = Layout::new(vec![64], vec![1], 64);
        assert_eq!(ranges(&row, 6400), (64, vec![(0, 64), (128, 192)]));
        // Column 3 of a 10 x 8 matrix: the gaps, and a stride on each side
        // (clipped by the buffer's start).
        let col = Layout::new(vec![10], vec![8], 3);
        let (band, v) = ranges(&col, 200);
        assert_eq!(band, 80, "one run: 10 elements 8 apart");
        assert_eq!(v.first(), Some(&(0, 3)));
        assert_eq!(v.last(), Some(&(76, 156)));
        // The largest stride of the view, not of its merged walk.
        let l = Layout::new(vec![2, 2, 2], vec![-16, -8, 4], 36);
        assert_eq!(Region::new(&l).band(4), 16);
        // Capped at MAX_BAND_BYTES.
        let big = Layout::new(vec![1 << 20], vec![1], 1 << 21);
        assert_eq!(Region::new(&big).band(4), MAX_BAND_BYTES / 4);
    }

    #[test]
    fn outside_is_the_complement_in_offset_order() {
        let data: Vec<u8> = (0..10).collect();
        // every other element from 1 to 7: gaps at 2, 4, 6
        let l = Layout::new(vec![4], vec![2], 1);
        let mut out = Vec::new();
        let n = Region::new(&l).feed_outside(&data, 1, None, &mut out);
        assert_eq!(out, vec![0, 2, 4, 6, 8, 9]);
        assert_eq!(n, 6);
        let mut view = Vec::new();
        Region::new(&l).feed_view(&data, 1, &mut view);
        assert_eq!(view, vec![1, 3, 5, 7]);
    }
}
