//! `matmul(a, b)` with numpy's rules:
//!
//! - 2-D · 2-D is the matrix product `[n, k] · [k, m] -> [n, m]`;
//! - a 1-D `a` is promoted to a row `[1, k]` and a 1-D `b` to a column
//!   `[k, 1]`, and the promoted axis is removed from the result (vector ·
//!   vector gives a 0-d tensor);
//! - N-D operands are stacks of matrices in the last two axes, and the
//!   leading (batch) axes broadcast;
//! - 0-d operands are errors, as in numpy.
//!
//! Both inputs must have the same dtype (f32, f64, i32 or i64; bool is
//! rejected). Float blocks whose operands are contiguous in row- or
//! column-major order (so plain, transposed and batched operands) go through
//! faer's GEMM, on the rayon pool above [`crate::parallel::PARALLEL_MACS`] multiply-adds
//! (split into bands of rows where the output has few columns and enough
//! rows, else of columns); a single f32 row of at least `GEMV_MIN_COLS`
//! columns times a row-major matrix (a classifier at batch 1) goes through
//! the GEMV kernel of [`crate::kernels::gemv`] instead, split by columns
//! from `GEMV_PARALLEL` elements of the matrix; the one or two columns an
//! f32 product has past the GEMM kernel's last whole tile are dot
//! products ([`crate::kernels::dots`], see `TailDots`);
//! stacks of float matrices (3-D and up: attention's heads) go to faer
//! straight from the operands' buffers, rows or columns with gaps between
//! them included, one serial product per matrix, the matrices in parallel
//! (`faer_stack`); other layouts (reversed, 2-D with gaps) go through
//! ndarray's `general_mat_mul` (matrixmultiply), which takes any strides.
//! Either way inputs are read in place, never copied. Integer products
//! wrap on overflow instead of panicking.

use std::ops::Range;
use std::sync::Arc;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD, Axis, Ix2, IxDyn};

use crate::dtype::{DType, Element, Num};
use crate::error::{dtype_err, op_err, rank_err, refuse_dtype, shape_err, Error, Result};
use crate::kernels::packed_gemm::{self, Product};
use crate::kernels::{dots, gemv, wide_loop};
use crate::ops::typeinfo::{broadcast_concrete, broadcast_shapes};
use crate::ops::weight_cache::WeightCache;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::parallel::PARALLEL_MACS;
use crate::tensor::{Layout, Tensor};

/// Writes columns `cols` of a `[k, m]` matrix into the buffer, row-major
/// (`[k, cols.len()]`), after clearing it: conv's im2col, one block at a
/// time.
pub(crate) type FillColumns<'a, T> = dyn Fn(Range<usize>, &mut Vec<T>) + Sync + 'a;

/// One 2-D block product `c = a · b`, overwriting `c` (also used by `conv`).
pub(crate) trait MatMulElem: Num {
    fn gemm(a: &ArrayView2<'_, Self>, b: &ArrayView2<'_, Self>, c: &mut ArrayViewMut2<'_, Self>);

    /// `c = a · b` on this thread, for row-major `a` `[n, k]`, `b` `[k, m]`
    /// and `c` `[n, m]`: for kernels that split their work among threads
    /// themselves (conv's Winograd blocks).
    fn gemm_serial(a: &[Self], b: &[Self], c: &mut [Self], n: usize, k: usize, m: usize) {
        if let (Ok(a), Ok(b), Ok(mut c)) = (
            ArrayView2::from_shape((n, k), a),
            ArrayView2::from_shape((k, m), b),
            ArrayViewMut2::from_shape((n, m), c),
        ) {
            Self::gemm(&a, &b, &mut c);
        }
    }

    /// `c = a · b` for a row-major `a` `[n, k]`, with `b` `[k, m]` and `c`
    /// `[n, m]` each row-major or, flagged `true`, column-major: a 1×1
    /// conv of a channels-last value reads its plane and writes its output
    /// as column-major matrices. Threads split it as the row-major product
    /// splits. False, with nothing written, for dtypes without it.
    fn gemm_major(
        _a: &[Self],
        _dims: (usize, usize, usize),
        _b: (&[Self], bool),
        _c: (&mut [Self], bool),
    ) -> bool {
        false
    }

    /// `c = a · b` where `b` (`[k, m]`) is never whole: `fill` writes a
    /// block of `block` of its columns at a time, which is multiplied while
    /// it is in cache (conv's im2col matrix would otherwise go through
    /// memory twice). `a` is row-major `[n, k]` and `c` `[n, m]` in `dst`,
    /// row-major or, with `dst`'s flag, column-major (a conv's output
    /// channels-last). With `par`, the blocks run in parallel on the rayon pool,
    /// each with its own buffer. f32 and f64 only (conv computes 16-bit
    /// floats in f32); other dtypes get an internal error. `bias` (`[n]`),
    /// when given, is added to each row of `c` block by block, while the
    /// block is in cache.
    #[allow(clippy::too_many_arguments)]
    fn gemm_blocks(
        _a: (&[Self], Option<&[Self]>),
        _n: usize,
        _k: usize,
        _dst: (&mut [Self], bool),
        _m: usize,
        _block: usize,
        _par: bool,
        _fill: &FillColumns<'_, Self>,
    ) -> Result<()> {
        op_err("internal: blocked GEMM is f32 and f64 only")
    }
}

/// [`MatMulElem::gemm_blocks`] through faer: the column blocks of `c` are
/// faer's disjoint views, each multiplied on one thread.
#[allow(clippy::too_many_arguments)]
fn faer_gemm_blocks<T>(
    (a, bias): (&[T], Option<&[T]>),
    n: usize,
    k: usize,
    (dst, c_cols): (&mut [T], bool),
    m: usize,
    block: usize,
    par: bool,
    fill: &FillColumns<'_, T>,
) -> Result<()>
where
    T: faer::traits::ComplexField + Copy + num_traits::Zero + num_traits::One + Send + Sync + TailDots,
    T: std::ops::Add<Output = T>,
{
    if bias.is_some_and(|b| b.len() < n) {
        return op_err(format!(
            "internal: gemm blocks of {n} rows with a bias of {}",
            bias.map_or(0, <[T]>::len)
        ));
    }
    if k == 0 || n == 0 || m == 0 || a.len() != n * k || dst.len() != n * m {
        if a.len() != n * k || dst.len() != n * m {
            return op_err(format!(
                "internal: gemm blocks of [{n}, {k}] · [{k}, {m}] on {} and {} elements",
                a.len(),
                dst.len()
            ));
        }
        dst.fill(T::zero());
        if let Some(b) = bias {
            add_row_bias(as_mat(dst, n, m, c_cols), b);
        }
        return Ok(());
    }
    let block = block.max(1);
    let a_rows = a;
    let a = MatRef::from_row_major_slice(a, n, k);
    let c = as_mat(dst, n, m, c_cols);
    let run = |j: usize, cb: MatMut<'_, T>, col: &mut Vec<T>| {
        let cols = j * block..j * block + cb.ncols();
        let w = cols.len();
        fill(cols, col);
        let b = MatRef::from_row_major_slice(&col[..], k, w);
        let mut cb = cb;
        matmul(cb.as_mut(), Accum::Replace, a, b, T::one(), Par::Seq);
        if let Some(bias) = bias {
            add_row_bias(cb, bias);
        }
    };
    if m <= block {
        // One block, whose product splits across the pool.
        let mut col = Vec::new();
        fill(0..m, &mut col);
        let b = MatRef::from_row_major_slice(&col[..], k, m);
        // The dot-product tail writes rows of a row-major `c`.
        let main = if c_cols { m } else { m - T::tail(m) };
        parallel_matmul(c.subcols_mut(0, main), a, b.subcols(0, main), par);
        if main < m {
            tail_dots(a_rows, a, b, dst, main);
        }
        if let Some(bias) = bias {
            add_row_bias(as_mat(dst, n, m, c_cols), bias);
        }
    } else if par {
        use rayon::prelude::*;
        c.par_col_chunks_mut(block)
            .enumerate()
            .for_each_init(Vec::new, |col, (j, cb)| run(j, cb, col));
    } else {
        let mut c = c;
        let mut col = Vec::new();
        for j in 0..m.div_ceil(block) {
            let w = block.min(m - j * block);
            run(j, c.as_mut().subcols_mut(j * block, w), &mut col);
        }
    }
    Ok(())
}

/// `dst` as an `[n, m]` matrix, column-major with `c_cols`.
fn as_mat<T>(dst: &mut [T], n: usize, m: usize, c_cols: bool) -> MatMut<'_, T> {
    if c_cols {
        MatMut::from_column_major_slice_mut(dst, n, m)
    } else {
        MatMut::from_row_major_slice_mut(dst, n, m)
    }
}

/// `dst` (`[n, m]`, column-major with `c_cols`) plus `bias[i]` on each
/// row `i`: a conv's per-channel bias over its planes or, channels-last,
/// over its positions.
pub(crate) fn add_bias_rows<T>(dst: &mut [T], (n, m): (usize, usize), c_cols: bool, bias: &[T])
where
    T: Copy + std::ops::Add<Output = T>,
{
    add_row_bias(as_mat(dst, n, m, c_cols), bias);
}

