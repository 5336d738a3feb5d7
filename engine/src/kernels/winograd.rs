//! Winograd's F(2×2, 3×3) transforms: a 3×3, stride-1 convolution of C
//! input channels into M output channels, as 16 products
//! `[M, C] · [C, tiles]` where im2col needs one `[M, 9C] · [9C, outputs]`.
//! Each 2×2 output tile reads a 4×4 input tile `d`; with `V = Bᵀ d B` per
//! channel and `U = G g Gᵀ` per 3×3 kernel `g`, the tile is
//! `Y = Aᵀ (Σ_c U ⊙ V) A`, and the sum over channels of each of the 16
//! elementwise positions is one GEMM. That is 16·C multiply-adds per 4
//! outputs against 9·C: 2.25x fewer, for transforms that are adds only
//! (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
//! 2015). The transform matrices hold only 0, ±1 and ±½, so the result
//! differs from the direct sum by a few roundings, as a reordered sum does.
//!
//! Matrices here are row-major slices; the 16 positions `i = 4·a + b` are
//! the row `a` and column `b` of a transformed tile.

use std::ops::Range;

use ndarray::{ArrayViewMut2, Axis};
use rten_simd::{Isa, SimdOp};

use crate::dtype::Float;
use crate::error::{Error, Result};
use crate::tensor::buffer_pool::Scratch;

/// A serial product `c = a · b` of row-major `a` `[n, k]`, `b` `[k, m]` and
/// `c` `[n, m]`, as `gemm(a, b, c, n, k, m)`: the ops layer's GEMM.
pub trait Gemm<T>: Fn(&[T], &[T], &mut [T], usize, usize, usize) + Sync {}
impl<T, F: Fn(&[T], &[T], &mut [T], usize, usize, usize) + Sync> Gemm<T> for F {}

/// Elements of the transformed input a block of tile rows holds (1 MiB of
/// f32), as the im2col path's blocks do: it stays in L2 between its
/// transform and the products reading it.
const BLOCK: usize = 1 << 18;

/// One image's convolution, as [`conv_image`] takes it: `x` is `[C, h,
/// w]`, `u` the kernels' [`weights`] (`[16, M, C]`), `bias` `[M]`.
#[derive(Clone, Copy, Debug)]
pub struct Image<'a, T> {
    pub x: &'a [T],
    pub u: &'a [T],
    pub bias: Option<&'a [T]>,
    pub tiles: Tiles,
    pub c: usize,
    pub m: usize,
}

/// The convolution of `img` into `out` (`[M, oh · ow]`). Blocks of tile
/// rows are transformed, multiplied and transformed back while in cache;
/// with `par` on the rayon pool, one block per thread or more. Each tile's
/// result is the same whatever the blocks (a test checks it), so it does
/// not depend on the thread count.
pub fn conv_image<T: Float, G: Gemm<T>>(
    img: &Image<'_, T>,
    out: &mut [T],
    par: bool,
    gemm: &G,
) -> Result<()> {
    let t = &img.tiles;
    let th = t.rows().max(1);
    let block = block_rows(t, img.c, if par { rayon::current_num_threads() } else { 1 });
    if !par {
        conv_blocks(img, out, block.min(th), Split::Serial, gemm)
    } else if block * t.cols() < MIN_TILES {
        conv_blocks(img, out, th, Split::Products, gemm)
    } else {
        conv_blocks(img, out, block.min(th), Split::Blocks, gemm)
    }
}

/// Tiles per block below which a parallel conv splits each block's 16
/// products among threads instead of its blocks: a 512-channel 7×7 plane
/// in two blocks of 8 tiles ran 1.6x slower on two threads than as one
/// block of 16 whose products split.
const MIN_TILES: usize = 32;

/// How [`conv_blocks`] uses the rayon pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    Serial,
    /// Blocks of tile rows in parallel.
    Blocks,
    /// The 16 products of each block in parallel: for planes too small to
    /// give each thread a block of [`MIN_TILES`] tiles.
    Products,
}

