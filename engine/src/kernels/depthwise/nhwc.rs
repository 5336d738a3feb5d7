//! The f32 depthwise kernel for channels-last images (`x` as `[H, W, C]`,
//! `out` as `[Ho, Wo, C]`) on the CPU's widest SIMD, chosen at run time
//! through `rten-simd` as [`super::simd`] does.
//!
//! A vector holds one position's run of `L` channels (`L` the lanes), so
//! every output position is one vector whatever the plane's width, and no
//! lanes are spent on a grid's dropped columns. The channels go in groups
//! of `L`: each group's input is copied into a zero-padded slab
//! `[rows, Wp, L]`, so that every tap of every output is one unconditional
//! vector load, its taps repacked to `[kh·kw, L]`, and then each output row
//! is computed in tiles of [`VECS`] positions, one accumulator each, that
//! take each tap's weight vector once. Each output starts at its bias and
//! adds its taps in kernel row-major order with fused multiply-adds, so its
//! value does not depend on the tile it falls in or on the threads.
//!
//! The slab holds a band of output rows' input ([`SLAB_MAX`]), so it stays
//! in cache while its group's rows are computed; tasks on the pool take
//! runs of output rows, whose outputs are contiguous in `[Ho, Wo, C]`.
//!
//! The slab's copy reads the input one group at a stride of `C` floats,
//! well below a sequential read's bandwidth; where it weighs most (few
//! taps per input position, a large plane: [`Path::of`]) the input is
//! read in place instead ([`Path::Direct`]): each tile of positions
//! takes every channel group in turn, so the reads run through memory,
//! and the border's positions sum only their taps inside the input.

use rayon::prelude::*;
use rten_simd::ops::{BitOps, NumOps};
use rten_simd::{Isa, SimdOp};

use super::{parallel, AxisTaps, Depthwise};
use crate::kernels::fastmath;

/// Output positions accumulated together.
const VECS: usize = 8;

/// Elements of a slab up to which a band of output rows grows (the band
/// is at least one row).
const SLAB_MAX: usize = 1 << 14;

/// Input positions from which a plane may be read in place
/// ([`Path::Direct`]): see [`Path::of`].
const DIRECT_POSITIONS: usize = 28 * 28;

/// Taps summed per input position up to which a plane is read in place.
const DIRECT_TAPS: usize = 4;

/// How the kernel reads its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// Each channel group copied into a zero-padded slab, one vector per
    /// position: every tap an unconditional load, but the copy reads the
    /// input one group (64 bytes) at a stride of `C` floats.
    Slab,
    /// The input read in place, all channel groups of a tile's positions
    /// in turn, so the reads are sequential; padding taps are skipped.
    Direct,
}

impl Path {
    /// The path for a plane, by measurement: the slab's copy costs in
    /// proportion to the input, the taps to the outputs times the kernel,
    /// so the copy weighs most where few taps are summed per input
    /// position (a 3×3 kernel at stride 2: 2.25), and on large planes,
    /// whose strided reads leave the cache. There, reading in place took
    /// 0.5–0.8 of the slab's time from 28×28 planes up; at 9 taps per
    /// position (3×3, stride 1) and 6.25 (5×5, stride 2) it took 1.1–2.5
    /// times as long on every plane measured but 112×112 at 5×5 stride 2
    /// (0.85), and 1.05–1.25 on 3×3 stride-2 planes of 14×14 and less.
    fn of(h: &AxisTaps, w: &AxisTaps) -> Path {
        let input = h.input * w.input;
        let taps = h.output * w.output * h.first.len() * w.first.len();
        if input >= DIRECT_POSITIONS && taps <= DIRECT_TAPS * input {
            Path::Direct
        } else {
            Path::Slab
        }
    }