/// `c[i, j] += bias[i]`, along whichever of `c`'s rows or columns are
/// contiguous, in one SIMD dispatch (a channels-last block's columns are
/// a few channels each).
fn add_row_bias<T>(mut c: MatMut<'_, T>, bias: &[T])
where
    T: Copy + std::ops::Add<Output = T>,
{
    let bias = &bias[..c.nrows()];
    let add = |v: &mut T, b: T| *v = *v + b;
    if c.ncols() == 1 || c.col_stride() != 1 {
        wide_loop::run(|| {
            for j in 0..c.ncols() {
                let mut col = c.as_mut().col_mut(j);
                match col.as_mut().try_as_col_major_mut() {
                    Some(col) => col
                        .as_slice_mut()
                        .iter_mut()
                        .zip(bias)
                        .for_each(|(v, &b)| add(v, b)),
                    None => col.iter_mut().zip(bias).for_each(|(v, &b)| add(v, b)),
                }
            }
        });
        return;
    }
    wide_loop::run(|| {
        for (i, &b) in bias.iter().enumerate() {
            let mut row = c.as_mut().row_mut(i);
            match row.as_mut().try_as_row_major_mut() {
                Some(row) => row.as_slice_mut().iter_mut().for_each(|v| add(v, b)),
                None => row.iter_mut().for_each(|v| add(v, b)),
            }
        }
    });
}

/// `v` as a faer matrix, when it is contiguous in row- or column-major
/// order (a transposed view is column-major: read in place, no copy).
fn faer_ref<'a, T>(v: &'a ArrayView2<'_, T>) -> Option<MatRef<'a, T>> {
    let (r, c) = v.dim();
    if v.is_standard_layout() {
        Some(MatRef::from_row_major_slice(v.as_slice_memory_order()?, r, c))
    } else if v.t().is_standard_layout() {
        Some(MatRef::from_column_major_slice(v.as_slice_memory_order()?, r, c))
    } else {
        None
    }
}

/// `c = a · b` through faer's GEMM (runtime-dispatched AVX2/AVX-512/FMA
/// kernels), its last [`TailDots::tail`] columns as dot products. Returns
/// false, leaving `c` alone, when a layout is not one faer's safe
/// constructors take (rows or columns with gaps, negative or zero
/// strides); the caller then uses matrixmultiply, which takes any strides.
fn faer_gemm<T>(a: &ArrayView2<'_, T>, b: &ArrayView2<'_, T>, c: &mut ArrayViewMut2<'_, T>) -> bool
where
    T: faer::traits::ComplexField + Copy + num_traits::Zero + num_traits::One + TailDots,
{
    let (Some(fa), Some(fb)) = (faer_ref(a), faer_ref(b)) else {
        return false;
    };
    let (n, m) = c.dim();
    let k = a.ncols();
    if !c.is_standard_layout() {
        return false;
    }
    let Some(dst) = c.as_slice_memory_order_mut() else {
        return false;
    };
    if k == 0 {
        dst.fill(T::zero());
        return true;
    }
    let tail = a.as_slice().filter(|_| n > 0).map_or(0, |_| T::tail(m));
    let main = m - tail;
    let macs = n.saturating_mul(main).saturating_mul(k);
    let par = macs >= band_threshold(n, main) && crate::parallel::intra_op();
    let c = MatMut::from_row_major_slice_mut(dst, n, m).subcols_mut(0, main);
    parallel_matmul(c, fa, fb.subcols(0, main), par);
    if let Some(av) = a.as_slice().filter(|_| tail > 0) {
        tail_dots(av, fa, fb, dst, main);
    }
    true
}

/// [`MatMulElem::gemm_major`] through faer. Sizes that do not match the
/// slices refuse (false).
fn faer_gemm_major<T>(a: &[T], (n, k, m): (usize, usize, usize), b: (&[T], bool), c: (&mut [T], bool)) -> bool
where
    T: faer::traits::ComplexField + Copy + num_traits::Zero + num_traits::One,
{
    let ((bs, b_cols), (cs, c_cols)) = (b, c);
    if a.len() != n * k || bs.len() != k * m || cs.len() != n * m {
        return false;
    }
    if k == 0 {
        cs.fill(T::zero());
        return true;
    }
    let fa = MatRef::from_row_major_slice(a, n, k);
    let fb = if b_cols {
        MatRef::from_column_major_slice(bs, k, m)
    } else {
        MatRef::from_row_major_slice(bs, k, m)
    };
    let fc = if c_cols {
        MatMut::from_column_major_slice_mut(cs, n, m)
    } else {
        MatMut::from_row_major_slice_mut(cs, n, m)
    };
    let par = n.saturating_mul(m).saturating_mul(k) >= band_threshold(n, m) && crate::parallel::intra_op();
    parallel_matmul(fc, fa, fb, par);
    true
}

/// The last few columns of a product as dot products ([`dots`]), for the
/// dtypes that have that kernel: the GEMM crate's AVX2 f32 kernel tiles
/// the columns of a row-major `c` by [`GEMM_TILE_COLS`] (its AVX-512 one by
/// [`GEMM_TILE_COLS_AVX512`]), and the 1 to
/// [`TAIL_MAX`] past the last whole tile go through a one-vector kernel
/// that costs about a tile's time whatever their number (measured:
/// [1152, 192] · [192, m] took 223 µs at m = 48, 307 at 49, 305 at 64).
/// A 1×1 conv over a 7×7 plane, and a 3×3 one with a 7×7 output, have 49
/// columns; as 48 and a dot product per row, [1152, 192] · [192, 49] took
/// 0.82x the time, [1280, 320] · [320, 49] 0.87x.
/// A single column (a matrix-vector product) is all dot products.
pub(crate) trait TailDots: Sized {
    /// How many of `m` columns to leave to [`TailDots::dots`].
    fn tail(_m: usize) -> usize {
        0
    }

    /// `c[i · ldc + j] = Σ_p a[i · k + p] · cols[j · k + p]` for every row
    /// `i` of `c` and column `j < cols.len() / k`; false, with nothing
    /// written, where the kernel does not run.
    fn dots(_a: &[Self], _k: usize, _cols: &[Self], _c: &mut [Self], _ldc: usize, _par: bool) -> bool {
        false
    }
}

impl TailDots for f64 {}

impl TailDots for f32 {
    fn tail(m: usize) -> usize {
        let Some(cols) = gemm_tile_cols() else {
            return 0;
        };
        if m == 1 {
            // A matrix-vector product (a squeeze-and-excitation block's
            // 1×1 conv over a 1×1 plane): faer's GEMM took 14 µs for
            // [144, 576] · [576, 1] on a Zen 5 core, 12 GFLOP/s.
            return 1;
        }
        let tail = m % cols;
        if m > cols && (1..=TAIL_MAX).contains(&tail) {
            tail
        } else {
            0
        }
    }

    fn dots(a: &[f32], k: usize, cols: &[f32], c: &mut [f32], ldc: usize, par: bool) -> bool {
        dots::dots_f32(a, k, k, cols, c, ldc, par)
    }
}

/// Columns of a row-major f32 `c` per tile of the GEMM crate's AVX2
/// kernel (see [`TailDots`]).
const GEMM_TILE_COLS: usize = 24;

/// The same with AVX-512: its kernels tile by whole 16-lane vectors and run
/// the columns past the last one as a masked vector, which costs a whole
/// one. On an AMD Zen 5 VM, paired in one binary (8 pairs, one thread), a
/// 1×1 conv over a 7×7 plane (49 columns, 48 and a dot product per row):
/// [192, 1152] · [1152, 49] 0.86x of the time, [1280, 320] · [320, 49]
/// 0.84x; efficientnet_b0 0.96x, mobilenet_v3_small 0.97x, resnet18 0.97x
/// (its Winograd products over 14×14 planes have 49 columns too).
const GEMM_TILE_COLS_AVX512: usize = 16;

/// The most columns past the last whole tile that [`TailDots::tail`] leaves
/// to dot products. Each costs a pass over `a` and a horizontal sum per
/// row: with 4 (196 columns, a 14×14 plane), [480, 80] · [80, 196] took
/// 1.06x the time of the GEMM crate's, [112, 672] · [672, 196] 0.97x
/// (AVX2).
const TAIL_MAX: usize = 2;

/// Whether faer's f32 GEMM runs its AVX2 kernel here (AVX2 and FMA, no
/// AVX-512), the one whose tiles [`GEMM_TILE_COLS`] describes. Conv also
/// picks its Winograd threshold by it.
pub(crate) fn gemm_avx2_tiles() -> bool {
    gemm_tile_cols() == Some(GEMM_TILE_COLS)
}

/// Columns per tile of faer's f32 GEMM kernel on this CPU, where the dot
/// products of [`TailDots`] run (AVX2 and FMA); `None` elsewhere.
fn gemm_tile_cols() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        static COLS: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
        *COLS.get_or_init(|| {
            if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
                None
            } else if std::arch::is_x86_feature_detected!("avx512f") {
                Some(GEMM_TILE_COLS_AVX512)
            } else {
                Some(GEMM_TILE_COLS)
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Columns `main..` of the row-major `[n, m]` product `a · b` in `dst`,
/// for `a` row-major `[n, k]` (given as `a` and as `fa`): through
/// [`TailDots::dots`] on those columns of `b` copied out contiguous, or
/// faer where that kernel does not run.
fn tail_dots<T>(a: &[T], fa: MatRef<'_, T>, b: MatRef<'_, T>, dst: &mut [T], main: usize)
where
    T: faer::traits::ComplexField + Copy + num_traits::One + TailDots,
{
    let (n, k, m) = (fa.nrows(), fa.ncols(), b.ncols());
    let cols: Vec<T> = (main..m).flat_map(|j| (0..k).map(move |p| b[(p, j)])).collect();
    // Bound by reading `a`: split as a memory-bound pass is.
    let par = crate::parallel::split(n.saturating_mul(k));
    if !T::dots(a, k, &cols, &mut dst[main..], m, par) {
        let bt = MatRef::from_column_major_slice(&cols, k, m - main);
        let c = MatMut::from_row_major_slice_mut(dst, n, m).subcols_mut(main, m - main);
        matmul(c, Accum::Replace, fa, bt, T::one(), Par::Seq);
    }
}

/// Multiply-adds from which a product that splits into bands
/// ([`split_bands`]) runs in parallel: one serial product per thread costs
/// only the fork-join, so it pays far below [`PARALLEL_MACS`], where faer's
/// own split starts (a MobileNet's 1×1 convs over 28×28 and 14×14 planes,
/// 0.7-2 M multiply-adds, ran on one thread).
const BAND_PARALLEL_MACS: usize = 1 << 19;

/// The multiply-adds from which an `[n, k] · [k, m]` product runs in
/// parallel ([`parallel_matmul`]).
fn band_threshold(n: usize, m: usize) -> usize {
    match bands(n, m) {
        Some(_) => BAND_PARALLEL_MACS,
        None => PARALLEL_MACS,
    }
}

/// How an `n` by `m` product splits in parallel: into bands of rows where
/// it has few columns and enough rows, else of columns where it has two
/// bands' worth and more than one row ([`split_bands`]), else (`None`) by
/// faer. A transformer's projection at a small batch times sequence
/// ([14, 512] · [512, 128] in a small GPT-2) splits by columns: it has too
/// few rows for two bands of them, and faer's split would not pay below
/// [`PARALLEL_MACS`].
fn bands(n: usize, m: usize) -> Option<Bands> {
    if m <= BAND_MAX_COLS && n >= 2 * BAND_ALIGN {
        Some(Bands::Rows)
    } else if m >= 2 * BAND_ALIGN && n > 1 {
        Some(Bands::Cols)
    } else {
        None
    }
}

/// Products with at most this many output columns split into bands of
/// rows when they run in parallel and have rows for two bands; wider ones,
/// and those with fewer rows, into bands of columns ([`split_bands`]).
const BAND_MAX_COLS: usize = 256;

/// Columns of a band of columns of [`split_bands`] are a multiple of this
/// (the GEMM kernel's tiles), and a product splits by rows from twice this
/// many.
const BAND_ALIGN: usize = 16;

/// Rows of a band of rows are a multiple of this: a multiple of 16
/// left two threads uneven halves of a few dozen rows (40 rows as 32 and
/// 8, 112 as 64 and 48). Measured on two threads (faer alone, rows split
/// in two bands, alternated rep by rep): [40, 240] · [240, 196] 0.61x of
/// the time with bands of 16, [112, 672] · [672, 196] 0.87x, [72, 288] ·
/// [288, 49] 0.84x; products already split evenly within noise (0.96x to
/// 1.12x, the same shapes 0.97x to 1.09x on a second run).
const ROW_BAND_ALIGN: usize = 8;

/// `c = a · b`, on the rayon pool when `par`: split as [`bands`] says.
/// Nothing to do when `c` has no column (every column went to
/// [`TailDots`]: a single-column product) or no row.
/// A single row stays with faer: split by columns, [1, 2048] · [2048,
/// 1000] (a classifier's row-major weights) took 1.9x the time of faer's
/// split on two threads; two rows or more gained over it.
fn parallel_matmul<T>(c: MatMut<'_, T>, a: MatRef<'_, T>, b: MatRef<'_, T>, par: bool)
where
    T: faer::traits::ComplexField + Copy + num_traits::One,
{
    if c.ncols() == 0 || c.nrows() == 0 {
        return;
    }
    if !par {
        matmul(c, Accum::Replace, a, b, T::one(), Par::Seq);
    } else if let Some(by) = bands(c.nrows(), c.ncols()) {
        split_bands(c, a, b, by);
    } else {
        matmul(c, Accum::Replace, a, b, T::one(), Par::rayon(0));
    }
}

/// How [`split_bands`] divides the output among threads.
#[derive(Clone, Copy, Debug)]
enum Bands {
    Rows,
    Cols,
}

/// Rows or columns of each band when `len` of them split among `threads`
/// (the last band takes the rest).
fn band_len(len: usize, threads: usize, by: Bands) -> usize {
    let align = match by {
        Bands::Rows => ROW_BAND_ALIGN,
        Bands::Cols => BAND_ALIGN,
    };
    len.div_ceil(threads.max(1)).next_multiple_of(align)
}

/// `c = a · b` as one serial product per band of rows or columns of `c`,
/// one band per thread, so each thread reads only its part of `a` or `b`
/// and faer's own split (which also divides the shared dimension among
/// threads) is not needed. Measured on two threads against one:
///
/// - by rows, where the product has few columns and is bound by reading
///   `a` (the weights of a 1x1 conv over a 7x7 plane, of a 3x3 conv's 49
///   or 196 windows): [512, 4608] · [4608, 49] 2.02x, 1.56x split by faer;
///   [192, 1152] · [1152, 49] 1.90x against 1.12x;
/// - by columns: [197, 768] · [768, 3072] (a ViT MLP) 1.83x against 1.62x,
///   [24, 144] · [144, 3136] (a 1x1 conv of efficientnet) 1.75x against
///   1.26x (faer's split was slower than one thread on several such
///   convs).
///
/// Each element is the serial product's, bit for bit (a test checks it).
fn split_bands<T>(c: MatMut<'_, T>, a: MatRef<'_, T>, b: MatRef<'_, T>, by: Bands)
where
    T: faer::traits::ComplexField + Copy + num_traits::One,
{
    use rayon::prelude::*;
    let threads = rayon::current_num_threads().max(1);
    let len = match by {
        Bands::Rows => c.nrows(),
        Bands::Cols => c.ncols(),
    };
    let band = band_len(len, threads, by);
    let one = |(i, cb): (usize, MatMut<'_, T>)| {
        let (a, b) = match by {
            Bands::Rows => (a.subrows(i * band, cb.nrows()), b),
            Bands::Cols => (a, b.subcols(i * band, cb.ncols())),
        };
        matmul(cb, Accum::Replace, a, b, T::one(), Par::Seq);
    };
    match by {
        Bands::Rows => c.par_row_chunks_mut(band).enumerate().for_each(one),
        Bands::Cols => c.par_col_chunks_mut(band).enumerate().for_each(one),
    }
}

macro_rules! matmul_float {
    ($t:ty, $row:expr) => {
        impl MatMulElem for $t {
            fn gemm(a: &ArrayView2<'_, Self>, b: &ArrayView2<'_, Self>, c: &mut ArrayViewMut2<'_, Self>) {
                if !$row(a, b, c) && !faer_gemm(a, b, c) {
                    // beta = 0: `c` is overwritten without being read (also
                    // when k = 0), so its unspecified contents never leak.
                    general_mat_mul(1.0, a, b, 0.0, c);
                }
            }
            fn gemm_serial(a: &[Self], b: &[Self], c: &mut [Self], n: usize, k: usize, m: usize) {
                if k == 0 {
                    c.fill(0.0);
                    return;
                }
                let c = MatMut::from_row_major_slice_mut(c, n, m);
                let (a, b) = (
                    MatRef::from_row_major_slice(a, n, k),
                    MatRef::from_row_major_slice(b, k, m),
                );
                matmul(c, Accum::Replace, a, b, 1.0, Par::Seq);
            }
            fn gemm_blocks(
                a: (&[Self], Option<&[Self]>),
                n: usize,
                k: usize,
                dst: (&mut [Self], bool),
                m: usize,
                block: usize,
                par: bool,
                fill: &FillColumns<'_, Self>,
            ) -> Result<()> {
                faer_gemm_blocks(a, n, k, dst, m, block, par, fill)
            }
            fn gemm_major(
                a: &[Self],
                dims: (usize, usize, usize),
                b: (&[Self], bool),
                c: (&mut [Self], bool),
            ) -> bool {
                faer_gemm_major(a, dims, b, c)
            }
        }
    };
}
matmul_float!(f32, row_gemv);
matmul_float!(f64, |_: &_, _: &_, _: &mut _| false);

/// Elements of `b` from which a single row's product splits among
/// threads: it is bound by reading `b` (half a MiB takes about 20 µs on
/// one core), not by its multiply-adds, so it splits far below a GEMM's
/// [`PARALLEL_MACS`].
const GEMV_PARALLEL: usize = 1 << 17;

/// Columns from which a single row's product is a GEMV: with fewer than a
/// vector's worth, every row of `b` would be one padded vector load, and a
/// dot product (`[1, k] · [k, 1]`) stays with faer.
const GEMV_MIN_COLS: usize = 16;

/// `c = a · b` through [`gemv::gemv_f32`] when `c` is one row of at least
/// [`GEMV_MIN_COLS`], `a` a contiguous row and `b` row-major (a
/// classifier's Gemm at batch 1, its weights transposed when imported);
/// false, leaving `c` alone, otherwise.
/// Threads split it from [`GEMV_PARALLEL`] elements of `b`.
fn row_gemv(a: &ArrayView2<'_, f32>, b: &ArrayView2<'_, f32>, c: &mut ArrayViewMut2<'_, f32>) -> bool {
    let (n, m) = c.dim();
    let k = a.ncols();
    if n != 1 || k == 0 || m < GEMV_MIN_COLS {
        return false;
    }
    let (Some(x), Some(bs), Some(y)) = (a.as_slice(), b.as_slice(), c.as_slice_mut()) else {
        return false;
    };
    let par = k.saturating_mul(m) >= GEMV_PARALLEL && crate::parallel::intra_op();
    gemv::gemv_f32(x, bs, m, y, par)
}

/// f16 blocks are widened to f32, multiplied there (sums accumulate in
/// f32, as numpy's float16 matmul does) and each result rounded once.
macro_rules! matmul_half {
    ($($t:ty),*) => {$(
        impl MatMulElem for $t {
            fn gemm(a: &ArrayView2<'_, Self>, b: &ArrayView2<'_, Self>, c: &mut ArrayViewMut2<'_, Self>) {
                let (a, b) = (a.mapv(<$t>::to_f32), b.mapv(<$t>::to_f32));
                let mut wide = ndarray::Array2::<f32>::zeros(c.dim());
                f32::gemm(&a.view(), &b.view(), &mut wide.view_mut());
                c.zip_mut_with(&wide, |c, &w| *c = <$t>::from_f32(w));
            }
        }
    )*};
}
matmul_half!(half::f16, half::bf16);

macro_rules! matmul_int {
    ($t:ty) => {
        impl MatMulElem for $t {
            fn gemm(a: &ArrayView2<'_, Self>, b: &ArrayView2<'_, Self>, c: &mut ArrayViewMut2<'_, Self>) {
                // c[i, :] = sum_k a[i, k] * b[k, :], row by row, wrapping.
                for (a_row, mut c_row) in a.rows().into_iter().zip(c.rows_mut()) {
                    c_row.fill(0);
                    for (&aik, b_row) in a_row.iter().zip(b.rows()) {
                        c_row.zip_mut_with(&b_row, |c, &b| *c = c.wrapping_add(aik.wrapping_mul(b)));
                    }
                }
            }
        }
    };
}
matmul_int!(i32);
matmul_int!(i64);
matmul_int!(u8);
matmul_int!(i8);
matmul_int!(u16);
matmul_int!(i16);
matmul_int!(u32);
matmul_int!(u64);

/// One 2-D block product `c = a · b`.
fn block<T: MatMulElem>(a: ArrayViewD<'_, T>, b: ArrayViewD<'_, T>, c: ArrayViewMutD<'_, T>) -> Result<()> {
    let dim_err = |e: ndarray::ShapeError| Error::Op(format!("internal: matmul block is not 2-D: {e}"));
    let a = a.into_dimensionality::<Ix2>().map_err(dim_err)?;
    let b = b.into_dimensionality::<Ix2>().map_err(dim_err)?;
    let mut c = c.into_dimensionality::<Ix2>().map_err(dim_err)?;
    let ((n, k), (k2, m)) = (a.dim(), b.dim());
    if k != k2 || c.dim() != (n, m) {
        return op_err(format!(
            "internal: matmul blocks {:?} · {:?} into {:?}",
            a.shape(),
            b.shape(),
            c.shape()
        ));
    }
    T::gemm(&a, &b, &mut c);
    Ok(())
}

/// Multiplies stacks of matrices whose batch axes already agree. The batch
/// indices are walked in a loop (not by recursing once per batch axis), so
/// the stack depth does not grow with the rank.
fn batched<T: MatMulElem>(
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    mut c: ArrayViewMutD<'_, T>,
) -> Result<()> {
    let nb = c.ndim().saturating_sub(2);
    if a.ndim() != c.ndim()
        || b.ndim() != c.ndim()
        || a.shape()[..nb] != c.shape()[..nb]
        || b.shape()[..nb] != c.shape()[..nb]
    {
        return op_err(format!(
            "internal: matmul batch axes of {:?} · {:?} into {:?} differ",
            a.shape(),
            b.shape(),
            c.shape()
        ));
    }
    // No element to write (an empty batch, or n or m is 0): no block to run,
    // however many batch indices there are.
    if c.is_empty() {
        return Ok(());
    }
    let batch = IxDyn(&c.shape()[..nb]);
    for idx in ndarray::indices(batch) {
        let (mut ai, mut bi, mut ci) = (a.view(), b.view(), c.view_mut());
        for k in 0..nb {
            ai = ai.index_axis_move(Axis(0), idx[k]);
            bi = bi.index_axis_move(Axis(0), idx[k]);
            ci = ci.index_axis_move(Axis(0), idx[k]);
        }
        block(ai, bi, ci)?;
    }
    Ok(())
}

/// One operand of [`faer_stack`]: where each matrix of the stack starts in
/// the buffer, and its strides, one of them 1.
struct Stack {
    starts: Vec<usize>,
    rows: usize,
    cols: usize,
    /// Whether the rows are contiguous (else the columns are), and the
    /// distance between them (rows or columns), at least their length.
    row_major: bool,
    stride: usize,
}

impl Stack {
    /// The matrices in the last two axes of `l`; `None` for a negative
    /// stride or neither axis contiguous.
    fn of(l: &Layout) -> Option<Stack> {
        let nd = l.ndim();
        let (shape, strides) = (l.shape(), l.strides());
        if nd < 2 || strides.iter().any(|&s| s < 0) {
            return None;
        }
        let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
        let (rs, cs) = (strides[nd - 2] as usize, strides[nd - 1] as usize);
        // A single row or column may have any stride along it.
        let (row_major, stride) = if cs == 1 || cols == 1 {
            (true, if rows == 1 { cols } else { rs })
        } else if rs == 1 || rows == 1 {
            (false, if cols == 1 { rows } else { cs })
        } else {
            return None;
        };
        if stride < if row_major { cols } else { rows } {
            return None;
        }
        let batch = Layout::new(&shape[..nd - 2], &strides[..nd - 2], l.offset());
        Some(Stack {
            starts: batch.offsets().collect(),
            rows,
            cols,
            row_major,
            stride,
        })
    }

    /// Elements from a matrix's start to its last one, inclusive.
    fn span(&self) -> usize {
        match self.row_major {
            true => (self.rows - 1) * self.stride + self.cols,
            false => (self.cols - 1) * self.stride + self.rows,
        }
    }

    /// Matrix `i` of the stack in `buf`, which [`Stack::fits`] checked.
    fn at<'a, T>(&self, buf: &'a [T], i: usize) -> MatRef<'a, T> {
        let s = &buf[self.starts[i]..self.starts[i] + self.span()];
        match self.row_major {
            true => MatRef::from_row_major_slice_with_stride(s, self.rows, self.cols, self.stride),
            false => MatRef::from_column_major_slice_with_stride(s, self.rows, self.cols, self.stride),
        }
    }

    /// Whether every matrix lies inside a buffer of `len` elements.
    fn fits(&self, len: usize) -> bool {
        self.starts.iter().all(|&s| s + self.span() <= len)
    }
}

/// A float stack product `[..., n, k] · [..., k, m]` (batch axes already
/// broadcast) through faer, each matrix read in place from its operand's
/// buffer: rows or columns may have gaps between them, as in ViT's `V`, a
/// transposed slice of the QKV projection whose heads' rows are 768 apart,
/// which ndarray's views cannot hand to faer (matrixmultiply ran ViT's
/// `attn · V` at about 40 G multiply-adds/s, on one thread). The matrices
/// run in parallel on the pool, one serial product each: a head's [197,
/// 64] · [64, 197] is too small to split well, and ViT's two attention
/// products per layer gained nothing from a second thread. False, with
/// nothing written, for a 2-D product, an empty one, matrices of one row
/// (they keep the f32 GEMV kernel), a non-contiguous output or an operand
/// [`Stack::of`] declines.
fn faer_stack<T>(a: &Tensor, b: &Tensor, out: &Tensor) -> Result<bool>
where
    T: Element + faer::traits::ComplexField + Copy + num_traits::One + Send + Sync,
{
    let nd = out.ndim();
    if nd < 3 || a.ndim() != nd || b.ndim() != nd || !out.is_contiguous() || out.size() == 0 {
        return Ok(false);
    }
    let (n, m, k) = (out.shape()[nd - 2], out.shape()[nd - 1], a.shape()[nd - 1]);
    if n == 1 {
        return Ok(false);
    }
    let (Some(sa), Some(sb)) = (Stack::of(a.layout()), Stack::of(b.layout())) else {
        return Ok(false);
    };
    if k == 0 || sa.starts.len() != sb.starts.len() {
        return Ok(false);
    }
    let matrices = sa.starts.len();
    let macs = matrices.saturating_mul(n).saturating_mul(m).saturating_mul(k);
    let par = matrices > 1 && macs >= BAND_PARALLEL_MACS && crate::parallel::intra_op();
    a.read_buffer(|ab: &[T]| {
        b.read_buffer(|bb: &[T]| {
            if !sa.fits(ab.len()) || !sb.fits(bb.len()) {
                return Ok(false);
            }
            out.write(
                |mut ov: ArrayViewMutD<'_, T>| match ov.as_slice_memory_order_mut() {
                    Some(dst) => {
                        stack_products((&sa, ab), (&sb, bb), dst, par);
                        true
                    }
                    None => false,
                },
            )
        })?
    })?
}

/// `dst` (row-major `[matrices, n, m]`) = the products of the stacks `a`
/// and `b` in their buffers, one serial product per matrix, in parallel
/// when `par`.
fn stack_products<T>((sa, ab): (&Stack, &[T]), (sb, bb): (&Stack, &[T]), dst: &mut [T], par: bool)
where
    T: faer::traits::ComplexField + Copy + num_traits::One + Send + Sync,
{
    let (n, m) = (sa.rows, sb.cols);
    let one = |(i, c): (usize, &mut [T])| {
        let c = MatMut::from_row_major_slice_mut(c, n, m);
        matmul(c, Accum::Replace, sa.at(ab, i), sb.at(bb, i), T::one(), Par::Seq);
    };
    if par {
        use rayon::prelude::*;
        dst.par_chunks_mut(n * m).enumerate().for_each(one);
    } else {
        dst.chunks_mut(n * m).enumerate().for_each(one);
    }
}

/// Shapes of a matmul: the batch shape, the promoted operand shapes and the
/// output shape.
struct Plan {
    a: Vec<usize>,
    b: Vec<usize>,
    out: Vec<usize>,
}

fn plan(sa: &[usize], sb: &[usize]) -> Result<Plan> {
    for (i, s) in [sa, sb].into_iter().enumerate() {
        if s.is_empty() {
            return rank_err(format!(
                "op 'matmul': input {i} is 0-d; matmul needs at least 1 dimension (shapes {sa:?} and {sb:?})"
            ));
        }
    }
    let a2: Vec<usize> = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.to_vec()
    };
    let b2: Vec<usize> = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.to_vec()
    };
    let (ra, rb) = (a2.len(), b2.len());
    let (n, ka, kb, m) = (a2[ra - 2], a2[ra - 1], b2[rb - 2], b2[rb - 1]);
    if ka != kb {
        return shape_err(format!(
            "op 'matmul': shapes {sa:?} and {sb:?} do not match: contracted dims {ka} and {kb} differ"
        ));
    }
    let batch = broadcast_concrete(&a2[..ra - 2], &b2[..rb - 2]).map_err(|_| {
        Error::Shape(format!(
            "op 'matmul': batch dims of shapes {sa:?} and {sb:?} do not broadcast"
        ))
    })?;
    let with = |tail: &[usize]| batch.iter().chain(tail).copied().collect::<Vec<usize>>();
    let mut out = batch.to_vec();
    if sa.len() > 1 {
        out.push(n);
    }
    if sb.len() > 1 {
        out.push(m);
    }
    Ok(Plan {
        a: with(&[n, ka]),
        b: with(&[kb, m]),
        out,
    })
}

fn run_matmul<T: MatMulElem>(a: &Tensor, b: &Tensor, a_1d: bool, b_1d: bool, out: &Tensor) -> Result<()> {
    a.read(|av: ArrayViewD<'_, T>| {
        b.read(|bv: ArrayViewD<'_, T>| {
            out.write(|ov: ArrayViewMutD<'_, T>| {
                // Re-insert the axes that 1-D promotion removed from `out`.
                let nb = av.ndim() - 2;
                let mut ov = ov;
                if a_1d {
                    ov = ov.insert_axis(Axis(nb));
                }
                if b_1d {
                    ov = ov.insert_axis(Axis(nb + 1));
                }
                batched(av, bv, ov)
            })
        })
    })????;
    Ok(())
}

