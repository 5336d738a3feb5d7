//! The kernel layer: loops over slices and tiles, with no notion of a
//! graph, an op's attrs or an op's declarations. The ops (`crate::ops`)
//! and the executor's fused runs (`crate::exec`) both call down into it;
//! it calls down only into the tensor layer and the base modules (`dtype`,
//! `error`, `parallel`). See ARCHITECTURE.md.
//!
//! - [`vmath`], [`fastmath`] and [`erf`]: vectorized unary math on float
//!   slices ([`MathFn`]), with polynomial fits made by [`chebyshev`];
//! - [`pointwise`]: the elementwise function kinds, applied to a tile of a
//!   buffer ([`pointwise::apply_tile`]) or, through a target, to tensors;
//! - [`depthwise`]: depthwise 2-D convolution, tap by tap;
//! - [`gemv`] and [`dots`]: a row times a matrix, and the last few
//!   columns of a product as dot products;
//! - [`packed_gemm`]: a product with a weight packed once, for 1×1 convs
//!   on channels-last images;
//! - [`winograd`]: 3×3 stride-1 convolution as Winograd F(2×2, 3×3);
//! - [`norm`] and [`softmax`]: layer/RMS normalization and softmax over
//!   contiguous rows;
//! - [`pow`]: powers by small integers and halves as multiplies;
//! - [`stride`]: every n-th element of a row, for strided windows;
//! - [`rowsum`]: sums of contiguous rows, for reductions over trailing axes;
//! - `wide_loop`: plain element loops compiled for the CPU's widest SIMD;
//! - [`compare`] and [`summary`]: tolerance comparison and one-pass
//!   statistics over element runs, for the listeners.

mod chebyshev;
pub mod compare;
pub mod depthwise;
pub mod dots;
mod erf;
pub(crate) mod fastmath;
pub mod gemv;
pub mod math_fn;
pub mod norm;
pub mod packed_gemm;
pub mod pointwise;
pub mod pow;
pub mod rowsum;
pub mod softmax;
pub mod stride;
pub mod summary;
pub mod vmath;
pub(crate) mod wide_loop;
pub mod winograd;

pub use math_fn::MathFn;
pub use vmath::VMath;