/// Tile rows per block: about [`BLOCK`] elements of transformed input,
/// shrunk so the blocks make a multiple of `threads`.
fn block_rows(t: &Tiles, c: usize, threads: usize) -> usize {
    let th = t.rows();
    let per_row = 16 * c * t.cols();
    let rows = (BLOCK / per_row.max(1)).clamp(1, th.max(1));
    let blocks = th.div_ceil(rows);
    if threads <= 1 || th <= 1 {
        return rows;
    }
    th.div_ceil(blocks.div_ceil(threads) * threads).max(1)
}

/// [`conv_image`] with `block` tile rows per block.
fn conv_blocks<T: Float, G: Gemm<T>>(
    img: &Image<'_, T>,
    out: &mut [T],
    block: usize,
    split: Split,
    gemm: &G,
) -> Result<()> {
    let Image {
        x,
        u,
        bias,
        tiles,
        c,
        m,
    } = *img;
    let t = &tiles;
    let (th, tw, o) = (t.rows(), t.cols(), t.oh * t.ow);
    if x.len() != c * t.h * t.w || u.len() != 16 * m * c || out.len() != m * o {
        return Err(Error::Op(format!(
            "internal: winograd conv of [{c}, {}, {}] into [{m}, {o}] on {}, {} and {} elements",
            t.h,
            t.w,
            x.len(),
            u.len(),
            out.len()
        )));
    }
    if o == 0 || m == 0 {
        return Ok(());
    }
    if c == 0 {
        // No input channels: each output is its bias.
        for (mm, plane) in out.chunks_exact_mut(o).enumerate() {
            plane.fill(bias.map_or(T::zero(), |b| b[mm]));
        }
        return Ok(());
    }
    let mut ov = ArrayViewMut2::from_shape((m, o), out)
        .map_err(|e| Error::Op(format!("internal: winograd output: {e}")))?;
    let chunks: Vec<_> = ov.axis_chunks_iter_mut(Axis(1), 2 * block * t.ow).collect();
    // The transformed input and the products of one block, from the pool.
    let most = block.min(th) * tw;
    let scratch = || (Scratch::<T>::new(16 * c * most), Scratch::<T>::new(16 * m * most));
    let run = |bufs: &mut (Scratch<T>, Scratch<T>), (j, chunk): (usize, ArrayViewMut2<'_, T>)| {
        let (v, p) = bufs;
        let rows = j * block..((j + 1) * block).min(th);
        let n = rows.len() * tw;
        // With the products split, the transforms split their channels
        // too: on one thread they would keep the others waiting.
        let split_channels = split == Split::Products;
        input(x, c, t, rows.clone(), v, split_channels);
        let (v, p) = (&v[..16 * c * n], &mut p[..16 * m * n]);
        if split_channels {
            use rayon::prelude::*;
            let products = u.par_chunks_exact(m * c).zip(v.par_chunks_exact(c * n));
            products
                .zip(p.par_chunks_exact_mut(m * n))
                .for_each(|((ui, vi), pi)| gemm(ui, vi, pi, m, c, n));
        } else {
            let products = u.chunks_exact(m * c).zip(v.chunks_exact(c * n));
            for ((ui, vi), pi) in products.zip(p.chunks_exact_mut(m * n)) {
                gemm(ui, vi, pi, m, c, n);
            }
        }
        output(p, m, t, rows, bias, chunk, split_channels);
    };
    if split == Split::Blocks {
        use rayon::prelude::*;
        chunks.into_par_iter().enumerate().for_each_init(scratch, run);
    } else {
        let mut bufs = scratch();
        chunks.into_iter().enumerate().for_each(|jc| run(&mut bufs, jc));
    }
    Ok(())
}

/// The tiling of one 2-D plane: `h × w` input, padded by `pad_top` rows and
/// `pad_left` columns before it, giving `oh × ow` outputs.
#[derive(Clone, Copy, Debug)]
pub struct Tiles {
    pub h: usize,
    pub w: usize,
    pub pad_top: usize,
    pub pad_left: usize,
    pub oh: usize,
    pub ow: usize,
}

impl Tiles {
    /// Rows of 2×2 tiles (the last one may hang over the output's end).
    pub fn rows(&self) -> usize {
        self.oh.div_ceil(2)
    }
    /// Tiles per row.
    pub fn cols(&self) -> usize {
        self.ow.div_ceil(2)
    }
}