    /// Tasks per pool thread of a parallel conv, each a run of output
    /// rows. A slab task copies the input of its rows and of the kernel's
    /// rows beyond them, so fewer, longer runs copy less: on two threads,
    /// one task a thread took efficientnet_b0's convs over 14×14 and 7×7
    /// planes 0.85x-0.99x of the time of two (672×14×14 5×5 0.85x-0.95x);
    /// a direct task reads in place, and two a thread balance better
    /// (96×112×112 3×3 stride 2 took 1.17x as long with one).
    fn tasks_per_thread(self) -> usize {
        match self {
            Path::Slab => 1,
            Path::Direct => 2,
        }
    }
}

/// The depthwise convolution of one channels-last image (see
/// [`super::DepthwiseElem::depthwise_channels_last`]); false, with nothing
/// written, when the CPU lacks the instructions or the conv has a channel
/// multiplier.
pub(super) fn depthwise(d: Depthwise<'_, f32>, out: &mut [f32]) -> bool {
    depthwise_by(d, out, Path::of(d.h, d.w))
}

/// [`depthwise`] by the given path.
pub(super) fn depthwise_by(d: Depthwise<'_, f32>, out: &mut [f32], path: Path) -> bool {
    fastmath::available() && d.per == 1 && Image { d, out, path }.dispatch()
}

/// `len` zeros from element `skip` of the vector on, at an address that
/// is a multiple of `lanes` elements: a vector load across two cache lines
/// costs two, and unaligned slabs took up to 1.5x the time (672×14×14
/// 5×5, 96×56×56 7×7).
fn aligned_zeros(len: usize, lanes: usize) -> (Vec<f32>, usize) {
    let buf = vec![0f32; len + lanes];
    let skip = (lanes - (buf.as_ptr() as usize / 4) % lanes) % lanes;
    (buf, skip)
}

/// One axis of the zero-padded slab.
struct Axis {
    /// Slab coordinate of each tap at output 0.
    offset: Vec<usize>,
    /// Zeros before the input, the slab's length along the axis, and the
    /// axis' input, output and stride.
    pad: usize,
    len: usize,
    input: usize,
    output: usize,
    stride: usize,
}

impl Axis {
    fn new(a: &AxisTaps) -> Axis {
        let lo = a.first.iter().copied().min().unwrap_or(0);
        let pad = (-lo).max(0);
        let offset: Vec<usize> = a.first.iter().map(|&f| (f + pad) as usize).collect();
        let stride = a.stride.max(1);
        let reach = a.output.saturating_sub(1) * stride + offset.iter().max().copied().unwrap_or(0) + 1;
        Axis {
            pad: pad as usize,
            len: (pad as usize + a.input).max(reach),
            offset,
            input: a.input,
            output: a.output,
            stride,
        }
    }

    /// Slab rows that `n` consecutive outputs read.
    fn reach(&self, n: usize) -> usize {
        (n - 1) * self.stride + self.offset.iter().max().copied().unwrap_or(0) + 1
    }
}

/// The layout shared by every task: the axes, the channel count, the
/// output rows per band, and each tap's offset in the slab from the slab
/// element at its output's row and column (row-major over the kernel).
struct Geometry {
    h: Axis,
    w: Axis,
    channels: usize,
    band: usize,
    taps: Vec<usize>,
}

struct Image<'a> {
    d: Depthwise<'a, f32>,
    out: &'a mut [f32],
    path: Path,
}

