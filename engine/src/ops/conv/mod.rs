//! `conv(x, w[, b])`: N-d convolution with ONNX's semantics (cross-correlation,
//! as every framework computes it): `x` is `[N, C, spatial…]`, `w` is
//! `[M, C/group, kernel…]`, the optional bias `b` is `[M]`, and the output
//! `[N, M, out…]`. Attrs: `group` (default 1) and the window attrs
//! (`strides`, `dilations`, `pads`, `auto_pad`; `kernel_shape`, when given,
//! must match `w`).
//!
//! A depthwise conv (groups of one input channel, 1-D or 2-D) goes through
//! the direct kernel of `kernels/depthwise.rs`. Otherwise each (image,
//! group) is one GEMM on the project's matmul path (faer):
//! `out[Mg, O] = w[Mg, Cg·K] · col[Cg·K, O]`, where `col` is the im2col
//! matrix. A 1×1 kernel with stride 1 and no padding reads the input plane
//! directly as `col`, without copying. Otherwise `col` is never whole: it is
//! built a block of columns (about [`COL_BLOCK`] elements) at a time and
//! each block multiplied while it is in cache, blocks in parallel
//! ([`MatMulElem::gemm_blocks`]); the whole matrix went through memory twice
//! and its serial copy kept the second core idle. 1-D and 2-D windows copy
//! whole runs of input rows (see [`im2col_planar`]); more spatial axes
//! gather through [`gather_table`].

mod channels_last;

use std::ops::Range;
use std::sync::Arc;

use ndarray::{ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD};

use crate::dtype::{DType, Float};
use crate::error::{attr_err, dtype_err, op_err, rank_err, shape_err, Result};
use crate::kernels::depthwise::{AxisTaps, Depthwise, DepthwiseElem, Weights};
use crate::kernels::winograd::{self, Tiles};
use crate::ops::linalg::{gemm_avx2_tiles, MatMulElem};
use crate::ops::weight_cache::WeightCache;
use crate::ops::widen;
use crate::ops::window::{gather_table, infer_spatial, planar, Axis1, Window, PAD, WINDOW_ATTRS};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::parallel::PARALLEL_MACS;
use crate::tensor::buffer_pool::Scratch;
use crate::tensor::Tensor;

/// `conv` with its window and group count.
#[derive(Clone, Debug)]
pub struct Conv {
    pub window: Window,
    pub group: usize,
    /// The Winograd transform of the last weights (3×3 stride-1 convs).
    winograd: WeightCache,
    /// The last weights packed for 1×1 convs on channels-last planes.
    packed: WeightCache,
}

/// Sizes of one convolution, checked against each other.
struct Dims {
    n: usize,
    c: usize,
    m: usize,
    axes: Vec<Axis1>,
}

impl Conv {
    pub fn new(window: Window, group: usize) -> Conv {
        Conv {
            window,
            group,
            winograd: WeightCache::default(),
            packed: WeightCache::default(),
        }
    }

    fn dims(&self, x: &[usize], w: &[usize], b: Option<&[usize]>) -> Result<Dims> {
        if x.len() < 3 || w.len() != x.len() {
            return rank_err(format!(
                "op 'conv': x must be [N, C, spatial…] and w [M, C/group, kernel…] of the same rank, got {x:?} and {w:?}"
            ));
        }
        let (c, m, g) = (x[1], w[0], self.group);
        if c % g != 0 || m % g != 0 || w[1] * g != c {
            return op_err(format!(
                "op 'conv': group {g} does not fit x {x:?} (C = {c}) and w {w:?} (needs w[1] · group = C and M divisible by group)"
            ));
        }
        if !self.window.kernel.is_empty() && self.window.kernel != w[2..] {
            return attr_err(format!(
                "op 'conv': attr 'kernel_shape' {:?} differs from the weight's {:?}",
                self.window.kernel,
                &w[2..]
            ));
        }
        if let Some(b) = b {
            if b != [m] {
                return shape_err(format!("op 'conv': bias must be [{m}], got {b:?}"));
            }
        }
        let axes = self.window.resolve("conv", &x[2..], &w[2..])?;
        Ok(Dims { n: x[0], c, m, axes })
    }
}

