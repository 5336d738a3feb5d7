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

/// Number of elements of `shape`, or an error when it overflows.
pub fn numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::Op(format!("shape {shape:?} has too many elements")))
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

/// The largest rank Vigil accepts, as numpy does.
pub const MAX_RANK: usize = 64;