impl SimdOp for Image<'_> {
    type Output = bool;

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) -> bool {
        let lanes = isa.f32().len();
        let Image { d, out, path } = self;
        let (h, w) = (Axis::new(d.h), Axis::new(d.w));
        let positions = h.output * w.output;
        if positions == 0 || out.is_empty() {
            return true;
        }
        let channels = out.len() / positions;
        let k = h.offset.len() * w.offset.len();
        if k == 0 {
            for o in out.chunks_exact_mut(channels) {
                for (m, v) in o.iter_mut().enumerate() {
                    *v = d.wts.bias(m);
                }
            }
            return true;
        }
        let row = w.len * lanes;
        let band = ((SLAB_MAX / row).saturating_sub(h.reach(1)) / h.stride + 1).min(h.output);
        let mut taps_at = Vec::with_capacity(k);
        for &th in &h.offset {
            for &tw in &w.offset {
                taps_at.push((th * w.len + tw) * lanes);
            }
        }
        let geo = Geometry {
            h,
            w,
            channels,
            band,
            taps: taps_at,
        };
        // Taps `[group, kh·kw, L]` and bias `[group, L]`, zeros in the
        // lanes past the last channel.
        let groups = channels.div_ceil(lanes);
        // Written in order: scattered, the writes took a fifth of a
        // 1152×7×7 5×5 conv.
        let (mut buf, skip) = aligned_zeros(groups * k * lanes, lanes);
        let taps = &mut buf[skip..skip + groups * k * lanes];
        let mut bias = vec![0f32; groups * lanes];
        for (g, dst) in taps.chunks_exact_mut(k * lanes).enumerate() {
            let src = &d.wts.taps[g * lanes * k..(channels.min((g + 1) * lanes)) * k];
            for (t, v) in dst.chunks_exact_mut(lanes).enumerate() {
                for (v, w) in v.iter_mut().zip(src.chunks_exact(k)) {
                    *v = w[t];
                }
            }
        }
        for (m, v) in bias.iter_mut().take(channels).enumerate() {
            *v = d.wts.bias(m);
        }
        let packed = Packed { taps, bias: &bias, k };
        let ho = geo.h.output;
        let rows = if parallel(out.len(), k) {
            ho.div_ceil(path.tasks_per_thread() * rayon::current_num_threads())
                .max(1)
        } else {
            ho
        };
        let direct = Direct::new(&d, channels);
        let task = |(t, o): (usize, &mut [f32])| match path {
            Path::Slab => Rows {
                geo: &geo,
                x: d.x,
                packed,
                first: t * rows,
                out: o,
            }
            .dispatch(),
            Path::Direct => DirectRows {
                geo: &direct,
                x: d.x,
                packed,
                first: t * rows,
                out: o,
            }
            .dispatch(),
        };
        let chunk = rows * geo.w.output * channels;
        if rows < ho {
            out.par_chunks_mut(chunk).enumerate().for_each(task);
        } else {
            task((0, out));
        }
        true
    }
}

/// The repacked taps and bias of every channel group.
#[derive(Clone, Copy)]
struct Packed<'a> {
    taps: &'a [f32],
    bias: &'a [f32],
    k: usize,
}

/// Output rows `first..` of the image, into `out`, with a slab of its own.
struct Rows<'a> {
    geo: &'a Geometry,
    x: &'a [f32],
    packed: Packed<'a>,
    first: usize,
    out: &'a mut [f32],
}

impl SimdOp for Rows<'_> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) {
        let Rows {
            geo,
            x,
            packed,
            first,
            out,
        } = self;
        let ops = isa.f32();
        let lanes = ops.len();
        let (c, wo) = (geo.channels, geo.w.output);
        let rows = out.len() / (wo * c);
        let band = geo.band.min(rows);
        // The columns' padding is never written, so it stays zero.
        let len = geo.h.reach(band) * geo.w.len * lanes;
        let (mut buf, skip) = aligned_zeros(len, lanes);
        let slab = &mut buf[skip..skip + len];
        let mut tmp = vec![0f32; lanes];
        let k = packed.k;
        for b0 in (0..rows).step_by(band) {
            let n = band.min(rows - b0);
            for c0 in (0..c).step_by(lanes) {
                let g = c0 / lanes;
                let group = Group {
                    c0,
                    n: lanes.min(c - c0),
                    taps: &packed.taps[g * k * lanes..(g + 1) * k * lanes],
                    bias: ops.load(&packed.bias[g * lanes..]),
                };
                fill(
                    isa,
                    geo,
                    x,
                    (first + b0) * geo.h.stride,
                    geo.h.reach(n),
                    &group,
                    slab,
                );
                for r in 0..n {
                    let o = &mut out[(b0 + r) * wo * c..(b0 + r + 1) * wo * c];
                    match geo.w.stride {
                        1 => row::<I, 1>(isa, geo, slab, r * geo.h.stride, &group, o, &mut tmp),
                        2 => row::<I, 2>(isa, geo, slab, r * geo.h.stride, &group, o, &mut tmp),
                        _ => row::<I, 0>(isa, geo, slab, r * geo.h.stride, &group, o, &mut tmp),
                    }
                }
            }
        }
    }
}