/// `matmul(a, b)`: numpy's matrix product.
#[derive(Clone, Debug, Default)]
pub struct MatMul {
    /// `b` packed for `kernels::packed_gemm`, kept while it is unchanged.
    /// Packed from the first call, not the second: a product's kernel,
    /// and so its bits, must not depend on what ran before (a run that
    /// checks another, or a graph's first run against its later ones).
    packed: WeightCache,
}

/// Rows of `a` from which a product by a kept weight runs the packed
/// kernel: one tile. A single row (a classifier's) is a matrix-vector
/// product, bound by reading `b` ([`row_gemv`]).
const PACKED_MIN_ROWS: usize = 8;

/// Rows of `a` from which faer's product is as fast as the packed
/// kernel's (ViT's 197-row products: 0.97x-1.01x), so the weight is not
/// packed: its packed copy would double the weights' memory for nothing.
const PACKED_MAX_ROWS: usize = 128;

impl MatMul {
    /// `a · b` through the packed-weight kernel (f32): `b` a 2-D matrix
    /// (packed once while unchanged, in this op's cache), `a`
    /// contiguous with [`PACKED_MIN_ROWS`] to [`PACKED_MAX_ROWS`] rows,
    /// the output contiguous. False (nothing written) otherwise.
    ///
    /// Against faer on GPT-2/BERT-sized products (14-16 rows, 128-512
    /// wide, one thread): 0.76x-0.89x of the time; on ViT's (197 rows,
    /// 768-3072 wide) 0.97x-1.01x.
    fn packed_product(&self, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<bool> {
        let Some(width) = packed_gemm::panel_width() else {
            return Ok(false);
        };
        let fits = a.dtype() == DType::F32
            && a.ndim() >= 2
            && b.ndim() == 2
            && a.is_contiguous()
            && out.is_contiguous();
        if !fits {
            return Ok(false);
        }
        let (k, m) = (b.shape()[0], b.shape()[1]);
        let rows = a.size() / k.max(1);
        let few = (PACKED_MIN_ROWS..PACKED_MAX_ROWS).contains(&rows);
        if !few || k == 0 || m == 0 || a.shape()[a.ndim() - 1] != k {
            return Ok(false);
        }
        let make = || {
            b.to_contiguous()
                .and_then(|b| b.read_contiguous(|bs: &[f32]| packed_gemm::pack_transposed(bs, k, m, width)))
                .unwrap_or_default()
        };
        let packed = self.packed.get(b, make);
        if packed.len() != m.div_ceil(width) * k * width {
            return Ok(false);
        }
        a.read_contiguous(|xs: &[f32]| {
            out.write_contiguous(|os: &mut [f32]| {
                let p = Product {
                    x: xs,
                    packed: &packed,
                    bias: None,
                    k,
                    m,
                    width,
                };
                packed_gemm::run(p, os);
            })
        })??;
        Ok(true)
    }
}

fn check_dtypes(a: DType, b: DType) -> Result<()> {
    if a != b {
        return dtype_err(format!(
            "op 'matmul' needs inputs of one dtype, got {a} and {b} (insert a cast)"
        ));
    }
    if !a.is_computable() {
        return refuse_dtype("matmul", a);
    }
    Ok(())
}

impl Op for MatMul {
    fn name(&self) -> &str {
        "matmul"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (a, b) = (&inputs[0], &inputs[1]);
        check_dtypes(a.dtype, b.dtype)?;
        let (Some(sa), Some(sb)) = (&a.shape, &b.shape) else {
            return Ok(vec![TypeInfo::unknown(a.dtype)]);
        };
        let (da, db) = (a.shape_string(), b.shape_string());
        if sa.is_empty() || sb.is_empty() {
            return rank_err(format!(
                "op 'matmul': 0-d input; matmul needs at least 1 dimension (shapes {da} and {db})"
            ));
        }
        let a2: Vec<i64> = if sa.len() == 1 { vec![1, sa[0]] } else { sa.clone() };
        let b2: Vec<i64> = if sb.len() == 1 { vec![sb[0], 1] } else { sb.clone() };
        let (ra, rb) = (a2.len(), b2.len());
        let (n, ka, kb, m) = (a2[ra - 2], a2[ra - 1], b2[rb - 2], b2[rb - 1]);
        if ka >= 0 && kb >= 0 && ka != kb {
            return shape_err(format!(
                "op 'matmul': shapes {da} and {db} do not match: contracted dims {ka} and {kb} differ"
            ));
        }
        let batch = broadcast_shapes(&Some(a2[..ra - 2].to_vec()), &Some(b2[..rb - 2].to_vec()))
            .map_err(|_| {
                Error::Shape(format!(
                    "op 'matmul': batch dims of shapes {da} and {db} do not broadcast"
                ))
            })?
            .unwrap_or_default();
        let mut out = batch;
        if sa.len() > 1 {
            out.push(n);
        }
        if sb.len() > 1 {
            out.push(m);
        }
        Ok(vec![TypeInfo::new(a.dtype, Some(out))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let (a, b) = (&inputs[0], &inputs[1]);
        let dtype = a.dtype();
        check_dtypes(dtype, b.dtype())?;
        let p = plan(a.shape(), b.shape())?;
        let (a_1d, b_1d) = (a.ndim() == 1, b.ndim() == 1);
        let out = ctx.output(0, dtype, &p.out)?;
        if self.packed_product(a, b, &out)? || stack_times_matrix(a, b, &out)? {
            return Ok(vec![out]);
        }
        // Promote 1-D operands and broadcast the batch axes, all as views.
        let a = if a_1d { a.expand_dims(0)? } else { a.clone() };
        let b = if b_1d { b.expand_dims(1)? } else { b.clone() };
        let (a, b) = (a.broadcast_to(&p.a)?, b.broadcast_to(&p.b)?);
        let stacked = match dtype {
            DType::F32 => faer_stack::<f32>(&a, &b, &out)?,
            DType::F64 => faer_stack::<f64>(&a, &b, &out)?,
            _ => false,
        };
        if stacked {
            return Ok(vec![out]);
        }
        crate::dispatch_num!(dtype, T => run_matmul::<T>(&a, &b, a_1d, b_1d, &out)?,
            return refuse_dtype("matmul", dtype));
        Ok(vec![out])
    }
}

/// A stack of matrices times one matrix, `[..., n, k] · [k, m]` (numpy
/// broadcasts the 2-D `b` over the stack), as the single product `[rows, k]
/// · [k, m]` when `a`'s leading axes and the output's merge into rows
/// without a copy (`Layout::reshape`): one GEMM at its full size instead of
/// one per batch index, which for a `[197, 1, 768]` stack would be 197
/// one-row products each reading all of `b`. False (nothing written) when
/// the layouts do not merge; the caller then walks the batch.
fn stack_times_matrix(a: &Tensor, b: &Tensor, out: &Tensor) -> Result<bool> {
    if a.ndim() <= 2 || b.ndim() != 2 {
        return Ok(false);
    }
    let (k, m) = (a.shape()[a.ndim() - 1], b.shape()[1]);
    let rows: usize = a.shape()[..a.ndim() - 1].iter().product();
    let (Some(la), Some(lo)) = (a.layout().reshape(&[rows, k]), out.layout().reshape(&[rows, m])) else {
        return Ok(false);
    };
    let (a2, o2) = (a.with_layout(la)?, out.with_layout(lo)?);
    crate::dispatch_num!(a.dtype(), T => run_matmul::<T>(&a2, b, false, false, &o2)?,
        return refuse_dtype("matmul", a.dtype()));
    Ok(true)
}

pub fn register(r: &mut OpRegistry) {
    // One op per node: each keeps its own packed weight.
    r.register("matmul", |a: &Attrs| {
        a.only("matmul", &[])?;
        Ok(Arc::new(MatMul::default()) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::dtype::Element;
    use crate::tensor::IndexSpec;

    fn t<T: Element>(shape: &[usize], data: Vec<T>) -> Tensor {
        Tensor::from_vec(shape, data).unwrap()
    }

    fn rev0(x: &Tensor) -> Tensor {
        x.slice(&[IndexSpec::range(-1, i64::MIN, -1)]).unwrap()
    }

    fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Ok(MatMul::default()
            .compute(&[a.clone(), b.clone()], &mut OpCtx::new("n"))?
            .remove(0))
    }

    /// A product by one weight, called again and again: packed from the
    /// first call (where the packed kernel runs), the same bits each call,
    /// each time the definition; a stack of rows merges into one product.
    /// A new matrix each call is packed anew and gives those bits too.
    #[test]
    fn a_product_by_a_weight_gives_the_same_bits_from_the_first_call() {
        // Sums of 768 terms: long enough for faer and the packed kernel
        // to round them differently.
        let (rows, k, m) = (16, 768, 256);
        let f = |n: usize, s: usize| -> Vec<f32> {
            (0..n)
                .map(|i| (((i * 7 + s * 5) % 17) as f32 - 8.0) * 0.1)
                .collect()
        };
        let (av, bv) = (f(rows * k, 1), f(k * m, 2));
        let a = t(&[2, 8, k], av.clone());
        let b = t(&[k, m], bv.clone());
        let op = MatMul::default();
        let bits = |out: &Tensor| -> Vec<u32> {
            out.to_array::<f32>()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect()
        };
        let mut first: Option<Vec<u32>> = None;
        for call in 0..3 {
            let out = op
                .compute(&[a.clone(), b.clone()], &mut OpCtx::new("n"))
                .unwrap()
                .remove(0);
            assert_eq!(out.shape(), &[2, 8, m]);
            assert_eq!(op.packed.holds(&b), packed_gemm::panel_width().is_some());
            let got = out.to_array::<f32>().unwrap();
            for (i, &g) in got.iter().enumerate() {
                let (r, c) = (i / m, i % m);
                let want: f64 = (0..k)
                    .map(|j| f64::from(av[r * k + j]) * f64::from(bv[j * m + c]))
                    .sum();
                assert!(
                    (f64::from(g) - want).abs() < 1e-5 * (1.0 + want.abs()),
                    "call {call}, [{r}, {c}]: {g} vs {want}"
                );
            }
            assert_eq!(
                first.get_or_insert_with(|| bits(&out)),
                &bits(&out),
                "call {call}"
            );
        }
        let op = MatMul::default();
        for _ in 0..3 {
            let fresh = t(&[k, m], bv.clone());
            let out = op
                .compute(&[a.clone(), fresh.clone()], &mut OpCtx::new("n"))
                .unwrap()
                .remove(0);
            assert_eq!(first.as_ref(), Some(&bits(&out)));
        }
    }

    fn vals<T: Element>(x: &Tensor) -> (Vec<usize>, Vec<T>) {
        (
            x.shape().to_vec(),
            x.to_array::<T>().unwrap().iter().copied().collect(),
        )
    }

    /// `[[1, 2, 3], [4, 5, 6]]`
    fn a23() -> Tensor {
        t(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])
    }

    /// `[[7, 8], [9, 10], [11, 12]]`
    fn b32() -> Tensor {
        t(&[3, 2], vec![7.0f64, 8.0, 9.0, 10.0, 11.0, 12.0])
    }

    #[test]
    fn matrix_product_contiguous() {
        assert_eq!(
            vals::<f64>(&mm(&a23(), &b32()).unwrap()),
            (vec![2, 2], vec![58.0, 64.0, 139.0, 154.0])
        );
        // f32 and integer dtypes give the same numbers.
        let a = t(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = t(&[3, 2], vec![7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0]);
        assert_eq!(
            vals::<f32>(&mm(&a, &b).unwrap()).1,
            vec![58.0, 64.0, 139.0, 154.0]
        );
        let a = t(&[2, 3], vec![1i64, 2, 3, 4, 5, 6]);
        let b = t(&[3, 2], vec![7i64, 8, 9, 10, 11, 12]);
        let out = mm(&a, &b).unwrap();
        assert_eq!(out.dtype(), DType::I64);
        assert_eq!(vals::<i64>(&out).1, vec![58, 64, 139, 154]);
    }

    #[test]
    fn transposed_operands() {
        // A^T A = [[17, 22, 27], [22, 29, 36], [27, 36, 45]]
        let a = a23();
        let out = mm(&a.t(None).unwrap(), &a).unwrap();
        assert_eq!(
            vals::<f64>(&out),
            (
                vec![3, 3],
                vec![17.0, 22.0, 27.0, 22.0, 29.0, 36.0, 27.0, 36.0, 45.0]
            )
        );
        // A A^T = [[14, 32], [32, 77]], also for integers.
        assert_eq!(
            vals::<f64>(&mm(&a, &a.t(None).unwrap()).unwrap()).1,
            vec![14.0, 32.0, 32.0, 77.0]
        );
        let ai = t(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]);
        assert_eq!(
            vals::<i32>(&mm(&ai, &ai.t(None).unwrap()).unwrap()).1,
            vec![14, 32, 32, 77]
        );
        // B^T A^T = (A B)^T = [[58, 139], [64, 154]]
        let out = mm(&b32().t(None).unwrap(), &a.t(None).unwrap()).unwrap();
        assert_eq!(vals::<f64>(&out).1, vec![58.0, 139.0, 64.0, 154.0]);
    }

    #[test]
    fn negative_stride_operands() {
        // A[::-1] = [[4, 5, 6], [1, 2, 3]]
        let r = rev0(&a23());
        assert_eq!(
            vals::<f64>(&mm(&r, &b32()).unwrap()).1,
            vec![139.0, 154.0, 58.0, 64.0]
        );
        // B[::-1] = [[11, 12], [9, 10], [7, 8]]: A · B[::-1] = [[50, 56], [131, 146]]
        assert_eq!(
            vals::<f64>(&mm(&a23(), &rev0(&b32())).unwrap()).1,
            vec![50.0, 56.0, 131.0, 146.0]
        );
        let ri = rev0(&t(&[2, 3], vec![1i64, 2, 3, 4, 5, 6]));
        let bi = t(&[3, 2], vec![7i64, 8, 9, 10, 11, 12]);
        assert_eq!(vals::<i64>(&mm(&ri, &bi).unwrap()).1, vec![139, 154, 58, 64]);
        // Reversed vector: [3, 2, 1] · B = [21+18+11, 24+20+12]
        let v = rev0(&t(&[3], vec![1.0f64, 2.0, 3.0]));
        assert_eq!(vals::<f64>(&mm(&v, &b32()).unwrap()), (vec![2], vec![50.0, 56.0]));
    }

    #[test]
    fn broadcast_zero_stride_operands() {
        // Every row of b is [1, 2]: A · b = [[6, 12], [15, 30]]
        let b = t(&[2], vec![1.0f64, 2.0]).broadcast_to(&[3, 2]).unwrap();
        assert_eq!(b.strides(), &[0, 1]);
        assert_eq!(
            vals::<f64>(&mm(&a23(), &b).unwrap()).1,
            vec![6.0, 12.0, 15.0, 30.0]
        );
        // A column broadcast along axis 1: every column of c is [1, 0, 2].
        let c = t(&[3, 1], vec![1i32, 0, 2]).broadcast_to(&[3, 2]).unwrap();
        let ai = t(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]);
        assert_eq!(vals::<i32>(&mm(&ai, &c).unwrap()).1, vec![7, 7, 16, 16]);
        // A stack broadcast along a batch axis of stride 0.
        let s = a23().broadcast_to(&[2, 2, 3]).unwrap();
        assert_eq!(
            vals::<f64>(&mm(&s, &b32()).unwrap()),
            (
                vec![2, 2, 2],
                vec![58.0, 64.0, 139.0, 154.0, 58.0, 64.0, 139.0, 154.0]
            )
        );
    }

    #[test]
    fn vector_promotions() {
        let v = t(&[3], vec![1.0f64, 2.0, 3.0]);
        assert_eq!(vals::<f64>(&mm(&v, &b32()).unwrap()), (vec![2], vec![58.0, 64.0]));
        assert_eq!(vals::<f64>(&mm(&a23(), &v).unwrap()), (vec![2], vec![14.0, 32.0]));
        assert_eq!(vals::<f64>(&mm(&v, &v).unwrap()), (vec![], vec![14.0]));
        // Vector against a stack: [3] · [2, 3, 2] -> [2, 2]
        let stack = t(&[2, 3, 2], (1..=12).map(|i| i as f64).collect());
        // stack[0] = [[1,2],[3,4],[5,6]], stack[1] = [[7,8],[9,10],[11,12]]
        assert_eq!(
            vals::<f64>(&mm(&v, &stack).unwrap()),
            (vec![2, 2], vec![22.0, 28.0, 58.0, 64.0])
        );
        // Stack against a vector: [2, 3, 2] · [2] -> [2, 3]
        let w = t(&[2], vec![1.0f64, -1.0]);
        assert_eq!(vals::<f64>(&mm(&stack, &w).unwrap()), (vec![2, 3], vec![-1.0; 6]));
    }

    #[test]
    fn batched_with_broadcast_batch_dims() {
        // a[0] = I, a[1] = [[0, 1], [1, 0]]; b = [[1, 2], [3, 4]]
        let a = t(&[2, 2, 2], vec![1.0f32, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]);
        let b = t(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]);
        assert_eq!(
            vals::<f32>(&mm(&a, &b).unwrap()),
            (vec![2, 2, 2], vec![1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 1.0, 2.0])
        );
        // b · a swaps columns in the second block: [[2, 1], [4, 3]].
        assert_eq!(
            vals::<f32>(&mm(&b, &a).unwrap()).1,
            vec![1.0, 2.0, 3.0, 4.0, 2.0, 1.0, 4.0, 3.0]
        );
        // [2, 1, 2, 2] · [3, 2, 2] -> [2, 3, 2, 2]; blocks (i, j) = a[i] · c[j]
        // with c[j] = (j + 1) * I, so block (i, j) = (j + 1) * a[i].
        let a4 = a.reshape(&[2, 1, 2, 2]).unwrap();
        let c = t(
            &[3, 2, 2],
            vec![1.0f32, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0, 3.0, 0.0, 0.0, 3.0],
        );
        let (shape, got) = vals::<f32>(&mm(&a4, &c).unwrap());
        assert_eq!(shape, vec![2, 3, 2, 2]);
        let mut want = Vec::new();
        for blk in [[1.0f32, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]] {
            for j in 1..=3 {
                want.extend(blk.iter().map(|x| x * j as f32));
            }
        }
        assert_eq!(got, want);
        // Batched with transposed inner matrices: a.transpose(0, 2, 1).
        let at = a.t(Some(&[0, 2, 1])).unwrap();
        // a[1]^T = a[1] (symmetric), I^T = I: same as a · b.
        assert_eq!(
            vals::<f32>(&mm(&at, &b).unwrap()).1,
            vec![1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 1.0, 2.0]
        );
    }

    /// `batched` used to recurse once per batch axis; ndarray views have no
    /// rank limit, so this calls it directly with 10000 batch axes (the op
    /// itself refuses ranks above 64).
    #[test]
    fn batched_does_not_recurse_per_batch_axis() {
        let mut shape = vec![1usize; 10_000];
        shape.extend([2, 2]);
        let a = ndarray::arr2(&[[1.0f64, 2.0], [3.0, 4.0]]).into_dyn();
        let b = ndarray::arr2(&[[0.0f64, 1.0], [1.0, 0.0]]).into_dyn();
        let mut c = ndarray::ArrayD::<f64>::zeros(IxDyn(&shape));
        let (av, bv) = (
            a.broadcast(IxDyn(&shape)).unwrap(),
            b.broadcast(IxDyn(&shape)).unwrap(),
        );
        batched(av, bv, c.view_mut()).unwrap();
        assert_eq!(c.iter().copied().collect::<Vec<_>>(), vec![2.0, 1.0, 4.0, 3.0]);
        // An empty batch runs no block, however long its other axes.
        let e = ndarray::ArrayD::<i64>::zeros(IxDyn(&[0, 2, 2]));
        let big = ndarray::ArrayD::<i64>::zeros(IxDyn(&[1, 2, 2]));
        let big = big.broadcast(IxDyn(&[1 << 40, 0, 2, 2])).unwrap();
        let mut out = ndarray::ArrayD::<i64>::zeros(IxDyn(&[0, 2, 2]));
        batched(e.view(), e.view(), out.view_mut()).unwrap();
        let mut out = ndarray::ArrayD::<i64>::zeros(IxDyn(&[1 << 40, 0, 2, 2]));
        batched(big.view(), big.view(), out.view_mut()).unwrap();
        // Mismatched batch axes are an internal error, not a panic.
        let mut c3 = ndarray::ArrayD::<f64>::zeros(IxDyn(&[3, 2, 2]));
        let a2 = a.broadcast(IxDyn(&[2, 2, 2])).unwrap();
        assert!(batched(a2.view(), a2.view(), c3.view_mut()).is_err());
    }

    #[test]
    fn integer_products_wrap() {
        let a = t(&[1, 1], vec![i32::MAX]);
        let b = t(&[1, 1], vec![2i32]);
        assert_eq!(vals::<i32>(&mm(&a, &b).unwrap()).1, vec![-2]);
        let a = t(&[1, 2], vec![i64::MAX, 1]);
        let b = t(&[2], vec![1i64, 1]);
        assert_eq!(vals::<i64>(&mm(&a, &b).unwrap()), (vec![1], vec![i64::MIN]));
    }

    #[test]
    fn empty_operands_and_garbage_outputs() {
        // [0, 3] · [3, 2] -> [0, 2]
        let e = t::<f64>(&[0, 3], vec![]);
        assert_eq!(vals::<f64>(&mm(&e, &b32()).unwrap()), (vec![0, 2], vec![]));
        // [2, 0] · [0, 3] -> zeros [2, 3], written over a NaN-filled
        // transposed pre-allocated buffer.
        let (x, y) = (t::<f64>(&[2, 0], vec![]), t::<f64>(&[0, 3], vec![]));
        let g = t(&[3, 2], vec![f64::NAN; 6]).t(None).unwrap();
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(g.clone())]);
        let out = MatMul::default().compute(&[x, y], &mut ctx).unwrap().remove(0);
        assert!(out.same_buffer(&g));
        assert_eq!(vals::<f64>(&out), (vec![2, 3], vec![0.0; 6]));
        let (x, y) = (t::<i32>(&[2, 0], vec![]), t::<i32>(&[0, 2], vec![]));
        let g = t(&[2, 2], vec![77i32; 4]);
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(g)]);
        let out = MatMul::default().compute(&[x, y], &mut ctx).unwrap().remove(0);
        assert_eq!(vals::<i32>(&out).1, vec![0; 4]);
        // Empty vectors: [0] · [0] = 0.
        let v = t::<f32>(&[0], vec![]);
        assert_eq!(vals::<f32>(&mm(&v, &v).unwrap()), (vec![], vec![0.0]));
        // Empty batch.
        let s = t::<f64>(&[0, 2, 3], vec![]);
        assert_eq!(vals::<f64>(&mm(&s, &b32()).unwrap()), (vec![0, 2, 2], vec![]));
        // Non-empty output into a reversed garbage buffer.
        let g = rev0(&t(&[2, 2], vec![f64::NAN; 4]));
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(g)]);
        let out = MatMul::default()
            .compute(&[a23(), b32()], &mut ctx)
            .unwrap()
            .remove(0);
        assert_eq!(vals::<f64>(&out).1, vec![58.0, 64.0, 139.0, 154.0]);
    }

    #[test]
    fn strided_float_blocks_match_a_naive_product() {
        // Every-other-column view of a [5, 8] matrix times a reversed,
        // transposed [4, 3] view, against the textbook triple loop.
        let big = t(&[5, 8], (0..40).map(|i| ((i * 7) % 11) as f64 - 5.0).collect());
        let a = big.slice(&[IndexSpec::All, IndexSpec::range(0, 8, 2)]).unwrap(); // [5, 4]
        let other = t(&[3, 4], (0..12).map(|i| ((i * 5) % 7) as f64 - 3.0).collect());
        let b = rev0(&other).t(None).unwrap(); // [4, 3], strides (1, -4)
        let (av, bv) = (a.to_array::<f64>().unwrap(), b.to_array::<f64>().unwrap());
        let mut want = vec![0.0; 15];
        for i in 0..5 {
            for j in 0..3 {
                for k in 0..4 {
                    want[i * 3 + j] += av[[i, k]] * bv[[k, j]];
                }
            }
        }
        assert_eq!(vals::<f64>(&mm(&a, &b).unwrap()), (vec![5, 3], want));
    }

    /// The textbook triple loop in f64.
    fn naive(a: &Tensor, b: &Tensor) -> Vec<f64> {
        let (av, bv) = (a.to_array::<f32>().unwrap(), b.to_array::<f32>().unwrap());
        let (n, k, m) = (a.shape()[0], a.shape()[1], b.shape()[1]);
        let mut want = vec![0.0f64; n * m];
        for i in 0..n {
            for j in 0..m {
                for l in 0..k {
                    want[i * m + j] += av[[i, l]] as f64 * bv[[l, j]] as f64;
                }
            }
        }
        want
    }

    /// Many rows and few columns split by rows; a few rows split by
    /// columns when there are two bands of them; one row, or fewer columns
    /// than two bands, stays with faer.
    #[test]
    fn products_split_along_the_axis_with_room_for_two_bands() {
        assert!(matches!(bands(512, 49), Some(Bands::Rows)));
        assert!(matches!(bands(32, 256), Some(Bands::Rows)));
        assert!(matches!(bands(14, 128), Some(Bands::Cols)));
        assert!(matches!(bands(31, 32), Some(Bands::Cols)));
        assert!(matches!(bands(24, 3136), Some(Bands::Cols)));
        assert!(bands(14, 31).is_none());
        assert!(bands(1, 1000).is_none());
    }

    /// Two threads get bands of rows as even as multiples of 8 allow, and
    /// bands of columns multiples of 16.
    #[test]
    fn bands_split_rows_evenly_in_multiples_of_eight() {
        assert_eq!(band_len(40, 2, Bands::Rows), 24);
        assert_eq!(band_len(48, 2, Bands::Rows), 24);
        assert_eq!(band_len(112, 2, Bands::Rows), 56);
        assert_eq!(band_len(1152, 2, Bands::Rows), 576);
        assert_eq!(band_len(112, 3, Bands::Rows), 40);
        assert_eq!(band_len(196, 2, Bands::Cols), 112);
        assert_eq!(band_len(3136, 2, Bands::Cols), 1568);
    }

    /// Products split by rows or by columns give the serial product's
    /// bits, over counts that do not divide into whole bands, plain and
    /// transposed operands, and pools of 2 and 3 threads.
    #[test]
    fn split_products_equal_the_serial_ones() {
        let gen = |len: usize, s: usize| -> Vec<f32> {
            (0..len).map(|i| ((i * s) % 1013) as f32 * 0.0137 - 6.9).collect()
        };
        for threads in [2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for (n, k, m) in [
                (512, 576, 49),
                (100, 147, 7),
                (40, 1152, 196),
                (1152, 192, 49),
                (33, 9, 1),
                (24, 144, 3136),
                (197, 64, 771),
                (5, 33, 300),
                (40, 1152, 600),
                (14, 512, 128),
                (112, 672, 49),
                (72, 288, 49),
            ] {
                let a = gen(n * k, 7919);
                let at = gen(n * k, 104_729);
                let b = gen(k * m, 7);
                let lhs = [
                    MatRef::from_row_major_slice(&a, n, k),
                    MatRef::from_row_major_slice(&at, k, n).transpose(),
                ];
                for a in lhs {
                    let b = MatRef::from_row_major_slice(&b, k, m);
                    let mut serial = vec![0f32; n * m];
                    matmul(
                        MatMut::from_row_major_slice_mut(&mut serial, n, m),
                        Accum::Replace,
                        a,
                        b,
                        1.0,
                        Par::Seq,
                    );
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    for by in [Bands::Rows, Bands::Cols] {
                        let mut split = vec![f32::NAN; n * m];
                        pool.install(|| {
                            split_bands(MatMut::from_row_major_slice_mut(&mut split, n, m), a, b, by)
                        });
                        assert_eq!(
                            bits(&serial),
                            bits(&split),
                            "[{n}, {k}] x [{k}, {m}] by {by:?} on {threads} threads"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn large_products_on_every_path_match_a_naive_product() {
        // Big enough for the parallel faer path; operands plain, transposed
        // (column-major, read in place by faer) and gapped (every other
        // column: matrixmultiply).
        let (n, k, m) = (96, 160, 144);
        assert!(n * k * m >= PARALLEL_MACS);
        let gen = |len: usize, s: usize| (0..len).map(|i| ((i * s) % 17) as f32 * 0.25 - 2.0).collect();
        let a = t(&[n, k], gen(n * k, 7));
        let at = t(&[k, n], gen(n * k, 7)).t(None).unwrap();
        let wide = t(&[n, 2 * k], gen(2 * n * k, 3));
        let ag = wide
            .slice(&[IndexSpec::All, IndexSpec::range(0, 2 * k as i64, 2)])
            .unwrap();
        let b = t(&[k, m], gen(k * m, 5));
        let bt = t(&[m, k], gen(k * m, 5)).t(None).unwrap();
        for (x, y) in [(&a, &b), (&at, &b), (&a, &bt), (&at, &bt), (&ag, &b), (&ag, &bt)] {
            let want = naive(x, y);
            let (shape, got) = vals::<f32>(&mm(x, y).unwrap());
            assert_eq!(shape, vec![n, m]);
            for (g, w) in got.iter().zip(&want) {
                assert!((*g as f64 - w).abs() <= 1e-3 * w.abs().max(1.0), "{g} vs {w}");
            }
        }
    }

    /// Products whose columns leave one or two past the GEMM kernel's last
    /// whole tile and single columns (the last ones, or the one, as dot
    /// products where the CPU runs that kernel) match a naive product:
    /// operands plain and transposed, rows split among threads or not.
    #[test]
    fn products_past_a_whole_gemm_tile_match_a_naive_product() {
        match gemm_tile_cols() {
            Some(GEMM_TILE_COLS) => {
                assert_eq!([1, 25, 49, 50, 98].map(<f32 as TailDots>::tail), [1, 1, 1, 2, 2]);
                assert_eq!([24, 48, 51, 196, 2].map(<f32 as TailDots>::tail), [0; 5]);
            }
            Some(GEMM_TILE_COLS_AVX512) => {
                assert_eq!([1, 17, 49, 50, 98].map(<f32 as TailDots>::tail), [1, 1, 1, 2, 2]);
                assert_eq!([16, 48, 51, 196, 2].map(<f32 as TailDots>::tail), [0; 5]);
            }
            _ => assert_eq!(<f32 as TailDots>::tail(49), 0),
        }
        assert_eq!(<f64 as TailDots>::tail(49), 0);
        // No rows: nothing to compute, tail or not.
        let (e, b) = (t::<f32>(&[0, 5], vec![]), t(&[5, 49], vec![1.0f32; 245]));
        assert_eq!(vals::<f32>(&mm(&e, &b).unwrap()), (vec![0, 49], vec![]));
        let gen = |len: usize, s: usize| (0..len).map(|i| ((i * s) % 17) as f32 * 0.25 - 2.0).collect();
        // A single column is all dot products.
        for (n, k, m) in [
            (3, 5, 25),
            (40, 192, 49),
            (700, 100, 50),
            (130, 33, 98),
            (3, 5, 1),
            (144, 576, 1),
            (2000, 300, 1),
        ] {
            let a = t(&[n, k], gen(n * k, 7));
            let at = t(&[k, n], gen(n * k, 7)).t(None).unwrap();
            let b = t(&[k, m], gen(k * m, 5));
            let bt = t(&[m, k], gen(k * m, 5)).t(None).unwrap();
            for (x, y) in [(&a, &b), (&a, &bt), (&at, &b)] {
                let want = naive(x, y);
                let (shape, got) = vals::<f32>(&mm(x, y).unwrap());
                assert_eq!(shape, vec![n, m]);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (*g as f64 - w).abs() <= 1e-3 * w.abs().max(1.0),
                        "[{n}, {k}] · [{k}, {m}] at {i}: {g} vs {w}"
                    );
                }
            }
        }
    }

    /// `[B, n, k] · [B, k, m]` in f64 from the operands' elements.
    fn naive_stack(a: &Tensor, b: &Tensor) -> Vec<f64> {
        let (av, bv) = (a.to_array::<f32>().unwrap(), b.to_array::<f32>().unwrap());
        let (nb, n, k, m) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[2]);
        let mut want = vec![0.0f64; nb * n * m];
        for q in 0..nb {
            for i in 0..n {
                for j in 0..m {
                    for l in 0..k {
                        want[(q * n + i) * m + j] += av[[q, i, l]] as f64 * bv[[q, l, j]] as f64;
                    }
                }
            }
        }
        want
    }

    /// Stacks whose matrices have gaps between their rows (`a`, a
    /// transposed slice as ViT's `V`) or their columns (`b`) go to faer in
    /// place, one product per matrix; split among threads, the same bits as
    /// on one. A reversed stack, and one of single rows, are declined and
    /// still multiplied right.
    #[test]
    fn stacks_with_gaps_between_rows_or_columns_match_a_naive_product() {
        let gen = |len: usize, s: usize| -> Vec<f32> {
            (0..len).map(|i| ((i * s) % 1013) as f32 * 0.0137 - 6.9).collect()
        };
        let close = |got: &[f32], want: &[f64], what: &str| {
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "{what}: {g} vs {w}"
                );
            }
        };
        for (nb, n, k, m) in [(5, 33, 20, 17), (12, 64, 64, 64), (3, 2, 9, 1)] {
            // a: [n, nb, k] viewed as [nb, n, k]; b: [m, nb, k] as [nb, k, m].
            let a = t(&[n, nb, k], gen(n * nb * k, 7919)).permute(&[1, 0, 2]).unwrap();
            let b = t(&[m, nb, k], gen(m * nb * k, 104_729))
                .permute(&[1, 2, 0])
                .unwrap();
            let want = naive_stack(&a, &b);
            let what = format!("[{nb}, {n}, {k}] x [{nb}, {k}, {m}]");
            let out = t(&[nb, n, m], vec![f32::NAN; nb * n * m]);
            assert!(faer_stack::<f32>(&a, &b, &out).unwrap(), "{what} declined");
            close(
                &out.to_array::<f32>().unwrap().iter().copied().collect::<Vec<_>>(),
                &want,
                &what,
            );
            let (sa, sb) = (Stack::of(a.layout()).unwrap(), Stack::of(b.layout()).unwrap());
            if n > 1 && m > 1 {
                assert!(!a.is_contiguous() && !b.is_contiguous(), "{what}");
                assert!(sa.row_major && !sb.row_major, "{what}");
            }
            let (ab, bb) = (
                a.read_buffer(|v: &[f32]| v.to_vec()).unwrap(),
                b.read_buffer(|v: &[f32]| v.to_vec()).unwrap(),
            );
            let mut bits = Vec::new();
            for (threads, par) in [(1, false), (2, true), (3, true)] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut dst = vec![f32::NAN; nb * n * m];
                pool.install(|| stack_products((&sa, &ab), (&sb, &bb), &mut dst, par));
                close(&dst, &want, &what);
                bits.push(dst.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            }
            assert!(
                bits.windows(2).all(|w| w[0] == w[1]),
                "{what}: bits differ by thread count"
            );
        }
        // Declined: a reversed stack, and single rows (they keep the GEMV
        // kernel).
        let declined = [
            (
                "reversed",
                rev0(&t(&[4, 3, 5], gen(60, 31))),
                t(&[4, 5, 2], gen(40, 17)),
            ),
            (
                "single rows",
                t(&[4, 1, 5], gen(20, 13)),
                t(&[4, 5, 32], gen(640, 11)),
            ),
        ];
        for (what, a, b) in declined {
            let (nb, n, m) = (a.shape()[0], a.shape()[1], b.shape()[2]);
            let out = t(&[nb, n, m], vec![0f32; nb * n * m]);
            assert!(!faer_stack::<f32>(&a, &b, &out).unwrap(), "{what} taken");
            let got = mm(&a, &b).unwrap().to_array::<f32>().unwrap();
            close(
                &got.iter().copied().collect::<Vec<_>>(),
                &naive_stack(&a, &b),
                what,
            );
        }
    }

    #[test]
    fn stacks_times_a_matrix_match_each_block_merged_or_not() {
        // [3, 2, 4] · [4, 5] as one [6, 4] product (contiguous, and the
        // [2, 3, 4] -> [3, 2, 4] transposed view whose rows do not merge),
        // the attention-style [4, 1, 3] transpose of [1, 4, 3] (rows merge
        // with stride 3), and a gapped stack; each against its blocks.
        let gen = |len: usize, s: usize| (0..len).map(|i| ((i * s) % 13) as f32 * 0.5 - 3.0).collect();
        let b = t(&[4, 5], gen(20, 3));
        let plain = t(&[3, 2, 4], gen(24, 7));
        let swapped = t(&[2, 3, 4], gen(24, 5)).transpose(Some(&[1, 0, 2])).unwrap();
        let rows = t(&[1, 4, 3], gen(12, 11)).transpose(Some(&[1, 0, 2])).unwrap();
        let b3 = t(&[3, 5], gen(15, 2));
        let wide = t(&[3, 2, 8], gen(48, 5));
        let gapped = wide
            .slice(&[IndexSpec::All, IndexSpec::All, IndexSpec::range(0, 8, 2)])
            .unwrap();
        for (a, b) in [(&plain, &b), (&swapped, &b), (&rows, &b3), (&gapped, &b)] {
            let got = mm(a, b).unwrap();
            let (n, m) = (a.shape()[1], b.shape()[1]);
            assert_eq!(got.shape(), &[a.shape()[0], n, m]);
            let got = got.to_array::<f32>().unwrap();
            for i in 0..a.shape()[0] {
                let ai = a.slice(&[IndexSpec::Point(i as i64)]).unwrap();
                let want = naive(&ai, b);
                let gi: Vec<f64> = got.index_axis(Axis(0), i).iter().map(|&v| v as f64).collect();
                for (g, w) in gi.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn errors_name_shapes_and_dtypes() {
        assert_cause!(mm(&a23(), &a23()).unwrap_err(), Shape, "[2, 3]", "3 and 2");
        let b42 = t(&[4, 2], vec![0.0f64; 8]);
        assert_cause!(mm(&a23(), &b42).unwrap_err(), Shape, "[2, 3]", "[4, 2]");
        let err = mm(&t(&[2, 2, 3], vec![0.0f64; 12]), &t(&[3, 3, 4], vec![0.0f64; 36])).unwrap_err();
        assert_cause!(err, Shape, "batch", "[3, 3, 4]");
        let s = t(&[], vec![1.0f64]);
        assert_cause!(mm(&s, &a23()).unwrap_err(), Rank, "0-d");
        assert_cause!(mm(&a23(), &s).unwrap_err(), Rank);
        let err = mm(&a23(), &t(&[3, 2], vec![1i64; 6])).unwrap_err();
        assert_cause!(err, DType, "f64", "i64");
        let bb = t(&[2, 2], vec![true; 4]);
        assert_cause!(mm(&bb, &bb).unwrap_err(), DType, "bool");
        assert_cause!(
            MatMul::default()
                .compute(&[a23()], &mut OpCtx::new("n"))
                .unwrap_err(),
            Arity
        );
        // Vector mismatch.
        let err = mm(&t(&[2], vec![1.0f64, 2.0]), &t(&[3], vec![1.0f64; 3])).unwrap_err();
        assert_cause!(err, Shape, "[2]", "[3]");
    }

    #[test]
    fn infer_shapes() {
        let ti = |s: Vec<i64>| TypeInfo::new(DType::F32, Some(s));
        let inf = |a: Vec<i64>, b: Vec<i64>| MatMul::default().infer(&[ti(a), ti(b)]);
        assert_eq!(inf(vec![-1, 3], vec![3, 4]).unwrap(), vec![ti(vec![-1, 4])]);
        assert_eq!(inf(vec![5], vec![2, 5, 4]).unwrap(), vec![ti(vec![2, 4])]);
        assert_eq!(inf(vec![2, 5, 4], vec![4]).unwrap(), vec![ti(vec![2, 5])]);
        assert_eq!(inf(vec![4], vec![4]).unwrap(), vec![ti(vec![])]);
        assert_eq!(
            inf(vec![2, 1, 3, -1], vec![5, 4, 6]).unwrap(),
            vec![ti(vec![2, 5, 3, 6])]
        );
        assert_eq!(inf(vec![-1, 2, 3], vec![3, 2]).unwrap(), vec![ti(vec![-1, 2, 2])]);
        assert_cause!(
            inf(vec![2, 3], vec![4, 5]).unwrap_err(),
            Shape,
            "[2, 3]",
            "[4, 5]"
        );
        assert_cause!(inf(vec![2, 2, 3], vec![3, 3, 4]).unwrap_err(), Shape);
        assert_cause!(inf(vec![], vec![3]).unwrap_err(), Rank);
        let unk =
            MatMul::default().infer(&[TypeInfo::unknown(DType::F64), TypeInfo::known(DType::F64, &[2])]);
        assert_eq!(unk.unwrap(), vec![TypeInfo::unknown(DType::F64)]);
        assert!(MatMul::default()
            .infer(&[ti(vec![2, 2]), TypeInfo::known(DType::F64, &[2, 2])])
            .is_err());
        assert!(MatMul::default()
            .infer(&[
                TypeInfo::known(DType::Bool, &[2, 2]),
                TypeInfo::known(DType::Bool, &[2, 2])
            ])
            .is_err());
        assert!(OpRegistry::builtin()
            .make("matmul", &crate::ops::Attrs::new().with("x", 1))
            .is_err());
        assert_eq!(
            OpRegistry::builtin()
                .make("matmul", &crate::ops::Attrs::new())
                .unwrap()
                .name(),
            "matmul"
        );
    }

    /// The blocked GEMM adds the bias to every row in either layout of
    /// `c`, also when the product is empty (no input channels).
    #[test]
    fn blocked_gemm_adds_the_bias_in_both_layouts_and_with_no_terms() {
        let (n, k, m) = (3, 4, 10);
        let a: Vec<f64> = (0..n * k).map(|v| v as f64 - 5.0).collect();
        let b: Vec<f64> = (0..k * m).map(|v| (v % 7) as f64).collect();
        let bias = [0.5, -2.0, 4.0];
        let fill = |cols: Range<usize>, col: &mut Vec<f64>| {
            col.clear();
            for p in 0..k {
                col.extend(cols.clone().map(|j| b[p * m + j]));
            }
        };
        let want = |i: usize, j: usize| (0..k).map(|p| a[i * k + p] * b[p * m + j]).sum::<f64>() + bias[i];
        for (c_cols, block, par) in [
            (false, 4, false),
            (true, 4, true),
            (false, 16, true),
            (true, 16, false),
        ] {
            let mut c = vec![f64::NAN; n * m];
            f64::gemm_blocks((&a, Some(&bias)), n, k, (&mut c, c_cols), m, block, par, &fill).unwrap();
            for (i, j) in (0..n).flat_map(|i| (0..m).map(move |j| (i, j))) {
                let at = if c_cols { j * n + i } else { i * m + j };
                assert_eq!(
                    c[at],
                    want(i, j),
                    "({i}, {j}), column-major {c_cols}, block {block}"
                );
            }
            let mut empty = vec![f64::NAN; n * m];
            let none = |_: Range<usize>, col: &mut Vec<f64>| col.clear();
            f64::gemm_blocks(
                (&[], Some(&bias)),
                n,
                0,
                (&mut empty, c_cols),
                m,
                block,
                par,
                &none,
            )
            .unwrap();
            for (i, j) in (0..n).flat_map(|i| (0..m).map(move |j| (i, j))) {
                let at = if c_cols { j * n + i } else { i * m + j };
                assert_eq!(empty[at], bias[i], "({i}, {j}), column-major {c_cols}");
            }
        }
    }
}
