//! The separable folds of a 1-D or 2-D pool plane ([`Reduce::planar`]):
//! rows first, then columns, a block of rows or a ring of them at a time.

use crate::dtype::Num;

use super::reduce::{Last, Plan, Reduce, Scratch};

impl<T: Num, S> Reduce<'_, T, S>
where
    S: Fn(T, T) -> T + Sync,
{
    /// One 2-D plane, separably, with `step` (this reduction's own or, for
    /// max, one the plane allows; see [`Reduce::planes`]) and `last`: each
    /// input row a window reads is first folded along the row, every output
    /// column's taps inside the input into one row result
    /// ([`Reduce::fold_row`]), once per input row; then each output row
    /// folds the row results of its kernel rows inside the input, column by
    /// column ([`Reduce::fold_slices`]). Row results are kept for a block
    /// of rows, folded a block at a time ([`Reduce::planar_flat`]) or,
    /// when a window reaches past the end of a split row's phase
    /// (`ceil_mode`), in a ring of as many rows as a window spans
    /// ([`Reduce::planar_ring`]); each input row is read and folded once
    /// (once per block that reads it), and every step is a straight vector
    /// loop over a block or a row. A 3×3 window costs 2 steps along the row and 2 down the
    /// column instead of 9. `last` then finishes the plane's outputs.
    ///
    /// Max stays bit for bit the gather table's fold (rows, then columns,
    /// from `init`): that fold returns the first NaN in tap order if there
    /// is one, else the first tap (or `init`) equal to the largest value
    /// (a tap replaces the accumulator only when strictly greater). A row
    /// result is that same pick within its row; folding the row results in
    /// row order then picks the first row holding a NaN, and its first NaN,
    /// or else the first row holding the largest value, and its first tap
    /// with it (earlier rows' results are smaller, later ones not larger;
    /// `init` is the least value of T, so it is kept only if every tap
    /// equals it, bit for bit). Integers likewise. Average sums each row
    /// first, so a sum may differ from the table's in its last bits
    /// (rounding in another order; never in the sign of a zero).
    ///
    /// With `WATCH`, returns whether any input the plane's folds read is a
    /// NaN (inputs no window reads may go unwatched); else `false`.
    #[inline(always)]
    pub(super) fn planar<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        last: Last,
        xp: &[T],
        dst: &mut [T],
        plan: &Plan<T>,
        scratch: &mut Scratch<T>,
    ) -> bool {
        let w = &plan.w;
        let ow = w.output;
        if ow == 0 {
            return false;
        }
        if w.stride == 1 && ow <= w.input {
            self.planar_flat::<F, WATCH, false>(step, last, xp, dst, plan, scratch)
        } else if ow <= plan.len {
            self.planar_flat::<F, WATCH, true>(step, last, xp, dst, plan, scratch)
        } else {
            self.planar_ring::<F, WATCH>(step, last, xp, dst, plan, scratch)
        }
    }

    /// [`Reduce::planar`] through a ring of row results, for output rows
    /// wider than the input's (stride 1) or a phase's (strided): each
    /// input row a window reads is folded (split into phases when strided)
    /// when its first output row needs it, then each output row folds its
    /// rows' results, then `last` finishes it. With `WATCH`, the plane is
    /// scanned for NaN first, in one pass.
    #[inline(always)]
    pub(super) fn planar_ring<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        last: Last,
        xp: &[T],
        dst: &mut [T],
        plan: &Plan<T>,
        scratch: &mut Scratch<T>,
    ) -> bool {
        let w = &plan.w;
        let ow = w.output;
        if WATCH && any_nan(xp) {
            return true;
        }
        let Scratch {
            rows: ring,
            phased: split,
            tags,
            starts,
            ..
        } = scratch;
        tags.fill(usize::MAX);
        let split = &mut split[..if w.stride == 1 { 0 } else { w.stride * plan.len }];
        for (oh, row) in dst.chunks_exact_mut(ow).enumerate() {
            let (lo, hi) = plan.rows[oh];
            starts.clear();
            for &(ih, slot) in &plan.row_at[lo..hi] {
                if tags[slot] != ih {
                    tags[slot] = ih;
                    let src = &xp[ih * w.input..(ih + 1) * w.input];
                    let src = if w.stride == 1 {
                        src
                    } else {
                        phases(src, w.stride, split);
                        &split[..]
                    };
                    self.fold_row(step, src, &mut ring[slot * ow..(slot + 1) * ow], plan);
                }
                starts.push(slot * ow);
            }
            self.fold_slices::<F, false>(step, row, ring, starts);
        }
        last.all(dst, &plan.divs);
        false
    }

    /// [`Reduce::planar`] for output rows no wider than the input's (at
    /// stride 1) or, with `SPLIT`, than a phase of a split row, a block
    /// of rows at a time rather than a row at a time: the row results of
    /// the block's input rows are kept with the input's row length (or a
    /// phase's, the block's rows being split into phases first, see
    /// [`Reduce::fold_split_rows`]), so each of the kernel's taps is one vector loop
    /// over the block (values a tap reads across a row's end land in the
    /// edge columns, which are then folded row by row, or past the
    /// output's width, which nothing reads). With same-size output rows
    /// and a stride-1 column axis, the block's output rows whose kernel
    /// rows are all inside fold the same way, one loop per kernel row (a
    /// 3-row mean divides in that loop); the others row by row, and `last`
    /// finishes the block's other output rows. A block covers about
    /// [`BLOCK`] elements, so its input, row results and output stay in
    /// the L1 cache; the input rows two blocks share are folded in each. Every output folds the same
    /// taps in the same order as [`Reduce::planar_ring`], so the results
    /// are the same bits. With `WATCH`, the row folds watch their inputs for
    /// NaN: the first tap's loop and the few inputs only later taps read,
    /// and each edge tap; split rows, every input as they are split.
    #[inline(always)]
    pub(super) fn planar_flat<F: Fn(T, T) -> T, const WATCH: bool, const SPLIT: bool>(
        &self,
        step: &F,
        last: Last,
        xp: &[T],
        dst: &mut [T],
        plan: &Plan<T>,
        scratch: &mut Scratch<T>,
    ) -> bool {
        let (h, w) = (&plan.h, &plan.w);
        let (iw, ow) = (w.input, w.output);
        let hspan = (h.kernel - 1) * h.dilation;
        // Row results are kept at the input's row length, or a phase's
        // when the rows are split.
        let split = SPLIT;
        let pitch = if split { plan.len } else { iw };
        // The output rows whose kernel rows are all inside, when they can
        // fold as one loop per kernel row.
        let (mut vlo, mut vhi) = (0, 0);
        if h.stride == 1 && ow == pitch {
            let spans = (0..h.kernel).map(|k| h.outputs_inside(k));
            vlo = spans.clone().map(|r| r.0).max().unwrap_or(0);
            vhi = spans.map(|r| r.1).min().unwrap_or(0);
        }
        let block = plan.block;
        let Scratch {
            rows,
            phased,
            at,
            starts,
            ..
        } = scratch;
        let mut nan = false;
        for oa in (0..h.output).step_by(block) {
            let ob = (oa + block).min(h.output);
            // The input rows the block's windows read.
            let ia = (h.start(oa).max(0) as usize).min(h.input);
            let ib = ((h.start(ob - 1) + hspan as i64 + 1).max(0) as usize).min(h.input);
            let ib = ib.max(ia);
            let buf = &mut rows[..(ib - ia) * pitch];
            nan |= if split {
                let b = (ib - ia) * pitch;
                let src = &xp[ia * iw..ib * iw];
                let phased = &mut phased[..b * w.stride];
                self.fold_split_rows::<F, WATCH>(step, src, phased, buf, plan, at)
            } else {
                self.fold_flat_rows::<F, WATCH>(step, xp, (ia, ib), buf, plan, at)
            };
            let (ma, mb) = (vlo.max(oa), vhi.min(ob));
            // Whether the inner rows were divided as they were folded.
            let mut divided = false;
            if ma < mb {
                starts.clear();
                starts.extend(
                    (0..h.kernel).map(|k| ((h.start(ma) + (k * h.dilation) as i64) as usize - ia) * pitch),
                );
                let out = &mut dst[ma * ow..mb * ow];
                if let (Last::Divide, &[p, q, r]) = (last, &starts[..]) {
                    // A 3-row mean divides in the column fold's loop: one
                    // pass less over the output (the same operations, so
                    // the same bits as folding, then `Last::all`).
                    let len = out.len();
                    let divs = &plan.divs[ma * ow..ma * ow + len];
                    let (a, b, c) = (&buf[p..p + len], &buf[q..q + len], &buf[r..r + len]);
                    for i in 0..len {
                        out[i] = Last::mean(step(step(a[i], b[i]), c[i]), divs[i]);
                    }
                    divided = true;
                } else {
                    self.fold_slices::<F, false>(step, out, buf, starts);
                }
            }
            for oh in oa..ob {
                if ma <= oh && oh < mb {
                    continue;
                }
                let (a, b) = plan.rows[oh];
                starts.clear();
                starts.extend(plan.row_at[a..b].iter().map(|&(ih, _)| (ih - ia) * pitch));
                self.fold_slices::<F, false>(step, &mut dst[oh * ow..(oh + 1) * ow], buf, starts);
            }
            if WATCH && nan {
                return true;
            }
            // The rows not finished yet: all, or those around `ma..mb`.
            let done = if divided { ma..mb } else { ob..ob };
            for (ra, rb) in [(oa, done.start), (done.end, ob)] {
                if ra < rb {
                    let divs = plan.divs.get(ra * ow..).unwrap_or(&[]);
                    last.all(&mut dst[ra * ow..rb * ow], divs);
                }
            }
        }
        nan
    }

    /// The row results of input rows `ia..ib` of a stride-1 row axis, at
    /// the input's row length in `buf`: each kernel tap is one vector loop
    /// over the rows (see [`Reduce::planar_flat`]), then the edge columns
    /// are folded again. With `WATCH`, whether an input they read is NaN.
    #[inline(always)]
    pub(super) fn fold_flat_rows<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        xp: &[T],
        (ia, ib): (usize, usize),
        buf: &mut [T],
        plan: &Plan<T>,
        at: &mut Vec<usize>,
    ) -> bool {
        let w = &plan.w;
        let iw = w.input;
        let span = (w.kernel - 1) * w.dilation;
        let n = plan.h.input * iw;
        let mut nan = false;
        if plan.mid.0 < plan.mid.1 {
            // Flat position j (row j / iw, column j % iw) reads tap k
            // at j + k * dilation - pad_begin.
            let lo = (ia * iw).max(w.pad_begin);
            let hi = (ib * iw).min((n + w.pad_begin).saturating_sub(span));
            if lo < hi {
                at.clear();
                at.extend((0..w.kernel).map(|k| k * w.dilation));
                let out = &mut buf[lo - ia * iw..hi - ia * iw];
                let src = &xp[lo - w.pad_begin..];
                nan |= self.fold_slices::<F, WATCH>(step, out, src, at);
                nan |= WATCH && any_nan(&src[hi - lo..hi - lo + span]);
            }
        }
        let src = &xp[ia * iw..ib * iw];
        nan | self.fold_edge_columns::<F, WATCH>(step, src, buf, plan, iw, &plan.edge_at)
    }

    /// The row results of the input rows `src` of a strided row axis, at a
    /// phase's length in `buf`: the rows are split into phases as one block
    /// (`phased` holds phase p of every row as `p * b..(p + 1) * b`, with
    /// `b = buf.len()`; a row ends where a phase does when the stride
    /// divides the row), each kernel tap is then one vector loop over the
    /// block, as in [`Reduce::fold_flat_rows`], and the edge columns are
    /// folded again. With `WATCH`, whether any input is NaN (the split
    /// reads them all).
    #[inline(always)]
    pub(super) fn fold_split_rows<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        src: &[T],
        phased: &mut [T],
        buf: &mut [T],
        plan: &Plan<T>,
        at: &mut Vec<usize>,
    ) -> bool {
        let (s, len, iw) = (plan.w.stride, plan.len, plan.w.input);
        let b = buf.len();
        let nan = split_block::<T, WATCH>(src, s, iw, len, phased);
        let (lo, hi) = plan.mid;
        if lo < hi && b > 0 {
            // Flat position j (row j / len, column j % len) of a middle
            // window reads tap k at `p_k * b + i_k + (j - lo)`.
            at.clear();
            at.extend(plan.taps.iter().map(|&t| (t / len) * b + t % len));
            let out = &mut buf[lo..b - len + hi];
            self.fold_slices::<F, false>(step, out, phased, at);
        }
        at.clear();
        at.extend(plan.edge_at.iter().map(|&t| (t / len) * b + t % len));
        self.fold_edge_columns::<F, false>(step, phased, buf, plan, len, at);
        nan
    }

    /// One input row's results: `out[ow]` folds window `ow`'s taps inside
    /// the row (`src`, split into phases when strided) in kernel order,
    /// starting from the first tap (`init` when none is inside). The
    /// windows every tap reads inside take their taps as `K` slices side by
    /// side ([`Reduce::fold_slices`]), the few at the edges one by one.
    #[inline(always)]
    pub(super) fn fold_row<F: Fn(T, T) -> T>(&self, step: &F, src: &[T], out: &mut [T], plan: &Plan<T>) {
        let (lo, hi) = plan.mid;
        if lo < hi {
            self.fold_slices::<F, false>(step, &mut out[lo..hi], src, &plan.taps);
        }
        self.fold_edges(step, src, out, plan);
    }

    /// The edge windows of every row's results in `out` (rows `pitch`
    /// apart, read from `src` at the same offsets: window `o`'s taps at
    /// `edge_at`, plan.edges' ranges, from each row's start), an edge
    /// column at a time down the rows: a window's taps sit at the same
    /// places in every row. The same folds as [`Reduce::fold_edges`] row
    /// by row; with `WATCH`, whether any tap is NaN.
    #[inline(always)]
    pub(super) fn fold_edge_columns<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        src: &[T],
        out: &mut [T],
        plan: &Plan<T>,
        pitch: usize,
        edge_at: &[usize],
    ) -> bool {
        let iw = pitch;
        let n = out.len() / iw.max(1);
        let mut nan = false;
        // Index loops over the rows: an iterator's `for_each` may be left
        // out of line, built for the baseline (a tenth of a 3x3/1 max
        // pool's time, before).
        for &(o, a, b) in &plan.edges {
            match edge_at[a..b] {
                [] => {
                    for r in 0..n {
                        out[r * iw + o] = self.init;
                    }
                }
                [p] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && is_nan(s[p]);
                        out[r * iw + o] = s[p];
                    }
                }
                [p, q] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && (is_nan(s[p]) | is_nan(s[q]));
                        out[r * iw + o] = step(s[p], s[q]);
                    }
                }
                [p, q, t] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && (is_nan(s[p]) | is_nan(s[q]) | is_nan(s[t]));
                        out[r * iw + o] = step(step(s[p], s[q]), s[t]);
                    }
                }
                [p, ref more @ ..] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && is_nan(s[p]);
                        let mut m = s[p];
                        for &i in more {
                            nan |= WATCH && is_nan(s[i]);
                            m = step(m, s[i]);
                        }
                        out[r * iw + o] = m;
                    }
                }
            }
        }
        nan
    }

    /// The edge windows of one row's results (see [`Reduce::fold_row`]).
    #[inline(always)]
    pub(super) fn fold_edges<F: Fn(T, T) -> T>(&self, step: &F, src: &[T], out: &mut [T], plan: &Plan<T>) {
        for &(o, a, b) in &plan.edges {
            let mut taps = plan.edge_at[a..b].iter().map(|&i| src[i]);
            out[o] = match taps.next() {
                Some(first) => taps.fold(first, step),
                None => self.init,
            };
        }
    }

    /// `out[i]` folds `src[starts[k] + i]` over k in order, up to three
    /// slices per pass: a row's middle windows over their kernel taps, or
    /// output rows over their kernel rows' results (inside the input);
    /// `init` when there are none. Folding an output into `init` first is
    /// left to [`Last::all`]: a max step from `init`, the least value of
    /// T, returns the tap bit for bit (it keeps `init` only on a tap equal
    /// to it, with the same bits), and a sum from `+0` only turns an all
    /// `-0` sum into `+0`, which adding `+0` last does too. With `WATCH`,
    /// returns whether the first slice holds a NaN (else `false`).
    #[inline(always)]
    pub(super) fn fold_slices<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        out: &mut [T],
        src: &[T],
        starts: &[usize],
    ) -> bool {
        // Index loops over slices cut to `out`'s length: they vectorize and
        // inline into a `PlaneOp`'s instruction set (an iterator's
        // `for_each` may be left out of line, built for the baseline).
        let n = out.len();
        let r = |k: usize| &src[starts[k]..starts[k] + n];
        let first = starts.len().min(3);
        let mut nan = false;
        match first {
            0 => out.fill(self.init),
            1 => {
                out.copy_from_slice(r(0));
                nan = WATCH && any_nan(r(0));
            }
            2 => {
                let (a, b) = (r(0), r(1));
                for i in 0..n {
                    out[i] = step(a[i], b[i]);
                    nan |= WATCH && is_nan(a[i]);
                }
            }
            _ => {
                let (a, b, c) = (r(0), r(1), r(2));
                for i in 0..n {
                    out[i] = step(step(a[i], b[i]), c[i]);
                    nan |= WATCH && is_nan(a[i]);
                }
            }
        }
        let mut k = first;
        while k < starts.len() {
            if k + 1 < starts.len() {
                let (a, b) = (r(k), r(k + 1));
                for i in 0..n {
                    out[i] = step(step(out[i], a[i]), b[i]);
                }
                k += 2;
            } else {
                let a = r(k);
                for i in 0..n {
                    out[i] = step(out[i], a[i]);
                }
                k += 1;
            }
        }
        nan
    }
}