/// One group of channels `c0..c0 + n` (`n` up to the lanes), its taps
/// `[kh·kw, L]` and its bias.
struct Group<'a, V> {
    c0: usize,
    n: usize,
    taps: &'a [f32],
    bias: V,
}

/// Copies padded rows `r0..r0 + rows` of `group`'s channels into the slab
/// (one vector per position); rows in the padding are zeroed, as a slab
/// row may have held input for another band.
#[inline(always)]
fn fill<I: Isa>(
    isa: I,
    geo: &Geometry,
    x: &[f32],
    r0: usize,
    rows: usize,
    group: &Group<'_, I::F32>,
    slab: &mut [f32],
) {
    let ops = isa.f32();
    let lanes = ops.len();
    let (wi, c, c0, n) = (geo.w.input, geo.channels, group.c0, group.n);
    for r in 0..rows {
        let start = (r * geo.w.len + geo.w.pad) * lanes;
        let dst = &mut slab[start..start + wi * lanes];
        let ih = (r0 + r).checked_sub(geo.h.pad).filter(|&ih| ih < geo.h.input);
        let Some(ih) = ih else {
            dst.fill(0.0);
            continue;
        };
        let src = &x[ih * wi * c..(ih + 1) * wi * c];
        if n == lanes {
            for (iw, v) in dst.chunks_exact_mut(lanes).enumerate() {
                ops.store(ops.load(&src[iw * c + c0..]), v);
            }
        } else {
            for (iw, v) in dst.chunks_exact_mut(lanes).enumerate() {
                ops.store(ops.load_pad(&src[iw * c + c0..iw * c + c0 + n]).0, v);
            }
        }
    }
}

/// One output row (`o`, `[Wo, C]`) of `group`'s channels, whose taps start
/// at slab row `r`: tiles of [`VECS`] positions, then one tile of the
/// rest. `S` is the column stride, 0 for any stride (read from `geo`).
#[inline(always)]
fn row<I: Isa, const S: usize>(
    isa: I,
    geo: &Geometry,
    slab: &[f32],
    r: usize,
    group: &Group<'_, I::F32>,
    o: &mut [f32],
    tmp: &mut [f32],
) {
    let wo = geo.w.output;
    let mut ow = 0;
    while ow + VECS <= wo {
        tile::<I, VECS, S>(isa, geo, slab, r, ow, group, o, tmp);
        ow += VECS;
    }
    // Up to VECS - 1 positions remain: one arm for each count.
    const _: () = assert!(VECS == 8);
    match wo - ow {
        0 => {}
        1 => tile::<I, 1, S>(isa, geo, slab, r, ow, group, o, tmp),
        2 => tile::<I, 2, S>(isa, geo, slab, r, ow, group, o, tmp),
        3 => tile::<I, 3, S>(isa, geo, slab, r, ow, group, o, tmp),
        4 => tile::<I, 4, S>(isa, geo, slab, r, ow, group, o, tmp),
        5 => tile::<I, 5, S>(isa, geo, slab, r, ow, group, o, tmp),
        6 => tile::<I, 6, S>(isa, geo, slab, r, ow, group, o, tmp),
        _ => tile::<I, 7, S>(isa, geo, slab, r, ow, group, o, tmp),
    }
}

