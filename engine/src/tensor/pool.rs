//! The one buffer pool that every op allocates from, so that repeated runs
//! reuse allocations instead of paying page faults on fresh memory.
//!
//! Buffers return here when their last view drops. The pool keeps at most
//! [`MAX_POOLED_BYTES`] and a few buffers per (dtype, length).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::dtype::{DType, Element};
use crate::tensor::storage::AnyVec;

/// Upper bound of memory the pool holds on to.
pub const MAX_POOLED_BYTES: usize = 1 << 30;
const MAX_PER_SIZE: usize = 16;

#[derive(Default)]
struct Free {
    lists: HashMap<(DType, usize), Vec<AnyVec>>,
    bytes: usize,
}

fn free() -> &'static Mutex<Free> {
    static FREE: OnceLock<Mutex<Free>> = OnceLock::new();
    FREE.get_or_init(Default::default)
}

static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);

/// Counters of the pool, for benches and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub hits: u64,
    pub misses: u64,
    pub pooled_bytes: usize,
}

pub fn stats() -> PoolStats {
    PoolStats {
        hits: HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        pooled_bytes: free().lock().map(|f| f.bytes).unwrap_or(0),
    }
}

/// Drops every pooled buffer.
pub fn clear() {
    if let Ok(mut f) = free().lock() {
        f.lists.clear();
        f.bytes = 0;
    }
}

fn pop<T: Element>(len: usize) -> Option<Vec<T>> {
    if len == 0 {
        return None;
    }
    let mut f = free().lock().ok()?;
    let v = f.lists.get_mut(&(T::DTYPE, len))?.pop()?;
    f.bytes -= len * T::DTYPE.size();
    drop(f);
    T::from_any(v).ok()
}

/// A vector of `len` elements with unspecified contents.
pub fn take<T: Element>(len: usize) -> Vec<T> {
    match pop::<T>(len) {
        Some(v) => {
            HITS.fetch_add(1, Ordering::Relaxed);
            v
        }
        None => {
            MISSES.fetch_add(1, Ordering::Relaxed);
            vec![T::default(); len]
        }
    }
}

/// A vector of `len` default (zero / false) elements.
pub fn take_zeroed<T: Element>(len: usize) -> Vec<T> {
    match pop::<T>(len) {
        Some(mut v) => {
            HITS.fetch_add(1, Ordering::Relaxed);
            v.fill(T::default());
            v
        }
        None => {
            MISSES.fetch_add(1, Ordering::Relaxed);
            vec![T::default(); len]
        }
    }
}

/// Returns a vector to the pool, or frees it when the pool is full.
pub fn give<T: Element>(v: Vec<T>) {
    let len = v.len();
    let bytes = len * T::DTYPE.size();
    if len == 0 || bytes > MAX_POOLED_BYTES {
        return;
    }
    let Ok(mut f) = free().lock() else { return };
    if f.bytes + bytes > MAX_POOLED_BYTES {
        return;
    }
    let list = f.lists.entry((T::DTYPE, len)).or_default();
    if list.len() >= MAX_PER_SIZE {
        return;
    }
    list.push(T::into_any(v));
    f.bytes += bytes;
}
