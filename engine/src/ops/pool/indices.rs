//! `max_pool`'s optional second output (ONNX MaxPool's `Indices`): for
//! each output element, where in x its value came from, as an index into
//! x flattened (the plane's offset `(n·C + c)·plane` included, the
//! padding not counted). Within the plane the position is row-major, or
//! column-major over the spatial axes with `storage_order` 1. Computed
//! after the values, from them, so the values' kernels stay as they are.

use crate::dtype::Num;
use crate::error::Result;
use crate::ops::window::{gather_table, Axis1, PAD};

/// How a spatial position is numbered within its plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexOrder {
    /// `storage_order` 0: the last spatial axis varies fastest.
    RowMajor,
    /// `storage_order` 1: the first spatial axis varies fastest.
    ColumnMajor,
}

impl IndexOrder {
    pub fn from_storage_order(s: i64) -> Option<IndexOrder> {
        match s {
            0 => Some(IndexOrder::RowMajor),
            1 => Some(IndexOrder::ColumnMajor),
            _ => None,
        }
    }

    pub fn storage_order(self) -> i64 {
        match self {
            IndexOrder::RowMajor => 0,
            IndexOrder::ColumnMajor => 1,
        }
    }

    /// Row-major offset `off` in a plane of `dims`, renumbered.
    fn renumber(self, off: usize, dims: &[usize]) -> usize {
        match self {
            IndexOrder::RowMajor => off,
            IndexOrder::ColumnMajor => {
                // Coordinates peeled from the last axis, each weighted by
                // the product of the axes before it.
                let (mut rest, mut idx) = (off, 0);
                let mut before: usize = dims.iter().product();
                for &d in dims.iter().rev() {
                    before /= d;
                    idx += (rest % d) * before;
                    rest /= d;
                }
                idx
            }
        }
    }
}

/// Whether tap `v` is where the window's max `y` came from: equal, or both
/// NaN (the max takes a NaN tap).
#[allow(clippy::eq_op)] // `v != v`: NaN, for any numeric T
fn gives<T: Num>(v: T, y: T) -> bool {
    v == y || (v != v && y != y)
}

/// Writes into `idx` the index of each of `ys` (the max pool of the
/// contiguous `xs` over `axes`, C order): the first tap of its window, in
/// the window's row-major order, holding its value; -1 for a window with
/// no tap inside the input.
pub(super) fn max_indices<T: Num>(
    xs: &[T],
    ys: &[T],
    axes: &[Axis1],
    order: IndexOrder,
    idx: &mut [i64],
) -> Result<()> {
    let plane: usize = axes.iter().map(|a| a.input).product();
    let o: usize = axes.iter().map(|a| a.output).product();
    if ys.is_empty() || o == 0 {
        return Ok(());
    }
    let dims: Vec<usize> = axes.iter().map(|a| a.input).collect();
    let table = gather_table(axes)?;
    idx.fill(-1);
    for (p, (yp, ip)) in ys.chunks_exact(o).zip(idx.chunks_exact_mut(o)).enumerate() {
        let xp = &xs[p * plane..(p + 1) * plane];
        for (i, (&y, slot)) in yp.iter().zip(ip.iter_mut()).enumerate() {
            let hit = table[i..]
                .iter()
                .step_by(o)
                .find(|&&off| off != PAD && gives(xp[off as usize], y));
            if let Some(&off) = hit {
                *slot = (p * plane + order.renumber(off as usize, &dims)) as i64;
            }
        }
    }
    Ok(())
}