/// Output positions `ow..ow + T` of one row: each tap's weight vector
/// loaded once for the `T` accumulators. A group narrower than the lanes
/// stores through `tmp`, so the lanes past it do not land on the next
/// position's channels.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn tile<I: Isa, const T: usize, const S: usize>(
    isa: I,
    geo: &Geometry,
    slab: &[f32],
    r: usize,
    ow: usize,
    group: &Group<'_, I::F32>,
    o: &mut [f32],
    tmp: &mut [f32],
) {
    let ops = isa.f32();
    let lanes = ops.len();
    let s = if S == 0 { geo.w.stride } else { S };
    let pitch = geo.w.len * lanes;
    let span = ((T - 1) * s + 1) * lanes;
    let mut acc = [group.bias; T];
    let base = r * pitch + ow * s * lanes;
    let slab = &slab[base..];
    for (&at, wt) in geo.taps.iter().zip(group.taps.chunks_exact(lanes)) {
        let wv = ops.load(wt);
        let xs = &slab[at..at + span];
        for (j, a) in acc.iter_mut().enumerate() {
            *a = ops.mul_add(ops.load(&xs[j * s * lanes..]), wv, *a);
        }
    }
    let (c, c0, n) = (geo.channels, group.c0, group.n);
    for (j, a) in acc.into_iter().enumerate() {
        let at = (ow + j) * c + c0;
        if n == lanes {
            ops.store(a, &mut o[at..at + lanes]);
        } else {
            ops.store(a, tmp);
            o[at..at + n].copy_from_slice(&tmp[..n]);
        }
    }
}

/// The layout of the direct path: the axes, the channel count, the kernel
/// width, and the outputs `lo..hi` of a row whose every kernel column is
/// inside the input.
struct Direct<'a> {
    h: &'a AxisTaps,
    w: &'a AxisTaps,
    channels: usize,
    kw: usize,
    lo: usize,
    hi: usize,
}

impl<'a> Direct<'a> {
    fn new(d: &Depthwise<'a, f32>, channels: usize) -> Direct<'a> {
        let w = d.w;
        Direct {
            h: d.h,
            w,
            channels,
            kw: w.first.len(),
            lo: w.inside.iter().map(|r| r.0).max().unwrap_or(0),
            hi: w.inside.iter().map(|r| r.1).min().unwrap_or(0),
        }
    }
}

/// One tap of an output row on the direct path: its index in the kernel,
/// the element of `x` (`(ih·W + iw)·C`) it reads at output column 0 and
/// channel 0 (negative in the padding), and the output columns `lo..hi`
/// it is inside the input for.
#[derive(Clone, Copy)]
struct RowTap {
    t: usize,
    at: i64,
    lo: usize,
    hi: usize,
}

/// Output rows `first..` of the image into `out`, reading `x` in place.
struct DirectRows<'a> {
    geo: &'a Direct<'a>,
    x: &'a [f32],
    packed: Packed<'a>,
    first: usize,
    out: &'a mut [f32],
}

impl SimdOp for DirectRows<'_> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) {
        let DirectRows {
            geo,
            x,
            packed,
            first,
            out,
        } = self;
        let (c, wo) = (geo.channels, geo.w.output);
        let mut tmp = vec![0f32; isa.f32().len()];
        let mut taps = Vec::with_capacity(packed.k);
        for (r, o) in out.chunks_exact_mut(wo * c).enumerate() {
            let oh = first + r;
            // The rows inside the input, in kernel order: the padding's
            // taps add zero, so leaving them out is exact.
            taps.clear();
            for (kh, &(lo, hi)) in geo.h.inside.iter().enumerate() {
                if !(lo..hi).contains(&oh) {
                    continue;
                }
                let ih = (oh * geo.h.stride) as i64 + geo.h.first[kh];
                for (kw, (&f, &(lo, hi))) in geo.w.first.iter().zip(&geo.w.inside).enumerate() {
                    taps.push(RowTap {
                        t: kh * geo.kw + kw,
                        at: (ih * geo.w.input as i64 + f) * c as i64,
                        lo,
                        hi,
                    });
                }
            }
            match geo.w.stride {
                1 => direct_row::<I, 1>(isa, geo, x, packed, &taps, o, &mut tmp),
                2 => direct_row::<I, 2>(isa, geo, x, packed, &taps, o, &mut tmp),
                _ => direct_row::<I, 0>(isa, geo, x, packed, &taps, o, &mut tmp),
            }
        }
    }
}