/// About how many elements of input rows [`Reduce::planar_flat`] folds
/// at a time (8 KiB of f32).
pub(super) const BLOCK: usize = 2048;

/// Whether `v` is NaN, for any numeric T.
#[allow(clippy::eq_op)]
#[inline(always)]
pub(super) fn is_nan<T: Num>(v: T) -> bool {
    v != v
}

/// Whether any of `v` is NaN.
#[inline(always)]
pub(super) fn any_nan<T: Num>(v: &[T]) -> bool {
    v.iter().fold(false, |n, &v| n | is_nan(v))
}

/// Splits the rows `src` (`iw` long) into their `s` phases as one block:
/// `phased[p * b + r * len + j] = src[r * iw + j * s + p]`, where
/// `b = phased.len() / s` and `len = iw.div_ceil(s)` (a phase's missing
/// tail is left as is; no window reads it). When `s` divides the rows,
/// row r's phase ends where row r + 1's starts, so each phase is one loop
/// over the block. With `WATCH`, returns whether any of `src` is NaN.
#[inline(always)]
pub(super) fn split_block<T: Num, const WATCH: bool>(
    src: &[T],
    s: usize,
    iw: usize,
    len: usize,
    phased: &mut [T],
) -> bool {
    let b = phased.len() / s;
    if b == 0 || iw == 0 {
        return false;
    }
    if !iw.is_multiple_of(s) {
        for (r, row) in src.chunks_exact(iw).enumerate() {
            for (p, phase) in phased.chunks_exact_mut(b).enumerate() {
                let phase = &mut phase[r * len..(r + 1) * len];
                for j in 0..iw.saturating_sub(p).div_ceil(s) {
                    phase[j] = row[j * s + p];
                }
            }
        }
        return WATCH && any_nan(src);
    }
    let src = &src[..s * b];
    if s == 2 {
        let (even, odd) = phased.split_at_mut(b);
        let mut nan = false;
        for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(src.chunks_exact(2)) {
            (*e, *o) = (pair[0], pair[1]);
            nan |= WATCH && (is_nan(pair[0]) | is_nan(pair[1]));
        }
        return nan;
    }
    for (p, phase) in phased.chunks_exact_mut(b).enumerate() {
        for j in 0..b {
            phase[j] = src[j * s + p];
        }
    }
    WATCH && any_nan(src)
}

/// Splits `src` into its `s` phases: `out[p * len + j] = src[j * s + p]`
/// with `len = ceil(src.len() / s)` (a phase's missing tail is left as is;
/// no window reads it).
#[inline(always)]
pub(super) fn phases<T: Copy>(src: &[T], s: usize, out: &mut [T]) {
    let len = src.len().div_ceil(s);
    if s == 2 {
        let (even, odd) = out.split_at_mut(len);
        for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(src.chunks_exact(2)) {
            *e = pair[0];
            *o = pair[1];
        }
        if src.len() % 2 == 1 {
            even[len - 1] = src[src.len() - 1];
        }
        return;
    }
    for (j, chunk) in src.chunks(s).enumerate() {
        for (p, &v) in chunk.iter().enumerate() {
            out[p * len + j] = v;
        }
    }
}