/// `U = G g Gᵀ` for each of the `kernels` 3×3 kernels of `w` (`[M, C, 3,
/// 3]`, so kernel `m·C + c`), as 16 matrices `[M, C]`: `u[i · kernels +
/// m·C + c]`. `G = [[1, 0, 0], [½, ½, ½], [½, −½, ½], [0, 0, 1]]`.
pub fn weights<T: Float>(w: &[T], kernels: usize) -> Vec<T> {
    // Kernels a run at a time: 16 short rows in a local tile, then each row
    // copied to its matrix, so the writes run along each matrix instead of
    // jumping between all 16 for every kernel.
    const RUN: usize = 64;
    let mut u = vec![T::zero(); 16 * kernels];
    let half = T::one() / (T::one() + T::one());
    let g_rows = |a: T, b: T, c: T| [a, (a + b + c) * half, (a - b + c) * half, c];
    let mut tile = [[T::zero(); RUN]; 16];
    for (r, ws) in w[..9 * kernels].chunks(9 * RUN).enumerate() {
        for (k, g) in ws.chunks_exact(9).enumerate() {
            // G g: 4 rows of 3, then (G g) Gᵀ on each row.
            let cols: [[T; 4]; 3] = std::array::from_fn(|j| g_rows(g[j], g[3 + j], g[6 + j]));
            for a in 0..4 {
                let row = g_rows(cols[0][a], cols[1][a], cols[2][a]);
                for (b, &v) in row.iter().enumerate() {
                    tile[4 * a + b][k] = v;
                }
            }
        }
        let len = ws.len() / 9;
        for (i, row) in tile.iter().enumerate() {
            u[i * kernels + r * RUN..][..len].copy_from_slice(&row[..len]);
        }
    }
    u
}

/// `V = Bᵀ d B` for every tile of the tile rows `rows`, in each of the `c`
/// planes of `x`: 16 matrices `[C, n]` with `n = rows.len() · t.cols()`,
/// tiles row-major, into the start of `v`. `Bᵀ = [[1, 0, −1, 0], [0, 1, 1, 0],
/// [0, −1, 1, 0], [0, 1, 0, −1]]`; the padding reads as zeros.
/// With `par`, the channels split among the pool's threads.
pub fn input<T: Float>(x: &[T], c: usize, t: &Tiles, rows: Range<usize>, v: &mut [T], par: bool) {
    use rayon::prelude::*;
    let n = rows.len() * t.cols();
    let per = if par {
        c.div_ceil(rayon::current_num_threads())
    } else {
        c
    }
    .max(1);
    // Each part: the 16 planes' rows of its channels.
    let mut parts: Vec<Vec<&mut [T]>> = (0..c.div_ceil(per)).map(|_| Vec::with_capacity(16)).collect();
    for plane in v[..16 * c * n].chunks_exact_mut(c * n) {
        for (part, chs) in parts.iter_mut().zip(plane.chunks_mut(per * n)) {
            part.push(chs);
        }
    }
    let run = |(i, mut planes): (usize, Vec<&mut [T]>)| {
        let chs = i * per..((i + 1) * per).min(c);
        InputChannels {
            x,
            chs,
            t,
            rows: rows.clone(),
            planes: &mut planes,
        }
        .dispatch()
    };
    if par {
        parts.into_par_iter().enumerate().for_each(run);
    } else {
        parts.into_iter().enumerate().for_each(run);
    }
}

/// [`input_channels`] compiled for the CPU's widest SIMD (see
/// `kernels/wide_loop.rs`): its loops are plain Rust.
struct InputChannels<'a, 'p, T> {
    x: &'a [T],
    chs: Range<usize>,
    t: &'a Tiles,
    rows: Range<usize>,
    planes: &'a mut [&'p mut [T]],
}

impl<T: Float> SimdOp for InputChannels<'_, '_, T> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, _isa: I) {
        input_channels(self.x, self.chs, self.t, self.rows, self.planes)
    }
}