/// Channel groups of one border position summed together: independent
/// accumulators, so the multiply-adds do not wait on each other.
const GROUPS: usize = 4;

/// One output row (`o`, `[Wo, C]`) read in place through `taps`. The
/// columns `lo..hi` whose every tap is inside the input go in tiles of
/// [`VECS`] positions, each over every channel group in turn, so that
/// consecutive groups read adjacent memory; the last tile overlaps the
/// one before rather than being narrower (an output's value does not
/// depend on its tile). The border columns, and rows too short for a
/// tile, go one position at a time, each summing only its taps inside
/// the input.
#[inline(always)]
fn direct_row<I: Isa, const S: usize>(
    isa: I,
    geo: &Direct,
    x: &[f32],
    packed: Packed,
    taps: &[RowTap],
    o: &mut [f32],
    tmp: &mut [f32],
) {
    let lanes = isa.f32().len();
    let (c, wo) = (geo.channels, geo.w.output);
    let full = c - c % lanes;
    let (lo, hi) = if geo.hi >= geo.lo + VECS {
        (geo.lo, geo.hi)
    } else {
        (wo, wo)
    };
    for ow in (0..lo).chain(hi..wo) {
        direct_one::<I, S>(isa, geo, x, packed, taps, ow, o, tmp);
    }
    let mut ow = lo;
    while ow < hi {
        let ow0 = ow.min(hi - VECS);
        for c0 in (0..full).step_by(lanes) {
            let g = c0 / lanes;
            let group = Group {
                c0,
                n: lanes,
                taps: &packed.taps[g * packed.k * lanes..(g + 1) * packed.k * lanes],
                bias: isa.f32().load(&packed.bias[g * lanes..]),
            };
            direct_inside::<I, S>(isa, geo, x, taps, ow0, &group, o);
        }
        ow = ow0 + VECS;
    }
    if full < c {
        for ow in lo..hi {
            direct_one_partial::<I, S>(isa, geo, x, packed, taps, ow, o, tmp);
        }
    }
}

/// Positions `ow..ow + VECS` of a whole channel group, every tap inside
/// the input for each: one unconditional load per tap and position.
#[inline(always)]
fn direct_inside<I: Isa, const S: usize>(
    isa: I,
    geo: &Direct,
    x: &[f32],
    taps: &[RowTap],
    ow: usize,
    group: &Group<'_, I::F32>,
    o: &mut [f32],
) {
    let ops = isa.f32();
    let lanes = ops.len();
    let s = if S == 0 { geo.w.stride } else { S };
    let (c, c0) = (geo.channels, group.c0);
    let step = s * c;
    let origin = (ow * step + c0) as i64;
    let mut acc = [group.bias; VECS];
    for tap in taps {
        let wv = ops.load(&group.taps[tap.t * lanes..]);
        let at = (origin + tap.at) as usize;
        // Whole steps, where `x` has them: every chunk is `step` long, so
        // the loads' length checks are one; an indexed load per position
        // cost two checks each, and a sixth more time (144×56×56 3×3).
        if let Some(mut xs) = x.get(at..at + VECS * step) {
            for a in acc.iter_mut() {
                let (xj, rest) = xs.split_at(step);
                *a = ops.mul_add(ops.load(xj), wv, *a);
                xs = rest;
            }
        } else {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = ops.mul_add(ops.load(&x[at + j * step..]), wv, *a);
            }
        }
    }
    for (j, a) in acc.into_iter().enumerate() {
        let at = (ow + j) * c + c0;
        ops.store(a, &mut o[at..at + lanes]);
    }
}