/// Refuses anything but float inputs of one dtype, naming `op` (shared
/// with `conv_transpose`).
pub(crate) fn check_float(op: &str, dtypes: &[DType]) -> Result<()> {
    if !dtypes[0].is_float() || dtypes.iter().any(|&d| d != dtypes[0]) {
        return dtype_err(format!(
            "op '{op}' needs float inputs of one dtype, got {}",
            dtypes
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// True when the window is the identity map of each plane (1×1, stride 1,
/// no padding), so the input plane is already the im2col matrix.
fn pointwise(axes: &[Axis1]) -> bool {
    axes.iter()
        .all(|a| a.kernel == 1 && a.stride == 1 && a.pad_begin == 0 && a.pad_end == 0)
}

/// How one channel plane becomes its `k` rows of the im2col matrix.
enum Im2col {
    /// A 1×1 window with stride 1 and no padding: the plane is the matrix.
    Direct,
    /// 1-D and 2-D windows: whole runs of a row are copied at once. With
    /// a column stride above 1 the plane is read split into its column
    /// phases ([`phase_split`]), so that those runs are contiguous too.
    Planar(Axis1, Axis1),
    /// Three spatial axes and more: through the gather table.
    Table(Vec<u32>),
}

impl Im2col {
    fn new(axes: &[Axis1]) -> Result<Im2col> {
        Ok(if pointwise(axes) {
            Im2col::Direct
        } else if let Some((h, w)) = planar(axes) {
            Im2col::Planar(h, w)
        } else {
            Im2col::Table(gather_table(axes)?)
        })
    }

    /// The column stride whose phases [`Im2col::rows`] reads the planes
    /// split into ([`phase_split`]), or `None` to read them as they are.
    fn phases(&self) -> Option<usize> {
        match self {
            Im2col::Planar(_, w) if w.stride > 1 => Some(w.stride),
            _ => None,
        }
    }

    /// The planes `x` split into their column phases ([`phase_split`]),
    /// where [`Im2col::rows`] reads them so. Only the rows and phases some
    /// tap reads are written: a 1×1 stride-2 conv reads a quarter of its
    /// input.
    ///
    /// With `par`, groups of whole planes split on the rayon pool.
    fn split<T: Float>(&self, x: &[T], par: bool) -> Option<Scratch<T>> {
        let (Im2col::Planar(h, w), Some(s)) = (self, self.phases()) else {
            return None;
        };
        let mut rows = vec![false; h.input];
        for kh in 0..h.kernel {
            let (lo, hi) = h.outputs_inside(kh);
            for oh in lo..hi {
                rows[(h.start(oh) + (kh * h.dilation) as i64) as usize] = true;
            }
        }
        let mut phases = vec![false; s];
        for kw in 0..w.kernel {
            let (lo, hi) = w.outputs_inside(kw);
            if lo < hi {
                phases[(w.start(lo) + (kw * w.dilation) as i64) as usize % s] = true;
            }
        }
        let mut out = Scratch::new(x.len());
        let plane = (h.input * w.input).max(1);
        if par && x.len() >= 2 * plane {
            use rayon::prelude::*;
            let group = x.len().div_ceil(plane).div_ceil(rayon::current_num_threads()) * plane;
            x.par_chunks(group)
                .zip(out.par_chunks_mut(group))
                .for_each(|(x, out)| phase_split(x, w.input, s, (&rows, &phases), out));
        } else {
            phase_split(x, w.input, s, (&rows, &phases), &mut out);
        }
        Some(out)
    }

    /// Writes the rows of channel plane `xc` to `slab` (`k` rows of
    /// `cols.len()`, zeroed by the caller): one row per kernel tap
    /// (row-major over the kernel axes), holding the windows `cols`
    /// (row-major over the output axes; for `Planar`, whole output rows).
    /// Where [`Im2col::phases`] names a stride, `xc` is the plane split
    /// into its phases.
    fn rows<T: Float>(&self, xc: &[T], k: usize, o: usize, cols: Range<usize>, slab: &mut [T]) {
        match self {
            Im2col::Direct => slab.copy_from_slice(&xc[cols]),
            Im2col::Planar(h, w) => {
                let ow = w.output.max(1);
                im2col_planar(xc, h, w, cols.start / ow..cols.end.div_ceil(ow), slab)
            }
            Im2col::Table(table) => {
                let rows = table.chunks_exact(o).take(k);
                for (t, row) in rows.zip(slab.chunks_exact_mut(cols.len().max(1))) {
                    for (v, &off) in row.iter_mut().zip(&t[cols.clone()]) {
                        *v = if off == PAD { T::zero() } else { xc[off as usize] };
                    }
                }
            }
        }
    }

    /// Im2col columns per block of the blocked GEMM: whole output rows for
    /// `Planar`, about `budget` elements of the matrix's `rows` rows.
    fn block(&self, rows: usize, budget: usize) -> usize {
        let unit = self.unit();
        ((budget / rows.max(1)).min(COL_BLOCK_COLS) / unit).max(1) * unit
    }

    /// Columns a block is a multiple of: whole output rows for `Planar`.
    fn unit(&self) -> usize {
        match self {
            Im2col::Planar(_, w) => w.output.max(1),
            _ => 1,
        }
    }

    /// [`Im2col::block`] for blocks run in parallel on `threads` threads:
    /// shrunk so the `cols` columns make a multiple of `threads` blocks,
    /// where rounding to whole output rows allows. Seven blocks on two
    /// threads would keep one of them idle for a seventh of the conv.
    fn parallel_block(&self, rows: usize, budget: usize, cols: usize, threads: usize) -> usize {
        let block = self.block(rows, budget);
        let blocks = cols.div_ceil(block);
        if blocks <= 1 || threads <= 1 {
            return block;
        }
        let unit = self.unit();
        let even = blocks.div_ceil(threads) * threads;
        cols.div_ceil(even).div_ceil(unit).max(1) * unit
    }
}

/// Elements of the im2col matrix built and multiplied at a time (1 MiB of
/// f32): a block stays in L2 between its copy and the GEMM reading it.
const COL_BLOCK: usize = 1 << 18;

/// Columns of an im2col block at most, whatever its rows. An RGB stem's
/// 27 rows made blocks of 9,700 columns from [`COL_BLOCK`] alone, whose
/// copy then left the cache before the GEMM read it: blocks of 2,048
/// columns or less took efficientnet_b0's stem 0.78x of the time in the
/// model (mobilenet_v3_small 0.94x on one thread).
const COL_BLOCK_COLS: usize = 2048;

/// Runs of the im2col rows shorter than this are copied inline, not by a
/// `memcpy` call (see [`copy_run`]).
const SHORT_RUN: usize = 32;

/// Planes (`x`, rows of `width`) with each row split into its `stride`
/// column phases: the row's elements `q, q + stride, …` for `q = 0`, then
/// `1`, and so on ([`phase_start`]). A strided conv's tap reads one phase
/// of a row, in order, so its im2col runs become copies: an element-wise
/// strided gather took 29% of resnet18's 7×7 stride-2 stem.
///
/// Only the rows flagged in `rows` (a plane's, repeated for each plane)
/// and the phases flagged in `phases` are written; the rest of `out` is
/// left as it was.
fn phase_split<T: Float>(
    x: &[T],
    width: usize,
    stride: usize,
    (rows, phases): (&[bool], &[bool]),
    out: &mut [T],
) {
    if width == 0 || rows.is_empty() {
        return;
    }
    let planes = x.chunks_exact(width).zip(out.chunks_exact_mut(width));
    for ((src, dst), _) in planes.zip(rows.iter().cycle()).filter(|(_, &read)| read) {
        let mut at = 0;
        for q in 0..stride.min(width) {
            let n = (width - q).div_ceil(stride);
            if phases[q] {
                crate::kernels::stride::take_every(&src[q..], stride, &mut dst[at..at + n]);
            }
            at += n;
        }
    }
}

/// Where phase `q` starts in a row of `width` split by [`phase_split`].
fn phase_start(width: usize, stride: usize, q: usize) -> usize {
    (0..q).map(|p| width.saturating_sub(p).div_ceil(stride)).sum()
}

/// The im2col rows of one 2-D plane `xc` (`h.input` rows of `w.input`):
/// for each tap `(kh, kw)`, the windows in row-major order, each the input
/// element the tap reads or zero in the padding. The runs of windows whose
/// tap is inside the input are found once per tap, not per element. With
/// a column stride above 1, `xc`'s rows are split into phases
/// ([`phase_split`]).
fn im2col_planar<T: Float>(xc: &[T], h: &Axis1, w: &Axis1, ohs: Range<usize>, slab: &mut [T]) {
    // The block is zeroed once (in cache, a few µs per MiB) and each run
    // copied into place: the padding is then already written, and no run
    // goes through a `Vec` push, whose length store per element took a
    // quarter of a 3×3 stride-2 conv over 28-wide runs.
    let len = ohs.len() * w.output;
    let mut rows = slab.chunks_exact_mut(len.max(1));
    for kh in 0..h.kernel {
        let (oh_lo, oh_hi) = h.outputs_inside(kh);
        let oh_lo = oh_lo.clamp(ohs.start, ohs.end);
        let oh_hi = oh_hi.clamp(oh_lo, ohs.end);
        for kw in 0..w.kernel {
            let Some(row) = rows.next() else { return };
            let (ow_lo, ow_hi) = w.outputs_inside(kw);
            let run = ow_hi - ow_lo;
            if run == 0 {
                continue;
            }
            // The run's first element in an input row: its phase's start,
            // then its place in the phase (the place in the row at stride 1).
            let iw = (w.start(ow_lo) + (kw * w.dilation) as i64) as usize;
            let s = w.stride.max(1);
            let first = phase_start(w.input, s, iw % s) + iw / s;
            for oh in oh_lo..oh_hi {
                let ih = (h.start(oh) + (kh * h.dilation) as i64) as usize;
                let src = &xc[ih * w.input + first..ih * w.input + first + run];
                let o = (oh - ohs.start) * w.output + ow_lo;
                copy_run(&mut row[o..o + run], src);
            }
        }
    }
}

/// `dst.copy_from_slice(src)`, in inline 8-element moves for the short
/// runs of small planes: a `memcpy` call per 7-wide run measured about
/// 120 ns, 60% of a 512-channel 7×7 conv.
#[inline(always)]
fn copy_run<T: Copy>(dst: &mut [T], src: &[T]) {
    if dst.len() >= SHORT_RUN {
        return dst.copy_from_slice(src);
    }
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (d, s) in (&mut d).zip(&mut s) {
        d.copy_from_slice(s);
    }
    for (d, s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d = *s;
    }
}

/// The convolution of contiguous `x` and `w` into contiguous `out` (with
/// `out_cl`, an ungrouped im2col conv's output channels-last instead), with
/// the Winograd transform of `w` when the caller keeps one (made here
/// otherwise), the im2col block budget (elements; [`COL_BLOCK`]) and the multiply-adds
/// from which blocks run in parallel ([`PARALLEL_MACS`]) as parameters, so
/// that tests reach the blocked and parallel paths on small shapes.
#[allow(clippy::too_many_arguments)]
fn conv_kernel<T: Float + MatMulElem + DepthwiseElem>(
    d: &Dims,
    group: usize,
    x: &[T],
    w: &[T],
    b: Option<&[T]>,
    out: &mut [T],
    winograd_weights: Option<&[T]>,
    col_block: usize,
    par_macs: usize,
    out_cl: bool,
) -> Result<()> {
    let plane: usize = d.axes.iter().map(|a| a.input).product();
    let k: usize = d.axes.iter().map(|a| a.kernel).product();
    let o: usize = d.axes.iter().map(|a| a.output).product();
    let (cg, mg) = (d.c / group, d.m / group);
    if out_cl && (group > 1 || pointwise(&d.axes) || winograd_tiles(&d.axes, group, cg, mg).is_some()) {
        return op_err("internal: conv writes channels-last only through im2col blocks");
    }
    if let (1, true, Some((ha, wa))) = (cg, group > 1, planar(&d.axes)) {
        // Depthwise: one input channel per group, its own kernel.
        let (ha, wa) = (axis_taps(&ha), axis_taps(&wa));
        for n in 0..d.n {
            let xs = &x[n * d.c * plane..(n + 1) * d.c * plane];
            let os = &mut out[n * d.m * o..(n + 1) * d.m * o];
            let d = Depthwise {
                x: xs,
                wts: Weights { taps: w, bias: b },
                per: mg,
                h: &ha,
                w: &wa,
            };
            T::depthwise_2d(d, os);
        }
        return Ok(());
    }
    if let Some(t) = winograd_tiles(&d.axes, group, cg, mg) {
        let made;
        let u = match winograd_weights {
            Some(u) => u,
            None => {
                made = winograd::weights(w, d.m * d.c);
                &made
            }
        };
        let par = crate::parallel::intra_op() && d.m * d.c * k * o >= par_macs;
        for n in 0..d.n {
            let os = &mut out[n * d.m * o..(n + 1) * d.m * o];
            let img = winograd::Image {
                x: &x[n * d.c * plane..(n + 1) * d.c * plane],
                u,
                bias: b,
                tiles: t,
                c: d.c,
                m: d.m,
            };
            winograd::conv_image(&img, os, par, &T::gemm_serial)?;
        }
        return Ok(());
    }
    let im2col = Im2col::new(&d.axes)?;
    let rows = cg * k;
    let shape_err = |e: ndarray::ShapeError| crate::error::Error::Op(format!("internal: conv block: {e}"));
    for n in 0..d.n {
        for g in 0..group {
            let xg = &x[(n * d.c + g * cg) * plane..(n * d.c + (g + 1) * cg) * plane];
            let wg = &w[g * mg * rows..(g + 1) * mg * rows];
            let dst = &mut out[(n * d.m + g * mg) * o..(n * d.m + (g + 1) * mg) * o];
            if !matches!(im2col, Im2col::Direct) {
                // The im2col matrix a block of columns at a time, each
                // multiplied while in cache; blocks in parallel.
                let par = crate::parallel::intra_op() && mg * rows * o >= par_macs;
                let phased = im2col.split(xg, par);
                let xg = phased.as_deref().unwrap_or(xg);
                let block = if par {
                    im2col.parallel_block(rows, col_block, o, rayon::current_num_threads())
                } else {
                    im2col.block(rows, col_block)
                };
                // One block is filled before its product splits among the
                // threads (by rows of the output): its channels' slabs are
                // filled in parallel too, or the fill runs on one thread.
                let split_fill = par && block >= o;
                let fill = |cols: Range<usize>, col: &mut Vec<T>| {
                    let slab = k * cols.len();
                    col.clear();
                    col.resize(rows * cols.len(), T::zero());
                    let one = |(c, s): (usize, &mut [T])| {
                        im2col.rows(&xg[c * plane..(c + 1) * plane], k, o, cols.clone(), s)
                    };
                    if split_fill && cg > 1 {
                        use rayon::prelude::*;
                        col.par_chunks_mut(slab.max(1)).enumerate().for_each(one);
                    } else {
                        col.chunks_mut(slab.max(1)).enumerate().for_each(one);
                    }
                };
                let bg = b.map(|b| &b[g * mg..(g + 1) * mg]);
                T::gemm_blocks((wg, bg), mg, rows, (dst, out_cl), o, block, par, &fill)?;
                continue;
            }
            // A 1×1 window: the input plane is the matrix, read in place.
            let a = ArrayView2::from_shape((mg, rows), wg).map_err(shape_err)?;
            let bm = ArrayView2::from_shape((rows, o), xg).map_err(shape_err)?;
            let mut cm = ArrayViewMut2::from_shape((mg, o), dst).map_err(shape_err)?;
            T::gemm(&a, &bm, &mut cm);
        }
        if matches!(im2col, Im2col::Direct) {
            // The blocked GEMM adds the bias to its blocks itself.
            add_bias(b, d.m, o, out_cl, &mut out[n * d.m * o..(n + 1) * d.m * o]);
        }
    }
    Ok(())
}

/// Input and output channels from which a 3×3 stride-1 conv takes the
/// Winograd path.
const WINOGRAD_MIN_CHANNELS: usize = 16;

/// 2×2 output tiles per image from which a 3×3 stride-1 conv takes the
/// Winograd path where the GEMM runs AVX-512 tiles. Its transformed
/// weights are 16/9 the size of the weights and are read once per image,
/// so a plane of few tiles is bound by reading them: on an AVX-512 Xeon,
/// resnet18's 512-channel 7×7 convs (16 tiles, 16 MiB of transformed
/// weights each) made the whole model 1.10x slower on Winograd than on
/// im2col, though each ran 1.4x faster alone with its weights in cache.
/// Its 14×14 convs (49 tiles) keep 6% of the model's time on one thread
/// and cost 3% on two. On an AMD Zen 5 VM (AVX-512), paired in one binary
/// (8 pairs), 16 tiles made the 512×7×7 conv alone 1.22x slower on one
/// thread and 1.21x on two, resnet18 1.08x and 1.07x.
const WINOGRAD_MIN_TILES: usize = 32;

/// [`WINOGRAD_MIN_TILES`] where the GEMM runs AVX2 tiles (no AVX-512), at
/// half the multiply-adds per cycle, so that im2col's 2.25x the
/// multiply-adds costs more than reading the transformed weights. On an
/// AMD Zen 3 (AVX2) VM, paired in one binary (runs of 12 pairs): resnet18's
/// 512×7×7 conv alone 0.66x-0.86x of the time on one thread and 0.61x-0.74x
/// on two; the whole model 0.96x-0.97x on one thread, 0.88x-1.01x on two.
const WINOGRAD_MIN_TILES_AVX2: usize = 16;

/// The tiles from which a conv takes the Winograd path on this CPU.
fn winograd_min_tiles() -> usize {
    if gemm_avx2_tiles() {
        WINOGRAD_MIN_TILES_AVX2
    } else {
        WINOGRAD_MIN_TILES
    }
}

/// The Winograd tiling of a 2-D, ungrouped, 3×3 window with stride and
/// dilation 1 and at most two pads a side, over enough channels; `None`
/// for any other conv.
fn winograd_tiles(axes: &[Axis1], group: usize, cg: usize, mg: usize) -> Option<Tiles> {
    let [h, w] = axes else { return None };
    let fits =
        |a: &Axis1| a.kernel == 3 && a.stride == 1 && a.dilation == 1 && a.pad_begin <= 2 && a.pad_end <= 2;
    let tiles = h.output.div_ceil(2) * w.output.div_ceil(2);
    let enough = cg.min(mg) >= WINOGRAD_MIN_CHANNELS && tiles >= winograd_min_tiles();
    (group == 1 && fits(h) && fits(w) && enough).then_some(Tiles {
        h: h.input,
        w: w.input,
        pad_top: h.pad_begin,
        pad_left: w.pad_begin,
        oh: h.output,
        ow: w.output,
    })
}

/// `out[m, :] += b[m]` over one image's `m` output planes of `o` elements,
/// or with `out_cl` (channels-last) over its `o` positions of `m` channels:
/// the blocked GEMM's bias add ([`crate::ops::linalg::add_bias_rows`]).
fn add_bias<T: Float>(b: Option<&[T]>, m: usize, o: usize, out_cl: bool, out: &mut [T]) {
    if let Some(b) = b {
        crate::ops::linalg::add_bias_rows(out, (m, o), out_cl, b);
    }
}

/// The taps of one planar axis as the depthwise kernel walks them.
fn axis_taps(a: &Axis1) -> AxisTaps {
    AxisTaps {
        input: a.input,
        output: a.output,
        stride: a.stride,
        inside: (0..a.kernel).map(|k| a.outputs_inside(k)).collect(),
        first: (0..a.kernel)
            .map(|k| a.start(0) + (k * a.dilation) as i64)
            .collect(),
    }
}

/// Runs `kernel(x, w, b, out)` on `x`, `w` and the optional bias
/// (`inputs[..3]`) as contiguous slices, writing `out` (shared with
/// `conv_transpose`). Operands already in C order are read in place (no
/// copy of the weights); an output buffer in another layout gets the
/// result copied in.
pub(crate) fn run_contiguous<T: Float>(
    op: &str,
    inputs: &[Tensor],
    out: &Tensor,
    kernel: impl Fn(&[T], &[T], Option<&[T]>, &mut [T]) -> Result<()>,
) -> Result<()> {
    let b = inputs.get(2).map(|b| b.to_array::<T>()).transpose()?;
    let bs = b.as_ref().and_then(|b| b.as_slice());
    let (x, w) = (inputs[0].to_contiguous()?, inputs[1].to_contiguous()?);
    x.read_contiguous(|xs: &[T]| {
        w.read_contiguous(|ws: &[T]| {
            out.write(|mut ov: ArrayViewMutD<'_, T>| match ov.as_slice_mut() {
                Some(s) => kernel(xs, ws, bs, s),
                None => {
                    let mut tmp = vec![T::zero(); ov.len()];
                    kernel(xs, ws, bs, &mut tmp)?;
                    let tmp = ArrayViewD::from_shape(ov.shape(), &tmp[..])
                        .map_err(|e| crate::error::Error::Op(format!("internal: {op} output: {e}")))?;
                    ov.assign(&tmp);
                    Ok(())
                }
            })?
        })?
    })?
}

impl Op for Conv {
    fn name(&self) -> &str {
        "conv"
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_float("conv", &inputs.iter().map(|t| t.dtype).collect::<Vec<_>>())?;
        let (x, w) = (&inputs[0], &inputs[1]);
        let Some(ws) = w.static_shape() else {
            return Ok(vec![TypeInfo::new(x.dtype, x.rank().map(|r| vec![-1; r]))]);
        };
        if let Some(xs) = x.static_shape() {
            let b = inputs.get(2).and_then(|b| b.static_shape());
            let d = self.dims(&xs, &ws, b.as_deref())?;
            let mut out = vec![d.n as i64, d.m as i64];
            out.extend(d.axes.iter().map(|a| a.output as i64));
            return Ok(vec![TypeInfo::known(
                x.dtype,
                &out.iter().map(|&v| v as usize).collect::<Vec<_>>(),
            )]);
        }
        let kernel = ws.get(2..).unwrap_or_default().to_vec();
        Ok(vec![TypeInfo::new(
            x.dtype,
            infer_spatial("conv", &self.window, &x.shape, &kernel, ws[0] as i64)?,
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        check_float("conv", &inputs.iter().map(|t| t.dtype()).collect::<Vec<_>>())?;
        let d = self.dims(
            inputs[0].shape(),
            inputs[1].shape(),
            inputs.get(2).map(|b| b.shape()),
        )?;
        let mut shape = vec![d.n, d.m];
        shape.extend(d.axes.iter().map(|a| a.output));
        if let Some(out) = channels_last::compute(self, &d, inputs, ctx, &shape)? {
            return Ok(vec![out]);
        }
        let dtype = inputs[0].dtype();
        let out = ctx.output(0, dtype, &shape)?;
        let g = self.group;
        let wino = winograd_tiles(&d.axes, g, d.c / g, d.m / g).is_some();
        crate::dispatch_float!(dtype, T => run_contiguous::<T>("conv", inputs, &out, |x, w, b, o| {
                let u = wino.then(|| self.winograd.get(&inputs[1], || winograd::weights(w, d.m * d.c)));
                conv_kernel(&d, g, x, w, b, o, u.as_deref().map(Vec::as_slice), COL_BLOCK, PARALLEL_MACS, false)
            })?,
            return dtype_err("op 'conv' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let a = if self.group == 1 {
            Attrs::new()
        } else {
            Attrs::new().with("group", self.group)
        };
        self.window.to_attrs(a)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("conv", |a: &Attrs| {
        let mut known = WINDOW_ATTRS.to_vec();
        known.push("group");
        a.only("conv", &known)?;
        let window = Window::from_attrs(a)?;
        if window.ceil_mode {
            return attr_err("op 'conv' has no attr 'ceil_mode'");
        }
        let group = a.i64("group")?.unwrap_or(1);
        if group < 1 {
            return attr_err(format!("op 'conv': attr 'group' must be positive, got {group}"));
        }
        Ok(Arc::new(Conv::new(window, group as usize)) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One spatial axis: input, kernel, stride, dilation, pads.
    fn axis() -> impl Strategy<Value = (usize, usize, usize, usize, usize, usize)> {
        (0usize..7, 1usize..4, 1usize..4, 1usize..3, 0usize..3, 0usize..3)
    }

    fn window(
        spec: &[(usize, usize, usize, usize, usize, usize)],
    ) -> Option<(Vec<usize>, Vec<usize>, Vec<Axis1>)> {
        let w = Window {
            strides: spec.iter().map(|a| a.2).collect(),
            dilations: spec.iter().map(|a| a.3).collect(),
            pads: spec.iter().map(|a| a.4).chain(spec.iter().map(|a| a.5)).collect(),
            ..Window::default()
        };
        let input: Vec<usize> = spec.iter().map(|a| a.0).collect();
        let kernel: Vec<usize> = spec.iter().map(|a| a.1).collect();
        let axes = w.resolve("conv", &input, &kernel).ok()?;
        Some((input, kernel, axes))
    }

    /// Distinct values, so that a misplaced element shows.
    fn ramp(n: usize, seed: u64) -> Vec<f64> {
        (0..n)
            .map(|i| ((i as u64 * 2654435761 + seed) % 1009) as f64 / 97.0 - 5.0)
            .collect()
    }

    /// The convolution straight from its definition, one output at a time.
    fn reference(d: &Dims, group: usize, x: &[f64], w: &[f64], kernel: &[usize]) -> Vec<f64> {
        let (cg, mg) = (d.c / group, d.m / group);
        let plane: usize = d.axes.iter().map(|a| a.input).product();
        let o: usize = d.axes.iter().map(|a| a.output).product();
        let k: usize = kernel.iter().product();
        let mut out = vec![0.0; d.n * d.m * o];
        for n in 0..d.n {
            for m in 0..d.m {
                let g = m / mg;
                for oi in 0..o {
                    let mut acc = 0.0;
                    for c in 0..cg {
                        for ki in 0..k {
                            // Row-major multi-indices of the output and the tap.
                            let (mut orem, mut krem, mut off, mut inside) = (oi, ki, 0usize, true);
                            let mut oo = vec![0; d.axes.len()];
                            let mut kk = vec![0; d.axes.len()];
                            for (i, a) in d.axes.iter().enumerate().rev() {
                                oo[i] = orem % a.output;
                                orem /= a.output;
                                kk[i] = krem % a.kernel;
                                krem /= a.kernel;
                            }
                            for (i, a) in d.axes.iter().enumerate() {
                                let p = a.start(oo[i]) + (kk[i] * a.dilation) as i64;
                                inside &= p >= 0 && p < a.input as i64;
                                off = off * a.input + p.max(0) as usize;
                            }
                            if inside {
                                let xv = x[(n * d.c + g * cg + c) * plane + off];
                                acc += xv * w[(m * cg + c) * k + ki];
                            }
                        }
                    }
                    out[(n * d.m + m) * o + oi] = acc;
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The planar im2col writes exactly what the gather table reads.
        #[test]
        fn planar_im2col_matches_the_gather_table(h in axis(), w in axis()) {
            for spec in [vec![w], vec![h, w]] {
                let Some((input, kernel, axes)) = window(&spec) else { continue };
                let plane: usize = input.iter().product();
                let k: usize = kernel.iter().product();
                let o: usize = axes.iter().map(|a| a.output).product();
                let xc = ramp(plane, 3);
                let (ph, pw) = planar(&axes).unwrap();
                let (mut fast, mut general) = (vec![0.0; k * o], vec![0.0; k * o]);
                let planar = Im2col::Planar(ph, pw);
                let split = planar.split(&xc, false);
                planar.rows(split.as_deref().unwrap_or(&xc), k, o, 0..o, &mut fast);
                Im2col::Table(gather_table(&axes).unwrap()).rows(&xc, k, o, 0..o, &mut general);
                prop_assert_eq!(fast, general, "{:?}", axes);
            }
        }

        /// conv_kernel (planar, direct and table paths; groups; bias) against
        /// the definition, in 1, 2 and 3 spatial axes.
        #[test]
        fn conv_matches_the_definition(
            spec in prop::collection::vec(axis(), 1..4),
            n in 1usize..3,
            cg in 1usize..3,
            mg in 1usize..3,
            group in 1usize..4,
            bias in any::<bool>(),
            block in 1usize..40,
        ) {
            let Some((input, kernel, axes)) = window(&spec) else { return Ok(()) };
            let (c, m) = (cg * group, mg * group);
            let d = Dims { n, c, m, axes };
            let plane: usize = input.iter().product();
            let k: usize = kernel.iter().product();
            let o: usize = d.axes.iter().map(|a| a.output).product();
            let x = ramp(n * c * plane, 1);
            let w = ramp(m * cg * k, 2);
            let b = ramp(m, 5);
            let mut want = reference(&d, group, &x, &w, &kernel);
            if bias {
                want.iter_mut().enumerate().for_each(|(i, v)| *v += b[(i / o) % m]);
            }
            // Whole im2col matrices (serial, and filled and split on the
            // rayon pool), then blocks of a few columns (serial and on the
            // pool).
            let runs = [(COL_BLOCK, usize::MAX), (COL_BLOCK, 0), (block, usize::MAX), (block, 0)];
            for (col_block, par_macs) in runs {
                let mut got = vec![f64::NAN; n * m * o];
                conv_kernel(&d, group, &x, &w, bias.then_some(&b[..]), &mut got, None, col_block, par_macs, false).unwrap();
                for (i, (g, r)) in got.iter().zip(&want).enumerate() {
                    prop_assert!((g - r).abs() <= 1e-9 * (1.0 + r.abs()), "at {}: {} vs {} ({:?}, block {})", i, g, r, d.axes, col_block);
                }
            }
        }
    }

    /// 3×3 stride-1 convs over enough channels take the Winograd path:
    /// they match the definition, and f32 results are the same bits on 1,
    /// 2 and 3 threads.
    #[test]
    fn winograd_convs_match_the_definition_on_any_thread_count() {
        // Small planes split their products among threads, larger ones
        // (the last) their blocks of tiles.
        for (c, m, h, w, pads) in [
            (16, 16, 12, 12, [1, 1, 1, 1]),
            (24, 17, 11, 14, [1, 0, 0, 2]),
            (32, 40, 14, 14, [1, 1, 1, 1]),
            (16, 64, 9, 16, [0, 0, 2, 2]),
            (16, 24, 40, 40, [1, 1, 1, 1]),
        ] {
            let spec = [(h, 3, 1, 1, pads[0], pads[1]), (w, 3, 1, 1, pads[2], pads[3])];
            let (_, kernel, axes) = window(&spec).unwrap();
            assert!(winograd_tiles(&axes, 1, c, m).is_some());
            let d = Dims { n: 2, c, m, axes };
            let o: usize = d.axes.iter().map(|a| a.output).product();
            let (x, wt, b) = (ramp(2 * c * h * w, 1), ramp(m * c * 9, 2), ramp(m, 5));
            let mut want = reference(&d, 1, &x, &wt, &kernel);
            want.iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v += b[(i / o) % m]);
            let mut got = vec![f64::NAN; 2 * m * o];
            conv_kernel(
                &d,
                1,
                &x,
                &wt,
                Some(&b),
                &mut got,
                None,
                COL_BLOCK,
                PARALLEL_MACS,
                false,
            )
            .unwrap();
            for (i, (g, r)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - r).abs() <= 1e-9 * (1.0 + r.abs()),
                    "at {i}: {g} vs {r} ({:?})",
                    d.axes
                );
            }
            let f32s = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<_>>();
            let (x, wt, b) = (f32s(&x), f32s(&wt), f32s(&b));
            let bits = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut got = vec![f32::NAN; 2 * m * o];
                pool.install(|| conv_kernel(&d, 1, &x, &wt, Some(&b), &mut got, None, COL_BLOCK, 0, false))
                    .unwrap();
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            };
            let one = bits(1);
            assert_eq!(one, bits(2), "{:?}", d.axes);
            assert_eq!(one, bits(3), "{:?}", d.axes);
        }
        // Too few channels, a stride, a group or a 5×5 kernel: not Winograd
        // (too few tiles: the next test).
        let axes = |k: usize, s: usize| window(&[(12, k, s, 1, 1, 1), (12, k, s, 1, 1, 1)]).unwrap().2;
        assert!(winograd_tiles(&axes(3, 1), 1, 64, 64).is_some());
        assert!(winograd_tiles(&axes(3, 1), 1, 8, 64).is_none());
        assert!(winograd_tiles(&axes(3, 2), 1, 64, 64).is_none());
        assert!(winograd_tiles(&axes(3, 1), 2, 32, 32).is_none());
        assert!(winograd_tiles(&axes(5, 1), 1, 64, 64).is_none());
    }

    /// f32 convs whose plane leaves a column or two past the GEMM
    /// kernel's last whole tile (7×7 and 5×5 outputs: their last columns
    /// are dot products where the CPU runs that kernel) match the
    /// definition, 1×1 (the plane read in place) and 3×3 (im2col), and give
    /// the same bits on 1 and 2 threads.
    #[test]
    fn convs_over_planes_past_a_whole_gemm_tile_match_the_definition() {
        for (c, m, h, kk) in [
            (192, 1152, 7, 1),
            (96, 40, 5, 1),
            (64, 12, 7, 3),
            (7, 48, 7, 3),
            (21, 300, 7, 1),
        ] {
            let pad = kk / 2;
            let spec = [(h, kk, 1, 1, pad, pad), (h, kk, 1, 1, pad, pad)];
            let (_, kernel, axes) = window(&spec).unwrap();
            assert!(winograd_tiles(&axes, 1, c, m).is_none());
            let d = Dims { n: 1, c, m, axes };
            let k: usize = kernel.iter().product();
            let o = h * h;
            let (x, w) = (ramp(c * o, 1), ramp(m * c * k, 2));
            let want = reference(&d, 1, &x, &w, &kernel);
            let f32s = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<_>>();
            let (xf, wf) = (f32s(&x), f32s(&w));
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut got = vec![f32::NAN; m * o];
                pool.install(|| conv_kernel(&d, 1, &xf, &wf, None, &mut got, None, COL_BLOCK, 0, false))
                    .unwrap();
                got
            };
            let one = run(1);
            for (i, (&g, r)) in one.iter().zip(&want).enumerate() {
                let mag: f64 = (0..c * k).map(|q| (xf[q % xf.len()] as f64).abs()).sum::<f64>() + r.abs();
                assert!(
                    (g as f64 - r).abs() <= 1e-5 * (1.0 + mag),
                    "[{c}, {m}] {kk}x{kk} over {h}x{h}, at {i}: {g} vs {r}"
                );
            }
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&one), bits(&run(2)), "[{c}, {m}] {kk}x{kk} over {h}x{h}");
        }
    }

    /// A weight with a zero-size kernel axis is a shape error in `infer`
    /// and `compute`, not an overflow.
    #[test]
    fn a_zero_size_kernel_is_a_shape_error() {
        let conv = Conv::new(Window::default(), 1);
        for (x, w) in [
            (vec![3, 1, 0], vec![3, 1, 0]),
            (vec![1, 1, 4, 4], vec![2, 1, 2, 0]),
        ] {
            let t = |s: &[usize]| TypeInfo::known(crate::dtype::DType::F32, s);
            let e = conv.infer(&[t(&x), t(&w)]).unwrap_err();
            assert!(matches!(e, crate::error::Error::Shape(_)), "{e}");
            let xt = Tensor::zeros(crate::dtype::DType::F32, &x).unwrap();
            let wt = Tensor::zeros(crate::dtype::DType::F32, &w).unwrap();
            let e = conv.compute(&[xt, wt], &mut OpCtx::new("n")).unwrap_err();
            assert!(matches!(e, crate::error::Error::Shape(_)), "{e}");
        }
    }

    /// A 7×7 output (16 tiles) takes Winograd where the GEMM runs AVX2
    /// tiles and im2col elsewhere, and matches the definition either way;
    /// a 5×5 one (9 tiles) takes im2col everywhere.
    #[test]
    fn seven_by_seven_planes_take_winograd_where_the_gemm_runs_avx2_tiles() {
        let (c, m, h) = (16, 24, 7);
        let spec = [(h, 3, 1, 1, 1, 1), (h, 3, 1, 1, 1, 1)];
        let (_, kernel, axes) = window(&spec).unwrap();
        assert_eq!(winograd_tiles(&axes, 1, c, m).is_some(), gemm_avx2_tiles());
        let (_, _, small) = window(&[(5, 3, 1, 1, 1, 1), (5, 3, 1, 1, 1, 1)]).unwrap();
        assert!(winograd_tiles(&small, 1, 512, 512).is_none());
        let d = Dims { n: 1, c, m, axes };
        let o = h * h;
        let (x, wt, b) = (ramp(c * h * h, 3), ramp(m * c * 9, 4), ramp(m, 6));
        let mut want = reference(&d, 1, &x, &wt, &kernel);
        want.iter_mut().enumerate().for_each(|(i, v)| *v += b[i / o]);
        let mut got = vec![f64::NAN; m * o];
        conv_kernel(
            &d,
            1,
            &x,
            &wt,
            Some(&b),
            &mut got,
            None,
            COL_BLOCK,
            PARALLEL_MACS,
            false,
        )
        .unwrap();
        for (i, (g, r)) in got.iter().zip(&want).enumerate() {
            assert!((g - r).abs() <= 1e-9 * (1.0 + r.abs()), "at {i}: {g} vs {r}");
        }
    }

    /// The 1×1 stride-1 unpadded window is read in place; a stride or a pad
    /// leaves it.
    #[test]
    fn only_the_identity_window_is_direct() {
        let one = |s: usize, p: usize| window(&[(4, 1, s, 1, p, 0), (4, 1, 1, 1, 0, 0)]).unwrap().2;
        assert!(matches!(Im2col::new(&one(1, 0)).unwrap(), Im2col::Direct));
        assert!(matches!(Im2col::new(&one(2, 0)).unwrap(), Im2col::Planar(..)));
        assert!(matches!(Im2col::new(&one(1, 1)).unwrap(), Im2col::Planar(..)));
        let three = window(&[(2, 1, 1, 1, 0, 0); 3]).unwrap().2;
        assert!(matches!(Im2col::new(&three).unwrap(), Im2col::Direct));
        let three = window(&[(2, 2, 1, 1, 0, 0); 3]).unwrap().2;
        assert!(matches!(Im2col::new(&three).unwrap(), Im2col::Table(_)));
    }

    /// Parallel blocks come in a multiple of the threads where whole
    /// output rows allow it, each no larger than the budget's block.
    #[test]
    fn parallel_blocks_split_evenly_among_threads() {
        // resnet18's first stage: 64 channels of 3×3 over 56×56.
        let axes = window(&[(56, 3, 1, 1, 1, 1), (56, 3, 1, 1, 1, 1)]).unwrap().2;
        let im2col = Im2col::new(&axes).unwrap();
        let (rows, cols): (usize, usize) = (64 * 9, 56 * 56);
        let serial = im2col.block(rows, COL_BLOCK);
        assert_eq!((serial % 56, cols.div_ceil(serial)), (0, 7));
        for threads in [2, 4, 8] {
            let b = im2col.parallel_block(rows, COL_BLOCK, cols, threads);
            assert_eq!(b % 56, 0);
            assert!(b <= serial);
            assert_eq!(cols.div_ceil(b) % threads, 0, "{threads} threads: blocks of {b}");
        }
        // One block stays one block (faer splits it); one thread keeps it.
        assert_eq!(im2col.parallel_block(rows, COL_BLOCK, 56, 2), serial);
        assert_eq!(im2col.parallel_block(rows, COL_BLOCK, cols, 1), serial);
    }
}