/// [`input`] for the channels `chs` only, each of the 16 `planes` holding
/// those channels' rows (`chs.len() · n` elements).
#[inline(always)]
fn input_channels<T: Float>(
    x: &[T],
    chs: Range<usize>,
    t: &Tiles,
    rows: Range<usize>,
    planes: &mut [&mut [T]],
) {
    let tw = t.cols();
    let n = rows.len() * tw;
    let plane = t.h * t.w;
    let zeros = vec![T::zero(); t.w];
    // One combination of four input rows, padded: tile column `tx` reads
    // `padded[2·tx .. 2·tx + 4]`.
    let mut padded = vec![T::zero(); 2 * tw + 2];
    let run = t.w.min(padded.len().saturating_sub(t.pad_left));
    for ch in chs.clone() {
        let xc = &x[ch * plane..(ch + 1) * plane];
        for (k, ty) in rows.clone().enumerate() {
            let row = |j: usize| -> &[T] {
                match (2 * ty + j).checked_sub(t.pad_top) {
                    Some(ih) if ih < t.h => &xc[ih * t.w..(ih + 1) * t.w],
                    _ => &zeros,
                }
            };
            let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
            for (a, quad) in planes.chunks_exact_mut(4).enumerate() {
                let [v0, v1, v2, v3] = quad else { continue };
                let dst = &mut padded[t.pad_left..t.pad_left + run];
                let rows4 = dst.iter_mut().zip(r0).zip(r1).zip(r2).zip(r3);
                match a {
                    0 => rows4.for_each(|((((d, &p), _), &r), _)| *d = p - r),
                    1 => rows4.for_each(|((((d, _), &q), &r), _)| *d = q + r),
                    2 => rows4.for_each(|((((d, _), &q), &r), _)| *d = r - q),
                    _ => rows4.for_each(|((((d, _), &q), _), &s)| *d = q - s),
                }
                let at = (ch - chs.start) * n + k * tw;
                let (v0, v1) = (&mut v0[at..at + tw], &mut v1[at..at + tw]);
                let (v2, v3) = (&mut v2[at..at + tw], &mut v3[at..at + tw]);
                let pairs = padded.chunks_exact(2).zip(padded[2..].chunks_exact(2));
                let dst = v0
                    .iter_mut()
                    .zip(v1.iter_mut())
                    .zip(v2.iter_mut().zip(v3.iter_mut()));
                for (((d0, d1), (d2, d3)), (p, q)) in dst.zip(pairs) {
                    *d0 = p[0] - q[0];
                    *d1 = p[1] + q[0];
                    *d2 = q[0] - p[1];
                    *d3 = p[1] - q[1];
                }
            }
        }
    }
}

/// `Y = Aᵀ P A` (plus the bias) for every tile of the tile rows `rows`
/// from the products `p` (16 matrices `[M, n]`, as [`input`] lays out the
/// tiles), into `out`: row `m` holds output rows `2·rows.start ..` of plane
/// `m`, as many as fit in the output. `Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]]`.
/// With `par`, the planes split among the pool's threads.
pub fn output<T: Float>(
    p: &[T],
    m: usize,
    t: &Tiles,
    rows: Range<usize>,
    bias: Option<&[T]>,
    mut out: ArrayViewMut2<'_, T>,
    par: bool,
) {
    use rayon::prelude::*;
    let per = if par {
        m.div_ceil(rayon::current_num_threads())
    } else {
        m
    }
    .max(1);
    let parts = out.axis_chunks_iter_mut(Axis(0), per).enumerate();
    let run = |(i, out)| {
        OutputChannels {
            p,
            m,
            first: i * per,
            t,
            rows: rows.clone(),
            bias,
            out,
        }
        .dispatch()
    };
    if par {
        parts.collect::<Vec<_>>().into_par_iter().for_each(run);
    } else {
        parts.for_each(run);
    }
}

/// [`output_channels`] compiled for the CPU's widest SIMD, as
/// [`InputChannels`] is.
struct OutputChannels<'a, T> {
    p: &'a [T],
    m: usize,
    first: usize,
    t: &'a Tiles,
    rows: Range<usize>,
    bias: Option<&'a [T]>,
    out: ArrayViewMut2<'a, T>,
}