/// Every channel of position `ow`, summing only its taps inside the input:
/// [`GROUPS`] whole channel groups at a time, then the narrower group
/// past them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn direct_one<I: Isa, const S: usize>(
    isa: I,
    geo: &Direct,
    x: &[f32],
    packed: Packed,
    taps: &[RowTap],
    ow: usize,
    o: &mut [f32],
    tmp: &mut [f32],
) {
    let ops = isa.f32();
    let lanes = ops.len();
    let s = if S == 0 { geo.w.stride } else { S };
    let (c, k) = (geo.channels, packed.k);
    let full = c - c % lanes;
    let span = GROUPS * lanes;
    let mut c0 = 0;
    while c0 + span <= full {
        let g = c0 / lanes;
        let mut acc: [I::F32; GROUPS] = std::array::from_fn(|i| ops.load(&packed.bias[(g + i) * lanes..]));
        for tap in taps.iter().filter(|t| (t.lo..t.hi).contains(&ow)) {
            let at = ((ow * s * c + c0) as i64 + tap.at) as usize;
            let xs = &x[at..at + span];
            for (i, a) in acc.iter_mut().enumerate() {
                let wv = ops.load(&packed.taps[((g + i) * k + tap.t) * lanes..]);
                *a = ops.mul_add(ops.load(&xs[i * lanes..]), wv, *a);
            }
        }
        let at = ow * c + c0;
        for (a, v) in acc.into_iter().zip(o[at..at + span].chunks_exact_mut(lanes)) {
            ops.store(a, v);
        }
        c0 += span;
    }
    while c0 < full {
        let g = c0 / lanes;
        let mut acc = ops.load(&packed.bias[g * lanes..]);
        for tap in taps.iter().filter(|t| (t.lo..t.hi).contains(&ow)) {
            let at = ((ow * s * c + c0) as i64 + tap.at) as usize;
            let wv = ops.load(&packed.taps[(g * k + tap.t) * lanes..]);
            acc = ops.mul_add(ops.load(&x[at..at + lanes]), wv, acc);
        }
        let at = ow * c + c0;
        ops.store(acc, &mut o[at..at + lanes]);
        c0 += lanes;
    }
    if full < c {
        direct_one_partial::<I, S>(isa, geo, x, packed, taps, ow, o, tmp);
    }
}

