//! The allocation limit: one allocation larger than this is refused with an
//! error instead of aborting the process (a broadcast materialized into a
//! huge shape, say).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::dtype::DType;
use crate::error::{Error, Result};

static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Half of physical memory, or 8 GiB when that cannot be read.
fn default_limit() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    total.map(|t| t / 2).unwrap_or(8 << 30)
}

/// The largest single allocation allowed, in bytes.
pub fn alloc_limit() -> u64 {
    match LIMIT.load(Ordering::Relaxed) {
        0 => {
            let l = default_limit();
            LIMIT.store(l, Ordering::Relaxed);
            l
        }
        l => l,
    }
}

/// Sets the process-wide allocation limit in bytes (0 restores the default).
pub fn set_alloc_limit(bytes: u64) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// Number of elements of `shape`, or an error when the shape is too big.
///
/// As in numpy and ndarray, the product of the *non-zero* dimensions must
/// fit in `isize` even when another dimension is 0: numpy refuses
/// `np.empty((0, 2**32, 2**32, 2**32, 2**32))` ("array is too big"). So an
/// empty shape can never become a huge non-empty one (a reduction over its
/// zero axis, say), and every element offset fits the signed strides.
pub fn numel(shape: &[usize]) -> Result<usize> {
    let mut n = 1usize;
    let mut empty = false;
    for &d in shape {
        if d == 0 {
            empty = true;
            continue;
        }
        n = match n.checked_mul(d) {
            Some(m) if m <= isize::MAX as usize => m,
            _ => {
                return Err(Error::Shape(format!(
                    "shape {} has too many elements (more than {})",
                    shape_str(shape),
                    isize::MAX
                )))
            }
        };
    }
    Ok(if empty { 0 } else { n })
}

/// Checks that `shape` has at most [`MAX_RANK`] axes and a valid element
/// count (see [`numel`]); returns the count.
pub fn check_shape(shape: &[usize]) -> Result<usize> {
    if shape.len() > MAX_RANK {
        return Err(Error::Rank(format!(
            "shape {} is above the limit of {MAX_RANK} dimensions",
            shape_str(shape)
        )));
    }
    numel(shape)
}

/// An error when `rank` is above [`MAX_RANK`].
pub fn check_rank(rank: usize) -> Result<()> {
    if rank > MAX_RANK {
        return Err(Error::Rank(format!(
            "rank {rank} is above the limit of {MAX_RANK} dimensions"
        )));
    }
    Ok(())
}

/// `shape` for messages: in full up to 8 dimensions, else its ends and its
/// rank, so a message stays one short line.
pub fn shape_str<T: std::fmt::Display>(shape: &[T]) -> String {
    let join = |s: &[T]| s.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    if shape.len() <= 8 {
        format!("[{}]", join(shape))
    } else {
        format!(
            "[{}, ..., {}] (rank {})",
            join(&shape[..3]),
            join(&shape[shape.len() - 2..]),
            shape.len()
        )
    }
}

/// Checks that `len` elements of `dtype` fit under the limit.
pub fn check_alloc(dtype: DType, len: usize) -> Result<()> {
    let bytes = (len as u128) * dtype.size() as u128;
    let limit = alloc_limit();
    if bytes > limit as u128 {
        return Err(Error::AllocTooLarge {
            node: None,
            bytes: bytes.min(u64::MAX as u128) as u64,
            limit,
        });
    }
    Ok(())
}

/// The largest rank Vigil accepts, as numpy does. Layouts, ops that add
/// axes, reshape targets, .npy headers and the executor's feeds check it.
pub const MAX_RANK: usize = 64;