impl<T: Float> SimdOp for OutputChannels<'_, T> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, _isa: I) {
        output_channels(self.p, self.m, self.first, self.t, self.rows, self.bias, self.out)
    }
}

/// [`output`] into the planes `first..` only: `out` holds their rows.
#[inline(always)]
fn output_channels<T: Float>(
    p: &[T],
    m: usize,
    first: usize,
    t: &Tiles,
    rows: Range<usize>,
    bias: Option<&[T]>,
    mut out: ArrayViewMut2<'_, T>,
) {
    let tw = t.cols();
    let n = rows.len() * tw;
    let ow = t.ow;
    // Aᵀ on the columns of a row of tiles: `s[(2·b + r) · tw + tx]` is row
    // `r` of column `b`.
    let mut s = vec![T::zero(); 8 * tw];
    for local_m in 0..out.nrows() {
        let mm = first + local_m;
        let bias = bias.map_or(T::zero(), |b| b[mm]);
        let mut plane = out.row_mut(local_m);
        let Some(dst) = plane.as_slice_mut() else {
            return;
        };
        for (k, ty) in rows.clone().enumerate() {
            let at = |i: usize| &p[i * m * n + mm * n + k * tw..][..tw];
            for (b, s) in s.chunks_exact_mut(2 * tw).enumerate() {
                let (s0, s1) = s.split_at_mut(tw);
                let (m0, m1, m2, m3) = (at(b), at(4 + b), at(8 + b), at(12 + b));
                let cols = s0
                    .iter_mut()
                    .zip(s1.iter_mut())
                    .zip(m0.iter().zip(m1))
                    .zip(m2.iter().zip(m3));
                for (((d0, d1), (&x0, &x1)), (&x2, &x3)) in cols {
                    *d0 = x0 + x1 + x2;
                    *d1 = x1 - x2 - x3;
                }
            }
            // Then on the rows: output row 2·ty + r.
            for r in 0..2 {
                let oh = 2 * ty + r;
                if oh >= t.oh {
                    break;
                }
                let col = |b: usize| &s[(2 * b + r) * tw..][..tw];
                let (c0, c1, c2, c3) = (col(0), col(1), col(2), col(3));
                let local = oh - 2 * rows.start;
                let row = &mut dst[local * ow..(local + 1) * ow];
                let (pairs, last) = row.split_at_mut(ow / 2 * 2);
                let tiles = c0.iter().zip(c1).zip(c2.iter().zip(c3));
                for (pair, ((&x0, &x1), (&x2, &x3))) in pairs.chunks_exact_mut(2).zip(tiles) {
                    pair[0] = x0 + x1 + x2 + bias;
                    pair[1] = x1 - x2 - x3 + bias;
                }
                if let Some(v) = last.first_mut() {
                    let tx = tw - 1;
                    *v = c0[tx] + c1[tx] + c2[tx] + bias;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_gemm(a: &[f64], b: &[f64], c: &mut [f64], n: usize, k: usize, m: usize) {
        for i in 0..n {
            for j in 0..m {
                c[i * m + j] = (0..k).map(|l| a[i * k + l] * b[l * m + j]).sum();
            }
        }
    }

    /// Distinct values, so that a misplaced element shows.
    fn ramp(n: usize, seed: u64) -> Vec<f64> {
        (0..n)
            .map(|i| ((i as u64 * 2654435761 + seed) % 1009) as f64 / 97.0 - 5.0)
            .collect()
    }

    /// The 3×3 convolution from its definition, with the bias.
    fn reference(x: &[f64], w: &[f64], b: &[f64], t: &Tiles, c: usize, m: usize) -> Vec<f64> {
        let mut out = vec![0.0; m * t.oh * t.ow];
        for mm in 0..m {
            for oh in 0..t.oh {
                for ow in 0..t.ow {
                    let mut acc = b[mm];
                    for ch in 0..c {
                        for kh in 0..3 {
                            for kw in 0..3 {
                                let ih = (oh + kh) as i64 - t.pad_top as i64;
                                let iw = (ow + kw) as i64 - t.pad_left as i64;
                                if (0..t.h as i64).contains(&ih) && (0..t.w as i64).contains(&iw) {
                                    let xv = x[(ch * t.h + ih as usize) * t.w + iw as usize];
                                    acc += xv * w[((mm * c + ch) * 3 + kh) * 3 + kw];
                                }
                            }
                        }
                    }
                    out[(mm * t.oh + oh) * t.ow + ow] = acc;
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Every tiling (odd and even outputs, pads 0 to 2 on each side,
        /// planes smaller than a tile) against the definition, in blocks of
        /// any number of tile rows, serial and on the pool.
        #[test]
        fn conv_matches_the_definition(
            h in 1usize..9,
            w in 1usize..9,
            pads in [0usize..3, 0usize..3, 0usize..3, 0usize..3],
            c in 1usize..4,
            m in 1usize..4,
            block in 1usize..5,
            split in prop::sample::select(vec![Split::Serial, Split::Blocks, Split::Products]),
        ) {
            let [pt, pb, pl, pr] = pads;
            let (Some(oh), Some(ow)) = ((h + pt + pb).checked_sub(2), (w + pl + pr).checked_sub(2)) else {
                return Ok(());
            };
            let t = Tiles { h, w, pad_top: pt, pad_left: pl, oh, ow };
            let (x, wt, b) = (ramp(c * h * w, 1), ramp(m * c * 9, 2), ramp(m, 5));
            let want = reference(&x, &wt, &b, &t, c, m);
            let u = weights(&wt, m * c);
            let mut got = vec![f64::NAN; m * oh * ow];
            let img = Image { x: &x, u: &u, bias: Some(&b), tiles: t, c, m };
            conv_blocks(&img, &mut got, block, split, &naive_gemm).unwrap();
            for (i, (g, r)) in got.iter().zip(&want).enumerate() {
                prop_assert!((g - r).abs() <= 1e-9 * (1.0 + r.abs()), "at {}: {} vs {} ({:?})", i, g, r, t);
            }
        }
    }

    /// An n×n plane padded by one on each side, so n×n outputs.
    fn same(n: usize) -> Tiles {
        Tiles {
            h: n,
            w: n,
            pad_top: 1,
            pad_left: 1,
            oh: n,
            ow: n,
        }
    }

    /// Blocks hold about the budget's transformed input and split evenly
    /// among threads.
    #[test]
    fn blocks_split_evenly_among_threads() {
        // resnet18's first stage: 64 channels over 56×56, 28 rows of 28 tiles.
        let t = same(56);
        let serial = block_rows(&t, 64, 1);
        assert_eq!(serial, BLOCK / (16 * 64 * 28));
        // (28 rows make no 8 equal blocks.)
        for threads in [2, 4] {
            let rows = block_rows(&t, 64, threads);
            assert!(rows <= serial);
            assert_eq!(
                28usize.div_ceil(rows) % threads,
                0,
                "{threads} threads: {rows} rows"
            );
        }
        // A 7×7 plane of 512 channels: 4 tile rows, split on two threads.
        let t = same(7);
        assert_eq!(block_rows(&t, 512, 2), 2);
    }

    /// With no input channels, each output is its bias.
    #[test]
    fn no_channels_give_the_bias() {
        let t = same(4);
        let img = Image {
            x: &[],
            u: &[],
            bias: Some(&[1.5, -2.0]),
            tiles: t,
            c: 0,
            m: 2,
        };
        let mut out = vec![f64::NAN; 32];
        conv_image(&img, &mut out, false, &naive_gemm).unwrap();
        assert_eq!(out[..16], [1.5; 16]);
        assert_eq!(out[16..], [-2.0; 16]);
    }

    /// Sizes that do not agree are an internal error, not a panic.
    #[test]
    fn mismatched_sizes_are_an_error() {
        let t = same(4);
        let u = vec![0.0; 16];
        let mut out = vec![0.0; 16];
        let img = Image {
            x: &[0.0; 15],
            u: &u,
            bias: None,
            tiles: t,
            c: 1,
            m: 1,
        };
        let e = conv_image(&img, &mut out, false, &naive_gemm).unwrap_err();
        assert!(matches!(e, Error::Op(_)), "{e}");
    }
}