/// The channels past the last whole group at position `ow`: loads of only
/// those channels, so nothing past `x` is read, and a store through `tmp`,
/// so nothing of the next position is written.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn direct_one_partial<I: Isa, const S: usize>(
    isa: I,
    geo: &Direct,
    x: &[f32],
    packed: Packed,
    taps: &[RowTap],
    ow: usize,
    o: &mut [f32],
    tmp: &mut [f32],
) {
    let ops = isa.f32();
    let lanes = ops.len();
    let s = if S == 0 { geo.w.stride } else { S };
    let (c, k) = (geo.channels, packed.k);
    let c0 = c - c % lanes;
    let (g, n) = (c0 / lanes, c - c0);
    let mut acc = ops.load(&packed.bias[g * lanes..]);
    for tap in taps.iter().filter(|t| (t.lo..t.hi).contains(&ow)) {
        let at = ((ow * s * c + c0) as i64 + tap.at) as usize;
        let wv = ops.load(&packed.taps[(g * k + tap.t) * lanes..]);
        acc = ops.mul_add(ops.load_pad(&x[at..at + n]).0, wv, acc);
    }
    ops.store(acc, tmp);
    let at = ow * c + c0;
    o[at..at + n].copy_from_slice(&tmp[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::depthwise::tests::{
        channels_last_output, check_channels_last_against_definition, Case,
    };
    use crate::kernels::depthwise::PARALLEL_TAPS;

    /// The channels-last kernel against the definition in f64, by each
    /// path: square kernels at strides 1, 2 and 3 (the run-time stride),
    /// dilation, uneven padding and padding on every side, rectangular
    /// kernels, rows of 3, 5, 7, 9, 14, 15, 28 and 30 (tiles of 8, every
    /// remainder, and rows with no whole tile inside the input), and
    /// channel counts below, at and past whole vectors.
    #[test]
    fn the_channels_last_kernel_matches_the_definition() {
        if !fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        let cases = [
            (Case::square(14, 3, 1, 1, (1, 1)), 3),
            (Case::square(7, 5, 1, 1, (2, 2)), 19),
            (Case::square(9, 7, 1, 1, (3, 3)), 72),
            (Case::square(28, 3, 2, 1, (1, 1)), 88),
            (Case::square(14, 5, 2, 1, (2, 2)), 16),
            (Case::square(13, 7, 2, 1, (3, 3)), 32),
            (Case::square(17, 3, 3, 1, (1, 1)), 19),
            (Case::square(20, 5, 3, 1, (2, 2)), 16),
            (Case::square(11, 3, 1, 2, (2, 2)), 72),
            (Case::square(15, 3, 2, 2, (2, 2)), 3),
            (Case::square(9, 5, 1, 1, (1, 3)), 88),
            (Case::square(14, 3, 2, 1, (0, 1)), 19),
            (Case::square(6, 3, 1, 9, (18, 18)), 3),
            (Case::square(5, 5, 2, 1, (0, 0)), 32),
            (Case::square(1, 1, 1, 1, (0, 0)), 144),
            (Case::square(3, 3, 1, 1, (1, 1)), 19),
            (Case::rect((5, 3, (0, 2)), (12, 3, (1, 1))), 19),
            (Case::rect((6, 5, (2, 2)), (10, 3, (1, 1))), 72),
            (Case::rect((9, 3, (1, 1)), (8, 5, (2, 2))), 16),
            (Case::rect((7, 1, (0, 0)), (28, 7, (3, 3))), 88),
            (Case::rect((8, 3, (1, 1)), (30, 5, (2, 2))), 144),
            (Case::square(28, 3, 1, 1, (1, 1)), 144),
            (Case::square(30, 5, 1, 2, (4, 4)), 88),
            (Case::square(29, 3, 2, 1, (1, 1)), 72),
            (Case::square(44, 5, 3, 1, (2, 2)), 144),
            (Case::square(7, 3, 1, 1, (1, 1)).wider(), 19),
            // Bands: a slab of more than one band, and the pool.
            (Case::square(112, 3, 2, 1, (1, 1)), 32),
            (Case::square(56, 3, 1, 1, (1, 1)), 144),
        ];
        check_channels_last_against_definition(|d, o| depthwise_by(d, o, Path::Slab), &cases);
        check_channels_last_against_definition(|d, o| depthwise_by(d, o, Path::Direct), &cases);
        check_channels_last_against_definition(depthwise, &cases);
    }

    /// Each path gives the same bits on one thread and on two, where its
    /// output rows split across the pool (unless a test running alongside
    /// has turned intra-op parallelism off: the size alone is checked).
    #[test]
    fn the_channels_last_kernel_is_the_same_on_any_threads() {
        if !fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        let case = Case::square(56, 3, 1, 1, (1, 1));
        let bits = |kernel: fn(Depthwise<'_, f32>, &mut [f32]) -> bool, threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let out = pool.install(|| channels_last_output(kernel, case, 144));
            assert!(out.len() * 9 >= PARALLEL_TAPS, "too small to split");
            out.iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
        };
        let slab: fn(Depthwise<'_, f32>, &mut [f32]) -> bool = |d, o| depthwise_by(d, o, Path::Slab);
        let direct: fn(Depthwise<'_, f32>, &mut [f32]) -> bool = |d, o| depthwise_by(d, o, Path::Direct);
        assert_eq!(bits(slab, 1), bits(slab, 2));
        assert_eq!(bits(direct, 1), bits(direct, 2));
    }
}
